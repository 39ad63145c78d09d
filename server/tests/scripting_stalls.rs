//! A long script does not stall its shard: the count hook yields it to the reactor at the
//! task quota, so a script running for ~300 ms adds no reactor stall over 131 ms. One test in
//! its own binary, so no other test's load preempts the shard thread and adds stalls of its
//! own.

mod common;

use std::time::{Duration, Instant};

use common::{RawClient, Server};

/// Stalls longer than 131.072 ms so far: the count minus the `le="0.131072"` bucket.
fn long_stalls(server: &Server) -> f64 {
    let body = server.scrape();
    assert!(
        body.lines()
            .any(|l| l.starts_with("shardline_reactor_stalls_bucket")
                && l.contains("le=\"0.131072\"")),
        "no 131 ms stall bucket in {body}"
    );
    common::metric_sum(&body, "shardline_reactor_stalls_count", &[])
        - common::metric_sum(
            &body,
            "shardline_reactor_stalls_bucket",
            &[("le", "0.131072")],
        )
}

/// Lua work until 300 ms of wall clock passed (TIME checked every 10,000 turns), read-only.
const SPIN_300_MS: &[u8] = b"local function now() local t = redis.call('time') \
return tonumber(t[1]) * 1000000 + tonumber(t[2]) end \
local start = now() local turns = 0 \
repeat for i = 1, 10000 do turns = turns + 1 end until now() - start >= 300000 \
return turns";

#[test]
fn a_300_ms_script_adds_no_long_stall() {
    let server = Server::start(&["--smp", "1"]);
    let mut client = RawClient::authenticated(&server);
    let mut other = RawClient::authenticated(&server);
    // A stall the script caused would be one of ~300 ms: well over 131 ms. Without the count
    // hook's yields the whole script is one poll, and this count grows by one.
    let before = long_stalls(&server);
    let started = Instant::now();
    client.send(&[b"EVAL_RO", SPIN_300_MS, b"0"]);
    // The shard keeps serving other connections meanwhile (keyless commands only get -BUSY
    // after busy-reply-threshold, 5 s by default).
    std::thread::sleep(Duration::from_millis(100));
    let ping_started = Instant::now();
    other.roundtrip(&[b"PING"], b"+PONG\r\n");
    let ping_took = ping_started.elapsed();
    let reply = client.read_reply();
    let took = started.elapsed();
    assert!(
        reply.starts_with(b":"),
        "{}",
        String::from_utf8_lossy(&reply)
    );
    assert!(
        took >= Duration::from_millis(300),
        "the script ran {took:?}"
    );
    assert!(
        ping_took < Duration::from_millis(150),
        "PING waited {ping_took:?} for the script"
    );
    // The poll after the script is accounted just after it returns.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(long_stalls(&server) - before, 0.0, "{}", server.scrape());
}
