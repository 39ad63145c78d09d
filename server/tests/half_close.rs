//! Half-closed clients get every reply: a client that writes `AUTH`, `DEL k` and N × `INCR k`
//! in one write, then shuts down its sending side (with or without a TLS close_notify first)
//! and reads, gets N + 2 replies and then the server's close, as from redis-server, even when
//! its AUTH waited for a login slot and the FIN was there when the slot came. A client that
//! closed its socket while its AUTH waited is still skipped where a probe can tell it apart
//! (`--tls-provider openssl`, TLS 1.3), and everywhere when it reset the connection.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use common::reference::RedisReference;
use common::{users_line, RawClient, Server};

/// INCRs per client.
const N: usize = 50;
/// Half-closing clients whose logins queue together.
const CLIENTS: usize = 6;

/// How a client ends its sending side after its requests.
#[derive(Clone, Copy, Debug)]
enum HalfClose {
    /// OpenSSL client: `shutdown(SHUT_WR)` on the socket, no close_notify.
    OpensslFin,
    /// rustls client: `shutdown(SHUT_WR)`, no close_notify.
    RustlsFin,
    /// rustls client: close_notify, then `shutdown(SHUT_WR)` (an OpenSSL client drops what it
    /// reads after sending close_notify, so it cannot be the one to show this).
    RustlsCloseNotify,
}

/// One write's worth: AUTH, DEL `key`, N × INCR `key`.
fn requests(user: &str, password: &str, key: &str) -> Vec<u8> {
    let mut out = common::encode_command(&[b"AUTH", user.as_bytes(), password.as_bytes()]);
    out.extend(common::encode_command(&[b"DEL", key.as_bytes()]));
    for _ in 0..N {
        out.extend(common::encode_command(&[b"INCR", key.as_bytes()]));
    }
    out
}

/// The replies a half-closed client must read: +OK, :0 (the key is new), :1..:N.
fn expected() -> Vec<u8> {
    let mut out = b"+OK\r\n:0\r\n".to_vec();
    for i in 1..=N {
        out.extend(format!(":{i}\r\n").into_bytes());
    }
    out
}

/// A slow user whose login holds the only slot (~0.3 s or more), and a fast one.
fn users_file(dir: &std::path::Path) -> String {
    let users = dir.join("users");
    let lines = users_line("slow", "slow-pw", "600000") + &users_line("fast", "fast-pw", "5000");
    std::fs::write(&users, lines).expect("users file");
    users.to_string_lossy().into_owned()
}

fn start(provider: &str, users: &str) -> Server {
    Server::start(&[
        "--tls-provider",
        provider,
        "--smp",
        "1",
        "--users",
        users,
        "--hash-mode",
        "offload",
        "--hash-threads",
        "1",
        "--max-concurrent-logins",
        "1",
        "--max-hash-rounds",
        "1000000",
    ])
}

/// Trusts any server certificate (the server's generated one is a self-signed CA, which
/// webpki refuses as an end entity); signatures are still checked.
#[derive(Debug)]
struct AnyCertificate(rustls::crypto::WebPkiSupportedAlgorithms);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_schemes()
    }
}

fn rustls_config() -> Arc<rustls::ClientConfig> {
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let verifier = AnyCertificate(provider.signature_verification_algorithms);
    Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth(),
    )
}

fn tcp(server: &Server) -> TcpStream {
    let tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    tcp
}

/// Everything the client reads until the server closes (a read error ends it too: the
/// bytes read so far are what the assertion compares).
fn read_to_close(stream: &mut impl Read) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// A connected, handshaken client, ready to send its one write and half-close.
enum Client {
    Openssl(openssl::ssl::SslStream<TcpStream>),
    Rustls(
        Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>,
        bool,
    ),
}

impl Client {
    fn connect(server: &Server, how: HalfClose, config: &Arc<rustls::ClientConfig>) -> Client {
        match how {
            HalfClose::OpensslFin => Client::Openssl(common::tls_stream(server)),
            HalfClose::RustlsFin | HalfClose::RustlsCloseNotify => {
                let name = "localhost".try_into().expect("name");
                let conn = rustls::ClientConnection::new(config.clone(), name).expect("client");
                let mut stream = rustls::StreamOwned::new(conn, tcp(server));
                while stream.conn.is_handshaking() {
                    stream
                        .conn
                        .complete_io(&mut stream.sock)
                        .expect("handshake");
                }
                let notify = matches!(how, HalfClose::RustlsCloseNotify);
                Client::Rustls(Box::new(stream), notify)
            }
        }
    }

    /// Writes `bytes` in one go, half-closes, then reads everything until the server closes.
    fn send_half_close_and_read(self, bytes: &[u8]) -> Vec<u8> {
        match self {
            Client::Openssl(mut tls) => {
                tls.write_all(bytes).expect("write");
                tls.get_ref().shutdown(Shutdown::Write).expect("SHUT_WR");
                read_to_close(&mut tls)
            }
            Client::Rustls(mut tls, notify) => {
                tls.write_all(bytes).expect("write");
                if notify {
                    tls.conn.send_close_notify();
                }
                while tls.conn.wants_write() {
                    tls.conn.write_tls(&mut tls.sock).expect("write");
                }
                tls.sock.shutdown(Shutdown::Write).expect("SHUT_WR");
                read_to_close(&mut tls)
            }
        }
    }
}

