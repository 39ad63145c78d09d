//! End-to-end check of the `/metrics` endpoint: a populated registry served on
//! 127.0.0.1:0, fetched over real HTTP, and linted by `promtool check metrics`; slow,
//! broken and excess clients.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shardline_metrics::{serve, serve_with, EndpointLimits, Metrics, TEXT_CONTENT_TYPE};

/// A registry with every family populated on two shards.
fn populated() -> Metrics {
    let metrics = Metrics::new();
    for id in 0..2 {
        let shard = metrics.shard(id);
        shard.connection_accepted();
        shard.connection_accepted();
        shard.connection_closed("client_quit");
        shard.connection_shed();
        shard.connection_rejected("fd_limit");
        shard.tls_handshake_started();
        shard.tls_handshake_completed(Duration::from_millis(2), false);
        shard.tls_handshake_failed("timeout");
        shard.login("accepted");
        shard.login("rejected");
        shard.login_wait(Duration::from_micros(300));
        shard.login_admission_waited();
        shard.password_hash("yield", Duration::from_micros(1200));
        shard.credentials_cache_hit();
        shard.credentials_cache_miss();
        shard.command("GET");
        shard.command("SET");
        shard.command_error("wrongtype");
        shard.set_password_hash_offload_queue_depth(1);
        shard.bytes_received(64);
        shard.bytes_sent(32);
        shard.record_executor_stats(shardline_metrics::ExecutorStatsDelta {
            task_runtime: Duration::from_millis(10),
            busy: Duration::from_millis(12),
            scheduler_runs: 3,
            tasks_executed: 9,
        });
        shard.record_task_queue_stats(
            "main",
            shardline_metrics::TaskQueueStatsDelta {
                runtime: Duration::from_millis(8),
                selected: 2,
                shares: 1000,
            },
        );
    }
    metrics
}

fn promtool_available() -> bool {
    Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[test]
fn serves_metrics_over_http_and_passes_promtool_lint() {
    let metrics = populated();
    let server = serve("127.0.0.1:0".parse().expect("address"), metrics).expect("bind");
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);

    let agent = ureq::Agent::new_with_defaults();
    let mut response = agent
        .get(&format!("http://{addr}/metrics"))
        .call()
        .expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    assert_eq!(content_type.as_deref(), Some(TEXT_CONTENT_TYPE));
    assert_eq!(
        TEXT_CONTENT_TYPE,
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let body = response.body_mut().read_to_string().expect("body");
    assert!(
        body.contains("shardline_reactor_stalls_count{shard=\"0\"} 0\n"),
        "{body}"
    );
    assert!(
        body.contains("shardline_commands_total{command=\"get\",shard=\"1\"} 1\n"),
        "{body}"
    );
    assert!(
        body.contains("shardline_connections_active{shard=\"0\"} 1\n"),
        "{body}"
    );
    // The process collector's families are served too (and linted below).
    #[cfg(target_os = "linux")]
    for name in [
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "process_max_fds ",
        "process_start_time_seconds ",
        "process_threads ",
        "process_virtual_memory_bytes ",
    ] {
        assert!(body.contains(name), "missing {name}in:\n{body}");
    }

    // Other paths are 404.
    let missing = agent
        .get(&format!("http://{addr}/other"))
        .config()
        .http_status_as_error(false)
        .build()
        .call()
        .expect("GET /other");
    assert_eq!(missing.status(), 404);

    server.shutdown();

    if !promtool_available() {
        eprintln!(
            "SKIPPED promtool lint: `promtool` is not installed (Debian package `prometheus`)"
        );
        return;
    }
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool finishes");
    let lint = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool failed: {lint}");
    assert_eq!(lint.trim(), "", "promtool lint findings");
}

#[test]
fn bind_errors_name_the_address() {
    let first = serve("127.0.0.1:0".parse().expect("address"), Metrics::new()).expect("bind");
    let taken = first.local_addr();
    let err = serve(taken, Metrics::new()).expect_err("port is taken");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert!(
        err.to_string()
            .starts_with(&format!("cannot bind the metrics endpoint to {taken}: ")),
        "{err}"
    );
    first.shutdown();
}

/// Opens `n` connections that each send only the start of a request.
fn half_sent_requests(addr: std::net::SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut stream = TcpStream::connect(addr).expect("connect");
            stream.write_all(b"GET /metr").expect("send");
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            stream
        })
        .collect()
}

