//! Table tests for `compute_pod_actions`: sandbox (re)creation and init
//! containers, one spec-like name per rule.

use super::fixtures::*;
use super::*;

// ------------------------------------------------------------------ sandbox

#[test]
fn new_pod_gets_a_sandbox_and_all_containers() {
    let p = two("Always");
    let want = PodActions {
        kill_pod: true,
        create_sandbox: true,
        containers_to_start: vec![0, 1],
        ..Default::default()
    };
    assert_eq!(act(&p, &st(&p, vec![], vec![])), want);
}

#[test]
fn new_pod_with_init_containers_starts_only_the_first_init_container() {
    let p = with_init("Always");
    let want = PodActions {
        kill_pod: true,
        create_sandbox: true,
        next_init_container_to_start: Some(0),
        ..Default::default()
    };
    assert_eq!(act(&p, &st(&p, vec![], vec![])), want);
}

#[test]
fn dead_sandbox_is_replaced_with_the_next_attempt_and_everything_restarts() {
    let p = two("Always");
    let s = st(
        &p,
        vec![sandbox("sb1", SandboxState::NotReady, 3, 10)],
        vec![ctr(&p, "c1", "a", Exited, 137)],
    );
    let want = PodActions {
        kill_pod: true,
        create_sandbox: true,
        sandbox_id: "sb1".into(),
        attempt: 4,
        containers_to_start: vec![0, 1],
        ..Default::default()
    };
    assert_eq!(act(&p, &s), want);
}

#[test]
fn only_the_newest_sandbox_decides_readiness() {
    let p = two("Always");
    let s = st(
        &p,
        vec![
            sandbox("new", SandboxState::NotReady, 1, 20),
            sandbox("old", SandboxState::Ready, 0, 10),
        ],
        vec![],
    );
    let a = act(&p, &s);
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!((a.sandbox_id.as_str(), a.attempt), ("new", 2));
}

#[test]
fn several_ready_sandboxes_are_reconciled_by_a_new_one() {
    let p = two("Always");
    let s = st(
        &p,
        vec![
            sandbox("sb2", SandboxState::Ready, 1, 20),
            sandbox("sb1", SandboxState::Ready, 0, 10),
        ],
        vec![],
    );
    let a = act(&p, &s);
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!((a.sandbox_id.as_str(), a.attempt), ("sb2", 2));
}

#[test]
fn network_mode_change_recreates_the_sandbox_without_reusing_its_id() {
    let p = spec("  hostNetwork: true\n  containers: [{name: a}]");
    let a = act(&p, &st(&p, vec![ready()], vec![]));
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!((a.sandbox_id.as_str(), a.attempt), ("", 1));
    let host = SandboxStatus {
        host_network: true,
        ips: vec![String::new()],
        ..ready()
    };
    let pod_net = two("Always");
    assert!(act(&pod_net, &st(&pod_net, vec![host], vec![])).create_sandbox);
}

#[test]
fn sandbox_without_an_ip_is_recreated_unless_host_network() {
    let p = two("Always");
    let no_ip = SandboxStatus {
        ips: vec![String::new()],
        ..ready()
    };
    let a = act(&p, &st(&p, vec![no_ip.clone()], vec![]));
    assert!(a.create_sandbox);
    assert_eq!((a.sandbox_id.as_str(), a.attempt), ("sb1", 1));
    let h = spec("  hostNetwork: true\n  containers: [{name: a}]");
    let host_no_ip = SandboxStatus {
        host_network: true,
        ..no_ip
    };
    assert!(!act(&h, &st(&h, vec![host_no_ip], vec![])).create_sandbox);
}

#[test]
fn sandbox_with_unknown_network_status_is_kept() {
    let p = two("Always");
    let unknown = SandboxStatus { ips: vec![], ..ready() };
    assert!(!act(&p, &st(&p, vec![unknown], vec![])).create_sandbox);
}

#[test]
fn never_pod_whose_containers_ran_gets_no_new_sandbox_and_is_killed() {
    let p = two("Never");
    let s = st(
        &p,
        vec![sandbox("sb1", SandboxState::NotReady, 0, 10)],
        vec![ctr(&p, "c1", "a", Exited, 0)],
    );
    let want = PodActions {
        kill_pod: true,
        sandbox_id: "sb1".into(),
        attempt: 1,
        ..Default::default()
    };
    assert_eq!(act(&p, &s), want);
}

#[test]
fn never_pod_whose_sandbox_died_before_any_container_gets_a_new_sandbox() {
    let p = two("Never");
    let s = st(&p, vec![sandbox("sb1", SandboxState::NotReady, 0, 10)], vec![]);
    let a = act(&p, &s);
    assert!(a.create_sandbox && a.kill_pod);
    assert_eq!(a.containers_to_start, vec![0, 1]);
}

#[test]
fn on_failure_sandbox_recreation_skips_succeeded_containers() {
    let p = two("OnFailure");
    let dead = sandbox("sb1", SandboxState::NotReady, 0, 10);
    let s = st(
        &p,
        vec![dead],
        vec![ctr(&p, "c1", "a", Exited, 0), ctr(&p, "c2", "b", Exited, 2)],
    );
    let a = act(&p, &s);
    assert!(a.create_sandbox);
    assert_eq!(a.containers_to_start, vec![1]);
}

#[test]
fn on_failure_pod_with_every_container_succeeded_gets_no_new_sandbox() {
    let p = two("OnFailure");
    let dead = sandbox("sb1", SandboxState::NotReady, 0, 10);
    let s = st(
        &p,
        vec![dead],
        vec![ctr(&p, "c1", "a", Exited, 0), ctr(&p, "c2", "b", Exited, 0)],
    );
    let want = PodActions {
        kill_pod: true,
        sandbox_id: "sb1".into(),
        attempt: 1,
        ..Default::default()
    };
    assert_eq!(act(&p, &s), want);
}

