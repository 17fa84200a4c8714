//! Applying a [`ResourceConfig`] to cgroupfs, v1 or v2, with plain file
//! writes (what runc's `fs`/`fs2` managers do for the kubelet upstream).
//!
//! [`CgroupFs`] is the small interface the manager uses; [`Cgroupfs`]
//! implements it over a mount point, so tests run the real code on a fake
//! tree in a temporary directory. Every call is blocking file IO: callers
//! run it on the blocking pool.
//!
//! - v1: the cgroup is created in every controller hierarchy mounted under
//!   the mount point; `cpu.shares`, `cpu.cfs_period_us` then
//!   `cpu.cfs_quota_us`, `memory.limit_in_bytes`, `pids.max`. A new
//!   `cpuset` cgroup gets its parent's `cpuset.cpus`/`cpuset.mems` (an
//!   empty cpuset accepts no process).
//! - v2: the parents' `cgroup.subtree_control` enables `cpu memory pids`;
//!   `cpu.weight` (from shares), `cpu.max`, `memory.max`, `pids.max`.

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use super::resources::{ResourceConfig, cpu_max, cpu_shares_to_weight, v2_limit};

/// A cgroup operation failed; names the path.
#[derive(Debug, thiserror::Error)]
#[error("{op} {path}: {source}")]
pub struct CgroupError {
    /// What was attempted (`failed to create cgroup`, `failed to write "2" to` …).
    pub op: String,
    /// The file or directory.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: std::io::Error,
}

/// The cgroup version of a mount point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    /// One hierarchy per controller (`/sys/fs/cgroup/cpu`, `…/memory`, …).
    V1,
    /// The unified hierarchy (`cgroup.controllers` at the mount point).
    V2,
}

/// What the container manager needs from cgroupfs. `path` is a cgroup name
/// as the driver spells it (`/kubepods/burstable/pod<uid>`).
pub trait CgroupFs: Send + Sync + Debug {
    /// Whether the cgroup exists in every hierarchy the kubelet sets.
    fn exists(&self, path: &str) -> bool;
    /// Creates the cgroup (and its parents) and applies `res`.
    fn create(&self, path: &str, res: &ResourceConfig) -> Result<(), CgroupError>;
    /// Applies `res` to an existing cgroup.
    fn update(&self, path: &str, res: &ResourceConfig) -> Result<(), CgroupError>;
}

/// v1 controller hierarchies a kubelet cgroup is created in (those mounted).
const V1_CONTROLLERS: &[&str] = &[
    "cpu",
    "cpuacct",
    "cpuset",
    "memory",
    "pids",
    "hugetlb",
    "blkio",
    "devices",
    "freezer",
    "net_cls",
    "net_prio",
    "perf_event",
];
/// v1 hierarchies that must hold the cgroup for it to exist (the ones set).
const V1_REQUIRED: &[&str] = &["cpu", "memory", "pids"];
/// v2 controllers enabled for children.
const V2_CONTROLLERS: &str = "+cpu +memory +pids";

/// cgroupfs at a mount point.
#[derive(Clone, Debug)]
pub struct Cgroupfs {
    mount: PathBuf,
    version: CgroupVersion,
}

fn io(op: impl Into<String>, path: &Path) -> impl FnOnce(std::io::Error) -> CgroupError {
    let (op, path) = (op.into(), path.to_path_buf());
    move |source| CgroupError { op, path, source }
}

fn write(path: &Path, value: &str) -> Result<(), CgroupError> {
    std::fs::write(path, value).map_err(io(format!("failed to write {value:?} to"), path))
}

impl Cgroupfs {
    /// cgroupfs at `mount` in `version`.
    pub fn new(mount: impl Into<PathBuf>, version: CgroupVersion) -> Self {
        Self {
            mount: mount.into(),
            version,
        }
    }

    /// cgroupfs at `mount`, v2 when the mount point holds `cgroup.controllers`
    /// (a unified mount), else v1 (hybrid hosts keep their controllers on v1).
    pub fn detect(mount: impl Into<PathBuf>) -> Self {
        let mount = mount.into();
        let version = if mount.join("cgroup.controllers").is_file() {
            CgroupVersion::V2
        } else {
            CgroupVersion::V1
        };
        Self { mount, version }
    }

    /// The version in use.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The mount point.
    pub fn mount(&self) -> &Path {
        &self.mount
    }

    fn rel(path: &str) -> &str {
        path.trim_start_matches('/')
    }

    /// The directory of `path` in hierarchy `controller` (v1) or the unified one.
    pub fn dir(&self, controller: &str, path: &str) -> PathBuf {
        match self.version {
            CgroupVersion::V1 => self.mount.join(controller).join(Self::rel(path)),
            CgroupVersion::V2 => self.mount.join(Self::rel(path)),
        }
    }

