//! Reading a value in any RDB encoding redis-server 7.0 writes for strings, lists, hashes,
//! sets and sorted sets (`rdbLoadObject`, `rdbGenericLoadStringObject`, `rdbLoadLen`). Every length is checked
//! against the bytes left, so a hostile payload cannot ask for a large allocation.

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;

use super::encode::{CONTAINER_PACKED, CONTAINER_PLAIN};
use super::listpack;
use super::types;
use crate::keyspace::{Hash, HashLimits, Value, ZSet};

/// Longest string an LZF record may claim to expand to per compressed byte (LZF's best case
/// is a 3-byte back reference expanding to 264 bytes).
const LZF_MAX_RATIO: usize = 88;

/// The value in `body` (type byte + encoding, footer already removed); `None` when it is
/// malformed, an empty collection, or a type shardline does not store. A hash is built in
/// the payload's order under `hash_limits` (small while within them).
pub(super) fn value(body: &[u8], hash_limits: HashLimits) -> Option<Value> {
    let mut r = Reader { buf: body, pos: 0 };
    let kind = r.byte()?;
    let value = match kind {
        types::STRING => Value::Str(r.string()?),
        types::LIST => {
            let n = r.count()?;
            let mut items = VecDeque::with_capacity(n);
            for _ in 0..n {
                items.push_back(r.string()?);
            }
            Value::List(items)
        }
        types::SET => {
            let n = r.count()?;
            let mut members = HashSet::with_capacity(n);
            for _ in 0..n {
                members.insert(r.string()?);
            }
            Value::Set(members)
        }
        types::HASH => {
            let n = r.count()?;
            let mut map = Hash::new();
            for _ in 0..n {
                let field = r.string()?;
                // Redis refuses a duplicate field ("Duplicate hash fields detected").
                if !map.set(&field, r.string()?, hash_limits) {
                    return None;
                }
            }
            Value::Hash(map)
        }
        types::ZSET_2 | types::ZSET => {
            let n = r.count()?;
            let mut zset = ZSet::new();
            for _ in 0..n {
                let member = r.string()?;
                let score = if kind == types::ZSET_2 {
                    f64::from_le_bytes(r.take(8)?.try_into().ok()?)
                } else {
                    r.text_double()?
                };
                // Redis refuses a NaN score and a duplicate member.
                if score.is_nan() || zset.insert(member, score).is_some() {
                    return None;
                }
            }
            Value::ZSet(zset)
        }
        types::ZSET_LISTPACK => {
            let items = listpack::elements(&r.string()?)?;
            if items.len() % 2 != 0 {
                return None;
            }
            let mut zset = ZSet::new();
            let mut items = items.into_iter();
            while let (Some(member), Some(score)) = (items.next(), items.next()) {
                let score = std::str::from_utf8(&score).ok()?.parse::<f64>().ok()?;
                if score.is_nan() || zset.insert(member, score).is_some() {
                    return None;
                }
            }
            Value::ZSet(zset)
        }
        types::SET_INTSET => Value::Set(intset(&r.string()?)?.into_iter().collect()),
        types::HASH_LISTPACK => {
            let items = listpack::elements(&r.string()?)?;
            if items.len() % 2 != 0 {
                return None;
            }
            let mut map = Hash::new();
            let mut items = items.into_iter();
            while let (Some(field), Some(value)) = (items.next(), items.next()) {
                // Redis refuses a listpack hash with a duplicate field.
                if !map.set(&field, value, hash_limits) {
                    return None;
                }
            }
            Value::Hash(map)
        }
        types::LIST_QUICKLIST_2 => {
            let nodes = r.count()?;
            let mut items = VecDeque::new();
            for _ in 0..nodes {
                match r.len()? {
                    CONTAINER_PLAIN => items.push_back(r.string()?),
                    CONTAINER_PACKED => items.extend(listpack::elements(&r.string()?)?),
                    _ => return None,
                }
            }
            Value::List(items)
        }
        _ => return None,
    };
    (!value.is_empty_collection()).then_some(value)
}

