//! The TLS handshake of a new connection, by the shard's provider (`--tls-provider`), cut
//! after `--handshake-timeout-ms` without progress or `--handshake-max-ms` in all
//! ([`HandshakeClock`]). The clock, the login gating ([`LoginGatedStream`]) and the metrics
//! are the same for both providers; [`openssl_accept`] and [`rustls_accept`] only run the
//! library's handshake and say how it ended.

mod openssl_accept;
mod rustls_accept;

use std::rc::Rc;
use std::time::Duration;

use glommio::net::TcpStream;
use shardline_metrics::labels::tls_failure;
use shardline_metrics::Activity;
use tracing::debug;

use super::handshake_clock::{HandshakeClock, HandshakeLimits};
use super::login_gated::LoginGatedStream;
use super::CloseReason;
use crate::shard::Shard;
use crate::tls::error_queue::ErrorQueueChecked;
use crate::tls::ShardTls;

/// The socket under the TLS session.
type Gated = LoginGatedStream<TcpStream>;

/// An established TLS session, ready for the request loop.
pub(super) enum Established {
    /// `--tls-provider openssl`.
    Openssl(ErrorQueueChecked<async_openssl::SslStream<Gated>>),
    /// `--tls-provider rustls` (boxed: rustls's connection state is over 1 KiB).
    Rustls(Box<futures_rustls::server::TlsStream<Gated>>),
}

/// How a provider's handshake ended without a session.
enum Failure {
    /// The login queue timed out (`--login-queue-timeout-ms`).
    Shed,
    /// The client closed while its ClientHello waited for a login slot.
    Abandoned,
    /// The library or the socket failed: the `tls_handshakes_failed_total` reason
    /// ([`tls_failure`]: protocol, io or internal) and what happened, for the debug log.
    Failed(&'static str, String),
}

/// Runs the TLS handshake under the progress timeout and the hard limit, holding a login
/// slot only while it has the client's bytes to process ([`LoginGatedStream`]).
pub(super) async fn handshake(
    shard: &Rc<Shard>,
    tls: &ShardTls,
    tcp: TcpStream,
) -> Result<Established, CloseReason> {
    shardline_metrics::activity::set(Activity::Handshake);
    shard.metrics.tls_handshake_started();
    let clock = Rc::new(HandshakeClock::new());
    let gated = LoginGatedStream::new(tcp, shard.clone(), clock.clone());
    let config = &shard.shared.config;
    let limits = HandshakeLimits {
        idle: Duration::from_millis(config.handshake_timeout_ms),
        max: Duration::from_millis(config.handshake_max_ms),
    };
    let accept = async {
        match tls {
            ShardTls::Openssl(acceptor) => openssl_accept::accept(acceptor, gated)
                .await
                .map(|(stream, resumed)| (Established::Openssl(stream), resumed)),
            ShardTls::Rustls(acceptor) => rustls_accept::accept(acceptor, gated)
                .await
                .map(|(stream, resumed)| (Established::Rustls(Box::new(stream)), resumed)),
        }
    };
    let outcome = futures_lite::future::or(async { Ok(accept.await) }, async {
        Err(clock.watch(limits).await)
    })
    .await;
    match outcome {
        Ok(Ok((stream, resumed))) => {
            shard
                .metrics
                .tls_handshake_completed(clock.started().elapsed(), resumed);
            Ok(stream)
        }
        Ok(Err(Failure::Shed)) => Err(CloseReason::Shed),
        Ok(Err(Failure::Abandoned)) => {
            shard.metrics.tls_handshake_failed(tls_failure::ABANDONED);
            Err(CloseReason::ClientClosed)
        }
        Ok(Err(Failure::Failed(reason, detail))) => {
            debug!(
                "shard {}: TLS handshake failed ({reason}): {detail}",
                shard.id
            );
            shard.metrics.tls_handshake_failed(reason);
            Err(CloseReason::HandshakeFailed)
        }
        Err(cut) => {
            debug!("shard {}: TLS handshake cut ({})", shard.id, cut.label());
            shard.metrics.tls_handshake_failed(cut.label());
            Err(CloseReason::HandshakeFailed)
        }
    }
}
