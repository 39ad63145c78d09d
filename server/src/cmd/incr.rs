//! INCR DECR INCRBY DECRBY (Redis 7 `t_string.c` `incrDecrCommand`) and
//! INCRBYFLOAT (`incrbyfloatCommand`, x87 `long double` arithmetic).

use bytes::Bytes;

use super::longdouble::{self, Ld};
use super::reply::{int_arg, not_integer, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::num::parse_i64;
use crate::resp::Frame;

/// Adds `delta` to the integer stored at `key` (0 if missing) and replies
/// with the new value; keeps the TTL. Errors: WRONGTYPE, `ERR value is not
/// an integer or out of range`, `ERR increment or decrement would overflow`.
fn incr_by(db: &mut Db, key: &[u8], delta: i64, now: u64) -> Frame {
    let current = match db.get(key, now) {
        Some(Value::Str(v)) => match parse_i64(v) {
            Some(n) => n,
            None => return not_integer(),
        },
        Some(_) => return wrong_type(),
        None => 0,
    };
    let Some(new) = current.checked_add(delta) else {
        return Frame::error("ERR increment or decrement would overflow");
    };
    db.set(key, Value::Str(Bytes::from(new.to_string())), true, now);
    db.notify(flags::STRING, "incrby", key);
    Frame::Integer(new)
}

/// `INCR key`.
pub fn incr(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    incr_by(db, &args[1], 1, now)
}

/// `DECR key`.
pub fn decr(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    incr_by(db, &args[1], -1, now)
}

/// `INCRBY key increment`.
pub fn incrby(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match int_arg(&args[2]) {
        Ok(delta) => incr_by(db, &args[1], delta, now),
        Err(e) => e,
    }
}

/// `DECRBY key decrement`; a decrement of i64::MIN is `ERR decrement would
/// overflow`.
pub fn decrby(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match int_arg(&args[2]) {
        Ok(i64::MIN) => Frame::error("ERR decrement would overflow"),
        Ok(delta) => incr_by(db, &args[1], -delta, now),
        Err(e) => e,
    }
}

/// `ERR value is not a valid float` (Redis `getLongDoubleFromObjectOrReply`).
pub(super) const NOT_FLOAT: &str = "ERR value is not a valid float";
/// Error when the sum is not finite.
pub(super) const NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";

/// `INCRBYFLOAT key increment` → the new value as a bulk string, computed
/// in x87 extended precision and printed as Redis's `%.17Lf` with trailing
/// zeros trimmed; keeps the TTL. Errors in order: WRONGTYPE, `ERR value is
/// not a valid float` (stored value, then increment), `ERR increment would
/// produce NaN or Infinity`.
pub fn incrbyfloat(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let current = match db.get(&args[1], now) {
        Some(Value::Str(v)) => longdouble::parse(v),
        Some(_) => return wrong_type(),
        None => Some(Ld::Finite(longdouble::LongDouble::zero(false))),
    };
    let (Some(current), Some(incr)) = (current, longdouble::parse(&args[2])) else {
        return Frame::error(NOT_FLOAT);
    };
    let sum = match (current, incr) {
        (Ld::Finite(a), Ld::Finite(b)) => a.add(&b),
        _ => Ld::Inf,
    };
    let Ld::Finite(sum) = sum else {
        return Frame::error(NAN_OR_INF);
    };
    let text = Bytes::from(sum.to_human());
    db.set(&args[1], Value::Str(text.clone()), true, now);
    db.notify(flags::STRING, "incrbyfloat", &args[1]);
    Frame::Bulk(text)
}
