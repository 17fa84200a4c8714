//! The mock's state: sandbox and container records, their state machines,
//! name reservations and pod IPs, behind one `std::sync::Mutex` that is never
//! held across an `.await`.
//!
//! Sandbox: `SANDBOX_READY` → `SANDBOX_NOTREADY` (stop) → removed.
//! Container: `CONTAINER_CREATED` → `CONTAINER_RUNNING` → `CONTAINER_EXITED`
//! → removed; a failed start goes `CREATED` → `EXITED` (128, `StartError`).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};

use super::clock::Clock;
use super::faults::Faults;
use super::images::{FakeRegistry, ImageStore};
use super::index::Postings;
use super::observe::{CallLog, MockEvent};
use super::process::Signal;
use super::script::{Behaviour, ContainerInfo, Match, Script};
use crate::cri::v1::{self, ContainerState, PodSandboxState};
use crate::kuberuntime::labels::POD_UID_LABEL;

/// A random 64-character lowercase hex id, like containerd's.
pub(crate) fn random_id() -> String {
    rand::random::<[u8; 32]>().iter().map(|b| format!("{b:02x}")).collect()
}

/// Everything the mock shares between calls, process tasks and tests.
pub(crate) struct Shared {
    state: Mutex<State>,
    pub(crate) clock: Clock,
    pub(crate) events: broadcast::Sender<MockEvent>,
    /// CRI `GetContainerEvents` subscribers (`cri_events.rs`).
    pub(crate) cri_events: super::cri_events::CriEvents,
    pub(crate) request_timeout: Duration,
    pub(crate) sandbox_image: String,
    pub(crate) runtime_handlers: Vec<String>,
    /// The mountpoint `ImageFsInfo` and container stats name.
    pub(crate) image_fs_mountpoint: String,
    /// The streaming server Exec/Attach URLs point to (started on first use).
    pub(crate) streaming: tokio::sync::OnceCell<std::sync::Arc<super::streaming::StreamServer>>,
    /// Usage tests set for stats (`stats.rs`).
    pub(crate) usage: Mutex<super::stats::UsageTable>,
}

impl Shared {
    pub(crate) fn new(state: State, clock: Clock, request_timeout: Duration, sandbox_image: String) -> Self {
        Self {
            state: Mutex::new(state),
            clock,
            events: broadcast::channel(4096).0,
            cri_events: super::cri_events::CriEvents::default(),
            request_timeout,
            sandbox_image,
            runtime_handlers: vec!["runc".to_string()],
            image_fs_mountpoint: super::SNAPSHOTTER_MOUNTPOINT.to_string(),
            streaming: tokio::sync::OnceCell::new(),
            usage: Mutex::default(),
        }
    }

    /// Locks the state (a panic in another holder does not poison it for tests).
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes an event to subscribers, if any.
    /// Also publishes the matching CRI container event (removals publish
    /// theirs before the record goes, see `cri_events.rs`). Never called
    /// with the state locked.
    pub(crate) fn emit(&self, event: MockEvent) {
        if self.cri_events.listening() {
            use v1::ContainerEventType as T;
            let cri = match &event {
                MockEvent::SandboxReady { id } | MockEvent::ContainerStarted { id } => {
                    Some((id, T::ContainerStartedEvent))
                }
                MockEvent::SandboxNotReady { id } | MockEvent::ContainerExited { id, .. } => {
                    Some((id, T::ContainerStoppedEvent))
                }
                MockEvent::ContainerCreated { id } => Some((id, T::ContainerCreatedEvent)),
                MockEvent::SandboxRemoved { .. } | MockEvent::ContainerRemoved { .. } => None,
            };
            if let Some((id, kind)) = cri {
                let now = self.clock.now_nanos();
                self.cri_events.publish(&self.lock(), id, kind, now);
            }
        }
        let _ = self.events.send(event);
    }

    /// Records the exit of a running container; no-op if it is not running.
    pub(crate) fn finish_container(&self, id: &str, exit_code: i32, reason: &str, message: &str) {
        let now = self.clock.now_nanos();
        let exited = self
            .lock()
            .containers
            .get_mut(id)
            .is_some_and(|c| c.mark_exited(now, exit_code, reason, message));
        if exited {
            self.emit(MockEvent::ContainerExited {
                id: id.to_string(),
                exit_code,
                reason: reason.to_string(),
            });
        }
    }
}

