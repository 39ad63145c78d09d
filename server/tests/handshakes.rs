//! TLS handshake limits on real sockets: a slow client that keeps sending completes even when
//! its handshake lasts longer than `--handshake-timeout-ms`; a trickle is cut at
//! `--handshake-max-ms`; one that stops after its first byte is cut at the timeout; a client
//! that says nothing at first is not timed, yet gives its place to a newcomer at
//! `--maxclients`; a well-behaved client on the same shard is served throughout.

mod common;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{RawClient, Server};
use openssl::ssl::{SslConnector, SslMethod, SslStream};

/// A socket that writes at most `piece` bytes per call and sleeps `gap` before each write:
/// the client side of a slow handshake.
#[derive(Debug)]
struct Dribble {
    tcp: TcpStream,
    piece: usize,
    gap: Duration,
}

impl Read for Dribble {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tcp.read(buf)
    }
}

impl Write for Dribble {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        std::thread::sleep(self.gap);
        self.tcp.write(&buf[..buf.len().min(self.piece)])
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}

/// Runs a TLS handshake whose every write is cut into `piece`-byte writes `gap` apart;
/// returns the established stream (or the error) and how long the handshake took.
fn dribbled_handshake(
    server: &Server,
    piece: usize,
    gap: Duration,
) -> (Result<SslStream<Dribble>, String>, Duration) {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
    builder.set_ca_file(server.cert()).expect("ca");
    let connector = builder.build();
    let tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let started = Instant::now();
    let stream = connector
        .connect("localhost", Dribble { tcp, piece, gap })
        .map_err(|err| err.to_string());
    (stream, started.elapsed())
}

