//! System test on a REAL containerd (see `tests/system_containerd.rs` for
//! how to run these): the pod's identity, termination messages and
//! `/etc/hosts` as a container sees them, and `supplementalGroupsPolicy`.

#[path = "support/daemon.rs"]
mod daemon;

use std::time::Duration;

use actlet::cri::{Runtime, v1};
use daemon::{Env, container_status, phase, pod_summary, uid};
use k8s_openapi::api::core::v1::Pod;

const BUSYBOX: &str = "docker.io/library/busybox:1.36";

/// How long a pod may take to start here (sandbox + image check + container).
const START: Duration = Duration::from_secs(30);

/// The pod's identity on a real runtime: `runAsGroup` and
/// `supplementalGroups` are the process's groups (`id -G`, reported through
/// the termination message file), `FallbackToLogsOnError` takes the log
/// tail of a failed container, `/etc/hosts` is the kubelet-managed one; a
/// `supplementalGroupsPolicy: Strict` pod is rejected
/// (`SupplementalGroupsPolicyNotSupported`) when the runtime's `Status`
/// does not report the feature (containerd < 2.0), else runs with only the
/// pod's groups.
#[tokio::test]
async fn identity_termination_messages_and_hosts() {
    let Some(env) = Env::start("identity_termination_messages_and_hosts", "ident").await else {
        return;
    };
    let pod = |name: &str, policy: &str| {
        format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    supplementalGroups: [60000]
    supplementalGroupsPolicy: {policy}
  containers:
    - name: groups
      image: {BUSYBOX}
      command: ["sh", "-c", "id -G > /dev/termination-log"]
    - name: fallback
      image: {BUSYBOX}
      terminationMessagePolicy: FallbackToLogsOnError
      command: ["sh", "-c", "echo from-the-log; exit 3"]
    - name: hosts
      image: {BUSYBOX}
      command: ["sh", "-c", "head -n 1 /etc/hosts > /dev/termination-log"]
"#
        )
    };
    env.write_manifest("merge.yaml", &pod("merge", "Merge"));
    env.write_manifest("strict.yaml", &pod("strict", "Strict"));
    let message = |p: &Pod, c: &str| {
        container_status(p, c)
            .and_then(|s| s.state.as_ref()?.terminated.as_ref()?.message.clone())
            .unwrap_or_else(|| panic!("{c}: no termination message: {}", pod_summary(p)))
    };
    let p = env.wait_pod("merge", "Failed", START, |p| phase(p) == "Failed").await;
    assert_eq!(message(&p, "groups"), "3000 60000\n", "{}", pod_summary(&p));
    assert_eq!(message(&p, "fallback"), "from-the-log\n", "{}", pod_summary(&p));
    assert_eq!(message(&p, "hosts"), "# Kubernetes-managed hosts file.\n");

    let features = env
        .cri
        .status(v1::StatusRequest { verbose: false })
        .await
        .unwrap_or_else(|e| panic!("Status: {e}"))
        .features;
    if features.is_some_and(|f| f.supplemental_groups_policy) {
        let p = env.wait_pod("strict", "Failed", START, |p| phase(p) == "Failed").await;
        assert_eq!(message(&p, "groups"), "3000 60000\n", "{}", pod_summary(&p));
    } else {
        let p = env
            .wait_pod("strict", "rejected", START, |p| phase(p) == "Failed")
            .await;
        let status = p.status.clone().unwrap_or_default();
        assert_eq!(
            (status.reason.as_deref(), status.message.as_deref()),
            (
                Some("SupplementalGroupsPolicyNotSupported"),
                Some("Pod was rejected: SupplementalGroupsPolicy=Strict is not supported in this node")
            )
        );
        assert!(env.cri_view().await.sandboxes_of(&uid(&p)).is_empty(), "never started");
    }
}
