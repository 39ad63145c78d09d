//! Hash commands: HSET HMSET HSETNX HGET HMGET HDEL HGETALL HKEYS HVALS
//! HLEN HEXISTS HSTRLEN (Redis 7 `t_hash.c`); the counters are in
//! [`super::hash_incr`].

use bytes::Bytes;

use super::reply::{wrong_arity, wrong_type};
use crate::keyspace::{Db, Hash, HashLimits, Value};
use crate::notify::flags;
use crate::resp::Frame;

/// The hash at `key` for writing, created empty if missing (the caller
/// must store at least one field), with the database's [`HashLimits`] to write it under.
/// `Err` is the WRONGTYPE frame.
pub(super) fn hash_for_write<'a>(
    db: &'a mut Db,
    key: &[u8],
    now: u64,
) -> Result<(&'a mut Hash, HashLimits), Frame> {
    if !db.contains(key, now) {
        db.set(key, Value::Hash(Hash::new()), false, now);
    }
    let limits = db.hash_limits();
    match db.get_mut(key, now) {
        Some(Value::Hash(map)) => Ok((map, limits)),
        Some(_) => Err(wrong_type()),
        None => Err(Frame::error("ERR internal error")),
    }
}

/// Shared HSET / HMSET: stores the field/value pairs and returns how many
/// fields were created. An incomplete pair is `ERR wrong number of
/// arguments for '<name>' command`.
fn set_fields(db: &mut Db, args: &[Bytes], now: u64, name: &str) -> Result<i64, Frame> {
    if args.len() < 4 || args.len() % 2 == 1 {
        return Err(wrong_arity(name));
    }
    let (map, limits) = hash_for_write(db, &args[1], now)?;
    let mut created = 0;
    for pair in args[2..].chunks_exact(2) {
        if map.set(&pair[0], Bytes::copy_from_slice(&pair[1]), limits) {
            created += 1;
        }
    }
    db.notify(flags::HASH, "hset", &args[1]);
    Ok(created)
}

/// `HSET key field value [field value...]` → number of fields created.
pub fn hset(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    set_fields(db, args, now, "hset").map_or_else(|e| e, Frame::Integer)
}

/// `HMSET key field value [field value...]` → OK.
pub fn hmset(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    set_fields(db, args, now, "hmset").map_or_else(|e| e, |_| Frame::ok())
}

/// `HSETNX key field value` → 1 if the field was created, 0 if it existed.
pub fn hsetnx(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let (map, limits) = match hash_for_write(db, &args[1], now) {
        Ok(found) => found,
        Err(e) => return e,
    };
    if map.contains_key(&args[2][..]) {
        return Frame::Integer(0);
    }
    map.set(&args[2], Bytes::copy_from_slice(&args[3]), limits);
    db.notify(flags::HASH, "hset", &args[1]);
    Frame::Integer(1)
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
    if removed > 0 {
        db.notify(flags::HASH, "hdel", &args[1]);
    }
    db.remove_if_empty(&args[1]);
    Frame::Integer(removed as i64)
}

/// `HGETALL key` → map of field → value (RESP2: flat array), empty if
/// missing; a small hash in insertion order, as Redis's listpack.
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

/// `HMGET key field...` → array with a bulk or Null per field (all Null if
/// the key is missing).
pub fn hmget(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    let fields = args[2..].iter();
    match db.get(&args[1], now) {
        Some(Value::Hash(map)) => Frame::Array(
            fields
                .map(|f| {
                    map.get(&f[..])
                        .map_or(Frame::Null, |v| Frame::Bulk(v.clone()))
                })
                .collect(),
        ),
        Some(_) => wrong_type(),
        None => Frame::Array(fields.map(|_| Frame::Null).collect()),
    }
}

/// Shared HKEYS / HVALS: an array (in RESP3 too), empty if missing; a small hash in
/// insertion order.
fn hash_items(db: &mut Db, key: &[u8], now: u64, keys: bool) -> Frame {
    match db.get(key, now) {
        Some(Value::Hash(map)) => Frame::Array(
            map.iter()
                .map(|(f, v)| Frame::Bulk(if keys { f.clone() } else { v.clone() }))
                .collect(),
        ),
        Some(_) => wrong_type(),
        None => Frame::Array(Vec::new()),
    }
}

/// `HKEYS key` → the field names.
pub fn hkeys(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    hash_items(db, &args[1], now, true)
}

/// `HVALS key` → the values.
pub fn hvals(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    hash_items(db, &args[1], now, false)
}

/// `HEXISTS key field` → 1 or 0.
pub fn hexists(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Hash(map)) => Frame::Integer(i64::from(map.contains_key(&args[2][..]))),
        Some(_) => wrong_type(),
        None => Frame::Integer(0),
    }
}

/// `HSTRLEN key field` → length of the value, 0 if field or key missing.
pub fn hstrlen(db: &mut Db, args: &[Bytes], now: u64) -> Frame {
    match db.get(&args[1], now) {
        Some(Value::Hash(map)) => {
            Frame::Integer(map.get(&args[2][..]).map_or(0, |v| v.len() as i64))
        }
        Some(_) => wrong_type(),
        None => Frame::Integer(0),
    }
}
