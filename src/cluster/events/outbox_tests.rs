use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;

fn event(name: &str, count: i32) -> Event {
    Event {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        count: Some(count),
        ..Event::default()
    }
}

fn key(name: &str) -> EventKey {
    ("default".into(), name.into())
}

#[test]
fn repeats_are_patches_and_first_events_creates() {
    assert_eq!(Write::new(event("a", 1)).mode, WriteMode::Create);
    assert_eq!(Write::new(event("a", 2)).mode, WriteMode::Patch);
}

#[test]
fn one_write_per_event_in_flight_and_repeats_merge() {
    let now = Instant::now();
    let mut out = Outbox::new(10, 4);
    assert_eq!(out.push(Write::new(event("a", 1))), Pushed::Queued);
    let first = out.next_ready(now).unwrap_or_else(|| panic!("a is ready"));
    assert_eq!(first.mode, WriteMode::Create);
    assert_eq!(out.push(Write::new(event("a", 2))), Pushed::Queued);
    assert_eq!(out.push(Write::new(event("a", 3))), Pushed::Merged);
    assert_eq!(out.next_ready(now), None, "a is in flight");
    out.done(&key("a"));
    let next = out.next_ready(now).unwrap_or_else(|| panic!("the repeat is ready"));
    assert_eq!((next.mode, next.event.count), (WriteMode::Patch, Some(3)));
}

#[test]
fn a_failed_create_merged_with_a_repeat_stays_a_create() {
    let now = Instant::now();
    let mut out = Outbox::new(10, 4);
    out.push(Write::new(event("a", 1)));
    let mut failed = out.next_ready(now).unwrap_or_else(|| panic!("ready"));
    out.push(Write::new(event("a", 2)));
    failed.tries = 1;
    failed.not_before = Some(now + Duration::from_secs(10));
    out.done(&failed.key());
    assert_eq!(out.push(failed), Pushed::Merged);
    assert_eq!(out.next_ready(now), None, "held back for the retry");
    assert_eq!(out.next_due_after(now), Some(now + Duration::from_secs(10)));
    assert_eq!(
        out.next_due_after(now + Duration::from_secs(10)),
        None,
        "due: no wake-up needed"
    );
    let w = out
        .next_ready(now + Duration::from_secs(10))
        .unwrap_or_else(|| panic!("due"));
    assert_eq!((w.mode, w.event.count, w.tries), (WriteMode::Create, Some(2), 1));
}

#[test]
fn bounded_queue_and_in_flight() {
    let now = Instant::now();
    let mut out = Outbox::new(3, 2);
    for n in ["a", "b", "c"] {
        assert_eq!(out.push(Write::new(event(n, 1))), Pushed::Queued);
    }
    assert!(matches!(out.push(Write::new(event("d", 1))), Pushed::Dropped(_)));
    assert!(out.next_ready(now).is_some() && out.next_ready(now).is_some());
    assert_eq!(out.next_ready(now), None, "two in flight");
    assert_eq!((out.queued(), out.in_flight()), (1, 2));
    out.done(&key("a"));
    assert_eq!(out.next_ready(now).map(|w| w.key()), Some(key("c")));
}
