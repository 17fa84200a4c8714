//! [`Counting`]: a `Runtime` in front of the mock that counts the kubelet's
//! CRI calls per method and, optionally, answers `List*` calls filtered by
//! the pod UID label from an index (by id, through `*Status`) instead of the
//! mock's scan over every sandbox and container.
//!
//! The index is a what-if: containerd (like the mock) filters a
//! `ListPodSandbox`/`ListContainers` by scanning everything, so a kubelet
//! that reads one pod's status with a label-filtered List pays O(pods) per
//! read. With the index, the P2 figures show the kubelet's own scaling.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use actlet::cri::mock::MockRuntime;
use actlet::cri::{CriResult, Runtime, v1};
use actlet::kuberuntime::labels::POD_UID_LABEL;

type Fut<'a, T> = Pin<Box<dyn Future<Output = CriResult<T>> + Send + 'a>>;

#[derive(Default)]
struct Index {
    /// uid → sandbox ids.
    sandboxes: HashMap<String, Vec<String>>,
    /// uid → (container id, sandbox id).
    containers: HashMap<String, Vec<(String, String)>>,
}

/// Counts calls; with `index`, serves UID-filtered lists from an index.
pub struct Counting {
    inner: MockRuntime,
    index: Option<Mutex<Index>>,
    counts: Mutex<HashMap<&'static str, u64>>,
}

impl Counting {
    pub fn new(inner: MockRuntime, indexed: bool) -> Self {
        Self {
            inner,
            index: indexed.then(Mutex::default),
            counts: Mutex::default(),
        }
    }

    fn count(&self, method: &'static str) {
        if let Ok(mut c) = self.counts.lock() {
            *c.entry(method).or_default() += 1;
        }
    }

    /// Calls so far per method.
    pub fn counts(&self) -> Vec<(&'static str, u64)> {
        let mut v: Vec<_> = self
            .counts
            .lock()
            .map(|c| c.iter().map(|(k, v)| (*k, *v)).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        v
    }

    fn uid_only(selector: &HashMap<String, String>) -> Option<String> {
        selector.get(POD_UID_LABEL).cloned()
    }

    fn labels_match(selector: &HashMap<String, String>, labels: &HashMap<String, String>) -> bool {
        selector.iter().all(|(k, v)| labels.get(k) == Some(v))
    }

    async fn indexed_sandboxes(&self, uid: &str, f: &v1::PodSandboxFilter) -> CriResult<v1::ListPodSandboxResponse> {
        let ids = self
            .index
            .as_ref()
            .and_then(|i| i.lock().ok().and_then(|i| i.sandboxes.get(uid).cloned()))
            .unwrap_or_default();
        let mut items = vec![];
        for id in ids {
            let req = v1::PodSandboxStatusRequest {
                pod_sandbox_id: id.clone(),
                verbose: false,
            };
            let Some(s) = self.inner.pod_sandbox_status(req).await.ok().and_then(|r| r.status) else {
                continue;
            };
            if !Self::labels_match(&f.label_selector, &s.labels)
                || f.state.as_ref().is_some_and(|st| st.state != s.state)
            {
                continue;
            }
            items.push(v1::PodSandbox {
                id: s.id,
                metadata: s.metadata,
                state: s.state,
                created_at: s.created_at,
                labels: s.labels,
                annotations: s.annotations,
                runtime_handler: s.runtime_handler,
            });
        }
        Ok(v1::ListPodSandboxResponse { items })
    }

    async fn indexed_containers(&self, uid: &str, f: &v1::ContainerFilter) -> CriResult<v1::ListContainersResponse> {
        let ids = self
            .index
            .as_ref()
            .and_then(|i| i.lock().ok().and_then(|i| i.containers.get(uid).cloned()))
            .unwrap_or_default();
        let mut containers = vec![];
        for (id, sandbox) in ids {
            if !f.pod_sandbox_id.is_empty() && f.pod_sandbox_id != sandbox {
                continue;
            }
            let req = v1::ContainerStatusRequest {
                container_id: id.clone(),
                verbose: false,
            };
            let Some(s) = self.inner.container_status(req).await.ok().and_then(|r| r.status) else {
                continue;
            };
            if !Self::labels_match(&f.label_selector, &s.labels)
                || f.state.as_ref().is_some_and(|st| st.state != s.state)
            {
                continue;
            }
            containers.push(v1::Container {
                id: s.id,
                pod_sandbox_id: sandbox,
                metadata: s.metadata,
                image: s.image,
                image_ref: s.image_ref,
                state: s.state,
                created_at: s.created_at,
                labels: s.labels,
                annotations: s.annotations,
                image_id: s.image_id,
            });
        }
        Ok(v1::ListContainersResponse { containers })
    }
}

/// Forwards calls unchanged (after counting them), with the exact signature
/// `#[async_trait]` gives the trait's methods.
macro_rules! forward {
    ($(($name:ident, $grpc:literal, $req:ident, $resp:ident)),* $(,)?) => {
        $(
            fn $name<'life0, 'async_trait>(&'life0 self, req: v1::$req) -> Fut<'async_trait, v1::$resp>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                Box::pin(async move {
                    self.count($grpc);
                    self.inner.$name(req).await
                })
            }
        )*
    };
}

#[async_trait::async_trait]
impl Runtime for Counting {
    forward! {
        (version, "Version", VersionRequest, VersionResponse),
        (stop_pod_sandbox, "StopPodSandbox", StopPodSandboxRequest, StopPodSandboxResponse),
        (remove_pod_sandbox, "RemovePodSandbox", RemovePodSandboxRequest, RemovePodSandboxResponse),
        (pod_sandbox_status, "PodSandboxStatus", PodSandboxStatusRequest, PodSandboxStatusResponse),
        (start_container, "StartContainer", StartContainerRequest, StartContainerResponse),
        (stop_container, "StopContainer", StopContainerRequest, StopContainerResponse),
        (remove_container, "RemoveContainer", RemoveContainerRequest, RemoveContainerResponse),
        (container_status, "ContainerStatus", ContainerStatusRequest, ContainerStatusResponse),
        (update_container_resources, "UpdateContainerResources", UpdateContainerResourcesRequest, UpdateContainerResourcesResponse),
        (reopen_container_log, "ReopenContainerLog", ReopenContainerLogRequest, ReopenContainerLogResponse),
        (exec_sync, "ExecSync", ExecSyncRequest, ExecSyncResponse),
        (container_stats, "ContainerStats", ContainerStatsRequest, ContainerStatsResponse),
        (list_container_stats, "ListContainerStats", ListContainerStatsRequest, ListContainerStatsResponse),
        (status, "Status", StatusRequest, StatusResponse),
        (list_images, "ListImages", ListImagesRequest, ListImagesResponse),
        (image_status, "ImageStatus", ImageStatusRequest, ImageStatusResponse),
        (pull_image, "PullImage", PullImageRequest, PullImageResponse),
        (remove_image, "RemoveImage", RemoveImageRequest, RemoveImageResponse),
        (image_fs_info, "ImageFsInfo", ImageFsInfoRequest, ImageFsInfoResponse),
    }

