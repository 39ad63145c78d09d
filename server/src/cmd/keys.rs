//! Generic keyspace commands: DEL UNLINK EXISTS TYPE KEYS SCAN DBSIZE
//! FLUSHDB FLUSHALL (Redis 7 `db.c`).

use bytes::Bytes;

use super::coll_scan::scan_options;
use super::reply::{is_opt, syntax_error};
use crate::keyspace::Db;
use crate::notify::flags;
use crate::resp::num::parse_cursor;
use crate::resp::Frame;

/// `DEL key...` / `UNLINK key...` → number of keys removed.
pub fn del(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let mut n = 0;
    for key in &args[1..] {
        if db.remove(key, now).is_some() {
            db.notify(flags::GENERIC, "del", key);
            n += 1;
        }
    }
    Frame::Integer(n)
}

/// `EXISTS key...` → number of existing keys, counting repeats.
pub fn exists(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let n = args[1..].iter().filter(|k| db.contains(k, now)).count();
    Frame::Integer(n as i64)
}

/// `TYPE key` → `+string` / `+list` / `+hash` / `+set` / `+none`.
pub fn type_(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let name = db
        .get_untouched(&args[1], now)
        .map_or("none", |v| v.type_name());
    Frame::Simple(name.to_string())
}

/// `KEYS pattern` → array of matching keys (glob, Redis `stringmatchlen`).
pub fn keys(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    Frame::bulk_array(db.keys(&args[1], now))
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`, one shard's step of a SCAN call
/// → `[next local cursor as bulk, [keys], keys examined as integer]` (the examined count,
/// before MATCH / TYPE, lets the call go on to the next shard: see
/// [`super::fanout::ScanWalk`], which turns the steps into Redis's reply). Errors as Redis 7: `ERR invalid
/// cursor`, a non-integer COUNT is `ERR value is not an integer or out of
/// range`, COUNT < 1 or an unknown/incomplete option is `ERR syntax error`.
/// Default COUNT is 10.
pub fn scan(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let Some(cursor) = parse_cursor(&args[1]) else {
        return Frame::error("ERR invalid cursor");
    };
    let options = match scan_options(&args[2..], true) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let (next, keys, examined) = db.scan(
        cursor,
        options.count,
        options.pattern,
        options.type_filter,
        now,
    );
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(next.to_string())),
        Frame::bulk_array(keys),
        Frame::Integer(i64::try_from(examined).unwrap_or(i64::MAX)),
    ])
}

/// `DBSIZE` → number of keys on this shard.
pub fn dbsize(db: &mut Db, _args: &[Bytes], _now: u64) -> Frame {
    Frame::Integer(db.len() as i64)
}

/// `FLUSHDB [ASYNC|SYNC]` / `FLUSHALL [ASYNC|SYNC]` → OK (both modes flush
/// synchronously); more arguments or another word is `ERR syntax error`.
pub fn flush(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match args.get(1..).unwrap_or_default() {
        [] => {}
        [mode] if is_opt(mode, "sync") || is_opt(mode, "async") => {}
        _ => return syntax_error(),
    }
    db.flush(now);
    Frame::ok()
}

/// `TOUCH key...` → number of existing keys, counting repeats; each existing key's access
/// clock (OBJECT IDLETIME / FREQ) records an access now (Redis 7 `touchCommand`).
pub fn touch(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let n = args[1..].iter().filter(|k| db.touch(k, now)).count();
    Frame::Integer(n as i64)
}

/// `RANDOMKEY` on this shard → a random live key, or nil when there is none.
pub fn randomkey(db: &mut Db, _args: &[Bytes], now: u64) -> Frame {
    db.random_key(now).map_or(Frame::Null, Frame::Bulk)
}
