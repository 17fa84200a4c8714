//! Restart backoff and criticality, as a truth table over scenarios:
//! {critical, non-critical} × {first failure, consecutive failures, after a
//! quiet period} × {under, over the intensity}.

use std::time::Duration;

use super::{Crash, Log, Ping, WhoAmI, run, settle, worker};
use crate::actors::supervisor::{ChildState, Criticality, RestartBackoff, StopChild, SupervisorSpec};

const BACKOFF: RestartBackoff = RestartBackoff {
    initial: Duration::from_secs(1),
    max: Duration::from_secs(8),
    reset_after: Duration::from_secs(30),
};

#[test]
fn critical_consecutive_failures_wait_longer_each_time() {
    run(|| async {
        let log = Log::default();
        let spec = worker("a", &log).backoff(BACKOFF);
        let a = spec.child_ref();
        let root = SupervisorSpec::new("root")
            .intensity(10, Duration::from_secs(60))
            .child(spec)
            .start_root();
        let state = || root.tree().get("root/a").unwrap().state;
        let _ = a.send(Crash).await;
        settle().await;
        assert_eq!(state(), ChildState::Running, "first failure: restarted at once");
        let _ = a.send(Crash).await;
        settle().await;
        assert_eq!(state(), ChildState::Restarting, "second: waits 1 s");
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(state(), ChildState::Running);
        let _ = a.send(Crash).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(state(), ChildState::Restarting, "third: waits 2 s");
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(state(), ChildState::Running);
        // Messages sent during the backoff wait in the mailbox for the next instance.
        assert_eq!(a.send(WhoAmI).await, Ok(4));
        assert_eq!(root.exit_reason(), None);
    });
}

#[test]
fn a_quiet_period_resets_the_backoff() {
    run(|| async {
        let log = Log::default();
        let spec = worker("a", &log).backoff(BACKOFF);
        let a = spec.child_ref();
        let root = SupervisorSpec::new("root")
            .intensity(10, Duration::from_secs(60))
            .child(spec)
            .start_root();
        for _ in 0..3 {
            let _ = a.send(Crash).await;
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        // Ran fine for longer than reset_after: the next failure is a first one.
        tokio::time::sleep(Duration::from_secs(31)).await;
        let _ = a.send(Crash).await;
        settle().await;
        assert_eq!(root.tree().get("root/a").unwrap().state, ChildState::Running);
    });
}

#[test]
fn intensity_counts_restarts_that_ran_not_failures_waiting_for_backoff() {
    run(|| async {
        let log = Log::default();
        let backoff = RestartBackoff {
            initial: Duration::from_secs(2),
            ..BACKOFF
        };
        let spec = worker("a", &log).backoff(backoff);
        let a = spec.child_ref();
        let root = SupervisorSpec::new("root")
            .intensity(3, Duration::from_secs(5))
            .child(spec)
            .start_root();
        // Restarts run at t=0, 2, 6, 14: never more than 3 within 5 s, so
        // five failures in a row do not escalate (without backoff they would).
        for _ in 0..5 {
            let _ = a.send(Crash).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(root.exit_reason(), None);
        assert_eq!(a.send(Ping).await, Ok(1), "running again");
    });
}

#[test]
fn critical_child_over_intensity_escalates() {
    run(|| async {
        let log = Log::default();
        let spec = worker("a", &log).backoff(RestartBackoff::NONE);
        let a = spec.child_ref();
        let root = SupervisorSpec::new("root")
            .intensity(2, Duration::from_secs(60))
            .child(spec)
            .start_root();
        for _ in 0..3 {
            let _ = a.send(Crash).await;
            settle().await;
        }
        assert!(root.exit_reason().is_some(), "escalated");
    });
}

#[test]
fn non_critical_child_over_intensity_is_exhausted_and_retried_while_siblings_run() {
    run(|| async {
        let log = Log::default();
        let server = worker("healthz", &log)
            .backoff(BACKOFF)
            .criticality(Criticality::NonCritical);
        let core = worker("core", &log).backoff(RestartBackoff::NONE);
        let (server_ref, core_ref) = (server.child_ref(), core.child_ref());
        let root = SupervisorSpec::new("root")
            .intensity(2, Duration::from_secs(60))
            .child(core)
            .child(server)
            .start_root();
        let info = || root.tree().get("root/healthz").unwrap();
        settle().await;
        assert!(!info().critical && root.tree().get("root/core").unwrap().critical);
        for _ in 0..6 {
            let _ = server_ref.send(Crash).await;
            tokio::time::sleep(Duration::from_secs(9)).await;
        }
        assert_eq!(root.exit_reason(), None, "a non-critical child never escalates");
        assert!(info().exhausted, "reported as exhausted");
        assert_eq!(core_ref.send(Ping).await, Ok(1), "the core child kept its state");
        // Its restarts did not use up the supervisor's intensity: the core
        // child still gets its two restarts.
        for _ in 0..2 {
            let _ = core_ref.send(Crash).await;
            settle().await;
        }
        assert_eq!(root.exit_reason(), None);
        // Retried at the longest backoff, then healthy again after reset_after.
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert_eq!(info().state, ChildState::Running);
        tokio::time::sleep(Duration::from_secs(31)).await;
        assert!(!info().exhausted, "ran for reset_after: no longer exhausted");
    });
}

#[test]
fn stopping_a_child_during_its_backoff_cancels_the_restart() {
    run(|| async {
        let log = Log::default();
        let spec = worker("a", &log).backoff(BACKOFF);
        let a = spec.child_ref();
        let root = SupervisorSpec::new("root")
            .intensity(10, Duration::from_secs(60))
            .child(spec)
            .start_root();
        for _ in 0..2 {
            let _ = a.send(Crash).await;
            settle().await;
        }
        assert_eq!(root.tree().get("root/a").unwrap().state, ChildState::Restarting);
        root.addr().send(StopChild("a".into())).await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(root.tree().get("root/a").unwrap().state, ChildState::Stopped);
        assert!(!a.is_open(), "retired, not restarted");
    });
}