/// The members of an intset blob (`<width: u32 LE> <count: u32 LE> <sorted integers LE>`).
fn intset(blob: &[u8]) -> Option<Vec<Bytes>> {
    let width = u32::from_le_bytes(blob.get(0..4)?.try_into().ok()?) as usize;
    let count = u32::from_le_bytes(blob.get(4..8)?.try_into().ok()?) as usize;
    if !matches!(width, 2 | 4 | 8) || blob.len() != 8 + count.checked_mul(width)? {
        return None;
    }
    Some(
        blob[8..]
            .chunks_exact(width)
            .map(|chunk| {
                let v = match *chunk {
                    [a, b] => i64::from(i16::from_le_bytes([a, b])),
                    [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
                    _ => {
                        let mut eight = [0u8; 8];
                        eight.copy_from_slice(chunk);
                        i64::from_le_bytes(eight)
                    }
                };
                Bytes::from(v.to_string())
            })
            .collect(),
    )
}

/// A cursor over a payload body.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// What an `rdbLoadLen` header holds: a length, or a special string encoding.
enum Len {
    Plain(u64),
    Encoded(u8),
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        let bytes = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(bytes)
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// `rdbLoadLenByRef`.
    fn len_or_encoding(&mut self) -> Option<Len> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => Len::Plain(u64::from(first & 0x3F)),
            1 => Len::Plain(u64::from(first & 0x3F) << 8 | u64::from(self.byte()?)),
            3 => Len::Encoded(first & 0x3F),
            _ if first == 0x80 => Len::Plain(u64::from(u32::from_be_bytes(
                self.take(4)?.try_into().ok()?,
            ))),
            _ if first == 0x81 => Len::Plain(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
            _ => return None,
        })
    }

    /// `rdbLoadDoubleValue` (RDB_TYPE_ZSET): a length byte, 253 = NaN, 254 = +inf, 255 = -inf,
    /// else that many bytes of `%.17g` text.
    fn text_double(&mut self) -> Option<f64> {
        match self.byte()? {
            253 => Some(f64::NAN),
            254 => Some(f64::INFINITY),
            255 => Some(f64::NEG_INFINITY),
            n => std::str::from_utf8(self.take(usize::from(n))?)
                .ok()?
                .parse()
                .ok(),
        }
    }

    /// A length (not a string encoding).
    fn len(&mut self) -> Option<u64> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Some(n),
            Len::Encoded(_) => None,
        }
    }

    /// An element count: each element takes at least one byte, so a count larger than the
    /// bytes left is malformed.
    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.len()?)
            .ok()
            .filter(|&n| n <= self.remaining())
    }

    /// `rdbGenericLoadStringObject`: plain, 8/16/32-bit integer, or LZF-compressed.
    fn string(&mut self) -> Option<Bytes> {
        match self.len_or_encoding()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).ok()?;
                Some(Bytes::copy_from_slice(self.take(n)?))
            }
            Len::Encoded(0) => Some(Bytes::from((self.byte()? as i8).to_string())),
            Len::Encoded(1) => {
                let v = i16::from_le_bytes(self.take(2)?.try_into().ok()?);
                Some(Bytes::from(v.to_string()))
            }
            Len::Encoded(2) => {
                let v = i32::from_le_bytes(self.take(4)?.try_into().ok()?);
                Some(Bytes::from(v.to_string()))
            }
            Len::Encoded(3) => {
                let compressed_len = usize::try_from(self.len()?).ok()?;
                let len = usize::try_from(self.len()?).ok()?;
                if len == 0 || len > compressed_len.checked_mul(LZF_MAX_RATIO)? {
                    return None;
                }
                let compressed = self.take(compressed_len)?;
                let data = lzf::decompress(compressed, len).ok()?;
                (data.len() == len).then(|| Bytes::from(data))
            }
            Len::Encoded(_) => None,
        }
    }
}
