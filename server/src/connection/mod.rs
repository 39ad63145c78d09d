//! One client connection: admission, TLS handshake, then the RESP request loop.
//!
//! Lifecycle: accept → TLS handshake (`--handshake-timeout-ms` without progress,
//! `--handshake-max-ms` in all; a login slot of
//! `--max-concurrent-logins` held while it has the client's bytes to process) → read, parse,
//! dispatch, reply until QUIT, EOF, a protocol error or shutdown → close_notify.

mod commands;
mod dispatch;
mod handshake;
mod handshake_clock;
mod login_gated;
mod peer;
mod pipeline;
mod session;
mod transaction;

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures_lite::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use glommio::net::TcpStream;

use crate::resp::{Frame, RequestLimits, RequestParser};
use crate::shard::Shard;
pub use dispatch::Flow;
use handshake::handshake;
use pipeline::Pipeline;
pub use session::Session;

/// Bytes read from the socket per read call.
const READ_CHUNK: usize = 16 * 1024;
/// Encoded replies are written out once this many bytes are waiting, even mid-pipeline.
const FLUSH_THRESHOLD: usize = 64 * 1024;
/// Redis's limits before authentication: 10 arguments, 16 KiB bulk strings.
const UNAUTHENTICATED_LIMITS: RequestLimits = RequestLimits {
    max_args: 10,
    max_bulk_bytes: 16 * 1024,
    max_inline_bytes: 64 * 1024,
    unauthenticated: true,
};

/// Why a connection ended (the `reason` label of `connections_closed_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client closed its side.
    ClientClosed,
    /// QUIT.
    Quit,
    /// Malformed RESP or a request over the limits.
    ProtocolError,
    /// Socket read or write failure (including TLS record errors).
    IoError,
    /// The TLS handshake failed or timed out.
    HandshakeFailed,
    /// The login queue timed out (`--login-queue-timeout-ms`).
    Shed,
    /// `--max-auth-failures` wrong passwords on this connection.
    AuthFailures,
    /// The server is shutting down.
    Shutdown,
}

impl CloseReason {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::ClientClosed => "client_closed",
            CloseReason::Quit => "quit",
            CloseReason::ProtocolError => "protocol_error",
            CloseReason::IoError => "io_error",
            CloseReason::HandshakeFailed => "handshake_failed",
            CloseReason::Shed => "shed",
            CloseReason::AuthFailures => "auth_failures",
            CloseReason::Shutdown => "shutdown",
        }
    }
}

/// Serves one accepted TCP connection to its end. Never panics on client input.
pub async fn serve(shard: Rc<Shard>, tcp: TcpStream) {
    shard
        .info
        .connections_received
        .set(shard.info.connections_received.get() + 1);
    shard
        .info
        .connected_clients
        .set(shard.info.connected_clients.get() + 1);
    shard.metrics.connection_accepted();
    let _ = tcp.set_nodelay(true);
    let id = shard.shared.next_client_id.fetch_add(1, Ordering::Relaxed);
    let mut session = Session::new(id, shard.id, tcp.peer_addr().ok(), tcp.local_addr().ok());
    session.socket_fd = Some(std::os::fd::AsRawFd::as_raw_fd(&tcp));

    let reason = match &shard.acceptor {
        None => run(&shard, tcp, session).await,
        // A connection still waiting for a login slot or in its handshake has nothing in
        // flight: shutdown drops it at once.
        Some(acceptor) => match futures_lite::future::or(handshake(&shard, acceptor, tcp), async {
            shard.shared.shutdown.wait().await;
            Err(CloseReason::Shutdown)
        })
        .await
        {
            Ok(tls) => run(&shard, tls, session).await,
            Err(reason) => reason,
        },
    };
    if matches!(reason, CloseReason::Shed | CloseReason::HandshakeFailed) {
        shard
            .info
            .rejected_connections
            .set(shard.info.rejected_connections.get() + 1);
    }
    shard.metrics.connection_closed(reason.as_str());
    shard
        .info
        .connected_clients
        .set(shard.info.connected_clients.get() - 1);
}

