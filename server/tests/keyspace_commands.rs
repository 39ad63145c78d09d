//! RENAME, RENAMENX, COPY, MSETNX, TOUCH, RANDOMKEY, DUMP and RESTORE over real sockets with
//! two shards (keys on one shard and on different shards): exact replies as Redis 7.0 sends
//! them, the append-only log's records and what a restart rebuilds from them, and DUMP
//! payloads moving between shardline and a real redis-server.

mod common;

use common::reference::RedisReference;
use common::{aof_path, int_reply, key_on, login_plain, RawClient, Server};

const SMP2: &[&str] = &["--tls", "off", "--smp", "2", "--appendfsync", "always"];

/// Redis 7.0.15's `DUMP` of the string "hello".
const HELLO_DUMP: &[u8] = b"\x00\x05hello\x0a\x00\x63\x72\xdf\x76\x65\x34\x20\x0a";
/// Redis 7.0.15's `DUMP` of `RPUSH l a b 1 -100 1000000 4095 -4096 70000 5000000000 <70 × x>`
/// (a quicklist node compressed with LZF).
const LIST_DUMP_HEX: &str =
    "120102c33640751f750000000a008161028162020101df9c02f240420f04cfff02d00002\
f27011010604f400f2052a0120250309e04678e03c000148ff0a008cd4dffe083f21df";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn rename_and_renamenx_on_one_shard_and_across_shards() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    let (a, b) = (key_on(0, "a"), key_on(1, "b"));
    let a2 = key_on(0, "a2-");
    for (src, dst) in [(&a, &b), (&a, &a2)] {
        c.roundtrip(
            &[b"SET", src.as_bytes(), b"v", b"PXAT", b"4000000000000"],
            b"+OK\r\n",
        );
        c.roundtrip(&[b"SET", dst.as_bytes(), b"old"], b"+OK\r\n");
        c.roundtrip(&[b"RENAME", src.as_bytes(), dst.as_bytes()], b"+OK\r\n");
        c.roundtrip(&[b"GET", dst.as_bytes()], b"$1\r\nv\r\n");
        c.roundtrip(&[b"EXISTS", src.as_bytes()], b":0\r\n");
        c.roundtrip(&[b"PEXPIRETIME", dst.as_bytes()], b":4000000000000\r\n");
        c.roundtrip(
            &[b"RENAME", src.as_bytes(), dst.as_bytes()],
            b"-ERR no such key\r\n",
        );
        c.roundtrip(
            &[b"RENAMENX", src.as_bytes(), dst.as_bytes()],
            b"-ERR no such key\r\n",
        );
        // RENAMENX refuses an existing destination; a volatile target's TTL is not inherited.
        c.roundtrip(&[b"RPUSH", src.as_bytes(), b"x", b"y"], b":2\r\n");
        c.roundtrip(&[b"RENAMENX", src.as_bytes(), dst.as_bytes()], b":0\r\n");
        c.roundtrip(&[b"RENAMENX", dst.as_bytes(), src.as_bytes()], b":0\r\n");
        c.roundtrip(&[b"DEL", dst.as_bytes()], b":1\r\n");
        c.roundtrip(&[b"RENAMENX", src.as_bytes(), dst.as_bytes()], b":1\r\n");
        c.roundtrip(
            &[b"LRANGE", dst.as_bytes(), b"0", b"-1"],
            b"*2\r\n$1\r\nx\r\n$1\r\ny\r\n",
        );
        c.roundtrip(&[b"TTL", dst.as_bytes()], b":-1\r\n");
        c.roundtrip(&[b"DEL", dst.as_bytes()], b":1\r\n");
    }
    // The same key: OK for RENAME, 0 for RENAMENX (Redis 7.0), nothing changes.
    c.roundtrip(&[b"SET", a.as_bytes(), b"same"], b"+OK\r\n");
    c.roundtrip(&[b"RENAME", a.as_bytes(), a.as_bytes()], b"+OK\r\n");
    c.roundtrip(&[b"RENAMENX", a.as_bytes(), a.as_bytes()], b":0\r\n");
    c.roundtrip(&[b"GET", a.as_bytes()], b"$4\r\nsame\r\n");
    c.roundtrip(
        &[b"RENAME", a.as_bytes()],
        b"-ERR wrong number of arguments for 'rename' command\r\n",
    );
}

