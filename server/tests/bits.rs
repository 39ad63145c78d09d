//! SETBIT and GETBIT over real sockets with two shards (Redis 7.0 `bitops.c` replies and
//! errors), the `--proto-max-bulk-len` bound they share with SETRANGE and APPEND, their
//! append-only log records and replay; TOUCH's access-clock update; COMMAND's entries for
//! them.

mod common;

use common::{aof_path, int_reply, key_on, login_plain, RawClient, Server};

const SMP2: &[&str] = &["--tls", "off", "--smp", "2", "--appendfsync", "always"];
const BAD_OFFSET: &[u8] = b"-ERR bit offset is not an integer or out of range\r\n";
const BAD_BIT: &[u8] = b"-ERR bit is not an integer or out of range\r\n";
const EXCEEDS: &[u8] = b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n";
const WRONGTYPE: &[u8] = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

/// INFO's `keyspace_hits` and `keyspace_misses`.
fn keyspace_stats(c: &mut RawClient) -> (i64, i64) {
    let info = String::from_utf8_lossy(&c.request(&[b"INFO", b"stats"])).into_owned();
    let field = |name: &str| -> i64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {info:?}"))
    };
    (field("keyspace_hits"), field("keyspace_misses"))
}

fn setbit(c: &mut RawClient, key: &str, offset: &str, value: &str, expected: &[u8]) {
    c.roundtrip(
        &[
            b"SETBIT",
            key.as_bytes(),
            offset.as_bytes(),
            value.as_bytes(),
        ],
        expected,
    );
}

fn getbit(c: &mut RawClient, key: &str, offset: &str, expected: &[u8]) {
    c.roundtrip(&[b"GETBIT", key.as_bytes(), offset.as_bytes()], expected);
}

#[test]
fn setbit_and_getbit_on_both_shards() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    for shard in [0, 1] {
        let k = key_on(shard, "bits");
        // A missing key reads 0 anywhere; SETBIT creates it, zero-padded up to the bit's byte.
        getbit(&mut c, &k, "0", b":0\r\n");
        setbit(&mut c, &k, "1", "1", b":0\r\n");
        c.roundtrip(&[b"GET", k.as_bytes()], b"$1\r\n@\r\n");
        setbit(&mut c, &k, "17", "1", b":0\r\n");
        c.roundtrip(&[b"GET", k.as_bytes()], b"$3\r\n@\x00@\r\n");
        setbit(&mut c, &k, "1", "1", b":1\r\n");
        setbit(&mut c, &k, "1", "0", b":1\r\n");
        c.roundtrip(&[b"GET", k.as_bytes()], b"$3\r\n\x00\x00@\r\n");
        getbit(&mut c, &k, "17", b":1\r\n");
        getbit(&mut c, &k, "16", b":0\r\n");
        getbit(&mut c, &k, "10000", b":0\r\n");
        c.roundtrip(&[b"STRLEN", k.as_bytes()], b":3\r\n");
        // Bits of an integer-encoded string are those of its digits: "1" is 0x31.
        c.roundtrip(&[b"SET", k.as_bytes(), b"1"], b"+OK\r\n");
        getbit(&mut c, &k, "2", b":1\r\n");
        getbit(&mut c, &k, "6", b":0\r\n");
        setbit(&mut c, &k, "6", "1", b":0\r\n");
        c.roundtrip(&[b"GET", k.as_bytes()], b"$1\r\n3\r\n");
        c.roundtrip(&[b"OBJECT", b"ENCODING", k.as_bytes()], b"$3\r\nraw\r\n");
        // SETBIT keeps the TTL, as SETRANGE.
        c.roundtrip(&[b"PEXPIREAT", k.as_bytes(), b"4000000000000"], b":1\r\n");
        setbit(&mut c, &k, "1", "1", b":0\r\n");
        c.roundtrip(&[b"PEXPIRETIME", k.as_bytes()], b":4000000000000\r\n");
        // Errors, checked offset first, then the bit, then the type; none writes.
        for offset in ["-1", "4294967296", "x", "1.5", ""] {
            setbit(&mut c, &k, offset, "1", BAD_OFFSET);
            getbit(&mut c, &k, offset, BAD_OFFSET);
        }
        for bit in ["-1", "2", "10", "x", ""] {
            setbit(&mut c, &k, "0", bit, BAD_BIT);
        }
        setbit(&mut c, &k, "x", "2", BAD_OFFSET);
        c.roundtrip(&[b"GET", k.as_bytes()], b"$1\r\ns\r\n");
        let l = key_on(shard, "list");
        c.roundtrip(&[b"RPUSH", l.as_bytes(), b"a"], b":1\r\n");
        setbit(&mut c, &l, "0", "1", WRONGTYPE);
        getbit(&mut c, &l, "0", WRONGTYPE);
        setbit(&mut c, &l, "-1", "1", BAD_OFFSET);
        setbit(&mut c, &l, "0", "2", BAD_BIT);
        c.roundtrip(
            &[b"SETBIT", k.as_bytes(), b"0"],
            b"-ERR wrong number of arguments for 'setbit' command\r\n",
        );
        c.roundtrip(
            &[b"GETBIT", k.as_bytes(), b"0", b"1"],
            b"-ERR wrong number of arguments for 'getbit' command\r\n",
        );
    }
    // The last bit of the 512 MiB default is allowed (GETBIT reads it without allocating).
    getbit(&mut c, "nokey", "4294967295", b":0\r\n");
}

