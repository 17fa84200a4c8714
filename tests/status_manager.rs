//! The `StatusManager` actor under paused tokio time: versions, terminal
//! stickiness, subscribers, the shared cache and the sink seam.

use std::sync::{Arc, Mutex};

use actix::{Actor, Addr, Context, Handler, Message};
use actlet::messages::PodUid;
use actlet::messages::status::{ForgetPodStatus, SetPodStatus};
use actlet::messages::status::{GetPodStatus, PodStatusChanged, SubscribeStatus, UpdatePodStatus};
use actlet::status::{Phase, StatusCache, StatusManager, StatusSink, VersionedStatus};
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::jiff::Timestamp;

fn run(test: impl AsyncFnOnce()) {
    actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    })
    .block_on(test());
}

fn status(yaml: &str) -> PodStatus {
    serde_yaml_ng::from_str(yaml).unwrap()
}

fn set(uid: &str, yaml: &str) -> SetPodStatus {
    SetPodStatus {
        uid: PodUid::from(uid),
        status: status(yaml),
    }
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn manager() -> (Addr<StatusManager>, StatusCache) {
    let m = StatusManager::new().with_clock(|| Timestamp::new(1_000, 500_000_000).unwrap());
    let cache = m.cache();
    (m.start(), cache)
}

async fn get(addr: &Addr<StatusManager>, uid: &str) -> Option<PodStatus> {
    addr.send(GetPodStatus { uid: PodUid::from(uid) }).await.unwrap()
}

/// Collects `PodStatusChanged` notifications.
#[derive(Default)]
struct Recorder(Vec<PodStatusChanged>);

impl Actor for Recorder {
    type Context = Context<Self>;
}

impl Handler<PodStatusChanged> for Recorder {
    type Result = ();
    fn handle(&mut self, msg: PodStatusChanged, _: &mut Context<Self>) {
        self.0.push(msg);
    }
}

#[derive(Message)]
#[rtype(result = "Vec<(Option<Phase>, Option<Phase>, u64)>")]
struct Take;

impl Handler<Take> for Recorder {
    type Result = Vec<(Option<Phase>, Option<Phase>, u64)>;
    fn handle(&mut self, _: Take, _: &mut Context<Self>) -> Self::Result {
        self.0
            .drain(..)
            .map(|c| (c.old_phase, c.new_phase, c.version))
            .collect()
    }
}

#[test]
fn get_and_shared_cache_see_the_same_status() {
    run(async || {
        let (addr, cache) = manager();
        assert_eq!(get(&addr, "u1").await, None);
        addr.do_send(set(
            "u1",
            "{phase: Pending, conditions: [{type: Ready, status: 'False'}]}",
        ));
        let got = get(&addr, "u1").await.expect("cached");
        assert_eq!(got.phase.as_deref(), Some("Pending"));
        assert_eq!(
            got.start_time.map(|t| t.0),
            Some(at(1_000)),
            "start time set, normalized to seconds"
        );
        let c = &got.conditions.unwrap()[0];
        assert_eq!(c.last_transition_time.as_ref().map(|t| t.0), Some(at(1_000)));
        let cached = cache.get(&PodUid::from("u1")).unwrap();
        assert_eq!((cached.version, cached.status.phase.as_deref()), (1, Some("Pending")));
        assert_eq!(cache.snapshot().len(), 1);
    });
}

#[test]
fn version_bumps_only_on_change() {
    run(async || {
        let (addr, cache) = manager();
        let version = |c: &StatusCache| c.get(&PodUid::from("u1")).map(|v| v.version);
        addr.do_send(set(
            "u1",
            "{phase: Pending, conditions: [{type: Ready, status: 'False'}]}",
        ));
        addr.do_send(set(
            "u1",
            "{phase: Pending, conditions: [{type: Ready, status: 'False'}]}",
        ));
        addr.do_send(set(
            "u1",
            "{phase: Pending, conditions: [{type: Ready, status: 'False', lastTransitionTime: '2020-01-01T00:00:00Z'}]}",
        ));
        get(&addr, "u1").await;
        assert_eq!(
            version(&cache),
            Some(1),
            "same status, or only a condition time differs"
        );
        addr.do_send(set(
            "u1",
            "{phase: Running, conditions: [{type: Ready, status: 'True'}]}",
        ));
        get(&addr, "u1").await;
        assert_eq!(version(&cache), Some(2));
    });
}

#[test]
fn terminal_phase_is_sticky_and_subscribers_hear_each_change_once() {
    run(async || {
        let (addr, cache) = manager();
        let recorder = Recorder::default().start();
        addr.do_send(SubscribeStatus {
            subscriber: recorder.clone().recipient(),
        });
        for yaml in [
            "phase: Pending",
            "phase: Pending",
            "phase: Running",
            "phase: Failed",
            "phase: Running",
            "phase: Failed",
        ] {
            addr.do_send(set("u1", yaml));
        }
        let got = get(&addr, "u1").await.unwrap();
        assert_eq!(got.phase.as_deref(), Some("Failed"));
        assert_eq!(cache.get(&PodUid::from("u1")).unwrap().version, 3);
        let seen = recorder.send(Take).await.unwrap();
        assert_eq!(
            seen,
            vec![
                (None, Some(Phase::Pending), 1),
                (Some(Phase::Pending), Some(Phase::Running), 2),
                (Some(Phase::Running), Some(Phase::Failed), 3),
            ]
        );
        // Time passing changes nothing.
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        assert!(recorder.send(Take).await.unwrap().is_empty());
    });
}

#[test]
fn pod_rules_refuse_restarting_a_finished_container() {
    run(async || {
        let (addr, cache) = manager();
        let pod: Pod = serde_yaml_ng::from_str(
            "{metadata: {name: job, namespace: batch, uid: u9}, spec: {restartPolicy: Never, containers: [{name: a}]}}",
        )
        .unwrap();
        let pod = Arc::new(pod);
        let done = status(
            "{phase: Running, containerStatuses: [{name: a, image: a, imageID: '', ready: false, restartCount: 0, state: {terminated: {exitCode: 0}}}]}",
        );
        let again = status(
            "{phase: Running, containerStatuses: [{name: a, image: a, imageID: '', ready: true, restartCount: 1, state: {running: {}}}]}",
        );
        addr.do_send(UpdatePodStatus {
            pod: pod.clone(),
            status: done,
        });
        addr.do_send(UpdatePodStatus { pod, status: again });
        let got = get(&addr, "u9").await.unwrap();
        assert!(
            got.container_statuses.unwrap()[0]
                .state
                .as_ref()
                .unwrap()
                .terminated
                .is_some()
        );
        let cached = cache.get(&PodUid::from("u9")).unwrap();
        assert_eq!(
            (cached.version, cached.pod_name.as_str(), cached.pod_namespace.as_str()),
            (1, "job", "batch")
        );
    });
}

/// A sink recording what it was told.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl StatusSink for Log {
    fn status_changed(&mut self, uid: &PodUid, status: &VersionedStatus) {
        self.0
            .lock()
            .unwrap()
            .push(format!("changed {uid} v{}", status.version));
    }
    fn forgotten(&mut self, uid: &PodUid) {
        self.0.lock().unwrap().push(format!("forgotten {uid}"));
    }
}

