//! Expiry commands: EXPIRE PEXPIRE EXPIREAT PEXPIREAT (with NX XX GT LT),
//! TTL PTTL EXPIRETIME PEXPIRETIME PERSIST (Redis 7 `expire.c`).

use bytes::Bytes;

use super::reply::{int_arg, invalid_expire, is_opt};
use crate::keyspace::Db;
use crate::notify::flags;
use crate::resp::Frame;

const NX: u8 = 1;
const XX: u8 = 2;
const GT: u8 = 4;
const LT: u8 = 8;

/// Redis `parseExtendedExpireArgumentsOrReply`.
fn parse_flags(args: &[Bytes]) -> Result<u8, Frame> {
    let mut flags = 0;
    for opt in args.iter().skip(3) {
        flags |= match () {
            _ if is_opt(opt, "nx") => NX,
            _ if is_opt(opt, "xx") => XX,
            _ if is_opt(opt, "gt") => GT,
            _ if is_opt(opt, "lt") => LT,
            _ => {
                return Err(Frame::error(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                )))
            }
        };
    }
    if flags & NX != 0 && flags & (XX | GT | LT) != 0 {
        return Err(Frame::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if flags & GT != 0 && flags & LT != 0 {
        return Err(Frame::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    Ok(flags)
}

/// Redis `expireGenericCommand`. `relative`: add `now`; `seconds`: the
/// argument is in seconds. Replies 1 when the deadline was set (or the key
/// deleted because the deadline is not in the future), 0 when the key is
/// missing or a condition failed.
fn expire_generic(
    db: &mut Db,
    args: &[Bytes],
    now: u64,
    relative: bool,
    seconds: bool,
    name: &str,
) -> Frame {
    let flags = match parse_flags(args) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let mut when = match int_arg(&args[2]) {
        Ok(w) => w,
        Err(e) => return e,
    };
    if seconds {
        match when.checked_mul(1000) {
            Some(ms) => when = ms,
            None => return invalid_expire(name),
        }
    }
    if relative {
        match when.checked_add(i64::try_from(now).unwrap_or(i64::MAX)) {
            Some(w) => when = w,
            None => return invalid_expire(name),
        }
    }
    let key = &args[1];
    let Some(current) = db.deadline(key, now) else {
        return Frame::Integer(0);
    };
    let current = current.map(|t| i64::try_from(t).unwrap_or(i64::MAX));
    let refused = (flags & NX != 0 && current.is_some())
        || (flags & XX != 0 && current.is_none())
        || (flags & GT != 0 && current.is_none_or(|c| when <= c))
        || (flags & LT != 0 && current.is_some_and(|c| when >= c));
    if refused {
        return Frame::Integer(0);
    }
    match u64::try_from(when) {
        Ok(t) if t > now => {
            db.set_deadline(key, t);
            db.notify(flags::GENERIC, "expire", key);
        }
        _ => {
            db.remove(key, now);
            db.notify(flags::GENERIC, "del", key);
        }
    }
    Frame::Integer(1)
}

/// `EXPIRE key seconds [NX|XX|GT|LT]`.
pub fn expire(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    expire_generic(db, args, now, true, true, "expire")
}

/// `PEXPIRE key milliseconds [NX|XX|GT|LT]`.
pub fn pexpire(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    expire_generic(db, args, now, true, false, "pexpire")
}

/// `EXPIREAT key unix-seconds [NX|XX|GT|LT]`.
pub fn expireat(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    expire_generic(db, args, now, false, true, "expireat")
}

/// `PEXPIREAT key unix-ms [NX|XX|GT|LT]`.
pub fn pexpireat(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    expire_generic(db, args, now, false, false, "pexpireat")
}

/// Redis `ttlGenericCommand`: -2 missing, -1 no deadline, else the remaining
/// (or absolute) time in ms, or in seconds rounded to nearest — without
/// overflow near i64::MAX, as redis-server 7 on x86-64 answers
/// (`PEXPIREAT k 9223372036854775807` then `EXPIRETIME k` → 9223372036854776).
fn ttl_generic(db: &mut Db, args: &[Bytes], now: u64, ms: bool, absolute: bool) -> Frame {
    let t = match db.deadline(&args[1], now) {
        None => return Frame::Integer(-2),
        Some(None) => return Frame::Integer(-1),
        Some(Some(t)) => {
            if absolute {
                t
            } else {
                t.saturating_sub(now)
            }
        }
    };
    let t = i64::try_from(t).unwrap_or(i64::MAX);
    Frame::Integer(if ms {
        t
    } else {
        ((i128::from(t) + 500) / 1000) as i64
    })
}

/// `TTL key` (seconds).
pub fn ttl(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    ttl_generic(db, args, now, false, false)
}

/// `PTTL key` (milliseconds).
pub fn pttl(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    ttl_generic(db, args, now, true, false)
}

/// `EXPIRETIME key` (unix seconds).
pub fn expiretime(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    ttl_generic(db, args, now, false, true)
}

/// `PEXPIRETIME key` (unix ms).
pub fn pexpiretime(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    ttl_generic(db, args, now, true, true)
}

/// `PERSIST key` → 1 if a deadline was removed, else 0.
pub fn persist(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let removed = db.persist(&args[1], now);
    if removed {
        db.notify(flags::GENERIC, "persist", &args[1]);
    }
    Frame::Integer(i64::from(removed))
}
