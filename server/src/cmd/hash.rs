//! Hash commands: HSET HGET HDEL HGETALL HLEN (Redis 7 `t_hash.c`).

use std::collections::HashMap;

use bytes::Bytes;

use super::reply::{wrong_arity, wrong_type};
use crate::keyspace::{Db, Value};
use crate::resp::Frame;

/// `HSET key field value [field value...]` → number of fields created. An
/// incomplete pair is `ERR wrong number of arguments for 'hset' command`.
pub fn hset(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    if args.len() < 4 || args.len() % 2 == 1 {
        return wrong_arity("hset");
    }
    let map = match db.get_mut(&args[1], now) {
        Some(Value::Hash(map)) => map,
        Some(_) => return wrong_type(),
        None => {
            db.set(&args[1], Value::Hash(HashMap::new()), false, now);
            match db.get_mut(&args[1], now) {
                Some(Value::Hash(map)) => map,
                _ => return Frame::error("ERR internal error"),
            }
        }
    };
    let mut created = 0;
    for pair in args[2..].chunks_exact(2) {
        let value = Bytes::copy_from_slice(&pair[1]);
        match map.get_mut(&pair[0][..]) {
            Some(slot) => *slot = value,
            None => {
                map.insert(Bytes::copy_from_slice(&pair[0]), value);
                created += 1;
            }
        }
    }
    Frame::Integer(created)
}

/// `HGET key field` → bulk or Null.
pub fn hget(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Hash(map)) => map
            .get(&args[2][..])
            .map_or(Frame::Null, |v| Frame::Bulk(v.clone())),
        Some(_) => wrong_type(),
        None => Frame::Null,
    }
}

/// `HDEL key field...` → number of fields removed; deletes an emptied hash.
pub fn hdel(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let removed = match db.get_mut(&args[1], now) {
        Some(Value::Hash(map)) => args[2..]
            .iter()
            .filter(|f| map.remove(&f[..]).is_some())
            .count(),
        Some(_) => return wrong_type(),
        None => 0,
    };
    db.remove_if_empty(&args[1]);
    Frame::Integer(removed as i64)
}

/// `HGETALL key` → map of field → value (RESP2: flat array), empty if
/// missing.
pub fn hgetall(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Hash(map)) => Frame::Map(
            map.iter()
                .map(|(f, v)| (Frame::Bulk(f.clone()), Frame::Bulk(v.clone())))
                .collect(),
        ),
        Some(_) => wrong_type(),
        None => Frame::Map(Vec::new()),
    }
}

/// `HLEN key` → number of fields, 0 if missing.
pub fn hlen(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Hash(map)) => Frame::Integer(map.len() as i64),
        Some(_) => wrong_type(),
        None => Frame::Integer(0),
    }
}
