//! What one shard gathers for one other shard between two turns of its sender task, and that
//! task: everything gathered leaves as one message of the channel mesh, with one wake-up of
//! the receiving shard instead of one per item.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};

use glommio::channels::channel_mesh::Senders;

/// Items (requests or replies) waiting for the sender task toward one shard, in order.
pub(super) struct Outbox<T> {
    items: RefCell<Vec<T>>,
    /// The sender task, parked while the outbox is empty.
    sender: Cell<Option<Waker>>,
    /// Tasks waiting for room ([`Outbox::push_bounded`] found it full).
    waiting_for_room: RefCell<Vec<Waker>>,
}

impl<T> Default for Outbox<T> {
    fn default() -> Self {
        Self {
            items: RefCell::new(Vec::new()),
            sender: Cell::new(None),
            waiting_for_room: RefCell::new(Vec::new()),
        }
    }
}

impl<T: Send> Outbox<T> {
    /// Adds `item` after the others, without waiting (replies: the job already ran).
    pub(super) fn push(&self, item: T) {
        let mut items = self.items.borrow_mut();
        items.push(item);
        if items.len() == 1 {
            self.wake_sender();
        }
    }

    /// Adds `item` after the others once the outbox holds fewer than `limit` items
    /// (`--cross-shard-queue`).
    pub(super) async fn push_bounded(&self, item: T, limit: usize) {
        let mut item = Some(item);
        poll_fn(|cx| {
            if self.items.borrow().len() >= limit {
                self.waiting_for_room.borrow_mut().push(cx.waker().clone());
                return Poll::Pending;
            }
            if let Some(item) = item.take() {
                self.push(item);
            }
            Poll::Ready(())
        })
        .await;
    }

    /// Wakes the sender task (to send what is gathered, or to see that the outbox closes).
    pub(super) fn wake_sender(&self) {
        if let Some(waker) = self.sender.take() {
            waker.wake();
        }
    }

    /// The sender task toward shard `destination`: sends what the outbox gathered as one
    /// message per turn until `closing` is set and the outbox is empty. When the mesh refuses
    /// a message (the destination stopped), its items are dropped and `lost` is called.
    pub(super) async fn run(
        &self,
        senders: &Senders<Vec<T>>,
        destination: usize,
        closing: &Cell<bool>,
        lost: impl Fn(),
    ) {
        loop {
            let batch = poll_fn(|cx| {
                let mut items = self.items.borrow_mut();
                if !items.is_empty() {
                    Poll::Ready(Some(std::mem::take(&mut *items)))
                } else if closing.get() {
                    Poll::Ready(None)
                } else {
                    self.sender.set(Some(cx.waker().clone()));
                    Poll::Pending
                }
            })
            .await;
            let Some(batch) = batch else {
                return;
            };
            for waker in self.waiting_for_room.take() {
                waker.wake();
            }
            if let Err(err) = senders.send_to(destination, batch).await {
                tracing::debug!("cross-shard send to shard {destination} failed: {err}");
                lost();
            }
        }
    }
}

/// Closes one shard's side of a mesh: sets `closing`, lets the sender `tasks` (one per
/// outbox) send what is left and end, then closes `senders`, which ends the peers' streams.
pub(super) async fn close<T: Send>(
    outboxes: &[Outbox<T>],
    closing: &Cell<bool>,
    tasks: Vec<glommio::Task<()>>,
    senders: &Senders<Vec<T>>,
) {
    closing.set(true);
    for outbox in outboxes {
        outbox.wake_sender();
    }
    for task in tasks {
        task.await;
    }
    senders.close();
}