#[test]
fn copy_msetnx_touch_and_randomkey_across_shards() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    let (a, b) = (key_on(0, "a"), key_on(1, "b"));
    c.roundtrip(&[b"RANDOMKEY"], b"$-1\r\n");
    c.roundtrip(&[b"HSET", a.as_bytes(), b"f", b"1", b"g", b"2"], b":2\r\n");
    c.roundtrip(&[b"PEXPIREAT", a.as_bytes(), b"4000000000000"], b":1\r\n");
    c.roundtrip(&[b"COPY", a.as_bytes(), b.as_bytes()], b":1\r\n");
    c.roundtrip(&[b"HGET", b.as_bytes(), b"g"], b"$1\r\n2\r\n");
    c.roundtrip(&[b"PEXPIRETIME", b.as_bytes()], b":4000000000000\r\n");
    // The copy is independent of its source.
    c.roundtrip(&[b"HSET", a.as_bytes(), b"g", b"changed"], b":0\r\n");
    c.roundtrip(&[b"HGET", b.as_bytes(), b"g"], b"$1\r\n2\r\n");
    c.roundtrip(&[b"COPY", a.as_bytes(), b.as_bytes()], b":0\r\n");
    c.roundtrip(
        &[b"COPY", a.as_bytes(), b.as_bytes(), b"REPLACE"],
        b":1\r\n",
    );
    c.roundtrip(&[b"HGET", b.as_bytes(), b"g"], b"$7\r\nchanged\r\n");
    c.roundtrip(&[b"COPY", b"nosuchkey", b.as_bytes()], b":0\r\n");
    c.roundtrip(
        &[b"COPY", a.as_bytes(), b.as_bytes(), b"DB", b"3"],
        b":1\r\n",
    );
    c.roundtrip(
        &[b"COPY", a.as_bytes(), a.as_bytes(), b"DB", b"3"],
        b":1\r\n",
    );
    c.roundtrip(
        &[b"COPY", a.as_bytes(), a.as_bytes()],
        b"-ERR source and destination objects are the same\r\n",
    );
    c.roundtrip(
        &[b"COPY", a.as_bytes(), b.as_bytes(), b"DB", b"notanint"],
        b"-ERR value is not an integer or out of range\r\n",
    );
    c.roundtrip(
        &[b"COPY", a.as_bytes(), b.as_bytes(), b"DB", b"16"],
        b"-ERR DB index is out of range\r\n",
    );
    c.roundtrip(
        &[b"COPY", a.as_bytes(), b.as_bytes(), b"NX"],
        b"-ERR syntax error\r\n",
    );
    c.roundtrip(&[b"SELECT", b"3"], b"+OK\r\n");
    c.roundtrip(&[b"DBSIZE"], b":2\r\n");
    c.roundtrip(
        &[b"TOUCH", a.as_bytes(), b.as_bytes(), a.as_bytes(), b"none"],
        b":3\r\n",
    );
    c.roundtrip(&[b"SELECT", b"0"], b"+OK\r\n");
    // MSETNX: all or nothing across shards.
    let (x, y) = (key_on(0, "x"), key_on(1, "y"));
    c.roundtrip(
        &[
            b"MSETNX",
            x.as_bytes(),
            b"1",
            y.as_bytes(),
            b"2",
            a.as_bytes(),
            b"3",
        ],
        b":0\r\n",
    );
    c.roundtrip(&[b"EXISTS", x.as_bytes(), y.as_bytes()], b":0\r\n");
    c.roundtrip(
        &[b"MSETNX", x.as_bytes(), b"1", y.as_bytes(), b"2"],
        b":1\r\n",
    );
    c.roundtrip(
        &[b"MGET", x.as_bytes(), y.as_bytes()],
        b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n",
    );
    c.roundtrip(
        &[b"MSETNX", x.as_bytes(), b"1", y.as_bytes()],
        b"-ERR wrong number of arguments for 'msetnx' command\r\n",
    );
    // RANDOMKEY returns only keys that exist, from both shards.
    c.roundtrip(&[b"DEL", x.as_bytes(), y.as_bytes()], b":2\r\n");
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        let reply = c.request(&[b"RANDOMKEY"]);
        let key = String::from_utf8_lossy(&reply)
            .lines()
            .nth(1)
            .unwrap_or("")
            .to_string();
        assert!(key == a || key == b, "RANDOMKEY {reply:?}");
        seen.insert(key);
    }
    assert_eq!(seen.len(), 2, "both shards' keys come up");
}

