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
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, Script};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// // attempt 0 crashes at once, later attempts run
    /// node.mock().script("c", Script::PerAttempt(vec![Behaviour::crash_on_start(1), Behaviour::run_forever()]));
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// let status = node.wait_for_restart_count("default", "web", "c", 1, Duration::from_secs(60)).await.unwrap();
    /// let last = status.last_state.unwrap().terminated.unwrap();
    /// assert_eq!((last.exit_code, last.reason.as_deref()), (1, Some("Error")));
    /// # });
    /// ```
    pub fn script(&self, matching: impl Into<Match>, script: impl Into<Script>) {
        self.shared.lock().scripts.push((matching.into(), script.into()));
    }

    /// Forgets every script: containers run the busybox subset again.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::{Behaviour, MockRuntime};
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let mock = MockRuntime::new();
    /// mock.script("c", Behaviour::crash_on_start(1));
    /// mock.clear_scripts(); // containers created from now on run their command again
    /// let node = TestNode::with_mock(mock);
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// # });
    /// ```
    pub fn clear_scripts(&self) {
        self.shared.lock().scripts.clear();
    }

    // ----------------------------------------------------------- faults

    /// Injects `fault` into CRI `method` (gRPC name, e.g. `"StartContainer"`).
    ///
    /// # Panics
    /// If `method` is not one of [`CRI_METHODS`](super::CRI_METHODS).
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// mock.inject("ListImages", Fault::latency(Duration::from_secs(2)).times(1));
    /// let start = tokio::time::Instant::now();
    /// mock.list_images(Default::default()).await.unwrap();
    /// assert_eq!(start.elapsed(), Duration::from_secs(2)); // virtual time
    /// # });
    /// ```
    pub fn inject(&self, method: &str, fault: Fault) {
        let m = cri_method(method).unwrap_or_else(|| panic!("unknown CRI method {method:?}"));
        self.shared.lock().faults.push(m, fault);
    }

    /// Shorthand: the next `times` calls of `method` fail with `code`/`message`.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// mock.fail_next("Version", 2, tonic::Code::Unavailable, "connection refused");
    /// assert!(mock.version(Default::default()).await.unwrap_err().is_unavailable());
    /// assert!(mock.version(Default::default()).await.is_err());
    /// assert!(mock.version(Default::default()).await.is_ok());
    /// # });
    /// ```
    pub fn fail_next(&self, method: &str, times: u32, code: Code, message: &str) {
        self.inject(method, Fault::error(code, message).times(times));
    }

    /// Removes the faults of `method`, or of every method with `None`.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::{Fault, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// mock.inject("Version", Fault::error(tonic::Code::Internal, "boom"));
    /// mock.inject("Status", Fault::error(tonic::Code::Internal, "boom"));
    /// mock.clear_faults(Some("Version"));
    /// assert!(mock.version(Default::default()).await.is_ok());
    /// mock.clear_faults(None);
    /// assert!(mock.status(Default::default()).await.is_ok());
    /// # });
    /// ```
    pub fn clear_faults(&self, method: Option<&str>) {
        let m = method.map(|m| cri_method(m).unwrap_or_else(|| panic!("unknown CRI method {m:?}")));
        self.shared.lock().faults.clear(m);
    }

    /// "containerd died" (`true`): every call fails with `UNAVAILABLE` while
    /// containers keep running (their shims survive); `false` brings it back
    /// with all state intact. See also [`MockRuntime::simulate_restart`].
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = mock.find_container("web", "c").unwrap().status.id;
    /// mock.set_down(true);
    /// assert!(actlet::cri::Runtime::version(mock, Default::default()).await.unwrap_err().is_unavailable());
    /// mock.set_down(false);
    /// assert_eq!(mock.container(&id).unwrap().state(), actlet::cri::v1::ContainerState::ContainerRunning); // still running
    /// # });
    /// ```
    pub fn set_down(&self, down: bool) {
        self.shared.lock().faults.set_down(down);
        if down {
            self.shared.cri_events.disconnect();
        }
    }

    /// Whether the runtime is down.
    ///
    /// ```
    /// let mock = actlet::cri::mock::MockRuntime::new();
    /// assert!(!mock.is_down());
    /// mock.set_down(true);
    /// assert!(mock.is_down());
    /// ```
    pub fn is_down(&self) -> bool {
        self.shared.lock().faults.is_down()
    }

    /// Sets the `RuntimeReady` condition of `Status`.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// mock.set_runtime_ready(false);
    /// let status = mock.status(Default::default()).await.unwrap().status.unwrap();
    /// let runtime = status.conditions.iter().find(|c| c.r#type == "RuntimeReady").unwrap();
    /// assert_eq!((runtime.status, runtime.reason.as_str()), (false, "RuntimeNotReady"));
    /// # });
    /// ```
    pub fn set_runtime_ready(&self, ready: bool) {
        self.set_condition("RuntimeReady", ready, "RuntimeNotReady", "runtime is not ready (mock)");
    }

    /// Sets the `NetworkReady` condition of `Status`; while false, a
    /// `RunPodSandbox` without host network fails like containerd without CNI.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// node.mock().set_network_ready(false); // no CNI: sandboxes fail
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// tokio::time::sleep(Duration::from_secs(30)).await;
    /// assert_eq!(node.kubelet().phase_of_named("default", "web").as_deref(), Some("Pending"));
    /// node.mock().set_network_ready(true);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(120)).await.unwrap();
    /// # });
    /// ```
    pub fn set_network_ready(&self, ready: bool) {
        let message = "Network plugin returns error: cni plugin not initialized";
        self.set_condition("NetworkReady", ready, "NetworkPluginNotReady", message);
    }

    /// Whether `Status` reports `features.supplemental_groups_policy` (on by
    /// default, as containerd 2.x; containerd 1.x has no features) and
    /// `ContainerStatus` the container's `user`.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// let supported = |s: actlet::cri::v1::StatusResponse| s.features.unwrap().supplemental_groups_policy;
    /// assert!(supported(mock.status(Default::default()).await.unwrap()));
    /// mock.set_supplemental_groups_policy(false);
    /// assert!(!supported(mock.status(Default::default()).await.unwrap()));
    /// # });
    /// ```
    pub fn set_supplemental_groups_policy(&self, supported: bool) {
        self.shared.lock().features.supplemental_groups_policy = supported;
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
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::{MockImage, MockRuntime}};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// mock.add_image(MockImage::new("example.com/app:v2"));
    /// let images = mock.list_images(Default::default()).await.unwrap().images;
    /// assert!(images.iter().any(|i| i.repo_tags.contains(&"example.com/app:v2".to_string())));
    /// # });
    /// ```
    pub fn add_image(&self, image: MockImage) {
        self.shared.lock().images.add(image);
    }

    /// Makes `image` pullable from the fake registry; a pull takes `latency`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actlet::cri::{Runtime, mock::{MockImage, MockRuntime}};
    /// use actlet::cri::v1::{ImageSpec, PullImageRequest};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// let pull = || PullImageRequest { image: Some(ImageSpec { image: "example.com/app:v2".into(), ..Default::default() }), ..Default::default() };
    /// assert!(mock.pull_image(pull()).await.is_err()); // not in the registry
    /// mock.publish_image(MockImage::new("example.com/app:v2"), Duration::from_secs(1));
    /// assert!(mock.pull_image(pull()).await.is_ok());
    /// # });
    /// ```
    pub fn publish_image(&self, image: MockImage, latency: std::time::Duration) {
        self.shared.lock().registry.publish(image, latency);
    }

    // ----------------------------------------------------------- outside events

    /// The process of a running container exits now with `code` (as if
    /// killed from outside, e.g. `kill -9` gives 137). Returns `false` if the
    /// container is unknown or not running.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = mock.find_container("web", "c").unwrap().status.id;
    /// assert!(mock.exit_container(&id, 137)); // `kill -9` from outside
    /// let status = node.wait_for_restart_count("default", "web", "c", 1, Duration::from_secs(60)).await.unwrap();
    /// assert_eq!(status.last_state.unwrap().terminated.unwrap().exit_code, 137);
    /// assert!(!mock.exit_container(&id, 1)); // it is not running any more
    /// # });
    /// ```
    pub fn exit_container(&self, id: &str, code: i32) -> bool {
        self.force_exit(id, code, exit_reason(code))
    }

    /// The kernel OOM-kills a running container now (exit 137, `OOMKilled`).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = mock.find_container("web", "c").unwrap().status.id;
    /// assert!(mock.oom_kill_container(&id));
    /// let status = mock.container(&id).unwrap();
    /// assert_eq!((status.exit_code, status.reason.as_str()), (137, "OOMKilled"));
    /// # });
    /// ```
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
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// use actlet::cri::v1::{ContainerState, PodSandboxState};
    /// let id = mock.find_container("web", "c").unwrap().status.id;
    /// mock.simulate_restart();
    /// let status = mock.container(&id).unwrap();
    /// assert_eq!((status.state(), status.exit_code, status.reason.as_str()), (ContainerState::ContainerExited, 255, "Unknown"));
    /// assert_eq!(mock.snapshot().sandboxes[0].state(), PodSandboxState::SandboxNotready);
    /// # });
    /// ```
    pub fn simulate_restart(&self) {
        self.shared.cri_events.disconnect();
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
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let methods: Vec<&str> = mock.calls().iter().map(|c| c.method).collect();
    /// let first = |m: &str| methods.iter().position(|x| *x == m).unwrap();
    /// assert!(first("RunPodSandbox") < first("CreateContainer"));
    /// assert!(first("CreateContainer") < first("StartContainer"));
    /// # });
    /// ```
    pub fn calls(&self) -> Vec<CallRecord> {
        self.shared.lock().calls.records()
    }

    /// The calls of one method, oldest first.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// use actlet::cri::mock::CallOutcome;
    /// let creates = mock.calls_to("CreateContainer");
    /// assert_eq!(creates.len(), 1);
    /// assert_eq!(creates[0].outcome, CallOutcome::Ok);
    /// assert_eq!(mock.calls_to("RunPodSandbox")[0].target, "web"); // the pod name
    /// # });
    /// ```
    pub fn calls_to(&self, method: &str) -> Vec<CallRecord> {
        self.calls().into_iter().filter(|c| c.method == method).collect()
    }

    /// How many calls of `method` were received.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// mock.set_down(true);
    /// let _ = mock.version(Default::default()).await; // failed calls count too
    /// assert_eq!(mock.call_count("Version"), 1);
    /// assert_eq!(mock.call_count("Status"), 0);
    /// # });
    /// ```
    pub fn call_count(&self, method: &str) -> u64 {
        self.shared.lock().calls.count(method)
    }

    /// Forgets the call log and counters.
    ///
    /// ```
    /// use actlet::cri::{Runtime, mock::MockRuntime};
    /// # actlet::testing::run_paused(async {
    /// let mock = MockRuntime::new();
    /// mock.version(Default::default()).await.unwrap();
    /// mock.clear_calls();
    /// assert_eq!(mock.call_count("Version"), 0);
    /// assert!(mock.calls().is_empty());
    /// # });
    /// ```
    pub fn clear_calls(&self) {
        self.shared.lock().calls.clear();
    }

    /// Every sandbox and container, sorted by creation time.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let snapshot = mock.snapshot();
    /// assert_eq!(snapshot.sandboxes.len(), 1);
    /// assert_eq!(snapshot.sandboxes[0].metadata.as_ref().unwrap().name, "web");
    /// assert_eq!(snapshot.containers.len(), 1);
    /// assert_eq!((snapshot.containers[0].pod_name.as_str(), snapshot.containers[0].name()), ("web", "c"));
    /// # });
    /// ```
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
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let c = mock.find_container("web", "c").unwrap();
    /// assert_eq!(c.state(), actlet::cri::v1::ContainerState::ContainerRunning);
    /// assert_eq!(c.status.image.unwrap().image, "docker.io/library/busybox:1.36");
    /// assert!(mock.find_container("web", "nope").is_none());
    /// # });
    /// ```
    pub fn find_container(&self, pod: &str, container: &str) -> Option<ContainerSnapshot> {
        self.snapshot()
            .containers
            .into_iter()
            .rev()
            .find(|c| c.pod_name == pod && c.name() == container)
    }

    /// The status of one container, if it exists.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mock = node.mock();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// node.wait_for_phase("default", "web", "Running", Duration::from_secs(60)).await.unwrap();
    /// let id = mock.find_container("web", "c").unwrap().status.id;
    /// let status = mock.container(&id).unwrap();
    /// assert_eq!(status.metadata.unwrap().name, "c");
    /// assert!(mock.container("no-such-id").is_none());
    /// # });
    /// ```
    pub fn container(&self, id: &str) -> Option<v1::ContainerStatus> {
        let st = self.shared.lock();
        st.containers.get(id).map(|c| c.to_status(&st.images))
    }

    /// Receives every state change from now on.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// use actlet::cri::mock::MockEvent;
    /// use actlet::testing::{PodBuilder, TestNode};
    /// let node = TestNode::start();
    /// let mut events = node.mock().subscribe();
    /// node.set_pods(vec![PodBuilder::new("web").container("c", "busybox:1.36", ["sleep", "3600"]).build()]);
    /// assert!(matches!(events.recv().await.unwrap(), MockEvent::SandboxReady { .. }));
    /// assert!(matches!(events.recv().await.unwrap(), MockEvent::ContainerCreated { .. }));
    /// assert!(matches!(events.recv().await.unwrap(), MockEvent::ContainerStarted { .. }));
    /// # });
    /// ```
    pub fn subscribe(&self) -> broadcast::Receiver<MockEvent> {
        self.shared.events.subscribe()
    }

    /// The clock behind the mock's timestamps.
    ///
    /// ```
    /// use std::time::Duration;
    /// # actlet::testing::run_paused(async {
    /// let mock = actlet::cri::mock::MockRuntime::new();
    /// let before = mock.clock().now();
    /// tokio::time::sleep(Duration::from_secs(3600)).await; // paused time: instant
    /// assert_eq!(mock.clock().now().duration_since(before).unwrap(), Duration::from_secs(3600));
    /// # });
    /// ```
    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }
}
