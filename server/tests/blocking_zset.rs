//! Blocking sorted-set pops through the real binary (`--smp 2`): BZPOPMIN/BZPOPMAX/BZMPOP
//! waiters on one shard woken by a ZADD on the other, first-come first-served order,
//! timeouts in RESP2 and RESP3, a waiter that leaves, MULTI, WRONGTYPE, and the log replayed
//! after a restart (Redis 7.0.15 `t_zset.c` `blockingGenericZpopCommand`).

mod common;

use std::time::{Duration, Instant};

use common::shards::{bulk, client_on, wait_blocked};
use common::{key_on, RawClient, Server};

const ARGS: &[&str] = &["--smp", "2"];

/// RESP2 `[key, member, score]`.
fn triple(key: &str, member: &str, score: &str) -> Vec<u8> {
    format!("*3\r\n{}{}{}", bulk(key), bulk(member), bulk(score)).into_bytes()
}

#[test]
fn bzpopmin_on_another_shard_is_woken_by_zadd() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let mut other = client_on(&server, 1);
    let key = key_on(1, "bz:wake:");
    waiter.send(&[b"BZPOPMIN", key.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    let list = common::text(other.request(&[b"CLIENT", b"LIST"]));
    assert!(
        list.lines()
            .any(|l| l.contains(" flags=b ") && l.contains(" cmd=bzpopmin ")),
        "{list}"
    );
    assert_eq!(
        other.request(&[b"ZADD", key.as_bytes(), b"2", b"b", b"1", b"a"]),
        b":2\r\n"
    );
    assert_eq!(waiter.read_reply(), triple(&key, "a", "1"));
    assert_eq!(
        common::text(other.request(&[b"ZRANGE", key.as_bytes(), b"0", b"-1", b"WITHSCORES"])),
        format!("*2\r\n{}{}", bulk("b"), bulk("2"))
    );
    wait_blocked(&mut other, 0);
    // Data already there: no wait; the first key in argument order that has data.
    let empty = key_on(0, "bz:wake:empty");
    assert_eq!(
        waiter.request(&[b"BZPOPMAX", empty.as_bytes(), key.as_bytes(), b"0"]),
        triple(&key, "b", "2")
    );
    assert_eq!(other.request(&[b"EXISTS", key.as_bytes()]), b":0\r\n");
    // RESP3: the score is a double.
    other.request(&[b"ZADD", key.as_bytes(), b"1.5", b"x"]);
    waiter.request(&[b"HELLO", b"3"]);
    assert_eq!(
        common::text(waiter.request(&[b"BZPOPMIN", key.as_bytes(), b"0"])),
        format!("*3\r\n{}{},1.5\r\n", bulk(&key), bulk("x"))
    );
    // WRONGTYPE for a key of another type.
    other.request(&[b"SET", key.as_bytes(), b"s"]);
    assert_eq!(
        waiter.request(&[b"BZPOPMIN", empty.as_bytes(), key.as_bytes(), b"0"]),
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    );
    waiter.roundtrip(&[b"PING"], b"+PONG\r\n");
}

#[test]
fn bzpopmax_serves_three_waiters_in_arrival_order() {
    let server = Server::start(ARGS);
    let key = key_on(0, "bz:fifo:");
    let mut adder = client_on(&server, 0);
    let mut waiters: Vec<RawClient> = [1, 0, 1]
        .into_iter()
        .map(|shard| client_on(&server, shard))
        .collect();
    for (n, waiter) in waiters.iter_mut().enumerate() {
        waiter.send(&[b"BZPOPMAX", key.as_bytes(), b"0"]);
        wait_blocked(&mut adder, n + 1);
    }
    assert_eq!(
        adder.request(&[
            b"ZADD",
            key.as_bytes(),
            b"1",
            b"a",
            b"2",
            b"b",
            b"3",
            b"c",
            b"4",
            b"d"
        ]),
        b":4\r\n"
    );
    for (waiter, (member, score)) in waiters.iter_mut().zip([("d", "4"), ("c", "3"), ("b", "2")]) {
        assert_eq!(waiter.read_reply(), triple(&key, member, score));
    }
    assert_eq!(
        common::text(adder.request(&[b"ZRANGE", key.as_bytes(), b"0", b"-1"])),
        format!("*1\r\n{}", bulk("a"))
    );
}

#[test]
fn bzmpop_with_count_across_two_keys_on_different_shards() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let mut other = client_on(&server, 1);
    let (a, b) = (key_on(0, "bz:mpop:a"), key_on(1, "bz:mpop:b"));
    waiter.send(&[
        b"BZMPOP",
        b"0",
        b"2",
        a.as_bytes(),
        b.as_bytes(),
        b"MIN",
        b"COUNT",
        b"2",
    ]);
    wait_blocked(&mut other, 1);
    other.request(&[b"ZADD", b.as_bytes(), b"3", b"z", b"1", b"x", b"2", b"y"]);
    assert_eq!(
        common::text(waiter.read_reply()),
        format!(
            "*2\r\n{}*2\r\n*2\r\n{}{}*2\r\n{}{}",
            bulk(&b),
            bulk("x"),
            bulk("1"),
            bulk("y"),
            bulk("2")
        )
    );
    wait_blocked(&mut other, 0);
    // Nothing is left queued on the other key's shard: a ZADD there stays.
    other.request(&[b"ZADD", a.as_bytes(), b"5", b"kept"]);
    assert_eq!(other.request(&[b"ZCARD", a.as_bytes()]), b":1\r\n");
    // Data already there: the first key with data, MAX, the whole set when COUNT exceeds it.
    assert_eq!(
        common::text(waiter.request(&[
            b"BZMPOP",
            b"0",
            b"2",
            b.as_bytes(),
            a.as_bytes(),
            b"MAX",
            b"COUNT",
            b"10"
        ])),
        format!("*2\r\n{}*1\r\n*2\r\n{}{}", bulk(&b), bulk("z"), bulk("3"))
    );
    // Argument errors come before the timeout's, as Redis checks them.
    assert_eq!(
        waiter.request(&[b"BZMPOP", b"x", b"0", a.as_bytes(), b"MIN"]),
        b"-ERR numkeys should be greater than 0\r\n"
    );
    assert_eq!(
        waiter.request(&[b"BZMPOP", b"x", b"1", a.as_bytes(), b"MIN", b"COUNT", b"0"]),
        b"-ERR count should be greater than 0\r\n"
    );
    assert_eq!(
        waiter.request(&[b"BZMPOP", b"x", b"1", a.as_bytes(), b"LEFT"]),
        b"-ERR syntax error\r\n"
    );
    assert_eq!(
        waiter.request(&[b"BZMPOP", b"x", b"1", a.as_bytes(), b"MIN"]),
        b"-ERR timeout is not a float or out of range\r\n"
    );
}

