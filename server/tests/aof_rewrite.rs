//! Log rewrite: BGREWRITEAOF / SAVE / automatic rewrites compact each shard's log into a base
//! file plus a new incremental file switched through a manifest, and a `kill -9` at any
//! moment of a rewrite loses nothing.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{login_plain, persistence_field, wait_for, CrashClient, RawClient, Server};

const ARGS: &[&str] = &["--tls", "off", "--smp", "2", "--appendfsync", "always"];

/// Sends BGREWRITEAOF and waits until `rewrites` rewrites (one per shard each) are done.
fn rewrite_and_wait(client: &mut RawClient, rewrites: u32) {
    client.roundtrip(
        &[b"BGREWRITEAOF"],
        b"+Background append only file rewriting started\r\n",
    );
    wait_for(|| {
        persistence_field(client, "aof_rewrites") == rewrites.to_string()
            && persistence_field(client, "aof_rewrite_in_progress") == "0"
    });
}

fn log_files(server: &Server) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(server.dir.path().join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn bgrewriteaof_compacts_each_shard_log_behind_a_manifest() {
    let server = Server::start(ARGS);
    let mut client = login_plain(&server);
    for _ in 0..200 {
        client.request(&[b"INCR", b"counter"]);
    }
    for i in 0..50 {
        let key = format!("gone{i}");
        client.roundtrip(&[b"SET", key.as_bytes(), b"v"], b"+OK\r\n");
        client.roundtrip(&[b"DEL", key.as_bytes()], b":1\r\n");
    }
    client.roundtrip(&[b"RPUSH", b"list", b"a", b"b"], b":2\r\n");
    client.roundtrip(&[b"SET", b"ttl", b"v", b"EX", b"1000"], b"+OK\r\n");
    let before: u64 = (0..2)
        .map(|s| {
            std::fs::metadata(common::aof_path(server.dir.path(), s))
                .unwrap()
                .len()
        })
        .sum();
    rewrite_and_wait(&mut client, 2);
    assert_eq!(
        persistence_field(&mut client, "aof_last_bgrewrite_status"),
        "ok"
    );
    assert_eq!(
        log_files(&server),
        [
            "shard-0.base.1.aof",
            "shard-0.incr.1.aof",
            "shard-0.manifest",
            "shard-1.base.1.aof",
            "shard-1.incr.1.aof",
            "shard-1.manifest",
            "shards"
        ]
    );
    let dir = server.dir.path().join("appendonlydir");
    for shard in 0..2 {
        assert_eq!(
            std::fs::read_to_string(dir.join(format!("shard-{shard}.manifest"))).unwrap(),
            format!("file shard-{shard}.base.1.aof seq 1 type b\nfile shard-{shard}.incr.1.aof seq 1 type i\n")
        );
    }
    let bases: Vec<u8> = (0..2)
        .flat_map(|s| std::fs::read(dir.join(format!("shard-{s}.base.1.aof"))).unwrap())
        .collect();
    let text = String::from_utf8_lossy(&bases);
    assert!(
        text.contains("*3\r\n$3\r\nSET\r\n$7\r\ncounter\r\n$3\r\n200\r\n"),
        "{text:?}"
    );
    assert!(
        text.contains("*4\r\n$5\r\nRPUSH\r\n$4\r\nlist\r\n$1\r\na\r\n$1\r\nb\r\n"),
        "{text:?}"
    );
    assert!(
        text.contains("*3\r\n$9\r\nPEXPIREAT\r\n$3\r\nttl\r\n"),
        "{text:?}"
    );
    assert!(!text.contains("gone"), "{text:?}");
    let after: u64 = persistence_field(&mut client, "aof_current_size")
        .parse()
        .unwrap();
    assert_eq!(
        persistence_field(&mut client, "aof_base_size"),
        after.to_string()
    );
    assert!(
        after * 10 < before,
        "log {before} bytes, after the rewrite {after}"
    );
    wait_for(|| server.metric("shardline_aof_rewrite_duration_seconds_count", &[]) == 2.0);

    // Writes after the rewrite go to the new incremental file; everything survives a crash.
    client.roundtrip(&[b"INCR", b"counter"], b":201\r\n");
    client.roundtrip(&[b"SAVE"], b"+OK\r\n");
    assert_eq!(persistence_field(&mut client, "aof_rewrites"), "4");
    client.roundtrip(&[b"RPUSH", b"list", b"c"], b":3\r\n");
    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), ARGS, &password);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"GET", b"counter"], b"$3\r\n201\r\n");
    client.roundtrip(
        &[b"LRANGE", b"list", b"0", b"-1"],
        b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n",
    );
    client.roundtrip(&[b"DBSIZE"], b":3\r\n");
    assert!(log_files(&server).contains(&"shard-0.base.2.aof".to_string()));
}

