//! The order of small hashes and integer sets, against redis-server 7.0 over real sockets with
//! two shards: a hash within `hash-max-listpack-*` replies in insertion order (HGETALL,
//! HKEYS, HVALS, HSCAN, HRANDFIELD of the whole hash), HSET of an existing field keeps its
//! place, HDEL removes in place, and a hash that outgrew the limits stays a table; a set of
//! at most `set-max-intset-entries` integers replies ascending (SMEMBERS, SSCAN, set algebra,
//! SRANDMEMBER of the whole set). The exact reply bytes are compared with redis-server's.

mod common;

use common::reference::RedisReference;
use common::{key_on, login_plain, RawClient, Server};

const SMP2: &[&str] = &["--tls", "off", "--smp", "2"];

/// Sends `args` to both servers and asserts the same reply bytes; returns them.
fn same(s: &mut RawClient, r: &mut RawClient, args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let theirs = r.request(&args);
    let ours = s.request(&args);
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs),
        "{:?}",
        args.iter()
            .map(|a| String::from_utf8_lossy(a))
            .collect::<Vec<_>>()
    );
    ours
}

/// The payload of a bulk string reply.
fn payload(reply: &[u8]) -> Vec<u8> {
    let start = reply.windows(2).position(|w| w == b"\r\n").expect("CRLF") + 2;
    reply[start..reply.len() - 2].to_vec()
}

