//! Numbers, differentially: every command that parses an integer or a float (an argument or a
//! stored value) gets the same tricky inputs on shardline and on a reference redis-server 7,
//! and every reply must be byte-identical — errors included, and the state read back after a
//! failed command (GET, EXISTS, PERSIST, EXPIRETIME) proves it changed nothing.

mod common;

use common::reference::RedisReference;
use common::{RawClient, Server};

/// Integer arguments: valid ones, and every way `string2ll` refuses a string (NUL inside,
/// spaces, `+`, `-0`, leading zeros, hex, exponent, fraction, overflow at i64::MAX/MIN ± 1).
const INTEGERS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"3",
    b"10",
    b"-0",
    b"+1",
    b" 1",
    b"1 ",
    b"\t1",
    b"1\r",
    b"",
    b"\0",
    b"1\x002",
    b"1\0",
    b"\x001",
    b"007",
    b"0x10",
    b"1e3",
    b"1.5",
    b"1.0",
    b"abc",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"18446744073709551616",
    b"99999999999999999999999999999",
];

/// Float arguments beyond [`INTEGERS`]: what `strtold` accepts over the whole string (hex,
/// `inf`, exponents, 17+ digits) and what `string2ld` refuses (NaN, overflow, underflow to
/// zero, trailing bytes after a NUL).
const FLOATS: &[&[u8]] = &[
    b"0.1",
    b"-0.0",
    b".5",
    b"5.",
    b"3.0e3",
    b"1e",
    b"1e+",
    b"0x1p-3",
    b"0x",
    b"inf",
    b"-inf",
    b"+inf",
    b"INF",
    b"infinity",
    b"nan",
    b"-nan",
    b"NaN",
    b"1e5000",
    b"-1e5000",
    b"1e-5000",
    b"0.12345678901234567",
    b"1.7976931348623157e308",
    b"4.9e-324",
    b"2.2250738585072014e-308",
    b"123456789012345678901234567890",
    b"1.5\0",
    b"0\x00.5",
    b"2\x009",
    b"1.5 ",
    b" 1.5",
];

/// Expiration arguments: valid ones far from "now" (so the outcome never depends on timing),
/// the invalid forms, and the values that overflow once scaled to milliseconds or added to
/// the current time.
const EXPIRES: &[&[u8]] = &[
    b"100000",
    b"99999999999",
    b"0",
    b"-1",
    b"+100000",
    b" 100000",
    b"100000 ",
    b"100000\0",
    b"1\x0000000",
    b"",
    b"\0",
    b"1e5",
    b"100000.5",
    b"0x10",
    b"-0",
    b"9223372036854775",
    b"9223372036854775807",
    b"9223372036854775808",
    b"-9223372036854775808",
    b"-9223372036854775809",
];

/// shardline (TLS, authenticated) and redis-server side by side; records every request whose
/// replies differ.
struct Pair {
    _server: Server,
    _redis: RedisReference,
    ours: RawClient,
    theirs: RawClient,
    mismatches: Vec<String>,
    requests: usize,
}

impl Pair {
    fn start() -> Pair {
        let server = Server::start(&["--smp", "2"]);
        // As many databases as shardline's default: SELECT answers alike.
        let redis = RedisReference::start(&["--databases", "16"]);
        let mut ours = RawClient::connect(&server);
        ours.roundtrip(&[b"AUTH", server.password.as_bytes()], b"+OK\r\n");
        let theirs = RawClient::plain(redis.addr);
        Pair {
            _server: server,
            _redis: redis,
            ours,
            theirs,
            mismatches: Vec::new(),
            requests: 0,
        }
    }

    /// Sends `args` to both; the replies must be byte-identical.
    fn run(&mut self, args: &[&[u8]]) {
        let (ours, theirs) = (self.ours.request(args), self.theirs.request(args));
        self.requests += 1;
        if ours != theirs {
            self.record(args, &ours, &theirs);
        }
    }

