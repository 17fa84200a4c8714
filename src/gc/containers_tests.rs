use std::collections::HashMap;

use super::*;
use crate::kuberuntime::labels::POD_UID_LABEL;
use crate::messages::pod_work::WorkerState;

const S: i64 = 1_000_000_000;

/// (case, desired pods, containers, policy, now (s), removed in order)
type ContainerCase = (
    &'static str,
    Vec<&'static str>,
    Vec<v1::Container>,
    ContainerGcPolicy,
    i64,
    Vec<&'static str>,
);
/// (case, desired pods, containers, sandboxes, removed)
type SandboxCase = (
    &'static str,
    Vec<&'static str>,
    Vec<v1::Container>,
    Vec<v1::PodSandbox>,
    Vec<&'static str>,
);

/// A container `id` of pod `uid`, named `name`, created at `t` seconds.
fn c(id: &str, uid: &str, name: &str, state: v1::ContainerState, t: i64) -> v1::Container {
    v1::Container {
        id: id.into(),
        pod_sandbox_id: format!("sb-{uid}"),
        metadata: Some(v1::ContainerMetadata {
            name: name.into(),
            attempt: 0,
        }),
        state: state as i32,
        created_at: t * S,
        labels: HashMap::from([(POD_UID_LABEL.to_string(), uid.to_string())]),
        ..Default::default()
    }
}

fn exited(id: &str, uid: &str, name: &str, t: i64) -> v1::Container {
    c(id, uid, name, v1::ContainerState::ContainerExited, t)
}

fn running(id: &str, uid: &str, name: &str, t: i64) -> v1::Container {
    c(id, uid, name, v1::ContainerState::ContainerRunning, t)
}

/// Sources ready; `desired` pods desired (not deleting); no workers.
fn liveness(desired: &[&str], containers: &[v1::Container], sandboxes: &[v1::PodSandbox]) -> PodLiveness {
    PodLiveness {
        sources_ready: true,
        desired: desired.iter().map(|u| (PodUid::from(*u), false)).collect(),
        workers: Some(HashMap::new()),
        active: Default::default(),
    }
    .with_runtime(containers, sandboxes)
}

fn ids(v: &[ContainerRemoval]) -> Vec<&str> {
    v.iter().map(|r| r.id.as_str()).collect()
}

#[test]
fn container_eviction_table() {
    let policy = ContainerGcPolicy::default();
    let unlimited = ContainerGcPolicy {
        max_per_pod_container: -1,
        ..policy
    };
    // (case, desired pods, containers, policy, now (s), removed in order)
    let cases: Vec<ContainerCase> = vec![
        (
            "live pod: newest dead kept per container, running never touched",
            vec!["p"],
            vec![
                exited("a1", "p", "app", 1),
                exited("a2", "p", "app", 2),
                exited("a3", "p", "app", 3),
                running("a4", "p", "app", 4),
                exited("s1", "p", "side", 1),
            ],
            policy,
            100,
            vec!["a1", "a2"],
        ),
        (
            "removed pod: every dead container, oldest first",
            vec![],
            vec![
                exited("g2", "gone", "app", 2),
                exited("g1", "gone", "app", 1),
                exited("h1", "gone", "init", 1),
            ],
            policy,
            100,
            vec!["g1", "g2", "h1"],
        ),
        (
            "removed pod that still runs something is left to the kill",
            vec![],
            vec![exited("g1", "gone", "app", 1), running("g2", "gone", "side", 2)],
            policy,
            100,
            vec![],
        ),
        (
            "min age protects young dead containers",
            vec!["p"],
            vec![
                exited("a1", "p", "app", 10),
                exited("a2", "p", "app", 95),
                exited("a3", "p", "app", 99),
            ],
            ContainerGcPolicy {
                min_age: Duration::from_secs(10),
                ..policy
            },
            100,
            vec![],
        ),
        (
            "max per pod container 0 removes every dead one of live pods",
            vec!["p"],
            vec![exited("a1", "p", "app", 1), exited("a2", "p", "app", 2)],
            ContainerGcPolicy {
                max_per_pod_container: 0,
                ..policy
            },
            100,
            vec!["a1", "a2"],
        ),
        (
            "max containers: equal share per unit (at least 1), then oldest overall",
            vec!["p", "q"],
            vec![
                exited("p1", "p", "a", 1),
                exited("p2", "p", "a", 2),
                exited("p3", "p", "a", 3),
                exited("q5", "q", "b", 5),
                exited("q6", "q", "b", 6),
                exited("r4", "p", "c", 4),
            ],
            ContainerGcPolicy {
                max_containers: 2,
                ..unlimited
            },
            100,
            // share = max(2/3, 1) = 1 per unit leaves p3, r4, q6; still 3 > 2: the oldest of those (p3)
            vec!["p1", "p2", "q5", "p3"],
        ),
        (
            "no limits",
            vec!["p"],
            vec![exited("a1", "p", "app", 1), exited("a2", "p", "app", 2)],
            unlimited,
            100,
            vec![],
        ),
    ];
    for (case, desired, containers, policy, now, want) in cases {
        let l = liveness(&desired, &containers, &[]);
        let got = evictable_containers(&containers, &l, &policy, now * S);
        assert_eq!(ids(&got), want, "{case}");
    }
}

