//! The per-shard append-only log: crash recovery with `kill -9` of the real binary under
//! load (`appendfsync always` and `everysec`), a truncated tail, a corrupt middle, expiry
//! written as absolute deadlines, `--appendonly no`, and a start with another `--smp`.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{aof_path as shard_log, login_plain as login, start_failure, CrashClient, Server};

const SMP2: &[&str] = &["--tls", "off", "--smp", "2"];

fn args(fsync: &str) -> Vec<&str> {
    let mut args = SMP2.to_vec();
    args.extend(["--appendfsync", fsync]);
    args
}

fn int_reply(reply: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(reply);
    text.trim_start_matches([':', '$'])
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("not an integer reply: {text:?}"))
}

/// Keys spread over both shards of `--smp 2` (checked against the logs at the end).
const SLOTS: usize = 8;

/// What the crash client knows: per slot, the acknowledged INCR count, LPUSH count, HSET
/// count, and the acknowledged SET keys; plus the one write in flight when the server died.
#[derive(Default, Clone)]
struct Expected {
    counters: [i64; SLOTS],
    lists: [i64; SLOTS],
    hashes: [i64; SLOTS],
    sets: Vec<u64>,
    next_set: u64,
    /// When the most recent writes were acknowledged (the last 10 000).
    acks: std::collections::VecDeque<Instant>,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Incr(usize),
    Lpush(usize),
    Hset(usize),
    Set(u64),
}

/// Runs writes until the connection fails; returns the write in flight then (if any).
fn load(addr: SocketAddr, password: &str, state: &mut Expected, stop: &AtomicBool) -> Option<Op> {
    let mut conn = CrashClient::open(addr, password)?;
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let slot = i % SLOTS;
        let op = match i % 4 {
            0 => Op::Incr(slot),
            1 => Op::Lpush(slot),
            2 => Op::Hset(slot),
            _ => Op::Set(state.next_set),
        };
        let reply = match op {
            Op::Incr(s) => conn.call(&[b"INCR", format!("counter:{s}").as_bytes()]),
            Op::Lpush(s) => conn.call(&[b"LPUSH", format!("list:{s}").as_bytes(), b"x"]),
            Op::Hset(s) => {
                let field = format!("f{}", state.hashes[s]);
                conn.call(&[
                    b"HSET",
                    format!("hash:{s}").as_bytes(),
                    field.as_bytes(),
                    b"v",
                ])
            }
            Op::Set(n) => {
                let value = n.to_string();
                conn.call(&[b"SET", format!("set:{n}").as_bytes(), value.as_bytes()])
            }
        };
        let Some(reply) = reply else {
            return Some(op);
        };
        if state.acks.len() == 10_000 {
            state.acks.pop_front();
        }
        state.acks.push_back(Instant::now());
        match op {
            Op::Incr(s) => {
                state.counters[s] += 1;
                assert_eq!(int_reply(&reply), state.counters[s], "INCR counter:{s}");
            }
            Op::Lpush(s) => {
                state.lists[s] += 1;
                assert_eq!(int_reply(&reply), state.lists[s], "LPUSH list:{s}");
            }
            Op::Hset(s) => {
                state.hashes[s] += 1;
                assert_eq!(reply, b":1\r\n", "HSET hash:{s}");
            }
            Op::Set(n) => {
                assert_eq!(reply, b"+OK\r\n");
                state.sets.push(n);
                state.next_set += 1;
            }
        }
        i += 1;
    }
    None
}