    /// Sends `args` to both; the replies must be both successes (their content is server
    /// specific, e.g. HELLO's) or byte-identical.
    fn run_errors_only(&mut self, args: &[&[u8]]) {
        let (ours, theirs) = (self.ours.request(args), self.theirs.request(args));
        self.requests += 1;
        if (ours[0] == b'-' || theirs[0] == b'-') && ours != theirs {
            self.record(args, &ours, &theirs);
        }
    }

    /// Starts a case from an empty keyspace.
    fn flush(&mut self) {
        self.run(&[b"FLUSHALL"]);
    }

    fn record(&mut self, args: &[&[u8]], ours: &[u8], theirs: &[u8]) {
        let show = |b: &[u8]| b[..b.len().min(200)].escape_ascii().to_string();
        let request: Vec<String> = args.iter().map(|a| show(a)).collect();
        self.mismatches.push(format!(
            "{request:?}\n    shardline: {}\n    redis:     {}",
            show(ours),
            show(theirs)
        ));
    }

    /// Fails with every differing request at once.
    fn check(self) {
        assert!(
            self.mismatches.is_empty(),
            "{} of {} replies differ from redis-server:\n{}",
            self.mismatches.len(),
            self.requests,
            self.mismatches.join("\n")
        );
        assert!(self.requests > 100, "only {} requests ran", self.requests);
    }
}

#[test]
fn incr_family_parses_stored_values_and_increments_like_redis() {
    let mut p = Pair::start();
    for &v in INTEGERS.iter().chain(FLOATS) {
        // The stored value is parsed; a failure leaves it as it was.
        p.flush();
        for cmd in [&b"INCR"[..], b"DECR"] {
            p.run(&[b"SET", b"n", v]);
            p.run(&[cmd, b"n"]);
            p.run(&[b"GET", b"n"]);
        }
        for cmd in [&b"INCRBY"[..], b"DECRBY"] {
            p.run(&[b"SET", b"n", v]);
            p.run(&[cmd, b"n", b"5"]);
            p.run(&[b"GET", b"n"]);
        }
        p.run(&[b"SET", b"n", v]);
        p.run(&[b"INCRBYFLOAT", b"n", b"1"]);
        p.run(&[b"GET", b"n"]);
        p.run(&[b"HSET", b"h", b"f", v]);
        p.run(&[b"HINCRBY", b"h", b"f", b"1"]);
        p.run(&[b"HGET", b"h", b"f"]);
        p.run(&[b"HSET", b"h", b"f", v]);
        p.run(&[b"HINCRBYFLOAT", b"h", b"f", b"1"]);
        p.run(&[b"HGET", b"h", b"f"]);

        // The increment is parsed; a failure creates nothing and changes nothing.
        p.flush();
        for cmd in [&b"INCRBY"[..], b"DECRBY", b"INCRBYFLOAT"] {
            p.run(&[b"SET", b"n", b"10"]);
            p.run(&[cmd, b"n", v]);
            p.run(&[b"GET", b"n"]);
            p.run(&[cmd, b"fresh", v]);
            p.run(&[b"EXISTS", b"fresh"]);
            p.run(&[b"DEL", b"fresh"]);
        }
        for cmd in [&b"HINCRBY"[..], b"HINCRBYFLOAT"] {
            p.run(&[b"HSET", b"h", b"f", b"10"]);
            p.run(&[cmd, b"h", b"f", v]);
            p.run(&[b"HGET", b"h", b"f"]);
            p.run(&[cmd, b"fresh", b"f", v]);
            p.run(&[b"EXISTS", b"fresh"]);
            p.run(&[b"DEL", b"fresh"]);
        }
    }
    // Overflow at the edges, and float sums with 17 significant digits.
    p.flush();
    for (start, by) in [
        (&b"9223372036854775807"[..], &b"1"[..]),
        (b"-9223372036854775808", b"-1"),
        (b"-9223372036854775808", b"1"),
        (b"1", b"-9223372036854775808"),
    ] {
        for cmd in [&b"INCRBY"[..], b"DECRBY"] {
            p.run(&[b"SET", b"n", start]);
            p.run(&[cmd, b"n", by]);
            p.run(&[b"GET", b"n"]);
        }
        p.run(&[b"HSET", b"h", b"f", start]);
        p.run(&[b"HINCRBY", b"h", b"f", by]);
        p.run(&[b"HGET", b"h", b"f"]);
    }
    for (start, by) in [
        (&b"0.1"[..], &b"0.2"[..]),
        (b"1.7976931348623157e308", b"1.7976931348623157e308"),
        (b"0.12345678901234567", b"1e-17"),
        (b"1e4932", b"1e4932"),
        (b"inf", b"1"),
    ] {
        p.run(&[b"SET", b"n", start]);
        p.run(&[b"INCRBYFLOAT", b"n", by]);
        p.run(&[b"GET", b"n"]);
        p.run(&[b"HSET", b"h", b"f", start]);
        p.run(&[b"HINCRBYFLOAT", b"h", b"f", by]);
        p.run(&[b"HGET", b"h", b"f"]);
    }
    p.check();
}

