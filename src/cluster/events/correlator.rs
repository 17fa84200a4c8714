//! Upstream's `EventCorrelator` (client-go `tools/record/events_cache.go`):
//! what to send for a new event.
//!
//! In order, as upstream:
//! 1. **Aggregation** (`EventAggregator`): events of one object with the same
//!    type and reason but different messages are counted per 10-minute
//!    window; once 10 distinct messages were seen, the event is replaced by
//!    one with the message `(combined from similar events): <message>`,
//!    keyed by object+reason, so further similar events bump that one.
//! 2. **Observation** (`eventLogger`): an event seen before (same source,
//!    object including `fieldPath`, type, reason and message) takes the
//!    earlier Event's name and first timestamp, with `count + 1`: it is sent
//!    as a PATCH of that Event.
//! 3. **Spam filter** (`EventSourceObjectSpamFilter`): one token bucket per
//!    source and involved object (burst 25, one token per 5 minutes); an event
//!    finding it empty is dropped (it still counted in steps 1 and 2).
//!
//! All three caches are LRUs of 4096 entries. Time is the caller's `now`.

use std::collections::HashSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::lru::{Lru, MAX_LRU_CACHE_ENTRIES};

/// The message prefix of an aggregated event.
pub const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// Tunables; [`Default`] is upstream's.
#[derive(Clone, Debug, PartialEq)]
pub struct CorrelatorConfig {
    /// Distinct messages per object+reason before aggregating (`defaultAggregateMaxEvents`).
    pub max_events: usize,
    /// The aggregation window (`defaultAggregateIntervalInSeconds`).
    pub max_interval: Duration,
    /// Events per source+object in a burst (`defaultSpamBurst`).
    pub spam_burst: u32,
    /// Tokens per second after the burst (`defaultSpamQPS`: one per 5 minutes).
    pub spam_qps: f64,
    /// Entries per cache (`maxLruCacheEntries`).
    pub cache_size: usize,
}

impl Default for CorrelatorConfig {
    fn default() -> Self {
        Self {
            max_events: 10,
            max_interval: Duration::from_secs(600),
            spam_burst: 25,
            spam_qps: 1.0 / 300.0,
            cache_size: MAX_LRU_CACHE_ENTRIES,
        }
    }
}

