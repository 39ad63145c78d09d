//! List editing and search: LREM LTRIM LINSERT LPOS (Redis 7 `t_list.c`).

use bytes::Bytes;

use super::reply::{int_arg, is_opt, syntax_error, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::num::parse_i64;
use crate::resp::Frame;

/// `LREM key count element` → number removed: the first `count` matches
/// from the head (count > 0), from the tail (count < 0) or all (0).
/// Deletes an emptied list. The count is parsed before the lookup.
pub fn lrem(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let count = match int_arg(&args[2]) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let list = match db.get_mut(&args[1], now) {
        Some(Value::List(list)) => list,
        Some(_) => return wrong_type(),
        None => return Frame::Integer(0),
    };
    let target = &args[3][..];
    let limit = if count == 0 {
        u64::MAX
    } else {
        count.unsigned_abs()
    };
    let mut removed = 0u64;
    let len = list.len();
    let mut keep = vec![true; len];
    let order: Box<dyn Iterator<Item = usize>> = if count < 0 {
        Box::new((0..len).rev())
    } else {
        Box::new(0..len)
    };
    for i in order {
        if removed >= limit {
            break;
        }
        if list[i] == target {
            keep[i] = false;
            removed += 1;
        }
    }
    if removed > 0 {
        let mut flags = keep.into_iter();
        list.retain(|_| flags.next().unwrap_or(true));
        db.notify(flags::LIST, "lrem", &args[1]);
    }
    db.remove_if_empty(&args[1]);
    Frame::Integer(removed as i64)
}

/// `LTRIM key start stop` → OK; keeps the inclusive range (LRANGE index
/// rules) and deletes the key when nothing is left. Indexes are parsed
/// before the lookup.
pub fn ltrim(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (start, end) = match (int_arg(&args[2]), int_arg(&args[3])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let list = match db.get_mut(&args[1], now) {
        Some(Value::List(list)) => list,
        Some(_) => return wrong_type(),
        None => return Frame::ok(),
    };
    let len = list.len() as i64;
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        list.clear();
    } else {
        let end = end.min(len - 1);
        list.truncate(end as usize + 1);
        list.drain(..start as usize);
    }
    db.notify(flags::LIST, "ltrim", &args[1]);
    db.remove_if_empty(&args[1]);
    Frame::ok()
}

/// `LINSERT key BEFORE|AFTER pivot element` → new length, -1 if the pivot
/// is absent, 0 if the key is missing. A bad position word is `ERR syntax
/// error` (checked first).
pub fn linsert(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let after = if is_opt(&args[2], "after") {
        true
    } else if is_opt(&args[2], "before") {
        false
    } else {
        return syntax_error();
    };
    let list = match db.get_mut(&args[1], now) {
        Some(Value::List(list)) => list,
        Some(_) => return wrong_type(),
        None => return Frame::Integer(0),
    };
    let Some(pos) = list.iter().position(|v| *v == args[3]) else {
        return Frame::Integer(-1);
    };
    list.insert(pos + usize::from(after), Bytes::copy_from_slice(&args[4]));
    let len = list.len() as i64;
    db.notify(flags::LIST, "linsert", &args[1]);
    Frame::Integer(len)
}

/// A non-negative LPOS option value; anything else (also a non-integer) is
/// the option's own error, as Redis `getPositiveLongFromObjectOrReply`.
fn lpos_count(arg: &[u8], msg: &str) -> Result<u64, Frame> {
    parse_i64(arg)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| Frame::error(msg))
}

/// `LPOS key element [RANK rank] [COUNT num] [MAXLEN len]` → index of the
/// `rank`-th match (from the tail for a negative rank; indexes always count
/// from the head) or Null; with COUNT an array of up to `num` indexes (0 =
/// all). MAXLEN bounds the elements compared (0 = all). Options are
/// validated before the lookup.
pub fn lpos(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0u64);
    let mut j = 3;
    while j < args.len() {
        let Some(value) = args.get(j + 1) else {
            return syntax_error();
        };
        let opt = &args[j];
        if is_opt(opt, "rank") {
            rank = match int_arg(value) {
                Ok(0) => {
                    return Frame::error(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from \
                         the second ... or use negative to start from the end of the list",
                    )
                }
                Ok(r) => r,
                Err(e) => return e,
            };
        } else if is_opt(opt, "count") {
            count = match lpos_count(value, "ERR COUNT can't be negative") {
                Ok(c) => Some(c),
                Err(e) => return e,
            };
        } else if is_opt(opt, "maxlen") {
            maxlen = match lpos_count(value, "ERR MAXLEN can't be negative") {
                Ok(m) => m,
                Err(e) => return e,
            };
        } else {
            return syntax_error();
        }
        j += 2;
    }
    let list = match db.get(&args[1], now) {
        Some(Value::List(list)) => list,
        Some(_) => return wrong_type(),
        None if count.is_some() => return Frame::Array(Vec::new()),
        None => return Frame::Null,
    };
    // Redis negates the rank; i64::MIN stays negative there and so matches
    // from the first hit, like -1.
    let from_tail = rank < 0;
    let skip = rank.unsigned_abs().saturating_sub(1);
    let skip = if rank == i64::MIN { 0 } else { skip };
    let len = list.len();
    let limit = if maxlen == 0 {
        len
    } else {
        usize::try_from(maxlen).unwrap_or(usize::MAX).min(len)
    };
    let positions: Box<dyn Iterator<Item = usize>> = if from_tail {
        Box::new((len - limit..len).rev())
    } else {
        Box::new(0..limit)
    };
    let wanted = match count {
        Some(0) => u64::MAX,
        Some(n) => n,
        None => 1,
    };
    let mut hits = Vec::new();
    let mut seen = 0u64;
    for i in positions {
        if list[i] != args[2] {
            continue;
        }
        seen += 1;
        if seen > skip {
            hits.push(Frame::Integer(i as i64));
            if hits.len() as u64 >= wanted {
                break;
            }
        }
    }
    match count {
        Some(_) => Frame::Array(hits),
        None => hits.pop().unwrap_or(Frame::Null),
    }
}
