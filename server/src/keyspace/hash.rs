//! The field → value map of a hash value, in Redis 7.0's two encodings: a small hash is a
//! vector of pairs in insertion order (Redis's listpack: HSET of a new field appends, of an
//! existing field replaces in place, HDEL removes in place), converted once and for all to a
//! hash table when it grows past [`HashLimits`] (Redis's `hashTypeConvert`), whose order is
//! the table's. So HGETALL, HKEYS, HVALS and HSCAN of a small hash reply in insertion order,
//! as Redis does.
//!
//! Costs: a small hash looks a field up by a linear scan of at most
//! `hash-max-listpack-entries` pairs (128 by default; Redis scans its listpack the same way);
//! it stores 64 bytes per pair (two `Bytes` handles) and no table. A large hash is a
//! `HashMap`, as before.

use std::collections::HashMap;

use bytes::Bytes;

/// When a small hash becomes a hash table (Redis 7.0 `hash-max-listpack-entries` and
/// `hash-max-listpack-value`, CONFIG SET-able).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashLimits {
    /// More fields than this: a table (default 128).
    pub entries: u64,
    /// A field or value longer than this many bytes: a table (default 64).
    pub value: u64,
}

impl Default for HashLimits {
    fn default() -> Self {
        Self {
            entries: 128,
            value: 64,
        }
    }
}

impl HashLimits {
    fn too_long(&self, bytes: &[u8]) -> bool {
        bytes.len() as u64 > self.value
    }
}

/// A hash value (see the module doc). Never stored empty (commands delete an emptied hash).
#[derive(Debug, Clone)]
pub struct Hash(Repr);

#[derive(Debug, Clone)]
enum Repr {
    /// Pairs in insertion order (Redis's listpack).
    Small(Vec<(Bytes, Bytes)>),
    /// A table (Redis's hashtable encoding), never converted back.
    Table(HashMap<Bytes, Bytes>),
}

impl Default for Hash {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Hash {
    /// Same fields with the same values, in any order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl Eq for Hash {}

impl Hash {
    /// An empty small hash.
    pub fn new() -> Self {
        Self(Repr::Small(Vec::new()))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Small(pairs) => pairs.len(),
            Repr::Table(map) => map.len(),
        }
    }

    /// Whether the hash has no field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the hash is in its small form (OBJECT ENCODING `listpack`, else `hashtable`).
    pub fn is_small(&self) -> bool {
        matches!(self.0, Repr::Small(_))
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&Bytes> {
        match &self.0 {
            Repr::Small(pairs) => pairs.iter().find(|(f, _)| f == field).map(|(_, v)| v),
            Repr::Table(map) => map.get(field),
        }
    }

    /// Whether `field` exists.
    pub fn contains_key(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets `field` to `value` (the field is copied only when new); true when the field was
    /// created. A small hash becomes a table when this makes it exceed `limits` (more
    /// fields than `limits.entries`, or the field or value longer than `limits.value`).
    pub fn set(&mut self, field: &[u8], value: Bytes, limits: HashLimits) -> bool {
        match &mut self.0 {
            Repr::Small(pairs) => {
                let long = limits.too_long(field) || limits.too_long(&value);
                let created = match pairs.iter_mut().find(|(f, _)| f == field) {
                    Some((_, slot)) => {
                        *slot = value;
                        false
                    }
                    None => {
                        pairs.push((Bytes::copy_from_slice(field), value));
                        true
                    }
                };
                if long || pairs.len() as u64 > limits.entries {
                    self.convert();
                }
                created
            }
            Repr::Table(map) => match map.get_mut(field) {
                Some(slot) => {
                    *slot = value;
                    false
                }
                None => {
                    map.insert(Bytes::copy_from_slice(field), value);
                    true
                }
            },
        }
    }

    /// Removes `field`; its value if it existed. A small hash keeps the others' order.
    pub fn remove(&mut self, field: &[u8]) -> Option<Bytes> {
        match &mut self.0 {
            Repr::Small(pairs) => {
                let at = pairs.iter().position(|(f, _)| f == field)?;
                Some(pairs.remove(at).1)
            }
            Repr::Table(map) => map.remove(field),
        }
    }

    /// The fields and values: in insertion order when small, else in the table's order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Repr::Small(pairs) => Iter::Small(pairs.iter()),
            Repr::Table(map) => Iter::Table(map.iter()),
        }
    }

