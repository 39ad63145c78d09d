//! Explicit hops to the owner shard (Seastar's `submit_to`), over glommio's cross-shard
//! channel mesh.
//!
//! Each pair of shards has a bounded FIFO channel, so the requests one connection sends to one
//! owner shard are executed in the order sent: that is what lets a connection pipeline
//! forwarded commands without waiting for each reply.
//!
//! Requests are batched per destination shard ([`outbox`]): a request goes into that shard's
//! outbox, and one task per destination sends everything its outbox gathered as one message
//! when it next runs — after the connection tasks that were runnable with it, so one poll's
//! worth of forwards (every pipelined command of every ready connection) crosses as one
//! message, with one wake-up of the owner, instead of one each. Replies come back the same
//! way, over a second mesh ([`reply`]).

mod outbox;
pub mod reply;

use std::cell::Cell;
use std::rc::Rc;

use futures_channel::oneshot;
use futures_lite::StreamExt;
use glommio::channels::channel_mesh::{Receivers, Senders};

use crate::resp::Frame;
use crate::shard::Shard;
use outbox::Outbox;
pub use reply::{
    serve_peer_replies, PendingReplies, ReplyBatch, ReplyOutboxes, ReplyReceiver, ReplyTo,
};

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
    pub reply: ReplyTo,
    /// Whether the reply waits until the records the owner has appended so far are on disk
    /// (`appendfsync always`): true for keyspace commands; false for jobs that only read
    /// counters and sizes (INFO), which must answer even while the log cannot be written.
    pub durable: bool,
    /// Whether it waits for the shard's gate.
    pub admission: Admission,
}

impl JobRequest {
    /// A job of this shard (parked at its gate) and the receiver of its reply.
    pub fn new(job: ShardJob, durable: bool, admission: Admission) -> (Self, ReplyReceiver) {
        let (reply, receiver) = oneshot::channel();
        let request = Self {
            job,
            reply: ReplyTo::Local(reply),
            durable,
            admission,
        };
        (request, receiver.into())
    }

    /// Runs the job on `shard` and sends its reply — under `appendfsync always`, once the
    /// records appended so far are on disk.
    pub fn run(self, shard: &Shard) {
        let frame = (self.job)(shard);
        let reply = self.reply;
        match &shard.aof {
            Some(aof) if self.durable && aof.writer.pending() => {
                let replies = shard.peers.replies.clone();
                aof.writer
                    .after_sync(Box::new(move || reply.deliver(&replies, frame)));
            }
            _ => reply.deliver(&shard.peers.replies, frame),
        }
    }
}

/// One message of the mesh: the requests one shard gathered for another, in order.
pub type ShardBatch = Vec<ShardRequest>;

/// Messages queued between two shards before the sending side waits (the mesh channel's
/// capacity, in batches; each batch holds at most `--cross-shard-queue` requests).
pub const BATCHES_IN_FLIGHT: usize = 2;

/// The sending half of the mesh, as one shard sees it.
pub struct Peers {
    /// This shard's number.
    id: usize,
    senders: Senders<ShardBatch>,
    outboxes: Vec<Outbox<ShardRequest>>,
    /// Slots of this shard's requests whose replies are on their way.
    pub pending: PendingReplies,
    /// Replies this shard owes others.
    pub replies: Rc<ReplyOutboxes>,
    /// Requests an outbox holds before a sender waits (`--cross-shard-queue`).
    outbox_limit: usize,
    closing: Cell<bool>,
}

impl Peers {
    /// Wraps this shard's senders of the request mesh and of the reply mesh; each
    /// destination's outbox holds at most `outbox_limit` requests (`--cross-shard-queue`, at
    /// least 1) before senders wait.
    pub fn new(
        senders: Senders<ShardBatch>,
        reply_senders: Senders<ReplyBatch>,
        outbox_limit: usize,
    ) -> Self {
        let outboxes = (0..senders.nr_consumers())
            .map(|_| Outbox::default())
            .collect();
        Self {
            id: senders.peer_id(),
            senders,
            outboxes,
            pending: PendingReplies::default(),
            replies: Rc::new(ReplyOutboxes::new(reply_senders)),
            outbox_limit: outbox_limit.max(1),
            closing: Cell::new(false),
        }
    }

    /// Sends what shard `destination`'s outbox gathers, one batch per turn, until
    /// [`Peers::close`] and the outbox is empty. Spawned once per other shard.
    pub async fn run_outbox(&self, destination: usize) {
        // Requests the mesh refused will get no reply.
        let lost = || self.pending.fail_from(destination);
        self.outboxes[destination]
            .run(&self.senders, destination, &self.closing, lost)
            .await
    }

    /// Closes this shard's side of the mesh: the outbox tasks send what is left and end, then
    /// peers' request streams from this shard end. `outbox_tasks` are the
    /// [`Peers::run_outbox`] tasks.
    pub async fn close(&self, outbox_tasks: Vec<glommio::Task<()>>) {
        outbox::close(&self.outboxes, &self.closing, outbox_tasks, &self.senders).await
    }

