//! Volumes on the assembled kubelet (standalone, mock CRI, paused time):
//! the pod's emptyDir, hostPath and downwardAPI volumes exist with their
//! content and modes when `CreateContainer` is called, the container's CRI
//! mounts point at them (subPath included), and everything under
//! `<root>/pods/<uid>` is gone once the pod is removed. A configMap volume
//! without an API server fails (retried) and no sandbox is created.

#[path = "support/system.rs"]
mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::MockRuntime;
use actlet::cri::v1::CreateContainerRequest;
use actlet::testing::HookedRuntime;
use support::{Node, pod, run_paused, uid_of};

/// What a container's mounts showed on disk when it was created:
/// container path → (host path, read-only, files: name → (content, mode)).
type Seen = BTreeMap<String, (String, bool, BTreeMap<String, (String, u32)>)>;

fn files_in(dir: &Path) -> BTreeMap<String, (String, u32)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with(".."))
        .filter_map(|e| {
            let meta = std::fs::metadata(e.path()).ok()?; // follows the ..data symlinks
            let content = if meta.is_file() {
                std::fs::read_to_string(e.path()).ok()?
            } else {
                "<dir>".into()
            };
            Some((
                e.file_name().to_string_lossy().into_owned(),
                (content, meta.permissions().mode() & 0o777),
            ))
        })
        .collect()
}

fn recording_node(seen: Arc<Mutex<Seen>>) -> Node {
    let mock = MockRuntime::new();
    let hooked = HookedRuntime::new(mock.clone(), move |call| {
        let Some(req) = call.request::<CreateContainerRequest>() else {
            return;
        };
        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
        for m in req.config.iter().flat_map(|c| c.mounts.iter()) {
            let files = files_in(Path::new(&m.host_path));
            seen.insert(m.container_path.clone(), (m.host_path.clone(), m.readonly, files));
        }
    });
    Node::builder(mock).runtime(Arc::new(hooked)).start()
}

fn web(host_dir: &Path) -> k8s_openapi::api::core::v1::Pod {
    pod(&format!(
        r#"
metadata: {{name: vols, namespace: default, uid: u-vols, labels: {{app: web}}}}
spec:
  securityContext: {{fsGroup: 2000}}
  containers:
  - name: app
    image: "busybox:1.36"
    command: [sleep, "3600"]
    resources: {{limits: {{memory: 64Mi}}}}
    volumeMounts:
    - {{name: cache, mountPath: /cache}}
    - {{name: cache, mountPath: /logs, subPath: logs}}
    - {{name: host, mountPath: /host, readOnly: true}}
    - {{name: info, mountPath: /etc/podinfo}}
  volumes:
  - {{name: cache, emptyDir: {{}}}}
  - {{name: host, hostPath: {{path: "{}", type: DirectoryOrCreate}}}}
  - name: info
    downwardAPI:
      items:
      - {{path: labels, fieldRef: {{fieldPath: metadata.labels}}}}
      - {{path: name, fieldRef: {{fieldPath: metadata.name}}, mode: 256}}
      - {{path: mem, resourceFieldRef: {{containerName: app, resource: limits.memory, divisor: 1Mi}}}}
"#,
        host_dir.display()
    ))
}

