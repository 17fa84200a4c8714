//! Pure: the node Lease's shape and renewal (upstream
//! `component-helpers/apimachinery/lease` controller with the kubelet's
//! `setNodeOwnerFunc`).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;

/// The namespace of node leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";
/// `nodeLeaseDurationSeconds` (40).
pub const LEASE_DURATION_SECONDS: i32 = 40;
/// Upstream renews every quarter of the duration: 10 s.
pub const RENEW_INTERVAL: Duration = Duration::from_secs(10);
/// Upstream `maxUpdateRetries`.
pub const MAX_UPDATE_RETRIES: usize = 5;

/// The owner reference to the Node (the lease goes with it).
pub fn node_owner(node_name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node_name.into(),
        uid: uid.into(),
        ..OwnerReference::default()
    }
}

fn set_owner(lease: &mut Lease, owner: Option<OwnerReference>) {
    let refs = lease.metadata.owner_references.get_or_insert_with(Vec::new);
    if refs.is_empty()
        && let Some(o) = owner
    {
        refs.push(o);
    }
    if refs.is_empty() {
        lease.metadata.owner_references = None;
    }
}

/// A new Lease held by `node` for `duration_seconds`, renewed `now`, owned
/// by the Node when its UID is known.
pub fn new_lease(node: &str, duration_seconds: i32, now: Timestamp, owner: Option<OwnerReference>) -> Lease {
    let mut lease = Lease {
        metadata: ObjectMeta {
            name: Some(node.into()),
            namespace: Some(LEASE_NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(node.into()),
            lease_duration_seconds: Some(duration_seconds),
            renew_time: Some(MicroTime(now)),
            ..LeaseSpec::default()
        }),
    };
    set_owner(&mut lease, owner);
    lease
}

/// `base` (the last Lease seen, with its resourceVersion) renewed `now`; an
/// owner reference is added when it has none and the Node's UID is known.
pub fn renewed(base: &Lease, now: Timestamp, owner: Option<OwnerReference>) -> Lease {
    let mut lease = base.clone();
    lease.spec.get_or_insert_with(LeaseSpec::default).renew_time = Some(MicroTime(now));
    set_owner(&mut lease, owner);
    lease
}

/// Upstream's ensure-lease backoff: 200 ms, doubling, at most 7 s.
#[derive(Clone, Debug)]
pub struct Backoff {
    sleep: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            sleep: Duration::from_millis(100),
        }
    }
}

impl Backoff {
    /// The next wait.
    pub fn next_wait(&mut self) -> Duration {
        self.sleep = (self.sleep * 2).min(Duration::from_secs(7));
        self.sleep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap_or_default()
    }

    #[test]
    fn a_new_lease_has_the_recorded_shape() {
        let l = new_lease("test-node", 40, t(0), Some(node_owner("test-node", "u1")));
        let v = serde_json::to_value(&l).unwrap_or_default();
        assert_eq!(v["metadata"]["namespace"], "kube-node-lease");
        assert_eq!(
            v["metadata"]["ownerReferences"],
            serde_json::json!([{"apiVersion": "v1", "kind": "Node", "name": "test-node", "uid": "u1"}])
        );
        assert_eq!(v["spec"]["holderIdentity"], "test-node");
        assert_eq!(v["spec"]["leaseDurationSeconds"], 40);
        assert_eq!(v["spec"]["renewTime"], "2023-11-14T22:13:20.000000Z");
        let no_owner = new_lease("n", 40, t(0), None);
        assert!(no_owner.metadata.owner_references.is_none());
    }

    #[test]
    fn renewal_moves_only_renew_time_and_fixes_a_missing_owner() {
        let mut base = new_lease("n", 40, t(0), None);
        base.metadata.resource_version = Some("7".into());
        base.spec.get_or_insert_default().holder_identity = Some("someone".into());
        let r = renewed(&base, t(10), Some(node_owner("n", "u")));
        assert_eq!(r.metadata.resource_version.as_deref(), Some("7"));
        let spec = r.spec.clone().unwrap_or_default();
        assert_eq!(spec.renew_time, Some(MicroTime(t(10))));
        assert_eq!(
            spec.holder_identity.as_deref(),
            Some("someone"),
            "copied from base like upstream"
        );
        assert_eq!(r.metadata.owner_references.map(|o| o[0].uid.clone()), Some("u".into()));
        let owned = new_lease("n", 40, t(0), Some(node_owner("n", "old")));
        let r = renewed(&owned, t(1), Some(node_owner("n", "new")));
        assert_eq!(
            r.metadata.owner_references.map(|o| o[0].uid.clone()),
            Some("old".into())
        );
    }

    #[test]
    fn backoff_doubles_from_200ms_to_7s() {
        let mut b = Backoff::default();
        let waits: Vec<u128> = (0..8).map(|_| b.next_wait().as_millis()).collect();
        assert_eq!(waits, [200, 400, 800, 1600, 3200, 6400, 7000, 7000]);
    }
}