/// The CRI `reason` of an exit code: `Completed` for 0, else `Error`.
pub(crate) fn exit_reason(code: i32) -> &'static str {
    if code == 0 { "Completed" } else { "Error" }
}

/// All records, plus the configuration tests change at run time.
///
/// Records are added and removed only through [`State::insert_sandbox`],
/// [`State::remove_sandbox`], [`State::insert_container`] and
/// [`State::remove_container`], which keep the indexes in step.
#[derive(Default)]
pub(crate) struct State {
    /// Records are boxed: a table keeps the capacity of its busiest
    /// moment, and with the records inline (1.7 KiB a container, 1.1 KiB
    /// a sandbox: the CRI configs) a churn of 10,000 pods that once held
    /// 15,000 left ~45 MiB of empty slots behind; an empty slot is now a
    /// key and a pointer.
    pub(crate) sandboxes: HashMap<String, Box<SandboxRecord>>,
    pub(crate) containers: HashMap<String, Box<ContainerRecord>>,
    /// Pod UID label → sandbox ids.
    sandboxes_by_uid: Postings,
    /// Pod UID label → container ids.
    containers_by_uid: Postings,
    /// Sandbox id → container ids.
    containers_by_sandbox: Postings,
    /// Reserved sandbox and container names → the id holding them.
    pub(crate) names: HashMap<String, String>,
    pub(crate) ips: IpPool,
    pub(crate) images: ImageStore,
    pub(crate) registry: FakeRegistry,
    pub(crate) faults: Faults,
    pub(crate) calls: CallLog,
    /// Scripts, newest last; the newest matching one wins.
    pub(crate) scripts: Vec<(Match, Script)>,
    pub(crate) conditions: Vec<v1::RuntimeCondition>,
    /// `Status.features`; the user of a container is reported only with
    /// `supplemental_groups_policy` (as containerd 2.x does).
    pub(crate) features: v1::RuntimeFeatures,
}

impl State {
    /// The full id of the sandbox `id` names (exact, or a unique prefix).
    pub(crate) fn resolve_sandbox(&self, id: &str) -> Option<String> {
        if self.sandboxes.contains_key(id) {
            return Some(id.to_string());
        }
        resolve(self.sandboxes.keys(), id)
    }

    /// The full id of the container `id` names (exact, or a unique prefix).
    pub(crate) fn resolve_container(&self, id: &str) -> Option<String> {
        if self.containers.contains_key(id) {
            return Some(id.to_string());
        }
        resolve(self.containers.keys(), id)
    }

    /// Adds a sandbox and indexes it.
    pub(crate) fn insert_sandbox(&mut self, record: SandboxRecord) {
        if let Some(uid) = record.config.labels.get(POD_UID_LABEL) {
            self.sandboxes_by_uid.add(uid, &record.id);
        }
        self.sandboxes.insert(record.id.clone(), Box::new(record));
    }

    /// Removes a sandbox (not its containers) and its index entries.
    pub(crate) fn remove_sandbox(&mut self, id: &str) -> Option<SandboxRecord> {
        let record = *self.sandboxes.remove(id)?;
        if let Some(uid) = record.config.labels.get(POD_UID_LABEL) {
            self.sandboxes_by_uid.remove(uid, id);
        }
        Some(record)
    }

    /// Adds a container and indexes it.
    pub(crate) fn insert_container(&mut self, record: ContainerRecord) {
        if let Some(uid) = record.config.labels.get(POD_UID_LABEL) {
            self.containers_by_uid.add(uid, &record.id);
        }
        self.containers_by_sandbox.add(&record.sandbox_id, &record.id);
        self.containers.insert(record.id.clone(), Box::new(record));
    }

    /// Removes a container and its index entries.
    pub(crate) fn remove_container(&mut self, id: &str) -> Option<ContainerRecord> {
        let record = *self.containers.remove(id)?;
        if let Some(uid) = record.config.labels.get(POD_UID_LABEL) {
            self.containers_by_uid.remove(uid, id);
        }
        self.containers_by_sandbox.remove(&record.sandbox_id, id);
        Some(record)
    }

    /// Keys across the indexes (0 once every record is gone).
    #[cfg(test)]
    pub(crate) fn index_keys(&self) -> usize {
        self.sandboxes_by_uid.keys() + self.containers_by_uid.keys() + self.containers_by_sandbox.keys()
    }

