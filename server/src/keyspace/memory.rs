//! Per-key memory estimate, access clock and reported encoding.
//!
//! **Estimate** (MEMORY USAGE, `--maxmemory` accounting): bytes of the key and value plus a
//! fixed overhead per stored thing, counted from shardline's layout, not measured:
//! [`ENTRY_OVERHEAD`] per key (hash-table slot, entry, SCAN-index node, allocation headers),
//! plus for a string its length, and for a collection [`ELEMENT_OVERHEAD`] per element plus
//! the element bytes; each database adds [`DB_OVERHEAD`]. Large collections are sampled as Redis's `objectComputeSize` does: the
//! average of the first `samples` elements times the element count.
//!
//! **Access clock** (Redis 7.0 `evict.c`): one `u32` per key. Under an LRU (or no) policy it
//! holds the time of the last access in 10 ms units (OBJECT IDLETIME); under an LFU policy, Redis's
//! layout: the last decrement time in minutes (16 bits) above a logarithmic access counter
//! (8 bits) that starts at [`LFU_INIT_VAL`] (OBJECT FREQ).
//!
//! **Encoding** (OBJECT ENCODING): what Redis 7.0 would use for the same value under the
//! same `*-max-*` parameters; shardline stores every value of a type the same way.

use super::value::Value;
use crate::runtime::EncodingKnobs;

/// Estimated bytes per key besides its key and value bytes.
pub const ENTRY_OVERHEAD: u64 = 96;
/// Estimated bytes of one database's empty tables (hash table, expiry and SCAN indexes): a
/// shard never uses 0 bytes, so `maxmemory 1` refuses every `denyoom` command, as in Redis.
pub const DB_OVERHEAD: u64 = 256;
/// Estimated bytes per element of a list, hash or set besides the element bytes.
pub const ELEMENT_OVERHEAD: u64 = 48;
/// Elements sampled for the cached estimate of a collection (Redis's MEMORY USAGE default).
pub const DEFAULT_SAMPLES: usize = 5;
/// A new key's LFU counter (Redis `LFU_INIT_VAL`).
pub const LFU_INIT_VAL: u8 = 5;

/// Estimated bytes of `key` holding `value`, sampling up to `samples` elements of a
/// collection (0 = all).
pub fn entry_size(key: &[u8], value: &Value, samples: usize) -> u64 {
    ENTRY_OVERHEAD + key.len() as u64 + value_size(value, samples)
}

fn value_size(value: &Value, samples: usize) -> u64 {
    fn sampled<'a>(len: usize, items: impl Iterator<Item = u64> + 'a, samples: usize) -> u64 {
        let take = if samples == 0 { len } else { samples.min(len) };
        if take == 0 {
            return 0;
        }
        let bytes: u64 = items.take(take).sum();
        len as u64 * ELEMENT_OVERHEAD + bytes * len as u64 / take as u64
    }
    match value {
        Value::Str(s) => s.len() as u64,
        Value::List(l) => sampled(l.len(), l.iter().map(|e| e.len() as u64), samples),
        Value::Hash(h) => sampled(
            h.len(),
            h.iter().map(|(f, v)| (f.len() + v.len()) as u64),
            samples,
        ),
        Value::Set(s) => sampled(s.len(), s.iter().map(|m| m.len() as u64), samples),
        // Member bytes twice (map key and skiplist node share one allocation of `Bytes`, but
        // the node adds its levels) and the 8-byte score.
        Value::ZSet(z) => sampled(
            z.len(),
            z.entries().map(|(m, _)| m.len() as u64 + 24),
            samples,
        ),
    }
}

/// Resolution of the LRU clock, ms: finer than Redis's 1 s so that eviction tells apart keys
/// used within the same second; the `u32` clock wraps after 497 days (Redis's 24-bit one
/// after 194), and an idle time is taken modulo that.
pub const LRU_RESOLUTION_MS: u64 = 10;

/// The access clock now under LRU: Unix time in [`LRU_RESOLUTION_MS`] units, wrapping.
pub fn lru_clock(now_ms: u64) -> u32 {
    (now_ms / LRU_RESOLUTION_MS) as u32
}

/// Milliseconds since the access recorded by `clock` (eviction order).
pub fn idle_ms(clock: u32, now_ms: u64) -> u64 {
    u64::from(lru_clock(now_ms).wrapping_sub(clock)) * LRU_RESOLUTION_MS
}

/// Seconds since the access recorded by `clock` (OBJECT IDLETIME).
pub fn idle_seconds(clock: u32, now_ms: u64) -> u64 {
    idle_ms(clock, now_ms) / 1000
}

/// The LRU access clock of a key last accessed `idle_seconds` before `now_ms` (RESTORE …
/// IDLETIME, Redis `objectSetLRUOrLFU`); the clock wraps like [`lru_clock`].
pub fn lru_idle(now_ms: u64, idle_seconds: u64) -> u32 {
    let idle_units = idle_seconds.saturating_mul(1000 / LRU_RESOLUTION_MS);
    lru_clock(now_ms).wrapping_sub(idle_units as u32)
}

/// The LFU clock at `now_ms` with access counter `counter` (RESTORE … FREQ, Redis
/// `objectSetLRUOrLFU`).
pub fn lfu_with_counter(now_ms: u64, counter: u8) -> u32 {
    (u32::from(lfu_minutes(now_ms)) << 8) | u32::from(counter)
}

fn lfu_minutes(now_ms: u64) -> u16 {
    (now_ms / 60_000) as u16
}

/// A new key's LFU clock at `now_ms`.
pub fn lfu_new(now_ms: u64) -> u32 {
    lfu_with_counter(now_ms, LFU_INIT_VAL)
}