    fn v1_mounted(&self) -> Vec<&'static str> {
        V1_CONTROLLERS
            .iter()
            .copied()
            .filter(|c| self.mount.join(c).is_dir())
            .collect()
    }

    fn mkdir(dir: &Path) -> Result<(), CgroupError> {
        std::fs::create_dir_all(dir).map_err(io("failed to create cgroup", dir))
    }

    /// A fresh cpuset cgroup inherits its parent's cpus and mems, level by level.
    fn cpuset_inherit(&self, path: &str) -> Result<(), CgroupError> {
        let mut dir = self.mount.join("cpuset");
        for part in Self::rel(path).split('/').filter(|p| !p.is_empty()) {
            let child = dir.join(part);
            for file in ["cpuset.cpus", "cpuset.mems"] {
                let mine = std::fs::read_to_string(child.join(file)).unwrap_or_default();
                if mine.trim().is_empty() {
                    let parent = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
                    if !parent.trim().is_empty() {
                        write(&child.join(file), parent.trim())?;
                    }
                }
            }
            dir = child;
        }
        Ok(())
    }

    /// Creates each level after enabling the controllers in its parent.
    fn v2_enable_controllers(&self, path: &str) -> Result<(), CgroupError> {
        let mut dir = self.mount.clone();
        let parts: Vec<&str> = Self::rel(path).split('/').filter(|p| !p.is_empty()).collect();
        for part in parts {
            let control = dir.join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&control).unwrap_or_default();
            let missing = ["cpu", "memory", "pids"]
                .iter()
                .any(|c| !enabled.split_whitespace().any(|e| e == *c));
            if missing {
                write(&control, V2_CONTROLLERS)?;
            }
            dir = dir.join(part);
            Self::mkdir(&dir)?;
        }
        Ok(())
    }

    fn set_v1(&self, path: &str, res: &ResourceConfig) -> Result<(), CgroupError> {
        let cpu = self.dir("cpu", path);
        if let Some(shares) = res.cpu_shares {
            write(&cpu.join("cpu.shares"), &shares.to_string())?;
        }
        if let Some(period) = res.cpu_period {
            write(&cpu.join("cpu.cfs_period_us"), &period.to_string())?;
        }
        if let Some(quota) = res.cpu_quota {
            let quota = if quota <= 0 { -1 } else { quota };
            write(&cpu.join("cpu.cfs_quota_us"), &quota.to_string())?;
        }
        if let Some(memory) = res.memory.filter(|m| *m != 0) {
            write(
                &self.dir("memory", path).join("memory.limit_in_bytes"),
                &memory.to_string(),
            )?;
        }
        if let Some(pids) = res.pids_limit {
            write(&self.dir("pids", path).join("pids.max"), &v2_limit(pids))?;
        }
        Ok(())
    }

    fn set_v2(&self, path: &str, res: &ResourceConfig) -> Result<(), CgroupError> {
        let dir = self.dir("", path);
        if let Some(shares) = res.cpu_shares {
            write(&dir.join("cpu.weight"), &cpu_shares_to_weight(shares).to_string())?;
        }
        if let Some(max) = cpu_max(res.cpu_quota, res.cpu_period) {
            write(&dir.join("cpu.max"), &max)?;
        }
        if let Some(memory) = res.memory.filter(|m| *m != 0) {
            write(&dir.join("memory.max"), &v2_limit(memory))?;
        }
        if let Some(pids) = res.pids_limit {
            write(&dir.join("pids.max"), &v2_limit(pids))?;
        }
        Ok(())
    }
}

impl CgroupFs for Cgroupfs {
    fn exists(&self, path: &str) -> bool {
        match self.version {
            CgroupVersion::V1 => V1_REQUIRED.iter().all(|c| self.dir(c, path).is_dir()),
            CgroupVersion::V2 => self.dir("", path).is_dir(),
        }
    }

    fn create(&self, path: &str, res: &ResourceConfig) -> Result<(), CgroupError> {
        match self.version {
            CgroupVersion::V1 => {
                let mounted = self.v1_mounted();
                for c in &mounted {
                    Self::mkdir(&self.dir(c, path))?;
                }
                if mounted.contains(&"cpuset") {
                    self.cpuset_inherit(path)?;
                }
            }
            CgroupVersion::V2 => {
                self.v2_enable_controllers(path)?;
            }
        }
        self.update(path, res)
    }

    fn update(&self, path: &str, res: &ResourceConfig) -> Result<(), CgroupError> {
        match self.version {
            CgroupVersion::V1 => self.set_v1(path, res),
            CgroupVersion::V2 => self.set_v2(path, res),
        }
    }
}

#[cfg(test)]
#[path = "fs_tests.rs"]
mod tests;
