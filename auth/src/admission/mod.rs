//! Per-shard login admission (ScyllaDB's rule): at most `max_concurrent` connections may be
//! in their not-yet-ready phase (handshake + auth) at once; the rest wait and are shed after
//! `queue_timeout`. Who waits next is [`queue`]'s business: password checks ahead of
//! handshakes, first come first served until the queue is congested, newest first then.
//!
//! A released permit is handed directly to the next live waiter, so a newcomer can never
//! overtake the queue (glommio's `Semaphore` lets a first poll take a freed unit ahead of
//! queued waiters, so it is not used here).

mod queue;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_channel::oneshot;

use queue::Waiters;
pub use queue::{LoginStage, LIFO_AGING_FACTOR, PASSWORDS_PER_HANDSHAKE};

/// Login admission is refused: the connection waited `queue_timeout` without a permit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("login shed after waiting {waited:?} for one of {max_concurrent} login slots")]
pub struct LoginShed {
    /// How long it waited (the queue timeout).
    pub waited: Duration,
    /// The gate's concurrency limit.
    pub max_concurrent: usize,
}

struct GateState {
    max_concurrent: usize,
    in_progress: Cell<usize>,
    waiters: RefCell<Waiters>,
    waited_total: Cell<u64>,
    shed_total: Cell<u64>,
    admitted_total: Cell<u64>,
}

/// Holds one login slot; dropping it frees the slot (or hands it to the next waiter).
#[derive(Debug)]
#[must_use = "the slot is released when the permit is dropped"]
pub struct LoginPermit {
    gate: Option<Rc<GateState>>,
}

impl std::fmt::Debug for GateState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateState")
            .field("in_progress", &self.in_progress.get())
            .finish()
    }
}

impl Drop for LoginPermit {
    fn drop(&mut self) {
        let Some(gate) = self.gate.take() else { return };
        loop {
            let next = gate.waiters.borrow_mut().pop(Instant::now());
            let Some(tx) = next else {
                gate.in_progress.set(gate.in_progress.get() - 1);
                return;
            };
            // Hand the slot over; in_progress stays the same. If the waiter is gone, the
            // permit comes back and must not run this drop again.
            match tx.send(LoginPermit {
                gate: Some(gate.clone()),
            }) {
                Ok(()) => return,
                Err(mut unsent) => unsent.gate = None,
            }
        }
    }
}

/// The per-shard gate (not `Send`: it lives on one executor).
#[derive(Debug, Clone)]
pub struct LoginGate {
    state: Rc<GateState>,
    queue_timeout: Duration,
}

impl LoginGate {
    /// A gate with `max_concurrent` slots (`--max-concurrent-logins`, default 8; at least 1),
    /// a wait limit of `queue_timeout` (`--login-queue-timeout-ms`, default 60 s), and newest
    /// first once the oldest waiter has waited `lifo_after` (`--login-queue-lifo-ms`, default
    /// 500 ms; `None`: always first come first served).
    pub fn new(
        max_concurrent: usize,
        queue_timeout: Duration,
        lifo_after: Option<Duration>,
    ) -> LoginGate {
        LoginGate {
            state: Rc::new(GateState {
                max_concurrent: max_concurrent.max(1),
                in_progress: Cell::new(0),
                waiters: RefCell::new(Waiters::new(lifo_after)),
                waited_total: Cell::new(0),
                shed_total: Cell::new(0),
                admitted_total: Cell::new(0),
            }),
            queue_timeout,
        }
    }

    /// Waits for a slot for `stage`, in the order of [`queue`]. Must run inside a glommio
    /// executor (uses its timer).
    ///
    /// # Errors
    /// [`LoginShed`] when no slot came within the queue timeout.
    pub async fn admit(&self, stage: LoginStage) -> Result<LoginPermit, LoginShed> {
        let st = &self.state;
        if st.in_progress.get() < st.max_concurrent && st.waiters.borrow().is_empty() {
            st.in_progress.set(st.in_progress.get() + 1);
            st.admitted_total.set(st.admitted_total.get() + 1);
            return Ok(LoginPermit {
                gate: Some(st.clone()),
            });
        }
        let (tx, rx) = oneshot::channel();
        st.waiters.borrow_mut().push(stage, Instant::now(), tx);
        st.waited_total.set(st.waited_total.get() + 1);
        let waited = glommio::timer::timeout(self.queue_timeout, async {
            rx.await
                .map_err(|_| glommio::GlommioError::Closed(glommio::ResourceType::Channel(())))
        })
        .await;
        match waited {
            Ok(permit) => {
                st.admitted_total.set(st.admitted_total.get() + 1);
                Ok(permit)
            }
            // Timed out (a permit sent in the meantime is dropped with the receiver and
            // passes on to the next waiter).
            Err(_) => {
                st.shed_total.set(st.shed_total.get() + 1);
                Err(LoginShed {
                    waited: self.queue_timeout,
                    max_concurrent: st.max_concurrent,
                })
            }
        }
    }

    /// Slots held right now.
    pub fn in_progress(&self) -> usize {
        self.state.in_progress.get()
    }

    /// Connections waiting for a slot right now.
    pub fn waiting(&self) -> usize {
        self.state.waiters.borrow().live()
    }

    /// Connections that had to wait (counter).
    pub fn waited_total(&self) -> u64 {
        self.state.waited_total.get()
    }

    /// Connections shed after the timeout (counter).
    pub fn shed_total(&self) -> u64 {
        self.state.shed_total.get()
    }

    /// Connections admitted (counter).
    pub fn admitted_total(&self) -> u64 {
        self.state.admitted_total.get()
    }

    /// The slot limit.
    pub fn max_concurrent(&self) -> usize {
        self.state.max_concurrent
    }
}
