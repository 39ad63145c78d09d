//! What both `--tls-provider` values must do alike, on real sockets: client certificates
//! required, accepted and refused; close_notify when the server closes; a client that closes
//! without close_notify counted as closed, not as an error; a client gone mid-handshake
//! counted as `io`, garbage as `protocol`; TLS 1.1 refused; a large reply
//! to a client that reads late arrives whole; shutdown drops a connection in its handshake;
//! a bad key is refused at start.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{RawClient, Server};
use openssl::ssl::{ShutdownState, SslConnector, SslMethod, SslStream, SslVersion};

fn failed(server: &Server, reason: &str) -> f64 {
    server.metric(
        "shardline_tls_handshakes_failed_total",
        &[("reason", reason)],
    )
}

fn closed(server: &Server, reason: &str) -> f64 {
    server.metric("shardline_connections_closed_total", &[("reason", reason)])
}

/// A TLS 1.2+ client trusting the server's generated certificate, with a 10 s read timeout.
fn login(stream: &mut SslStream<TcpStream>, server: &Server) {
    stream
        .write_all(format!("AUTH {}\r\n", server.password).as_bytes())
        .expect("write");
    let mut reply = [0u8; 5];
    stream.read_exact(&mut reply).expect("read");
    assert_eq!(&reply, b"+OK\r\n");
}

/// Makes a CA and a client certificate signed by it (PEM files in `dir`), with the openssl
/// crate: returns (ca.pem, client.pem, client-key.pem).
fn client_ca(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use openssl::asn1::Asn1Time;
    use openssl::bn::BigNum;
    use openssl::ec::{EcGroup, EcKey};
    use openssl::hash::MessageDigest;
    use openssl::nid::Nid;
    use openssl::pkey::PKey;
    use openssl::x509::extension::BasicConstraints;
    use openssl::x509::{X509NameBuilder, X509};

    let key = || {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).expect("group");
        PKey::from_ec_key(EcKey::generate(&group).expect("key")).expect("pkey")
    };
    let name = |cn: &str| {
        let mut b = X509NameBuilder::new().expect("name");
        b.append_entry_by_nid(Nid::COMMONNAME, cn).expect("cn");
        b.build()
    };
    let cert = |subject: &str,
                key: &PKey<openssl::pkey::Private>,
                issuer: &str,
                signer: &PKey<openssl::pkey::Private>,
                ca: bool| {
        let mut b = X509::builder().expect("builder");
        b.set_version(2).expect("version");
        let serial = BigNum::from_u32(if ca { 1 } else { 2 })
            .expect("serial")
            .to_asn1_integer()
            .expect("serial");
        b.set_serial_number(&serial).expect("serial");
        b.set_subject_name(&name(subject)).expect("subject");
        b.set_issuer_name(&name(issuer)).expect("issuer");
        b.set_pubkey(key).expect("pubkey");
        let from = Asn1Time::days_from_now(0).expect("time");
        let to = Asn1Time::days_from_now(2).expect("time");
        b.set_not_before(&from).expect("nb");
        b.set_not_after(&to).expect("na");
        if ca {
            b.append_extension(BasicConstraints::new().critical().ca().build().expect("bc"))
                .expect("ext");
        }
        b.sign(signer, MessageDigest::sha256()).expect("sign");
        b.build()
    };
    let ca_key = key();
    let ca = cert("test CA", &ca_key, "test CA", &ca_key, true);
    let client_key = key();
    let client = cert("test client", &client_key, "test CA", &ca_key, false);
    let paths = (
        dir.join("ca.pem"),
        dir.join("client.pem"),
        dir.join("client-key.pem"),
    );
    std::fs::write(&paths.0, ca.to_pem().expect("pem")).expect("write");
    std::fs::write(&paths.1, client.to_pem().expect("pem")).expect("write");
    std::fs::write(
        &paths.2,
        client_key.private_key_to_pem_pkcs8().expect("pem"),
    )
    .expect("write");
    paths
}

