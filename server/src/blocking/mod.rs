//! Blocking pops across shards: BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH (Redis 7.0
//! `blocked.c`, `t_list.c` `blockingPopGenericCommand`, `blmoveGenericCommand`) and BZPOPMIN,
//! BZPOPMAX, BZMPOP (`t_zset.c` `blockingGenericZpopCommand`).
//!
//! Seastar-style, the state lives with whoever owns it:
//!
//! - the **owner shard** of a key keeps the queue of its waiters in arrival order
//!   ([`queues::KeyQueues`]: an entry names the waiting connection's shard, a waiter id and
//!   the op to run);
//! - the **waiter's shard** keeps one slot per blocked connection ([`slots::Slots`]) and
//!   decides, exactly once, who may serve it: an owner *reserves* the waiter there before it
//!   pops anything (`Granted`, `Busy` when another owner holds it, `Gone` when it timed out,
//!   was unblocked or closed).
//!
//! After a command that may have made a watched key ready (any write on a shard with
//! waiters, once no transaction holds its gate, and once no blocking command of another
//! shard's connection is on its way to queue here: [`after_command`]), the owner serves the
//! key's waiters first-come first-served (Redis `serveClientsBlockedOnKey`; the queue is
//! ordered by when each command reached the server), one pop each, keys in the order they
//! became ready:
//!
//! - a *sole* waiter (every key it waits on is this shard's: any hash-tagged key set) is
//!   reserved for this owner from its creation, so it is served synchronously, in the very
//!   job of the push, wherever its connection is; the reply then travels to its shard;
//! - a waiter on keys of several shards is reserved first (locally, or over the mesh for one
//!   on another shard), then the owner pops as a plain keyspace job ([`serve`]).
//!
//! Either way the pop runs on the owner and is logged there as the LPOP/RPOP/LMPOP/LMOVE it
//! amounts to; a BLMOVE whose destination another shard owns is handed back to its
//! connection, which runs the cross-shard LMOVE composition.
//!
//! No element is lost or popped for nobody: an owner pops only for a reserved waiter, and a
//! reserved waiter can no longer time out, be unblocked or be dropped on its own — those are
//! noted and applied when the owner's answer arrives. For a sole waiter the owner's queue is
//! the arbiter: the waiter's shard asks the owner to withdraw it, and either it was still
//! queued (withdrawn, nothing popped) or it was already served (its reply is on its way).
//! Should the connection have closed between the owner's decision and the reply's arrival
//! (as a Redis client may close while its reply is being written), the waiter's shard puts
//! back what was taken ([`op::BlockOp::undo`]: LPUSH / RPUSH to the end it came from, or the
//! reverse LMOVE), so the element returns to its list.
//!
//! The sorted-set family (BZPOPMIN, BZPOPMAX, BZMPOP) plugs in through [`op::BlockOp`]'s
//! `ZPop` / `ZMPop` variants: ready on a non-empty sorted set, served and logged as the
//! ZPOPMIN / ZPOPMAX / ZMPOP it amounts to, undone by a ZADD with the popped scores; queues,
//! reservations, timeouts and the connection side are shared.

pub mod op;
pub mod queues;
mod serve;
pub mod slots;
pub mod timeout;

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use futures_channel::oneshot;

use crate::resp::Frame;
use crate::shard::Shard;
use op::BlockOp;
use queues::{KeyQueues, Waiter};
use slots::{Cleanup, Slots, Wakeup};

pub use serve::after_command;

