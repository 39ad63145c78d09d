//! The accept loop of a shard: the process-wide client limit (`--maxclients`, Redis 7
//! semantics) and running out of file descriptors without spinning.
//!
//! Redis counts clients across the whole server, so the count is one atomic in
//! [`crate::server::Shared`]: a connection holds a [`ClientSlot`] from accept to close. When
//! the server is full, a TLS connection of this shard that has sent nothing for
//! `--handshake-timeout-ms` gives its place to the newcomer
//! ([`crate::connection::SilentConnections`]); with none, the newcomer is refused at once. With `--tls off` it first gets
//! `-ERR max number of clients reached`, as from Redis. On a TLS port nothing can be said
//! before a handshake, and handshaking only to refuse would spend CPU on exactly the clients
//! being shed, so the connection is just closed (the client sees its handshake fail at
//! once); Redis 7 behaves the same, since its plaintext error write on a TLS connection that
//! has not handshaken fails.
//!
//! Out of descriptors, accept(2) fails with EMFILE (ENFILE when the whole system is out)
//! at once, whether or not a connection waits, and leaves waiting connections in the listen
//! queue: retrying would spin, and the clients would hang until their own timeouts. The
//! shard then refuses the waiting connections as above, each accepted on a descriptor given
//! up from the pool of spares ([`SpareDescriptors`]). Since accept(2) cannot be waited on
//! while it fails at once, it looks at its queue every 50 ms until the spares are all back
//! and one more descriptor is free, then goes back to accepting. If no spare is left to give
//! up, it backs off (10 ms doubling to 1 s). Refusals are counted in
//! `shardline_connections_rejected_total{reason}` and INFO's `rejected_connections`, and
//! logged at most once per 10 s per shard with the number refused since the previous line.

mod clients;
mod spare;

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::GlommioError;
use shardline_metrics::labels::reject_reason;
use shardline_metrics::LogThrottle;
use socket2::{SockRef, Socket};
use tracing::{info, warn};

use crate::listener::into_glommio;
use crate::shard::Shard;
pub use clients::{ClientSlot, ClientSlots};
pub use spare::{Drained, SpareDescriptors};

/// What a client over `--maxclients` (or refused for lack of descriptors) reads with
/// `--tls off` (Redis 7 networking.c, `acceptCommonHandler`).
pub const MAX_CLIENTS_ERROR: &[u8] = b"-ERR max number of clients reached\r\n";

/// At most one log line about refused connections per shard per this period.
const REFUSAL_LOG_PERIOD: Duration = Duration::from_secs(10);
/// Pause after an accept failure that could not be drained: starts here, doubles…
const MIN_BACKOFF: Duration = Duration::from_millis(10);
/// …up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// While out of descriptors, how often the listen queue is looked at (accept(2) cannot be
/// waited on then: it fails at once, whether or not a connection waits).
const OUT_OF_DESCRIPTORS_POLL: Duration = Duration::from_millis(50);
/// Waiting connections refused in one go before the loop yields to other tasks.
const DRAIN_BATCH: usize = 16;

/// Accepts connections on `socket` (this shard's listening socket) until shutdown, serving
/// each within `--maxclients` and refusing the rest as described in the module docs.
pub async fn accept_loop(shard: Rc<Shard>, socket: Socket) {
    let listen_fd = socket.as_raw_fd();
    let listener = into_glommio(socket);
    let mut refusals = Refusals::new(shard.clone(), listen_fd);
    let shutdown = &shard.shared.shutdown;
    let silence_evictable = Duration::from_millis(shard.shared.config.handshake_timeout_ms);
    while !shutdown.is_requested() {
        if let Some(errno) = refusals.out_of_descriptors {
            let pause = refusals.refuse_waiting(errno);
            if !pause.is_zero() {
                futures_lite::future::or(glommio::timer::sleep(pause), shutdown.wait()).await;
            }
            glommio::yield_if_needed().await;
            continue;
        }
        let accepted = futures_lite::future::or(async { Some(listener.accept().await) }, async {
            shutdown.wait().await;
            None
        })
        .await;
        match accepted {
            None => break,
            Some(Ok(stream)) => match ClientSlot::take(&shard.shared).or_else(|| {
                shard
                    .silent
                    .evict_longest_silent(silence_evictable, Instant::now())
            }) {
                Some(slot) => {
                    let serve = crate::connection::serve(shard.clone(), stream, slot);
                    shard.spawn_main("connection", serve).detach();
                }
                None => {
                    // SAFETY: `stream` owns the descriptor and outlives the borrow.
                    let fd = unsafe { BorrowedFd::borrow_raw(stream.as_raw_fd()) };
                    refusals.refuse(fd, reject_reason::MAX_CLIENTS);
                    refusals.report(1, || {
                        format!(
                            "max number of clients reached (--maxclients {}); closing new \
                             connections at once",
                            shard.shared.clients.max()
                        )
                    });
                }
            },
            Some(Err(err)) => {
                let pause = refusals.accept_failed(&err);
                futures_lite::future::or(glommio::timer::sleep(pause), shutdown.wait()).await;
            }
        }
        // A flood of connections must not keep the shard past its task quota.
        glommio::yield_if_needed().await;
    }
}

