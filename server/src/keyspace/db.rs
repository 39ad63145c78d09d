//! One database of one shard's keyspace (Redis 7 `db.c` / `expire.c` semantics; a shard
//! keeps one per `--databases`, see `cmd::databases`): owner-local,
//! no locks, lazy expiry on access plus a bounded periodic sweep, and a SCAN
//! cursor that survives concurrent inserts and deletes.

use std::collections::BTreeSet;
use std::hash::{BuildHasher, RandomState};

use bytes::Bytes;
use griddle::hash_map::RawEntryMut;
use griddle::HashMap;

use super::glob::string_match;
use super::hash::HashLimits;
use super::key::Key;
use super::memory::{entry_size, lfu_new, lfu_touch, lru_clock, DEFAULT_SAMPLES};
use super::snapshot::{dump_entry, Snapshot};
use super::value::Value;
use super::watch::{WatchStamp, WatchTable};
use crate::notify::flags;

/// Bits of a local SCAN cursor; the 16 bits above are free for the caller to
/// encode a shard index (see `cmd::fanout`).
pub const SCAN_CURSOR_BITS: u32 = 48;

/// A stored value and its absolute expiry deadline (unix ms), if any.
#[derive(Debug, Clone)]
struct Entry {
    value: Value,
    expires_at: Option<u64>,
    /// Access clock (LRU time or LFU minutes+counter: [`super::memory`]).
    clock: u32,
    /// Estimated bytes of key and value as last computed ([`super::memory::entry_size`],
    /// saturating at 2 GiB), counted in [`Db::used_bytes`]; the top bit ([`RAW`]) marks a
    /// string changed in place (APPEND, SETRANGE), which Redis reports as `raw`.
    size: u32,
}

/// The flag bit of [`Entry::size`].
const RAW: u32 = 1 << 31;

/// How a database keeps the access clock of its keys (set from `maxmemory-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AccessClock {
    /// Time of the last access (LRU policies, and no policy).
    #[default]
    Lru,
    /// Redis's LFU counter, with `lfu-log-factor` and `lfu-decay-time` (minutes).
    Lfu {
        /// `lfu-log-factor`.
        log_factor: u32,
        /// `lfu-decay-time`, minutes.
        decay_minutes: u32,
    },
}

impl Entry {
    /// The estimated bytes counted in [`Db::used_bytes`].
    fn bytes(&self) -> u64 {
        u64::from(self.size & !RAW)
    }
    /// Redis 7 `keyIsExpired`: expired when `now > deadline`.
    fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at.is_some_and(|t| now_ms > t)
    }
}

/// One database of one shard's keyspace.
///
/// Keys and values are copied into fresh allocations on insert, so stored
/// data never pins a connection's read buffer.
///
/// SCAN scheme: every key has a fixed 48-bit *scan position* (a keyed hash of
/// the key that never changes while the `Db` lives). A sorted index of
/// `(position, key)` is kept; a cursor is the position to resume from. A scan
/// walks positions in increasing order and the next cursor is the position of
/// the first key not returned, so every key present for the whole scan is
/// returned exactly once, whatever is added or removed in between. Keys that
/// share a position are always returned together.
///
/// Expiry: deadlines are absolute unix milliseconds; a key is expired when
/// `now > deadline`. Reads delete expired keys lazily; [`Db::sweep_expired`]
/// removes them in deadline order from an index, bounded per call.
#[derive(Debug, Default)]
pub struct Db {
    /// The keyspace. griddle's table grows incrementally, as Redis's dict rehashes: when it
    /// fills, a larger table is allocated and every later insert moves a few entries (8) from
    /// the old one, which lookups still search. hashbrown's all-at-once resize moved every
    /// key inside one command: a 65 ms reactor stall at ~100,000 keys, 77 ms at a million.
    map: HashMap<Key, Entry, RandomState>,
    expiry: BTreeSet<(u64, Key)>,
    scan_index: BTreeSet<(u64, Key)>,
    /// Keyed hash giving each key its fixed scan position.
    scan_hasher: RandomState,
    /// Changes made so far (Redis's `server.dirty`): bumped by every mutating access, so a
    /// caller can tell whether a write command changed anything (the append-only log records
    /// only those). Conservative: a mutable access that changes nothing still counts.
    dirty: u64,
    /// Keys deleted because their deadline passed, since the last [`Db::take_expired`]; kept
    /// only when [`Db::track_expired`] is on (the append-only log writes them as `DEL`, as
    /// Redis propagates expirations).
    expired: Option<Vec<Bytes>>,
    /// A point-in-time dump in progress (the append-only log's rewrite).
    snapshot: Option<Snapshot>,
    /// Loading a log: `scan_index` is not kept up to date until [`Db::finish_bulk_load`].
    bulk_loading: bool,
    /// Keys some connection WATCHes, with their modification counts.
    watches: WatchTable,
    /// INFO stats counters of this database.
    stats: KeyspaceStats,
    /// The command running is a read command: [`Db::get`] counts keyspace hits and misses
    /// (Redis counts `lookupKeyRead` only).
    reading: bool,
    /// Sum of the entries' `size`: the estimated bytes of this database's keys and values.
    used: u64,
    /// Keys handed out by [`Db::get_mut`] whose size is recomputed by [`Db::settle`].
    resized: Vec<Key>,
    /// What the access clock holds.
    access: AccessClock,
    /// Under LFU: the scan hash of the key last counted as accessed by the running command,
    /// so a handler that looks its key up twice (create, then modify) counts one access, as
    /// Redis's one `lookupKey` per command does. Cleared by [`Db::settle`].
    lfu_counted: Option<u64>,
    /// The largest string a command may build (SETRANGE, APPEND, SETBIT).
    max_string: StringLimit,
    /// When a small hash becomes a table (`hash-max-listpack-*`).
    hash_limits: HashLimits,
    /// `set-max-intset-entries`: the largest all-integer set replied in ascending order, as
    /// Redis's intset.
    intset_entries: IntsetEntries,
    /// Keyspace events gathered for publishing ([`Db::notify`]).
    notify: notify::Notifications,
    /// CLIENT PAUSE in force: an expired key reads as missing but is not deleted
    /// ([`Db::pause_expiry`]).
    expiry_paused: bool,
}

