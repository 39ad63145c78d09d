//! OpenSSL error-queue hygiene: every TLS operation must find its thread's error queue empty
//! and leave it empty.
//!
//! OpenSSL reports why a call failed through a per-thread queue, and `SSL_get_error` looks at
//! that queue to classify a failure: an entry left behind by one connection makes a later,
//! unrelated call on the same shard thread look failed. The usual cure, clearing the queue
//! before every call "just in case", is what Kudu found costing library-wide locks and ~5× in
//! RPC throughput (OpenSSL 1.0); on OpenSSL 3.0 an `ERR_clear_error` on an empty queue still
//! costs ~0.4 µs here. So nothing here clears defensively. Instead the code that makes OpenSSL
//! calls must drain what it causes (the `openssl` crate turns every failure into an
//! `ErrorStack`, which drains the queue), and in debug builds [`ErrorQueueChecked`] and
//! [`guarded`] assert, on entry to and exit from every TLS operation (handshake, read, write,
//! flush, shutdown), that the queue is empty. The integration tests run the debug binary, so
//! the whole suite runs with the check. Release builds compile it away.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};

/// Runs `op`, one TLS operation named `what`; in debug builds asserts that the thread's
/// OpenSSL error queue is empty before and after it.
///
/// # Panics
/// In debug builds, when the queue is not empty: the message names the operation, the side
/// (entry or exit) and the queued errors (which the check drains).
#[inline]
pub fn guarded<T>(what: &str, op: impl FnOnce() -> T) -> T {
    #[cfg(not(debug_assertions))]
    let _ = what;
    #[cfg(debug_assertions)]
    assert_empty(what, "entry to");
    let result = op();
    #[cfg(debug_assertions)]
    assert_empty(what, "exit from");
    result
}

#[cfg(debug_assertions)]
fn assert_empty(what: &str, side: &str) {
    // SAFETY: reads the calling thread's error queue without changing it.
    if unsafe { openssl_sys::ERR_peek_last_error() } != 0 {
        let queued = openssl::error::ErrorStack::get();
        panic!("OpenSSL error queue not empty on {side} TLS {what}: {queued}");
    }
}

/// A TLS stream whose every read, write, flush and close runs under [`guarded`]. A plain
/// pass-through in release builds.
#[derive(Debug)]
pub struct ErrorQueueChecked<S> {
    inner: S,
}

impl<S> ErrorQueueChecked<S> {
    /// Wraps an established TLS stream.
    pub fn new(inner: S) -> Self {
        Self { inner }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped stream, for a TLS operation the stream traits do not cover (the caller
    /// runs it under [`guarded`]).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ErrorQueueChecked<S> {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let inner = Pin::new(&mut self.get_mut().inner);
        guarded("read", || inner.poll_read(cx, buf))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ErrorQueueChecked<S> {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let inner = Pin::new(&mut self.get_mut().inner);
        guarded("write", || inner.poll_write(cx, buf))
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let inner = Pin::new(&mut self.get_mut().inner);
        guarded("flush", || inner.poll_flush(cx))
    }

    #[inline]
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let inner = Pin::new(&mut self.get_mut().inner);
        guarded("shutdown", || inner.poll_close(cx))
    }
}

#[cfg(all(test, debug_assertions))]
mod tests {
    use super::*;
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    use openssl::error::ErrorStack;

    /// Puts one real OpenSSL error on this thread's queue (a PEM parse failure).
    fn queue_an_error() {
        let stack = openssl::x509::X509::from_pem(b"not a certificate").expect_err("junk");
        assert!(!stack.errors().is_empty());
        stack.put();
    }

    fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default()
    }

    #[test]
    fn an_empty_queue_passes() {
        assert!(ErrorStack::get().errors().is_empty());
        assert_eq!(guarded("read", || 7), 7);
    }

    #[test]
    fn an_entry_left_before_a_tls_operation_fires_on_entry() {
        queue_an_error();
        let ran = std::cell::Cell::new(false);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            guarded("read", || ran.set(true))
        }));
        let message = panic_message(caught.expect_err("the guard must fire"));
        assert!(
            message.starts_with("OpenSSL error queue not empty on entry to TLS read: "),
            "{message}"
        );
        assert!(message.contains("PEM"), "{message}");
        assert!(!ran.get(), "the operation must not run");
        // The check drained what it reported.
        assert!(ErrorStack::get().errors().is_empty());
    }

    #[test]
    fn an_entry_left_by_a_tls_operation_fires_on_exit() {
        let caught = std::panic::catch_unwind(|| guarded("write", queue_an_error));
        let message = panic_message(caught.expect_err("the guard must fire"));
        assert!(
            message.starts_with("OpenSSL error queue not empty on exit from TLS write: "),
            "{message}"
        );
        assert!(ErrorStack::get().errors().is_empty());
    }

    #[test]
    fn the_stream_wrapper_checks_reads_writes_and_close() {
        let mut stream = ErrorQueueChecked::new(futures_lite::io::Cursor::new(b"abc".to_vec()));
        let mut buf = [0u8; 3];
        futures_lite::future::block_on(stream.read_exact(&mut buf)).expect("read");
        assert_eq!(&buf, b"abc");
        for (what, op) in [("read", 0), ("write", 1), ("shutdown", 2)] {
            queue_an_error();
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                futures_lite::future::block_on(async {
                    match op {
                        0 => drop(stream.read(&mut buf).await),
                        1 => drop(stream.write(b"x").await),
                        _ => drop(stream.close().await),
                    }
                })
            }));
            let message = panic_message(caught.expect_err("the guard must fire"));
            assert!(
                message.starts_with(&format!(
                    "OpenSSL error queue not empty on entry to TLS {what}"
                )),
                "{message}"
            );
        }
    }
}
