//! Table tests for pods with native sidecars (`computeInitContainerActions`).

use super::fixtures::*;
use super::*;

/// Sidecar `s0` (with a startup probe when `startup`), init `i1`, sidecar
/// `s2`, regular container `a`; `policy`.
fn pod_with_sidecars(policy: &str, startup: bool) -> Pod {
    let probe = if startup {
        ", startupProbe: {exec: {command: [x]}}"
    } else {
        ""
    };
    spec(&format!(
        "  restartPolicy: {policy}\n  initContainers:\n  - {{name: s0, image: busybox, restartPolicy: Always{probe}}}\n  - {{name: i1, image: busybox}}\n  - {{name: s2, image: busybox, restartPolicy: Always}}\n  containers: [{{name: a, image: busybox}}]"
    ))
}

fn starts(inits: &[usize], containers: &[usize]) -> PodActions {
    PodActions {
        init_containers_to_start: inits.to_vec(),
        containers_to_start: containers.to_vec(),
        ..keep()
    }
}

#[test]
fn a_new_sandbox_starts_the_first_init_container() {
    let p = pod_with_sidecars("Always", false);
    let s = st(&p, vec![], vec![]);
    let a = act(&p, &s);
    assert!(a.create_sandbox);
    assert_eq!(a.init_containers_to_start, [0]);
    assert_eq!(a.next_init_container_to_start, None);
}

#[test]
fn the_next_init_container_waits_for_the_sidecar_startup_probe() {
    let p = pod_with_sidecars("Always", true);
    let s = st(&p, vec![ready()], vec![ctr(&p, "c0", "s0", Running, 0)]);
    assert_eq!(act(&p, &s), keep(), "startup probe not passed yet");
    let passed = ProbeView::new().with_startup_success("c0");
    assert_eq!(compute_pod_actions(&p, &s, &passed), starts(&[1], &[]));
    let failed = ProbeView::new().with_startup_failure("c0");
    let want = PodActions {
        containers_to_kill: [(
            "c0".to_string(),
            kill("s0", "Init container s0 failed startup probe", KillReason::StartupProbe),
        )]
        .into(),
        ..starts(&[0], &[])
    };
    assert_eq!(compute_pod_actions(&p, &s, &failed), want);
}

#[test]
fn a_running_sidecar_lets_initialization_go_on_and_regular_containers_start() {
    let p = pod_with_sidecars("Always", false);
    let s = st(&p, vec![ready()], vec![ctr(&p, "c0", "s0", Running, 0)]);
    assert_eq!(act(&p, &s), starts(&[1], &[]));
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "c0", "s0", Running, 0), ctr(&p, "c1", "i1", Exited, 0)],
    );
    assert_eq!(act(&p, &s), starts(&[2], &[]));
    let s = st(
        &p,
        vec![ready()],
        vec![
            ctr(&p, "c0", "s0", Running, 0),
            ctr(&p, "c1", "i1", Exited, 0),
            ctr(&p, "c2", "s2", Running, 0),
        ],
    );
    assert_eq!(act(&p, &s), starts(&[], &[0]), "initialized: the main container starts");
}

#[test]
fn sidecars_restart_whenever_they_exit_whatever_the_policy() {
    for policy in ["Always", "OnFailure", "Never"] {
        let p = pod_with_sidecars(policy, false);
        let s = st(
            &p,
            vec![ready()],
            vec![
                ctr(&p, "c0", "s0", Exited, 0),
                ctr(&p, "c1", "i1", Exited, 0),
                ctr(&p, "c2", "s2", Running, 0),
                ctr(&p, "c3", "a", Running, 0),
            ],
        );
        assert_eq!(act(&p, &s), starts(&[0], &[]), "{policy}");
    }
}

#[test]
fn sidecars_do_not_keep_a_finished_pod_alive() {
    let p = pod_with_sidecars("Never", false);
    let s = st(
        &p,
        vec![ready()],
        vec![
            ctr(&p, "c0", "s0", Running, 0),
            ctr(&p, "c1", "i1", Exited, 0),
            ctr(&p, "c2", "s2", Running, 0),
            ctr(&p, "c3", "a", Exited, 0),
        ],
    );
    let a = act(&p, &s);
    assert!(a.kill_pod, "{a:?}");
    assert!(a.init_containers_to_start.is_empty());
    // (an exited sidecar would be restarted here, as upstream: the pod's
    // terminal phase then stops everything)
}

#[test]
fn a_failed_init_container_is_retried_unless_never() {
    let failed = |policy| {
        let p = pod_with_sidecars(policy, false);
        let s = st(
            &p,
            vec![ready()],
            vec![ctr(&p, "c0", "s0", Running, 0), ctr(&p, "c1", "i1", Exited, 1)],
        );
        act(&p, &s)
    };
    assert_eq!(failed("OnFailure"), starts(&[1], &[]));
    let never = failed("Never");
    assert!(never.kill_pod && never.init_containers_to_start.is_empty());
}

#[test]
fn a_sidecar_failing_liveness_or_changed_is_restarted() {
    let p = pod_with_sidecars("Always", false);
    let all_up = |s0_hash: &str| {
        st(
            &p,
            vec![ready()],
            vec![
                container("c0", "s0", Running, 0, s0_hash),
                ctr(&p, "c1", "i1", Exited, 0),
                ctr(&p, "c2", "s2", Running, 0),
                ctr(&p, "c3", "a", Running, 0),
            ],
        )
    };
    let s = all_up(&spec_hash(&p, "s0"));
    let a = compute_pod_actions(&p, &s, &ProbeView::new().with_liveness_failure("c0"));
    let want = PodActions {
        containers_to_kill: [(
            "c0".to_string(),
            kill(
                "s0",
                "Init container s0 failed liveness probe",
                KillReason::LivenessProbe,
            ),
        )]
        .into(),
        ..starts(&[0], &[])
    };
    assert_eq!(a, want);
    let a = act(&p, &all_up("old"));
    assert_eq!(
        a.containers_to_kill.get("c0").map(|k| k.message.as_str()),
        Some("Init container s0 definition changed")
    );
    assert_eq!(a.init_containers_to_start, [0]);
    assert!(!a.kill_pod);
}
