//! WATCH / UNWATCH on the connection's side (Redis 7 `multi.c`): which keys a connection
//! watches, on which shard and database, and with which stamp ([`WatchStamp`]). The owner
//! shard keeps the versions ([`crate::keyspace::watch`]); EXEC asks the owners, while it
//! holds their gates, whether any watched key changed.

use std::rc::Rc;

use bytes::Bytes;

use crate::forward::{await_reply, ShardJob, TxnId};
use crate::keyspace::watch::WatchStamp;
use crate::resp::Frame;
use crate::shard::{unix_time_ms, Shard};

/// One watched key of a connection.
#[derive(Debug, Clone)]
struct WatchedKey {
    owner: usize,
    db: usize,
    key: Bytes,
    stamp: WatchStamp,
}

/// The keys a connection watches. Dropping it (the connection closed) unregisters them on
/// their owner shards.
#[derive(Default)]
pub struct WatchedKeys {
    shard: Option<Rc<Shard>>,
    keys: Vec<WatchedKey>,
}

impl std::fmt::Debug for WatchedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|k| &k.key))
            .finish()
    }
}

impl WatchedKeys {
    /// Whether nothing is watched.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The owner shards of the watched keys (with repeats).
    pub fn owners(&self) -> impl Iterator<Item = usize> + '_ {
        self.keys.iter().map(|k| k.owner)
    }

    /// `WATCH key …` on database `db`: registers each key not yet watched (for this
    /// database) with its owner shard and remembers its stamp.
    pub async fn watch(&mut self, shard: &Rc<Shard>, db: usize, keys: &[Bytes]) {
        self.shard.get_or_insert_with(|| shard.clone());
        for key in keys {
            if self.keys.iter().any(|w| w.db == db && w.key == *key) {
                continue;
            }
            let owner = shard.owner_of(key);
            let k = key.clone();
            let reply = shard
                .run_on(
                    owner,
                    Box::new(move |s: &Shard| {
                        let mut dbs = s.dbs.borrow_mut();
                        let Some(target) = dbs.get_mut(db) else {
                            return Frame::error(crate::cmd::databases::OUT_OF_RANGE);
                        };
                        let stamp = target.watch(&k, unix_time_ms());
                        Frame::Array(vec![
                            Frame::Integer(stamp.version as i64),
                            Frame::Integer(i64::from(stamp.stale)),
                        ])
                    }),
                )
                .await;
            if let Frame::Array(items) = reply {
                if let [Frame::Integer(version), Frame::Integer(stale)] = items.as_slice() {
                    let stamp = WatchStamp {
                        version: *version as u64,
                        stale: *stale != 0,
                    };
                    self.keys.push(WatchedKey {
                        owner,
                        db,
                        key: key.clone(),
                        stamp,
                    });
                }
            }
        }
    }

    /// Hands every watched key, all owned by shard `owner`, to a check that runs there and
    /// then unregisters them ([`WatchCheck::changed_then_unwatch`]): nothing is watched here
    /// afterwards. (Unregistering from here instead could overtake the check.)
    pub fn take_for(&mut self, owner: usize) -> WatchCheck {
        let (keys, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.keys)
            .into_iter()
            .partition(|k| k.owner == owner);
        self.keys = others;
        WatchCheck { keys }
    }

    fn checker_for(&self, owner: usize) -> WatchCheck {
        WatchCheck {
            keys: self
                .keys
                .iter()
                .filter(|k| k.owner == owner)
                .cloned()
                .collect(),
        }
    }

    /// Whether a watched key changed since WATCH (EXEC then replies with a null array).
    /// `txn` holds the gates of every owner shard of the watched keys.
    pub async fn any_changed(&self, shard: &Rc<Shard>, txn: Option<TxnId>) -> bool {
        let mut owners: Vec<usize> = self.owners().collect();
        owners.sort_unstable();
        owners.dedup();
        for owner in owners {
            let check = self.checker_for(owner);
            let job = Box::new(move |s: &Shard| Frame::Integer(i64::from(check.any_changed(s))));
            let reply = if owner == shard.id {
                job(shard)
            } else {
                await_reply(shard.peers.submit_in(owner, txn, job).await).await
            };
            if reply != Frame::Integer(0) {
                return true;
            }
        }
        false
    }

    /// UNWATCH: forgets every watched key, unregistering them on their owners. Returns once
    /// the requests are queued (not answered): they travel ahead of this connection's next
    /// request to the same owner, so a WATCH right after cannot be overtaken.
    pub async fn clear(&mut self) {
        let jobs = self.unwatch_jobs();
        if let Some(shard) = &self.shard {
            send_unwatch(shard, jobs).await;
        }
    }

    /// The unregistration of every watched key, one job per owner shard; forgets them here.
    fn unwatch_jobs(&mut self) -> Vec<(usize, ShardJob)> {
        let keys = std::mem::take(&mut self.keys);
        let mut owners: Vec<usize> = keys.iter().map(|k| k.owner).collect();
        owners.sort_unstable();
        owners.dedup();
        owners
            .into_iter()
            .map(|owner| {
                let mine: Vec<(usize, Bytes)> = keys
                    .iter()
                    .filter(|k| k.owner == owner)
                    .map(|k| (k.db, k.key.clone()))
                    .collect();
                let job: ShardJob = Box::new(move |s: &Shard| {
                    let mut dbs = s.dbs.borrow_mut();
                    for (db, key) in &mine {
                        if let Some(target) = dbs.get_mut(*db) {
                            target.unwatch(key);
                        }
                    }
                    Frame::ok()
                });
                (owner, job)
            })
            .collect()
    }
}

/// Watched keys of one owner shard, checked there.
pub struct WatchCheck {
    keys: Vec<WatchedKey>,
}

impl WatchCheck {
    /// Whether one of the keys changed since it was watched (run on their owner `shard`).
    pub fn any_changed(&self, shard: &Shard) -> bool {
        let dbs = shard.dbs.borrow();
        let now = unix_time_ms();
        self.keys.iter().any(|w| {
            dbs.get(w.db)
                .is_some_and(|db| db.watched_key_changed(&w.key, w.stamp, now))
        })
    }

    /// [`WatchCheck::any_changed`], then unregisters the keys (EXEC is done with them).
    pub fn changed_then_unwatch(&self, shard: &Shard) -> bool {
        let changed = self.any_changed(shard);
        let mut dbs = shard.dbs.borrow_mut();
        for w in &self.keys {
            if let Some(db) = dbs.get_mut(w.db) {
                db.unwatch(&w.key);
            }
        }
        changed
    }
}

impl Drop for WatchedKeys {
    /// The connection closed: unregisters its watched keys from a spawned task.
    fn drop(&mut self) {
        let Some(shard) = self.shard.clone() else {
            return;
        };
        let jobs = self.unwatch_jobs();
        if jobs.is_empty() {
            return;
        }
        let sender = shard.clone();
        shard
            .spawn_main("unwatch", async move { send_unwatch(&sender, jobs).await })
            .detach();
    }
}

/// Runs each owner's unregistration job: here for this shard, else queued on the channel to
/// the owner (not waiting for its answer).
async fn send_unwatch(shard: &Shard, jobs: Vec<(usize, ShardJob)>) {
    for (owner, job) in jobs {
        if owner == shard.id {
            job(shard);
        } else {
            drop(shard.peers.submit_stats_to(owner, job).await);
        }
    }
}