#[test]
fn dump_and_restore_replies_and_errors() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    c.roundtrip(&[b"SET", b"s", b"hello"], b"+OK\r\n");
    let mut expected = b"$17\r\n".to_vec();
    expected.extend_from_slice(HELLO_DUMP);
    expected.extend_from_slice(b"\r\n");
    c.roundtrip(&[b"DUMP", b"s"], &expected);
    c.roundtrip(&[b"DUMP", b"nosuchkey"], b"$-1\r\n");
    let list = hex(LIST_DUMP_HEX);
    c.roundtrip(&[b"RESTORE", b"l", b"0", &list], b"+OK\r\n");
    c.roundtrip(
        &[b"LRANGE", b"l", b"0", b"-1"],
        b"*10\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\n1\r\n$4\r\n-100\r\n$7\r\n1000000\r\n$4\r\n4095\r\n\
$5\r\n-4096\r\n$5\r\n70000\r\n$10\r\n5000000000\r\n$70\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\
xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n",
    );
    c.roundtrip(
        &[b"RESTORE", b"l", b"0", &list],
        b"-BUSYKEY Target key name already exists.\r\n",
    );
    c.roundtrip(&[b"RESTORE", b"s", b"0", &list, b"REPLACE"], b"+OK\r\n");
    c.roundtrip(&[b"LLEN", b"s"], b":10\r\n");
    c.roundtrip(
        &[b"RESTORE", b"t", b"-1", HELLO_DUMP],
        b"-ERR Invalid TTL value, must be >= 0\r\n",
    );
    let mut corrupt = HELLO_DUMP.to_vec();
    corrupt[3] ^= 0xff;
    c.roundtrip(
        &[b"RESTORE", b"t", b"0", &corrupt],
        b"-ERR DUMP payload version or checksum are wrong\r\n",
    );
    c.roundtrip(
        &[b"RESTORE", b"t", b"0", HELLO_DUMP, b"BOGUS"],
        b"-ERR syntax error\r\n",
    );
    c.roundtrip(
        &[b"RESTORE", b"t", b"0", HELLO_DUMP, b"FREQ", b"256"],
        b"-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n",
    );
    c.roundtrip(
        &[b"RESTORE", b"t", b"0", HELLO_DUMP, b"IDLETIME", b"-1"],
        b"-ERR Invalid IDLETIME value, must be >= 0\r\n",
    );
    // A sorted set (RDB_TYPE_ZSET_2) restores; a stream (type 15) is a valid payload
    // shardline cannot hold.
    let zset = b"\x05\x01\x01a\x00\x00\x00\x00\x00\x00\xf0\x3f\x0a\x00";
    let mut payload = zset.to_vec();
    let crc = shardline::rdb::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    c.roundtrip(&[b"RESTORE", b"z", b"0", &payload], b"+OK\r\n");
    c.roundtrip(&[b"ZSCORE", b"z", b"a"], b"$1\r\n1\r\n");
    let stream = b"\x0f\x00\x0a\x00";
    let mut payload = stream.to_vec();
    let crc = shardline::rdb::crc64(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    c.roundtrip(
        &[b"RESTORE", b"st", b"0", &payload],
        b"-ERR Bad data format\r\n",
    );
    // Relative and absolute TTLs; a deadline already past stores nothing.
    c.roundtrip(
        &[b"RESTORE", b"t", b"100000", HELLO_DUMP, b"IDLETIME", b"5"],
        b"+OK\r\n",
    );
    let pttl = int_reply(&c.request(&[b"PTTL", b"t"]));
    assert!((90_000..=100_000).contains(&pttl), "PTTL {pttl}");
    c.roundtrip(
        &[
            b"RESTORE",
            b"t",
            b"4000000000000",
            HELLO_DUMP,
            b"ABSTTL",
            b"REPLACE",
        ],
        b"+OK\r\n",
    );
    c.roundtrip(&[b"PEXPIRETIME", b"t"], b":4000000000000\r\n");
    c.roundtrip(
        &[b"RESTORE", b"t", b"1", HELLO_DUMP, b"ABSTTL", b"REPLACE"],
        b"+OK\r\n",
    );
    c.roundtrip(&[b"EXISTS", b"t"], b":0\r\n");
}

