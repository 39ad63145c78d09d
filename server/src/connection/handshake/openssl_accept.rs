//! The OpenSSL handshake (async-openssl over the gated socket), every call inside the
//! error-queue guard.

use std::pin::Pin;

use async_openssl::SslStream;
use openssl::ssl::{Ssl, SslAcceptor};
use shardline_metrics::labels::tls_failure;

use super::{Failure, Gated};
use crate::tls::error_queue::{guarded, ErrorQueueChecked};

/// Accepts a session on `gated` with a new `SSL` of `acceptor`; returns the stream and
/// whether the session was resumed. Failures: `internal` when OpenSSL cannot make the
/// `SSL`, `io` for a socket error, `protocol` for anything OpenSSL refused.
pub(super) async fn accept(
    acceptor: &SslAcceptor,
    gated: Gated,
) -> Result<(ErrorQueueChecked<SslStream<Gated>>, bool), Failure> {
    let internal = |err: openssl::error::ErrorStack| {
        Failure::Failed(tls_failure::INTERNAL, format!("cannot make an SSL: {err}"))
    };
    let ssl = Ssl::new(acceptor.context()).map_err(internal)?;
    let mut tls = SslStream::new(ssl, gated).map_err(internal)?;
    let accepted = futures_lite::future::poll_fn(|cx| {
        guarded("handshake", || Pin::new(&mut tls).poll_accept(cx))
    })
    .await;
    match accepted {
        Ok(()) => {
            tls.get_mut().handshake_done();
            let resumed = tls.ssl().session_reused();
            Ok((ErrorQueueChecked::new(tls), resumed))
        }
        Err(_) if tls.get_ref().was_shed() => Err(Failure::Shed),
        Err(_) if tls.get_ref().was_abandoned() => Err(Failure::Abandoned),
        Err(err) => {
            let reason = if err.io_error().is_some() {
                tls_failure::IO
            } else {
                tls_failure::PROTOCOL
            };
            Err(Failure::Failed(reason, err.to_string()))
        }
    }
}
