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
