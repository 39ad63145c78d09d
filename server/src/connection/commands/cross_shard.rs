//! RENAME, RENAMENX, COPY, MSETNX and LCS, whose keys may live on different shards.
//!
//! LCS reads its two strings on their owner shards and is computed by the connection. For
//! the others, when every key has one owner shard the command runs there as one job, as any
//! keyspace command (and is logged as itself). Otherwise it is composed of owner-shard steps,
//! each a plain synchronous function run on the owner shard by one hop ([`Shard::run_on`])
//! and logged there as the keyspace commands it runs:
//!
//! - [`read_entry`]: the source's DUMP payload and deadline (read only);
//! - [`put_entry`]: `RESTORE key deadline payload [REPLACE] ABSTTL` on the destination,
//!   logged as that RESTORE (the deadline absolute, so replay is exact);
//! - [`delete_key`]: `DEL key`, logged as such;
//! - [`count_existing`] / [`set_pairs`]: EXISTS / MSET of one shard's keys;
//! - [`read_string`]: GET, for LCS, which then computes here.
//!
//! Steps that write run quietly ([`Shard::execute_step`]): the composition publishes the
//! command's keyspace events itself, as Redis names and orders them (`rename_from`,
//! `rename_to`; `copy_to`; `set` per key), once every step succeeded.
//!
//! A move writes the destination before it deletes the source, so a step refused midway
//! (`MISCONF` while a log cannot be written) leaves the value in both places, never in
//! neither. The steps run inside one transaction over the owner shards' gates
//! ([`crate::txn`]): no other client sees the state between two steps.

use std::rc::Rc;

use bytes::Bytes;

use crate::cmd::dump::BUSYKEY;
use crate::cmd::fanout::split_keys;
use crate::cmd::lcs::NOT_STRINGS;
use crate::cmd::rename::{copy_options, NO_SUCH_KEY};
use crate::cmd::reply::WRONGTYPE;
use crate::forward::TxnId;
use crate::notify::{self, flags};
use crate::resp::Frame;
use crate::shard::Shard;
use crate::txn;

/// Runs `name` (`rename`, `renamenx`, `copy`, `msetnx` or `lcs`; arity checked) with `args` on
/// database `db`.
pub async fn execute(
    shard: &Rc<Shard>,
    db: usize,
    scope: Option<TxnId>,
    name: &str,
    args: Vec<Bytes>,
) -> Frame {
    let owners: Vec<usize> = match name {
        "msetnx" => args[1..]
            .iter()
            .step_by(2)
            .map(|k| shard.owner_of(k))
            .collect(),
        _ => vec![shard.owner_of(&args[1]), shard.owner_of(&args[2])],
    };
    let one_owner = owners.iter().all(|&o| o == owners[0]);
    if one_owner && name != "lcs" {
        return shard
            .run_on_in(
                owners[0],
                scope,
                Box::new(move |s: &Shard| s.execute_local(db, &args)),
            )
            .await;
    }
    // Several shards: the steps run as one transaction over their gates (unless the command
    // already runs inside one, in EXEC), so no other client sees or runs between them.
    let txn_scope = txn::enter(shard, scope, owners).await;
    let txn = txn_scope.id();
    let reply = match name {
        "lcs" => lcs(shard, txn, db, args).await,
        "rename" => rename(shard, txn, db, args, false).await,
        "renamenx" => rename(shard, txn, db, args, true).await,
        "copy" => copy(shard, txn, db, args).await,
        _ => msetnx(shard, txn, db, args).await,
    };
    txn_scope.leave().await;
    reply
}

/// RENAME / RENAMENX with the two keys on different shards: read the source, put it on the
/// destination (without REPLACE for RENAMENX: BUSYKEY means "exists"), delete the source.
async fn rename(
    shard: &Rc<Shard>,
    txn: Option<TxnId>,
    db: usize,
    args: Vec<Bytes>,
    nx: bool,
) -> Frame {
    let (src, dst) = (args[1].clone(), args[2].clone());
    let (from, to) = (shard.owner_of(&src), shard.owner_of(&dst));
    let entry = {
        let src = src.clone();
        shard
            .run_on_in(
                from,
                txn,
                Box::new(move |s: &Shard| read_entry(s, db, &src)),
            )
            .await
    };
    let (payload, deadline) = match entry_parts(entry) {
        Ok(Some(entry)) => entry,
        Ok(None) => return Frame::error(NO_SUCH_KEY),
        Err(err) => return err,
    };
    let put = shard
        .run_on_in(
            to,
            txn,
            Box::new(move |s: &Shard| put_entry(s, db, &dst, &payload, deadline, !nx)),
        )
        .await;
    match put {
        Frame::Error(message) if nx && message == BUSYKEY => return Frame::Integer(0),
        Frame::Error(_) => return put,
        _ => {}
    }
    let deleted = shard
        .run_on_in(
            from,
            txn,
            Box::new(move |s: &Shard| delete_key(s, db, &src)),
        )
        .await;
    if deleted.is_error() {
        return deleted;
    }
    notify::publish::composed(
        shard,
        &[
            (db, flags::NEW, "new", args[2].clone()),
            (db, flags::GENERIC, "rename_from", args[1].clone()),
            (db, flags::GENERIC, "rename_to", args[2].clone()),
        ],
    );
    if nx {
        Frame::Integer(1)
    } else {
        Frame::ok()
    }
}

