//! Native sidecars (init containers with `restartPolicy: Always`) on the
//! whole kubelet (mock CRI, paused time): start order behind the startup
//! probe, restarts, Job completion and reverse termination.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
use actlet::cri::v1::StopContainerRequest;
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::{Container, ExecAction, Pod, PodStatus, Probe};

const T: Duration = Duration::from_secs(120);

fn sidecar(name: &str, command: &[&str]) -> Container {
    Container {
        name: name.into(),
        image: Some("busybox:1.36".into()),
        command: Some(command.iter().map(|s| s.to_string()).collect()),
        restart_policy: Some("Always".into()),
        ..Default::default()
    }
}

fn pod(policy: &str, sidecars: Vec<Container>, main: &[&str]) -> Pod {
    PodBuilder::new("job")
        .uid("u-job")
        .restart_policy(policy)
        .grace_period(10)
        .container("a", "busybox:1.36", main.iter().copied())
        .modify(|p| p.spec.as_mut().unwrap().init_containers = Some(sidecars))
        .build()
}

fn status(node: &TestNode) -> PodStatus {
    node.status("default", "job").unwrap_or_default()
}

fn init_status(s: &PodStatus, name: &str) -> Option<(bool, i32)> {
    let c = s.init_container_statuses.iter().flatten().find(|c| c.name == name)?;
    Some((c.started == Some(true), c.restart_count))
}

#[test]
fn the_main_container_waits_for_the_sidecar_startup_probe() {
    run_paused(async {
        let started = Arc::new(AtomicBool::new(false));
        let s = started.clone();
        let behaviour = Behaviour::run_forever().exec(move |argv| {
            (argv.first().map(String::as_str) == Some("check"))
                .then(|| ExecResult::exit(if s.load(Ordering::SeqCst) { 0 } else { 1 }))
        });
        let node = TestNode::with_mock(MockRuntime::builder().script("proxy", behaviour).build());
        let mut proxy = sidecar("proxy", &["sleep", "3600"]);
        proxy.startup_probe = Some(Probe {
            exec: Some(ExecAction {
                command: Some(vec!["check".into()]),
            }),
            period_seconds: Some(1),
            failure_threshold: Some(100),
            ..Default::default()
        });
        node.set_pods(vec![pod("Always", vec![proxy], &["sleep", "3600"])]);
        wait_until(|| node.mock().find_container("job", "proxy").is_some(), T)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(
            node.mock().find_container("job", "a").is_none(),
            "{}",
            node.describe("default", "job")
        );
        assert_eq!(init_status(&status(&node), "proxy"), Some((false, 0)));
        started.store(true, Ordering::SeqCst);
        node.wait_for_phase("default", "job", "Running", T).await.unwrap();
        wait_until(
            || node.mock().find_container("job", "a").is_some(),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        wait_until(
            || init_status(&status(&node), "proxy") == Some((true, 0)),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
    });
}

#[test]
fn a_sidecar_is_restarted_whenever_it_exits_even_with_restart_policy_never() {
    run_paused(async {
        let node = TestNode::start();
        let flaky = sidecar("flaky", &["sh", "-c", "sleep 5; exit 1"]);
        node.set_pods(vec![pod("Never", vec![flaky], &["sleep", "3600"])]);
        node.wait_for_phase("default", "job", "Running", T).await.unwrap();
        wait_until(
            || init_status(&status(&node), "flaky").is_some_and(|(_, restarts)| restarts >= 2),
            Duration::from_secs(300),
        )
        .await
        .unwrap();
        assert_eq!(status(&node).phase.as_deref(), Some("Running"));
    });
}

#[test]
fn a_job_completes_despite_its_sidecars() {
    run_paused(async {
        let node = TestNode::start();
        let logger = sidecar("logger", &["sleep", "3600"]);
        node.set_pods(vec![pod("Never", vec![logger], &["sh", "-c", "sleep 3"])]);
        node.wait_for_phase("default", "job", "Succeeded", T).await.unwrap();
        wait_until(
            || {
                node.mock()
                    .find_container("job", "logger")
                    .is_some_and(|c| c.status.state != actlet::cri::v1::ContainerState::ContainerRunning as i32)
            },
            T,
        )
        .await
        .unwrap();
    });
}

#[test]
fn sidecars_stop_after_the_main_containers_in_reverse_order() {
    run_paused(async {
        let mock = MockRuntime::new();
        let stops = Arc::new(Mutex::new(Vec::new()));
        let s = stops.clone();
        let runtime = HookedRuntime::new(mock.clone(), move |call| {
            if let Some(r) = call.request::<StopContainerRequest>() {
                s.lock().unwrap().push(r.container_id.clone());
            }
        });
        let node = TestNode::builder().mock(mock).runtime(runtime).start();
        let sidecars = vec![sidecar("s1", &["sleep", "3600"]), sidecar("s2", &["sleep", "3600"])];
        node.set_pods(vec![pod("Always", sidecars, &["sleep", "3600"])]);
        node.wait_for_phase("default", "job", "Running", T).await.unwrap();
        wait_until(|| node.mock().find_container("job", "a").is_some(), T)
            .await
            .unwrap();
        let id = |name: &str| node.mock().find_container("job", name).unwrap().status.id;
        let (a, s1, s2) = (id("a"), id("s1"), id("s2"));
        node.set_pods(vec![]);
        wait_until(|| stops.lock().unwrap().len() >= 3, T).await.unwrap();
        assert_eq!(*stops.lock().unwrap(), [a, s2, s1]);
    });
}
