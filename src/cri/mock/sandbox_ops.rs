//! The sandbox calls of the mock: RunPodSandbox, StopPodSandbox,
//! RemovePodSandbox, PodSandboxStatus, ListPodSandbox.

use std::time::Duration;

use tonic::Code;

use super::MockRuntime;
use super::images::pull_failure_message;
use super::observe::MockEvent;
use super::state::{SandboxRecord, random_id};
use crate::cri::v1::{self, NamespaceMode, PodSandboxState};
use crate::cri::{CriError, CriResult};

impl MockRuntime {
    pub(super) async fn do_run_pod_sandbox(
        &self,
        req: v1::RunPodSandboxRequest,
    ) -> CriResult<v1::RunPodSandboxResponse> {
        const M: &str = "RunPodSandbox";
        let err = |code, msg: String| CriError::new(M, code, msg);
        let config = req.config.unwrap_or_default();
        let meta = config
            .metadata
            .clone()
            .ok_or_else(|| err(Code::Unknown, "sandbox config must include metadata".into()))?;
        let id = random_id();
        let name_key = format!("{}_{}_{}_{}", meta.name, meta.namespace, meta.uid, meta.attempt);
        let host_network = config
            .linux
            .as_ref()
            .and_then(|l| l.security_context.as_ref())
            .and_then(|s| s.namespace_options.as_ref())
            .is_some_and(|n| n.network() == NamespaceMode::Node);
        let mut pull = None;
        {
            let st = self.shared.lock();
            let handler = &req.runtime_handler;
            if !handler.is_empty() && !self.shared.runtime_handlers.contains(handler) {
                return Err(err(
                    Code::Unknown,
                    format!("failed to get sandbox runtime: no runtime for {handler:?} is configured"),
                ));
            }
            if let Some(holder) = st.names.get(&name_key) {
                return Err(err(
                    Code::Unknown,
                    format!(
                        "failed to reserve sandbox name {name_key:?}: name {name_key:?} is reserved for {holder:?}"
                    ),
                ));
            }
            let image = &self.shared.sandbox_image;
            if st.images.resolve(image).is_none() {
                let normalized = super::images::normalize_image_name(image).unwrap_or_else(|| image.clone());
                match st.registry.get(&normalized) {
                    Some(found) => pull = Some(found),
                    None => {
                        return Err(err(
                            Code::Unknown,
                            format!(
                                "failed to get sandbox image {image:?}: failed to pull image {image:?}: {}",
                                pull_failure_message(&normalized)
                            ),
                        ));
                    }
                }
            }
            if !host_network && !self.condition("NetworkReady", &st.conditions) {
                return Err(err(
                    Code::Unknown,
                    format!("failed to setup network for sandbox {id:?}: cni plugin not initialized"),
                ));
            }
        }
        if let Some((img, latency)) = pull {
            tokio::time::sleep(latency).await;
            self.shared.lock().images.add(img);
        }
        let mut st = self.shared.lock();
        if let Some(holder) = st.names.get(&name_key) {
            let msg =
                format!("failed to reserve sandbox name {name_key:?}: name {name_key:?} is reserved for {holder:?}");
            return Err(err(Code::Unknown, msg));
        }
        let ip = if host_network { String::new() } else { st.ips.allocate() };
        let record = SandboxRecord {
            id: id.clone(),
            config,
            state: PodSandboxState::SandboxReady,
            created_at: self.shared.clock.now_nanos(),
            ip,
            runtime_handler: req.runtime_handler,
            name_key: name_key.clone(),
        };
        st.names.insert(name_key, id.clone());
        st.insert_sandbox(record);
        drop(st);
        self.shared.emit(MockEvent::SandboxReady { id: id.clone() });
        Ok(v1::RunPodSandboxResponse { pod_sandbox_id: id })
    }

