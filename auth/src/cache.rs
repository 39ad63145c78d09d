//! The optional per-shard credentials cache (off by default).
//!
//! Remembers recent successful logins so a repeat login skips the hash. Keyed by user
//! name and HMAC-SHA-512 of the password under a random per-process key (the password
//! itself is never stored); bounded LRU; entries expire after a TTL; the whole cache is
//! dropped when the users file's generation changes (reload). See README.md for the
//! security trade-off.

use std::num::NonZeroUsize;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use lru::LruCache;
use rand::RngCore;
use sha2::Sha512;
use zeroize::{Zeroize, Zeroizing};

/// Cache settings. `ttl == 0` (the default) turns the cache off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheConfig {
    /// How long a successful login is remembered (`--credentials-cache-ttl-ms`; 0 = off).
    pub ttl: Duration,
    /// Entries per shard (least recently used are evicted first). Default 1024.
    pub capacity: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            ttl: Duration::ZERO,
            capacity: 1024,
        }
    }
}

impl CacheConfig {
    /// Whether this configuration enables the cache.
    pub fn enabled(&self) -> bool {
        !self.ttl.is_zero() && self.capacity > 0
    }
}

/// The per-process HMAC key, drawn from the OS on first use.
fn process_key() -> &'static [u8; 64] {
    static KEY: OnceLock<[u8; 64]> = OnceLock::new();
    KEY.get_or_init(|| {
        let mut k = [0u8; 64];
        rand::rngs::OsRng.fill_bytes(&mut k);
        k
    })
}

/// HMAC-SHA-512(process key, password).
fn password_tag(password: &[u8]) -> Zeroizing<[u8; 64]> {
    let mut mac = <Hmac<Sha512> as Mac>::new_from_slice(process_key())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(password);
    Zeroizing::new(mac.finalize().into_bytes().into())
}

/// A cache key: the user name and the keyed hash of the password. The tag is wiped when the
/// key is dropped (evicted, expired, cleared on reload, or a lookup's temporary).
#[derive(PartialEq, Eq, Hash)]
struct CacheKey {
    user: Vec<u8>,
    tag: [u8; 64],
}

impl CacheKey {
    fn new(user: &[u8], password: &[u8]) -> CacheKey {
        CacheKey {
            user: user.to_vec(),
            tag: *password_tag(password),
        }
    }
}

impl Drop for CacheKey {
    fn drop(&mut self) {
        self.tag.zeroize();
    }
}

/// A bounded, expiring cache of (user, keyed password hash) pairs known to be valid.
pub struct CredentialsCache {
    entries: LruCache<CacheKey, Instant>,
    ttl: Duration,
    generation: u64,
    hits: u64,
    misses: u64,
}

impl std::fmt::Debug for CredentialsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialsCache")
            .field("len", &self.entries.len())
            .field("ttl", &self.ttl)
            .field("hits", &self.hits)
            .field("misses", &self.misses)
            .finish()
    }
}

impl CredentialsCache {
    /// A cache per `config`, or `None` when the config turns it off.
    pub fn new(config: &CacheConfig) -> Option<CredentialsCache> {
        let capacity = NonZeroUsize::new(config.capacity)?;
        if config.ttl.is_zero() {
            return None;
        }
        Some(CredentialsCache {
            entries: LruCache::new(capacity),
            ttl: config.ttl,
            generation: 0,
            hits: 0,
            misses: 0,
        })
    }

    /// Drops everything if `generation` (from [`crate::users::Users::generation`]) differs
    /// from the one the entries were made under.
    fn sync_generation(&mut self, generation: u64) {
        if self.generation != generation {
            self.entries.clear();
            self.generation = generation;
        }
    }

    /// Whether `user`/`password` was verified within the TTL under users generation
    /// `generation`. Counts a hit or a miss; removes an expired entry.
    pub fn lookup(&mut self, generation: u64, user: &[u8], password: &[u8], now: Instant) -> bool {
        self.sync_generation(generation);
        let key = CacheKey::new(user, password);
        let hit = match self.entries.get(&key) {
            Some(&expires) if now < expires => true,
            Some(_) => {
                self.entries.pop(&key);
                false
            }
            None => false,
        };
        if hit {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
        hit
    }

    /// Remembers a successful verification of `user`/`password` until `now + ttl`.
    pub fn insert(&mut self, generation: u64, user: &[u8], password: &[u8], now: Instant) {
        self.sync_generation(generation);
        self.entries
            .put(CacheKey::new(user, password), now + self.ttl);
    }

    /// Lookups that found a valid entry.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// Entries held (expired ones included until looked up or evicted).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(ttl_ms: u64, capacity: usize) -> CredentialsCache {
        CredentialsCache::new(&CacheConfig {
            ttl: Duration::from_millis(ttl_ms),
            capacity,
        })
        .expect("enabled")
    }

    #[test]
    fn off_by_default() {
        assert!(!CacheConfig::default().enabled());
        assert!(CredentialsCache::new(&CacheConfig::default()).is_none());
        assert!(CredentialsCache::new(&CacheConfig {
            ttl: Duration::from_secs(1),
            capacity: 0
        })
        .is_none());
    }

    #[test]
    fn hit_miss_expiry_and_generation() {
        let mut c = cache(1000, 8);
        let t0 = Instant::now();
        assert!(!c.lookup(1, b"alice", b"pw", t0));
        c.insert(1, b"alice", b"pw", t0);
        assert!(c.lookup(1, b"alice", b"pw", t0 + Duration::from_millis(999)));
        assert!(!c.lookup(1, b"alice", b"other", t0), "other password");
        assert!(!c.lookup(1, b"bob", b"pw", t0), "other user");
        assert!(
            !c.lookup(1, b"alice", b"pw", t0 + Duration::from_millis(1000)),
            "expired"
        );
        assert_eq!(c.len(), 0, "expired entry removed");
        c.insert(1, b"alice", b"pw", t0);
        assert!(!c.lookup(2, b"alice", b"pw", t0), "reload drops the cache");
        assert!(c.is_empty());
        assert_eq!((c.hits(), c.misses()), (1, 5));
    }

    #[test]
    fn bounded_lru() {
        let mut c = cache(60_000, 2);
        let t = Instant::now();
        c.insert(1, b"a", b"1", t);
        c.insert(1, b"b", b"2", t);
        assert!(c.lookup(1, b"a", b"1", t)); // a is now most recent
        c.insert(1, b"c", b"3", t); // evicts b
        assert_eq!(c.len(), 2);
        assert!(!c.lookup(1, b"b", b"2", t));
        assert!(c.lookup(1, b"a", b"1", t));
        assert!(c.lookup(1, b"c", b"3", t));
    }
}
