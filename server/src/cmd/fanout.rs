//! Splitting multi-key / all-shard commands across shards and merging the
//! per-shard replies into the single reply Redis would give.
//!
//! Flow for the runtime: `split_keys` (MultiKey) or "send the command as is
//! to every shard" (AllShards, except SCAN), run [`super::execute`] on each
//! owner shard, then [`merge_replies`]. SCAN visits one shard per call: use
//! [`scan_route`] and [`scan_finish`].

use bytes::Bytes;

use super::reply::wrong_arity;
use crate::keyspace::db::SCAN_CURSOR_BITS;
use crate::keyspace::slot::owner_shard;
use crate::resp::num::parse_cursor;
use crate::resp::Frame;

/// One shard's share of a multi-key command: `(shard, sub-command args
/// including the name, positions of its keys among the original keys)`.
pub type ShardPart = (usize, Vec<Bytes>, Vec<usize>);

/// Splits `args` (`args[0]` = name, keys every `step` arguments from
/// `args[1]`, each key followed by `step - 1` companion arguments) by owner
/// shard. Parts come in ascending shard order; positions are 0-based key
/// indexes (MGET `k0 k1 k2` → positions 0, 1, 2). An argument count that does
/// not fit the step (or no key at all) yields the Redis arity error for the
/// command (`ERR wrong number of arguments for 'mset' command`).
pub fn split_keys(args: &[Bytes], step: usize, nr_shards: usize) -> Result<Vec<ShardPart>, Frame> {
    let name = args
        .first()
        .map(|n| String::from_utf8_lossy(n).to_ascii_lowercase())
        .unwrap_or_default();
    if step == 0 || args.len() < 2 || !(args.len() - 1).is_multiple_of(step) {
        return Err(wrong_arity(&name));
    }
    let mut per_shard: Vec<Option<(Vec<Bytes>, Vec<usize>)>> = vec![None; nr_shards.max(1)];
    for (pos, group) in args[1..].chunks_exact(step).enumerate() {
        let shard = owner_shard(&group[0], nr_shards.max(1));
        let (sub, positions) =
            per_shard[shard].get_or_insert_with(|| (vec![args[0].clone()], Vec::new()));
        sub.extend(group.iter().cloned());
        positions.push(pos);
    }
    Ok(per_shard
        .into_iter()
        .enumerate()
        .filter_map(|(shard, part)| part.map(|(sub, positions)| (shard, sub, positions)))
        .collect())
}

/// The first error among `replies`, if any.
fn first_error(replies: &[Frame]) -> Option<Frame> {
    replies.iter().find(|r| r.is_error()).cloned()
}

/// Sum of integer replies (DEL, UNLINK, EXISTS, DBSIZE); the first error
/// wins.
pub fn merge_sum(replies: Vec<Frame>) -> Frame {
    if let Some(e) = first_error(&replies) {
        return e;
    }
    let sum = replies
        .iter()
        .map(|r| if let Frame::Integer(n) = r { *n } else { 0 })
        .sum();
    Frame::Integer(sum)
}

/// `+OK` if every part succeeded (MSET, FLUSHDB, FLUSHALL, SWAPDB); else the first
/// error.
pub fn merge_ok(replies: Vec<Frame>) -> Frame {
    first_error(&replies).unwrap_or_else(Frame::ok)
}

/// Concatenation of array replies (KEYS); the first error wins.
pub fn merge_concat(replies: Vec<Frame>) -> Frame {
    if let Some(e) = first_error(&replies) {
        return e;
    }
    let mut out = Vec::new();
    for r in replies {
        if let Frame::Array(items) = r {
            out.extend(items);
        }
    }
    Frame::Array(out)
}

/// Reassembles MGET: `parts` are `(positions, per-shard array reply)`;
/// the result has `nkeys` elements in the original key order (Null where a
/// part is missing). The first error wins.
pub fn merge_mget(nkeys: usize, parts: Vec<(Vec<usize>, Frame)>) -> Frame {
    let mut out = vec![Frame::Null; nkeys];
    for (positions, reply) in parts {
        match reply {
            Frame::Array(items) => {
                for (pos, item) in positions.into_iter().zip(items) {
                    if let Some(slot) = out.get_mut(pos) {
                        *slot = item;
                    }
                }
            }
            e @ Frame::Error(_) => return e,
            _ => {}
        }
    }
    Frame::Array(out)
}

/// Merges per-shard replies of a MultiKey or AllShards command (except
/// SCAN) by canonical name: `nkeys` is the number of keys of the original
/// command (used by MGET only); `parts` pair each reply with its positions
/// from [`split_keys`] (empty for AllShards).
pub fn merge_replies(name: &str, nkeys: usize, parts: Vec<(Vec<usize>, Frame)>) -> Frame {
    match name {
        "mget" => merge_mget(nkeys, parts),
        "mset" | "flushdb" | "flushall" | "swapdb" => {
            merge_ok(parts.into_iter().map(|(_, r)| r).collect())
        }
        "keys" => merge_concat(parts.into_iter().map(|(_, r)| r).collect()),
        _ => merge_sum(parts.into_iter().map(|(_, r)| r).collect()),
    }
}

const LOCAL_MASK: u64 = (1 << SCAN_CURSOR_BITS) - 1;

/// Routes a cluster-wide SCAN call. The global cursor is
/// `shard << 48 | local cursor` (so at most 65536 shards); a scan walks shard
/// 0, 1, ... in turn. Returns the shard to ask and the sub-command with the
/// local cursor, or `Err(reply)` to send as is: `ERR invalid cursor`, an
/// arity error, or the finished-scan reply `["0", []]` for a cursor naming a
/// shard that does not exist.
pub fn scan_route(args: &[Bytes], nr_shards: usize) -> Result<(usize, Vec<Bytes>), Frame> {
    if args.len() < 2 {
        return Err(wrong_arity("scan"));
    }
    let Some(cursor) = parse_cursor(&args[1]) else {
        return Err(Frame::error("ERR invalid cursor"));
    };
    let shard = usize::try_from(cursor >> SCAN_CURSOR_BITS).unwrap_or(usize::MAX);
    if shard >= nr_shards.max(1) {
        return Err(Frame::Array(vec![
            Frame::bulk(b"0"),
            Frame::Array(Vec::new()),
        ]));
    }
    let mut sub = args.to_vec();
    sub[1] = Bytes::from((cursor & LOCAL_MASK).to_string());
    Ok((shard, sub))
}

/// Rewrites the local cursor in `shard`'s SCAN reply into the global cursor
/// (0 only after the last shard is done). Errors pass through.
pub fn scan_finish(reply: Frame, shard: usize, nr_shards: usize) -> Frame {
    let Frame::Array(mut items) = reply else {
        return reply;
    };
    let local = match items.first() {
        Some(Frame::Bulk(c)) => parse_cursor(c).unwrap_or(0),
        _ => return Frame::Array(items),
    };
    let shard = shard as u64;
    let global = if local != 0 {
        shard << SCAN_CURSOR_BITS | local
    } else if shard + 1 < nr_shards as u64 {
        (shard + 1) << SCAN_CURSOR_BITS
    } else {
        0
    };
    items[0] = Frame::Bulk(Bytes::from(global.to_string()));
    Frame::Array(items)
}

#[cfg(test)]
#[path = "fanout_tests.rs"]
mod tests;
