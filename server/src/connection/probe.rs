//! Telling a client that closed its connection from one that only half-closed it, when a
//! login's turn comes and the client has sent a FIN ([`super::peer`]).
//!
//! A half-closed client (`shutdown(SHUT_WR)` after its requests, with or without a TLS
//! close_notify first) still reads: Redis executes its requests and answers them all, and so
//! must we. A client that closed its socket cannot read, and its hash would be spent for
//! nobody. Both sent the same FIN; only sending data tells them apart: the kernel of a
//! closed socket answers new data with a RST. So the probe sends one record the client's TLS
//! library consumes without answering and without showing anything to the application: a
//! TLS 1.3 KeyUpdate that does not ask the client to update its own keys
//! (`update_not_requested`). The probe, in [`send_probe`] and [`reset_after_window`]:
//!
//! 1. Queue the KeyUpdate and write it; if the socket does not take it at once (the client
//!    is not reading), or the session has no such record, the client counts as present.
//! 2. Check for the RST at once: on loopback it is back before the write returns.
//! 3. Otherwise give the login slot back, wait [`rst_window`] (2 × the connection's
//!    smoothed RTT, at least [`MIN_RST_WAIT`], at most [`MAX_RST_WAIT`]) and check again.
//!    The caller queues again for a slot if the client is still there.
//!
//! Only a RST makes a login abandoned; a client whose RST comes late is served (its hash is
//! wasted, nothing is lost). Where no harmless record exists the client is served:
//!
//! - `--tls off`: any byte would be read as a reply.
//! - TLS 1.2: no KeyUpdate.
//! - `--tls-provider rustls`: rustls 0.23 sends only KeyUpdates that request the client's
//!   (`update_requested`). An OpenSSL client answers one at once, from inside its read, and
//!   on a socket it shut down for writing that answer fails and takes the read (and every
//!   reply after it) with it.

use std::ffi::c_int;
use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_openssl::SslStream;
use foreign_types::ForeignTypeRef;
use futures_lite::{AsyncRead, AsyncWrite};
use openssl::ssl::SslVersion;

use super::peer::{peer_state, smoothed_rtt, PeerState};
use crate::tls::error_queue::{guarded, ErrorQueueChecked};

/// The shortest wait for a probe's RST: scheduling on a busy host, beyond the RTT.
pub const MIN_RST_WAIT: Duration = Duration::from_millis(1);
/// The longest wait for a probe's RST (the login slot is free meanwhile).
pub const MAX_RST_WAIT: Duration = Duration::from_millis(200);

/// `SSL_KEY_UPDATE_NOT_REQUESTED` (OpenSSL `ssl.h`).
const SSL_KEY_UPDATE_NOT_REQUESTED: c_int = 0;

extern "C" {
    /// OpenSSL 1.1.1+: marks a TLS 1.3 KeyUpdate as due (`openssl-sys` does not declare it).
    fn SSL_key_update(ssl: *mut openssl_sys::SSL, updatetype: c_int) -> c_int;
}

/// An established client stream that may carry a probe record (see the module docs).
pub trait ProbeRecord {
    /// Queues a record the client consumes without answering; `false` when the session has
    /// none (plain TCP, TLS 1.2, rustls) or cannot queue one now (a write is pending).
    fn queue_probe(&mut self) -> bool;

    /// Writes the queued record to the socket.
    ///
    /// Errors: the socket's or the TLS library's write error.
    fn poll_send_probe(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>>;
}

/// `--tls off`: every byte on the socket is a reply.
impl ProbeRecord for glommio::net::TcpStream {
    fn queue_probe(&mut self) -> bool {
        false
    }

    fn poll_send_probe(&mut self, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// `--tls-provider rustls`: no KeyUpdate without `update_requested` (see the module docs).
impl<S> ProbeRecord for Box<futures_rustls::server::TlsStream<S>> {
    fn queue_probe(&mut self) -> bool {
        false
    }

    fn poll_send_probe(&mut self, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// `--tls-provider openssl`: `SSL_key_update(SSL_KEY_UPDATE_NOT_REQUESTED)` on a TLS 1.3
/// session, written by `SSL_do_handshake`.
impl<S: AsyncRead + AsyncWrite + Unpin> ProbeRecord for ErrorQueueChecked<SslStream<S>> {
    fn queue_probe(&mut self) -> bool {
        let ssl = self.get_ref().ssl();
        if ssl.version2() != Some(SslVersion::TLS1_3) {
            return false;
        }
        guarded("key update", || {
            // SAFETY: a live SSL owned by this stream. SSL_key_update only marks the update
            // as due; it fails (with an error queue entry, drained below) while a write is
            // pending or outside TLS 1.3.
            let queued = unsafe { SSL_key_update(ssl.as_ptr(), SSL_KEY_UPDATE_NOT_REQUESTED) } == 1;
            if !queued {
                drop(openssl::error::ErrorStack::get());
            }
            queued
        })
    }

    fn poll_send_probe(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let stream = self.get_mut();
        std::task::ready!(guarded("key update", || Pin::new(&mut *stream)
            .poll_do_handshake(cx))
        .map_err(std::io::Error::other))?;
        guarded("flush", || Pin::new(stream).poll_flush(cx))
    }
}

/// How long a probe's RST may take to come back on TCP socket `fd`: 2 × its smoothed RTT,
/// within [`MIN_RST_WAIT`]..=[`MAX_RST_WAIT`] (the most when the RTT is unknown).
pub fn rst_window(fd: std::os::fd::RawFd) -> Duration {
    smoothed_rtt(fd).map_or(MAX_RST_WAIT, |rtt| {
        (rtt * 2).clamp(MIN_RST_WAIT, MAX_RST_WAIT)
    })
}

/// What sending the probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// No probe could be sent: serve the client.
    NotSent,
    /// The RST is back (or the write failed): the client has gone.
    Gone,
    /// Sent, no RST yet: wait [`rst_window`], then look again with [`peer_state`].
    Sent,
}

/// Steps 1 and 2 of the module docs on `stream`, whose socket is `fd`.
pub async fn send_probe(stream: &mut dyn ProbeRecord, fd: std::os::fd::RawFd) -> Probe {
    if !stream.queue_probe() {
        return Probe::NotSent;
    }
    // Polled once: a socket that does not take the record now belongs to a client that is
    // not reading; the record goes out before the next reply.
    match poll_fn(|cx| Poll::Ready(stream.poll_send_probe(cx))).await {
        Poll::Pending => Probe::NotSent,
        Poll::Ready(Err(_)) => Probe::Gone,
        Poll::Ready(Ok(())) if peer_state(fd) == PeerState::Reset => Probe::Gone,
        Poll::Ready(Ok(())) => Probe::Sent,
    }
}

/// Whether the client on `fd` has reset the connection after a [`Probe::Sent`], after
/// waiting [`rst_window`].
pub async fn reset_after_window(fd: std::os::fd::RawFd) -> bool {
    glommio::timer::sleep(rst_window(fd)).await;
    peer_state(fd) == PeerState::Reset
}
