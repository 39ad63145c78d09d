//! Start-up errors, CPU pinning, plain TCP, handshake timeout and graceful shutdown of the real
//! binary.

mod common;

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

/// A port already in use stops the start before anything is written or printed: no users
/// file (nor certificate) in the fresh data directory, no password, no connect line for
/// someone else's port; the error names the address.
#[test]
fn a_port_in_use_fails_before_the_users_file_and_password() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("address").to_string();
    let parent = tempfile::tempdir().expect("tempdir");
    let data = parent.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_shardline"))
        .args([
            "--bind",
            &addr,
            "--metrics-bind",
            "127.0.0.1:0",
            "--smp",
            "1",
        ])
        .arg("--data-dir")
        .arg(&data)
        .output()
        .expect("run shardline");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "exited 0: {stdout} {stderr}");
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")) && stderr.contains("in use"),
        "{stderr}"
    );
    assert!(!stdout.contains("password"), "{stdout}");
    assert!(!stdout.contains("connect with"), "{stdout}");
    assert!(!data.join("users").exists());
    assert!(!data.join("cert.pem").exists());
    drop(taken);
}

#[test]
fn smp_larger_than_the_affinity_mask_is_a_clear_error() {
    let stderr = run_failing(&["--smp", "999"], &[]);
    assert!(stderr.contains("--smp 999 is larger than the"), "{stderr}");
}

#[test]
fn limits_that_would_make_the_server_unusable_are_refused() {
    for (flag, value, range) in [
        ("--handshake-timeout-ms", "0", "1.."),
        ("--client-query-buffer-limit", "0", "1048576.."),
        ("--proto-max-bulk-len", "0", "1048576.."),
        ("--max-multibulk-len", "0", "1024.."),
        ("--max-password-bytes", "0", "1.."),
        ("--max-concurrent-logins", "0", "1.."),
        ("--backlog", "-5", "1..="),
        ("--maxclients", "0", "1.."),
        ("--metrics-max-concurrent-scrapes", "0", "1.."),
        ("--metrics-request-timeout-ms", "0", "1.."),
    ] {
        let stderr = run_failing(&[&format!("{flag}={value}")], &[]);
        assert!(
            stderr.contains(&format!("invalid value '{value}' for '{flag}"))
                && stderr.contains(&format!("{value} is not in {range}")),
            "{flag}: {stderr}"
        );
    }
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
    let found = thread_cpus(child.id(), "shard-0");
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(found.as_deref(), Some(cpu.to_string().as_str()));
}

/// The `Cpus_allowed_list` (e.g. "1" or "0-1") of the thread `name` of process `pid`.
fn thread_cpus(pid: u32, name: &str) -> Option<String> {
    std::fs::read_to_string(common::thread_status_path(pid, name))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:\t"))
        .map(str::to_owned)
}

#[test]
fn helper_threads_stay_off_the_shard_cpus() {
    let allowed = shardline::cpus::allowed_cpus().expect("affinity");
    if allowed.len() < 2 {
        eprintln!("skipped: needs two CPUs in the affinity mask");
        return;
    }
    let server = Server::start(&["--smp", "1"]);
    // A shard thread starts with the helpers' mask and pins itself as its executor starts:
    // once a command was served, it has.
    assert_eq!(server.cli(&["PING"]), "PONG");
    let shard = thread_cpus(server.child.id(), "shard-0");
    let metrics = thread_cpus(server.child.id(), "shardline-metri");
    assert_eq!(shard.as_deref(), Some(allowed[0].to_string().as_str()));
    let metrics = metrics.expect("metrics thread");
    let metrics_cpus: Vec<usize> = metrics
        .split(',')
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().unwrap()..=b.parse().unwrap()).collect(),
            None => vec![part.parse::<usize>().unwrap()],
        })
        .collect();
    assert_eq!(metrics_cpus, allowed[1..].to_vec());
    assert!(
        server
            .log_lines()
            .iter()
            .any(|l| l.contains(&format!("other threads on CPU(s) {:?}", &allowed[1..]))),
        "{:?}",
        server.log_lines()
    );
}

