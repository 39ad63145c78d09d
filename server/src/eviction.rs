//! `--maxmemory` on one shard (Redis 7.0 `evict.c` `performEvictions`, called from
//! `processCommand` before every command): while the shard's estimated dataset
//! ([`crate::keyspace::memory`]) is over its share of `maxmemory`, evict the best of
//! `maxmemory-samples` sampled keys under `maxmemory-policy`; when that cannot bring it under
//! the limit, commands flagged `denyoom` fail with Redis's `-OOM` error.

use bytes::Bytes;

use crate::cmd::table::lookup;
use crate::keyspace::db::evict::{Candidate, Rank};
use crate::keyspace::memory::DB_OVERHEAD;
use crate::keyspace::Db;
use crate::resp::Frame;
use crate::runtime::EvictionPolicy;
use crate::shard::Shard;

/// Redis's reply to a `denyoom` command while memory is over the limit.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Evictions one command may cause before it runs (Redis bounds the time instead); past it
/// the command runs, as under Redis's `EVICT_RUNNING`, and the next ones evict more.
pub const MAX_EVICTIONS_PER_COMMAND: usize = 1024;

/// Before `args` runs on database `selected`: evicts under the policy when the shard is over
/// its share of `maxmemory`. Returns the `-OOM` error when the shard stays over it and the
/// command is flagged `denyoom`; `None` when the command may run.
pub fn before_command(
    shard: &Shard,
    dbs: &mut [Db],
    selected: usize,
    args: &[Bytes],
    now_ms: u64,
) -> Option<Frame> {
    let (limit, policy, samples) = {
        let runtime = shard.runtime.borrow();
        (
            runtime.shard_maxmemory(shard.nr_shards),
            runtime.maxmemory_policy,
            runtime.maxmemory_samples,
        )
    };
    if limit == 0 || make_room(shard, dbs, Some(selected), limit, policy, samples, now_ms) {
        return None;
    }
    let denyoom = args
        .first()
        .and_then(|name| lookup(name))
        .is_some_and(|spec| spec.has_flag("denyoom"));
    denyoom.then(|| Frame::error(OOM))
}

/// Redis's `performEvictions` outside a command (CONFIG SET `maxmemory`, a command queued
/// inside MULTI, EXEC of a transaction holding a `denyoom` command): evicts under the policy
/// until the shard is within its share of `maxmemory`, logs the evictions and publishes their
/// `evicted` events. Returns `true` when the shard stays over its share (Redis's
/// `EVICT_FAIL`); always `false` without a limit.
pub fn out_of_memory(shard: &Shard, now_ms: u64) -> bool {
    let (limit, policy, samples) = {
        let runtime = shard.runtime.borrow();
        (
            runtime.shard_maxmemory(shard.nr_shards),
            runtime.maxmemory_policy,
            runtime.maxmemory_samples,
        )
    };
    if limit == 0 {
        return false;
    }
    let mut dbs = shard.dbs.borrow_mut();
    let within = make_room(shard, &mut dbs, None, limit, policy, samples, now_ms);
    if dbs.first().is_some_and(Db::notifies) {
        crate::notify::publish::after_command(shard, &mut dbs, 0);
    }
    !within
}

/// Estimated dataset bytes of the shard: every database's keys and values, plus
/// [`DB_OVERHEAD`] per database.
pub fn used_bytes(dbs: &[Db]) -> u64 {
    dbs.iter().map(|db| db.used_bytes() + DB_OVERHEAD).sum()
}

/// Evicts until the shard is within `limit` bytes; `false` when it cannot be (noeviction, or
/// no key the policy may evict is left). The evictions of database `selected` are left for
/// the command about to run there to log; those of every other database are logged here.
fn make_room(
    shard: &Shard,
    dbs: &mut [Db],
    selected: Option<usize>,
    limit: u64,
    policy: EvictionPolicy,
    samples: usize,
    now_ms: u64,
) -> bool {
    let rank = match policy {
        EvictionPolicy::Noeviction => return used_bytes(dbs) <= limit,
        EvictionPolicy::AllkeysLru | EvictionPolicy::VolatileLru => Rank::Idle,
        EvictionPolicy::AllkeysLfu | EvictionPolicy::VolatileLfu => Rank::Frequency,
        EvictionPolicy::AllkeysRandom | EvictionPolicy::VolatileRandom => Rank::Random,
        EvictionPolicy::VolatileTtl => Rank::Deadline,
    };
    for _ in 0..MAX_EVICTIONS_PER_COMMAND {
        if used_bytes(dbs) <= limit {
            return true;
        }
        let mut best: Option<(usize, Candidate)> = None;
        // From a random database: ties (every `*-random` candidate) go to the first seen.
        let start = rand::random::<usize>() % dbs.len().max(1);
        for index in (start..dbs.len()).chain(0..start) {
            let db = &dbs[index];
            if db.is_empty() {
                continue;
            }
            for candidate in db.eviction_sample(samples, policy.is_volatile(), rank, now_ms) {
                if best.as_ref().is_none_or(|(_, b)| candidate.score > b.score) {
                    best = Some((index, candidate));
                }
            }
        }
        let Some((index, victim)) = best else {
            return false;
        };
        dbs[index].evict(&victim.key);
        shard
            .info
            .evicted_keys
            .set(shard.info.evicted_keys.get() + 1);
        shard.metrics.key_evicted();
        // The command's own database is logged with the command (its removals first).
        if Some(index) != selected {
            if let Some(aof) = &shard.aof {
                aof.log_expired(index, &mut dbs[index]);
            }
        }
    }
    true
}