    /// The ids of the containers of sandbox `id` (full id).
    pub(crate) fn container_ids_of_sandbox(&self, id: &str) -> Vec<String> {
        let mut ids = self.containers_by_sandbox.get(id).to_vec();
        ids.sort();
        ids
    }

    /// The sandboxes `filter` selects, oldest first: looked up by id or pod
    /// UID label when the filter names one, else by a scan.
    pub(crate) fn sandboxes_matching(&self, filter: &v1::PodSandboxFilter) -> Vec<&SandboxRecord> {
        let candidates: Option<&[String]> = if !filter.id.is_empty() {
            self.sandboxes
                .get_key_value(&filter.id)
                .map(|(k, _)| std::slice::from_ref(k))
        } else {
            filter
                .label_selector
                .get(POD_UID_LABEL)
                .map(|uid| self.sandboxes_by_uid.get(uid))
        };
        let mut items: Vec<&SandboxRecord> = match candidates {
            Some(ids) => ids
                .iter()
                .filter_map(|id| self.sandboxes.get(id).map(|b| &**b))
                .collect(),
            None => self.sandboxes.values().map(|b| &**b).collect(),
        };
        items.retain(|s| s.matches(filter));
        items.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        items
    }

    /// The containers the filter fields select, oldest first: looked up by
    /// id, sandbox id or pod UID label when the filter names one (in that
    /// order), else by a scan; `keep` applies the whole filter.
    pub(crate) fn containers_matching(
        &self,
        id: &str,
        sandbox_id: &str,
        selector: &HashMap<String, String>,
        keep: impl Fn(&ContainerRecord) -> bool,
    ) -> Vec<&ContainerRecord> {
        // `None`: a prefix id or no indexed field; scan everything.
        let candidates: Option<&[String]> = if !id.is_empty() {
            self.containers.get_key_value(id).map(|(k, _)| std::slice::from_ref(k))
        } else if !sandbox_id.is_empty() {
            let ids = self.containers_by_sandbox.get(sandbox_id);
            (!ids.is_empty() || self.sandboxes.contains_key(sandbox_id)).then_some(ids)
        } else {
            selector.get(POD_UID_LABEL).map(|uid| self.containers_by_uid.get(uid))
        };
        let mut items: Vec<&ContainerRecord> = match candidates {
            Some(ids) => ids
                .iter()
                .filter_map(|id| self.containers.get(id).map(|b| &**b))
                .collect(),
            None => self.containers.values().map(|b| &**b).collect(),
        };
        items.retain(|c| keep(c));
        items.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        items
    }

    /// The script for `info`: the newest matching rule, else busybox.
    pub(crate) fn behaviour_for(&self, info: &ContainerInfo) -> Behaviour {
        let script = self.scripts.iter().rev().find(|(m, _)| m.matches(info)).map(|(_, s)| s);
        script.unwrap_or(&Script::Busybox).behaviour(info)
    }
}

fn resolve<'a>(mut ids: impl Iterator<Item = &'a String> + Clone, id: &str) -> Option<String> {
    if id.is_empty() {
        return None;
    }
    if let Some(exact) = ids.clone().find(|k| *k == id) {
        return Some(exact.clone());
    }
    let first = ids.find(|k| k.starts_with(id))?;
    let second = ids.find(|k| k.starts_with(id));
    second.is_none().then(|| first.clone())
}

/// Pod IPs from 10.88.0.0/16, handed out in order like CNI host-local.
#[derive(Debug, Default)]
pub(crate) struct IpPool {
    next: u32,
    used: HashSet<u32>,
}

impl IpPool {
    /// The next free address (10.88.0.2 … 10.88.255.254).
    pub(crate) fn allocate(&mut self) -> String {
        for _ in 0..65533 {
            let host = 2 + self.next % 65533;
            self.next = self.next.wrapping_add(1);
            if self.used.insert(host) {
                return format!("10.88.{}.{}", host >> 8, host & 0xff);
            }
        }
        String::new()
    }

    /// Returns `ip` to the pool.
    pub(crate) fn release(&mut self, ip: &str) {
        let parts: Vec<u32> = ip
            .strip_prefix("10.88.")
            .unwrap_or("")
            .split('.')
            .filter_map(|p| p.parse().ok())
            .collect();
        if let [hi, lo] = parts[..] {
            self.used.remove(&((hi << 8) | lo));
        }
    }
}

