//! OBJECT ENCODING|IDLETIME|FREQ|REFCOUNT|HELP, MEMORY USAGE and SLOWLOG GET|LEN|RESET over
//! both shards of a 2-shard server, with Redis 7.0's replies.

mod common;

use common::{login_plain, RawClient, Server};
use shardline::keyspace::slot::owner_shard;

const ARGS: &[&str] = &["--tls", "off", "--smp", "2", "--appendonly", "no"];

fn key_on(shard: usize, prefix: &str) -> String {
    (0..)
        .map(|i| format!("{prefix}:{i}"))
        .find(|k| owner_shard(k.as_bytes(), 2) == shard)
        .expect("a key on that shard")
}

fn bulk(value: &str) -> Vec<u8> {
    format!("${}\r\n{value}\r\n", value.len()).into_bytes()
}

fn encoding(client: &mut RawClient, key: &str) -> String {
    let reply = client.request(&[b"OBJECT", b"ENCODING", key.as_bytes()]);
    String::from_utf8_lossy(&reply)
        .lines()
        .nth(1)
        .unwrap_or("")
        .to_string()
}

#[test]
fn object_encoding_follows_redis_7_0() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    for shard in 0..2 {
        let k = |what: &str| key_on(shard, what);
        c.roundtrip(&[b"SET", k("int").as_bytes(), b"12345"], b"+OK\r\n");
        c.roundtrip(&[b"SET", k("emb").as_bytes(), b"hello"], b"+OK\r\n");
        c.roundtrip(&[b"SET", k("raw").as_bytes(), &[b'x'; 45]], b"+OK\r\n");
        c.roundtrip(&[b"RPUSH", k("list").as_bytes(), b"a"], b":1\r\n");
        c.roundtrip(&[b"HSET", k("hsmall").as_bytes(), b"f", b"v"], b":1\r\n");
        c.roundtrip(
            &[b"HSET", k("hbig").as_bytes(), b"f", &[b'v'; 65]],
            b":1\r\n",
        );
        c.roundtrip(&[b"SADD", k("sint").as_bytes(), b"1", b"2"], b":2\r\n");
        c.roundtrip(&[b"SADD", k("sstr").as_bytes(), b"a"], b":1\r\n");
        let expected = [
            ("int", "int"),
            ("emb", "embstr"),
            ("raw", "raw"),
            ("list", "quicklist"),
            ("hsmall", "listpack"),
            ("hbig", "hashtable"),
            ("sint", "intset"),
            ("sstr", "hashtable"),
        ];
        for (key, enc) in expected {
            assert_eq!(encoding(&mut c, &k(key)), enc, "{key} on shard {shard}");
        }
        // A string changed in place is `raw` until it is set anew.
        c.roundtrip(&[b"SET", k("rng").as_bytes(), b"1234"], b"+OK\r\n");
        c.roundtrip(&[b"SETRANGE", k("rng").as_bytes(), b"0", b"2"], b":4\r\n");
        assert_eq!(encoding(&mut c, &k("rng")), "raw");
        c.roundtrip(&[b"SET", k("rng").as_bytes(), b"2234"], b"+OK\r\n");
        c.roundtrip(&[b"SETRANGE", k("rng").as_bytes(), b"0", b""], b":4\r\n");
        assert_eq!(
            encoding(&mut c, &k("rng")),
            "int",
            "an empty SETRANGE changes nothing"
        );
        c.roundtrip(&[b"APPEND", k("rng").as_bytes(), b"5"], b":5\r\n");
        assert_eq!(encoding(&mut c, &k("rng")), "raw");
        c.roundtrip(&[b"INCR", k("rng").as_bytes()], b":22346\r\n");
        assert_eq!(encoding(&mut c, &k("rng")), "int");
        // Redis shares the integers 0..9999 (refcount INT_MAX); 12345 is its own object.
        c.roundtrip(&[b"SET", k("small").as_bytes(), b"123"], b"+OK\r\n");
        c.roundtrip(
            &[b"OBJECT", b"REFCOUNT", k("small").as_bytes()],
            b":2147483647\r\n",
        );
        c.roundtrip(&[b"OBJECT", b"REFCOUNT", k("int").as_bytes()], b":1\r\n");
        c.roundtrip(&[b"OBJECT", b"REFCOUNT", k("emb").as_bytes()], b":1\r\n");
        c.roundtrip(
            &[b"OBJECT", b"ENCODING", k("missing").as_bytes()],
            b"$-1\r\n",
        );
        // MEMORY USAGE: 96 bytes per key + key + value (see keyspace/memory.rs).
        let expected = 96 + k("emb").len() + 5;
        c.roundtrip(
            &[b"MEMORY", b"USAGE", k("emb").as_bytes(), b"SAMPLES", b"0"],
            format!(":{expected}\r\n").as_bytes(),
        );
        c.roundtrip(&[b"MEMORY", b"USAGE", k("missing").as_bytes()], b"$-1\r\n");
    }
    c.roundtrip(&[b"OBJECT", b"FREQ", b"missing"], b"$-1\r\n");
    c.roundtrip(
        &[b"OBJECT", b"FREQ", key_on(1, "emb").as_bytes()],
        b"-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please \
          note that when switching between policies at runtime LRU and LFU data will take some \
          time to adjust.\r\n",
    );
    c.roundtrip(
        &[b"OBJECT", b"NOPE", b"x"],
        b"-ERR unknown subcommand 'NOPE'. Try OBJECT HELP.\r\n",
    );
    c.roundtrip(
        &[b"MEMORY", b"USAGE", b"x", b"SAMPLES", b"-1"],
        b"-ERR syntax error\r\n",
    );
    let help = String::from_utf8_lossy(&c.request(&[b"OBJECT", b"HELP"])).into_owned();
    assert!(help.starts_with(
        "*15\r\n+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+ENCODING <key>\r\n"
    ));
}

