//! The waiting connection's side: one slot per blocked connection of this shard, and the
//! reservation handshake that decides, exactly once, whether an owner shard may serve it.
//!
//! A slot is `Waiting` until an owner shard reserves it (`Reserved`): from then only that
//! owner decides its outcome (served, or "the list was empty after all" → `Waiting` again);
//! a timeout, CLIENT UNBLOCK or a closed connection meanwhile is noted and takes effect
//! when the owner answers. A `Waiting` slot that times out, is unblocked or whose
//! connection closes is removed at once, and owners asking to reserve it later hear
//! `Gone`: so no owner pops for a waiter that is no longer there.
//!
//! A waiter whose keys all live on one shard (the common case, and every hash-tagged key
//! set) is *sole*: its slot is reserved for that owner from the start, so the owner serves it
//! synchronously, in the very job of the push, without a round trip. Its timeout, CLIENT
//! UNBLOCK or closed connection then asks the owner to withdraw it ([`Cleanup::cancel`]):
//! the owner's queue is the arbiter — the waiter is either still queued there (withdrawn,
//! nothing popped) or already served (its reply is on its way and wins; for a closed
//! connection it is put back).

use std::collections::HashMap;

use futures_channel::oneshot;

use crate::resp::Frame;

/// What wakes a blocked connection.
#[derive(Debug)]
pub enum Wakeup {
    /// The reply (data, timeout's null, CLIENT UNBLOCK's error, WRONGTYPE).
    Reply(Frame),
    /// A move whose destination another shard owns: the source had data when the waiter
    /// was reserved; the connection now runs the non-blocking move itself (the cross-shard
    /// LMOVE composition), and blocks again if the source was emptied meanwhile.
    Handoff,
}

/// An owner's attempt to reserve a waiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    /// The waiter is this owner's to serve.
    Granted,
    /// Another owner holds it (a waiter blocked on keys of several shards): skip it for now.
    Busy,
    /// Timed out, unblocked, closed or served: drop it from the queues.
    Gone,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Reserved,
}

/// One blocked connection.
#[derive(Debug)]
struct Slot {
    client_id: u64,
    state: State,
    /// Owner shards where it is queued (distinct).
    owners: Vec<usize>,
    /// The reply to give it if it ends without data (timeout null, or UNBLOCK's error),
    /// once a pending reservation is answered; `None` while it should keep waiting.
    ending: Option<Frame>,
    /// Its connection is gone.
    abandoned: bool,
    /// Reserved for its one owner from the start.
    sole: bool,
    /// Queued on every owner: counts as blocked from then on (so a client that saw INFO
    /// `blocked_clients` count it knows its pushes will find it queued).
    queued: bool,
    /// The command's reply on timeout (null array, or null for the moves).
    timeout_reply: Frame,
    wake: Option<oneshot::Sender<Wakeup>>,
}

/// What the caller must do after a slot changed.
#[derive(Debug, Default, PartialEq)]
pub struct Cleanup {
    /// Remove the waiter from these owner shards' queues.
    pub unregister: Vec<usize>,
    /// Ask these owner shards to look at the waiter's keys again.
    pub kick: Vec<usize>,
    /// Ask this owner shard (of a sole waiter) to withdraw it: if it was still queued, the
    /// slot then ends ([`Slots::answer`] with nothing).
    pub cancel: Option<usize>,
}

/// This shard's blocked connections.
#[derive(Debug, Default)]
pub struct Slots {
    slots: HashMap<u64, Slot>,
    next_id: u64,
}

impl Slots {
    /// A new waiting slot for connection `client_id`, queued on `owners`; its id and the
    /// receiver that wakes the connection.
    /// `timeout_reply` is its command's reply on timeout.
    pub fn insert(
        &mut self,
        client_id: u64,
        owners: Vec<usize>,
        timeout_reply: Frame,
    ) -> (u64, oneshot::Receiver<Wakeup>) {
        self.next_id += 1;
        let sole = owners.len() == 1;
        let (wake, receiver) = oneshot::channel();
        self.slots.insert(
            self.next_id,
            Slot {
                client_id,
                state: if sole {
                    State::Reserved
                } else {
                    State::Waiting
                },
                sole,
                queued: false,
                owners,
                ending: None,
                abandoned: false,
                timeout_reply,
                wake: Some(wake),
            },
        );
        (self.next_id, receiver)
    }

    /// Blocked connections of this shard (INFO `blocked_clients`; a slot whose connection
    /// is gone, waiting for its owner's last word, is not one).
    pub fn len(&self) -> usize {
        self.slots
            .values()
            .filter(|s| s.queued && !s.abandoned)
            .count()
    }