/// The largest string a command may build, in bytes: `--proto-max-bulk-len` (Redis 7.0
/// `checkStringLength`, `getBitOffsetFromArgument`); 512 MiB until set.
#[derive(Debug, Clone, Copy)]
struct StringLimit(u64);

impl Default for StringLimit {
    fn default() -> Self {
        Self(512 * 1024 * 1024)
    }
}

/// `set-max-intset-entries`; Redis's default, 512, until set.
#[derive(Debug, Clone, Copy)]
struct IntsetEntries(u64);

impl Default for IntsetEntries {
    fn default() -> Self {
        Self(512)
    }
}

/// Redis's `keyspace_hits`, `keyspace_misses` and `expired_keys` for one database.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KeyspaceStats {
    /// Reads ([`Db::get`]) that found their key.
    pub hits: u64,
    /// Reads that did not.
    pub misses: u64,
    /// Keys deleted because their deadline passed (on access or by the sweep).
    pub expired: u64,
}

/// The fixed 48-bit scan position of `key`.
fn scan_pos(hasher: &RandomState, key: &[u8]) -> u64 {
    hasher.hash_one(key) >> (64 - SCAN_CURSOR_BITS)
}

/// Removes `key`'s traces from the secondary indexes.
fn unindex(
    expiry: &mut BTreeSet<(u64, Key)>,
    scan_index: &mut BTreeSet<(u64, Key)>,
    pos: u64,
    key: &Key,
    expires_at: Option<u64>,
) {
    if let Some(t) = expires_at {
        expiry.remove(&(t, key.clone()));
    }
    scan_index.remove(&(pos, key.clone()));
}

impl Db {
    /// An empty keyspace.
    pub fn new() -> Self {
        Self::default()
    }

    /// While `paused` (CLIENT PAUSE, WRITE or ALL, in force), expired keys read as missing
    /// but stay until the pause ends (Redis 7.0 `expireIfNeeded` under
    /// `checkClientPauseTimeoutAndReturnIfPaused`): no deletion, `expired` event or
    /// `expired_keys` count. A write to such a key still replaces it.
    pub fn pause_expiry(&mut self, paused: bool) {
        self.expiry_paused = paused;
    }

    /// Whether expiry is paused ([`Db::pause_expiry`]).
    pub fn expiry_paused(&self) -> bool {
        self.expiry_paused
    }

    /// Number of keys, including expired keys not yet removed (as DBSIZE).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the keyspace holds no key.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of keys with a deadline (INFO keyspace `expires=`).
    pub fn expires_len(&self) -> usize {
        self.expiry.len()
    }

    fn scan_pos(&self, key: &[u8]) -> u64 {
        scan_pos(&self.scan_hasher, key)
    }