#[test]
fn reads_reset_the_idle_time_ttl_type_exists_do_not() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    let keys = [key_on(0, "idle"), key_on(1, "idle")];
    for key in &keys {
        c.roundtrip(&[b"SET", key.as_bytes(), b"v"], b"+OK\r\n");
    }
    std::thread::sleep(std::time::Duration::from_millis(2200));
    for key in &keys {
        // TTL, TYPE and EXISTS are not accesses (Redis's LOOKUP_NOTOUCH).
        c.roundtrip(&[b"TTL", key.as_bytes()], b":-1\r\n");
        c.roundtrip(&[b"TYPE", key.as_bytes()], b"+string\r\n");
        c.roundtrip(&[b"EXISTS", key.as_bytes()], b":1\r\n");
        let idle = c.request(&[b"OBJECT", b"IDLETIME", key.as_bytes()]);
        assert!(
            idle == b":2\r\n" || idle == b":3\r\n",
            "{:?}",
            String::from_utf8_lossy(&idle)
        );
        c.roundtrip(&[b"GET", key.as_bytes()], &bulk("v"));
        c.roundtrip(&[b"OBJECT", b"IDLETIME", key.as_bytes()], b":0\r\n");
    }
}

#[test]
fn slowlog_keeps_commands_of_every_shard() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    let (a, b) = (key_on(0, "slow"), key_on(1, "slow"));
    // The login's AUTH may be logged: it includes the deliberately slow password hash.
    c.roundtrip(&[b"SLOWLOG", b"RESET"], b"+OK\r\n");
    c.roundtrip(&[b"SET", a.as_bytes(), b"before"], b"+OK\r\n");
    // Default 10000 µs: a SET is not that slow.
    c.roundtrip(&[b"SLOWLOG", b"LEN"], b":0\r\n");
    c.roundtrip(
        &[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"0"],
        b"+OK\r\n",
    );
    c.roundtrip(&[b"SET", a.as_bytes(), b"1"], b"+OK\r\n");
    let long = vec![b'x'; 200];
    c.roundtrip(&[b"SET", b.as_bytes(), &long], b"+OK\r\n");
    // Not logged: the threshold is read once the command has run (as Redis).
    c.roundtrip(
        &[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"-1"],
        b"+OK\r\n",
    );
    // The two SETs and the CONFIG SET that lowered the threshold (redis-server 7.0.15: 3).
    c.roundtrip(&[b"SLOWLOG", b"LEN"], b":3\r\n");
    let got = c.request(&[b"SLOWLOG", b"GET"]);
    let text = String::from_utf8_lossy(&got).into_owned();
    let lines: Vec<&str> = text.split("\r\n").collect();
    // Newest first: [id, time, µs, [SET b <128 bytes>... (72 more bytes)], addr, name].
    assert_eq!(lines[0], "*3", "{text}");
    assert_eq!(lines[1], "*6");
    let newest_id: i64 = lines[2][1..].parse().expect("id");
    assert_eq!(lines[5], "*3");
    assert_eq!(lines[7], "SET");
    assert_eq!(lines[9], b);
    let truncated = format!("{}... (72 more bytes)", "x".repeat(128));
    assert_eq!(lines[10], format!("${}", truncated.len()));
    assert_eq!(lines[11], truncated);
    let older = text.find(&format!("\r\n:{}\r\n", newest_id - 1));
    assert!(older.is_some(), "older entry id {}: {text}", newest_id - 1);
    assert!(text.contains(&format!(
        "*3\r\n$3\r\nSET\r\n${}\r\n{a}\r\n$1\r\n1\r\n",
        a.len()
    )));
    c.roundtrip(
        &[b"SLOWLOG", b"GET", b"1"],
        &[
            b"*1\r\n".as_slice(),
            &got[4..4 + got[4..]
                .windows(6)
                .position(|w| w == b"\r\n*6\r\n")
                .map_or(got.len() - 4, |p| p + 2)],
        ]
        .concat(),
    );
    assert!(
        text.contains("*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n"),
        "{text}"
    );
    c.roundtrip(&[b"SLOWLOG", b"RESET"], b"+OK\r\n");
    c.roundtrip(&[b"SLOWLOG", b"LEN"], b":0\r\n");
    c.roundtrip(&[b"SET", a.as_bytes(), b"2"], b"+OK\r\n");
    c.roundtrip(&[b"SLOWLOG", b"LEN"], b":0\r\n");
    c.roundtrip(
        &[b"SLOWLOG", b"GET", b"-2"],
        b"-ERR count should be greater than or equal to -1\r\n",
    );
}

