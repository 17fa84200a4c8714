//! The rest of the pod spec on the whole kubelet (mock CRI, paused time):
//! `activeDeadlineSeconds`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime};
use actlet::testing::{PodBuilder, TestNode, run_paused, wait_until};
use k8s_openapi::api::core::v1::Pod;
use tokio::time::Instant;

/// (reason, message) of a recorded event.
type Seen = (String, String);

fn node(mock: MockRuntime) -> (TestNode, Arc<Mutex<Vec<Seen>>>) {
    let events: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = events.clone();
    let node = TestNode::builder()
        .mock(mock)
        .customize(move |b| b.on_event(move |e| log.lock().unwrap().push((e.reason, e.message))))
        .start();
    (node, events)
}

fn with_deadline(seconds: i64) -> Pod {
    PodBuilder::new("web")
        .uid("u-web")
        .grace_period(5)
        .container("app", "busybox:1.36", ["sleep", "3600"])
        .modify(|p| p.spec.as_mut().unwrap().active_deadline_seconds = Some(seconds))
        .build()
}

#[test]
fn a_pod_past_its_active_deadline_is_failed_and_its_containers_killed() {
    run_paused(async {
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let (node, events) = node(mock.clone());
        node.set_pods(vec![with_deadline(30)]);
        node.wait_for_phase("default", "web", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let running_at = Instant::now();
        node.wait_for_phase("default", "web", "Failed", Duration::from_secs(120))
            .await
            .unwrap();
        // Synced again at the deadline, not at the next periodic resync (60 s).
        let waited = running_at.elapsed();
        assert!(waited <= Duration::from_secs(35), "failed only after {waited:?}");
        let status = node.status("default", "web").unwrap();
        assert_eq!(status.reason.as_deref(), Some("DeadlineExceeded"));
        assert_eq!(
            status.message.as_deref(),
            Some("Pod was active on the node longer than the specified deadline")
        );
        // The containers are killed (within the 5 s grace) after the Failed status.
        let all_terminated = || {
            let s = node
                .status("default", "web")
                .unwrap()
                .container_statuses
                .unwrap_or_default();
            !s.is_empty()
                && s.iter()
                    .all(|c| c.state.as_ref().is_some_and(|s| s.terminated.is_some()))
        };
        wait_until(all_terminated, Duration::from_secs(30))
            .await
            .unwrap_or_else(|_| panic!("containers still running: {}", node.describe("default", "web")));
        assert_eq!(
            node.status("default", "web").unwrap().reason.as_deref(),
            Some("DeadlineExceeded")
        );
        assert!(
            events.lock().unwrap().iter().any(|(r, m)| r == "DeadlineExceeded"
                && m == "Pod was active on the node longer than the specified deadline"),
            "no DeadlineExceeded event"
        );
    });
}

#[test]
fn a_pod_within_its_deadline_keeps_running() {
    run_paused(async {
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let (node, _) = node(mock);
        node.set_pods(vec![with_deadline(3600)]);
        node.wait_for_phase("default", "web", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(300)).await;
        assert_eq!(node.status("default", "web").unwrap().phase.as_deref(), Some("Running"));
    });
}

/// The pod's `app` container status once it has terminated with a message.
async fn terminated_message(node: &TestNode) -> String {
    let message = || {
        node.status("default", "web")
            .and_then(|s| s.container_statuses)
            .and_then(|c| c.into_iter().next())
            .and_then(|c| c.state?.terminated)
            .map(|t| t.message.unwrap_or_default())
    };
    wait_until(|| message().is_some(), Duration::from_secs(60))
        .await
        .unwrap_or_else(|_| panic!("not terminated: {}", node.describe("default", "web")));
    message().unwrap_or_default()
}

fn once(path: &str, policy: &str) -> Pod {
    let (path, policy) = (path.to_string(), policy.to_string());
    PodBuilder::new("web")
        .uid("u-web")
        .restart_policy("Never")
        .container("app", "busybox:1.36", ["sh", "-c", "exit 1"])
        .modify(move |p| {
            let c = &mut p.spec.as_mut().unwrap().containers[0];
            c.termination_message_path = Some(path);
            c.termination_message_policy = Some(policy);
        })
        .build()
}

#[test]
fn the_termination_message_file_is_mounted_and_read_after_exit() {
    run_paused(async {
        let mock = MockRuntime::builder()
            .script("app", Behaviour::exit_after(Duration::from_secs(10), 1))
            .build();
        let (node, _) = node(mock.clone());
        node.set_pods(vec![once("/tmp/my-message", "File")]);
        wait_until(|| mock.find_container("web", "app").is_some(), Duration::from_secs(60))
            .await
            .unwrap();
        let c = mock.find_container("web", "app").unwrap();
        let mount = c
            .status
            .mounts
            .iter()
            .find(|m| m.container_path == "/tmp/my-message")
            .expect("termination message mount")
            .clone();
        assert!(!mount.readonly);
        let host = std::path::Path::new(&mount.host_path);
        assert!(
            host.starts_with(node.dir().join("root/pods/u-web/containers/app")),
            "{host:?}"
        );
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(host).unwrap().permissions().mode() & 0o777, 0o666);
        }
        // What the container writes before it exits.
        std::fs::write(host, "DONE").unwrap();
        assert_eq!(terminated_message(&node).await, "DONE");
    });
}

