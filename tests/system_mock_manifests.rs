//! The assembled kubelet reading static pods from a real directory (the
//! file source, on real file IO) on the mock CRI under paused time:
//! malformed manifests beside good ones. Reads run on the blocking pool, so
//! only eventual outcomes are asserted, never timing.

#[path = "support/system.rs"]
mod support;

use std::fs;
use std::path::Path;
use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::cri::v1::{ContainerState, PodSandboxState};
use actlet::messages::PodUid;
use support::{Node, run_paused};
use tokio::time::sleep;

const WAIT: Duration = Duration::from_secs(120);

fn write(dir: &Path, file: &str, body: &str) {
    fs::write(dir.join(file), body).unwrap_or_else(|e| panic!("write {file}: {e}"));
}

fn manifest(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  containers:\n  - {{name: app, image: \"busybox:1.36\", command: [sh, -c, \"sleep 3600\"]}}\n"
    )
}

/// The UID of the desired pod named `name` (static pods are `<name>-<node>`).
fn uid_by_name(node: &Node, name: &str) -> Option<PodUid> {
    node.kubelet
        .pods
        .pods()
        .into_iter()
        .find(|d| d.pod.metadata.name.as_deref() == Some(name))
        .map(|d| PodUid::new(d.pod.metadata.uid.clone().unwrap_or_default()))
}

fn running(node: &Node, name: &str) -> bool {
    uid_by_name(node, name).is_some_and(|uid| node.phase(&uid) == "Running" && node.is_running(&uid, "app"))
}

fn desired_names(node: &Node) -> Vec<String> {
    let mut names: Vec<String> = node
        .kubelet
        .pods
        .pods()
        .into_iter()
        .filter_map(|d| d.pod.metadata.name.clone())
        .collect();
    names.sort();
    names
}

/// A directory with two good manifests (YAML and JSON) and three bad ones
/// (broken YAML, an invalid pod, not a pod): the good pods run, the bad ones
/// create nothing, and nothing in the tree crashes. Later, a good manifest
/// that breaks keeps its pod running (last good version), a fixed one
/// starts its pod, and a deleted one is terminated.
#[test]
fn malformed_manifests_beside_good_ones_do_not_disturb_the_good_ones() {
    run_paused(|| async {
        let pods = tempfile::tempdir().unwrap();
        let dir = pods.path();
        write(dir, "web.yaml", &manifest("web"));
        write(
            dir,
            "db.json",
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db","namespace":"default"},
                "spec":{"containers":[{"name":"app","image":"busybox:1.36","command":["sh","-c","sleep 3600"]}]}}"#,
        );
        write(dir, "broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [\n");
        write(
            dir,
            "invalid.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: Not_A_Name}\nspec:\n  containers:\n  - {name: app, image: \"busybox:1.36\"}\n",
        );
        write(dir, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n");
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let node = Node::builder(mock)
            .static_pods(dir.to_path_buf(), Duration::from_secs(20))
            .start();

        node.wait_for("web and db running", WAIT, |n| {
            running(n, "web-node-a") && running(n, "db-node-a")
        })
        .await;
        sleep(Duration::from_secs(30)).await;
        assert_eq!(desired_names(&node), ["db-node-a", "web-node-a"]);
        assert_eq!(node.mock.snapshot().sandboxes.len(), 2, "{}", node.describe());
        assert_eq!(node.mock.snapshot().containers.len(), 2, "{}", node.describe());
        let web_container = node.containers("web-node-a", "app")[0].status.id.clone();
        // Every rejected manifest is reported with its file and reason.
        let errors = node.kubelet.manifest_errors.get();
        for bad in ["broken.yaml", "invalid.yaml", "svc.yaml"] {
            let e = errors
                .iter()
                .find(|e| e.origin.ends_with(bad))
                .unwrap_or_else(|| panic!("{bad} not reported: {errors:?}"));
            assert!(!e.reason.is_empty(), "{e:?}");
        }
        assert!(
            !errors
                .iter()
                .any(|e| e.origin.ends_with("web.yaml") || e.origin.ends_with("db.yaml")),
            "{errors:?}"
        );

        // web.yaml breaks: its last good pod keeps running.
        write(dir, "web.yaml", "apiVersion: v1\nkind: Pod\nspec: {containers: 7\n");
        // broken.yaml is fixed: its pod starts.
        write(dir, "broken.yaml", &manifest("late"));
        // db.json is deleted: its pod is terminated.
        fs::remove_file(dir.join("db.json")).unwrap();

        node.wait_for("late running, db terminated", WAIT, |n| {
            running(n, "late-node-a")
                && n.sandboxes("db-node-a")
                    .iter()
                    .all(|s| s.state() == PodSandboxState::SandboxNotready)
        })
        .await;
        sleep(Duration::from_secs(60)).await;
        assert_eq!(desired_names(&node), ["late-node-a", "web-node-a"]);
        let web = node.containers("web-node-a", "app");
        assert_eq!(web.len(), 1, "web is never restarted: {}", node.describe());
        assert_eq!(web[0].status.id, web_container);
        assert_eq!(web[0].state(), ContainerState::ContainerRunning);
        assert!(running(&node, "web-node-a"));
        // db's container is stopped (and, once all sources are ready, collected by container GC)
        assert!(
            node.containers("db-node-a", "app")
                .iter()
                .all(|c| c.state() == ContainerState::ContainerExited),
            "{}",
            node.describe()
        );
        for c in node.kubelet.tree().snapshot() {
            assert_eq!(c.restarts, 0, "nothing crashed: {c:?}");
        }
    });
}
