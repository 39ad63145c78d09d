//! TLS session resumption across shards: every shard decrypts every shard's session tickets
//! (one set of ticket keys per process), for TLS 1.2 and TLS 1.3, and a rotated-out key
//! still decrypts until the next rotation.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{RawClient, Server};
use openssl::ssl::{SslConnector, SslMethod, SslSession, SslStream, SslVersion};

const RECONNECTS: usize = 40;

fn connector(server: &Server, version: SslVersion) -> SslConnector {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
    builder.set_ca_file(server.cert()).expect("ca");
    builder.set_min_proto_version(Some(version)).expect("min");
    builder.set_max_proto_version(Some(version)).expect("max");
    builder.build()
}

/// Connects (offering `session` when given), logs in, asks CLIENT INFO and returns the
/// stream, whether the session was resumed and the shard that served it. Reading a reply
/// also receives TLS 1.3's post-handshake tickets.
fn connect(
    server: &Server,
    connector: &SslConnector,
    session: Option<&SslSession>,
) -> (SslStream<TcpStream>, bool, String) {
    let tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut ssl = connector
        .configure()
        .expect("configure")
        .into_ssl("localhost")
        .expect("ssl");
    if let Some(session) = session {
        // SAFETY: the session comes from a connector with the same configuration.
        unsafe { ssl.set_session(session) }.expect("set_session");
    }
    let mut stream = SslStream::new(ssl, tcp).expect("stream");
    stream.connect().expect("TLS handshake");
    let password = &server.password;
    let request = format!(
        "*3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n${}\r\n{password}\r\n*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n",
        password.len()
    );
    stream.write_all(request.as_bytes()).expect("write");
    let mut reply = Vec::new();
    let mut chunk = [0u8; 1024];
    while !reply.ends_with(b"\n\r\n") {
        let n = stream.read(&mut chunk).expect("read");
        assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&reply));
        reply.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&reply).into_owned();
    assert!(text.starts_with("+OK\r\n$"), "{text}");
    let shard = text
        .split_whitespace()
        .find_map(|field| field.strip_prefix("shard="))
        .expect("shard field")
        .to_string();
    let reused = stream.ssl().session_reused();
    (stream, reused, shard)
}

/// Sends close_notify before closing: OpenSSL marks the session of a connection freed
/// without it as not resumable (RFC 5246 §7.2.1's "must not be resumed").
fn close(mut stream: SslStream<TcpStream>) {
    let _ = stream.shutdown();
}

fn resumed_total(server: &Server, resumed: &str) -> f64 {
    server.metric(
        "shardline_tls_handshakes_completed_total",
        &[("resumed", resumed)],
    )
}

fn reconnects_resume_on_every_shard(provider: &str, version: SslVersion) {
    let server = Server::start(&["--tls-provider", provider, "--smp", "2"]);
    let connector = connector(&server, version);
    let mut bystander = RawClient::connect(&server);
    bystander.roundtrip(
        &[b"AUTH", b"default", server.password.as_bytes()],
        b"+OK\r\n",
    );
    bystander.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");

    let (first, reused, _) = connect(&server, &connector, None);
    assert!(!reused);
    let session = first.ssl().session().expect("a session").to_owned();
    close(first);
    let before = resumed_total(&server, "true");
    let full_before = resumed_total(&server, "false");
    let mut resumed = 0;
    let mut shards = std::collections::BTreeSet::new();
    for _ in 0..RECONNECTS {
        let (stream, reused, shard) = connect(&server, &connector, Some(&session));
        close(stream);
        resumed += usize::from(reused);
        shards.insert(shard);
        bystander.roundtrip(&[b"GET", b"k"], b"$1\r\nv\r\n");
    }
    assert_eq!(
        resumed, RECONNECTS,
        "{version:?}: resumed {resumed} of {RECONNECTS} on shards {shards:?}"
    );
    // 40 connections on one of two shards would be a 2^-39 chance: both shards resumed.
    assert_eq!(shards.len(), 2, "{shards:?}");
    assert_eq!(resumed_total(&server, "true") - before, RECONNECTS as f64);
    assert_eq!(resumed_total(&server, "false"), full_before);
}

fn tls13_reconnects_resume_on_every_shard(provider: &str) {
    reconnects_resume_on_every_shard(provider, SslVersion::TLS1_3);
}

fn tls12_reconnects_resume_on_every_shard(provider: &str) {
    reconnects_resume_on_every_shard(provider, SslVersion::TLS1_2);
}

fn a_ticket_from_before_the_last_rotation_still_resumes_on_every_shard(provider: &str) {
    // 5 s periods: the reconnects below take well under one period even on a loaded machine.
    let server = Server::start(&[
        "--tls-provider",
        provider,
        "--smp",
        "2",
        "--tls-ticket-key-rotation",
        "5s",
    ]);
    let rotations = || server.metric("shardline_tls_ticket_key_rotations_total", &[]);
    let mut sessions = Vec::new();
    for version in [SslVersion::TLS1_2, SslVersion::TLS1_3] {
        let connector = connector(&server, version);
        let (first, _, _) = connect(&server, &connector, None);
        sessions.push((
            version,
            connector,
            first.ssl().session().expect("a session").to_owned(),
        ));
        close(first);
    }
    let issued_under = rotations();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while rotations() < issued_under + 1.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no rotation within 15 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut shards = std::collections::BTreeSet::new();
    for (version, connector, session) in &sessions {
        for _ in 0..10 {
            let (stream, reused, shard) = connect(&server, connector, Some(session));
            close(stream);
            assert!(reused, "{version:?}: not resumed on shard {shard}");
            shards.insert(shard);
        }
    }
    assert_eq!(shards.len(), 2, "{shards:?}");
    assert_eq!(
        rotations(),
        issued_under + 1.0,
        "a second rotation came too soon"
    );
}

for_each_tls_provider!(
    tls13_reconnects_resume_on_every_shard,
    tls12_reconnects_resume_on_every_shard,
    a_ticket_from_before_the_last_rotation_still_resumes_on_every_shard,
);
