//! The [`RuntimeManager`] side of in-place resize ([`super::resize`] holds
//! the decisions): which running containers to update or restart, the
//! `UpdateContainerResources` calls, and what actlet applied to each
//! container for runtimes whose `ContainerStatus` does not report resources
//! (containerd before 1.7).
//!
//! The applied record ([`Actuated`]) is shared by every pod worker (it lives
//! outside the actors, in the runtime manager) and holds only running
//! containers of live pods: each plan keeps the pod's running containers and
//! a killed pod's entry goes. It is in memory: after actlet restarts on such
//! a runtime, a container whose resize was not applied before the restart is
//! taken to run with its spec (upstream checkpoints it; not done yet).

use std::collections::HashMap;
use std::sync::Arc;

use dashmap::DashMap;
use k8s_openapi::api::core::v1::{Container, Pod};

use super::RuntimeManager;
use super::actions::{ContainerToKill, KillReason, PodActions};
use super::pod_status::{ActualResources, ContainerState, RuntimePodStatus};
use super::qos::container_resources;
use super::resize::{MemoryChange, Resize, decide, in_progress, memory_decrease_error};
use crate::cri::v1::{LinuxContainerResources, UpdateContainerResourcesRequest};
use crate::messages::PodUid;

/// Resources actlet applied, per pod UID, per container id.
#[derive(Clone, Debug, Default)]
pub struct Actuated(Arc<DashMap<PodUid, HashMap<String, ActualResources>>>);

impl Actuated {
    /// Records what container `id` of pod `uid` now runs with.
    pub fn record(&self, uid: &PodUid, id: &str, resources: &LinuxContainerResources) {
        self.0
            .entry(uid.clone())
            .or_default()
            .insert(id.to_string(), ActualResources::of(resources));
    }

    fn get(&self, uid: &PodUid, id: &str) -> Option<ActualResources> {
        self.0.get(uid).and_then(|m| m.get(id).copied())
    }

    /// Keeps only `running` container ids of pod `uid`.
    fn retain(&self, uid: &PodUid, running: &[&str]) {
        if let Some(mut m) = self.0.get_mut(uid) {
            m.retain(|id, _| running.contains(&id.as_str()));
        }
        self.0.remove_if(uid, |_, m| m.is_empty());
    }

    /// Forgets pod `uid` (killed).
    pub fn forget(&self, uid: &PodUid) {
        self.0.remove(uid);
    }

    /// Pods with a record (for leak checks).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// No pod has a record.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The last in-place resize error of each pod (upstream's
/// `PodResizeInProgress` reason `Error`), kept until a resize of the pod
/// succeeds or the pod is killed. Shared like [`Actuated`].
#[derive(Clone, Debug, Default)]
pub struct ResizeErrors(Arc<DashMap<PodUid, String>>);

impl ResizeErrors {
    /// The pod's last resize error.
    pub fn get(&self, uid: &PodUid) -> Option<String> {
        self.0.get(uid).map(|e| e.clone())
    }

    fn set(&self, uid: &PodUid, error: String) {
        self.0.insert(uid.clone(), error);
    }

    /// Forgets pod `uid` (resized, or killed).
    pub fn forget(&self, uid: &PodUid) {
        self.0.remove(uid);
    }
}

/// What a sync does to resize the pod's containers.
#[derive(Clone, Debug, Default)]
pub struct ResizePlan {
    /// In-place updates.
    pub updates: Vec<ContainerUpdate>,
    /// Containers restarted to resize (their kill and start are in the
    /// pod's actions).
    pub restarts: Vec<String>,
}

/// One in-place update to make.
#[derive(Clone, Debug)]
pub struct ContainerUpdate {
    /// CRI container id.
    pub id: String,
    /// Container name.
    pub name: String,
    /// The resources to apply.
    pub resources: LinuxContainerResources,
    /// The memory limit it runs with now (bytes; 0: none).
    pub current_memory_limit: i64,
}

fn uid_of(pod: &Pod) -> PodUid {
    PodUid::new(pod.metadata.uid.clone().unwrap_or_default())
}

/// The pod's containers that can be resized, with their index in
/// `spec.containers` (regular containers only; sidecars keep their size).
fn resizable(pod: &Pod) -> impl Iterator<Item = (usize, &Container)> {
    pod.spec.iter().flat_map(|s| s.containers.iter().enumerate())
}

impl RuntimeManager {
    /// The resources `container` of `pod` should run with.
    pub fn desired_resources(&self, pod: &Pod, container: &Container) -> LinuxContainerResources {
        container_resources(pod, container, self.config.memory_capacity, self.config.cpu_cfs_quota)
    }

    /// What a running container runs with: as the runtime reports it, else
    /// as actlet applied it; `None` when neither is known.
    fn actual(&self, uid: &PodUid, c: &super::pod_status::ContainerStatus) -> Option<ActualResources> {
        c.resources.or_else(|| self.actuated.get(uid, &c.id))
    }

