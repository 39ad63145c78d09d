//! Blocking list commands through the real binary (`--smp 2`): BLPOP/BRPOP/BLMPOP/BLMOVE
//! waiters on one shard woken by pushes on the other, timeouts, first-come first-served
//! order, a waiter that leaves, CLIENT UNBLOCK, MULTI, and the log replayed after a restart.

mod common;

use std::time::{Duration, Instant};

use common::shards::{bulk, client_on, wait_blocked};
use common::{key_on, RawClient, Server};

const ARGS: &[&str] = &["--smp", "2"];

fn pair(key: &str, element: &str) -> Vec<u8> {
    format!("*2\r\n{}{}", bulk(key), bulk(element)).into_bytes()
}

#[test]
fn blpop_on_another_shard_is_woken_by_a_push() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let mut other = client_on(&server, 1);
    let key = key_on(1, "bl:wake:");
    waiter.send(&[b"BLPOP", key.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    // The waiter shows as blocked in CLIENT LIST.
    let list = common::text(other.request(&[b"CLIENT", b"LIST"]));
    assert!(
        list.lines()
            .any(|l| l.contains(" flags=b ") && l.contains(" cmd=blpop ")),
        "{list}"
    );
    assert_eq!(
        other.request(&[b"RPUSH", key.as_bytes(), b"x", b"y"]),
        b":2\r\n"
    );
    assert_eq!(waiter.read_reply(), pair(&key, "x"));
    assert_eq!(
        common::text(other.request(&[b"LRANGE", key.as_bytes(), b"0", b"-1"])),
        format!("*1\r\n{}", bulk("y"))
    );
    wait_blocked(&mut other, 0);
    // The connection goes on with its next request.
    waiter.roundtrip(&[b"PING"], b"+PONG\r\n");
}

#[test]
fn blpop_of_several_keys_names_the_key_that_got_data() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 1);
    let mut other = client_on(&server, 0);
    let (a, b) = (key_on(0, "bl:multi:a"), key_on(1, "bl:multi:b"));
    // Data already there: the first non-empty key in argument order.
    other.request(&[b"RPUSH", b.as_bytes(), b"old"]);
    assert_eq!(
        waiter.request(&[b"BRPOP", a.as_bytes(), b.as_bytes(), b"1"]),
        pair(&b, "old")
    );
    waiter.send(&[b"BRPOP", a.as_bytes(), b.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    other.request(&[b"LPUSH", a.as_bytes(), b"first", b"last"]);
    assert_eq!(waiter.read_reply(), pair(&a, "first"));
    // No queue entry is left behind on the other key's shard: a push there stays.
    wait_blocked(&mut other, 0);
    other.request(&[b"RPUSH", b.as_bytes(), b"kept"]);
    assert_eq!(
        common::text(other.request(&[b"LRANGE", b.as_bytes(), b"0", b"-1"])),
        format!("*1\r\n{}", bulk("kept"))
    );
}

#[test]
fn timeouts_reply_null_after_about_the_timeout() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let key = key_on(1, "bl:timeout:");
    let started = Instant::now();
    assert_eq!(
        waiter.request(&[b"BLPOP", key.as_bytes(), b"0.3"]),
        b"*-1\r\n"
    );
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(250), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    let dst = key_on(0, "bl:timeout:dst");
    assert_eq!(
        waiter.request(&[
            b"BLMOVE",
            key.as_bytes(),
            dst.as_bytes(),
            b"LEFT",
            b"RIGHT",
            b"0.2"
        ]),
        // A null array, as every timed-out list waiter in Redis 7.0.15
        // (`replyToBlockedClientTimedOut`); inside MULTI it is a null bulk (below).
        b"*-1\r\n"
    );
    assert_eq!(
        waiter.request(&[b"BLMPOP", b"0.2", b"1", key.as_bytes(), b"LEFT"]),
        b"*-1\r\n"
    );
    // RESP3: `_`.
    waiter.request(&[b"HELLO", b"3"]);
    assert_eq!(
        waiter.request(&[b"BRPOP", key.as_bytes(), b"0.2"]),
        b"_\r\n"
    );
    // Redis's errors for the timeout argument.
    assert_eq!(
        waiter.request(&[b"BLPOP", key.as_bytes(), b"-1"]),
        b"-ERR timeout is negative\r\n"
    );
    assert_eq!(
        waiter.request(&[b"BLPOP", key.as_bytes(), b"soon"]),
        b"-ERR timeout is not a float or out of range\r\n"
    );
}

