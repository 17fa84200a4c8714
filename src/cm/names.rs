//! Cgroup names (upstream `CgroupName` in `cgroup_manager_linux.go`): a
//! driver-neutral list of components, written as a cgroupfs path
//! (`/kubepods/burstable/pod<uid>`) or, for `--cgroup-driver=systemd`, as a
//! systemd slice path
//! (`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice`).
//!
//! [`CgroupNaming`] holds the settings that decide every name the kubelet
//! uses: `cgroupRoot`, `cgroupsPerQOS` and `cgroupDriver`.

use crate::kuberuntime::qos::QosClass;

/// `cgroupDriver`: how cgroup names are written and who creates them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CgroupDriver {
    /// Plain cgroupfs directories (`/kubepods/burstable/pod<uid>`).
    #[default]
    Cgroupfs,
    /// systemd slices (`kubepods-burstable-pod<uid>.slice`).
    Systemd,
}

impl CgroupDriver {
    /// Parses the flag/config value (`cgroupfs` or `systemd`).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "cgroupfs" => Ok(Self::Cgroupfs),
            "systemd" => Ok(Self::Systemd),
            other => Err(format!("{other:?}: must be \"cgroupfs\" or \"systemd\"")),
        }
    }

    /// The upstream spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cgroupfs => "cgroupfs",
            Self::Systemd => "systemd",
        }
    }
}

/// A cgroup's name as components from the hierarchy's root (upstream
/// `CgroupName`); empty for the root itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CgroupName(pub Vec<String>);

/// The node allocatable cgroup's name (`kubepods`).
pub const KUBEPODS: &str = "kubepods";
/// The Burstable QoS cgroup's name.
pub const BURSTABLE: &str = "burstable";
/// The BestEffort QoS cgroup's name.
pub const BESTEFFORT: &str = "besteffort";
/// Prefix of a pod's cgroup (`pod<uid>`).
pub const POD_PREFIX: &str = "pod";

impl CgroupName {
    /// `parent` with `components` appended.
    pub fn child(&self, component: impl Into<String>) -> Self {
        let mut v = self.0.clone();
        v.push(component.into());
        Self(v)
    }

    /// The cgroupfs path: `/` joined, `/` for the root.
    pub fn to_cgroupfs(&self) -> String {
        format!("/{}", self.0.join("/"))
    }

    /// The systemd slice path (upstream `ToSystemd`): each component has its
    /// `-` escaped to `_`; every prefix of the joined name becomes a slice.
    pub fn to_systemd(&self) -> String {
        if self.0.iter().all(String::is_empty) {
            return "/".into();
        }
        let parts: Vec<String> = self.0.iter().map(|p| p.replace('-', "_")).collect();
        let mut out = String::new();
        for i in 1..=parts.len() {
            out.push('/');
            out.push_str(&parts[..i].join("-"));
            out.push_str(".slice");
        }
        out
    }

    /// The name as `driver` writes it.
    pub fn to_driver(&self, driver: CgroupDriver) -> String {
        match driver {
            CgroupDriver::Cgroupfs => self.to_cgroupfs(),
            CgroupDriver::Systemd => self.to_systemd(),
        }
    }

    /// Parses `--cgroup-root` as `driver` spells it: a cgroupfs path
    /// (`/a/b`) or a systemd slice path (`/a.slice/a-b.slice`, upstream
    /// `ParseSystemdToCgroupName`).
    pub fn parse(path: &str, driver: CgroupDriver) -> Self {
        match driver {
            CgroupDriver::Cgroupfs => Self(path.split('/').filter(|p| !p.is_empty()).map(str::to_string).collect()),
            CgroupDriver::Systemd => {
                let last = path.rsplit('/').find(|p| !p.is_empty()).unwrap_or_default();
                let base = last.strip_suffix(".slice").unwrap_or(last);
                if base.is_empty() || base == "-" {
                    return Self::default();
                }
                Self(base.split('-').map(|p| p.replace('_', "-")).collect())
            }
        }
    }
}

/// The settings that decide cgroup names: `cgroupRoot`, `cgroupsPerQOS`,
/// `cgroupDriver`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupNaming {
    /// `cgroupRoot` (`/`), parsed for the driver.
    pub root: CgroupName,
    /// `cgroupsPerQOS` (true): pods live under `kubepods/<qos>/pod<uid>`;
    /// false: pods get no cgroup parent from the kubelet.
    pub cgroups_per_qos: bool,
    /// `cgroupDriver`.
    pub driver: CgroupDriver,
}

impl Default for CgroupNaming {
    fn default() -> Self {
        Self {
            root: CgroupName::default(),
            cgroups_per_qos: true,
            driver: CgroupDriver::Cgroupfs,
        }
    }
}