    /// Drops slot `id` without a word (its command got data at once after all).
    pub fn discard(&mut self, id: u64) {
        self.slots.remove(&id);
    }

    /// Waiter `id` is queued on every owner shard.
    pub fn queued(&mut self, id: u64) {
        if let Some(slot) = self.slots.get_mut(&id) {
            slot.queued = true;
        }
    }

    /// Whether no connection of this shard is blocked.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The waiter id of connection `client_id`, when it is blocked.
    pub fn of_client(&self, client_id: u64) -> Option<u64> {
        self.slots
            .iter()
            .find(|(_, s)| s.client_id == client_id && !s.abandoned)
            .map(|(id, _)| *id)
    }

    /// An owner asks to serve waiter `id`.
    pub fn reserve(&mut self, id: u64) -> Reservation {
        match self.slots.get_mut(&id) {
            None => Reservation::Gone,
            Some(slot) if slot.state == State::Reserved => Reservation::Busy,
            Some(slot) => {
                slot.state = State::Reserved;
                Reservation::Granted
            }
        }
    }

    /// Ends waiter `id` without data with `reply` (CLIENT UNBLOCK … ERROR's error), or with
    /// its timeout reply when `None`: at once when waiting, else once its reserving owner
    /// answers. False when there is no such waiter.
    pub fn end(&mut self, id: u64, reply: Option<Frame>) -> (bool, Cleanup) {
        let Some(slot) = self.slots.get_mut(&id) else {
            return (false, Cleanup::default());
        };
        let reply = reply.unwrap_or_else(|| slot.timeout_reply.clone());
        if slot.state == State::Reserved {
            let first = slot.ending.is_none() && !slot.abandoned;
            slot.ending.get_or_insert(reply);
            return (true, Self::withdraw(slot, first));
        }
        self.finish(id, Wakeup::Reply(reply))
    }

    /// Waiter `id`'s connection is gone: the slot goes at once when waiting, else once its
    /// reserving owner answers.
    pub fn abandon(&mut self, id: u64) -> Cleanup {
        let Some(slot) = self.slots.get_mut(&id) else {
            return Cleanup::default();
        };
        let first = slot.ending.is_none() && !slot.abandoned;
        slot.abandoned = true;
        if slot.state == State::Reserved {
            return Self::withdraw(slot, first);
        }
        self.finish(id, Wakeup::Handoff).1
    }

    /// The reserving owner's answer for waiter `id`: `Some` wakeup (a reply or a hand-off),
    /// or `None` when the key had nothing after all. Returns whether the wakeup reached a
    /// live connection (false: whatever it took must be put back) and the cleanup.
    pub fn answer(&mut self, id: u64, wakeup: Option<Wakeup>) -> (bool, Cleanup) {
        let Some(slot) = self.slots.get_mut(&id) else {
            return (false, Cleanup::default());
        };
        match wakeup {
            Some(wakeup) if !slot.abandoned => self.finish(id, wakeup),
            Some(_) => (false, self.finish(id, Wakeup::Handoff).1),
            None => {
                if !slot.sole {
                    slot.state = State::Waiting;
                }
                if slot.abandoned {
                    return (true, self.finish(id, Wakeup::Handoff).1);
                }
                if let Some(reply) = slot.ending.take() {
                    return self.finish(id, Wakeup::Reply(reply));
                }
                let kick = slot.owners.clone();
                (
                    true,
                    Cleanup {
                        kick,
                        ..Cleanup::default()
                    },
                )
            }
        }
    }

    /// Removes slot `id`, waking its connection with `wakeup` (dropped when abandoned).
    fn finish(&mut self, id: u64, wakeup: Wakeup) -> (bool, Cleanup) {
        let Some(mut slot) = self.slots.remove(&id) else {
            return (false, Cleanup::default());
        };
        let delivered = !slot.abandoned
            && slot
                .wake
                .take()
                .is_some_and(|wake| wake.send(wakeup).is_ok());
        (
            delivered,
            Cleanup {
                unregister: slot.owners,
                ..Cleanup::default()
            },
        )
    }