    /// Queues `job` for shard `owner` and returns the receiver of its reply, which waits for
    /// the owner's log (`appendfsync always`). Waits only when that channel is full
    /// (`--cross-shard-queue`). The job does not wait for a transaction's gate: for
    /// connection-level work; keyspace commands use [`Peers::submit_in`].
    ///
    /// The reply is an `ERR` frame when the owner shard has stopped.
    pub async fn submit_to(&self, owner: usize, job: ShardJob) -> ReplyReceiver {
        self.submit(owner, job, true, Admission::Ungated).await
    }

    /// As [`Peers::submit_to`], with the given admission.
    pub async fn submit_admitted(
        &self,
        owner: usize,
        admission: Admission,
        job: ShardJob,
    ) -> ReplyReceiver {
        self.submit(owner, job, true, admission).await
    }

    /// As [`Peers::submit_to`], for keyspace work: of transaction `txn` (which holds
    /// `owner`'s gate), or with `None` gated (it waits while a transaction holds the gate).
    pub async fn submit_in(
        &self,
        owner: usize,
        txn: Option<TxnId>,
        job: ShardJob,
    ) -> ReplyReceiver {
        let admission = txn.map_or(Admission::Gated, Admission::Txn);
        self.submit(owner, job, true, admission).await
    }

    /// As [`Peers::submit_to`], for a job that only reads counters and sizes: its reply does
    /// not wait for the owner's log to reach the disk, nor for its gate.
    pub async fn submit_stats_to(&self, owner: usize, job: ShardJob) -> ReplyReceiver {
        self.submit(owner, job, false, Admission::Ungated).await
    }

    /// Queues `job` for shard `owner` with the given durability and admission.
    pub async fn submit(
        &self,
        owner: usize,
        job: ShardJob,
        durable: bool,
        admission: Admission,
    ) -> ReplyReceiver {
        let (slot, receiver) = self.pending.register(owner);
        let request = JobRequest {
            job,
            reply: ReplyTo::Remote {
                source: self.id,
                slot,
            },
            durable,
            admission,
        };
        if !self.send(owner, ShardRequest::Job(request)).await {
            self.pending.fail_from(owner);
        }
        receiver
    }

    /// Queues `job` for shard `owner` at once, without waiting for room and without a reply
    /// (keyspace events published after a command, [`crate::notify::publish`]): it runs
    /// there in order after this shard's earlier requests, whatever gate is held.
    pub fn post(&self, owner: usize, job: ShardJob) {
        let (request, _unanswered) = JobRequest::new(job, false, Admission::Ungated);
        match self.outboxes.get(owner) {
            Some(outbox) => outbox.push(ShardRequest::Job(request)),
            None => tracing::debug!("cross-shard post to unknown shard {owner}"),
        }
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

    /// Puts `request` in shard `owner`'s outbox (in order after this shard's earlier
    /// requests to it), waiting while the outbox is full. False when there is no such shard
    /// (the request is dropped).
    async fn send(&self, owner: usize, request: ShardRequest) -> bool {
        let Some(outbox) = self.outboxes.get(owner) else {
            tracing::debug!("cross-shard send to unknown shard {owner}");
            return false;
        };
        outbox.push_bounded(request, self.outbox_limit).await;
        true
    }
}

/// Resolves a reply receiver from [`Peers::submit_to`] (or a oneshot one) into a frame: an
/// `ERR` frame when the owner shard dropped the request.
pub async fn await_reply(receiver: impl Into<ReplyReceiver>) -> Frame {
    receiver.into().await
}

/// Serves the requests other shards send to this one until every sender has closed. Spawned
/// once per peer stream, in the `main` task queue. Never waits inside the loop: a job that
/// must wait for the shard's gate is parked there, so the transaction holding the gate can
/// still reach the shard through the same stream.
pub async fn serve_peer_requests(shard: Rc<Shard>, receivers: Receivers<ShardBatch>) {
    let on_batch = |owner: &Shard, _peer: usize, batch: ShardBatch| {
        owner.metrics.cross_shard_batch(batch.len());
        for request in batch {
            owner.gate_request(request);
        }
    };
    serve_mesh(
        shard,
        receivers,
        "cross-shard requests",
        on_batch,
        |_, _| {},
    )
    .await
}

/// Runs one task per peer stream of `receivers` (named `name`, in the `main` task queue):
/// `on_batch(shard, peer, message)` for each message in order, then `on_end(shard, peer)` once
/// that peer closed its side. Returns when every peer has.
async fn serve_mesh<T: Send + 'static>(
    shard: Rc<Shard>,
    mut receivers: Receivers<Vec<T>>,
    name: &'static str,
    on_batch: impl Fn(&Shard, usize, Vec<T>) + Copy + 'static,
    on_end: impl Fn(&Shard, usize) + Copy + 'static,
) {
    let streams = receivers.streams();
    let mut tasks = Vec::with_capacity(streams.len());
    for (peer, mut stream) in streams {
        let this = shard.clone();
        tasks.push(shard.spawn_main(name, async move {
            while let Some(batch) = stream.next().await {
                on_batch(&this, peer, batch);
            }
            on_end(&this, peer);
        }));
    }
    for task in tasks {
        task.await;
    }
}
