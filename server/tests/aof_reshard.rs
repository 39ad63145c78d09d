//! A restart with another `--smp` moves every key to its new owner shard, and a `kill -9`
//! while it does loses nothing.

mod common;

use std::time::Duration;

use common::{check_keys as check, fill_keys as fill, login_plain, Server};

/// `always`, so that every acknowledged write is on disk when the test kills the server.
fn args(smp: &'static str) -> [&'static str; 6] {
    ["--tls", "off", "--appendfsync", "always", "--smp", smp]
}

#[test]
fn keys_move_to_their_new_owner_shards_when_smp_changes() {
    let server = Server::start(&args("2"));
    let mut client = login_plain(&server);
    fill(&mut client, 500);
    client.roundtrip(&[b"RPUSH", b"list", b"a", b"b"], b":2\r\n");
    client.roundtrip(&[b"SET", b"ttl", b"v", b"EX", b"1000"], b"+OK\r\n");
    client.roundtrip(
        &[b"BGREWRITEAOF"],
        b"+Background append only file rewriting started\r\n",
    );
    std::thread::sleep(Duration::from_millis(300));
    client.roundtrip(&[b"SET", b"after", b"1"], b"+OK\r\n");
    let password = server.password.clone();

    let server = Server::restart_in(server.kill9(), &args("1"), &password);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"DBSIZE"], b":503\r\n");
    check(&mut client, 500, "--smp 1");
    client.roundtrip(
        &[b"LRANGE", b"list", b"0", b"-1"],
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n",
    );
    client.roundtrip(&[b"GET", b"after"], b"$1\r\n1\r\n");
    let ttl: i64 = String::from_utf8_lossy(&client.request(&[b"TTL", b"ttl"]))
        .trim()
        .trim_start_matches(':')
        .parse()
        .unwrap();
    assert!((990..=1000).contains(&ttl), "TTL {ttl}");
    let dir = server.dir.path().join("appendonlydir");
    assert_eq!(std::fs::read_to_string(dir.join("shards")).unwrap(), "1\n");
    assert!(!server.dir.path().join("appendonlydir.reshard").exists());
    client.roundtrip(&[b"SET", b"on-one", b"1"], b"+OK\r\n");

    let server = Server::restart_in(server.kill9(), &args("2"), &password);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"DBSIZE"], b":504\r\n");
    check(&mut client, 500, "back to --smp 2");
    client.roundtrip(&[b"GET", b"on-one"], b"$1\r\n1\r\n");
    let log = server.log_lines().join("\n");
    assert!(
        log.contains("the logs were written by 1 shard(s), this start has 2"),
        "{log}"
    );
}

#[test]
fn kill9_while_keys_move_loses_nothing() {
    const KEYS: usize = 20_000;
    let server = Server::start(&args("2"));
    let password = server.password.clone();
    fill(&mut login_plain(&server), KEYS);
    let mut dir = server.kill9();
    let mut seed = std::process::id() as u64;
    for cycle in 0..6 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let smp = if cycle % 2 == 0 { "1" } else { "2" };
        // Killed at a random moment of the move (or after it).
        let server = Server::restart_in(dir, &args(smp), &password);
        std::thread::sleep(Duration::from_millis((seed >> 33) % 1000));
        dir = server.kill9();
        let server = Server::restart_in(dir, &args(smp), &password);
        let mut client = login_plain(&server);
        client.roundtrip(&[b"DBSIZE"], format!(":{KEYS}\r\n").as_bytes());
        let redone = server
            .log_lines()
            .iter()
            .any(|l| l.contains("moving every key"));
        eprintln!("cycle {cycle}: --smp {smp}; the kill interrupted the move: {redone}");
        check(&mut client, KEYS, &format!("cycle {cycle}, --smp {smp}"));
        dir = server.kill9();
    }
}

#[test]
fn a_move_interrupted_between_its_two_renames_is_finished_at_start() {
    let server = Server::start(&args("2"));
    let password = server.password.clone();
    fill(&mut login_plain(&server), 300);
    let server = Server::restart_in(server.kill9(), &args("1"), &password);
    let dir = server.kill9();
    // The state a crash leaves after `appendonlydir` became `.old` and before `.reshard`
    // became `appendonlydir`.
    let root = dir.path();
    std::fs::rename(
        root.join("appendonlydir"),
        root.join("appendonlydir.reshard"),
    )
    .unwrap();
    std::fs::create_dir(root.join("appendonlydir.old")).unwrap();
    std::fs::write(root.join("appendonlydir.old/shard-0.aof"), b"junk").unwrap();
    let server = Server::restart_in(dir, &args("1"), &password);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"DBSIZE"], b":300\r\n");
    check(&mut client, 300, "after finishing the commit");
    assert!(!server.dir.path().join("appendonlydir.old").exists());
    assert!(!server.dir.path().join("appendonlydir.reshard").exists());
}
