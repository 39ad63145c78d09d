//! The way back of a forwarded request: its reply.
//!
//! A reply to another shard does not cross alone. The owner shard puts it in its reply outbox
//! for the source shard, and everything that outbox gathered while the owner ran returns as
//! one message of the reply mesh. On the source shard one task per peer hands each reply to
//! the slot its connection waits on: one cross-thread wake-up per batch, and the wake-ups of
//! the waiting connections stay on their own shard. A reply to a job of the same shard (one
//! parked at the shard's gate) goes through a oneshot channel.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use futures_channel::oneshot;
use glommio::channels::channel_mesh::{Receivers, Senders};
use slab::Slab;

use super::outbox::Outbox;
use crate::resp::Frame;
use crate::shard::Shard;

/// One message of the reply mesh: replies one owner shard owes one source shard, each with
/// the source's slot number.
pub type ReplyBatch = Vec<(usize, Frame)>;

/// The reply of a request whose owner shard went away (stopped, or the mesh closed).
fn dropped() -> Frame {
    Frame::error("ERR owner shard dropped the request")
}

/// Where a job's reply goes.
pub enum ReplyTo {
    /// A task of the owner shard itself waits on this channel.
    Local(oneshot::Sender<Frame>),
    /// Slot `slot` of shard `source` waits: the reply travels back in a reply batch.
    Remote {
        /// The shard that forwarded the request.
        source: usize,
        /// Its slot number there ([`PendingReplies`]).
        slot: usize,
    },
}

impl ReplyTo {
    /// Sends `frame` where it is awaited; `replies` are the owner's reply outboxes.
    pub fn deliver(self, replies: &ReplyOutboxes, frame: Frame) {
        match self {
            ReplyTo::Local(sender) => {
                let _ = sender.send(frame);
            }
            ReplyTo::Remote { source, slot } => match replies.outboxes.get(source) {
                Some(outbox) => outbox.push((slot, frame)),
                None => tracing::debug!("reply to unknown shard {source} dropped"),
            },
        }
    }
}

/// Where a reply arrives on the shard that waits for it.
#[derive(Default)]
pub struct ReplySlot {
    frame: RefCell<Option<Frame>>,
    waker: Cell<Option<Waker>>,
}

impl ReplySlot {
    fn fill(&self, frame: Frame) {
        *self.frame.borrow_mut() = Some(frame);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

/// A reply being waited for: resolves to the frame, or to an `ERR` frame when the owner shard
/// dropped the request.
pub enum ReplyReceiver {
    /// From a job of this shard.
    Local(oneshot::Receiver<Frame>),
    /// From another shard, through the reply mesh.
    Remote(Rc<ReplySlot>),
}

impl From<oneshot::Receiver<Frame>> for ReplyReceiver {
    fn from(receiver: oneshot::Receiver<Frame>) -> Self {
        ReplyReceiver::Local(receiver)
    }
}

impl Future for ReplyReceiver {
    type Output = Frame;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Frame> {
        match self.get_mut() {
            ReplyReceiver::Local(receiver) => Pin::new(receiver)
                .poll(cx)
                .map(|r| r.unwrap_or_else(|_| dropped())),
            ReplyReceiver::Remote(slot) => match slot.frame.borrow_mut().take() {
                Some(frame) => Poll::Ready(frame),
                None => {
                    slot.waker.set(Some(cx.waker().clone()));
                    Poll::Pending
                }
            },
        }
    }
}

/// The slots of one shard's requests to other shards whose replies have not arrived yet.
#[derive(Default)]
pub struct PendingReplies {
    /// (owner shard, slot) by slot number. A number is reused only after its reply arrived.
    slots: RefCell<Slab<(usize, Rc<ReplySlot>)>>,
}

impl PendingReplies {
    /// A slot for the reply of a request to shard `owner`: its number and its receiver.
    pub fn register(&self, owner: usize) -> (usize, ReplyReceiver) {
        let slot = Rc::new(ReplySlot::default());
        let number = self.slots.borrow_mut().insert((owner, slot.clone()));
        (number, ReplyReceiver::Remote(slot))
    }

    /// Hands `frame` to slot `number` (nothing if there is no such slot).
    pub fn fill(&self, number: usize, frame: Frame) {
        let slot = self.slots.borrow_mut().try_remove(number);
        if let Some((_, slot)) = slot {
            slot.fill(frame);
        }
    }

    /// Answers every slot still waiting for shard `owner` with an `ERR` frame: its replies
    /// will not come (it stopped, or the mesh refused the requests).
    pub fn fail_from(&self, owner: usize) {
        let failed: Vec<Rc<ReplySlot>> = {
            let mut slots = self.slots.borrow_mut();
            let numbers: Vec<usize> = slots
                .iter()
                .filter(|(_, (from, _))| *from == owner)
                .map(|(number, _)| number)
                .collect();
            numbers.into_iter().map(|n| slots.remove(n).1).collect()
        };
        for slot in failed {
            slot.fill(dropped());
        }
    }
}

/// One owner shard's reply outboxes, one per source shard, and their sender tasks.
pub struct ReplyOutboxes {
    senders: Senders<ReplyBatch>,
    outboxes: Vec<Outbox<(usize, Frame)>>,
    closing: Cell<bool>,
}

impl ReplyOutboxes {
    /// Wraps this shard's senders of the reply mesh.
    pub fn new(senders: Senders<ReplyBatch>) -> Self {
        let outboxes = (0..senders.nr_consumers())
            .map(|_| Outbox::default())
            .collect();
        Self {
            senders,
            outboxes,
            closing: Cell::new(false),
        }
    }

    /// Sends the replies owed to shard `source` in batches until [`ReplyOutboxes::close`].
    /// Spawned once per other shard.
    pub async fn run_outbox(&self, source: usize) {
        self.outboxes[source]
            .run(&self.senders, source, &self.closing, || {})
            .await
    }

    /// Sends what is left and closes this shard's side of the reply mesh: after no request
    /// from another shard can arrive any more. `tasks` are the [`ReplyOutboxes::run_outbox`]
    /// tasks.
    pub async fn close(&self, tasks: Vec<glommio::Task<()>>) {
        super::outbox::close(&self.outboxes, &self.closing, tasks, &self.senders).await
    }
}

/// Hands the replies other shards send back to this one to their slots, until every peer has
/// closed its side of the reply mesh; what a peer never answered fails then.
pub async fn serve_peer_replies(shard: Rc<Shard>, receivers: Receivers<ReplyBatch>) {
    let on_batch = |source: &Shard, _peer: usize, batch: ReplyBatch| {
        source.metrics.cross_shard_reply_batch(batch.len());
        for (number, frame) in batch {
            source.peers.pending.fill(number, frame);
        }
    };
    let on_end = |source: &Shard, peer: usize| source.peers.pending.fail_from(peer);
    super::serve_mesh(shard, receivers, "cross-shard replies", on_batch, on_end).await
}
