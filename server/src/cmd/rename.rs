//! RENAME, RENAMENX and COPY when both keys live on this shard (Redis 7.0 `db.c`
//! `renameGenericCommand`, `copyCommand`). Keys on different shards are composed from
//! owner-shard steps by `connection::commands::cross_shard`.

use bytes::Bytes;

use super::databases::db_index;
use super::reply::{is_opt, syntax_error};
use crate::keyspace::Db;
use crate::notify::flags;
use crate::resp::Frame;

/// `ERR no such key` (Redis `shared.nokeyerr`).
pub const NO_SUCH_KEY: &str = "ERR no such key";
/// `ERR source and destination objects are the same` (Redis `shared.sameobjecterr`).
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";

/// `RENAME key newkey` → OK; the value moves with its deadline, replacing `newkey` (and its
/// deadline). `ERR no such key` when `key` is missing.
pub fn rename(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    rename_generic(db, &args[1], &args[2], now, false)
}

/// `RENAMENX key newkey` → 1 when renamed, 0 when `newkey` exists (or is `key`).
pub fn renamenx(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    rename_generic(db, &args[1], &args[2], now, true)
}

fn rename_generic(db: &mut Db, src: &[u8], dst: &[u8], now: u64, nx: bool) -> Frame {
    let done = |renamed: bool| {
        if nx {
            Frame::Integer(i64::from(renamed))
        } else {
            Frame::ok()
        }
    };
    let Some(deadline) = db.deadline(src, now) else {
        return Frame::error(NO_SUCH_KEY);
    };
    if src == dst {
        return done(false);
    }
    if nx && db.contains(dst, now) {
        return done(false);
    }
    let Some(value) = db.remove(src, now) else {
        return Frame::error(NO_SUCH_KEY);
    };
    // Redis deletes an existing destination first: the key is then new (its `new` event).
    db.remove(dst, now);
    db.set(dst, value, false, now);
    if let Some(at) = deadline {
        db.set_deadline(dst, at);
    }
    db.notify(flags::GENERIC, "rename_from", src);
    db.notify(flags::GENERIC, "rename_to", dst);
    done(true)
}

/// Parsed `COPY` options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyOptions {
    /// Target database (`DB n`; the selected one by default).
    pub db: usize,
    /// `REPLACE`: overwrite an existing destination.
    pub replace: bool,
}

/// Parses `COPY source destination [DB n] [REPLACE]` (`args[3..]`) with `selected` as the
/// default target database, out of `databases`.
///
/// Errors (Redis 7.0): `ERR syntax error`, `ERR value is not an integer or out of range`,
/// `ERR DB index is out of range`.
pub fn copy_options(
    args: &[Bytes],
    selected: usize,
    databases: usize,
) -> Result<CopyOptions, Frame> {
    let mut options = CopyOptions {
        db: selected,
        replace: false,
    };
    let mut i = 3;
    while i < args.len() {
        if is_opt(&args[i], "replace") {
            options.replace = true;
        } else if is_opt(&args[i], "db") && i + 1 < args.len() {
            options.db = db_index(&args[i + 1], databases, None)?;
            i += 1;
        } else {
            return Err(syntax_error());
        }
        i += 1;
    }
    Ok(options)
}

/// `COPY source destination [DB n] [REPLACE]` on this shard's databases `dbs` (selected:
/// `selected`) → 1 when copied (with the deadline), 0 when `source` is missing or
/// `destination` exists without REPLACE; `ERR source and destination objects are the same`.
pub fn copy(dbs: &mut [Db], selected: usize, args: &[Bytes], now: u64) -> Frame {
    let options = match copy_options(args, selected, dbs.len()) {
        Ok(options) => options,
        Err(err) => return err,
    };
    let (src, dst) = (&args[1], &args[2]);
    if options.db == selected && src == dst {
        return Frame::error(SAME_OBJECT);
    }
    let from = &mut dbs[selected];
    let Some(deadline) = from.deadline(src, now) else {
        return Frame::Integer(0);
    };
    let Some(value) = from.get(src, now).cloned() else {
        return Frame::Integer(0);
    };
    let to = &mut dbs[options.db];
    if to.contains(dst, now) {
        if !options.replace {
            return Frame::Integer(0);
        }
        to.remove(dst, now);
    }
    to.set(dst, value, false, now);
    if let Some(at) = deadline {
        to.set_deadline(dst, at);
    }
    to.notify(flags::GENERIC, "copy_to", dst);
    Frame::Integer(1)
}