    /// The fields, in [`Hash::iter`]'s order.
    pub fn keys(&self) -> impl Iterator<Item = &Bytes> {
        self.iter().map(|(f, _)| f)
    }

    /// Turns a small hash into a table (Redis's `hashTypeConvert`); one-way.
    fn convert(&mut self) {
        if let Repr::Small(pairs) = &mut self.0 {
            let map: HashMap<Bytes, Bytes> = std::mem::take(pairs).into_iter().collect();
            self.0 = Repr::Table(map);
        }
    }

    /// A small hash that exceeds `limits` becomes a table (RESTORE and loading under the
    /// current limits, as Redis converts a payload's listpack).
    pub fn fit(&mut self, limits: HashLimits) {
        let over = match &self.0 {
            Repr::Small(pairs) => {
                pairs.len() as u64 > limits.entries
                    || pairs
                        .iter()
                        .any(|(f, v)| limits.too_long(f) || limits.too_long(v))
            }
            Repr::Table(_) => false,
        };
        if over {
            self.convert();
        }
    }
}

impl FromIterator<(Bytes, Bytes)> for Hash {
    /// A hash of the pairs in order under the default [`HashLimits`] (a repeated field takes
    /// the later value).
    fn from_iter<I: IntoIterator<Item = (Bytes, Bytes)>>(pairs: I) -> Self {
        let mut hash = Hash::new();
        for (field, value) in pairs {
            hash.set(&field, value, HashLimits::default());
        }
        hash
    }
}

/// Iterator of [`Hash::iter`].
#[derive(Debug, Clone)]
pub enum Iter<'a> {
    /// Over a small hash, in insertion order.
    Small(std::slice::Iter<'a, (Bytes, Bytes)>),
    /// Over a table.
    Table(std::collections::hash_map::Iter<'a, Bytes, Bytes>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Bytes, &'a Bytes);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(it) => it.next().map(|(f, v)| (f, v)),
            Iter::Table(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Small(it) => it.size_hint(),
            Iter::Table(it) => it.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::from(s.to_string())
    }

    fn fields(h: &Hash) -> Vec<String> {
        h.keys()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect()
    }

    #[test]
    fn small_keeps_insertion_order_through_updates_and_deletes() {
        let limits = HashLimits::default();
        let mut h = Hash::new();
        for f in ["z", "a", "m"] {
            assert!(h.set(f.as_bytes(), b("1"), limits));
        }
        assert!(!h.set(b"a", b("9"), limits));
        assert_eq!(fields(&h), ["z", "a", "m"]);
        assert_eq!(h.get(b"a"), Some(&b("9")));
        assert_eq!(h.remove(b"z"), Some(b("1")));
        assert_eq!(h.remove(b"z"), None);
        assert!(h.set(b"z", b("0"), limits));
        assert_eq!(fields(&h), ["a", "m", "z"]);
        assert!(h.is_small());
    }

    #[test]
    fn converts_past_the_limits_and_stays_converted() {
        let limits = HashLimits {
            entries: 2,
            value: 4,
        };
        let mut h = Hash::new();
        h.set(b"a", b("1"), limits);
        h.set(b"b", b("2"), limits);
        assert!(h.is_small());
        h.set(b"c", b("3"), limits);
        assert!(!h.is_small());
        h.remove(b"c");
        h.remove(b"b");
        assert!(!h.is_small(), "a table never shrinks back");
        assert_eq!(h.get(b"a"), Some(&b("1")));

        let mut long = Hash::new();
        long.set(b"f", b("12345"), limits);
        assert!(!long.is_small());
        let mut fitted = Hash::new();
        fitted.set(b"f", b("12345"), HashLimits::default());
        assert!(fitted.is_small());
        fitted.fit(limits);
        assert!(!fitted.is_small());
    }

    #[test]
    fn equality_ignores_order_and_encoding() {
        let mut a = Hash::new();
        let mut b_ = Hash::new();
        a.set(b"x", b("1"), HashLimits::default());
        a.set(b"y", b("2"), HashLimits::default());
        b_.set(b"y", b("2"), HashLimits::default());
        b_.set(
            b"x",
            b("1"),
            HashLimits {
                entries: 1,
                value: 64,
            },
        );
        assert!(!b_.is_small());
        assert_eq!(a, b_);
        b_.set(b"x", b("3"), HashLimits::default());
        assert_ne!(a, b_);
    }
}