/// One pod sandbox.
#[derive(Debug, Clone)]
pub(crate) struct SandboxRecord {
    pub(crate) id: String,
    pub(crate) config: v1::PodSandboxConfig,
    pub(crate) state: PodSandboxState,
    pub(crate) created_at: i64,
    pub(crate) ip: String,
    pub(crate) runtime_handler: String,
    pub(crate) name_key: String,
}

impl SandboxRecord {
    pub(crate) fn metadata(&self) -> v1::PodSandboxMetadata {
        self.config.metadata.clone().unwrap_or_default()
    }

    pub(crate) fn to_status(&self) -> v1::PodSandboxStatus {
        let options = self
            .config
            .linux
            .as_ref()
            .and_then(|l| l.security_context.as_ref())
            .and_then(|s| s.namespace_options.clone());
        v1::PodSandboxStatus {
            id: self.id.clone(),
            metadata: Some(self.metadata()),
            state: self.state as i32,
            created_at: self.created_at,
            network: Some(v1::PodSandboxNetworkStatus {
                ip: self.ip.clone(),
                additional_ips: Vec::new(),
            }),
            linux: Some(v1::LinuxPodSandboxStatus {
                namespaces: Some(v1::Namespace {
                    options: Some(options.unwrap_or_default()),
                }),
            }),
            labels: self.config.labels.clone(),
            annotations: self.config.annotations.clone(),
            runtime_handler: self.runtime_handler.clone(),
        }
    }

    pub(crate) fn to_list_item(&self) -> v1::PodSandbox {
        v1::PodSandbox {
            id: self.id.clone(),
            metadata: Some(self.metadata()),
            state: self.state as i32,
            created_at: self.created_at,
            labels: self.config.labels.clone(),
            annotations: self.config.annotations.clone(),
            runtime_handler: self.runtime_handler.clone(),
        }
    }

    pub(crate) fn matches(&self, f: &v1::PodSandboxFilter) -> bool {
        self.id.starts_with(&f.id)
            && f.state.as_ref().is_none_or(|s| s.state == self.state as i32)
            && labels_match(&f.label_selector, &self.config.labels)
    }
}

