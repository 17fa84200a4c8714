//! Pure: which dead containers, sandboxes and pod log directories a
//! container GC round removes (upstream `kuberuntime_gc.go`).
//!
//! - **Containers**: evictable ones are not running and were created at
//!   least `min_age` ago, grouped by (pod UID, container name). Every dead
//!   container of a pod whose content may be removed goes; of the others the
//!   newest `max_per_pod_container` per group are kept; then `max_containers`
//!   is enforced on the node (an equal share per group, at least one, then
//!   oldest first).
//! - **Sandboxes**: a sandbox that is not ready and holds no container is
//!   removed when its pod's content may be removed, or when it is not the
//!   newest sandbox of its pod.
//! - **Pod log directories** (`<ns>_<name>_<uid>`) of pods whose content may
//!   be removed (and that the runtime knew, see [`evictable_log_dirs`]).
//!
//! Nothing at all is removed before every pod source is ready.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use super::liveness::{PodLiveness, container_pod_uid, sandbox_pod_uid};
use super::policy::ContainerGcPolicy;
use crate::cri::v1;
use crate::kuberuntime::labels::{POD_DELETION_GRACE_PERIOD_ANNOTATION, POD_TERMINATION_GRACE_PERIOD_ANNOTATION};
use crate::messages::PodUid;

/// Upstream `minimumGracePeriodInSeconds`.
const MIN_GRACE: Duration = Duration::from_secs(2);

/// One dead container to remove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerRemoval {
    /// The container ID.
    pub id: String,
    /// Its pod.
    pub pod_uid: PodUid,
    /// Its name.
    pub name: String,
    /// In unknown state: stop it first (with `grace`).
    pub unknown: bool,
    /// Grace period for that stop (the pod's, from the annotations; at least 2 s).
    pub grace: Duration,
    created_at: i64,
}

fn removal(c: &v1::Container) -> ContainerRemoval {
    let grace = [
        POD_DELETION_GRACE_PERIOD_ANNOTATION,
        POD_TERMINATION_GRACE_PERIOD_ANNOTATION,
    ]
    .iter()
    .find_map(|k| c.annotations.get(*k)?.parse::<u64>().ok())
    .map_or(Duration::from_secs(30), Duration::from_secs)
    .max(MIN_GRACE);
    ContainerRemoval {
        id: c.id.clone(),
        pod_uid: container_pod_uid(c),
        name: c.metadata.as_ref().map(|m| m.name.clone()).unwrap_or_default(),
        unknown: c.state == v1::ContainerState::ContainerUnknown as i32,
        grace,
        created_at: c.created_at,
    }
}

/// Newest first (ties: by ID, for a stable order).
fn newest_first(v: &mut [ContainerRemoval]) {
    v.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| a.id.cmp(&b.id)));
}

type Units = BTreeMap<(PodUid, String), Vec<ContainerRemoval>>;

/// Keeps the newest `keep` of every unit; the rest go to `out`.
fn enforce_per_unit(units: &mut Units, keep: usize, out: &mut Vec<ContainerRemoval>) {
    for unit in units.values_mut() {
        if unit.len() > keep {
            newest_first(unit);
            out.extend(unit.drain(keep..).rev());
        }
    }
}

/// The dead containers to remove, oldest of each group first (upstream
/// `evictContainers`). `now_ns`: the wall clock in Unix nanoseconds.
pub fn evictable_containers(
    containers: &[v1::Container],
    liveness: &PodLiveness,
    policy: &ContainerGcPolicy,
    now_ns: i64,
) -> Vec<ContainerRemoval> {
    if !liveness.sources_ready {
        return vec![];
    }
    let newest_gc_time = now_ns.saturating_sub(i64::try_from(policy.min_age.as_nanos()).unwrap_or(i64::MAX));
    let mut units = Units::new();
    for c in containers {
        if c.state == v1::ContainerState::ContainerRunning as i32 || c.created_at > newest_gc_time {
            continue;
        }
        let r = removal(c);
        units.entry((r.pod_uid.clone(), r.name.clone())).or_default().push(r);
    }
    let mut out = vec![];
    units.retain(|(uid, _), unit| {
        if liveness.should_pod_content_be_removed(uid) {
            newest_first(unit);
            out.extend(unit.drain(..).rev());
            false
        } else {
            true
        }
    });
    if let Ok(keep) = usize::try_from(policy.max_per_pod_container) {
        enforce_per_unit(&mut units, keep, &mut out);
    }
    let total = |u: &Units| u.values().map(Vec::len).sum::<usize>();
    if let Ok(max) = usize::try_from(policy.max_containers)
        && total(&units) > max
    {
        let per_unit = (max / units.len().max(1)).max(1);
        enforce_per_unit(&mut units, per_unit, &mut out);
        let n = total(&units);
        if n > max {
            let mut flat: Vec<_> = units.into_values().flatten().collect();
            newest_first(&mut flat);
            out.extend(flat.drain(max..).rev());
        }
    }
    out
}

