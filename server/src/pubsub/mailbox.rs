//! One subscribed connection's mailbox: the `message` / `pmessage` deliveries its shard's
//! registry made for it, waiting for the connection's request loop to encode them.
//!
//! Redis writes a delivery straight into the subscriber's output buffer
//! (Redis 7.0 pubsub.c `addReplyPubsubMessage`); here the publisher's task cannot reach the
//! subscriber's buffer, so it queues the frame and wakes the subscriber's loop. The queue
//! counts towards the `pubsub` output-buffer class: once queued plus unwritten bytes reach
//! the hard limit the mailbox refuses further deliveries and the connection is closed.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::task::{Poll, Waker};

use crate::resp::Frame;

/// Deliveries for one connection, shared (`Rc`) by the registry entries of its
/// subscriptions and its request loop; single-threaded (one shard).
#[derive(Default)]
pub struct Mailbox {
    queue: RefCell<Vec<Frame>>,
    /// Approximate encoded size of `queue`, in bytes.
    queued_bytes: Cell<usize>,
    /// Unwritten reply bytes of the connection as of its last check (its loop sets it).
    unwritten: Cell<usize>,
    /// Hard limit of the `pubsub` class in bytes (0 = none), as of the loop's last check.
    hard_limit: Cell<u64>,
    /// A delivery would have passed the hard limit: the connection must be closed.
    overflowed: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox")
            .field("queued", &self.queue.borrow().len())
            .field("queued_bytes", &self.queued_bytes.get())
            .field("overflowed", &self.overflowed.get())
            .finish()
    }
}

impl Mailbox {
    /// Queues `frame` (encoded size about `size` bytes) and wakes the connection. Dropped,
    /// and the mailbox marked overflowed, when the queued and unwritten bytes would reach the
    /// hard limit. Returns whether it was queued.
    pub fn deliver(&self, frame: Frame, size: usize) -> bool {
        if self.overflowed.get() {
            return false;
        }
        let queued = self.queued_bytes.get() + size;
        let limit = self.hard_limit.get();
        if limit > 0 && (queued + self.unwritten.get()) as u64 >= limit {
            self.overflowed.set(true);
            self.queue.borrow_mut().clear();
            self.queued_bytes.set(0);
        } else {
            self.queue.borrow_mut().push(frame);
            self.queued_bytes.set(queued);
        }
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
        true
    }

    /// Takes every queued delivery, oldest first, into `into`.
    pub fn take_into(&self, into: &mut Vec<Frame>) {
        into.append(&mut self.queue.borrow_mut());
        self.queued_bytes.set(0);
    }

    /// Whether a delivery was refused for the hard limit.
    pub fn overflowed(&self) -> bool {
        self.overflowed.get()
    }

    /// Whether deliveries wait.
    pub fn has_deliveries(&self) -> bool {
        !self.queue.borrow().is_empty()
    }

    /// Records the connection's unwritten bytes and the class's hard limit (0 = none) for the
    /// check in [`Mailbox::deliver`].
    pub fn set_output(&self, unwritten: usize, hard_limit: u64) {
        self.unwritten.set(unwritten);
        self.hard_limit.set(hard_limit);
    }

    /// Resolves once a delivery is queued or the mailbox overflowed.
    pub async fn ready(&self) {
        poll_fn(|cx| {
            if self.overflowed.get() || self.has_deliveries() {
                Poll::Ready(())
            } else {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> Frame {
        Frame::Push(vec![Frame::bulk(b"message")])
    }

    #[test]
    fn queues_in_order_and_overflows_at_the_hard_limit() {
        let mailbox = Mailbox::default();
        mailbox.set_output(10, 100);
        assert!(mailbox.deliver(Frame::Integer(1), 40));
        assert!(mailbox.deliver(Frame::Integer(2), 40));
        let mut got = Vec::new();
        mailbox.take_into(&mut got);
        assert_eq!(got, vec![Frame::Integer(1), Frame::Integer(2)]);
        assert!(!mailbox.has_deliveries());
        // 10 unwritten + 50 + 40 = 100 reaches the limit.
        assert!(mailbox.deliver(frame(), 50));
        assert!(!mailbox.overflowed());
        assert!(mailbox.deliver(frame(), 40));
        assert!(mailbox.overflowed());
        assert!(!mailbox.has_deliveries());
        assert!(!mailbox.deliver(frame(), 1));
    }

    #[test]
    fn no_limit_when_zero() {
        let mailbox = Mailbox::default();
        for _ in 0..1000 {
            mailbox.deliver(frame(), 1 << 20);
        }
        assert!(!mailbox.overflowed());
    }
}
