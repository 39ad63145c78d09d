//! List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LRANGE LLEN LINDEX
//! LSET (Redis 7 `t_list.c`); the editing commands are in
//! [`super::list_edit`].

use std::collections::VecDeque;

use bytes::Bytes;

use super::reply::{int_arg, positive_arg, wrong_arity, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Head,
    Tail,
}

impl End {
    /// Redis's event name of `what` (`push`, `pop`) at this end: `lpush`, `rpop`, ...
    fn name(self, what: &str) -> &'static str {
        match (self, what) {
            (End::Head, "push") => "lpush",
            (End::Tail, "push") => "rpush",
            (End::Head, _) => "lpop",
            (End::Tail, _) => "rpop",
        }
    }
}

/// Shared LPUSH / RPUSH / LPUSHX / RPUSHX; `only_existing` (the X forms)
/// replies 0 instead of creating a missing key.
fn push(db: &mut Db, args: &[Bytes], now: u64, end: End, only_existing: bool) -> Frame {
    let items = args[2..].iter().map(|v| Bytes::copy_from_slice(v));
    let len = match db.get_mut(&args[1], now) {
        Some(Value::List(list)) => {
            extend(list, items, end);
            list.len()
        }
        Some(_) => return wrong_type(),
        None if only_existing => 0,
        None => {
            let mut list = VecDeque::with_capacity(args.len() - 2);
            extend(&mut list, items, end);
            let len = list.len();
            db.set(&args[1], Value::List(list), false, now);
            len
        }
    };
    if len > 0 {
        db.notify(flags::LIST, end.name("push"), &args[1]);
    }
    Frame::Integer(len as i64)
}

fn extend(list: &mut VecDeque<Bytes>, items: impl Iterator<Item = Bytes>, end: End) {
    for item in items {
        match end {
            End::Head => list.push_front(item),
            End::Tail => list.push_back(item),
        }
    }
}

/// `LPUSH key element...` → new length; elements are pushed one by one, so
/// `LPUSH k a b c` yields `c b a`.
pub fn lpush(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    push(db, args, now, End::Head, false)
}

/// `RPUSH key element...` → new length.
pub fn rpush(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    push(db, args, now, End::Tail, false)
}

/// `LPUSHX key element...` → new length, 0 (and no key) if missing.
pub fn lpushx(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    push(db, args, now, End::Head, true)
}

/// `RPUSHX key element...` → new length, 0 (and no key) if missing.
pub fn rpushx(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    push(db, args, now, End::Tail, true)
}

/// Redis 7 `popGenericCommand`: without count → bulk or Null; with count →
/// array, NullArray if the key is missing, empty array for count 0.
fn pop(db: &mut Db, args: &[Bytes], now: u64, end: End, name: &str) -> Frame {
    let count = match args.len() {
        2 => None,
        3 => match positive_arg(&args[2]) {
            Ok(n) => Some(n),
            Err(e) => return e,
        },
        _ => return wrong_arity(name),
    };
    let list = match db.get_mut(&args[1], now) {
        Some(Value::List(list)) => list,
        Some(_) => return wrong_type(),
        None if count.is_some() => return Frame::NullArray,
        None => return Frame::Null,
    };
    let mut pop_one = || match end {
        End::Head => list.pop_front(),
        End::Tail => list.pop_back(),
    };
    let reply = match count {
        None => pop_one().map_or(Frame::Null, Frame::Bulk),
        Some(n) => {
            let mut items = Vec::new();
            while (items.len() as u64) < n {
                match pop_one() {
                    Some(v) => items.push(Frame::Bulk(v)),
                    None => break,
                }
            }
            Frame::Array(items)
        }
    };
    if reply != Frame::Null && reply != Frame::Array(Vec::new()) {
        db.notify(flags::LIST, end.name("pop"), &args[1]);
    }
    db.remove_if_empty(&args[1]);
    reply
}

/// `LPOP key [count]`.
pub fn lpop(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    pop(db, args, now, End::Head, "lpop")
}

/// `RPOP key [count]`.
pub fn rpop(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    pop(db, args, now, End::Tail, "rpop")
}

/// `LRANGE key start stop` → elements in the inclusive range; negative
/// indexes count from the end; out-of-range indexes are clamped.
pub fn lrange(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (start, stop) = match (int_arg(&args[2]), int_arg(&args[3])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let list = match db.get(&args[1], now) {
        Some(Value::List(list)) => list,
        Some(_) => return wrong_type(),
        None => return Frame::Array(Vec::new()),
    };
    let len = list.len() as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 { stop + len } else { stop };
    if start > stop || start >= len {
        return Frame::Array(Vec::new());
    }
    let stop = stop.min(len - 1);
    let items = list
        .range(start as usize..=stop as usize)
        .map(|v| Frame::Bulk(v.clone()))
        .collect();
    Frame::Array(items)
}

/// `LLEN key` → length, 0 if missing.
pub fn llen(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::List(list)) => Frame::Integer(list.len() as i64),
        Some(_) => wrong_type(),
        None => Frame::Integer(0),
    }
}

/// Position of a possibly negative `index` in a list of `len`, if in range.
pub(super) fn resolve_index(index: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if index < 0 {
        index.checked_add(len)?
    } else {
        index
    };
    usize::try_from(i).ok().filter(|_| i < len)
}

/// `LINDEX key index` → the element or Null (missing key or out of range).
/// The key is looked up before the index is parsed, as Redis does.
pub fn lindex(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let list = match db.get(&args[1], now) {
        Some(Value::List(list)) => list,
        Some(_) => return wrong_type(),
        None => return Frame::Null,
    };
    let index = match int_arg(&args[2]) {
        Ok(i) => i,
        Err(e) => return e,
    };
    resolve_index(index, list.len())
        .and_then(|i| list.get(i))
        .map_or(Frame::Null, |v| Frame::Bulk(v.clone()))
}

/// `LSET key index element` → OK. Errors in order: `ERR no such key`,
/// WRONGTYPE, integer, `ERR index out of range`.
pub fn lset(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let list = match db.get_mut(&args[1], now) {
        Some(Value::List(list)) => list,
        Some(_) => return wrong_type(),
        None => return Frame::error("ERR no such key"),
    };
    let index = match int_arg(&args[2]) {
        Ok(i) => i,
        Err(e) => return e,
    };
    match resolve_index(index, list.len()).and_then(|i| list.get_mut(i)) {
        Some(slot) => {
            *slot = Bytes::copy_from_slice(&args[3]);
            db.notify(flags::LIST, "lset", &args[1]);
            Frame::ok()
        }
        None => Frame::error("ERR index out of range"),
    }
}
