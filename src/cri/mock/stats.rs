//! The usage the mock reports in `ContainerStats`, `ListContainerStats`,
//! `PodSandboxStats` and `ListPodSandboxStats`: plausible defaults (1% of a
//! core, 4 MiB working set), or what a test set with
//! [`MockRuntime::set_usage`] / [`MockRuntime::set_pod_network`].

use std::collections::HashMap;

use tonic::Code;

use super::MockRuntime;
use super::state::{ContainerRecord, SandboxRecord, State};
use crate::cri::v1::{self, ContainerState, PodSandboxState};
use crate::cri::{CriError, CriResult};

/// What the mock reports for one container.
///
/// ```
/// use actlet::cri::mock::MockUsage;
/// let u = MockUsage::default();
/// assert_eq!(u.cpu_core_nano_seconds, None); // 1% of a core since the start
/// assert_eq!(u.usage_nano_cores, Some(10_000_000)); // containerd computes it itself
/// assert_eq!(u.working_set_bytes, 4 << 20);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MockUsage {
    /// Cumulative CPU time (core-nanoseconds); `None`: 1% of a core since
    /// the container started.
    pub cpu_core_nano_seconds: Option<u64>,
    /// The runtime's own `usage_nano_cores`; `None` leaves it unset, so the
    /// kubelet computes it from two samples.
    pub usage_nano_cores: Option<u64>,
    /// `working_set_bytes`.
    pub working_set_bytes: u64,
    /// `usage_bytes`.
    pub usage_bytes: u64,
    /// `rss_bytes`.
    pub rss_bytes: u64,
    /// `page_faults`.
    pub page_faults: u64,
    /// `major_page_faults`.
    pub major_page_faults: u64,
    /// The writable layer's `used_bytes`.
    pub writable_layer_bytes: u64,
    /// The writable layer's `inodes_used`.
    pub writable_layer_inodes: u64,
}

impl Default for MockUsage {
    fn default() -> Self {
        Self {
            cpu_core_nano_seconds: None,
            usage_nano_cores: Some(10_000_000),
            working_set_bytes: 4 << 20,
            usage_bytes: 4 << 20,
            rss_bytes: 2 << 20,
            page_faults: 0,
            major_page_faults: 0,
            writable_layer_bytes: 4096,
            writable_layer_inodes: 2,
        }
    }
}

/// A pod's network counters (its default interface, `eth0`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MockNetwork {
    /// Received bytes.
    pub rx_bytes: u64,
    /// Transmitted bytes.
    pub tx_bytes: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Transmit errors.
    pub tx_errors: u64,
}

/// Usage set by tests, by full container / sandbox ID.
#[derive(Debug, Default)]
pub(crate) struct UsageTable {
    containers: HashMap<String, MockUsage>,
    pods: HashMap<String, MockNetwork>,
}

fn u(value: u64) -> Option<v1::UInt64Value> {
    Some(v1::UInt64Value { value })
}

impl MockRuntime {
    /// Sets the usage the mock reports for container `id` (any unique
    /// prefix); `false` if there is no such container.
    ///
    /// ```
    /// use actlet::cri::mock::{MockRuntime, MockUsage};
    /// let mock = MockRuntime::new();
    /// assert!(!mock.set_usage("nope", MockUsage::default()));
    /// ```
    pub fn set_usage(&self, id: &str, usage: MockUsage) -> bool {
        let Some(full) = self.shared.lock().resolve_container(id) else {
            return false;
        };
        self.usage_table().containers.insert(full, usage);
        true
    }

    /// Sets the network counters of sandbox `id` (any unique prefix);
    /// `false` if there is no such sandbox.
    pub fn set_pod_network(&self, id: &str, network: MockNetwork) -> bool {
        let Some(full) = self.shared.lock().resolve_sandbox(id) else {
            return false;
        };
        self.usage_table().pods.insert(full, network);
        true
    }

    fn usage_table(&self) -> std::sync::MutexGuard<'_, UsageTable> {
        self.shared.usage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stats of `c` (cpu and memory only while it runs).
    pub(super) fn stats_of(&self, c: &ContainerRecord) -> v1::ContainerStats {
        let usage = self.usage_table().containers.get(&c.id).cloned().unwrap_or_default();
        let now = self.shared.clock.now_nanos();
        let running = c.state == ContainerState::ContainerRunning;
        let cpu_ns = usage
            .cpu_core_nano_seconds
            .unwrap_or_else(|| u64::try_from((now - c.started_at) / 100).unwrap_or(0));
        let limit = u64::try_from(c.resources.memory_limit_in_bytes).unwrap_or(0);
        v1::ContainerStats {
            attributes: Some(c.attributes()),
            cpu: running.then(|| v1::CpuUsage {
                timestamp: now,
                usage_core_nano_seconds: u(cpu_ns),
                usage_nano_cores: usage.usage_nano_cores.and_then(u),
            }),
            memory: running.then(|| v1::MemoryUsage {
                timestamp: now,
                working_set_bytes: u(usage.working_set_bytes),
                available_bytes: u(limit.saturating_sub(usage.working_set_bytes)),
                usage_bytes: u(usage.usage_bytes),
                rss_bytes: u(usage.rss_bytes),
                page_faults: u(usage.page_faults),
                major_page_faults: u(usage.major_page_faults),
            }),
            writable_layer: Some(v1::FilesystemUsage {
                timestamp: now,
                fs_id: Some(v1::FilesystemIdentifier {
                    mountpoint: self.shared.image_fs_mountpoint.clone(),
                }),
                used_bytes: u(usage.writable_layer_bytes),
                inodes_used: u(usage.writable_layer_inodes),
            }),
        }
    }

