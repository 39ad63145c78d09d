//! SLOWLOG GET|LEN|RESET|HELP (Redis 7.0 `slowlog.c`) over every shard's
//! [`crate::slowlog::Slowlog`]: GET merges the shards' newest entries by id; GET and LEN show
//! at most `slowlog-max-len` entries over all shards (each shard keeps that many).

use bytes::Bytes;

use super::object::help;
use crate::cmd::reply::int_arg;
use crate::resp::Frame;
use crate::shard::Shard;
use crate::slowlog::visible_len;

const HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

/// Entries SLOWLOG GET returns without a count.
const DEFAULT_COUNT: usize = 10;

/// `SLOWLOG subcommand [...]`.
pub async fn slowlog(shard: &Shard, args: &[Bytes]) -> Frame {
    let sub = args[1].to_ascii_uppercase();
    match (sub.as_slice(), args.len()) {
        (b"HELP", 2) => help(HELP),
        (b"LEN", 2) => {
            let lens = shard
                .run_stats_on_all(|| Box::new(|s: &Shard| Frame::Integer(s.slowlog.len() as i64)))
                .await;
            let lens = lens.iter().map(|f| match f {
                Frame::Integer(n) => usize::try_from(*n).unwrap_or(0),
                _ => 0,
            });
            Frame::Integer(visible_len(lens, max_len(shard)) as i64)
        }
        (b"RESET", 2) => {
            shard
                .run_stats_on_all(|| {
                    Box::new(|s: &Shard| {
                        s.slowlog.reset();
                        Frame::ok()
                    })
                })
                .await;
            Frame::ok()
        }
        (b"GET", 2 | 3) => {
            let count = match args.get(2).map(|a| int_arg(a)) {
                None => DEFAULT_COUNT,
                Some(Ok(-1)) => usize::MAX,
                Some(Ok(n)) if n >= 0 => n as usize,
                // Redis 7.0 `getRangeLongFromObjectOrReply`: one message for a count below
                // -1 and for one that is not an integer.
                Some(_) => return Frame::error("ERR count should be greater than or equal to -1"),
            };
            get(shard, count.min(max_len(shard))).await
        }
        (b"HELP" | b"LEN" | b"RESET" | b"GET", _) => Frame::error(format!(
            "ERR wrong number of arguments for 'slowlog|{}' command",
            String::from_utf8_lossy(&args[1]).to_ascii_lowercase()
        )),
        _ => Frame::error(format!(
            "ERR unknown subcommand '{}'. Try SLOWLOG HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

/// `slowlog-max-len`: the most entries SLOWLOG shows over all shards, as Redis's one log.
fn max_len(shard: &Shard) -> usize {
    shard.runtime.borrow().slowlog_max_len
}

async fn get(shard: &Shard, count: usize) -> Frame {
    let per_shard = shard
        .run_stats_on_all(|| {
            Box::new(move |s: &Shard| {
                let mut entries = s.slowlog.newest(count);
                // Each entry travels as [id, frame] so the merge can order by id.
                Frame::Array(
                    entries
                        .drain(..)
                        .map(|e| Frame::Array(vec![Frame::Integer(e.id as i64), e.to_frame()]))
                        .collect(),
                )
            })
        })
        .await;
    let mut all: Vec<(i64, Frame)> = Vec::new();
    for reply in per_shard {
        let Frame::Array(entries) = reply else {
            continue;
        };
        for entry in entries {
            if let Frame::Array(mut pair) = entry {
                if let (Some(frame), Some(Frame::Integer(id))) = (pair.pop(), pair.pop()) {
                    all.push((id, frame));
                }
            }
        }
    }
    all.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    Frame::Array(all.into_iter().take(count).map(|(_, f)| f).collect())
}
