//! The event recorder actor against the test API server, as `system:node:test-node`:
//! Events are created as the real kubelet creates them (fixture 46), repeats
//! become one Event whose count grows (PATCH, fixture 47), an expired Event is
//! created anew, the spam filter drops beyond its burst, and an API server that
//! is away delays events without stopping the actor.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/cluster.rs"]
mod cluster;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use actix::{Actor, Addr};
use actlet::cluster::events::{EventRecorderActor, RetryPolicy};
use actlet::events::node_ref;
use actlet::messages::event::{EventType, RecordEvent};
use apiserver::{Identity, RecordedRequest, TestApiServer};
use cluster::{NODE, eventually, run};
use k8s_openapi::api::core::v1::{Event, ObjectReference};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use tempfile::TempDir;

const T: Duration = Duration::from_secs(20);
const EVENTS: &str = "/api/v1/namespaces/default/events";

/// A clock the test moves, in whole seconds.
#[derive(Clone)]
struct Clock(Arc<AtomicI64>);

impl Clock {
    fn new() -> Self {
        Clock(Arc::new(AtomicI64::new(1_795_000_000)))
    }
    fn now(&self) -> Timestamp {
        Timestamp::from_second(self.0.load(Ordering::SeqCst)).unwrap_or(Timestamp::UNIX_EPOCH)
    }
    fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
    fn rfc3339(&self) -> String {
        k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", self.now()).unwrap_or_default()
    }
}

async fn recorder(server: &TestApiServer, dir: &TempDir, clock: &Clock) -> Addr<EventRecorderActor> {
    let client = cluster::client(server, &Identity::node(NODE), dir).await;
    let c = clock.clone();
    EventRecorderActor::new(client, NODE.to_string())
        .with_clock(move || c.now())
        .with_retry(RetryPolicy {
            max_tries: 100,
            interval: Duration::from_millis(200),
        })
        .start()
}

fn pod_ref(name: &str, namespace: &str, container: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        uid: Some(format!("uid-{name}")),
        field_path: Some(format!("spec.containers{{{container}}}")),
        ..ObjectReference::default()
    }
}

fn record(involved: ObjectReference, reason: &str, message: &str) -> RecordEvent {
    RecordEvent {
        involved,
        type_: EventType::Normal,
        reason: reason.into(),
        message: message.into(),
        annotations: Default::default(),
    }
}

async fn send(addr: &Addr<EventRecorderActor>, event: RecordEvent) {
    addr.send(event)
        .await
        .unwrap_or_else(|e| panic!("the recorder did not take the event: {e}"));
}

fn events_about(server: &TestApiServer, object: &str) -> Vec<Event> {
    server
        .store()
        .events()
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(object))
        .collect()
}

fn writes(server: &TestApiServer, method: &str) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == method && r.path.contains("/events"))
        .collect()
}

