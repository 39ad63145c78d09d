//! A reference redis-server 7 (the Debian package) on a loopback port, for differential tests
//! that send the same requests to shardline and to Redis and compare the reply bytes.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Start attempts: the port is picked free, but another process may take it before
/// redis-server binds it.
const ATTEMPTS: usize = 5;
/// How long one redis-server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running redis-server without persistence (`--save '' --appendonly no`), plain TCP on
/// 127.0.0.1; killed on drop.
pub struct RedisReference {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl RedisReference {
    /// Starts redis-server with the extra config `args` (e.g. `["--databases", "1"]`);
    /// panics when it cannot start (install the `redis-server` package).
    pub fn start(args: &[&str]) -> RedisReference {
        let free = || {
            TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("pick a free port")
                .port()
        };
        Self::start_with(|_| Some(free()), args)
    }

    /// Like [`RedisReference::start`], on a port of `ports` that is free now (for tests that
    /// must keep the reference inside a port range set aside for them).
    pub fn start_in_ports(ports: std::ops::Range<u16>, args: &[&str]) -> RedisReference {
        let mut candidates = ports.filter(|port| TcpListener::bind(("127.0.0.1", *port)).is_ok());
        Self::start_with(|_| candidates.next(), args)
    }

    /// Starts redis-server on the port `port(attempt)` gives, up to [`ATTEMPTS`] times.
    fn start_with(mut port: impl FnMut(usize) -> Option<u16>, args: &[&str]) -> RedisReference {
        for attempt in 0..ATTEMPTS {
            let Some(port) = port(attempt) else {
                break;
            };
            let dir = tempfile::tempdir().expect("tempdir");
            let mut child = Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .arg("--dir")
                .arg(dir.path())
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server (install the redis-server package)");
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let deadline = Instant::now() + START_TIMEOUT;
            while Instant::now() < deadline {
                if TcpStream::connect(addr).is_ok() {
                    return RedisReference {
                        child,
                        addr,
                        _dir: dir,
                    };
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break; // most likely the port was taken meanwhile: try another
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start in {ATTEMPTS} attempts");
    }
}

impl Drop for RedisReference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