#[test]
fn the_log_is_rewritten_when_it_grows_past_the_auto_rewrite_rule() {
    let mut args = ARGS.to_vec();
    args.extend([
        "--auto-aof-rewrite-min-size",
        "4kb",
        "--auto-aof-rewrite-percentage",
        "100",
    ]);
    let server = Server::start(&args);
    let mut client = login_plain(&server);
    let value = vec![b'x'; 100];
    for _ in 0..100 {
        client.roundtrip(&[b"SET", b"{k}same", &value], b"+OK\r\n");
    }
    // The log (about 13 kB written) is rewritten whenever it reaches 4 kB.
    wait_for(|| {
        persistence_field(&mut client, "aof_rewrite_in_progress") == "0"
            && persistence_field(&mut client, "aof_current_size")
                .parse::<u64>()
                .unwrap()
                < 4096
    });
    assert_ne!(persistence_field(&mut client, "aof_rewrites"), "0");
    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), &args, &password);
    let mut client = login_plain(&server);
    let mut expected = b"$100\r\n".to_vec();
    expected.extend_from_slice(&value);
    expected.extend_from_slice(b"\r\n");
    client.roundtrip(&[b"GET", b"{k}same"], &expected);
}

#[test]
fn kill9_at_any_moment_of_a_rewrite_loses_nothing() {
    const KEYS: usize = 20_000;
    let mut server = Server::start(ARGS);
    let password = server.password.clone();
    // A keyspace big enough for a rewrite to take a while.
    common::fill_keys(&mut login_plain(&server), KEYS);
    let mut acked = 0i64;
    let mut seed = std::process::id() as u64;
    for cycle in 0..10 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let kill_after = Duration::from_millis((seed >> 33) % 120);
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, pw, flag) = (server.addr, password.clone(), stop.clone());
        let writer = std::thread::spawn(move || {
            // The server may be killed before this thread even logs in.
            let Some(mut conn) = CrashClient::open(addr, &pw) else {
                return (0, false);
            };
            let mut acks = 0i64;
            while !flag.load(Ordering::Relaxed) {
                match conn.call(&[b"INCR", b"counter"]) {
                    Some(_) => acks += 1,
                    None => return (acks, true),
                }
            }
            (acks, false)
        });
        let mut client = login_plain(&server);
        client.roundtrip(
            &[b"BGREWRITEAOF"],
            b"+Background append only file rewriting started\r\n",
        );
        std::thread::sleep(kill_after);
        let dir = server.kill9();
        stop.store(true, Ordering::Relaxed);
        let (acks, in_flight) = writer.join().unwrap();
        acked += acks;
        server = Server::restart_in(dir, ARGS, &password);
        let mut client = login_plain(&server);
        let counter = String::from_utf8_lossy(&client.request(&[b"GET", b"counter"])).into_owned();
        let counter: i64 = counter.lines().nth(1).map_or(0, |n| n.parse().unwrap());
        assert!(
            counter == acked || (in_flight && counter == acked + 1),
            "cycle {cycle}: counter {counter}, {acked} acknowledged"
        );
        acked = counter;
        client.roundtrip(&[b"DBSIZE"], format!(":{}\r\n", KEYS + 1).as_bytes());
        common::check_keys(&mut client, KEYS, &format!("cycle {cycle}"));
        let files = log_files(&server);
        eprintln!("cycle {cycle}: killed {kill_after:?} into a rewrite; files {files:?}");
        // What the interrupted rewrite left was removed: a shard keeps its manifest's files.
        for shard in 0..2 {
            let prefix = format!("shard-{shard}.");
            let manifest = std::fs::read_to_string(
                server
                    .dir
                    .path()
                    .join(format!("appendonlydir/{prefix}manifest")),
            )
            .unwrap_or_else(|_| format!("file {prefix}aof seq 0 type i\n"));
            let mut named: Vec<String> = manifest
                .lines()
                .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
                .collect();
            named.sort();
            let present: Vec<String> = files
                .iter()
                .filter(|f| f.starts_with(&prefix) && !f.ends_with(".manifest"))
                .cloned()
                .collect();
            assert_eq!(present, named, "cycle {cycle}");
        }
    }
    assert!(acked > 0);
}