    async fn get_container_events(&self, req: v1::GetEventsRequest) -> CriResult<actlet::cri::ContainerEventStream> {
        self.count("GetContainerEvents");
        self.inner.get_container_events(req).await
    }

    async fn run_pod_sandbox(&self, req: v1::RunPodSandboxRequest) -> CriResult<v1::RunPodSandboxResponse> {
        self.count("RunPodSandbox");
        let uid = req.config.as_ref().and_then(|c| c.labels.get(POD_UID_LABEL).cloned());
        let resp = self.inner.run_pod_sandbox(req).await?;
        if let (Some(index), Some(uid)) = (&self.index, uid)
            && let Ok(mut i) = index.lock()
        {
            i.sandboxes.entry(uid).or_default().push(resp.pod_sandbox_id.clone());
        }
        Ok(resp)
    }

    async fn create_container(&self, req: v1::CreateContainerRequest) -> CriResult<v1::CreateContainerResponse> {
        self.count("CreateContainer");
        let uid = req.config.as_ref().and_then(|c| c.labels.get(POD_UID_LABEL).cloned());
        let sandbox = req.pod_sandbox_id.clone();
        let resp = self.inner.create_container(req).await?;
        if let (Some(index), Some(uid)) = (&self.index, uid)
            && let Ok(mut i) = index.lock()
        {
            i.containers
                .entry(uid)
                .or_default()
                .push((resp.container_id.clone(), sandbox));
        }
        Ok(resp)
    }

    async fn list_pod_sandbox(&self, req: v1::ListPodSandboxRequest) -> CriResult<v1::ListPodSandboxResponse> {
        self.count("ListPodSandbox");
        if let (Some(_), Some(f)) = (&self.index, &req.filter)
            && f.id.is_empty()
            && let Some(uid) = Self::uid_only(&f.label_selector)
        {
            return self.indexed_sandboxes(&uid, f).await;
        }
        self.inner.list_pod_sandbox(req).await
    }

    async fn list_containers(&self, req: v1::ListContainersRequest) -> CriResult<v1::ListContainersResponse> {
        self.count("ListContainers");
        if let (Some(_), Some(f)) = (&self.index, &req.filter)
            && f.id.is_empty()
            && let Some(uid) = Self::uid_only(&f.label_selector)
        {
            return self.indexed_containers(&uid, f).await;
        }
        self.inner.list_containers(req).await
    }
}
