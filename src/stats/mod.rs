//! The kubelet's resource stats: `/stats/summary` (the Summary API) and
//! `/metrics/resource` (what metrics-server scrapes for `kubectl top` and
//! the HPA), built from CRI `ListContainerStats` and `ImageFsInfo` and the
//! node's cgroups, `/proc` and statvfs.

pub mod build;
pub mod node;
pub mod resource_metrics;
pub mod types;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use build::CpuSamples;
pub use types::Summary;

use crate::cri::{SharedRuntime, v1};

/// What collecting stats needs (shared by the HTTP handlers).
#[derive(Clone, Debug)]
pub struct StatsSource {
    /// The node's name.
    pub node_name: String,
    /// When actlet started (RFC 3339).
    pub start_time: String,
    /// The root dir (nodefs).
    pub root_dir: PathBuf,
    /// Where cgroups are mounted.
    pub cgroup_mount: PathBuf,
    /// Previous CPU readings.
    pub samples: CpuSamples,
}

impl StatsSource {
    /// A source for `node_name` with its root dir, started now.
    pub fn new(node_name: impl Into<String>, root_dir: impl Into<PathBuf>) -> Self {
        Self {
            node_name: node_name.into(),
            start_time: jiff::Timestamp::now().to_string(),
            root_dir: root_dir.into(),
            cgroup_mount: PathBuf::from("/sys/fs/cgroup"),
            samples: CpuSamples::default(),
        }
    }

    /// Reads the runtime and the node; `Err` names the CRI call that failed
    /// (the node part is still returned in the summary when only stats fail).
    pub async fn collect(&self, runtime: &SharedRuntime) -> (Summary, Option<String>) {
        let running_filter = v1::ContainerFilter {
            state: Some(v1::ContainerStateValue {
                state: v1::ContainerState::ContainerRunning as i32,
            }),
            ..Default::default()
        };
        let (list, stats, image_fs) = tokio::join!(
            runtime.list_containers(v1::ListContainersRequest {
                filter: Some(running_filter)
            }),
            runtime.list_container_stats(v1::ListContainerStatsRequest::default()),
            runtime.image_fs_info(v1::ImageFsInfoRequest::default()),
        );
        let mut error = None;
        let running: BTreeMap<String, i64> = match list {
            Ok(r) => r.containers.into_iter().map(|c| (c.id, c.created_at)).collect(),
            Err(e) => {
                error = Some(format!("ListContainers: {e}"));
                BTreeMap::new()
            }
        };
        let stats = match stats {
            Ok(r) => r.stats,
            Err(e) => {
                error = Some(format!("ListContainerStats: {e}"));
                vec![]
            }
        };
        let image_fs = image_fs.ok().and_then(|r| r.image_filesystems.into_iter().next());
        let (mount, root) = (self.cgroup_mount.clone(), self.root_dir.clone());
        let node = tokio::task::spawn_blocking(move || node::sample(&mount, &root))
            .await
            .unwrap_or_default();
        let now = jiff::Timestamp::now().as_nanosecond() as i64;
        let input = build::Inputs {
            node_name: &self.node_name,
            start_time: &self.start_time,
            now,
            node: &node,
            image_fs: image_fs.as_ref(),
            stats: &stats,
            running: &running,
        };
        (build::summary(&input, &self.samples), error)
    }
}
