//! The OpenSSL handshake (async-openssl over the gated socket), every call inside the
//! error-queue guard.

use std::ffi::c_int;
use std::pin::Pin;

use async_openssl::SslStream;
use openssl::ssl::{ErrorCode, Ssl, SslAcceptor};
use shardline_metrics::labels::tls_failure;

use super::{Failure, Gated};
use crate::tls::error_queue::{guarded, ErrorQueueChecked};

/// Accepts a session on `gated` with a new `SSL` of `acceptor`; returns the stream and
/// whether the session was resumed. Failures: `internal` when OpenSSL cannot make the
/// `SSL`, otherwise [`failure_reason`]'s.
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
        Err(err) => Err(Failure::Failed(failure_reason(&err), err.to_string())),
    }
}

/// `ERR_LIB_SSL` (OpenSSL `err.h`) and `SSL_R_UNEXPECTED_EOF_WHILE_READING` (OpenSSL 3,
/// `sslerr.h`); `openssl-sys` has neither.
const ERR_LIB_SSL: c_int = 20;
const UNEXPECTED_EOF_WHILE_READING: c_int = 294;

/// `io` for a socket error or a client that closed mid-handshake (`SSL_ERROR_SYSCALL` with
/// no cause, or OpenSSL 3's "unexpected eof while reading"), `protocol` for what OpenSSL
/// refused.
fn failure_reason(err: &openssl::ssl::Error) -> &'static str {
    let eof = match err.ssl_error() {
        None => err.code() == ErrorCode::SYSCALL,
        Some(stack) => stack.errors().iter().any(|entry| {
            entry.library_code() == ERR_LIB_SSL
                && entry.reason_code() == UNEXPECTED_EOF_WHILE_READING
        }),
    };
    if err.io_error().is_some() || eof {
        tls_failure::IO
    } else {
        tls_failure::PROTOCOL
    }
}
