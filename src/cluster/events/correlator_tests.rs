use k8s_openapi::api::core::v1::ObjectReference;

use super::*;
use crate::cluster::events::event_object::make_event;
use crate::messages::event::{EventType, RecordEvent};

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap_or_else(|e| panic!("{e}"))
}

fn record(pod: &str, container: &str, reason: &str, message: &str) -> RecordEvent {
    RecordEvent {
        involved: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(pod.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{pod}")),
            field_path: Some(format!("spec.containers{{{container}}}")),
            ..ObjectReference::default()
        },
        type_: EventType::Normal,
        reason: reason.into(),
        message: message.into(),
        annotations: Default::default(),
    }
}

fn event(r: &RecordEvent, secs: i64) -> Event {
    let now = at(secs);
    make_event(r, "node", now, now.as_nanosecond() + i128::from(secs))
}

fn send(c: &mut EventCorrelator, r: &RecordEvent, secs: i64) -> Event {
    match c.correlate(event(r, secs), at(secs)) {
        Correlation::Send(e) => *e,
        Correlation::Skip => panic!("skipped at {secs}s: {r:?}"),
    }
}

#[test]
fn keys_tell_what_makes_events_identical_or_similar() {
    let a = event(&record("p", "c", "Started", "Started container c"), 0);
    let other_container = event(&record("p", "d", "Started", "Started container c"), 0);
    let other_message = event(&record("p", "c", "Started", "Started container d"), 0);
    assert_ne!(event_key(&a), event_key(&other_container), "fieldPath counts");
    assert_ne!(event_key(&a), event_key(&other_message));
    assert_eq!(aggregate_key(&a).0, aggregate_key(&other_container).0, "no fieldPath");
    assert_eq!(aggregate_key(&a).0, aggregate_key(&other_message).0);
    assert_ne!(aggregate_key(&a).1, aggregate_key(&other_message).1);
    let other_reason = event(&record("p", "c", "Created", "Started container c"), 0);
    assert_ne!(aggregate_key(&a).0, aggregate_key(&other_reason).0);
    assert_eq!(spam_key(&a), spam_key(&other_reason), "spam: per object");
    assert_ne!(spam_key(&a), spam_key(&event(&record("q", "c", "Started", "x"), 0)));
}

#[test]
fn a_repeat_bumps_the_first_event() {
    let mut c = EventCorrelator::default();
    let r = record("p", "c", "BackOff", "Back-off pulling image \"x\"");
    let first = send(&mut c, &r, 0);
    assert_eq!(first.count, Some(1));
    let second = send(&mut c, &r, 7);
    assert_eq!(second.metadata.name, first.metadata.name, "same Event object");
    assert_eq!(second.count, Some(2));
    assert_eq!(second.first_timestamp, Some(Time(at(0))));
    assert_eq!(second.last_timestamp, Some(Time(at(7))));
    let third = send(&mut c, &r, 9);
    assert_eq!((third.metadata.name, third.count), (first.metadata.name, Some(3)));
    let other = send(&mut c, &record("p", "d", "BackOff", "Back-off pulling image \"x\""), 9);
    assert_eq!(other.count, Some(1), "another container is another Event");
}

#[test]
fn ten_similar_messages_in_ten_minutes_are_combined() {
    let mut c = EventCorrelator::default();
    let sent: Vec<Event> = (0..12)
        .map(|i| send(&mut c, &record("p", "c", "Failed", &format!("Error: {i}")), i))
        .collect();
    for (i, e) in sent.iter().take(9).enumerate() {
        assert_eq!(e.message.as_deref(), Some(format!("Error: {i}").as_str()));
        assert_eq!(e.count, Some(1));
    }
    assert_eq!(
        sent[9].message.as_deref(),
        Some("(combined from similar events): Error: 9")
    );
    assert_eq!(sent[9].count, Some(1));
    assert_eq!(
        sent[10].message.as_deref(),
        Some("(combined from similar events): Error: 10")
    );
    assert_eq!(
        sent[10].metadata.name, sent[9].metadata.name,
        "the combined Event is bumped"
    );
    assert_eq!(sent[11].count, Some(3));

    // A window later, messages are their own again.
    let later = send(&mut c, &record("p", "c", "Failed", "Error: late"), 11 + 601);
    assert_eq!(later.message.as_deref(), Some("Error: late"));
}

#[test]
fn the_spam_filter_allows_a_burst_of_25_then_one_per_5_minutes() {
    let mut c = EventCorrelator::default();
    let decisions: Vec<bool> = (0..30)
        .map(|i| {
            let r = record("p", "c", "Pulling", &format!("m{i}"));
            matches!(c.correlate(event(&r, 0), at(0)), Correlation::Send(_))
        })
        .collect();
    assert_eq!(decisions.iter().filter(|d| **d).count(), 25);
    assert!(decisions[..25].iter().all(|d| *d));

    let r = record("p", "c", "Pulling", "again");
    assert_eq!(c.correlate(event(&r, 299), at(299)), Correlation::Skip);
    assert!(matches!(c.correlate(event(&r, 301), at(301)), Correlation::Send(_)));
    assert_eq!(c.correlate(event(&r, 302), at(302)), Correlation::Skip);

    let other = record("q", "c", "Pulling", "m");
    assert!(
        matches!(c.correlate(event(&other, 302), at(302)), Correlation::Send(_)),
        "other object"
    );
}

#[test]
fn filtered_repeats_still_count() {
    let mut c = EventCorrelator::new(CorrelatorConfig {
        spam_burst: 1,
        ..CorrelatorConfig::default()
    });
    let r = record("p", "c", "BackOff", "b");
    send(&mut c, &r, 0);
    assert_eq!(c.correlate(event(&r, 1), at(1)), Correlation::Skip);
    let later = send(&mut c, &r, 301);
    assert_eq!(later.count, Some(3), "the skipped repeat counted");
}

#[test]
fn the_stored_state_keeps_a_newer_count() {
    let mut c = EventCorrelator::default();
    let r = record("p", "c", "BackOff", "b");
    let first = send(&mut c, &r, 0);
    let _second = send(&mut c, &r, 1);
    let mut stored = first.clone();
    stored.metadata.resource_version = Some("42".into());
    c.update_state(&stored);
    let third = send(&mut c, &r, 2);
    assert_eq!(
        third.count,
        Some(3),
        "the late answer to the create did not reset the count"
    );
    assert_eq!(third.metadata.resource_version.as_deref(), Some("42"));
}

#[test]
fn token_buckets_refill_up_to_the_burst() {
    let mut b = TokenBucket::full(2, at(0));
    assert!(b.try_accept(at(0), 1.0, 2) && b.try_accept(at(0), 1.0, 2));
    assert!(!b.try_accept(at(0), 1.0, 2));
    assert!(b.try_accept(at(100), 1.0, 2) && b.try_accept(at(100), 1.0, 2));
    assert!(!b.try_accept(at(100), 1.0, 2), "refilled only up to the burst");
}