#[test]
fn a_flushall_during_a_rewrite_completes_it_and_survives_a_crash() {
    let server = Server::start(ARGS);
    let mut client = login_plain(&server);
    // Enough keys that dumping them takes many steps (256 keys each) across polls.
    common::mset_batches(
        &mut client,
        "k",
        100,
        b"some value of a few dozen bytes, to make the dump longer",
    );
    client.roundtrip(&[b"DBSIZE"], b":100000\r\n");
    client.roundtrip(
        &[b"BGREWRITEAOF"],
        b"+Background append only file rewriting started\r\n",
    );
    // The dump starts right after the new incremental file enters the manifest.
    wait_for(|| {
        let manifests: Vec<String> = (0..2)
            .map(|s| {
                let path = server
                    .dir
                    .path()
                    .join(format!("appendonlydir/shard-{s}.manifest"));
                std::fs::read_to_string(path).unwrap_or_default()
            })
            .collect();
        manifests.iter().all(|m| m.contains("incr.1.aof"))
    });
    client.roundtrip(&[b"FLUSHALL"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"after", b"1"], b"+OK\r\n");
    wait_for(|| {
        persistence_field(&mut client, "aof_rewrites") == "2"
            && persistence_field(&mut client, "aof_rewrite_in_progress") == "0"
    });
    assert_eq!(
        persistence_field(&mut client, "aof_last_bgrewrite_status"),
        "ok"
    );
    assert_eq!(
        server.metric("shardline_aof_rewrite_failures_total", &[]),
        0.0
    );

    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), ARGS, &password);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"DBSIZE"], b":1\r\n");
    client.roundtrip(&[b"GET", b"after"], b"$1\r\n1\r\n");
}

#[test]
fn a_missing_incremental_file_refuses_the_start_until_it_is_recreated() {
    let server = Server::start(ARGS);
    let mut client = login_plain(&server);
    rewrite_and_wait(&mut client, 2);
    // Written after the rewrite: in the incremental files only.
    for i in 0..20 {
        let key = format!("after{i}");
        client.roundtrip(&[b"SET", key.as_bytes(), b"v"], b"+OK\r\n");
    }
    let password = server.password.clone();
    let dir = server.kill9();
    let incr = dir.path().join("appendonlydir/shard-0.incr.1.aof");
    std::fs::remove_file(&incr).unwrap();
    let message = common::start_failure(dir.path(), ARGS);
    let expected = format!(
        "{} is missing, though {} names it: refusing to start",
        incr.display(),
        dir.path().join("appendonlydir/shard-0.manifest").display()
    );
    assert!(message.contains(&expected), "{message}");
    // Recreated empty, as the message says: the start goes on without its records.
    std::fs::File::create(&incr).unwrap();
    let server = Server::restart_in(dir, ARGS, &password);
    let mut client = login_plain(&server);
    let reply = String::from_utf8(client.request(&[b"DBSIZE"])).unwrap();
    let keys: u64 = reply.trim_start_matches(':').trim().parse().unwrap();
    assert!(keys > 0 && keys < 20, "DBSIZE {keys}: shard 1's keys only");
}
