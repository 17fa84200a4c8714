//! Ephemeral containers (`kubectl debug`) on the whole kubelet (mock CRI,
//! paused time), as upstream's conformance tests "will start an ephemeral
//! container in an existing pod" and "should update the ephemeral containers
//! in an existing pod" need: added to a running pod, started once in its
//! sandbox (in the target's PID namespace when named), reported in
//! `ephemeralContainerStatuses`, never restarted, the pod untouched.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::cri::v1::{CreateContainerRequest, NamespaceMode, NamespaceOption};
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::{EphemeralContainer, Pod};

/// (container name, its PID namespace option) of each CreateContainer.
type Created = Arc<Mutex<Vec<(String, NamespaceOption)>>>;

fn pod(ephemeral: &[(&str, Option<&str>)], generation: i64) -> Pod {
    PodBuilder::new("web")
        .uid("u-web")
        .container("app", "busybox:1.36", ["sleep", "3600"])
        .modify(|p| {
            p.metadata.generation = Some(generation);
            let list = ephemeral
                .iter()
                .map(|(name, target)| EphemeralContainer {
                    name: name.to_string(),
                    image: Some("busybox:1.36".into()),
                    command: Some(vec!["sh".into(), "-c".into(), "echo polo".into()]),
                    stdin: Some(true),
                    tty: Some(true),
                    target_container_name: target.map(str::to_string),
                    ..Default::default()
                })
                .collect::<Vec<_>>();
            if !list.is_empty() {
                p.spec.as_mut().unwrap().ephemeral_containers = Some(list);
            }
        })
        .build()
}

fn node() -> (TestNode, MockRuntime, Created) {
    let mock = MockRuntime::builder()
        .script("app", Behaviour::run_forever())
        .script("debugger", Behaviour::run_forever())
        .script("once", Behaviour::exit_after(Duration::from_secs(1), 0))
        .build();
    let created: Created = Arc::default();
    let log = created.clone();
    let runtime = HookedRuntime::new(mock.clone(), move |call| {
        if let Some(req) = call.request::<CreateContainerRequest>() {
            let config = req.config.clone().unwrap_or_default();
            let ns = config
                .linux
                .and_then(|l| l.security_context)
                .and_then(|s| s.namespace_options)
                .unwrap_or_default();
            let name = config.metadata.map(|m| m.name).unwrap_or_default();
            log.lock().unwrap().push((name, ns));
        }
    });
    let node = TestNode::builder().mock(mock.clone()).runtime(runtime).start();
    (node, mock, created)
}

fn ephemeral_state(node: &TestNode, name: &str) -> Option<String> {
    let status = node.status("default", "web")?;
    let s = status
        .ephemeral_container_statuses?
        .into_iter()
        .find(|s| s.name == name)?;
    let state = s.state?;
    Some(if state.running.is_some() {
        "running".into()
    } else if state.terminated.is_some() {
        "terminated".into()
    } else {
        "waiting".into()
    })
}

#[test]
fn ephemeral_containers_start_once_in_the_running_pod() {
    run_paused(async {
        let (node, mock, created) = node();
        node.set_pods(vec![pod(&[], 1)]);
        node.wait_for_phase("default", "web", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let app_id = mock
            .find_container("web", "app")
            .map(|c| c.status.id)
            .unwrap_or_default();

        // `kubectl debug --target app`: the ephemeralcontainers subresource.
        node.set_pods(vec![pod(&[("debugger", Some("app"))], 2)]);
        wait_until(
            || ephemeral_state(&node, "debugger").as_deref() == Some("running"),
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|_| panic!("debugger not running: {}", node.describe("default", "web")));

        // A second one, without a target, that exits: started once, never again.
        node.set_pods(vec![pod(&[("debugger", Some("app")), ("once", None)], 3)]);
        wait_until(
            || ephemeral_state(&node, "once").as_deref() == Some("terminated"),
            Duration::from_secs(60),
        )
        .await
        .unwrap_or_else(|_| panic!("once not terminated: {}", node.describe("default", "web")));
        tokio::time::sleep(Duration::from_secs(120)).await; // resyncs and PLEG relists

        let created = created.lock().unwrap().clone();
        let names: Vec<&str> = created.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["app", "debugger", "once"],
            "each created once, app never restarted"
        );
        let debugger = &created[1].1;
        assert_eq!(
            debugger.pid,
            NamespaceMode::Target as i32,
            "joins the target's PID namespace"
        );
        assert_eq!(debugger.target_id, app_id);
        assert_eq!(created[2].1.pid, NamespaceMode::Container as i32, "no target: its own");
        assert_eq!(ephemeral_state(&node, "debugger").as_deref(), Some("running"));
        let status = node.status("default", "web").unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        let ready = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| c.status);
        assert_eq!(
            ready.as_deref(),
            Some("True"),
            "ephemeral containers do not count for readiness"
        );
        assert!(
            mock.find_container("web", "debugger").is_some(),
            "the debugger runs in the pod's sandbox"
        );
    });
}

#[test]
fn a_missing_target_is_a_config_error_named_in_the_status() {
    run_paused(async {
        let (node, _mock, created) = node();
        node.set_pods(vec![pod(&[], 1)]);
        node.wait_for_phase("default", "web", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        node.set_pods(vec![pod(&[("debugger", Some("nope"))], 2)]);
        let waiting = || {
            let s = node.status("default", "web")?.ephemeral_container_statuses?;
            let w = s.into_iter().find(|s| s.name == "debugger")?.state?.waiting?;
            (w.reason.as_deref() == Some("CreateContainerConfigError")).then_some(w.message)
        };
        wait_until(|| waiting().is_some(), Duration::from_secs(60))
            .await
            .unwrap_or_else(|_| panic!("no config error: {}", node.describe("default", "web")));
        assert_eq!(
            waiting().flatten().as_deref(),
            Some("unable to find target container nope")
        );
        assert!(created.lock().unwrap().iter().all(|(n, _)| n != "debugger"));
    });
}
