//! SyncPod and kill against a REAL containerd (the traps of `real-runtime.md`:
//! pid namespace, privileged sandbox, hostNetwork hostname, AppArmor,
//! ImageStatus before pulling).
//!
//! Needs root and a running containerd: `EP=$(sudo hack/containerd/up.sh)`,
//! then `ACTLET_CRI_ENDPOINT=$EP cargo test --test kuberuntime_containerd`.
//! Without `ACTLET_CRI_ENDPOINT` every test prints a loud SKIPPED line and
//! passes, unless `ACTLET_REQUIRE_CONTAINERD=1`, which makes them fail.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use actlet::cri::{CriClient, Runtime, v1};
use actlet::kuberuntime::pod_status::{ContainerState, RuntimePodStatus, SandboxState};
use actlet::kuberuntime::{PodSyncResult, ProbeView, RuntimeManager, RuntimeManagerConfig, SyncAction, SyncPodOptions};
use actlet::messages::PodUid;
use k8s_openapi::api::core::v1::Pod;
use tempfile::TempDir;

fn endpoint(test: &str) -> Option<String> {
    match std::env::var("ACTLET_CRI_ENDPOINT") {
        Ok(ep) if !ep.is_empty() => Some(ep),
        _ if std::env::var("ACTLET_REQUIRE_CONTAINERD").as_deref() == Ok("1") => {
            panic!(
                "ACTLET_REQUIRE_CONTAINERD=1 but ACTLET_CRI_ENDPOINT is not set (run: EP=$(sudo hack/containerd/up.sh))"
            )
        }
        _ => {
            let msg = format!("\n*** SKIPPED {test}: set ACTLET_CRI_ENDPOINT (hack/containerd/up.sh prints it) ***\n");
            let _ = std::io::stderr().write_all(msg.as_bytes());
            None
        }
    }
}

struct Real {
    mgr: RuntimeManager,
    _logs: TempDir,
}

impl Real {
    fn new(ep: &str) -> Self {
        let logs = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let client = CriClient::new(ep, Duration::from_secs(60)).unwrap_or_else(|e| panic!("endpoint: {e}"));
        let config = RuntimeManagerConfig {
            pod_logs_dir: logs.path().join("pods"),
            container_logs_dir: None,
            node_name: "node-1".into(),
            node_ips: vec!["127.0.0.1".into()],
            ..Default::default()
        };
        Self {
            mgr: RuntimeManager::new(Arc::new(client), config),
            _logs: logs,
        }
    }

    async fn status(&self, p: &Pod) -> RuntimePodStatus {
        let m = &p.metadata;
        let uid = PodUid::new(m.uid.clone().unwrap_or_default());
        let (name, ns) = (
            m.name.as_deref().unwrap_or_default(),
            m.namespace.as_deref().unwrap_or_default(),
        );
        self.mgr
            .get_pod_status(&uid, name, ns)
            .await
            .unwrap_or_else(|e| panic!("status: {e}"))
    }

    async fn sync(&self, p: &Pod) -> PodSyncResult {
        let st = self.status(p).await;
        self.mgr
            .sync_pod(p, &st, &ProbeView::new(), &SyncPodOptions::default())
            .await
    }

    /// Stops and removes every sandbox of `p` (the test's cleanup).
    async fn remove(&self, p: &Pod) {
        for s in self.status(p).await.sandboxes {
            let _ = self
                .mgr
                .runtime()
                .remove_pod_sandbox(v1::RemovePodSandboxRequest { pod_sandbox_id: s.id })
                .await;
        }
    }

