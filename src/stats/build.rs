//! Pure: the Summary from CRI container stats and a node sample
//! (upstream's CRI stats provider, without `ListPodSandboxStats`, which
//! containerd 1.6 lacks: pod CPU and memory are the sums of their running
//! containers').

use std::collections::BTreeMap;
use std::sync::Arc;

use dashmap::DashMap;

use super::node::NodeSample;
use super::types::*;
use crate::cri::v1;

/// Previous cumulative CPU readings (ns timestamp, core-ns), per container
/// id or `"node"`, to compute `usageNanoCores` when the runtime does not.
/// Shared, outside any actor; entries of containers that are gone are
/// dropped at each build.
#[derive(Clone, Debug, Default)]
pub struct CpuSamples(Arc<DashMap<String, (i64, u64)>>);

impl CpuSamples {
    /// Records `usage` at `at` for `key`; the rate since the previous
    /// reading, in nanocores.
    ///
    /// ```
    /// let s = actlet::stats::CpuSamples::default();
    /// assert_eq!(s.rate("c", 1_000_000_000, 5_000_000_000), None); // first reading
    /// assert_eq!(s.rate("c", 2_000_000_000, 5_500_000_000), Some(500_000_000)); // half a core
    /// ```
    pub fn rate(&self, key: &str, at: i64, usage: u64) -> Option<u64> {
        let previous = self.0.insert(key.to_string(), (at, usage))?;
        let dt = u64::try_from(at - previous.0).ok().filter(|d| *d > 0)?;
        let used = usage.checked_sub(previous.1)?;
        Some((u128::from(used) * 1_000_000_000 / u128::from(dt)) as u64)
    }

    fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        self.0.retain(|k, _| k == "node" || keep(k));
    }
}

/// RFC 3339 of a CRI nanosecond timestamp.
pub fn time_of(nanos: i64) -> String {
    jiff::Timestamp::from_nanosecond(i128::from(nanos))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

const POD_NAME: &str = "io.kubernetes.pod.name";
const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
const POD_UID: &str = "io.kubernetes.pod.uid";
const CONTAINER_NAME: &str = "io.kubernetes.container.name";

fn value(v: &Option<v1::UInt64Value>) -> Option<u64> {
    v.as_ref().map(|v| v.value)
}

fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// Everything one Summary is built from.
pub struct Inputs<'a> {
    /// The node's name.
    pub node_name: &'a str,
    /// When actlet started (RFC 3339).
    pub start_time: &'a str,
    /// Now, ns.
    pub now: i64,
    /// The node.
    pub node: &'a NodeSample,
    /// CRI `ImageFsInfo`'s first filesystem, if any.
    pub image_fs: Option<&'a v1::FilesystemUsage>,
    /// CRI `ListContainerStats`.
    pub stats: &'a [v1::ContainerStats],
    /// Creation time (ns) of each running container, by id.
    pub running: &'a BTreeMap<String, i64>,
}

fn container_stats(s: &v1::ContainerStats, created: i64, samples: &CpuSamples) -> ContainerStats {
    let attrs = s.attributes.clone().unwrap_or_default();
    let name = attrs
        .labels
        .get(CONTAINER_NAME)
        .cloned()
        .or_else(|| attrs.metadata.map(|m| m.name))
        .unwrap_or_default();
    let cpu = s.cpu.as_ref().map(|c| {
        let total = value(&c.usage_core_nano_seconds);
        let rate = value(&c.usage_nano_cores).or_else(|| total.and_then(|t| samples.rate(&attrs.id, c.timestamp, t)));
        CpuStats {
            time: time_of(c.timestamp),
            usage_nano_cores: rate,
            usage_core_nano_seconds: total,
        }
    });
    let memory = s.memory.as_ref().map(|m| MemoryStats {
        time: time_of(m.timestamp),
        available_bytes: value(&m.available_bytes),
        usage_bytes: value(&m.usage_bytes),
        working_set_bytes: value(&m.working_set_bytes),
        rss_bytes: value(&m.rss_bytes),
        page_faults: value(&m.page_faults),
        major_page_faults: value(&m.major_page_faults),
    });
    let rootfs = s.writable_layer.as_ref().map(|f| FsStats {
        time: time_of(f.timestamp),
        used_bytes: value(&f.used_bytes),
        inodes_used: value(&f.inodes_used),
        ..Default::default()
    });
    ContainerStats {
        name,
        start_time: time_of(created),
        cpu,
        memory,
        rootfs,
    }
}

