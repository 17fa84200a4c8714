//! Strategies, intensity and escalation.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Crash, Log, Ping, Plain, WhoAmI, ev, paused_system, run, settle, worker};
use crate::actors::supervisor::{ChildSpec, ChildState, ExitReason, RootFailure, SendError, Strategy, SupervisorSpec};

/// Crashes child `name` of a three- or four-worker root with `strategy`,
/// returns the events logged after the initial starts.
async fn crash_one(strategy: Strategy, names: &[&'static str], victim: &'static str) -> Vec<String> {
    let log = Log::default();
    let mut spec = SupervisorSpec::new("root").strategy(strategy);
    let mut victim_ref = None;
    for &name in names {
        let child = worker(name, &log);
        if name == victim {
            victim_ref = Some(child.child_ref());
        }
        spec = spec.child(child);
    }
    let root = spec.start_root();
    settle().await;
    assert_eq!(log.take(), names.iter().map(|n| format!("{n}+1")).collect::<Vec<_>>());
    let victim_ref = victim_ref.expect("victim is a child");
    assert_eq!(victim_ref.send(Crash).await, Err(SendError::Lost));
    settle().await;
    assert_eq!(root.exit_reason(), None, "no escalation");
    log.take()
}

#[test]
fn one_for_one_restarts_only_the_failed_child() {
    run(|| async {
        let events = crash_one(Strategy::OneForOne, &["a", "b", "c"], "b").await;
        assert_eq!(events, ev!["b-1", "b+2"]);
    });
}

#[test]
fn one_for_all_restarts_every_child_in_start_order() {
    run(|| async {
        let events = crash_one(Strategy::OneForAll, &["a", "b", "c"], "b").await;
        // b died (its stopped() ran on drop); the others stop in reverse order,
        // then everyone starts again in start order.
        assert_eq!(events, ev!["b-1", "c-1", "a-1", "a+2", "b+2", "c+2"]);
    });
}

#[test]
fn rest_for_one_restarts_the_failed_child_and_later_siblings() {
    run(|| async {
        let events = crash_one(Strategy::RestForOne, &["a", "b", "c", "d"], "b").await;
        assert_eq!(events, ev!["b-1", "d-1", "c-1", "b+2", "c+2", "d+2"]);
    });
}

#[test]
fn intensity_exceeded_escalates_to_parent() {
    run(|| async {
        let log = Log::default();
        let leaf = worker("leaf", &log);
        let leaf_ref = leaf.child_ref();
        let failures = Arc::new(Mutex::new(Vec::<RootFailure>::new()));
        let seen = failures.clone();
        let root = SupervisorSpec::new("root")
            .intensity(5, Duration::from_secs(5))
            .child(
                SupervisorSpec::new("mid")
                    .intensity(2, Duration::from_secs(5))
                    .child(leaf),
            )
            .child(worker("sib", &log))
            .on_root_failure(move |f| seen.lock().unwrap().push(f.clone()))
            .start_root();
        settle().await;
        for _ in 0..3 {
            assert_eq!(leaf_ref.send(Crash).await, Err(SendError::Lost));
            settle().await;
        }
        // Two restarts are within mid's limit; the third crash makes mid give
        // up, and root (one-for-one) restarts mid, which starts a fresh leaf.
        assert_eq!(
            log.events(),
            ev![
                "sib+1", "leaf+1", "leaf-1", "leaf+2", "leaf-2", "leaf+3", "leaf-3", "leaf+4"
            ]
        );
        let mid = root.tree().get("root/mid").unwrap();
        assert_eq!((mid.restarts, mid.state), (1, ChildState::Running));
        let ExitReason::Failed(why) = mid.last_failure.unwrap().reason else {
            panic!("mid should have failed");
        };
        assert!(why.contains("supervisor root/mid: restart intensity exceeded"), "{why}");
        assert!(why.contains("root/mid/leaf panicked: boom in leaf"), "{why}");
        let leaf_info = root.tree().get("root/mid/leaf").unwrap();
        assert_eq!(
            (leaf_info.restarts, leaf_info.generation),
            (0, 1),
            "fresh supervisor instance"
        );
        assert_eq!(root.tree().get("root/sib").unwrap().restarts, 0);
        assert_eq!(
            leaf_ref.send(WhoAmI).await,
            Ok(4),
            "the address survived the subtree restart"
        );
        assert!(failures.lock().unwrap().is_empty());
        assert_eq!(root.exit_reason(), None);
    });
}

#[test]
fn root_escalation_invokes_root_failure_hook() {
    run(|| async {
        let log = Log::default();
        let leaf = worker("leaf", &log);
        let leaf_ref = leaf.child_ref();
        let failures = Arc::new(Mutex::new(Vec::<RootFailure>::new()));
        let seen = failures.clone();
        let root = SupervisorSpec::new("root")
            .intensity(1, Duration::from_secs(5))
            .child(leaf)
            .on_root_failure(move |f| seen.lock().unwrap().push(f.clone()))
            .start_root();
        settle().await;
        let _ = leaf_ref.send(Crash).await;
        settle().await;
        let _ = leaf_ref.send(Crash).await;
        let exit = root.wait().await;
        let failures = failures.lock().unwrap().clone();
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].supervisor, "root");
        assert_eq!(failures[0].reason, exit);
        let ExitReason::Failed(why) = exit else {
            panic!("root should have failed")
        };
        assert!(
            why.contains("restart intensity exceeded (2 restarts within 5s, limit 1)"),
            "{why}"
        );
        assert!(why.contains("last failure: root/leaf panicked: boom in leaf"), "{why}");
        assert_eq!(log.events(), ev!["leaf+1", "leaf-1", "leaf+2", "leaf-2"]);
        assert_eq!(
            leaf_ref.do_send(Ping),
            Err(SendError::Closed),
            "the dead tree's mailboxes are closed"
        );
        assert_eq!(root.tree().get("root").unwrap().state, ChildState::Failed);
        assert!(
            actix::System::try_current().is_some(),
            "the hook replaced stopping the System"
        );
    });
}