/// One shard's blocking state: the queues of the keys it owns, the slots of the connections
/// it serves.
#[derive(Default)]
pub struct Blocking {
    /// Owner side: waiters per key of this shard.
    pub queues: RefCell<KeyQueues>,
    /// Waiter side: this shard's blocked connections.
    pub slots: RefCell<Slots>,
    /// Keys whose waiters a task is serving across the mesh (not served again meanwhile).
    in_service: RefCell<HashSet<(usize, Bytes)>>,
    /// The next remote waiter a serving job found for a key, for its task.
    found: RefCell<Vec<((usize, Bytes), Waiter)>>,
    /// Watched keys found ready, in the order they became so (Redis's `ready_keys` list):
    /// served in that order.
    signaled: RefCell<Vec<(usize, Bytes)>>,
    /// Serving is running (its own pops must not start it again).
    serving_now: Cell<bool>,
    /// A single-shard transaction (EXEC) is running: serving waits until it ends.
    txn_depth: Cell<u32>,
    me: RefCell<Weak<Shard>>,
}

impl Blocking {
    /// Gives the registry its shard (to spawn serving tasks); called once after creation.
    pub fn set_shard(&self, shard: &Rc<Shard>) {
        *self.me.borrow_mut() = Rc::downgrade(shard);
    }

    /// Whether some connection waits on a key of this shard: one `Cell` read per command.
    pub fn has_waiters(&self) -> bool {
        !self.queues.borrow().is_empty()
    }

    /// Blocked connections of this shard (INFO `blocked_clients`).
    pub fn blocked_clients(&self) -> usize {
        self.slots.borrow().len()
    }

    /// Marks the start (`true`) or end of a single-shard transaction job.
    pub fn transaction(&self, running: bool) {
        let depth = self.txn_depth.get();
        self.txn_depth.set(if running {
            depth + 1
        } else {
            depth.saturating_sub(1)
        });
    }

    fn shard(&self) -> Option<Rc<Shard>> {
        self.me.borrow().upgrade()
    }
}

/// The count of blocking commands on their way to queue on `owner`'s keys.
fn in_flight(shard: &Shard, owner: usize) -> Option<&AtomicUsize> {
    shard.shared.blocking_in_flight.get(owner)
}

/// Whether a blocking command of another shard is on its way to queue here.
pub(crate) fn arrivals_pending(shard: &Shard) -> bool {
    in_flight(shard, shard.id).is_some_and(|n| n.load(Ordering::Acquire) > 0)
}

/// Runs a queueing `job` on `owner`: here at once, or over the mesh with `owner`'s
/// in-flight count raised until the job starts there.
async fn run_queueing(shard: &Rc<Shard>, owner: usize, job: crate::forward::ShardJob) -> Frame {
    if owner == shard.id {
        return shard.run_on_in(owner, None, job).await;
    }
    if let Some(n) = in_flight(shard, owner) {
        n.fetch_add(1, Ordering::AcqRel);
    }
    let job: crate::forward::ShardJob = Box::new(move |s: &Shard| {
        if let Some(n) = in_flight(s, s.id) {
            n.fetch_sub(1, Ordering::AcqRel);
        }
        let reply = job(s);
        // Serving deferred while this was on its way.
        after_command(s);
        reply
    });
    shard.run_on_in(owner, None, job).await
}

/// A blocked connection's wait, kept by its request loop.
#[derive(Debug)]
pub struct BlockedWait {
    /// The waiter id (this shard's [`Slots`]).
    pub id: u64,
    /// Resolves with the reply (or a hand-off).
    pub receiver: oneshot::Receiver<Wakeup>,
    /// When the timeout ends the wait; `None` = forever (or already asked to end).
    pub deadline: Option<Instant>,
    /// The blocked command, for a hand-off to run again.
    pub args: Vec<Bytes>,
}

