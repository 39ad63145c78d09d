//! `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL]`
//! with Redis 7 `t_string.c` semantics (`parseExtendedStringArgumentsOrReply`,
//! `getExpireMillisecondsOrReply`, `setGenericCommand`).

use bytes::Bytes;

use super::reply::{int_arg, invalid_expire, is_opt, syntax_error, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

const NX: u8 = 1;
const XX: u8 = 1 << 1;
const GET: u8 = 1 << 2;
const KEEPTTL: u8 = 1 << 3;
const EX: u8 = 1 << 4;
const PX: u8 = 1 << 5;
const EXAT: u8 = 1 << 6;
const PXAT: u8 = 1 << 7;
const ANY_EXPIRE: u8 = EX | PX | EXAT | PXAT;

/// Parsed options: flag bits and the expire argument.
struct Options<'a> {
    flags: u8,
    expire: Option<&'a Bytes>,
}

/// Option parsing as Redis: repeated identical options are accepted, NX/XX
/// and different expire forms (or an expire form with KEEPTTL) conflict, an
/// expire form without a value or anything unknown is `ERR syntax error`.
fn parse_options(args: &[Bytes]) -> Result<Options<'_>, Frame> {
    let mut flags = 0u8;
    let mut expire = None;
    let mut j = 3;
    while j < args.len() {
        let opt = &args[j];
        let next = args.get(j + 1);
        let allowed = |own: u8| flags & (KEEPTTL | (ANY_EXPIRE & !own)) == 0 && next.is_some();
        if is_opt(opt, "nx") && flags & XX == 0 {
            flags |= NX;
        } else if is_opt(opt, "xx") && flags & NX == 0 {
            flags |= XX;
        } else if is_opt(opt, "get") {
            flags |= GET;
        } else if is_opt(opt, "keepttl") && flags & ANY_EXPIRE == 0 {
            flags |= KEEPTTL;
        } else if let Some(form) = [("ex", EX), ("px", PX), ("exat", EXAT), ("pxat", PXAT)]
            .into_iter()
            .find(|(name, own)| is_opt(opt, name) && allowed(*own))
            .map(|(_, own)| own)
        {
            flags |= form;
            expire = next;
            j += 1;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    Ok(Options { flags, expire })
}

/// Absolute deadline in unix ms from an expire argument, validated as
/// Redis 7 `getExpireMillisecondsOrReply`: `seconds` for EX/EXAT units,
/// `relative` for EX/PX (adds `now`); errors name `command`.
pub(super) fn expire_deadline(
    arg: &[u8],
    seconds: bool,
    relative: bool,
    now: u64,
    command: &str,
) -> Result<i64, Frame> {
    let mut ms = int_arg(arg)?;
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid_expire(command));
    }
    if seconds {
        ms *= 1000;
    }
    if relative {
        ms = ms
            .checked_add(i64::try_from(now).unwrap_or(i64::MAX))
            .ok_or_else(|| invalid_expire(command))?;
    }
    Ok(ms)
}

/// `SET`: `+OK`, or Null when NX/XX prevents the write; with GET the old
/// value (bulk / Null) instead, WRONGTYPE if the old value is not a string.
/// Errors in order: syntax, integer, expire range, type.
pub fn set(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let opts = match parse_options(args) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let deadline = match opts
        .expire
        .map(|e| {
            let seconds = opts.flags & (EX | EXAT) != 0;
            expire_deadline(e, seconds, opts.flags & (EX | PX) != 0, now, "set")
        })
        .transpose()
    {
        Ok(d) => d,
        Err(e) => return e,
    };
    let key = &args[1];
    // A plain SET needs nothing from the old value: the table is probed once, in `Db::set`.
    let reply = if opts.flags & (GET | NX | XX) == 0 {
        Frame::ok()
    } else {
        // The old value is copied out only for SET … GET (a clone would cost an allocation).
        let old = match db.get(key, now) {
            Some(Value::Str(v)) if opts.flags & GET != 0 => Some(Frame::Bulk(v.clone())),
            Some(_) if opts.flags & GET != 0 => return wrong_type(),
            Some(_) => Some(Frame::Null),
            None => None,
        };
        let found = old.is_some();
        let reply = if opts.flags & GET != 0 {
            old.unwrap_or(Frame::Null)
        } else {
            Frame::ok()
        };
        if (opts.flags & NX != 0 && found) || (opts.flags & XX != 0 && !found) {
            return if opts.flags & GET != 0 {
                reply
            } else {
                Frame::Null
            };
        }
        reply
    };
    db.set(
        key,
        Value::Str(Bytes::copy_from_slice(&args[2])),
        opts.flags & KEEPTTL != 0,
        now,
    );
    db.notify(flags::STRING, "set", key);
    if let Some(t) = deadline {
        set_or_expire(db, key, t, now);
        db.notify(flags::GENERIC, "expire", key);
    }
    reply
}

/// Gives `key` its deadline `t` (ms); a deadline already in the past leaves the key logically
/// expired: it is removed.
fn set_or_expire(db: &mut Db, key: &[u8], t: i64, now: u64) {
    match u64::try_from(t) {
        Ok(t) if t >= now => {
            db.set_deadline(key, t);
        }
        _ => {
            db.remove(key, now);
        }
    }
}