#[test]
fn proto_max_bulk_len_bounds_setbit_setrange_and_append() {
    let mut args = SMP2.to_vec();
    args.extend(["--proto-max-bulk-len", "1048576"]);
    let server = Server::start(&args);
    let mut c = login_plain(&server);
    // Byte 1048575 is the last one a 1 MiB string holds.
    setbit(&mut c, "big", "8388607", "1", b":0\r\n");
    c.roundtrip(&[b"STRLEN", b"big"], b":1048576\r\n");
    getbit(&mut c, "big", "8388607", b":1\r\n");
    setbit(&mut c, "big", "8388608", "1", BAD_OFFSET);
    getbit(&mut c, "big", "8388608", BAD_OFFSET);
    c.roundtrip(&[b"APPEND", b"big", b"x"], EXCEEDS);
    c.roundtrip(&[b"SETRANGE", b"big", b"1048576", b"x"], EXCEEDS);
    c.roundtrip(&[b"SETRANGE", b"new", b"1048576", b"x"], EXCEEDS);
    c.roundtrip(&[b"SETRANGE", b"new", b"1048575", b"x"], b":1048576\r\n");
    c.roundtrip(&[b"STRLEN", b"big"], b":1048576\r\n");
    c.roundtrip(&[b"APPEND", b"small", b"x"], b":1\r\n");
}

#[test]
fn setbit_is_logged_and_replayed_even_past_a_lower_limit() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    let (a, b) = (key_on(0, "a"), key_on(1, "b"));
    setbit(&mut c, &a, "9", "1", b":0\r\n");
    setbit(&mut c, &a, "9", "1", b":1\r\n");
    setbit(&mut c, &a, "0", "1", b":0\r\n");
    // 9,000,000 bits: 1,125,001 bytes, more than the 1 MiB the restart allows.
    setbit(&mut c, &b, "9000000", "1", b":0\r\n");
    setbit(&mut c, &b, "-1", "1", BAD_OFFSET);
    let password = server.password.clone();
    let dir = server.kill9();
    let log0 = std::fs::read(aof_path(dir.path(), 0)).expect("log of shard 0");
    let record = format!(
        "*4\r\n$6\r\nSETBIT\r\n${}\r\n{a}\r\n$1\r\n0\r\n$1\r\n1\r\n",
        a.len()
    );
    assert!(
        log0.windows(record.len()).any(|w| w == record.as_bytes()),
        "{:?}",
        String::from_utf8_lossy(&log0)
    );
    let log1 =
        String::from_utf8_lossy(&std::fs::read(aof_path(dir.path(), 1)).expect("log")).into_owned();
    assert!(log1.contains("$7\r\n9000000\r\n"), "{log1:?}");
    assert!(!log1.contains("$2\r\n-1\r\n"), "{log1:?}");
    let mut args = SMP2.to_vec();
    args.extend(["--proto-max-bulk-len", "1048576"]);
    let server = Server::restart_in(dir, &args, &password);
    let mut c = login_plain(&server);
    c.roundtrip(&[b"GET", a.as_bytes()], b"$2\r\n\x80@\r\n");
    c.roundtrip(&[b"STRLEN", b.as_bytes()], b":1125001\r\n");
    c.roundtrip(
        &[b"GETRANGE", b.as_bytes(), b"-1", b"-1"],
        b"$1\r\n\x80\r\n",
    );
    getbit(&mut c, &b, "9000000", BAD_OFFSET);
}

