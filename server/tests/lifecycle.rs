//! Start-up errors, CPU pinning, plain TCP, handshake timeout and graceful shutdown of the real
//! binary.

mod common;

use std::io::Read;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{RawClient, Server};

fn run_failing(args: &[&str], prefix: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = match prefix.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(env!("CARGO_BIN_EXE_shardline"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_shardline")),
    };
    let out = command
        .args([
            "--bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
            "--data-dir",
        ])
        .arg(dir.path())
        .args(args)
        .output()
        .expect("run shardline");
    assert!(!out.status.success(), "expected failure: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn smp_larger_than_the_affinity_mask_is_a_clear_error() {
    let stderr = run_failing(&["--smp", "999"], &[]);
    assert!(stderr.contains("--smp 999 is larger than the"), "{stderr}");
}

#[test]
fn low_memlock_limit_says_how_to_raise_it() {
    if !common::have("prlimit") {
        panic!("prlimit (util-linux) is required");
    }
    let stderr = run_failing(&["--smp", "1"], &["prlimit", "--memlock=65536"]);
    assert!(stderr.contains("cannot start shard 0"), "{stderr}");
    assert!(stderr.contains("ulimit -l"), "{stderr}");
    assert!(stderr.contains("LimitMEMLOCK"), "{stderr}");
}

#[test]
fn taskset_pins_the_shard_to_the_allowed_cpu() {
    let allowed = shardline::cpus::allowed_cpus().expect("affinity");
    let cpu = *allowed.last().expect("a CPU");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new("taskset")
        .args(["-c", &cpu.to_string(), env!("CARGO_BIN_EXE_shardline")])
        .args([
            "--smp",
            "1",
            "--bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("taskset");
    // The shard thread is named shard-0; its affinity must be exactly that CPU.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut found = None;
    while found.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        let tasks = format!("/proc/{}/task", child.id());
        for entry in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
            let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
            if status.lines().any(|l| l == "Name:\tshard-0") {
                found = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:\t"))
                    .map(str::to_owned);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(found.as_deref(), Some(cpu.to_string().as_str()));
}

#[test]
fn tls_off_serves_plain_tcp_and_warns() {
    let server = Server::start(&["--smp", "1", "--tls", "off"]);
    let out = Command::new("redis-cli")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port(),
            "--user",
            "default",
            "--pass",
        ])
        .arg(&server.password)
        .args(["--no-auth-warning", "PING"])
        .output()
        .expect("redis-cli");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "PONG");
    assert!(server
        .log_lines()
        .iter()
        .any(|l| l.contains("--tls off: connections are NOT encrypted")));
}

#[test]
fn silent_clients_are_cut_off_at_the_handshake_timeout() {
    let server = Server::start(&["--smp", "1", "--handshake-timeout-ms", "200"]);
    let started = Instant::now();
    let mut tcp = std::net::TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut buf = [0u8; 16];
    assert_eq!(tcp.read(&mut buf).expect("EOF, not a timeout"), 0);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(190) && took < Duration::from_secs(3),
        "{took:?}"
    );
    let failed = server.metric(
        "shardline_tls_handshakes_failed_total",
        &[("reason", "timeout")],
    );
    assert_eq!(failed, 1.0);
}

#[test]
fn sigterm_finishes_the_in_flight_reply_and_exits_zero() {
    let mut server = Server::start(&["--smp", "2", "--enable-debug-command"]);
    let mut client = RawClient::connect(&server);
    let auth = format!("AUTH {}\r\n", server.password);
    client.send_raw(auth.as_bytes());
    assert_eq!(client.read_exact_len(5), b"+OK\r\n");
    client.send(&[b"DEBUG", b"SLEEP", b"0.5"]);
    std::thread::sleep(Duration::from_millis(100));
    let signalled = Instant::now();
    let status = server.terminate().expect("exited within 10 s");
    assert!(status.success(), "{status:?}");
    assert!(signalled.elapsed() < Duration::from_secs(5));
    // The reply to the command in flight arrives, then TLS close_notify and EOF.
    assert_eq!(client.read_exact_len(5), b"+OK\r\n");
    assert!(client.closed_by_server());
}
