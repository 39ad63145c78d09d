//! String commands other than SET and the counters: GET GETDEL GETSET MGET
//! MSET SETNX APPEND STRLEN GETRANGE SETRANGE (Redis 7 `t_string.c`); the bit commands are
//! in [`super::bits`].

use bytes::{Bytes, BytesMut};

use super::reply::{int_arg, wrong_arity, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

/// `GET key` → bulk, Null if missing, WRONGTYPE for non-strings.
pub fn get(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Str(v)) => Frame::Bulk(v.clone()),
        Some(_) => wrong_type(),
        None => Frame::Null,
    }
}

/// `GETDEL key` → the value (then deleted), Null if missing.
pub fn getdel(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Str(_)) => match db.remove(&args[1], now) {
            Some(Value::Str(v)) => {
                db.notify(flags::GENERIC, "del", &args[1]);
                Frame::Bulk(v)
            }
            _ => Frame::Null,
        },
        Some(_) => wrong_type(),
        None => {
            db.notify(flags::KEY_MISS, "keymiss", &args[1]);
            Frame::Null
        }
    }
}

/// `MGET key...` → array with a bulk per string key and Null for missing or
/// non-string keys.
pub fn mget(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let items = args[1..]
        .iter()
        .map(|k| match db.get(k, now) {
            Some(Value::Str(v)) => Frame::Bulk(v.clone()),
            _ => Frame::Null,
        })
        .collect();
    Frame::Array(items)
}

/// `MSET key value [key value...]` → OK; clears TTLs. An odd number of
/// arguments after the name is an arity error.
pub fn mset(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    if args.len() < 3 || args.len().is_multiple_of(2) {
        return wrong_arity("mset");
    }
    for pair in args[1..].chunks_exact(2) {
        db.set(
            &pair[0],
            Value::Str(Bytes::copy_from_slice(&pair[1])),
            false,
            now,
        );
        db.notify(flags::STRING, "set", &pair[0]);
    }
    Frame::ok()
}

/// `MSETNX key value [key value ...]` → 1 when every key was set, 0 (and nothing set) when
/// any of them exists.
pub fn msetnx(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    if args.len() < 3 || args.len().is_multiple_of(2) {
        return wrong_arity("msetnx");
    }
    if args[1..].iter().step_by(2).any(|key| db.contains(key, now)) {
        return Frame::Integer(0);
    }
    mset(db, args, now);
    Frame::Integer(1)
}

/// `SETNX key value` → 1 if set, 0 if the key existed (any type).
pub fn setnx(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    if db.contains(&args[1], now) {
        return Frame::Integer(0);
    }
    db.set(
        &args[1],
        Value::Str(Bytes::copy_from_slice(&args[2])),
        false,
        now,
    );
    db.notify(flags::STRING, "set", &args[1]);
    Frame::Integer(1)
}

/// `APPEND key value` → new length; creates the key; keeps the TTL.
/// Appends in place (amortised O(len(value))) when the buffer is unshared. A result longer
/// than `--proto-max-bulk-len` is refused with `ERR string exceeds maximum allowed size
/// (proto-max-bulk-len)` (Redis `checkStringLength`).
pub fn append(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let max_len = db.max_string_len();
    match db.get_mut(&args[1], now) {
        Some(Value::Str(v)) if (v.len() as u64).saturating_add(args[2].len() as u64) > max_len => {
            Frame::error(EXCEEDS)
        }
        Some(Value::Str(v)) => {
            let mut buf = take_mut(v);
            buf.extend_from_slice(&args[2]);
            let len = buf.len();
            *v = buf.freeze();
            db.notify(flags::STRING, "append", &args[1]);
            Frame::Integer(len as i64)
        }
        Some(_) => wrong_type(),
        None => {
            db.set(
                &args[1],
                Value::Str(Bytes::copy_from_slice(&args[2])),
                false,
                now,
            );
            db.notify(flags::STRING, "append", &args[1]);
            Frame::Integer(args[2].len() as i64)
        }
    }
}

