//! Set algebra on one shard: SINTER SUNION SDIFF, their STORE forms, SINTERCARD and SMOVE
//! (Redis 7.0 `t_set.c` `sinterGenericCommand`, `sunionDiffGenericCommand`,
//! `sinterCardCommand`, `smoveCommand`). `connection::commands::composed` runs them when the
//! keys live on several shards.

use std::collections::HashSet;

use bytes::Bytes;

use super::reply::{is_opt, syntax_error, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

/// Redis's reply to a numkeys below 1 or not an integer.
pub const BAD_NUMKEYS: &str = "ERR numkeys should be greater than 0";
/// Redis's reply to a numkeys larger than the arguments that follow it.
pub const TOO_MANY_KEYS: &str = "ERR Number of keys can't be greater than number of args";
/// SINTERCARD's reply to a LIMIT not a non-negative integer.
pub const BAD_LIMIT: &str = "ERR LIMIT can't be negative";

/// Which of `keys` hold a set (`false` for a missing key), or WRONGTYPE when one holds
/// another type (checked for every key, in order, as Redis). Each key is looked up (an
/// access, expiring it when due) once.
fn check_sets(db: &mut Db, keys: &[Bytes], now: u64) -> Result<Vec<bool>, Frame> {
    let mut present = Vec::with_capacity(keys.len());
    for key in keys {
        match db.get_read(key, now) {
            Some(Value::Set(_)) => present.push(true),
            Some(_) => return Err(wrong_type()),
            None => present.push(false),
        }
    }
    Ok(present)
}

/// The sets at `keys` after [`check_sets`] found them (`present`), borrowed: `None` for a
/// missing key.
fn borrow_sets<'a>(
    db: &'a Db,
    keys: &[Bytes],
    present: &[bool],
) -> Vec<Option<&'a HashSet<Bytes>>> {
    keys.iter()
        .zip(present)
        .map(|(key, &there)| match db.peek(key) {
            Some((Value::Set(set), _)) if there => Some(set),
            _ => None,
        })
        .collect()
}

/// Intersection of `sets` (empty when one is missing), counting at most `limit` members
/// when `limit > 0` (SINTERCARD).
fn intersect(sets: Vec<Option<&HashSet<Bytes>>>, limit: usize) -> HashSet<Bytes> {
    let Some(mut sets) = sets.into_iter().collect::<Option<Vec<_>>>() else {
        return HashSet::new();
    };
    sets.sort_by_key(|s| s.len());
    let Some((smallest, others)) = sets.split_first() else {
        return HashSet::new();
    };
    let mut out = HashSet::new();
    for member in smallest.iter() {
        if others.iter().all(|s| s.contains(member)) {
            out.insert(member.clone());
            if limit > 0 && out.len() >= limit {
                break;
            }
        }
    }
    out
}

/// Union (`diff` false) or the first set minus the others (`diff` true); missing sets are
/// empty.
fn union_or_diff(sets: Vec<Option<&HashSet<Bytes>>>, diff: bool) -> HashSet<Bytes> {
    let mut sets = sets.into_iter();
    let mut out = sets.next().flatten().cloned().unwrap_or_default();
    for set in sets.flatten() {
        if diff {
            if out.is_empty() {
                break;
            }
            out.retain(|m| !set.contains(m));
        } else {
            out.extend(set.iter().cloned());
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Algebra {
    Inter,
    Union,
    Diff,
}

fn compute(db: &mut Db, keys: &[Bytes], now: u64, kind: Algebra) -> Result<HashSet<Bytes>, Frame> {
    let present = check_sets(db, keys, now)?;
    let sets = borrow_sets(db, keys, &present);
    Ok(match kind {
        Algebra::Inter => intersect(sets, 0),
        Algebra::Union => union_or_diff(sets, false),
        Algebra::Diff => union_or_diff(sets, true),
    })
}

/// The members of a SINTER / SUNION / SDIFF result, in Redis's order (an all-integer result
/// within `intset_entries` is an intset there: ascending).
fn members_reply(set: HashSet<Bytes>, intset_entries: u64) -> Frame {
    Frame::Set(
        super::sets::reply_order(set.iter(), intset_entries)
            .into_iter()
            .map(|m| Frame::Bulk(m.clone()))
            .collect(),
    )
}

/// Stores `set` at `dest` (deleting it when empty; the TTL is dropped) → its size. Events as
/// Redis 7.0.15's `sinterGenericCommand` / `sunionDiffGenericCommand`: `new` when created,
/// then `event` (`sinterstore`, `sunionstore`, `sdiffstore`); or `del` when an existing
/// destination is deleted.
fn store(db: &mut Db, dest: &[u8], set: HashSet<Bytes>, now: u64, event: &'static str) -> Frame {
    let len = set.len();
    if len == 0 {
        if db.remove(dest, now).is_some() {
            db.notify(flags::GENERIC, "del", dest);
        }
    } else {
        db.set(dest, Value::Set(set), false, now);
        db.notify(flags::SET, event, dest);
    }
    Frame::Integer(len as i64)
}

fn read_form(db: &mut Db, args: &[Bytes], now: u64, kind: Algebra) -> Frame {
    match compute(db, &args[1..], now, kind) {
        Ok(set) => members_reply(set, db.intset_entries()),
        Err(e) => e,
    }
}

fn store_form(db: &mut Db, args: &[Bytes], now: u64, kind: Algebra) -> Frame {
    let event = match kind {
        Algebra::Inter => "sinterstore",
        Algebra::Union => "sunionstore",
        Algebra::Diff => "sdiffstore",
    };
    match compute(db, &args[2..], now, kind) {
        Ok(set) => store(db, &args[1], set, now, event),
        Err(e) => e,
    }
}

/// `SINTER key...` → the members in every set (a set reply; empty when a key is missing).
/// WRONGTYPE when any key holds another type.
pub fn sinter(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    read_form(db, args, now, Algebra::Inter)
}

/// `SUNION key...` → the members of any of the sets. WRONGTYPE as SINTER.
pub fn sunion(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    read_form(db, args, now, Algebra::Union)
}

/// `SDIFF key...` → the members of the first set in none of the others. WRONGTYPE as SINTER.
pub fn sdiff(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    read_form(db, args, now, Algebra::Diff)
}

/// `SINTERSTORE destination key...` → the size of the intersection stored at
/// `destination` (deleted when empty; its TTL dropped).
pub fn sinterstore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    store_form(db, args, now, Algebra::Inter)
}

/// `SUNIONSTORE destination key...`: as SINTERSTORE for the union.
pub fn sunionstore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    store_form(db, args, now, Algebra::Union)
}

/// `SDIFFSTORE destination key...`: as SINTERSTORE for the difference.
pub fn sdiffstore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    store_form(db, args, now, Algebra::Diff)
}