#[test]
fn forget_clears_cache_and_tells_the_sink() {
    run(async || {
        let log = Log::default();
        let m = StatusManager::new().with_sink(log.clone());
        let cache = m.cache();
        let addr = m.start();
        addr.do_send(set("u1", "phase: Running"));
        addr.do_send(set("u2", "phase: Pending"));
        addr.do_send(ForgetPodStatus {
            uid: PodUid::from("u1"),
        });
        assert_eq!(get(&addr, "u1").await, None);
        assert!(cache.get(&PodUid::from("u1")).is_none());
        assert_eq!(cache.len(), 1);
        assert_eq!(
            *log.0.lock().unwrap(),
            ["changed u1 v1", "changed u2 v1", "forgotten u1"]
        );
    });
}

#[test]
fn a_restarted_manager_resumes_from_the_shared_cache() {
    run(async || {
        let (first, cache) = manager();
        first.do_send(set("u1", "phase: Running"));
        get(&first, "u1").await;
        let second = StatusManager::with_cache(cache.clone()).start();
        assert_eq!(get(&second, "u1").await.unwrap().phase.as_deref(), Some("Running"));
        second.do_send(set("u1", "phase: Succeeded"));
        second.do_send(set("u1", "phase: Running"));
        get(&second, "u1").await;
        let v = cache.get(&PodUid::from("u1")).unwrap();
        assert_eq!((v.version, v.status.phase.as_deref()), (2, Some("Succeeded")));
    });
}