#[test]
fn timeouts_reply_null_in_resp2_and_resp3() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let key = key_on(1, "bz:timeout:");
    let started = Instant::now();
    assert_eq!(
        waiter.request(&[b"BZPOPMIN", key.as_bytes(), b"0.3"]),
        b"*-1\r\n"
    );
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(250), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(
        waiter.request(&[b"BZMPOP", b"0.1", b"1", key.as_bytes(), b"MAX"]),
        b"*-1\r\n"
    );
    waiter.request(&[b"HELLO", b"3"]);
    assert_eq!(
        waiter.request(&[b"BZPOPMAX", key.as_bytes(), b"0.1"]),
        b"_\r\n"
    );
    assert_eq!(
        waiter.request(&[b"BZMPOP", b"0.1", b"1", key.as_bytes(), b"MIN"]),
        b"_\r\n"
    );
    assert_eq!(
        waiter.request(&[b"BZPOPMIN", key.as_bytes(), b"-1"]),
        b"-ERR timeout is negative\r\n"
    );
}

#[test]
fn a_waiter_that_left_gets_nothing_popped() {
    let server = Server::start(ARGS);
    let mut other = client_on(&server, 1);
    let key = key_on(1, "bz:gone:");
    {
        let mut waiter = client_on(&server, 0);
        waiter.send(&[b"BZPOPMIN", key.as_bytes(), b"0"]);
        wait_blocked(&mut other, 1);
    }
    wait_blocked(&mut other, 0);
    other.request(&[b"ZADD", key.as_bytes(), b"1", b"m"]);
    assert_eq!(
        common::text(other.request(&[b"ZRANGE", key.as_bytes(), b"0", b"-1", b"WITHSCORES"])),
        format!("*2\r\n{}{}", bulk("m"), bulk("1"))
    );
}