/// One shard with `provider` and the `extra` options.
fn start(provider: &str, extra: &[&str]) -> Server {
    let mut args = vec!["--tls-provider", provider, "--smp", "1"];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn failed(server: &Server, reason: &str) -> f64 {
    server.metric(
        "shardline_tls_handshakes_failed_total",
        &[("reason", reason)],
    )
}

fn logged_in(server: &Server) -> RawClient {
    let mut client = RawClient::connect(server);
    client.roundtrip(
        &[b"AUTH", b"default", server.password.as_bytes()],
        b"+OK\r\n",
    );
    client
}

fn a_slow_handshake_that_keeps_progressing_completes(provider: &str) {
    let server = start(provider, &["--handshake-timeout-ms", "2000"]);
    let mut bystander = logged_in(&server);
    bystander.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    // The ClientHello (~250-500 bytes) goes out 24 bytes every 250 ms: each gap is far below
    // the 2 s timeout, the whole handshake well above it.
    let (stream, took) = dribbled_handshake(&server, 24, Duration::from_millis(250));
    let mut stream = stream.expect("the slow handshake completes");
    assert!(
        took > Duration::from_millis(2500),
        "{took:?}: not slow enough"
    );
    // Served after it, as any client.
    let auth = format!(
        "*3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n${}\r\n{}\r\n",
        server.password.len(),
        server.password
    );
    stream.write_all(auth.as_bytes()).expect("write");
    let mut reply = [0u8; 5];
    stream.read_exact(&mut reply).expect("read");
    assert_eq!(&reply, b"+OK\r\n");
    bystander.roundtrip(&[b"GET", b"k"], b"$1\r\nv\r\n");
    assert_eq!(failed(&server, "timeout"), 0.0);
    assert_eq!(failed(&server, "max_duration"), 0.0);
}

fn a_trickling_handshake_is_cut_at_the_hard_limit(provider: &str) {
    let server = start(
        provider,
        &[
            "--handshake-timeout-ms",
            "1000",
            "--handshake-max-ms",
            "3000",
        ],
    );
    let mut bystander = logged_in(&server);
    // One byte every 200 ms: progress five times per timeout, yet the ClientHello would
    // take over a minute.
    let trickle = std::thread::spawn({
        let addr = server.addr;
        let cert = server.cert();
        move || {
            let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
            builder.set_ca_file(cert).expect("ca");
            let tcp = TcpStream::connect(addr).expect("connect");
            tcp.set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            let started = Instant::now();
            let dribble = Dribble {
                tcp,
                piece: 1,
                gap: Duration::from_millis(200),
            };
            let outcome = builder.build().connect("localhost", dribble).map(drop);
            (outcome.map_err(|err| err.to_string()), started.elapsed())
        }
    });
    // The shard keeps serving others meanwhile.
    for _ in 0..10 {
        bystander.roundtrip(&[b"PING"], b"+PONG\r\n");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (outcome, took) = trickle.join().expect("trickle thread");
    assert!(outcome.is_err(), "the trickle completed its handshake");
    assert!(
        took >= Duration::from_millis(2900) && took < Duration::from_secs(20),
        "cut after {took:?}"
    );
    assert_eq!(failed(&server, "max_duration"), 1.0);
    assert_eq!(failed(&server, "timeout"), 0.0);
    bystander.roundtrip(&[b"PING"], b"+PONG\r\n");
}

#[test]
fn a_hard_limit_below_the_progress_timeout_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_shardline"))
        .args(["--bind", "127.0.0.1:0", "--metrics-bind", "127.0.0.1:0"])
        .args([
            "--handshake-timeout-ms",
            "5000",
            "--handshake-max-ms",
            "4000",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .expect("run shardline");
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "shardline: --handshake-max-ms (4000) must be at least --handshake-timeout-ms (5000)"
    );
}

/// TLS over an already connected `tcp`, then AUTH and PING; the connection stays open.
fn handshake_and_ping(server: &Server, tcp: TcpStream) -> Result<SslStream<TcpStream>, String> {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
    builder.set_ca_file(server.cert()).expect("ca");
    let mut tls = builder
        .build()
        .connect("localhost", tcp)
        .map_err(|err| err.to_string())?;
    let request = format!("AUTH {}\r\nPING\r\n", server.password);
    tls.write_all(request.as_bytes())
        .map_err(|err| err.to_string())?;
    let mut reply = [0u8; 12];
    tls.read_exact(&mut reply).map_err(|err| err.to_string())?;
    assert_eq!(&reply, b"+OK\r\n+PONG\r\n");
    Ok(tls)
}

/// Whether the server closed `tcp` (EOF or reset) within its read timeout.
fn closed_by_server(tcp: &mut TcpStream) -> bool {
    let mut buf = [0u8; 16];
    match tcp.read(&mut buf) {
        Ok(0) => true,
        Ok(n) => panic!("unexpected {n} bytes"),
        Err(err) => err.kind() == io::ErrorKind::ConnectionReset,
    }
}

fn connect_with_timeout(server: &Server, timeout: Duration) -> TcpStream {
    let tcp = TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(timeout)).expect("timeout");
    tcp
}

fn a_client_silent_past_the_timeout_is_still_served_once_it_speaks(provider: &str) {
    let server = start(provider, &["--handshake-timeout-ms", "200"]);
    let mut bystander = logged_in(&server);
    // Silent for 7 timeouts before its ClientHello, like the first sockets of a client
    // event loop that opens thousands at once.
    let silent = connect_with_timeout(&server, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(1400));
    bystander.roundtrip(&[b"PING"], b"+PONG\r\n");
    handshake_and_ping(&server, silent).expect("served after its silence");
    assert_eq!(failed(&server, "timeout"), 0.0);
}

fn a_client_that_stops_after_its_first_byte_is_cut_at_the_timeout(provider: &str) {
    let server = start(provider, &["--handshake-timeout-ms", "200"]);
    let mut tcp = connect_with_timeout(&server, Duration::from_secs(5));
    // The first byte of a TLS record header: the handshake has begun.
    tcp.write_all(b"\x16").expect("write");
    let started = Instant::now();
    assert!(closed_by_server(&mut tcp), "still open after 5 s");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(190) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(failed(&server, "timeout"), 1.0);
}

fn at_maxclients_the_longest_silent_connection_gives_its_place_to_a_newcomer(provider: &str) {
    let server = start(
        provider,
        &[
            "--maxclients",
            "4",
            // Long enough that a loaded CI machine still opens the newcomer before the silent
            // connections have been silent that long.
            "--handshake-timeout-ms",
            "3000",
        ],
    );
    let closed =
        |reason| server.metric("shardline_connections_closed_total", &[("reason", reason)]);
    let mut bystander = logged_in(&server);
    let mut silent: Vec<TcpStream> = (0..3)
        .map(|_| connect_with_timeout(&server, Duration::from_millis(300)))
        .collect();
    common::wait_for(|| server.metric("shardline_connections_accepted_total", &[]) >= 4.0);

    // Full, and nobody silent for a whole timeout yet: the newcomer is refused at once.
    assert!(RawClient::try_connect(&server).is_err());
    assert_eq!(
        server.metric(
            "shardline_connections_rejected_total",
            &[("reason", "max_clients")]
        ),
        1.0
    );
    assert_eq!(closed("silent_evicted"), 0.0);

    // Past the timeout, each newcomer takes the place of the connection silent the longest.
    std::thread::sleep(Duration::from_millis(3100));
    let _first = handshake_and_ping(
        &server,
        connect_with_timeout(&server, Duration::from_secs(10)),
    )
    .expect("the first newcomer is served");
    assert!(
        closed_by_server(&mut silent[0]),
        "the oldest silent one is closed"
    );
    assert!(!closed_by_server(&mut silent[1]), "the others stay");
    assert_eq!(closed("silent_evicted"), 1.0);
    let _second = handshake_and_ping(
        &server,
        connect_with_timeout(&server, Duration::from_secs(10)),
    )
    .expect("the second newcomer is served");
    assert!(closed_by_server(&mut silent[1]));
    assert!(!closed_by_server(&mut silent[2]));
    assert_eq!(closed("silent_evicted"), 2.0);
    bystander.roundtrip(&[b"PING"], b"+PONG\r\n");
}

for_each_tls_provider!(
    a_slow_handshake_that_keeps_progressing_completes,
    a_trickling_handshake_is_cut_at_the_hard_limit,
    a_client_silent_past_the_timeout_is_still_served_once_it_speaks,
    a_client_that_stops_after_its_first_byte_is_cut_at_the_timeout,
    at_maxclients_the_longest_silent_connection_gives_its_place_to_a_newcomer,
);
