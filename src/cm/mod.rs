//! The container manager (upstream `pkg/kubelet/cm`): the `kubepods` cgroup
//! hierarchy, node allocatable enforcement, QoS cgroups and pod cgroups.
//!
//! - [`names`]: cgroup names for the cgroupfs and systemd drivers;
//! - [`resources`]: what each cgroup is set to (pure);
//! - [`fs`]: applying it to cgroupfs v1 or v2;
//! - [`manager`]: the shared [`ContainerManager`] handle (QoS hierarchy, pod cgroups);
pub mod fs;
pub mod manager;
pub mod names;
pub mod resources;

pub use manager::{CmConfig, CmMode, ContainerManager, NodeCapacity};
pub use names::{CgroupDriver, CgroupNaming};
