//! Flow control over TLS: a client may write its whole pipeline before it reads a reply;
//! unwritten replies queue in memory up to `--client-output-buffer-limit`, and a client over
//! the limit is closed without disturbing another client of the same shard.

mod common;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{encode_command, RawClient, Server};
use shardline::keyspace::slot::owner_shard;

fn authenticated(server: &Server) -> RawClient {
    let mut client = RawClient::connect(server);
    client.send_raw(format!("AUTH {}\r\n", server.password).as_bytes());
    assert_eq!(client.read_exact_len(5), b"+OK\r\n");
    client
}

/// The shard serving `client`, from its CLIENT INFO line.
fn shard_of(client: &mut RawClient) -> String {
    client.send(&[b"CLIENT", b"INFO"]);
    let header = read_line(client);
    let len: usize = header[1..].trim().parse().expect("bulk length");
    let body = String::from_utf8(client.read_exact_len(len + 2)).expect("utf-8");
    field(&body, "shard").to_owned()
}

fn field<'a>(info: &'a str, name: &str) -> &'a str {
    info.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name}= in {info:?}"))
}

fn read_line(client: &mut RawClient) -> String {
    let mut line = Vec::new();
    while !line.ends_with(b"\r\n") {
        let byte = client.read_exact_len(1);
        assert_eq!(byte.len(), 1, "EOF in the middle of a line: {line:?}");
        line.extend_from_slice(&byte);
    }
    String::from_utf8(line).expect("utf-8")
}

/// A client on the same shard as `of`.
fn client_on_shard_of(server: &Server, of: &mut RawClient) -> RawClient {
    let shard = shard_of(of);
    for _ in 0..64 {
        let mut other = authenticated(server);
        if shard_of(&mut other) == shard {
            return other;
        }
    }
    panic!("no connection landed on shard {shard} in 64 tries");
}

/// Receive buffer of the test's flooding clients, in bytes. Set before connecting, it stops
/// the kernel from growing it (loopback may otherwise buffer tens of MiB of replies).
const CLIENT_RCVBUF: usize = 256 * 1024;

/// A blocking TLS stream with a small receive buffer, a write timeout and large-block reads
/// (`RawClient` has none of these).
fn tls_stream(server: &Server) -> openssl::ssl::SslStream<std::net::TcpStream> {
    use openssl::ssl::{SslConnector, SslMethod};
    let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
    builder.set_ca_file(server.cert()).expect("ca");
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket
        .set_recv_buffer_size(CLIENT_RCVBUF)
        .expect("SO_RCVBUF");
    socket.connect(&server.addr.into()).expect("connect");
    let tcp: std::net::TcpStream = socket.into();
    // On a server that stops reading while its replies are blocked, the writes below would
    // wait forever: fail instead.
    tcp.set_write_timeout(Some(Duration::from_secs(30)))
        .expect("write timeout");
    tcp.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    let mut stream = builder
        .build()
        .connect("localhost", tcp)
        .expect("TLS handshake");
    stream
        .write_all(format!("AUTH {}\r\n", server.password).as_bytes())
        .expect("AUTH");
    let mut ok = [0u8; 5];
    stream.read_exact(&mut ok).expect("AUTH reply");
    assert_eq!(&ok, b"+OK\r\n");
    stream
}

