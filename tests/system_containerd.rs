//! System tests: the real `actlet` binary on a REAL containerd, used as a
//! user would (static pod manifests in a directory, `GET /pods` on the
//! read-only port) and checked against what the CRI itself reports.
//!
//! Needs root and a running containerd: `EP=$(sudo hack/containerd/up.sh)`,
//! then `ACTLET_CRI_ENDPOINT=$EP cargo test --test system_containerd`
//! (`hack/containerd/down.sh` tears it down). Without `ACTLET_CRI_ENDPOINT`
//! every test prints a loud SKIPPED line and passes, unless
//! `ACTLET_REQUIRE_CONTAINERD=1`, which makes them fail instead.
//!
//! Each test runs its own actlet (its own node name, root dir and manifest
//! dir); they take turns on the runtime (see `support/daemon.rs`) and remove
//! everything they created, even when they fail. `--nocapture` shows progress;
//! `ACTLET_SYSTEM_KEEP=1` keeps each test's temp dir (actlet's log included).

#[path = "support/daemon.rs"]
mod daemon;

use std::time::{Duration, Instant};

use actlet::cri::{Runtime, v1};
use daemon::{Env, container_status, init_status, phase, pod_summary, uid};
use k8s_openapi::api::core::v1::Pod;

const BUSYBOX: &str = "docker.io/library/busybox:1.36";

/// How long a pod may take to start here (sandbox + image check + container).
const START: Duration = Duration::from_secs(30);

/// A one-container pod manifest: `name`, restart policy, grace period, command.
fn pod_yaml(name: &str, restart: &str, grace: u32, command: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: {restart}
  terminationGracePeriodSeconds: {grace}
  containers:
    - name: main
      image: {BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: {command}
"#
    )
}

