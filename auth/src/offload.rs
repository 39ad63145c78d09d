//! The process-wide offload pool: N std threads that run hash jobs for every shard.
//!
//! A shard submits a job and awaits a `futures-channel` oneshot, which wakes a glommio task
//! from another thread, so the shard never blocks. The queue is bounded: when it is full,
//! submission fails at once (the login fails rather than piling up). Each job runs under
//! `catch_unwind`, so a panicking job fails only its own login and the thread keeps serving.
//! (glommio 0.9's `spawn_blocking` is not used: its pool has no `catch_unwind`.)
//!
//! Password verifications ([`OffloadPool::submit_verify`]) are batched when the pool was
//! built with a lane kernel ([`OffloadPool::with_batching`]): a thread that picks up a
//! verification also takes every verification already waiting, up to the kernel's lanes,
//! and runs them in lock-step, one batch per round count (`--hash-batch`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use futures_channel::oneshot;
use zeroize::Zeroizing;

use crate::batching::{take_batch, Computation, Outcome};
use crate::sha512_crypt::PasswordHash;
use crate::sha512_lanes::{Kernel, MAX_LANES};

/// What a pool thread runs.
enum Job {
    /// Any closure ([`OffloadPool::submit`]).
    Task(Box<dyn FnOnce() + Send + 'static>),
    /// A password verification ([`OffloadPool::submit_verify`]), batchable.
    Verify(VerifyJob),
}

struct VerifyJob {
    hash: PasswordHash,
    password: Zeroizing<Vec<u8>>,
    done: oneshot::Sender<Result<Outcome, OffloadError>>,
}

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
    /// The lane kernel batching verifications, or `None` (one at a time).
    batch_kernel: Option<Kernel>,
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
    let lanes = shared
        .batch_kernel
        .map_or(1, |k| k.lanes().clamp(1, MAX_LANES));
    loop {
        // A poisoned lock cannot happen (no job runs under it); treat it as shutdown.
        let mut taken = Vec::new();
        match rx.lock() {
            Ok(guard) => {
                let Ok(job) = guard.recv() else { return };
                let batchable = matches!(job, Job::Verify(_)) && lanes > 1;
                taken.push(job);
                // Verifications already waiting join this one (never waits for more).
                while batchable && taken.len() < lanes {
                    match guard.try_recv() {
                        Ok(job) => taken.push(job),
                        Err(_) => break,
                    }
                }
            }
            Err(_) => return,
        }
        shared.queued.fetch_sub(taken.len(), Ordering::Relaxed);
        shared.running.fetch_add(taken.len(), Ordering::Relaxed);
        let count = taken.len();
        let mut verifications = std::collections::VecDeque::new();
        for job in taken {
            match job {
                Job::Task(task) => task(),
                Job::Verify(v) => verifications.push_back(v),
            }
        }
        let kernel = shared.batch_kernel.unwrap_or(Kernel::Scalar);
        while !verifications.is_empty() {
            let batch = take_batch(&mut verifications, lanes, |v| v.hash.rounds());
            run_verify_batch(kernel, batch);
        }
        shared.running.fetch_sub(count, Ordering::Relaxed);
    }
}

/// Runs one batch (one round count) and answers each waiter; a panic fails the batch's
/// logins only.
fn run_verify_batch(kernel: Kernel, batch: Vec<VerifyJob>) {
    let batch_size = batch.len();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let computation = Computation::new(
            kernel,
            batch.iter().map(|v| (&v.hash, v.password.as_slice())),
        );
        let digests = computation.finish();
        batch
            .iter()
            .zip(&digests)
            .map(|(v, d)| v.hash.matches(d))
            .collect::<Vec<bool>>()
    }));
    match result {
        Ok(matched) => {
            for (v, matched) in batch.into_iter().zip(matched) {
                // The waiter may have gone away (connection closed): nothing to do then.
                let _ = v.done.send(Ok(Outcome {
                    matched,
                    batch_size,
                }));
            }
        }
        Err(_) => {
            for v in batch {
                let _ = v.done.send(Err(OffloadError::Panicked));
            }
        }
    }
}

impl OffloadPool {
    /// Starts `threads` (at least 1; `--hash-threads`, default 1) threads named
    /// `shardline-hash-N` with a queue of `capacity` (at least 1) waiting jobs.
    ///
    /// # Errors
    /// The OS error if a thread cannot be spawned.
    pub fn new(threads: usize, capacity: usize) -> std::io::Result<OffloadPool> {
        OffloadPool::with_batching(threads, capacity, None)
    }

    /// As [`new`](Self::new), with verifications batched on `batch_kernel` (which must be
    /// available on this CPU; `None` = one at a time): a thread runs up to
    /// `batch_kernel.lanes()` waiting verifications of one round count together.
    ///
    /// # Errors
    /// The OS error if a thread cannot be spawned.
    pub fn with_batching(
        threads: usize,
        capacity: usize,
        batch_kernel: Option<Kernel>,
    ) -> std::io::Result<OffloadPool> {
        let (threads, capacity) = (threads.max(1), capacity.max(1));
        let (tx, rx) = sync_channel::<Job>(capacity);
        let rx = Arc::new(Mutex::new(rx));
        let shared = Arc::new(Shared {
            queued: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            capacity,
            threads,
            batch_kernel: batch_kernel.filter(|k| k.is_available()),
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
        let job = Job::Task(Box::new(move || {
            let result = catch_unwind(AssertUnwindSafe(f)).map_err(|_| OffloadError::Panicked);
            // The waiter may have gone away (connection closed): nothing to do then.
            let _ = done_tx.send(result);
        }));
        self.enqueue(job)?;
        Ok(async move { done_rx.await.unwrap_or(Err(OffloadError::Closed)) })
    }

    /// Queues a verification of `password` against `hash` and returns a future of its
    /// [`Outcome`]; never blocks. Batched with other waiting verifications when the pool
    /// batches ([`with_batching`](Self::with_batching)).
    ///
    /// # Errors
    /// As [`submit`](Self::submit).
    pub fn submit_verify(
        &self,
        hash: PasswordHash,
        password: &[u8],
    ) -> Result<impl std::future::Future<Output = Result<Outcome, OffloadError>>, OffloadError>
    {
        let (done, done_rx) = oneshot::channel::<Result<Outcome, OffloadError>>();
        self.enqueue(Job::Verify(VerifyJob {
            hash,
            password: Zeroizing::new(password.to_vec()),
            done,
        }))?;
        Ok(async move { done_rx.await.unwrap_or(Err(OffloadError::Closed)) })
    }

    fn enqueue(&self, job: Job) -> Result<(), OffloadError> {
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        match self.tx.try_send(job) {
            Ok(()) => Ok(()),
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

    /// The kernel verifications are batched on, or `None` when they run one at a time.
    pub fn batch_kernel(&self) -> Option<Kernel> {
        self.shared.batch_kernel
    }

    /// Queue capacity.
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }
}
