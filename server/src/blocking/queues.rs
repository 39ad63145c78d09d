//! The owner shard's side of blocking pops: for each key of this shard some connection waits
//! on, the waiters in arrival order (Redis 7.0 `blocked.c`: `db->blocking_keys`, a list of
//! clients per key, served first-come first-served by `serveClientsBlockedOnKey`).

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use bytes::Bytes;

use super::op::BlockOp;

/// One waiter as its owner shard knows it: the shard of its connection and the waiter id
/// that shard gave it ([`super::slots::Slots`]), and what to do for it when served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiter {
    /// The shard serving the waiting connection.
    pub shard: usize,
    /// The waiter's id on that shard (unique there for the process's life).
    pub id: u64,
    /// The pop (or move) to run for it.
    pub op: BlockOp,
    /// When its command reached the server (its connection's shard): the queue's order, so a
    /// waiter whose queueing crossed the mesh keeps its place before one that came later on
    /// the owner's own connections (the monotonic clock is one for all cores).
    pub since: Instant,
    /// Every key it waits on is this shard's: the slot is reserved for this owner from the
    /// start, so the owner serves it without asking (see [`super::slots`]).
    pub sole: bool,
}

/// Waiters per `(database, key)`, each queue in arrival order. A waiter blocked on several
/// keys of this shard is in each of their queues.
#[derive(Debug, Default)]
pub struct KeyQueues {
    queues: HashMap<(usize, Bytes), VecDeque<Waiter>>,
    entries: usize,
}

impl KeyQueues {
    /// Queues `waiter` on `key` in database `db`, after every waiter that came no later
    /// (arrival order; a key named twice by one command is queued once, as Redis's
    /// `blockForKeys` does).
    pub fn push(&mut self, db: usize, key: Bytes, waiter: Waiter) {
        let queue = self.queues.entry((db, key)).or_default();
        if queue
            .iter()
            .any(|w| w.shard == waiter.shard && w.id == waiter.id)
        {
            return;
        }
        let at = queue.partition_point(|w| w.since <= waiter.since);
        queue.insert(at, waiter);
        self.entries += 1;
    }

    /// The `skip`-th waiter (0 = the first) of `key`'s queue.
    pub fn nth(&self, db: usize, key: &Bytes, skip: usize) -> Option<Waiter> {
        self.queues.get(&(db, key.clone()))?.get(skip).cloned()
    }

    /// Removes waiter `id` of shard `shard` from every queue; how many entries went.
    pub fn remove(&mut self, shard: usize, id: u64) -> usize {
        let mut removed = 0;
        self.queues.retain(|_, queue| {
            let before = queue.len();
            queue.retain(|w| !(w.shard == shard && w.id == id));
            removed += before - queue.len();
            !queue.is_empty()
        });
        self.entries -= removed;
        removed
    }

    /// Queue entries in all (0: no connection waits on this shard's keys).
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether no connection waits on this shard's keys.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The watched keys with the op of their first waiter, and of their first waiter of the
    /// other family (list / sorted set) if any (to test readiness).
    pub fn heads(&self) -> Vec<(usize, Bytes, BlockOp)> {
        let mut heads = Vec::with_capacity(self.queues.len());
        for ((db, key), q) in &self.queues {
            let Some(first) = q.front() else {
                continue;
            };
            heads.push((*db, key.clone(), first.op.clone()));
            if let Some(other) = q.iter().find(|w| w.op.on_zset() != first.op.on_zset()) {
                heads.push((*db, key.clone(), other.op.clone()));
            }
        }
        heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(shard: usize, id: u64) -> Waiter {
        Waiter {
            shard,
            id,
            op: BlockOp::Pop { left: true },
            sole: true,
            since: Instant::now(),
        }
    }

    #[test]
    fn a_waiter_that_came_earlier_is_queued_before_later_ones() {
        let mut q = KeyQueues::default();
        let early = waiter(1, 1);
        let late = waiter(0, 2);
        q.push(0, key("k"), late);
        q.push(0, key("k"), early);
        assert_eq!(q.nth(0, &key("k"), 0).map(|w| w.id), Some(1));
        assert_eq!(q.nth(0, &key("k"), 1).map(|w| w.id), Some(2));
    }

    fn key(k: &str) -> Bytes {
        Bytes::copy_from_slice(k.as_bytes())
    }

    #[test]
    fn waiters_are_kept_in_arrival_order() {
        let mut q = KeyQueues::default();
        q.push(0, key("k"), waiter(1, 7));
        q.push(0, key("k"), waiter(0, 3));
        q.push(0, key("k"), waiter(1, 2));
        let ids: Vec<(usize, u64)> = (0..4)
            .filter_map(|i| q.nth(0, &key("k"), i))
            .map(|w| (w.shard, w.id))
            .collect();
        assert_eq!(ids, vec![(1, 7), (0, 3), (1, 2)]);
        assert_eq!(q.len(), 3);
    }

    #[test]
    fn a_waiter_named_twice_is_queued_once() {
        let mut q = KeyQueues::default();
        q.push(0, key("k"), waiter(0, 1));
        q.push(0, key("k"), waiter(0, 1));
        assert_eq!(q.len(), 1);
        assert_eq!(q.nth(0, &key("k"), 1), None);
    }

    #[test]
    fn removal_takes_a_waiter_from_every_key_and_keeps_the_others_in_order() {
        let mut q = KeyQueues::default();
        q.push(0, key("a"), waiter(0, 1));
        q.push(0, key("a"), waiter(1, 1));
        q.push(0, key("b"), waiter(0, 1));
        q.push(0, key("a"), waiter(0, 2));
        assert_eq!(q.remove(0, 1), 2);
        assert_eq!(q.len(), 2);
        assert_eq!(
            q.nth(0, &key("a"), 0).map(|w| (w.shard, w.id)),
            Some((1, 1))
        );
        assert_eq!(
            q.nth(0, &key("a"), 1).map(|w| (w.shard, w.id)),
            Some((0, 2))
        );
        // `b` had only the removed waiter: its queue is gone.
        assert!(q.heads().iter().all(|(_, k, _)| k != "b"));
        assert_eq!(q.remove(0, 1), 0);
    }

    #[test]
    fn databases_have_their_own_queues() {
        let mut q = KeyQueues::default();
        q.push(0, key("k"), waiter(0, 1));
        q.push(3, key("k"), waiter(0, 2));
        assert_eq!(q.nth(3, &key("k"), 0).map(|w| w.id), Some(2));
        assert_eq!(q.nth(0, &key("k"), 1), None);
        q.remove(0, 2);
        assert!(!q.is_empty());
        q.remove(0, 1);
        assert!(q.is_empty());
    }
}
