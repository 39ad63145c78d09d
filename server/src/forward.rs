//! Explicit hops to the owner shard (Seastar's `submit_to`), over glommio's cross-shard
//! channel mesh.
//!
//! Each pair of shards has a bounded FIFO channel, so the requests one connection sends to one
//! owner shard are executed in the order sent: that is what lets a connection pipeline
//! forwarded commands without waiting for each reply.

use std::rc::Rc;

use futures_channel::oneshot;
use futures_lite::StreamExt;
use glommio::channels::channel_mesh::{Receivers, Senders};

use crate::resp::Frame;
use crate::shard::Shard;

/// Work run on the owner shard, with that shard's state.
pub type ShardJob = Box<dyn FnOnce(&Shard) -> Frame + Send>;

/// Identifies one cross-shard transaction while it holds shard gates ([`crate::txn`]).
pub type TxnId = u64;

/// Whether a job may run while its shard's gate is held by a cross-shard transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Keyspace work: waits (parked, in arrival order) while another transaction holds the
    /// gate, so that transaction is isolated.
    Gated,
    /// Reads of counters and sizes (INFO): runs at once.
    Ungated,
    /// Work of the transaction that holds the gate.
    Txn(TxnId),
}

/// One request travelling to another shard.
pub enum ShardRequest {
    /// A job and where its reply goes.
    Job(JobRequest),
    /// Take the shard's gate for transaction `txn`; `granted` is answered once it holds it.
    Acquire {
        /// The transaction asking.
        txn: TxnId,
        /// Answered (with OK) when the gate is held for `txn`.
        granted: oneshot::Sender<Frame>,
    },
    /// Transaction `txn` is done with the shard: give the gate back (or withdraw its waiting
    /// `Acquire`).
    Release {
        /// The transaction releasing.
        txn: TxnId,
    },
}

/// A job for an owner shard.
pub struct JobRequest {
    /// The work.
    pub job: ShardJob,
    /// Where its reply goes.
    pub reply: oneshot::Sender<Frame>,
    /// Whether the reply waits until the records the owner has appended so far are on disk
    /// (`appendfsync always`): true for keyspace commands; false for jobs that only read
    /// counters and sizes (INFO), which must answer even while the log cannot be written.
    pub durable: bool,
    /// Whether it waits for the shard's gate.
    pub admission: Admission,
}

impl JobRequest {
    /// A job and the receiver of its reply.
    pub fn new(
        job: ShardJob,
        durable: bool,
        admission: Admission,
    ) -> (Self, oneshot::Receiver<Frame>) {
        let (reply, receiver) = oneshot::channel();
        let request = Self {
            job,
            reply,
            durable,
            admission,
        };
        (request, receiver)
    }

    /// Runs the job on `shard` and sends its reply — under `appendfsync always`, once the
    /// records appended so far are on disk.
    pub fn run(self, shard: &Shard) {
        let frame = (self.job)(shard);
        let reply = self.reply;
        match &shard.aof {
            Some(aof) if self.durable => aof.writer.after_sync(Box::new(move || {
                let _ = reply.send(frame);
            })),
            _ => {
                let _ = reply.send(frame);
            }
        }
    }
}

/// The sending half of the mesh, as one shard sees it.
pub struct Peers {
    senders: Senders<ShardRequest>,
}

impl Peers {
    /// Wraps the mesh senders of this shard.
    pub fn new(senders: Senders<ShardRequest>) -> Self {
        Self { senders }
    }

    /// Closes this shard's side of the mesh: peers' request streams from it end.
    pub fn close(&self) {
        self.senders.close();
    }

    /// Queues `job` for shard `owner` and returns the receiver of its reply, which waits for
    /// the owner's log (`appendfsync always`). Waits only when that channel is full
    /// (`--cross-shard-queue`). The job does not wait for a transaction's gate: for
    /// connection-level work; keyspace commands use [`Peers::submit_in`].
    ///
    /// The reply is an `ERR` frame when the owner shard has stopped.
    pub async fn submit_to(&self, owner: usize, job: ShardJob) -> oneshot::Receiver<Frame> {
        self.submit(owner, job, true, Admission::Ungated).await
    }

    /// As [`Peers::submit_to`], with the given admission.
    pub async fn submit_admitted(
        &self,
        owner: usize,
        admission: Admission,
        job: ShardJob,
    ) -> oneshot::Receiver<Frame> {
        self.submit(owner, job, true, admission).await
    }

    /// As [`Peers::submit_to`], for keyspace work: of transaction `txn` (which holds
    /// `owner`'s gate), or with `None` gated (it waits while a transaction holds the gate).
    pub async fn submit_in(
        &self,
        owner: usize,
        txn: Option<TxnId>,
        job: ShardJob,
    ) -> oneshot::Receiver<Frame> {
        let admission = txn.map_or(Admission::Gated, Admission::Txn);
        self.submit(owner, job, true, admission).await
    }

    /// As [`Peers::submit_to`], for a job that only reads counters and sizes: its reply does
    /// not wait for the owner's log to reach the disk, nor for its gate.
    pub async fn submit_stats_to(&self, owner: usize, job: ShardJob) -> oneshot::Receiver<Frame> {
        self.submit(owner, job, false, Admission::Ungated).await
    }

    /// Queues `job` for shard `owner` with the given durability and admission.
    pub async fn submit(
        &self,
        owner: usize,
        job: ShardJob,
        durable: bool,
        admission: Admission,
    ) -> oneshot::Receiver<Frame> {
        let (request, receiver) = JobRequest::new(job, durable, admission);
        self.send(owner, ShardRequest::Job(request)).await;
        receiver
    }

    /// Asks shard `owner` for its gate on behalf of `txn`; the receiver resolves once held.
    pub async fn acquire(&self, owner: usize, txn: TxnId) -> oneshot::Receiver<Frame> {
        let (granted, receiver) = oneshot::channel();
        self.send(owner, ShardRequest::Acquire { txn, granted })
            .await;
        receiver
    }

    /// Gives shard `owner`'s gate back for `txn` (after every job `txn` sent it: the channel
    /// is FIFO).
    pub async fn release(&self, owner: usize, txn: TxnId) {
        self.send(owner, ShardRequest::Release { txn }).await;
    }

    async fn send(&self, owner: usize, request: ShardRequest) {
        if let Err(err) = self.senders.send_to(owner, request).await {
            // The request (and its reply sender) is dropped: a receiver resolves to the
            // "dropped" error of `await_reply`.
            tracing::debug!("cross-shard send to shard {owner} failed: {err}");
        }
    }
}

/// Resolves a reply receiver from [`Peers::submit_to`] into a frame.
pub async fn await_reply(receiver: oneshot::Receiver<Frame>) -> Frame {
    receiver
        .await
        .unwrap_or_else(|_| Frame::error("ERR owner shard dropped the request"))
}

/// Serves the requests other shards send to this one until every sender has closed. Spawned
/// once per peer stream, in the `main` task queue. Never waits inside the loop: a job that
/// must wait for the shard's gate is parked there, so the transaction holding the gate can
/// still reach the shard through the same stream.
pub async fn serve_peer_requests(shard: Rc<Shard>, mut receivers: Receivers<ShardRequest>) {
    let streams = receivers.streams();
    let mut tasks = Vec::with_capacity(streams.len());
    for (_peer, stream) in streams {
        let owner = shard.clone();
        tasks.push(shard.spawn_main("cross-shard", async move {
            let mut stream = stream;
            while let Some(request) = stream.next().await {
                owner.gate_request(request);
            }
        }));
    }
    for task in tasks {
        task.await;
    }
}
