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

/// One request travelling to another shard: the job and where its reply goes.
pub struct ShardRequest {
    job: ShardJob,
    reply: oneshot::Sender<Frame>,
    /// Whether the reply waits until the records the owner has appended so far are on disk
    /// (`appendfsync always`): true for keyspace commands; false for jobs that only read
    /// counters and sizes (INFO), which must answer even while the log cannot be written.
    durable: bool,
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

    /// Queues `job` for shard `owner` and returns the receiver of its reply. Waits only when
    /// that channel is full (`--cross-shard-queue`).
    ///
    /// The reply is an `ERR` frame when the owner shard has stopped.
    pub async fn submit_to(&self, owner: usize, job: ShardJob) -> oneshot::Receiver<Frame> {
        self.submit(owner, job, true).await
    }

    /// As [`Peers::submit_to`], for a job that only reads counters and sizes: its reply does
    /// not wait for the owner's log to reach the disk.
    pub async fn submit_stats_to(&self, owner: usize, job: ShardJob) -> oneshot::Receiver<Frame> {
        self.submit(owner, job, false).await
    }

    async fn submit(&self, owner: usize, job: ShardJob, durable: bool) -> oneshot::Receiver<Frame> {
        let (reply, receiver) = oneshot::channel();
        if let Err(err) = self
            .senders
            .send_to(
                owner,
                ShardRequest {
                    job,
                    reply,
                    durable,
                },
            )
            .await
        {
            // The request (and its reply sender) is dropped: the receiver resolves to the
            // "dropped" error of `await_reply`.
            tracing::debug!("cross-shard send to shard {owner} failed: {err}");
        }
        receiver
    }
}

/// Resolves a reply receiver from [`Peers::submit_to`] into a frame.
pub async fn await_reply(receiver: oneshot::Receiver<Frame>) -> Frame {
    receiver
        .await
        .unwrap_or_else(|_| Frame::error("ERR owner shard dropped the request"))
}

/// Serves the requests other shards send to this one until every sender has closed. Spawned
/// once per peer stream, in the `main` task queue.
pub async fn serve_peer_requests(shard: Rc<Shard>, mut receivers: Receivers<ShardRequest>) {
    let streams = receivers.streams();
    let mut tasks = Vec::with_capacity(streams.len());
    for (_peer, stream) in streams {
        let owner = shard.clone();
        tasks.push(shard.spawn_main("cross-shard", async move {
            let mut stream = stream;
            while let Some(request) = stream.next().await {
                let frame = (request.job)(&owner);
                let reply = request.reply;
                // Under `appendfsync always` the reply leaves once its record is on disk.
                match &owner.aof {
                    Some(aof) if request.durable => aof.writer.after_sync(Box::new(move || {
                        let _ = reply.send(frame);
                    })),
                    _ => {
                        let _ = reply.send(frame);
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await;
    }
}
