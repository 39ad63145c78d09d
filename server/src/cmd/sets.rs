//! Set commands: SADD SREM SMEMBERS SCARD SISMEMBER SMISMEMBER SPOP
//! SRANDMEMBER (Redis 7 `t_set.c`).

use std::collections::HashSet;

use bytes::Bytes;
use rand::seq::{IteratorRandom, SliceRandom};

use super::reply::{positive_arg, range_arg, syntax_error, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::num::parse_i64;
use crate::resp::Frame;

/// `members` in Redis 7.0's reply order: a set Redis would hold as an intset (every member an
/// integer, at most `intset_entries` of them) ascending by value, as Redis's intset replies;
/// any other set as given (Redis's hash table order is its own).
pub(super) fn reply_order<'a>(
    members: impl ExactSizeIterator<Item = &'a Bytes> + Clone,
    intset_entries: u64,
) -> Vec<&'a Bytes> {
    intset_order(members.clone(), intset_entries).unwrap_or_else(|| members.collect())
}

/// The members of a set Redis would hold as an intset (every member an integer, at most
/// `intset_entries` of them), ascending by value; `None` for any other set. Costs one integer
/// parse per member (none beyond `intset_entries` members), and a sort when all are integers.
pub(super) fn intset_order<'a>(
    members: impl ExactSizeIterator<Item = &'a Bytes>,
    intset_entries: u64,
) -> Option<Vec<&'a Bytes>> {
    if members.len() as u64 > intset_entries {
        return None;
    }
    let mut pairs: Vec<(i64, &Bytes)> = members
        .map(|m| parse_i64(m).map(|n| (n, m)))
        .collect::<Option<_>>()?;
    pairs.sort_unstable_by_key(|(n, _)| *n);
    Some(pairs.into_iter().map(|(_, m)| m).collect())
}

/// `SADD key member...` → number of members added.
pub fn sadd(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let members = args[2..].iter();
    let added = match db.get_mut(&args[1], now) {
        Some(Value::Set(set)) => members
            .filter(|m| !set.contains(&m[..]) && set.insert(Bytes::copy_from_slice(m)))
            .count(),
        Some(_) => return wrong_type(),
        None => {
            let set: HashSet<Bytes> = members.map(|m| Bytes::copy_from_slice(m)).collect();
            let n = set.len();
            db.set(&args[1], Value::Set(set), false, now);
            n
        }
    };
    if added > 0 {
        db.notify(flags::SET, "sadd", &args[1]);
    }
    Frame::Integer(added as i64)
}

/// `SREM key member...` → number removed; deletes an emptied set.
pub fn srem(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let removed = match db.get_mut(&args[1], now) {
        Some(Value::Set(set)) => args[2..].iter().filter(|m| set.remove(&m[..])).count(),
        Some(_) => return wrong_type(),
        None => 0,
    };
    if removed > 0 {
        db.notify(flags::SET, "srem", &args[1]);
    }
    db.remove_if_empty(&args[1]);
    Frame::Integer(removed as i64)
}

/// `SMEMBERS key` → set reply (RESP2: array), empty if missing.
pub fn smembers(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let intset_entries = db.intset_entries();
    match db.get(&args[1], now) {
        Some(Value::Set(set)) => Frame::Set(
            reply_order(set.iter(), intset_entries)
                .into_iter()
                .map(|m| Frame::Bulk(m.clone()))
                .collect(),
        ),
        Some(_) => wrong_type(),
        None => Frame::Set(Vec::new()),
    }
}

/// `SCARD key` → cardinality, 0 if missing.
pub fn scard(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Set(set)) => Frame::Integer(set.len() as i64),
        Some(_) => wrong_type(),
        None => Frame::Integer(0),
    }
}

/// `SISMEMBER key member` → integer 1 or 0 (an integer in RESP3 too).
pub fn sismember(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Set(set)) => Frame::Integer(i64::from(set.contains(&args[2][..]))),
        Some(_) => wrong_type(),
        None => Frame::Integer(0),
    }
}

