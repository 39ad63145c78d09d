//! Redis's serialized value format, as DUMP returns it and RESTORE takes it (Redis 7.0
//! `cluster.c` `createDumpPayload` / `verifyDumpPayload`, `rdb.c` `rdbSaveObject` /
//! `rdbLoadObject`):
//!
//! ```text
//! <type byte> <value in RDB encoding> <RDB version: u16 LE = 10> <CRC-64 of all before: u64 LE>
//! ```
//!
//! [`encode`] writes the encodings redis-server 7.0 chooses for our values with its default
//! limits (integer strings, quicklist of listpacks, listpack or plain hashes, intset or plain
//! sets), strings uncompressed. [`decode`] reads every encoding redis-server 7.0 writes for
//! strings, lists, hashes and sets (LZF-compressed strings included). The checksum is Redis's
//! CRC-64 (Jones polynomial, reflected, `crc64.c`).

mod decode;
mod encode;
mod listpack;

#[cfg(test)]
mod tests;

use crate::keyspace::{HashLimits, Value};

/// The RDB version Redis 7.0 writes in a DUMP footer and the highest it restores.
pub const RDB_VERSION: u16 = 10;

/// Redis's CRC-64 (`crc64.c`: Jones polynomial 0xad93d23594c935a9, reflected, no final xor).
const CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

/// RDB object type bytes (Redis 7.0 `rdb.h`) of the types shardline stores.
mod types {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const SET_INTSET: u8 = 11;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
}

/// Why a payload was refused, with Redis 7.0's RESTORE error for each case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadError {
    /// Shorter than the footer, a newer RDB version, or a checksum mismatch.
    VersionOrChecksum,
    /// The footer is right but the value cannot be read (unknown type, truncated, empty
    /// collection, a type shardline does not store such as streams).
    BadFormat,
}

impl PayloadError {
    /// The error reply Redis 7.0's RESTORE gives.
    pub fn message(self) -> &'static str {
        match self {
            PayloadError::VersionOrChecksum => "ERR DUMP payload version or checksum are wrong",
            PayloadError::BadFormat => "ERR Bad data format",
        }
    }
}

/// Redis's CRC-64 of `bytes` (`crc64(0, bytes, len)`).
pub fn crc64(bytes: &[u8]) -> u64 {
    CRC64.checksum(bytes)
}

/// The DUMP payload of `value`: type byte, RDB encoding, version 10 and CRC-64 footer.
pub fn dump(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode::value(&mut out, value);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks the footer of `payload` (version ≤ 10, CRC-64) and reads the value it holds; a
/// hash is kept small (in its payload's order) within `hash_limits`, else a table, as Redis
/// loads.
///
/// Errors: [`PayloadError`] (Redis's "version or checksum" check comes first, as in Redis).
pub fn restore(payload: &[u8], hash_limits: HashLimits) -> Result<Value, PayloadError> {
    let Some(body_len) = payload.len().checked_sub(10) else {
        return Err(PayloadError::VersionOrChecksum);
    };
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&payload[body_len + 2..]);
    if version > RDB_VERSION || crc64(&payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err(PayloadError::VersionOrChecksum);
    }
    decode::value(&payload[..body_len], hash_limits).ok_or(PayloadError::BadFormat)
}