    /// A ready sandbox's stats: its running containers, their sums as the
    /// pod's cpu and memory, its network counters, one process per container
    /// plus the pause process.
    fn sandbox_stats(&self, st: &State, s: &SandboxRecord) -> v1::PodSandboxStats {
        let now = self.shared.clock.now_nanos();
        let mut containers: Vec<&ContainerRecord> = st
            .containers
            .values()
            .map(|c| &**c)
            .filter(|c| c.sandbox_id == s.id && c.state == ContainerState::ContainerRunning)
            .collect();
        containers.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let stats: Vec<v1::ContainerStats> = containers.iter().map(|c| self.stats_of(c)).collect();
        let sum = |f: &dyn Fn(&v1::ContainerStats) -> Option<u64>| stats.iter().filter_map(f).sum::<u64>();
        let cpu_total = sum(&|c| c.cpu.as_ref()?.usage_core_nano_seconds.as_ref().map(|v| v.value));
        let nano_cores = stats
            .iter()
            .all(|c| c.cpu.as_ref().is_some_and(|c| c.usage_nano_cores.is_some()))
            .then(|| sum(&|c| c.cpu.as_ref()?.usage_nano_cores.as_ref().map(|v| v.value)));
        let mem = |f: fn(&v1::MemoryUsage) -> &Option<v1::UInt64Value>| {
            u(sum(&|c| c.memory.as_ref().and_then(|m| f(m).as_ref()).map(|v| v.value)))
        };
        let net = self.usage_table().pods.get(&s.id).copied().unwrap_or_default();
        let eth0 = v1::NetworkInterfaceUsage {
            name: "eth0".into(),
            rx_bytes: u(net.rx_bytes),
            rx_errors: u(net.rx_errors),
            tx_bytes: u(net.tx_bytes),
            tx_errors: u(net.tx_errors),
        };
        v1::PodSandboxStats {
            attributes: Some(v1::PodSandboxAttributes {
                id: s.id.clone(),
                metadata: Some(s.metadata()),
                labels: s.config.labels.clone(),
                annotations: s.config.annotations.clone(),
            }),
            linux: Some(v1::LinuxPodSandboxStats {
                cpu: Some(v1::CpuUsage {
                    timestamp: now,
                    usage_core_nano_seconds: u(cpu_total),
                    usage_nano_cores: nano_cores.and_then(u),
                }),
                memory: Some(v1::MemoryUsage {
                    timestamp: now,
                    working_set_bytes: mem(|m| &m.working_set_bytes),
                    available_bytes: None,
                    usage_bytes: mem(|m| &m.usage_bytes),
                    rss_bytes: mem(|m| &m.rss_bytes),
                    page_faults: mem(|m| &m.page_faults),
                    major_page_faults: mem(|m| &m.major_page_faults),
                }),
                network: Some(v1::NetworkUsage {
                    timestamp: now,
                    default_interface: Some(eth0),
                    interfaces: Vec::new(),
                }),
                process: Some(v1::ProcessUsage {
                    timestamp: now,
                    process_count: u(containers.len() as u64 + 1),
                }),
                containers: stats,
            }),
        }
    }

    pub(super) fn do_pod_sandbox_stats(
        &self,
        req: &v1::PodSandboxStatsRequest,
    ) -> CriResult<v1::PodSandboxStatsResponse> {
        const M: &str = "PodSandboxStats";
        let st = self.shared.lock();
        let s = st
            .resolve_sandbox(&req.pod_sandbox_id)
            .and_then(|id| st.sandboxes.get(&id))
            .ok_or_else(|| {
                let msg = format!(
                    "an error occurred when try to find sandbox {:?}: not found",
                    req.pod_sandbox_id
                );
                CriError::new(M, Code::NotFound, msg)
            })?;
        if s.state != PodSandboxState::SandboxReady {
            return Err(CriError::new(M, Code::Unavailable, "sandbox is not running"));
        }
        Ok(v1::PodSandboxStatsResponse {
            stats: Some(self.sandbox_stats(&st, s)),
        })
    }

    /// containerd leaves out sandboxes that are not ready.
    pub(super) fn do_list_pod_sandbox_stats(
        &self,
        req: &v1::ListPodSandboxStatsRequest,
    ) -> v1::ListPodSandboxStatsResponse {
        let filter = req.filter.clone().unwrap_or_default();
        let st = self.shared.lock();
        let mut items: Vec<&SandboxRecord> = st
            .sandboxes
            .values()
            .map(|s| &**s)
            .filter(|s| s.state == PodSandboxState::SandboxReady && s.id.starts_with(&filter.id))
            .filter(|s| {
                filter
                    .label_selector
                    .iter()
                    .all(|(k, v)| s.config.labels.get(k) == Some(v))
            })
            .collect();
        items.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        v1::ListPodSandboxStatsResponse {
            stats: items.into_iter().map(|s| self.sandbox_stats(&st, s)).collect(),
        }
    }
}
