//! Table tests for [`PodStorage`]: upstream `config_test.go` cases, by rule.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};

use super::*;

const T0: i64 = 1_700_000_000;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).unwrap()
}

fn pod(uid: &str, name: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.uid = Some(uid.into());
    pod.metadata.name = Some(name.into());
    pod.metadata.namespace = Some("default".into());
    pod.spec = Some(PodSpec {
        node_name: Some("node".into()),
        ..Default::default()
    });
    pod
}

fn arcs(pods: &[Pod]) -> Vec<Arc<Pod>> {
    pods.iter().cloned().map(Arc::new).collect()
}

fn uids(pods: &[Arc<Pod>]) -> Vec<&str> {
    pods.iter().map(|p| p.metadata.uid.as_deref().unwrap()).collect()
}

/// `(removes, adds, updates, deletes, reconciles)` as UID lists.
type Ops<'a> = [Vec<&'a str>; 5];

fn ops(result: &MergeResult) -> Ops<'_> {
    [
        uids(&result.removes),
        uids(&result.adds),
        uids(&result.updates),
        uids(&result.deletes),
        uids(&result.reconciles),
    ]
}

/// Stores `before`, applies `after`, returns the result.
fn transition(before: &[Pod], after: &[Pod]) -> MergeResult {
    let mut storage = PodStorage::new();
    storage.apply_snapshot(&PodSource::File, arcs(before), at(T0));
    storage.apply_snapshot(&PodSource::File, arcs(after), at(T0 + 60))
}

#[test]
fn classifies_changes_like_check_and_update_pod() {
    let base = pod("u", "web");
    let edit = |f: &dyn Fn(&mut Pod)| {
        let mut p = base.clone();
        f(&mut p);
        p
    };
    let none: Vec<&str> = vec![];
    let u = vec!["u"];
    let cases: Vec<(&str, Pod, Ops)> = vec![
        (
            "identical",
            base.clone(),
            [none.clone(), none.clone(), none.clone(), none.clone(), none.clone()],
        ),
        (
            "spec",
            edit(&|p| p.spec.as_mut().unwrap().hostname = Some("h".into())),
            [none.clone(), none.clone(), u.clone(), none.clone(), none.clone()],
        ),
        (
            "labels",
            edit(&|p| p.metadata.labels = Some(BTreeMap::from([("a".into(), "b".into())]))),
            [none.clone(), none.clone(), u.clone(), none.clone(), none.clone()],
        ),
        (
            "annotation",
            edit(&|p| p.metadata.annotations = Some(BTreeMap::from([("a".into(), "b".into())]))),
            [none.clone(), none.clone(), u.clone(), none.clone(), none.clone()],
        ),
        (
            "owner refs",
            edit(&|p| {
                p.metadata.owner_references = Some(vec![OwnerReference {
                    name: "o".into(),
                    ..Default::default()
                }])
            }),
            [none.clone(), none.clone(), u.clone(), none.clone(), none.clone()],
        ),
        (
            "grace period",
            edit(&|p| p.metadata.deletion_grace_period_seconds = Some(5)),
            [none.clone(), none.clone(), u.clone(), none.clone(), none.clone()],
        ),
        (
            "deletion timestamp",
            edit(&|p| p.metadata.deletion_timestamp = Some(Time(at(T0)))),
            [none.clone(), none.clone(), none.clone(), u.clone(), none.clone()],
        ),
        (
            "status only",
            edit(&|p| {
                p.status = Some(PodStatus {
                    phase: Some("Running".into()),
                    ..Default::default()
                })
            }),
            [none.clone(), none.clone(), none.clone(), none.clone(), u.clone()],
        ),
        (
            "spec and status",
            edit(&|p| {
                p.spec.as_mut().unwrap().hostname = Some("h".into());
                p.status = Some(PodStatus {
                    phase: Some("Running".into()),
                    ..Default::default()
                });
            }),
            [none.clone(), none.clone(), u.clone(), none.clone(), none.clone()],
        ),
        (
            "local annotations only",
            edit(&|p| {
                p.metadata.annotations = Some(BTreeMap::from([
                    (annotations::CONFIG_SEEN.into(), "yesterday".into()),
                    (annotations::CONFIG_MIRROR.into(), "m".into()),
                ]))
            }),
            [none.clone(), none.clone(), none.clone(), none.clone(), none.clone()],
        ),
        (
            "resourceVersion only",
            edit(&|p| p.metadata.resource_version = Some("7".into())),
            [none.clone(), none.clone(), none.clone(), none.clone(), none.clone()],
        ),
        (
            "empty labels = no labels",
            edit(&|p| p.metadata.labels = Some(BTreeMap::new())),
            [none.clone(), none.clone(), none.clone(), none.clone(), none.clone()],
        ),
    ];
    for (name, after, expected) in cases {
        let result = transition(std::slice::from_ref(&base), &[after]);
        assert_eq!(ops(&result), expected, "{name}");
    }
}

