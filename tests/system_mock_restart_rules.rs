//! Per-container restart policy and exit-code rules (KEP-5307
//! `ContainerRestartRules`, beta and on by default since v1.35) on the
//! assembled kubelet with the mock CRI under paused time.

#[path = "support/system.rs"]
mod support;

use std::time::Duration;

use actlet::cri::mock::{Behaviour, MockRuntime, Script};
use support::{Node, pod, run_paused, uid_of};
use tokio::time::sleep;

/// A pod with `restartPolicy: Never` whose container retries exit code 42:
/// the first run exits 42 and is restarted (the pod stays Running), the
/// second exits 3, which no rule matches, so the container's own `Never`
/// holds and the pod is Failed with no third run.
#[test]
fn a_retriable_exit_code_restarts_a_container_of_a_never_pod() {
    run_paused(|| async {
        let mock = MockRuntime::builder()
            .script(
                "trainer",
                Script::PerAttempt(vec![
                    Behaviour::exit_after(Duration::from_secs(2), 42),
                    Behaviour::exit_after(Duration::from_secs(2), 3),
                ]),
            )
            .build();
        let node = Node::start(mock);
        let p = pod(r#"
metadata: {name: train, namespace: default, uid: u-train}
spec:
  restartPolicy: Never
  containers:
  - name: trainer
    image: "busybox:1.36"
    command: [sh, -c, "sleep 3600"]
    restartPolicy: Never
    restartPolicyRules:
    - action: Restart
      exitCodes: {operator: In, values: [42]}
"#);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("trainer restarted once", Duration::from_secs(60), |n| {
            n.restart_count(&uid, "trainer") == 1
        })
        .await;
        assert_ne!(node.phase(&uid), "Failed", "exit 42 is retried: {}", node.describe());
        let first = node.container_status(&uid, "trainer").expect("status");
        let last = first.last_state.and_then(|s| s.terminated).expect("last terminated");
        assert_eq!(last.exit_code, 42);

        node.wait_for("train Failed", Duration::from_secs(60), |n| n.phase(&uid) == "Failed")
            .await;
        sleep(Duration::from_secs(120)).await;
        assert_eq!(
            node.calls("CreateContainer").len(),
            2,
            "no third run: {}",
            node.describe()
        );
        assert_eq!(node.phase(&uid), "Failed");
        let status = node.container_status(&uid, "trainer").expect("status");
        let exit = status.state.and_then(|s| s.terminated).map(|t| t.exit_code);
        assert_eq!(exit, Some(3));
        assert_eq!(status.restart_count, 1);
    });
}

/// A container with its own `restartPolicy: Never` in a pod whose policy is
/// `Always` runs once; its sibling keeps running and the pod stays Running
/// (the finished container's status stays terminated, never waiting).
#[test]
fn a_container_never_policy_overrides_an_always_pod() {
    run_paused(|| async {
        let mock = MockRuntime::builder()
            .script(
                "setup",
                Script::Always(Behaviour::exit_after(Duration::from_secs(1), 0)),
            )
            .script("server", Script::Always(Behaviour::run_forever()))
            .build();
        let node = Node::start(mock);
        let p = pod(r#"
metadata: {name: mixed, namespace: default, uid: u-mixed}
spec:
  restartPolicy: Always
  containers:
  - {name: setup, image: "busybox:1.36", command: [sh, -c, "true"], restartPolicy: Never}
  - {name: server, image: "busybox:1.36", command: [sh, -c, "sleep 3600"]}
"#);
        let uid = uid_of(&p);
        node.set_pods(&[&p]);
        node.wait_for("setup done, server running", Duration::from_secs(30), |n| {
            n.is_running(&uid, "server")
                && n.container_status(&uid, "setup")
                    .and_then(|s| s.state)
                    .and_then(|s| s.terminated)
                    .is_some()
        })
        .await;
        sleep(Duration::from_secs(120)).await;
        assert_eq!(node.containers("mixed", "setup").len(), 1, "{}", node.describe());
        assert_eq!(node.restart_count(&uid, "setup"), 0);
        let setup = node.container_status(&uid, "setup").expect("status");
        assert_eq!(setup.state.and_then(|s| s.terminated).map(|t| t.exit_code), Some(0));
        assert_eq!(node.phase(&uid), "Running");
        assert!(node.is_running(&uid, "server"));
    });
}

/// Static pods from files are validated as the API server would: a rule
/// without a container `restartPolicy` is refused, naming the field.
#[test]
fn a_rule_without_a_container_policy_is_refused_naming_the_field() {
    let p = pod(r#"
metadata: {name: bad, namespace: default, uid: u-bad}
spec:
  containers:
  - name: c
    image: "busybox:1.36"
    restartPolicyRules:
    - {action: Restart, exitCodes: {operator: In, values: [1]}}
"#);
    let err = actlet::config::validate::validate_static_pod(&p).expect_err("refused");
    assert_eq!(
        err.to_string(),
        "spec.containers[0].restartPolicyRules: Forbidden: may only be set when restartPolicy is set"
    );
}
