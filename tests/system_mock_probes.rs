//! Probes on the whole kubelet (mock CRI, paused time): readiness flapping,
//! startup gating, liveness restarts with backoff and the probe's grace
//! period, exec timeouts, and restart safety of the probe actors.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::{Behaviour, ExecResult, MockRuntime};
use actlet::cri::v1::StopContainerRequest;
use actlet::testing::{HookedRuntime, PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::{ExecAction, Pod, PodStatus, Probe};
use tokio::time::{Instant, sleep};

/// Files "present" in the container, for `cat <file>` exec probes; every
/// `cat` is counted per file.
#[derive(Clone, Default)]
struct Files {
    present: Arc<Mutex<HashMap<String, bool>>>,
    reads: Arc<Mutex<HashMap<String, u32>>>,
}

impl Files {
    fn set(&self, file: &str, present: bool) {
        self.present.lock().unwrap().insert(file.into(), present);
    }

    fn reads(&self, file: &str) -> u32 {
        self.reads.lock().unwrap().get(file).copied().unwrap_or(0)
    }

    fn behaviour(&self) -> Behaviour {
        let files = self.clone();
        Behaviour::run_forever().exec(move |argv| match argv {
            [cat, file] if cat == "cat" => {
                *files.reads.lock().unwrap().entry(file.clone()).or_default() += 1;
                let ok = files.present.lock().unwrap().get(file).copied().unwrap_or(false);
                Some(ExecResult::exit(if ok { 0 } else { 1 }))
            }
            _ => None,
        })
    }
}

fn cat_probe(file: &str, period: i32, failure_threshold: i32) -> Probe {
    Probe {
        exec: Some(ExecAction {
            command: Some(vec!["cat".into(), file.into()]),
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failure_threshold),
        ..Default::default()
    }
}

fn web(f: impl FnOnce(&mut Pod)) -> Pod {
    PodBuilder::new("web")
        .uid("u-web")
        .container("app", "busybox:1.36", ["sleep", "3600"])
        .modify(f)
        .build()
}

fn status(node: &TestNode) -> PodStatus {
    node.status("default", "web").unwrap_or_default()
}

fn condition(s: &PodStatus, type_: &str) -> Option<String> {
    s.conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

fn app(s: &PodStatus) -> (bool, bool, i32) {
    s.container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == "app")
        .map_or((false, false, -1), |c| {
            (c.started == Some(true), c.ready, c.restart_count)
        })
}

fn ready(node: &TestNode) -> bool {
    condition(&status(node), "Ready").as_deref() == Some("True")
}

async fn holds(node: &TestNode, what: &str, d: Duration, cond: impl Fn(&TestNode) -> bool) {
    let start = Instant::now();
    while start.elapsed() < d {
        assert!(
            cond(node),
            "{what} stopped holding: {}",
            node.describe("default", "web")
        );
        sleep(Duration::from_millis(100)).await;
    }
}

/// (reason, message, field path) of a recorded event.
type Seen = (String, String, Option<String>);

const T: Duration = Duration::from_secs(60);

#[test]
fn readiness_gates_ready_and_flaps_with_the_threshold() {
    run_paused(async {
        let files = Files::default();
        let node = TestNode::with_mock(MockRuntime::builder().script("app", files.behaviour()).build());
        node.set_pods(vec![web(|p| {
            p.spec.as_mut().unwrap().containers[0].readiness_probe = Some(cat_probe("/ready", 1, 2));
        })]);
        node.wait_for_phase("default", "web", "Running", T).await.unwrap();
        holds(&node, "not ready", Duration::from_secs(5), |n| {
            let s = status(n);
            !ready(n) && app(&s) == (true, false, 0) && condition(&s, "ContainersReady").as_deref() == Some("False")
        })
        .await;
        assert!(files.reads("/ready") >= 3, "probed every second");

        files.set("/ready", true);
        wait_until(|| ready(&node), Duration::from_secs(3)).await.unwrap();
        assert_eq!(condition(&status(&node), "ContainersReady").as_deref(), Some("True"));
        assert_eq!(app(&status(&node)), (true, true, 0));

        files.set("/ready", false);
        let flipped = Instant::now();
        wait_until(|| !ready(&node), Duration::from_secs(5)).await.unwrap();
        assert!(flipped.elapsed() >= Duration::from_secs(1), "two failures needed");
        files.set("/ready", true);
        wait_until(|| ready(&node), Duration::from_secs(3)).await.unwrap();
        assert_eq!(app(&status(&node)).2, 0, "readiness never restarts");
        let metrics = node.kubelet().probes.metrics().render();
        for result in ["successful", "failed"] {
            let series = format!(r#"pod_uid="u-web",probe_type="Readiness",result="{result}"}}"#);
            assert!(metrics.contains(&series), "{series} in {metrics}");
        }
        node.set_pods(vec![]);
        wait_until(|| !node.kubelet().probes.metrics().render().contains("u-web"), T)
            .await
            .unwrap();
    });
}

#[test]
fn startup_probe_gates_started_readiness_and_liveness() {
    run_paused(async {
        let files = Files::default();
        files.set("/ready", true);
        let node = TestNode::with_mock(MockRuntime::builder().script("app", files.behaviour()).build());
        node.set_pods(vec![web(|p| {
            let c = &mut p.spec.as_mut().unwrap().containers[0];
            c.startup_probe = Some(cat_probe("/started", 1, 100));
            c.readiness_probe = Some(cat_probe("/ready", 1, 3));
            c.liveness_probe = Some(cat_probe("/alive", 1, 1));
        })]);
        node.wait_for_phase("default", "web", "Running", T).await.unwrap();
        holds(&node, "not started", Duration::from_secs(10), |n| {
            app(&status(n)) == (false, false, 0) && !ready(n)
        })
        .await;
        assert!(files.reads("/started") >= 8);
        assert_eq!(
            (files.reads("/ready"), files.reads("/alive")),
            (0, 0),
            "gated by startup"
        );
        files.set("/alive", true);
        files.set("/started", true);
        wait_until(|| ready(&node), Duration::from_secs(5)).await.unwrap();
        assert_eq!(app(&status(&node)), (true, true, 0));
        let reads = files.reads("/started");
        sleep(Duration::from_secs(5)).await;
        assert_eq!(files.reads("/started"), reads, "startup stops once passed");
        assert!(files.reads("/alive") >= 3 && files.reads("/ready") >= 3);
    });
}

#[test]
fn a_failing_liveness_probe_restarts_with_backoff_and_the_probe_grace() {
    run_paused(async {
        let files = Files::default();
        let mock = MockRuntime::builder().script("app", files.behaviour()).build();
        let graces = Arc::new(Mutex::new(Vec::new()));
        let g = graces.clone();
        let runtime = HookedRuntime::new(mock.clone(), move |call| {
            if let Some(r) = call.request::<StopContainerRequest>() {
                g.lock().unwrap().push(r.timeout);
            }
        });
        let events: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = events.clone();
        let node = TestNode::builder()
            .mock(mock)
            .runtime(runtime)
            .customize(move |b| {
                b.on_event(move |e| log.lock().unwrap().push((e.reason, e.message, e.involved.field_path)))
            })
            .start();
        node.set_pods(vec![web(|p| {
            let spec = p.spec.as_mut().unwrap();
            spec.termination_grace_period_seconds = Some(60);
            let mut probe = cat_probe("/alive", 1, 2);
            probe.termination_grace_period_seconds = Some(7);
            spec.containers[0].liveness_probe = Some(probe);
        })]);
        let mut at = Vec::new();
        for n in 1..=3 {
            node.wait_for_restart_count("default", "web", "app", n, Duration::from_secs(300))
                .await
                .unwrap();
            at.push(Instant::now());
        }
        assert_eq!(
            graces.lock().unwrap()[0],
            7,
            "probe-level terminationGracePeriodSeconds"
        );
        let events = events.lock().unwrap().clone();
        let path = Some("spec.containers{app}".to_string());
        let count = |reason: &str, message: &str| {
            events
                .iter()
                .filter(|e| (e.0.as_str(), e.1.as_str(), &e.2) == (reason, message, &path))
                .count()
        };
        assert!(count("Unhealthy", "Liveness probe failed: ") >= 6, "{events:?}");
        assert!(
            count("Killing", "Container app failed liveness probe, will be restarted") >= 3,
            "{events:?}"
        );
        let (first, second) = (at[1] - at[0], at[2] - at[1]);
        assert!(second > first, "restart backoff grows: {first:?} then {second:?}");
        // As upstream: the backoff is judged from the previous exited
        // instance, so the second restart is immediate and the third waits.
        assert!(second >= Duration::from_secs(10), "CrashLoopBackOff: {second:?}");
    });
}

#[test]
fn a_hanging_exec_probe_times_out_and_counts_as_a_failure() {
    run_paused(async {
        let behaviour = Behaviour::run_forever().exec_reply(&["hang"], ExecResult::hanging());
        let node = TestNode::with_mock(MockRuntime::builder().script("app", behaviour).build());
        node.set_pods(vec![web(|p| {
            p.spec.as_mut().unwrap().containers[0].liveness_probe = Some(Probe {
                exec: Some(ExecAction {
                    command: Some(vec!["hang".into()]),
                }),
                timeout_seconds: Some(2),
                period_seconds: Some(3),
                failure_threshold: Some(1),
                ..Default::default()
            });
        })]);
        node.wait_for_phase("default", "web", "Running", T).await.unwrap();
        let start = Instant::now();
        node.wait_for_restart_count("default", "web", "app", 1, T)
            .await
            .unwrap();
        let took = start.elapsed();
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(15),
            "{took:?}"
        );
    });
}

#[test]
fn panicking_probe_actors_do_not_flip_a_ready_container() {
    run_paused(async {
        let armed = Arc::new(AtomicBool::new(false));
        let probes = Arc::new(AtomicU32::new(0));
        let (a, n) = (armed.clone(), probes.clone());
        let behaviour = Behaviour::run_forever().exec(move |argv| {
            (argv.first().map(String::as_str) == Some("check")).then(|| {
                n.fetch_add(1, Ordering::SeqCst);
                if a.swap(false, Ordering::SeqCst) {
                    panic!("injected panic in a readiness probe");
                }
                ExecResult::exit(0)
            })
        });
        let published: Arc<Mutex<Vec<Arc<PodStatus>>>> = Arc::default();
        let log = published.clone();
        let node = TestNode::builder()
            .mock(MockRuntime::builder().script("app", behaviour).build())
            .customize(move |b| b.on_pod_status(move |c| log.lock().unwrap().push(c.status)))
            .start();
        node.set_pods(vec![web(|p| {
            p.spec.as_mut().unwrap().containers[0].readiness_probe = Some(Probe {
                exec: Some(ExecAction {
                    command: Some(vec!["check".into()]),
                }),
                period_seconds: Some(1),
                ..Default::default()
            });
        })]);
        wait_until(|| ready(&node), T).await.unwrap();
        let changes = published.lock().unwrap().len();

        armed.store(true, Ordering::SeqCst);
        node.kubelet().probes.inject_manager_panic();
        wait_until(|| !armed.load(Ordering::SeqCst), Duration::from_secs(5))
            .await
            .unwrap();
        let before = probes.load(Ordering::SeqCst);
        holds(&node, "Ready", Duration::from_secs(10), ready).await;
        assert!(
            probes.load(Ordering::SeqCst) >= before + 5,
            "the restarted worker probes on"
        );

        let tree = node.kubelet().tree();
        let worker = tree.get("root/probe-workers/probe-readiness-app.u-web").unwrap();
        assert!(worker.restarts >= 1, "{worker:?}");
        let manager = tree.get("root/prober").unwrap();
        assert!(manager.restarts >= 1, "{manager:?}");
        let not_ready = published.lock().unwrap()[changes..]
            .iter()
            .filter(|s| s.container_statuses.iter().flatten().any(|c| !c.ready))
            .count();
        assert_eq!(not_ready, 0, "no status with a not-ready container was published");
    });
}

#[test]
fn a_kubelet_restart_keeps_a_ready_container_ready() {
    run_paused(async {
        let behaviour = Behaviour::run_forever().exec_reply(&["check"], ExecResult::exit(0));
        let mock = MockRuntime::builder().script("app", behaviour).build();
        let spec = |p: &mut Pod| {
            p.spec.as_mut().unwrap().containers[0].readiness_probe = Some(Probe {
                exec: Some(ExecAction {
                    command: Some(vec!["check".into()]),
                }),
                period_seconds: Some(30),
                ..Default::default()
            });
        };
        let first = TestNode::with_mock(mock.clone());
        first.set_pods(vec![web(spec)]);
        wait_until(|| ready(&first), T).await.unwrap();
        let seen = status(&first);
        first.shutdown().await.unwrap();

        // The API still has the pod's last status; a new kubelet adopts the
        // running container and must not report it NotReady while its
        // readiness probe (period 30 s, jittered) has not run yet.
        let published: Arc<Mutex<Vec<Arc<PodStatus>>>> = Arc::default();
        let log = published.clone();
        let second = TestNode::builder()
            .mock(mock.clone())
            .customize(move |b| b.on_pod_status(move |c| log.lock().unwrap().push(c.status)))
            .start();
        second.set_pods(vec![web(|p| {
            spec(p);
            p.status = Some(seen.clone());
        })]);
        wait_until(|| !published.lock().unwrap().is_empty(), T).await.unwrap();
        holds(&second, "Ready", Duration::from_secs(40), ready).await;
        let statuses = published.lock().unwrap().clone();
        assert!(
            statuses.iter().all(|s| app(s) == (true, true, 0)),
            "never NotReady: {statuses:?}"
        );
        assert_eq!(mock.call_count("CreateContainer"), 1, "the container was adopted");
    });
}