impl CgroupNaming {
    /// The node allocatable cgroup: `<root>/kubepods`.
    pub fn kubepods(&self) -> CgroupName {
        self.root.child(KUBEPODS)
    }

    /// The QoS class's cgroup: `kubepods` for Guaranteed,
    /// `kubepods/burstable`, `kubepods/besteffort`.
    pub fn qos(&self, class: QosClass) -> CgroupName {
        match class {
            QosClass::Guaranteed => self.kubepods(),
            QosClass::Burstable => self.kubepods().child(BURSTABLE),
            QosClass::BestEffort => self.kubepods().child(BESTEFFORT),
        }
    }

    /// The pod's cgroup: `<qos cgroup>/pod<uid>` (upstream `GetPodContainerName`).
    pub fn pod(&self, class: QosClass, uid: &str) -> CgroupName {
        self.qos(class).child(format!("{POD_PREFIX}{uid}"))
    }

    /// The cgroup parent the runtime gets for a pod's sandbox: the pod
    /// cgroup as the driver spells it, or `""` without `cgroupsPerQOS`
    /// (the runtime's default).
    pub fn pod_cgroup_parent(&self, class: QosClass, uid: &str) -> String {
        if !self.cgroups_per_qos {
            return String::new();
        }
        self.pod(class, uid).to_driver(self.driver)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "6d2a0d8c-5f3a-4b8e-9c1d-0a1b2c3d4e5f";

    #[test]
    fn cgroupfs_names_per_qos_class() {
        let n = CgroupNaming::default();
        assert_eq!(
            n.pod_cgroup_parent(QosClass::Guaranteed, UID),
            format!("/kubepods/pod{UID}")
        );
        assert_eq!(
            n.pod_cgroup_parent(QosClass::Burstable, UID),
            format!("/kubepods/burstable/pod{UID}")
        );
        assert_eq!(
            n.pod_cgroup_parent(QosClass::BestEffort, UID),
            format!("/kubepods/besteffort/pod{UID}")
        );
        assert_eq!(n.kubepods().to_cgroupfs(), "/kubepods");
    }

    #[test]
    fn systemd_names_expand_slices_and_escape_dashes() {
        let n = CgroupNaming {
            driver: CgroupDriver::Systemd,
            ..CgroupNaming::default()
        };
        let esc = UID.replace('-', "_");
        assert_eq!(
            n.pod_cgroup_parent(QosClass::Burstable, UID),
            format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{esc}.slice")
        );
        assert_eq!(
            n.pod_cgroup_parent(QosClass::Guaranteed, UID),
            format!("/kubepods.slice/kubepods-pod{esc}.slice")
        );
        assert_eq!(
            n.qos(QosClass::BestEffort).to_systemd(),
            "/kubepods.slice/kubepods-besteffort.slice"
        );
        assert_eq!(CgroupName::default().to_systemd(), "/");
    }

    #[test]
    fn cgroup_root_is_parsed_per_driver() {
        let fs = CgroupName::parse("/custom/root/", CgroupDriver::Cgroupfs);
        assert_eq!(fs.0, ["custom", "root"]);
        let n = CgroupNaming {
            root: fs,
            ..CgroupNaming::default()
        };
        assert_eq!(
            n.pod(QosClass::BestEffort, "u").to_cgroupfs(),
            "/custom/root/kubepods/besteffort/podu"
        );
        assert_eq!(CgroupName::parse("/", CgroupDriver::Cgroupfs), CgroupName::default());
        let sd = CgroupName::parse("/my.slice/my-node_a.slice", CgroupDriver::Systemd);
        assert_eq!(sd.0, ["my", "node-a"]);
        assert_eq!(
            sd.child("kubepods").to_systemd(),
            "/my.slice/my-node_a.slice/my-node_a-kubepods.slice"
        );
        assert_eq!(CgroupName::parse("/", CgroupDriver::Systemd), CgroupName::default());
    }

    #[test]
    fn without_cgroups_per_qos_pods_get_no_parent() {
        let n = CgroupNaming {
            cgroups_per_qos: false,
            ..CgroupNaming::default()
        };
        assert_eq!(n.pod_cgroup_parent(QosClass::Burstable, UID), "");
    }

    #[test]
    fn driver_parses_upstream_spellings() {
        assert_eq!(CgroupDriver::parse("systemd"), Ok(CgroupDriver::Systemd));
        assert_eq!(
            CgroupDriver::parse("cgroupfs").map(CgroupDriver::as_str),
            Ok("cgroupfs")
        );
        assert!(CgroupDriver::parse("docker").unwrap_err().contains("docker"));
    }
}
