//! The socket under a TLS handshake, holding a login slot (`--max-concurrent-logins`) only
//! while the handshake has the client's bytes to work on.
//!
//! A slot bounds how many handshakes and password hashes progress at once on a shard. Waiting
//! for the client costs the shard nothing, so it must not hold a slot: otherwise a few clients
//! that connect and send nothing, or half a ClientHello, would keep every other client from
//! logging in until `--handshake-timeout-ms`. So the first read that has data (the
//! ClientHello, whose answer costs the key exchange and the signature) waits for a slot (FIFO,
//! shed after `--login-queue-timeout-ms`) before the TLS library sees it, and the slot is given back as
//! soon as a read would block: the server's flight is out and the client is the one to act.
//!
//! A client that closed its connection while its ClientHello waited for the slot is not
//! answered: the slot passes on at once (see [`super::peer`]), instead of paying the key
//! exchange and the signature for nobody. Here a FIN alone is enough, unlike for a login
//! ([`super::probe`]): every handshake (full or resumed, TLS 1.2 or 1.3, with or without
//! early data, which the server does not accept) needs the client to send its Finished after
//! the server's flight, which a client that sent FIN can no longer do, so no request can be
//! lost.
//!
//! It also tells the handshake's [`HandshakeClock`] about every byte moved and every wait
//! for a slot, until [`LoginGatedStream::handshake_done`].

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};
use shardline_auth::{LoginPermit, LoginShed, LoginStage};

use super::handshake_clock::HandshakeClock;
use super::peer::peer_closed;
use crate::shard::Shard;

type Admission = Pin<Box<dyn Future<Output = Result<LoginPermit, LoginShed>>>>;

/// A stream that takes a login slot before handing read bytes to the handshake; see the
/// module docs. After [`LoginGatedStream::end_gating`] it is a plain pass-through.
pub struct LoginGatedStream<S> {
    inner: S,
    /// The raw socket under `inner`, to ask whether the client has gone.
    fd: RawFd,
    shard: Rc<Shard>,
    gating: bool,
    permit: Option<LoginPermit>,
    admission: Option<Admission>,
    /// Bytes read from the socket that wait for a slot (or for a larger read buffer).
    stash: Vec<u8>,
    shed: bool,
    abandoned: bool,
    /// Whether the handshake has written its first flight.
    replied: bool,
    /// The handshake's progress record; `None` once the handshake is done.
    clock: Option<Rc<HandshakeClock>>,
}

impl<S: AsRawFd> LoginGatedStream<S> {
    /// Wraps `inner`; slots come from `shard`'s login gate, progress goes to `clock`.
    pub fn new(inner: S, shard: Rc<Shard>, clock: Rc<HandshakeClock>) -> Self {
        Self {
            fd: inner.as_raw_fd(),
            inner,
            shard,
            gating: true,
            permit: None,
            admission: None,
            stash: Vec::new(),
            shed: false,
            abandoned: false,
            replied: false,
            clock: Some(clock),
        }
    }
}

impl<S> LoginGatedStream<S> {
    /// The handshake completed: release the slot and stop recording progress.
    pub fn handshake_done(&mut self) {
        self.end_gating();
        self.clock = None;
    }

    fn record(&self, moved: &Poll<io::Result<usize>>) {
        if let (Some(clock), Poll::Ready(Ok(1..))) = (&self.clock, moved) {
            clock.progress();
        }
    }

    /// The handshake is over: release the slot; reads and writes pass straight through.
    pub fn end_gating(&mut self) {
        self.gating = false;
        self.permit = None;
        self.admission = None;
    }

    /// Whether a read failed because the login queue timed out.
    pub fn was_shed(&self) -> bool {
        self.shed
    }

    /// Whether a read failed because the client had closed the connection by the time its
    /// bytes got a login slot.
    pub fn was_abandoned(&self) -> bool {
        self.abandoned
    }

    fn take_stash(&mut self, buf: &mut [u8]) -> usize {
        let n = self.stash.len().min(buf.len());
        buf[..n].copy_from_slice(&self.stash[..n]);
        self.stash.drain(..n);
        n
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for LoginGatedStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.gating {
            if !this.stash.is_empty() {
                return Poll::Ready(Ok(this.take_stash(buf)));
            }
            let read = Pin::new(&mut this.inner).poll_read(cx, buf);
            this.record(&read);
            return read;
        }
        if this.stash.is_empty() {
            if this.permit.is_some() {
                let read = Pin::new(&mut this.inner).poll_read(cx, buf);
                this.record(&read);
                if read.is_pending() {
                    if this.replied {
                        // Our flight is out and the client's answer (its Finished, cheap to
                        // check) has not come: the rest of the handshake needs no slot.
                        this.end_gating();
                    } else {
                        // Half a ClientHello: wait for the rest without a slot.
                        this.permit = None;
                    }
                }
                return read;
            }
            this.stash.resize(buf.len(), 0);
            let read = Pin::new(&mut this.inner).poll_read(cx, &mut this.stash);
            this.record(&read);
            match read {
                Poll::Ready(Ok(n)) if n > 0 => this.stash.truncate(n),
                other => {
                    this.stash.clear();
                    return other;
                }
            }
        }
        if this.permit.is_none() {
            let shard = this.shard.clone();
            let admission = this.admission.get_or_insert_with(|| {
                Box::pin(async move { shard.admit_login(LoginStage::Handshake).await })
            });
            let admitted = admission.as_mut().poll(cx);
            if let Some(clock) = &this.clock {
                if admitted.is_pending() {
                    clock.queued();
                } else {
                    clock.dequeued();
                }
            }
            match admitted {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(_)) if peer_closed(this.fd) => {
                    // Dropping the permit hands the slot to the next in line.
                    this.abandoned = true;
                    this.admission = None;
                    return Poll::Ready(Err(io::ErrorKind::ConnectionAborted.into()));
                }
                Poll::Ready(Ok(permit)) => this.permit = Some(permit),
                Poll::Ready(Err(shed)) => {
                    this.shed = true;
                    this.admission = None;
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, shed)));
                }
            }
            this.admission = None;
        }
        Poll::Ready(Ok(this.take_stash(buf)))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for LoginGatedStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.replied = true;
        }
        this.record(&written);
        written
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx)
    }
}