/// The keys of a `numkeys key... [options]` command starting at `args[at]` (SINTERCARD,
/// LMPOP): `Ok(numkeys)`, or [`BAD_NUMKEYS`] (not an integer, or below 1). The caller checks
/// that enough arguments follow.
pub fn numkeys(args: &[Bytes], at: usize) -> Result<usize, Frame> {
    match crate::resp::num::parse_i64(&args[at]) {
        Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        _ => Err(Frame::error(BAD_NUMKEYS)),
    }
}

/// `SINTERCARD numkeys key... [LIMIT limit]` → the size of the intersection, counting at most
/// `limit` members when it is above 0. Errors: [`BAD_NUMKEYS`], [`TOO_MANY_KEYS`],
/// [`BAD_LIMIT`], `ERR syntax error`, then WRONGTYPE.
pub fn sintercard(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let count = match numkeys(args, 1) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if count > args.len() - 2 {
        return Frame::error(TOO_MANY_KEYS);
    }
    let mut limit = 0usize;
    let mut j = 2 + count;
    while j < args.len() {
        if is_opt(&args[j], "limit") && j + 1 < args.len() {
            j += 1;
            match crate::resp::num::parse_i64(&args[j]) {
                Some(n) if n >= 0 => limit = usize::try_from(n).unwrap_or(usize::MAX),
                _ => return Frame::error(BAD_LIMIT),
            }
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let keys = &args[2..2 + count];
    match check_sets(db, keys, now) {
        Ok(present) => {
            Frame::Integer(intersect(borrow_sets(db, keys, &present), limit).len() as i64)
        }
        Err(e) => e,
    }
}

/// `SMOVE source destination member` → 1 when `member` moved from `source` to
/// `destination` (an emptied source is deleted, the destination created when missing), 0
/// when `source` is missing or lacks it. WRONGTYPE when either key holds another type (even
/// a missing member: Redis checks the types first). Same key: 1 if a member, nothing moves.
pub fn smove(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (src, dst, member) = (&args[1], &args[2], &args[3]);
    match db.get(src, now) {
        Some(Value::Set(_)) => {}
        Some(_) => return wrong_type(),
        None => return Frame::Integer(0),
    }
    if matches!(db.get(dst, now), Some(v) if !matches!(v, Value::Set(_))) {
        return wrong_type();
    }
    if src == dst {
        let member_of = matches!(db.get(src, now), Some(Value::Set(s)) if s.contains(&member[..]));
        return Frame::Integer(i64::from(member_of));
    }
    let removed = match db.get_mut(src, now) {
        Some(Value::Set(set)) => set.remove(&member[..]),
        _ => false,
    };
    if !removed {
        return Frame::Integer(0);
    }
    // Redis 7.0.15's `smoveCommand` events: `srem` (and `del` of an emptied source), then
    // `new` of a created destination and `sadd` when the member was added.
    db.notify(flags::SET, "srem", src);
    db.remove_if_empty(src);
    // A destination that already holds the member is not touched (WATCH sees no change).
    match db.get(dst, now) {
        Some(Value::Set(set)) if set.contains(&member[..]) => return Frame::Integer(1),
        Some(Value::Set(_)) => {
            if let Some(Value::Set(set)) = db.get_mut(dst, now) {
                set.insert(member.clone());
            }
        }
        _ => {
            let set = HashSet::from([member.clone()]);
            db.set(dst, Value::Set(set), false, now);
        }
    }
    db.notify(flags::SET, "sadd", dst);
    Frame::Integer(1)
}