#[test]
fn waiters_are_served_first_come_first_served() {
    let server = Server::start(ARGS);
    let key = key_on(0, "bl:fifo:");
    let mut pusher = client_on(&server, 0);
    let mut waiters: Vec<RawClient> = [1, 0, 1]
        .into_iter()
        .map(|shard| client_on(&server, shard))
        .collect();
    for (n, waiter) in waiters.iter_mut().enumerate() {
        waiter.send(&[b"BLPOP", key.as_bytes(), b"0"]);
        wait_blocked(&mut pusher, n + 1);
    }
    assert_eq!(
        pusher.request(&[b"RPUSH", key.as_bytes(), b"a", b"b", b"c", b"d"]),
        b":4\r\n"
    );
    for (waiter, element) in waiters.iter_mut().zip(["a", "b", "c"]) {
        assert_eq!(waiter.read_reply(), pair(&key, element));
    }
    assert_eq!(
        common::text(pusher.request(&[b"LRANGE", key.as_bytes(), b"0", b"-1"])),
        format!("*1\r\n{}", bulk("d"))
    );
}

#[test]
fn blmove_across_shards_moves_the_element_once() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let mut other = client_on(&server, 1);
    let (src, dst) = (key_on(1, "bl:move:src"), key_on(0, "bl:move:dst"));
    other.request(&[b"RPUSH", dst.as_bytes(), b"old"]);
    waiter.send(&[
        b"BLMOVE",
        src.as_bytes(),
        dst.as_bytes(),
        b"RIGHT",
        b"LEFT",
        b"0",
    ]);
    wait_blocked(&mut other, 1);
    other.request(&[b"RPUSH", src.as_bytes(), b"x"]);
    assert_eq!(waiter.read_reply(), bulk("x").into_bytes());
    assert_eq!(other.request(&[b"EXISTS", src.as_bytes()]), b":0\r\n");
    assert_eq!(
        common::text(other.request(&[b"LRANGE", dst.as_bytes(), b"0", b"-1"])),
        format!("*2\r\n{}{}", bulk("x"), bulk("old"))
    );
    // BRPOPLPUSH with both keys on one shard (the other one than the waiter's).
    let dst1 = key_on(1, "bl:move:dst1");
    waiter.send(&[b"BRPOPLPUSH", src.as_bytes(), dst1.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    other.request(&[b"RPUSH", src.as_bytes(), b"y", b"z"]);
    assert_eq!(waiter.read_reply(), bulk("z").into_bytes());
    assert_eq!(
        common::text(other.request(&[b"LRANGE", dst1.as_bytes(), b"0", b"-1"])),
        format!("*1\r\n{}", bulk("z"))
    );
    assert_eq!(
        common::text(other.request(&[b"LRANGE", src.as_bytes(), b"0", b"-1"])),
        format!("*1\r\n{}", bulk("y"))
    );
}

#[test]
fn a_waiter_that_left_gets_nothing_popped() {
    let server = Server::start(ARGS);
    let mut other = client_on(&server, 1);
    let key = key_on(1, "bl:gone:");
    {
        let mut waiter = client_on(&server, 0);
        waiter.send(&[b"BLPOP", key.as_bytes(), b"0"]);
        wait_blocked(&mut other, 1);
    }
    wait_blocked(&mut other, 0);
    other.request(&[b"RPUSH", key.as_bytes(), b"x"]);
    assert_eq!(
        common::text(other.request(&[b"LRANGE", key.as_bytes(), b"0", b"-1"])),
        format!("*1\r\n{}", bulk("x"))
    );
    // A waiter that timed out, likewise.
    let mut waiter = client_on(&server, 0);
    let empty = key_on(1, "bl:gone:empty");
    assert_eq!(
        waiter.request(&[b"BLPOP", empty.as_bytes(), b"0.1"]),
        b"*-1\r\n"
    );
    other.request(&[b"RPUSH", empty.as_bytes(), b"y"]);
    assert_eq!(other.request(&[b"LLEN", empty.as_bytes()]), b":1\r\n");
}

#[test]
fn client_unblock_and_client_kill_end_a_wait() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let mut other = client_on(&server, 1);
    let id = common::text(waiter.request(&[b"CLIENT", b"ID"]));
    let id = id.trim_start_matches(':').trim().to_string();
    let key = key_on(1, "bl:unblock:");
    waiter.send(&[b"BLPOP", key.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    assert_eq!(
        other.request(&[b"CLIENT", b"UNBLOCK", id.as_bytes()]),
        b":1\r\n"
    );
    assert_eq!(waiter.read_reply(), b"*-1\r\n");
    assert_eq!(
        other.request(&[b"CLIENT", b"UNBLOCK", id.as_bytes()]),
        b":0\r\n"
    );
    waiter.send(&[b"BLMPOP", b"0", b"1", key.as_bytes(), b"LEFT"]);
    wait_blocked(&mut other, 1);
    assert_eq!(
        other.request(&[b"CLIENT", b"UNBLOCK", id.as_bytes(), b"ERROR"]),
        b":1\r\n"
    );
    assert_eq!(
        waiter.read_reply(),
        b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    );
    waiter.send(&[b"BLPOP", key.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    assert_eq!(
        other.request(&[b"CLIENT", b"KILL", b"ID", id.as_bytes()]),
        b":1\r\n"
    );
    wait_blocked(&mut other, 0);
    other.request(&[b"RPUSH", key.as_bytes(), b"x"]);
    assert_eq!(other.request(&[b"LLEN", key.as_bytes()]), b":1\r\n");
}

#[test]
fn inside_multi_a_blocking_pop_does_not_block() {
    let server = Server::start(ARGS);
    let mut client = client_on(&server, 0);
    let (empty, full) = (key_on(1, "bl:multi:empty"), key_on(0, "bl:multi:full"));
    client.request(&[b"RPUSH", full.as_bytes(), b"v"]);
    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    client.roundtrip(&[b"BLPOP", empty.as_bytes(), b"0"], b"+QUEUED\r\n");
    client.roundtrip(&[b"BLPOP", full.as_bytes(), b"0"], b"+QUEUED\r\n");
    client.roundtrip(
        &[
            b"BLMOVE",
            empty.as_bytes(),
            full.as_bytes(),
            b"LEFT",
            b"LEFT",
            b"0",
        ],
        b"+QUEUED\r\n",
    );
    let mut expected = b"*3\r\n*-1\r\n".to_vec();
    expected.extend(pair(&full, "v"));
    expected.extend(b"$-1\r\n");
    assert_eq!(client.request(&[b"EXEC"]), expected);
}

#[test]
fn served_pops_replay_after_a_restart() {
    let server = Server::start(ARGS);
    let mut waiter = client_on(&server, 0);
    let mut other = client_on(&server, 1);
    let (key, dst) = (key_on(1, "bl:replay:"), key_on(0, "bl:replay:dst"));
    waiter.send(&[b"BLPOP", key.as_bytes(), b"0"]);
    wait_blocked(&mut other, 1);
    other.request(&[b"RPUSH", key.as_bytes(), b"a", b"b", b"c"]);
    assert_eq!(waiter.read_reply(), pair(&key, "a"));
    waiter.send(&[
        b"BLMOVE",
        dst.as_bytes(),
        key.as_bytes(),
        b"LEFT",
        b"LEFT",
        b"0",
    ]);
    wait_blocked(&mut other, 1);
    other.request(&[b"RPUSH", dst.as_bytes(), b"d"]);
    assert_eq!(waiter.read_reply(), bulk("d").into_bytes());
    let before = other.request(&[b"LRANGE", key.as_bytes(), b"0", b"-1"]);
    assert_eq!(
        common::text(before.clone()),
        format!("*3\r\n{}{}{}", bulk("d"), bulk("b"), bulk("c"))
    );
    drop((waiter, other));
    let password = server.password.clone();
    let dir = server.kill9();
    let server = Server::restart_in(dir, ARGS, &password);
    let mut client = RawClient::authenticated(&server);
    assert_eq!(
        client.request(&[b"LRANGE", key.as_bytes(), b"0", b"-1"]),
        before
    );
    assert_eq!(client.request(&[b"EXISTS", dst.as_bytes()]), b":0\r\n");
}