/// Takes the string out of `v` (left empty) as a buffer to change in place: no copy when the
/// bytes are not shared.
pub(super) fn take_mut(v: &mut Bytes) -> BytesMut {
    match std::mem::take(v).try_into_mut() {
        Ok(buf) => buf,
        Err(shared) => BytesMut::from(&shared[..]),
    }
}

/// `STRLEN key` → byte length, 0 if missing.
pub fn strlen(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Str(v)) => Frame::Integer(v.len() as i64),
        Some(_) => wrong_type(),
        None => Frame::Integer(0),
    }
}

/// `GETSET key value` → the old value (Null if missing; WRONGTYPE and no
/// write for non-strings), then sets the new one and clears the TTL.
pub fn getset(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let old = match db.get(&args[1], now) {
        Some(Value::Str(v)) => Frame::Bulk(v.clone()),
        Some(_) => return wrong_type(),
        None => {
            db.notify(flags::KEY_MISS, "keymiss", &args[1]);
            Frame::Null
        }
    };
    db.set(
        &args[1],
        Value::Str(Bytes::copy_from_slice(&args[2])),
        false,
        now,
    );
    db.notify(flags::STRING, "set", &args[1]);
    old
}

/// `GETRANGE key start end` → the inclusive substring (negative offsets
/// count from the end, out-of-range ones are clamped); empty bulk for a
/// missing key or an empty range. Offsets are parsed before the lookup.
pub fn getrange(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (start, end) = match (int_arg(&args[2]), int_arg(&args[3])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let v = match db.get(&args[1], now) {
        Some(Value::Str(v)) => v,
        Some(_) => return wrong_type(),
        None => return Frame::Bulk(Bytes::new()),
    };
    if start < 0 && end < 0 && start > end {
        return Frame::Bulk(Bytes::new());
    }
    let len = v.len() as i64;
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end }.max(0).min(len - 1);
    if start > end || len == 0 {
        return Frame::Bulk(Bytes::new());
    }
    Frame::Bulk(v.slice(start as usize..=end as usize))
}

/// Redis `checkStringLength` failure text.
const EXCEEDS: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// `SETRANGE key offset value` → the new length. Overwrites from `offset`,
/// zero-padding as needed; creates the key unless `value` is empty (then
/// replies the current length, 0 if missing); keeps the TTL. Errors: `ERR
/// offset is out of range` (negative), `ERR string exceeds maximum allowed
/// size (proto-max-bulk-len)` (offset + len > `--proto-max-bulk-len`), WRONGTYPE.
pub fn setrange(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let offset = match int_arg(&args[2]) {
        Ok(o) if o < 0 => return Frame::error("ERR offset is out of range"),
        Ok(o) => o,
        Err(e) => return e,
    };
    let value = &args[3];
    let max_len = db.max_string_len();
    let too_long = || (offset as u64).saturating_add(value.len() as u64) > max_len;
    let exceeds = || Frame::error(EXCEEDS);
    match db.get_mut(&args[1], now) {
        Some(Value::Str(v)) => {
            if value.is_empty() {
                return Frame::Integer(v.len() as i64);
            }
            if too_long() {
                return exceeds();
            }
            let mut buf = take_mut(v);
            let (offset, end) = (offset as usize, offset as usize + value.len());
            if buf.len() < end {
                buf.resize(end, 0);
            }
            buf[offset..end].copy_from_slice(value);
            let len = buf.len();
            *v = buf.freeze();
            db.notify(flags::STRING, "setrange", &args[1]);
            Frame::Integer(len as i64)
        }
        Some(_) => wrong_type(),
        None if value.is_empty() => Frame::Integer(0),
        None if too_long() => exceeds(),
        None => {
            let mut buf = vec![0u8; offset as usize + value.len()];
            buf[offset as usize..].copy_from_slice(value);
            let len = buf.len();
            db.set(&args[1], Value::Str(Bytes::from(buf)), false, now);
            db.notify(flags::STRING, "setrange", &args[1]);
            Frame::Integer(len as i64)
        }
    }
}
