//! Atomic, isolated multi-key operations across shards: MGET, MSET, DEL, EXISTS … whose keys
//! live on several shards, and MULTI/EXEC with WATCH.
//!
//! A transaction takes the gate ([`gate`]) of every shard it touches, in ascending shard
//! order, runs its work there (tagged with its id, so the gates let it through), and gives
//! the gates back. Its releases travel on the same FIFO channels as its jobs, so a shard
//! gives its gate back only after it ran them.

pub mod gate;
pub mod watch;

use std::rc::Rc;

use crate::forward::{await_reply, TxnId};
use crate::shard::Shard;

/// The gates one transaction holds (or asked for). Dropping it unreleased — its connection
/// went away mid-transaction — gives them back from a spawned task, so no shard stays locked.
pub struct Gates {
    shard: Rc<Shard>,
    txn: TxnId,
    /// Shards asked, in ascending order; all of them are held once [`lock`] returns.
    shards: Vec<usize>,
    released: bool,
}

/// Takes the gates of `shards` (any order, duplicates allowed) for a new transaction, in
/// ascending shard order, waiting for each in turn.
pub async fn lock(shard: &Rc<Shard>, shards: impl IntoIterator<Item = usize>) -> Gates {
    let mut wanted: Vec<usize> = shards.into_iter().collect();
    wanted.sort_unstable();
    wanted.dedup();
    let txn = shard.gate.new_txn_id(shard.id);
    let mut gates = Gates {
        shard: shard.clone(),
        txn,
        shards: Vec::with_capacity(wanted.len()),
        released: false,
    };
    for owner in wanted {
        gates.shards.push(owner);
        let granted = if owner == shard.id {
            shard.acquire_gate(txn)
        } else {
            shard.peers.acquire(owner, txn).await
        };
        // An error means the owner shard stopped (shutdown): nothing more can run there.
        let _ = await_reply(granted).await;
    }
    if gates.shards.len() > 1 {
        shard.metrics.cross_shard_transaction();
    }
    gates
}

/// The transaction a command over several shards runs in: its own (gates taken by
/// [`enter`]) or the one of the EXEC it is part of.
pub struct Scope {
    own: Option<Gates>,
    outer: Option<TxnId>,
}

/// Enters a transaction over `shards` for a command run with `outer` as its connection's
/// transaction: inside an EXEC (`outer` given) it runs in that one; otherwise it takes the
/// gates of `shards` when they are more than one shard (one shard needs none).
pub async fn enter(
    shard: &Rc<Shard>,
    outer: Option<TxnId>,
    shards: impl IntoIterator<Item = usize>,
) -> Scope {
    let mut wanted: Vec<usize> = shards.into_iter().collect();
    wanted.sort_unstable();
    wanted.dedup();
    let own = match outer {
        None if wanted.len() > 1 => Some(lock(shard, wanted).await),
        _ => None,
    };
    Scope { own, outer }
}

impl Scope {
    /// The transaction to tag the command's work with, if any.
    pub fn id(&self) -> Option<TxnId> {
        self.own.as_ref().map(Gates::id).or(self.outer)
    }

    /// Gives back the gates [`enter`] took (work sent before this call runs first).
    pub async fn leave(self) {
        if let Some(gates) = self.own {
            gates.release().await;
        }
    }
}

impl Gates {
    /// The transaction's id, for [`crate::forward::Admission::Txn`].
    pub fn id(&self) -> TxnId {
        self.txn
    }

    /// Gives every gate back. Jobs sent before this call run first.
    pub async fn release(mut self) {
        self.released = true;
        release_all(&self.shard, self.txn, std::mem::take(&mut self.shards)).await;
    }
}

impl Drop for Gates {
    fn drop(&mut self) {
        if self.released || self.shards.is_empty() {
            return;
        }
        let (shard, txn, shards) = (
            self.shard.clone(),
            self.txn,
            std::mem::take(&mut self.shards),
        );
        shard
            .clone()
            .spawn_main("txn-release", async move {
                release_all(&shard, txn, shards).await
            })
            .detach();
    }
}

async fn release_all(shard: &Shard, txn: TxnId, shards: Vec<usize>) {
    for owner in shards {
        if owner == shard.id {
            shard.release_gate(txn);
        } else {
            shard.peers.release(owner, txn).await;
        }
    }
}
