//! Starts the real `shardline` binary on ephemeral loopback ports for integration tests and
//! drives it with real clients (redis-cli, redis-benchmark).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a server may take to print its start-up line.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running server; killed on drop.
pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub metrics_addr: SocketAddr,
    pub password: String,
    pub dir: tempfile::TempDir,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `shardline` with a fresh data dir and the extra `args`.
    pub fn start(args: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_in(dir, args)
    }

    /// Starts `shardline` using `dir` as its data dir.
    pub fn start_in(dir: tempfile::TempDir, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_shardline"))
            .arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--metrics-bind")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn shardline");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        for stream in [
            Box::new(stdout) as Box<dyn std::io::Read + Send>,
            Box::new(stderr),
        ] {
            let tx = tx.clone();
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    log.lock().expect("log").push(line.clone());
                    let _ = tx.send(line);
                }
            });
        }
        let deadline = Instant::now() + START_TIMEOUT;
        let (mut addr, mut metrics_addr, mut password) = (None, None, String::new());
        // A fresh data dir gets a generated user whose password is printed on stdout.
        let expect_password = !args.contains(&"--users");
        while addr.is_none() || metrics_addr.is_none() || (expect_password && password.is_empty()) {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match rx.recv_timeout(left) {
                Ok(line) => line,
                Err(_) => panic!(
                    "shardline did not start: {:?}\n{}",
                    child.try_wait(),
                    log.lock().expect("log").join("\n")
                ),
            };
            if let Some(rest) = line.split("password: ").nth(1) {
                password = rest.trim().to_string();
            }
            if let Some(rest) = line.split("listening on ").nth(1) {
                addr = rest.split_whitespace().next().and_then(|a| a.parse().ok());
            }
            if let Some(rest) = line.split("metrics on http://").nth(1) {
                metrics_addr = rest.split('/').next().and_then(|a| a.parse().ok());
            }
        }
        let addr = addr.expect("addr");
        Server {
            child,
            addr,
            metrics_addr: metrics_addr.expect("metrics addr"),
            password,
            dir,
            log,
        }
    }

    pub fn port(&self) -> String {
        self.addr.port().to_string()
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    /// Runs redis-cli over TLS as user `default`; returns its stdout, trimmed.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = self.cli_output(args);
        assert!(out.status.success(), "redis-cli {args:?} failed: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// Runs redis-cli over TLS as user `default` and returns the whole output.
    pub fn cli_output(&self, args: &[&str]) -> Output {
        Command::new("redis-cli")
            .args(["--tls", "--cacert"])
            .arg(self.cert())
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port(),
                "--user",
                "default",
                "--pass",
            ])
            .arg(&self.password)
            .arg("--no-auth-warning")
            .args(args)
            .output()
            .expect("run redis-cli (install redis-tools)")
    }

    /// Fetches `/metrics` and returns the body.
    pub fn scrape(&self) -> String {
        http_get(self.metrics_addr, "/metrics").1
    }

    /// Sum of all samples of `name` whose label set contains every `labels` pair.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        metric_sum(&self.scrape(), name, labels)
    }

    /// The server's log lines so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.0 GET over loopback: (head, body).
pub fn http_get(addr: SocketAddr, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect metrics");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("read");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_string(), body.to_string())
}

/// Sums the samples of `name` in a Prometheus text body whose labels include `labels`.
pub fn metric_sum(body: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, label_text) = match series.split_once('{') {
                Some((m, rest)) => (m, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            if metric != name {
                return None;
            }
            let ok = labels
                .iter()
                .all(|(k, v)| label_text.contains(&format!("{k}=\"{v}\"")));
            if ok {
                value.parse::<f64>().ok()
            } else {
                None
            }
        })
        .sum()
}

/// Whether an executable is on PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Path of a file next to the test sources.
pub fn test_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// A blocking TLS connection speaking raw RESP, for tests that need exact bytes or a
/// connection held open across server events.
pub struct RawClient {
    stream: openssl::ssl::SslStream<std::net::TcpStream>,
}

impl RawClient {
    /// Connects over TLS, trusting the server's generated certificate.
    pub fn connect(server: &Server) -> RawClient {
        use openssl::ssl::{SslConnector, SslMethod};
        let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
        builder.set_ca_file(server.cert()).expect("ca");
        let connector = builder.build();
        let tcp = std::net::TcpStream::connect(server.addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let stream = connector.connect("localhost", tcp).expect("TLS handshake");
        RawClient { stream }
    }

    /// Connects and logs in as user `default` with an inline AUTH.
    pub fn authenticated(server: &Server) -> RawClient {
        let mut client = RawClient::connect(server);
        client.send_raw(format!("AUTH {}\r\n", server.password).as_bytes());
        assert_eq!(client.read_exact_len(5), b"+OK\r\n");
        client
    }

    /// Sends `args` as one RESP multibulk request.
    pub fn send(&mut self, args: &[&[u8]]) {
        use std::io::Write;
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out).expect("write");
    }

    /// Sends raw bytes.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stream.write_all(bytes).expect("write");
    }

    /// Reads until `expected.len()` bytes arrived (or EOF) and returns them.
    pub fn read_exact_len(&mut self, len: usize) -> Vec<u8> {
        use std::io::Read;
        let mut got = vec![0u8; len];
        let mut filled = 0;
        while filled < len {
            match self.stream.read(&mut got[filled..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => filled += n,
            }
        }
        got.truncate(filled);
        got
    }

    /// Sends a request and asserts the exact reply bytes.
    pub fn roundtrip(&mut self, args: &[&[u8]], expected: &[u8]) {
        self.send(args);
        let got = self.read_exact_len(expected.len());
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "reply to {:?}",
            args.iter()
                .map(|a| String::from_utf8_lossy(a))
                .collect::<Vec<_>>()
        );
    }

    /// Reads to EOF; true when the server closed the connection.
    pub fn closed_by_server(&mut self) -> bool {
        use std::io::Read;
        let mut rest = Vec::new();
        self.stream.read_to_end(&mut rest).is_ok() && rest.is_empty()
    }
}

/// The `/proc/PID/task/TID/status` path of the thread named `name` in process `pid` (waits up
/// to 10 s for it to appear).
pub fn thread_status_path(pid: u32, name: &str) -> PathBuf {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let tasks = format!("/proc/{pid}/task");
        for entry in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
            let path = entry.path().join("status");
            let status = std::fs::read_to_string(&path).unwrap_or_default();
            if status.lines().any(|l| l == format!("Name:\t{name}")) {
                return path;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no thread {name} in process {pid}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The thread's `nonvoluntary_ctxt_switches`: how often the kernel preempted it.
pub fn involuntary_switches(status_path: &std::path::Path) -> u64 {
    std::fs::read_to_string(status_path)
        .expect("thread status")
        .lines()
        .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("nonvoluntary_ctxt_switches")
}

/// Polls `condition` every 10 ms until it holds; panics after 10 s.
pub fn wait_for(mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "condition not met within 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}