#[test]
fn adds_and_removes_by_uid() {
    let result = transition(&[pod("a", "a"), pod("b", "b")], &[pod("b", "b"), pod("c", "c")]);
    assert_eq!(ops(&result), [vec!["a"], vec!["c"], vec![], vec![], vec![]]);
    // a new UID under the same name is a remove plus an add (e.g. an edited static pod)
    let result = transition(&[pod("old", "web")], &[pod("new", "web")]);
    assert_eq!(ops(&result), [vec!["old"], vec!["new"], vec![], vec![], vec![]]);
    assert!(transition(&[pod("a", "a")], &[]).adds.is_empty());
}

#[test]
fn an_already_deleting_pod_that_changes_again_is_a_delete() {
    let mut deleting = pod("u", "web");
    deleting.metadata.deletion_timestamp = Some(Time(at(T0)));
    deleting.metadata.deletion_grace_period_seconds = Some(30);
    let mut shorter = deleting.clone();
    shorter.metadata.deletion_grace_period_seconds = Some(0);
    assert_eq!(uids(&transition(&[deleting], &[shorter]).deletes), ["u"]);
}

#[test]
fn stamps_source_and_first_seen_and_keeps_them() {
    let mut storage = PodStorage::new();
    let added = storage.apply_snapshot(&PodSource::Http, arcs(&[pod("u", "web")]), at(T0));
    let first = &added.adds[0];
    assert_eq!(annotation(first, annotations::CONFIG_SOURCE), Some("http"));
    assert_eq!(
        annotation(first, annotations::CONFIG_SEEN),
        Some("2023-11-14T22:13:20Z")
    );

    let mut changed = pod("u", "web");
    changed.metadata.labels = Some(BTreeMap::from([("v".into(), "2".into())]));
    let updated = storage.apply_snapshot(&PodSource::Http, arcs(&[changed]), at(T0 + 60));
    let second = &updated.updates[0];
    assert_eq!(
        annotation(second, annotations::CONFIG_SEEN),
        Some("2023-11-14T22:13:20Z"),
        "first-seen kept"
    );
    assert_eq!(annotation(second, annotations::CONFIG_SOURCE), Some("http"));
    assert_eq!(second.metadata.labels.as_ref().unwrap()["v"], "2");
    let stored: Vec<_> = storage.pods(&PodSource::Http).collect();
    assert!(Arc::ptr_eq(stored[0], second), "the new version is stored");
}

#[test]
fn seen_timestamp_is_rfc3339_nano_like_go() {
    let with_nanos = Timestamp::new(T0, 120_000_000).unwrap();
    assert_eq!(seen_timestamp(with_nanos), "2023-11-14T22:13:20.12Z");
    assert_eq!(
        seen_timestamp(Timestamp::new(T0, 1).unwrap()),
        "2023-11-14T22:13:20.000000001Z"
    );
}

