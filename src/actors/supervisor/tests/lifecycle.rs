//! Panic containment, fresh state, restart policies, dynamic children and
//! the live tree.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use actix::{Actor, Arbiter};
use tokio::sync::oneshot;

use super::{Crash, FailWith, Log, Ping, Plain, Quit, WhoAmI, ev, run, settle, worker};
use crate::actors::supervisor::{
    ChildSpec, ChildState, CloseCount, ExitReason, GetTree, KillChild, RestartPolicy, SendError, StartChild, StopChild,
    SupervisorError, SupervisorSpec,
};

#[test]
fn panic_in_handler_is_contained_and_arbiter_survives() {
    run(|| async {
        let log = Log::default();
        let (a, b) = (worker("a", &log), worker("b", &log));
        let (a_ref, b_ref) = (a.child_ref(), b.child_ref());
        let root = SupervisorSpec::new("root").child(a).child(b).start_root();
        let plain = Plain.start(); // unsupervised, same arbiter
        assert_eq!(b_ref.send(Ping).await, Ok(1));

        assert_eq!(
            a_ref.send(Crash).await,
            Err(SendError::Lost),
            "the panicking request fails"
        );
        settle().await;
        // Same arbiter, same thread: the sibling (with its state), an
        // unsupervised actor and the arbiter itself all carry on.
        assert_eq!(b_ref.send(Ping).await, Ok(2));
        assert_eq!(plain.send(Ping).await, Ok(42));
        assert_eq!(actix_rt::spawn(async { 7 }).await.unwrap(), 7);
        assert!(Arbiter::current().spawn(async {}));
        // And the panicked child is back.
        assert_eq!(a_ref.send(WhoAmI).await, Ok(2));
        assert_eq!(log.events(), ev!["a+1", "b+1", "a-1", "a+2"]);
        let a_info = root.tree().get("root/a").unwrap();
        assert_eq!((a_info.state, a_info.restarts), (ChildState::Running, 1));
        assert_eq!(root.exit_reason(), None);
    });
}

#[test]
fn panic_on_a_dedicated_arbiter_leaves_its_thread_alive() {
    // Two threads: paused time would jump ahead while this one waits for the
    // other, so this test runs on real time (no sleeps, only a safety timeout).
    actix_rt::System::new().block_on(async {
        tokio::time::timeout(Duration::from_secs(30), dedicated_arbiter_scenario())
            .await
            .expect("the test stalled");
    });
}

async fn dedicated_arbiter_scenario() {
    let log = Log::default();
    let a = worker("a", &log);
    let a_ref = a.child_ref();
    let arbiter = Arbiter::new();
    let (tx, rx) = oneshot::channel();
    assert!(arbiter.spawn(async move {
        let _ = tx.send(SupervisorSpec::new("root").child(a).start_root());
    }));
    let root = rx.await.unwrap();
    assert_eq!(a_ref.send(Crash).await, Err(SendError::Lost));
    // Queued behind the crash, answered by the fresh instance on that arbiter.
    assert_eq!(a_ref.send(WhoAmI).await, Ok(2));
    let (alive_tx, alive_rx) = oneshot::channel();
    assert!(arbiter.spawn(async move {
        let _ = alive_tx.send(std::thread::current().id());
    }));
    assert_ne!(alive_rx.await.unwrap(), std::thread::current().id());
    assert_eq!(root.tree().get("root/a").unwrap().restarts, 1);
    arbiter.stop();
    arbiter.join().unwrap();
}

#[test]
fn restarted_child_gets_fresh_state_from_factory() {
    run(|| async {
        let log = Log::default();
        let built = Arc::new(AtomicU32::new(0));
        let counter = built.clone();
        let inner = worker("c", &log);
        let c_ref = inner.child_ref();
        // Count factory calls on top of the worker's own numbering.
        let root = SupervisorSpec::new("root").child(inner).start_root();
        let d = ChildSpec::new("d", move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Plain
        });
        let d_ref = d.child_ref();
        root.start_child(d).await.unwrap();

        for expected in 1..=3 {
            assert_eq!(c_ref.send(Ping).await, Ok(expected));
        }
        let _ = c_ref.send(Crash).await;
        assert_eq!(c_ref.send(Ping).await, Ok(1), "the count restarted from zero");
        assert_eq!(c_ref.send(WhoAmI).await, Ok(2), "a new value from the factory");
        assert_eq!(log.events(), ev!["c+1", "c-1", "c+2"]);

        assert_eq!(d_ref.send(Ping).await, Ok(42));
        assert_eq!(built.load(Ordering::SeqCst), 1);
        root.stop_child("d").await.unwrap();
        assert_eq!(built.load(Ordering::SeqCst), 1, "stopping on purpose builds nothing");
    });
}