/// Asserts the server closed `stream` without answering (EOF, no bytes) within the read
/// timeout.
fn assert_dropped_unanswered(mut stream: TcpStream) {
    let mut got = Vec::new();
    match stream.read_to_end(&mut got) {
        Ok(_) => assert!(got.is_empty(), "{}", String::from_utf8_lossy(&got)),
        Err(err) => assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}"),
    }
}

fn scrape_status(addr: std::net::SocketAddr) -> u16 {
    ureq::Agent::new_with_defaults()
        .get(&format!("http://{addr}/metrics"))
        .call()
        .expect("GET /metrics")
        .status()
        .as_u16()
}

/// Serves with `limits`, opens `slow` half-sent requests, then scrapes. Returns the server,
/// the scrape's status, how long after the first half-sent request it was answered, and the
/// half-sent connections.
fn scrape_behind_half_sent(
    limits: EndpointLimits,
    slow: usize,
) -> (
    shardline_metrics::MetricsServer,
    u16,
    Duration,
    Vec<TcpStream>,
) {
    let server =
        serve_with("127.0.0.1:0".parse().expect("address"), populated(), limits).expect("bind");
    let addr = server.local_addr();
    let started = Instant::now();
    let slow = half_sent_requests(addr, slow);
    let status = scrape_status(addr);
    (server, status, started.elapsed(), slow)
}

#[test]
fn half_sent_requests_time_out_and_a_concurrent_scrape_still_gets_200() {
    let limits = EndpointLimits {
        max_concurrent_scrapes: 32,
        request_timeout: Duration::from_millis(1500),
    };
    let started = Instant::now();
    let (server, status, _, slow) = scrape_behind_half_sent(limits, 20);
    assert_eq!(status, 200);
    for stream in slow {
        assert_dropped_unanswered(stream);
    }
    assert!(started.elapsed() >= limits.request_timeout);
    assert_eq!(scrape_status(server.local_addr()), 200);
    server.shutdown();
}

#[test]
fn scrapes_beyond_the_limit_wait_for_a_slot() {
    let limits = EndpointLimits {
        max_concurrent_scrapes: 2,
        request_timeout: Duration::from_millis(1000),
    };
    // Both slots are taken: the scrape waits in the listen queue until one times out.
    let (server, status, waited, slow) = scrape_behind_half_sent(limits, 2);
    assert_eq!(status, 200);
    assert!(waited >= limits.request_timeout, "{waited:?}");
    for stream in slow {
        assert_dropped_unanswered(stream);
    }
    server.shutdown();
}

#[test]
fn broken_clients_do_not_kill_the_endpoint() {
    let server = serve("127.0.0.1:0".parse().expect("address"), populated()).expect("bind");
    let addr = server.local_addr();
    let exchange = |request: &[u8]| -> String {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let _ = stream.write_all(request);
        let mut got = Vec::new();
        let _ = stream.read_to_end(&mut got);
        String::from_utf8_lossy(&got).into_owned()
    };
    // Not HTTP at all (a TLS ClientHello's first bytes).
    let garbage = exchange(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n");
    assert!(
        garbage.is_empty() || garbage.starts_with("HTTP/1.1 400"),
        "{garbage}"
    );
    // A request head larger than the endpoint accepts.
    let mut huge = b"GET /metrics HTTP/1.1\r\nX-Filler: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 64 * 1024));
    huge.extend_from_slice(b"\r\n\r\n");
    let oversize = exchange(&huge);
    assert!(
        oversize.is_empty() || oversize.starts_with("HTTP/1.1 431"),
        "{oversize}"
    );
    // A client that resets the connection mid-request, and one that closes at once.
    {
        let stream = TcpStream::connect(addr).expect("connect");
        let socket = socket2::SockRef::from(&stream);
        socket.set_linger(Some(Duration::ZERO)).expect("linger");
        (&stream).write_all(b"GET /metrics HT").expect("send");
    }
    drop(TcpStream::connect(addr).expect("connect"));
    // Methods and HEAD keep their answers.
    let post = exchange(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    assert!(
        post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{post}"
    );
    assert!(
        post.to_ascii_lowercase()
            .contains("\r\nallow: get, head\r\n"),
        "{post}"
    );
    let head = exchange(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.ends_with("\r\n\r\n"), "HEAD has no body: {head}");
    // The endpoint still serves.
    assert_eq!(scrape_status(addr), 200);
    server.shutdown();
}
