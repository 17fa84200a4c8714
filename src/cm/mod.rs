//! The container manager (upstream `pkg/kubelet/cm`): the `kubepods` cgroup
//! hierarchy, node allocatable enforcement, QoS cgroups and pod cgroups.
//!
//! - [`names`]: cgroup names for the cgroupfs and systemd drivers;
//! - [`resources`]: what each cgroup is set to (pure);
//! - [`fs`]: applying it to cgroupfs v1 or v2;
pub mod fs;
pub mod names;
pub mod resources;
