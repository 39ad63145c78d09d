//! Hash counters: HINCRBY HINCRBYFLOAT (Redis 7 `t_hash.c`).

use bytes::Bytes;

use super::hash::hash_for_write;
use super::incr::{NAN_OR_INF, NOT_FLOAT};
use super::longdouble::{self, Ld, LongDouble};
use super::reply::int_arg;
use crate::keyspace::Db;
use crate::notify::flags;
use crate::resp::num::parse_i64;
use crate::resp::Frame;

/// `HINCRBY key field increment` → the new value; a missing field counts as
/// 0 and the hash is created. Errors in order: `ERR value is not an integer
/// or out of range` (increment), WRONGTYPE, `ERR hash value is not an
/// integer`, `ERR increment or decrement would overflow`.
pub fn hincrby(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let incr = match int_arg(&args[3]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let (map, limits) = match hash_for_write(db, &args[1], now) {
        Ok(found) => found,
        Err(e) => return e,
    };
    let current = match map.get(&args[2][..]) {
        Some(v) => match parse_i64(v) {
            Some(n) => n,
            None => return Frame::error("ERR hash value is not an integer"),
        },
        None => 0,
    };
    let Some(new) = current.checked_add(incr) else {
        return Frame::error("ERR increment or decrement would overflow");
    };
    map.set(&args[2], Bytes::from(new.to_string()), limits);
    db.notify(flags::HASH, "hincrby", &args[1]);
    Frame::Integer(new)
}

/// `HINCRBYFLOAT key field increment` → the new value as a bulk string
/// (x87 extended precision, Redis `%.17Lf` human form). Errors in order:
/// `ERR value is not a valid float`, `ERR value is NaN or Infinity`
/// (increment), WRONGTYPE, `ERR hash value is not a float`, `ERR increment
/// would produce NaN or Infinity`.
pub fn hincrbyfloat(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let incr = match longdouble::parse(&args[3]) {
        Some(Ld::Finite(v)) => v,
        Some(Ld::Inf) => return Frame::error("ERR value is NaN or Infinity"),
        None => return Frame::error(NOT_FLOAT),
    };
    let (map, limits) = match hash_for_write(db, &args[1], now) {
        Ok(found) => found,
        Err(e) => return e,
    };
    let current = match map.get(&args[2][..]) {
        Some(v) => match longdouble::parse(v) {
            Some(c) => c,
            None => return Frame::error("ERR hash value is not a float"),
        },
        None => Ld::Finite(LongDouble::zero(false)),
    };
    let Ld::Finite(current) = current else {
        return Frame::error(NAN_OR_INF);
    };
    let Ld::Finite(sum) = current.add(&incr) else {
        return Frame::error(NAN_OR_INF);
    };
    let text = Bytes::from(sum.to_human());
    map.set(&args[2], text.clone(), limits);
    db.notify(flags::HASH, "hincrbyfloat", &args[1]);
    Frame::Bulk(text)
}
