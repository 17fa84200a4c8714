//! FileSource actor tests. The periodic re-read runs on paused time (inotify
//! off: blocking-pool reads hold virtual time, so no real-IO race); inotify
//! runs on real time with a 1 h period, waiting (≤ 5 s) for the change to
//! show up, never asserting how fast.

#[path = "support/config.rs"]
mod support;

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::Actor;
use actlet::actors::supervisor::{ChildSpec, SupervisorSpec};
use actlet::config::annotations::CONFIG_SOURCE;
use actlet::config::{FileSource, FileSourceConfig};
use actlet::messages::pod_update::{PodSource, SourceSnapshot};
use support::{VIRTUAL_WAIT, WAIT, image, names, next, next_matching, pod_yaml, recorder, run_paused};

const NODE: &str = "node1";

fn start(path: &Path, watch: bool) -> tokio::sync::mpsc::UnboundedReceiver<SourceSnapshot> {
    let (out, rx) = recorder::<SourceSnapshot>();
    let mut config = FileSourceConfig::new(path, NODE);
    config.watch = watch;
    if watch {
        config.check_frequency = Duration::from_secs(3600);
    }
    FileSource::new(config, out).start();
    rx
}

fn write(dir: &Path, file: &str, body: &str) {
    fs::write(dir.join(file), body).unwrap();
}

fn sorted_names(snapshot: &SourceSnapshot) -> Vec<String> {
    let mut names = names(&snapshot.pods);
    names.sort();
    names
}

#[test]
fn first_read_has_good_pods_and_reports_bad_manifests() {
    run_paused(|| async {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "web.yaml", &pod_yaml("web", "nginx"));
        write(
            dir.path(),
            "db.json",
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db"},"spec":{"containers":[{"name":"c","image":"pg"}]}}"#,
        );
        write(dir.path(), ".hidden.yaml", &pod_yaml("hidden", "x"));
        write(dir.path(), "broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [\n");
        write(
            dir.path(),
            "svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
        );
        let mut rx = start(dir.path(), false);

        let snapshot = next(&mut rx, VIRTUAL_WAIT).await;
        assert_eq!(snapshot.source, PodSource::File);
        assert_eq!(
            names(&snapshot.pods),
            ["db-node1", "web-node1"],
            "name order, dotfile ignored"
        );
        assert_eq!(
            snapshot.pods[0].metadata.annotations.as_ref().unwrap()[CONFIG_SOURCE],
            "file"
        );
        let errors: Vec<_> = snapshot
            .errors
            .iter()
            .map(|e| (e.origin.clone(), e.reason.clone()))
            .collect();
        let origin = |file: &str| dir.path().join(file).display().to_string();
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].0, origin("broken.yaml"));
        assert!(errors[0].1.starts_with("couldn't parse as pod: "), "{}", errors[0].1);
        assert_eq!(errors[1].0, origin("svc.yaml"));
        assert!(errors[1].1.contains("kind \"Service\""), "{}", errors[1].1);
    });
}

#[test]
fn periodic_reread_picks_up_create_modify_break_and_delete() {
    run_paused(|| async {
        let dir = tempfile::tempdir().unwrap();
        let mut rx = start(dir.path(), false);
        assert!(
            next(&mut rx, VIRTUAL_WAIT).await.pods.is_empty(),
            "an empty directory is an empty snapshot"
        );

        write(dir.path(), "web.yaml", &pod_yaml("web", "nginx:1"));
        let created = next_matching(&mut rx, VIRTUAL_WAIT, |s| !s.pods.is_empty()).await;
        assert_eq!(names(&created.pods), ["web-node1"]);
        let uid = created.pods[0].metadata.uid.clone();

        write(dir.path(), "web.yaml", &pod_yaml("web", "nginx:2"));
        let modified = next_matching(&mut rx, VIRTUAL_WAIT, |s| {
            s.pods.first().is_some_and(|p| image(p) == "nginx:2")
        })
        .await;
        assert_ne!(modified.pods[0].metadata.uid, uid, "new content, new UID");

        write(dir.path(), "web.yaml", "kind: [");
        let broken = next_matching(&mut rx, VIRTUAL_WAIT, |s| !s.errors.is_empty()).await;
        assert_eq!(image(&broken.pods[0]), "nginx:2", "last good version kept");

        fs::remove_file(dir.path().join("web.yaml")).unwrap();
        let deleted = next_matching(&mut rx, VIRTUAL_WAIT, |s| s.errors.is_empty()).await;
        assert!(deleted.pods.is_empty());
    });
}

