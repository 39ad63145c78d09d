//! Logins through the real binary: every hash mode, users files from mkpasswd and openssl,
//! `shardline passwd`, SIGHUP reload, and login admission.

mod common;

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use common::{RawClient, Server};

const WRONGPASS: &[u8] = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";

fn auth(client: &mut RawClient, user: &str, password: &str, expected: &[u8]) {
    client.roundtrip(&[b"AUTH", user.as_bytes(), password.as_bytes()], expected);
}

/// Runs `shardline passwd USER --rounds R --users PATH` with `password` on stdin.
fn run_passwd(
    users: &std::path::Path,
    user: &str,
    password: &[u8],
    rounds: &str,
) -> std::process::Output {
    let args = [
        user.as_ref(),
        "--rounds".as_ref(),
        rounds.as_ref(),
        "--users".as_ref(),
    ];
    let mut args: Vec<&std::ffi::OsStr> = args.to_vec();
    args.push(users.as_os_str());
    common::shardline_passwd(&args, std::path::Path::new("."), password)
}

fn passwd(users: &std::path::Path, user: &str, password: &str, rounds: &str) {
    let out = run_passwd(users, user, format!("{password}\n").as_bytes(), rounds);
    assert!(out.status.success(), "passwd failed: {out:?}");
}

/// Sends SIGHUP and waits up to 5 s for a log line that `matches`.
fn sighup_and_wait_for_log(server: &Server, matches: impl Fn(&str) -> bool) -> bool {
    unsafe { libc::kill(server.child.id() as i32, libc::SIGHUP) };
    (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        server.log_lines().iter().any(|l| matches(l))
    })
}

#[test]
fn every_hash_mode_accepts_right_and_refuses_wrong_passwords() {
    for mode in ["inline", "yield", "offload"] {
        let server = Server::start(&["--smp", "1", "--hash-mode", mode]);
        let mut client = RawClient::connect(&server);
        auth(&mut client, "default", "wrong", WRONGPASS);
        auth(&mut client, "nobody", &server.password, WRONGPASS);
        client.roundtrip(&[b"GET", b"k"], b"-NOAUTH Authentication required.\r\n");
        auth(&mut client, "default", &server.password, b"+OK\r\n");
        client.roundtrip(&[b"GET", b"k"], b"$-1\r\n");
        let hashed = server.metric(
            "shardline_password_hash_duration_seconds_count",
            &[("mode", mode)],
        );
        assert_eq!(hashed, 3.0, "mode {mode}");
        assert_eq!(
            server.metric("shardline_logins_total", &[("result", "rejected")]),
            2.0
        );
        assert_eq!(
            server.metric("shardline_logins_total", &[("result", "accepted")]),
            1.0
        );
    }
}

#[test]
fn oversize_passwords_are_refused_without_hashing() {
    let server = Server::start(&["--smp", "1", "--max-password-bytes", "16"]);
    let mut client = RawClient::connect(&server);
    auth(&mut client, "default", &"x".repeat(17), WRONGPASS);
    assert_eq!(
        server.metric("shardline_logins_total", &[("result", "oversize")]),
        1.0
    );
    assert_eq!(
        server.metric("shardline_password_hash_duration_seconds_count", &[]),
        0.0
    );
}

#[test]
fn mkpasswd_and_openssl_hashes_work_unmodified() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    let hash = |program: &str, args: &[&str]| {
        let out = Command::new(program).args(args).output().expect(program);
        assert!(out.status.success(), "{program}: {out:?}");
        String::from_utf8(out.stdout)
            .expect("utf8")
            .trim()
            .to_string()
    };
    let mk = hash("mkpasswd", &["-m", "sha-512", "mk-secret"]);
    let ossl = hash("openssl", &["passwd", "-6", "ossl-secret"]);
    std::fs::write(&users, format!("# test users\nmk:{mk}\nossl:{ossl}\n")).expect("write");
    let users_arg = users.to_string_lossy().into_owned();
    let server = Server::start(&["--smp", "1", "--users", &users_arg]);
    let mut client = RawClient::connect(&server);
    auth(&mut client, "mk", "mk-secret", b"+OK\r\n");
    auth(&mut client, "ossl", "ossl-secret", b"+OK\r\n");
    auth(&mut client, "ossl", "mk-secret", WRONGPASS);
}

#[test]
fn malformed_users_file_is_refused_at_start_with_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    std::fs::write(&users, "ok:$6$salt$hash\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_shardline"))
        .args([
            "--bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
            "--users",
        ])
        .arg(&users)
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "{}:1: invalid hash part: not 86 characters",
        users.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
}

