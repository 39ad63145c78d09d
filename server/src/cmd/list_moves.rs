//! LMOVE, RPOPLPUSH and LMPOP on one shard, non-blocking forms (Redis 7.0 `t_list.c`
//! `lmoveGenericCommand`, `lmpopGenericCommand`, `mpopGenericCommand`).
//! `connection::commands::composed` runs them when the keys live on several shards.

use std::collections::VecDeque;

use bytes::Bytes;

use super::reply::{is_opt, syntax_error, wrong_type};
use super::set_algebra::numkeys;
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

/// LMPOP's reply to a COUNT below 1 or not an integer.
pub const BAD_COUNT: &str = "ERR count should be greater than 0";

/// The optional `COUNT count` ending LMPOP, BLMPOP, ZMPOP and BZMPOP (`rest`: the arguments
/// after the side): the count, 1 without the option. Errors: `ERR syntax error` for anything
/// else (or COUNT twice), [`BAD_COUNT`] for a count below 1 or not an integer.
pub(crate) fn count_option(rest: &[Bytes]) -> Result<usize, Frame> {
    match rest {
        [] => Ok(1),
        [option, n] if is_opt(option, "count") => match crate::resp::num::parse_i64(n) {
            Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            _ => Err(Frame::error(BAD_COUNT)),
        },
        [option, _, ..] if is_opt(option, "count") => {
            // COUNT's value is checked before what follows it, as Redis's loop does.
            count_option(&rest[..2])?;
            Err(syntax_error())
        }
        _ => Err(syntax_error()),
    }
}

/// `LEFT` → true (head), `RIGHT` → false (tail); else `ERR syntax error`.
pub(crate) fn side(arg: &[u8]) -> Result<bool, Frame> {
    if is_opt(arg, "left") {
        Ok(true)
    } else if is_opt(arg, "right") {
        Ok(false)
    } else {
        Err(syntax_error())
    }
}

/// Redis's event of a pop from the head (`left`) or the tail of a list.
fn pop_event(left: bool) -> &'static str {
    if left {
        "lpop"
    } else {
        "rpop"
    }
}

/// Pops from `src` (head when `from_left`) and pushes onto `dst` (head when `to_left`) → the
/// element, or nil when `src` is missing. WRONGTYPE when `src`, then `dst`, holds another
/// type. An emptied source is deleted; the same key rotates the list.
fn lmove_generic(
    db: &mut Db,
    src: &Bytes,
    dst: &Bytes,
    from_left: bool,
    to_left: bool,
    now: u64,
) -> Frame {
    match db.get(src, now) {
        Some(Value::List(_)) => {}
        Some(_) => return wrong_type(),
        None => return Frame::Null,
    }
    if matches!(db.get(dst, now), Some(v) if !matches!(v, Value::List(_))) {
        return wrong_type();
    }
    let popped = match db.get_mut(src, now) {
        Some(Value::List(list)) if from_left => list.pop_front(),
        Some(Value::List(list)) => list.pop_back(),
        _ => None,
    };
    let Some(element) = popped else {
        return Frame::Null;
    };
    // Pushed before the source's emptiness is checked (the same key rotates), and the events
    // in Redis 7.0.15's `lmoveGenericCommand` order: `new` of a created destination, its
    // `lpush`/`rpush`, then the source's `lpop`/`rpop` and the `del` of an emptied source.
    match db.get_mut(dst, now) {
        Some(Value::List(list)) if to_left => list.push_front(element.clone()),
        Some(Value::List(list)) => list.push_back(element.clone()),
        _ => {
            let list = VecDeque::from([element.clone()]);
            db.set(dst, Value::List(list), false, now);
        }
    }
    db.notify(flags::LIST, if to_left { "lpush" } else { "rpush" }, dst);
    db.notify(flags::LIST, pop_event(from_left), src);
    db.remove_if_empty(src);
    Frame::Bulk(element)
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT` → the element moved, or nil when
/// `source` is missing. Errors: `ERR syntax error` (a side), WRONGTYPE.
pub fn lmove(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let from_left = match side(&args[3]) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let to_left = match side(&args[4]) {
        Ok(s) => s,
        Err(e) => return e,
    };
    lmove_generic(db, &args[1], &args[2], from_left, to_left, now)
}

/// `RPOPLPUSH source destination`: `LMOVE source destination RIGHT LEFT`.
pub fn rpoplpush(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    lmove_generic(db, &args[1], &args[2], false, true, now)
}

/// `LMPOP numkeys key... LEFT|RIGHT [COUNT count]` → `[key, [element...]]` of the first
/// non-empty list among the keys, up to `count` (default 1) elements popped from its head
/// (LEFT) or tail; a null array when every list is missing. Errors, in Redis's order:
/// `ERR numkeys should be greater than 0`, `ERR syntax error` (too few arguments, a side,
/// an option), [`BAD_COUNT`], then WRONGTYPE for a key reached before a non-empty list.
pub fn lmpop(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let count_keys = match numkeys(args, 1) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let where_at = count_keys.saturating_add(2);
    if where_at >= args.len() {
        return syntax_error();
    }
    let left = match side(&args[where_at]) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let count = match count_option(&args[where_at + 1..]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    for key in &args[2..where_at] {
        let popped: Vec<Frame> = match db.get_mut(key, now) {
            Some(Value::List(list)) if !list.is_empty() => {
                let n = count.min(list.len());
                let taken: Vec<Bytes> = if left {
                    list.drain(..n).collect()
                } else {
                    let at = list.len() - n;
                    list.drain(at..).rev().collect()
                };
                taken.into_iter().map(Frame::Bulk).collect()
            }
            Some(Value::List(_)) | None => continue,
            Some(_) => return wrong_type(),
        };
        db.notify(flags::LIST, pop_event(left), key);
        db.remove_if_empty(key);
        return Frame::Array(vec![Frame::Bulk(key.clone()), Frame::Array(popped)]);
    }
    Frame::NullArray
}
