//! Writing a value in the RDB encoding redis-server 7.0 picks with its default limits (a
//! hash: in the encoding it has, [`crate::keyspace::Hash`]) (`rdbSaveObject`, `rdbSaveRawString`, `rdbSaveLen`).

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;

use super::listpack;
use super::types;
use crate::keyspace::{Hash, Value, ZSet};
use crate::resp::double::double_text;
use crate::resp::num::parse_i64;

/// `set-max-intset-entries`: a set of integers with more members is saved as a plain set.
const SET_MAX_INTSET_ENTRIES: usize = 512;
/// `zset-max-listpack-entries`: a sorted set with more members is saved as a skiplist.
const ZSET_MAX_LISTPACK_ENTRIES: usize = 128;
/// `zset-max-listpack-value`: a sorted set with a longer member is saved as a skiplist.
const ZSET_MAX_LISTPACK_VALUE: usize = 64;
/// `list-max-listpack-size -2`: each quicklist node's listpack holds at most 8 KiB.
const LIST_NODE_MAX_BYTES: usize = 8 << 10;
/// Quicklist node container `PACKED` (a listpack), Redis `QUICKLIST_NODE_CONTAINER_PACKED`.
pub(super) const CONTAINER_PACKED: u64 = 2;
/// Quicklist node container `PLAIN` (one element), Redis `QUICKLIST_NODE_CONTAINER_PLAIN`.
pub(super) const CONTAINER_PLAIN: u64 = 1;

/// Appends the type byte and the encoded value.
pub(super) fn value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Str(s) => {
            out.push(types::STRING);
            string(out, s);
        }
        Value::List(items) => list(out, items),
        Value::Hash(map) => hash(out, map),
        Value::Set(members) => set(out, members),
        Value::ZSet(zset) => sorted_set(out, zset),
    }
}

/// `rdbSaveLen`: 6-bit, 14-bit, 32-bit or 64-bit big-endian length.
pub(super) fn len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// The integer `s` spells in canonical form (Redis `string2ll` + `ll2string` round trip).
pub(super) fn canonical_int(s: &[u8]) -> Option<i64> {
    parse_i64(s).filter(|n| n.to_string().as_bytes() == s)
}

/// `rdbSaveRawString` without LZF: an integer of at most 11 characters fitting in 32 bits as
/// `0xC0`/`0xC1`/`0xC2` + little-endian bytes, else length + bytes.
pub(super) fn string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11 {
        if let Some(n) = canonical_int(s) {
            if let Ok(n) = i8::try_from(n) {
                out.extend_from_slice(&[0xC0, n as u8]);
                return;
            }
            if let Ok(n) = i16::try_from(n) {
                out.push(0xC1);
                out.extend_from_slice(&n.to_le_bytes());
                return;
            }
            if let Ok(n) = i32::try_from(n) {
                out.push(0xC2);
                out.extend_from_slice(&n.to_le_bytes());
                return;
            }
        }
    }
    len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A quicklist (type 18) of listpack nodes of at most 8 KiB each (one element may exceed it
/// alone in its node, as in Redis).
fn list(out: &mut Vec<u8>, items: &VecDeque<Bytes>) {
    let mut nodes: Vec<listpack::Builder> = Vec::new();
    for item in items {
        let fits = nodes
            .last()
            .is_some_and(|node| node.len_with(item) <= LIST_NODE_MAX_BYTES);
        if !fits {
            nodes.push(listpack::Builder::new());
        }
        if let Some(node) = nodes.last_mut() {
            node.push(item);
        }
    }
    out.push(types::LIST_QUICKLIST_2);
    len(out, nodes.len() as u64);
    for node in nodes {
        len(out, CONTAINER_PACKED);
        string(out, &node.finish());
    }
}

/// A small hash as a listpack (type 16, in its order), a table as a plain hash (type 4), as
/// Redis dumps its two encodings.
fn hash(out: &mut Vec<u8>, map: &Hash) {
    if map.is_small() {
        let mut node = listpack::Builder::new();
        for (field, value) in map.iter() {
            node.push(field);
            node.push(value);
        }
        out.push(types::HASH_LISTPACK);
        string(out, &node.finish());
    } else {
        out.push(types::HASH);
        len(out, map.len() as u64);
        for (field, value) in map.iter() {
            string(out, field);
            string(out, value);
        }
    }
}

/// A listpack sorted set (type 17: member, score as `d2string` text, in score order) within
/// Redis's default limits, else `RDB_TYPE_ZSET_2` (type 5: greatest first, scores as binary
/// little-endian doubles), as `rdbSaveObject` writes them.
fn sorted_set(out: &mut Vec<u8>, zset: &ZSet) {
    let small = zset.len() <= ZSET_MAX_LISTPACK_ENTRIES
        && zset
            .entries()
            .all(|(m, _)| m.len() <= ZSET_MAX_LISTPACK_VALUE);
    if small {
        let mut node = listpack::Builder::new();
        for (member, score) in zset.iter() {
            node.push(member);
            node.push(double_text(score).as_bytes());
        }
        out.push(types::ZSET_LISTPACK);
        string(out, &node.finish());
    } else {
        out.push(types::ZSET_2);
        len(out, zset.len() as u64);
        for (member, score) in zset.iter_from(zset.len().saturating_sub(1), true) {
            string(out, member);
            out.extend_from_slice(&score.to_le_bytes());
        }
    }
}

/// An intset (type 11) when every member is an integer and there are at most 512, else a
/// plain set (type 2).
fn set(out: &mut Vec<u8>, members: &HashSet<Bytes>) {
    let ints: Option<Vec<i64>> = (members.len() <= SET_MAX_INTSET_ENTRIES)
        .then(|| members.iter().map(|m| canonical_int(m)).collect())
        .flatten();
    let Some(mut ints) = ints else {
        out.push(types::SET);
        len(out, members.len() as u64);
        for member in members {
            string(out, member);
        }
        return;
    };
    ints.sort_unstable();
    let width: usize = if ints.iter().all(|&n| i16::try_from(n).is_ok()) {
        2
    } else if ints.iter().all(|&n| i32::try_from(n).is_ok()) {
        4
    } else {
        8
    };
    let mut blob = Vec::with_capacity(8 + ints.len() * width);
    blob.extend_from_slice(&(width as u32).to_le_bytes());
    blob.extend_from_slice(&(ints.len() as u32).to_le_bytes());
    for n in ints {
        blob.extend_from_slice(&n.to_le_bytes()[..width]);
    }
    out.push(types::SET_INTSET);
    string(out, &blob);
}
