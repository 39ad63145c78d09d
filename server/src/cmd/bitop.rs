//! BITOP AND|OR|XOR|NOT destkey srckey... (Redis 7.0 `bitops.c` `bitopCommand`) on one
//! shard; `connection::commands::composed` runs it across shards.

use bytes::Bytes;

use super::reply::{is_opt, syntax_error, wrong_type};
use crate::keyspace::{Db, Value};
use crate::notify::flags;
use crate::resp::Frame;

/// Redis's reply to BITOP NOT with other than one source key.
pub const NOT_ONE_KEY: &str = "ERR BITOP NOT must be called with a single source key.";

#[derive(Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// `BITOP op destkey srckey...` → the length in bytes of the string stored at `destkey` (the
/// longest source; shorter and missing sources count as zero bytes). An empty result deletes
/// `destkey`. The destination loses its TTL. Errors: `ERR syntax error` (unknown op),
/// [`NOT_ONE_KEY`], WRONGTYPE (a source not a string).
pub fn bitop(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let op = if is_opt(&args[1], "and") {
        BitOp::And
    } else if is_opt(&args[1], "or") {
        BitOp::Or
    } else if is_opt(&args[1], "xor") {
        BitOp::Xor
    } else if is_opt(&args[1], "not") {
        BitOp::Not
    } else {
        return syntax_error();
    };
    if op == BitOp::Not && args.len() != 4 {
        return Frame::error(NOT_ONE_KEY);
    }
    let mut sources = Vec::with_capacity(args.len() - 3);
    for key in &args[3..] {
        match db.get_read(key, now) {
            Some(Value::Str(v)) => sources.push(v.clone()),
            Some(_) => return wrong_type(),
            None => sources.push(Bytes::new()),
        }
    }
    let result = compute(op, &sources);
    let len = result.len();
    // Redis 7.0.15's `bitopCommand` events: `set` on the destination, or `del` when an
    // existing one is deleted for an empty result.
    if len == 0 {
        if db.remove(&args[2], now).is_some() {
            db.notify(flags::GENERIC, "del", &args[2]);
        }
    } else {
        db.set(&args[2], Value::Str(Bytes::from(result)), false, now);
        db.notify(flags::STRING, "set", &args[2]);
    }
    Frame::Integer(len as i64)
}

/// The bytes of `op` over `sources`, as long as the longest one.
fn compute(op: BitOp, sources: &[Bytes]) -> Vec<u8> {
    let len = sources.iter().map(Bytes::len).max().unwrap_or(0);
    let mut out = vec![0u8; len];
    let Some((first, rest)) = sources.split_first() else {
        return out;
    };
    out[..first.len()].copy_from_slice(first);
    if op == BitOp::Not {
        out.iter_mut().for_each(|b| *b = !*b);
        return out;
    }
    for source in rest {
        for (i, b) in out.iter_mut().enumerate() {
            let s = source.get(i).copied().unwrap_or(0);
            match op {
                BitOp::And => *b &= s,
                BitOp::Or => *b |= s,
                _ => *b ^= s,
            }
        }
    }
    out
}
