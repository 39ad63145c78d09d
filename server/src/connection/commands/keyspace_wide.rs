//! Commands over the whole keyspace, which every shard owns a slice of: KEYS, SCAN, DBSIZE,
//! FLUSHDB (on the session's database), FLUSHALL, SWAPDB. Each runs on every shard (or, for
//! SCAN, one shard per call) and the replies are merged here. Not atomic across shards: a
//! FLUSHALL racing writes on other connections may leave keys written on a shard after it was
//! flushed, and a SWAPDB is atomic on each shard but other connections may see one shard
//! swapped and another not yet.

use std::rc::Rc;

use bytes::Bytes;

use crate::cmd::fanout;
use crate::cmd::table::CommandSpec;
use crate::resp::Frame;
use crate::shard::Shard;

/// Executes an `AllShards` command on database `db` of every shard and merges the shards'
/// replies.
pub async fn all_shards(
    shard: &Rc<Shard>,
    db: usize,
    spec: &'static CommandSpec,
    args: Vec<Bytes>,
) -> Frame {
    if spec.name == "scan" {
        return scan(shard, db, args).await;
    }
    let replies = shard
        .run_on_all(|| {
            let args = args.clone();
            Box::new(move |s: &Shard| s.execute_local(db, &args))
        })
        .await;
    let parts = replies
        .into_iter()
        .map(|frame| (Vec::new(), frame))
        .collect();
    fanout::merge_replies(spec.name, 0, parts)
}

/// SCAN over all shards: one shard per call, the global cursor naming the shard (see
/// [`fanout::scan_route`]).
async fn scan(shard: &Rc<Shard>, db: usize, args: Vec<Bytes>) -> Frame {
    let (owner, sub_args) = match fanout::scan_route(&args, shard.nr_shards) {
        Ok(route) => route,
        Err(reply) => return reply,
    };
    let reply = shard
        .run_on(
            owner,
            Box::new(move |s: &Shard| s.execute_local(db, &sub_args)),
        )
        .await;
    fanout::scan_finish(reply, owner, shard.nr_shards)
}
