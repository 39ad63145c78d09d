//! Values stored under a key (Redis 7 object types string, list, hash, set, zset).

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;

pub use super::hash::Hash;
pub use super::zset::ZSet;

/// A stored value. Collections are never stored empty: commands delete a key
/// whose collection became empty, as Redis does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Binary-safe string (also holds integers as their decimal text).
    Str(Bytes),
    /// List, head at the front.
    List(VecDeque<Bytes>),
    /// Field → value map (insertion order while small: [`Hash`]).
    Hash(Hash),
    /// Unordered set of members.
    Set(HashSet<Bytes>),
    /// Sorted set: members ordered by (score, member bytes).
    ZSet(ZSet),
}

impl Value {
    /// Type name as the TYPE command and SCAN TYPE use it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Hash(_) => "hash",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
        }
    }

    /// Whether the value is an empty collection (which must not be stored).
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::List(l) => l.is_empty(),
            Value::Hash(h) => h.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
        }
    }
}