/// `(µs, key)` of every `LPOS key …` entry in a SLOWLOG GET reply.
fn lpos_durations(reply: &[u8]) -> Vec<(u64, String)> {
    let text = String::from_utf8_lossy(reply).into_owned();
    let lines: Vec<&str> = text.split("\r\n").collect();
    // Each entry: *6, :id, :unix time, :µs, *N, $4, LPOS, $len, key, …
    (0..lines.len().saturating_sub(8))
        .filter(|&i| lines[i] == "*6" && lines[i + 6] == "LPOS")
        .map(|i| {
            let micros = lines[i + 3][1..].parse().expect("µs");
            (micros, lines[i + 8].to_string())
        })
        .collect()
}

#[test]
fn slowlog_and_commandstats_time_the_same_execution() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    // One list per shard: whichever shard serves this connection, one LPOS runs here and
    // the other on its owner after a hop.
    let lists = [key_on(0, "long"), key_on(1, "long")];
    let items: Vec<Vec<u8>> = (0..2000).map(|i| format!("item{i}").into_bytes()).collect();
    for list in &lists {
        for _ in 0..50 {
            let mut args: Vec<&[u8]> = vec![b"RPUSH", list.as_bytes()];
            args.extend(items.iter().map(Vec::as_slice));
            c.request(&args);
        }
        c.roundtrip(&[b"LLEN", list.as_bytes()], b":100000\r\n");
    }
    c.roundtrip(
        &[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"0"],
        b"+OK\r\n",
    );
    c.roundtrip(&[b"SLOWLOG", b"RESET"], b"+OK\r\n");
    c.roundtrip(&[b"CONFIG", b"RESETSTAT"], b"+OK\r\n");
    // A scan of all 100 000 elements that finds nothing.
    for list in &lists {
        c.roundtrip(&[b"LPOS", list.as_bytes(), b"absent"], b"$-1\r\n");
    }
    let logged = lpos_durations(&c.request(&[b"SLOWLOG", b"GET", b"-1"]));
    let mut keys: Vec<&str> = logged.iter().map(|(_, key)| key.as_str()).collect();
    keys.sort_unstable();
    assert_eq!(keys, [lists[0].as_str(), lists[1].as_str()], "{logged:?}");
    assert!(logged.iter().all(|(micros, _)| *micros > 0), "{logged:?}");

    let stats = String::from_utf8_lossy(&c.request(&[b"INFO", b"commandstats"])).into_owned();
    let line = common::info_field(&stats, "cmdstat_lpos");
    let field = |name: &str| -> u64 {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {line}"))
    };
    assert_eq!(field("calls"), 2, "{line}");
    // The call on this connection's shard is timed by the same clock reads for both, from
    // before the slowlog's start: commandstats has at least its slowlog time. (A forwarded
    // call counts only this shard's part, without the hop's wait.)
    let info = String::from_utf8_lossy(&c.request(&[b"CLIENT", b"INFO"])).into_owned();
    let here: usize = info
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("shard="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no shard= in {info}"));
    let local = logged
        .iter()
        .find(|(_, key)| *key == lists[here])
        .map(|(micros, _)| *micros);
    assert!(
        local.is_some_and(|micros| field("usec") >= micros),
        "{line} vs slowlog {logged:?}, served by shard {here}"
    );
}