    /// Starts loading many keys at once (replay at start): new keys skip the SCAN index, which
    /// [`Db::finish_bulk_load`] then builds in one sorted pass. Inserting 1 M keys one by one
    /// into the index took ~24 % of a replay; sorting them once costs a fraction of that.
    /// Until then SCAN and a rewrite's dump miss the keys loaded meanwhile.
    pub fn start_bulk_load(&mut self) {
        self.bulk_loading = true;
    }

    /// Ends a [`Db::start_bulk_load`]: builds the SCAN index of every key, and sets every
    /// key's access clock to now (a log replays at time 0; Redis's keys are as fresh as the
    /// load too).
    pub fn finish_bulk_load(&mut self) {
        if !std::mem::take(&mut self.bulk_loading) {
            return;
        }
        let now_ms = crate::shard::unix_time_ms();
        let clock = match self.access {
            AccessClock::Lru => lru_clock(now_ms),
            AccessClock::Lfu { .. } => lfu_new(now_ms),
        };
        self.map.values_mut().for_each(|e| e.clock = clock);
        let hasher = &self.scan_hasher;
        self.scan_index = self
            .map
            .keys()
            .map(|key| (scan_pos(hasher, key), key.clone()))
            .collect();
    }

    /// Estimated bytes of the keys and values held (see [`super::memory`]); exact once
    /// [`Db::settle`] ran after the last [`Db::get_mut`].
    pub fn used_bytes(&self) -> u64 {
        self.used
    }

    /// Recomputes the size of the keys changed in place since the last call (after a command:
    /// a handler that got a value from [`Db::get_mut`] may have grown or shrunk it).
    pub fn settle(&mut self) {
        self.lfu_counted = None;
        for key in std::mem::take(&mut self.resized) {
            if let Some(e) = self.map.get_mut(&key) {
                let size = size_u32(entry_size(&key, &e.value, DEFAULT_SAMPLES));
                self.used = self.used.saturating_sub(e.bytes()) + u64::from(size);
                e.size = size | (e.size & RAW);
            }
        }
    }

    /// Switches what the access clock of keys holds (CONFIG SET maxmemory-policy); existing
    /// clocks are read the new way until their next access, as in Redis.
    pub fn set_access_clock(&mut self, access: AccessClock) {
        self.access = access;
    }

    /// Sets the largest string, in bytes, a command may build here (`--proto-max-bulk-len`).
    pub fn set_max_string_len(&mut self, bytes: u64) {
        self.max_string = StringLimit(bytes);
    }

    /// The largest string, in bytes, a command may build here (512 MiB unless set).
    pub fn max_string_len(&self) -> u64 {
        self.max_string.0
    }

    /// Sets when a small hash becomes a table (`hash-max-listpack-entries` / `-value`);
    /// existing hashes convert at their next write, as in Redis.
    pub fn set_hash_limits(&mut self, limits: HashLimits) {
        self.hash_limits = limits;
    }

    /// When a small hash becomes a table (Redis's defaults, 128 fields of 64 bytes, unless
    /// set).
    pub fn hash_limits(&self) -> HashLimits {
        self.hash_limits
    }

    /// Sets `set-max-intset-entries` (see [`Db::intset_entries`]).
    pub fn set_intset_entries(&mut self, entries: u64) {
        self.intset_entries = IntsetEntries(entries);
    }

    /// `set-max-intset-entries`: an all-integer set of at most this many members is replied
    /// (SMEMBERS, SSCAN, set algebra) in ascending order, as Redis's intset; 512 unless set.
    pub fn intset_entries(&self) -> u64 {
        self.intset_entries.0
    }

    /// What the access clock holds now.
    pub fn access_clock(&self) -> AccessClock {
        self.access
    }

    /// The stored value, deadline and access clock of `key`, and whether it is a string
    /// changed in place ([`Db::mark_raw`]), without expiring it or touching its clock
    /// (OBJECT, MEMORY USAGE: Redis's `LOOKUP_NOTOUCH`).
    pub fn inspect(&self, key: &[u8]) -> Option<(&Value, Option<u64>, u32, bool)> {
        self.map
            .get(key)
            .map(|e| (&e.value, e.expires_at, e.clock, e.size & RAW != 0))
    }

    /// Marks the string under `key` as changed in place (APPEND, SETRANGE): OBJECT ENCODING
    /// then says `raw`, as Redis does, until the key is set anew.
    pub fn mark_raw(&mut self, key: &[u8]) {
        if let Some(e) = self.map.get_mut(key) {
            if matches!(e.value, Value::Str(_)) {
                e.size |= RAW;
            }
        }
    }