/// Refusing connections and reporting it: the out-of-descriptors state, the log throttle,
/// backoff.
struct Refusals {
    shard: Rc<Shard>,
    listen_fd: RawFd,
    /// Set while the process is out of descriptors: the errno accept(2) failed with.
    out_of_descriptors: Option<i32>,
    /// The next round of [`Refusals::refuse_waiting`] logs even if it refused nobody.
    announce: bool,
    throttle: LogThrottle,
    unreported: u64,
    backoff: Duration,
}

impl Refusals {
    fn new(shard: Rc<Shard>, listen_fd: RawFd) -> Self {
        Self {
            shard,
            listen_fd,
            out_of_descriptors: None,
            announce: false,
            throttle: LogThrottle::new(REFUSAL_LOG_PERIOD),
            unreported: 0,
            backoff: MIN_BACKOFF,
        }
    }

    /// Refuses the accepted connection `fd` (the caller closes it): the Redis error with
    /// `--tls off`, and the counters.
    fn refuse(&self, fd: BorrowedFd<'_>, reason: &'static str) {
        if self.shard.tls.is_none() {
            // A fresh socket's send buffer is empty: this either fits at once or is dropped.
            let _ = SockRef::from(&fd)
                .send_with_flags(MAX_CLIENTS_ERROR, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL);
        }
        self.shard.metrics.connection_rejected(reason);
        let info = &self.shard.info;
        info.rejected_connections
            .set(info.rejected_connections.get() + 1);
    }

    /// Counts `refused` connections and logs `cause` with the count when the throttle allows.
    fn report(&mut self, refused: u64, cause: impl FnOnce() -> String) {
        self.unreported += refused;
        if self.throttle.event(Instant::now()).is_some() {
            warn!(
                "shard {}: {} ({} refused since the last report; reported at most every {} s)",
                self.shard.id,
                cause(),
                std::mem::take(&mut self.unreported),
                REFUSAL_LOG_PERIOD.as_secs()
            );
        }
    }

    /// accept(2) failed with `err`. Out of descriptors, the shard switches to refusing what
    /// waits ([`Refusals::refuse_waiting`], starting now); any other error is logged.
    /// Returns how long to pause before the next accept.
    fn accept_failed(&mut self, err: &GlommioError<()>) -> Duration {
        let source = match err {
            GlommioError::IoError(source) | GlommioError::EnhancedIoError { source, .. } => {
                Some(source)
            }
            _ => None,
        };
        match source.and_then(io::Error::raw_os_error) {
            Some(errno @ (libc::EMFILE | libc::ENFILE)) => {
                self.out_of_descriptors = Some(errno);
                self.announce = true;
                self.backoff = MIN_BACKOFF;
                Duration::ZERO
            }
            _ => {
                let pause = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                self.report(0, || {
                    format!("accept failed: {err}, retrying in {} ms", pause.as_millis())
                });
                pause
            }
        }
    }

    /// While out of descriptors (accept(2) would fail with `errno` at once, whether or not a
    /// connection waits): refuses the connections waiting now and returns how long to wait
    /// before looking again; or, once descriptors are back, returns to accepting.
    fn refuse_waiting(&mut self, errno: i32) -> Duration {
        if self.shard.shared.spare_fds.descriptors_back() {
            self.out_of_descriptors = None;
            self.backoff = MIN_BACKOFF;
            if self.unreported > 0 && self.throttle.flush(Instant::now()).is_some() {
                info!(
                    "shard {}: descriptors are back, accepting connections again; {} more \
                     refused since the last report",
                    self.shard.id,
                    std::mem::take(&mut self.unreported)
                );
            }
            return Duration::ZERO;
        }
        let reason = if errno == libc::ENFILE {
            reject_reason::SYSTEM_FD_LIMIT
        } else {
            reject_reason::FD_LIMIT
        };
        // SAFETY: the listening socket belongs to this shard's listener, which outlives the
        // accept loop and therefore this call.
        let listener = unsafe { BorrowedFd::borrow_raw(self.listen_fd) };
        let spares = &self.shard.shared.spare_fds;
        let (refused, drained) =
            spares.refuse_waiting(listener, DRAIN_BATCH, |fd| self.refuse(fd, reason));
        let pause = match drained {
            Drained::Empty => OUT_OF_DESCRIPTORS_POLL,
            Drained::Batch => Duration::ZERO,
            Drained::Stuck => {
                let pause = self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                pause
            }
        };
        if refused > 0 || std::mem::take(&mut self.announce) {
            self.report(refused, || {
                format!(
                    "accept failed: {}; closing new connections at once until descriptors are \
                     back",
                    io::Error::from_raw_os_error(errno)
                )
            });
        }
        pause
    }
}