#[test]
fn fallback_to_logs_on_error_takes_the_log_tail() {
    run_paused(async {
        let mock = MockRuntime::builder()
            .script(
                "app",
                Behaviour::exit_after(Duration::from_secs(1), 2)
                    .stdout("first")
                    .stderr("it broke"),
            )
            .build();
        let (node, _) = node(mock);
        node.set_pods(vec![once("/dev/termination-log", "FallbackToLogsOnError")]);
        assert_eq!(terminated_message(&node).await, "first\nit broke\n");
    });
}

#[test]
fn etc_hosts_is_managed_with_the_pod_ip_and_host_aliases() {
    run_paused(async {
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let (node, _) = node(mock.clone());
        let pod = PodBuilder::new("web")
            .uid("u-web")
            .container("app", "busybox:1.36", ["sleep", "3600"])
            .modify(|p| {
                p.spec.as_mut().unwrap().host_aliases = Some(vec![k8s_openapi::api::core::v1::HostAlias {
                    ip: "123.45.67.89".into(),
                    hostnames: Some(vec!["foo".into(), "bar".into()]),
                }])
            })
            .build();
        node.set_pods(vec![pod]);
        node.wait_for_phase("default", "web", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let ip = node.status("default", "web").unwrap().pod_ip.expect("pod IP");
        let c = mock.find_container("web", "app").unwrap();
        let mount = c
            .status
            .mounts
            .iter()
            .find(|m| m.container_path == "/etc/hosts")
            .expect("/etc/hosts mount")
            .clone();
        assert_eq!(
            std::path::Path::new(&mount.host_path),
            node.dir().join("root/pods/u-web/etc-hosts")
        );
        let hosts = std::fs::read_to_string(&mount.host_path).unwrap();
        assert!(
            hosts.starts_with("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"),
            "{hosts}"
        );
        assert!(hosts.contains(&format!("\n{ip}\tweb\n")), "{hosts}");
        assert!(
            hosts.ends_with("\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\n"),
            "{hosts}"
        );
    });
}

#[test]
fn restart_count_keeps_growing_across_a_kubelet_restart() {
    run_paused(async {
        let mock = MockRuntime::builder()
            .script("app", Behaviour::exit_after(Duration::from_secs(1), 1))
            .build();
        let pod = || {
            PodBuilder::new("web")
                .uid("u-web")
                .container("app", "busybox:1.36", ["sh", "-c", "exit 1"])
                .build()
        };
        let first = TestNode::with_mock(mock.clone());
        first.set_pods(vec![pod()]);
        let before = first
            .wait_for_restart_count("default", "web", "app", 2, Duration::from_secs(300))
            .await
            .unwrap()
            .restart_count;
        first.shutdown().await.unwrap();
        drop(first);

        // A new kubelet (fresh root and log directories) on the same runtime.
        let second = TestNode::with_mock(mock);
        second.set_pods(vec![pod()]);
        // Sampled every 100 ms until it has grown past its value before the restart.
        let mut seen = Vec::new();
        for _ in 0..6_000 {
            let n = second
                .status("default", "web")
                .and_then(|s| s.container_statuses)
                .and_then(|c| c.first().map(|c| c.restart_count));
            seen.extend(n);
            if n.is_some_and(|n| n > before) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            seen.last().is_some_and(|n| *n > before),
            "never restarted again: {seen:?}"
        );
        assert!(!seen.is_empty());
        assert!(seen.iter().all(|n| *n >= before), "went back below {before}: {seen:?}");
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "not monotonic: {seen:?}");
    });
}

fn with_sysctl(name: &str, sysctl: &str) -> Pod {
    PodBuilder::new(name)
        .uid(format!("u-{name}"))
        .container("app", "busybox:1.36", ["sleep", "3600"])
        .modify(|p| {
            p.spec.as_mut().unwrap().security_context = Some(k8s_openapi::api::core::v1::PodSecurityContext {
                sysctls: Some(vec![k8s_openapi::api::core::v1::Sysctl {
                    name: sysctl.into(),
                    value: "1".into(),
                }]),
                ..Default::default()
            })
        })
        .build()
}

