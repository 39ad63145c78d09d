//! What the running script's `redis.call` works with: its shard, database, the shards it holds
//! and what it has done so far. One script runs at a time on a shard (it holds the shard's
//! gate), so the context is a thread-local set for the run.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::forward::TxnId;
use crate::shard::Shard;
use crate::slowlog::ClientTag;

/// The shards a script may touch.
#[derive(Debug, Clone)]
pub enum Access {
    /// Inside an EXEC, whose transaction holds every shard.
    Outer(TxnId),
    /// The script's own transaction, holding the gates of the shards marked `true`.
    Gated {
        /// The transaction.
        txn: TxnId,
        /// Per shard: whether its gate is held.
        held: Vec<bool>,
    },
}

impl Access {
    /// The transaction keyspace work of the script runs in.
    pub fn txn(&self) -> TxnId {
        match self {
            Access::Outer(txn) | Access::Gated { txn, .. } => *txn,
        }
    }

    /// Whether the script may touch keys of shard `owner`.
    pub fn holds(&self, owner: usize) -> bool {
        match self {
            Access::Outer(_) => true,
            Access::Gated { held, .. } => held.get(owner).copied().unwrap_or(false),
        }
    }

    /// Whether the script holds every shard.
    pub fn holds_all(&self) -> bool {
        match self {
            Access::Outer(_) => true,
            Access::Gated { held, .. } => held.iter().all(|&h| h),
        }
    }
}

/// One running script's state.
pub struct RunContext {
    /// The shard it runs on.
    pub shard: Rc<Shard>,
    /// The database its commands use (SELECT inside the script changes it).
    pub db: Cell<usize>,
    /// The client it runs for (SLOWLOG, CLIENT LIST of inner commands).
    pub client: ClientTag,
    /// The shards it may touch.
    pub access: Access,
    /// Whether it may only read (EVAL_RO, FCALL_RO, `no-writes`).
    pub read_only: bool,
    /// The protocol of the replies it sees and returns (`redis.setresp`): 2 or 3.
    pub resp: Cell<u8>,
    /// Whether it has run a write command (SCRIPT KILL then answers UNKILLABLE).
    pub wrote: Cell<bool>,
    /// Set when it touched a shard it does not hold before writing anything: it is stopped
    /// and run again holding every shard.
    pub restart: Cell<bool>,
    /// Set when it touched a shard it does not hold, before or after writing: its later runs
    /// hold every shard from the start.
    pub touched_unheld: Cell<bool>,
    /// Per shard: how many write commands it ran there (their log records are kept aside
    /// until it ends, then logged together, in MULTI/EXEC when two or more).
    pub writes: RefCell<Vec<ShardWrites>>,
    /// Set once its writes were logged ([`super::run`]).
    pub settled: Cell<bool>,
    /// Whether it is a function (FCALL): error texts name FUNCTION KILL.
    pub is_function: bool,
}

/// A script's writes on one shard.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShardWrites {
    /// Write commands run there.
    pub count: u32,
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<RunContext>>> = const { RefCell::new(None) };
}

/// The running script's context on this thread.
pub fn current() -> Option<Rc<RunContext>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Makes `context` the running script's until the guard drops.
pub fn enter(context: Rc<RunContext>) -> Entered {
    CURRENT.with(|c| *c.borrow_mut() = Some(context));
    Entered
}

/// Clears the running script's context when dropped.
pub struct Entered;

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = None);
    }
}