    /// Upstream `computePodResizeAction`: running containers (not already
    /// being killed) whose resources differ from the spec are updated in
    /// place (returned) or, as their resize policy asks, restarted (added
    /// to `actions`).
    pub fn plan_resizes(&self, pod: &Pod, status: &RuntimePodStatus, actions: &mut PodActions) -> ResizePlan {
        let uid = uid_of(pod);
        let running: Vec<&str> = status.running_containers().map(|c| c.id.as_str()).collect();
        self.actuated.retain(&uid, &running);
        let mut plan = ResizePlan::default();
        if actions.kill_pod || actions.create_sandbox {
            return plan;
        }
        for (idx, container) in resizable(pod) {
            let Some(cs) = status
                .find_container(&container.name)
                .filter(|c| c.state == ContainerState::Running)
            else {
                continue;
            };
            if actions.containers_to_kill.contains_key(&cs.id) {
                continue;
            }
            let Some(actual) = self.actual(&uid, cs) else {
                continue;
            };
            match decide(container, &self.desired_resources(pod, container), &actual) {
                Resize::Keep => {}
                Resize::Update(resources) => plan.updates.push(ContainerUpdate {
                    id: cs.id.clone(),
                    name: container.name.clone(),
                    resources,
                    current_memory_limit: actual.memory_limit,
                }),
                Resize::Restart(message) => {
                    tracing::info!(container = %container.name, %message, "container will be restarted to resize");
                    actions.containers_to_kill.insert(
                        cs.id.clone(),
                        ContainerToKill {
                            name: container.name.clone(),
                            message,
                            reason: KillReason::DefinitionChanged,
                        },
                    );
                    if !actions.containers_to_start.contains(&idx) {
                        actions.containers_to_start.push(idx);
                    }
                    plan.restarts.push(container.name.clone());
                }
            }
        }
        plan
    }

    /// Upstream's guard before lowering memory limits: `Err` with its
    /// message when an update would set a container's limit below what it
    /// uses now (CRI `ContainerStats`; a container whose stats cannot be read
    /// is not checked).
    pub async fn check_memory_decreases(&self, updates: &[ContainerUpdate]) -> Result<(), String> {
        let mut changes = vec![];
        for u in updates {
            let change = MemoryChange {
                name: &u.name,
                new_limit: u.resources.memory_limit_in_bytes,
                current_limit: u.current_memory_limit,
                usage: None,
            };
            if !change.decreases() {
                continue;
            }
            let req = crate::cri::v1::ContainerStatsRequest {
                container_id: u.id.clone(),
            };
            let usage = match self.runtime.container_stats(req).await {
                Ok(r) => r
                    .stats
                    .and_then(|s| s.memory)
                    .and_then(|m| m.usage_bytes)
                    .map(|v| v.value),
                Err(e) => {
                    tracing::warn!(container = %u.name, error = %e, "cannot read memory usage before lowering the limit");
                    None
                }
            };
            changes.push(MemoryChange { usage, ..change });
        }
        memory_decrease_error(&changes).map_or(Ok(()), Err)
    }

    /// Records the outcome of a sync's in-place updates of `pod`: an error
    /// stays (for the pod's `PodResizeInProgress` condition and a
    /// `ResizeError` event) until a later resize succeeds.
    pub fn record_resize_outcome(&self, pod: &Pod, error: Option<String>) {
        let uid = uid_of(pod);
        match error {
            Some(e) => {
                // once per failing resize, not per retry (the usage in the
                // message changes every time)
                if self.resize_errors.get(&uid).is_none() {
                    self.events.pod_event(
                        pod,
                        None,
                        crate::messages::event::EventType::Warning,
                        "ResizeError",
                        crate::allocation::resize_event_message("Pod resize error", pod, Some(&e)),
                    );
                }
                self.resize_errors.set(&uid, e);
            }
            None => self.resize_errors.forget(&uid),
        }
    }

    /// The pod's last in-place resize error, while a resize is in progress.
    pub fn resize_error(&self, pod: &Pod) -> Option<String> {
        self.resize_errors.get(&uid_of(pod))
    }

    /// Applies one in-place update; `Err` with the runtime's message.
    pub async fn update_resources(&self, pod: &Pod, update: &ContainerUpdate) -> Result<(), String> {
        let req = UpdateContainerResourcesRequest {
            container_id: update.id.clone(),
            linux: Some(update.resources.clone()),
            ..Default::default()
        };
        match self.runtime.update_container_resources(req).await {
            Ok(_) => {
                self.actuated.record(&uid_of(pod), &update.id, &update.resources);
                tracing::info!(container = %update.name, container_id = %update.id, "container resized in place");
                Ok(())
            }
            Err(e) => Err(e.message),
        }
    }

    /// Whether a running container of `pod` does not run with its spec's
    /// resources yet (the pod's `PodResizeInProgress` condition).
    pub fn resize_in_progress(&self, pod: &Pod, status: &RuntimePodStatus) -> bool {
        let uid = uid_of(pod);
        resizable(pod).any(|(_, container)| {
            status
                .find_container(&container.name)
                .filter(|c| c.state == ContainerState::Running)
                .and_then(|c| self.actual(&uid, c))
                .is_some_and(|actual| in_progress(&self.desired_resources(pod, container), &actual))
        })
    }
}