#[test]
fn sighup_reloads_users_without_dropping_connections() {
    let server = Server::start(&["--smp", "2"]);
    let users = server.dir.path().join("users");
    let mut held = RawClient::connect(&server);
    auth(&mut held, "default", &server.password, b"+OK\r\n");
    held.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");

    passwd(&users, "alice", "wonderland", "5000");
    let mut before = RawClient::connect(&server);
    auth(&mut before, "alice", "wonderland", WRONGPASS);

    const RELOADS: &str = "shardline_users_reloads_total";
    assert_eq!(server.metric(RELOADS, &[("result", "ok")]), 0.0);
    assert_eq!(server.metric(RELOADS, &[("result", "refused")]), 0.0);
    let reloaded = sighup_and_wait_for_log(&server, |l| l.contains("reloaded"));
    assert!(reloaded, "no reload line in {:?}", server.log_lines());
    assert_eq!(server.metric(RELOADS, &[("result", "ok")]), 1.0);
    auth(&mut before, "alice", "wonderland", b"+OK\r\n");
    // The connection authenticated before the reload is still served.
    held.roundtrip(&[b"GET", b"k"], b"$1\r\nv\r\n");

    // A broken file on reload keeps the users already loaded.
    std::fs::write(&users, "broken line without colon\n").expect("write");
    let refused = sighup_and_wait_for_log(&server, |l| l.contains("users file not reloaded"));
    assert!(refused, "{:?}", server.log_lines());
    let mut after = RawClient::connect(&server);
    auth(&mut after, "alice", "wonderland", b"+OK\r\n");

    // So does an emptied (truncated) file: it would lock everybody out.
    std::fs::write(&users, "").expect("truncate");
    let refused = sighup_and_wait_for_log(&server, |l| {
        l.contains("users file not reloaded") && l.contains("no users")
    });
    assert!(refused, "{:?}", server.log_lines());
    assert_eq!(server.metric(RELOADS, &[("result", "refused")]), 2.0);
    assert_eq!(server.metric(RELOADS, &[("result", "ok")]), 1.0);
    let mut after = RawClient::connect(&server);
    auth(&mut after, "alice", "wonderland", b"+OK\r\n");
}

#[test]
fn an_empty_users_file_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    std::fs::write(&users, "# nobody yet\n").expect("write");
    let stderr = common::start_failure(dir.path(), &[]);
    assert!(
        stderr.contains(
            "no users (only blank or comment lines); add one with `shardline passwd USER`"
        ),
        "{stderr}"
    );
}

#[test]
fn login_queue_sheds_connections_that_wait_too_long() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    // ~100 ms per verification: slow enough that a queue of logins must wait.
    passwd(&users, "slow", "pw", "400000");
    let users_arg = users.to_string_lossy().into_owned();
    let server = Server::start(&[
        "--smp",
        "1",
        "--users",
        &users_arg,
        "--hash-mode",
        "offload",
        "--max-concurrent-logins",
        "1",
        "--login-queue-timeout-ms",
        "30",
    ]);
    let mut clients: Vec<RawClient> = (0..4).map(|_| RawClient::connect(&server)).collect();
    for client in &mut clients {
        client.send(&[b"AUTH", b"slow", b"pw"]);
    }
    let shed_reply: &[u8] = b"-ERR login queue timeout: too many concurrent logins on this shard (--max-concurrent-logins), try again later\r\n";
    let mut accepted = 0;
    let mut shed = 0;
    for client in &mut clients {
        let first = client.read_exact_len(1);
        if first == b"+" {
            assert_eq!(client.read_exact_len(4), b"OK\r\n");
            accepted += 1;
        } else {
            let rest = client.read_exact_len(shed_reply.len() - 1);
            assert_eq!([first, rest].concat(), shed_reply);
            assert!(client.closed_by_server());
            shed += 1;
        }
    }
    assert_eq!(accepted + shed, 4);
    assert!(
        accepted >= 1 && shed >= 1,
        "accepted {accepted}, shed {shed}"
    );
    assert_eq!(
        server.metric("shardline_connections_shed_total", &[]),
        shed as f64
    );
    assert_eq!(
        server.metric("shardline_logins_total", &[("result", "shed")]),
        shed as f64
    );
}

fn silent_and_half_handshakes_do_not_hold_login_slots(provider: &str) {
    // Two slots, shed after 2 s: if waiting clients held slots, the redis-cli below would be
    // shed (or wait the 30 s handshake timeout) instead of answering.
    let server = Server::start(&[
        "--tls-provider",
        provider,
        "--smp",
        "1",
        "--max-concurrent-logins",
        "2",
        "--login-queue-timeout-ms",
        "2000",
        "--handshake-timeout-ms",
        "30000",
    ]);
    let addr = format!("127.0.0.1:{}", server.port());
    let mut idle = Vec::new();
    for i in 0..12 {
        let mut tcp = std::net::TcpStream::connect(&addr).expect("connect");
        if i % 2 == 1 {
            // The first 3 bytes of a TLS record header: half a ClientHello.
            tcp.write_all(b"\x16\x03\x01").expect("write");
        }
        idle.push(tcp);
    }
    // Let the server accept them all before the real client comes.
    common::wait_for(|| server.metric("shardline_connections_accepted_total", &[]) >= 12.0);
    assert_eq!(server.cli(&["PING"]), "PONG");
    assert_eq!(server.metric("shardline_connections_shed_total", &[]), 0.0);
    drop(idle);
}

#[test]
fn passwd_refuses_a_password_the_server_would_refuse() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    let out = run_passwd(&users, "longpw", &[b'p'; 300], "5000");
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "shardline: the password is 300 bytes; the server refuses passwords longer than 256 \
         bytes (--max-password-bytes)"
    );
    assert!(!users.exists(), "nothing may be written");
    // Exactly the limit is accepted.
    passwd(&users, "ok", &"p".repeat(256), "1000");
    assert!(std::fs::read_to_string(&users)
        .expect("users")
        .starts_with("ok:$6$rounds=1000$"));
}

for_each_tls_provider!(silent_and_half_handshakes_do_not_hold_login_slots,);
