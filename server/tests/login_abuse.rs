//! Hostile and hopeless logins: a queued login whose client has gone is not hashed (nor its
//! queued handshake answered), and a
//! connection is closed after `--max-auth-failures` wrong passwords; a well-behaved client
//! on the same shard logs in and is served throughout.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{users_line, RawClient, Server};
use openssl::ssl::{SslConnector, SslMethod};

const WRONGPASS: &[u8] = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";

fn auth_request(user: &str, password: &str) -> Vec<u8> {
    format!(
        "*3\r\n$4\r\nAUTH\r\n${}\r\n{user}\r\n${}\r\n{password}\r\n",
        user.len(),
        password.len()
    )
    .into_bytes()
}

fn logins(server: &Server, result: &str) -> f64 {
    server.metric("shardline_logins_total", &[("result", result)])
}

fn a_queued_login_whose_client_left_is_not_hashed(provider: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = dir.path().join("users");
    // ~2 s per verification on the one hashing thread, so the queue behind it outlasts the
    // steps below even on a loaded machine (with 1,000,000 rounds, ~0.5 s, it had sometimes
    // drained before the impatient handshakes arrived, and one was answered).
    let lines = users_line("slow", "slow-pw", "4000000") + &users_line("fast", "fast-pw", "5000");
    std::fs::write(&users, lines).expect("users file");
    let users_arg = users.to_string_lossy().into_owned();
    let server = Server::start(&[
        "--tls-provider",
        provider,
        "--smp",
        "1",
        "--users",
        &users_arg,
        "--hash-mode",
        "offload",
        "--hash-threads",
        "1",
        "--max-concurrent-logins",
        "1",
        "--max-hash-rounds",
        "4000000",
    ]);
    // Every handshake first: they need the login slot too.
    let mut bystander = RawClient::connect(&server);
    let mut holder = common::tls_stream(&server);
    let mut leavers: Vec<_> = (0..5).map(|_| common::tls_stream(&server)).collect();
    holder
        .write_all(&auth_request("slow", "slow-pw"))
        .expect("write");
    // The holder got the only login slot (its wait is observed on admission) and hashes.
    common::wait_for(|| server.metric("shardline_login_wait_seconds_count", &[]) == 1.0);
    // Five clients queue an AUTH behind it and leave: three just close (FIN), two send
    // close_notify first, as a TLS client that closes properly does.
    for (i, mut client) in leavers.drain(..).enumerate() {
        client
            .write_all(&auth_request("slow", "slow-pw"))
            .expect("write");
        if i < 2 {
            let _ = client.shutdown();
        }
    }
    // Three more send their ClientHello, see no answer within 50 ms (the slot is taken) and
    // leave: the server must not answer those handshakes either.
    let impatient: Vec<_> = (0..3)
        .map(|_| {
            let (addr, cert) = (server.addr, server.cert());
            std::thread::spawn(move || {
                let mut builder =
                    SslConnector::builder(SslMethod::tls_client()).expect("connector");
                builder.set_ca_file(cert).expect("ca");
                let tcp = TcpStream::connect(addr).expect("connect");
                tcp.set_read_timeout(Some(Duration::from_millis(50)))
                    .expect("timeout");
                builder.build().connect("localhost", tcp).is_err()
            })
        })
        .collect();
    for client in impatient {
        assert!(client.join().expect("thread"), "a handshake was answered");
    }
    // The well-behaved client queues last and still gets in.
    bystander.roundtrip(&[b"AUTH", b"fast", b"fast-pw"], b"+OK\r\n");
    bystander.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    let mut reply = [0u8; 5];
    holder.read_exact(&mut reply).expect("holder reply");
    assert_eq!(&reply, b"+OK\r\n");
    common::wait_for(|| logins(&server, "abandoned") == 5.0);
    assert_eq!(
        server.metric(
            "shardline_tls_handshakes_failed_total",
            &[("reason", "abandoned")]
        ),
        3.0
    );
    assert_eq!(logins(&server, "accepted"), 2.0);
    assert_eq!(
        server.metric("shardline_password_hash_duration_seconds_count", &[]),
        2.0,
        "only the two clients still there were hashed"
    );
    bystander.roundtrip(&[b"GET", b"k"], b"$1\r\nv\r\n");
}

#[test]
fn the_connection_closes_at_its_max_auth_failures_th_wrong_password() {
    let server = Server::start(&["--smp", "1", "--max-auth-failures", "3"]);
    let mut bystander = RawClient::connect(&server);
    bystander.roundtrip(&[b"AUTH", server.password.as_bytes()], b"+OK\r\n");

    let mut guesser = RawClient::connect(&server);
    guesser.roundtrip(&[b"AUTH", b"default", b"guess-1"], WRONGPASS);
    // HELLO … AUTH counts too.
    guesser.roundtrip(
        &[b"HELLO", b"3", b"AUTH", b"default", b"guess-2"],
        WRONGPASS,
    );
    guesser.roundtrip(&[b"AUTH", b"guess-3"], WRONGPASS);
    assert!(guesser.closed_by_server());

    // A pipelined burst gets exactly three replies, then the close.
    let mut pipeliner = RawClient::connect(&server);
    let burst: Vec<u8> = (0..6)
        .flat_map(|i| auth_request("default", &format!("burst-{i}")))
        .collect();
    pipeliner.send_raw(&burst);
    assert_eq!(
        pipeliner.read_exact_len(3 * WRONGPASS.len()),
        WRONGPASS.repeat(3)
    );
    assert!(pipeliner.closed_by_server());

    bystander.roundtrip(&[b"PING"], b"+PONG\r\n");
    assert_eq!(logins(&server, "rejected"), 6.0);
    assert_eq!(
        server.metric(
            "shardline_connections_closed_total",
            &[("reason", "auth_failures")]
        ),
        2.0
    );
    // Counted on the shard that served them.
    assert_eq!(
        server.metric(
            "shardline_logins_total",
            &[("shard", "0"), ("result", "rejected")]
        ),
        6.0
    );
}

#[test]
fn ten_wrong_passwords_by_default_and_zero_means_no_limit() {
    let server = Server::start(&["--smp", "1"]);
    let mut guesser = RawClient::connect(&server);
    for i in 0..9 {
        guesser.roundtrip(&[b"AUTH", format!("guess-{i}").as_bytes()], WRONGPASS);
    }
    // Still open after nine.
    guesser.roundtrip(&[b"PING"], b"-NOAUTH Authentication required.\r\n");
    guesser.roundtrip(&[b"AUTH", b"guess-9"], WRONGPASS);
    assert!(guesser.closed_by_server());

    let unlimited = Server::start(&["--smp", "1", "--max-auth-failures", "0"]);
    let mut guesser = RawClient::connect(&unlimited);
    for i in 0..12 {
        guesser.roundtrip(&[b"AUTH", format!("guess-{i}").as_bytes()], WRONGPASS);
    }
    guesser.roundtrip(&[b"AUTH", unlimited.password.as_bytes()], b"+OK\r\n");
    guesser.roundtrip(&[b"PING"], b"+PONG\r\n");
}

for_each_tls_provider!(a_queued_login_whose_client_left_is_not_hashed,);