/// The arguments of every entry of a SLOWLOG GET reply, newest first, each joined by spaces,
/// with the entry's client name: `("ping", "")`.
fn logged_commands(reply: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(reply).into_owned();
    let lines: Vec<&str> = text.split("\r\n").collect();
    let mut out = Vec::new();
    let mut i = 1;
    // Each entry: *6, :id, :time, :µs, *N, N × ($len, arg), $len, addr, $len, name.
    while i + 4 < lines.len() && lines[i] == "*6" {
        let argc: usize = lines[i + 4][1..].parse().expect("argc");
        let args: Vec<&str> = (0..argc).map(|k| lines[i + 6 + 2 * k]).collect();
        let after = i + 5 + 2 * argc;
        let addr = lines[after + 1];
        assert!(
            addr.starts_with("127.0.0.1:"),
            "client address {addr:?} in {text}"
        );
        out.push((args.join(" "), lines[after + 3].to_string()));
        i = after + 4;
    }
    out
}

/// What a client reads is Redis's one log: every command is logged (PING, SLOWLOG RESET
/// itself, a command served by either shard), with the client's address and name, LEN and GET
/// never show more than `slowlog-max-len`, EXEC is not logged but what it ran is, secrets are
/// redacted, a DEBUG SLEEP over the threshold is logged. Each expectation was checked against
/// redis-server 7.0.15 with the same commands.
#[test]
fn slowlog_reads_as_one_redis_log() {
    let server = Server::start(&[ARGS, &["--enable-debug-command"]].concat());
    let mut c = login_plain(&server);
    let (a, b) = (key_on(0, "one"), key_on(1, "one"));
    c.roundtrip(&[b"CLIENT", b"SETNAME", b"me"], b"+OK\r\n");
    c.roundtrip(
        &[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"0"],
        b"+OK\r\n",
    );
    c.roundtrip(&[b"SLOWLOG", b"RESET"], b"+OK\r\n");
    c.roundtrip(&[b"PING"], b"+PONG\r\n");
    c.roundtrip(&[b"SET", a.as_bytes(), b"1"], b"+OK\r\n");
    c.roundtrip(&[b"SET", b.as_bytes(), b"2"], b"+OK\r\n");
    c.roundtrip(
        &[b"MGET", a.as_bytes(), b.as_bytes()],
        b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n",
    );
    c.roundtrip(&[b"SLOWLOG", b"LEN"], b":5\r\n");
    let all = logged_commands(&c.request(&[b"SLOWLOG", b"GET", b"-1"]));
    let want = [
        "SLOWLOG LEN".to_string(),
        format!("MGET {a} {b}"),
        format!("SET {b} 2"),
        format!("SET {a} 1"),
        "PING".to_string(),
        "SLOWLOG RESET".to_string(),
    ];
    let got: Vec<&str> = all.iter().map(|(args, _)| args.as_str()).collect();
    assert_eq!(got, want, "{all:?}");
    assert!(all.iter().all(|(_, name)| name == "me"), "{all:?}");

    // At most slowlog-max-len in all, though each shard keeps that many.
    c.roundtrip(&[b"CONFIG", b"SET", b"slowlog-max-len", b"3"], b"+OK\r\n");
    c.roundtrip(&[b"SLOWLOG", b"RESET"], b"+OK\r\n");
    for key in [&a, &b, &a, &b] {
        c.request(&[b"INCR", key.as_bytes()]);
    }
    c.roundtrip(&[b"SLOWLOG", b"LEN"], b":3\r\n");
    let three = logged_commands(&c.request(&[b"SLOWLOG", b"GET", b"-1"]));
    assert_eq!(three.len(), 3, "{three:?}");
    assert_eq!(three[0].0, "SLOWLOG LEN");
    assert_eq!(
        logged_commands(&c.request(&[b"SLOWLOG", b"GET", b"10"])).len(),
        3
    );

    // EXEC is not logged, the commands it ran are; AUTH's arguments are redacted.
    c.roundtrip(&[b"CONFIG", b"SET", b"slowlog-max-len", b"128"], b"+OK\r\n");
    c.roundtrip(&[b"SLOWLOG", b"RESET"], b"+OK\r\n");
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"SET", a.as_bytes(), b"x"], b"+QUEUED\r\n");
    c.roundtrip(&[b"EXEC"], b"*1\r\n+OK\r\n");
    c.roundtrip(
        &[b"AUTH", b"default", server.password.as_bytes()],
        b"+OK\r\n",
    );
    let got: Vec<String> = logged_commands(&c.request(&[b"SLOWLOG", b"GET"]))
        .into_iter()
        .map(|(args, _)| args)
        .collect();
    let want = [
        "AUTH (redacted) (redacted)".to_string(),
        format!("SET {a} x"),
        "MULTI".to_string(),
        "SLOWLOG RESET".to_string(),
    ];
    assert_eq!(got, want);

    // DEBUG SLEEP 0.2 over a 100 ms threshold is logged, a PING is not.
    c.roundtrip(
        &[b"CONFIG", b"SET", b"slowlog-log-slower-than", b"100000"],
        b"+OK\r\n",
    );
    c.roundtrip(&[b"SLOWLOG", b"RESET"], b"+OK\r\n");
    c.roundtrip(&[b"PING"], b"+PONG\r\n");
    c.roundtrip(&[b"SLOWLOG", b"LEN"], b":0\r\n");
    c.roundtrip(&[b"DEBUG", b"SLEEP", b"0.2"], b"+OK\r\n");
    c.roundtrip(&[b"SLOWLOG", b"LEN"], b":1\r\n");
    let slept = logged_commands(&c.request(&[b"SLOWLOG", b"GET"]));
    assert_eq!(slept, [("DEBUG SLEEP 0.2".to_string(), "me".to_string())]);
    // Redis gives one message for a count that is not an integer and one below -1.
    for count in [&b"abc"[..], b"-2", b"99999999999999999999"] {
        c.roundtrip(
            &[b"SLOWLOG", b"GET", count],
            b"-ERR count should be greater than or equal to -1\r\n",
        );
    }
}

