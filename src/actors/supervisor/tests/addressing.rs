//! Stable addresses and mailbox backpressure.

use super::{Crash, Log, Ping, WhoAmI, ev, run, settle, worker};
use crate::actors::supervisor::{SendError, SupervisorSpec, TrySendError};

#[test]
fn child_ref_survives_restart_and_delivers_queued_messages() {
    run(|| async {
        let log = Log::default();
        let a = worker("a", &log);
        // Addresses exist before the child starts and never change.
        let a_ref = a.child_ref();
        let pings = a_ref.recipient::<Ping>();
        let root = SupervisorSpec::new("root").child(a).start_root();

        // Queued in this order before the instance runs: the crash kills it
        // with the rest still queued; the next instance handles them.
        let (crash, p1, p2, p3, who) = futures::join!(
            a_ref.send(Crash),
            a_ref.send(Ping),
            pings.send(Ping),
            a_ref.clone().send(Ping),
            a_ref.send(WhoAmI),
        );
        assert_eq!(crash, Err(SendError::Lost), "only the message being handled is lost");
        assert_eq!((p1, p2, p3, who), (Ok(1), Ok(2), Ok(3), Ok(2)));
        assert_eq!(log.events(), ev!["a+1", "a-1", "a+2"]);

        // Fire-and-forget messages queued across a restart are delivered too.
        a_ref.do_send(Crash).unwrap();
        pings.do_send(Ping).unwrap();
        a_ref.do_send(Ping).unwrap();
        settle().await;
        assert_eq!(a_ref.send(Ping).await, Ok(3), "instance 3 got both queued pings");
        assert_eq!(a_ref.send(WhoAmI).await, Ok(3));
        assert_eq!(root.tree().get("root/a").unwrap().restarts, 2);
    });
}

#[test]
fn full_mailbox_rejects_do_send() {
    run(|| async {
        let log = Log::default();
        let a = worker("a", &log).mailbox_capacity(2);
        let a_ref = a.child_ref();
        let _root = SupervisorSpec::new("root").child(a).start_root();
        settle().await;

        // No await in between: the actor cannot drain the mailbox meanwhile.
        assert_eq!(a_ref.do_send(Ping), Ok(()));
        assert_eq!(a_ref.do_send(Ping), Ok(()));
        assert_eq!((a_ref.queued(), a_ref.capacity()), (2, 2));
        assert_eq!(a_ref.do_send(Ping), Err(SendError::Full));
        assert_eq!(a_ref.recipient::<Ping>().do_send(Ping), Err(SendError::Full));
        match a_ref.try_send(Ping) {
            Err(TrySendError::Full(msg)) => assert_eq!(msg, Ping),
            other => panic!("expected Full, got {other:?}"),
        }
        settle().await;
        assert_eq!(a_ref.queued(), 0);
        assert_eq!(
            a_ref.send(Ping).await,
            Ok(3),
            "exactly the two accepted pings were handled"
        );
    });
}

#[test]
fn send_waits_for_room_instead_of_failing() {
    run(|| async {
        let log = Log::default();
        let a = worker("a", &log).mailbox_capacity(1);
        let a_ref = a.child_ref();
        let _root = SupervisorSpec::new("root").child(a).start_root();
        a_ref.do_send(Ping).unwrap();
        assert_eq!(a_ref.do_send(Ping), Err(SendError::Full));
        assert_eq!(a_ref.send(Ping).await, Ok(2));
    });
}