/// The sandboxes to remove (upstream `evictSandboxes`): not ready, no
/// container left, and either of a pod whose content may go or not the
/// newest sandbox of its pod. Oldest first.
pub fn evictable_sandboxes(
    containers: &[v1::Container],
    sandboxes: &[v1::PodSandbox],
    liveness: &PodLiveness,
) -> Vec<String> {
    if !liveness.sources_ready {
        return vec![];
    }
    let with_containers: HashSet<&str> = containers.iter().map(|c| c.pod_sandbox_id.as_str()).collect();
    let mut by_pod: BTreeMap<PodUid, Vec<&v1::PodSandbox>> = BTreeMap::new();
    for s in sandboxes {
        by_pod.entry(sandbox_pod_uid(s)).or_default().push(s);
    }
    let mut out = vec![];
    for (uid, mut list) in by_pod {
        list.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| a.id.cmp(&b.id)));
        let skip = usize::from(!liveness.should_pod_content_be_removed(&uid));
        for s in list.iter().skip(skip).rev() {
            let active = s.state == v1::PodSandboxState::SandboxReady as i32 || with_containers.contains(s.id.as_str());
            if !active {
                out.push(s.id.clone());
            }
        }
    }
    out
}

/// The pod UID in a pod log directory name `<ns>_<name>_<uid>` (upstream
/// `parsePodUIDFromLogsDirectory`: the last `_`-separated part).
pub fn pod_uid_from_log_dir(name: &str) -> PodUid {
    PodUid::new(name.rsplit('_').next().unwrap_or_default())
}

/// The pod log directories (names under the pod logs dir) to remove: those
/// of pods whose content may be removed and that this runtime holds (or
/// held at the start of the round) a sandbox or container of. Upstream
/// removes every orphan directory; pods the runtime never knew are left
/// alone here, because on a shared host the directory may belong to another
/// kubelet's pod.
pub fn evictable_log_dirs<'a>(
    names: impl IntoIterator<Item = &'a str>,
    liveness: &PodLiveness,
    known: &HashSet<PodUid>,
) -> Vec<String> {
    if !liveness.sources_ready {
        return vec![];
    }
    names
        .into_iter()
        .filter(|n| {
            let uid = pod_uid_from_log_dir(n);
            known.contains(&uid) && liveness.should_pod_content_be_removed(&uid)
        })
        .map(str::to_string)
        .collect()
}

/// The pods the listings name (by container label or sandbox metadata).
pub fn known_pods(containers: &[v1::Container], sandboxes: &[v1::PodSandbox]) -> HashSet<PodUid> {
    containers
        .iter()
        .map(container_pod_uid)
        .chain(sandboxes.iter().map(sandbox_pod_uid))
        .collect()
}

/// The container ID in a legacy log symlink name
/// `<pod>_<ns>_<container>-<id>.log` (upstream
/// `getContainerIDFromLegacyLogSymlink`; IDs are 64 characters).
pub fn container_id_from_legacy_symlink(file_name: &str) -> Option<&str> {
    let id = file_name.rsplit('-').next()?.strip_suffix(".log")?;
    (id.len() == 64).then_some(id)
}

#[cfg(test)]
#[path = "containers_tests.rs"]
mod tests;