    /// A sole waiter's first end request asks its owner to withdraw it.
    fn withdraw(slot: &Slot, first: bool) -> Cleanup {
        Cleanup {
            cancel: (slot.sole && first)
                .then(|| slot.owners.first().copied())
                .flatten(),
            ..Cleanup::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_slot_is_reserved_once() {
        let mut slots = Slots::default();
        let (id, _rx) = slots.insert(9, vec![0, 1], Frame::NullArray);
        assert_eq!(slots.reserve(id), Reservation::Granted);
        assert_eq!(slots.reserve(id), Reservation::Busy);
        assert_eq!(slots.reserve(id + 1), Reservation::Gone);
    }

    #[test]
    fn a_timeout_while_waiting_ends_it_and_later_reservations_find_it_gone() {
        let mut slots = Slots::default();
        let (id, mut rx) = slots.insert(9, vec![0, 1], Frame::NullArray);
        let (found, cleanup) = slots.end(id, None);
        assert!(found);
        assert_eq!(cleanup.unregister, vec![0, 1]);
        assert!(matches!(
            rx.try_recv(),
            Ok(Some(Wakeup::Reply(Frame::NullArray)))
        ));
        assert_eq!(slots.reserve(id), Reservation::Gone);
        assert!(slots.is_empty());
    }

    #[test]
    fn a_timeout_while_reserved_waits_for_the_owner() {
        let mut slots = Slots::default();
        let (id, mut rx) = slots.insert(9, vec![0, 1], Frame::NullArray);
        assert_eq!(slots.reserve(id), Reservation::Granted);
        slots.end(id, None);
        assert!(matches!(rx.try_recv(), Ok(None)));
        // The owner served it: the data wins over the timeout.
        let data = Frame::Bulk(bytes::Bytes::from_static(b"x"));
        let (delivered, cleanup) = slots.answer(id, Some(Wakeup::Reply(data.clone())));
        assert!(delivered);
        assert_eq!(cleanup.unregister, vec![0, 1]);
        assert!(matches!(rx.try_recv(), Ok(Some(Wakeup::Reply(f))) if f == data));
    }

    #[test]
    fn an_empty_answer_returns_to_waiting_or_ends_a_timed_out_waiter() {
        let mut slots = Slots::default();
        let (id, _rx) = slots.insert(9, vec![0, 1], Frame::NullArray);
        slots.reserve(id);
        let (_, cleanup) = slots.answer(id, None);
        assert_eq!(cleanup.kick, vec![0, 1]);
        assert_eq!(slots.reserve(id), Reservation::Granted);
        slots.end(id, None);
        let (_, cleanup) = slots.answer(id, None);
        assert_eq!(cleanup.unregister, vec![0, 1]);
        assert!(slots.is_empty());
    }

    #[test]
    fn data_for_an_abandoned_waiter_is_not_delivered() {
        let mut slots = Slots::default();
        let (id, rx) = slots.insert(9, vec![0, 1], Frame::Null);
        slots.reserve(id);
        assert_eq!(slots.abandon(id), Cleanup::default());
        drop(rx);
        let (delivered, cleanup) = slots.answer(
            id,
            Some(Wakeup::Reply(Frame::Bulk(bytes::Bytes::from_static(b"x")))),
        );
        assert!(!delivered);
        assert_eq!(cleanup.unregister, vec![0, 1]);
        // A waiting one is dropped at once.
        let (id, _rx) = slots.insert(9, vec![0, 1], Frame::Null);
        assert_eq!(slots.abandon(id).unregister, vec![0, 1]);
        assert_eq!(slots.reserve(id), Reservation::Gone);
    }

    #[test]
    fn a_sole_waiter_is_reserved_for_its_owner_and_asks_it_to_withdraw() {
        let mut slots = Slots::default();
        let (id, mut rx) = slots.insert(9, vec![1], Frame::NullArray);
        assert_eq!(slots.reserve(id), Reservation::Busy);
        let (found, cleanup) = slots.end(id, None);
        assert!(found);
        assert_eq!(cleanup.cancel, Some(1));
        // Asked once only.
        assert_eq!(slots.end(id, None).1.cancel, None);
        assert!(matches!(rx.try_recv(), Ok(None)));
        // Withdrawn by the owner: the timeout reply.
        let (_, cleanup) = slots.answer(id, None);
        assert_eq!(cleanup.unregister, vec![1]);
        assert!(matches!(
            rx.try_recv(),
            Ok(Some(Wakeup::Reply(Frame::NullArray)))
        ));
        // Abandoned, then served before the owner saw the withdrawal: not delivered.
        let (id, _rx) = slots.insert(9, vec![0], Frame::Null);
        assert_eq!(slots.len(), 0);
        slots.queued(id);
        assert_eq!(slots.len(), 1);
        assert_eq!(slots.abandon(id).cancel, Some(0));
        assert_eq!(slots.len(), 0);
        let served = Wakeup::Reply(Frame::Bulk(bytes::Bytes::from_static(b"x")));
        assert!(!slots.answer(id, Some(served)).0);
        assert!(slots.is_empty());
    }
}
