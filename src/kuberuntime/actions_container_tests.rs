//! Table tests for `compute_pod_actions`: restart policies and kills of
//! regular containers, one spec-like name per rule.

use super::fixtures::*;
use super::*;

// ------------------------------------------------------------------ restart policies

#[test]
fn exited_containers_restart_as_the_policy_says() {
    // (policy, exit code, restarted?)
    let table = [
        ("Always", 0, true),
        ("Always", 1, true),
        ("OnFailure", 0, false),
        ("OnFailure", 1, true),
        ("OnFailure", 137, true),
        ("Never", 0, false),
        ("Never", 1, false),
    ];
    for (policy, exit, restarted) in table {
        let p = spec(&format!(
            "  restartPolicy: {policy}\n  containers: [{{name: a, image: busybox}}]"
        ));
        let s = st(&p, vec![ready()], vec![ctr(&p, "c1", "a", Exited, exit)]);
        let want = if restarted {
            PodActions {
                containers_to_start: vec![0],
                ..keep()
            }
        } else {
            PodActions {
                kill_pod: true,
                ..keep()
            }
        };
        assert_eq!(act(&p, &s), want, "{policy} exit {exit}");
    }
}

#[test]
fn containers_that_never_ran_start_under_every_policy() {
    for policy in ["Always", "OnFailure", "Never"] {
        let p = two(policy);
        assert_eq!(
            act(&p, &st(&p, vec![ready()], vec![])),
            PodActions {
                containers_to_start: vec![0, 1],
                ..keep()
            }
        );
    }
}

#[test]
fn created_containers_are_started_again_under_every_policy() {
    for policy in ["Always", "OnFailure", "Never"] {
        let p = spec(&format!("  restartPolicy: {policy}\n  containers: [{{name: a}}]"));
        let s = st(&p, vec![ready()], vec![ctr(&p, "c1", "a", Created, 0)]);
        assert_eq!(
            act(&p, &s),
            PodActions {
                containers_to_start: vec![0],
                ..keep()
            },
            "{policy}"
        );
    }
}

#[test]
fn unknown_containers_are_killed_then_restarted() {
    let p = two("Never");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "c1", "a", Unknown, 0), ctr(&p, "c2", "b", Running, 0)],
    );
    let mut want = PodActions {
        containers_to_start: vec![0],
        ..keep()
    };
    want.containers_to_kill.insert(
        "c1".into(),
        kill(
            "a",
            "Container is in \"unknown\" state, try killing it before restart",
            KillReason::Unknown,
        ),
    );
    assert_eq!(act(&p, &s), want);
}

#[test]
fn a_pod_being_deleted_restarts_nothing() {
    let mut p = two("Always");
    p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        crate::kuberuntime::test_support::ts(1000),
    ));
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "c1", "a", Exited, 1), ctr(&p, "c2", "b", Running, 0)],
    );
    assert_eq!(act(&p, &s), keep(), "b keeps running; a stays dead");
}

#[test]
fn a_done_container_and_a_running_one_keep_the_pod() {
    let p = two("OnFailure");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "c1", "a", Exited, 0), ctr(&p, "c2", "b", Running, 0)],
    );
    assert_eq!(act(&p, &s), keep());
}

#[test]
fn only_the_newest_attempt_of_a_container_counts() {
    let p = spec("  restartPolicy: Never\n  containers: [{name: a}]");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "new", "a", Running, 0), ctr(&p, "old", "a", Exited, 1)],
    );
    assert_eq!(act(&p, &s), keep());
}

// ------------------------------------------------------------------ kills

#[test]
fn a_changed_spec_kills_and_restarts_the_container_even_under_never() {
    for policy in ["Always", "Never"] {
        let p = two(policy);
        let stale = container("c1", "a", Running, 0, "0ld");
        let s = st(&p, vec![ready()], vec![stale, ctr(&p, "c2", "b", Running, 0)]);
        let mut want = PodActions {
            containers_to_start: vec![0],
            ..keep()
        };
        want.containers_to_kill.insert(
            "c1".into(),
            kill(
                "a",
                "Container a definition changed, will be restarted",
                KillReason::DefinitionChanged,
            ),
        );
        assert_eq!(act(&p, &s), want, "{policy}");
    }
}

