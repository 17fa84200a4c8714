//! Resource usage: the Summary API (`/stats/summary`, [`types`]) collected
//! by [`provider::StatsProvider`] from the runtime, the pod cgroups and the
//! host, and the Prometheus views of the same data (`/metrics/resource`,
//! `/metrics/cadvisor`: [`metrics`]).

pub mod cgroup;
pub mod convert;
pub mod cpu_usage;
pub mod du_cache;
pub mod host;
pub mod metrics;
pub mod provider;
pub mod types;

pub use cpu_usage::CpuUsageCache;
pub use provider::{Collected, ContainerInfo, StatsError, StatsProvider, StatsSettings};
pub use types::Summary;