/// Blocks connection `client_id` of `shard` on `keys` (command order) of database `db`,
/// for a command that arrived at `since`:
/// creates its slot, then queues it on every owner shard of the keys (each checks at once
/// whether a key is already ready). Returns the waiter id and its wake-up receiver.
pub async fn block(
    shard: &Rc<Shard>,
    client_id: u64,
    db: usize,
    keys: &[Bytes],
    op: BlockOp,
    timeout_reply: Frame,
    since: Instant,
) -> (u64, oneshot::Receiver<Wakeup>) {
    let mut owners: Vec<usize> = Vec::new();
    for key in keys {
        let owner = shard.owner_of(key);
        if !owners.contains(&owner) {
            owners.push(owner);
        }
    }
    let sole = owners.len() == 1;
    let (id, receiver) =
        (shard.blocking.slots.borrow_mut()).insert(client_id, owners.clone(), timeout_reply);
    for owner in owners {
        let owned: Vec<Bytes> = keys
            .iter()
            .filter(|k| shard.owner_of(k) == owner)
            .cloned()
            .collect();
        let waiter = Waiter {
            shard: shard.id,
            id,
            op: op.clone(),
            sole,
            since,
        };
        let job: crate::forward::ShardJob = Box::new(move |s: &Shard| {
            enqueue(s, db, owned, waiter);
            Frame::ok()
        });
        run_queueing(shard, owner, job).await;
    }
    shard.blocking.slots.borrow_mut().queued(id);
    (id, receiver)
}

/// For a command whose keys all live on one shard: in one job on that shard, the
/// non-blocking attempt (`op` on each key in order; the first reply that is not null wins)
/// and, when no key has data, the waiter's queueing — so no push can slip in between.
/// `Ok` with the reply, or `Err` with the waiter id and its wake-up receiver.
pub async fn try_or_block(
    shard: &Rc<Shard>,
    client_id: u64,
    db: usize,
    keys: Vec<Bytes>,
    op: BlockOp,
    timeout_reply: Frame,
    since: Instant,
) -> Result<Frame, (u64, oneshot::Receiver<Wakeup>)> {
    let owner = keys.first().map_or(shard.id, |k| shard.owner_of(k));
    let (id, receiver) =
        (shard.blocking.slots.borrow_mut()).insert(client_id, vec![owner], timeout_reply);
    let waiter = Waiter {
        shard: shard.id,
        id,
        op: op.clone(),
        sole: true,
        since,
    };
    let job: crate::forward::ShardJob = Box::new(move |s: &Shard| {
        for key in &keys {
            let reply = op.serve(s, db, key);
            if reply != Frame::Null {
                return reply;
            }
        }
        enqueue(s, db, keys, waiter);
        Frame::Null
    });
    let reply = run_queueing(shard, owner, job).await;
    let mut slots = shard.blocking.slots.borrow_mut();
    if reply == Frame::Null {
        slots.queued(id);
        return Err((id, receiver));
    }
    slots.discard(id);
    Ok(reply)
}

/// Owner side: queues `waiter` on `keys`, then serves what is ready.
fn enqueue(s: &Shard, db: usize, keys: Vec<Bytes>, waiter: Waiter) {
    {
        let mut queues = s.blocking.queues.borrow_mut();
        for key in keys {
            queues.push(db, key, waiter.clone());
        }
    }
    after_command(s);
}

/// Ends waiter `id` of `shard` without data: with its timeout reply (`None`) or `reply`.
/// False when it is not blocked.
pub fn end(shard: &Shard, id: u64, reply: Option<Frame>) -> bool {
    let (found, cleanup) = shard.blocking.slots.borrow_mut().end(id, reply);
    apply(shard, id, cleanup);
    found
}

/// CLIENT UNBLOCK on this shard: ends connection `client_id`'s wait with its timeout reply,
/// or with Redis's UNBLOCKED error when `error`. False when it is not blocked here.
pub fn unblock_client(shard: &Shard, client_id: u64, error: bool) -> bool {
    let Some(id) = shard.blocking.slots.borrow().of_client(client_id) else {
        return false;
    };
    let reply = error.then(|| Frame::error("UNBLOCKED client unblocked via CLIENT UNBLOCK"));
    end(shard, id, reply)
}

/// Waiter `id`'s connection is gone.
pub fn abandon(shard: &Shard, id: u64) {
    let cleanup = shard.blocking.slots.borrow_mut().abandon(id);
    apply(shard, id, cleanup);
}

