//! The test-facing side of [`MockRuntime`]: scripting, faults, images,
//! events from "outside" the runtime, and observation.

use tokio::sync::broadcast;
use tonic::Code;

use super::MockRuntime;
use super::clock::Clock;
use super::faults::{Fault, cri_method};
use super::images::MockImage;
use super::observe::{CallRecord, ContainerSnapshot, MockEvent, MockSnapshot};
use super::script::{Match, Script};
use super::state::exit_reason;
use crate::cri::v1::{self, ContainerState, PodSandboxState};

/// containerd's exit code for a container whose task vanished while it was down.
const UNKNOWN_EXIT_CODE: i32 = 255;

impl MockRuntime {
    // ----------------------------------------------------------- scripting

    /// Scripts the containers `matching` selects (a container name, or a
    /// [`Match`]); the newest matching script wins. Takes effect for
    /// containers created from now on.
    pub fn script(&self, matching: impl Into<Match>, script: impl Into<Script>) {
        self.shared.lock().scripts.push((matching.into(), script.into()));
    }

    /// Forgets every script: containers run the busybox subset again.
    pub fn clear_scripts(&self) {
        self.shared.lock().scripts.clear();
    }

    // ----------------------------------------------------------- faults

    /// Injects `fault` into CRI `method` (gRPC name, e.g. `"StartContainer"`).
    ///
    /// # Panics
    /// If `method` is not one of [`CRI_METHODS`](super::CRI_METHODS).
    pub fn inject(&self, method: &str, fault: Fault) {
        let m = cri_method(method).unwrap_or_else(|| panic!("unknown CRI method {method:?}"));
        self.shared.lock().faults.push(m, fault);
    }

    /// Shorthand: the next `times` calls of `method` fail with `code`/`message`.
    pub fn fail_next(&self, method: &str, times: u32, code: Code, message: &str) {
        self.inject(method, Fault::error(code, message).times(times));
    }

    /// Removes the faults of `method`, or of every method with `None`.
    pub fn clear_faults(&self, method: Option<&str>) {
        let m = method.map(|m| cri_method(m).unwrap_or_else(|| panic!("unknown CRI method {m:?}")));
        self.shared.lock().faults.clear(m);
    }

    /// "containerd died" (`true`): every call fails with `UNAVAILABLE` while
    /// containers keep running (their shims survive); `false` brings it back
    /// with all state intact. See also [`MockRuntime::simulate_restart`].
    pub fn set_down(&self, down: bool) {
        self.shared.lock().faults.set_down(down);
    }

    /// Whether the runtime is down.
    pub fn is_down(&self) -> bool {
        self.shared.lock().faults.is_down()
    }

    /// Sets the `RuntimeReady` condition of `Status`.
    pub fn set_runtime_ready(&self, ready: bool) {
        self.set_condition("RuntimeReady", ready, "RuntimeNotReady", "runtime is not ready (mock)");
    }

    /// Sets the `NetworkReady` condition of `Status`; while false, a
    /// `RunPodSandbox` without host network fails like containerd without CNI.
    pub fn set_network_ready(&self, ready: bool) {
        let message = "Network plugin returns error: cni plugin not initialized";
        self.set_condition("NetworkReady", ready, "NetworkPluginNotReady", message);
    }

    fn set_condition(&self, kind: &str, ready: bool, reason: &str, message: &str) {
        let mut st = self.shared.lock();
        if let Some(c) = st.conditions.iter_mut().find(|c| c.r#type == kind) {
            c.status = ready;
            c.reason = if ready { String::new() } else { reason.to_string() };
            c.message = if ready { String::new() } else { message.to_string() };
        }
    }

    // ----------------------------------------------------------- images

    /// Puts an image into the store (as if imported).
    pub fn add_image(&self, image: MockImage) {
        self.shared.lock().images.add(image);
    }

    /// Makes `image` pullable from the fake registry; a pull takes `latency`.
    pub fn publish_image(&self, image: MockImage, latency: std::time::Duration) {
        self.shared.lock().registry.publish(image, latency);
    }

    // ----------------------------------------------------------- outside events

