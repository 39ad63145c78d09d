//! The rustls handshake (futures-rustls over the gated socket).

use std::io;

use futures_rustls::server::TlsStream;
use futures_rustls::TlsAcceptor;
use rustls::HandshakeKind;
use shardline_metrics::labels::tls_failure;

use super::{Failure, Gated};

/// Accepts a session on `gated` with the shared configuration behind `acceptor`; returns the
/// stream and whether the session was resumed (from a ticket). Failures: see
/// [`failure_reason`].
pub(super) async fn accept(
    acceptor: &TlsAcceptor,
    gated: Gated,
) -> Result<(TlsStream<Gated>, bool), Failure> {
    match acceptor.accept(gated).into_fallible().await {
        Ok(mut tls) => {
            tls.get_mut().0.handshake_done();
            let resumed = tls.get_ref().1.handshake_kind() == Some(HandshakeKind::Resumed);
            Ok((tls, resumed))
        }
        Err((_, gated)) if gated.was_shed() => Err(Failure::Shed),
        Err((_, gated)) if gated.was_abandoned() => Err(Failure::Abandoned),
        Err((err, _)) => Err(Failure::Failed(failure_reason(&err), err.to_string())),
    }
}

/// futures-rustls reports what rustls refused (a bad message, an alert, a certificate) as
/// `InvalidData` around the `rustls::Error`, a connection rustls could not set up as another
/// kind around one, and the socket's own errors (the peer closing included) bare: `protocol`,
/// `internal` and `io`, as the OpenSSL provider's.
fn failure_reason(err: &io::Error) -> &'static str {
    let from_rustls = err
        .get_ref()
        .is_some_and(|inner| inner.is::<rustls::Error>());
    match (from_rustls, err.kind()) {
        (true, io::ErrorKind::InvalidData) => tls_failure::PROTOCOL,
        (true, _) => tls_failure::INTERNAL,
        (false, _) => tls_failure::IO,
    }
}