#[test]
fn volumes_are_ready_before_the_container_and_gone_after_the_pod() {
    run_paused(|| async {
        let seen = Arc::new(Mutex::new(Seen::new()));
        let node = recording_node(seen.clone());
        let host = node.dir.path().join("host-data");
        let p = web(&host);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("vols Running", Duration::from_secs(30), |n| n.is_running(&uid, "app"))
            .await;

        let pod_dir = node.dir.path().join("root/pods/u-vols");
        let vol = |plugin: &str, name: &str| pod_dir.join("volumes").join(plugin).join(name);
        let seen = seen.lock().unwrap().clone();
        let real = |p: PathBuf| p.canonicalize().unwrap().to_string_lossy().into_owned();
        let cache = vol("kubernetes.io~empty-dir", "cache");
        assert_eq!(seen["/cache"].0, cache.to_string_lossy());
        assert!(!seen["/cache"].1);
        assert_eq!(seen["/logs"].0, real(cache.join("logs")), "subPath inside the emptyDir");
        assert_eq!(seen["/host"].0, host.to_string_lossy());
        assert!(seen["/host"].1, "readOnly mount");
        assert!(host.is_dir(), "DirectoryOrCreate created the host directory");
        let info = &seen["/etc/podinfo"];
        assert_eq!(info.0, vol("kubernetes.io~downward-api", "info").to_string_lossy());
        assert!(info.1, "downwardAPI volumes are read-only");
        let expect = BTreeMap::from([
            ("labels".to_string(), ("app=\"web\"".to_string(), 0o644)),
            ("name".to_string(), ("vols".to_string(), 0o440)), // 0400 + g+r for the fsGroup
            ("mem".to_string(), ("64".to_string(), 0o644)),
        ]);
        assert_eq!(info.2, expect, "files present with their modes before CreateContainer");
        let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o7777;
        if nix::unistd::geteuid().is_root() {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(mode, 0o2777, "fsGroup: setgid");
            assert_eq!(std::fs::metadata(&cache).unwrap().gid(), 2000);
            let name = vol("kubernetes.io~downward-api", "info").join("name");
            assert_eq!(std::fs::metadata(name).unwrap().gid(), 2000);
        } else {
            assert_eq!(mode & 0o777, 0o777);
        }

        // The pod goes: containers stop, then its directory is removed; the
        // hostPath directory stays.
        node.set_pods(&[]);
        node.wait_for("pod dir removed", Duration::from_secs(60), |_| !pod_dir.exists())
            .await;
        assert!(!node.is_running(&uid, "app"));
        assert!(host.is_dir(), "hostPath content is never deleted");
    });
}

#[test]
fn a_config_map_volume_without_an_api_server_keeps_the_pod_waiting() {
    run_paused(|| async {
        let node = Node::start(MockRuntime::new());
        let p = pod(r#"
metadata: {name: cfg, namespace: default, uid: u-cfg}
spec:
  containers:
  - {name: app, image: "busybox:1.36", command: [sleep, "3600"], volumeMounts: [{name: c, mountPath: /etc/c}]}
  volumes:
  - {name: c, configMap: {name: app-config}}
"#);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.holds_for("no container without its volume", Duration::from_secs(20), |n| {
            n.containers("cfg", "app").is_empty()
        })
        .await;
        assert_eq!(node.waiting_reason(&uid, "app").as_deref(), Some("ContainerCreating"));
        assert!(
            node.sandboxes("cfg").is_empty(),
            "no sandbox before the volumes are ready"
        );
    });
}

#[test]
fn killing_the_volume_manager_mid_flight_goes_unnoticed() {
    use actlet::actors::supervisor::{ChildState, KillChild};
    run_paused(|| async {
        let node = Node::start(MockRuntime::new());
        let host = node.dir.path().join("host-data");
        let p = web(&host);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        // Killed while the pod's first sync waits for its volumes.
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        node.kubelet
            .root
            .addr()
            .send(KillChild("volume-manager".into()))
            .await
            .unwrap_or_else(|e| panic!("root: {e}"))
            .unwrap_or_else(|e| panic!("kill volume-manager: {e}"));
        node.wait_for("vols Running", Duration::from_secs(30), |n| n.is_running(&uid, "app"))
            .await;
        assert_eq!(node.containers("vols", "app").len(), 1, "one container, no retry storm");
        let info = node
            .kubelet
            .tree()
            .get("root/volume-manager")
            .unwrap_or_else(|| panic!("volume-manager missing"));
        assert_eq!((info.state, info.restarts), (ChildState::Running, 1));
        // The restarted instance still cleans up.
        let pod_dir = node.dir.path().join("root/pods/u-vols");
        assert!(pod_dir.exists());
        node.set_pods(&[]);
        node.wait_for("pod dir removed", Duration::from_secs(60), |_| !pod_dir.exists())
            .await;
        assert_eq!(node.kubelet.root.exit_reason(), None);
    });
}