fn is_running(p: &Pod, container: &str) -> bool {
    container_status(p, container).is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

fn container_id(p: &Pod, container: &str) -> String {
    container_status(p, container)
        .and_then(|c| c.container_id.clone())
        .unwrap_or_else(|| panic!("{container} has no containerID: {}", pod_summary(p)))
}

/// `containerd://<id>` → `<id>`.
fn cri_id(status_id: &str) -> &str {
    status_id
        .strip_prefix("containerd://")
        .unwrap_or_else(|| panic!("containerID {status_id:?} lacks the containerd:// prefix"))
}

/// 1. A long-running pod: Running with an IP, its container running and
///    ready, and exactly one sandbox and one container in the runtime (also
///    a few seconds later: syncs do not duplicate anything).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_pod() {
    let Some(env) = Env::start("running_pod", "run").await else {
        return;
    };
    env.write_manifest(
        "sleeper.yaml",
        &pod_yaml("sleeper", "Always", 1, r#"["sleep", "3600"]"#),
    );
    let p = env
        .wait_pod("sleeper", "Running and ready", START, |p| {
            phase(p) == "Running" && container_status(p, "main").is_some_and(|c| c.ready)
        })
        .await;
    let st = p.status.clone().unwrap_or_default();
    let ip = st.pod_ip.clone().unwrap_or_default();
    assert!(
        ip.parse::<std::net::Ipv4Addr>().is_ok(),
        "podIP {ip:?}: {}",
        pod_summary(&p)
    );
    assert!(is_running(&p, "main"), "{}", pod_summary(&p));
    let c = container_status(&p, "main").unwrap_or_else(|| unreachable!());
    assert_eq!(c.restart_count, 0, "{}", pod_summary(&p));
    assert_eq!(c.image, BUSYBOX);
    assert_eq!(
        p.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some(env.node.as_str())
    );
    let id = container_id(&p, "main");

    // Let several sync ticks and relists pass: still one of each.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let view = env.cri_view().await;
    let u = uid(&p);
    assert_eq!(view.sandboxes_of(&u).len(), 1, "sandboxes:\n{}", view.summary());
    assert_eq!(view.ready_sandboxes_of(&u), 1, "{}", view.summary());
    let containers = view.containers_of(&u);
    assert_eq!(containers.len(), 1, "containers:\n{}", view.summary());
    assert_eq!(containers[0].id, cri_id(&id));
    assert_eq!(containers[0].state, v1::ContainerState::ContainerRunning as i32);
    let sandbox = view.sandboxes_of(&u)[0].id.clone();
    let status = env
        .cri
        .pod_sandbox_status(v1::PodSandboxStatusRequest {
            pod_sandbox_id: sandbox,
            verbose: false,
        })
        .await
        .unwrap_or_else(|e| panic!("PodSandboxStatus: {e}"));
    let net_ip = status.status.and_then(|s| s.network).map(|n| n.ip).unwrap_or_default();
    assert_eq!(net_ip, ip, "podIP must be the sandbox's IP");
    let again = env.pod("sleeper").await.unwrap_or_else(|| panic!("sleeper vanished"));
    assert_eq!(container_id(&again, "main"), id, "{}", pod_summary(&again));
}

/// 2. Containers that exit: restartPolicy Never + exit 0 → Succeeded
///    (Completed), Never + exit 1 → Failed (Error, exit code 1), OnFailure +
///    exit 0 → Succeeded; none of them is restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exiting_pods() {
    let Some(env) = Env::start("exiting_pods", "exit").await else {
        return;
    };
    let cases = [
        ("never-ok", "Never", 0, "Succeeded", "Completed"),
        ("never-fail", "Never", 1, "Failed", "Error"),
        ("onfail-ok", "OnFailure", 0, "Succeeded", "Completed"),
    ];
    for (name, restart, code, _, _) in cases {
        let cmd = format!(r#"["sh", "-c", "sleep 1; exit {code}"]"#);
        env.write_manifest(&format!("{name}.yaml"), &pod_yaml(name, restart, 1, &cmd));
    }
    for (name, _, code, want_phase, reason) in cases {
        let p = env.wait_pod(name, want_phase, START, |p| phase(p) == want_phase).await;
        let c = container_status(&p, "main").unwrap_or_else(|| panic!("no status: {}", pod_summary(&p)));
        let t = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.clone())
            .unwrap_or_else(|| panic!("{name}: not terminated: {}", pod_summary(&p)));
        assert_eq!(t.exit_code, code, "{}", pod_summary(&p));
        assert_eq!(t.reason.as_deref(), Some(reason), "{}", pod_summary(&p));
        assert!(t.container_id.is_some() && t.finished_at.is_some(), "{t:?}");
        assert_eq!(c.restart_count, 0, "{}", pod_summary(&p));
        assert!(!c.ready, "{}", pod_summary(&p));
    }
    // A terminal pod stays terminal: no restart, no second container.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let view = env.cri_view().await;
    for (name, _, _, want_phase, _) in cases {
        let p = env.pod(name).await.unwrap_or_else(|| panic!("{name} vanished"));
        assert_eq!(phase(&p), want_phase, "{}", pod_summary(&p));
        let u = uid(&p);
        assert_eq!(view.sandboxes_of(&u).len(), 1, "{name}:\n{}", view.summary());
        assert_eq!(view.containers_of(&u).len(), 1, "{name}:\n{}", view.summary());
        assert!(view.running_containers_of(&u).is_empty(), "{name}:\n{}", view.summary());
    }
}

