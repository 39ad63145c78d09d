//! DUMP and RESTORE (Redis 7.0 `cluster.c` `dumpCommand`, `restoreCommand`): values in
//! Redis's serialized format ([`crate::rdb`]), so they move between shardline and Redis.

use bytes::Bytes;

use super::reply::{int_arg, is_opt, syntax_error};
use crate::keyspace::Db;
use crate::notify::flags;
use crate::rdb;
use crate::resp::Frame;

/// `BUSYKEY Target key name already exists.` (Redis `shared.busykeyerr`).
pub const BUSYKEY: &str = "BUSYKEY Target key name already exists.";

/// `DUMP key` → the serialized value (bulk string), or nil when `key` is missing.
pub fn dump(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(value) => Frame::Bulk(Bytes::from(rdb::dump(value))),
        None => Frame::Null,
    }
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]` → OK.
///
/// `ttl` is in ms, relative (0 = none) or, with ABSTTL, a unix-ms deadline; a deadline not
/// in the future stores nothing (and REPLACE still deletes the old key), as Redis does.
/// IDLETIME (seconds) sets the key's idle time under an LRU policy (or none), FREQ (0–255)
/// its access counter under an LFU policy; the option the policy does not use is ignored,
/// as in Redis.
///
/// Errors, in Redis 7.0's order: `ERR syntax error`, `ERR Invalid IDLETIME value, must be >=
/// 0`, `ERR Invalid FREQ value, must be >= 0 and <= 255`, `BUSYKEY …`, `ERR Invalid TTL value,
/// must be >= 0`, `ERR DUMP payload version or checksum are wrong`, `ERR Bad data format`.
pub fn restore(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (None, None);
    let mut j = 4;
    while j < args.len() {
        let has_value = j + 1 < args.len();
        if is_opt(&args[j], "replace") {
            replace = true;
        } else if is_opt(&args[j], "absttl") {
            absttl = true;
        } else if is_opt(&args[j], "idletime") && has_value && freq.is_none() {
            match int_arg(&args[j + 1]) {
                Ok(n) if n < 0 => return Frame::error("ERR Invalid IDLETIME value, must be >= 0"),
                Ok(n) => idle = Some(n),
                Err(err) => return err,
            }
            j += 1;
        } else if is_opt(&args[j], "freq") && has_value && idle.is_none() {
            match int_arg(&args[j + 1]) {
                Ok(n) if !(0..=255).contains(&n) => {
                    return Frame::error("ERR Invalid FREQ value, must be >= 0 and <= 255")
                }
                Ok(n) => freq = Some(n),
                Err(err) => return err,
            }
            j += 1;
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let key = &args[1];
    if !replace && db.contains(key, now) {
        return Frame::error(BUSYKEY);
    }
    let ttl = match int_arg(&args[2]) {
        Ok(ttl) if ttl < 0 => return Frame::error("ERR Invalid TTL value, must be >= 0"),
        Ok(ttl) => ttl.unsigned_abs(),
        Err(err) => return err,
    };
    let value = match rdb::restore(&args[3], db.hash_limits()) {
        Ok(value) => value,
        Err(err) => return Frame::error(err.message()),
    };
    let deleted = replace && db.remove(key, now).is_some();
    let deadline = match ttl {
        0 => None,
        ttl if absttl => Some(ttl),
        ttl => Some(ttl.saturating_add(now)),
    };
    // Redis `checkAlreadyExpired`; never while loading the log (`now` 0 there).
    if deadline.is_some_and(|at| at <= now) {
        if deleted {
            db.notify(flags::GENERIC, "del", key);
        }
        return Frame::ok();
    }
    db.set(key, value, false, now);
    if let Some(at) = deadline {
        db.set_deadline(key, at);
    }
    let freq = freq.and_then(|f| u8::try_from(f).ok());
    db.set_access(key, idle.map(i64::unsigned_abs), freq, now);
    db.notify(flags::GENERIC, "restore", key);
    Frame::ok()
}