#[test]
fn nothing_changes_keeps_the_stored_version() {
    let mut storage = PodStorage::new();
    let added = storage.apply_snapshot(&PodSource::File, arcs(&[pod("u", "web")]), at(T0));
    let mut again = pod("u", "web");
    again.metadata.resource_version = Some("9".into());
    assert!(
        storage
            .apply_snapshot(&PodSource::File, arcs(&[again]), at(T0 + 1))
            .is_empty()
    );
    let stored: Vec<_> = storage.pods(&PodSource::File).collect();
    assert!(Arc::ptr_eq(stored[0], &added.adds[0]));
}

#[test]
fn the_same_allocation_again_is_unchanged_a_new_one_compared() {
    let mut storage = PodStorage::new();
    let sent = arcs(&[pod("u", "web")]);
    let added = storage.apply_snapshot(&PodSource::File, sent.clone(), at(T0));
    // The file source's unchanged manifest: the very pod it sent before.
    assert!(
        storage
            .apply_snapshot(&PodSource::File, sent.clone(), at(T0 + 1))
            .is_empty()
    );
    let stored: Vec<_> = storage.pods(&PodSource::File).collect();
    assert!(Arc::ptr_eq(stored[0], &added.adds[0]), "the merged version stays");
    // A new allocation with a new spec is still an update.
    let mut changed = pod("u", "web");
    changed.spec.get_or_insert_with(Default::default).hostname = Some("h".into());
    let update = storage.apply_snapshot(&PodSource::File, arcs(&[changed]), at(T0 + 2));
    assert_eq!(update.updates.len(), 1);
    // ... and a duplicate of a same-allocation pod is still caught.
    let twice = vec![sent[0].clone(), sent[0].clone()];
    let dup = storage.apply_snapshot(&PodSource::File, twice, at(T0 + 3));
    assert_eq!(dup.duplicates.len(), 1);
}

#[test]
fn reconcile_replaces_only_the_status() {
    let mut storage = PodStorage::new();
    let added = storage.apply_snapshot(&PodSource::Api, arcs(&[pod("u", "web")]), at(T0));
    let mut running = pod("u", "web");
    running.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    });
    let result = storage.apply_snapshot(&PodSource::Api, arcs(&[running]), at(T0 + 1));
    let reconciled = &result.reconciles[0];
    assert_eq!(reconciled.status.as_ref().unwrap().phase.as_deref(), Some("Running"));
    assert_eq!(reconciled.metadata.annotations, added.adds[0].metadata.annotations);
}

#[test]
fn duplicate_names_and_uids_keep_the_first() {
    let mut storage = PodStorage::new();
    let result = storage.apply_snapshot(
        &PodSource::File,
        arcs(&[pod("a", "web"), pod("b", "web"), pod("a", "other")]),
        at(T0),
    );
    assert_eq!(uids(&result.adds), ["a"]);
    assert_eq!(uids(&result.duplicates), ["b", "a"]);
    assert_eq!(result.duplicates[1].metadata.name.as_deref(), Some("other"));
}

#[test]
fn sources_are_independent() {
    let mut storage = PodStorage::new();
    storage.apply_snapshot(&PodSource::File, arcs(&[pod("f", "f")]), at(T0));
    let result = storage.apply_snapshot(&PodSource::Http, arcs(&[pod("h", "h")]), at(T0));
    assert_eq!(ops(&result), [vec![], vec!["h"], vec![], vec![], vec![]]);
    let result = storage.apply_snapshot(&PodSource::Http, vec![], at(T0));
    assert_eq!(uids(&result.removes), ["h"]);
    assert_eq!(storage.pods(&PodSource::File).count(), 1);
}

#[test]
fn readiness_follows_seen_sources() {
    let mut storage = PodStorage::new();
    let expected = [PodSource::File, PodSource::Http];
    assert!(storage.all_ready(&[]));
    assert!(!storage.all_ready(&expected));
    storage.apply_snapshot(&PodSource::File, vec![], at(T0));
    assert!(!storage.all_ready(&expected));
    storage.apply_snapshot(&PodSource::Http, vec![], at(T0));
    assert!(storage.all_ready(&expected));
    assert_eq!(storage.seen_sources().len(), 2);
}