#[test]
fn crash_loop_history_stays_bounded() {
    // 50 restarts of one container: after GC, the running one and one dead one.
    let mut cs: Vec<_> = (0..50).map(|i| exited(&format!("c{i:02}"), "p", "app", i)).collect();
    cs.push(running("c50", "p", "app", 50));
    let l = liveness(&["p"], &cs, &[]);
    let gone = evictable_containers(&cs, &l, &ContainerGcPolicy::default(), 1000 * S);
    assert_eq!(gone.len(), 49);
    let left: Vec<_> = cs
        .iter()
        .filter(|c| !gone.iter().any(|g| g.id == c.id))
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(
        left,
        ["c49", "c50"],
        "the newest dead one (for the restart count) and the running one"
    );
}

#[test]
fn nothing_before_sources_are_ready() {
    let cs = vec![exited("g1", "gone", "app", 1)];
    let sb = vec![sandbox("s1", "gone", false, 1)];
    let mut l = liveness(&[], &cs, &sb);
    l.sources_ready = false;
    assert!(evictable_containers(&cs, &l, &ContainerGcPolicy::default(), 100 * S).is_empty());
    assert!(evictable_sandboxes(&[], &sb, &l).is_empty());
    assert!(evictable_log_dirs(["ns_web_gone"], &l, &[PodUid::from("gone")].into()).is_empty());
}

#[test]
fn worker_still_terminating_keeps_everything() {
    let cs = vec![exited("g1", "gone", "app", 1), exited("g2", "gone", "app", 2)];
    let mut l = liveness(&[], &cs, &[]);
    l.workers = Some(HashMap::from([(PodUid::from("gone"), WorkerState::Terminating)]));
    // only the per-container limit applies, as for a live pod
    assert_eq!(
        ids(&evictable_containers(&cs, &l, &ContainerGcPolicy::default(), 100 * S)),
        ["g1"]
    );
}

#[test]
fn unknown_containers_are_stopped_with_the_pods_grace_first() {
    let mut u = c("u1", "gone", "app", v1::ContainerState::ContainerUnknown, 1);
    u.annotations
        .insert(POD_TERMINATION_GRACE_PERIOD_ANNOTATION.into(), "7".into());
    let mut z = c("u2", "gone", "app", v1::ContainerState::ContainerUnknown, 2);
    z.annotations
        .insert(POD_TERMINATION_GRACE_PERIOD_ANNOTATION.into(), "0".into());
    let cs = vec![u, z];
    let got = evictable_containers(&cs, &liveness(&[], &cs, &[]), &ContainerGcPolicy::default(), 100 * S);
    assert_eq!(
        got.iter().map(|r| (r.unknown, r.grace)).collect::<Vec<_>>(),
        [(true, Duration::from_secs(7)), (true, MIN_GRACE)]
    );
}