#[test]
fn transient_child_not_restarted_on_normal_exit() {
    run(|| async {
        let log = Log::default();
        let t = worker("t", &log).restart(RestartPolicy::Transient);
        let u = worker("u", &log).restart(RestartPolicy::Transient);
        let (t_ref, u_ref) = (t.child_ref(), u.child_ref());
        let root = SupervisorSpec::new("root").child(t).child(u).start_root();
        settle().await;

        assert_eq!(t_ref.send(Quit).await, Ok(()));
        settle().await;
        let t_info = root.tree().get("root/t").unwrap();
        assert_eq!(
            (t_info.state, t_info.restarts, t_info.last_failure),
            (ChildState::Stopped, 0, None)
        );
        assert_eq!(t_ref.send(Ping).await, Err(SendError::Closed));
        assert!(!t_ref.is_open());

        // An abnormal exit through fail() (no panic) does restart it.
        assert_eq!(u_ref.send(FailWith("disk full")).await, Ok(()));
        settle().await;
        let u_info = root.tree().get("root/u").unwrap();
        assert_eq!(u_info.restarts, 1);
        assert_eq!(
            u_info.last_failure.unwrap().reason,
            ExitReason::Failed("disk full".into())
        );
        assert_eq!(log.events(), ev!["t+1", "u+1", "t-1", "u-1", "u+2"]);
    });
}

#[test]
fn temporary_child_never_restarted() {
    run(|| async {
        let log = Log::default();
        let t = worker("t", &log).restart(RestartPolicy::Temporary);
        let t_ref = t.child_ref();
        let root = SupervisorSpec::new("root")
            .child(t)
            .child(worker("p", &log))
            .start_root();
        settle().await;
        let _ = t_ref.send(Crash).await;
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(log.events(), ev!["t+1", "p+1", "t-1"]);
        let info = root.tree().get("root/t").unwrap();
        assert_eq!((info.state, info.restarts), (ChildState::Failed, 0));
        assert_eq!(
            info.last_failure.unwrap().reason,
            ExitReason::Panicked("boom in t".into())
        );
        assert_eq!(t_ref.send(Ping).await, Err(SendError::Closed));
    });
}

#[test]
fn stopping_a_child_on_purpose_does_not_count_as_restart() {
    run(|| async {
        let log = Log::default();
        let a = worker("a", &log);
        let a_ref = a.child_ref();
        let root = SupervisorSpec::new("root")
            .intensity(1, Duration::from_secs(60))
            .child(a)
            .on_root_failure(|_| {})
            .start_root();
        for _ in 0..3 {
            let x = worker("x", &log);
            let x_ref = x.child_ref();
            assert_eq!(root.start_child(x).await.unwrap(), "root/x");
            assert_eq!(x_ref.send(Ping).await, Ok(1));
            assert_eq!(root.stop_child("x").await.unwrap(), ExitReason::Normal);
            assert!(
                root.tree().get("root/x").is_none(),
                "a stopped dynamic child is forgotten"
            );
            assert_eq!(x_ref.send(Ping).await, Err(SendError::Closed));
        }
        let _ = a_ref.send(Crash).await; // 1 restart: within the limit of 1
        settle().await;
        assert_eq!(root.exit_reason(), None);
        assert_eq!(root.tree().get("root/a").unwrap().restarts, 1);
        let _ = a_ref.send(Crash).await; // the second one exceeds it
        assert!(matches!(root.wait().await, ExitReason::Failed(_)));
        assert_eq!(&log.events()[..7], ev!["a+1", "x+1", "x-1", "x+1", "x-1", "x+1", "x-1"]);
    });
}

