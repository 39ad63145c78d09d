//! The `/metrics` endpoint, served from its own std thread (never a shard), so that a
//! scrape never runs on a reactor.
//!
//! Uses `tiny_http`. `GET` (or `HEAD`) `/metrics` answers the Prometheus text format 0.0.4
//! with `Content-Type: text/plain; version=0.0.4; charset=utf-8`; other methods on
//! `/metrics` get 405, other paths 404.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use tiny_http::{Header, Method, Request, Response, Server, StatusCode};

use crate::registry::{Metrics, TEXT_CONTENT_TYPE};

/// A running metrics endpoint; built by [`serve`]. Dropping it shuts it down.
pub struct MetricsServer {
    local_addr: SocketAddr,
    server: Arc<Server>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Binds `bind` and serves `metrics` on `GET /metrics` from a new thread named
/// `shardline-metrics`.
///
/// Port 0 picks a free port; read it back with [`MetricsServer::local_addr`].
///
/// # Errors
///
/// An [`io::Error`] naming the address if it cannot be bound (kind preserved, e.g.
/// `AddrInUse`, `PermissionDenied`), or if the thread cannot be started.
pub fn serve(bind: SocketAddr, metrics: Metrics) -> io::Result<MetricsServer> {
    let listener = TcpListener::bind(bind).map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("cannot bind the metrics endpoint to {bind}: {err}"),
        )
    })?;
    let local_addr = listener.local_addr()?;
    let stopping = Arc::new(AtomicBool::new(false));
    // tiny_http starts its own threads: the server is built on the endpoint's thread, after
    // it lowered its priority, so they all inherit it.
    let (ready_tx, ready_rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("shardline-metrics".into())
        .spawn({
            let stopping = Arc::clone(&stopping);
            move || {
                lower_priority();
                match Server::from_listener(listener, None) {
                    Ok(server) => {
                        let server = Arc::new(server);
                        let _ = ready_tx.send(Ok(Arc::clone(&server)));
                        run(&server, &stopping, &metrics);
                    }
                    Err(err) => {
                        let _ = ready_tx.send(Err(err.to_string()));
                    }
                }
            }
        })?;
    let server = ready_rx
        .recv()
        .unwrap_or_else(|_| Err("the metrics thread exited".into()))
        .map_err(|err| {
            io::Error::other(format!(
                "cannot start the metrics endpoint on {local_addr}: {err}"
            ))
        })?;
    tracing::info!("metrics endpoint listening on http://{local_addr}/metrics");
    Ok(MetricsServer {
        local_addr,
        server,
        stopping,
        thread: Some(thread),
    })
}

impl MetricsServer {
    /// The address actually bound (with the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting requests and waits for the serving thread to finish the request in
    /// progress, if any. Also done on drop.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            if thread.join().is_err() {
                tracing::error!("the metrics endpoint thread panicked");
            }
        }
    }
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Nice value of the metrics threads: when one shares a CPU with a shard (every CPU has a
/// shard, or the process is confined to one), the scheduler lets the shard's poll finish
/// before a scrape instead of preempting it mid-poll, which would count as a reactor stall.
const METRICS_THREAD_NICE: libc::c_int = 19;

/// Lowers the calling thread's priority to [`METRICS_THREAD_NICE`]; threads it starts
/// inherit it. Failure only costs the protection, so it is logged, not returned.
fn lower_priority() {
    // SAFETY: setpriority has no memory effects; on Linux `who = 0` with PRIO_PROCESS names
    // the calling thread.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, METRICS_THREAD_NICE) };
    if rc != 0 {
        tracing::warn!(
            "metrics endpoint: cannot lower the thread priority: {}",
            io::Error::last_os_error()
        );
    }
}

fn run(server: &Server, stopping: &AtomicBool, metrics: &Metrics) {
    loop {
        let request = server.recv();
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        match request {
            Ok(request) => handle(request, metrics),
            Err(err) => tracing::warn!("metrics endpoint: accepting a request failed: {err}"),
        }
    }
}

fn header(name: &str, value: &str) -> Option<Header> {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).ok()
}

fn handle(request: Request, metrics: &Metrics) {
    let path = request.url().split('?').next().unwrap_or_default();
    let response = if path != "/metrics" {
        Response::from_string("not found; metrics are at /metrics\n").with_status_code(404)
    } else if !matches!(request.method(), Method::Get | Method::Head) {
        let response = Response::from_string("method not allowed\n").with_status_code(405);
        match header("Allow", "GET, HEAD") {
            Some(allow) => response.with_header(allow),
            None => response,
        }
    } else {
        match metrics.encode_text() {
            Ok(body) => {
                let response = Response::from_data(body).with_status_code(StatusCode(200));
                match header("Content-Type", TEXT_CONTENT_TYPE) {
                    Some(content_type) => response.with_header(content_type),
                    None => response,
                }
            }
            Err(err) => {
                tracing::warn!("metrics endpoint: encoding failed: {err}");
                Response::from_string(format!("encoding metrics failed: {err}\n"))
                    .with_status_code(500)
            }
        }
    };
    if let Err(err) = request.respond(response) {
        tracing::debug!("metrics endpoint: writing the response failed: {err}");
    }
}