/// COPY with the two keys on different shards: read the source, put it on the destination
/// (in the `DB` option's database).
async fn copy(shard: &Rc<Shard>, txn: Option<TxnId>, db: usize, args: Vec<Bytes>) -> Frame {
    let options = match copy_options(&args, db, shard.shared.config.databases) {
        Ok(options) => options,
        Err(err) => return err,
    };
    let (src, dst) = (args[1].clone(), args[2].clone());
    let entry = shard
        .run_on_in(
            shard.owner_of(&src),
            txn,
            Box::new(move |s: &Shard| read_entry(s, db, &src)),
        )
        .await;
    let (payload, deadline) = match entry_parts(entry) {
        Ok(Some(entry)) => entry,
        Ok(None) => return Frame::Integer(0),
        Err(err) => return err,
    };
    let target = options.db;
    let key = dst.clone();
    let put = shard
        .run_on_in(
            shard.owner_of(&dst),
            txn,
            Box::new(move |s: &Shard| {
                put_entry(s, target, &dst, &payload, deadline, options.replace)
            }),
        )
        .await;
    match put {
        Frame::Error(message) if message == BUSYKEY => Frame::Integer(0),
        Frame::Error(_) => put,
        _ => {
            notify::publish::composed(
                shard,
                &[
                    (target, flags::NEW, "new", key.clone()),
                    (target, flags::GENERIC, "copy_to", key),
                ],
            );
            Frame::Integer(1)
        }
    }
}

/// MSETNX with keys on several shards: count the existing keys on every owner shard, then,
/// when there is none, MSET each shard's pairs.
async fn msetnx(shard: &Rc<Shard>, txn: Option<TxnId>, db: usize, args: Vec<Bytes>) -> Frame {
    let parts = match split_keys(&args, 2, shard.nr_shards) {
        Ok(parts) => parts,
        Err(err) => return err,
    };
    for (owner, sub_args, _) in &parts {
        let keys: Vec<Bytes> = sub_args[1..].iter().step_by(2).cloned().collect();
        let existing = shard
            .run_on_in(
                *owner,
                txn,
                Box::new(move |s: &Shard| count_existing(s, db, keys)),
            )
            .await;
        match existing {
            Frame::Integer(0) => {}
            Frame::Integer(_) => return Frame::Integer(0),
            err => return err,
        }
    }
    for (owner, sub_args, _) in parts {
        let pairs = sub_args[1..].to_vec();
        let set = shard
            .run_on_in(
                owner,
                txn,
                Box::new(move |s: &Shard| set_pairs(s, db, pairs)),
            )
            .await;
        if set.is_error() {
            return set;
        }
    }
    // Redis's `msetGenericCommand`: per pair, in order, `new` (first time only) and `set`.
    let mut events = Vec::with_capacity(args.len());
    let mut seen = std::collections::HashSet::new();
    for key in args[1..].iter().step_by(2) {
        if seen.insert(key.clone()) {
            events.push((db, flags::NEW, "new", key.clone()));
        }
        events.push((db, flags::STRING, "set", key.clone()));
    }
    notify::publish::composed(shard, &events);
    Frame::Integer(1)
}

/// LCS: read both strings (in one job when they share an owner shard), compute here, with
/// `--proto-max-bulk-len` bounding the table as Redis's `proto-max-bulk-len` does.
async fn lcs(shard: &Rc<Shard>, txn: Option<TxnId>, db: usize, args: Vec<Bytes>) -> Frame {
    let (a, b) = (args[1].clone(), args[2].clone());
    let (owner_a, owner_b) = (shard.owner_of(&a), shard.owner_of(&b));
    let replies = if owner_a == owner_b {
        let both = shard
            .run_on_in(
                owner_a,
                txn,
                Box::new(move |s: &Shard| {
                    Frame::Array(vec![read_string(s, db, &a), read_string(s, db, &b)])
                }),
            )
            .await;
        match both {
            Frame::Array(replies) => replies,
            other => return other,
        }
    } else {
        let first = shard
            .run_on_in(
                owner_a,
                txn,
                Box::new(move |s: &Shard| read_string(s, db, &a)),
            )
            .await;
        let second = shard
            .run_on_in(
                owner_b,
                txn,
                Box::new(move |s: &Shard| read_string(s, db, &b)),
            )
            .await;
        vec![first, second]
    };
    let mut values = Vec::with_capacity(2);
    for reply in replies {
        match reply {
            Frame::Bulk(value) => values.push(value),
            Frame::Null => values.push(Bytes::new()),
            Frame::Error(message) if message == WRONGTYPE => return Frame::error(NOT_STRINGS),
            other => return other,
        }
    }
    let [a, b] = values.as_slice() else {
        return Frame::error("ERR internal error reading the LCS keys");
    };
    let limit = shard.runtime.borrow().proto_max_bulk_len as u64;
    crate::cmd::lcs::compute(a, b, &args[3..], limit)
}

