//! What a write command leaves in the log: the command itself when replaying it gives the
//! same result, else a replay-deterministic form (Redis 7 `propagate` rewrites):
//!
//! - relative or absolute expirations (`SET … EX/PX/EXAT/PXAT`, `SETEX`, `PSETEX`, `GETEX`,
//!   `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT`) are written as the state they left:
//!   `SET key value [PXAT ms]`, `PEXPIREAT key ms`, `PERSIST key` or `DEL key`;
//! - `INCRBYFLOAT` as `SET key result [PXAT ms]` (Redis: `SET … KEEPTTL`), `HINCRBYFLOAT` as
//!   `HSET key field result` (float formatting is then never redone);
//! - `SPOP` (random) as `SREM key member…` of the members it returned;
//! - `RESTORE` (a relative TTL) as `RESTORE key <deadline unix ms, 0 = none> payload ABSTTL
//!   REPLACE`, or `DEL key` when the deadline had passed (Redis: `DEL`).

use bytes::Bytes;

use super::record::encode;
use crate::keyspace::{Db, Value};
use crate::resp::Frame;

/// Appends the record(s) for write command `name` (canonical lower-case name) that ran with
/// `args`, replied `reply` and left `db` in its new state; returns how many (0 or 1).
pub fn append_records(
    out: &mut Vec<u8>,
    name: &str,
    args: &[Bytes],
    reply: &Frame,
    db: &Db,
) -> u64 {
    let key = || args[1].as_ref();
    match name {
        "set" | "setex" | "psetex" | "incrbyfloat" => match db.peek(key()) {
            Some((Value::Str(value), Some(at))) => {
                let at = at.to_string();
                encode(out, &[&b"SET"[..], key(), value, b"PXAT", at.as_bytes()]);
            }
            Some((Value::Str(value), None)) => encode(out, &[&b"SET"[..], key(), value]),
            Some(_) => encode(out, args),
            None => encode(out, &[&b"DEL"[..], key()]),
        },
        "getex" | "expire" | "pexpire" | "expireat" | "pexpireat" => deadline(out, key(), db),
        "restore" => match db.peek(key()) {
            Some((_, at)) => {
                let at = at.unwrap_or(0).to_string();
                let record: [&[u8]; 6] = [
                    b"RESTORE",
                    key(),
                    at.as_bytes(),
                    &args[3],
                    b"ABSTTL",
                    b"REPLACE",
                ];
                encode(out, &record);
            }
            None => encode(out, &[&b"DEL"[..], key()]),
        },
        "spop" => {
            let members: Vec<&[u8]> = match reply {
                Frame::Bulk(member) => vec![member],
                Frame::Set(items) | Frame::Array(items) => items
                    .iter()
                    .filter_map(|item| match item {
                        Frame::Bulk(member) => Some(member.as_ref()),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            if members.is_empty() {
                return 0;
            }
            let mut record: Vec<&[u8]> = vec![b"SREM", key()];
            record.extend(members);
            encode(out, &record);
        }
        "hincrbyfloat" => match reply {
            Frame::Bulk(value) => encode(out, &[&b"HSET"[..], key(), &args[2], value]),
            _ => encode(out, args),
        },
        _ => encode(out, args),
    }
    1
}

/// The deadline state of `key` as one record.
fn deadline(out: &mut Vec<u8>, key: &[u8], db: &Db) {
    match db.peek(key) {
        Some((_, Some(at))) => {
            let at = at.to_string();
            encode(out, &[&b"PEXPIREAT"[..], key, at.as_bytes()]);
        }
        Some((_, None)) => encode(out, &[&b"PERSIST"[..], key]),
        None => encode(out, &[&b"DEL"[..], key]),
    }
}