#[test]
fn sandbox_recreation_restarts_initialization_from_the_first_init_container() {
    let p = with_init("OnFailure");
    let dead = sandbox("sb1", SandboxState::NotReady, 0, 10);
    let all_done = vec![
        ctr(&p, "a1", "a", Exited, 0),
        ctr(&p, "i1", "i1", Exited, 0),
        ctr(&p, "i0", "i0", Exited, 0),
    ];
    let a = act(&p, &st(&p, vec![dead.clone()], all_done));
    assert!(!a.create_sandbox, "initialized and nothing to start: no new sandbox");
    let inits_gone = vec![ctr(&p, "a1", "a", Exited, 0)];
    let a = act(&p, &st(&p, vec![dead.clone()], inits_gone));
    assert!(a.create_sandbox, "initialization not provably done: start over");
    assert_eq!(a.next_init_container_to_start, Some(0));
    let a = act(&p, &st(&p, vec![dead], vec![ctr(&p, "a1", "a", Exited, 1)]));
    assert_eq!(
        (a.next_init_container_to_start, a.containers_to_start.len()),
        (Some(0), 0)
    );
}

// ------------------------------------------------------------------ init containers

#[test]
fn init_containers_run_one_at_a_time_in_order() {
    let p = with_init("Always");
    let s = st(&p, vec![ready()], vec![ctr(&p, "x0", "i0", Exited, 0)]);
    assert_eq!(
        act(&p, &s),
        PodActions {
            next_init_container_to_start: Some(1),
            ..keep()
        }
    );
    let s = st(&p, vec![ready()], vec![]);
    assert_eq!(
        act(&p, &s),
        PodActions {
            next_init_container_to_start: Some(0),
            ..keep()
        }
    );
}

#[test]
fn a_running_init_container_blocks_everything_else() {
    let p = with_init("Always");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "x1", "i1", Running, 0), ctr(&p, "x0", "i0", Exited, 0)],
    );
    assert_eq!(act(&p, &s), keep());
}

#[test]
fn regular_containers_start_once_every_init_container_succeeded() {
    let p = with_init("Always");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "x1", "i1", Exited, 0), ctr(&p, "x0", "i0", Exited, 0)],
    );
    assert_eq!(
        act(&p, &s),
        PodActions {
            containers_to_start: vec![0],
            ..keep()
        }
    );
}

#[test]
fn a_failed_init_container_is_retried_unless_the_policy_is_never() {
    for policy in ["Always", "OnFailure"] {
        let p = with_init(policy);
        let s = st(&p, vec![ready()], vec![ctr(&p, "x0", "i0", Exited, 1)]);
        assert_eq!(
            act(&p, &s),
            PodActions {
                next_init_container_to_start: Some(0),
                ..keep()
            },
            "{policy}"
        );
    }
    let p = with_init("Never");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "x1", "i1", Exited, 1), ctr(&p, "x0", "i0", Exited, 0)],
    );
    assert_eq!(
        act(&p, &s),
        PodActions {
            kill_pod: true,
            ..keep()
        }
    );
}

#[test]
fn an_oom_killed_init_container_counts_as_failed() {
    let p = with_init("Never");
    let oom = ContainerStatus {
        reason: "OOMKilled".into(),
        ..ctr(&p, "x0", "i0", Exited, 0)
    };
    assert_eq!(
        act(&p, &st(&p, vec![ready()], vec![oom])),
        PodActions {
            kill_pod: true,
            ..keep()
        }
    );
}

#[test]
fn an_unknown_init_container_is_killed_before_it_is_retried() {
    let p = with_init("Always");
    let s = st(&p, vec![ready()], vec![ctr(&p, "x0", "i0", Unknown, 0)]);
    let mut want = PodActions {
        next_init_container_to_start: Some(0),
        ..keep()
    };
    want.containers_to_kill.insert(
        "x0".into(),
        kill(
            "i0",
            "Init container is in \"unknown\" state, try killing it before restart",
            KillReason::Unknown,
        ),
    );
    assert_eq!(act(&p, &s), want);
}

#[test]
fn an_init_container_left_created_is_started_again() {
    let p = with_init("Never");
    let s = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "x1", "i1", Created, 0), ctr(&p, "x0", "i0", Exited, 0)],
    );
    assert_eq!(
        act(&p, &s),
        PodActions {
            next_init_container_to_start: Some(1),
            ..keep()
        }
    );
}

#[test]
fn a_running_regular_container_means_initialization_is_done() {
    let p = with_init("Always");
    let s = st(&p, vec![ready()], vec![ctr(&p, "a1", "a", Running, 0)]);
    assert_eq!(act(&p, &s), keep());
}

#[test]
fn only_actions_that_start_a_container_need_the_sandbox_config() {
    let p = two("Always");
    let healthy = st(
        &p,
        vec![ready()],
        vec![ctr(&p, "x1", "a", Running, 0), ctr(&p, "x2", "b", Running, 0)],
    );
    assert!(!act(&p, &healthy).starts_any_container(), "a resync of a healthy pod");
    assert!(act(&p, &st(&p, vec![], vec![])).starts_any_container(), "a new pod");
    let init = with_init("Always");
    assert!(
        act(&init, &st(&init, vec![], vec![])).starts_any_container(),
        "first init container"
    );
    for starts in [
        PodActions {
            init_containers_to_start: vec![0],
            ..keep()
        },
        PodActions {
            ephemeral_containers_to_start: vec![0],
            ..keep()
        },
        PodActions {
            containers_to_start: vec![1],
            ..keep()
        },
    ] {
        assert!(starts.starts_any_container(), "{starts:?}");
    }
}