#[test]
fn default_root_failure_hook_stops_the_system_with_code_1() {
    let system = paused_system();
    let log = Log::default();
    system.block_on(async {
        let leaf = worker("leaf", &log);
        let leaf_ref = leaf.child_ref();
        let _root = SupervisorSpec::new("root")
            .intensity(0, Duration::from_secs(5))
            .child(leaf)
            .start_root();
        leaf_ref.do_send(Crash).unwrap();
    });
    assert_eq!(system.run_with_code().unwrap(), 1);
    assert_eq!(log.events(), ev!["leaf+1", "leaf-1"]);
}

#[test]
fn restarts_spaced_wider_than_the_window_do_not_escalate() {
    run(|| async {
        let log = Log::default();
        let a = worker("a", &log);
        let a_ref = a.child_ref();
        let root = SupervisorSpec::new("root")
            .intensity(1, Duration::from_secs(5))
            .child(a)
            .on_root_failure(|_| {})
            .start_root();
        for _ in 0..3 {
            let _ = a_ref.send(Crash).await;
            tokio::time::sleep(Duration::from_secs(6)).await;
        }
        assert_eq!(root.exit_reason(), None);
        assert_eq!(a_ref.send(WhoAmI).await, Ok(4));
        // Two quick crashes do exceed it.
        let _ = a_ref.send(Crash).await;
        settle().await;
        let _ = a_ref.send(Crash).await;
        assert!(matches!(root.wait().await, ExitReason::Failed(_)));
    });
}

#[test]
fn a_factory_that_keeps_panicking_escalates_instead_of_looping() {
    run(|| async {
        let built = Arc::new(AtomicU32::new(0));
        let calls = built.clone();
        let flaky = ChildSpec::new("flaky", move || {
            if calls.fetch_add(1, Ordering::SeqCst) > 0 {
                panic!("boom: cannot rebuild");
            }
            Plain
        });
        let flaky_ref = flaky.child_ref();
        let root = SupervisorSpec::new("root")
            .intensity(3, Duration::from_secs(5))
            .child(flaky)
            .on_root_failure(|_| {})
            .start_root();
        assert_eq!(flaky_ref.send(Ping).await, Ok(42));
        flaky_ref.do_send(Crash).unwrap();
        assert!(matches!(root.wait().await, ExitReason::Failed(why) if why.contains("panicked: boom: cannot rebuild")));
        // First build, then one failed rebuild per tolerated restart plus the one that exceeded.
        assert_eq!(built.load(Ordering::SeqCst), 1 + 3);
    });
}