fn labels_match(selector: &HashMap<String, String>, labels: &HashMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// One container and its (simulated) process.
#[derive(Debug)]
pub(crate) struct ContainerRecord {
    pub(crate) id: String,
    pub(crate) sandbox_id: String,
    pub(crate) config: v1::ContainerConfig,
    pub(crate) image_id: String,
    pub(crate) state: ContainerState,
    /// A `StartContainer` is in progress (containerd's "starting" flag).
    pub(crate) starting: bool,
    pub(crate) created_at: i64,
    pub(crate) started_at: i64,
    pub(crate) finished_at: i64,
    pub(crate) exit_code: i32,
    pub(crate) reason: String,
    pub(crate) message: String,
    pub(crate) log_path: String,
    pub(crate) resources: v1::LinuxContainerResources,
    pub(crate) behaviour: Behaviour,
    pub(crate) info: ContainerInfo,
    pub(crate) name_key: String,
    /// Signals to the process task while it runs.
    pub(crate) process: Option<mpsc::UnboundedSender<Signal>>,
    /// Becomes `true` when the container exits.
    pub(crate) exited: watch::Sender<bool>,
}

impl ContainerRecord {
    /// CREATED/RUNNING → EXITED with the given outcome; `false` if it was
    /// already exited.
    pub(crate) fn mark_exited(&mut self, now: i64, exit_code: i32, reason: &str, message: &str) -> bool {
        if self.state == ContainerState::ContainerExited {
            return false;
        }
        self.state = ContainerState::ContainerExited;
        self.starting = false;
        self.finished_at = now;
        self.exit_code = exit_code;
        self.reason = reason.to_string();
        self.message = message.to_string();
        self.process = None;
        self.exited.send_replace(true);
        true
    }

    fn metadata(&self) -> v1::ContainerMetadata {
        self.config.metadata.clone().unwrap_or_default()
    }

    /// The CRI status; like containerd, the image is reported by its first
    /// tag and `image_ref` is its digest (or id) if the image still exists.
    pub(crate) fn to_status(&self, images: &ImageStore) -> v1::ContainerStatus {
        let (image, image_ref) = match images.by_id(&self.image_id) {
            Some(img) => (
                v1::ImageSpec {
                    image: img.repo_tags().first().cloned().unwrap_or_default(),
                    ..Default::default()
                },
                img.image_ref(),
            ),
            None => (self.config.image.clone().unwrap_or_default(), self.image_id.clone()),
        };
        v1::ContainerStatus {
            id: self.id.clone(),
            metadata: Some(self.metadata()),
            state: self.state as i32,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            exit_code: self.exit_code,
            image: Some(image),
            image_ref,
            reason: self.reason.clone(),
            message: self.message.clone(),
            labels: self.config.labels.clone(),
            annotations: self.config.annotations.clone(),
            mounts: self.config.mounts.clone(),
            log_path: self.log_path.clone(),
            resources: Some(v1::ContainerResources {
                linux: Some(self.resources.clone()),
            }),
            image_id: String::new(),
            user: Some(self.user()),
        }
    }

    /// The identity the process starts with: uid and gid from the security
    /// context (0 when unset: the mock's images define no users), the gid
    /// then the supplemental groups (the mock's images define no groups, so
    /// Merge and Strict give the same list).
    fn user(&self) -> v1::ContainerUser {
        let sc = self.config.linux.as_ref().and_then(|l| l.security_context.as_ref());
        let uid = sc.and_then(|s| s.run_as_user.as_ref()).map_or(0, |v| v.value);
        let gid = sc.and_then(|s| s.run_as_group.as_ref()).map_or(0, |v| v.value);
        let mut groups = vec![gid];
        for g in sc.map(|s| s.supplemental_groups.as_slice()).unwrap_or_default() {
            if !groups.contains(g) {
                groups.push(*g);
            }
        }
        v1::ContainerUser {
            linux: Some(v1::LinuxContainerUser {
                uid,
                gid,
                supplemental_groups: groups,
            }),
        }
    }

    pub(crate) fn to_list_item(&self) -> v1::Container {
        v1::Container {
            id: self.id.clone(),
            pod_sandbox_id: self.sandbox_id.clone(),
            metadata: Some(self.metadata()),
            image: self.config.image.clone(),
            image_ref: self.image_id.clone(),
            state: self.state as i32,
            created_at: self.created_at,
            labels: self.config.labels.clone(),
            annotations: self.config.annotations.clone(),
            image_id: String::new(),
        }
    }

    pub(crate) fn attributes(&self) -> v1::ContainerAttributes {
        v1::ContainerAttributes {
            id: self.id.clone(),
            metadata: Some(self.metadata()),
            labels: self.config.labels.clone(),
            annotations: self.config.annotations.clone(),
        }
    }

    pub(crate) fn matches(&self, f: &v1::ContainerFilter) -> bool {
        self.id.starts_with(&f.id)
            && self.sandbox_id.starts_with(&f.pod_sandbox_id)
            && f.state.as_ref().is_none_or(|s| s.state == self.state as i32)
            && labels_match(&f.label_selector, &self.config.labels)
    }

    pub(crate) fn matches_stats(&self, f: &v1::ContainerStatsFilter) -> bool {
        self.id.starts_with(&f.id)
            && self.sandbox_id.starts_with(&f.pod_sandbox_id)
            && labels_match(&f.label_selector, &self.config.labels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_64_lowercase_hex() {
        let id = random_id();
        assert_eq!(id.len(), 64);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(id, random_id());
    }

    #[test]
    fn prefixes_resolve_only_when_unique() {
        let ids = ["abc1".to_string(), "abc2".to_string(), "def".to_string()];
        assert_eq!(resolve(ids.iter(), "abc1").as_deref(), Some("abc1"));
        assert_eq!(resolve(ids.iter(), "d").as_deref(), Some("def"));
        assert_eq!(resolve(ids.iter(), "abc"), None);
        assert_eq!(resolve(ids.iter(), ""), None);
    }

    #[test]
    fn ip_pool_hands_out_and_reuses_addresses() {
        let mut pool = IpPool::default();
        assert_eq!(pool.allocate(), "10.88.0.2");
        assert_eq!(pool.allocate(), "10.88.0.3");
        pool.release("10.88.0.2");
        let third = pool.allocate();
        assert_eq!(third, "10.88.0.4");
    }
}