#[test]
fn a_missing_path_is_an_empty_snapshot_until_it_appears() {
    run_paused(|| async {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("manifests");
        let mut rx = start(&dir, false);
        let first = next(&mut rx, VIRTUAL_WAIT).await;
        assert!(first.pods.is_empty() && first.errors.is_empty());

        fs::create_dir(&dir).unwrap();
        write(&dir, "web.yaml", &pod_yaml("web", "nginx"));
        let appeared = next_matching(&mut rx, VIRTUAL_WAIT, |s| !s.pods.is_empty()).await;
        assert_eq!(names(&appeared.pods), ["web-node1"]);

        fs::remove_dir_all(&dir).unwrap();
        assert!(
            next(&mut rx, VIRTUAL_WAIT).await.pods.is_empty(),
            "upstream: a vanished path removes the pods"
        );
    });
}

#[test]
fn a_single_file_path_is_read_whatever_its_name() {
    run_paused(|| async {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "pod.manifest", &pod_yaml("solo", "nginx"));
        let mut rx = start(&dir.path().join("pod.manifest"), false);
        assert_eq!(names(&next(&mut rx, VIRTUAL_WAIT).await.pods), ["solo-node1"]);
    });
}

#[actix_rt::test]
async fn the_first_inotify_event_is_read_at_once_not_after_the_debounce_window() {
    let dir = tempfile::tempdir().unwrap();
    let (out, mut rx) = recorder::<SourceSnapshot>();
    let mut config = FileSourceConfig::new(dir.path(), NODE);
    config.check_frequency = Duration::from_secs(3600);
    config.debounce = Duration::from_secs(3600);
    FileSource::new(config, out).start();
    assert!(next(&mut rx, WAIT).await.pods.is_empty());
    write(dir.path(), "web.yaml", &pod_yaml("web", "nginx:1"));
    // Neither the periodic read nor the end of the window comes within WAIT.
    let read = next_matching(&mut rx, WAIT, |s| s.pods.len() == 1).await;
    assert_eq!(names(&read.pods), ["web-node1"]);
}

#[actix_rt::test]
async fn inotify_triggers_rereads_without_the_periodic_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut rx = start(dir.path(), true);
    assert!(next(&mut rx, WAIT).await.pods.is_empty());

    write(dir.path(), "web.yaml", &pod_yaml("web", "nginx:1"));
    write(dir.path(), "db.yaml", &pod_yaml("db", "pg"));
    let created = next_matching(&mut rx, WAIT, |s| s.pods.len() == 2).await;
    assert_eq!(sorted_names(&created), ["db-node1", "web-node1"]);

    write(dir.path(), "web.yaml", &pod_yaml("web", "nginx:2"));
    next_matching(&mut rx, WAIT, |s| s.pods.iter().any(|p| image(p) == "nginx:2")).await;

    write(dir.path(), "web.yaml", "kind: [");
    let broken = next_matching(&mut rx, WAIT, |s| !s.errors.is_empty()).await;
    assert_eq!(
        sorted_names(&broken),
        ["db-node1", "web-node1"],
        "broken manifest keeps its pod"
    );

    // a temp file renamed into place, as editors and config management do
    write(dir.path(), ".web.yaml.tmp", &pod_yaml("web", "nginx:3"));
    fs::rename(dir.path().join(".web.yaml.tmp"), dir.path().join("web.yaml")).unwrap();
    next_matching(&mut rx, WAIT, |s| {
        s.errors.is_empty() && s.pods.iter().any(|p| image(p) == "nginx:3")
    })
    .await;

    fs::remove_file(dir.path().join("db.yaml")).unwrap();
    let deleted = next_matching(&mut rx, WAIT, |s| s.pods.len() == 1).await;
    assert_eq!(names(&deleted.pods), ["web-node1"]);
}

