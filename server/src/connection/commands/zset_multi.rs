//! ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE ZDIFFSTORE ZINTERCARD ZRANGESTORE ZMPOP, whose
//! keys may live on different shards (the computation is `crate::cmd::zset_multi`).
//!
//! When every key has one owner shard the command runs there as one job, as any keyspace
//! command (and is logged as itself). Otherwise, inside one transaction over the owners'
//! gates ([`crate::txn`]), so no other client sees or runs between the steps:
//!
//! - each source is read on its owner shard as its DUMP payload (`cross_shard::read_entry`,
//!   read only) and decoded here;
//! - the result is computed here ([`crate::cmd::zset_multi::compute`]);
//! - a destination is written on its owner shard by `RESTORE dst 0 payload ABSTTL REPLACE`
//!   (or `DEL dst` for an empty result), logged as that command, so the append-only log
//!   replays it;
//! - ZMPOP runs `ZMPOP 1 key ...` on each key's owner in order until one pops (or errors):
//!   each such step is a plain keyspace command, logged as itself (and publishing its own
//!   `zpopmin`/`zpopmax` and `del` events, Redis's).
//!
//! The write steps run quietly; once a store succeeded, Redis's events (`new` when the
//! destination was created, then `zunionstore`/`zinterstore`/`zdiffstore`/`zrangestore`; or
//! `del` when an existing destination was deleted) are published with
//! [`notify::publish::composed`].

use std::rc::Rc;

use bytes::Bytes;

use super::cross_shard::{count_existing, delete_key, put_entry, read_entry};
use crate::cmd::zset_multi::{compute, keys_of, kind_of, sources_of, store_event, Kind, Outcome};
use crate::forward::TxnId;
use crate::keyspace::Value;
use crate::notify::{self, flags};
use crate::resp::Frame;
use crate::shard::Shard;
use crate::txn;

/// Whether `name` is a multi-key sorted set command served here.
pub fn serves(name: &str) -> bool {
    kind_of(name).is_some()
}

/// Runs multi-key sorted set command `name` (arity checked) with `args` on database `db`,
/// inside transaction `scope` when in EXEC.
pub async fn execute(
    shard: &Rc<Shard>,
    db: usize,
    scope: Option<TxnId>,
    name: &str,
    args: Vec<Bytes>,
) -> Frame {
    let Some(kind) = kind_of(name) else {
        return Frame::error(format!("ERR unknown command '{name}'"));
    };
    // With an argument error no key is read: run it anywhere (here) for Redis's reply.
    let keys = keys_of(kind, name, &args).unwrap_or_default();
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
    let txn_scope = txn::enter(shard, scope, owners).await;
    let txn = txn_scope.id();
    let reply = if kind == Kind::Mpop {
        mpop(shard, txn, db, &args, &keys).await
    } else {
        composed(shard, txn, db, kind, name, &args, &keys).await
    };
    txn_scope.leave().await;
    reply
}

/// ZMPOP over several shards: `ZMPOP 1 key <options>` on each key's owner in key order, until
/// one pops or errors (WRONGTYPE); a null array when every key is missing.
async fn mpop(
    shard: &Rc<Shard>,
    txn: Option<TxnId>,
    db: usize,
    args: &[Bytes],
    keys: &[Bytes],
) -> Frame {
    let options = &args[2 + keys.len()..];
    for key in keys {
        let mut step = vec![
            Bytes::from_static(b"ZMPOP"),
            Bytes::from_static(b"1"),
            key.clone(),
        ];
        step.extend_from_slice(options);
        let reply = shard
            .run_on_in(
                shard.owner_of(key),
                txn,
                Box::new(move |s: &Shard| s.execute_local(db, &step)),
            )
            .await;
        if reply != Frame::NullArray {
            return reply;
        }
    }
    Frame::NullArray
}

/// The set operations and ZRANGESTORE over several shards: read, compute, write.
async fn composed(
    shard: &Rc<Shard>,
    txn: Option<TxnId>,
    db: usize,
    kind: Kind,
    name: &str,
    args: &[Bytes],
    keys: &[Bytes],
) -> Frame {
    let mut values: Vec<Option<Value>> = Vec::new();
    for key in sources_of(kind, keys) {
        let source = key.clone();
        let entry = shard
            .run_on_in(
                shard.owner_of(key),
                txn,
                Box::new(move |s: &Shard| read_entry(s, db, &source)),
            )
            .await;
        match entry {
            Frame::Null => values.push(None),
            Frame::Array(parts) => match parts.first() {
                Some(Frame::Bulk(payload)) => match crate::rdb::restore(payload) {
                    Ok(value) => values.push(Some(value)),
                    Err(e) => return Frame::error(e.message()),
                },
                _ => return Frame::error("ERR internal error reading a source key"),
            },
            err => return err,
        }
    }
    let borrowed: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
    let outcome = match compute(kind, name, args, &borrowed) {
        Ok(outcome) => outcome,
        Err(e) => return e,
    };
    let dst = args[1].clone();
    let owner = shard.owner_of(&dst);
    match outcome {
        Outcome::Reply(frame) => frame,
        Outcome::Store(zset) if zset.is_empty() => {
            let deleted = shard
                .run_on_in(
                    owner,
                    txn,
                    Box::new(move |s: &Shard| delete_key(s, db, &dst)),
                )
                .await;
            match deleted {
                Frame::Integer(1) => {
                    notify::publish::composed(
                        shard,
                        &[(db, flags::GENERIC, "del", args[1].clone())],
                    );
                    Frame::Integer(0)
                }
                Frame::Integer(_) => Frame::Integer(0),
                err => err,
            }
        }
        Outcome::Store(zset) => {
            let n = zset.len() as i64;
            let payload = Bytes::from(crate::rdb::dump(&Value::ZSet(zset)));
            // Whether the destination existed (its `new` event), then the write.
            let put = shard
                .run_on_in(
                    owner,
                    txn,
                    Box::new(move |s: &Shard| {
                        let existed = count_existing(s, db, vec![dst.clone()]);
                        match put_entry(s, db, &dst, &payload, 0, true) {
                            Frame::Error(e) => Frame::Error(e),
                            _ => existed,
                        }
                    }),
                )
                .await;
            let dst = args[1].clone();
            let stored = (db, flags::ZSET, store_event(name), dst.clone());
            match put {
                Frame::Integer(0) => {
                    notify::publish::composed(shard, &[(db, flags::NEW, "new", dst), stored]);
                }
                Frame::Integer(_) => notify::publish::composed(shard, &[stored]),
                err => return err,
            }
            Frame::Integer(n)
        }
    }
}