fn pod_totals(pod: &mut PodStats, time: &str) {
    let mut cpu = CpuStats {
        time: time.to_string(),
        ..Default::default()
    };
    let mut memory = MemoryStats {
        time: time.to_string(),
        ..Default::default()
    };
    let mut storage = FsStats {
        time: time.to_string(),
        ..Default::default()
    };
    for c in &pod.containers {
        if let Some(c) = &c.cpu {
            cpu.usage_nano_cores = add(cpu.usage_nano_cores, c.usage_nano_cores);
            cpu.usage_core_nano_seconds = add(cpu.usage_core_nano_seconds, c.usage_core_nano_seconds);
        }
        if let Some(m) = &c.memory {
            memory.usage_bytes = add(memory.usage_bytes, m.usage_bytes);
            memory.working_set_bytes = add(memory.working_set_bytes, m.working_set_bytes);
            memory.rss_bytes = add(memory.rss_bytes, m.rss_bytes);
            memory.page_faults = add(memory.page_faults, m.page_faults);
            memory.major_page_faults = add(memory.major_page_faults, m.major_page_faults);
        }
        if let Some(f) = &c.rootfs {
            storage.used_bytes = add(storage.used_bytes, f.used_bytes);
            storage.inodes_used = add(storage.inodes_used, f.inodes_used);
        }
    }
    pod.cpu = Some(cpu);
    pod.memory = Some(memory);
    pod.ephemeral_storage = Some(storage);
}

