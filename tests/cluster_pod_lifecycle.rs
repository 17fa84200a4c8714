//! Pod lifecycles whose API writes a real API server validates more strictly than
//! the test one, each run on both (tests/support/backend.rs; `*_on_envtest`
//! SKIPPED loudly without `KUBEBUILDER_ASSETS`): a crash-looping container
//! (restartCount, lastState, aggregated BackOff events), a failing job with an init
//! container (terminal statuses), pods of each QoS class (the status actlet writes
//! must keep the class the API computed), actlet restarted under a running pod (the
//! registered Node, its Lease and the pod are taken over, nothing is restarted), and
//! pods deleted while actlet was away (stopped and finalised when it returns).

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/backend.rs"]
mod backend;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/envtest.rs"]
mod envtest;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use backend::{Backend, eventually};
use cluster::{bound_pod, run};
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use kube::Api;
use kube::api::ListParams;

const T: Duration = Duration::from_secs(60);

fn fast(b: actlet::ActletBuilder) -> actlet::ActletBuilder {
    b.configure(|c| {
        c.node_status_update_frequency = Duration::from_millis(500);
        c.runtime_health_period = Duration::from_millis(500);
    })
}

fn statuses(p: &Pod, init: bool) -> Vec<ContainerStatus> {
    let st = p.status.clone().unwrap_or_default();
    if init {
        st.init_container_statuses.unwrap_or_default()
    } else {
        st.container_statuses.unwrap_or_default()
    }
}

/// The kubelet's events about pod `name`: (reason, count).
async fn events_of(b: &Backend, name: &str) -> Vec<(String, i32)> {
    let events: Api<Event> = Api::namespaced(b.admin.clone(), "default");
    let list = events
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    list.into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .filter(|e| e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("kubelet"))
        .map(|e| (e.reason.unwrap_or_default(), e.count.unwrap_or(1)))
        .collect()
}

async fn crash_loop_scenario(b: Backend) {
    let mock = MockRuntime::builder()
        .script("app", Behaviour::crash_on_start(3))
        .build();
    let node = b.start_node(mock, fast).await;
    b.create_pod(&bound_pod("crasher", "exit 3")).await;
    let cs = eventually("restartCount 1 with the last termination", T, || async {
        let p = b.pod("crasher").await?;
        let cs = statuses(&p, false).into_iter().next()?;
        (cs.restart_count >= 1 && cs.last_state.as_ref()?.terminated.is_some()).then_some(cs)
    })
    .await;
    let last = cs.last_state.and_then(|s| s.terminated).unwrap_or_default();
    assert_eq!((last.exit_code, last.reason.as_deref()), (3, Some("Error")));
    assert!(!cs.ready);
    let events = eventually("a BackOff event counted more than once", T, || async {
        let ev = events_of(&b, "crasher").await;
        ev.iter().any(|(r, n)| r == "BackOff" && *n >= 2).then_some(ev)
    })
    .await;
    assert_eq!(
        events.iter().filter(|(r, _)| r == "BackOff").count(),
        1,
        "repeats are one Event whose count grows: {events:?}"
    );
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn a_crash_looping_container_reports_restarts_and_one_counted_backoff_event() {
    run(|| async { crash_loop_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn a_crash_looping_container_reports_restarts_and_one_counted_backoff_event_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            crash_loop_scenario(b).await;
        }
    });
}

async fn failing_job_scenario(b: Backend) {
    let mock = MockRuntime::builder()
        .script("init", Behaviour::exit_after(Duration::from_millis(500), 0))
        .script("app", Behaviour::exit_after(Duration::from_millis(500), 2))
        .build();
    let node = b.start_node(mock, fast).await;
    let mut job = bound_pod("job", "exit 2");
    job["spec"]["restartPolicy"] = "Never".into();
    job["spec"]["initContainers"] = serde_json::json!([{"name": "init", "image": "busybox:1.36", "command": ["true"]}]);
    b.create_pod(&job).await;
    let p = eventually("the job Failed in the API", T, || async {
        let p = b.pod("job").await?;
        (p.status.as_ref()?.phase.as_deref() == Some("Failed")).then_some(p)
    })
    .await;
    let term = |cs: Vec<ContainerStatus>| {
        let t = cs
            .into_iter()
            .next()
            .and_then(|c| c.state)
            .and_then(|s| s.terminated)
            .unwrap_or_else(|| panic!("not terminated in {p:?}"));
        (t.exit_code, t.reason.unwrap_or_default())
    };
    assert_eq!(term(statuses(&p, true)), (0, "Completed".into()));
    assert_eq!(term(statuses(&p, false)), (2, "Error".into()));
    let ready = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready");
    assert_eq!(ready.map(|c| c.status).as_deref(), Some("False"));
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn a_failing_job_with_an_init_container_reports_terminal_statuses() {
    run(|| async { failing_job_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn a_failing_job_with_an_init_container_reports_terminal_statuses_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            failing_job_scenario(b).await;
        }
    });
}