#[test]
fn expirations_parse_like_redis_and_failures_keep_the_key() {
    let mut p = Pair::start();
    for &v in EXPIRES {
        p.flush();
        // SET's options, SETEX/PSETEX and GETEX on a key that already holds a value.
        for (cmd, opt) in [
            (&b"SET"[..], &b"EX"[..]),
            (b"SET", b"PX"),
            (b"SET", b"EXAT"),
            (b"SET", b"PXAT"),
        ] {
            p.run(&[b"SET", b"k", b"old"]);
            p.run(&[cmd, b"k", b"new", opt, v]);
            p.run(&[b"GET", b"k"]);
            p.run(&[b"PERSIST", b"k"]);
        }
        for cmd in [&b"SETEX"[..], b"PSETEX"] {
            p.run(&[b"SET", b"k", b"old"]);
            p.run(&[cmd, b"k", v, b"new"]);
            p.run(&[b"GET", b"k"]);
            p.run(&[b"PERSIST", b"k"]);
        }
        for opt in [&b"EX"[..], b"PX", b"EXAT", b"PXAT"] {
            p.run(&[b"SET", b"k", b"old"]);
            p.run(&[b"GETEX", b"k", opt, v]);
            p.run(&[b"EXISTS", b"k"]);
            p.run(&[b"PERSIST", b"k"]);
        }
        // The EXPIRE family, relative and absolute; EXPIRETIME reads back the deadline.
        for cmd in [&b"EXPIRE"[..], b"PEXPIRE"] {
            p.run(&[b"SET", b"k", b"v"]);
            p.run(&[cmd, b"k", v]);
            p.run(&[b"EXISTS", b"k"]);
            p.run(&[b"PERSIST", b"k"]);
        }
        for cmd in [&b"EXPIREAT"[..], b"PEXPIREAT"] {
            p.run(&[b"SET", b"k", b"v"]);
            p.run(&[cmd, b"k", v]);
            p.run(&[b"PEXPIRETIME", b"k"]);
            p.run(&[b"EXPIRETIME", b"k"]);
        }
        p.run(&[b"EXPIRE", b"missing", v]);
    }
    p.check();
}

