//! Eviction candidates of one database (Redis 7.0 `evict.c` `evictionPoolPopulate`): random
//! keys sampled from the SCAN index (all keys) or the expiry index (keys with a deadline),
//! each starting at a random point of the index, so a sample costs O(log n) per key.

use bytes::Bytes;

use super::{AccessClock, Db};
use crate::keyspace::memory::{idle_ms, lfu_counter};

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
    /// Up to `samples` keys picked at random (`volatile`: only keys with a deadline), each
    /// scored by `rank` at `now_ms`. Keys already expired are not returned (the sweep and
    /// lazy expiry remove them). Empty when the database has no such key.
    pub fn eviction_sample(
        &self,
        samples: usize,
        volatile: bool,
        rank: Rank,
        now_ms: u64,
    ) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = Vec::with_capacity(samples);
        for _ in 0..samples {
            let key = if volatile {
                self.random_volatile_key()
            } else {
                self.random_key()
            };
            let Some(key) = key else {
                break;
            };
            if out.iter().any(|c| c.key == key) {
                continue;
            }
            let Some(e) = self.map.get(&key) else {
                continue;
            };
            let score = match rank {
                Rank::Idle => idle_ms(e.clock, now_ms),
                Rank::Frequency => {
                    let decay = match self.access {
                        AccessClock::Lfu { decay_minutes, .. } => decay_minutes,
                        AccessClock::Lru => 1,
                    };
                    255 - u64::from(lfu_counter(e.clock, now_ms, decay))
                }
                Rank::Deadline => u64::MAX - e.expires_at.unwrap_or(u64::MAX),
                Rank::Random => 0,
            };
            out.push(Candidate { key, score });
        }
        out
    }

    /// A random key: the first at or after a random SCAN position (wrapping around).
    fn random_key(&self) -> Option<Bytes> {
        if self.bulk_loading || self.scan_index.is_empty() {
            return self.map.keys().next().cloned();
        }
        let pos: u64 = rand::random::<u64>() >> (64 - super::SCAN_CURSOR_BITS);
        self.scan_index
            .range((pos, Bytes::new())..)
            .next()
            .or_else(|| self.scan_index.first())
            .map(|(_, key)| key.clone())
    }

    /// A random key with a deadline: the first at or after a random deadline between the
    /// earliest and the latest (wrapping around).
    fn random_volatile_key(&self) -> Option<Bytes> {
        let (first, _) = self.expiry.first()?;
        let (last, _) = self.expiry.last()?;
        let at = first + rand::random::<u64>() % (last - first + 1);
        self.expiry
            .range((at, Bytes::new())..)
            .next()
            .or_else(|| self.expiry.first())
            .map(|(_, key)| key.clone())
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
        }
        before - self.used
    }
}