#[test]
fn cross_shard_moves_are_logged_and_replayed_after_a_crash() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    let (a, b) = (key_on(0, "a"), key_on(1, "b"));
    let (c0, c1) = (key_on(0, "c"), key_on(1, "d"));
    c.roundtrip(&[b"SADD", a.as_bytes(), b"1", b"2", b"x"], b":3\r\n");
    c.roundtrip(&[b"PEXPIREAT", a.as_bytes(), b"4000000000000"], b":1\r\n");
    c.roundtrip(&[b"SET", b.as_bytes(), b"replaced"], b"+OK\r\n");
    c.roundtrip(&[b"RENAME", a.as_bytes(), b.as_bytes()], b"+OK\r\n");
    c.roundtrip(&[b"RPUSH", c1.as_bytes(), b"p", b"q"], b":2\r\n");
    c.roundtrip(&[b"COPY", c1.as_bytes(), c0.as_bytes()], b":1\r\n");
    c.roundtrip(&[b"RESTORE", b"r", b"100000", HELLO_DUMP], b"+OK\r\n");
    c.roundtrip(
        &[b"MSETNX", b"m0", b"0", b"m1", b"1", b"m2", b"2"],
        b":1\r\n",
    );
    // A COPY into another database changes only that one: it is logged all the same.
    c.roundtrip(&[b"SET", b"{t}src", b"v"], b"+OK\r\n");
    c.roundtrip(&[b"COPY", b"{t}src", b"{t}dst", b"DB", b"3"], b":1\r\n");
    let pexpiretime_r = int_reply(&c.request(&[b"PEXPIRETIME", b"r"]));
    let password = server.password.clone();
    let dir = server.kill9();
    let log0 =
        String::from_utf8_lossy(&std::fs::read(aof_path(dir.path(), 0)).unwrap()).into_owned();
    let log1 =
        String::from_utf8_lossy(&std::fs::read(aof_path(dir.path(), 1)).unwrap()).into_owned();
    let del_a = format!("*2\r\n$3\r\nDEL\r\n${}\r\n{a}\r\n", a.len());
    assert!(log0.contains(&del_a), "{log0:?}");
    let restore_b = format!(
        "*6\r\n$7\r\nRESTORE\r\n${}\r\n{b}\r\n$13\r\n4000000000000\r\n",
        b.len()
    );
    assert!(log1.contains(&restore_b), "{log1:?}");
    assert!(
        log1.contains("$6\r\nABSTTL\r\n$7\r\nREPLACE\r\n"),
        "{log1:?}"
    );
    let server = Server::restart_in(dir, SMP2, &password);
    let mut c = login_plain(&server);
    c.roundtrip(&[b"EXISTS", a.as_bytes()], b":0\r\n");
    c.roundtrip(&[b"SCARD", b.as_bytes()], b":3\r\n");
    c.roundtrip(&[b"SISMEMBER", b.as_bytes(), b"x"], b":1\r\n");
    c.roundtrip(&[b"PEXPIRETIME", b.as_bytes()], b":4000000000000\r\n");
    c.roundtrip(
        &[b"LRANGE", c0.as_bytes(), b"0", b"-1"],
        b"*2\r\n$1\r\np\r\n$1\r\nq\r\n",
    );
    c.roundtrip(&[b"LLEN", c1.as_bytes()], b":2\r\n");
    c.roundtrip(&[b"GET", b"r"], b"$5\r\nhello\r\n");
    let expected = format!(":{pexpiretime_r}\r\n");
    c.roundtrip(&[b"PEXPIRETIME", b"r"], expected.as_bytes());
    c.roundtrip(
        &[b"MGET", b"m0", b"m1", b"m2"],
        b"*3\r\n$1\r\n0\r\n$1\r\n1\r\n$1\r\n2\r\n",
    );
    c.roundtrip(&[b"SELECT", b"3"], b"+OK\r\n");
    c.roundtrip(&[b"GET", b"{t}dst"], b"$1\r\nv\r\n");
}

