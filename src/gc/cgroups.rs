//! Pod cgroup directories left behind: runc creates
//! `kubepods[/burstable|/besteffort]/pod<uid>` under every cgroup hierarchy
//! from the cgroup parent actlet passes, and never removes it. Once a pod's
//! content may be removed and the runtime holds nothing of it any more, its
//! pod cgroup (and any empty child left in it) is removed with `rmdir`, the
//! only removal cgroupfs allows; a cgroup that still has processes cannot
//! be removed and is retried next round (upstream `cleanupOrphanedPodCgroups`).
//!
//! As for log directories, only pods the runtime held at the start of the
//! round are considered: another kubelet on the same host keeps its own.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::liveness::PodLiveness;
use crate::messages::PodUid;

/// Where the cgroup hierarchies are mounted.
pub const CGROUP_MOUNT: &str = "/sys/fs/cgroup";

/// Every `pod<uid>` directory under `kubepods`, `kubepods/burstable` and
/// `kubepods/besteffort` of the unified hierarchy at `mount` or of any
/// hierarchy mounted below it (cgroup v1: one per controller), and the
/// pod slices of the systemd driver's `kubepods.slice`.
pub fn find_pod_cgroups(mount: &Path) -> Vec<(PodUid, PathBuf)> {
    let mut bases = vec![mount.to_path_buf()];
    if let Ok(rd) = std::fs::read_dir(mount) {
        bases.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let mut out = vec![];
    for base in &bases {
        out.extend(find_systemd_pod_cgroups(base));
    }
    for base in bases {
        for qos in ["", "burstable", "besteffort"] {
            let dir = base.join("kubepods").join(qos);
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.filter_map(|e| e.ok()) {
                let name = e.file_name();
                if let Some(uid) = name.to_str().and_then(|n| n.strip_prefix("pod"))
                    && !uid.is_empty()
                    && e.path().is_dir()
                {
                    out.push((PodUid::new(uid), e.path()));
                }
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// The `--cgroup-driver=systemd` layout under `base`:
/// `kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid>.slice`,
/// the uid's `-` written `_` ([`CgroupName::to_systemd`](crate::cm::names::CgroupName::to_systemd)).
fn find_systemd_pod_cgroups(base: &Path) -> Vec<(PodUid, PathBuf)> {
    let mut out = vec![];
    for (dir, prefix) in [
        ("kubepods.slice", "kubepods-pod"),
        ("kubepods.slice/kubepods-burstable.slice", "kubepods-burstable-pod"),
        ("kubepods.slice/kubepods-besteffort.slice", "kubepods-besteffort-pod"),
    ] {
        let Ok(rd) = std::fs::read_dir(base.join(dir)) else {
            continue;
        };
        for e in rd.filter_map(|e| e.ok()) {
            let name = e.file_name();
            let uid = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
                .and_then(|n| n.strip_suffix(".slice"));
            if let Some(uid) = uid.filter(|u| !u.is_empty())
                && e.path().is_dir()
            {
                out.push((PodUid::new(uid.replace('_', "-")), e.path()));
            }
        }
    }
    out
}

/// Pure: the pod cgroups to remove — pods whose content may be removed,
/// that the runtime held at the start of the round (`known`) and holds
/// nothing of now (`held`).
pub fn evictable_pod_cgroups(
    found: &[(PodUid, PathBuf)],
    liveness: &PodLiveness,
    known: &HashSet<PodUid>,
    held: &HashSet<PodUid>,
) -> Vec<PathBuf> {
    if !liveness.sources_ready {
        return vec![];
    }
    found
        .iter()
        .filter(|(uid, _)| known.contains(uid) && !held.contains(uid) && liveness.should_pod_content_be_removed(uid))
        .map(|(_, p)| p.clone())
        .collect()
}

/// Removes `dir` and the directories below it, deepest first, with `rmdir`
/// (cgroupfs directories hold only pseudo-files). Errors name the path.
pub fn remove_cgroup(dir: &Path) -> Result<(), String> {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.filter_map(|e| e.ok()) {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup(&e.path())?;
            }
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("failed to remove pod cgroup {}: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn finds_pod_cgroups_of_every_hierarchy_and_qos() {
        let t = tempfile::tempdir().unwrap();
        for d in [
            "memory/kubepods/podg1",
            "memory/kubepods/burstable/podb1/ctr1",
            "cpu/kubepods/besteffort/pode1",
            "kubepods/besteffort/podv2", // unified (v2) at the mount itself
            "memory/kubepods/burstable/notapod",
            "memory/system.slice/podx",
        ] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        let found: Vec<_> = find_pod_cgroups(t.path())
            .into_iter()
            .map(|(u, p)| {
                (
                    u.as_str().to_string(),
                    p.strip_prefix(t.path()).unwrap().display().to_string(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                ("e1".to_string(), "cpu/kubepods/besteffort/pode1".to_string()),
                ("v2".into(), "kubepods/besteffort/podv2".into()),
                ("b1".into(), "memory/kubepods/burstable/podb1".into()),
                ("g1".into(), "memory/kubepods/podg1".into()),
            ]
        );
    }

    #[test]
    fn finds_systemd_driver_pod_slices() {
        let t = tempfile::tempdir().unwrap();
        for d in [
            "memory/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poda_b_c.slice",
            "cpu/kubepods.slice/kubepods-podg_1.slice",
            "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pode.slice",
            "memory/kubepods.slice/kubepods-burstable.slice/other.slice",
        ] {
            std::fs::create_dir_all(t.path().join(d)).unwrap();
        }
        let mut uids: Vec<String> = find_pod_cgroups(t.path())
            .into_iter()
            .map(|(u, _)| u.as_str().to_string())
            .collect();
        uids.sort();
        assert_eq!(uids, ["a-b-c", "e", "g-1"]);
    }

    #[test]
    fn only_gone_pods_the_runtime_held() {
        let found: Vec<(PodUid, PathBuf)> = ["gone", "live", "stranger", "still-held"]
            .iter()
            .map(|u| (PodUid::from(*u), PathBuf::from(format!("/cg/pod{u}"))))
            .collect();
        let l = PodLiveness {
            sources_ready: true,
            desired: HashMap::from([(PodUid::from("live"), false)]),
            workers: Some(HashMap::new()),
            active: HashSet::new(),
        };
        let known: HashSet<PodUid> = ["gone", "live", "still-held"].map(PodUid::from).into();
        let held: HashSet<PodUid> = ["live", "still-held"].map(PodUid::from).into();
        assert_eq!(
            evictable_pod_cgroups(&found, &l, &known, &held),
            [PathBuf::from("/cg/podgone")]
        );
        let not_ready = PodLiveness {
            sources_ready: false,
            ..l
        };
        assert!(evictable_pod_cgroups(&found, &not_ready, &known, &held).is_empty());
    }

    #[test]
    fn removal_is_rmdir_deepest_first() {
        let t = tempfile::tempdir().unwrap();
        let pod = t.path().join("podu1");
        std::fs::create_dir_all(pod.join("ctr/sub")).unwrap();
        remove_cgroup(&pod).unwrap();
        assert!(!pod.exists());
        assert!(remove_cgroup(&pod).is_ok(), "gone already: fine");
        // a directory holding a regular file is not a removable cgroup here: error, kept
        std::fs::create_dir_all(&pod).unwrap();
        std::fs::write(pod.join("tasks"), "1").unwrap();
        let e = remove_cgroup(&pod).unwrap_err();
        assert!(e.contains("podu1"), "{e}");
        assert!(pod.exists());
    }
}