#[test]
fn close_counts_see_retired_and_lost_children_but_not_restarts() {
    run(|| async {
        let log = Log::default();
        let closes = CloseCount::default();
        let sub = SupervisorSpec::new("sub").into_child_spec();
        let sub_ref = sub.child_ref();
        let root = SupervisorSpec::new("root").child(sub).start_root();
        let (x, y) = (worker("x", &log).count_closes(closes.clone()), worker("y", &log));
        // A later capacity keeps the counter.
        let y = y.count_closes(closes.clone()).mailbox_capacity(8);
        let (x_ref, y_ref) = (x.child_ref(), y.child_ref());
        sub_ref.send(StartChild(x.into())).await.unwrap().unwrap();
        sub_ref.send(StartChild(y.into())).await.unwrap().unwrap();
        assert_eq!(x_ref.send(Ping).await, Ok(1));

        let _ = x_ref.send(Crash).await;
        settle().await;
        assert_eq!(x_ref.send(Ping).await, Ok(1), "restarted: a fresh instance");
        assert_eq!(closes.get(), 0, "a restart keeps the mailbox open");

        sub_ref.send(StopChild("y".into())).await.unwrap().unwrap();
        assert_eq!((closes.get(), y_ref.send(Ping).await), (1, Err(SendError::Closed)));

        // The sub-supervisor dies: its dynamic children are lost with it.
        root.addr().send(KillChild("sub".into())).await.unwrap().unwrap();
        settle().await;
        assert_eq!(x_ref.send(Ping).await, Err(SendError::Closed));
        assert_eq!(closes.get(), 2, "each mailbox's close is counted once");
    });
}

#[test]
fn dynamic_children_reject_duplicates_and_report_factory_panics() {
    run(|| async {
        let log = Log::default();
        let root = SupervisorSpec::new("root").child(worker("a", &log)).start_root();
        assert!(matches!(
            root.start_child(worker("a", &log)).await,
            Err(SupervisorError::AlreadyExists(name)) if name == "a"
        ));
        let bad = ChildSpec::<Plain>::new("bad", || panic!("boom in factory"));
        match root.start_child(bad).await {
            Err(SupervisorError::StartFailed { name, reason }) => {
                assert_eq!(
                    (name.as_str(), reason),
                    ("bad", ExitReason::Panicked("boom in factory".into()))
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(root.tree().get("root/bad").is_none());
        assert!(matches!(
            root.stop_child("nope").await,
            Err(SupervisorError::NotFound(_))
        ));
        assert_eq!(root.exit_reason(), None);
    });
}

#[test]
fn tree_snapshot_reports_restart_counts_and_last_failure() {
    run(|| async {
        let log = Log::default();
        let (a, b) = (worker("a", &log), worker("b", &log));
        let (a_ref, b_ref) = (a.child_ref(), b.child_ref());
        let root = SupervisorSpec::new("root")
            .child(a)
            .child(b)
            .child(worker("c", &log))
            .start_root();
        for _ in 0..2 {
            let _ = a_ref.send(Crash).await;
            settle().await;
        }
        b_ref.send(FailWith("disk full")).await.unwrap();
        settle().await;

        // Any actor holding the root's address can ask for the tree.
        let tree = root.addr().send(GetTree).await.unwrap();
        assert_eq!(tree, root.tree().snapshot());
        let paths: Vec<&str> = tree.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, ["root", "root/a", "root/b", "root/c"]);
        let (sup, a, b, c) = (&tree[0], &tree[1], &tree[2], &tree[3]);
        assert_eq!((sup.kind, sup.state), ("Supervisor", ChildState::Running));
        assert_eq!((a.kind, a.name.as_str(), a.state), ("Worker", "a", ChildState::Running));
        assert_eq!((a.restarts, a.restarts_in_window, a.generation), (2, 2, 3));
        assert_eq!(
            a.last_failure.as_ref().unwrap().reason,
            ExitReason::Panicked("boom in a".into())
        );
        assert_eq!((b.restarts, b.generation), (1, 2));
        assert_eq!(
            b.last_failure.as_ref().unwrap().reason,
            ExitReason::Failed("disk full".into())
        );
        assert_eq!((c.restarts, c.generation, c.last_failure.clone()), (0, 1, None));
        assert!(a.started_at.is_some() && a.policy == RestartPolicy::Permanent);
    });
}

#[test]
fn tree_watchers_never_see_a_failed_instance_reported_running() {
    run(|| async {
        let log = Log::default();
        let a = worker("a", &log);
        let a_ref = a.child_ref();
        let root = SupervisorSpec::new("root").child(a).start_root();
        settle().await;
        let mut changes = root.tree().subscribe();
        let _ = a_ref.send(Crash).await;
        settle().await;
        let mut seen = vec![];
        while let Ok(info) = changes.try_recv() {
            if info.path == "root/a" {
                seen.push((info.state, info.last_failure.is_some(), info.generation));
            }
        }
        // First the failure with the state it leads to, then the new instance.
        assert_eq!(seen.first(), Some(&(ChildState::Restarting, true, 1)), "{seen:?}");
        assert_eq!(seen.last(), Some(&(ChildState::Running, true, 2)), "{seen:?}");
        assert!(
            !seen
                .iter()
                .any(|(state, failed, generation)| *state == ChildState::Running && *failed && *generation == 1),
            "{seen:?}"
        );
    });
}
