//! The recorder's writes waiting to go out: bounded, at most one write per
//! Event object in flight, repeats of a waiting write merged into it, and
//! retries held back until their time.

use std::collections::{HashSet, VecDeque};

use k8s_openapi::api::core::v1::Event;
use tokio::time::Instant;

/// Upstream `maxQueuedEvents`: writes waiting beyond this are dropped.
pub const MAX_QUEUED: usize = 1000;
/// Writes sent at the same time (upstream sends one at a time).
pub const MAX_IN_FLIGHT: usize = 4;

/// How an Event is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// POST a new Event.
    Create,
    /// PATCH `count`, `lastTimestamp` and `message` of the existing one
    /// (created anew if it is gone).
    Patch,
}

/// One write of one Event object.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    /// The Event as it should be stored.
    pub event: Event,
    /// Create or patch.
    pub mode: WriteMode,
    /// Failed attempts so far.
    pub tries: u32,
    /// Not to be sent before then (a retry).
    pub not_before: Option<Instant>,
}

/// The identity of an Event object: (namespace, name).
pub type EventKey = (String, String);

impl Write {
    /// A first attempt: a patch for a repeat (`count > 1`), else a create.
    pub fn new(event: Event) -> Self {
        let mode = if event.count.unwrap_or(1) > 1 {
            WriteMode::Patch
        } else {
            WriteMode::Create
        };
        Self {
            event,
            mode,
            tries: 0,
            not_before: None,
        }
    }

    /// The Event object written.
    pub fn key(&self) -> EventKey {
        let m = &self.event.metadata;
        (
            m.namespace.clone().unwrap_or_default(),
            m.name.clone().unwrap_or_default(),
        )
    }

    /// `self` (older) and `newer` as one write: the newer Event, created if
    /// either was a create (the object may not exist yet), held back as long
    /// as either.
    fn merge(self, newer: Write) -> Write {
        let mode = if self.mode == WriteMode::Create || newer.mode == WriteMode::Create {
            WriteMode::Create
        } else {
            WriteMode::Patch
        };
        Write {
            event: newer.event,
            mode,
            tries: self.tries.max(newer.tries),
            not_before: self.not_before.max(newer.not_before),
        }
    }
}

/// What became of a pushed write.
#[derive(Debug, PartialEq)]
pub enum Pushed {
    /// Waiting to be sent.
    Queued,
    /// Merged into a waiting write of the same Event.
    Merged,
    /// The outbox is full: dropped.
    Dropped(Box<Write>),
}

/// See the [module docs](self).
#[derive(Debug)]
pub struct Outbox {
    queued: VecDeque<Write>,
    in_flight: HashSet<EventKey>,
    max_queued: usize,
    max_in_flight: usize,
}

impl Default for Outbox {
    fn default() -> Self {
        Self::new(MAX_QUEUED, MAX_IN_FLIGHT)
    }
}

impl Outbox {
    /// An outbox holding `max_queued` waiting writes, sending `max_in_flight` at once.
    pub fn new(max_queued: usize, max_in_flight: usize) -> Self {
        Self {
            queued: VecDeque::new(),
            in_flight: HashSet::new(),
            max_queued,
            max_in_flight: max_in_flight.max(1),
        }
    }

    /// Adds a write (new, or a retry of one that was taken).
    pub fn push(&mut self, write: Write) -> Pushed {
        let key = write.key();
        if let Some(i) = self.queued.iter().position(|q| q.key() == key) {
            let Some(q) = self.queued.remove(i) else {
                return Pushed::Dropped(Box::new(write));
            };
            // Counts only grow: the higher count is the newer observation
            // (a retry is older than a repeat queued meanwhile).
            let (older, newer) = if write.event.count >= q.event.count {
                (q, write)
            } else {
                (write, q)
            };
            self.queued.insert(i, older.merge(newer));
            return Pushed::Merged;
        }
        if self.queued.len() >= self.max_queued {
            return Pushed::Dropped(Box::new(write));
        }
        self.queued.push_back(write);
        Pushed::Queued
    }

    /// The next write to send at `now`, marked in flight: the oldest that is
    /// due and whose Event has no write in flight, within the in-flight limit.
    pub fn next_ready(&mut self, now: Instant) -> Option<Write> {
        if self.in_flight.len() >= self.max_in_flight {
            return None;
        }
        let i = self
            .queued
            .iter()
            .position(|w| w.not_before.is_none_or(|t| t <= now) && !self.in_flight.contains(&w.key()))?;
        let write = self.queued.remove(i)?;
        self.in_flight.insert(write.key());
        Some(write)
    }

    /// The write of `key` is finished (stored, dropped, or pushed again to retry).
    pub fn done(&mut self, key: &EventKey) {
        self.in_flight.remove(key);
    }

    /// When the earliest write held back beyond `now` becomes due (writes
    /// due already go out as soon as the in-flight limits allow).
    pub fn next_due_after(&self, now: Instant) -> Option<Instant> {
        self.queued
            .iter()
            .filter_map(|w| w.not_before)
            .filter(|t| *t > now)
            .min()
    }

    /// Writes waiting.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    /// Writes in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}

#[cfg(test)]
#[path = "outbox_tests.rs"]
mod tests;