/// Compares the restarted server with what was acknowledged; returns how many acknowledged
/// writes are missing (0 is required under `always`) and adopts the server's state.
fn verify(server: &Server, state: &mut Expected, in_flight: Option<Op>) -> i64 {
    let mut conn = CrashClient::open(server.addr, &server.password).expect("connect after restart");
    let mut lost = 0;
    let mut check = |name: &str, acked: &mut i64, got: i64, flight: bool| {
        assert!(
            got <= *acked + i64::from(flight),
            "{name}: {got} on disk but only {acked} acknowledged (in flight: {flight})"
        );
        lost += (*acked - got).max(0);
        *acked = got;
    };
    for s in 0..SLOTS {
        let got = conn
            .call(&[b"GET", format!("counter:{s}").as_bytes()])
            .unwrap();
        let got = if got == b"$-1\r\n" {
            0
        } else {
            int_reply(&got)
        };
        let flight = matches!(in_flight, Some(Op::Incr(x)) if x == s);
        check("counter", &mut state.counters[s], got, flight);
        let got = int_reply(
            &conn
                .call(&[b"LLEN", format!("list:{s}").as_bytes()])
                .unwrap(),
        );
        let flight = matches!(in_flight, Some(Op::Lpush(x)) if x == s);
        check("list", &mut state.lists[s], got, flight);
        let got = int_reply(
            &conn
                .call(&[b"HLEN", format!("hash:{s}").as_bytes()])
                .unwrap(),
        );
        let flight = matches!(in_flight, Some(Op::Hset(x)) if x == s);
        check("hash", &mut state.hashes[s], got, flight);
    }
    let mut kept = Vec::new();
    for &n in &state.sets {
        let reply = conn.call(&[b"GET", format!("set:{n}").as_bytes()]).unwrap();
        if reply == format!("${}\r\n{n}\r\n", n.to_string().len()).as_bytes() {
            kept.push(n);
        } else {
            assert_eq!(reply, b"$-1\r\n", "set:{n} holds a wrong value");
            lost += 1;
        }
    }
    state.sets = kept;
    if let Some(Op::Set(n)) = in_flight {
        let reply = conn.call(&[b"GET", format!("set:{n}").as_bytes()]).unwrap();
        if reply != b"$-1\r\n" {
            assert_eq!(
                reply,
                format!("${}\r\n{n}\r\n", n.to_string().len()).as_bytes()
            );
            state.sets.push(n);
        }
        state.next_set = n + 1;
    }
    lost
}

/// `cycles` rounds of: load for a random 150–450 ms, `kill -9`, restart in the same dir,
/// verify. Returns the worst loss of acknowledged writes in one crash, and the fewest writes
/// acknowledged in the second before a crash.
fn crash_cycles(fsync: &str, cycles: usize) -> (i64, usize) {
    let args = args(fsync);
    let mut server = Server::start(&args);
    let password = server.password.clone();
    let mut state = Expected::default();
    let mut seed = std::process::id() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let mut worst = 0;
    let mut fewest_in_last_second = usize::MAX;
    for cycle in 0..cycles {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let run_for = Duration::from_millis(150 + (seed >> 33) % 300);
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, pw, mut mine, flag) =
            (server.addr, password.clone(), state.clone(), stop.clone());
        let client = std::thread::spawn(move || {
            let flight = load(addr, &pw, &mut mine, &flag);
            (mine, flight)
        });
        std::thread::sleep(run_for);
        let killed_at = Instant::now();
        let dir = server.kill9();
        stop.store(true, Ordering::Relaxed);
        let (after, in_flight) = client.join().expect("client thread");
        state = after;
        let last_second = state
            .acks
            .iter()
            .filter(|t| killed_at.duration_since(**t) < Duration::from_secs(1))
            .count();
        fewest_in_last_second = fewest_in_last_second.min(last_second);
        server = Server::restart_in(dir, &args, &password);
        let lost = verify(&server, &mut state, in_flight);
        eprintln!(
            "{fsync} cycle {cycle}: killed after {run_for:?}, lost {lost} acknowledged write(s)"
        );
        worst = worst.max(lost);
    }
    // Every shard logged writes: the keys did cover both shards.
    for shard in 0..2 {
        let len = std::fs::metadata(shard_log(server.dir.path(), shard))
            .unwrap()
            .len();
        assert!(len > 0, "shard {shard} logged nothing");
    }
    assert!(
        state.counters.iter().sum::<i64>() > 0,
        "no write was acknowledged"
    );
    (worst, fewest_in_last_second)
}

#[test]
fn kill9_under_load_with_always_loses_no_acknowledged_write() {
    let (worst, _) = crash_cycles("always", 20);
    assert_eq!(worst, 0);
}

#[test]
fn kill9_under_load_with_everysec_reports_the_worst_loss() {
    let (worst, fewest) = crash_cycles("everysec", 10);
    eprintln!(
        "everysec: worst loss of acknowledged writes in one kill -9: {worst} (at least \
         {fewest} writes were acknowledged in the second before each kill)"
    );
    // Replies do not wait for the write: a crash loses what was acknowledged but not yet
    // written, a few loop turns' worth — far less than a second of writes.
    assert!(
        (worst as usize) < fewest,
        "lost {worst} acknowledged writes in one crash, more than a second's worth ({fewest})"
    );
}

fn stopped_dir_with(writes: &[&[&[u8]]]) -> (tempfile::TempDir, String) {
    let server = Server::start(&args("always"));
    let mut client = login(&server);
    for write in writes {
        client.request(write);
    }
    let password = server.password.clone();
    (server.kill9(), password)
}