#[test]
fn inside_multi_a_blocking_zpop_does_not_block() {
    let server = Server::start(ARGS);
    let mut client = client_on(&server, 0);
    let (empty, full) = (key_on(1, "bz:multi:empty"), key_on(0, "bz:multi:full"));
    client.request(&[b"ZADD", full.as_bytes(), b"1", b"v"]);
    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    client.roundtrip(&[b"BZPOPMIN", empty.as_bytes(), b"0"], b"+QUEUED\r\n");
    client.roundtrip(&[b"BZPOPMAX", full.as_bytes(), b"0"], b"+QUEUED\r\n");
    client.roundtrip(
        &[b"BZMPOP", b"0", b"1", empty.as_bytes(), b"MIN"],
        b"+QUEUED\r\n",
    );
    let mut expected = b"*3\r\n*-1\r\n".to_vec();
    expected.extend(triple(&full, "v", "1"));
    expected.extend(b"*-1\r\n");
    assert_eq!(client.request(&[b"EXEC"]), expected);
}

#[test]
fn served_zpops_replay_after_a_restart() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let mut other = client_on(&server, 1);
    let key = key_on(1, "bz:replay:");
    waiter.send(&[b"BZPOPMIN", key.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    other.request(&[
        b"ZADD",
        key.as_bytes(),
        b"1",
        b"a",
        b"2",
        b"b",
        b"3",
        b"c",
        b"4",
        b"d",
    ]);
    assert_eq!(waiter.read_reply(), triple(&key, "a", "1"));
    waiter.send(&[
        b"BZMPOP",
        b"0",
        b"1",
        key.as_bytes(),
        b"MAX",
        b"COUNT",
        b"2",
    ]);
    assert_eq!(
        common::text(waiter.read_reply()),
        format!(
            "*2\r\n{}*2\r\n*2\r\n{}{}*2\r\n{}{}",
            bulk(&key),
            bulk("d"),
            bulk("4"),
            bulk("c"),
            bulk("3")
        )
    );
    let before = other.request(&[b"ZRANGE", key.as_bytes(), b"0", b"-1", b"WITHSCORES"]);
    assert_eq!(
        common::text(before.clone()),
        format!("*2\r\n{}{}", bulk("b"), bulk("2"))
    );
    drop((waiter, other));
    let password = server.password.clone();
    let dir = server.kill9();
    let server = Server::restart_in(dir, ARGS, &password);
    let mut client = RawClient::authenticated(&server);
    assert_eq!(
        client.request(&[b"ZRANGE", key.as_bytes(), b"0", b"-1", b"WITHSCORES"]),
        before
    );
}

#[test]
fn a_zadd_serves_a_zset_waiter_queued_behind_a_list_waiter() {
    let server = Server::start(ARGS);
    let mut other = client_on(&server, 1);
    let key = key_on(1, "bz:mixed:");
    let mut list_waiter = client_on(&server, 0);
    list_waiter.send(&[b"BLPOP", key.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    let mut zset_waiter = client_on(&server, 0);
    zset_waiter.send(&[b"BZPOPMIN", key.as_bytes(), b"0"]);
    wait_blocked(&mut other, 2);
    other.request(&[b"ZADD", key.as_bytes(), b"7", b"m"]);
    assert_eq!(zset_waiter.read_reply(), triple(&key, "m", "7"));
    wait_blocked(&mut other, 1);
    // The list waiter still waits, and a push serves it.
    other.request(&[b"RPUSH", key.as_bytes(), b"x"]);
    assert_eq!(
        common::text(list_waiter.read_reply()),
        format!("*2\r\n{}{}", bulk(&key), bulk("x"))
    );
}
