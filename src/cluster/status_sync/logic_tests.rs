use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use tokio::time::Instant;

use super::*;
use crate::kuberuntime::pod_status::{RuntimePodStatus, SandboxState, SandboxStatus};
use crate::messages::pod_update::PodSource;
use crate::pleg::cache::CacheEntry;

fn now() -> Timestamp {
    Timestamp::from_second(1_000).unwrap_or_else(|e| panic!("{e}"))
}

fn pod(name: &str, uid: &str, mirror: bool) -> Pod {
    let mut v = json!({"metadata": {"name": name, "namespace": "default", "uid": uid}});
    if mirror {
        v["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "h1"});
    }
    serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
}

fn versioned(version: u64, phase: &str) -> VersionedStatus {
    VersionedStatus {
        status: Arc::new(PodStatus {
            phase: Some(phase.into()),
            ..Default::default()
        }),
        version,
        pod_name: "cached".into(),
        pod_namespace: "ns".into(),
    }
}

fn desired(p: Pod, source: PodSource) -> DesiredPod {
    DesiredPod {
        pod: Arc::new(p),
        source,
    }
}

#[test]
fn api_pods_write_to_themselves_and_static_pods_to_their_mirror() {
    let mirrors = MirrorPods::new();
    let uid = PodUid::from("u1");
    let api = desired(pod("web", "u1", false), PodSource::Api);
    assert_eq!(
        resolve_target(&uid, Some(&api), &versioned(1, "Running"), &mirrors),
        Target::Pod {
            namespace: "default".into(),
            name: "web".into(),
            uid: "u1".into()
        }
    );
    let stat = desired(pod("static-web", "u1", false), PodSource::File);
    assert_eq!(
        resolve_target(&uid, Some(&stat), &versioned(1, "Running"), &mirrors),
        Target::Nowhere
    );
    mirrors.upsert(Arc::new(pod("static-web", "m1", true)));
    assert_eq!(
        resolve_target(&uid, Some(&stat), &versioned(1, "Running"), &mirrors),
        Target::Mirror {
            namespace: "default".into(),
            name: "static-web".into(),
            uid: "m1".into()
        }
    );
    // Unknown to the pod manager: the name the status was cached under, if any.
    let mut unnamed = versioned(1, "Running");
    unnamed.pod_name.clear();
    assert_eq!(resolve_target(&uid, None, &unnamed, &mirrors), Target::Nowhere);
    assert_eq!(
        resolve_target(&uid, None, &versioned(1, "Running"), &mirrors),
        Target::Pod {
            namespace: "ns".into(),
            name: "cached".into(),
            uid: "u1".into()
        }
    );
}

#[test]
fn a_recreated_pod_is_not_written_but_a_recreated_mirror_is() {
    let target = Target::Pod {
        namespace: "default".into(),
        name: "web".into(),
        uid: "u1".into(),
    };
    assert!(accepts(&target, &pod("web", "u1", false)));
    assert!(!accepts(&target, &pod("web", "u2", false)));
    let mirror = Target::Mirror {
        namespace: "default".into(),
        name: "s".into(),
        uid: "m1".into(),
    };
    assert!(accepts(&mirror, &pod("s", "m2", true)), "any mirror pod of that name");
    assert!(!accepts(&mirror, &pod("s", "x", false)), "not a mirror pod");
}

fn entry(status: Option<RuntimePodStatus>, error: Option<&str>) -> CacheEntry {
    CacheEntry {
        status: status.map(Arc::new),
        error: error.map(str::to_string),
        modified: Instant::now(),
    }
}

#[test]
fn running_containers_or_ready_sandboxes_could_run() {
    let could_have_running_containers =
        |e: Option<&CacheEntry>| e.is_some_and(CacheEntry::could_have_running_containers);
    assert!(!could_have_running_containers(None));
    let empty = RuntimePodStatus::empty("u1".into(), "p", "default");
    assert!(!could_have_running_containers(Some(&entry(Some(empty.clone()), None))));
    assert!(could_have_running_containers(Some(&entry(None, Some("cri down")))));
    let mut sandbox = empty.clone();
    sandbox.sandboxes.push(SandboxStatus {
        id: "s".into(),
        state: SandboxState::Ready,
        created_at: now(),
        attempt: 0,
        ips: vec![],
        host_network: false,
    });
    assert!(could_have_running_containers(Some(&entry(Some(sandbox.clone()), None))));
    sandbox.sandboxes[0].state = SandboxState::NotReady;
    assert!(!could_have_running_containers(Some(&entry(Some(sandbox), None))));
}

#[test]
fn only_stopped_deleting_api_pods_with_their_latest_status_are_deleted() {
    let mut deleting = pod("web", "u1", false);
    deleting.metadata.deletion_timestamp = Some(Time(now()));
    assert!(can_be_deleted(&deleting, false, true));
    assert!(!can_be_deleted(&deleting, true, true), "still running");
    assert!(!can_be_deleted(&deleting, false, false), "latest status not written");
    assert!(
        !can_be_deleted(&pod("web", "u1", false), false, true),
        "not being deleted"
    );
    let mut mirror = pod("s", "m1", true);
    mirror.metadata.deletion_timestamp = Some(Time(now()));
    assert!(
        !can_be_deleted(&mirror, false, true),
        "mirror pods are never finalised here"
    );
}

#[test]
fn backoff_doubles_up_to_the_max() {
    let (i, m) = (Duration::from_millis(500), Duration::from_secs(10));
    assert_eq!(backoff(1, i, m), Duration::from_millis(500));
    assert_eq!(backoff(2, i, m), Duration::from_secs(1));
    assert_eq!(backoff(3, i, m), Duration::from_secs(2));
    assert_eq!(backoff(40, i, m), m);
}

#[test]
fn resync_writes_what_is_older_moved_or_different() {
    let target = Target::Pod {
        namespace: "default".into(),
        name: "web".into(),
        uid: "u1".into(),
    };
    let current = versioned(3, "Running");
    let w = |version: u64, t: &str| Written {
        version,
        target_uid: t.into(),
    };
    assert!(needs_sync(None, &current, &target, None, false, now()));
    assert!(needs_sync(Some(&w(2, "u1")), &current, &target, None, false, now()));
    assert!(!needs_sync(Some(&w(3, "u1")), &current, &target, None, false, now()));
    assert!(
        needs_sync(Some(&w(3, "m-old")), &current, &target, None, false, now()),
        "written to another object"
    );
    let api_same = PodStatus::clone(&current.status);
    assert!(!needs_sync(
        Some(&w(3, "u1")),
        &current,
        &target,
        Some(&api_same),
        false,
        now()
    ));
    let api_other = PodStatus {
        phase: Some("Pending".into()),
        ..Default::default()
    };
    assert!(
        needs_sync(Some(&w(3, "u1")), &current, &target, Some(&api_other), false, now()),
        "the API's copy differs"
    );
}