/// `DUMP` on `client` and the bulk string's bytes.
fn dump(client: &mut RawClient, key: &[u8]) -> Vec<u8> {
    let reply = client.request(&[b"DUMP", key]);
    let start = reply.iter().position(|&b| b == b'\n').expect("bulk header") + 1;
    assert_eq!(reply[0], b'$', "{:?}", String::from_utf8_lossy(&reply));
    reply[start..reply.len() - 2].to_vec()
}

#[test]
fn dump_payloads_move_between_shardline_and_redis_server() {
    if !common::have("redis-server") {
        eprintln!("SKIPPED: redis-server is not installed (test.sh installs it)");
        return;
    }
    let redis = RedisReference::start(&[]);
    let mut r = RawClient::plain(redis.addr);
    let server = Server::start(SMP2);
    let mut s = login_plain(&server);
    let many: Vec<String> = (0..300).map(|i| format!("member-{i}")).collect();
    let ints: Vec<String> = (0..100)
        .map(|i| (i * 70_000 - 3_000_000).to_string())
        .collect();
    let long = "w".repeat(5000);
    let mut writes: Vec<Vec<Vec<u8>>> = vec![
        vec![b"SET".to_vec(), b"str".to_vec(), b"hello world".to_vec()],
        vec![b"SET".to_vec(), b"int".to_vec(), b"-123456".to_vec()],
        vec![b"SET".to_vec(), b"long".to_vec(), long.clone().into_bytes()],
        vec![
            b"HSET".to_vec(),
            b"hsmall".to_vec(),
            b"f".to_vec(),
            b"1".to_vec(),
            b"g".to_vec(),
            b"two".to_vec(),
        ],
        vec![
            b"HSET".to_vec(),
            b"hbig".to_vec(),
            b"f".to_vec(),
            long.clone().into_bytes(),
        ],
        vec![b"SADD".to_vec(), b"sints".to_vec()],
        vec![b"SADD".to_vec(), b"swords".to_vec()],
        vec![b"RPUSH".to_vec(), b"list".to_vec()],
    ];
    writes[5].extend(ints.iter().map(|i| i.clone().into_bytes()));
    writes[6].extend(many.iter().map(|m| m.clone().into_bytes()));
    writes[7].extend(many.iter().chain(&ints).map(|m| m.clone().into_bytes()));
    writes[7].push(long.into_bytes());
    let reads: &[(&[u8], &[&[u8]])] = &[
        (b"str", &[b"GET", b"str"]),
        (b"int", &[b"GET", b"int"]),
        (b"long", &[b"GET", b"long"]),
        (b"hsmall", &[b"HMGET", b"hsmall", b"f", b"g"]),
        (b"hbig", &[b"HGET", b"hbig", b"f"]),
        (
            b"sints",
            &[b"SMISMEMBER", b"sints", b"-3000000", b"3930000", b"5"],
        ),
        (b"swords", &[b"SCARD", b"swords"]),
        (b"list", &[b"LRANGE", b"list", b"0", b"-1"]),
    ];
    for write in &writes {
        let args: Vec<&[u8]> = write.iter().map(Vec::as_slice).collect();
        let from_redis = r.request(&args);
        assert_eq!(s.request(&args), from_redis);
    }
    for (key, read) in reads {
        // shardline → redis-server under another name, and back.
        let ours = dump(&mut s, key);
        let copy = [*key, b"-from-shardline"].concat();
        r.roundtrip(&[b"RESTORE", &copy, b"0", &ours], b"+OK\r\n");
        let theirs = dump(&mut r, key);
        let back = [*key, b"-from-redis"].concat();
        s.roundtrip(&[b"RESTORE", &back, b"0", &theirs], b"+OK\r\n");
        let mut on_copy: Vec<&[u8]> = read.to_vec();
        on_copy[1] = &copy;
        let mut on_back: Vec<&[u8]> = read.to_vec();
        on_back[1] = &back;
        let expected = r.request(read);
        assert_eq!(
            r.request(&on_copy),
            expected,
            "{}",
            String::from_utf8_lossy(key)
        );
        assert_eq!(
            s.request(&on_back),
            expected,
            "{}",
            String::from_utf8_lossy(key)
        );
        assert_eq!(
            s.request(read),
            expected,
            "{}",
            String::from_utf8_lossy(key)
        );
    }
    r.roundtrip(&[b"SCARD", b"swords-from-shardline"], b":300\r\n");
}

