//! Set algebra (SINTER SUNION SDIFF, their STORE forms, SINTERCARD, SMOVE), list moves
//! (LMOVE RPOPLPUSH LMPOP) and BITOP, whose keys may live on different shards.
//!
//! When every key has one owner shard the command runs there as one job, as any keyspace
//! command, and is logged as itself. Otherwise, inside one transaction over the owner
//! shards' gates ([`crate::txn`], so no other client sees or runs between the steps):
//!
//! 1. each key's value is read on its owner shard as its DUMP payload and deadline
//!    ([`cross_shard::read_entry`], one hop per owner shard, read only);
//! 2. the values are restored into a scratch keyspace on this connection, and the very
//!    command runs there (`crate::cmd::execute`): replies, errors (WRONGTYPE, syntax, …) and
//!    results are those of the one-shard command, which Redis 7.0's `t_set.c`, `t_list.c` and
//!    `bitops.c` define;
//! 3. each key the command wrote is written back on its owner shard as a plain keyspace
//!    command, logged there as such: `RESTORE key deadline payload ABSTTL REPLACE` with the
//!    scratch value's DUMP payload, or `DEL key` when the command deleted it
//!    ([`cross_shard::put_entry`], [`cross_shard::delete_key`]), so the append-only logs
//!    replay it exactly.
//!
//! Moves (SMOVE, LMOVE, RPOPLPUSH) write the destination first, then the source: if the
//! destination's step is refused (`MISCONF` while its log cannot be written, `OOM`), nothing
//! changed and the error is the reply. If the source's step is then refused, the destination
//! step is undone (its previous value restored, or the key deleted), so the element is neither
//! lost nor duplicated; only if that undo is refused too does the element stay in both keys —
//! duplicated rather than lost, which is the order's point: the source never loses the
//! element before the destination holds it.

use std::rc::Rc;

use bytes::Bytes;

use super::cross_shard::{delete_key, put_entry, read_entry};
use crate::forward::TxnId;
use crate::keyspace::{Db, Value};
use crate::resp::Frame;
use crate::shard::Shard;
use crate::txn;

/// Whether `name` (lowercase) is served here.
pub fn serves(name: &str) -> bool {
    matches!(
        name,
        "bitop"
            | "sinter"
            | "sunion"
            | "sdiff"
            | "sinterstore"
            | "sunionstore"
            | "sdiffstore"
            | "sintercard"
            | "smove"
            | "lmove"
            | "rpoplpush"
            | "lmpop"
    )
}

/// The keys of `args` for `name` (a name [`serves`]; arity checked), in argument order. For
/// SINTERCARD and LMPOP a malformed `numkeys` gives the keys that are there: the command
/// itself then replies with Redis's error.
pub fn keys_of(name: &str, args: &[Bytes]) -> Vec<Bytes> {
    let from = |at: usize| args.get(at..).unwrap_or(&[]).to_vec();
    match name {
        "bitop" => from(2),
        "smove" | "lmove" | "rpoplpush" => args[1..3].to_vec(),
        "sintercard" | "lmpop" => {
            let n = crate::resp::num::parse_i64(&args[1])
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
            args.get(2..)
                .unwrap_or(&[])
                .iter()
                .take(n)
                .cloned()
                .collect()
        }
        _ => from(1),
    }
}

/// A key and its Redis 7 key-spec flags (COMMAND GETKEYSANDFLAGS).
pub type FlaggedKey = (Bytes, &'static [&'static str]);

