//! The container manager (upstream `pkg/kubelet/cm`): the `kubepods` cgroup
//! hierarchy, node allocatable enforcement, QoS cgroups and pod cgroups.
//!
//! - [`names`]: cgroup names for the cgroupfs and systemd drivers;
//! - [`resources`]: what each cgroup is set to (pure);
//! - [`fs`]: applying it to cgroupfs v1 or v2;
//! - [`manager`]: the shared [`ContainerManager`] handle (QoS hierarchy, pod cgroups);
//! - [`oom_parser`], [`oom_watcher`]: kernel OOM kills → `SystemOOM` node events;
//! - [`actor`], [`assemble`](mod@assemble): the `container-manager` and `oom-watcher` children.
pub mod actor;
pub mod assemble;
pub mod fs;
pub mod manager;
pub mod names;
pub mod oom_parser;
pub mod oom_watcher;
pub mod resources;
pub mod systemd;

pub use assemble::{Assembled, CmInputs, assemble};
pub use manager::{CmConfig, CmMode, ContainerManager, NodeCapacity};
pub use names::{CgroupDriver, CgroupNaming};