#[test]
fn truncated_last_record_is_cut_off_with_file_and_offset() {
    let (dir, password) = stopped_dir_with(&[&[b"SET", b"kept", b"1"]]);
    // Both shards: the key lives on one of them; cut a record short on each.
    let mut sizes = Vec::new();
    for shard in 0..2 {
        let path = shard_log(dir.path(), shard);
        let size = std::fs::metadata(&path).unwrap().len();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        // A complete MULTI … SET, then the EXEC cut short: the transaction must not apply.
        file.write_all(
            b"*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$4\r\nlost\r\n$1\r\n2\r\n*1\r\n$4\r\nEX",
        )
        .unwrap();
        sizes.push((path, size));
    }
    let server = Server::restart_in(dir, &args("always"), &password);
    let mut client = login(&server);
    client.roundtrip(&[b"GET", b"kept"], b"$1\r\n1\r\n");
    client.roundtrip(&[b"GET", b"lost"], b"$-1\r\n");
    for (path, size) in sizes {
        let line = format!("{}:{size}: the file ends inside", path.display());
        let log = server.log_reaching(&line).join("\n");
        assert!(log.contains(&line), "no line {line:?} in:\n{log}");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            size,
            "{path:?} not truncated"
        );
    }
    // Appending goes on from the cut.
    client.roundtrip(&[b"SET", b"after", b"3"], b"+OK\r\n");
    let dir = server.kill9();
    let server = Server::restart_in(dir, &args("always"), &password);
    let mut client = login(&server);
    client.roundtrip(
        &[b"MGET", b"kept", b"lost", b"after"],
        b"*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n",
    );
}

#[test]
fn corrupt_record_before_the_end_refuses_to_start_with_file_and_offset() {
    let (dir, _) = stopped_dir_with(&[
        &[b"SET", b"{a}1", b"x"],
        &[b"SET", b"{a}2", b"y"],
        &[b"SET", b"{a}3", b"z"],
    ]);
    let (path, mut bytes) = (0..2)
        .map(|shard| shard_log(dir.path(), shard))
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .find(|(_, bytes)| !bytes.is_empty())
        .expect("a shard log with the keys");
    let record = b"*3\r\n$3\r\nSET\r\n$4\r\n{a}1\r\n$1\r\nx\r\n".len();
    assert_eq!(&bytes[record..record + 2], b"*3");
    bytes[record] = b'X';
    std::fs::write(&path, &bytes).unwrap();
    let stderr = start_failure(dir.path(), &args("always"));
    let at = format!(
        "{}:{record}: bad record: expected '*' starting a record",
        path.display()
    );
    assert!(stderr.contains(&at), "no {at:?} in:\n{stderr}");
    let hint = format!(
        "`shardline check-aof --fix {}` (it truncates the file at {record})",
        path.display()
    );
    assert!(stderr.contains(&hint), "{stderr}");
    // Nothing was changed: the bytes are as left.
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn expirations_are_logged_as_absolute_deadlines_and_expired_keys_as_del() {
    let server = Server::start(&args("always"));
    let mut client = login(&server);
    client.roundtrip(&[b"SET", b"short", b"v", b"PX", b"150"], b"+OK\r\n");
    client.roundtrip(&[b"SETEX", b"long", b"1000", b"v"], b"+OK\r\n");
    client.roundtrip(&[b"INCRBYFLOAT", b"float", b"1.5"], b"$3\r\n1.5\r\n");
    std::thread::sleep(Duration::from_millis(400));
    // The key expired: a new list under its name must not inherit the old deadline.
    client.roundtrip(&[b"RPUSH", b"short", b"a"], b":1\r\n");
    let before = Instant::now();
    let password = server.password.clone();
    let dir = server.kill9();
    let logs: Vec<u8> = (0..2)
        .flat_map(|s| std::fs::read(shard_log(dir.path(), s)).unwrap())
        .collect();
    let text = String::from_utf8_lossy(&logs);
    assert!(
        text.contains("$3\r\nSET\r\n$4\r\nlong\r\n$1\r\nv\r\n$4\r\nPXAT\r\n$13\r\n"),
        "{text:?}"
    );
    assert!(text.contains("$3\r\nDEL\r\n$5\r\nshort\r\n"), "{text:?}");
    assert!(
        text.contains("$3\r\nSET\r\n$5\r\nfloat\r\n$3\r\n1.5\r\n"),
        "{text:?}"
    );
    let server = Server::restart_in(dir, &args("always"), &password);
    let mut client = login(&server);
    client.roundtrip(&[b"LRANGE", b"short", b"0", b"-1"], b"*1\r\n$1\r\na\r\n");
    client.roundtrip(&[b"TTL", b"short"], b":-1\r\n");
    let ttl = int_reply(&client.request(&[b"TTL", b"long"]));
    let elapsed = before.elapsed().as_secs() as i64;
    assert!((999 - elapsed - 1..=1000).contains(&ttl), "TTL long {ttl}");
}

#[test]
fn appendonly_no_keeps_nothing() {
    let mut args = SMP2.to_vec();
    args.extend(["--appendonly", "no"]);
    let server = Server::start(&args);
    let mut client = login(&server);
    client.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    let password = server.password.clone();
    let dir = server.kill9();
    assert!(!dir.path().join("appendonlydir").exists());
    let server = Server::restart_in(dir, &args, &password);
    login(&server).roundtrip(&[b"GET", b"k"], b"$-1\r\n");
}

#[test]
fn graceful_restart_keeps_every_key() {
    let mut server = Server::start(&args("everysec"));
    let mut client = login(&server);
    for i in 0..50 {
        let key = format!("k{i}");
        client.roundtrip(&[b"SET", key.as_bytes(), b"v"], b"+OK\r\n");
    }
    client.roundtrip(&[b"DEL", b"k0", b"k1", b"k2"], b":3\r\n");
    assert!(server.terminate().is_some_and(|status| status.success()));
    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), &args("everysec"), &password);
    login(&server).roundtrip(&[b"DBSIZE"], b":47\r\n");
}