fn tls_ca_requires_a_client_certificate_signed_by_it(provider: &str) {
    let trusted = tempfile::tempdir().expect("tempdir");
    let stranger = tempfile::tempdir().expect("tempdir");
    let (ca, client_cert, client_key) = client_ca(trusted.path());
    // Same subject names, another CA key: a certificate the server must refuse.
    let (_, foreign_cert, foreign_key) = client_ca(stranger.path());
    let ca_arg = ca.to_string_lossy().into_owned();
    let server = Server::start(&[
        "--tls-provider",
        provider,
        "--smp",
        "1",
        "--tls-ca",
        &ca_arg,
    ]);
    let ping = |cert: Option<(&Path, &Path)>| {
        let mut command = Command::new("redis-cli");
        command.args(["--tls", "--cacert"]).arg(server.cert());
        if let Some((cert, key)) = cert {
            command.arg("--cert").arg(cert).arg("--key").arg(key);
        }
        let out = command
            .args(["-h", "127.0.0.1", "-p", &server.port(), "--user", "default"])
            .arg("--pass")
            .arg(&server.password)
            .args(["--no-auth-warning", "PING"])
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(ping(Some((&client_cert, &client_key))), "PONG");
    assert_eq!(failed(&server, "protocol"), 0.0);
    // redis-cli tries twice when refused; one attempt each from here on.
    let login = |cert: Option<(&Path, &Path)>| -> Result<Vec<u8>, String> {
        let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
        builder.set_ca_file(server.cert()).expect("ca");
        if let Some((cert, key)) = cert {
            builder.set_certificate_chain_file(cert).expect("cert");
            builder
                .set_private_key_file(key, openssl::ssl::SslFiletype::PEM)
                .expect("key");
        }
        let tcp = TcpStream::connect(server.addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut stream = builder
            .build()
            .connect("localhost", tcp)
            .map_err(|err| err.to_string())?;
        // With TLS 1.3 the client's handshake ends before the server checked its
        // certificate: a refusal shows on the first read.
        let auth = format!("AUTH {}\r\n", server.password);
        stream
            .write_all(auth.as_bytes())
            .map_err(|err| err.to_string())?;
        let mut reply = vec![0u8; 5];
        stream
            .read_exact(&mut reply)
            .map_err(|err| err.to_string())?;
        Ok(reply)
    };
    assert!(login(None).is_err());
    common::wait_for(|| failed(&server, "protocol") == 1.0);
    assert!(login(Some((&foreign_cert, &foreign_key))).is_err());
    common::wait_for(|| failed(&server, "protocol") == 2.0);
    assert_eq!(
        login(Some((&client_cert, &client_key))).expect("accepted"),
        b"+OK\r\n"
    );
    assert_eq!(failed(&server, "protocol"), 2.0);
    assert_eq!(
        server.metric(
            "shardline_tls_handshakes_completed_total",
            &[("resumed", "false")]
        ),
        2.0
    );
}

fn quit_is_answered_then_close_notify(provider: &str) {
    let server = Server::start(&["--tls-provider", provider, "--smp", "1"]);
    let mut stream = common::tls_stream(&server);
    login(&mut stream, &server);
    stream.write_all(b"QUIT\r\n").expect("write");
    let mut reply = Vec::new();
    // Ok (not an "unexpected EOF" error) only when close_notify came before the FIN.
    stream
        .read_to_end(&mut reply)
        .expect("a clean TLS end of stream");
    assert_eq!(reply, b"+OK\r\n");
    assert!(stream.get_shutdown().contains(ShutdownState::RECEIVED));
    common::wait_for(|| closed(&server, "quit") == 1.0);
}

fn a_client_that_closes_without_close_notify_is_closed_not_failed(provider: &str) {
    let server = Server::start(&["--tls-provider", provider, "--smp", "1"]);
    let mut polite = common::tls_stream(&server);
    login(&mut polite, &server);
    let _ = polite.shutdown();
    common::wait_for(|| closed(&server, "client_closed") == 1.0);
    // Only a FIN: what redis-cli, redis-py and most clients do.
    let mut abrupt = common::tls_stream(&server);
    login(&mut abrupt, &server);
    drop(abrupt);
    common::wait_for(|| closed(&server, "client_closed") == 2.0);
    assert_eq!(closed(&server, "io_error"), 0.0);
}

fn a_client_gone_mid_handshake_is_io_and_garbage_is_protocol(provider: &str) {
    let server = Server::start(&["--tls-provider", provider, "--smp", "1"]);
    let mut tcp = TcpStream::connect(server.addr).expect("connect");
    // Half a record header, then FIN: the client left.
    tcp.write_all(b"\x16\x03\x01").expect("write");
    common::wait_for(|| server.metric("shardline_tls_handshakes_started_total", &[]) == 1.0);
    drop(tcp);
    // Gone with its bytes unread: "io" once the server read them, "abandoned" when the FIN was
    // already there as they got their login slot (which one depends on timing).
    let gone = || failed(&server, "io") + failed(&server, "abandoned");
    common::wait_for(|| gone() == 1.0);
    assert_eq!(failed(&server, "protocol"), 0.0);
    // A handshake record whose content is garbage.
    let mut tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    tcp.write_all(b"\x16\x03\x01\x00\x05\xff\xff\xff\xff\xff")
        .expect("write");
    let mut rest = Vec::new();
    let _ = tcp.read_to_end(&mut rest);
    common::wait_for(|| failed(&server, "protocol") == 1.0);
    // Not TLS at all: a plaintext client, told so (tests/plaintext_clients.rs).
    let mut tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    tcp.write_all(b"PING\r\n").expect("write");
    let mut rest = Vec::new();
    let _ = tcp.read_to_end(&mut rest);
    assert!(rest.starts_with(b"-ERR this port accepts TLS connections only"));
    common::wait_for(|| failed(&server, "plaintext") == 1.0);
    assert_eq!(failed(&server, "protocol"), 1.0);
    assert_eq!(gone(), 1.0);
}

fn tls11_is_refused(provider: &str) {
    let server = Server::start(&["--tls-provider", provider, "--smp", "1"]);
    let mut bystander = RawClient::authenticated(&server);
    let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
    builder.set_ca_file(server.cert()).expect("ca");
    // OpenSSL 3 clients refuse TLS 1.1 themselves at the default security level: lower it so
    // the ClientHello really offers only TLS 1.1 and the server is the one to refuse.
    builder.set_security_level(0);
    builder
        .set_cipher_list("DEFAULT:@SECLEVEL=0")
        .expect("ciphers");
    builder
        .set_min_proto_version(Some(SslVersion::TLS1_1))
        .expect("min");
    builder
        .set_max_proto_version(Some(SslVersion::TLS1_1))
        .expect("max");
    let tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let outcome = builder.build().connect("localhost", tcp);
    assert!(outcome.is_err(), "a TLS 1.1 handshake completed");
    common::wait_for(|| failed(&server, "protocol") == 1.0);
    assert_eq!(
        server.metric("shardline_tls_handshakes_completed_total", &[]),
        1.0
    );
    bystander.roundtrip(&[b"PING"], b"+PONG\r\n");
}

fn a_large_reply_to_a_client_that_reads_late_arrives_whole(provider: &str) {
    let server = Server::start(&["--tls-provider", provider, "--smp", "1"]);
    let value = vec![b'v'; 8 << 20];
    let mut writer = RawClient::authenticated(&server);
    writer.send(&[b"SET", b"big", &value]);
    assert_eq!(writer.read_exact_len(5), b"+OK\r\n");
    // A 64 KiB receive buffer: the reply fills the sockets long before the client reads, so
    // the server must come back and send the rest (TLS records the library still holds
    // included) when the client starts reading.
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket.set_recv_buffer_size(64 << 10).expect("SO_RCVBUF");
    socket.connect(&server.addr.into()).expect("connect");
    let tcp = TcpStream::from(socket);
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
    builder.set_ca_file(server.cert()).expect("ca");
    let mut reader = builder
        .build()
        .connect("localhost", tcp)
        .expect("TLS handshake");
    login(&mut reader, &server);
    for round in 0..3 {
        reader.write_all(b"GET big\r\n").expect("write");
        std::thread::sleep(Duration::from_millis(300));
        let header = format!("${}\r\n", value.len());
        let mut reply = vec![0u8; header.len() + value.len() + 2];
        reader
            .read_exact(&mut reply)
            .unwrap_or_else(|err| panic!("round {round}: reply cut short: {err}"));
        assert_eq!(&reply[..header.len()], header.as_bytes());
        assert!(reply[header.len()..reply.len() - 2] == value[..]);
        assert_eq!(&reply[reply.len() - 2..], b"\r\n");
    }
    writer.roundtrip(&[b"PING"], b"+PONG\r\n");
}

fn shutdown_drops_a_connection_in_its_handshake(provider: &str) {
    let mut server = Server::start(&[
        "--tls-provider",
        provider,
        "--smp",
        "1",
        "--handshake-timeout-ms",
        "60000",
    ]);
    let mut tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // Half a record header: the handshake has begun and waits for the rest.
    tcp.write_all(b"\x16\x03\x01").expect("write");
    common::wait_for(|| server.metric("shardline_tls_handshakes_started_total", &[]) == 1.0);
    let signalled = Instant::now();
    let status = server.terminate().expect("exited within 10 s");
    assert!(status.success(), "{status:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(5),
        "{:?}",
        signalled.elapsed()
    );
    let mut rest = Vec::new();
    // EOF or a reset: either way, not a TLS reply.
    if let Ok(n) = tcp.read_to_end(&mut rest) {
        assert_eq!(n, 0, "{rest:?}");
    }
}

fn a_key_that_does_not_match_the_certificate_is_refused_at_start(provider: &str) {
    let first = tempfile::tempdir().expect("tempdir");
    let second = tempfile::tempdir().expect("tempdir");
    let (_, cert, _) = client_ca(first.path());
    let (_, _, other_key) = client_ca(second.path());
    let dir = tempfile::tempdir().expect("tempdir");
    let cert = cert.to_string_lossy().into_owned();
    let other_key = other_key.to_string_lossy().into_owned();
    let stderr = common::start_failure(
        dir.path(),
        &[
            "--tls-provider",
            provider,
            "--tls-cert",
            &cert,
            "--tls-key",
            &other_key,
        ],
    );
    let expected = match provider {
        "openssl" => format!("loading private key {other_key}): error:05800074:x509 certificate routines:X509_check_private_key:key values mismatch"),
        _ => format!("using the private key {other_key} with the certificate {cert}"),
    };
    assert!(stderr.contains(&expected), "{stderr}");
}

#[test]
fn the_start_line_names_the_provider_and_rustls_is_the_default() {
    let server = Server::start(&["--smp", "1"]);
    assert!(server
        .log_lines()
        .iter()
        .any(|l| l.contains("(TLS by rustls)")));
    let openssl = Server::start(&["--smp", "1", "--tls-provider", "openssl"]);
    assert!(openssl
        .log_lines()
        .iter()
        .any(|l| l.contains("(TLS by openssl)")));
    let dir = tempfile::tempdir().expect("tempdir");
    let stderr = common::start_failure(dir.path(), &["--tls-provider", "boringssl"]);
    assert!(
        stderr.contains("invalid value 'boringssl' for '--tls-provider <TLS_PROVIDER>'"),
        "{stderr}"
    );
}

for_each_tls_provider!(
    tls_ca_requires_a_client_certificate_signed_by_it,
    quit_is_answered_then_close_notify,
    a_client_that_closes_without_close_notify_is_closed_not_failed,
    a_client_gone_mid_handshake_is_io_and_garbage_is_protocol,
    tls11_is_refused,
    a_large_reply_to_a_client_that_reads_late_arrives_whole,
    shutdown_drops_a_connection_in_its_handshake,
    a_key_that_does_not_match_the_certificate_is_refused_at_start,
);

#[test]
fn rustls_names_an_encrypted_key_and_a_file_without_a_key() {
    let keys = tempfile::tempdir().expect("tempdir");
    let (_, cert, key) = client_ca(keys.path());
    let pem = std::fs::read(&key).expect("key");
    let plain = openssl::pkey::PKey::private_key_from_pem(&pem).expect("parse key");
    let encrypted = plain
        .private_key_to_pem_pkcs8_passphrase(openssl::symm::Cipher::aes_256_cbc(), b"secret")
        .expect("encrypt key");
    let encrypted_path = keys.path().join("encrypted.pem");
    std::fs::write(&encrypted_path, encrypted).expect("write");
    let cert = cert.to_string_lossy().into_owned();
    let start = |key: &Path| {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = key.to_string_lossy().into_owned();
        common::start_failure(
            dir.path(),
            &[
                "--tls-provider",
                "rustls",
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
            ],
        )
    };
    let stderr = start(&encrypted_path);
    assert!(
        stderr.contains("the key is encrypted, which --tls-provider rustls does not support")
            && stderr.contains("openssl pkey -in"),
        "{stderr}"
    );
    // A certificate where the key should be.
    let stderr = start(Path::new(&cert));
    assert!(
        stderr.contains("the file holds no PEM private key"),
        "{stderr}"
    );
}

#[test]
fn a_private_key_readable_by_others_is_warned_about_and_one_for_the_group_is_not() {
    use std::os::unix::fs::PermissionsExt;
    let keys = tempfile::tempdir().expect("tempdir");
    let (_, cert, key) = client_ca(keys.path());
    let cert = cert.to_string_lossy().into_owned();
    let key_arg = key.to_string_lossy().into_owned();
    let warned = |mode: u32| {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).expect("chmod");
        // Started: the server accepted the key (the start line came after the TLS setup).
        let server = Server::start(&["--smp", "1", "--tls-cert", &cert, "--tls-key", &key_arg]);
        server
            .log_lines()
            .iter()
            .any(|line| line.contains("TLS private key is accessible to others"))
    };
    assert!(warned(0o644));
    assert!(!warned(0o640));
}
