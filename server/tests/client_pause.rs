//! CLIENT PAUSE as Redis 7.0 `processCommand` applies it: a held-back connection counts in
//! INFO `blocked_clients`; a command refused before it would run (wrong arity) is answered
//! at once; while a pause is in force expired keys read as missing but are neither deleted
//! nor counted in `expired_keys` (lazily or by the sweep) until it ends.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{info_field, login_plain, text, wait_for, RawClient, Server};

fn start() -> Server {
    Server::start(&["--tls", "off", "--smp", "2", "--appendonly", "no"])
}

fn stat(client: &mut RawClient, section: &[u8], name: &str) -> String {
    info_field(&text(client.request(&[b"INFO", section])), name)
}

#[test]
fn paused_writers_count_as_blocked_clients_and_refusals_are_not_held() {
    let server = start();
    let mut admin = login_plain(&server);
    admin.roundtrip(&[b"CLIENT", b"PAUSE", b"60000", b"WRITE"], b"+OK\r\n");
    // Wrong arity is answered at once, not after the pause.
    admin.roundtrip(
        &[b"SET", b"foo"],
        b"-ERR wrong number of arguments for 'set' command\r\n",
    );
    let (done, replies) = mpsc::channel();
    let writers: Vec<_> = (0..3)
        .map(|_| {
            let mut writer = login_plain(&server);
            let done = done.clone();
            std::thread::spawn(move || {
                let _ = done.send(writer.request(&[b"SET", b"FOO", b"BAR"]));
            })
        })
        .collect();
    wait_for(|| stat(&mut admin, b"clients", "blocked_clients") == "3");
    assert!(replies.recv_timeout(Duration::from_millis(100)).is_err());
    admin.roundtrip(&[b"CLIENT", b"UNPAUSE"], b"+OK\r\n");
    for _ in 0..3 {
        let reply = replies
            .recv_timeout(Duration::from_secs(10))
            .expect("reply");
        assert_eq!(reply, b"+OK\r\n");
    }
    writers.into_iter().for_each(|t| t.join().expect("writer"));
    assert_eq!(stat(&mut admin, b"clients", "blocked_clients"), "0");
}

#[test]
fn expired_keys_read_as_missing_but_stay_during_a_pause() {
    let server = start();
    let mut client = login_plain(&server);
    let expired_before: u64 = stat(&mut client, b"stats", "expired_keys").parse().unwrap();
    client.roundtrip(&[b"SET", b"ek", b"v", b"PX", b"100"], b"+OK\r\n");
    client.roundtrip(&[b"CLIENT", b"PAUSE", b"60000", b"WRITE"], b"+OK\r\n");
    // Past the deadline and past several expiry sweeps.
    std::thread::sleep(Duration::from_millis(400));
    client.roundtrip(&[b"GET", b"ek"], b"$-1\r\n");
    client.roundtrip(&[b"EXISTS", b"ek"], b":0\r\n");
    client.roundtrip(&[b"TTL", b"ek"], b":-2\r\n");
    client.roundtrip(&[b"TYPE", b"ek"], b"+none\r\n");
    // Redis counts the key not yet deleted.
    client.roundtrip(&[b"DBSIZE"], b":1\r\n");
    client.roundtrip(&[b"KEYS", b"*"], b"*0\r\n");
    assert_eq!(
        stat(&mut client, b"stats", "expired_keys"),
        expired_before.to_string()
    );
    client.roundtrip(&[b"CLIENT", b"UNPAUSE"], b"+OK\r\n");
    client.roundtrip(&[b"GET", b"ek"], b"$-1\r\n");
    client.roundtrip(&[b"DBSIZE"], b":0\r\n");
    assert_eq!(
        stat(&mut client, b"stats", "expired_keys"),
        (expired_before + 1).to_string()
    );
}

/// RANDOMKEY while expired keys cannot be deleted (a write pause): it answers a live key, or
/// nil when every key has expired, on every shard, instead of drawing the same expired key
/// for ever (which pinned a shard at 100 % CPU and never answered).
#[test]
fn randomkey_answers_while_a_pause_keeps_expired_keys() {
    let server = start();
    let mut client = login_plain(&server);
    let keep = common::key_on(0, "keep");
    client.roundtrip(&[b"SET", keep.as_bytes(), b"v"], b"+OK\r\n");
    // Expiring keys on both shards, so one shard holds only expired keys.
    for shard in 0..2 {
        for i in 0..5 {
            let key = common::key_on(shard, &format!("gone{i}"));
            client.roundtrip(&[b"SET", key.as_bytes(), b"v", b"PX", b"100"], b"+OK\r\n");
        }
    }
    client.roundtrip(&[b"CLIENT", b"PAUSE", b"60000", b"WRITE"], b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(300));
    let want = format!("${}\r\n{keep}\r\n", keep.len());
    for _ in 0..20 {
        client.roundtrip(&[b"RANDOMKEY"], want.as_bytes());
    }
    client.roundtrip(&[b"CLIENT", b"UNPAUSE"], b"+OK\r\n");
    // Only expired keys: nil.
    client.roundtrip(&[b"FLUSHALL"], b"+OK\r\n");
    for shard in 0..2 {
        let key = common::key_on(shard, "gone");
        client.roundtrip(&[b"SET", key.as_bytes(), b"v", b"PX", b"100"], b"+OK\r\n");
    }
    client.roundtrip(&[b"CLIENT", b"PAUSE", b"60000", b"WRITE"], b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(300));
    client.roundtrip(&[b"RANDOMKEY"], b"$-1\r\n");
    client.roundtrip(&[b"CLIENT", b"UNPAUSE"], b"+OK\r\n");
}
