//! Sorted set commands on single members: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK
//! ZREVRANK ZCOUNT ZLEXCOUNT (Redis 7.0 `t_zset.c`).

use bytes::Bytes;

use super::reply::{syntax_error, wrong_type};
use super::zset_args::{lex_range, score_arg, score_range, NAN_SCORE, RANGE_NOT_FLOAT};
use crate::keyspace::{Db, Value, ZSet};
use crate::notify::flags as notify;
use crate::resp::Frame;

/// ZADD's flags (`ZADD_IN_*`).
#[derive(Debug, Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What one `zsetAdd` did.
enum Added {
    /// New member.
    New(f64),
    /// Score changed.
    Updated(f64),
    /// Nothing (NX on an existing member, XX on a new one, GT/LT refused, same score).
    Unchanged(f64),
    /// Not processed (NX/XX/GT/LT refused): INCR replies Null.
    Skipped,
}

/// Redis `zsetAdd`: applies one (score, member) under `flags`; `Err` when INCR makes NaN.
fn add_one(zset: &mut ZSet, score: f64, member: &Bytes, flags: AddFlags) -> Result<Added, Frame> {
    match zset.score(member) {
        Some(current) => {
            if flags.nx {
                return Ok(Added::Skipped);
            }
            let mut score = score;
            if flags.incr {
                score += current;
                if score.is_nan() {
                    return Err(Frame::error(NAN_SCORE));
                }
            }
            if (flags.lt && score >= current) || (flags.gt && score <= current) {
                return Ok(Added::Skipped);
            }
            if score != current {
                zset.insert(member.clone(), score);
                Ok(Added::Updated(score))
            } else {
                Ok(Added::Unchanged(score))
            }
        }
        None if !flags.xx => {
            zset.insert(member.clone(), score);
            Ok(Added::New(score))
        }
        None => Ok(Added::Skipped),
    }
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]` (Redis 7.0
/// `zaddGenericCommand`): the number of members added (with CH: added or changed); with INCR
/// the new score as a double, or Null when NX/XX/GT/LT skipped it. Errors in Redis's order:
/// odd pairs `ERR syntax error`, `ERR XX and NX options at the same time are not compatible`,
/// `ERR GT, LT, and/or NX options at the same time are not compatible`, `ERR INCR option
/// supports a single increment-element pair`, `ERR value is not a valid float`, WRONGTYPE,
/// `ERR resulting score is not a number (NaN)`.
pub fn zadd(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let mut flags = AddFlags::default();
    let mut at = 2;
    while let Some(opt) = args.get(at) {
        match opt.to_ascii_lowercase().as_slice() {
            b"nx" => flags.nx = true,
            b"xx" => flags.xx = true,
            b"gt" => flags.gt = true,
            b"lt" => flags.lt = true,
            b"ch" => flags.ch = true,
            b"incr" => flags.incr = true,
            _ => break,
        }
        at += 1;
    }
    add_generic(db, args, now, flags, at)
}

/// `ZINCRBY key increment member` → the new score (a double): ZADD INCR.
pub fn zincrby(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    add_generic(db, args, now, flags, 2)
}

