//! Ordered graceful shutdown.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{Log, Ping, ev, hanging, run, settle, worker};
use crate::actors::supervisor::{ChildState, ExitReason, SendError, SupervisorError, SupervisorSpec, shutdown_when};

#[test]
fn shutdown_stops_children_in_reverse_start_order() {
    run(|| async {
        let log = Log::default();
        let (a, c) = (worker("a", &log), worker("c", &log));
        let (a_ref, c_ref) = (a.child_ref(), c.child_ref());
        let root = SupervisorSpec::new("root")
            .child(a)
            .child(worker("b", &log))
            .child(SupervisorSpec::new("sub").child(c).child(worker("d", &log)))
            .child(worker("e", &log))
            .start_root();
        settle().await;
        // Siblings start in order; a nested supervisor's children start when
        // it first runs, i.e. after its later siblings were spawned.
        assert_eq!(log.take(), ev!["a+1", "b+1", "e+1", "c+1", "d+1"]);

        let started = Instant::now();
        let report = root.shutdown(Duration::from_secs(10)).await.unwrap();
        assert_eq!(log.events(), ev!["e-1", "d-1", "c-1", "b-1", "a-1"]);
        assert_eq!(report.stopped, ["root/e", "root/sub", "root/b", "root/a"]);
        assert!(report.killed.is_empty());
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "nobody waited for a timeout"
        );
        assert_eq!(root.exit_reason(), Some(ExitReason::Normal));
        assert!(root.tree().snapshot().iter().all(|i| i.state == ChildState::Stopped));
        assert_eq!(a_ref.send(Ping).await, Err(SendError::Closed));
        assert_eq!(
            c_ref.send(Ping).await,
            Err(SendError::Closed),
            "nested mailboxes close too"
        );
        assert!(matches!(
            root.shutdown(Duration::from_secs(1)).await,
            Err(SupervisorError::Unreachable(_))
        ));
    });
}

#[test]
fn shutdown_deadline_force_stops_a_hanging_child() {
    run(|| async {
        let log = Log::default();
        let root = SupervisorSpec::new("root")
            .child(worker("a", &log))
            .child(hanging("hang", &log))
            .child(worker("c", &log))
            .start_root();
        settle().await;
        log.take();

        let started = Instant::now();
        let report = root.shutdown(Duration::from_secs(2)).await.unwrap();
        let took = started.elapsed();
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_millis(2100),
            "{took:?}"
        );
        assert_eq!(report.stopped, ["root/c"]);
        // The hanging child ate the budget: it and what was left are dropped
        // (dropping still runs `stopped` on an actor that agrees to stop).
        assert_eq!(report.killed, ["root/hang", "root/a"]);
        assert_eq!(log.events(), ev!["c-1", "a-1"]);
        assert_eq!(root.exit_reason(), Some(ExitReason::Normal));
    });
}

#[test]
fn a_hanging_child_is_dropped_after_its_own_shutdown_timeout() {
    run(|| async {
        let log = Log::default();
        let root = SupervisorSpec::new("root")
            .child(worker("a", &log))
            .child(hanging("hang", &log).shutdown_timeout(Duration::from_secs(1)))
            .child(worker("c", &log))
            .start_root();
        settle().await;
        log.take();
        let started = Instant::now();
        let report = root.shutdown(Duration::from_secs(30)).await.unwrap();
        assert!(started.elapsed() < Duration::from_millis(1100));
        assert_eq!(report.stopped, ["root/c", "root/a"]);
        assert_eq!(report.killed, ["root/hang"]);
        assert_eq!(log.events(), ev!["c-1", "a-1"]);
    });
}

#[test]
fn shutdown_when_stops_the_tree_once_triggered() {
    run(|| async {
        let log = Log::default();
        let root = SupervisorSpec::new("root")
            .child(worker("a", &log))
            .child(worker("b", &log))
            .start_root();
        let (trigger, fired) = oneshot::channel::<()>();
        let waiter = {
            let root = root.clone();
            actix_rt::spawn(async move {
                shutdown_when(&root, Duration::from_secs(5), async {
                    let _ = fired.await;
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert_eq!(log.events(), ev!["a+1", "b+1"], "nothing happens before the trigger");
        trigger.send(()).unwrap();
        let report = waiter.await.unwrap().unwrap();
        assert_eq!(report.stopped, ["root/b", "root/a"]);
        assert_eq!(log.events(), ev!["a+1", "b+1", "b-1", "a-1"]);
    });
}
