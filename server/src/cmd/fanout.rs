//! Splitting multi-key / all-shard commands across shards and merging the
//! per-shard replies into the single reply Redis would give.
//!
//! Flow for the runtime: `split_keys` (MultiKey) or "send the command as is
//! to every shard" (AllShards, except SCAN), run [`super::execute`] on each
//! owner shard, then [`merge_replies`]. SCAN walks the shards in turn: use
//! [`ScanWalk`].

use bytes::Bytes;

use super::coll_scan::scan_options;
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

/// One cluster-wide SCAN call, walking the shards in turn.
///
/// The global cursor is `shard << 48 | local cursor` (so at most 65536 shards): a scan walks
/// shard 0, 1, ... in turn. One call goes on to the next shard while the shards it asked
/// have *examined* fewer than COUNT keys in all (keys visited before the MATCH / TYPE filters,
/// as Redis 7.0's `scanGenericCommand` counts them) and the current shard is done; the next
/// shard is asked for the COUNT left. So a database smaller than COUNT is one call ending with
/// cursor 0, whatever the filters, and a call examines about COUNT keys, as in Redis.
///
/// Each shard's step is the shard-local `SCAN local-cursor [options] COUNT left`, whose reply
/// is `[local next cursor, [keys], examined]` (see [`super::keys::scan`]).
#[derive(Debug)]
pub struct ScanWalk {
    /// The caller's options (after the cursor), validated.
    options: Vec<Bytes>,
    /// The shard asked last.
    shard: usize,
    nr_shards: usize,
    /// COUNT of the call, at least 1.
    count: usize,
    /// Keys examined so far by this call.
    examined: usize,
    /// Keys returned so far by this call.
    keys: Vec<Frame>,
}

/// What a [`ScanWalk`] does next.
#[derive(Debug, PartialEq)]
pub enum ScanStep {
    /// Run the shard-local sub-command (args, name included) on the shard.
    Ask(usize, Vec<Bytes>),
    /// The call's reply to send.
    Reply(Frame),
}

impl ScanWalk {
    /// Starts a SCAN call from the client's `args` (name included) on `nr_shards` shards.
    /// Checks, in Redis's order: the arity, the cursor (`ERR invalid cursor`), then the
    /// options (`ERR syntax error`, or `ERR value is not an integer or out of range` for a
    /// non-integer COUNT). A cursor naming a shard that does not exist is the finished-scan
    /// reply `["0", []]`. Errors and that reply come as `Err(reply)`; otherwise the walk and
    /// its first step.
    pub fn start(args: &[Bytes], nr_shards: usize) -> Result<(Self, ScanStep), Frame> {
        if args.len() < 2 {
            return Err(wrong_arity("scan"));
        }
        let cursor = parse_cursor(&args[1]).ok_or_else(|| Frame::error("ERR invalid cursor"))?;
        let count = scan_options(&args[2..], true)?.count;
        let nr_shards = nr_shards.max(1);
        let shard = usize::try_from(cursor >> SCAN_CURSOR_BITS).unwrap_or(usize::MAX);
        if shard >= nr_shards {
            return Err(scan_reply(0, Vec::new()));
        }
        let walk = Self {
            options: args[2..].to_vec(),
            shard,
            nr_shards,
            count,
            examined: 0,
            keys: Vec::new(),
        };
        let step = walk.ask(cursor & LOCAL_MASK);
        Ok((walk, step))
    }

    /// The sub-command asking the current shard for the COUNT left from `local` on.
    fn ask(&self, local: u64) -> ScanStep {
        let mut sub = Vec::with_capacity(self.options.len() + 4);
        sub.push(Bytes::from_static(b"SCAN"));
        sub.push(Bytes::from(local.to_string()));
        sub.extend(self.options.iter().cloned());
        // A repeated option: the last one counts (Redis too).
        sub.push(Bytes::from_static(b"COUNT"));
        let left = self.count.saturating_sub(self.examined).max(1);
        sub.push(Bytes::from(left.to_string()));
        ScanStep::Ask(self.shard, sub)
    }

    /// Takes the current shard's reply to the step it was asked and says what comes next.
    /// An error reply ends the call with that error.
    pub fn step(&mut self, reply: Frame) -> ScanStep {
        let Frame::Array(items) = reply else {
            return ScanStep::Reply(reply);
        };
        let mut items = items.into_iter();
        let (Some(Frame::Bulk(next)), Some(Frame::Array(keys)), Some(Frame::Integer(examined))) =
            (items.next(), items.next(), items.next())
        else {
            return ScanStep::Reply(Frame::error("ERR internal error: bad SCAN step reply"));
        };
        self.keys.extend(keys);
        self.examined = self
            .examined
            .saturating_add(usize::try_from(examined).unwrap_or(0));
        let local = parse_cursor(&next).unwrap_or(0);
        let shard = self.shard as u64;
        if local != 0 {
            return self.reply(shard << SCAN_CURSOR_BITS | local);
        }
        if self.shard + 1 >= self.nr_shards {
            return self.reply(0);
        }
        self.shard += 1;
        if self.examined >= self.count {
            return self.reply((shard + 1) << SCAN_CURSOR_BITS);
        }
        self.ask(0)
    }

    fn reply(&mut self, cursor: u64) -> ScanStep {
        ScanStep::Reply(scan_reply(cursor, std::mem::take(&mut self.keys)))
    }
}

/// SCAN's reply `[cursor as bulk, [keys]]`.
fn scan_reply(cursor: u64, keys: Vec<Frame>) -> Frame {
    Frame::Array(vec![
        Frame::Bulk(Bytes::from(cursor.to_string())),
        Frame::Array(keys),
    ])
}

#[cfg(test)]
#[path = "fanout_tests.rs"]
mod tests;
