//! SCAN over real sockets with two shards and keys on both: a database smaller than COUNT is
//! one call ending with cursor 0 (filters included), as redis-server replies; a larger one
//! is walked shard after shard, each call but the last examining at least COUNT keys, every
//! key returned once.

mod common;

use std::collections::BTreeSet;

use common::reference::RedisReference;
use common::replies::{request, strings, text, Reply};
use common::{key_on, login_plain, RawClient, Server};

const SMP2: &[&str] = &["--tls", "off", "--smp", "2"];

/// One SCAN call: the next cursor and the keys, sorted (the order is the server's own).
fn scan(c: &mut RawClient, args: &[&str]) -> (String, Vec<String>) {
    let mut full = vec!["SCAN"];
    full.extend_from_slice(args);
    let Reply::Many(mut parts) = request(c, &full) else {
        panic!("SCAN {args:?}: not an array");
    };
    assert_eq!(parts.len(), 2, "SCAN {args:?}");
    let mut keys = strings(parts.pop().expect("keys"));
    keys.sort();
    (text(&parts[0]), keys)
}

/// Sends the same writes to shardline and to redis-server, then checks that the one-call
/// scans reply the same (keys sorted).
#[test]
fn a_small_database_is_one_call_as_in_redis() {
    let server = Server::start(SMP2);
    let mut s = login_plain(&server);
    let reference = common::have("redis-server").then(|| RedisReference::start(&[]));
    let mut r = reference.as_ref().map(|redis| RawClient::plain(redis.addr));
    // `a`, `b` and `c` are on both shards; so are the sets.
    assert_ne!(
        shardline::keyspace::slot::owner_shard(b"a", 2),
        shardline::keyspace::slot::owner_shard(b"b", 2)
    );
    let (set0, set1) = (key_on(0, "aset"), key_on(1, "aset"));
    let writes: Vec<Vec<&str>> = vec![
        vec!["SET", "a", "1"],
        vec!["SET", "b", "1"],
        vec!["SET", "c", "1"],
    ];
    for w in &writes {
        let args: Vec<&[u8]> = w.iter().map(|a| a.as_bytes()).collect();
        s.roundtrip(&args, b"+OK\r\n");
        if let Some(r) = r.as_mut() {
            r.roundtrip(&args, b"+OK\r\n");
        }
    }
    let abc = ["a", "b", "c"].map(String::from).to_vec();
    assert_eq!(scan(&mut s, &["0"]), ("0".to_string(), abc.clone()));
    let sets = [
        vec!["SADD", set0.as_str(), "m"],
        vec!["SADD", set1.as_str(), "m"],
        vec!["SADD", "bset", "m"],
    ];
    for w in &sets {
        let args: Vec<&[u8]> = w.iter().map(|a| a.as_bytes()).collect();
        s.roundtrip(&args, b":1\r\n");
        if let Some(r) = r.as_mut() {
            r.roundtrip(&args, b":1\r\n");
        }
    }
    let cases: &[(&[&str], Vec<String>)] = &[
        (&["0"], {
            let mut all = abc.clone();
            all.extend([set0.clone(), set1.clone(), "bset".to_string()]);
            all.sort();
            all
        }),
        (&["0", "MATCH", "a*", "TYPE", "set"], {
            let mut v = vec![set0.clone(), set1.clone()];
            v.sort();
            v
        }),
        (&["0", "TYPE", "string"], abc.clone()),
        (&["0", "MATCH", "z*"], Vec::new()),
        (&["0", "TYPE", "list"], Vec::new()),
    ];
    for (args, keys) in cases {
        let got = scan(&mut s, args);
        assert_eq!(got, ("0".to_string(), keys.clone()), "SCAN {args:?}");
        if let Some(r) = r.as_mut() {
            assert_eq!(scan(r, args), got, "SCAN {args:?}: redis-server differs");
        }
    }
    // A cursor naming shard 1 scans shard 1 only, then ends.
    let shard1 = (1u64 << 48).to_string();
    let (next, keys) = scan(&mut s, &[&shard1]);
    assert_eq!(next, "0");
    assert!(keys.contains(&set1) && !keys.contains(&set0), "{keys:?}");
}

#[test]
fn a_larger_database_is_walked_shard_after_shard() {
    let server = Server::start(SMP2);
    let mut s = login_plain(&server);
    let mut mset = vec!["MSET".to_string()];
    for i in 0..25 {
        mset.push(format!("k{i}"));
        mset.push("v".to_string());
    }
    let args: Vec<&[u8]> = mset.iter().map(|a| a.as_bytes()).collect();
    s.roundtrip(&args, b"+OK\r\n");
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let (next, keys) = scan(&mut s, &[&cursor, "COUNT", "4"]);
        calls += 1;
        assert!(calls < 100, "the scan does not end");
        if next == "0" {
            seen.extend(keys);
            break;
        }
        // COUNT keys examined per call, whichever shards they are on.
        assert!(keys.len() >= 4, "call {calls}: {keys:?}");
        seen.extend(keys);
        cursor = next;
    }
    assert!(
        (4..=8).contains(&calls),
        "{calls} calls for 25 keys at COUNT 4"
    );
    let distinct: BTreeSet<&String> = seen.iter().collect();
    assert_eq!((seen.len(), distinct.len()), (25, 25));
    // COUNT 25 is one call; COUNT 24 is not.
    let (next, keys) = scan(&mut s, &["0", "COUNT", "25"]);
    assert_eq!((next.as_str(), keys.len()), ("0", 25));
    let (next, _) = scan(&mut s, &["0", "COUNT", "24", "MATCH", "nothing"]);
    assert_ne!(next, "0");
    // Errors in Redis's order: the cursor, then the options.
    s.roundtrip(&[b"SCAN", b"x", b"COUNT"], b"-ERR invalid cursor\r\n");
    s.roundtrip(&[b"SCAN", b"0", b"COUNT"], b"-ERR syntax error\r\n");
    s.roundtrip(
        &[b"SCAN", b"0", b"COUNT", b"x"],
        b"-ERR value is not an integer or out of range\r\n",
    );
    s.roundtrip(&[b"SCAN", b"0", b"COUNT", b"0"], b"-ERR syntax error\r\n");
}
