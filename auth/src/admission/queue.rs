//! The order in which waiting logins get a freed slot.
//!
//! **Two stages.** A login passes the gate twice: once to answer its ClientHello
//! ([`LoginStage::Handshake`]) and once to hash its password ([`LoginStage::Password`]).
//! Waiting password checks go first, up to [`PASSWORDS_PER_HANDSHAKE`] in a row while
//! handshakes wait: a connection whose handshake is already paid for finishes before another
//! one starts, so under a storm a login waits in one queue instead of two, and fewer paid
//! handshakes are left unused by clients that give up. Handshakes still get one slot in every
//! `PASSWORDS_PER_HANDSHAKE + 1`, so connections that keep sending AUTH cannot lock new
//! clients out.
//!
//! **Adaptive LIFO** (Facebook, "Fail at Scale", ACM Queue 13(8), 2015; the same idea as
//! CoDel's standing-queue test). Within a stage the order is first come first served while
//! the oldest waiter has waited less than `lifo_after`. Past that the queue is congested and
//! the newest waiter goes first: under overload the oldest waiters are the ones whose
//! clients are most likely to have given up (or to give up before their login finishes),
//! so serving them first spends the shard on logins nobody will use, which lengthens the
//! queue further until every login is late (congestion collapse). Served newest first, the
//! logins that complete are the ones still wanted. Starvation is bounded: a waiter that has
//! waited [`LIFO_AGING_FACTOR`] × `lifo_after` is served before newer ones again. (Waiters
//! whose clients have left are then dropped for the cost of a `poll(2)` by the server.)

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures_channel::oneshot;

use super::LoginPermit;

/// Password checks served in a row, while handshakes wait, before a handshake's turn.
pub const PASSWORDS_PER_HANDSHAKE: usize = 3;

/// In a congested queue, a waiter that has waited this many times `lifo_after` is served
/// before newer ones again.
pub const LIFO_AGING_FACTOR: u32 = 4;

/// Which pass of a login asks for a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginStage {
    /// Answering a ClientHello (key exchange and signature).
    Handshake,
    /// Verifying a password (SHA-512-crypt), on a connection past its handshake.
    Password,
}

type Waiter = oneshot::Sender<LoginPermit>;

/// The waiters of one stage, oldest first, with the time each started waiting.
#[derive(Default)]
struct StageQueue(VecDeque<(Instant, Waiter)>);

impl StageQueue {
    /// Drops the shed waiters (their receiver is gone) at the front, so that a queue holding
    /// only shed waiters is empty and the oldest waiter left is a live one (shed waiters must
    /// not make the queue look congested either).
    fn drop_shed_front(&mut self) {
        while self.0.front().is_some_and(|(_, tx)| tx.is_canceled()) {
            self.0.pop_front();
        }
    }

    /// The next waiter at `now` (module docs), live or not; call
    /// [`StageQueue::drop_shed_front`] first.
    fn pop(&mut self, now: Instant, lifo_after: Option<Duration>) -> Option<Waiter> {
        let oldest_wait = now.saturating_duration_since(self.0.front()?.0);
        let newest_first = lifo_after
            .is_some_and(|after| oldest_wait >= after && oldest_wait < after * LIFO_AGING_FACTOR);
        let next = if newest_first {
            self.0.pop_back()
        } else {
            self.0.pop_front()
        };
        next.map(|(_, tx)| tx)
    }
}

/// Every waiting login of a gate.
pub(super) struct Waiters {
    handshakes: StageQueue,
    passwords: StageQueue,
    /// Password checks served in a row while handshakes waited.
    passwords_in_a_row: usize,
    lifo_after: Option<Duration>,
}

impl Waiters {
    /// No waiters; newest first once the oldest has waited `lifo_after`.
    pub(super) fn new(lifo_after: Option<Duration>) -> Self {
        Self {
            handshakes: StageQueue::default(),
            passwords: StageQueue::default(),
            passwords_in_a_row: 0,
            lifo_after,
        }
    }

    pub(super) fn push(&mut self, stage: LoginStage, since: Instant, waiter: Waiter) {
        let queue = match stage {
            LoginStage::Handshake => &mut self.handshakes,
            LoginStage::Password => &mut self.passwords,
        };
        queue.0.push_back((since, waiter));
    }