    pub(super) fn condition(&self, kind: &str, conditions: &[v1::RuntimeCondition]) -> bool {
        conditions.iter().find(|c| c.r#type == kind).is_none_or(|c| c.status)
    }

    pub(super) async fn do_stop_pod_sandbox(
        &self,
        req: v1::StopPodSandboxRequest,
    ) -> CriResult<v1::StopPodSandboxResponse> {
        let id = self.shared.lock().resolve_sandbox(&req.pod_sandbox_id).ok_or_else(|| {
            let msg = format!(
                "an error occurred when try to find sandbox {:?}: not found",
                req.pod_sandbox_id
            );
            CriError::new("StopPodSandbox", Code::NotFound, msg)
        })?;
        self.stop_sandbox(&id).await;
        Ok(v1::StopPodSandboxResponse {})
    }

    /// Kills every running container of the sandbox (no grace, as containerd
    /// does), then marks it NOTREADY and tears its network down.
    async fn stop_sandbox(&self, id: &str) {
        let running: Vec<String> = self.shared.lock().container_ids_of_sandbox(id);
        futures::future::join_all(running.iter().map(|c| self.stop_process(c, Duration::ZERO))).await;
        let mut st = self.shared.lock();
        let Some(sb) = st.sandboxes.get_mut(id) else { return };
        let was_ready = sb.state == PodSandboxState::SandboxReady;
        sb.state = PodSandboxState::SandboxNotready;
        let ip = std::mem::take(&mut sb.ip);
        st.ips.release(&ip);
        drop(st);
        if was_ready {
            self.shared.emit(MockEvent::SandboxNotReady { id: id.to_string() });
        }
    }

    pub(super) async fn do_remove_pod_sandbox(
        &self,
        req: v1::RemovePodSandboxRequest,
    ) -> CriResult<v1::RemovePodSandboxResponse> {
        let Some(id) = self.shared.lock().resolve_sandbox(&req.pod_sandbox_id) else {
            return Ok(v1::RemovePodSandboxResponse {});
        };
        self.stop_sandbox(&id).await;
        let mut st = self.shared.lock();
        let gone: Vec<String> = st.container_ids_of_sandbox(&id);
        let now = self.shared.clock.now_nanos();
        let deleted = v1::ContainerEventType::ContainerDeletedEvent;
        for cid in &gone {
            self.shared.cri_events.publish(&st, cid, deleted, now);
        }
        self.shared.cri_events.publish(&st, &id, deleted, now);
        for cid in &gone {
            if let Some(c) = st.remove_container(cid) {
                st.names.remove(&c.name_key);
            }
        }
        if let Some(sb) = st.remove_sandbox(&id) {
            st.names.remove(&sb.name_key);
            st.ips.release(&sb.ip);
        }
        drop(st);
        for cid in gone {
            self.shared.emit(MockEvent::ContainerRemoved { id: cid });
        }
        self.shared.emit(MockEvent::SandboxRemoved { id });
        Ok(v1::RemovePodSandboxResponse {})
    }

    pub(super) fn do_pod_sandbox_status(
        &self,
        req: &v1::PodSandboxStatusRequest,
    ) -> CriResult<v1::PodSandboxStatusResponse> {
        let st = self.shared.lock();
        let sb = st
            .resolve_sandbox(&req.pod_sandbox_id)
            .and_then(|id| st.sandboxes.get(&id))
            .ok_or_else(|| {
                CriError::new(
                    "PodSandboxStatus",
                    Code::NotFound,
                    "an error occurred when try to find sandbox: not found",
                )
            })?;
        Ok(v1::PodSandboxStatusResponse {
            status: Some(sb.to_status()),
            ..Default::default()
        })
    }

    pub(super) fn do_list_pod_sandbox(&self, req: &v1::ListPodSandboxRequest) -> v1::ListPodSandboxResponse {
        let filter = req.filter.clone().unwrap_or_default();
        let st = self.shared.lock();
        v1::ListPodSandboxResponse {
            items: st
                .sandboxes_matching(&filter)
                .into_iter()
                .map(SandboxRecord::to_list_item)
                .collect(),
        }
    }
}