/// 3. A container that always fails under restartPolicy Always is restarted
///    with upstream's backoff: the first restart at once, then 10 s, then
///    20 s, waiting in CrashLoopBackOff in between; lastState is the failed
///    run, and the sandbox is never recreated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_looping_pod() {
    let Some(env) = Env::start("crash_looping_pod", "crash").await else {
        return;
    };
    env.write_manifest(
        "crasher.yaml",
        &pod_yaml("crasher", "Always", 1, r#"["sh", "-c", "exit 1"]"#),
    );
    let mut saw_backoff = false;
    // When restartCount was first seen at 1, 2, 3.
    let mut reached: [Option<Instant>; 4] = [None; 4];
    let p = env
        .wait_for(
            "crasher: restartCount 3 and CrashLoopBackOff seen",
            Duration::from_secs(90),
            async || {
                let p = env.pod("crasher").await?;
                let c = container_status(&p, "main")?;
                let waiting = c.state.as_ref().and_then(|s| s.waiting.as_ref());
                if waiting.and_then(|w| w.reason.as_deref()) == Some("CrashLoopBackOff") && !saw_backoff {
                    env.note(format!("CrashLoopBackOff: {}", pod_summary(&p)));
                    saw_backoff = true;
                }
                let n = usize::try_from(c.restart_count).unwrap_or(0).min(3);
                if reached[n].is_none() {
                    env.note(format!("restartCount {}", c.restart_count));
                    reached[n] = Some(Instant::now());
                }
                (saw_backoff && c.restart_count >= 3).then_some(p)
            },
        )
        .await;
    let gap = |a: usize, b: usize| match (reached[a], reached[b]) {
        (Some(a), Some(b)) => b.saturating_duration_since(a),
        _ => panic!("restartCount skipped {a} or {b}: {reached:?}"),
    };
    let (second, third) = (gap(1, 2), gap(2, 3));
    env.note(format!("restart 1 -> 2 after {second:.1?}, 2 -> 3 after {third:.1?}"));
    assert!(
        second >= Duration::from_secs(8),
        "restart 2 came {second:?} after restart 1 (backoff 10 s)"
    );
    assert!(
        third >= Duration::from_secs(18),
        "restart 3 came {third:?} after restart 2 (backoff 20 s)"
    );
    let c = container_status(&p, "main").unwrap_or_else(|| unreachable!());
    let last = c
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .unwrap_or_else(|| panic!("no lastState.terminated: {c:?}"));
    assert_eq!(last.exit_code, 1, "{c:?}");
    assert_eq!(last.reason.as_deref(), Some("Error"), "{c:?}");
    assert_eq!(
        phase(&p),
        "Running",
        "restartPolicy Always keeps the pod Running: {}",
        pod_summary(&p)
    );
    let view = env.cri_view().await;
    let u = uid(&p);
    assert_eq!(view.sandboxes_of(&u).len(), 1, "{}", view.summary());
    assert_eq!(view.ready_sandboxes_of(&u), 1, "{}", view.summary());
    let attempts: Vec<u32> = view
        .named(&u, "main")
        .iter()
        .filter_map(|c| c.metadata.as_ref().map(|m| m.attempt))
        .collect();
    assert!(
        attempts.iter().any(|a| *a >= 3),
        "the runtime must have seen attempt 3: {attempts:?}\n{}",
        view.summary()
    );
}

