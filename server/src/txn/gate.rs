//! The per-shard gate of cross-shard transactions.
//!
//! A transaction whose keys live on several shards takes the gate of each of them, in
//! ascending shard order, before it runs anything (the order rules out deadlock: a
//! transaction only ever waits for a gate above every gate it holds). While a transaction
//! holds a shard's gate, only its own work runs on that shard's keyspace; every other
//! keyspace job, local or from another shard, is parked in arrival order and runs when the
//! gate is given back. No other client can therefore see part of a cross-shard MSET, or run
//! a command between two commands of a MULTI/EXEC.
//!
//! This is a shard-wide lock, coarser than Dragonfly's per-key intent locks (VLL): while a
//! cross-shard transaction holds a shard (one or two hops, tens of µs), commands on other
//! keys of that shard wait too. Commands whose keys all live on one shard never take a gate.
//! The gate costs a plain command one `Cell` read.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use futures_channel::oneshot;

use crate::forward::{Admission, JobRequest, ReplyReceiver, ShardJob, ShardRequest, TxnId};
use crate::resp::Frame;
use crate::shard::Shard;

/// Something waiting for a shard's gate.
enum Parked {
    /// A keyspace job of another client.
    Job(JobRequest),
    /// A transaction asking for the gate.
    Acquire {
        txn: TxnId,
        granted: oneshot::Sender<Frame>,
    },
}

/// One shard's gate: which transaction holds it, and what waits for it.
#[derive(Default)]
pub struct ShardGate {
    holder: Cell<Option<TxnId>>,
    parked: RefCell<VecDeque<Parked>>,
    next_txn: Cell<u64>,
}

impl ShardGate {
    /// Whether a job with `admission` may run now.
    pub fn admits(&self, admission: Admission) -> bool {
        match admission {
            Admission::Ungated => true,
            Admission::Gated => self.holder.get().is_none(),
            Admission::Txn(txn) => self.holder.get() == Some(txn),
        }
    }

    /// Whether a transaction holds the gate now.
    pub fn is_held(&self) -> bool {
        self.holder.get().is_some()
    }

    /// Jobs and transactions waiting for the gate.
    pub fn parked(&self) -> usize {
        self.parked.borrow().len()
    }

    /// A transaction id unique in the process: the shard in the top 16 bits.
    pub fn new_txn_id(&self, shard: usize) -> TxnId {
        let n = self.next_txn.get().wrapping_add(1);
        self.next_txn.set(n);
        ((shard as u64) << 48) | (n & ((1 << 48) - 1))
    }
}

impl Shard {
    /// Handles one request from another shard: runs a job the gate admits, parks the others,
    /// and takes or gives back the gate for a transaction.
    pub fn gate_request(&self, request: ShardRequest) {
        match request {
            ShardRequest::Job(job) if self.gate.admits(job.admission) => job.run(self),
            ShardRequest::Job(job) => self.gate.parked.borrow_mut().push_back(Parked::Job(job)),
            ShardRequest::Acquire { txn, granted } => {
                if self.gate.is_held() {
                    (self.gate.parked.borrow_mut()).push_back(Parked::Acquire { txn, granted });
                } else {
                    self.grant(txn, granted);
                }
            }
            ShardRequest::Release { txn } => self.release_gate(txn),
        }
    }

    /// Runs `job` on this shard now if the gate admits it (`Ok` with its reply, whose
    /// durability the caller handles); else parks it and returns the receiver of its reply.
    pub fn run_gated(&self, admission: Admission, job: ShardJob) -> Result<Frame, ReplyReceiver> {
        if self.gate.admits(admission) {
            return Ok(job(self));
        }
        let (request, receiver) = JobRequest::new(job, true, admission);
        self.gate
            .parked
            .borrow_mut()
            .push_back(Parked::Job(request));
        Err(receiver)
    }

    /// Asks this shard's own gate for `txn`; the receiver resolves once it is held.
    pub fn acquire_gate(&self, txn: TxnId) -> oneshot::Receiver<Frame> {
        let (granted, receiver) = oneshot::channel();
        self.gate_request(ShardRequest::Acquire { txn, granted });
        receiver
    }

    /// Gives the gate back for `txn` and runs what waited, in order, up to the next
    /// transaction (which then holds it). A `txn` still waiting withdraws instead.
    pub fn release_gate(&self, txn: TxnId) {
        if self.gate.holder.get() != Some(txn) {
            self.gate
                .parked
                .borrow_mut()
                .retain(|p| !matches!(p, Parked::Acquire { txn: t, .. } if *t == txn));
            return;
        }
        self.gate.holder.set(None);
        loop {
            let next = self.gate.parked.borrow_mut().pop_front();
            match next {
                None => {
                    // Blocked clients whose keys the transaction made ready.
                    crate::blocking::after_command(self);
                    return;
                }
                Some(Parked::Job(job)) => job.run(self),
                Some(Parked::Acquire { txn, granted }) => {
                    self.grant(txn, granted);
                    if self.gate.is_held() {
                        return;
                    }
                }
            }
        }
    }

    /// Hands the (free) gate to `txn`. A transaction that is gone (its coordinator dropped
    /// the receiver) gets nothing and the gate stays free.
    fn grant(&self, txn: TxnId, granted: oneshot::Sender<Frame>) {
        self.gate.holder.set(Some(txn));
        if granted.send(Frame::ok()).is_err() {
            self.gate.holder.set(None);
        }
    }
}