    /// Sets the access clock of `key` to an access now (TOUCH); `false` when missing. Counts a
    /// keyspace hit or miss when the running command reads (Redis's `lookupKeyRead`).
    pub fn touch(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.lookup(key, now_ms, true, self.reading).is_some()
    }

    /// Overwrites the access clock of `key` (no access counted); nothing when missing.
    pub(super) fn set_clock(&mut self, key: &[u8], clock: u32) {
        if let Some(e) = self.map.get_mut(key) {
            e.clock = clock;
        }
    }

    /// The access clock of a new or just accessed key under `access`.
    fn fresh_clock(access: AccessClock, old: Option<u32>, now_ms: u64) -> u32 {
        match (access, old) {
            (AccessClock::Lru, _) => lru_clock(now_ms),
            (AccessClock::Lfu { .. }, None) => lfu_new(now_ms),
            (
                AccessClock::Lfu {
                    log_factor,
                    decay_minutes,
                },
                Some(clock),
            ) => lfu_touch(clock, now_ms, log_factor, decay_minutes, rand::random()),
        }
    }

    /// The number of mutating accesses so far (see the `dirty` field).
    pub fn dirty(&self) -> u64 {
        self.dirty
    }

    /// Starts (or stops) collecting the keys removed by expiry for [`Db::take_expired`].
    pub fn track_expired(&mut self, on: bool) {
        self.expired = on.then(Vec::new);
    }

    /// The keys removed by expiry since the last call, oldest first.
    pub fn take_expired(&mut self) -> Vec<Bytes> {
        self.expired
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Every stored key with its value and deadline, in no particular order, expired ones
    /// included (DEBUG DIGEST and RELOAD read the whole keyspace).
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &Value, Option<u64>)> {
        self.map
            .iter()
            .map(|(key, e)| (key.as_slice(), &e.value, e.expires_at))
    }

    /// The stored value and deadline of `key` without expiring it (for the append-only log,
    /// which writes the state a command left).
    pub fn peek(&self, key: &[u8]) -> Option<(&Value, Option<u64>)> {
        self.map.get(key).map(|e| (&e.value, e.expires_at))
    }

    /// Before `key` changes: a dump in progress that has not visited it yet dumps its value
    /// as it was now (or, for a key not there, just marks it done).
    fn before_change(&mut self, key: &[u8]) {
        self.watches.touch(key);
        let Some(snapshot) = &mut self.snapshot else {
            return;
        };
        let pos = scan_pos(&self.scan_hasher, key);
        if snapshot.visited(pos, key) || snapshot.done_ahead.contains(key) {
            return;
        }
        if let Some(e) = self.map.get(key) {
            dump_entry(&mut snapshot.out, key, &e.value, e.expires_at);
        }
        snapshot.done_ahead.insert(Key::from_slice(key));
    }

    /// Starts a point-in-time dump of the keyspace as it is now (see
    /// [`crate::keyspace::snapshot`]), labelled with its database index `label`; replaces one
    /// in progress.
    pub fn start_snapshot(&mut self, label: usize) {
        self.snapshot = Some(Snapshot {
            label,
            ..Snapshot::default()
        });
    }

    /// The label of the dump in progress (see [`Db::start_snapshot`]), `None` when none is.
    pub fn snapshot_label(&self) -> Option<usize> {
        self.snapshot.as_ref().map(|s| s.label)
    }

