//! A health endpoint must never stop pod management: with the healthz port
//! taken by another process, actlet keeps running, reports the server as
//! failing (an `ActorExhausted` Warning event on the node, the
//! `actlet_actor_exhausted` gauge, `/debug/actors`), and retries it every
//! 5 s until the port is free (upstream logs
//! the bind error and retries). Before restart backoff and criticality, the
//! root's intensity was exceeded within seconds and actlet exited.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::actors::supervisor::ChildState;
use actlet::cri::mock::MockRuntime;
use actlet::testing::run_paused;

#[test]
fn a_taken_healthz_port_is_retried_and_never_stops_the_node_agent() {
    run_paused(async {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mut config = actlet::KubeletConfig::new("node-a");
        config.root_dir = tmp.path().join("root");
        config.pod_logs_dir = tmp.path().join("logs");
        config.container_logs_dir = None;
        config.healthz_addr = Some(addr);
        let events = Arc::new(Mutex::new(Vec::new()));
        let record = events.clone();
        let kubelet = actlet::ActletBuilder::from_config(config)
            .runtime(MockRuntime::new())
            .on_event(move |e| record.lock().unwrap().push(e))
            .start()
            .unwrap();

        // Two minutes of failing binds: ~24 attempts, far over the root's
        // intensity (10 in 60 s) had the server been critical.
        tokio::time::sleep(Duration::from_secs(120)).await;
        let healthz = kubelet.tree().get("root/healthz").unwrap();
        assert!(!healthz.critical);
        assert!(healthz.exhausted, "reported as failing: {healthz:?}");
        assert!(healthz.restarts >= 20, "retried every 5 s: {}", healthz.restarts);
        let failure = healthz.last_failure.expect("its failure is kept");
        assert!(
            failure.reason.to_string().contains("cannot listen"),
            "names the cause: {}",
            failure.reason
        );
        // Told once, on the node, naming the child and its cause.
        let exhausted: Vec<_> = events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.reason == "ActorExhausted")
            .cloned()
            .collect();
        assert_eq!(exhausted.len(), 1, "one event per episode: {exhausted:?}");
        let event = &exhausted[0];
        assert_eq!(event.type_, actlet::messages::event::EventType::Warning);
        assert_eq!(event.involved.kind.as_deref(), Some("Node"));
        assert!(
            event.message.contains("root/healthz") && event.message.contains("cannot listen"),
            "{}",
            event.message
        );
        let sync_loop = kubelet.tree().get("root/sync-loop").unwrap();
        assert_eq!(sync_loop.state, ChildState::Running, "pods are still managed");

        // The port frees up: the next retry listens.
        drop(taken);
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(kubelet.tree().get("root/healthz").unwrap().state, ChildState::Running);
        assert_eq!(kubelet.healthz_addrs.get(), vec![addr]);
        kubelet.shutdown(Duration::from_secs(5)).await.unwrap();
    });
}
