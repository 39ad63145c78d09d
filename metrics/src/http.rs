//! The `/metrics` endpoint, served from its own std thread (never a shard), so that a
//! scrape never runs on a reactor.
//!
//! hyper's HTTP/1 server on a current-thread tokio runtime owned by that thread. `GET` (or
//! `HEAD`) `/metrics` answers the Prometheus text format 0.0.4 with `Content-Type:
//! text/plain; version=0.0.4; charset=utf-8`; other methods on `/metrics` get 405, other
//! paths 404. The endpoint is built to outlive hostile clients and resource exhaustion:
//!
//! * one request per connection (`Connection: close`), and the whole exchange — reading the
//!   request, encoding, writing the response — must end within
//!   [`EndpointLimits::request_timeout`], else the connection is dropped (a half-sent
//!   request holds a slot and a descriptor only that long);
//! * at most [`EndpointLimits::max_concurrent_scrapes`] connections are served at once;
//!   further ones wait in the listen queue until a slot frees;
//! * accept(2) errors — EMFILE/ENFILE when the process or system is out of descriptors —
//!   are retried with backoff (10 ms doubling to 1 s, never spinning) and logged at most
//!   once per 10 s; the endpoint answers again as soon as descriptors come back;
//! * a panic while encoding answers 500; a panic elsewhere in a connection's task ends only
//!   that connection (the runtime catches it).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::registry::{Metrics, TEXT_CONTENT_TYPE};
use crate::throttle::LogThrottle;

/// Limits of the `/metrics` endpoint (`--metrics-max-concurrent-scrapes`,
/// `--metrics-request-timeout-ms` in the server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointLimits {
    /// Connections served at once (each serves one request); more wait in the listen queue.
    /// At least 1.
    pub max_concurrent_scrapes: usize,
    /// Longest one connection may take, from accept to the last byte of the response.
    pub request_timeout: Duration,
}

impl Default for EndpointLimits {
    /// 32 connections, 5 s each.
    fn default() -> Self {
        Self {
            max_concurrent_scrapes: 32,
            request_timeout: Duration::from_secs(5),
        }
    }
}

/// Largest request head accepted, in bytes (hyper's minimum buffer); longer heads get 431.
const MAX_REQUEST_HEAD_BYTES: usize = 8192;
/// Backoff after a failed accept(2): starts here, doubles per consecutive failure…
const MIN_ACCEPT_BACKOFF: Duration = Duration::from_millis(10);
/// …up to this.
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);
/// At most one log line about failing accepts per this period.
const ACCEPT_ERROR_LOG_PERIOD: Duration = Duration::from_secs(10);

/// Produces the exposition body.
type Encoder = Arc<dyn Fn() -> prometheus::Result<Vec<u8>> + Send + Sync>;

/// A running metrics endpoint; built by [`serve`]. Dropping it shuts it down.
pub struct MetricsServer {
    local_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// [`serve_with`] with the default [`EndpointLimits`].
///
/// # Errors
///
/// As [`serve_with`].
pub fn serve(bind: SocketAddr, metrics: Metrics) -> io::Result<MetricsServer> {
    serve_with(bind, metrics, EndpointLimits::default())
}

/// Binds `bind` and serves `metrics` on `GET /metrics` from a new thread named
/// `shardline-metrics`, within `limits`.
///
/// Port 0 picks a free port; read it back with [`MetricsServer::local_addr`].
///
/// # Errors
///
/// An [`io::Error`] naming the address if it cannot be bound (kind preserved, e.g.
/// `AddrInUse`, `PermissionDenied`), or if the thread or its runtime cannot be started.
pub fn serve_with(
    bind: SocketAddr,
    metrics: Metrics,
    limits: EndpointLimits,
) -> io::Result<MetricsServer> {
    let listener = std::net::TcpListener::bind(bind).map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("cannot bind the metrics endpoint to {bind}: {err}"),
        )
    })?;
    start(listener, limits, Arc::new(move || metrics.encode_text()))
}

