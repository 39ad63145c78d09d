//! Starts the real `shardline` binary on ephemeral loopback ports for integration tests and
//! drives it with real clients (redis-cli, redis-benchmark).

#![allow(dead_code)]

pub mod reference;
pub mod replies;
pub mod shards;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Makes each named test body `fn name(provider: &str)` a module `name` with two tests,
/// `name::openssl` and `name::rustls`, that run it with that `--tls-provider` value.
#[macro_export]
macro_rules! for_each_tls_provider {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[test]
            fn openssl() {
                super::$name("openssl")
            }

            #[test]
            fn rustls() {
                super::$name("rustls")
            }
        }
    )*};
}

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
        Self::start_configured(dir, args, |_| {})
    }

    /// Starts `shardline` (fresh data dir) with its RLIMIT_NOFILE set to `soft`/`hard` before
    /// exec, as `ulimit -n` in its shell would.
    pub fn start_with_nofile(args: &[&str], soft: u64, hard: u64) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_configured(dir, args, move |command| {
            limit_before_exec(command, libc::RLIMIT_NOFILE, soft, hard, false)
        })
    }

    /// Starts `shardline` (fresh data dir) whose files may not grow past `bytes` (RLIMIT_FSIZE,
    /// SIGXFSZ ignored): a write past it fails with EFBIG, a real OS write error, as a full
    /// disk gives ENOSPC. [`Server::set_file_size_limit`] changes it later.
    pub fn start_with_file_size_limit(args: &[&str], bytes: u64) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_configured(dir, args, move |command| {
            limit_before_exec(
                command,
                libc::RLIMIT_FSIZE,
                bytes,
                libc::RLIM_INFINITY,
                true,
            )
        })
    }

    /// Sets the running server's RLIMIT_FSIZE soft limit (prlimit(2)).
    pub fn set_file_size_limit(&self, bytes: u64) {
        let limit = libc::rlimit {
            rlim_cur: bytes,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: prlimit reads `limit` and writes nothing (old limit pointer is null).
        let rc = unsafe {
            libc::prlimit(
                self.child.id() as libc::pid_t,
                libc::RLIMIT_FSIZE,
                &limit,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
    }

    /// Starts `shardline` again in the data dir of an earlier server, whose users file (and
    /// so `password`) it reuses.
    pub fn restart_in(dir: tempfile::TempDir, args: &[&str], password: &str) -> Server {
        let mut server = Self::start_inner(dir, args, |_| {}, false);
        server.password = password.to_string();
        server
    }

    /// Kills the server with SIGKILL (a crash: no shutdown work runs), waits for it and returns
    /// its data dir.
    pub fn kill9(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir"))
    }

    /// Starts `shardline` using `dir` as its data dir, after `configure` adjusted the command.
    fn start_configured(
        dir: tempfile::TempDir,
        args: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Server {
        // A fresh data dir gets a generated user whose password is printed on stdout.
        let expect_password = !args.contains(&"--users");
        Self::start_inner(dir, args, configure, expect_password)
    }

    fn start_inner(
        dir: tempfile::TempDir,
        args: &[&str],
        configure: impl FnOnce(&mut Command),
        expect_password: bool,
    ) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_shardline"));
        command
            .arg("--bind")
            .arg("127.0.0.1:0")
            .arg("--metrics-bind")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        configure(&mut command);
        let mut child = command.spawn().expect("spawn shardline");
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

    /// Waits (at most 10 s) until the sum [`Server::metric`] gives reaches `at_least`, and
    /// returns the last value read (below `at_least` when the wait timed out).
    pub fn metric_reaching(&self, name: &str, labels: &[(&str, &str)], at_least: f64) -> f64 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let value = self.metric(name, labels);
            if value >= at_least || Instant::now() >= deadline {
                return value;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's log lines so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }

    /// Waits (at most 10 s) until a log line contains `needle`, and returns the log lines
    /// read by then: a line the server wrote may reach the test's reader thread after a reply
    /// the test already has (another shard, another stream).
    pub fn log_reaching(&self, needle: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lines = self.log_lines();
            if lines.iter().any(|line| line.contains(needle)) || Instant::now() >= deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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
    try_http_get(addr, path, Duration::from_secs(10)).expect("GET over HTTP")
}

/// Like [`http_get`], returning the error (connect, send, or no complete answer within
/// `timeout`) instead of panicking.
pub fn try_http_get(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
) -> std::io::Result<(String, String)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((head.to_string(), body.to_string()))
}

/// Runs `promtool check metrics` on an exposition and returns its findings (empty when the
/// text is valid and lint-clean); panics if promtool fails to run or rejects the text.
pub fn promtool_findings(exposition: &str) -> String {
    use std::io::Write;
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus)");
    promtool
        .stdin
        .take()
        .expect("stdin")
        .write_all(exposition.as_bytes())
        .expect("write");
    let out = promtool.wait_with_output().expect("promtool");
    let findings = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool failed: {findings}");
    findings.trim().to_string()
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

/// Runs `shardline --data-dir DIR ARGS` on ephemeral loopback ports, asserts that it refuses
/// to start (exits unsuccessfully within [`START_TIMEOUT`]; one still running then is killed
/// and the test fails), and returns its stderr.
pub fn start_failure(dir: &Path, args: &[&str]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardline"))
        .args(["--bind", "127.0.0.1:0", "--metrics-bind", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run shardline");
    let mut stderr = child.stderr.take().expect("piped stderr");
    // Read concurrently, so a full pipe never keeps the server from exiting.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let deadline = Instant::now() + START_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for shardline") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.join().unwrap_or_default();
    match status {
        Some(status) => assert!(!status.success(), "shardline exited 0: {stderr}"),
        None => panic!("shardline started (still running after {START_TIMEOUT:?}): {stderr}"),
    }
    stderr
}

/// Runs `shardline passwd ARGS` in directory `cwd` with `stdin` as its whole input and no
/// `SHARDLINE_*` variable inherited from the test's environment.
pub fn shardline_passwd(args: &[&std::ffi::OsStr], cwd: &Path, stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut command = Command::new(env!("CARGO_BIN_EXE_shardline"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("SHARDLINE_") {
            command.env_remove(name);
        }
    }
    let mut child = command
        .arg("passwd")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("shardline passwd");
    // A run refused before it reads the password (e.g. too many rounds) may exit first:
    // a broken pipe here is fine, its exit status and stderr tell.
    let _ = child.stdin.take().expect("stdin").write_all(stdin);
    child.wait_with_output().expect("wait")
}

/// Path of a file next to the test sources.
pub fn test_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

/// A TLS connection to `server` trusting its generated certificate, with a 10 s read
/// timeout, for tests that need the OpenSSL stream itself (to send close_notify or not, to
/// see how the server ended the session).
pub fn tls_stream(server: &Server) -> openssl::ssl::SslStream<std::net::TcpStream> {
    let mut builder = openssl::ssl::SslConnector::builder(openssl::ssl::SslMethod::tls_client())
        .expect("connector");
    builder.set_ca_file(server.cert()).expect("ca");
    let tcp = std::net::TcpStream::connect(server.addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    builder
        .build()
        .connect("localhost", tcp)
        .expect("TLS handshake")
}

/// The byte stream under a [`RawClient`]: TLS to shardline, plain TCP to a reference
/// redis-server.
pub trait Transport: std::io::Read + std::io::Write + Send {}
impl<T: std::io::Read + std::io::Write + Send> Transport for T {}

/// A blocking connection speaking raw RESP (TLS to shardline, or plain TCP), for tests that
/// need exact bytes or a connection held open across server events.
pub struct RawClient {
    stream: Box<dyn Transport>,
    /// Bytes read past the end of the last reply [`RawClient::read_reply`] returned.
    pending: Vec<u8>,
}

impl RawClient {
    /// Connects over TLS, trusting the server's generated certificate.
    pub fn connect(server: &Server) -> RawClient {
        Self::try_connect(server).expect("TLS connection")
    }

    /// Like [`RawClient::connect`], returning a failed connect or handshake as an error.
    pub fn try_connect(server: &Server) -> Result<RawClient, String> {
        use openssl::ssl::{SslConnector, SslMethod};
        let mut builder = SslConnector::builder(SslMethod::tls_client()).expect("connector");
        builder.set_ca_file(server.cert()).expect("ca");
        let connector = builder.build();
        let tcp = std::net::TcpStream::connect(server.addr).map_err(|err| err.to_string())?;
        tcp.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let stream = connector
            .connect("localhost", tcp)
            .map_err(|err| format!("TLS handshake: {err}"))?;
        Ok(RawClient {
            stream: Box::new(stream),
            pending: Vec::new(),
        })
    }

    /// Connects over plain TCP (a reference redis-server, or shardline with `--tls off`).
    pub fn plain(addr: SocketAddr) -> RawClient {
        let tcp = std::net::TcpStream::connect(addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        RawClient {
            stream: Box::new(tcp),
            pending: Vec::new(),
        }
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
        self.stream.write_all(&encode_command(args)).expect("write");
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
        let mut filled = self.pending.len().min(len);
        got[..filled].copy_from_slice(&self.pending[..filled]);
        self.pending.drain(..filled);
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
        let mut rest = std::mem::take(&mut self.pending);
        self.stream.read_to_end(&mut rest).is_ok() && rest.is_empty()
    }

    /// Reads one whole RESP2/RESP3 reply and returns its bytes exactly as sent (nested
    /// aggregates included). Panics on EOF or after the 10 s read timeout.
    pub fn read_reply(&mut self) -> Vec<u8> {
        use std::io::Read;
        loop {
            if let Some(end) = resp_reply_len(&self.pending) {
                return self.pending.drain(..end).collect();
            }
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!(
                    "connection closed inside a reply: {:?}",
                    String::from_utf8_lossy(&self.pending)
                ),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) => panic!("reading a reply: {e}"),
            }
        }
    }

    /// Sends `args` as one request and returns its whole reply.
    pub fn request(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(args);
        self.read_reply()
    }
}

/// One request as a RESP array of bulk strings.
pub fn encode_command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Length of the first complete RESP2/RESP3 reply in `buf` (RESP spec: `+ - : _ , # (`
/// lines, `$ = !` blobs with `-1` as null, `* ~ >` aggregates of N items, `%` maps of N
/// pairs), or `None` while it is incomplete.
pub fn resp_reply_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let after = line_end + 2;
    let count = || -> i64 {
        std::str::from_utf8(&buf[1..line_end])
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("bad length line {:?}", String::from_utf8_lossy(buf)))
    };
    match buf.first()? {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(after),
        b'$' | b'=' | b'!' => match usize::try_from(count()) {
            Err(_) => Some(after),
            Ok(n) => (buf.len() >= after + n + 2).then_some(after + n + 2),
        },
        kind @ (b'*' | b'~' | b'>' | b'%') => {
            let per_item = if *kind == b'%' { 2 } else { 1 };
            let items = usize::try_from(count()).map_or(0, |n| n * per_item);
            let mut at = after;
            for _ in 0..items {
                at += resp_reply_len(&buf[at..])?;
            }
            Some(at)
        }
        other => panic!("unknown RESP type byte {:?}", char::from(*other)),
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

/// Sets `resource` to `soft`/`hard` in the child before exec, as `ulimit` in its shell would;
/// with `ignore_sigxfsz` the child also starts with SIGXFSZ ignored (kept across exec), so a
/// write past RLIMIT_FSIZE fails with EFBIG instead of killing it.
fn limit_before_exec(
    command: &mut Command,
    resource: libc::__rlimit_resource_t,
    soft: u64,
    hard: u64,
    ignore_sigxfsz: bool,
) {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: the hook only calls setrlimit and signal (async-signal-safe) on copied values.
    unsafe {
        command.pre_exec(move || {
            if ignore_sigxfsz {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            }
            if libc::setrlimit(resource, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

/// Writes `batches` × 1000 keys `<prefix><batch>:<i>`, each holding `value`, with one MSET
/// per batch (enough keys that a rewrite dumps them in many steps across polls).
pub fn mset_batches(client: &mut RawClient, prefix: &str, batches: usize, value: &[u8]) {
    for batch in 0..batches {
        let keys: Vec<String> = (0..1000).map(|i| format!("{prefix}{batch}:{i}")).collect();
        let mut args: Vec<&[u8]> = vec![b"MSET"];
        for key in &keys {
            args.push(key.as_bytes());
            args.push(value);
        }
        client.roundtrip(&args, b"+OK\r\n");
    }
}

/// The value of field `name` in `client`'s `INFO persistence` reply.
pub fn persistence_field(client: &mut RawClient, name: &str) -> String {
    let info = String::from_utf8_lossy(&client.request(&[b"INFO", b"persistence"])).into_owned();
    info_field(&info, name)
}

/// The value of field `name:` in an INFO reply; panics when it has none.
pub fn info_field(info: &str, name: &str) -> String {
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {info}"))
        .trim()
        .to_string()
}

/// Connects over plain TCP (`--tls off`) and logs in as `default`.
pub fn login_plain(server: &Server) -> RawClient {
    let mut client = RawClient::plain(server.addr);
    client.roundtrip(
        &[b"AUTH", b"default", server.password.as_bytes()],
        b"+OK\r\n",
    );
    client
}

/// The append-only log of shard `shard` in data dir `dir`.
pub fn aof_path(dir: &Path, shard: usize) -> PathBuf {
    dir.join(format!("appendonlydir/shard-{shard}.aof"))
}

/// A plain-TCP client whose failures are values, for crash tests: it must survive the
/// server's death mid-request. `call` is `None` once the connection failed.
pub struct CrashClient {
    stream: std::net::TcpStream,
    pending: Vec<u8>,
}

impl CrashClient {
    /// Connects to `addr` and logs in as `default`; `None` if either fails.
    pub fn open(addr: std::net::SocketAddr, password: &str) -> Option<CrashClient> {
        let stream = std::net::TcpStream::connect(addr).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .ok()?;
        let mut conn = CrashClient {
            stream,
            pending: Vec::new(),
        };
        (conn.call(&[b"AUTH", b"default", password.as_bytes()])? == b"+OK\r\n").then_some(conn)
    }

    /// Sends `args` as one request and returns its whole reply.
    pub fn call(&mut self, args: &[&[u8]]) -> Option<Vec<u8>> {
        use std::io::{Read, Write};
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            out.extend_from_slice(arg);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out).ok()?;
        loop {
            if let Some(end) = resp_reply_len(&self.pending) {
                return Some(self.pending.drain(..end).collect());
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// Writes `count` keys `key:i` = i in pipelined batches of 1000.
pub fn fill_keys(client: &mut RawClient, count: usize) {
    for batch in 0..count.div_ceil(1000) {
        let range = batch * 1000..((batch + 1) * 1000).min(count);
        let mut request = Vec::new();
        for i in range.clone() {
            let (key, value) = (format!("key:{i}"), i.to_string());
            request.extend_from_slice(
                format!(
                    "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
                    key.len(),
                    value.len()
                )
                .as_bytes(),
            );
        }
        client.send_raw(&request);
        assert_eq!(
            client.read_exact_len(5 * range.len()),
            b"+OK\r\n".repeat(range.len())
        );
    }
}

/// Every key `key:i` answers i (GET goes to the key's owner shard: a key left on another
/// shard would answer nil).
pub fn check_keys(client: &mut RawClient, count: usize, what: &str) {
    for batch in 0..count.div_ceil(1000) {
        let range = batch * 1000..((batch + 1) * 1000).min(count);
        let keys: Vec<String> = range.clone().map(|i| format!("key:{i}")).collect();
        let mut args: Vec<&[u8]> = vec![b"MGET"];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        let mut expected = format!("*{}\r\n", range.len()).into_bytes();
        for i in range {
            let v = i.to_string();
            expected.extend_from_slice(format!("${}\r\n{v}\r\n", v.len()).as_bytes());
        }
        assert_eq!(
            client.request(&args),
            expected,
            "{what}: a key is missing or wrong"
        );
    }
}

/// A key named `prefix…` owned by shard `shard` of a 2-shard server.
pub fn key_on(shard: usize, prefix: &str) -> String {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .find(|k| shardline::keyspace::slot::owner_shard(k.as_bytes(), 2) == shard)
        .expect("a key on that shard")
}

/// The value of an integer reply (`:n\r\n`); panics on any other reply.
pub fn int_reply(reply: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(reply);
    text.trim_start_matches(':')
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not an integer reply: {text:?}"))
}

/// A reply as text (lossy UTF-8), for assertions that search it.
pub fn text(reply: Vec<u8>) -> String {
    String::from_utf8_lossy(&reply).into_owned()
}

/// A `user:$6$…` users-file line made by mkpasswd (`rounds` SHA-512-crypt rounds).
pub fn users_line(user: &str, password: &str, rounds: &str) -> String {
    let out = std::process::Command::new("mkpasswd")
        .args(["-m", "sha-512", "-R", rounds, password])
        .output()
        .expect("mkpasswd (package whois)");
    assert!(out.status.success(), "mkpasswd: {out:?}");
    format!("{user}:{}\n", String::from_utf8_lossy(&out.stdout).trim())
}
