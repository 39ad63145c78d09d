//! String commands other than SET and the counters: GET GETDEL MGET MSET
//! SETNX APPEND STRLEN (Redis 7 `t_string.c`).

use bytes::{Bytes, BytesMut};

use super::reply::{wrong_arity, wrong_type};
use crate::keyspace::{Db, Value};
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
            Some(Value::Str(v)) => Frame::Bulk(v),
            _ => Frame::Null,
        },
        Some(_) => wrong_type(),
        None => Frame::Null,
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
    if args.len() < 3 || args.len() % 2 == 0 {
        return wrong_arity("mset");
    }
    for pair in args[1..].chunks_exact(2) {
        db.set(
            &pair[0],
            Value::Str(Bytes::copy_from_slice(&pair[1])),
            false,
            now,
        );
    }
    Frame::ok()
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
    Frame::Integer(1)
}

/// `APPEND key value` → new length; creates the key; keeps the TTL.
/// Appends in place (amortised O(len(value))) when the buffer is unshared.
pub fn append(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get_mut(&args[1], now) {
        Some(Value::Str(v)) => {
            let mut buf = match std::mem::take(v).try_into_mut() {
                Ok(buf) => buf,
                Err(shared) => BytesMut::from(&shared[..]),
            };
            buf.extend_from_slice(&args[2]);
            let len = buf.len();
            *v = buf.freeze();
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
            Frame::Integer(args[2].len() as i64)
        }
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
