//! Set algebra (SINTER SUNION SDIFF, their STORE forms, SINTERCARD, SMOVE), list moves
//! (LMOVE RPOPLPUSH LMPOP), BITOP and the multi-key sorted set commands (ZUNION ZINTER ZDIFF,
//! their STORE forms, ZINTERCARD, ZRANGESTORE, ZMPOP), whose keys may live on different
//! shards.
//!
//! When every key has one owner shard the command runs there as one job, as any keyspace
//! command, and is logged as itself. Otherwise, inside one transaction over the owner
//! shards' gates ([`crate::txn`], so no other client sees or runs between the steps):
//!
//! 1. each key's value is read on its owner shard as its DUMP payload and deadline
//!    ([`cross_shard::read_entry`], one hop per owner shard, read only);
//! 2. the values are restored into a scratch keyspace on this connection, and the very
//!    command runs there (`crate::cmd::execute`): replies, errors (WRONGTYPE, syntax, …) and
//!    results are those of the one-shard command, which Redis 7.0's `t_set.c`, `t_list.c`,
//!    `t_zset.c` and `bitops.c` define;
//! 3. each key the command wrote is written back on its owner shard as a plain keyspace
//!    command, logged there as such: `RESTORE key deadline payload ABSTTL REPLACE` with the
//!    scratch value's DUMP payload, or `DEL key` when the command deleted it
//!    ([`cross_shard::put_entry`], [`cross_shard::delete_key`]), so the append-only logs
//!    replay it exactly.
//!
//! Keyspace events: the scratch keyspace reports events with the database's classes, so the
//! command reports there exactly the one-shard command's events (Redis's `new`, `sunionstore`,
//! `lpush`/`rpop`, `del`, `keymiss` of a missing source, …; the scratch restores' own events
//! are dropped). The read steps drop their `keymiss` (the command reports its own), the write
//! steps run quietly ([`crate::shard::Shard::execute_step`]), and once every write step
//! succeeded the command's events are published with one [`notify::publish::composed`] call.
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

use super::composed_keys::{keys_of, written_keys};
use super::cross_shard::{delete_key, entry_parts, put_entry, read_entry_dropping};
use crate::forward::TxnId;
use crate::keyspace::{Db, KeyEvent, Value};
use crate::notify::{self, flags};
use crate::resp::Frame;
use crate::shard::Shard;
use crate::txn;

/// Whether `name` (lowercase) is served here.
pub fn serves(name: &str) -> bool {
    crate::cmd::zset_multi::kind_of(name).is_some()
        || matches!(
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
                    let read = |k| read_entry_dropping(s, db, k, flags::KEY_MISS);
                    Frame::Array(asked.iter().map(read).collect())
                }),
            )
            .await;
        let Frame::Array(replies) = reply else {
            return Err(reply);
        };
        for (key, reply) in owned.into_iter().zip(replies) {
            entries.push((key, entry_parts(reply)?));
        }
    }
    Ok(entries)
}

/// What a command did on the scratch keyspace: its reply, the keyspace, the keyspace events
/// the command reported there (those of the one-shard command: published once every write
/// step succeeded), and whether an SMOVE left its destination as it was
/// ([`smove_keeps_destination`]).
struct Scratch {
    reply: Frame,
    db: Db,
    events: Vec<KeyEvent>,
    keeps_destination: bool,
}

/// Runs `args` (command `name`) on a scratch keyspace of database `db`'s notification
/// classes holding `entries`.
fn run_scratch(
    shard: &Shard,
    db: usize,
    entries: &[(Bytes, Entry)],
    name: &str,
    args: &[Bytes],
) -> Scratch {
    let now = crate::shard::unix_time_ms();
    let mut scratch = Db::new();
    scratch.set_max_string_len(shard.runtime.borrow().proto_max_bulk_len as u64);
    let classes = shard.dbs.borrow().get(db).map_or(0, Db::notify_classes);
    scratch.set_notify_flags(classes);
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
            return Scratch {
                reply: restored,
                db: scratch,
                events: Vec::new(),
                keeps_destination: false,
            };
        }
    }
    let keeps_destination = smove_keeps_destination(&mut scratch, name, args);
    // The restores' own events (`new`, `restore`) are not the command's.
    scratch.discard_events();
    let reply = crate::cmd::execute(&mut scratch, args, now);
    Scratch {
        reply,
        events: scratch.take_events(),
        db: scratch,
        keeps_destination,
    }
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
    let Scratch {
        reply,
        db: mut scratch,
        events,
        keeps_destination,
    } = run_scratch(shard, db, &entries, name, args);
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
    let events: Vec<_> = events
        .into_iter()
        .map(|e| (db, e.class, e.event, e.key))
        .collect();
    notify::publish::composed(shard, &events);
    reply
}