#[test]
fn events_are_created_then_repeats_patch_their_count() {
    run(|| async {
        let server = TestApiServer::start();
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let clock = Clock::new();
        let addr = recorder(&server, &dir, &clock).await;
        let web = pod_ref("init-readiness", "default", "web");
        let first_at = clock.rfc3339();
        send(&addr, record(web.clone(), "Started", "Started container web")).await;
        let created = eventually("the event is created", T, || {
            events_about(&server, "init-readiness").pop()
        })
        .await;

        let post = writes(&server, "POST").pop().unwrap_or_else(|| panic!("no POST"));
        assert_eq!((post.path.as_str(), post.status), (EVENTS, 201));
        assert_eq!(post.content_type.as_deref(), Some("application/json"));
        let body = post.body.unwrap_or_default();
        let name = body["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let suffix = name.strip_prefix("init-readiness.").unwrap_or_default();
        assert!(
            suffix.len() == 16 && suffix.chars().all(|c| c.is_ascii_hexdigit()),
            "named <object>.<16 hex digits>: {name}"
        );
        assert_eq!(body["kind"], "Event");
        assert_eq!(body["apiVersion"], "v1");
        assert_eq!(body["metadata"]["namespace"], "default");
        assert_eq!(
            body["involvedObject"],
            json!({"kind": "Pod", "namespace": "default", "name": "init-readiness", "uid": "uid-init-readiness",
                   "apiVersion": "v1", "fieldPath": "spec.containers{web}"})
        );
        assert_eq!(body["source"], json!({"component": "kubelet", "host": NODE}));
        assert_eq!(
            (&body["reason"], &body["message"]),
            (&json!("Started"), &json!("Started container web"))
        );
        assert_eq!((&body["type"], &body["count"]), (&json!("Normal"), &json!(1)));
        assert_eq!(
            (&body["firstTimestamp"], &body["lastTimestamp"]),
            (&json!(first_at), &json!(first_at))
        );
        assert_eq!(created.count, Some(1));

        // The same event again: one PATCH of count and lastTimestamp.
        clock.advance(1);
        let second_at = clock.rfc3339();
        send(&addr, record(web.clone(), "Started", "Started container web")).await;
        eventually("the count is 2", T, || {
            events_about(&server, "init-readiness")
                .into_iter()
                .find(|e| e.count == Some(2))
        })
        .await;
        let patch = writes(&server, "PATCH").pop().unwrap_or_else(|| panic!("no PATCH"));
        assert_eq!((patch.path, patch.status), (format!("{EVENTS}/{name}"), 200));
        assert_eq!(
            patch.content_type.as_deref(),
            Some("application/strategic-merge-patch+json")
        );
        assert_eq!(
            patch.body,
            Some(json!({"count": 2, "lastTimestamp": second_at, "message": "Started container web"}))
        );
        let stored = events_about(&server, "init-readiness");
        assert_eq!(stored.len(), 1, "one Event object");
        assert_eq!(
            stored[0].first_timestamp.as_ref().map(|t| t.0.as_second()),
            Some(clock.now().as_second() - 1)
        );

        // Another container is another Event; the Node's go to `default`, a
        // pod's to its namespace.
        send(
            &addr,
            record(
                pod_ref("init-readiness", "default", "init"),
                "Started",
                "Started container web",
            ),
        )
        .await;
        send(
            &addr,
            record(node_ref(NODE), "NodeReady", "Node test-node status is now: NodeReady"),
        )
        .await;
        send(&addr, record(pod_ref("dns", "kube-system", "c"), "Pulled", "pulled")).await;
        eventually("three more events", T, || {
            (server.store().events().len() == 4).then_some(())
        })
        .await;
        let ns_of = |object: &str| events_about(&server, object).pop().and_then(|e| e.metadata.namespace);
        assert_eq!(ns_of(NODE).as_deref(), Some("default"));
        assert_eq!(ns_of("dns").as_deref(), Some("kube-system"));
        assert_eq!(events_about(&server, "init-readiness").len(), 2);

        // An Event that expired meanwhile is created anew with its count.
        server.store().remove("events", "default", &name);
        clock.advance(1);
        send(&addr, record(web, "Started", "Started container web")).await;
        let again = eventually("the expired event is created anew", T, || {
            events_about(&server, "init-readiness")
                .into_iter()
                .find(|e| e.metadata.name.as_deref() == Some(name.as_str()))
        })
        .await;
        assert_eq!(again.count, Some(3));
        let last_patch = writes(&server, "PATCH").pop().map(|r| r.status);
        assert_eq!(last_patch, Some(404), "the patch found it gone");
    });
}

#[test]
fn the_spam_filter_drops_events_beyond_the_burst() {
    run(|| async {
        let server = TestApiServer::start();
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let clock = Clock::new();
        let addr = recorder(&server, &dir, &clock).await;
        for i in 0..30 {
            let reason = format!("Reason{i}");
            send(&addr, record(pod_ref("noisy", "default", "c"), &reason, "m")).await;
        }
        send(&addr, record(pod_ref("quiet", "default", "c"), "Started", "m")).await;
        eventually("the burst and the other pod's event", T, || {
            (events_about(&server, "noisy").len() == 25 && events_about(&server, "quiet").len() == 1).then_some(())
        })
        .await;
        let posts = writes(&server, "POST");
        assert_eq!(posts.len(), 26, "nothing beyond the burst was sent");
        let mut reasons: Vec<String> = events_about(&server, "noisy")
            .into_iter()
            .filter_map(|e| e.reason)
            .collect();
        reasons.sort_by_key(|r| r.trim_start_matches("Reason").parse::<u32>().unwrap_or(u32::MAX));
        let want: Vec<String> = (0..25).map(|i| format!("Reason{i}")).collect();
        assert_eq!(reasons, want, "the first 25 went out");

        // Five minutes later one more token is there.
        clock.advance(301);
        send(&addr, record(pod_ref("noisy", "default", "c"), "Late", "m")).await;
        eventually("the late event", T, || {
            (events_about(&server, "noisy").len() == 26).then_some(())
        })
        .await;
    });
}

#[test]
fn events_wait_out_an_api_server_that_is_away() {
    run(|| async {
        let server = TestApiServer::start();
        let dir = TempDir::new().unwrap_or_else(|e| panic!("{e}"));
        let clock = Clock::new();
        let addr = recorder(&server, &dir, &clock).await;

        server.set_down(true);
        for i in 0..5 {
            // The actor keeps answering while its writes fail.
            send(
                &addr,
                record(pod_ref("p", "default", "c"), "Pulling", &format!("while down {i}")),
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(server.store().events().is_empty());
        server.set_down(false);
        send(&addr, record(pod_ref("p", "default", "c"), "Started", "after")).await;
        eventually("the events sent while down and after", T, || {
            (events_about(&server, "p").len() == 6).then_some(())
        })
        .await;

        // 503s are retried too.
        server.fail_next("POST", EVENTS, 503, 2);
        send(&addr, record(pod_ref("q", "default", "c"), "Started", "overloaded")).await;
        eventually("the event refused twice with 503", T, || {
            events_about(&server, "q").pop()
        })
        .await;
        let statuses: Vec<u16> = writes(&server, "POST")
            .into_iter()
            .filter(|r| r.body.as_ref().is_some_and(|b| b["involvedObject"]["name"] == "q"))
            .map(|r| r.status)
            .collect();
        assert_eq!(statuses, [503, 503, 201]);
    });
}
