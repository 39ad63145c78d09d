//! HRANDFIELD (Redis 7.0 `t_hash.c` `hrandfieldCommand`).

use bytes::Bytes;
use rand::seq::{IteratorRandom, SliceRandom};

use super::reply::{is_opt, range_arg, syntax_error, wrong_type};
use super::sets::MAX_REPEATED;
use crate::keyspace::{Db, Value};
use crate::resp::Frame;

/// `HRANDFIELD key [count [WITHVALUES]]`.
///
/// Without count → a random field (bulk), Null if the key is missing. With count → an array
/// (in RESP3 too) of `min(count, size)` distinct fields, or for a negative count exactly
/// `-count` fields that may repeat; empty array if the key is missing or count is 0. With
/// WITHVALUES each field comes with its value: a flat array in RESP2, an array of
/// `[field, value]` pairs in RESP3 ([`Frame::Pairs`]).
///
/// Errors, checked in Redis's order before the lookup: a non-integer count is `ERR value is
/// not an integer or out of range`, `i64::MIN` is `ERR value is out of range, value must
/// between ...`; a fourth argument other than WITHVALUES or more arguments are `ERR syntax
/// error`; with WITHVALUES a count beyond ±`i64::MAX / 2` is `ERR value is out of range`.
/// A negative count beyond `-2^24` is also `ERR value is out of range` (a shardline limit:
/// the reply is built in memory). Choosing fields costs O(hash size).
pub fn hrandfield(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (count, with_values) = match args.len() {
        2 => (None, false),
        3 | 4 => {
            let n = match range_arg(&args[2], -i64::MAX, i64::MAX) {
                Ok(n) => n,
                Err(e) => return e,
            };
            let with_values = args.len() == 4;
            if with_values && !is_opt(&args[3], "withvalues") {
                return syntax_error();
            }
            if with_values && !(-i64::MAX / 2..=i64::MAX / 2).contains(&n) {
                return Frame::error("ERR value is out of range");
            }
            (Some(n), with_values)
        }
        _ => return syntax_error(),
    };
    let map = match db.get(&args[1], now) {
        Some(Value::Hash(map)) => map,
        Some(_) => return wrong_type(),
        None if count.is_some() => return Frame::Array(Vec::new()),
        None => return Frame::Null,
    };
    let mut rng = rand::thread_rng();
    let Some(count) = count else {
        return map
            .keys()
            .choose(&mut rng)
            .map_or(Frame::Null, |f| Frame::Bulk(f.clone()));
    };
    let n = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
    let picked: Vec<(&Bytes, &Bytes)> = if count >= 0 && n >= map.len() {
        // The whole hash, in its order (a small one's insertion order), as Redis replies.
        map.iter().collect()
    } else if count >= 0 {
        map.iter().choose_multiple(&mut rng, n.min(map.len()))
    } else {
        if n > MAX_REPEATED {
            return Frame::error("ERR value is out of range");
        }
        let all: Vec<(&Bytes, &Bytes)> = map.iter().collect();
        (0..n)
            .filter_map(|_| all.choose(&mut rng).copied())
            .collect()
    };
    if with_values {
        Frame::Pairs(
            picked
                .into_iter()
                .map(|(f, v)| (Frame::Bulk(f.clone()), Frame::Bulk(v.clone())))
                .collect(),
        )
    } else {
        Frame::Array(
            picked
                .into_iter()
                .map(|(f, _)| Frame::Bulk(f.clone()))
                .collect(),
        )
    }
}
