//! One client connection: admission, TLS handshake, then the RESP request loop.
//!
//! Lifecycle: accept → the client's first byte (untimed, evicted only when the server is full:
//! [`silent`]) → TLS handshake (`--handshake-timeout-ms` without progress,
//! `--handshake-max-ms` in all; a login slot of
//! `--max-concurrent-logins` held while it has the client's bytes to process) → read, parse,
//! dispatch, reply until QUIT, EOF, a protocol error or shutdown → close_notify. The TLS
//! library is `--tls-provider`'s (OpenSSL or rustls); everything else is the same for both.

pub mod commands;
mod dispatch;
mod duplex;
mod handshake;
mod handshake_clock;
mod login_gated;
mod output_limit;
mod peer;
mod pipeline;
mod plaintext;
mod probe;
pub mod query_buffer;
mod request_loop;
mod session;
mod silent;
mod transaction;

use std::rc::Rc;
use std::sync::atomic::Ordering;

use glommio::net::TcpStream;
use shardline_metrics::labels::close_reason;

use crate::accept::ClientSlot;
use crate::resp::RequestLimits;
use crate::shard::Shard;
pub use dispatch::Flow;
use handshake::{handshake, Established};
pub use output_limit::{parse_memory, OutputBufferLimit, OutputBufferLimitError};
pub use plaintext::PlaintextLog;
pub use session::Session;
pub use silent::SilentConnections;

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
    /// Unwritten replies exceeded `--client-output-buffer-limit`.
    OutputBufferLimit,
    /// Silent since accept, its place given to a new connection at `--maxclients`.
    SilentEvicted,
    /// CLIENT KILL.
    Killed,
    /// Nothing read for longer than `--timeout` seconds.
    IdleTimeout,
}

impl CloseReason {
    /// The label value ([`shardline_metrics::labels::close_reason`]).
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::ClientClosed => close_reason::CLIENT_CLOSED,
            CloseReason::Quit => close_reason::QUIT,
            CloseReason::ProtocolError => close_reason::PROTOCOL_ERROR,
            CloseReason::IoError => close_reason::IO_ERROR,
            CloseReason::HandshakeFailed => close_reason::HANDSHAKE_FAILED,
            CloseReason::Shed => close_reason::SHED,
            CloseReason::AuthFailures => close_reason::AUTH_FAILURES,
            CloseReason::Shutdown => close_reason::SHUTDOWN,
            CloseReason::OutputBufferLimit => close_reason::OUTPUT_BUFFER_LIMIT,
            CloseReason::SilentEvicted => close_reason::SILENT_EVICTED,
            CloseReason::Killed => close_reason::KILLED,
            CloseReason::IdleTimeout => close_reason::IDLE_TIMEOUT,
        }
    }
}

/// Serves one accepted TCP connection to its end, holding its `--maxclients` place `slot`
/// (which may pass to a newer connection while this one has sent nothing: [`silent`]).
/// Never panics on client input.
pub async fn serve(shard: Rc<Shard>, tcp: TcpStream, slot: ClientSlot) {
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
    commands::auth::default_login(&shard, &mut session);

    let reason = match &shard.tls {
        None => {
            let _slot = slot;
            request_loop::run(&shard, tcp, session).await
        }
        // A connection still waiting for a login slot or in its handshake has nothing in
        // flight: shutdown drops it at once.
        Some(tls) => match futures_lite::future::or(
            async {
                let (slot, first) = shard.silent.first_byte(&tcp, slot).await?;
                if first != plaintext::TLS_HANDSHAKE_RECORD {
                    return Err(plaintext::refuse(&shard, tcp, session.peer).await);
                }
                Ok((handshake(&shard, tls, tcp).await?, slot))
            },
            async {
                shard.shared.shutdown.wait().await;
                Err(CloseReason::Shutdown)
            },
        )
        .await
        {
            Ok((established, _slot)) => match established {
                Established::Openssl(stream) => request_loop::run(&shard, stream, session).await,
                Established::Rustls(stream) => request_loop::run(&shard, stream, session).await,
            },
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
