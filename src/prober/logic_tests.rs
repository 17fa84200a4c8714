use k8s_openapi::api::core::v1::Probe;

use super::*;

fn timing(success: i32, failure: i32, delay: i32) -> ProbeTiming {
    ProbeTiming::of(&Probe {
        success_threshold: Some(success),
        failure_threshold: Some(failure),
        initial_delay_seconds: Some(delay),
        ..Default::default()
    })
}

fn running(id: &str, for_secs: i64, started: bool) -> Observed {
    Observed {
        pod_terminal: false,
        pod_deleting: false,
        container_id: Some(id.into()),
        running_for: Some(for_secs),
        terminated: false,
        never_restarted: false,
        started,
    }
}

use ProbeKind::{Liveness, Readiness, Startup};
use ProbeOutcome::{Failure, Success, Unknown};

#[test]
fn timing_defaults_and_floors() {
    let t = ProbeTiming::of(&Probe {
        period_seconds: Some(0),
        timeout_seconds: Some(-3),
        initial_delay_seconds: Some(-1),
        ..Default::default()
    });
    assert_eq!((t.period, t.timeout, t.initial_delay), (1, 1, 0));
    assert_eq!((t.success_threshold, t.failure_threshold), (1, 3));
}

#[test]
fn a_new_container_starts_at_the_initial_value_and_drops_the_old_result() {
    let t = timing(1, 3, 0);
    for (kind, initial) in [(Readiness, Failure), (Liveness, Success), (Startup, Unknown)] {
        let mut p = WorkerProgress::default();
        let started = kind != Startup;
        let (turn, ops) = before_probe(kind, &t, &mut p, &running("c1", 5, started));
        assert_eq!(turn, Turn::Probe("c1".into()));
        assert_eq!(ops, vec![StoreOp::Init("c1".into(), initial)]);
        let (_, ops) = before_probe(kind, &t, &mut p, &running("c1", 6, started));
        assert!(ops.is_empty(), "same container: nothing to reset");
        p.on_hold = true;
        let (turn, ops) = before_probe(kind, &t, &mut p, &running("c2", 0, started));
        assert_eq!(turn, Turn::Probe("c2".into()), "a new container resumes probing");
        assert_eq!(
            ops,
            vec![StoreOp::Remove("c1".into()), StoreOp::Init("c2".into(), initial)]
        );
    }
}

#[test]
fn waits_without_status_or_id_and_stops_when_the_pod_is_done() {
    let t = timing(1, 3, 0);
    let mut p = WorkerProgress::default();
    let mut seen = running("", 1, true);
    assert_eq!(before_probe(Readiness, &t, &mut p, &seen).0, Turn::Wait);
    seen.container_id = None;
    assert_eq!(before_probe(Readiness, &t, &mut p, &seen).0, Turn::Wait);
    seen.pod_terminal = true;
    assert_eq!(before_probe(Readiness, &t, &mut p, &seen).0, Turn::Stop);
}

#[test]
fn a_stopped_container_fails_and_the_worker_stops_only_if_it_will_not_restart() {
    let t = timing(1, 3, 0);
    let mut p = WorkerProgress::default();
    let mut seen = running("c1", 0, true);
    seen.running_for = None;
    let (turn, ops) = before_probe(Readiness, &t, &mut p, &seen);
    assert_eq!(turn, Turn::Wait, "waiting to start");
    assert_eq!(ops.last(), Some(&StoreOp::Set("c1".into(), Failure)));
    seen.terminated = true;
    assert_eq!(before_probe(Readiness, &t, &mut p, &seen).0, Turn::Wait, "will restart");
    seen.never_restarted = true;
    assert_eq!(before_probe(Readiness, &t, &mut p, &seen).0, Turn::Stop);
}

#[test]
fn deletion_quiets_liveness_and_startup_but_not_readiness() {
    let t = timing(1, 3, 0);
    let mut seen = running("c1", 100, true);
    seen.pod_deleting = true;
    for kind in [Liveness, Startup] {
        let mut p = WorkerProgress::default();
        seen.started = kind == Liveness;
        let (turn, ops) = before_probe(kind, &t, &mut p, &seen);
        assert_eq!(turn, Turn::Stop);
        assert_eq!(ops.last(), Some(&StoreOp::Set("c1".into(), Success)));
    }
    seen.started = true;
    let mut p = WorkerProgress::default();
    assert_eq!(before_probe(Readiness, &t, &mut p, &seen).0, Turn::Probe("c1".into()));
}