fn start(
    listener: std::net::TcpListener,
    limits: EndpointLimits,
    encode: Encoder,
) -> io::Result<MetricsServer> {
    let local_addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let (stop_tx, stop_rx) = oneshot::channel();
    let (ready_tx, ready_rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("shardline-metrics".into())
        .spawn(move || {
            lower_priority();
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    let _ = ready_tx.send(Err(err));
                    return;
                }
            };
            runtime.block_on(async move {
                let listener = match TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(err) => {
                        let _ = ready_tx.send(Err(err));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                // Stopping drops the accept loop wherever it waits; dropping the runtime
                // then drops the connections in progress.
                futures_lite::future::or(accept_loop(listener, limits, encode), async {
                    let _ = stop_rx.await;
                })
                .await;
            });
        })?;
    ready_rx
        .recv()
        .unwrap_or_else(|_| Err(io::Error::other("the metrics thread exited")))
        .map_err(|err| {
            io::Error::other(format!(
                "cannot start the metrics endpoint on {local_addr}: {err}"
            ))
        })?;
    tracing::info!("metrics endpoint listening on http://{local_addr}/metrics");
    Ok(MetricsServer {
        local_addr,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

impl MetricsServer {
    /// The address actually bound (with the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting, drops the connections in progress and waits for the thread to end.
    /// Also done on drop.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
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

/// Nice value of the metrics thread: when it shares a CPU with a shard (every CPU has a
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

/// Takes a slot, then accepts one connection and serves it on its own task; forever.
async fn accept_loop(listener: TcpListener, limits: EndpointLimits, encode: Encoder) {
    let slots = Arc::new(Semaphore::new(limits.max_concurrent_scrapes.max(1)));
    let mut throttle = LogThrottle::new(ACCEPT_ERROR_LOG_PERIOD);
    let mut backoff = MIN_ACCEPT_BACKOFF;
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return; // The semaphore is never closed.
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                backoff = MIN_ACCEPT_BACKOFF;
                if let Some(failed) = throttle.flush(Instant::now()) {
                    tracing::info!(
                        "metrics endpoint: accepting again ({failed} more failed accepts since \
                         the last report)"
                    );
                }
                tokio::spawn(serve_connection(
                    stream,
                    slot,
                    encode.clone(),
                    limits.request_timeout,
                ));
            }
            Err(err) => {
                drop(slot);
                if let Some(suppressed) = throttle.event(Instant::now()) {
                    tracing::warn!(
                        "metrics endpoint: accept failed: {err}; retrying with backoff up to \
                         {MAX_ACCEPT_BACKOFF:?} (reported at most every {}s; {suppressed} more \
                         since the last report)",
                        ACCEPT_ERROR_LOG_PERIOD.as_secs()
                    );
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_ACCEPT_BACKOFF);
            }
        }
    }
}

/// Serves the one request of `stream` within `timeout`, holding `_slot` until done.
async fn serve_connection(
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    encode: Encoder,
    timeout: Duration,
) {
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        let response = respond(request.method(), request.uri().path(), &*encode);
        async move { Ok::<_, Infallible>(response) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .max_buf_size(MAX_REQUEST_HEAD_BYTES)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    match tokio::time::timeout(timeout, connection).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::debug!("metrics endpoint: connection failed: {err}"),
        Err(_) => tracing::debug!(
            "metrics endpoint: request not answered within {timeout:?}; connection dropped"
        ),
    }
}

fn text_response(status: StatusCode, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The response to `method path`; `encode` produces the exposition.
fn respond(
    method: &Method,
    path: &str,
    encode: &(dyn Fn() -> prometheus::Result<Vec<u8>> + Send + Sync),
) -> Response<Full<Bytes>> {
    if path != "/metrics" {
        return text_response(
            StatusCode::NOT_FOUND,
            "not found; metrics are at /metrics\n",
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let mut response = text_response(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match catch_unwind(AssertUnwindSafe(encode)) {
        Ok(Ok(body)) => {
            let mut response = text_response(StatusCode::OK, body);
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_CONTENT_TYPE));
            response
        }
        Ok(Err(err)) => {
            tracing::warn!("metrics endpoint: encoding failed: {err}");
            text_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("encoding metrics failed: {err}\n"),
            )
        }
        Err(_) => {
            tracing::error!("metrics endpoint: encoding the metrics panicked");
            text_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "encoding metrics failed: internal error\n",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn get(addr: SocketAddr) -> String {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("send");
        let mut text = String::new();
        stream.read_to_string(&mut text).expect("read");
        text
    }

    #[test]
    fn a_panicking_encoder_answers_500_and_the_endpoint_keeps_serving() {
        let calls = Arc::new(AtomicUsize::new(0));
        let encode: Encoder = {
            let calls = calls.clone();
            Arc::new(move || {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    panic!("injected encoder panic");
                }
                Ok(b"up 1\n".to_vec())
            })
        };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let server = start(listener, EndpointLimits::default(), encode).expect("start");
        let first = get(server.local_addr());
        assert!(
            first.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
            "{first}"
        );
        assert!(
            first.ends_with("\r\n\r\nencoding metrics failed: internal error\n"),
            "{first}"
        );
        let second = get(server.local_addr());
        assert!(second.starts_with("HTTP/1.1 200 OK\r\n"), "{second}");
        assert!(second.ends_with("\r\n\r\nup 1\n"), "{second}");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        server.shutdown();
    }
}
