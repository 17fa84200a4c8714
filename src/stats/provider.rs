//! [`StatsProvider`]: collects `/stats/summary` from the runtime (CRI
//! `ListPodSandbox`, `ListContainers`, `ListContainerStats`,
//! `ListPodSandboxStats`, `ImageFsInfo`), the pod cgroups and the host, as
//! upstream's CRI stats provider (`pkg/kubelet/stats/cri_stats_provider.go`)
//! does:
//! - pods: the newest ready sandbox of each pod; containers: the running ones;
//! - pod CPU and memory: `ListPodSandboxStats` when the runtime has it, else
//!   the pod cgroup, else the sum of its containers;
//! - `usageNanoCores`: the runtime's, else computed from the previous sample
//!   ([`CpuUsageCache`], shared so a rebuilt provider keeps the samples).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::convert::{self, now_nanos, time};
use super::cpu_usage::CpuUsageCache;
use super::host;
use super::types::*;
use crate::cri::SharedRuntime;
use crate::cri::v1;
use crate::pod_manager::PodManager;

/// Where the provider reads from.
#[derive(Clone, Debug)]
pub struct StatsSettings {
    /// The node's name.
    pub node_name: String,
    /// `--root-dir`: the node filesystem, pod volumes under `pods/<uid>/volumes`.
    pub root_dir: PathBuf,
    /// `podLogsDir` (`/var/log/pods`).
    pub pod_logs_dir: PathBuf,
    /// `/proc`.
    pub proc_root: PathBuf,
    /// The cgroup mount (`/sys/fs/cgroup`).
    pub cgroup_mount: PathBuf,
}

/// Reading stats failed.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// A CRI call failed.
    #[error("failed to get pod stats: {0}")]
    Runtime(#[from] crate::cri::CriError),
}

/// One running container as `/metrics/cadvisor` labels it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerInfo {
    /// The pod.
    pub pod: PodReference,
    /// The container's name.
    pub name: String,
    /// The runtime's ID.
    pub id: String,
    /// The image as the container was created with it.
    pub image: String,
    /// The memory limit from the pod spec (0: none).
    pub memory_limit: u64,
}

/// A summary plus what the cAdvisor-style metrics need besides it.
#[derive(Clone, Debug)]
pub struct Collected {
    /// The Summary API answer.
    pub summary: Summary,
    /// The running containers, in the summary's order.
    pub containers: Vec<ContainerInfo>,
}

/// Collects stats (cheap to clone; the CPU sample cache is shared).
#[derive(Clone)]
pub struct StatsProvider {
    settings: Arc<StatsSettings>,
    runtime: SharedRuntime,
    pods: PodManager,
    cgroups: Option<crate::cm::ContainerManager>,
    cpu: CpuUsageCache,
    du: super::du_cache::DiskUsageCache,
    /// The runtime answered `UNIMPLEMENTED` to `ListPodSandboxStats`.
    no_sandbox_stats: Arc<AtomicBool>,
}

impl std::fmt::Debug for StatsProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatsProvider")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

fn pod_ref(m: Option<&v1::PodSandboxMetadata>) -> PodReference {
    m.map(|m| PodReference {
        name: m.name.clone(),
        namespace: m.namespace.clone(),
        uid: m.uid.clone(),
    })
    .unwrap_or_default()
}

impl StatsProvider {
    /// A provider over `runtime`; `cgroups` (when active) gives pod cgroups
    /// for runtimes without `ListPodSandboxStats`.
    pub fn new(
        settings: StatsSettings,
        runtime: SharedRuntime,
        pods: PodManager,
        cgroups: Option<crate::cm::ContainerManager>,
        cpu: CpuUsageCache,
    ) -> Self {
        Self {
            settings: Arc::new(settings),
            runtime,
            pods,
            cgroups,
            cpu,
            du: Default::default(),
            no_sandbox_stats: Arc::default(),
        }
    }

    /// The CPU sample cache.
    pub fn cpu_cache(&self) -> &CpuUsageCache {
        &self.cpu
    }