    /// The next waiter to serve at `now` (module docs), live or not.
    pub(super) fn pop(&mut self, now: Instant) -> Option<Waiter> {
        // Otherwise a stage holding only shed waiters could take the turn, pop nothing, and
        // leave the other stage's live waiters without the freed slot.
        self.passwords.drop_shed_front();
        self.handshakes.drop_shed_front();
        let password_turn = !self.passwords.0.is_empty()
            && (self.handshakes.0.is_empty() || self.passwords_in_a_row < PASSWORDS_PER_HANDSHAKE);
        if password_turn {
            self.passwords_in_a_row = if self.handshakes.0.is_empty() {
                0
            } else {
                self.passwords_in_a_row + 1
            };
            self.passwords.pop(now, self.lifo_after)
        } else {
            self.passwords_in_a_row = 0;
            self.handshakes.pop(now, self.lifo_after)
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.handshakes.0.is_empty() && self.passwords.0.is_empty()
    }

    /// Waiters not shed yet.
    pub(super) fn live(&self) -> usize {
        self.handshakes
            .0
            .iter()
            .chain(&self.passwords.0)
            .filter(|(_, tx)| !tx.is_canceled())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A queue of `n` waiters, waiter `i` waiting since `t0 + i ms`, and their receivers.
    fn queue(t0: Instant, n: u32) -> (StageQueue, Vec<oneshot::Receiver<LoginPermit>>) {
        let mut q = StageQueue::default();
        let mut receivers = Vec::new();
        for i in 0..n {
            let (tx, rx) = oneshot::channel();
            q.0.push_back((t0 + MS * i, tx));
            receivers.push(rx);
        }
        (q, receivers)
    }

    /// Pops at `now` and returns which waiter (by queue order) got the slot.
    fn served(
        q: &mut StageQueue,
        now: Instant,
        lifo_after: Option<Duration>,
        rx: &mut [oneshot::Receiver<LoginPermit>],
    ) -> usize {
        q.drop_shed_front();
        let tx = q.pop(now, lifo_after).expect("a waiter");
        assert!(tx.send(LoginPermit { gate: None }).is_ok());
        rx.iter_mut()
            .position(|r| matches!(r.try_recv(), Ok(Some(_))))
            .expect("one receiver got the permit")
    }

    #[test]
    fn first_come_first_served_until_the_oldest_waited_lifo_after() {
        let t0 = Instant::now();
        let lifo = Some(MS * 500);
        let (mut q, mut rx) = queue(t0, 5);
        // The oldest has waited 100 ms: oldest first.
        assert_eq!(served(&mut q, t0 + MS * 100, lifo, &mut rx), 0);
        // The oldest left (1) has waited 599 ms: congested, newest first.
        assert_eq!(served(&mut q, t0 + MS * 600, lifo, &mut rx), 4);
        // Past 4 × 500 ms the oldest goes first again.
        assert_eq!(served(&mut q, t0 + MS * 2001, lifo, &mut rx), 1);
        // Without lifo_after, always oldest first.
        assert_eq!(served(&mut q, t0 + MS * 1000, None, &mut rx), 2);
    }

    #[test]
    fn a_stage_of_shed_waiters_does_not_keep_the_slot_from_the_other_stage() {
        let t0 = Instant::now();
        let mut waiters = Waiters::new(None);
        let (shed, shed_rx) = oneshot::channel();
        waiters.push(LoginStage::Password, t0, shed);
        drop(shed_rx);
        let (live, mut live_rx) = oneshot::channel();
        waiters.push(LoginStage::Handshake, t0, live);
        let tx = waiters.pop(t0).expect("the live handshake");
        assert!(tx.send(LoginPermit { gate: None }).is_ok());
        assert!(matches!(live_rx.try_recv(), Ok(Some(_))));
        assert!(waiters.is_empty());
    }

    #[test]
    fn shed_waiters_do_not_make_the_queue_look_congested() {
        let t0 = Instant::now();
        let (mut q, mut rx) = queue(t0, 3);
        // The first waiter was shed (its receiver dropped); the other two are fresh.
        drop(rx.remove(0));
        q.0[1].0 = t0 + MS * 900;
        q.0[2].0 = t0 + MS * 901;
        assert_eq!(served(&mut q, t0 + MS * 1000, Some(MS * 500), &mut rx), 0);
        assert!(q.0.len() == 1);
    }
}