/// `SPOP key [count]`: without count → a random member (bulk) or Null;
/// with count → a set reply of up to `count` random members (empty set if
/// missing or count 0); more arguments → `ERR syntax error`. Deletes an
/// emptied set. Choosing members costs O(set size).
pub fn spop(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let count = match args.len() {
        2 => None,
        3 => match positive_arg(&args[2]) {
            Ok(n) => Some(n),
            Err(e) => return e,
        },
        _ => return syntax_error(),
    };
    let set = match db.get_mut(&args[1], now) {
        Some(Value::Set(set)) => set,
        Some(_) => return wrong_type(),
        None if count.is_some() => return Frame::Set(Vec::new()),
        None => return Frame::Null,
    };
    let mut rng = rand::thread_rng();
    let reply = match count {
        None => match set.iter().choose(&mut rng).cloned() {
            Some(m) => {
                set.remove(&m);
                Frame::Bulk(m)
            }
            None => Frame::Null,
        },
        Some(n) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            let picked: Vec<Bytes> = if n >= set.len() {
                set.drain().collect()
            } else {
                set.iter().cloned().choose_multiple(&mut rng, n)
            };
            for m in &picked {
                set.remove(m);
            }
            Frame::Set(picked.into_iter().map(Frame::Bulk).collect())
        }
    };
    if reply != Frame::Null && reply != Frame::Set(Vec::new()) {
        db.notify(flags::SET, "spop", &args[1]);
    }
    db.remove_if_empty(&args[1]);
    reply
}

/// `SMISMEMBER key member...` → array of integers 1/0 (all 0 if missing).
pub fn smismember(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let members = args[2..].iter();
    match db.get(&args[1], now) {
        Some(Value::Set(set)) => Frame::Array(
            members
                .map(|m| Frame::Integer(i64::from(set.contains(&m[..]))))
                .collect(),
        ),
        Some(_) => wrong_type(),
        None => Frame::Array(members.map(|_| Frame::Integer(0)).collect()),
    }
}

/// Largest `-count` SRANDMEMBER and HRANDFIELD serve (Redis has no limit and streams the
/// reply; shardline builds it in memory, so bounds it).
pub(super) const MAX_REPEATED: usize = 1 << 24;

/// `SRANDMEMBER key [count]`: without count → a random member or Null;
/// with count → an array (in RESP3 too) of `min(count, size)` distinct
/// members, or for a negative count exactly `-count` members that may
/// repeat; empty array if missing or count 0. The count is parsed before
/// the lookup; `i64::MIN` is out of range and more arguments are `ERR
/// syntax error`. A negative count beyond `-2^24` is `ERR value is out of
/// range` (a shardline limit).
pub fn srandmember(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let count = match args.len() {
        2 => None,
        3 => match range_arg(&args[2], -i64::MAX, i64::MAX) {
            Ok(n) => Some(n),
            Err(e) => return e,
        },
        _ => return syntax_error(),
    };
    let intset_entries = db.intset_entries();
    let set = match db.get(&args[1], now) {
        Some(Value::Set(set)) => set,
        Some(_) => return wrong_type(),
        None if count.is_some() => return Frame::Array(Vec::new()),
        None => return Frame::Null,
    };
    let mut rng = rand::thread_rng();
    let Some(count) = count else {
        return set
            .iter()
            .choose(&mut rng)
            .map_or(Frame::Null, |m| Frame::Bulk(m.clone()));
    };
    let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    if count >= 0 && n >= set.len() {
        // The whole set, in SMEMBERS's order (Redis replies SUNION of it).
        let all = reply_order(set.iter(), intset_entries);
        return Frame::Array(all.into_iter().map(|m| Frame::Bulk(m.clone())).collect());
    }
    if count >= 0 {
        let picked = set
            .iter()
            .cloned()
            .choose_multiple(&mut rng, n.min(set.len()));
        return Frame::Array(picked.into_iter().map(Frame::Bulk).collect());
    }
    if n > MAX_REPEATED {
        return Frame::error("ERR value is out of range");
    }
    let all: Vec<&Bytes> = set.iter().collect();
    let picked = (0..n)
        .filter_map(|_| all.choose(&mut rng).map(|m| Frame::Bulk((*m).clone())))
        .collect();
    Frame::Array(picked)
}