    /// Visits up to `max_keys` more keys of the dump started by [`Db::start_snapshot`] and
    /// returns the records dumped since the last call, and whether the dump is complete.
    ///
    /// A FLUSHALL/FLUSHDB since the start ends the dump (see `Snapshot::flushed`).
    ///
    /// Errors: none is in progress.
    pub fn snapshot_step(&mut self, max_keys: usize) -> Result<(Vec<u8>, bool), &'static str> {
        let Some(snapshot) = &mut self.snapshot else {
            return Err("no dump in progress");
        };
        if snapshot.flushed {
            self.snapshot = None;
            return Ok((Vec::new(), true));
        }
        let range = match &snapshot.last {
            None => self.scan_index.range(..),
            Some(last) => self.scan_index.range((
                std::ops::Bound::Excluded(last.clone()),
                std::ops::Bound::Unbounded,
            )),
        };
        let mut visited = 0;
        let mut last = None;
        for (pos, key) in range.take(max_keys) {
            visited += 1;
            last = Some((*pos, key.clone()));
            if snapshot.done_ahead.remove(key) {
                continue;
            }
            if let Some(e) = self.map.get(key) {
                dump_entry(&mut snapshot.out, key, &e.value, e.expires_at);
            }
        }
        let out = std::mem::take(&mut snapshot.out);
        if visited < max_keys {
            self.snapshot = None;
            return Ok((out, true));
        }
        snapshot.last = last;
        Ok((out, false))
    }

    /// Moves the keys of `other` for which `keep(key)` holds into this keyspace, with their
    /// deadlines (restart with another shard count: a new shard takes its keys from an old
    /// shard's keyspace). A key present in both takes `other`'s value.
    pub fn absorb(&mut self, other: Db, keep: impl Fn(&[u8]) -> bool) {
        for (key, entry) in other.map {
            if !keep(&key) {
                continue;
            }
            self.set(&key, entry.value, false, 0);
            if let Some(at) = entry.expires_at {
                self.set_deadline(&key, at);
            }
        }
    }

    /// Abandons a dump in progress.
    pub fn stop_snapshot(&mut self) {
        self.snapshot = None;
    }

    /// The live entry of `key`, deleting it first if it has expired; counts as an access
    /// of the key (its access clock is updated, as Redis's `lookupKey`).
    fn live(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Entry> {
        self.lookup(key, now_ms, true, false)
    }

    /// As [`Db::live`]; `touch: false` leaves the access clock alone (Redis's
    /// `LOOKUP_NOTOUCH`: TTL, TYPE, EXISTS); `read` counts a keyspace hit or miss (Redis
    /// `lookupKeyRead`).
    fn lookup(&mut self, key: &[u8], now_ms: u64, touch: bool, read: bool) -> Option<&mut Entry> {
        let expiry_paused = self.expiry_paused;
        if self.snapshot.is_some()
            && !expiry_paused
            && self.map.get(key).is_some_and(|e| e.is_expired(now_ms))
        {
            self.before_change(key);
        }
        let access = self.access;
        let mut count_access = true;
        if touch && matches!(access, AccessClock::Lfu { .. }) {
            let hash = self.scan_hasher.hash_one(key);
            count_access = self.lfu_counted != Some(hash);
            self.lfu_counted = Some(hash);
        }
        match self.map.raw_entry_mut().from_key(key) {
            RawEntryMut::Occupied(o) if expiry_paused && o.get().is_expired(now_ms) => {
                self.stats.misses += u64::from(read);
                self.notify.key_miss(read, key);
                None
            }
            RawEntryMut::Occupied(o) if o.get().is_expired(now_ms) => {
                let (k, e) = o.remove_entry();
                self.watches.touch(&k);
                self.used = self.used.saturating_sub(e.bytes());
                let pos = scan_pos(&self.scan_hasher, &k);
                unindex(
                    &mut self.expiry,
                    &mut self.scan_index,
                    pos,
                    &k,
                    e.expires_at,
                );
                if let Some(expired) = &mut self.expired {
                    expired.push(k.to_bytes());
                }
                self.notify.report(flags::EXPIRED, "expired", &k);
                self.stats.expired += 1;
                self.stats.misses += u64::from(read);
                self.notify.key_miss(read, key);
                None
            }
            RawEntryMut::Occupied(o) if !touch => {
                self.stats.hits += u64::from(read);
                Some(o.into_mut())
            }
            RawEntryMut::Occupied(o) => {
                self.stats.hits += u64::from(read);
                let e = o.into_mut();
                e.clock = match access {
                    AccessClock::Lru => lru_clock(now_ms),
                    AccessClock::Lfu { .. } if !count_access => e.clock,
                    AccessClock::Lfu {
                        log_factor,
                        decay_minutes,
                    } => lfu_touch(e.clock, now_ms, log_factor, decay_minutes, rand::random()),
                };
                Some(e)
            }
            RawEntryMut::Vacant(_) => {
                self.stats.misses += u64::from(read);
                self.notify.key_miss(read, key);
                None
            }
        }
    }

    /// Value of `key`, or `None` if missing or expired.
    pub fn get(&mut self, key: &[u8], now_ms: u64) -> Option<&Value> {
        let reading = self.reading;
        self.lookup(key, now_ms, true, reading).map(|e| &e.value)
    }

    /// Value of `key` looked up for reading whatever the command (Redis's `lookupKeyRead`, as
    /// write commands read their sources: SUNIONSTORE, BITOP, ZUNIONSTORE): a keyspace hit or
    /// miss, and a `keymiss` event when missing.
    pub fn get_read(&mut self, key: &[u8], now_ms: u64) -> Option<&Value> {
        self.lookup(key, now_ms, true, true).map(|e| &e.value)
    }

    /// This database's INFO stats counters.
    pub fn stats(&self) -> KeyspaceStats {
        self.stats
    }

    /// Marks the command about to run as a read command (or not), for the keyspace hit and
    /// miss counters.
    pub fn set_reading(&mut self, reading: bool) {
        self.reading = reading;
    }

    /// CONFIG RESETSTAT.
    pub fn reset_stats(&mut self) {
        self.stats = KeyspaceStats::default();
    }

    /// Mutable value of `key`. A caller that empties a collection must call
    /// [`Db::remove_if_empty`] afterwards.
    pub fn get_mut(&mut self, key: &[u8], now_ms: u64) -> Option<&mut Value> {
        self.dirty += 1;
        self.before_change(key);
        if self.map.contains_key(key) {
            self.resized.push(Key::from_slice(key));
        }
        self.live(key, now_ms).map(|e| &mut e.value)
    }

    /// Value of `key` without counting an access (TYPE), or `None` if missing or expired.
    pub fn get_untouched(&mut self, key: &[u8], now_ms: u64) -> Option<&Value> {
        self.lookup(key, now_ms, false, self.reading)
            .map(|e| &e.value)
    }

    /// Whether `key` exists (not expired); not an access of the key (EXISTS).
    pub fn contains(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.lookup(key, now_ms, false, self.reading).is_some()
    }

    /// `None` if `key` is missing, else its deadline (`Some(None)` = no TTL); not an access
    /// of the key (TTL).
    pub fn deadline(&mut self, key: &[u8], now_ms: u64) -> Option<Option<u64>> {
        self.lookup(key, now_ms, false, self.reading)
            .map(|e| e.expires_at)
    }

    /// Stores `value` under `key` (Redis `setKey`): replaces any old value;
    /// the old TTL is kept only when `keep_ttl` and the old key is live.
    pub fn set(&mut self, key: &[u8], value: Value, keep_ttl: bool, now_ms: u64) {
        self.dirty += 1;
        self.before_change(key);
        let size = size_u32(entry_size(key, &value, DEFAULT_SAMPLES));
        if matches!(self.access, AccessClock::Lfu { .. }) {
            self.lfu_counted = Some(self.scan_hasher.hash_one(key));
        }
        let access = self.access;
        // One probe of the table for a live key (the common overwrite).
        let found_expired = match self.map.get_key_value_mut(key) {
            Some((k, e)) if !e.is_expired(now_ms) => {
                e.value = value;
                self.used = self.used.saturating_sub(e.bytes()) + u64::from(size);
                e.size = size;
                e.clock = Self::fresh_clock(access, Some(e.clock), now_ms);
                if !keep_ttl {
                    if let Some(t) = e.expires_at.take() {
                        self.expiry.remove(&(t, k.clone()));
                    }
                }
                return;
            }
            found => found.is_some(),
        };
        if found_expired {
            // Redis's expireIfNeeded before the write: removed, counted and tracked as an
            // expiry, then written anew (also while a pause keeps expired keys).
            let paused = std::mem::replace(&mut self.expiry_paused, false);
            self.lookup(key, now_ms, false, false);
            self.expiry_paused = paused;
        }
        let clock = Self::fresh_clock(access, None, now_ms);
        let owned = Key::from_slice(key);
        if !self.bulk_loading {
            let pos = self.scan_pos(key);
            self.scan_index.insert((pos, owned.clone()));
        }
        self.used += u64::from(size);
        self.map.insert(
            owned,
            Entry {
                value,
                expires_at: None,
                clock,
                size,
            },
        );
        self.notify(flags::NEW, "new", key);
    }

    /// Removes `key`, returning its value (`None` if missing or expired).
    pub fn remove(&mut self, key: &[u8], now_ms: u64) -> Option<Value> {
        self.before_change(key);
        let pos = self.scan_pos(key);
        let (k, e) = self.map.remove_entry(key)?;
        self.dirty += 1;
        self.used = self.used.saturating_sub(e.bytes());
        unindex(
            &mut self.expiry,
            &mut self.scan_index,
            pos,
            &k,
            e.expires_at,
        );
        if e.is_expired(now_ms) {
            None
        } else {
            Some(e.value)
        }
    }

    /// Deletes `key` if it holds an empty collection, reporting Redis's `del` event (so a
    /// handler calls it after reporting its own event, as Redis's handlers do).
    pub fn remove_if_empty(&mut self, key: &[u8]) {
        if self
            .map
            .get(key)
            .is_some_and(|e| e.value.is_empty_collection())
        {
            self.notify(flags::GENERIC, "del", key);
            self.remove(key, 0);
        }
    }

    /// Sets the absolute deadline (unix ms) of an existing key; `false` if
    /// the key does not exist. Does not check whether it is already past.
    pub fn set_deadline(&mut self, key: &[u8], deadline_ms: u64) -> bool {
        self.before_change(key);
        let Some((k, e)) = self.map.get_key_value_mut(key) else {
            return false;
        };
        self.dirty += 1;
        if let Some(old) = e.expires_at.replace(deadline_ms) {
            self.expiry.remove(&(old, k.clone()));
        }
        self.expiry.insert((deadline_ms, k.clone()));
        true
    }

    /// Removes the deadline of `key`; `true` if it had one (PERSIST).
    pub fn persist(&mut self, key: &[u8], now_ms: u64) -> bool {
        self.before_change(key);
        let Some(e) = self.live(key, now_ms) else {
            return false;
        };
        let Some(t) = e.expires_at.take() else {
            return false;
        };
        self.dirty += 1;
        self.expiry.remove(&(t, Key::from_slice(key)));
        true
    }

    /// Removes every key (FLUSHDB). Watched keys that were live at `now_ms` count as
    /// modified; stale ones do not (Redis 7 `touchAllWatchedKeysInDb`).
    pub fn flush(&mut self, now_ms: u64) {
        self.dirty += 1;
        let map = &self.map;
        self.watches
            .touch_where(|key| map.get(key).is_some_and(|e| !e.is_expired(now_ms)));
        if let Some(snapshot) = &mut self.snapshot {
            snapshot.flushed = true;
        }
        // Redis frees the dict's tables on a flush: a cleared table would keep its capacity
        // (megabytes after a large dataset) in INFO used_memory.
        self.map.clear();
        self.map.shrink_to_fit();
        self.expiry.clear();
        self.scan_index.clear();
        self.resized.clear();
        self.used = 0;
    }

    /// Starts watching `key` for one connection (WATCH).
    pub fn watch(&mut self, key: &[u8], now_ms: u64) -> WatchStamp {
        WatchStamp {
            version: self.watches.watch(key),
            stale: self.map.get(key).is_some_and(|e| e.is_expired(now_ms)),
        }
    }

    /// Stops watching `key` for one connection.
    pub fn unwatch(&mut self, key: &[u8]) {
        self.watches.unwatch(key);
    }

    /// Whether `key` changed since it was watched with `stamp` (EXEC then fails): it was
    /// modified, or it expired meanwhile (Redis 7 `isWatchedKeyExpired`). A key already
    /// expired when watched and deleted since is no change.
    pub fn watched_key_changed(&self, key: &[u8], stamp: WatchStamp, now_ms: u64) -> bool {
        let modified = self.watches.version(key) != Some(stamp.version);
        let entry = self.map.get(key);
        if stamp.stale {
            return modified && entry.is_some();
        }
        modified || entry.is_some_and(|e| e.is_expired(now_ms))
    }

    /// After SWAPDB put `other`'s keys here and this database's there: the watch tables
    /// stay with their database numbers, and a watched key counts as modified when it was
    /// live in either database (Redis 7 `touchAllWatchedKeysInDb`).
    pub fn swap_watches_back(&mut self, other: &mut Db, now_ms: u64) {
        std::mem::swap(&mut self.watches, &mut other.watches);
        let live_in_either = |a: &Db, b: &Db, key: &[u8]| {
            [a, b]
                .iter()
                .any(|db| db.map.get(key).is_some_and(|e| !e.is_expired(now_ms)))
        };
        let mine: Vec<Bytes> = (self.watches.keys())
            .filter(|key| live_in_either(self, other, key))
            .cloned()
            .collect();
        let theirs: Vec<Bytes> = (other.watches.keys())
            .filter(|key| live_in_either(self, other, key))
            .cloned()
            .collect();
        mine.iter().for_each(|key| self.watches.touch(key));
        theirs.iter().for_each(|key| other.watches.touch(key));
    }

    /// Live keys matching the glob `pattern` (KEYS), in no particular order.
    /// Expired keys are skipped, not deleted, as Redis 7 does.
    pub fn keys(&self, pattern: &[u8], now_ms: u64) -> Vec<Bytes> {
        let all = pattern == b"*";
        self.map
            .iter()
            .filter(|(k, e)| !e.is_expired(now_ms) && (all || string_match(pattern, k, false)))
            .map(|(k, _)| k.to_bytes())
            .collect()
    }

    /// One SCAN step (see the type-level doc for the cursor scheme). Visits
    /// at least `count` keys (`count` 0 is treated as 1) from position
    /// `cursor`, returning the next cursor (0 when done) and the visited keys
    /// that are live and pass `pattern` (glob) and `type_filter`
    /// (case-insensitive type name; an unknown name matches nothing, as in
    /// Redis 7.0). Expired keys met on the way are deleted. The third item is the number of
    /// keys visited (before the filters; expired ones included), at least `count` unless the
    /// scan is done.
    pub fn scan(
        &mut self,
        cursor: u64,
        count: usize,
        pattern: Option<&[u8]>,
        type_filter: Option<&[u8]>,
        now_ms: u64,
    ) -> (u64, Vec<Bytes>, usize) {
        let count = count.max(1);
        let start = cursor.min(1 << SCAN_CURSOR_BITS);
        let mut visited = Vec::new();
        let mut last = None;
        let mut next = 0;
        for (pos, key) in self.scan_index.range((start, Key::default())..) {
            if visited.len() >= count && last != Some(*pos) {
                next = *pos;
                break;
            }
            last = Some(*pos);
            visited.push(key.clone());
        }
        let pattern = pattern.filter(|p| *p != b"*");
        let examined = visited.len();
        let mut out = Vec::with_capacity(visited.len());
        for key in visited {
            let Some(value) = self.get(&key, now_ms) else {
                continue;
            };
            if type_filter.is_some_and(|t| !t.eq_ignore_ascii_case(value.type_name().as_bytes())) {
                continue;
            }
            if pattern.is_some_and(|p| !string_match(p, &key, false)) {
                continue;
            }
            out.push(key.to_bytes());
        }
        (next, out, examined)
    }

    /// A random live key (RANDOMKEY), `None` when there is none: the first key at or after a
    /// random scan position, wrapping around. Expired keys met are deleted and another draw
    /// is made (each draw removes one, so this ends). While a CLIENT PAUSE holds expiry
    /// ([`Db::pause_expiry`]) an expired key stays, so drawing again could go on for ever on
    /// a keyspace of expired keys: the walk goes on from the draw to the next live key
    /// instead, and finds none after one round.
    pub fn random_key(&mut self, now_ms: u64) -> Option<Bytes> {
        loop {
            let pos = rand::random::<u64>() >> (64 - SCAN_CURSOR_BITS);
            let key = self
                .scan_index
                .range((pos, Key::default())..)
                .next()
                .or_else(|| self.scan_index.first())
                .map(|(_, key)| key.clone())?;
            if self.contains(&key, now_ms) {
                return Some(key.to_bytes());
            }
            if self.expiry_paused {
                let live = |(_, key): &&(u64, Key)| {
                    self.map
                        .get(key)
                        .is_some_and(|entry| !entry.is_expired(now_ms))
                };
                return self
                    .scan_index
                    .range((pos, Key::default())..)
                    .chain(self.scan_index.range(..(pos, Key::default())))
                    .find(live)
                    .map(|(_, key)| key.to_bytes());
            }
        }
    }

    /// Deletes up to `max_keys` expired keys (deadline < `now_ms`), earliest
    /// deadline first, and returns how many were deleted. Cost is
    /// O(max_keys · log n), independent of the number of keys.
    pub fn sweep_expired(&mut self, now_ms: u64, max_keys: usize) -> usize {
        let mut removed = 0;
        while removed < max_keys {
            match self.expiry.first() {
                Some((t, _)) if now_ms > *t => {}
                _ => break,
            }
            let Some((_, key)) = self.expiry.first().cloned() else {
                break;
            };
            self.before_change(&key);
            self.expiry.pop_first();
            let pos = self.scan_pos(&key);
            if let Some(e) = self.map.remove(&key) {
                self.used = self.used.saturating_sub(e.bytes());
            }
            self.scan_index.remove(&(pos, key.clone()));
            if let Some(expired) = &mut self.expired {
                expired.push(key.to_bytes());
            }
            self.notify(flags::EXPIRED, "expired", &key);
            self.stats.expired += 1;
            removed += 1;
        }
        removed
    }
}

/// An entry size as stored (saturating below the [`RAW`] bit).
fn size_u32(size: u64) -> u32 {
    u32::try_from(size).unwrap_or(u32::MAX).min(RAW - 1)
}

#[path = "db_evict.rs"]
pub mod evict;

#[path = "db_notify.rs"]
pub mod notify;

#[cfg(test)]
#[path = "db_tests.rs"]
mod tests;