    async fn exec(&self, id: &str, cmd: &[&str]) -> String {
        let req = v1::ExecSyncRequest {
            container_id: id.into(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
            timeout: 5,
        };
        let resp = self
            .mgr
            .runtime()
            .exec_sync(req)
            .await
            .unwrap_or_else(|e| panic!("exec: {e}"));
        String::from_utf8_lossy(&resp.stdout).trim().to_string()
    }
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

fn pod(yaml: &str) -> Pod {
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("bad pod YAML: {e}"))
}

fn assert_ok(r: &PodSyncResult) {
    assert!(r.is_ok(), "sync failed: {:?}", r.error_message());
}

/// A pod runs with its own PID namespace (`sleep` is PID 1) and hostname,
/// restarts only the changed container, and stops within its grace period
/// even though `sleep` ignores SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_pod_runs_restarts_on_spec_change_and_stops_within_grace() {
    let Some(ep) = endpoint("real_pod_runs_restarts_on_spec_change_and_stops_within_grace") else {
        return;
    };
    let real = Real::new(&ep);
    let uid = unique("kr-web");
    let yaml = format!(
        "metadata: {{name: kr-web, namespace: default, uid: {uid}}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {{name: app, image: 'busybox:1.36', command: [sleep, '3600']}}
  - {{name: side, image: 'busybox:1.36', command: [sleep, '3601']}}
  - {{name: never, image: 'example.com/missing:1', imagePullPolicy: Never}}"
    );
    let p = pod(&yaml);
    let r = real.sync(&p).await;
    let never = r
        .failure_of(SyncAction::StartContainer, "never")
        .map(|e| e.reason.as_str());
    assert_eq!(never, Some("ErrImageNeverPull"));
    assert_eq!(
        r.results.iter().filter(|r| r.error.is_some()).count(),
        1,
        "{:?}",
        r.error_message()
    );

    let st = real.status(&p).await;
    assert_eq!(st.sandboxes[0].state, SandboxState::Ready);
    assert_eq!(st.ips.len(), 1, "pod IP from CNI");
    let app = st.find_container("app").cloned().unwrap_or_else(|| panic!("no app"));
    assert_eq!(app.state, ContainerState::Running);
    assert_eq!(
        real.exec(&app.id, &["cat", "/proc/1/cmdline"])
            .await
            .replace('\0', " ")
            .trim(),
        "sleep 3600"
    );
    assert_eq!(real.exec(&app.id, &["hostname"]).await, "kr-web");

    let changed = pod(&yaml.replace("'3600'", "'3602'").replace(
        "  - {name: never, image: 'example.com/missing:1', imagePullPolicy: Never}",
        "",
    ));
    assert_ok(&real.sync(&changed).await);
    let st = real.status(&changed).await;
    let new_app = st.find_container("app").cloned().unwrap_or_else(|| panic!("no app"));
    assert_eq!((new_app.state, new_app.restart_count), (ContainerState::Running, 1));
    let side = st.find_container("side").map(|c| (c.restart_count, c.state));
    assert_eq!(side, Some((0, ContainerState::Running)), "side untouched");

    let started = Instant::now();
    let killed = real.mgr.kill_pod(Some(&changed), &st, None).await;
    let took = started.elapsed();
    assert_ok(&killed);
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(15),
        "kill took {took:?}"
    );
    let st = real.status(&changed).await;
    assert!(st.containers.iter().all(|c| c.state != ContainerState::Running));
    assert!(st.sandboxes.iter().all(|s| s.state == SandboxState::NotReady));
    real.remove(&changed).await;
}

/// A hostNetwork pod with a privileged container: the sandbox gets no
/// hostname and is privileged, as containerd requires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_host_network_privileged_pod_runs() {
    let Some(ep) = endpoint("real_host_network_privileged_pod_runs") else {
        return;
    };
    let real = Real::new(&ep);
    let uid = unique("kr-host");
    let p = pod(&format!(
        "metadata: {{name: kr-host, namespace: default, uid: {uid}}}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  initContainers:
  - {{name: init, image: 'busybox:1.36', command: [sh, -c, 'exit 0']}}
  containers:
  - {{name: app, image: 'busybox:1.36', command: [sleep, '3600'], securityContext: {{privileged: true}}}}"
    ));
    assert_ok(&real.sync(&p).await);
    let deadline = Instant::now() + Duration::from_secs(20);
    while real.status(&p).await.find_container("app").is_none() {
        assert!(Instant::now() < deadline, "app never started");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_ok(&real.sync(&p).await);
    }
    let st = real.status(&p).await;
    assert!(st.sandboxes[0].host_network);
    assert!(st.ips.is_empty(), "hostNetwork: no pod IP from the runtime");
    assert_eq!(st.find_container("app").map(|c| c.state), Some(ContainerState::Running));
    assert_eq!(
        st.find_container("init").map(|c| (c.state, c.exit_code)),
        Some((ContainerState::Exited, 0))
    );
    assert_ok(&real.mgr.kill_pod(Some(&p), &st, None).await);
    real.remove(&p).await;
}

