//! Function flags as given to `redis.register_function{..., flags={...}}`
//! (Redis 7.0 `script.c` `scripts_flags_def`).

/// A set of function flags. Bit values are internal; use the associated constants.
///
/// [`FunctionFlags::names`] yields the set flags in Redis's order, which is the order
/// `FUNCTION LIST` prints them: `no-writes`, `allow-oom`, `allow-stale`, `no-cluster`,
/// `allow-cross-slot-keys`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FunctionFlags(u8);

/// Flag names in Redis's order, with their bits.
const TABLE: [(&str, u8); 5] = [
    ("no-writes", 1),
    ("allow-oom", 2),
    ("allow-stale", 4),
    ("no-cluster", 8),
    ("allow-cross-slot-keys", 16),
];

impl FunctionFlags {
    /// No flags.
    pub const EMPTY: Self = Self(0);
    /// `no-writes`: the function only reads (allowed by `FCALL_RO`).
    pub const NO_WRITES: Self = Self(1);
    /// `allow-oom`: may run when the server is over `maxmemory`.
    pub const ALLOW_OOM: Self = Self(2);
    /// `allow-stale`: may run on a stale replica.
    pub const ALLOW_STALE: Self = Self(4);
    /// `no-cluster`: refused in cluster mode.
    pub const NO_CLUSTER: Self = Self(8);
    /// `allow-cross-slot-keys`: may touch keys of several slots.
    pub const ALLOW_CROSS_SLOT_KEYS: Self = Self(16);

    /// Looks a flag up by name, ASCII case-insensitively as Redis does (`"NO-WRITES"` works).
    /// Returns `None` for an unknown name.
    pub fn from_name(name: &[u8]) -> Option<Self> {
        TABLE
            .iter()
            .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
            .map(|&(_, bit)| Self(bit))
    }

    /// True when every flag of `other` is set in `self`.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when no flag is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Adds the flags of `other`.
    pub fn insert(&mut self, other: Self) {
        self.0 |= other.0;
    }

    /// The names of the set flags, in Redis's order (see the type's doc).
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        TABLE
            .iter()
            .filter(move |&&(_, bit)| self.0 & bit != 0)
            .map(|&(n, _)| n)
    }
}

impl std::ops::BitOr for FunctionFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_redis_order() {
        // redis-server 7.0.15: flags={"no-cluster","allow-cross-slot-keys","allow-stale",
        // "allow-oom","no-writes"} is listed by FUNCTION LIST as
        // no-writes, allow-oom, allow-stale, no-cluster, allow-cross-slot-keys.
        let mut f = FunctionFlags::EMPTY;
        for n in [
            "no-cluster",
            "allow-cross-slot-keys",
            "allow-stale",
            "allow-oom",
            "no-writes",
        ] {
            f.insert(FunctionFlags::from_name(n.as_bytes()).expect("known flag"));
        }
        let names: Vec<_> = f.names().collect();
        assert_eq!(
            names,
            [
                "no-writes",
                "allow-oom",
                "allow-stale",
                "no-cluster",
                "allow-cross-slot-keys"
            ]
        );
    }

    #[test]
    fn lookup_is_case_insensitive_and_rejects_unknown() {
        // redis-server 7.0.15 accepts flags={"NO-WRITES"} and lists it as no-writes.
        assert_eq!(
            FunctionFlags::from_name(b"NO-WRITES"),
            Some(FunctionFlags::NO_WRITES)
        );
        assert_eq!(FunctionFlags::from_name(b"unknown"), None);
        assert_eq!(FunctionFlags::from_name(b"no_writes"), None);
        let f = FunctionFlags::NO_WRITES | FunctionFlags::ALLOW_STALE;
        assert!(f.contains(FunctionFlags::ALLOW_STALE));
        assert!(!f.contains(FunctionFlags::ALLOW_OOM));
        assert!(FunctionFlags::EMPTY.is_empty());
    }
}