/// The request loop over an established stream (TLS or, with `--tls off`, plain TCP).
async fn run<S>(shard: &Rc<Shard>, mut stream: S, mut session: Session) -> CloseReason
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let config = &shard.shared.config;
    let authenticated_limits = RequestLimits {
        max_args: config.max_multibulk_len,
        max_bulk_bytes: config.proto_max_bulk_len,
        max_inline_bytes: 64 * 1024,
        unauthenticated: false,
    };
    let mut parser = RequestParser::new();
    let mut input = bytes::BytesMut::with_capacity(READ_CHUNK);
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut pipeline = Pipeline::with_capacity(READ_CHUNK);
    let reason = 'conn: loop {
        // Serve every complete request already buffered.
        loop {
            let limits = if session.is_authenticated() {
                &authenticated_limits
            } else {
                &UNAUTHENTICATED_LIMITS
            };
            match parser.parse(&mut input, limits) {
                Ok(Some(args)) => {
                    session.last_command = Instant::now();
                    match dispatch::dispatch(shard, &mut session, args, &mut pipeline).await {
                        Flow::Continue => {}
                        Flow::Close(reason) => {
                            pipeline.drain().await;
                            let _ = write_out(shard, &mut stream, &mut pipeline).await;
                            break 'conn reason;
                        }
                    }
                }
                Ok(None) => break,
                Err(err) => {
                    pipeline.drain().await;
                    pipeline.ready(session.protocol, Frame::error(format!("ERR {err}")));
                    shard.metrics.command_error("protocol");
                    let _ = write_out(shard, &mut stream, &mut pipeline).await;
                    break 'conn CloseReason::ProtocolError;
                }
            }
            if pipeline.out.len() >= FLUSH_THRESHOLD {
                if let Err(reason) = write_out(shard, &mut stream, &mut pipeline).await {
                    break 'conn reason;
                }
            }
            // A long pipeline, or a client whose next requests are always already in the
            // socket, must not keep the shard past its task quota.
            glommio::yield_if_needed().await;
        }
        pipeline.drain().await;
        if let Err(reason) = write_out(shard, &mut stream, &mut pipeline).await {
            break reason;
        }
        if shard.shared.shutdown.is_requested() {
            break CloseReason::Shutdown;
        }
        let read = futures_lite::future::or(async { Some(stream.read(&mut chunk).await) }, async {
            shard.shared.shutdown.wait().await;
            None
        })
        .await;
        match read {
            None => break CloseReason::Shutdown,
            Some(Ok(0)) => break CloseReason::ClientClosed,
            Some(Ok(n)) => {
                shard.metrics.bytes_received(n);
                input.extend_from_slice(&chunk[..n]);
                if input.len() > config.client_query_buffer_limit {
                    pipeline.drain().await;
                    pipeline.ready(
                        session.protocol,
                        Frame::error("ERR Protocol error: query buffer limit exceeded (client-query-buffer-limit)"),
                    );
                    shard.metrics.command_error("protocol");
                    let _ = write_out(shard, &mut stream, &mut pipeline).await;
                    break CloseReason::ProtocolError;
                }
            }
            Some(Err(_)) => break CloseReason::IoError,
        }
    };
    // Orderly close: TLS close_notify (async-openssl's poll_close), then the TCP close.
    if reason != CloseReason::IoError {
        let _ = glommio::timer::timeout(Duration::from_secs(1), async {
            let _ = stream.close().await;
            Ok(())
        })
        .await;
    }
    reason
}

async fn write_out<S>(
    shard: &Shard,
    stream: &mut S,
    pipeline: &mut Pipeline,
) -> Result<(), CloseReason>
where
    S: AsyncWrite + Unpin,
{
    if pipeline.out.is_empty() {
        return Ok(());
    }
    let len = pipeline.out.len();
    stream
        .write_all(&pipeline.out)
        .await
        .map_err(|_| CloseReason::IoError)?;
    stream.flush().await.map_err(|_| CloseReason::IoError)?;
    shard.metrics.bytes_sent(len);
    pipeline.out.clear();
    Ok(())
}