/// Keeps a second client busy with SET/GET round trips until `done`; returns how many it made.
/// Panics (failing the test) if one reply is wrong or does not come within the read timeout.
fn well_behaved_client(
    mut client: RawClient,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<u32> {
    std::thread::spawn(move || {
        let mut rounds = 0u32;
        while !done.load(Ordering::Relaxed) || rounds == 0 {
            let value = format!("v{rounds}");
            client.roundtrip(&[b"SET", b"fc:bystander", value.as_bytes()], b"+OK\r\n");
            let expected = format!("${}\r\n{value}\r\n", value.len());
            client.roundtrip(&[b"GET", b"fc:bystander"], expected.as_bytes());
            rounds += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
        rounds
    })
}

#[test]
fn a_million_gets_written_before_reading_all_get_their_replies() {
    const REQUESTS: usize = 1_000_000;
    let server = Server::start(&["--smp", "2"]);
    let value = vec![b'v'; 100];
    // One key per shard, so replies come both from this shard and across the shard hop.
    let keys: Vec<String> = (0..2)
        .map(|shard| {
            (0..)
                .map(|i| format!("fc:key{i}"))
                .find(|k| owner_shard(k.as_bytes(), 2) == shard)
                .expect("key")
        })
        .collect();
    let mut setup = authenticated(&server);
    for key in &keys {
        setup.roundtrip(&[b"SET", key.as_bytes(), &value], b"+OK\r\n");
    }
    let bystander = client_on_shard_of(&server, &mut setup);
    let done = Arc::new(AtomicBool::new(false));
    let bystander = well_behaved_client(bystander, done.clone());

    let mut requests = Vec::with_capacity(REQUESTS * 30);
    for i in 0..REQUESTS {
        requests.extend_from_slice(&encode_command(&[b"GET", keys[i % 2].as_bytes()]));
    }
    let mut stream = tls_stream(&server);
    let started = Instant::now();
    stream
        .write_all(&requests)
        .expect("the server keeps reading while its replies wait (write timed out)");
    let mut reply = b"$100\r\n".to_vec();
    reply.extend_from_slice(&value);
    reply.extend_from_slice(b"\r\n");
    let mut buf = vec![0u8; reply.len() * 4096];
    let mut received = 0usize;
    while received < REQUESTS {
        let want = (REQUESTS - received).min(4096) * reply.len();
        stream
            .read_exact(&mut buf[..want])
            .unwrap_or_else(|err| panic!("after {received} replies: {err}"));
        for (n, got) in buf[..want].chunks(reply.len()).enumerate() {
            assert_eq!(got, &reply[..], "reply {}", received + n);
        }
        received += want / reply.len();
    }
    let took = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let rounds = bystander
        .join()
        .expect("the other client was served throughout");
    eprintln!("{REQUESTS} GETs written before reading: {took:?}; other client: {rounds} rounds");
    // Nothing more is owed: the next reply is PING's.
    stream.write_all(b"PING\r\n").expect("ping");
    let mut pong = [0u8; 7];
    stream.read_exact(&mut pong).expect("pong");
    assert_eq!(&pong, b"+PONG\r\n");
}

/// Sends `count` GETs of `key` without reading, then waits until the server closed the
/// connection; returns how many reply bytes arrived before the close.
fn flood_without_reading(server: &Server, key: &[u8], count: usize, read_after: Duration) -> usize {
    let mut stream = tls_stream(server);
    let request = encode_command(&[b"GET", key]);
    for _ in 0..count {
        // The server closes us mid-way: later writes may fail, which is the point.
        if stream.write_all(&request).is_err() {
            break;
        }
    }
    std::thread::sleep(read_after);
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return total,
            Ok(n) => total += n,
        }
    }
}

#[test]
fn a_client_over_the_hard_output_limit_is_closed_and_counted() {
    let server = Server::start(&["--smp", "1", "--client-output-buffer-limit", "1mb 0 0"]);
    let mut setup = authenticated(&server);
    let big = vec![b'x'; 64 * 1024];
    setup.roundtrip(&[b"SET", b"fc:big", &big], b"+OK\r\n");
    setup.roundtrip(
        &[b"CONFIG", b"GET", b"client-output-buffer-limit"],
        // Redis's form: every class (shardline has clients of the `normal` one only).
        b"*2\r\n$26\r\nclient-output-buffer-limit\r\n$73\r\nnormal 1048576 0 0 slave \
          268435456 67108864 60 pubsub 33554432 8388608 60\r\n",
    );
    let closed = |s: &Server| {
        s.metric(
            "shardline_connections_closed_total",
            &[("reason", "output_buffer_limit")],
        )
    };
    let before = closed(&server);
    let done = Arc::new(AtomicBool::new(false));
    let bystander = well_behaved_client(authenticated(&server), done.clone());
    // 1000 × 64 KiB = 64 MiB of replies for a client that reads none of them.
    let received = flood_without_reading(&server, b"fc:big", 1000, Duration::from_millis(500));
    done.store(true, Ordering::Relaxed);
    bystander
        .join()
        .expect("the other client was served throughout");
    assert!(
        received < 64 * 1024 * 1000,
        "closed before every reply: got {received} bytes"
    );
    common::wait_for(|| closed(&server) == before + 1.0);
    common::wait_for(|| {
        server
            .log_lines()
            .iter()
            .any(|l| l.contains("closed for overcoming its output buffer limit"))
    });
    // The shard's output-buffer gauge drops back when the client is gone.
    common::wait_for(|| server.metric("shardline_client_output_buffer_bytes", &[]) == 0.0);
    setup.roundtrip(&[b"PING"], b"+PONG\r\n");
}

