//! Replies in request order, some ready now and some still on other shards.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use bytes::{Bytes, BytesMut};

use crate::aof::SyncPoint;
use crate::resp::{Frame, Protocol};

/// A reply not yet known: its frame arrives from another shard.
pub type LaterReply = Pin<Box<dyn Future<Output = Frame>>>;

/// The replies of one connection's pipelined requests, encoded into `out` strictly in request
/// order. Ready replies behind a pending one wait in the queue.
pub struct Pipeline {
    queue: VecDeque<(Protocol, Entry)>,
    /// Encoded replies waiting to be written to the socket.
    pub out: BytesMut,
}

enum Entry {
    Ready(Frame),
    Durable(SyncPoint, Frame),
    Later(LaterReply),
    Raw(Bytes),
}

impl Pipeline {
    /// An empty pipeline with an output buffer of `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            queue: VecDeque::new(),
            out: BytesMut::with_capacity(capacity),
        }
    }

    /// Adds a reply that is known now.
    pub fn ready(&mut self, protocol: Protocol, frame: Frame) {
        if self.queue.is_empty() {
            frame.encode(protocol, &mut self.out);
        } else {
            self.queue.push_back((protocol, Entry::Ready(frame)));
        }
    }

    /// Adds a reply computed on this shard that may leave only once `durable` resolves (the
    /// append-only log's signal under `appendfsync always`, see `Shard::durable`).
    pub fn durable(&mut self, protocol: Protocol, frame: Frame, durable: Option<SyncPoint>) {
        match durable {
            None => self.ready(protocol, frame),
            Some(point) => self
                .queue
                .push_back((protocol, Entry::Durable(point, frame))),
        }
    }

    /// Adds bytes that are already encoded, e.g. the `*N` header of EXEC's reply whose N
    /// elements follow as their own replies.
    pub fn raw(&mut self, bytes: Bytes) {
        if self.queue.is_empty() {
            self.out.extend_from_slice(&bytes);
        } else {
            // The protocol is not used for raw bytes.
            self.queue.push_back((Protocol::Resp2, Entry::Raw(bytes)));
        }
    }

    /// Adds a reply that another shard will produce.
    pub fn later(&mut self, protocol: Protocol, reply: LaterReply) {
        self.queue.push_back((protocol, Entry::Later(reply)));
    }

    /// Awaits every queued reply and encodes all of them, in order, into `out`.
    pub async fn drain(&mut self) {
        while let Some((protocol, entry)) = self.queue.pop_front() {
            let frame = match entry {
                Entry::Ready(frame) => frame,
                Entry::Durable(point, frame) => {
                    point.reached().await;
                    frame
                }
                Entry::Later(reply) => reply.await,
                Entry::Raw(bytes) => {
                    self.out.extend_from_slice(&bytes);
                    continue;
                }
            };
            frame.encode(protocol, &mut self.out);
        }
    }
}