    /// The process of a running container exits now with `code` (as if
    /// killed from outside, e.g. `kill -9` gives 137). Returns `false` if the
    /// container is unknown or not running.
    pub fn exit_container(&self, id: &str, code: i32) -> bool {
        self.force_exit(id, code, exit_reason(code))
    }

    /// The kernel OOM-kills a running container now (exit 137, `OOMKilled`).
    pub fn oom_kill_container(&self, id: &str) -> bool {
        self.force_exit(id, 137, "OOMKilled")
    }

    fn force_exit(&self, id: &str, code: i32, reason: &str) -> bool {
        let running = {
            let st = self.shared.lock();
            st.containers
                .get(id)
                .is_some_and(|c| c.state == ContainerState::ContainerRunning)
        };
        if running {
            self.shared.finish_container(id, code, reason, "");
        }
        running
    }

    /// containerd and every shim died and containerd came back: as observed
    /// on containerd 1.6, running containers are `EXITED` with exit code 255
    /// and reason `Unknown`, ready sandboxes are `NOTREADY` (keeping their
    /// IP); created containers stay `CREATED`. The down switch is left as is.
    pub fn simulate_restart(&self) {
        let (running, ready): (Vec<String>, Vec<String>) = {
            let mut st = self.shared.lock();
            let running = st
                .containers
                .values()
                .filter(|c| c.state == ContainerState::ContainerRunning)
                .map(|c| c.id.clone())
                .collect();
            let mut ready = Vec::new();
            for sb in st
                .sandboxes
                .values_mut()
                .filter(|s| s.state == PodSandboxState::SandboxReady)
            {
                sb.state = PodSandboxState::SandboxNotready;
                ready.push(sb.id.clone());
            }
            (running, ready)
        };
        for id in running {
            self.shared.finish_container(&id, UNKNOWN_EXIT_CODE, "Unknown", "");
        }
        for id in ready {
            self.shared.emit(MockEvent::SandboxNotReady { id });
        }
    }

    // ----------------------------------------------------------- observation

    /// Every call received so far, oldest first.
    pub fn calls(&self) -> Vec<CallRecord> {
        self.shared.lock().calls.records()
    }

    /// The calls of one method, oldest first.
    pub fn calls_to(&self, method: &str) -> Vec<CallRecord> {
        self.calls().into_iter().filter(|c| c.method == method).collect()
    }

    /// How many calls of `method` were received.
    pub fn call_count(&self, method: &str) -> u64 {
        self.shared.lock().calls.count(method)
    }

    /// Forgets the call log and counters.
    pub fn clear_calls(&self) {
        self.shared.lock().calls.clear();
    }

    /// Every sandbox and container, sorted by creation time.
    pub fn snapshot(&self) -> MockSnapshot {
        let st = self.shared.lock();
        let mut sandboxes: Vec<_> = st.sandboxes.values().collect();
        sandboxes.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let mut containers: Vec<_> = st.containers.values().collect();
        containers.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        MockSnapshot {
            sandboxes: sandboxes.into_iter().map(|s| s.to_status()).collect(),
            containers: containers
                .into_iter()
                .map(|c| ContainerSnapshot {
                    sandbox_id: c.sandbox_id.clone(),
                    pod_name: c.info.pod_name.clone(),
                    pod_namespace: c.info.pod_namespace.clone(),
                    status: c.to_status(&st.images),
                })
                .collect(),
        }
    }

    /// The newest container named `container` in a pod named `pod`.
    pub fn find_container(&self, pod: &str, container: &str) -> Option<ContainerSnapshot> {
        self.snapshot()
            .containers
            .into_iter()
            .rev()
            .find(|c| c.pod_name == pod && c.name() == container)
    }

    /// The status of one container, if it exists.
    pub fn container(&self, id: &str) -> Option<v1::ContainerStatus> {
        let st = self.shared.lock();
        st.containers.get(id).map(|c| c.to_status(&st.images))
    }

    /// Receives every state change from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<MockEvent> {
        self.shared.events.subscribe()
    }

    /// The clock behind the mock's timestamps.
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }
}
