//! redis-benchmark over TLS with AUTH on every connection: persistent (`-k 1`) and
//! reconnecting for every request (`-k 0`). Every test must complete with zero errors.

mod common;

use std::process::Command;

use common::Server;

const TESTS: &str = "ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,lrange_100,mset";
/// The CSV row titles redis-benchmark prints for TESTS.
const TITLES: [&str; 14] = [
    "PING_INLINE",
    "PING_MBULK",
    "SET",
    "GET",
    "INCR",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "SADD",
    "HSET",
    "SPOP",
    "LRANGE_100 (first 100 elements)",
    "MSET (10 keys)",
];

fn run_benchmark(server: &Server, keepalive: &str, requests: &str, clients: &str) {
    let out = Command::new("redis-benchmark")
        .args(["--tls", "--cacert"])
        .arg(server.cert())
        .args(["-h", "127.0.0.1", "-p", &server.port()])
        .args(["--user", "default", "-a", &server.password])
        .args([
            "-t", TESTS, "-n", requests, "-c", clients, "-k", keepalive, "-r", "1000", "--csv",
        ])
        .output()
        .expect("run redis-benchmark (install redis-tools)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "redis-benchmark failed: {stdout}\n{stderr}"
    );
    assert!(
        !stderr.to_ascii_lowercase().contains("error")
            && !stdout.to_ascii_lowercase().contains("error"),
        "redis-benchmark reported errors: {stdout}\n{stderr}"
    );
    for title in TITLES {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("\"{title}\"")))
            .unwrap_or_else(|| panic!("no row for {title} in:\n{stdout}"));
        let rps: f64 = row
            .split(',')
            .nth(1)
            .and_then(|v| v.trim_matches('"').parse().ok())
            .unwrap_or_else(|| panic!("bad row {row}"));
        assert!(rps > 0.0, "{title}: {row}");
    }
}

#[test]
fn redis_benchmark_persistent_connections_without_errors() {
    let server = Server::start(&["--smp", "2"]);
    run_benchmark(&server, "1", "2000", "10");
    let accepted = server.metric("shardline_logins_total", &[("result", "accepted")]);
    assert!(accepted >= 10.0, "logins accepted: {accepted}");
    assert_eq!(
        server.metric("shardline_logins_total", &[("result", "rejected")]),
        0.0
    );
}

#[test]
fn redis_benchmark_reconnecting_every_request_without_errors() {
    let server = Server::start(&["--smp", "2"]);
    run_benchmark(&server, "0", "100", "4");
    // One TLS handshake and one AUTH per request: at least 14 × 100 of each.
    let handshakes = server.metric("shardline_tls_handshakes_completed_total", &[]);
    let logins = server.metric("shardline_logins_total", &[("result", "accepted")]);
    assert!(handshakes >= 1400.0, "handshakes {handshakes}");
    assert!(logins >= 1400.0, "logins {logins}");
}

/// The CSV row titles of redis-benchmark 7.0's default test list (no `-t`), in the order it
/// runs them. redis-benchmark 7.0.15 has no XADD in this list (only `-t xadd` runs it), so
/// every row must report a rate: the list needs strings, lists, sets, hashes and sorted sets.
const DEFAULT_TITLES: [&str; 20] = [
    "PING_INLINE",
    "PING_MBULK",
    "SET",
    "GET",
    "INCR",
    "LPUSH",
    "RPUSH",
    "LPOP",
    "RPOP",
    "SADD",
    "HSET",
    "SPOP",
    "ZADD",
    "ZPOPMIN",
    "LPUSH (needed to benchmark LRANGE)",
    "LRANGE_100 (first 100 elements)",
    "LRANGE_300 (first 300 elements)",
    "LRANGE_500 (first 500 elements)",
    "LRANGE_600 (first 600 elements)",
    "MSET (10 keys)",
];

/// The rows of redis-benchmark's `--csv` output as (title, requests/s), header left out.
fn csv_rates(stdout: &str) -> Vec<(String, f64)> {
    stdout
        .lines()
        .filter(|l| !l.starts_with("\"test\""))
        .filter_map(|l| {
            let mut fields = l.split("\",\"");
            let title = fields.next()?.trim_start_matches('"').to_string();
            let rps = fields.next()?.trim_matches('"').parse().ok()?;
            Some((title, rps))
        })
        .collect()
}

#[test]
fn redis_benchmark_default_test_list_completes_over_tls() {
    let server = Server::start(&["--smp", "2"]);
    let started = std::time::Instant::now();
    // No `-t`: the default list. `-r` spreads the keys (and the sorted set's members) over
    // both shards' key space; the commands with a fixed key (LPUSH mylist, ZADD myzset, ...)
    // run on whichever shard owns that key.
    let out = Command::new("timeout")
        .arg("60")
        .arg("redis-benchmark")
        .args(["--tls", "--cacert"])
        .arg(server.cert())
        .args(["-h", "127.0.0.1", "-p", &server.port()])
        .args(["--user", "default", "-a", &server.password])
        .args(["-n", "2000", "-c", "10", "-r", "1000", "--csv"])
        .output()
        .expect("run redis-benchmark (install redis-tools)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "redis-benchmark failed after {:?} ({:?}): {stdout}\n{stderr}",
        started.elapsed(),
        out.status
    );
    assert!(
        !stderr.to_ascii_lowercase().contains("error")
            && !stdout.to_ascii_lowercase().contains("error"),
        "redis-benchmark reported errors: {stdout}\n{stderr}"
    );
    let rates = csv_rates(&stdout);
    let titles: Vec<&str> = rates.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        titles, DEFAULT_TITLES,
        "the default list, in order:\n{stdout}"
    );
    for (title, rps) in &rates {
        assert!(*rps > 0.0, "{title}: {rps} req/s in:\n{stdout}");
    }
    // The sorted-set tests touched one key, `myzset`: ZADD added up to 1000 distinct members
    // (`element:<rand>`) and ZPOPMIN removed at most 2000, so what is left is a sorted set or
    // nothing, never another type.
    let kind = server.cli(&["TYPE", "myzset"]);
    assert!(kind == "zset" || kind == "none", "TYPE myzset: {kind}");
    let accepted = server.metric("shardline_logins_total", &[("result", "accepted")]);
    assert!(accepted >= 10.0, "logins accepted: {accepted}");
}
