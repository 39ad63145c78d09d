//! Long scripts through the real binary: `-BUSY` for other clients once a script has run past
//! `busy-reply-threshold`, SCRIPT KILL of a read-only script, `-UNKILLABLE` for one that wrote,
//! SHUTDOWN NOSAVE while it runs, and the script's own shard answering its other clients.
//! The error texts are checked against a reference redis-server 7.0 doing the same.

mod common;

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use common::reference::RedisReference;
use common::shards::client_on;
use common::{RawClient, Server};

/// Ports set aside for this suite's reference redis-servers.
const REFERENCE_PORTS: std::ops::Range<u16> = 6450..6470;

const BUSY: &[u8] =
    b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
const UNKILLABLE: &[u8] = b"-UNKILLABLE Sorry the script already executed write commands against \
the dataset. You can either wait the script termination or kill the server in a hard way using \
the SHUTDOWN NOSAVE command.\r\n";
const LOOP: &[u8] = b"while true do end";
const WRITE_THEN_LOOP: &[u8] = b"redis.call('set', KEYS[1], 'x') while true do end";

/// Sends PING on `client` until it answers `-BUSY` (panics after `within`); the time it took.
fn wait_busy(client: &mut RawClient, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let reply = client.request(&[b"PING"]);
        if reply == BUSY {
            return start.elapsed();
        }
        assert_eq!(reply, b"+PONG\r\n", "{}", String::from_utf8_lossy(&reply));
        assert!(start.elapsed() < within, "no -BUSY within {within:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a reference redis-server answers in the same sequence: the looping client's error
/// after SCRIPT KILL, and SCRIPT KILL's answer for a script that wrote.
fn redis_kill_replies() -> (Vec<u8>, Vec<u8>) {
    let redis = RedisReference::start_in_ports(REFERENCE_PORTS, &[]);
    let mut admin = RawClient::plain(redis.addr);
    admin.roundtrip(
        &[b"CONFIG", b"SET", b"busy-reply-threshold", b"50"],
        b"+OK\r\n",
    );
    let mut looper = RawClient::plain(redis.addr);
    looper.send(&[b"EVAL", LOOP, b"0"]);
    wait_busy(&mut admin, Duration::from_secs(2));
    admin.roundtrip(&[b"SCRIPT", b"KILL"], b"+OK\r\n");
    let killed = looper.read_reply();
    admin.roundtrip(&[b"PING"], b"+PONG\r\n");
    looper.send(&[b"EVAL", WRITE_THEN_LOOP, b"1", b"b"]);
    wait_busy(&mut admin, Duration::from_secs(2));
    let unkillable = admin.request(&[b"SCRIPT", b"KILL"]);
    admin.send(&[b"SHUTDOWN", b"NOSAVE"]);
    (killed, unkillable)
}

/// Waits (at most `bound`) for the server process to exit.
fn exit_within(server: &mut Server, bound: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn busy_script_kill_unkillable_and_shutdown_nosave() {
    let (redis_killed, redis_unkillable) = redis_kill_replies();
    assert_eq!(redis_unkillable, UNKILLABLE);

    let mut server = Server::start(&["--smp", "2"]);
    let mut admin = client_on(&server, 1);
    admin.roundtrip(
        &[b"CONFIG", b"SET", b"busy-reply-threshold", b"50"],
        b"+OK\r\n",
    );
    admin.roundtrip(
        &[b"SCRIPT", b"KILL"],
        b"-NOTBUSY No scripts in execution right now.\r\n",
    );

    // A read-only endless script from a shard-0 connection, declaring no key: it holds shard 0.
    let mut looper = client_on(&server, 0);
    let mut neighbour = client_on(&server, 0);
    looper.send(&[b"EVAL", LOOP, b"0"]);
    let took = wait_busy(&mut admin, Duration::from_secs(2));
    assert!(took < Duration::from_secs(2));
    // As from Redis, every client gets -BUSY, whatever shard its keys live on: "b" is on the
    // held shard 0, "a" on shard 1.
    assert_eq!(shardline::keyspace::slot::owner_shard(b"a", 2), 1);
    assert_eq!(shardline::keyspace::slot::owner_shard(b"b", 2), 0);
    admin.roundtrip(&[b"GET", b"b"], BUSY);
    admin.roundtrip(&[b"SET", b"a", b"1"], BUSY);
    // Another connection of the script's own shard is answered too (the script yields its
    // shard to it), with -BUSY.
    neighbour.roundtrip(&[b"GET", b"a"], BUSY);
    neighbour.roundtrip(&[b"PING"], BUSY);
    // FUNCTION KILL does not stop an EVAL script.
    let other_kind = admin.request(&[b"FUNCTION", b"KILL"]);
    assert!(
        other_kind.starts_with(b"-"),
        "{}",
        String::from_utf8_lossy(&other_kind)
    );

    admin.roundtrip(&[b"SCRIPT", b"KILL"], b"+OK\r\n");
    let killed = looper.read_reply();
    assert!(
        killed.starts_with(b"-ERR Script killed by user with SCRIPT KILL..."),
        "{}",
        String::from_utf8_lossy(&killed)
    );
    assert_eq!(
        String::from_utf8_lossy(&killed),
        String::from_utf8_lossy(&redis_killed),
        "the killed script's error differs from redis-server's"
    );
    admin.roundtrip(&[b"PING"], b"+PONG\r\n");
    looper.roundtrip(&[b"PING"], b"+PONG\r\n");
    admin.roundtrip(&[b"GET", b"b"], b"$-1\r\n");

    // A script that wrote cannot be killed; SHUTDOWN NOSAVE ends the server.
    looper.send(&[b"EVAL", WRITE_THEN_LOOP, b"1", b"b"]);
    wait_busy(&mut admin, Duration::from_secs(2));
    admin.roundtrip(&[b"SCRIPT", b"KILL"], UNKILLABLE);
    admin.roundtrip(&[b"PING"], BUSY);
    admin.send(&[b"SHUTDOWN", b"NOSAVE"]);
    let status = exit_within(&mut server, Duration::from_secs(10));
    assert!(
        status.is_some(),
        "the server still runs 10 s after SHUTDOWN NOSAVE"
    );
}

/// The same for functions: FUNCTION KILL stops a `no-writes` function that loops.
#[test]
fn function_kill_stops_a_looping_function() {
    let server = Server::start(&["--smp", "2"]);
    let mut admin = client_on(&server, 1);
    admin.roundtrip(
        &[b"CONFIG", b"SET", b"busy-reply-threshold", b"50"],
        b"+OK\r\n",
    );
    admin.roundtrip(
        &[
            b"FUNCTION",
            b"LOAD",
            b"#!lua name=spin\nredis.register_function{function_name='spin', \
              callback=function() while true do end end, flags={'no-writes'}}",
        ],
        b"$4\r\nspin\r\n",
    );
    let mut looper = client_on(&server, 0);
    looper.send(&[b"FCALL_RO", b"spin", b"0"]);
    let busy_fn: &[u8] = b"-BUSY Redis is busy running a script. You can only call FUNCTION \
KILL or SHUTDOWN NOSAVE.\r\n";
    let start = Instant::now();
    loop {
        let reply = admin.request(&[b"PING"]);
        if reply == busy_fn {
            break;
        }
        assert_eq!(reply, b"+PONG\r\n", "{}", String::from_utf8_lossy(&reply));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "no -BUSY within 2 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    admin.roundtrip(&[b"FUNCTION", b"KILL"], b"+OK\r\n");
    let killed = looper.read_reply();
    assert!(
        killed.starts_with(b"-ERR Script killed by user with FUNCTION KILL..."),
        "{}",
        String::from_utf8_lossy(&killed)
    );
    admin.roundtrip(&[b"PING"], b"+PONG\r\n");
}
