//! The lease actor (with the node actor) against the test API server: the
//! Lease is created with its owner reference (added later when the Node comes
//! after it), renewed, and recovered after a conflict; node and lease resume
//! after the API server was away.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/node.rs"]
mod node;

use std::time::Duration;

use actix::Actor;
use actlet::cluster::node::NodeActor;
use apiserver::TestApiServer;
use cluster::{NODE, eventually, run};
use node::{LEASE_PATH, T, count, harness, lease_actor, ready_is, renew_time};
use serde_json::json;

#[test]
fn the_lease_is_created_owned_renewed_and_recovered_after_a_conflict() {
    run(|| async {
        let server = TestApiServer::start();
        let h = harness(&server).await;
        // The lease starts before the Node is registered: no owner yet.
        lease_actor(&h);
        let lease = eventually("lease created", T, || server.store().lease(NODE)).await;
        let spec = lease.spec.clone().unwrap_or_default();
        assert_eq!(spec.holder_identity.as_deref(), Some(NODE));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert!(lease.metadata.owner_references.is_none());

        NodeActor::new(h.deps.clone()).start();
        let node = eventually("node registered", T, || server.store().node(NODE)).await;
        let owner = eventually("owner reference added on renewal", T, || {
            server
                .store()
                .lease(NODE)?
                .metadata
                .owner_references?
                .into_iter()
                .next()
        })
        .await;
        assert_eq!((owner.kind.as_str(), owner.api_version.as_str()), ("Node", "v1"));
        assert_eq!(Some(owner.uid), node.metadata.uid);

        let t0 = renew_time(&server).unwrap_or_default();
        eventually("renewTime advances", T, || (renew_time(&server)? > t0).then_some(())).await;
        assert!(
            server
                .requests()
                .iter()
                .any(|r| r.method == "PUT" && r.path == LEASE_PATH && r.status == 200)
        );

        // Changed behind our back: our next PUT carries a stale resourceVersion.
        server
            .store()
            .patch(
                "leases",
                "kube-node-lease",
                NODE,
                None,
                "application/merge-patch+json",
                &json!({"metadata": {"labels": {"touched": "yes"}}}),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        eventually("a 409 on PUT", T, || {
            server
                .requests()
                .iter()
                .any(|r| r.method == "PUT" && r.path == LEASE_PATH && r.status == 409)
                .then_some(())
        })
        .await;
        let t1 = renew_time(&server).unwrap_or_default();
        eventually("renewed after the conflict", T, || {
            (renew_time(&server)? > t1).then_some(())
        })
        .await;
        let lease = server.store().lease(NODE).unwrap_or_else(|| panic!("no lease"));
        assert_eq!(
            lease
                .metadata
                .labels
                .unwrap_or_default()
                .get("touched")
                .map(String::as_str),
            Some("yes"),
            "renewed from the fresh lease"
        );
        assert_eq!(
            count(
                &server,
                "POST",
                "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
            ),
            1
        );
    });
}

#[test]
fn node_and_lease_resume_after_the_api_server_was_away() {
    run(|| async {
        let server = TestApiServer::start();
        let h = harness(&server).await;
        // Down from the start: registration and the lease wait for it.
        server.set_down(true);
        NodeActor::new(h.deps.clone()).start();
        lease_actor(&h);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(server.store().node(NODE).is_none());
        server.set_down(false);
        eventually("registered Ready once up", T, || ready_is(&server, "True")).await;
        eventually("lease with owner", T, || {
            server.store().lease(NODE)?.metadata.owner_references
        })
        .await;

        // Away again while the runtime goes down: both catch up afterwards.
        server.set_down(true);
        let before = renew_time(&server).unwrap_or_default();
        h.mock.set_down(true);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(ready_is(&server, "True").is_some(), "nothing written while away");
        server.set_down(false);
        let nr = eventually("NotReady written once back", T, || ready_is(&server, "False")).await;
        assert!(nr.message.unwrap_or_default().contains("container runtime is down"));
        eventually("lease renewed once back", T, || {
            (renew_time(&server)? > before).then_some(())
        })
        .await;
        h.mock.set_down(false);
        eventually("Ready again", T, || ready_is(&server, "True")).await;
    });
}