#[test]
fn initial_delay_counts_from_the_container_start() {
    let t = timing(1, 3, 10);
    let mut p = WorkerProgress::default();
    assert_eq!(
        before_probe(Liveness, &t, &mut p, &running("c1", 9, true)).0,
        Turn::Wait
    );
    assert_eq!(
        before_probe(Liveness, &t, &mut p, &running("c1", 10, true)).0,
        Turn::Probe("c1".into())
    );
}

#[test]
fn startup_gates_the_other_probes_and_stops_once_started() {
    let t = timing(1, 3, 0);
    for kind in [Liveness, Readiness] {
        let mut p = WorkerProgress::default();
        assert_eq!(before_probe(kind, &t, &mut p, &running("c1", 50, false)).0, Turn::Wait);
        assert_eq!(
            before_probe(kind, &t, &mut p, &running("c1", 50, true)).0,
            Turn::Probe("c1".into())
        );
    }
    let mut p = WorkerProgress::default();
    assert_eq!(
        before_probe(Startup, &t, &mut p, &running("c1", 1, false)).0,
        Turn::Probe("c1".into())
    );
    assert_eq!(before_probe(Startup, &t, &mut p, &running("c1", 2, true)).0, Turn::Wait);
}

/// Feeds `results` after a first turn on container c1; returns the stored
/// values set after each result (None: unchanged).
fn feed(kind: ProbeKind, t: &ProbeTiming, results: &[ProbeOutcome]) -> Vec<Option<ProbeOutcome>> {
    let mut p = WorkerProgress::default();
    let started = kind != Startup;
    results
        .iter()
        .map(|r| {
            let (turn, _) = before_probe(kind, t, &mut p, &running("c1", 100, started));
            if turn != Turn::Probe("c1".into()) {
                return None;
            }
            after_probe(kind, t, &mut p, "c1", *r).map(|op| match op {
                StoreOp::Set(_, o) => o,
                other => panic!("unexpected {other:?}"),
            })
        })
        .collect()
}

#[test]
fn failure_threshold_counts_consecutive_failures() {
    let t = timing(1, 3, 0);
    assert_eq!(
        feed(Readiness, &t, &[Failure, Failure, Success, Failure, Failure, Failure]),
        vec![None, None, Some(Success), None, None, Some(Failure)]
    );
}

#[test]
fn success_threshold_counts_consecutive_successes() {
    let t = timing(3, 1, 0);
    assert_eq!(
        feed(
            Readiness,
            &t,
            &[Success, Success, Failure, Success, Success, Success, Success]
        ),
        vec![None, None, Some(Failure), None, None, Some(Success), Some(Success)]
    );
}

#[test]
fn a_liveness_failure_holds_the_worker_until_a_new_container() {
    let t = timing(1, 2, 0);
    assert_eq!(
        feed(Liveness, &t, &[Failure, Failure, Failure, Failure]),
        vec![None, Some(Failure), None, None],
        "on hold after the threshold"
    );
    let mut p = WorkerProgress::default();
    before_probe(Liveness, &t, &mut p, &running("c1", 1, true));
    after_probe(Liveness, &t, &mut p, "c1", Failure);
    after_probe(Liveness, &t, &mut p, "c1", Failure);
    assert!(p.on_hold);
    assert_eq!(
        before_probe(Liveness, &t, &mut p, &running("c2", 0, true)).0,
        Turn::Probe("c2".into())
    );
}

#[test]
fn startup_holds_after_its_verdict_either_way() {
    let t = timing(1, 2, 0);
    assert_eq!(feed(Startup, &t, &[Success, Failure]), vec![Some(Success), None]);
    assert_eq!(
        feed(Startup, &t, &[Failure, Failure, Success]),
        vec![None, Some(Failure), None]
    );
}

#[test]
fn a_result_for_a_replaced_container_is_dropped() {
    let t = timing(1, 1, 0);
    let mut p = WorkerProgress::default();
    before_probe(Readiness, &t, &mut p, &running("c2", 1, true));
    assert_eq!(after_probe(Readiness, &t, &mut p, "c1", Success), None);
    assert_eq!(p.result_run, 0);
}