#[test]
fn small_hashes_and_integer_sets_reply_in_redis_order() {
    if !common::have("redis-server") {
        eprintln!("SKIPPED: redis-server is not installed (test.sh installs it)");
        return;
    }
    let redis = RedisReference::start(&[]);
    let mut r = RawClient::plain(redis.addr);
    let server = Server::start(SMP2);
    let mut s = login_plain(&server);
    let (h, h1) = (key_on(0, "hash:"), key_on(1, "hash:"));
    let (h, h1) = (h.as_str(), h1.as_str());

    // Insertion order; an update keeps the place, HDEL removes in place, re-adding appends.
    let z_first = b"*6\r\n$1\r\nz\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nm\r\n$1\r\n3\r\n";
    assert_eq!(
        same(&mut s, &mut r, &["HSET", h, "z", "1", "a", "2", "m", "3"]),
        b":3\r\n"
    );
    assert_eq!(same(&mut s, &mut r, &["HGETALL", h]), z_first);
    same(&mut s, &mut r, &["HSET", h, "a", "9"]);
    same(&mut s, &mut r, &["HSETNX", h, "a", "0"]);
    same(&mut s, &mut r, &["HINCRBY", h, "m", "4"]);
    same(&mut s, &mut r, &["HDEL", h, "z"]);
    same(&mut s, &mut r, &["HSET", h, "z", "0", "q", "5"]);
    same(&mut s, &mut r, &["HINCRBYFLOAT", h, "new", "1.5"]);
    for command in ["HGETALL", "HKEYS", "HVALS"] {
        same(&mut s, &mut r, &[command, h]);
    }
    for args in [
        &["HSCAN", h, "0"][..],
        &["HSCAN", h, "0", "COUNT", "1"],
        &["HSCAN", h, "0", "MATCH", "*"],
        &["HSCAN", h, "0", "MATCH", "[aq]*"],
        &["HRANDFIELD", h, "5"],
        &["HRANDFIELD", h, "100", "WITHVALUES"],
        &["OBJECT", "ENCODING", h],
    ] {
        same(&mut s, &mut r, args);
    }
    // On the other shard too, and with values up to hash-max-listpack-value (64) bytes.
    let long = "v".repeat(64);
    same(&mut s, &mut r, &["HSET", h1, "b", &long, "a", "1"]);
    same(&mut s, &mut r, &["HGETALL", h1]);
    same(&mut s, &mut r, &["OBJECT", "ENCODING", h1]);
    // One byte more: a table for good, even once small again.
    let longer = "v".repeat(65);
    same(&mut s, &mut r, &["HSET", h1, "c", &longer]);
    same(&mut s, &mut r, &["OBJECT", "ENCODING", h1]);
    same(&mut s, &mut r, &["HDEL", h1, "c"]);
    same(&mut s, &mut r, &["OBJECT", "ENCODING", h1]);
    // The entries limit follows CONFIG SET; an existing hash converts at its next write.
    same(
        &mut s,
        &mut r,
        &["CONFIG", "SET", "hash-max-listpack-entries", "2"],
    );
    same(&mut s, &mut r, &["HSET", "conv", "c", "1", "b", "2"]);
    same(&mut s, &mut r, &["OBJECT", "ENCODING", "conv"]);
    same(&mut s, &mut r, &["HSET", "conv", "a", "3"]);
    same(&mut s, &mut r, &["OBJECT", "ENCODING", "conv"]);
    same(&mut s, &mut r, &["OBJECT", "ENCODING", h]);
    same(&mut s, &mut r, &["HGETALL", h]);
    same(
        &mut s,
        &mut r,
        &["CONFIG", "SET", "hash-max-listpack-entries", "128"],
    );
    // Past the default value limit when raised ("Hash ziplist of various encodings").
    same(
        &mut s,
        &mut r,
        &["CONFIG", "SET", "hash-max-listpack-value", "100000"],
    );
    let big = "x".repeat(300);
    same(
        &mut s,
        &mut r,
        &["HSET", "k", "I8", "127", "S14", &big, "I0", "0"],
    );
    same(&mut s, &mut r, &["HGETALL", "k"]);
    same(&mut s, &mut r, &["OBJECT", "ENCODING", "k"]);
    // DUMP of a small hash is a listpack in its order, whichever server RESTOREs it.
    let ours = payload(&s.request(&[b"DUMP", b"k"]));
    let theirs = payload(&r.request(&[b"DUMP", b"k"]));
    for (key, dump) in [(&b"from-us"[..], &ours), (b"from-redis", &theirs)] {
        for client in [&mut s, &mut r] {
            client.roundtrip(&[b"RESTORE", key, b"0", dump], b"+OK\r\n");
        }
        let key = String::from_utf8_lossy(key).into_owned();
        same(&mut s, &mut r, &["HGETALL", &key]);
        same(&mut s, &mut r, &["OBJECT", "ENCODING", &key]);
    }
    same(
        &mut s,
        &mut r,
        &["CONFIG", "SET", "hash-max-listpack-value", "64"],
    );

    // Integer sets: ascending, also on RESP3 and through the set algebra.
    let (s0, s1) = (key_on(0, "s"), key_on(1, "s"));
    let (s0, s1) = (s0.as_str(), s1.as_str());
    same(
        &mut s,
        &mut r,
        &["SADD", s0, "10", "-5", "3", "1000000", "7"],
    );
    same(&mut s, &mut r, &["SADD", s1, "2", "9", "1", "3"]);
    for args in [
        &["SMEMBERS", s0][..],
        &["SSCAN", s0, "0"],
        &["SSCAN", s0, "0", "COUNT", "1", "MATCH", "*0*"],
        &["SRANDMEMBER", s0, "10"],
        &["OBJECT", "ENCODING", s0],
    ] {
        same(&mut s, &mut r, args);
    }
    let pair = format!("{{t}}{s0}");
    let other = format!("{{t}}{s1}");
    same(&mut s, &mut r, &["SADD", &pair, "10", "-5", "3", "7"]);
    same(&mut s, &mut r, &["SADD", &other, "2", "9", "3", "1"]);
    for command in ["SUNION", "SDIFF", "SINTER"] {
        same(&mut s, &mut r, &[command, &pair, &other]);
        // Keys on both shards: the same replies.
        same(&mut s, &mut r, &[command, s0, s1]);
    }
    same(&mut s, &mut r, &["SUNIONSTORE", "{t}u", &pair, &other]);
    same(&mut s, &mut r, &["SMEMBERS", "{t}u"]);
    for client in [&mut s, &mut r] {
        assert!(client.request(&[b"HELLO", b"3"]).starts_with(b"%"));
    }
    same(&mut s, &mut r, &["SMEMBERS", s0]);
    same(&mut s, &mut r, &["HGETALL", h]);
}
