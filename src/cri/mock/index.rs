//! Posting lists that answer the mock's filtered `List*` calls without a scan
//! of every record: sandboxes and containers by pod UID label (the selector a
//! kubelet reads a pod's status with), containers by sandbox id.
//!
//! Records' labels and sandbox ids never change after creation, so an index
//! entry is added when a record is inserted and removed with it
//! ([`State::insert_sandbox`](super::state::State::insert_sandbox) and friends).

use std::collections::HashMap;

/// `key → ids`, each list small (a pod's sandboxes or containers).
#[derive(Debug, Default)]
pub(crate) struct Postings(HashMap<String, Vec<String>>);

impl Postings {
    /// Adds `id` under `key` (once).
    pub(crate) fn add(&mut self, key: &str, id: &str) {
        let ids = self.0.entry(key.to_string()).or_default();
        if !ids.iter().any(|i| i == id) {
            ids.push(id.to_string());
        }
    }

    /// Removes `id` from `key`; the key goes when its last id does.
    pub(crate) fn remove(&mut self, key: &str, id: &str) {
        if let Some(ids) = self.0.get_mut(key) {
            ids.retain(|i| i != id);
            if ids.is_empty() {
                self.0.remove(key);
            }
        }
    }

    /// The ids under `key` (empty if none).
    pub(crate) fn get(&self, key: &str) -> &[String] {
        self.0.get(key).map_or(&[], Vec::as_slice)
    }

    /// Number of keys (for tests).
    #[cfg(test)]
    pub(crate) fn keys(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_added_once_and_keys_dropped_when_empty() {
        let mut p = Postings::default();
        p.add("uid-1", "a");
        p.add("uid-1", "a");
        p.add("uid-1", "b");
        p.add("uid-2", "c");
        assert_eq!(p.get("uid-1"), ["a", "b"]);
        p.remove("uid-1", "a");
        assert_eq!(p.get("uid-1"), ["b"]);
        p.remove("uid-1", "b");
        assert!(p.get("uid-1").is_empty());
        assert_eq!(p.keys(), 1);
        p.remove("nope", "x");
        assert_eq!(p.get("uid-2"), ["c"]);
    }
}