fn join(parts: &[Option<&str>]) -> String {
    parts
        .iter()
        .map(|p| p.unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\u{1f}")
}

fn source_and_object(e: &Event) -> Vec<Option<&str>> {
    let source = e.source.as_ref();
    let o = &e.involved_object;
    vec![
        source.and_then(|s| s.component.as_deref()),
        source.and_then(|s| s.host.as_deref()),
        o.kind.as_deref(),
        o.namespace.as_deref(),
        o.name.as_deref(),
        o.uid.as_deref(),
        o.api_version.as_deref(),
    ]
}

/// The identity of an event for repeats (upstream `getEventKey`): source,
/// object (with `fieldPath`), type, reason, message.
pub fn event_key(e: &Event) -> String {
    let mut parts = source_and_object(e);
    parts.push(e.involved_object.field_path.as_deref());
    parts.extend([e.type_.as_deref(), e.reason.as_deref(), e.message.as_deref()]);
    join(&parts)
}

/// The aggregation key and local key (upstream `EventAggregatorByReasonFunc`):
/// source, object (without `fieldPath`), type, reason, reporting component
/// and instance; the message.
pub fn aggregate_key(e: &Event) -> (String, String) {
    let mut parts = source_and_object(e);
    parts.extend([
        e.type_.as_deref(),
        e.reason.as_deref(),
        e.reporting_component.as_deref(),
        e.reporting_instance.as_deref(),
    ]);
    (join(&parts), e.message.clone().unwrap_or_default())
}

/// The spam filter's key (upstream `getSpamKey`): source and object.
pub fn spam_key(e: &Event) -> String {
    join(&source_and_object(e))
}

fn nanos_between(earlier: Timestamp, later: Timestamp) -> i128 {
    later.as_nanosecond() - earlier.as_nanosecond()
}

/// A token bucket that refills as time passes (upstream's passive rate limiter).
#[derive(Clone, Debug)]
pub struct TokenBucket {
    tokens: f64,
    last: Timestamp,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens at `now`.
    pub fn full(burst: u32, now: Timestamp) -> Self {
        Self {
            tokens: f64::from(burst),
            last: now,
        }
    }

    /// Takes a token if there is one, after refilling at `qps` up to `burst`.
    pub fn try_accept(&mut self, now: Timestamp, qps: f64, burst: u32) -> bool {
        let elapsed = nanos_between(self.last, now).max(0) as f64 / 1e9;
        self.tokens = (self.tokens + elapsed * qps).min(f64::from(burst));
        self.last = self.last.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[derive(Debug)]
struct AggregateRecord {
    local_keys: HashSet<String>,
    last: Timestamp,
}

#[derive(Clone, Debug)]
struct EventLog {
    count: i32,
    first: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

/// What to do with a new event.
#[derive(Clone, Debug, PartialEq)]
pub enum Correlation {
    /// Dropped by the spam filter.
    Skip,
    /// Write this Event: a PATCH of the existing one when `count > 1`, else a create.
    Send(Box<Event>),
}

/// Upstream `EventCorrelator`; see the [module docs](self).
#[derive(Debug)]
pub struct EventCorrelator {
    config: CorrelatorConfig,
    aggregates: Lru<String, AggregateRecord>,
    logs: Lru<String, EventLog>,
    spam: Lru<String, TokenBucket>,
}

impl Default for EventCorrelator {
    fn default() -> Self {
        Self::new(CorrelatorConfig::default())
    }
}

impl EventCorrelator {
    /// A correlator with `config`.
    pub fn new(config: CorrelatorConfig) -> Self {
        Self {
            aggregates: Lru::new(config.cache_size),
            logs: Lru::new(config.cache_size),
            spam: Lru::new(config.cache_size),
            config,
        }
    }

    /// Decides what to send for `event` (a fresh one from
    /// [`make_event`](super::event_object::make_event)) at `now`.
    pub fn correlate(&mut self, event: Event, now: Timestamp) -> Correlation {
        let (event, key) = self.aggregate(event, now);
        let event = self.observe(event, key);
        let spam_key = spam_key(&event);
        let (burst, qps) = (self.config.spam_burst, self.config.spam_qps);
        if self.spam.get(&spam_key).is_none() {
            self.spam.insert(spam_key.clone(), TokenBucket::full(burst, now));
        }
        let accepted = self.spam.get(&spam_key).is_some_and(|b| b.try_accept(now, qps, burst));
        if accepted {
            Correlation::Send(Box::new(event))
        } else {
            Correlation::Skip
        }
    }

    /// Upstream `EventAggregate`: the event to observe and the key to observe it under.
    fn aggregate(&mut self, event: Event, now: Timestamp) -> (Event, String) {
        let (agg_key, local_key) = aggregate_key(&event);
        let window = i128::try_from(self.config.max_interval.as_nanos()).unwrap_or(i128::MAX);
        let expired = self
            .aggregates
            .get(&agg_key)
            .is_none_or(|r| nanos_between(r.last, now) > window);
        if expired {
            let fresh = AggregateRecord {
                local_keys: HashSet::new(),
                last: now,
            };
            self.aggregates.insert(agg_key.clone(), fresh);
        }
        let Some(record) = self.aggregates.get(&agg_key) else {
            let key = event_key(&event);
            return (event, key);
        };
        record.local_keys.insert(local_key.clone());
        record.last = now;
        if record.local_keys.len() < self.config.max_events {
            let key = event_key(&event);
            return (event, key);
        }
        // Do not grow the set any larger than the maximum.
        record.local_keys.remove(&local_key);
        let combined = Event {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: event.metadata.name.clone(),
                namespace: event.metadata.namespace.clone(),
                ..Default::default()
            },
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            message: Some(format!(
                "{COMBINED_PREFIX}{}",
                event.message.as_deref().unwrap_or_default()
            )),
            involved_object: event.involved_object,
            type_: event.type_,
            reason: event.reason,
            source: event.source,
            reporting_component: event.reporting_component,
            reporting_instance: event.reporting_instance,
            ..Event::default()
        };
        (combined, agg_key)
    }

    /// Upstream `eventObserve`: a repeat takes the earlier Event's identity.
    fn observe(&mut self, mut event: Event, key: String) -> Event {
        if let Some(last) = self.logs.get(&key).filter(|l| l.count > 0) {
            event.metadata.name = last.name.clone();
            event.metadata.resource_version = last.resource_version.clone();
            event.first_timestamp = last.first.clone();
            event.count = Some(last.count.saturating_add(1));
        }
        let log = EventLog {
            count: event.count.unwrap_or(1),
            first: event.first_timestamp.clone(),
            name: event.metadata.name.clone(),
            resource_version: event.metadata.resource_version.clone(),
        };
        self.logs.insert(key, log);
        event
    }

    /// Upstream `UpdateState`: records what the server returned for a write.
    /// A count the server has not seen yet (a repeat observed while the write
    /// was in flight) is kept.
    pub fn update_state(&mut self, stored: &Event) {
        let key = event_key(stored);
        let count = stored.count.unwrap_or(1);
        let log = match self.logs.get(&key) {
            Some(l) if l.name == stored.metadata.name => EventLog {
                count: l.count.max(count),
                resource_version: stored.metadata.resource_version.clone(),
                ..l.clone()
            },
            _ => EventLog {
                count,
                first: stored.first_timestamp.clone(),
                name: stored.metadata.name.clone(),
                resource_version: stored.metadata.resource_version.clone(),
            },
        };
        self.logs.insert(key, log);
    }
}

#[cfg(test)]
#[path = "correlator_tests.rs"]
mod tests;
