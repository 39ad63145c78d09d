//! DUMP payload reader (`shardline::rdb::restore`), Redis 7.0's serialized value format.
//!
//! Input: a payload body (type byte + encoding). It is given a valid footer (RDB version 10
//! and the CRC-64 of the body), so every input reaches the body decoder, and is also tried
//! as a whole payload as sent. A value that is accepted must dump and restore to itself.
//! Allocations stay proportional to the input (`-malloc_limit_mb 64` in `run.sh`): counts
//! and LZF lengths are checked against the bytes left before anything is reserved.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shardline::keyspace::HashLimits;
use shardline::rdb;

fuzz_target!(|body: &[u8]| {
    // Redis's default listpack limits: small hashes come back as pairs in order, larger as
    // tables.
    let limits = HashLimits::default();
    let mut payload = body.to_vec();
    payload.extend_from_slice(&rdb::RDB_VERSION.to_le_bytes());
    let crc = rdb::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    if let Ok(value) = rdb::restore(&payload, limits) {
        assert_eq!(
            rdb::restore(&rdb::dump(&value), limits),
            Ok(value),
            "a restored value dumps and restores to itself"
        );
    }
    let _ = rdb::restore(body, limits);
});