#[test]
fn restore_idletime_and_freq_set_the_access_clock_of_the_policy_in_force() {
    let server = Server::start(&["--tls", "off", "--smp", "2", "--appendonly", "no"]);
    let mut client = common::login_plain(&server);
    client.roundtrip(&[b"SET", b"foo", b"bar"], b"+OK\r\n");
    let payload = client.request(&[b"DUMP", b"foo"]);
    let header_end = payload
        .iter()
        .position(|&b| b == b'\n')
        .expect("bulk header")
        + 1;
    let payload = payload[header_end..payload.len() - 2].to_vec();
    let restore = |client: &mut common::RawClient, option: &[u8], value: &[u8]| {
        client.roundtrip(&[b"DEL", b"foo"], b":1\r\n");
        client.roundtrip(
            &[b"RESTORE", b"foo", b"0", &payload, option, value],
            b"+OK\r\n",
        );
    };
    // LRU (the default policy): IDLETIME in seconds; FREQ is ignored.
    restore(&mut client, b"IDLETIME", b"1000");
    let idle = common::int_reply(&client.request(&[b"OBJECT", b"IDLETIME", b"foo"]));
    assert!((1000..=1010).contains(&idle), "idle {idle}");
    client.roundtrip(&[b"GET", b"foo"], b"$3\r\nbar\r\n");
    restore(&mut client, b"FREQ", b"100");
    let idle = common::int_reply(&client.request(&[b"OBJECT", b"IDLETIME", b"foo"]));
    assert!(idle < 10, "idle {idle}");
    client.roundtrip(
        &[b"OBJECT", b"FREQ", b"foo"],
        b"-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please \
          note that when switching between policies at runtime LRU and LFU data will take some \
          time to adjust.\r\n",
    );
    // LFU: FREQ sets the counter; IDLETIME is ignored.
    client.roundtrip(
        &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"],
        b"+OK\r\n",
    );
    restore(&mut client, b"FREQ", b"100");
    client.roundtrip(&[b"OBJECT", b"FREQ", b"foo"], b":100\r\n");
    restore(&mut client, b"IDLETIME", b"1000");
    client.roundtrip(&[b"OBJECT", b"FREQ", b"foo"], b":5\r\n");
}
