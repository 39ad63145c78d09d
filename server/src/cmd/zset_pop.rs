//! ZPOPMIN ZPOPMAX ZRANDMEMBER (Redis 7.0 `t_zset.c` `genericZpopCommand`,
//! `zrandmemberCommand`), and the pop shared with ZMPOP.

use bytes::Bytes;
use rand::seq::{IteratorRandom, SliceRandom};

use super::reply::{is_opt, positive_arg, range_arg, syntax_error, wrong_type};
use super::sets::MAX_REPEATED;
use super::zset::read;
use super::zset_args::elements_reply;
use crate::keyspace::{Db, Value, ZSet};
use crate::notify::flags;
use crate::resp::Frame;

/// Removes up to `count` lowest (`max` false) or highest elements of `zset`, in pop order.
pub fn pop(zset: &mut ZSet, count: usize, max: bool) -> Vec<(Bytes, f64)> {
    let mut popped = Vec::with_capacity(count.min(zset.len()));
    while popped.len() < count {
        let rank = if max {
            zset.len().checked_sub(1)
        } else {
            Some(0)
        };
        let Some((member, score)) = rank.and_then(|r| zset.at(r)).map(|(m, s)| (m.clone(), s))
        else {
            break;
        };
        zset.remove(&member);
        popped.push((member, score));
    }
    popped
}

/// Redis's event of a pop from the lowest (`max` false) or highest end.
pub fn pop_event(max: bool) -> &'static str {
    if max {
        "zpopmax"
    } else {
        "zpopmin"
    }
}

fn pop_generic(db: &mut Db, args: &[Bytes], now: u64, max: bool) -> Frame {
    if args.len() > 3 {
        return syntax_error();
    }
    let count = match args.get(2).map(|arg| positive_arg(arg)) {
        Some(Ok(n)) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        Some(Err(e)) => return e,
        None => None,
    };
    let popped = match db.get_mut(&args[1], now) {
        Some(Value::ZSet(_)) if count == Some(0) => return Frame::Array(Vec::new()),
        Some(Value::ZSet(zset)) => pop(zset, count.unwrap_or(1), max),
        Some(_) => return wrong_type(),
        None => return Frame::Array(Vec::new()),
    };
    db.notify(flags::ZSET, pop_event(max), &args[1]);
    db.remove_if_empty(&args[1]);
    match count {
        // Without a count: a flat [member, score] (in RESP3 too).
        None => Frame::Array(
            popped
                .into_iter()
                .flat_map(|(m, s)| [Frame::Bulk(m), Frame::Double(s)])
                .collect(),
        ),
        Some(_) => elements_reply(popped.iter().map(|(m, s)| (m, *s)), true),
    }
}

/// `ZPOPMIN key [count]` → the lowest element as `[member, score]`, or with a count up to
/// `count` `[member, score]` pairs; an empty array if the key is missing or count is 0.
/// Errors: more arguments `ERR syntax error`, a count not an integer or negative `ERR value
/// is out of range, must be positive`, WRONGTYPE.
pub fn zpopmin(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    pop_generic(db, args, now, false)
}

/// `ZPOPMAX key [count]`: as [`zpopmin`], highest first.
pub fn zpopmax(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    pop_generic(db, args, now, true)
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`: without count a random member or Null; with a
/// count `min(count, size)` distinct members, or for a negative count exactly `-count` that
/// may repeat (WITHSCORES: `[member, score]` pairs). Errors: count not an integer or
/// `i64::MIN` (`ERR value is out of range, value must between ...`), a bad fourth argument
/// `ERR syntax error`, with WITHSCORES a count beyond ±2^62 `ERR value is out of range`,
/// WRONGTYPE; a negative count beyond `-2^24` is `ERR value is out of range` (a shardline
/// limit, as SRANDMEMBER's).
pub fn zrandmember(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let mut withscores = false;
    let count = match args.get(2) {
        Some(arg) => {
            let n = match range_arg(arg, -i64::MAX, i64::MAX) {
                Ok(n) => n,
                Err(e) => return e,
            };
            match args.get(3) {
                _ if args.len() > 4 => return syntax_error(),
                Some(opt) if !is_opt(opt, "withscores") => return syntax_error(),
                Some(_) => {
                    withscores = true;
                    if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&n) {
                        return Frame::error("ERR value is out of range");
                    }
                }
                None => {}
            }
            Some(n)
        }
        None => None,
    };
    let zset = match read(db, &args[1], now) {
        Ok(Some(zset)) => zset,
        Ok(None) if count.is_some() => return Frame::Array(Vec::new()),
        Ok(None) => return Frame::Null,
        Err(e) => return e,
    };
    let mut rng = rand::thread_rng();
    let Some(count) = count else {
        return zset
            .entries()
            .choose(&mut rng)
            .map_or(Frame::Null, |(m, _)| Frame::Bulk(m.clone()));
    };
    let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    if count >= 0 {
        let mut picked = zset.entries().choose_multiple(&mut rng, n.min(zset.len()));
        picked.shuffle(&mut rng);
        return elements_reply(picked.into_iter(), withscores);
    }
    if n > MAX_REPEATED {
        return Frame::error("ERR value is out of range");
    }
    let all: Vec<(&Bytes, f64)> = zset.entries().collect();
    let picked: Vec<(&Bytes, f64)> = (0..n)
        .filter_map(|_| all.choose(&mut rng).copied())
        .collect();
    elements_reply(picked.into_iter(), withscores)
}