async fn restart_scenario(b: Backend) {
    let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    let first = b.start_node(mock.clone(), fast).await;
    b.create_pod(&bound_pod("web", "sleep 3600")).await;
    let running = eventually("Running in the API", T, || async {
        let p = b.pod("web").await?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(p)
    })
    .await;
    let started_at = statuses(&running, false)
        .into_iter()
        .next()
        .and_then(|c| c.state?.running?.started_at);
    first.kubelet.shutdown(Duration::from_secs(5)).await.ok();
    let node_uid = b.node().await.and_then(|n| n.metadata.uid);
    let renewed = b.lease().await.and_then(|l| l.spec?.renew_time);
    let (sandboxes, creates) = (mock.call_count("RunPodSandbox"), mock.call_count("CreateContainer"));

    let second = b.start_node(mock.clone(), fast).await;
    eventually("the Lease renewed by the new instance", T, || async {
        let now = b.lease().await?.spec?.renew_time;
        (now != renewed).then_some(())
    })
    .await;
    eventually("the pod Running locally again", T, || async {
        (second.kubelet.phase_of_named("default", "web").as_deref() == Some("Running")).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(b.node().await.and_then(|n| n.metadata.uid), node_uid, "the same Node");
    assert_eq!(
        (mock.call_count("RunPodSandbox"), mock.call_count("CreateContainer")),
        (sandboxes, creates),
        "nothing restarted"
    );
    let p = b.pod("web").await.unwrap_or_else(|| panic!("pod gone"));
    let cs = statuses(&p, false)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no status"));
    assert_eq!(cs.restart_count, 0);
    assert_eq!(cs.state.and_then(|s| s.running?.started_at), started_at);
    second.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn a_restarted_actlet_takes_over_its_node_lease_and_running_pod() {
    run(|| async { restart_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn a_restarted_actlet_takes_over_its_node_lease_and_running_pod_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            restart_scenario(b).await;
        }
    });
}

async fn qos_scenario(b: Backend) {
    let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    let node = b.start_node(mock, fast).await;
    let res = |cpu: &str, mem: &str, limits: bool| {
        let r = serde_json::json!({"cpu": cpu, "memory": mem});
        if limits {
            serde_json::json!({"requests": r, "limits": r})
        } else {
            serde_json::json!({"requests": r})
        }
    };
    let mut guaranteed = bound_pod("guaranteed", "sleep 3600");
    guaranteed["spec"]["containers"][0]["resources"] = res("100m", "64Mi", true);
    let mut burstable = bound_pod("burstable", "sleep 3600");
    burstable["spec"]["containers"][0]["resources"] = res("100m", "64Mi", false);
    let mut with_init = bound_pod("with-init", "sleep 3600");
    with_init["spec"]["initContainers"] = serde_json::json!([{
        "name": "init", "image": "busybox:1.36", "command": ["true"], "resources": res("50m", "32Mi", true)
    }]);
    let mock_init = Behaviour::exit_after(Duration::from_millis(200), 0);
    node.mock.script("init", mock_init);
    let mut created = Vec::new();
    for pod in [guaranteed, burstable, with_init] {
        created.push(b.create_pod(&pod).await);
    }
    for pod in created {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let class = pod.status.and_then(|s| s.qos_class);
        let p = eventually(&format!("{name} Running in the API"), T, || async {
            let p = b.pod(&name).await?;
            (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(p)
        })
        .await;
        assert_eq!(
            p.status.and_then(|s| s.qos_class),
            class,
            "{name}: the API's QoS class kept"
        );
    }
    node.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn pods_of_each_qos_class_keep_the_apis_class() {
    run(|| async { qos_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn pods_of_each_qos_class_keep_the_apis_class_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            qos_scenario(b).await;
        }
    });
}

async fn deleted_while_away_scenario(b: Backend) {
    let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
    let first = b.start_node(mock.clone(), fast).await;
    for name in ["graceful", "forced"] {
        b.create_pod(&bound_pod(name, "sleep 3600")).await;
    }
    for name in ["graceful", "forced"] {
        eventually(&format!("{name} Running in the API"), T, || async {
            (b.pod(name).await?.status?.phase.as_deref() == Some("Running")).then_some(())
        })
        .await;
    }
    first.kubelet.shutdown(Duration::from_secs(5)).await.ok();
    b.delete_pod("graceful", Some(30)).await;
    b.delete_pod("forced", Some(0)).await;
    assert!(b.pod("graceful").await.is_some(), "waits for its node");
    let second = b.start_node(mock.clone(), fast).await;
    eventually("the graceful one finalised by the node", T, || async {
        b.pod("graceful").await.is_none().then_some(())
    })
    .await;
    let running = |pod: &str| {
        mock.find_container(pod, "app")
            .is_some_and(|c| c.status.state == actlet::cri::v1::ContainerState::ContainerRunning as i32)
    };
    eventually("both pods' containers stopped", T, || async {
        (!running("graceful") && !running("forced")).then_some(())
    })
    .await;
    second.kubelet.shutdown(Duration::from_secs(5)).await.ok();
}

#[test]
fn pods_deleted_while_actlet_was_away_are_stopped_and_finalised() {
    run(|| async { deleted_while_away_scenario(Backend::test_apiserver().await).await });
}

#[test]
fn pods_deleted_while_actlet_was_away_are_stopped_and_finalised_on_envtest() {
    run(|| async {
        if let Some(b) = Backend::real().await {
            deleted_while_away_scenario(b).await;
        }
    });
}