/// On the waiter's shard: the reserving owner's answer for waiter `id`, served (or not) on
/// `key` of `db` with `op`. What a waiter gone meanwhile was given is put back.
pub fn answer(shard: &Shard, id: u64, db: usize, key: Bytes, op: BlockOp, wakeup: Option<Wakeup>) {
    let undo = match &wakeup {
        Some(Wakeup::Reply(reply)) => op.undo(&key, reply),
        _ => None,
    };
    let (delivered, cleanup) = shard.blocking.slots.borrow_mut().answer(id, wakeup);
    if let (false, Some(undo)) = (delivered, undo) {
        let owner = shard.owner_of(&key);
        tracing::debug!(
            "shard {}: blocked client gone after being served; putting back on {owner}",
            shard.id
        );
        if owner == shard.id && !shard.gate.is_held() {
            shard.execute_local(db, &undo);
        } else if let Some(me) = shard.blocking.shard() {
            let job = Box::new(move |s: &Shard| s.execute_local(db, &undo));
            let task = me.clone();
            me.spawn_main("blocking-undo", async move {
                task.run_on_in(owner, None, job).await;
            })
            .detach();
        }
    }
    apply(shard, id, cleanup);
}

/// Sends a slot's cleanup to the owner shards: removals from their queues, or a new look at
/// the waiter's keys.
fn apply(shard: &Shard, id: u64, cleanup: Cleanup) {
    let Cleanup {
        unregister,
        kick,
        cancel,
    } = cleanup;
    let me = shard.id;
    if let Some(owner) = cancel {
        withdraw(shard, id, owner);
    }
    let mut remote: Vec<(usize, bool)> = Vec::new();
    for owner in unregister {
        if owner == me {
            shard.blocking.queues.borrow_mut().remove(me, id);
        } else {
            remote.push((owner, true));
        }
    }
    for owner in kick {
        if owner == me {
            after_command(shard);
        } else {
            remote.push((owner, false));
        }
    }
    if remote.is_empty() {
        return;
    }
    let Some(rc) = shard.blocking.shard() else {
        return;
    };
    let task = rc.clone();
    rc.spawn_main("blocking-cleanup", async move {
        for (owner, unregister) in remote {
            let job = Box::new(move |s: &Shard| {
                if unregister {
                    s.blocking.queues.borrow_mut().remove(me, id);
                } else {
                    after_command(s);
                }
                Frame::ok()
            });
            task.run_on(owner, job).await;
        }
    })
    .detach();
}

/// Asks `owner` to withdraw sole waiter `id` of `shard` from its queue; if it was still
/// queued there (not served), the slot ends (timeout reply, UNBLOCK's error, or nothing for
/// a closed connection). If it was not, the owner served it and its reply is on its way.
fn withdraw(shard: &Shard, id: u64, owner: usize) {
    let me = shard.id;
    if owner == me {
        let removed = shard.blocking.queues.borrow_mut().remove(me, id);
        if removed > 0 {
            withdrawn(shard, id);
        }
        return;
    }
    let Some(rc) = shard.blocking.shard() else {
        return;
    };
    let task = rc.clone();
    rc.spawn_main("blocking-withdraw", async move {
        let job: crate::forward::ShardJob = Box::new(move |s: &Shard| {
            Frame::Integer(s.blocking.queues.borrow_mut().remove(me, id) as i64)
        });
        if let Frame::Integer(removed) = task.run_on(owner, job).await {
            if removed > 0 {
                withdrawn(&task, id);
            }
        }
    })
    .detach();
}

/// The owner withdrew waiter `id`: its slot ends without data.
fn withdrawn(shard: &Shard, id: u64) {
    let (_, cleanup) = shard.blocking.slots.borrow_mut().answer(id, None);
    apply(shard, id, cleanup);
}