    /// Pod sandbox stats by sandbox ID, `None` when the runtime has no
    /// `ListPodSandboxStats` (remembered after the first `UNIMPLEMENTED`) or
    /// it failed this time (then the pods fall back for this collection).
    async fn sandbox_stats(&self) -> Option<HashMap<String, v1::PodSandboxStats>> {
        if self.no_sandbox_stats.load(Ordering::Relaxed) {
            return None;
        }
        match self.runtime.list_pod_sandbox_stats(Default::default()).await {
            Ok(r) => Some(
                r.stats
                    .into_iter()
                    .filter_map(|s| Some((s.attributes.as_ref()?.id.clone(), s)))
                    .collect(),
            ),
            Err(e) if e.code == tonic::Code::Unimplemented => {
                tracing::info!("the runtime has no ListPodSandboxStats; pod stats come from cgroups");
                self.no_sandbox_stats.store(true, Ordering::Relaxed);
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "ListPodSandboxStats failed; pod stats come from cgroups this time");
                None
            }
        }
    }

    /// The pod cgroup's usage and process count, when cgroups are managed.
    fn pod_cgroup(&self, uid: &str) -> Option<(host::CpuMemory, Option<u64>)> {
        let cm = self.cgroups.as_ref().filter(|cm| cm.is_active() == Some(true))?;
        let pod = self.pods.get(&crate::messages::PodUid::new(uid))?;
        let path = cm.pod_cgroup(&pod.pod);
        let fs = crate::cm::fs::Cgroupfs::detect(&self.settings.cgroup_mount);
        super::cgroup::read(&fs, &path)
    }

    /// Whether the runtime's image filesystem is on another device than the
    /// root directory (upstream `HasDedicatedImageFs`); `false` when the
    /// runtime names no mountpoint that exists here.
    pub async fn has_dedicated_image_fs(&self) -> Result<bool, StatsError> {
        use std::os::unix::fs::MetadataExt;
        let fs = self.runtime.image_fs_info(Default::default()).await?;
        let Some(mount) = fs
            .image_filesystems
            .first()
            .and_then(|u| u.fs_id.as_ref())
            .map(|id| std::path::PathBuf::from(&id.mountpoint))
        else {
            return Ok(false);
        };
        let dev = |p: &std::path::Path| std::fs::metadata(p).ok().map(|m| m.dev());
        Ok(match (dev(&mount), dev(&self.settings.root_dir)) {
            (Some(a), Some(b)) => a != b,
            _ => false,
        })
    }

    /// Collects everything (file system walks run on the blocking pool).
    pub async fn collect(&self) -> Result<Collected, StatsError> {
        let rt = &self.runtime;
        let (sandboxes, containers, stats, image_fs, sandbox_stats) = tokio::join!(
            rt.list_pod_sandbox(Default::default()),
            rt.list_containers(Default::default()),
            rt.list_container_stats(Default::default()),
            rt.image_fs_info(Default::default()),
            self.sandbox_stats(),
        );
        let (sandboxes, containers) = (sandboxes?.items, containers?.containers);
        let (stats, image_fs) = (stats?.stats, image_fs?);
        let me = self.clone();
        let out =
            tokio::task::spawn_blocking(move || me.assemble(sandboxes, containers, stats, sandbox_stats, image_fs))
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        Ok(out)
    }

    fn assemble(
        &self,
        sandboxes: Vec<v1::PodSandbox>,
        containers: Vec<v1::Container>,
        stats: Vec<v1::ContainerStats>,
        sandbox_stats: Option<HashMap<String, v1::PodSandboxStats>>,
        image_fs: v1::ImageFsInfoResponse,
    ) -> Collected {
        let now = now_nanos();
        let s = &self.settings;
        let root_fs = host::fs_info(&s.root_dir);
        let image_fs_usage = image_fs.image_filesystems.first();
        let image_fs_info = image_fs_usage
            .and_then(|f| f.fs_id.as_ref())
            .and_then(|id| host::fs_info(std::path::Path::new(&id.mountpoint)))
            .or(root_fs);
        let node = self.node_stats(now, root_fs, image_fs_info, image_fs_usage);

        // the newest ready sandbox of each pod
        let mut ready: HashMap<String, &v1::PodSandbox> = HashMap::new();
        for b in sandboxes
            .iter()
            .filter(|b| b.state == v1::PodSandboxState::SandboxReady as i32)
        {
            let uid = b.metadata.as_ref().map(|m| m.uid.clone()).unwrap_or_default();
            if ready.get(&uid).is_none_or(|old| old.created_at < b.created_at) {
                ready.insert(uid, b);
            }
        }
        let by_sandbox: HashMap<&str, &v1::PodSandbox> = ready.values().map(|b| (b.id.as_str(), *b)).collect();
        let running: HashMap<&str, &v1::Container> = containers
            .iter()
            .filter(|c| c.state == v1::ContainerState::ContainerRunning as i32)
            .map(|c| (c.id.as_str(), c))
            .collect();
        let mut pods: HashMap<&str, PodStats> = HashMap::new();
        let mut infos = Vec::new();
        let mut ordered: Vec<&v1::ContainerStats> = stats.iter().collect();
        ordered.sort_by_key(|st| {
            st.attributes
                .as_ref()
                .and_then(|a| running.get(a.id.as_str()))
                .map(|c| c.created_at)
        });
        for st in ordered {
            let Some(attrs) = &st.attributes else { continue };
            let Some(c) = running.get(attrs.id.as_str()) else {
                continue;
            };
            let Some(b) = by_sandbox.get(c.pod_sandbox_id.as_str()) else {
                continue;
            };
            let pref = pod_ref(b.metadata.as_ref());
            let name = c.metadata.as_ref().map(|m| m.name.clone()).unwrap_or_default();
            let ps = pods
                .entry(b.id.as_str())
                .or_insert_with(|| PodStats::empty(pref.clone(), time(b.created_at)));
            let rootfs = st.writable_layer.as_ref().map(|w| {
                let info = w
                    .fs_id
                    .as_ref()
                    .and_then(|id| host::fs_info(std::path::Path::new(&id.mountpoint)))
                    .or(image_fs_info);
                let used = w.used_bytes.as_ref().map_or(0, |v| v.value);
                let inodes = w.inodes_used.as_ref().map_or(0, |v| v.value);
                let mut fs = convert::usage_on(w.timestamp, info, used, inodes);
                fs.time = time(if w.timestamp > 0 { w.timestamp } else { now });
                fs
            });
            let log_dir = crate::kuberuntime::sandbox_config::pod_log_directory(
                &s.pod_logs_dir,
                &pref.namespace,
                &pref.name,
                &pref.uid,
            )
            .join(&name);
            let (log_bytes, log_inodes) = self.du.usage(&log_dir);
            ps.containers.push(ContainerStats {
                name: name.clone(),
                start_time: time(c.created_at),
                cpu: st.cpu.as_ref().map(|cpu| convert::cpu(&self.cpu, &attrs.id, cpu)),
                memory: st.memory.as_ref().map(convert::memory),
                rootfs,
                logs: Some(convert::usage_on(now, root_fs, log_bytes, log_inodes)),
            });
            infos.push(ContainerInfo {
                memory_limit: self.memory_limit(&pref.uid, &name),
                pod: pref,
                name,
                id: attrs.id.clone(),
                image: c.image.as_ref().map(|i| i.image.clone()).unwrap_or_default(),
            });
        }
        // pods with no running container still count (a ready sandbox)
        for b in ready.values() {
            pods.entry(b.id.as_str())
                .or_insert_with(|| PodStats::empty(pod_ref(b.metadata.as_ref()), time(b.created_at)));
        }
        let mut pods: Vec<(&str, PodStats)> = pods.into_iter().collect();
        for (sandbox_id, ps) in &mut pods {
            self.fill_pod(
                now,
                ps,
                sandbox_stats.as_ref().and_then(|m| m.get(*sandbox_id)),
                root_fs,
            );
        }
        let mut pods: Vec<PodStats> = pods.into_iter().map(|(_, p)| p).collect();
        for p in &mut pods {
            p.containers
                .sort_by(|a, b| (&a.start_time.0, &a.name).cmp(&(&b.start_time.0, &b.name)));
        }
        pods.sort_by(|a, b| (&a.pod_ref.namespace, &a.pod_ref.name).cmp(&(&b.pod_ref.namespace, &b.pod_ref.name)));
        self.cpu.expire(std::time::Instant::now());
        Collected {
            summary: Summary { node, pods },
            containers: infos,
        }
    }

    /// Pod-level CPU, memory, network, processes, volumes and ephemeral storage.
    fn fill_pod(&self, now: i64, ps: &mut PodStats, cri: Option<&v1::PodSandboxStats>, root_fs: Option<host::FsInfo>) {
        let key = format!("pod/{}", ps.pod_ref.uid);
        if let Some(linux) = cri.and_then(|s| s.linux.as_ref()) {
            ps.cpu = linux.cpu.as_ref().map(|c| convert::cpu(&self.cpu, &key, c));
            ps.memory = linux.memory.as_ref().map(convert::memory);
            ps.network = linux.network.as_ref().and_then(convert::network_from_cri);
            ps.process_stats = linux.process.as_ref().map(|p| ProcessStats {
                process_count: p.process_count.as_ref().map(|v| v.value),
            });
        } else if let Some((usage, pids)) = self.pod_cgroup(&ps.pod_ref.uid) {
            ps.cpu = convert::cpu_from_host(&self.cpu, &key, now, usage.cpu_core_nano_seconds);
            ps.memory = convert::memory_from_host(now, &usage);
            ps.process_stats = pids.map(|n| ProcessStats { process_count: Some(n) });
        } else {
            let (mut cpu, mut mem) = (None, None);
            for c in &ps.containers {
                convert::add_to_pod(&mut cpu, &mut mem, c.cpu.as_ref(), c.memory.as_ref());
            }
            (ps.cpu, ps.memory) = (cpu, mem);
        }
        let volumes_dir = crate::volumes::paths::pod_volumes_dir(&self.settings.root_dir, &ps.pod_ref.uid);
        let mut volumes = Vec::new();
        for plugin in std::fs::read_dir(&volumes_dir).into_iter().flatten().flatten() {
            for vol in std::fs::read_dir(plugin.path()).into_iter().flatten().flatten() {
                let (bytes, inodes) = self.du.usage(&vol.path());
                volumes.push(VolumeStats {
                    fs: convert::usage_on(now, host::fs_info(&vol.path()), bytes, inodes),
                    name: vol.file_name().to_string_lossy().into_owned(),
                    pvc_ref: None,
                });
            }
        }
        volumes.sort_by(|a, b| a.name.cmp(&b.name));
        // upstream calcEphemeralStorage: rootfs + logs of every container + the volumes
        let used = |f: &Option<FsStats>| f.as_ref().and_then(|f| f.used_bytes).unwrap_or(0);
        let inodes = |f: &Option<FsStats>| f.as_ref().and_then(|f| f.inodes_used).unwrap_or(0);
        let (mut bytes, mut nodes) = (0, 0);
        for c in &ps.containers {
            bytes += used(&c.rootfs) + used(&c.logs);
            nodes += inodes(&c.rootfs) + inodes(&c.logs);
        }
        for v in &volumes {
            bytes += v.fs.used_bytes.unwrap_or(0);
            nodes += v.fs.inodes_used.unwrap_or(0);
        }
        ps.ephemeral_storage = Some(convert::usage_on(now, root_fs, bytes, nodes));
        ps.volume_stats = volumes;
    }

    fn memory_limit(&self, uid: &str, container: &str) -> u64 {
        let Some(pod) = self.pods.get(&crate::messages::PodUid::new(uid)) else {
            return 0;
        };
        pod.pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.iter().find(|c| c.name == container))
            .and_then(|c| c.resources.as_ref()?.limits.as_ref()?.get("memory").cloned())
            .and_then(|q| crate::quantity::ParsedQuantity::from_quantity(&q).ok())
            .map_or(0, |q| u64::try_from(q.value()).unwrap_or(0))
    }

    fn node_stats(
        &self,
        now: i64,
        root_fs: Option<host::FsInfo>,
        image_fs_info: Option<host::FsInfo>,
        image_fs: Option<&v1::FilesystemUsage>,
    ) -> NodeStats {
        let s = &self.settings;
        let mem = host::read_node_memory(&s.proc_root);
        let (maxpid, curproc) = host::rlimit(&s.proc_root);
        let image = image_fs.map(|f| {
            let used = f.used_bytes.as_ref().map_or(0, |v| v.value);
            let inodes = f.inodes_used.as_ref().map(|v| v.value);
            convert::fs(now, image_fs_info, Some((used, inodes)))
        });
        NodeStats {
            node_name: s.node_name.clone(),
            system_containers: Vec::new(),
            start_time: time(host::boot_time(&s.proc_root).unwrap_or(0) * 1_000_000_000),
            cpu: convert::cpu_from_host(&self.cpu, "node", now, host::node_cpu(&s.cgroup_mount, &s.proc_root)),
            memory: convert::memory_from_host(now, &mem),
            network: convert::network(now, &host::node_interfaces(&s.proc_root)),
            fs: root_fs.map(|info| convert::fs(now, Some(info), None)),
            runtime: Some(RuntimeStats { image_fs: image }),
            rlimit: Some(RlimitStats {
                time: time(now),
                maxpid,
                curproc,
            }),
        }
    }
}