/// 4. Init containers: one that succeeds runs before the main container
///    (Running, init status terminated Completed); one that fails under
///    restartPolicy Never fails the pod and the main container is never created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_containers() {
    let Some(env) = Env::start("init_containers", "init").await else {
        return;
    };
    let yaml = |name: &str, restart: &str, init_cmd: &str| {
        format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: {restart}
  terminationGracePeriodSeconds: 1
  initContainers:
    - name: setup
      image: {BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: {init_cmd}
  containers:
    - name: main
      image: {BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: ["sleep", "3600"]
"#
        )
    };
    env.write_manifest("init-ok.yaml", &yaml("init-ok", "Always", r#"["echo", "ok"]"#));
    env.write_manifest(
        "init-fail.yaml",
        &yaml("init-fail", "Never", r#"["sh", "-c", "exit 3"]"#),
    );

    let p = env
        .wait_pod("init-ok", "Running", START, |p| {
            phase(p) == "Running" && is_running(p, "main")
        })
        .await;
    let init = init_status(&p, "setup").unwrap_or_else(|| panic!("no init status: {}", pod_summary(&p)));
    let t = init
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .unwrap_or_else(|| panic!("init not terminated: {}", pod_summary(&p)));
    assert_eq!(
        (t.exit_code, t.reason.as_deref()),
        (0, Some("Completed")),
        "{}",
        pod_summary(&p)
    );
    assert_eq!(init.restart_count, 0);
    assert!(init.ready, "a completed init container is ready: {init:?}");
    let main_started = container_status(&p, "main")
        .and_then(|c| c.state.as_ref()?.running.as_ref()?.started_at.clone())
        .unwrap_or_else(|| panic!("main has no startedAt: {}", pod_summary(&p)));
    let init_finished = t.finished_at.clone().unwrap_or_else(|| panic!("no finishedAt: {t:?}"));
    assert!(
        init_finished.0 <= main_started.0,
        "main started before init finished: {}",
        pod_summary(&p)
    );

    let p = env
        .wait_pod("init-fail", "Failed", START, |p| phase(p) == "Failed")
        .await;
    let init = init_status(&p, "setup").unwrap_or_else(|| panic!("no init status: {}", pod_summary(&p)));
    let t = init
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .unwrap_or_else(|| panic!("init not terminated: {}", pod_summary(&p)));
    assert_eq!(
        (t.exit_code, t.reason.as_deref()),
        (3, Some("Error")),
        "{}",
        pod_summary(&p)
    );
    assert!(!is_running(&p, "main"), "{}", pod_summary(&p));
    // Give a broken kubelet the chance to start it anyway.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let view = env.cri_view().await;
    let u = uid(&p);
    assert!(
        view.named(&u, "main").is_empty(),
        "main was created:\n{}",
        view.summary()
    );
    assert_eq!(
        view.named(&u, "setup").len(),
        1,
        "the init container ran once:\n{}",
        view.summary()
    );
    let p = env
        .pod("init-fail")
        .await
        .unwrap_or_else(|| panic!("init-fail vanished"));
    assert_eq!(phase(&p), "Failed", "{}", pod_summary(&p));
    assert!(
        container_status(&p, "main").is_none_or(|c| c.container_id.is_none()),
        "{}",
        pod_summary(&p)
    );
}

/// 5. Deleting a pod (its manifest) stops it gracefully: its container
///    (`sleep` as PID 1 ignores SIGTERM) is killed only when the 3 s grace
///    period is over, the pod leaves `/pods`, and its sandbox is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_delete() {
    let Some(env) = Env::start("graceful_delete", "grace").await else {
        return;
    };
    env.write_manifest(
        "graceful.yaml",
        &pod_yaml("graceful", "Always", 3, r#"["sleep", "3600"]"#),
    );
    let p = env
        .wait_pod("graceful", "Running", START, |p| {
            phase(p) == "Running" && is_running(p, "main")
        })
        .await;
    let u = uid(&p);
    let id = cri_id(&container_id(&p, "main")).to_string();

    env.remove_manifest("graceful.yaml");
    let removed = Instant::now();
    env.wait_for(
        "graceful: container no longer running",
        Duration::from_secs(20),
        async || {
            let view = env.cri_view().await;
            let c = view.containers.iter().find(|c| c.id == id);
            c.is_none_or(|c| c.state != v1::ContainerState::ContainerRunning as i32)
                .then_some(())
        },
    )
    .await;
    let stopped_after = removed.elapsed();
    env.note(format!(
        "container stopped {stopped_after:?} after the manifest was removed"
    ));
    assert!(
        stopped_after >= Duration::from_millis(2500),
        "the container was stopped after {stopped_after:?}, before its 3 s grace period"
    );
    assert!(stopped_after < Duration::from_secs(15), "{stopped_after:?}");

    env.wait_for("graceful: gone from /pods", Duration::from_secs(10), async || {
        env.pod("graceful").await.is_none().then_some(())
    })
    .await;
    env.wait_for("graceful: no ready sandbox", Duration::from_secs(10), async || {
        (env.cri_view().await.ready_sandboxes_of(&u) == 0).then_some(())
    })
    .await;
    let view = env.cri_view().await;
    assert!(view.running_containers_of(&u).is_empty(), "{}", view.summary());
    assert!(view.sandboxes_of(&u).len() <= 1, "{}", view.summary());
}

/// 6. actlet killed with SIGKILL and restarted while pods run: the pod whose
///    manifest remains is adopted (same sandbox, same container, restartCount
///    0, nothing duplicated); the pod whose manifest vanished meanwhile is
///    killed by housekeeping. Finally a SIGTERM stops actlet cleanly and
///    leaves the adopted pod running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_recovery_after_kill_9() {
    let Some(mut env) = Env::start("restart_recovery_after_kill_9", "rec").await else {
        return;
    };
    env.write_manifest("keep.yaml", &pod_yaml("keep", "Always", 2, r#"["sleep", "3600"]"#));
    env.write_manifest("gone.yaml", &pod_yaml("gone", "Always", 2, r#"["sleep", "3600"]"#));
    let keep = env
        .wait_pod("keep", "Running", START, |p| {
            phase(p) == "Running" && is_running(p, "main")
        })
        .await;
    let gone = env
        .wait_pod("gone", "Running", START, |p| {
            phase(p) == "Running" && is_running(p, "main")
        })
        .await;
    let (keep_uid, gone_uid) = (uid(&keep), uid(&gone));
    let keep_id = container_id(&keep, "main");
    let before = env.cri_view().await;
    let keep_sandbox = before
        .sandboxes_of(&keep_uid)
        .first()
        .map(|s| s.id.clone())
        .unwrap_or_else(|| panic!("no sandbox:\n{}", before.summary()));
    let gone_started = container_status(&gone, "main").map(|c| c.container_id.clone());

    env.kill_9();
    env.remove_manifest("gone.yaml");
    // Nothing stops pods while actlet is down.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let down = env.cri_view().await;
    assert_eq!(down.running_containers_of(&gone_uid).len(), 1, "{}", down.summary());
    env.restart().await;

    // The remaining pod: adopted as it is.
    let keep = env
        .wait_pod("keep", "Running again in /pods", START, |p| {
            phase(p) == "Running" && is_running(p, "main")
        })
        .await;
    assert_eq!(uid(&keep), keep_uid);
    // The removed pod: killed by housekeeping (sandbox stopped, container exited).
    env.wait_for("gone: killed by housekeeping", Duration::from_secs(15), async || {
        let v = env.cri_view().await;
        (v.ready_sandboxes_of(&gone_uid) == 0 && v.running_containers_of(&gone_uid).is_empty()).then_some(())
    })
    .await;
    assert!(env.pod("gone").await.is_none(), "gone is still in /pods");

    // Several syncs after the restart: the kept pod is still the same.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let keep = env.pod("keep").await.unwrap_or_else(|| panic!("keep vanished"));
    let c = container_status(&keep, "main").unwrap_or_else(|| panic!("{}", pod_summary(&keep)));
    assert_eq!(
        c.container_id.as_ref(),
        Some(&keep_id),
        "keep's container was replaced: {}",
        pod_summary(&keep)
    );
    assert_eq!(c.restart_count, 0, "{}", pod_summary(&keep));
    assert!(c.ready, "{}", pod_summary(&keep));
    let after = env.cri_view().await;
    let sandboxes: Vec<&str> = after.sandboxes_of(&keep_uid).iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        sandboxes,
        [keep_sandbox.as_str()],
        "duplicate sandbox:\n{}",
        after.summary()
    );
    let containers = after.containers_of(&keep_uid);
    assert_eq!(containers.len(), 1, "{}", after.summary());
    assert_eq!(containers[0].id, cri_id(&keep_id));
    assert_eq!(containers[0].state, v1::ContainerState::ContainerRunning as i32);
    assert_eq!(containers[0].metadata.as_ref().map(|m| m.attempt), Some(0));
    // The killed pod was not restarted either.
    assert!(after.running_containers_of(&gone_uid).is_empty(), "{}", after.summary());
    assert!(gone_started.is_some());

    // A graceful stop (SIGTERM) ends actlet cleanly and leaves its pods running.
    let exit = env.stop(Duration::from_secs(35));
    assert!(
        exit.success(),
        "actlet exited with {exit} after SIGTERM\n{}",
        env.log_tail(30)
    );
    let stopped = env.cri_view().await;
    let running: Vec<&str> = stopped
        .running_containers_of(&keep_uid)
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(running, [cri_id(&keep_id)], "{}", stopped.summary());
    assert_eq!(stopped.ready_sandboxes_of(&keep_uid), 1, "{}", stopped.summary());
}

/// 7. Changing one container's command and env in the manifest (same pod
///    UID) restarts that container only; its sibling keeps its container.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_update_restarts_changed_container_only() {
    let Some(env) = Env::start("spec_update_restarts_changed_container_only", "upd").await else {
        return;
    };
    // A fixed UID: without one, the UID is a hash of the manifest, and any
    // change makes it a different pod (upstream behaviour).
    let pod_uid = format!("5e1f0000-0000-4000-8000-{:012}", std::process::id());
    let yaml = |cmd: &str, value: &str| {
        format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: upd
  uid: {pod_uid}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: changed
      image: {BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: {cmd}
      env:
        - name: GREETING
          value: "{value}"
    - name: stable
      image: {BUSYBOX}
      imagePullPolicy: IfNotPresent
      command: ["sleep", "3600"]
"#
        )
    };
    env.write_manifest("upd.yaml", &yaml(r#"["sleep", "3600"]"#, "one"));
    let before = env
        .wait_pod("upd", "Running with both containers", START, |p| {
            phase(p) == "Running" && is_running(p, "changed") && is_running(p, "stable")
        })
        .await;
    assert_eq!(uid(&before), pod_uid);
    let (changed_id, stable_id) = (container_id(&before, "changed"), container_id(&before, "stable"));

    env.write_manifest("upd.yaml", &yaml(r#"["sh", "-c", "exec sleep 3601"]"#, "two"));
    let after = env
        .wait_pod("upd", "changed container replaced and running", START, |p| {
            is_running(p, "changed")
                && container_status(p, "changed")
                    .and_then(|c| c.container_id.as_ref())
                    .is_some_and(|id| *id != changed_id)
        })
        .await;
    assert_eq!(uid(&after), pod_uid);
    let stable = container_status(&after, "stable").unwrap_or_else(|| unreachable!());
    assert_eq!(
        stable.container_id.as_ref(),
        Some(&stable_id),
        "{}",
        pod_summary(&after)
    );
    assert_eq!(stable.restart_count, 0, "{}", pod_summary(&after));
    assert!(is_running(&after, "stable"));
    let changed = container_status(&after, "changed").unwrap_or_else(|| unreachable!());
    assert_eq!(changed.restart_count, 1, "{}", pod_summary(&after));

    // The runtime agrees: the new container has the new spec; one sandbox.
    let view = env.cri_view().await;
    assert_eq!(view.sandboxes_of(&pod_uid).len(), 1, "{}", view.summary());
    let new_id = cri_id(changed.container_id.as_deref().unwrap_or_default()).to_string();
    let exec = env
        .cri
        .exec_sync(v1::ExecSyncRequest {
            container_id: new_id,
            cmd: vec!["sh".into(), "-c".into(), "echo $GREETING".into()],
            timeout: 10,
        })
        .await
        .unwrap_or_else(|e| panic!("ExecSync: {e}"));
    assert_eq!(String::from_utf8_lossy(&exec.stdout).trim(), "two", "{exec:?}");
    let running: Vec<&str> = view
        .running_containers_of(&pod_uid)
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert!(running.contains(&cri_id(&stable_id)), "{}", view.summary());
    assert!(!running.contains(&cri_id(&changed_id)), "{}", view.summary());
    assert_eq!(running.len(), 2, "{}", view.summary());
}
