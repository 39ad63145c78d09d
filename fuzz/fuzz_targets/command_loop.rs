//! A client's byte stream through the command loop: RESP parser → `cmd::execute` on a real
//! keyspace → reply encoding in RESP2 and RESP3, as a shard serves an authenticated
//! connection (`Shard::execute_local`, without its `catch_unwind`: a panic is a finding).
//!
//! Input: the stream. The clock starts at a fixed time and moves 250 ms per request, so
//! short TTLs expire within the stream; the maintenance sweep runs after every request.
//! Each reply's encoding must read back as exactly one RESP reply: a CR or LF inside a
//! simple string or error would let a client's argument inject replies.
//!
//! Requests that would make the harness allocate a lot on purpose are skipped (see
//! [`too_costly`]); the server serves them, bounded by its own limits.

#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use shardline::cmd::execute;
use shardline::keyspace::Db;
use shardline::resp::{Protocol, RequestLimits, RequestParser};

/// 2023-11-14T22:13:20Z in unix ms.
const START_MS: u64 = 1_700_000_000_000;
const STEP_MS: u64 = 250;
/// Keys the maintenance sweep may expire per request.
const SWEEP_KEYS: usize = 16;
/// Largest SETRANGE offset run (the server allows up to 512 MiB, zero-filled).
const MAX_SETRANGE_OFFSET: i64 = 64 * 1024;
/// Largest SRANDMEMBER `-count` run.
const MAX_REPEATED_MEMBERS: i64 = 4096;
/// The server's own SRANDMEMBER limit: a larger `-count` is refused without allocating.
const SERVER_MAX_REPEATED: i64 = 1 << 24;
/// Largest valid string (`proto-max-bulk-len`): larger offsets are refused without allocating.
const MAX_STRING_LEN: i64 = 512 * 1024 * 1024;
/// The connection's limits with bulks capped at 1 MiB: a larger `$len` header only makes the
/// parser reserve room for it (up to 512 MiB, covered by the `resp_parser` target), which
/// would hide the command loop's own allocations from `-malloc_limit_mb`.
const LIMITS: RequestLimits = RequestLimits {
    max_bulk_bytes: 1024 * 1024,
    ..RequestLimits::authenticated()
};

/// The integer `arg` would be, read leniently (`+`, leading zeros): a superset of the
/// server's strict `string2ll` grammar, so anything the server reads as a number is seen.
fn lenient_int(arg: &[u8]) -> Option<i64> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}

/// Whether running `args` would allocate far beyond the input's size: SETRANGE with an
/// offset above 64 KiB (up to the 512 MiB limit, which is refused cheaply and so still run)
/// and SRANDMEMBER with a negative count below -4096 (down to the server's -2^24 limit).
fn too_costly(args: &[Bytes]) -> bool {
    let [name, _, count_or_offset, ..] = args else {
        return false;
    };
    let Some(n) = lenient_int(count_or_offset) else {
        return false;
    };
    if name.eq_ignore_ascii_case(b"setrange") {
        return n > MAX_SETRANGE_OFFSET && n <= MAX_STRING_LEN;
    }
    if name.eq_ignore_ascii_case(b"srandmember") {
        return (-SERVER_MAX_REPEATED..-MAX_REPEATED_MEMBERS).contains(&n);
    }
    false
}

/// The line starting at `at` (up to CRLF, which must be the first CR or LF) and the offset
/// after its CRLF.
fn read_line(wire: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let rest = wire.get(at..)?;
    let eol = rest.iter().position(|&b| b == b'\r' || b == b'\n')?;
    (rest.get(eol..eol + 2)? == b"\r\n").then(|| (&rest[..eol], at + eol + 2))
}

fn read_len(line: &[u8]) -> Option<i64> {
    std::str::from_utf8(line).ok()?.parse().ok()
}

/// Reads one RESP2/RESP3 reply starting at `at` and returns the offset after it, or `None`
/// if the bytes are not one well-formed reply (a client would lose sync).
fn skip_reply(wire: &[u8], at: usize) -> Option<usize> {
    let (line, next) = read_line(wire, at + 1)?;
    match *wire.get(at)? {
        b'+' | b'-' | b',' => Some(next),
        b':' => read_len(line).map(|_| next),
        b'_' => line.is_empty().then_some(next),
        b'#' => (line == b"t" || line == b"f").then_some(next),
        b'$' | b'=' => match read_len(line)? {
            -1 if wire[at] == b'$' => Some(next),
            n => {
                let end = next + usize::try_from(n).ok()?;
                (wire.get(end..end + 2)? == b"\r\n").then_some(end + 2)
            }
        },
        kind @ (b'*' | b'~' | b'>' | b'%') => match read_len(line)? {
            -1 if kind == b'*' => Some(next),
            n => {
                let items = usize::try_from(n).ok()? * if kind == b'%' { 2 } else { 1 };
                (0..items).try_fold(next, |pos, _| skip_reply(wire, pos))
            }
        },
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut db = Db::new();
    let mut parser = RequestParser::new();
    let mut input = BytesMut::from(data);
    let mut out = BytesMut::new();
    let mut now = START_MS;
    while let Ok(Some(args)) = parser.parse(&mut input, &LIMITS) {
        if too_costly(&args) {
            continue;
        }
        let reply = execute(&mut db, &args, now);
        for proto in [Protocol::Resp2, Protocol::Resp3] {
            out.clear();
            reply.encode(proto, &mut out);
            let end = skip_reply(&out, 0);
            assert_eq!(
                end,
                Some(out.len()),
                "{proto:?} encoding of {reply:?}: {out:?}"
            );
        }
        now += STEP_MS;
        db.sweep_expired(now, SWEEP_KEYS);
    }
});
