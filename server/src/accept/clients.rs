//! `--maxclients`: connected clients counted over the whole process, as Redis does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::server::Shared;

/// Connected clients of the whole process against `--maxclients`.
#[derive(Debug)]
pub struct ClientSlots {
    max: AtomicUsize,
    connected: AtomicUsize,
}

impl ClientSlots {
    /// Room for `max` clients (the limit in force after
    /// [`crate::fd_limit::adjust_open_files_limit`]).
    pub fn new(max: usize) -> Self {
        Self {
            max: AtomicUsize::new(max),
            connected: AtomicUsize::new(0),
        }
    }

    /// The client limit in force (CONFIG GET / INFO `maxclients`).
    pub fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    /// Changes the limit (CONFIG SET maxclients): clients over a lowered limit stay connected,
    /// new ones are refused until fewer are connected, as in Redis.
    pub fn set_max(&self, max: usize) {
        self.max.store(max, Ordering::Relaxed);
    }

    /// Clients connected now, over all shards.
    pub fn connected(&self) -> usize {
        self.connected.load(Ordering::Acquire)
    }

    /// Counts one more client unless `max` are connected; false when full.
    fn try_take(&self) -> bool {
        self.connected
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max()).then_some(n + 1)
            })
            .is_ok()
    }

    fn give_back(&self) {
        self.connected.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One client's place under `--maxclients`, held from accept to close; given back on drop.
pub struct ClientSlot(Arc<Shared>);

impl ClientSlot {
    /// Takes a place, or `None` when `--maxclients` clients are connected.
    pub fn take(shared: &Arc<Shared>) -> Option<ClientSlot> {
        shared
            .clients
            .try_take()
            .then(|| ClientSlot(shared.clone()))
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.clients.give_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_max_clients_fit_across_threads_and_leaving_frees_a_place() {
        let slots = Arc::new(ClientSlots::new(10));
        let taken: usize = (0..4)
            .map(|_| {
                let slots = slots.clone();
                std::thread::spawn(move || (0..5).filter(|_| slots.try_take()).count())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().expect("thread"))
            .sum();
        assert_eq!(taken, 10);
        assert_eq!(slots.connected(), 10);
        assert!(!slots.try_take());
        slots.give_back();
        assert_eq!(slots.connected(), 9);
        assert!(slots.try_take());
        assert_eq!(slots.max(), 10);
    }
}
