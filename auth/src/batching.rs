//! Batching the password verifications queued on a shard (`--hash-batch`, inline and
//! yield modes; offload batches in [`crate::OffloadPool`]).
//!
//! A login's verification is queued when its AUTH is read (`Verifier::submit`) and
//! run when its task awaits it (`Submitted::wait`). The first waiter to find no batch
//! running starts one at once with every queued verification of the front job's round
//! count, up to the kernel's lanes ([`crate::sha512_lanes::Kernel::lanes`]): a lone login
//! runs alone with no added wait, while during a storm the logins read since the last
//! batch began share the next one. Grouping by rounds keeps a lane from waiting on another
//! user's larger round count. One batch runs at a time per shard; the logins queued
//! meanwhile form the next.
//!
//! A waiter whose task is dropped leaves the queue; if it was running the batch, the
//! unfinished verifications go back to the front of the queue and another waiter starts
//! them again, so no login waits forever.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use zeroize::Zeroizing;

use crate::sha512_crypt::{CryptDigest, PasswordHash, Sha512CryptBatch, Sha512CryptState};
use crate::sha512_lanes::{Kernel, MAX_LANES};
use crate::verify::HashMode;

/// The result of one verification run in a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Whether the password's digest equals the stored one (constant-time comparison).
    pub matched: bool,
    /// Verifications in the batch it ran in, itself included (1 to [`MAX_LANES`]).
    pub batch_size: usize,
}

/// How a shard pays for a hash, alone or batched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// All rounds in one poll (`--hash-mode inline`).
    Inline,
    /// `glommio::yield_if_needed()` every this many rounds (`--hash-mode yield`).
    Yield(u32),
}

impl Pace {
    /// The `--hash-mode` this pace is.
    pub(crate) fn mode(self) -> HashMode {
        match self {
            Pace::Inline => HashMode::Inline,
            Pace::Yield(_) => HashMode::Yield,
        }
    }

    /// Runs `computation`'s rounds to the end at this pace (yield mode must run inside a
    /// glommio executor).
    pub(crate) async fn run(self, computation: &mut Computation) {
        match self {
            Pace::Inline => {
                computation.run_rounds(u32::MAX);
            }
            Pace::Yield(every) => {
                while !computation.run_rounds(every) {
                    glommio::yield_if_needed().await;
                }
            }
        }
    }
}

/// One verification: what to hash and where its outcome goes.
pub(crate) struct Job {
    hash: PasswordHash,
    password: Zeroizing<Vec<u8>>,
    outcome: Cell<Option<Outcome>>,
    waker: RefCell<Option<Waker>>,
    /// Its waiter is gone: never start it again.
    withdrawn: Cell<bool>,
}

impl Job {
    /// A verification of `password` against `hash`.
    pub(crate) fn new(hash: PasswordHash, password: &[u8]) -> Self {
        Job {
            hash,
            password: Zeroizing::new(password.to_vec()),
            outcome: Cell::new(None),
            waker: RefCell::new(None),
            withdrawn: Cell::new(false),
        }
    }

    pub(crate) fn rounds(&self) -> u32 {
        self.hash.rounds()
    }

    fn wake(&self) {
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }
}

/// A batch's computation: the scalar one for a lone job, else the lane kernel's.
pub(crate) enum Computation {
    /// One job ([`Sha512CryptState`], the fastest path for one).
    Single(Sha512CryptState),
    /// Two or more jobs with one round count, in lock-step.
    Lanes(Box<Sha512CryptBatch>),
}

impl Computation {
    /// Prepares `jobs` (1 to [`MAX_LANES`], all of one round count) on `kernel`.
    pub(crate) fn new<'a>(
        kernel: Kernel,
        jobs: impl ExactSizeIterator<Item = (&'a PasswordHash, &'a [u8])>,
    ) -> Self {
        let jobs: Vec<(&PasswordHash, &[u8])> = jobs.collect();
        match jobs.as_slice() {
            [(hash, password)] => Computation::Single(hash.start(password)),
            _ => {
                let rounds = jobs.first().map_or(0, |(h, _)| h.rounds());
                let inputs: Vec<(&[u8], &[u8])> = jobs
                    .iter()
                    .map(|(h, p)| (*p, h.setting().salt().as_bytes()))
                    .collect();
                Computation::Lanes(Box::new(Sha512CryptBatch::new(kernel, &inputs, rounds)))
            }
        }
    }

    /// Runs at most `max_rounds` rounds; `true` once done.
    pub(crate) fn run_rounds(&mut self, max_rounds: u32) -> bool {
        match self {
            Computation::Single(s) => s.run_rounds(max_rounds),
            Computation::Lanes(b) => b.run_rounds(max_rounds),
        }
    }

    /// The digests, in job order.
    pub(crate) fn finish(self) -> Vec<CryptDigest> {
        match self {
            Computation::Single(s) => vec![s.finish()],
            Computation::Lanes(b) => b.finish(),
        }
    }
}