#[test]
fn touch_resets_the_idle_time() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    let keys = [key_on(0, "idle"), key_on(1, "idle")];
    for k in &keys {
        c.roundtrip(&[b"SET", k.as_bytes(), b"v"], b"+OK\r\n");
    }
    // The access clock counts whole seconds: idle time only grows while nothing reads the key.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    for k in &keys {
        // TTL, TYPE and EXISTS leave the clock alone.
        c.roundtrip(&[b"TTL", k.as_bytes()], b":-1\r\n");
        c.roundtrip(&[b"TYPE", k.as_bytes()], b"+string\r\n");
        c.roundtrip(&[b"EXISTS", k.as_bytes()], b":1\r\n");
        let idle = int_reply(&c.request(&[b"OBJECT", b"IDLETIME", k.as_bytes()]));
        assert!(idle >= 2, "idle {idle} before TOUCH");
        let before = keyspace_stats(&mut c);
        c.roundtrip(
            &[b"TOUCH", k.as_bytes(), b"missing", k.as_bytes()],
            b":2\r\n",
        );
        // Like Redis's lookupKeyRead: two hits and a miss.
        let after = keyspace_stats(&mut c);
        assert_eq!((after.0 - before.0, after.1 - before.1), (2, 1));
        let idle = int_reply(&c.request(&[b"OBJECT", b"IDLETIME", k.as_bytes()]));
        assert!(idle <= 1, "idle {idle} after TOUCH");
    }
}

#[test]
fn command_describes_setbit_getbit_and_config_rewrite() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    c.roundtrip(
        &[b"COMMAND", b"GETKEYSANDFLAGS", b"setbit", b"k", b"7", b"1"],
        b"*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+update\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"GETKEYSANDFLAGS", b"getbit", b"k", b"7"],
        b"*1\r\n*2\r\n$1\r\nk\r\n*2\r\n+RO\r\n+access\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"LIST", b"FILTERBY", b"PATTERN", b"*etbit"],
        b"*2\r\n$6\r\nsetbit\r\n$6\r\ngetbit\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"LIST", b"FILTERBY", b"ACLCAT", b"bitmap"],
        b"*7\r\n$6\r\nsetbit\r\n$6\r\ngetbit\r\n$8\r\nbitcount\r\n$6\r\nbitpos\r\n$8\r\nbitfield\r\n$11\r\nbitfield_ro\r\n$5\r\nbitop\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"LIST", b"FILTERBY", b"PATTERN", b"config|re*"],
        b"*2\r\n$16\r\nconfig|resetstat\r\n$14\r\nconfig|rewrite\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"DOCS", b"setbit"],
        b"*2\r\n$6\r\nsetbit\r\n*6\r\n$7\r\nsummary\r\n$66\r\nSets or clears the bit at offset in the string value stored at key\r\n$5\r\nsince\r\n$5\r\n2.2.0\r\n$5\r\ngroup\r\n$6\r\nbitmap\r\n",
    );
    // More than 256 keys come back whole.
    let keys: Vec<String> = (1..=260).map(|i| format!("key{i}")).collect();
    let mut line: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYS", b"DEL"];
    line.extend(keys.iter().map(|k| k.as_bytes()));
    let mut expected = b"*260\r\n".to_vec();
    for k in &keys {
        expected.extend(format!("${}\r\n{k}\r\n", k.len()).into_bytes());
    }
    c.roundtrip(&line, &expected);
}
