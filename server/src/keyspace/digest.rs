//! DEBUG DIGEST and DIGEST-VALUE: a SHA-1 based signature of values, keys and whole
//! databases, in the scheme of Redis 7.0's `debug.c` (its bytes are not Redis's).
//!
//! Two primitives over 20-byte digests: *mix* (`d = SHA1(d ‖ data)`: order matters) and *xor*
//! (`d ^= SHA1(data)`: order does not). A string mixes its bytes; a list mixes its elements
//! in order; a set xors its members, a hash xors one digest per field (field, then value
//! mixed) and a sorted set one per member (member, then score mixed), so neither depends on
//! the order members were added or are stored in. A key's digest mixes its name, its type,
//! its value's parts and its deadline (absolute unix milliseconds, which a restart keeps); a
//! database's digest xors its keys' digests, so it does not depend on which shard holds which
//! key. The dataset's digest mixes each non-empty database's index, then xors in that
//! database's digest: all zeros when every database is empty, as Redis.

use openssl::sha::Sha1;

use super::Value;

/// A 20-byte SHA-1 digest.
pub type Digest = [u8; 20];

/// The all-zero digest: an empty dataset's, a missing key's.
pub const ZERO: Digest = [0; 20];

/// `digest = SHA1(digest ‖ data)`.
pub fn mix(digest: &mut Digest, data: &[u8]) {
    let mut sha = Sha1::new();
    sha.update(digest);
    sha.update(data);
    *digest = sha.finish();
}

/// `digest ^= SHA1(data)`.
pub fn xor(digest: &mut Digest, data: &[u8]) {
    xor_in(digest, &openssl::sha::sha1(data));
}

/// `digest ^= other`.
pub fn xor_in(digest: &mut Digest, other: &Digest) {
    digest.iter_mut().zip(other).for_each(|(d, o)| *d ^= o);
}

/// Lower-case hex of `digest`: 40 digits.
pub fn hex(digest: &Digest) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// DEBUG DIGEST-VALUE's digest of `value` alone (no key name, type or deadline).
pub fn value(value: &Value) -> Digest {
    let mut digest = ZERO;
    mix_value(&mut digest, value);
    digest
}

/// The digest of one key of a database: its name, type, value and deadline.
pub fn key(key: &[u8], value: &Value, deadline_ms: Option<u64>) -> Digest {
    let mut digest = ZERO;
    mix(&mut digest, key);
    mix(&mut digest, value.type_name().as_bytes());
    mix_value(&mut digest, value);
    if let Some(at) = deadline_ms {
        mix(&mut digest, b"!!expire!!");
        mix(&mut digest, &at.to_be_bytes());
    }
    digest
}

/// Mixes `value`'s parts into `digest` (see the module docs).
fn mix_value(digest: &mut Digest, value: &Value) {
    match value {
        Value::Str(s) => mix(digest, s),
        Value::List(items) => items.iter().for_each(|item| mix(digest, item)),
        Value::Set(members) => members.iter().for_each(|m| xor(digest, m)),
        Value::Hash(hash) => {
            for (field, val) in hash.iter() {
                let mut pair = ZERO;
                mix(&mut pair, field);
                mix(&mut pair, val);
                xor_in(digest, &pair);
            }
        }
        Value::ZSet(zset) => {
            for (member, score) in zset.entries() {
                let mut pair = ZERO;
                mix(&mut pair, member);
                mix(&mut pair, &score.to_bits().to_be_bytes());
                xor_in(digest, &pair);
            }
        }
    }
}

/// Combines per-database digests into the dataset's: `dbs` holds, in database order, each
/// database's key count and xor of key digests (as summed and xored over every shard).
pub fn dataset(dbs: &[(u64, Digest)]) -> Digest {
    let mut digest = ZERO;
    for (index, (count, keys)) in dbs.iter().enumerate() {
        if *count == 0 {
            continue;
        }
        mix(&mut digest, &(index as u64).to_be_bytes());
        xor_in(&mut digest, keys);
    }
    digest
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use bytes::Bytes;

    use super::*;

    fn set(members: &[&'static str]) -> Value {
        Value::Set(
            members
                .iter()
                .map(|m| Bytes::from_static(m.as_bytes()))
                .collect::<HashSet<_>>(),
        )
    }

    #[test]
    fn empty_dataset_is_zero() {
        assert_eq!(hex(&dataset(&[(0, ZERO), (0, ZERO)])), "0".repeat(40));
    }

    #[test]
    fn set_order_does_not_matter_but_content_does() {
        assert_eq!(value(&set(&["a", "b", "c"])), value(&set(&["c", "a", "b"])));
        assert_ne!(value(&set(&["a", "b"])), value(&set(&["a", "c"])));
    }

    #[test]
    fn deadline_and_type_change_the_key_digest() {
        let v = Value::Str(Bytes::from_static(b"x"));
        assert_ne!(key(b"k", &v, None), key(b"k", &v, Some(1)));
        assert_ne!(key(b"k", &v, Some(1)), key(b"k", &v, Some(2)));
        let list = Value::List([Bytes::from_static(b"x")].into_iter().collect());
        assert_ne!(key(b"k", &v, None), key(b"k", &list, None));
    }
}
