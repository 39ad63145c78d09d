//! The TLS handshake of a new connection, cut after `--handshake-timeout-ms` without
//! progress or `--handshake-max-ms` in all ([`HandshakeClock`]).

use std::rc::Rc;
use std::time::Duration;

use async_openssl::SslStream;
use glommio::net::TcpStream;
use openssl::ssl::Ssl;
use shardline_metrics::labels::tls_failure;
use shardline_metrics::Activity;
use tracing::debug;

use super::handshake_clock::{HandshakeClock, HandshakeLimits};
use super::login_gated::LoginGatedStream;
use super::CloseReason;
use crate::shard::Shard;
use crate::tls::error_queue::{guarded, ErrorQueueChecked};

/// Runs the TLS handshake under the progress timeout and the hard limit, holding a login
/// slot only while it has the client's bytes to process ([`LoginGatedStream`]).
pub(super) async fn handshake(
    shard: &Rc<Shard>,
    acceptor: &openssl::ssl::SslAcceptor,
    tcp: TcpStream,
) -> Result<ErrorQueueChecked<SslStream<LoginGatedStream<TcpStream>>>, CloseReason> {
    shardline_metrics::activity::set(Activity::Handshake);
    shard.metrics.tls_handshake_started();
    let clock = Rc::new(HandshakeClock::new());
    let ssl = Ssl::new(acceptor.context()).map_err(|err| {
        shard.metrics.tls_handshake_failed(tls_failure::INTERNAL);
        debug!("shard {}: Ssl::new failed: {err}", shard.id);
        CloseReason::HandshakeFailed
    })?;
    let gated = LoginGatedStream::new(tcp, shard.clone(), clock.clone());
    let mut tls = SslStream::new(ssl, gated).map_err(|_| {
        shard.metrics.tls_handshake_failed(tls_failure::INTERNAL);
        CloseReason::HandshakeFailed
    })?;
    let config = &shard.shared.config;
    let limits = HandshakeLimits {
        idle: Duration::from_millis(config.handshake_timeout_ms),
        max: Duration::from_millis(config.handshake_max_ms),
    };
    let outcome = futures_lite::future::or(
        async {
            Ok(futures_lite::future::poll_fn(|cx| {
                guarded("handshake", || std::pin::Pin::new(&mut tls).poll_accept(cx))
            })
            .await)
        },
        async { Err(clock.watch(limits).await) },
    )
    .await;
    match outcome {
        Ok(Ok(())) => {
            tls.get_mut().handshake_done();
            let resumed = tls.ssl().session_reused();
            shard
                .metrics
                .tls_handshake_completed(clock.started().elapsed(), resumed);
            Ok(ErrorQueueChecked::new(tls))
        }
        Ok(Err(_)) if tls.get_ref().was_shed() => Err(CloseReason::Shed),
        Ok(Err(_)) if tls.get_ref().was_abandoned() => {
            shard.metrics.tls_handshake_failed(tls_failure::ABANDONED);
            Err(CloseReason::ClientClosed)
        }
        Ok(Err(err)) => {
            let reason = if err.io_error().is_some() {
                tls_failure::IO
            } else {
                tls_failure::PROTOCOL
            };
            debug!("shard {}: TLS handshake failed: {err}", shard.id);
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
