//! Connections that have not sent their first byte.
//!
//! A TLS connection's handshake starts with the client's ClientHello. Until that arrives the
//! connection costs the shard a descriptor and a parked task, no CPU, so it is not timed: a
//! busy client may open its sockets long before it speaks (redis-py's asyncio client opening
//! 2,000 connections at once builds an SSL context for each, ~50 ms apiece, before the first
//! ClientHello leaves; its first sockets stay silent for over a minute), and redis-server,
//! which has no handshake timeout, serves it. The handshake's limits (`--handshake-timeout-ms`
//! without progress, `--handshake-max-ms` in all) start at the first byte.
//!
//! Silence is bounded by `--maxclients` instead. When a new connection finds the server full,
//! the accepting shard closes its own connection that has been silent the longest, if that
//! one has been silent for at least `--handshake-timeout-ms`, and gives its place to the
//! newcomer (`connections_closed_total{reason="silent_evicted"}`). Connections that say
//! nothing hold places only while nobody else needs them: a flood of them keeps real clients
//! out for at most `--handshake-timeout-ms`, as when silence was cut by the timeout, and a
//! flood of newcomers cannot push out a slow client that only just connected.
//!
//! With `--tls off` there is no handshake: a connection is a client at once, idle or not, as
//! in Redis.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_channel::oneshot;
use glommio::net::TcpStream;

use super::CloseReason;
use crate::accept::ClientSlot;

/// One shard's connections waiting for their first byte, in accept order.
#[derive(Default)]
pub struct SilentConnections {
    next_key: Cell<u64>,
    waiting: RefCell<BTreeMap<u64, Silent>>,
}

/// A connection waiting for its first byte: its `--maxclients` place and how to close it.
struct Silent {
    since: Instant,
    slot: ClientSlot,
    /// Sending (or dropping) this ends the wait in [`SilentConnections::first_byte`].
    evict: oneshot::Sender<()>,
}

impl SilentConnections {
    /// Closes the connection silent the longest if it has been silent for at least
    /// `min_silence` at `now`, and returns its `--maxclients` place; `None` otherwise.
    pub fn evict_longest_silent(&self, min_silence: Duration, now: Instant) -> Option<ClientSlot> {
        let mut waiting = self.waiting.borrow_mut();
        let oldest = waiting.first_entry()?;
        if now.saturating_duration_since(oldest.get().since) < min_silence {
            return None;
        }
        let evicted = oldest.remove();
        // A receiver already gone means its connection is ending anyway.
        let _ = evicted.evict.send(());
        Some(evicted.slot)
    }

    /// Waits until `tcp` has a byte to read, holding `slot` where
    /// [`SilentConnections::evict_longest_silent`] can take it meanwhile. Returns the slot and
    /// the first byte (left in the socket); or [`CloseReason::ClientClosed`] at EOF,
    /// [`CloseReason::IoError`] on a socket error, [`CloseReason::SilentEvicted`] if the place
    /// went to a newer connection.
    pub async fn first_byte(
        &self,
        tcp: &TcpStream,
        slot: ClientSlot,
    ) -> Result<(ClientSlot, u8), CloseReason> {
        let key = self.next_key.get();
        self.next_key.set(key + 1);
        let (evict, evicted) = oneshot::channel();
        self.waiting.borrow_mut().insert(
            key,
            Silent {
                since: Instant::now(),
                slot,
                evict,
            },
        );
        let mut waiting = Waiting {
            connections: self,
            key,
        };
        let mut probe = [0u8; 1];
        let peeked = futures_lite::future::or(async { Some(tcp.peek(&mut probe).await) }, async {
            let _ = evicted.await;
            None
        })
        .await;
        // Evicted, possibly in the same turn as the byte came.
        let slot = waiting.take_slot().ok_or(CloseReason::SilentEvicted)?;
        match peeked {
            Some(Ok(0)) => Err(CloseReason::ClientClosed),
            Some(Ok(_)) => Ok((slot, probe[0])),
            Some(Err(_)) => Err(CloseReason::IoError),
            None => Err(CloseReason::SilentEvicted),
        }
    }
}

/// A connection's entry in [`SilentConnections`]; removed when dropped (shutdown drops the
/// waiting future).
struct Waiting<'a> {
    connections: &'a SilentConnections,
    key: u64,
}

impl Waiting<'_> {
    /// Leaves the line with the connection's place, unless it was evicted.
    fn take_slot(&mut self) -> Option<ClientSlot> {
        let silent = self.connections.waiting.borrow_mut().remove(&self.key)?;
        Some(silent.slot)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.take_slot();
    }
}
