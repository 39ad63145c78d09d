//! The process-wide offload pool: N std threads that run hash jobs for every shard.
//!
//! A shard submits a job and awaits a `futures-channel` oneshot, which wakes a glommio task
//! from another thread, so the shard never blocks. The queue is bounded: when it is full,
//! submission fails at once (the login fails rather than piling up). Each job runs under
//! `catch_unwind`, so a panicking job fails only its own login and the thread keeps serving.
//! (glommio 0.9's `spawn_blocking` is not used: its pool has no `catch_unwind`.)

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use futures_channel::oneshot;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Why an offloaded job did not produce a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    /// The bounded queue already holds `capacity` waiting jobs.
    #[error("hash offload queue is full ({0} jobs waiting)")]
    QueueFull(usize),
    /// The job panicked; the pool thread recovered and keeps running.
    #[error("hash job panicked")]
    Panicked,
    /// The pool's threads are gone (cannot happen while an `OffloadPool` handle exists,
    /// unless a thread was killed).
    #[error("hash offload pool is shut down")]
    Closed,
}

struct Shared {
    /// Jobs submitted and not yet picked up by a thread.
    queued: AtomicUsize,
    /// Jobs being run right now.
    running: AtomicUsize,
    capacity: usize,
    threads: usize,
}

/// Handle to the pool; cheap to clone, `Send + Sync`. The threads exit when the last
/// handle is dropped and the queue has drained.
#[derive(Clone)]
pub struct OffloadPool {
    tx: SyncSender<Job>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for OffloadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffloadPool")
            .field("threads", &self.shared.threads)
            .field("capacity", &self.shared.capacity)
            .field("queued", &self.queue_depth())
            .finish()
    }
}

fn worker(rx: Arc<Mutex<Receiver<Job>>>, shared: Arc<Shared>) {
    loop {
        // A poisoned lock cannot happen (no job runs under it); treat it as shutdown.
        let job = match rx.lock() {
            Ok(guard) => guard.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        shared.queued.fetch_sub(1, Ordering::Relaxed);
        shared.running.fetch_add(1, Ordering::Relaxed);
        job();
        shared.running.fetch_sub(1, Ordering::Relaxed);
    }
}

impl OffloadPool {
    /// Starts `threads` (at least 1; `--hash-threads`, default 1) threads named
    /// `shardline-hash-N` with a queue of `capacity` (at least 1) waiting jobs.
    ///
    /// # Errors
    /// The OS error if a thread cannot be spawned.
    pub fn new(threads: usize, capacity: usize) -> std::io::Result<OffloadPool> {
        let (threads, capacity) = (threads.max(1), capacity.max(1));
        let (tx, rx) = sync_channel::<Job>(capacity);
        let rx = Arc::new(Mutex::new(rx));
        let shared = Arc::new(Shared {
            queued: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            capacity,
            threads,
        });
        for i in 0..threads {
            let (rx, shared) = (rx.clone(), shared.clone());
            std::thread::Builder::new()
                .name(format!("shardline-hash-{i}"))
                .spawn(move || worker(rx, shared))?;
        }
        Ok(OffloadPool { tx, shared })
    }

    /// Queues `f` and returns a future of its result; never blocks.
    ///
    /// # Errors
    /// [`OffloadError::QueueFull`] if `capacity` jobs are already waiting,
    /// [`OffloadError::Closed`] if the threads are gone. The returned future yields
    /// [`OffloadError::Panicked`] if `f` panics.
    pub fn submit<T, F>(
        &self,
        f: F,
    ) -> Result<impl std::future::Future<Output = Result<T, OffloadError>>, OffloadError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (done_tx, done_rx) = oneshot::channel::<Result<T, OffloadError>>();
        let job: Job = Box::new(move || {
            let result = catch_unwind(AssertUnwindSafe(f)).map_err(|_| OffloadError::Panicked);
            // The waiter may have gone away (connection closed): nothing to do then.
            let _ = done_tx.send(result);
        });
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send(job) {
            Ok(()) => Ok(async move { done_rx.await.unwrap_or(Err(OffloadError::Closed)) }),
            Err(e) => {
                self.shared.queued.fetch_sub(1, Ordering::Relaxed);
                Err(match e {
                    TrySendError::Full(_) => OffloadError::QueueFull(self.shared.capacity),
                    TrySendError::Disconnected(_) => OffloadError::Closed,
                })
            }
        }
    }

    /// Jobs waiting for a thread (the queue-depth gauge).
    pub fn queue_depth(&self) -> usize {
        self.shared.queued.load(Ordering::Relaxed)
    }

    /// Jobs being run right now (at most [`threads`](Self::threads)).
    pub fn running(&self) -> usize {
        self.shared.running.load(Ordering::Relaxed)
    }

    /// Number of pool threads.
    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// Queue capacity.
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }
}
