//! The key as the keyspace stores it: short keys inline, long keys in one shared buffer.
//!
//! A lookup compares the wanted key with the stored one. With every key behind a pointer that
//! is one more dependent cache miss per command (table group → bucket → key bytes); a key kept
//! inside the bucket is compared where the bucket already is. Keys of up to
//! [`INLINE_KEY_BYTES`] bytes (most real keys: `user:1000`, `session:3f2a…`) are kept inline,
//! longer ones in a [`Bytes`] whose buffer the table and the SCAN and expiry indexes share.
//! Measured on the pipelined SET bench (100 000 random 16-byte keys): see benches/README.md.
//!
//! `smallvec` keeps short sequences inline too, but a long key would then be copied into each
//! index it is in; sharing one buffer among them is why this type exists.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use bytes::Bytes;

/// Longest key kept inline, in bytes.
pub const INLINE_KEY_BYTES: usize = 23;

/// A stored key. Hashes, compares and orders exactly as its bytes (`[u8]`), so a table keyed
/// by `Key` is looked up with `&[u8]`.
#[derive(Clone)]
pub enum Key {
    /// At most [`INLINE_KEY_BYTES`] bytes: `bytes[..len]`.
    Inline {
        /// Bytes used in `bytes`.
        len: u8,
        /// The key, zero-padded.
        bytes: [u8; INLINE_KEY_BYTES],
    },
    /// A longer key; clones share the buffer.
    Shared(Bytes),
}

impl Key {
    /// A key holding a copy of `key` (never pins the caller's buffer).
    pub fn from_slice(key: &[u8]) -> Self {
        if key.len() <= INLINE_KEY_BYTES {
            let mut bytes = [0; INLINE_KEY_BYTES];
            bytes[..key.len()].copy_from_slice(key);
            Key::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            Key::Shared(Bytes::copy_from_slice(key))
        }
    }

    /// The key's bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Key::Shared(bytes) => bytes,
        }
    }

    /// The key as [`Bytes`] (a copy for an inline key, the shared buffer otherwise).
    pub fn to_bytes(&self) -> Bytes {
        match self {
            Key::Inline { .. } => Bytes::copy_from_slice(self.as_slice()),
            Key::Shared(bytes) => bytes.clone(),
        }
    }
}

impl Default for Key {
    /// The empty key (the lowest in order).
    fn default() -> Self {
        Key::Inline {
            len: 0,
            bytes: [0; INLINE_KEY_BYTES],
        }
    }
}

impl Deref for Key {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Key {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_bytes(), f)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, RandomState};

    use super::*;

    #[test]
    fn short_keys_are_inline_and_long_keys_shared() {
        let short = Key::from_slice(&[b'k'; INLINE_KEY_BYTES]);
        assert!(matches!(short, Key::Inline { len: 23, .. }));
        assert_eq!(short.as_slice(), &[b'k'; INLINE_KEY_BYTES]);
        let long = Key::from_slice(&[b'k'; INLINE_KEY_BYTES + 1]);
        let Key::Shared(buffer) = &long else {
            panic!("a {}-byte key is not inline", INLINE_KEY_BYTES + 1);
        };
        let Key::Shared(clone) = long.clone() else {
            panic!("a clone keeps the representation");
        };
        assert_eq!(clone.as_ptr(), buffer.as_ptr());
        assert_eq!(Key::default().as_slice(), b"");
        assert_eq!(Key::from_slice(b"").as_slice(), b"");
    }

    #[test]
    fn hashes_and_orders_as_its_bytes() {
        let state = RandomState::new();
        let samples: [&[u8]; 5] = [b"", b"a", b"ab", b"user:1000", &[b'z'; 40]];
        for a in samples {
            let key = Key::from_slice(a);
            assert_eq!(state.hash_one(&key), state.hash_one(a), "{a:?}");
            for b in samples {
                let other = Key::from_slice(b);
                assert_eq!(key.cmp(&other), a.cmp(b), "{a:?} vs {b:?}");
                assert_eq!(key == other, a == b);
            }
        }
        let mut table = hashbrown::HashMap::new();
        table.insert(Key::from_slice(b"user:1000"), 1);
        table.insert(Key::from_slice(&[b'x'; 64]), 2);
        assert_eq!(table.get(&b"user:1000"[..]), Some(&1));
        assert_eq!(table.get(&[b'x'; 64][..]), Some(&2));
        assert_eq!(table.get(&b"user:1001"[..]), None);
    }
}