/// COMMAND GETKEYS / GETKEYSANDFLAGS of the full command line `line` (arity checked) when
/// its command is one [`serves`]: each key with its key-spec flags, as redis-server 7.0.15
/// reports them (a destination `OW update` or `RW update`, a move's source `RW access
/// delete` and destination `RW insert`, a source read `RO access`). SINTERCARD's and
/// LMPOP's `numkeys` must be at least 1 and fit the line, else `ERR Invalid arguments
/// specified for command`. `None` for any other command.
pub fn keys_with_flags(name: &str, line: &[Bytes]) -> Option<Result<Vec<FlaggedKey>, Frame>> {
    const RO: &[&str] = &["RO", "access"];
    const OW: &[&str] = &["OW", "update"];
    const RW_UPDATE: &[&str] = &["RW", "update"];
    const TAKE: &[&str] = &["RW", "access", "delete"];
    const INSERT: &[&str] = &["RW", "insert"];
    let all = |from: usize, flags: &'static [&'static str]| -> Vec<FlaggedKey> {
        line.get(from..)
            .unwrap_or(&[])
            .iter()
            .map(|k| (k.clone(), flags))
            .collect()
    };
    let with_dest = |dest: usize, dest_flags: &'static [&'static str]| -> Vec<FlaggedKey> {
        let mut keys = vec![(line[dest].clone(), dest_flags)];
        keys.extend(all(dest + 1, RO));
        keys
    };
    let keys = match name {
        "sinter" | "sunion" | "sdiff" => all(1, RO),
        "sinterstore" => with_dest(1, RW_UPDATE),
        "sunionstore" | "sdiffstore" => with_dest(1, OW),
        "bitop" => with_dest(2, OW),
        "smove" | "lmove" | "rpoplpush" => {
            vec![(line[1].clone(), TAKE), (line[2].clone(), INSERT)]
        }
        "sintercard" | "lmpop" => {
            let count = crate::resp::num::parse_i64(&line[1])
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n >= 1 && n <= line.len() - 2);
            let Some(count) = count else {
                return Some(Err(Frame::error(
                    "ERR Invalid arguments specified for command",
                )));
            };
            let flags = if name == "lmpop" { TAKE } else { RO };
            line[2..2 + count]
                .iter()
                .map(|k| (k.clone(), flags))
                .collect()
        }
        _ => return None,
    };
    Some(Ok(keys))
}

