//! PodConfig actor tests, on paused time: snapshots in, ordered `PodUpdate`
//! batches and `SourcesReady` out; and the file source → PodConfig pipeline
//! keeping the last good version of a manifest that broke.

#[path = "support/config.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use actlet::config::annotations::{CONFIG_SEEN, CONFIG_SOURCE};
use actlet::config::{FileSource, FileSourceConfig, GetManifestErrors, PodConfig};
use actlet::messages::pod_update::{ManifestError, PodOperation, PodSource, PodUpdate, SourceSnapshot, SourcesReady};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use support::{VIRTUAL_WAIT, image, names, next, next_matching, pod_yaml, recorder, run_paused};
use tokio::sync::mpsc::UnboundedReceiver;

fn pod(uid: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.uid = Some(uid.into());
    pod.metadata.name = Some(uid.into());
    pod.metadata.namespace = Some("default".into());
    pod.spec = Some(Default::default());
    pod
}

fn snapshot(source: PodSource, pods: &[Pod]) -> SourceSnapshot {
    SourceSnapshot {
        source,
        pods: pods.iter().cloned().map(Arc::new).collect(),
        errors: vec![],
    }
}

fn summary(update: &PodUpdate) -> (PodOperation, Vec<String>) {
    (update.op, names(&update.pods))
}

/// Lets every actor run until idle.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(10)).await;
}

fn drain<M>(rx: &mut UnboundedReceiver<M>) -> Vec<M> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

#[test]
fn pod_config_emits_batches_in_upstream_order() {
    run_paused(|| async {
        let (updates, mut rx) = recorder::<PodUpdate>();
        let (ready, _ready_rx) = recorder::<SourcesReady>();
        let config = PodConfig::new([PodSource::File], updates, ready).start();

        config.do_send(snapshot(
            PodSource::File,
            &[pod("upd"), pod("del"), pod("rec"), pod("rm")],
        ));
        let added = next(&mut rx, VIRTUAL_WAIT).await;
        assert_eq!(
            summary(&added),
            (
                PodOperation::Add,
                vec!["upd".into(), "del".into(), "rec".into(), "rm".into()]
            )
        );
        assert_eq!(added.source, PodSource::File);
        let seen = added.pods[0].metadata.annotations.as_ref().unwrap()[CONFIG_SEEN].clone();
        assert!(seen.parse::<Timestamp>().is_ok(), "config.seen is RFC 3339: {seen}");
        assert_eq!(
            added.pods[0].metadata.annotations.as_ref().unwrap()[CONFIG_SOURCE],
            "file"
        );

        let mut changed = pod("upd");
        changed.metadata.labels = Some(BTreeMap::from([("v".into(), "2".into())]));
        let mut deleting = pod("del");
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        let mut running = pod("rec");
        running.status = Some(PodStatus {
            phase: Some("Running".into()),
            ..Default::default()
        });
        let second = [running, deleting, changed, pod("new")];
        config.do_send(snapshot(PodSource::File, &second));
        let mut batches = vec![];
        for _ in 0..5 {
            batches.push(summary(&next(&mut rx, VIRTUAL_WAIT).await));
        }
        assert_eq!(
            batches,
            [
                (PodOperation::Remove, vec!["rm".into()]),
                (PodOperation::Add, vec!["new".into()]),
                (PodOperation::Update, vec!["upd".into()]),
                (PodOperation::Delete, vec!["del".into()]),
                (PodOperation::Reconcile, vec!["rec".into()]),
            ]
        );

        // the same snapshot again changes nothing
        config.do_send(snapshot(PodSource::File, &second));
        settle().await;
        assert!(drain(&mut rx).is_empty());
    });
}

#[test]
fn sources_ready_once_every_expected_source_reported() {
    run_paused(|| async {
        let (updates, _rx) = recorder::<PodUpdate>();
        let (ready, mut ready_rx) = recorder::<SourcesReady>();
        let config = PodConfig::new([PodSource::File, PodSource::Http], updates, ready).start();
        config.do_send(snapshot(PodSource::File, &[]));
        config.do_send(snapshot(PodSource::Api, &[]));
        settle().await;
        assert!(drain(&mut ready_rx).is_empty(), "http has not reported yet");
        config.do_send(snapshot(PodSource::Http, &[]));
        next(&mut ready_rx, VIRTUAL_WAIT).await;
        config.do_send(snapshot(PodSource::Http, &[pod("a")]));
        config.do_send(snapshot(PodSource::File, &[]));
        settle().await;
        assert!(drain(&mut ready_rx).is_empty(), "sent once");
    });
}