#[test]
fn ranges_lists_and_sets_parse_indexes_and_counts_like_redis() {
    let mut p = Pair::start();
    for &v in INTEGERS {
        p.flush();
        p.run(&[b"SET", b"s", b"hello"]);
        p.run(&[b"GETRANGE", b"s", v, b"3"]);
        p.run(&[b"GETRANGE", b"s", b"0", v]);
        p.run(&[b"SETRANGE", b"s", v, b"X"]);
        p.run(&[b"GET", b"s"]);

        p.run(&[b"RPUSH", b"l", b"a", b"b", b"c", b"a", b"d"]);
        p.run(&[b"LRANGE", b"l", v, b"2"]);
        p.run(&[b"LRANGE", b"l", b"0", v]);
        p.run(&[b"LINDEX", b"l", v]);
        for opt in [&b"RANK"[..], b"COUNT", b"MAXLEN"] {
            p.run(&[b"LPOS", b"l", b"a", opt, v]);
        }
        p.run(&[b"LSET", b"l", v, b"x"]);
        p.run(&[b"LRANGE", b"l", b"0", b"-1"]);
        p.run(&[b"LREM", b"l", v, b"a"]);
        p.run(&[b"LRANGE", b"l", b"0", b"-1"]);
        p.run(&[b"LTRIM", b"l", v, b"-1"]);
        p.run(&[b"LRANGE", b"l", b"0", b"-1"]);
        p.run(&[b"DEL", b"l"]);
        p.run(&[b"RPUSH", b"l", b"a", b"b", b"c"]);
        p.run(&[b"LTRIM", b"l", b"0", v]);
        p.run(&[b"LRANGE", b"l", b"0", b"-1"]);
        for cmd in [&b"LPOP"[..], b"RPOP"] {
            p.run(&[b"DEL", b"l"]);
            p.run(&[b"RPUSH", b"l", b"a", b"b", b"c"]);
            p.run(&[cmd, b"l", v]);
            p.run(&[b"LRANGE", b"l", b"0", b"-1"]);
        }

        // A one-member set makes the random picks deterministic.
        p.run(&[b"SADD", b"set", b"m"]);
        p.run(&[b"SRANDMEMBER", b"set", v]);
        p.run(&[b"SPOP", b"set", v]);
        p.run(&[b"SMEMBERS", b"set"]);
        p.run(&[b"SRANDMEMBER", b"nosuchset", v]);
        p.run(&[b"SPOP", b"nosuchset", v]);
    }
    p.check();
}

#[test]
fn scan_select_and_hello_parse_like_redis() {
    let mut p = Pair::start();
    p.flush();
    for &v in INTEGERS {
        // A shardline cursor also names a shard, so only the errors can be compared.
        p.run_errors_only(&[b"SCAN", v]);
        p.run_errors_only(&[b"SCAN", b"0", b"COUNT", v]);
        p.run(&[b"SELECT", v]);
        p.run_errors_only(&[b"HELLO", v]);
        p.run_errors_only(&[b"HELLO", b"2"]);
    }
    p.check();
}

/// DEBUG SLEEP has no Redis counterpart to compare with (Redis's `strtod` without an end
/// check sleeps 0 s for any garbage): shardline parses the whole argument as a float.
#[test]
fn debug_sleep_parses_the_whole_argument() {
    let server = Server::start(&["--smp", "1", "--enable-debug-command"]);
    let mut c = RawClient::connect(&server);
    c.roundtrip(&[b"AUTH", server.password.as_bytes()], b"+OK\r\n");
    for ok in [&b"0"[..], b"0.0", b"0.001", b"0x0", b"1e-3", b"-0"] {
        c.roundtrip(&[b"DEBUG", b"SLEEP", ok], b"+OK\r\n");
    }
    for bad in [
        &b"0\x005"[..],
        b"\0",
        b"",
        b" 0",
        b"0 ",
        b"nan",
        b"abc",
        b"-1",
        b"1e5000",
        b"inf",
    ] {
        c.roundtrip(
            &[b"DEBUG", b"SLEEP", bad],
            b"-ERR value is not a valid float\r\n",
        );
    }
    for long in [&b"61"[..], b"60.001", b"1e4000"] {
        c.roundtrip(
            &[b"DEBUG", b"SLEEP", long],
            b"-ERR DEBUG SLEEP is limited to 60 seconds\r\n",
        );
    }
}