/// The body of ZADD with `flags` parsed and the score/member pairs at `args[at..]`.
fn add_generic(db: &mut Db, args: &[Bytes], now: u64, flags: AddFlags, at: usize) -> Frame {
    let rest = &args[at..];
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return syntax_error();
    }
    if flags.nx && flags.xx {
        return Frame::error("ERR XX and NX options at the same time are not compatible");
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Frame::error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if flags.incr && rest.len() > 2 {
        return Frame::error("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for pair in rest.chunks_exact(2) {
        match score_arg(&pair[0]) {
            Ok(score) => pairs.push((score, &pair[1])),
            Err(e) => return e,
        }
    }
    let nothing = if flags.incr {
        Frame::Null
    } else {
        Frame::Integer(0)
    };
    let zset = match db.get_mut(&args[1], now) {
        Some(Value::ZSet(zset)) => zset,
        Some(_) => return wrong_type(),
        None if flags.xx => return nothing,
        None => {
            db.set(&args[1], Value::ZSet(ZSet::new()), false, now);
            match db.get_mut(&args[1], now) {
                Some(Value::ZSet(zset)) => zset,
                _ => return nothing,
            }
        }
    };
    let (mut added, mut updated) = (0, 0);
    let mut last = None;
    let mut failed = None;
    for (score, member) in pairs {
        match add_one(zset, score, member, flags) {
            Ok(Added::New(s)) => {
                added += 1;
                last = Some(s);
            }
            Ok(Added::Updated(s)) => {
                updated += 1;
                last = Some(s);
            }
            Ok(Added::Unchanged(s)) => last = Some(s),
            Ok(Added::Skipped) => {}
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if added + updated > 0 {
        let event = if flags.incr { "zincr" } else { "zadd" };
        db.notify(notify::ZSET, event, &args[1]);
    }
    db.remove_if_empty(&args[1]);
    if let Some(e) = failed {
        return e;
    }
    if flags.incr {
        last.map_or(Frame::Null, Frame::Double)
    } else if flags.ch {
        Frame::Integer(added + updated)
    } else {
        Frame::Integer(added)
    }
}

/// Looks `key` up for reading: `Ok(None)` when missing, WRONGTYPE for another type.
pub(super) fn read<'a>(db: &'a mut Db, key: &[u8], now: u64) -> Result<Option<&'a ZSet>, Frame> {
    match db.get(key, now) {
        Some(Value::ZSet(zset)) => Ok(Some(zset)),
        Some(_) => Err(wrong_type()),
        None => Ok(None),
    }
}

/// `ZREM key member...` → number removed; deletes an emptied set.
pub fn zrem(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let removed = match db.get_mut(&args[1], now) {
        Some(Value::ZSet(zset)) => args[2..]
            .iter()
            .filter(|m| zset.remove(m).is_some())
            .count(),
        Some(_) => return wrong_type(),
        None => 0,
    };
    if removed > 0 {
        db.notify(notify::ZSET, "zrem", &args[1]);
    }
    db.remove_if_empty(&args[1]);
    Frame::Integer(removed as i64)
}

/// `ZCARD key` → number of members, 0 if missing.
pub fn zcard(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match read(db, &args[1], now) {
        Ok(zset) => Frame::Integer(zset.map_or(0, |z| z.len() as i64)),
        Err(e) => e,
    }
}

/// `ZSCORE key member` → the score (a double), Null if missing.
pub fn zscore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match read(db, &args[1], now) {
        Ok(zset) => zset
            .and_then(|z| z.score(&args[2]))
            .map_or(Frame::Null, Frame::Double),
        Err(e) => e,
    }
}

/// `ZMSCORE key member...` → an array of scores (doubles) or Nulls.
pub fn zmscore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match read(db, &args[1], now) {
        Ok(zset) => Frame::Array(
            args[2..]
                .iter()
                .map(|m| {
                    zset.and_then(|z| z.score(m))
                        .map_or(Frame::Null, Frame::Double)
                })
                .collect(),
        ),
        Err(e) => e,
    }
}

fn rank_generic(db: &mut Db, args: &[Bytes], now: u64, rev: bool) -> Frame {
    match read(db, &args[1], now) {
        Ok(Some(zset)) => match zset.rank(&args[2]) {
            Some(rank) if rev => Frame::Integer((zset.len() - 1 - rank) as i64),
            Some(rank) => Frame::Integer(rank as i64),
            None => Frame::Null,
        },
        Ok(None) => Frame::Null,
        Err(e) => e,
    }
}

/// `ZRANK key member` → 0-based rank in ascending order, Null if missing. O(log n).
pub fn zrank(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    rank_generic(db, args, now, false)
}

/// `ZREVRANK key member` → 0-based rank in descending order, Null if missing. O(log n).
pub fn zrevrank(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    rank_generic(db, args, now, true)
}

/// The number of elements from 0-based rank `first` to `last` (both optional) inclusive.
fn span(first: Option<usize>, last: Option<usize>) -> i64 {
    match (first, last) {
        (Some(a), Some(b)) if b >= a => (b - a + 1) as i64,
        _ => 0,
    }
}

/// `ZCOUNT key min max` → members with a score in the range (`(` excludes); O(log n).
/// Errors: `ERR min or max is not a float` (before the lookup), WRONGTYPE.
pub fn zcount(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let range = match score_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(_) => return Frame::error(RANGE_NOT_FLOAT),
    };
    match read(db, &args[1], now) {
        Ok(Some(zset)) if !range.is_empty() => Frame::Integer(span(
            zset.first_rank_where(|s, _| range.above_min(s)),
            zset.last_rank_where(|s, _| range.below_max(s)),
        )),
        Ok(_) => Frame::Integer(0),
        Err(e) => e,
    }
}

/// `ZLEXCOUNT key min max` → members in the lexicographic range (`[a`, `(a`, `-`, `+`);
/// meaningful when all scores are equal, as in Redis. Errors: `ERR min or max not valid
/// string range item`, WRONGTYPE.
pub fn zlexcount(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let range = match lex_range(&args[2], &args[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match read(db, &args[1], now) {
        Ok(Some(zset)) if !range.is_empty() => Frame::Integer(span(
            zset.first_rank_where(|_, m| range.above_min(m)),
            zset.last_rank_where(|_, m| range.below_max(m)),
        )),
        Ok(_) => Frame::Integer(0),
        Err(e) => e,
    }
}
