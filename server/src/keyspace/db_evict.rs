//! Eviction candidates of one database (Redis 7.0 `evict.c` `evictionPoolPopulate`): keys
//! sampled from the SCAN index (all keys) or the expiry index (keys with a deadline) from a
//! random point, so a sample costs O(log n + samples).

use bytes::Bytes;

use super::{AccessClock, Db};
use crate::keyspace::key::Key;
use crate::keyspace::memory::{idle_ms, lfu_counter, lfu_with_counter, lru_idle};

/// A sampled key and how much it deserves eviction (higher first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The key.
    pub key: Bytes,
    /// LRU: idle ms; LFU: 255 minus the decayed counter; TTL: `u64::MAX` minus the
    /// deadline; random: 0.
    pub score: u64,
}

/// What an eviction policy ranks sampled keys by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rank {
    /// Longest idle first.
    Idle,
    /// Least frequently used first.
    Frequency,
    /// Nearest deadline first.
    Deadline,
    /// Any.
    Random,
}

impl Db {
    /// Up to `samples` keys (`volatile`: only keys with a deadline), each scored by `rank` at
    /// `now_ms`: consecutive keys of the SCAN index (or of the expiry index) from a random
    /// point, wrapping around (Redis's `dictGetSomeKeys` walks consecutive buckets the same
    /// way); under [`Rank::Deadline`] the keys with the nearest deadlines, exactly. A database
    /// with at most `samples` such keys gives them all. Empty when it has none.
    pub fn eviction_sample(
        &self,
        samples: usize,
        volatile: bool,
        rank: Rank,
        now_ms: u64,
    ) -> Vec<Candidate> {
        let keys: Vec<&Key> =
            if rank == Rank::Deadline || (volatile && self.expiry.len() <= samples) {
                self.expiry.iter().take(samples).map(|(_, k)| k).collect()
            } else if volatile {
                let (first, _) = match self.expiry.first() {
                    Some(first) => first,
                    None => return Vec::new(),
                };
                let last = self.expiry.last().map_or(*first, |(t, _)| *t);
                let at = first + rand::random::<u64>() % (last - first + 1);
                let from = (at, Key::default());
                self.expiry
                    .range(&from..)
                    .chain(self.expiry.range(..&from))
                    .take(samples)
                    .map(|(_, k)| k)
                    .collect()
            } else if self.bulk_loading || self.scan_index.len() <= samples {
                self.map.keys().take(samples).collect()
            } else {
                let pos: u64 = rand::random::<u64>() >> (64 - super::SCAN_CURSOR_BITS);
                let from = (pos, Key::default());
                self.scan_index
                    .range(&from..)
                    .chain(self.scan_index.range(..&from))
                    .take(samples)
                    .map(|(_, k)| k)
                    .collect()
            };
        let decay = match self.access {
            AccessClock::Lfu { decay_minutes, .. } => decay_minutes,
            AccessClock::Lru => 1,
        };
        keys.into_iter()
            .filter_map(|key| {
                let e = self.map.get(key)?;
                let score = match rank {
                    Rank::Idle => idle_ms(e.clock, now_ms),
                    Rank::Frequency => 255 - u64::from(lfu_counter(e.clock, now_ms, decay)),
                    Rank::Deadline => u64::MAX - e.expires_at.unwrap_or(u64::MAX),
                    Rank::Random => 0,
                };
                Some(Candidate {
                    key: key.to_bytes(),
                    score,
                })
            })
            .collect()
    }

    /// Sets the access clock of `key` as RESTORE's IDLETIME / FREQ ask (Redis
    /// `objectSetLRUOrLFU`): under an LFU policy to `freq` (the counter, 0–255) when given,
    /// otherwise to an access `idle_seconds` ago when given; the other option is ignored.
    /// Nothing when `key` is missing.
    pub fn set_access(
        &mut self,
        key: &[u8],
        idle_seconds: Option<u64>,
        freq: Option<u8>,
        now_ms: u64,
    ) {
        let clock = match (self.access_clock(), idle_seconds, freq) {
            (AccessClock::Lfu { .. }, _, Some(freq)) => lfu_with_counter(now_ms, freq),
            (AccessClock::Lru, Some(idle), _) => lru_idle(now_ms, idle),
            _ => return,
        };
        self.set_clock(key, clock);
    }

    /// Deletes `key` to free memory (an eviction): the append-only log, when it tracks this
    /// database's removals ([`Db::track_expired`]), writes it as a `DEL`, as Redis propagates
    /// evictions. Returns the estimated bytes freed.
    pub fn evict(&mut self, key: &Bytes) -> u64 {
        let before = self.used;
        if self.remove(key, 0).is_some() {
            if let Some(expired) = &mut self.expired {
                expired.push(key.clone());
            }
            self.notify(crate::notify::flags::EVICTED, "evicted", key);
        }
        before.saturating_sub(self.used)
    }
}