/// The LFU counter of `clock` after its decay (Redis `LFUDecrAndReturn`): one less per
/// `decay_minutes` elapsed since the last decrement (0 = no decay).
pub fn lfu_counter(clock: u32, now_ms: u64, decay_minutes: u32) -> u8 {
    let last = (clock >> 8) as u16;
    let counter = (clock & 0xff) as u8;
    let now = lfu_minutes(now_ms);
    let elapsed = if now >= last {
        now - last
    } else {
        u16::MAX - last + now
    };
    let periods = u32::from(elapsed).checked_div(decay_minutes).unwrap_or(0);
    counter.saturating_sub(periods.min(255) as u8)
}

/// The LFU clock after one access (Redis `updateLFU`: decay, then `LFULogIncr` with
/// probability `1 / ((counter - LFU_INIT_VAL) * log_factor + 1)`). `random` is uniform in
/// `[0, 1)`.
pub fn lfu_touch(clock: u32, now_ms: u64, log_factor: u32, decay_minutes: u32, random: f64) -> u32 {
    let mut counter = lfu_counter(clock, now_ms, decay_minutes);
    if counter < 255 {
        let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
        let p = 1.0 / (base * f64::from(log_factor) + 1.0);
        if random < p {
            counter += 1;
        }
    }
    (u32::from(lfu_minutes(now_ms)) << 8) | u32::from(counter)
}

/// Redis's `string2ll` acceptance: the text is the canonical decimal form of an `i64`.
fn is_canonical_integer(text: &[u8]) -> bool {
    text.len() <= 20
        && std::str::from_utf8(text)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .is_some_and(|n| n.to_string().as_bytes() == text)
}

/// Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_SIZE_LIMIT: usize = 44;

/// OBJECT ENCODING of `value` (Redis 7.0): strings `int` (canonical integer), `embstr`
/// (≤ 44 bytes) or `raw`; lists `quicklist`; hashes `listpack` or `hashtable`, as
/// stored ([`super::Hash`]: a hash turns into a table for good at the write that takes it past
/// `hash-max-listpack-entries` fields or `hash-max-listpack-value` bytes); sets `intset` (integers only, within
/// `set-max-intset-entries`) or `hashtable`; sorted sets `listpack` (within
/// `zset-max-listpack-entries` members, each within `zset-max-listpack-value` bytes) or
/// `skiplist`.
pub fn encoding(value: &Value, knobs: &EncodingKnobs) -> &'static str {
    match value {
        Value::Str(s) if is_canonical_integer(s) => "int",
        Value::Str(s) if s.len() <= EMBSTR_SIZE_LIMIT => "embstr",
        Value::Str(_) => "raw",
        Value::List(_) => "quicklist",
        // The hash's own form: converted for good when it outgrew the knobs at a write.
        Value::Hash(h) if h.is_small() => "listpack",
        Value::Hash(_) => "hashtable",
        Value::ZSet(z) => {
            if z.len() as u64 <= knobs.zset_max_listpack_entries
                && z.entries()
                    .all(|(m, _)| m.len() as u64 <= knobs.zset_max_listpack_value)
            {
                "listpack"
            } else {
                "skiplist"
            }
        }
        Value::Set(s) => {
            if s.len() as u64 <= knobs.set_max_intset_entries
                && s.iter().all(|m| is_canonical_integer(m))
            {
                "intset"
            } else {
                "hashtable"
            }
        }
    }
}

/// OBJECT REFCOUNT: Redis shares the integers 0 to 9999 stored as strings
/// (`OBJ_SHARED_INTEGERS`, refcount `INT_MAX`) unless an LRU/LFU policy with a memory limit
/// needs a clock per key; everything else has one reference.
pub fn refcount(value: &Value, shares_integers: bool) -> i64 {
    match value {
        Value::Str(s)
            if shares_integers
                && is_canonical_integer(s)
                && std::str::from_utf8(s)
                    .ok()
                    .and_then(|t| t.parse::<i64>().ok())
                    .is_some_and(|n| (0..10_000).contains(&n)) =>
        {
            i64::from(i32::MAX)
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn string_encodings() {
        let knobs = EncodingKnobs::default();
        let enc = |s: &str| encoding(&Value::Str(Bytes::from(s.to_string())), &knobs);
        assert_eq!(enc("12345"), "int");
        assert_eq!(enc("-7"), "int");
        assert_eq!(enc("007"), "embstr");
        assert_eq!(enc("hello"), "embstr");
        assert_eq!(enc(&"x".repeat(45)), "raw");
    }

    #[test]
    fn lfu_counter_decays_per_period() {
        let start = 10 * 60_000;
        let clock = lfu_new(start);
        assert_eq!(lfu_counter(clock, start, 1), LFU_INIT_VAL);
        assert_eq!(lfu_counter(clock, start + 3 * 60_000, 1), LFU_INIT_VAL - 3);
        assert_eq!(lfu_counter(clock, start + 3 * 60_000, 0), LFU_INIT_VAL);
        // At the initial value an access always counts (p = 1).
        assert_eq!(lfu_touch(clock, start, 10, 1, 0.99) & 0xff, 6);
    }

    #[test]
    fn sampled_size_extrapolates() {
        let list: std::collections::VecDeque<Bytes> =
            (0..100).map(|_| Bytes::from_static(b"abcd")).collect();
        let size = entry_size(b"k", &Value::List(list), 5);
        assert_eq!(size, ENTRY_OVERHEAD + 1 + 100 * ELEMENT_OVERHEAD + 400);
    }
}