#[actix_rt::test]
async fn a_recreated_directory_is_watched_again() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("manifests");
    fs::create_dir(&dir).unwrap();
    let mut rx = start(&dir, true);
    next(&mut rx, WAIT).await;

    // The deletion kills the watch and triggers a read 100 ms later, which
    // finds the new directory and watches it (the 1 h period never fires).
    fs::remove_dir_all(&dir).unwrap();
    fs::create_dir(&dir).unwrap();
    write(&dir, "web.yaml", &pod_yaml("web", "nginx:1"));
    next_matching(&mut rx, WAIT, |s| !s.pods.is_empty()).await;
    write(&dir, "web.yaml", &pod_yaml("web", "nginx:2"));
    next_matching(&mut rx, WAIT, |s| s.pods.iter().any(|p| image(p) == "nginx:2")).await;
}

/// A re-read that changed nothing is not sent again (at 10k manifests every
/// such send cost a merge of 10k pods); the next change is.
#[test]
fn an_unchanged_reread_is_not_sent_again() {
    run_paused(|| async {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "web.yaml", &pod_yaml("web", "nginx"));
        let mut rx = start(dir.path(), false);
        assert_eq!(names(&next(&mut rx, VIRTUAL_WAIT).await.pods), ["web-node1"]);

        // Three periodic re-reads (20 s each) of the same file.
        tokio::time::sleep(Duration::from_secs(65)).await;
        assert!(rx.try_recv().is_err(), "an unchanged re-read was sent");

        write(dir.path(), "db.yaml", &pod_yaml("db", "pg"));
        let changed = next(&mut rx, VIRTUAL_WAIT).await;
        assert_eq!(sorted_names(&changed), ["db-node1", "web-node1"]);
    });
}

/// The recipient: a supervised actor whose first instance dies on the first
/// snapshot, before handling it.
struct DiesOnFirst {
    armed: Arc<AtomicBool>,
    out: tokio::sync::mpsc::UnboundedSender<SourceSnapshot>,
}

impl Actor for DiesOnFirst {
    type Context = actix::Context<Self>;
}

impl actix::Handler<SourceSnapshot> for DiesOnFirst {
    type Result = ();
    fn handle(&mut self, msg: SourceSnapshot, _: &mut Self::Context) {
        if self.armed.swap(false, Ordering::SeqCst) {
            panic!("injected panic before handling the snapshot");
        }
        let _ = self.out.send(msg);
    }
}

/// A snapshot the recipient never handled (it died first) is sent again by
/// the next re-read, although the directory did not change.
#[test]
fn a_snapshot_lost_in_a_recipient_restart_is_sent_again() {
    run_paused(|| async {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "web.yaml", &pod_yaml("web", "nginx"));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let armed = Arc::new(AtomicBool::new(true));
        let a = armed.clone();
        let sink = ChildSpec::new("pod-config", move || DiesOnFirst {
            armed: a.clone(),
            out: tx.clone(),
        });
        let sink_ref = sink.child_ref();
        let _root = SupervisorSpec::new("root").child(sink).start_root();
        let mut config = FileSourceConfig::new(dir.path(), NODE);
        config.watch = false;
        FileSource::new(config, sink_ref.recipient::<SourceSnapshot>()).start();

        let resent = next(&mut rx, VIRTUAL_WAIT).await;
        assert!(
            !armed.load(Ordering::SeqCst),
            "the first instance died on the first snapshot"
        );
        assert_eq!(names(&resent.pods), ["web-node1"]);
    });
}