#[test]
fn sources_ready_at_start_when_no_source_is_expected() {
    run_paused(|| async {
        let (updates, _rx) = recorder::<PodUpdate>();
        let (ready, mut ready_rx) = recorder::<SourcesReady>();
        let _config = PodConfig::new([], updates, ready).start();
        next(&mut ready_rx, VIRTUAL_WAIT).await;
    });
}

#[test]
fn manifest_errors_are_the_latest_per_source_plus_duplicates() {
    run_paused(|| async {
        let (updates, _rx) = recorder::<PodUpdate>();
        let (ready, _ready_rx) = recorder::<SourcesReady>();
        let config = PodConfig::new([], updates, ready).start();
        let error = |origin: &str| ManifestError {
            origin: origin.into(),
            reason: "bad".into(),
        };
        let mut file = snapshot(PodSource::File, &[]);
        file.errors = vec![error("/m/a.yaml"), error("/m/b.yaml")];
        let mut http = snapshot(PodSource::Http, &[pod("a")]);
        http.errors = vec![error("http://h/pods")];
        config.do_send(file);
        config.do_send(http);
        let origins = |errors: Vec<ManifestError>| errors.into_iter().map(|e| e.origin).collect::<Vec<_>>();
        assert_eq!(
            origins(config.send(GetManifestErrors).await.unwrap()),
            ["/m/a.yaml", "/m/b.yaml", "http://h/pods"]
        );

        let mut dup = pod("b");
        dup.metadata.name = Some("a".into());
        config.do_send(snapshot(PodSource::File, &[pod("a"), dup]));
        let errors = config.send(GetManifestErrors).await.unwrap();
        assert_eq!(origins(errors.clone()), ["file", "http://h/pods"]);
        assert!(
            errors[0].reason.starts_with("duplicate pod \"default/a\" (uid b)"),
            "{}",
            errors[0].reason
        );
    });
}

/// FileSource → PodConfig on paused time (no inotify: the 20 s re-read).
#[test]
fn a_manifest_that_breaks_keeps_its_last_good_pod_until_fixed() {
    run_paused(|| async {
        let dir = tempfile::tempdir().unwrap();
        let web = dir.path().join("web.yaml");
        std::fs::write(&web, pod_yaml("web", "nginx:1")).unwrap();
        std::fs::write(dir.path().join("db.yaml"), pod_yaml("db", "postgres:16")).unwrap();
        let (updates, mut rx) = recorder::<PodUpdate>();
        let (ready, mut ready_rx) = recorder::<SourcesReady>();
        let config = PodConfig::new([PodSource::File], updates, ready).start();
        let mut source = FileSourceConfig::new(dir.path(), "node1");
        source.watch = false;
        let _source = FileSource::new(source, config.clone().recipient()).start();

        let added = next(&mut rx, VIRTUAL_WAIT).await;
        assert_eq!(
            summary(&added),
            (PodOperation::Add, vec!["db-node1".into(), "web-node1".into()])
        );
        next(&mut ready_rx, VIRTUAL_WAIT).await;

        std::fs::write(
            &web,
            "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: main}]}\n",
        )
        .unwrap();
        let errors = loop {
            tokio::time::sleep(Duration::from_secs(20)).await;
            let errors = config.send(GetManifestErrors).await.unwrap();
            if !errors.is_empty() {
                break errors;
            }
        };
        assert_eq!(errors[0].origin, web.display().to_string());
        assert_eq!(
            errors[0].reason,
            "invalid pod: spec.containers[0].image: Required value"
        );
        assert!(
            drain(&mut rx).is_empty(),
            "the broken pod was neither removed nor changed"
        );

        std::fs::write(&web, pod_yaml("web", "nginx:2")).unwrap();
        let fixed = next_matching(&mut rx, VIRTUAL_WAIT, |u| u.op != PodOperation::Reconcile).await;
        // a new image is new content: a new UID, so REMOVE old + ADD new
        assert_eq!(summary(&fixed), (PodOperation::Remove, vec!["web-node1".into()]));
        assert_eq!(image(&fixed.pods[0]), "nginx:1");
        let readded = next(&mut rx, VIRTUAL_WAIT).await;
        assert_eq!(summary(&readded), (PodOperation::Add, vec!["web-node1".into()]));
        assert_eq!(image(&readded.pods[0]), "nginx:2");
        assert!(config.send(GetManifestErrors).await.unwrap().is_empty());
    });
}