#[test]
fn a_client_over_the_soft_output_limit_for_its_seconds_is_closed() {
    let server = Server::start(&["--smp", "1", "--client-output-buffer-limit", "0 1mb 1"]);
    let mut setup = authenticated(&server);
    let big = vec![b'x'; 64 * 1024];
    setup.roundtrip(&[b"SET", b"fc:big", &big], b"+OK\r\n");
    let before = server.metric(
        "shardline_connections_closed_total",
        &[("reason", "output_buffer_limit")],
    );
    // Over the soft limit but under no hard one: closed only once it stayed over for more
    // than 1 s and the connection's loop sees it again (the next request does).
    let mut stream = tls_stream(&server);
    let request = encode_command(&[b"GET", b"fc:big"]);
    for _ in 0..200 {
        stream.write_all(&request).expect("write");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        server.metric(
            "shardline_connections_closed_total",
            &[("reason", "output_buffer_limit")],
        ),
        before,
        "closed before the soft seconds passed"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let _ = stream.write_all(&request);
    common::wait_for(|| {
        server.metric(
            "shardline_connections_closed_total",
            &[("reason", "output_buffer_limit")],
        ) == before + 1.0
    });
}

#[test]
fn unwritten_replies_show_in_client_info_and_the_shard_gauge() {
    let server = Server::start(&["--smp", "1"]);
    let mut setup = authenticated(&server);
    let big = vec![b'x'; 1024 * 1024];
    setup.roundtrip(&[b"SET", b"fc:big", &big], b"+OK\r\n");
    // 32 MiB of replies, far more than the socket buffers hold, then CLIENT INFO: its line
    // is made while most of them still wait in the server.
    let mut client = tls_stream(&server);
    let mut batch = Vec::new();
    for _ in 0..32 {
        batch.extend_from_slice(&encode_command(&[b"GET", b"fc:big"]));
    }
    client.write_all(&batch).expect("write");
    // Socket buffers take ~8 MiB (the server's send buffer and our receive buffer): wait until
    // the rest waits in the server before reading anything.
    common::wait_for(|| {
        server.metric("shardline_client_output_buffer_bytes", &[]) >= 24.0 * 1024.0 * 1024.0
    });
    let gauge = server.metric("shardline_client_output_buffer_bytes", &[]);
    // CLIENT INFO only now, and nothing read until it ran: the server reads while its writes
    // wait, so it runs with the replies still unwritten. (Sent with the GETs, it sometimes ran
    // only after they had drained: omem=0 in about one run in ten under load.)
    let client_calls = |s: &Server| s.metric("shardline_commands_total", &[("command", "client")]);
    let calls_before = client_calls(&server);
    client
        .write_all(&encode_command(&[b"CLIENT", b"INFO"]))
        .expect("write");
    common::wait_for(|| client_calls(&server) > calls_before);
    let mut reply = b"$1048576\r\n".to_vec();
    reply.extend_from_slice(&big);
    reply.extend_from_slice(b"\r\n");
    let mut got = vec![0u8; reply.len()];
    for n in 0..32 {
        client.read_exact(&mut got).expect("reply");
        assert!(got == reply, "reply {n}");
    }
    let mut info = Vec::new();
    let mut byte = [0u8; 1];
    while !info.ends_with(b"\n\r\n") {
        client.read_exact(&mut byte).expect("CLIENT INFO reply");
        info.push(byte[0]);
    }
    let info = String::from_utf8(info).expect("utf-8");
    let omem: u64 = field(&info, "omem").parse().expect("omem");
    assert!(
        (8 * 1024 * 1024..32 * 1024 * 1024 + 1024).contains(&omem),
        "omem={omem} (gauge was {gauge})"
    );
    common::wait_for(|| server.metric("shardline_client_output_buffer_bytes", &[]) == 0.0);
}
