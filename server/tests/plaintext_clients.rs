//! A plaintext client on the TLS port gets one RESP error naming the cause instead of a bare
//! close; each is counted in `shardline_tls_handshakes_failed_total{reason="plaintext"}` and
//! the log gets at most one line per 10 s per shard. TLS clients are served as before.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use common::Server;

const REPLY: &str = "-ERR this port accepts TLS connections only: connect with TLS \
(redis-cli --tls --cacert <CA certificate>)\r\n";
const FAILED: &str = "shardline_tls_handshakes_failed_total";
const PLAINTEXT: &[(&str, &str)] = &[("reason", "plaintext")];

/// Sends a plaintext RESP PING and reads until the server closes.
fn plaintext_ping(server: &Server) -> String {
    let mut tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    tcp.write_all(b"*1\r\n$4\r\nPING\r\n").expect("write");
    let mut reply = Vec::new();
    tcp.read_to_end(&mut reply).expect("read to EOF");
    String::from_utf8_lossy(&reply).into_owned()
}

#[test]
fn a_plaintext_client_reads_why_and_is_counted_and_logged_once() {
    let server = Server::start(&["--smp", "1"]);
    assert_eq!(server.metric(FAILED, PLAINTEXT), 0.0);

    assert_eq!(plaintext_ping(&server), REPLY);
    assert_eq!(server.metric_reaching(FAILED, PLAINTEXT, 1.0), 1.0);

    // redis-cli without --tls prints the reason instead of "Server closed the connection".
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &server.port(), "PING"])
        .output()
        .expect("run redis-cli (install redis-tools)");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("ERR this port accepts TLS connections only"),
        "redis-cli printed {printed:?}"
    );
    assert_eq!(plaintext_ping(&server), REPLY);
    assert_eq!(server.metric_reaching(FAILED, PLAINTEXT, 3.0), 3.0);

    // Three refusals within 10 s on one shard: one log line.
    let lines: Vec<String> = server
        .log_reaching("plaintext client")
        .into_iter()
        .filter(|line| line.contains("plaintext client"))
        .collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].contains("plaintext client 127.0.0.1:") && lines[0].contains("on the TLS port"),
        "{}",
        lines[0]
    );

    // TLS clients are served as before, and a TLS handshake is no plaintext client.
    assert_eq!(server.cli(&["PING"]), "PONG");
    assert_eq!(server.metric(FAILED, PLAINTEXT), 3.0);
}