/// Takes from `queue` the front job and every later one with its round count, up to
/// `lanes` jobs, keeping the order of the rest.
pub(crate) fn take_batch<J>(
    queue: &mut VecDeque<J>,
    lanes: usize,
    rounds: impl Fn(&J) -> u32,
) -> Vec<J> {
    let Some(first) = queue.front().map(&rounds) else {
        return Vec::new();
    };
    let mut batch = Vec::with_capacity(lanes);
    let mut rest = VecDeque::with_capacity(queue.len());
    for job in queue.drain(..) {
        if batch.len() < lanes && rounds(&job) == first {
            batch.push(job);
        } else {
            rest.push_back(job);
        }
    }
    *queue = rest;
    batch
}

/// The per-shard queue of verifications and the one batch running. Not `Send`.
pub(crate) struct ShardBatcher {
    kernel: Kernel,
    lanes: usize,
    queue: RefCell<VecDeque<Rc<Job>>>,
    running: Cell<bool>,
}

impl ShardBatcher {
    /// A batcher running batches of up to `kernel.lanes()` (at most [`MAX_LANES`]) jobs.
    pub(crate) fn new(kernel: Kernel) -> Self {
        ShardBatcher {
            kernel,
            lanes: kernel.lanes().clamp(1, MAX_LANES),
            queue: RefCell::new(VecDeque::new()),
            running: Cell::new(false),
        }
    }

    /// The kernel batches run on.
    pub(crate) fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Queues a verification; it runs when [`Queued::wait`] is awaited.
    pub(crate) fn submit(self: &Rc<Self>, hash: PasswordHash, password: &[u8]) -> Queued {
        let job = Rc::new(Job::new(hash, password));
        self.queue.borrow_mut().push_back(job.clone());
        Queued {
            batcher: self.clone(),
            job,
        }
    }

    /// Wakes every queued waiter: the first to run starts the next batch.
    fn wake_queued(&self) {
        let queued: Vec<Rc<Job>> = self.queue.borrow().iter().cloned().collect();
        for job in queued {
            job.wake();
        }
    }

    /// Runs the next batch in the calling task, at `pace`.
    async fn run_next(&self, pace: Pace) {
        let batch = take_batch(&mut self.queue.borrow_mut(), self.lanes, |j| j.rounds());
        if batch.is_empty() {
            return;
        }
        let running = Running {
            batcher: self,
            batch,
        };
        self.running.set(true);
        let mut computation = Computation::new(
            self.kernel,
            running
                .batch
                .iter()
                .map(|j| (&j.hash, j.password.as_slice())),
        );
        pace.run(&mut computation).await;
        let digests = computation.finish();
        let batch_size = running.batch.len();
        for (job, digest) in running.batch.iter().zip(&digests) {
            job.outcome.set(Some(Outcome {
                matched: job.hash.matches(digest),
                batch_size,
            }));
            job.wake();
        }
    }
}

/// The batch being run; on drop (done, or the running task was dropped) the jobs without an
/// outcome go back to the front of the queue and the waiters are woken.
struct Running<'a> {
    batcher: &'a ShardBatcher,
    batch: Vec<Rc<Job>>,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        {
            let mut queue = self.batcher.queue.borrow_mut();
            for job in self.batch.drain(..).rev() {
                if job.outcome.get().is_none() && !job.withdrawn.get() {
                    queue.push_front(job);
                }
            }
        }
        self.batcher.running.set(false);
        self.batcher.wake_queued();
    }
}

/// A queued verification. Dropping it before the outcome withdraws it.
pub(crate) struct Queued {
    batcher: Rc<ShardBatcher>,
    job: Rc<Job>,
}

impl Queued {
    /// Waits for the outcome, running batches on this task at `pace` whenever none is
    /// running.
    pub(crate) async fn wait(self, pace: Pace) -> Outcome {
        loop {
            if let Some(outcome) = self.job.outcome.get() {
                return outcome;
            }
            if !self.batcher.running.get() {
                self.batcher.run_next(pace).await;
                continue;
            }
            poll_fn(|cx| {
                if self.job.outcome.get().is_some() || !self.batcher.running.get() {
                    Poll::Ready(())
                } else {
                    *self.job.waker.borrow_mut() = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
            .await;
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.job.outcome.get().is_none() {
            self.job.withdrawn.set(true);
            self.batcher
                .queue
                .borrow_mut()
                .retain(|j| !Rc::ptr_eq(j, &self.job));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_batch_groups_by_the_front_jobs_rounds_up_to_lanes() {
        let mut q: VecDeque<u32> = [5000, 1000, 5000, 5000, 9999, 5000, 5000].into();
        assert_eq!(take_batch(&mut q, 3, |r| *r), vec![5000, 5000, 5000]);
        assert_eq!(q, VecDeque::from([1000, 9999, 5000, 5000]));
        assert_eq!(take_batch(&mut q, 3, |r| *r), vec![1000]);
        assert_eq!(take_batch(&mut q, 8, |r| *r), vec![9999]);
        assert_eq!(take_batch(&mut q, 1, |r| *r), vec![5000]);
        assert_eq!(q, VecDeque::from([5000]));
        assert_eq!(take_batch(&mut q, 8, |r| *r), vec![5000]);
        assert!(take_batch(&mut q, 8, |r| *r).is_empty());
    }
}
