//! OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT|HELP and MEMORY USAGE|DOCTOR|MALLOC-STATS|PURGE|HELP
//! (Redis 7.0 `object.c`): answered by the key's owner shard, without expiring the key or
//! touching its access clock (Redis's `LOOKUP_NOTOUCH`). Encodings, clocks and the size
//! estimate are those of [`crate::keyspace::memory`].

use bytes::Bytes;

use crate::cmd::reply::int_arg;
use crate::keyspace::memory::{self, DEFAULT_SAMPLES};
use crate::resp::Frame;
use crate::shard::{unix_time_ms, Shard};

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

const MEMORY_HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

const NOT_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not \
                       tracked. Please note that when switching between policies at runtime \
                       LRU and LFU data will take some time to adjust.";
const IS_LFU: &str = "ERR An LFU maxmemory policy is selected, idle time not tracked. Please \
                      note that when switching between policies at runtime LRU and LFU data \
                      will take some time to adjust.";

/// Redis's help reply: one simple string per line.
pub fn help(lines: &[&str]) -> Frame {
    Frame::Array(
        lines
            .iter()
            .map(|line| Frame::Simple((*line).to_string()))
            .collect(),
    )
}

fn wrong_arity(command: &str, sub: &[u8]) -> Frame {
    Frame::error(format!(
        "ERR wrong number of arguments for '{command}|{}' command",
        String::from_utf8_lossy(sub).to_ascii_lowercase()
    ))
}

fn unknown_subcommand(sub: &[u8], command: &str) -> Frame {
    Frame::error(format!(
        "ERR unknown subcommand '{}'. Try {command} HELP.",
        String::from_utf8_lossy(sub)
    ))
}

#[derive(Debug, Clone, Copy)]
enum Question {
    Encoding,
    Freq,
    IdleTime,
    RefCount,
    Usage { samples: usize },
}

/// `OBJECT subcommand [key]` on database `db`.
pub async fn object(shard: &Shard, db: usize, args: &[Bytes]) -> Frame {
    let sub = args[1].to_ascii_uppercase();
    let question = match sub.as_slice() {
        b"HELP" if args.len() == 2 => return help(OBJECT_HELP),
        b"ENCODING" => Question::Encoding,
        b"FREQ" => Question::Freq,
        b"IDLETIME" => Question::IdleTime,
        b"REFCOUNT" => Question::RefCount,
        b"HELP" => return wrong_arity("object", &args[1]),
        _ => return unknown_subcommand(&args[1], "OBJECT"),
    };
    if args.len() != 3 {
        return wrong_arity("object", &args[1]);
    }
    ask_owner(shard, db, args[2].clone(), question).await
}

/// `MEMORY subcommand [...]` on database `db`.
pub async fn memory(shard: &Shard, db: usize, args: &[Bytes]) -> Frame {
    let sub = args[1].to_ascii_uppercase();
    match sub.as_slice() {
        b"HELP" if args.len() == 2 => help(MEMORY_HELP),
        b"USAGE" if args.len() >= 3 => {
            let samples = match usage_samples(&args[3..]) {
                Ok(samples) => samples,
                Err(err) => return err,
            };
            ask_owner(shard, db, args[2].clone(), Question::Usage { samples }).await
        }
        b"DOCTOR" if args.len() == 2 => Frame::Bulk(Bytes::from_static(
            b"Hi Sam, I can't find any memory issue in your instance. I can only account for \
              what occurs on this base.",
        )),
        b"MALLOC-STATS" if args.len() == 2 => Frame::Bulk(Bytes::from_static(
            b"Stats not supported for the current allocator",
        )),
        b"PURGE" if args.len() == 2 => Frame::ok(),
        b"HELP" | b"USAGE" | b"DOCTOR" | b"MALLOC-STATS" | b"PURGE" => {
            wrong_arity("memory", &args[1])
        }
        _ => unknown_subcommand(&args[1], "MEMORY"),
    }
}

/// `[SAMPLES count]` of MEMORY USAGE: 0 = every element. Errors as Redis: a non-integer
/// count, a negative one or any other word is `ERR syntax error` except the integer error.
fn usage_samples(options: &[Bytes]) -> Result<usize, Frame> {
    let mut samples = DEFAULT_SAMPLES;
    let mut rest = options;
    while let [word, tail @ ..] = rest {
        match tail {
            [count, after @ ..] if word.eq_ignore_ascii_case(b"samples") => {
                let n = int_arg(count)?;
                samples = usize::try_from(n).map_err(|_| Frame::error("ERR syntax error"))?;
                rest = after;
            }
            _ => return Err(Frame::error("ERR syntax error")),
        }
    }
    Ok(samples)
}

async fn ask_owner(shard: &Shard, db: usize, key: Bytes, question: Question) -> Frame {
    let owner = shard.owner_of(&key);
    shard
        .run_on(
            owner,
            Box::new(move |s: &Shard| answer(s, db, &key, question)),
        )
        .await
}

fn answer(shard: &Shard, db: usize, key: &[u8], question: Question) -> Frame {
    let dbs = shard.dbs.borrow();
    let Some(db) = dbs.get(db) else {
        return Frame::error(crate::cmd::databases::OUT_OF_RANGE);
    };
    let now_ms = unix_time_ms();
    let Some((value, deadline, clock, raw)) = db.inspect(key) else {
        return Frame::Null;
    };
    if deadline.is_some_and(|t| now_ms > t) {
        return Frame::Null;
    }
    let runtime = shard.runtime.borrow();
    let lfu = runtime.maxmemory_policy.is_lfu();
    match question {
        Question::Encoding if raw => Frame::Bulk(Bytes::from_static(b"raw")),
        Question::Encoding => Frame::Bulk(Bytes::from_static(
            memory::encoding(value, &runtime.encoding).as_bytes(),
        )),
        Question::RefCount => {
            // Redis shares small integers unless an LRU/LFU policy keeps a clock per value.
            let clocked = runtime.maxmemory > 0
                && !matches!(
                    runtime.maxmemory_policy,
                    crate::runtime::EvictionPolicy::Noeviction
                        | crate::runtime::EvictionPolicy::AllkeysRandom
                        | crate::runtime::EvictionPolicy::VolatileRandom
                        | crate::runtime::EvictionPolicy::VolatileTtl
                );
            Frame::Integer(memory::refcount(value, !clocked))
        }
        Question::IdleTime if lfu => Frame::error(IS_LFU),
        Question::IdleTime => Frame::Integer(memory::idle_seconds(clock, now_ms) as i64),
        Question::Freq if !lfu => Frame::error(NOT_LFU),
        Question::Freq => Frame::Integer(i64::from(memory::lfu_counter(
            clock,
            now_ms,
            runtime.lfu_decay_time,
        ))),
        Question::Usage { samples } => {
            Frame::Integer(memory::entry_size(key, value, samples) as i64)
        }
    }
}
