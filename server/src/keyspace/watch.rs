//! WATCH bookkeeping on the owner shard (Redis 7 `multi.c`: `watchForKey`,
//! `touchWatchedKey`, `isWatchedKeyExpired`).
//!
//! Redis flags every client watching a key when the key is modified. Here the
//! watchers may be connections of other shards, so the owner keeps a version
//! number per watched key instead: WATCH records the version it saw, every
//! modification of a watched key bumps it, and EXEC compares. Only watched keys
//! are in the table, so a keyspace nobody watches pays one emptiness check per
//! modification.

use std::collections::HashMap;

use bytes::Bytes;

/// What a connection remembers about one watched key: the key's version when it
/// was watched, and whether the key was already expired then (Redis's
/// `watchedKey.expired`: deleting such a stale key later is no change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchStamp {
    /// The key's modification count at WATCH time.
    pub version: u64,
    /// The key was in the keyspace but past its deadline at WATCH time.
    pub stale: bool,
}

#[derive(Debug)]
struct Watched {
    version: u64,
    /// Connections (of any shard) watching the key; the entry goes at 0.
    watchers: u32,
}

/// The watched keys of one database of one shard.
#[derive(Debug, Default)]
pub struct WatchTable {
    keys: HashMap<Bytes, Watched>,
}

impl WatchTable {
    /// Whether no key is watched (the common case: modifications skip the lookup).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Registers one more watcher of `key` and returns its current version.
    pub fn watch(&mut self, key: &[u8]) -> u64 {
        if let Some(w) = self.keys.get_mut(key) {
            w.watchers += 1;
            return w.version;
        }
        self.keys.insert(
            Bytes::copy_from_slice(key),
            Watched {
                version: 0,
                watchers: 1,
            },
        );
        0
    }

    /// Removes one watcher of `key` (UNWATCH, EXEC, DISCARD, a closed connection).
    pub fn unwatch(&mut self, key: &[u8]) {
        if let Some(w) = self.keys.get_mut(key) {
            w.watchers = w.watchers.saturating_sub(1);
            if w.watchers == 0 {
                self.keys.remove(key);
            }
        }
    }

    /// The current version of a watched `key` (`None` when nobody watches it).
    pub fn version(&self, key: &[u8]) -> Option<u64> {
        self.keys.get(key).map(|w| w.version)
    }

    /// `key` was modified: watchers' EXEC will fail.
    pub fn touch(&mut self, key: &[u8]) {
        if self.keys.is_empty() {
            return;
        }
        if let Some(w) = self.keys.get_mut(key) {
            w.version += 1;
        }
    }

    /// Touches every watched key for which `affected` says yes (FLUSHDB touches the keys
    /// that existed, SWAPDB those present in either database).
    pub fn touch_where(&mut self, mut affected: impl FnMut(&[u8]) -> bool) {
        for (key, w) in &mut self.keys {
            if affected(key) {
                w.version += 1;
            }
        }
    }

    /// The watched keys (for SWAPDB, which must look them up in the other database).
    pub fn keys(&self) -> impl Iterator<Item = &Bytes> {
        self.keys.keys()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_count_touches_of_watched_keys_only() {
        let mut table = WatchTable::default();
        assert!(table.is_empty());
        assert_eq!(table.watch(b"k"), 0);
        table.touch(b"k");
        table.touch(b"other");
        assert_eq!(table.version(b"k"), Some(1));
        assert_eq!(table.version(b"other"), None);
        assert_eq!(table.watch(b"k"), 1);
        table.unwatch(b"k");
        assert_eq!(table.version(b"k"), Some(1));
        table.unwatch(b"k");
        assert_eq!(table.version(b"k"), None);
        assert!(table.is_empty());
    }

    #[test]
    fn touch_where_bumps_the_chosen_keys() {
        let mut table = WatchTable::default();
        table.watch(b"a");
        table.watch(b"b");
        table.touch_where(|k| k == b"a");
        assert_eq!(table.version(b"a"), Some(1));
        assert_eq!(table.version(b"b"), Some(0));
    }
}
