//! HRANDFIELD, SSCAN and HSCAN over real sockets with two shards: exact replies and errors as
//! Redis 7.0 sends them, the properties of random replies (membership, counts, distinctness,
//! RESP3 pairs) and the scan guarantees (every element present for the whole scan is
//! returned, also under writes; cursor 0 ends).

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::replies::{request, strings, text, Reply};
use common::{login_plain, RawClient, Server};

const SMP2: &[&str] = &["--tls", "off", "--smp", "2"];

fn send(c: &mut RawClient, args: &[&str], expected: &[u8]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.roundtrip(&args, expected);
}

/// `HSET key f0 v0 … f<n-1> v<n-1>`.
fn fill_hash(c: &mut RawClient, key: &str, n: usize) {
    let mut args = vec!["HSET".to_string(), key.to_string()];
    for i in 0..n {
        args.push(format!("f{i}"));
        args.push(format!("v{i}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    send(c, &args, format!(":{n}\r\n").as_bytes());
}

#[test]
fn hrandfield_replies_and_errors() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    send(&mut c, &["HRANDFIELD", "nosuch"], b"$-1\r\n");
    send(&mut c, &["HRANDFIELD", "nosuch", "100"], b"*0\r\n");
    send(
        &mut c,
        &["HRANDFIELD", "nosuch", "-5", "WITHVALUES"],
        b"*0\r\n",
    );
    fill_hash(&mut c, "h", 10);
    send(&mut c, &["HRANDFIELD", "h", "0"], b"*0\r\n");
    send(&mut c, &["HRANDFIELD", "h", "0", "withvalues"], b"*0\r\n");
    let out_of_range = b"-ERR value is out of range\r\n";
    send(
        &mut c,
        &["HRANDFIELD", "h", "-9223372036854770000", "WITHVALUES"],
        out_of_range,
    );
    send(
        &mut c,
        &["HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"],
        out_of_range,
    );
    let range = b"-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n";
    send(
        &mut c,
        &["HRANDFIELD", "h", "-9223372036854775808", "WITHVALUES"],
        range,
    );
    send(&mut c, &["HRANDFIELD", "h", "-9223372036854775808"], range);
    send(
        &mut c,
        &["HRANDFIELD", "h", "x"],
        b"-ERR value is not an integer or out of range\r\n",
    );
    send(
        &mut c,
        &["HRANDFIELD", "h", "1", "values"],
        b"-ERR syntax error\r\n",
    );
    send(
        &mut c,
        &["HRANDFIELD", "h", "1", "withvalues", "x"],
        b"-ERR syntax error\r\n",
    );
    send(
        &mut c,
        &["HRANDFIELD"],
        b"-ERR wrong number of arguments for 'hrandfield' command\r\n",
    );
    send(&mut c, &["SET", "s", "x"], b"+OK\r\n");
    let wrongtype = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    send(&mut c, &["HRANDFIELD", "s"], wrongtype);
    send(&mut c, &["HRANDFIELD", "s", "3"], wrongtype);

    let fields: BTreeSet<String> = (0..10).map(|i| format!("f{i}")).collect();
    let mut seen = BTreeSet::new();
    for _ in 0..300 {
        let field = text(&request(&mut c, &["HRANDFIELD", "h"]));
        assert!(fields.contains(&field), "{field}");
        seen.insert(field);
    }
    assert_eq!(seen, fields, "300 draws reach every one of 10 fields");
    for (count, len) in [("20", 10), ("10", 10), ("8", 8), ("2", 2)] {
        let got = strings(request(&mut c, &["HRANDFIELD", "h", count]));
        let distinct: BTreeSet<String> = got.iter().cloned().collect();
        assert_eq!((got.len(), distinct.len()), (len, len), "count {count}");
        assert!(distinct.is_subset(&fields));
    }
    let repeated = strings(request(&mut c, &["HRANDFIELD", "h", "-1001"]));
    assert_eq!(repeated.len(), 1001);
    assert!(repeated.iter().all(|f| fields.contains(f)));
    for (count, pairs, distinct) in [("-20", 20, false), ("5", 5, true), ("30", 10, true)] {
        let flat = strings(request(&mut c, &["HRANDFIELD", "h", count, "WITHVALUES"]));
        assert_eq!(flat.len(), 2 * pairs, "count {count}");
        for pair in flat.chunks(2) {
            assert_eq!(pair[1], pair[0].replace('f', "v"), "value of {}", pair[0]);
        }
        let names: BTreeSet<&String> = flat.iter().step_by(2).collect();
        if distinct {
            assert_eq!(names.len(), pairs);
        }
    }

    // RESP3: WITHVALUES replies [field, value] pairs; a missing key is null / empty array.
    assert!(c.request(&[b"HELLO", b"3"]).starts_with(b"%"));
    send(&mut c, &["HRANDFIELD", "nosuch"], b"_\r\n");
    send(
        &mut c,
        &["HRANDFIELD", "nosuch", "3", "WITHVALUES"],
        b"*0\r\n",
    );
    for count in ["3", "-3"] {
        let Reply::Many(pairs) = request(&mut c, &["HRANDFIELD", "h", count, "WITHVALUES"]) else {
            panic!("not an array");
        };
        assert_eq!(pairs.len(), 3);
        for pair in pairs {
            let pair = strings(pair);
            assert_eq!(pair.len(), 2);
            assert_eq!(pair[1], pair[0].replace('f', "v"));
        }
    }
    assert_eq!(strings(request(&mut c, &["HRANDFIELD", "h", "3"])).len(), 3);
}

/// Runs `SSCAN`/`HSCAN key cursor extra…` to cursor 0, calling `between` after every call
/// but the last; returns the items replied and the number of calls.
fn full_scan(
    c: &mut RawClient,
    command: &str,
    key: &str,
    extra: &[&str],
    mut between: impl FnMut(&mut RawClient, usize),
) -> (Vec<String>, usize) {
    let mut cursor = "0".to_string();
    let mut items = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec![command, key, cursor.as_str()];
        args.extend_from_slice(extra);
        let Reply::Many(mut parts) = request(c, &args) else {
            panic!("not an array");
        };
        assert_eq!(parts.len(), 2);
        let batch = strings(parts.pop().expect("items"));
        let next = text(&parts[0]);
        items.extend(batch);
        calls += 1;
        assert!(calls < 10_000, "scan does not end");
        if next == "0" {
            return (items, calls);
        }
        between(c, calls);
        cursor = next;
    }
}

#[test]
fn sscan_and_hscan_replies_and_errors() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    let empty_scan = b"*2\r\n$1\r\n0\r\n*0\r\n";
    send(&mut c, &["SSCAN", "nosuch", "0"], empty_scan);
    send(&mut c, &["HSCAN", "nosuch", "0", "COUNT", "0"], empty_scan);
    send(
        &mut c,
        &["SSCAN", "nosuch", "x"],
        b"-ERR invalid cursor\r\n",
    );
    send(&mut c, &["SADD", "small", "1", "a"], b":2\r\n");
    send(
        &mut c,
        &["SSCAN", "small", "0", "MATCH", "*a*", "COUNT", "100"],
        b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\na\r\n",
    );
    send(
        &mut c,
        &["SSCAN", "small", "0", "MATCH", "*1*"],
        b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\n1\r\n",
    );
    send(&mut c, &["HSET", "hs", "foo", "1", "bar", "2"], b":2\r\n");
    send(
        &mut c,
        &["HSCAN", "hs", "0", "MATCH", "fo*"],
        b"*2\r\n$1\r\n0\r\n*2\r\n$3\r\nfoo\r\n$1\r\n1\r\n",
    );
    let syntax = b"-ERR syntax error\r\n";
    send(&mut c, &["SSCAN", "small", "0", "COUNT", "0"], syntax);
    send(&mut c, &["SSCAN", "small", "0", "TYPE", "set"], syntax);
    send(&mut c, &["HSCAN", "hs", "0", "MATCH"], syntax);
    send(
        &mut c,
        &["HSCAN", "hs", "0", "COUNT", "x"],
        b"-ERR value is not an integer or out of range\r\n",
    );
    send(
        &mut c,
        &["HSCAN", "hs", "18446744073709551616"],
        b"-ERR invalid cursor\r\n",
    );
    let wrongtype = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    send(&mut c, &["HSCAN", "small", "0"], wrongtype);
    send(&mut c, &["SSCAN", "hs", "0"], wrongtype);
    send(
        &mut c,
        &["SSCAN", "small"],
        b"-ERR wrong number of arguments for 'sscan' command\r\n",
    );

    // A 1000-field hash is scanned incrementally; every field once with its own value.
    fill_hash(&mut c, "big", 1000);
    let (flat, calls) = full_scan(&mut c, "HSCAN", "big", &[], |_, _| {});
    assert!(calls > 10, "{calls} calls for 1000 fields at COUNT 10");
    let pairs: BTreeMap<&String, &String> = flat.chunks(2).map(|p| (&p[0], &p[1])).collect();
    assert_eq!(pairs.len(), 1000);
    assert!(pairs.iter().all(|(f, v)| **v == f.replace('f', "v")));
    let (matched, _) = full_scan(
        &mut c,
        "HSCAN",
        "big",
        &["MATCH", "f99*", "COUNT", "100"],
        |_, _| {},
    );
    let names: BTreeSet<&String> = matched.iter().step_by(2).collect();
    let expected: Vec<String> = [
        "f99", "f990", "f991", "f992", "f993", "f994", "f995", "f996", "f997", "f998", "f999",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(names, expected.iter().collect());
}

#[test]
fn sscan_returns_every_stable_member_under_writes() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    for round in 0..3 {
        send(
            &mut c,
            &["DEL", "set"],
            if round == 0 { b":0\r\n" } else { b":1\r\n" },
        );
        let mut args = vec!["SADD".to_string(), "set".to_string()];
        args.extend((0..100).map(|i| format!("stable{i}")));
        args.extend((0..900).map(|i| format!("gone{i}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        send(&mut c, &args, b":1000\r\n");
        let (members, calls) = full_scan(&mut c, "SSCAN", "set", &["COUNT", "7"], |c, call| {
            // Remove most members early, then keep adding new ones.
            if call == 1 + round {
                let mut srem = vec!["SREM".to_string(), "set".to_string()];
                srem.extend((0..900).map(|i| format!("gone{i}")));
                let srem: Vec<&str> = srem.iter().map(String::as_str).collect();
                send(c, &srem, b":900\r\n");
            }
            let added = format!("new{call}");
            send(c, &["SADD", "set", &added], b":1\r\n");
        });
        assert!(calls > 2, "{calls}");
        let found: BTreeSet<&String> = members.iter().collect();
        for i in 0..100 {
            assert!(
                found.contains(&format!("stable{i}")),
                "stable{i} missing in round {round}"
            );
        }
    }
}
