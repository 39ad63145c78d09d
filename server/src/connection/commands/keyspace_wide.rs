//! Commands over the whole keyspace, which every shard owns a slice of: KEYS, SCAN, DBSIZE,
//! FLUSHDB (on the session's database), FLUSHALL, SWAPDB, RANDOMKEY. Each runs on every shard
//! (or, for SCAN, one shard per call) and the replies are merged here. With several shards each
//! one is a transaction over every shard's gate ([`crate::txn`]), so it is atomic and isolated
//! as in Redis: no client sees one shard flushed or swapped and another not yet.

use std::rc::Rc;

use bytes::Bytes;

use crate::cmd::fanout;
use crate::cmd::table::CommandSpec;
use crate::forward::TxnId;
use crate::resp::Frame;
use crate::shard::Shard;
use crate::txn;

/// Executes an `AllShards` command on database `db` of every shard and merges the shards'
/// replies.
///
/// `scope`: the transaction the command runs in (EXEC), if any; otherwise, with several
/// shards, the command takes every shard's gate for itself.
pub async fn all_shards(
    shard: &Rc<Shard>,
    db: usize,
    scope: Option<TxnId>,
    spec: &'static CommandSpec,
    args: Vec<Bytes>,
) -> Frame {
    match spec.name {
        "scan" => return scan(shard, db, scope, args).await,
        "randomkey" => return randomkey(shard, db, scope).await,
        _ => {}
    }
    let txn_scope = txn::enter(shard, scope, 0..shard.nr_shards).await;
    let replies = shard
        .run_on_all_in(txn_scope.id(), || {
            let args = args.clone();
            Box::new(move |s: &Shard| s.execute_local(db, &args))
        })
        .await;
    txn_scope.leave().await;
    let parts = replies
        .into_iter()
        .map(|frame| (Vec::new(), frame))
        .collect();
    fanout::merge_replies(spec.name, 0, parts)
}

/// SCAN over all shards: the shards in turn, from the one the global cursor names, while
/// fewer than COUNT keys were examined (see [`fanout::ScanWalk`]).
async fn scan(shard: &Rc<Shard>, db: usize, scope: Option<TxnId>, args: Vec<Bytes>) -> Frame {
    let (mut walk, mut step) = match fanout::ScanWalk::start(&args, shard.nr_shards) {
        Ok(started) => started,
        Err(reply) => return reply,
    };
    loop {
        match step {
            fanout::ScanStep::Reply(reply) => return reply,
            fanout::ScanStep::Ask(owner, sub_args) => {
                let reply = shard
                    .run_on_in(
                        owner,
                        scope,
                        Box::new(move |s: &Shard| s.execute_local(db, &sub_args)),
                    )
                    .await;
                step = walk.step(reply);
            }
        }
    }
}

/// RANDOMKEY over all shards: every shard draws one of its keys and counts its keys; one of
/// the draws is picked with odds proportional to its shard's key count, so every key is about
/// as likely. Nil when every shard is empty.
async fn randomkey(shard: &Rc<Shard>, db: usize, scope: Option<TxnId>) -> Frame {
    let draws = shard
        .run_on_all_in(scope, || {
            Box::new(move |s: &Shard| {
                let count = s.execute_local(db, &[Bytes::from_static(b"DBSIZE")]);
                let key = s.execute_local(db, &[Bytes::from_static(b"RANDOMKEY")]);
                Frame::Array(vec![count, key])
            })
        })
        .await;
    let mut candidates = Vec::with_capacity(draws.len());
    for draw in draws {
        match draw {
            Frame::Array(parts) => {
                if let [Frame::Integer(count), Frame::Bulk(key)] = parts.as_slice() {
                    candidates.push((u64::try_from(*count).unwrap_or(0).max(1), key.clone()));
                }
            }
            err @ Frame::Error(_) => return err,
            _ => {}
        }
    }
    let total: u64 = candidates.iter().map(|(count, _)| count).sum();
    if total == 0 {
        return Frame::Null;
    }
    let mut pick = rand::random::<u64>() % total;
    for (count, key) in candidates {
        if pick < count {
            return Frame::Bulk(key);
        }
        pick -= count;
    }
    Frame::Null
}