#[test]
fn a_transaction_on_one_shard_is_one_multi_exec_record_group() {
    let server = Server::start(&args("always"));
    let mut client = login(&server);
    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"{t}a", b"1"], b"+QUEUED\r\n");
    client.roundtrip(&[b"GET", b"{t}a"], b"+QUEUED\r\n");
    client.roundtrip(&[b"INCR", b"{t}b"], b"+QUEUED\r\n");
    client.roundtrip(&[b"EXEC"], b"*3\r\n+OK\r\n$1\r\n1\r\n:1\r\n");
    let dir = server.kill9();
    let logs: Vec<u8> = (0..2)
        .flat_map(|s| std::fs::read(shard_log(dir.path(), s)).unwrap())
        .collect();
    assert_eq!(
        String::from_utf8_lossy(&logs),
        "*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$4\r\n{t}a\r\n$1\r\n1\r\n\
         *2\r\n$4\r\nINCR\r\n$4\r\n{t}b\r\n*1\r\n$4\r\nEXEC\r\n"
    );
}

#[test]
fn appendonly_no_over_existing_logs_warns_and_leaves_them_for_later() {
    // `always`: the acknowledged SET is on disk before the kill.
    let mut on = SMP2.to_vec();
    on.extend(["--appendfsync", "always"]);
    let server = Server::start(&on);
    login(&server).roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    let password = server.password.clone();
    let mut off = SMP2.to_vec();
    off.extend(["--appendonly", "no"]);
    let server = Server::restart_in(server.kill9(), &off, &password);
    login(&server).roundtrip(&[b"GET", b"k"], b"$-1\r\n");
    assert!(
        server
            .log_lines()
            .iter()
            .any(|l| l.contains("--appendonly no: the append-only logs in")
                && l.contains("are neither loaded nor written")),
        "{:?}",
        server.log_lines()
    );
    let server = Server::restart_in(server.kill9(), &on, &password);
    login(&server).roundtrip(&[b"GET", b"k"], b"$1\r\nv\r\n");
}

#[test]
fn a_second_server_on_the_same_data_dir_is_refused() {
    let server = Server::start(&args("everysec"));
    let mut client = login(&server);
    client.roundtrip(&[b"SET", b"first", b"1"], b"+OK\r\n");
    let stderr = start_failure(server.dir.path(), &args("everysec"));
    assert!(
        stderr.contains("is in use by another shardline process")
            && stderr.contains("shardline.lock"),
        "{stderr}"
    );
    // The first server is untouched, and once it is gone the directory is free again.
    client.roundtrip(&[b"GET", b"first"], b"$1\r\n1\r\n");
    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), &args("everysec"), &password);
    login(&server).roundtrip(&[b"GET", b"first"], b"$1\r\n1\r\n");
}

#[test]
fn a_log_of_more_databases_than_configured_asks_for_more_not_for_a_fix() {
    let server = Server::start(&args("always"));
    let mut client = login(&server);
    client.roundtrip(&[b"SELECT", b"10"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    let dir = server.kill9();
    let mut fewer = args("always");
    fewer.extend(["--databases", "4"]);
    let stderr = start_failure(dir.path(), &fewer);
    assert!(
        stderr.contains("SELECT 10: no such database with --databases 4")
            && stderr.contains("start with a larger --databases")
            && !stderr.contains("check-aof"),
        "{stderr}"
    );
}
