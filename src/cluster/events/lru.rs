//! A small least-recently-used map (upstream's event caches are
//! `golang-lru` caches of 4096 entries): `get` and `insert` mark an entry as
//! used; inserting into a full map evicts the least recently used one.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// The size of every event cache (upstream `maxLruCacheEntries`).
pub const MAX_LRU_CACHE_ENTRIES: usize = 4096;

/// A map bounded to `capacity` entries, evicting the least recently used.
#[derive(Debug)]
pub struct Lru<K, V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<K, (V, u64)>,
    by_use: BTreeMap<u64, K>,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty map holding at most `capacity` (at least 1) entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    fn touch(&mut self, key: &K) -> Option<&mut V> {
        self.tick += 1;
        let tick = self.tick;
        let (value, used) = self.entries.get_mut(key)?;
        self.by_use.remove(used);
        *used = tick;
        self.by_use.insert(tick, key.clone());
        Some(value)
    }

    /// The value of `key`, marked as used.
    pub fn get(&mut self, key: &K) -> Option<&mut V> {
        self.touch(key)
    }

    /// Inserts or replaces `key`, evicting the least recently used entry when full.
    pub fn insert(&mut self, key: K, value: V) {
        if let Some(v) = self.touch(&key) {
            *v = value;
            return;
        }
        if self.entries.len() >= self.capacity
            && let Some((_, oldest)) = self.by_use.pop_first()
        {
            self.entries.remove(&oldest);
        }
        self.tick += 1;
        self.by_use.insert(self.tick, key.clone());
        self.entries.insert(key, (value, self.tick));
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.insert("a", 1);
        lru.insert("b", 2);
        assert_eq!(lru.get(&"a").copied(), Some(1), "a is now the most recent");
        lru.insert("c", 3);
        assert_eq!(lru.get(&"b"), None, "b was the least recently used");
        assert_eq!((lru.get(&"a").copied(), lru.get(&"c").copied()), (Some(1), Some(3)));
        lru.insert("a", 10);
        assert_eq!((lru.len(), lru.get(&"a").copied()), (2, Some(10)));
    }
}