/// Upstream's "should not launch unsafe, but not explicitly enabled sysctls
/// on the node": an unsafe sysctl is rejected `SysctlForbidden` unless
/// `allowedUnsafeSysctls` names it; safe ones always run.
#[test]
fn unsafe_sysctls_need_the_node_allowlist() {
    run_paused(async {
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let allow = |allowed: &'static [&'static str]| {
            move |b: actlet::ActletBuilder| {
                b.configure(move |c| c.sysctls = actlet::sysctl::Allowlist::new(allowed, None).unwrap())
            }
        };
        let node = TestNode::builder().mock(mock.clone()).customize(allow(&[])).start();
        node.set_pods(vec![
            with_sysctl("safe", "kernel.shm_rmid_forced"),
            with_sysctl("unsafe", "kernel.msgmax"),
        ]);
        node.wait_for_phase("default", "unsafe", "Failed", Duration::from_secs(60))
            .await
            .unwrap();
        let status = node.status("default", "unsafe").unwrap();
        assert_eq!(status.reason.as_deref(), Some("SysctlForbidden"));
        assert_eq!(
            status.message.as_deref(),
            Some(r#"Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted"#)
        );
        node.wait_for_phase("default", "safe", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        assert!(mock.find_container("unsafe", "app").is_none(), "never started");

        // The same pod on a node that allows kernel.msg*.
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let node = TestNode::builder()
            .mock(mock.clone())
            .customize(allow(&["kernel.msg*"]))
            .start();
        node.set_pods(vec![with_sysctl("unsafe", "kernel.msgmax")]);
        node.wait_for_phase("default", "unsafe", "Running", Duration::from_secs(60))
            .await
            .unwrap();
    });
}

fn with_groups(name: &str, policy: &str) -> Pod {
    let policy = policy.to_string();
    PodBuilder::new(name)
        .uid(format!("u-{name}"))
        .restart_policy("Never")
        .container("app", "busybox:1.36", ["sleep", "3600"])
        .modify(move |p| {
            p.spec.as_mut().unwrap().security_context = Some(k8s_openapi::api::core::v1::PodSecurityContext {
                run_as_user: Some(1000),
                run_as_group: Some(3000),
                supplemental_groups: Some(vec![60000]),
                supplemental_groups_policy: Some(policy),
                ..Default::default()
            })
        })
        .build()
}

/// Upstream's SupplementalGroupsPolicy tests: `Strict` on a node whose
/// runtime does not implement it is rejected (status and Warning event
/// `SupplementalGroupsPolicyNotSupported`), `Merge` runs; on a runtime that
/// implements it `Strict` runs and the container's `user` is reported.
#[test]
fn strict_supplemental_groups_need_a_runtime_that_implements_them() {
    run_paused(async {
        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        mock.set_supplemental_groups_policy(false);
        let (node, events) = node(mock.clone());
        let health = node.kubelet().runtime_health.clone();
        wait_until(|| health.borrow().features.is_some(), Duration::from_secs(30))
            .await
            .unwrap();
        node.set_pods(vec![with_groups("strict", "Strict"), with_groups("merge", "Merge")]);
        node.wait_for_phase("default", "strict", "Failed", Duration::from_secs(60))
            .await
            .unwrap();
        let status = node.status("default", "strict").unwrap();
        assert_eq!(status.reason.as_deref(), Some("SupplementalGroupsPolicyNotSupported"));
        assert_eq!(
            status.message.as_deref(),
            Some("Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node")
        );
        assert!(
            events.lock().unwrap().contains(&(
                "SupplementalGroupsPolicyNotSupported".to_string(),
                "SupplementalGroupsPolicy=Strict is not supported in this node".to_string()
            )),
            "{:?}",
            events.lock().unwrap()
        );
        assert!(mock.find_container("strict", "app").is_none(), "never started");
        node.wait_for_phase("default", "merge", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let user = |node: &TestNode, pod: &str| {
            node.status("default", pod).unwrap().container_statuses.unwrap()[0]
                .user
                .clone()
                .and_then(|u| u.linux)
        };
        assert_eq!(user(&node, "merge"), None, "the runtime does not report it");

        let mock = MockRuntime::builder().script("app", Behaviour::run_forever()).build();
        let (node, _) = self::node(mock.clone());
        let health = node.kubelet().runtime_health.clone();
        wait_until(|| health.borrow().features.is_some(), Duration::from_secs(30))
            .await
            .unwrap();
        node.set_pods(vec![with_groups("strict", "Strict")]);
        node.wait_for_phase("default", "strict", "Running", Duration::from_secs(60))
            .await
            .unwrap();
        let linux = user(&node, "strict").expect("the runtime reports the user");
        assert_eq!(
            (linux.uid, linux.gid, linux.supplemental_groups),
            (1000, 3000, Some(vec![3000, 60000]))
        );
    });
}