/// CLIENTS half-closing clients queue their AUTH behind a slow login on the only slot: each
/// FIN is there when its slot comes, and each client gets all N + 2 replies.
fn half_closed_clients_get_every_reply(provider: &str, how: HalfClose) {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = users_file(dir.path());
    let server = start(provider, &users);
    let config = rustls_config();
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| Client::connect(&server, how, &config))
        .collect();
    let mut holder = common::tls_stream(&server);
    holder
        .write_all(&common::encode_command(&[b"AUTH", b"slow", b"slow-pw"]))
        .expect("write");
    common::wait_for(|| server.metric("shardline_login_wait_seconds_count", &[]) == 1.0);
    let readers: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| {
            let bytes = requests("fast", "fast-pw", &format!("k{i}"));
            std::thread::spawn(move || client.send_half_close_and_read(&bytes))
        })
        .collect();
    let want = expected();
    for reader in readers {
        let got = reader.join().expect("reader");
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{provider}, {how:?}"
        );
    }
    let mut reply = [0u8; 5];
    holder.read_exact(&mut reply).expect("holder reply");
    assert_eq!(&reply, b"+OK\r\n");
    assert_eq!(
        server.metric("shardline_logins_total", &[("result", "abandoned")]),
        0.0
    );
    assert_eq!(
        server.metric("shardline_logins_total", &[("result", "accepted")]),
        (CLIENTS + 1) as f64
    );
}

fn openssl_client_fin(provider: &str) {
    half_closed_clients_get_every_reply(provider, HalfClose::OpensslFin);
}

fn rustls_client_fin(provider: &str) {
    half_closed_clients_get_every_reply(provider, HalfClose::RustlsFin);
}

fn rustls_client_close_notify(provider: &str) {
    half_closed_clients_get_every_reply(provider, HalfClose::RustlsCloseNotify);
}

for_each_tls_provider!(
    openssl_client_fin,
    rustls_client_fin,
    rustls_client_close_notify
);

/// `--tls off`: the same requests, half-closed, answered in full, as redis-server answers
/// them (plain TCP, `requirepass`).
#[test]
fn plaintext_half_close_is_answered_as_by_redis() {
    let redis = RedisReference::start(&["--requirepass", "refpass"]);
    let mut reference = TcpStream::connect(redis.addr).expect("connect");
    reference
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    reference
        .write_all(&requests("default", "refpass", "k"))
        .expect("write");
    reference.shutdown(Shutdown::Write).expect("SHUT_WR");
    assert_eq!(read_to_close(&mut reference), expected(), "redis-server");

    let server = Server::start(&["--tls", "off", "--smp", "1"]);
    let mut plain = tcp(&server);
    plain
        .write_all(&requests("default", &server.password, "k"))
        .expect("write");
    plain.shutdown(Shutdown::Write).expect("SHUT_WR");
    assert_eq!(read_to_close(&mut plain), expected(), "shardline --tls off");
}

/// A client that closed its socket (FIN after reading everything it was sent, so no RST at
/// close) while its AUTH waited for the slot: the KeyUpdate probe draws a RST and the login
/// is skipped, not hashed (`--tls-provider openssl`). A bystander still logs in.
#[test]
fn a_closed_client_is_still_skipped_after_the_probe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users = users_file(dir.path());
    let server = start("openssl", &users);
    let mut holder = common::tls_stream(&server);
    let mut leavers: Vec<_> = (0..3).map(|_| RawClient::connect(&server)).collect();
    // A round trip reads what the server sent after the handshake (session tickets): their
    // close is then a FIN, not a RST.
    for leaver in &mut leavers {
        leaver.roundtrip(&[b"PING"], b"-NOAUTH Authentication required.\r\n");
    }
    holder
        .write_all(&common::encode_command(&[b"AUTH", b"slow", b"slow-pw"]))
        .expect("write");
    common::wait_for(|| server.metric("shardline_login_wait_seconds_count", &[]) == 1.0);
    for mut leaver in leavers {
        leaver.send(&[b"AUTH", b"fast", b"fast-pw"]);
        drop(leaver);
    }
    let mut reply = [0u8; 5];
    holder.read_exact(&mut reply).expect("holder reply");
    assert_eq!(&reply, b"+OK\r\n");
    common::wait_for(|| server.metric("shardline_logins_total", &[("result", "abandoned")]) == 3.0);
    let mut bystander = RawClient::connect(&server);
    bystander.roundtrip(&[b"AUTH", b"fast", b"fast-pw"], b"+OK\r\n");
    assert_eq!(
        server.metric("shardline_password_hash_duration_seconds_count", &[]),
        2.0,
        "only the holder and the bystander were hashed"
    );
}