#[test]
fn lcs_replies_match_redis_server_on_one_shard_and_across_shards() {
    if !common::have("redis-server") {
        eprintln!("SKIPPED: redis-server is not installed (test.sh installs it)");
        return;
    }
    // The smallest proto-max-bulk-len: two 600-byte strings need a 1.4 MB table.
    let redis = RedisReference::start(&["--proto-max-bulk-len", "1048576"]);
    let mut r = RawClient::plain(redis.addr);
    let mut args = SMP2.to_vec();
    args.extend(["--proto-max-bulk-len", "1048576"]);
    let server = Server::start(&args);
    let mut s = login_plain(&server);
    let (a, b, a2) = (key_on(0, "a"), key_on(1, "b"), key_on(0, "a2-"));
    let (big_a, big_b) = ("q".repeat(600), "r".repeat(600));
    let (a, b, a2) = (a.as_bytes(), b.as_bytes(), a2.as_bytes());
    let first = b"ohmytext-GATTACA-and-the-rest-of-it";
    let second = b"mynewtext GATTACAxx and the rest";
    let requests: Vec<Vec<&[u8]>> = vec![
        vec![b"SET", a, first],
        vec![b"SET", b, second],
        vec![b"SET", a2, second],
        vec![b"LCS", a, b],
        vec![b"LCS", a, a2],
        vec![b"LCS", a, b, b"LEN"],
        vec![b"LCS", a, b, b"IDX"],
        vec![b"LCS", a, a2, b"IDX", b"WITHMATCHLEN"],
        vec![b"LCS", a, b, b"IDX", b"MINMATCHLEN", b"4", b"WITHMATCHLEN"],
        vec![b"LCS", a, b"missing"],
        vec![b"LCS", a, b, b"IDX", b"LEN"],
        vec![b"LCS", a, b, b"MINMATCHLEN"],
        vec![b"LCS", a, b, b"MINMATCHLEN", b"x"],
        vec![b"RPUSH", b"list", b"x"],
        vec![b"LCS", a, b"list"],
        vec![b"SET", a, big_a.as_bytes()],
        vec![b"SET", b, big_b.as_bytes()],
        vec![b"LCS", a, b],
        vec![b"SET", b, b"q"],
        vec![b"LCS", a, b],
    ];
    for request in &requests {
        let expected = r.request(request);
        assert_eq!(
            String::from_utf8_lossy(&s.request(request)),
            String::from_utf8_lossy(&expected),
            "{:?}",
            request
                .iter()
                .map(|a| String::from_utf8_lossy(a))
                .collect::<Vec<_>>()
        );
    }
}