#[test]
fn probe_failures_kill_and_restart_unless_never() {
    let cases = [
        (
            ProbeView::new().with_liveness_failure("c1"),
            "liveness",
            KillReason::LivenessProbe,
        ),
        (
            ProbeView::new().with_startup_failure("c1"),
            "startup",
            KillReason::StartupProbe,
        ),
    ];
    for (probes, kind, reason) in cases {
        let p = two("Always");
        let s = st(
            &p,
            vec![ready()],
            vec![ctr(&p, "c1", "a", Running, 0), ctr(&p, "c2", "b", Running, 0)],
        );
        let mut want = PodActions {
            containers_to_start: vec![0],
            ..keep()
        };
        let msg = format!("Container a failed {kind} probe, will be restarted");
        want.containers_to_kill.insert("c1".into(), kill("a", &msg, reason));
        assert_eq!(compute_pod_actions(&p, &s, &probes), want);

        let p = spec("  restartPolicy: Never\n  containers: [{name: a}]");
        let s = st(&p, vec![ready()], vec![ctr(&p, "c1", "a", Running, 0)]);
        let mut want = PodActions {
            kill_pod: true,
            ..keep()
        };
        want.containers_to_kill.insert(
            "c1".into(),
            kill("a", &format!("Container a failed {kind} probe"), reason),
        );
        assert_eq!(
            compute_pod_actions(&p, &s, &probes),
            want,
            "Never: killed, not restarted, pod done"
        );
    }
}

#[test]
fn a_spec_change_wins_over_a_probe_failure() {
    let p = spec("  containers: [{name: a}]");
    let s = st(&p, vec![ready()], vec![container("c1", "a", Running, 0, "0ld")]);
    let a = compute_pod_actions(&p, &s, &ProbeView::new().with_liveness_failure("c1"));
    assert_eq!(
        a.containers_to_kill.get("c1").map(|k| k.reason),
        Some(KillReason::DefinitionChanged)
    );
}

#[test]
fn healthy_running_containers_need_nothing() {
    let p = two("Always");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "c1", "a", Running, 0), ctr(&p, "c2", "b", Running, 0)],
    );
    assert_eq!(act(&p, &s), keep());
}

#[test]
fn running_containers_missing_from_the_spec_are_killed() {
    let p = spec("  containers: [{name: a}]");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "c1", "a", Running, 0), container("z1", "gone", Running, 0, "h")],
    );
    let mut want = keep();
    want.containers_to_kill.insert(
        "z1".into(),
        kill("gone", "Container gone is not in the pod spec", KillReason::Unknown),
    );
    assert_eq!(act(&p, &s), want);
}

// ------------------------------------------------------------------ helpers

#[test]
fn restart_policy_defaults_to_always() {
    assert_eq!(RestartPolicy::of(&spec("  containers: []")), RestartPolicy::Always);
    assert_eq!(
        RestartPolicy::of(&spec("  restartPolicy: Bogus\n  containers: []")),
        RestartPolicy::Always
    );
    assert_eq!(RestartPolicy::of(&two("OnFailure")), RestartPolicy::OnFailure);
    assert_eq!(RestartPolicy::of(&two("Never")), RestartPolicy::Never);
}

#[test]
fn kill_reasons_use_upstream_strings() {
    let names: Vec<_> = [
        KillReason::DefinitionChanged,
        KillReason::LivenessProbe,
        KillReason::StartupProbe,
        KillReason::Unknown,
    ]
    .map(KillReason::as_str)
    .to_vec();
    assert_eq!(names, ["", "LivenessProbe", "StartupProbe", "Unknown"]);
}

#[test]
fn init_progress_reports_the_failed_status() {
    let p = with_init("Always");
    let s = st(&p, vec![ready()], vec![ctr(&p, "x0", "i0", Exited, 3)]);
    let progress = find_next_init_container_to_run(&p, &s);
    assert_eq!(
        (progress.failed.map(|f| f.id.as_str()), progress.next, progress.done),
        (Some("x0"), Some(0), false)
    );
    let none = two("Always");
    assert!(find_next_init_container_to_run(&none, &st(&none, vec![], vec![])).done);
}

// ------------------------------------------------------------------ ephemeral containers

fn with_debugger() -> Pod {
    spec(
        "  initContainers: [{name: i0, image: busybox}]\n  containers: [{name: a, image: busybox}]\n  ephemeralContainers: [{name: dbg, image: busybox, targetContainerName: a}]",
    )
}

#[test]
fn ephemeral_containers_start_once_even_before_initialization_ends() {
    let p = with_debugger();
    // i0 still running: regular containers wait, the debugger does not.
    let s = st(&p, vec![ready()], vec![ctr(&p, "i", "i0", Running, 0)]);
    assert_eq!(act(&p, &s).ephemeral_containers_to_start, vec![0]);
    // Started (running or exited): never again, and a running one is not killed.
    for state in [Running, Exited] {
        let s = st(
            &p,
            vec![ready()],
            vec![
                ctr(&p, "i", "i0", Exited, 0),
                ctr(&p, "a1", "a", Running, 0),
                ctr(&p, "d", "dbg", state, 0),
            ],
        );
        let a = act(&p, &s);
        assert!(a.ephemeral_containers_to_start.is_empty(), "{state:?}");
        assert!(a.containers_to_kill.is_empty() && !a.kill_pod, "{state:?}: {a:?}");
    }
}

#[test]
fn ephemeral_containers_wait_while_the_sandbox_is_recreated() {
    let p = with_debugger();
    let a = act(&p, &st(&p, vec![], vec![]));
    assert!(a.create_sandbox && a.ephemeral_containers_to_start.is_empty());
}
