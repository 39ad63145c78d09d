//! Key → hash slot → shard mapping, as Redis Cluster's `keyHashSlot`
//! (`cluster.c`): CRC16-CCITT (XMODEM) of the key, or of its `{hash tag}`,
//! modulo 16384.

/// Number of hash slots (Redis Cluster `CLUSTER_SLOTS`).
pub const SLOTS: usize = 16384;

/// CRC16 XMODEM lookup table (polynomial 0x1021, init 0, no reflection).
const CRC16_TABLE: [u16; 256] = build_table();

const fn build_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

/// CRC16-CCITT XMODEM of `data` (the checksum Redis Cluster uses);
/// `crc16(b"123456789") == 0x31C3`.
pub fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[usize::from(((crc >> 8) as u8) ^ b)]
    })
}

/// Hash slot (0..16384) of `key`. If the key contains `{` followed later by
/// `}` with at least one byte between the first `{` and the first `}` after
/// it, only those bytes are hashed; otherwise the whole key is
/// (`foo{}{bar}` hashes whole, `foo{{bar}}zap` hashes `{bar`).
pub fn key_hash_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&c| c == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        match rest.iter().position(|&c| c == b'}') {
            Some(close) if close > 0 => Some(&rest[..close]),
            _ => None,
        }
    });
    crc16(tagged.unwrap_or(key)) & (SLOTS as u16 - 1)
}

/// Shard owning `slot` when `nr_shards` shards split the slot space into
/// contiguous ranges: `slot * nr_shards / 16384` (0 when `nr_shards` is 0).
pub fn slot_shard(slot: u16, nr_shards: usize) -> usize {
    if nr_shards == 0 {
        return 0;
    }
    usize::from(slot) * nr_shards / SLOTS
}

/// Shard owning `key`: [`slot_shard`] of [`key_hash_slot`].
pub fn owner_shard(key: &[u8], nr_shards: usize) -> usize {
    slot_shard(key_hash_slot(key), nr_shards)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_vector() {
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_hash_slot(b"123456789"), 12739);
        assert_eq!(key_hash_slot(b""), 0);
    }

    #[test]
    fn hash_tags() {
        assert_eq!(
            key_hash_slot(b"{user1000}.following"),
            key_hash_slot(b"{user1000}.followers")
        );
        assert_eq!(
            key_hash_slot(b"{user1000}.following"),
            key_hash_slot(b"user1000")
        );
        assert_eq!(key_hash_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
        assert_eq!(key_hash_slot(b"foo{{bar}}zap"), crc16(b"{bar") % 16384);
        assert_eq!(key_hash_slot(b"foo{bar}{zap}"), key_hash_slot(b"bar"));
        assert_eq!(key_hash_slot(b"foo{bar"), crc16(b"foo{bar") % 16384);
        // Known Redis Cluster slots.
        assert_eq!(key_hash_slot(b"foo"), 12182);
        assert_eq!(key_hash_slot(b"bar"), 5061);
    }

    #[test]
    fn shards() {
        assert_eq!(slot_shard(0, 4), 0);
        assert_eq!(slot_shard(4095, 4), 0);
        assert_eq!(slot_shard(4096, 4), 1);
        assert_eq!(slot_shard(16383, 4), 3);
        assert_eq!(slot_shard(16383, 1), 0);
        assert_eq!(slot_shard(100, 0), 0);
        assert_eq!(owner_shard(b"foo", 2), 1);
        assert_eq!(owner_shard(b"bar", 2), 0);
    }
}
