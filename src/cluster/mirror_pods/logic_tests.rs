use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

use super::*;

fn mirror(name: &str, uid: &str, hash: &str) -> Arc<Pod> {
    let v = json!({"metadata": {"name": name, "namespace": "kube-system", "uid": uid,
        "annotations": {"kubernetes.io/config.mirror": hash}}});
    Arc::new(serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}")))
}

fn statics(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(n, h)| (format!("kube-system/{n}"), h.to_string()))
        .collect()
}

fn none() -> HashSet<String> {
    HashSet::new()
}

#[test]
fn a_missing_mirror_is_created_unless_pending() {
    let s = statics(&[("etcd", "h1")]);
    assert_eq!(
        plan(&s, &[], &none(), &none(), &none()),
        vec![MirrorAction::Create {
            full_name: "kube-system/etcd".into()
        }]
    );
    let pending: HashSet<String> = ["kube-system/etcd".to_string()].into();
    assert!(plan(&s, &[], &pending, &none(), &none()).is_empty());
}

#[test]
fn an_up_to_date_mirror_is_left_alone() {
    let s = statics(&[("etcd", "h1")]);
    assert!(plan(&s, &[mirror("etcd", "m1", "h1")], &none(), &none(), &none()).is_empty());
}

#[test]
fn outdated_or_deleting_mirrors_are_recreated() {
    let s = statics(&[("etcd", "h2")]);
    let recreate = vec![MirrorAction::Delete {
        full_name: "kube-system/etcd".into(),
        uid: "m1".into(),
        recreate: true,
    }];
    assert_eq!(
        plan(&s, &[mirror("etcd", "m1", "h1")], &none(), &none(), &none()),
        recreate
    );
    let mut deleting = Pod::clone(&mirror("etcd", "m1", "h2"));
    deleting.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    assert_eq!(plan(&s, &[Arc::new(deleting)], &none(), &none(), &none()), recreate);
}

#[test]
fn orphans_are_deleted_and_already_deleted_mirrors_ignored() {
    let s = statics(&[]);
    assert_eq!(
        plan(&s, &[mirror("old", "m1", "h1")], &none(), &none(), &none()),
        vec![MirrorAction::Delete {
            full_name: "kube-system/old".into(),
            uid: "m1".into(),
            recreate: false,
        }]
    );
    let deleted: HashSet<String> = ["m1".to_string()].into();
    assert!(plan(&s, &[mirror("old", "m1", "h1")], &none(), &deleted, &none()).is_empty());
    // A deleted outdated mirror still being reported: create the new one.
    let s = statics(&[("old", "h2")]);
    assert_eq!(
        plan(&s, &[mirror("old", "m1", "h1")], &none(), &deleted, &none()),
        vec![MirrorAction::Create {
            full_name: "kube-system/old".into()
        }]
    );
}

#[test]
fn the_mirror_copies_the_static_pod_like_fixture_43() {
    let static_pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "static-web-test-node", "namespace": "default", "uid": "6c2e",
            "resourceVersion": "7", "labels": {"app": "web"},
            "annotations": {"kubernetes.io/config.hash": "6c2e", "kubernetes.io/config.source": "file"}},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
        "status": {"phase": "Running"}
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let m = serde_json::to_value(mirror_pod_of(&static_pod, "test-node", "node-uid")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        m["metadata"],
        json!({
            "name": "static-web-test-node", "namespace": "default", "labels": {"app": "web"},
            "annotations": {"kubernetes.io/config.hash": "6c2e", "kubernetes.io/config.source": "file",
                "kubernetes.io/config.mirror": "6c2e"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "test-node",
                "uid": "node-uid", "controller": true}]
        })
    );
    assert_eq!(m["spec"]["nodeName"], "test-node");
    assert_eq!(m["spec"]["containers"][0]["image"], "nginx:1.25");
    assert!(m.get("status").is_none());
}

#[test]
fn the_hash_falls_back_to_the_uid() {
    let mut p = Pod::default();
    p.metadata.uid = Some("u1".into());
    assert_eq!(static_pod_hash(&p), "u1");
}

#[test]
fn an_orphan_waits_while_its_static_pod_is_still_terminating() {
    let s = statics(&[]);
    let terminating: HashSet<String> = ["kube-system/old".to_string()].into();
    assert!(plan(&s, &[mirror("old", "m1", "h1")], &none(), &none(), &terminating).is_empty());
    let other: HashSet<String> = ["kube-system/other".to_string()].into();
    assert_eq!(
        plan(&s, &[mirror("old", "m1", "h1")], &none(), &none(), &other).len(),
        1
    );
}