#[test]
fn updates_come_in_upstream_order() {
    let mut storage = PodStorage::new();
    let mut changed = pod("upd", "upd");
    let mut deleting = pod("del", "del");
    let mut reconciling = pod("rec", "rec");
    storage.apply_snapshot(
        &PodSource::File,
        arcs(&[changed.clone(), deleting.clone(), reconciling.clone(), pod("rm", "rm")]),
        at(T0),
    );
    changed.metadata.labels = Some(BTreeMap::from([("x".into(), "y".into())]));
    deleting.metadata.deletion_timestamp = Some(Time(at(T0)));
    reconciling.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    });
    let result = storage.apply_snapshot(
        &PodSource::File,
        arcs(&[reconciling, deleting, changed, pod("add", "add")]),
        at(T0),
    );
    let batches = result.into_updates(&PodSource::File);
    let summary: Vec<_> = batches
        .iter()
        .map(|u| (u.op, uids(&u.pods)[0], u.source.clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (PodOperation::Remove, "rm", PodSource::File),
            (PodOperation::Add, "add", PodSource::File),
            (PodOperation::Update, "upd", PodSource::File),
            (PodOperation::Delete, "del", PodSource::File),
            (PodOperation::Reconcile, "rec", PodSource::File),
        ]
    );
    assert!(MergeResult::default().into_updates(&PodSource::File).is_empty());
}

#[test]
fn a_pod_the_source_stamped_is_stored_as_the_sources_own_allocation() {
    let mut storage = PodStorage::new();
    let mut p = pod("u1", "a");
    annotations::stamp_seen(&mut p, at(T0 - 5));
    p.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(annotations::CONFIG_SOURCE.into(), "api".into());
    let sent = Arc::new(p);
    let added = storage.apply_snapshot(&PodSource::Api, vec![Arc::clone(&sent)], at(T0));
    assert!(Arc::ptr_eq(&added.adds[0], &sent), "no copy for the stamps");
    assert_eq!(
        annotation(&added.adds[0], annotations::CONFIG_SEEN),
        Some(seen_timestamp(at(T0 - 5)).as_str()),
        "the source's first-seen time"
    );
    // A new version with the same local annotations (the API source carries
    // them over) is stored as it came: a status change, then a spec change.
    let mut v2 = Pod::clone(&sent);
    v2.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    });
    let v2 = Arc::new(v2);
    let reconciled = storage.apply_snapshot(&PodSource::Api, vec![Arc::clone(&v2)], at(T0 + 1));
    assert!(Arc::ptr_eq(&reconciled.reconciles[0], &v2));
    let mut v3 = Pod::clone(&v2);
    v3.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    let v3 = Arc::new(v3);
    let updated = storage.apply_snapshot(&PodSource::Api, vec![Arc::clone(&v3)], at(T0 + 2));
    assert!(Arc::ptr_eq(&updated.updates[0], &v3));
    assert!(Arc::ptr_eq(storage.pods(&PodSource::Api).next().unwrap(), &v3));
    drop(updated);
    assert_eq!(
        Arc::strong_count(&v3),
        3,
        "the source's (this test's) and the store's two references: one allocation"
    );
}

#[test]
fn a_version_with_other_local_annotations_keeps_the_stored_ones() {
    let mut storage = PodStorage::new();
    let first = storage.apply_snapshot(&PodSource::File, arcs(&[pod("u1", "a")]), at(T0));
    let seen = annotation(&first.adds[0], annotations::CONFIG_SEEN).map(str::to_owned);
    let mut changed = pod("u1", "a");
    annotations::stamp_seen(&mut changed, at(T0 + 30)); // a re-read manifest
    changed.metadata.labels = Some([("app".to_owned(), "web".to_owned())].into());
    let updated = storage.apply_snapshot(&PodSource::File, vec![Arc::new(changed)], at(T0 + 60));
    assert_eq!(
        annotation(&updated.updates[0], annotations::CONFIG_SEEN).map(str::to_owned),
        seen,
        "config.seen stays the first-seen time"
    );
}
