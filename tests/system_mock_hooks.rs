//! Lifecycle hooks on the whole kubelet (mock CRI, paused time): postStart
//! after the start and its failure, preStop inside the grace period (exec,
//! sleep, a hook longer than the grace, a failing hook).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
use actlet::cri::v1::{ExecSyncRequest, StartContainerRequest, StopContainerRequest};
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::{ExecAction, Lifecycle, LifecycleHandler, Pod, SleepAction};
use tokio::time::Instant;

/// (reason, message) of a recorded event.
type Seen = (String, String);

/// What the runtime saw, in order: (method, detail, when).
type Calls = Arc<Mutex<Vec<(String, String, Instant)>>>;

struct Harness {
    node: TestNode,
    calls: Calls,
    events: Arc<Mutex<Vec<Seen>>>,
}

impl Harness {
    fn start(behaviour: Behaviour) -> Self {
        let mock = MockRuntime::builder().script("app", behaviour).build();
        let calls: Calls = Arc::default();
        let c = calls.clone();
        let runtime = HookedRuntime::new(mock.clone(), move |call| {
            let detail = if let Some(r) = call.request::<ExecSyncRequest>() {
                r.cmd.join(" ")
            } else if let Some(r) = call.request::<StopContainerRequest>() {
                r.timeout.to_string()
            } else if call.request::<StartContainerRequest>().is_some() {
                String::new()
            } else {
                return;
            };
            c.lock()
                .unwrap()
                .push((call.method.to_string(), detail, Instant::now()));
        });
        let events: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = events.clone();
        let node = TestNode::builder()
            .mock(mock)
            .runtime(runtime)
            .customize(move |b| b.on_event(move |e| log.lock().unwrap().push((e.reason, e.message))))
            .start();
        Self { node, calls, events }
    }

    fn calls(&self, method: &str) -> Vec<(String, Instant)> {
        let calls = self.calls.lock().unwrap();
        calls
            .iter()
            .filter(|c| c.0 == method)
            .map(|c| (c.1.clone(), c.2))
            .collect()
    }

    fn has_event(&self, reason: &str, message: &str) -> bool {
        let events = self.events.lock().unwrap();
        events.iter().any(|e| e.0 == reason && e.1 == message)
    }

    async fn running(&self) {
        self.node
            .wait_for_phase("default", "web", "Running", Duration::from_secs(60))
            .await
            .unwrap();
    }

    /// Removes the pod and waits until its container was stopped.
    async fn remove(&self) -> Instant {
        let start = Instant::now();
        self.node.set_pods(vec![]);
        wait_until(|| !self.calls("StopContainer").is_empty(), Duration::from_secs(120))
            .await
            .unwrap();
        start
    }
}

fn exec(cmd: &str) -> LifecycleHandler {
    LifecycleHandler {
        exec: Some(ExecAction {
            command: Some(vec![cmd.into()]),
        }),
        ..Default::default()
    }
}

fn sleep(seconds: i64) -> LifecycleHandler {
    LifecycleHandler {
        sleep: Some(SleepAction { seconds }),
        ..Default::default()
    }
}

fn web(grace: i64, lifecycle: Lifecycle) -> Pod {
    PodBuilder::new("web")
        .uid("u-web")
        .grace_period(grace)
        .container("app", "busybox:1.36", ["sleep", "3600"])
        .modify(|p| p.spec.as_mut().unwrap().containers[0].lifecycle = Some(lifecycle))
        .build()
}

#[test]
fn post_start_runs_after_the_start() {
    run_paused(async {
        let h = Harness::start(Behaviour::run_forever().exec_reply(&["hello"], ExecResult::ok("")));
        h.node.set_pods(vec![web(
            30,
            Lifecycle {
                post_start: Some(exec("hello")),
                ..Default::default()
            },
        )]);
        h.running().await;
        let (started, hooks) = (h.calls("StartContainer"), h.calls("ExecSync"));
        assert_eq!(hooks.len(), 1);
        assert!(started[0].1 <= hooks[0].1, "postStart after StartContainer");
    });
}

#[test]
fn a_failing_post_start_kills_the_container_and_it_is_restarted() {
    run_paused(async {
        let h = Harness::start(Behaviour::run_forever().exec_reply(&["boom"], ExecResult::exit(3).with_stderr("no")));
        h.node.set_pods(vec![web(
            30,
            Lifecycle {
                post_start: Some(exec("boom")),
                ..Default::default()
            },
        )]);
        h.node
            .wait_for_restart_count("default", "web", "app", 1, Duration::from_secs(120))
            .await
            .unwrap();
        assert!(h.has_event("FailedPostStartHook", "PostStartHook failed"));
        assert!(h.has_event("Killing", "FailedPostStartHook"));
        assert!(!h.calls("StopContainer").is_empty());
        let events = h.events.lock().unwrap().clone();
        assert!(
            !events
                .iter()
                .any(|e| e.0 == "Failed" && e.1.contains("PostStartHookError")),
            "no Failed event for a hook: {events:?}"
        );
    });
}

#[test]
fn pre_stop_runs_inside_the_grace_period() {
    run_paused(async {
        let slow = ExecResult::ok("").with_delay(Duration::from_secs(5));
        let h = Harness::start(Behaviour::run_forever().exec_reply(&["drain"], slow));
        h.node.set_pods(vec![web(
            30,
            Lifecycle {
                pre_stop: Some(exec("drain")),
                ..Default::default()
            },
        )]);
        h.running().await;
        let removed = h.remove().await;
        let hook = h.calls("ExecSync");
        let stop = h.calls("StopContainer");
        assert_eq!(hook.len(), 1);
        assert!(hook[0].1 <= stop[0].1, "preStop before StopContainer");
        assert_eq!(stop[0].0, "25", "30 s grace minus the 5 s hook");
        assert!(stop[0].1 - removed >= Duration::from_secs(5));
    });
}

#[test]
fn sleep_hooks_count_and_a_hook_longer_than_the_grace_is_cut() {
    run_paused(async {
        let h = Harness::start(Behaviour::run_forever());
        h.node.set_pods(vec![web(
            10,
            Lifecycle {
                pre_stop: Some(sleep(3)),
                ..Default::default()
            },
        )]);
        h.running().await;
        h.remove().await;
        assert_eq!(h.calls("StopContainer")[0].0, "7");

        let h = Harness::start(Behaviour::run_forever());
        h.node.set_pods(vec![web(
            5,
            Lifecycle {
                pre_stop: Some(sleep(100)),
                ..Default::default()
            },
        )]);
        h.running().await;
        let removed = h.remove().await;
        let stop = h.calls("StopContainer");
        assert_eq!(stop[0].0, "2", "the minimum is left for the stop");
        let waited = stop[0].1 - removed;
        assert!(
            waited >= Duration::from_secs(5) && waited < Duration::from_secs(7),
            "{waited:?}"
        );
    });
}

#[test]
fn a_failing_pre_stop_is_an_event_and_the_stop_goes_on() {
    run_paused(async {
        let h = Harness::start(Behaviour::run_forever().exec_reply(&["fail"], ExecResult::exit(1)));
        h.node.set_pods(vec![web(
            30,
            Lifecycle {
                pre_stop: Some(exec("fail")),
                ..Default::default()
            },
        )]);
        h.running().await;
        h.remove().await;
        assert_eq!(h.calls("StopContainer")[0].0, "30");
        assert!(h.has_event("FailedPreStopHook", "PreStopHook failed"));
        assert!(h.has_event("Killing", "Stopping container app"));
    });
}