/// Builds the Summary; `samples` gives CPU rates and forgets containers
/// that no longer run.
pub fn summary(input: &Inputs<'_>, samples: &CpuSamples) -> Summary {
    let time = time_of(input.now);
    let mut pods: BTreeMap<(String, String, String), PodStats> = BTreeMap::new();
    for s in input.stats {
        let attrs = s.attributes.clone().unwrap_or_default();
        let Some(created) = input.running.get(&attrs.id) else {
            continue;
        };
        let label = |k: &str| attrs.labels.get(k).cloned().unwrap_or_default();
        let key = (label(POD_NAMESPACE), label(POD_NAME), label(POD_UID));
        let container = container_stats(s, *created, samples);
        let pod = pods.entry(key.clone()).or_insert_with(|| PodStats {
            pod_ref: PodReference {
                namespace: key.0.clone(),
                name: key.1.clone(),
                uid: key.2.clone(),
            },
            start_time: container.start_time.clone(),
            ..Default::default()
        });
        if container.start_time < pod.start_time {
            pod.start_time = container.start_time.clone();
        }
        pod.containers.push(container);
    }
    samples.retain(&|id| input.running.contains_key(id));
    let mut pods: Vec<PodStats> = pods.into_values().collect();
    for p in &mut pods {
        p.containers.sort_by(|a, b| a.name.cmp(&b.name));
        pod_totals(p, &time);
    }
    let n = input.node;
    let node = NodeStats {
        node_name: input.node_name.to_string(),
        start_time: input.start_time.to_string(),
        cpu: n.cpu_usage_ns.map(|total| CpuStats {
            time: time.clone(),
            usage_nano_cores: samples.rate("node", input.now, total),
            usage_core_nano_seconds: Some(total),
        }),
        memory: n.memory.map(|(capacity, usage, ws)| MemoryStats {
            time: time.clone(),
            available_bytes: Some(capacity.saturating_sub(ws)),
            usage_bytes: Some(usage),
            working_set_bytes: Some(ws),
            ..Default::default()
        }),
        fs: n.fs.map(|(capacity, available, used, inodes, free)| FsStats {
            time: time.clone(),
            available_bytes: Some(available),
            capacity_bytes: Some(capacity),
            used_bytes: Some(used),
            inodes_free: Some(free),
            inodes: Some(inodes),
            inodes_used: Some(inodes.saturating_sub(free)),
        }),
        runtime: input.image_fs.map(|f| RuntimeStats {
            image_fs: Some(FsStats {
                time: time_of(f.timestamp),
                used_bytes: value(&f.used_bytes),
                inodes_used: value(&f.inodes_used),
                // The image filesystem is the node's here unless told otherwise.
                capacity_bytes: n.fs.map(|f| f.0),
                available_bytes: n.fs.map(|f| f.1),
                ..Default::default()
            }),
        }),
        rlimit: n.rlimit.map(|(max, cur)| RlimitStats {
            time: time.clone(),
            maxpid: Some(max),
            curproc: Some(cur),
        }),
    };
    Summary { node, pods }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(id: &str, pod: &str, container: &str, cpu_ns: u64, at: i64, ws: u64) -> v1::ContainerStats {
        let labels = [
            (POD_NAME, pod),
            (POD_NAMESPACE, "default"),
            (POD_UID, &format!("u-{pod}")),
            (CONTAINER_NAME, container),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let u = |value| Some(v1::UInt64Value { value });
        v1::ContainerStats {
            attributes: Some(v1::ContainerAttributes {
                id: id.into(),
                labels,
                ..Default::default()
            }),
            cpu: Some(v1::CpuUsage {
                timestamp: at,
                usage_core_nano_seconds: u(cpu_ns),
                usage_nano_cores: None,
            }),
            memory: Some(v1::MemoryUsage {
                timestamp: at,
                working_set_bytes: u(ws),
                ..Default::default()
            }),
            writable_layer: None,
        }
    }

    #[test]
    fn pods_sum_their_running_containers_and_cpu_rates_come_from_two_readings() {
        let samples = CpuSamples::default();
        let node = NodeSample {
            cpu_usage_ns: Some(10_000_000_000),
            memory: Some((1000, 600, 400)),
            ..Default::default()
        };
        let running: BTreeMap<String, i64> = [("a".into(), 1), ("b".into(), 2)].into();
        let second = 1_000_000_000;
        let build = |t: i64, a: u64, b: u64, node_cpu: u64| {
            let n = NodeSample {
                cpu_usage_ns: Some(node_cpu),
                ..node.clone()
            };
            let s = [
                stats("a", "web", "app", a, t, 100),
                stats("b", "web", "side", b, t, 50),
                stats("x", "gone", "c", 1, t, 1),
            ];
            let input = Inputs {
                node_name: "n",
                start_time: "2026-01-01T00:00:00Z",
                now: t,
                node: &n,
                image_fs: None,
                stats: &s,
                running: &running,
            };
            summary(&input, &samples)
        };
        let first = build(10 * second, 1_000_000_000, 0, 10_000_000_000);
        assert_eq!(first.pods.len(), 1, "not running: left out");
        assert_eq!(first.pods[0].cpu.as_ref().and_then(|c| c.usage_nano_cores), None);
        let next = build(12 * second, 2_000_000_000, 1_000_000_000, 14_000_000_000);
        let pod = &next.pods[0];
        assert_eq!(pod.pod_ref.name, "web");
        assert_eq!(
            pod.containers.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["app", "side"]
        );
        // app: 1 s of CPU in 2 s; side: 1 s in 2 s → the pod uses a full core.
        assert_eq!(pod.cpu.as_ref().and_then(|c| c.usage_nano_cores), Some(1_000_000_000));
        assert_eq!(pod.memory.as_ref().and_then(|m| m.working_set_bytes), Some(150));
        assert_eq!(
            next.node.cpu.as_ref().and_then(|c| c.usage_nano_cores),
            Some(2_000_000_000)
        );
        assert_eq!(next.node.memory.as_ref().and_then(|m| m.available_bytes), Some(600));
        assert_eq!(samples.0.len(), 3, "a, b and the node");
    }

    #[test]
    fn the_json_carries_upstreams_field_names() {
        let s = Summary {
            node: NodeStats {
                node_name: "n".into(),
                ..Default::default()
            },
            pods: vec![PodStats {
                ephemeral_storage: Some(FsStats::default()),
                ..Default::default()
            }],
        };
        let v = serde_json::to_value(&s).unwrap_or_default();
        assert_eq!(v["node"]["nodeName"], "n");
        assert!(v["pods"][0].get("ephemeral-storage").is_some());
        assert!(v["pods"][0].get("podRef").is_some());
    }
}