/// In-place resize on containerd: raising and lowering the memory limit and
/// changing the CPU limit update the running container's own cgroup (read
/// from inside it) without a restart, and the manager then sees no resize
/// in progress (containerd 1.6 reports no resources in `ContainerStatus`:
/// what actlet applied stands in). A memory limit below what the container
/// uses (read by CRI `ContainerStats`) is refused and the limit stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_resize_updates_the_running_containers_cgroup_in_place() {
    let Some(ep) = endpoint("real_resize_updates_the_running_containers_cgroup_in_place") else {
        return;
    };
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        eprintln!("cgroup v2 host: the v1 file checks of this test do not apply");
        return;
    }
    let real = Real::new(&ep);
    let uid = unique("kr-resize");
    let yaml = |memory: &str, cpu: &str| {
        format!(
            "metadata: {{name: kr-resize, namespace: default, uid: {uid}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: 'busybox:1.36'
    command: [sleep, '3600']
    resources: {{limits: {{memory: {memory}, cpu: {cpu}}}, requests: {{memory: 20Mi, cpu: 10m}}}}"
        )
    };
    let before = pod(&yaml("45Mi", "30m"));
    assert_ok(&real.sync(&before).await);
    let app = real.status(&before).await.find_container("app").cloned();
    let app = app.unwrap_or_else(|| panic!("no app"));
    let limit = |id: String| {
        let real = &real;
        async move {
            let memory = real
                .exec(&id, &["cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"])
                .await;
            let quota = real.exec(&id, &["cat", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"]).await;
            (memory, quota)
        }
    };
    assert_eq!(limit(app.id.clone()).await, ((45 << 20).to_string(), "3000".into()));

    for (memory, cpu, bytes, quota) in [("60Mi", "50m", 60 << 20, "5000"), ("40Mi", "20m", 40 << 20, "2000")] {
        let resized = pod(&yaml(memory, cpu));
        let r = real.sync(&resized).await;
        assert_ok(&r);
        assert!(
            r.results.iter().any(|x| x.action == SyncAction::ResizePodInPlace),
            "no resize step: {r:?}"
        );
        let st = real.status(&resized).await;
        let now = st.find_container("app").cloned().unwrap_or_else(|| panic!("no app"));
        assert_eq!(now.id, app.id, "resized in place, not restarted");
        assert_eq!(limit(now.id.clone()).await, (bytes.to_string(), quota.to_string()));
        assert!(!real.mgr.resize_in_progress(&resized, &st), "{memory}/{cpu} applied");
        // A second sync has nothing left to do.
        let again = real.sync(&resized).await;
        assert!(!again.results.iter().any(|x| x.action == SyncAction::ResizePodInPlace));
    }
    // 24 MiB in the container's /dev/shm is charged to its cgroup: a 10Mi
    // limit is below what it uses, and is refused with upstream's message.
    real.exec(
        &app.id,
        &["dd", "if=/dev/zero", "of=/dev/shm/fill", "bs=1M", "count=24"],
    )
    .await;
    let small = pod(&yaml("10Mi", "20m"));
    let r = real.sync(&small).await;
    let refused = r
        .results
        .iter()
        .find(|x| x.action == SyncAction::ResizePodInPlace)
        .and_then(|x| x.error.as_ref())
        .map(|e| e.message.clone())
        .unwrap_or_else(|| panic!("the decrease was not refused: {r:?}"));
    assert!(
        refused.starts_with("cannot decrease memory limits: attempting to set container \"app\" memory limit (10485760) below current usage ("),
        "{refused}"
    );
    assert_eq!(limit(app.id.clone()).await.0, (40 << 20).to_string(), "the limit stays");
    let st = real.status(&small).await;
    assert!(real.mgr.resize_in_progress(&small, &st));
    assert_eq!(real.mgr.resize_error(&small).as_deref(), Some(refused.as_str()));
    let st = real.status(&before).await;
    assert_ok(&real.mgr.kill_pod(Some(&before), &st, None).await);
    real.remove(&before).await;
}

/// Container log rotation on containerd: a chatty container's log is
/// renamed aside once past the size limit, containerd reopens it
/// (`ReopenContainerLog`) and the container goes on writing to the new file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_log_rotation_reopens_the_log_in_containerd() {
    let Some(ep) = endpoint("real_log_rotation_reopens_the_log_in_containerd") else {
        return;
    };
    let real = Real::new(&ep);
    let uid = unique("kr-logs");
    let p = pod(&format!(
        "metadata: {{name: kr-logs, namespace: default, uid: {uid}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {{name: app, image: 'busybox:1.36', command: [sh, -c, 'i=0; while true; do echo line $i; i=$((i+1)); sleep 0.01; done']}}"
    ));
    assert_ok(&real.sync(&p).await);
    let app = real.status(&p).await.find_container("app").cloned();
    let app = app.unwrap_or_else(|| panic!("no app"));
    let log = real
        .mgr
        .runtime()
        .container_status(v1::ContainerStatusRequest {
            container_id: app.id.clone(),
            verbose: false,
        })
        .await
        .ok()
        .and_then(|s| s.status)
        .map(|s| std::path::PathBuf::from(s.log_path))
        .unwrap_or_else(|| panic!("no log path"));
    let deps = actlet::logrotate::LogManagerDeps::new(
        real.mgr.runtime().clone(),
        actlet::logrotate::LogRotatePolicy {
            max_size: 2048,
            max_files: 3,
            ..Default::default()
        },
    );
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    for _ in 0..3 {
        while size(&log) < 2048 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        actlet::logrotate::actor::round(&deps).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let dir = log.parent().unwrap_or_else(|| panic!("log dir"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    assert_eq!(names.len(), 3, "current + newest rotated + one gzipped: {names:?}");
    assert!(names.iter().any(|n| n.ends_with(".gz")), "{names:?}");
    let current = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        current.contains(" stdout F line "),
        "containerd writes to the reopened log: {current:.200}"
    );
    let st = real.status(&p).await;
    assert_ok(&real.mgr.kill_pod(Some(&p), &st, None).await);
    real.remove(&p).await;
}

/// The container `securityContext` as runc applies it on containerd
/// (upstream's e2e security_context.go checks): `runAsUser`/`runAsGroup` are
/// the process's ids, `readOnlyRootFilesystem` refuses writes to `/`,
/// `allowPrivilegeEscalation: false` sets no_new_privs, `capabilities`
/// (drop ALL, add NET_BIND_SERVICE) leave only that bit in the bounding set;
/// `runAsNonRoot` with an image that runs as root and no `runAsUser` is
/// refused before the container is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_security_context_is_what_the_process_runs_with() {
    let Some(ep) = endpoint("real_security_context_is_what_the_process_runs_with") else {
        return;
    };
    let real = Real::new(&ep);
    let uid = unique("kr-secctx");
    let p = pod(&format!(
        "metadata: {{name: kr-secctx, namespace: default, uid: {uid}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: 'busybox:1.36'
    command: [sleep, '3600']
    securityContext:
      runAsUser: 1234
      runAsGroup: 2345
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {{drop: [ALL], add: [NET_BIND_SERVICE]}}"
    ));
    assert_ok(&real.sync(&p).await);
    let app = real.status(&p).await.find_container("app").cloned();
    let app = app.unwrap_or_else(|| panic!("no app"));
    let sh = |script: &str| {
        let (real, id, script) = (&real, app.id.clone(), script.to_string());
        async move { real.exec(&id, &["sh", "-c", &script]).await }
    };
    assert_eq!(sh("echo $(id -u):$(id -g)").await.trim(), "1234:2345");
    assert_eq!(
        sh("touch /written 2>/dev/null && echo writable || echo read-only")
            .await
            .trim(),
        "read-only"
    );
    assert_eq!(sh("grep NoNewPrivs /proc/self/status").await.trim(), "NoNewPrivs:\t1");
    // NET_BIND_SERVICE is capability 10
    assert_eq!(
        sh("grep CapBnd /proc/self/status").await.trim(),
        "CapBnd:\t0000000000000400"
    );
    let st = real.status(&p).await;
    assert_ok(&real.mgr.kill_pod(Some(&p), &st, None).await);
    real.remove(&p).await;

    let uid = unique("kr-nonroot");
    let nonroot = pod(&format!(
        "metadata: {{name: kr-nonroot, namespace: default, uid: {uid}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {{name: app, image: 'busybox:1.36', command: [sleep, '3600'], securityContext: {{runAsNonRoot: true}}}}"
    ));
    let r = real.sync(&nonroot).await;
    let refused = r
        .results
        .iter()
        .find_map(|x| x.error.as_ref())
        .map(|e| e.message.clone())
        .unwrap_or_else(|| panic!("runAsNonRoot with a root image was not refused: {r:?}"));
    assert!(refused.contains("runAsNonRoot and image will run as root"), "{refused}");
    assert!(
        real.status(&nonroot).await.find_container("app").is_none(),
        "no container created"
    );
    let st = real.status(&nonroot).await;
    assert_ok(&real.mgr.kill_pod(Some(&nonroot), &st, None).await);
    real.remove(&nonroot).await;
}
