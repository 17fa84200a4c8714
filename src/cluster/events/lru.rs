//! A small least-recently-used map (upstream's event caches are
//! `golang-lru` caches of 4096 entries): `get` and `insert` mark an entry as
//! used; inserting into a full map evicts the least recently used one.

use std::hash::Hash;
use std::num::NonZeroUsize;

use lru::LruCache;

/// The size of every event cache (upstream `maxLruCacheEntries`).
pub const MAX_LRU_CACHE_ENTRIES: usize = 4096;

/// A map bounded to `capacity` entries, evicting the least recently used
/// (the `lru` crate's cache with the two operations the correlator uses).
#[derive(Debug)]
pub struct Lru<K: Hash + Eq, V>(LruCache<K, V>);

impl<K: Hash + Eq, V> Lru<K, V> {
    /// An empty map holding at most `capacity` (at least 1) entries.
    pub fn new(capacity: usize) -> Self {
        Self(LruCache::new(NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN)))
    }

    /// The value of `key`, marked as used.
    pub fn get(&mut self, key: &K) -> Option<&mut V> {
        self.0.get_mut(key)
    }

    /// Inserts or replaces `key`, evicting the least recently used entry when full.
    pub fn insert(&mut self, key: K, value: V) {
        self.0.put(key, value);
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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
