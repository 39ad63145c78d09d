//! The TLS handshake of a new connection, under `--handshake-timeout-ms`.

use std::rc::Rc;
use std::time::{Duration, Instant};

use async_openssl::SslStream;
use glommio::net::TcpStream;
use openssl::ssl::Ssl;
use shardline_metrics::Activity;
use tracing::debug;

use super::login_gated::LoginGatedStream;
use super::CloseReason;
use crate::shard::Shard;

/// Runs the TLS handshake under `--handshake-timeout-ms`, holding a login slot only while it
/// has the client's bytes to process ([`LoginGatedStream`]).
pub(super) async fn handshake(
    shard: &Rc<Shard>,
    acceptor: &openssl::ssl::SslAcceptor,
    tcp: TcpStream,
) -> Result<SslStream<LoginGatedStream<TcpStream>>, CloseReason> {
    shardline_metrics::activity::set(Activity::Handshake);
    shard.metrics.tls_handshake_started();
    let started = Instant::now();
    let ssl = Ssl::new(acceptor.context()).map_err(|err| {
        shard.metrics.tls_handshake_failed("internal");
        debug!("shard {}: Ssl::new failed: {err}", shard.id);
        CloseReason::HandshakeFailed
    })?;
    let mut tls = SslStream::new(ssl, LoginGatedStream::new(tcp, shard.clone())).map_err(|_| {
        shard.metrics.tls_handshake_failed("internal");
        CloseReason::HandshakeFailed
    })?;
    let timeout = Duration::from_millis(shard.shared.config.handshake_timeout_ms);
    let outcome = glommio::timer::timeout(timeout, async {
        Ok(std::pin::Pin::new(&mut tls).accept().await)
    })
    .await;
    match outcome {
        Ok(Ok(())) => {
            tls.get_mut().end_gating();
            let resumed = tls.ssl().session_reused();
            shard
                .metrics
                .tls_handshake_completed(started.elapsed(), resumed);
            Ok(tls)
        }
        Ok(Err(_)) if tls.get_ref().was_shed() => Err(CloseReason::Shed),
        Ok(Err(err)) => {
            let reason = if err.io_error().is_some() {
                "io"
            } else {
                "protocol"
            };
            debug!("shard {}: TLS handshake failed: {err}", shard.id);
            shard.metrics.tls_handshake_failed(reason);
            Err(CloseReason::HandshakeFailed)
        }
        Err(_) => {
            shard.metrics.tls_handshake_failed("timeout");
            Err(CloseReason::HandshakeFailed)
        }
    }
}