fn sandbox(id: &str, uid: &str, ready: bool, t: i64) -> v1::PodSandbox {
    v1::PodSandbox {
        id: id.into(),
        metadata: Some(v1::PodSandboxMetadata {
            name: "web".into(),
            uid: uid.into(),
            namespace: "ns".into(),
            attempt: 0,
        }),
        state: if ready {
            v1::PodSandboxState::SandboxReady
        } else {
            v1::PodSandboxState::SandboxNotready
        } as i32,
        created_at: t * S,
        ..Default::default()
    }
}

#[test]
fn sandbox_eviction_table() {
    // (case, desired, containers, sandboxes, removed)
    let cases: Vec<SandboxCase> = vec![
        (
            "removed pod: every dead sandbox",
            vec![],
            vec![],
            vec![sandbox("s1", "gone", false, 1), sandbox("s2", "gone", false, 2)],
            vec!["s1", "s2"],
        ),
        (
            "live pod: newest kept even when dead",
            vec!["p"],
            vec![],
            vec![
                sandbox("s1", "p", false, 1),
                sandbox("s3", "p", false, 3),
                sandbox("s2", "p", false, 2),
            ],
            vec!["s1", "s2"],
        ),
        (
            "live pod: a ready newest one, dead older ones go",
            vec!["p"],
            vec![],
            vec![sandbox("s1", "p", false, 1), sandbox("s2", "p", true, 2)],
            vec!["s1"],
        ),
        (
            "a sandbox still holding a container stays",
            vec![],
            vec![{
                let mut x = exited("c1", "gone", "app", 1);
                x.pod_sandbox_id = "s1".into();
                x
            }],
            vec![sandbox("s1", "gone", false, 1), sandbox("s2", "gone", false, 2)],
            vec!["s2"],
        ),
        (
            "a removed pod whose sandbox is still ready is left to the kill",
            vec![],
            vec![],
            vec![sandbox("s1", "gone", true, 1), sandbox("s0", "gone", false, 0)],
            vec!["s0"],
        ),
    ];
    for (case, desired, cs, sbs, want) in cases {
        let l = liveness(&desired, &cs, &sbs);
        assert_eq!(evictable_sandboxes(&cs, &sbs, &l), want, "{case}");
    }
}

#[test]
fn log_dirs_of_removed_pods_only() {
    let cs = [running("c", "busy", "app", 1), exited("d", "gone", "app", 1)];
    let sbs = [sandbox("s", "gone2", false, 1), sandbox("t", "live", true, 1)];
    let l = liveness(&["live"], &cs, &sbs);
    let known = known_pods(&cs, &sbs);
    let names = [
        "ns_web_live",
        "ns_old_gone",
        "ns_job_busy",
        "kube-system_a_b_c_gone2",
        "ns_other_never-here",
    ];
    assert_eq!(
        evictable_log_dirs(names, &l, &known),
        ["ns_old_gone", "kube-system_a_b_c_gone2"],
        "not a pod this runtime never held (another kubelet's, on a shared host)"
    );
    assert_eq!(pod_uid_from_log_dir("ns_web_u-1").as_str(), "u-1");
}

#[test]
fn legacy_symlink_ids() {
    let id = "a".repeat(64);
    assert_eq!(
        container_id_from_legacy_symlink(&format!("web-1_default_app-x-{id}.log")),
        Some(id.as_str())
    );
    assert_eq!(container_id_from_legacy_symlink("web_default_app-abc.log"), None);
    assert_eq!(
        container_id_from_legacy_symlink(&format!("web_default_app-{id}.txt")),
        None
    );
}
