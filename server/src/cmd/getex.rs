//! String commands that set a TTL: GETEX SETEX PSETEX (Redis 7
//! `t_string.c` `getexCommand`, `setexCommand`, `psetexCommand`).

use bytes::Bytes;

use super::reply::{is_opt, syntax_error, wrong_type};
use super::set_cmd::expire_deadline;
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

/// GETEX's expiry change.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Change {
    /// No option: plain GET.
    None,
    /// PERSIST: drop the TTL.
    Persist,
    /// EX/PX/EXAT/PXAT with `(seconds, relative)` units and the argument.
    Expire(bool, bool, usize),
}

/// Redis `parseExtendedStringArgumentsOrReply(COMMAND_GET)`: one expiry
/// form, repeatable but not mixable with another form or PERSIST; anything
/// else, or a form without a value, is `ERR syntax error`.
fn parse_getex(args: &[Bytes]) -> Result<Change, Frame> {
    const FORMS: [(&str, bool, bool); 4] = [
        ("ex", true, true),
        ("px", false, true),
        ("exat", true, false),
        ("pxat", false, false),
    ];
    let mut change = Change::None;
    let mut j = 2;
    while j < args.len() {
        let opt = &args[j];
        if is_opt(opt, "persist") && matches!(change, Change::None | Change::Persist) {
            change = Change::Persist;
        } else if let Some(&(_, seconds, relative)) =
            FORMS.iter().find(|(name, ..)| is_opt(opt, name))
        {
            let same_form = match change {
                Change::None => true,
                Change::Expire(s, r, _) => (s, r) == (seconds, relative),
                Change::Persist => false,
            };
            if !same_form || j + 1 >= args.len() {
                return Err(syntax_error());
            }
            j += 1;
            change = Change::Expire(seconds, relative, j);
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    Ok(change)
}

/// `GETEX key [EX s | PX ms | EXAT ts | PXAT ms-ts | PERSIST]` → the value
/// (Null if missing), then changes the TTL. Errors in order: syntax, type,
/// integer, expire range. An EXAT/PXAT deadline not in the future deletes
/// the key after replying.
pub fn getex(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let change = match parse_getex(args) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let key = &args[1];
    let value = match db.get(key, now) {
        Some(Value::Str(v)) => v.clone(),
        Some(_) => return wrong_type(),
        None => return Frame::Null,
    };
    match change {
        Change::None => {}
        Change::Persist => {
            if db.persist(key, now) {
                db.notify(flags::GENERIC, "persist", key);
            }
        }
        Change::Expire(seconds, relative, at) => {
            let when = match expire_deadline(&args[at], seconds, relative, now, "getex") {
                Ok(t) => t,
                Err(e) => return e,
            };
            match u64::try_from(when) {
                Ok(t) if relative || t > now => {
                    db.set_deadline(key, t);
                    db.notify(flags::GENERIC, "expire", key);
                }
                _ => {
                    db.remove(key, now);
                    db.notify(flags::GENERIC, "del", key);
                }
            }
        }
    }
    Frame::Bulk(value)
}

/// Shared SETEX / PSETEX: validate the TTL, then store the value (any old
/// type is replaced) with the new deadline.
fn set_with_ttl(db: &mut Db, args: &[Bytes], now: u64, seconds: bool, name: &str) -> Frame {
    let when = match expire_deadline(&args[2], seconds, true, now, name) {
        Ok(t) => t,
        Err(e) => return e,
    };
    let key = &args[1];
    db.set(
        key,
        Value::Str(Bytes::copy_from_slice(&args[3])),
        false,
        now,
    );
    db.notify(flags::STRING, "set", key);
    if let Ok(t) = u64::try_from(when) {
        db.set_deadline(key, t);
    }
    db.notify(flags::GENERIC, "expire", key);
    Frame::ok()
}

/// `SETEX key seconds value` → OK; `ERR invalid expire time in 'setex'
/// command` for a non-positive or overflowing TTL.
pub fn setex(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    set_with_ttl(db, args, now, true, "setex")
}

/// `PSETEX key milliseconds value` → OK.
pub fn psetex(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    set_with_ttl(db, args, now, false, "psetex")
}