/// Runs `command` (redis-cli with any TLS flags already set) as user `default`: `PING`.
fn ping_as_default(server: &Server, mut command: Command) -> std::process::Output {
    command
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
        .expect("redis-cli")
}

#[test]
fn tls_off_serves_plain_tcp_and_warns() {
    let server = Server::start(&["--smp", "1", "--tls", "off"]);
    let out = ping_as_default(&server, Command::new("redis-cli"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "PONG");
    assert!(server
        .log_lines()
        .iter()
        .any(|l| l.contains("--tls off: connections are NOT encrypted")));
}

fn sigterm_finishes_the_in_flight_reply_and_exits_zero(provider: &str) {
    let mut server = Server::start(&[
        "--tls-provider",
        provider,
        "--smp",
        "2",
        "--enable-debug-command",
    ]);
    let mut client = RawClient::connect(&server);
    let auth = format!("AUTH {}\r\n", server.password);
    client.send_raw(auth.as_bytes());
    assert_eq!(client.read_exact_len(5), b"+OK\r\n");
    // A client stuck before its TLS handshake must not hold the shutdown up.
    let _silent = std::net::TcpStream::connect(server.addr).expect("connect");
    client.send(&[b"DEBUG", b"SLEEP", b"0.5"]);
    std::thread::sleep(Duration::from_millis(100));
    let signalled = Instant::now();
    let status = server.terminate().expect("exited within 10 s");
    assert!(status.success(), "{status:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(2),
        "{:?}",
        signalled.elapsed()
    );
    // The reply to the command in flight arrives, then TLS close_notify and EOF.
    assert_eq!(client.read_exact_len(5), b"+OK\r\n");
    assert!(client.closed_by_server());
}

#[test]
fn shutdown_command_stops_the_server_like_sigterm_and_keeps_the_writes() {
    let mut server = Server::start(&["--smp", "2"]);
    let mut client = RawClient::authenticated(&server);
    client.roundtrip(&[b"SHUTDOWN", b"BOGUS"], b"-ERR syntax error\r\n");
    client.roundtrip(
        &[b"SHUTDOWN", b"ABORT"],
        b"-ERR No shutdown in progress.\r\n",
    );
    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    client.roundtrip(
        &[b"SHUTDOWN"],
        b"-ERR Command not allowed inside a transaction\r\n",
    );
    client.roundtrip(&[b"DISCARD"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"kept", b"after shutdown"], b"+OK\r\n");
    // No reply: the connection closes, and the process exits 0 (everysec log flushed).
    client.send(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(client.closed_by_server());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running 10 s after SHUTDOWN"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(server
        .log_lines()
        .iter()
        .any(|l| l.contains("SHUTDOWN command: shutting down")));
    let password = server.password.clone();
    let dir = std::mem::replace(&mut server.dir, tempfile::tempdir().expect("tempdir"));
    let restarted = Server::restart_in(dir, &["--smp", "2"], &password);
    let mut client = RawClient::authenticated(&restarted);
    client.roundtrip(&[b"GET", b"kept"], b"$14\r\nafter shutdown\r\n");
}

#[test]
fn a_port_already_in_use_is_an_error_despite_so_reuseport() {
    let server = Server::start(&["--smp", "1"]);
    let addr = server.addr.to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_shardline"))
        .args([
            "--smp",
            "1",
            "--bind",
            &addr,
            "--metrics-bind",
            "127.0.0.1:0",
            "--data-dir",
        ])
        .arg(dir.path())
        .output()
        .expect("run shardline");
    assert!(!out.status.success(), "second server started: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")),
        "{stderr}"
    );
    assert!(stderr.contains("Address already in use"), "{stderr}");
}

for_each_tls_provider!(sigterm_finishes_the_in_flight_reply_and_exits_zero,);