/// The keys a successful `reply` to `name` wrote, in the order to write them back:
/// destinations first, sources last.
fn written_keys(name: &str, args: &[Bytes], reply: &Frame) -> Vec<Bytes> {
    match (name, reply) {
        ("bitop", _) => vec![args[2].clone()],
        ("sinterstore" | "sunionstore" | "sdiffstore", _) => vec![args[1].clone()],
        ("smove", Frame::Integer(1)) | ("lmove" | "rpoplpush", Frame::Bulk(_)) => {
            vec![args[2].clone(), args[1].clone()]
        }
        ("lmpop", Frame::Array(parts)) => match parts.first() {
            Some(Frame::Bulk(key)) => vec![key.clone()],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Runs `name` (a name [`serves`]; arity checked) with `args` on database `db`, inside the
/// EXEC transaction `scope` when given.
pub async fn execute(
    shard: &Rc<Shard>,
    db: usize,
    scope: Option<TxnId>,
    name: &str,
    args: Vec<Bytes>,
) -> Frame {
    let mut keys = keys_of(name, &args);
    let owners: Vec<usize> = keys.iter().map(|k| shard.owner_of(k)).collect();
    let first = owners.first().copied().unwrap_or(shard.id);
    if owners.iter().all(|&o| o == first) {
        return shard
            .run_on_in(
                first,
                scope,
                Box::new(move |s: &Shard| s.execute_local(db, &args)),
            )
            .await;
    }
    keys.sort_unstable();
    keys.dedup();
    let txn_scope = txn::enter(shard, scope, owners).await;
    let reply = compose(shard, txn_scope.id(), db, name, &args, keys).await;
    txn_scope.leave().await;
    reply
}

/// A key's value as read on its owner shard: DUMP payload and deadline (unix ms, 0 = none).
type Entry = Option<(Bytes, i64)>;

/// Reads `keys` on their owner shards (one hop per shard).
async fn read_all(
    shard: &Rc<Shard>,
    txn: Option<TxnId>,
    db: usize,
    keys: &[Bytes],
) -> Result<Vec<(Bytes, Entry)>, Frame> {
    let mut by_owner: Vec<(usize, Vec<Bytes>)> = Vec::new();
    for key in keys {
        let owner = shard.owner_of(key);
        match by_owner.iter_mut().find(|(o, _)| *o == owner) {
            Some((_, list)) => list.push(key.clone()),
            None => by_owner.push((owner, vec![key.clone()])),
        }
    }
    let mut entries = Vec::with_capacity(keys.len());
    for (owner, owned) in by_owner {
        let asked = owned.clone();
        let reply = shard
            .run_on_in(
                owner,
                txn,
                Box::new(move |s: &Shard| {
                    Frame::Array(asked.iter().map(|k| read_entry(s, db, k)).collect())
                }),
            )
            .await;
        let Frame::Array(replies) = reply else {
            return Err(reply);
        };
        for (key, reply) in owned.into_iter().zip(replies) {
            let entry = match reply {
                Frame::Array(parts) => match parts.as_slice() {
                    [Frame::Bulk(payload), Frame::Integer(deadline)] => {
                        Some((payload.clone(), *deadline))
                    }
                    _ => return Err(Frame::error("ERR internal error reading a source key")),
                },
                Frame::Null => None,
                err => return Err(err),
            };
            entries.push((key, entry));
        }
    }
    Ok(entries)
}

/// Runs `args` (command `name`) on a scratch keyspace holding `entries` → the reply, the
/// scratch keyspace, and whether an SMOVE left its destination as it was
/// ([`smove_keeps_destination`]).
fn run_scratch(
    shard: &Shard,
    entries: &[(Bytes, Entry)],
    name: &str,
    args: &[Bytes],
) -> (Frame, Db, bool) {
    let now = crate::shard::unix_time_ms();
    let mut scratch = Db::new();
    scratch.set_max_string_len(shard.shared.config.proto_max_bulk_len as u64);
    for (key, entry) in entries {
        let Some((payload, deadline)) = entry else {
            continue;
        };
        let restore = [
            Bytes::from_static(b"RESTORE"),
            key.clone(),
            Bytes::from(deadline.to_string()),
            payload.clone(),
            Bytes::from_static(b"ABSTTL"),
        ];
        let restored = crate::cmd::execute(&mut scratch, &restore, now);
        if restored.is_error() {
            return (restored, scratch, false);
        }
    }
    let keeps_destination = smove_keeps_destination(&mut scratch, name, args);
    let reply = crate::cmd::execute(&mut scratch, args, now);
    (reply, scratch, keeps_destination)
}

/// Whether SMOVE's destination already holds the member (in `scratch` before the command
/// runs): then only the source changes, and the destination is not written (Redis does not
/// touch it, so a WATCH on it sees no change).
fn smove_keeps_destination(scratch: &mut Db, name: &str, args: &[Bytes]) -> bool {
    let now = crate::shard::unix_time_ms();
    name == "smove"
        && matches!(
            scratch.get(&args[2], now),
            Some(Value::Set(set)) if set.contains(&args[3][..])
        )
}

/// The entry of `key` in `scratch` (its DUMP payload and deadline), `None` when missing.
fn scratch_entry(scratch: &mut Db, key: &Bytes) -> Result<Entry, Frame> {
    let now = crate::shard::unix_time_ms();
    let dump = crate::cmd::execute(scratch, &[Bytes::from_static(b"DUMP"), key.clone()], now);
    let payload = match dump {
        Frame::Bulk(payload) => payload,
        Frame::Null => return Ok(None),
        err => return Err(err),
    };
    let at = [Bytes::from_static(b"PEXPIRETIME"), key.clone()];
    let deadline = match crate::cmd::execute(scratch, &at, now) {
        Frame::Integer(at) if at > 0 => at,
        _ => 0,
    };
    Ok(Some((payload, deadline)))
}

/// Writes `entry` (or deletes the key when `None`) on `key`'s owner shard; the step's reply.
async fn write_entry(
    shard: &Rc<Shard>,
    txn: Option<TxnId>,
    db: usize,
    key: Bytes,
    entry: Entry,
) -> Frame {
    shard
        .run_on_in(
            shard.owner_of(&key),
            txn,
            Box::new(move |s: &Shard| match &entry {
                Some((payload, deadline)) => put_entry(s, db, &key, payload, *deadline, true),
                None => delete_key(s, db, &key),
            }),
        )
        .await
}

/// The composition of a command whose `keys` (sorted, distinct) live on several shards.
async fn compose(
    shard: &Rc<Shard>,
    txn: Option<TxnId>,
    db: usize,
    name: &str,
    args: &[Bytes],
    keys: Vec<Bytes>,
) -> Frame {
    let entries = match read_all(shard, txn, db, &keys).await {
        Ok(entries) => entries,
        Err(err) => return err,
    };
    let (reply, mut scratch, keeps_destination) = run_scratch(shard, &entries, name, args);
    if reply.is_error() {
        return reply;
    }
    let mut written = written_keys(name, args, &reply);
    if keeps_destination {
        written.retain(|key| *key != args[2]);
    }
    let mut done: Vec<Bytes> = Vec::new();
    for key in written {
        let entry = match scratch_entry(&mut scratch, &key) {
            Ok(entry) => entry,
            Err(err) => return err,
        };
        let step = write_entry(shard, txn, db, key.clone(), entry).await;
        if step.is_error() {
            // Undo the steps already made, newest first, with the values read at the start.
            for key in done.into_iter().rev() {
                let before = entries
                    .iter()
                    .find(|(k, _)| *k == key)
                    .and_then(|(_, e)| e.clone());
                let undone = write_entry(shard, txn, db, key.clone(), before).await;
                if undone.is_error() {
                    tracing::warn!(
                        "shard {}: could not undo a step of a refused {name}: {undone:?}",
                        shard.id
                    );
                }
            }
            return step;
        }
        done.push(key);
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Vec<Bytes> {
        text.split(' ')
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect()
    }

    fn flagged(name: &str, text: &str) -> Result<Vec<(String, Vec<&'static str>)>, Frame> {
        let keys = keys_with_flags(name, &line(text)).unwrap_or_else(|| Ok(Vec::new()))?;
        Ok(keys
            .into_iter()
            .map(|(k, f)| (String::from_utf8_lossy(&k).into_owned(), f.to_vec()))
            .collect())
    }

    #[test]
    fn getkeys_as_redis_7_0_15() {
        assert_eq!(
            flagged("lmove", "LMOVE k1 k2 left right"),
            Ok(vec![
                ("k1".into(), vec!["RW", "access", "delete"]),
                ("k2".into(), vec!["RW", "insert"]),
            ])
        );
        assert_eq!(
            flagged("bitop", "BITOP AND d a"),
            Ok(vec![
                ("d".into(), vec!["OW", "update"]),
                ("a".into(), vec!["RO", "access"]),
            ])
        );
        assert_eq!(flagged("lmpop", "LMPOP 3 a b left").map(|k| k.len()), Ok(3));
        let invalid = Err(Frame::error("ERR Invalid arguments specified for command"));
        assert_eq!(flagged("sintercard", "SINTERCARD 5 a"), invalid);
        assert_eq!(flagged("sintercard", "SINTERCARD 0 a"), invalid);
        assert!(keys_with_flags("get", &line("GET k")).is_none());
    }

    #[test]
    fn keys_and_written_keys() {
        let args = line("SMOVE src dst m");
        assert_eq!(keys_of("smove", &args), line("src dst"));
        assert_eq!(
            written_keys("smove", &args, &Frame::Integer(1)),
            line("dst src")
        );
        assert!(written_keys("smove", &args, &Frame::Integer(0)).is_empty());
        assert_eq!(
            keys_of("sintercard", &line("SINTERCARD 2 a b LIMIT 1")),
            line("a b")
        );
        assert!(keys_of("lmpop", &line("LMPOP x a LEFT")).is_empty());
        let popped = Frame::Array(vec![Frame::Bulk("b".into()), Frame::Array(Vec::new())]);
        assert_eq!(
            written_keys("lmpop", &line("LMPOP 2 a b LEFT"), &popped),
            line("b")
        );
        assert_eq!(keys_of("bitop", &line("BITOP OR d a b")), line("d a b"));
    }
}
