//! Reading and writing one client stream at the same time.
//!
//! A client may write its whole pipeline before it reads a reply (redis-py's default
//! `pipeline().execute()` does). If the server stopped reading while a reply write is blocked,
//! both sides would wait for each other. So a connection waits for whichever comes first:
//! room in the socket for its unwritten replies, or more requests to execute.
//!
//! Both directions go through one `&mut` stream from one task. That suits OpenSSL: a
//! non-blocking `SSL_write` that wants to write may be retried later while `SSL_read` is
//! called in between, and async-openssl's acceptor runs with `SSL_MODE_ENABLE_PARTIAL_WRITE`
//! and `SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER`, so the retry may pass a longer (grown) buffer.
//! futures-rustls differs in one way: a write it accepts may wait, encrypted, in rustls's
//! buffer when the socket is full, and only a flush sends it later. So reply bytes count as
//! written only once a flush completed, and every wait flushes again.

use std::future::poll_fn;
use std::io::ErrorKind;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use futures_lite::{AsyncRead, AsyncWrite};

/// What a connection's wait on its stream ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent {
    /// This many request bytes were read into the chunk.
    Read(usize),
    /// Every unwritten reply byte is now written (and nothing arrived to read).
    Flushed,
    /// The client closed its sending side.
    Eof,
    /// Reading or writing failed (the socket or TLS).
    Failed,
}

/// Writes `out` while waiting for requests: resolves as soon as bytes were read into `chunk`,
/// the last byte of `out` was written, the client sent EOF, or an error occurred. Written bytes
/// are removed from the front of `out` and added to `*sent`.
pub async fn write_while_reading<S>(
    stream: &mut S,
    out: &mut BytesMut,
    chunk: &mut [u8],
    sent: &mut usize,
) -> StreamEvent
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    poll_fn(|cx| {
        let had_output = !out.is_empty();
        let Ok(flushed) = poll_write_out(stream, cx, out, sent) else {
            return Poll::Ready(StreamEvent::Failed);
        };
        match Pin::new(&mut *stream).poll_read(cx, chunk) {
            Poll::Ready(Ok(0)) => Poll::Ready(StreamEvent::Eof),
            Poll::Ready(Ok(n)) => Poll::Ready(StreamEvent::Read(n)),
            // A TLS client that closed its socket without close_notify: rustls reports it as
            // an error, the `openssl` crate as the end of the stream. RESP frames its own
            // requests, so a truncation cannot pass for a complete one: both are an EOF.
            Poll::Ready(Err(err)) if err.kind() == ErrorKind::UnexpectedEof => {
                Poll::Ready(StreamEvent::Eof)
            }
            Poll::Ready(Err(_)) => Poll::Ready(StreamEvent::Failed),
            Poll::Pending if had_output && flushed => Poll::Ready(StreamEvent::Flushed),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Writes as much of `out` as the socket takes now, without waiting.
///
/// Errors: the stream's write error (the connection is then unusable).
pub async fn write_ready<S>(stream: &mut S, out: &mut BytesMut, sent: &mut usize) -> Result<(), ()>
where
    S: AsyncWrite + Unpin,
{
    poll_fn(|cx| Poll::Ready(poll_write_out(stream, cx, out, sent).map(drop))).await
}

/// Writes all of `out`, waiting as long as the client keeps reading.
///
/// Errors: the stream's write error.
pub async fn write_all<S>(stream: &mut S, out: &mut BytesMut, sent: &mut usize) -> Result<(), ()>
where
    S: AsyncWrite + Unpin,
{
    poll_fn(|cx| match poll_write_out(stream, cx, out, sent) {
        Err(()) => Poll::Ready(Err(())),
        Ok(true) => Poll::Ready(Ok(())),
        Ok(false) => Poll::Pending,
    })
    .await
}

/// Writes from the front of `out` until it is empty, then flushes the stream (a TLS library
/// may hold encrypted bytes back: futures-rustls does when the socket is full). Returns
/// whether everything is on the socket; if not, the task is woken when it can write again.
///
/// Errors: the stream's write or flush error.
fn poll_write_out<S>(
    stream: &mut S,
    cx: &mut Context<'_>,
    out: &mut BytesMut,
    sent: &mut usize,
) -> Result<bool, ()>
where
    S: AsyncWrite + Unpin,
{
    while !out.is_empty() {
        match Pin::new(&mut *stream).poll_write(cx, out) {
            Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => return Err(()),
            Poll::Ready(Ok(n)) => {
                out.advance(n);
                *sent += n;
            }
            Poll::Pending => return Ok(false),
        }
    }
    match Pin::new(&mut *stream).poll_flush(cx) {
        Poll::Ready(Err(_)) => Err(()),
        Poll::Ready(Ok(())) => Ok(true),
        Poll::Pending => Ok(false),
    }
}