/// Owner-shard step: GET `key` in database `db` (nil, the string, or WRONGTYPE).
pub fn read_string(s: &Shard, db: usize, key: &Bytes) -> Frame {
    s.execute_local(db, &[Bytes::from_static(b"GET"), key.clone()])
}

/// The payload and deadline in a [`read_entry`] reply; `Ok(None)` for a missing key, `Err`
/// for an error reply.
pub fn entry_parts(reply: Frame) -> Result<Option<(Bytes, i64)>, Frame> {
    match reply {
        Frame::Array(parts) => match parts.as_slice() {
            [Frame::Bulk(payload), Frame::Integer(deadline)] => {
                Ok(Some((payload.clone(), *deadline)))
            }
            _ => Err(Frame::error("ERR internal error reading the source key")),
        },
        Frame::Null => Ok(None),
        err => Err(err),
    }
}

/// Owner-shard step: `[DUMP payload, deadline in unix ms or 0]` of `key` in database `db`,
/// or nil when the key is missing.
pub fn read_entry(s: &Shard, db: usize, key: &Bytes) -> Frame {
    read_entry_dropping(s, db, key, 0)
}

/// As [`read_entry`], dropping the read's keyspace events of the classes `classes` (a
/// composition that reports the command's own `keymiss` events drops the reads').
pub fn read_entry_dropping(s: &Shard, db: usize, key: &Bytes, classes: u16) -> Frame {
    let payload = s.execute_dropping(classes, db, &[Bytes::from_static(b"DUMP"), key.clone()]);
    if !matches!(payload, Frame::Bulk(_)) {
        return payload;
    }
    let at = [Bytes::from_static(b"PEXPIRETIME"), key.clone()];
    let deadline = match s.execute_dropping(classes, db, &at) {
        Frame::Integer(at) if at > 0 => at,
        _ => 0,
    };
    Frame::Array(vec![payload, Frame::Integer(deadline)])
}

/// Owner-shard step: stores `payload` under `key` in database `db` with the absolute
/// `deadline` (unix ms, 0 = none), replacing an existing key when `replace`; the RESTORE
/// reply (`BUSYKEY` when the key exists and not `replace`).
pub fn put_entry(
    s: &Shard,
    db: usize,
    key: &Bytes,
    payload: &Bytes,
    deadline: i64,
    replace: bool,
) -> Frame {
    let mut args = vec![
        Bytes::from_static(b"RESTORE"),
        key.clone(),
        Bytes::from(deadline.to_string()),
        payload.clone(),
        Bytes::from_static(b"ABSTTL"),
    ];
    if replace {
        args.push(Bytes::from_static(b"REPLACE"));
    }
    s.execute_step(db, &args)
}

/// Owner-shard step: deletes `key` from database `db`; the DEL reply.
pub fn delete_key(s: &Shard, db: usize, key: &Bytes) -> Frame {
    s.execute_step(db, &[Bytes::from_static(b"DEL"), key.clone()])
}

/// Owner-shard step: how many of `keys` exist in database `db` (EXISTS).
pub fn count_existing(s: &Shard, db: usize, keys: Vec<Bytes>) -> Frame {
    let mut args = Vec::with_capacity(keys.len() + 1);
    args.push(Bytes::from_static(b"EXISTS"));
    args.extend(keys);
    // MSETNX looks its keys up for writing: no `keymiss` (an `expired` still goes out).
    s.execute_dropping(flags::KEY_MISS, db, &args)
}

/// Owner-shard step: MSET of `pairs` (key, value, key, value, …) in database `db`.
pub fn set_pairs(s: &Shard, db: usize, pairs: Vec<Bytes>) -> Frame {
    let mut args = Vec::with_capacity(pairs.len() + 1);
    args.push(Bytes::from_static(b"MSET"));
    args.extend(pairs);
    s.execute_step(db, &args)
}
