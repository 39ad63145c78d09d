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
