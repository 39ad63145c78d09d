//! The owner shard serves the waiters of its keys that became ready (Redis 7.0 `blocked.c`
//! `handleClientsBlockedOnKeys` / `serveClientsBlockedOnKey`): in each key's queue order,
//! one pop per waiter, until the list is empty or no waiter is left.

use std::rc::Rc;

use bytes::Bytes;

use super::op::BlockOp;
use super::queues::Waiter;
use super::slots::{Reservation, Wakeup};
use crate::resp::Frame;
use crate::shard::Shard;

/// Rounds of [`after_command`] in one call: a move served into a watched list makes that
/// list ready in turn (chained BLMOVEs), up to this many links.
const MAX_ROUNDS: usize = 64;

/// After a command ran on `shard`: serves the waiters of every watched key that is ready.
/// Does nothing while a transaction runs here (its end calls this again), nor from within
/// serving itself. Costs one `RefCell` read when no connection waits on this shard's keys.
pub fn after_command(shard: &Shard) {
    let b = &shard.blocking;
    if !b.has_waiters() || b.serving_now.get() {
        return;
    }
    note_ready(shard);
    if b.txn_depth.get() > 0 || shard.gate.is_held() || super::arrivals_pending(shard) {
        return;
    }
    b.serving_now.set(true);
    for _ in 0..MAX_ROUNDS {
        note_ready(shard);
        let ready: Vec<(usize, Bytes)> = std::mem::take(&mut *b.signaled.borrow_mut());
        if ready.is_empty() {
            break;
        }
        let mut moved = false;
        for (db, key) in ready {
            let (next, served_move) = serve_local(shard, db, &key, &[]);
            moved |= served_move;
            if let Some(waiter) = next {
                start_remote(shard, db, key, waiter);
            }
        }
        if !moved {
            break;
        }
    }
    b.serving_now.set(false);
}

/// Appends the watched keys (not already in a serving task's hands) whose value lets their
/// first waiter's op run, and that are not noted yet, to the keys to serve: keys that became
/// ready in earlier commands of a transaction come first.
fn note_ready(shard: &Shard) {
    let heads = shard.blocking.queues.borrow().heads();
    let in_service = shard.blocking.in_service.borrow();
    let mut signaled = shard.blocking.signaled.borrow_mut();
    for (db, key, op) in heads {
        let entry = (db, key);
        if !in_service.contains(&entry)
            && !signaled.contains(&entry)
            && is_ready(shard, db, &entry.1, &op)
        {
            signaled.push(entry);
        }
    }
}

fn is_ready(shard: &Shard, db: usize, key: &Bytes, op: &BlockOp) -> bool {
    let dbs = shard.dbs.borrow();
    dbs.get(db)
        .is_some_and(|d| op.ready(d.peek(key).map(|(value, _)| value)))
}

/// Whether `key` holds data some blocking op could take (a non-empty list or sorted set).
fn has_data(shard: &Shard, db: usize, key: &Bytes) -> bool {
    let dbs = shard.dbs.borrow();
    dbs.get(db)
        .is_some_and(|d| BlockOp::any_ready(d.peek(key).map(|(value, _)| value)))
}

/// Serves `key`'s waiters in order while they are on this shard (reserved and served here,
/// synchronously); waiters in `busy` (reserved by another owner) are skipped. Returns the
/// first waiter on another shard when the key is still ready for it (it needs the mesh),
/// and whether a move was served (its destination may now be ready).
fn serve_local(
    shard: &Shard,
    db: usize,
    key: &Bytes,
    busy: &[(usize, u64)],
) -> (Option<Waiter>, bool) {
    let b = &shard.blocking;
    let mut skip = 0;
    let mut moved = false;
    loop {
        let Some(waiter) = b.queues.borrow().nth(db, key, skip) else {
            return (None, moved);
        };
        if busy.contains(&(waiter.shard, waiter.id)) {
            skip += 1;
            continue;
        }
        if !is_ready(shard, db, key, &waiter.op) {
            if has_data(shard, db, key) {
                // Data of the other family (a sorted set for a list waiter, or the
                // reverse): passed over, as Redis skips clients blocked on another type.
                skip += 1;
                continue;
            }
            return (None, moved);
        }
        if waiter.sole {
            // Reserved for this shard from the start: served here and now, wherever its
            // connection is.
            let Some(wakeup) = run_reserved(shard, db, key, &waiter.op) else {
                return (None, moved);
            };
            moved |= matches!(waiter.op, BlockOp::Move { .. });
            b.queues.borrow_mut().remove(waiter.shard, waiter.id);
            deliver(shard, waiter, db, key.clone(), wakeup);
            continue;
        }
        if waiter.shard != shard.id {
            return (Some(waiter), moved);
        }
        let reservation = b.slots.borrow_mut().reserve(waiter.id);
        match reservation {
            Reservation::Gone => {
                b.queues.borrow_mut().remove(waiter.shard, waiter.id);
                continue;
            }
            Reservation::Busy => {
                skip += 1;
                continue;
            }
            Reservation::Granted => {}
        }
        let wakeup = run_reserved(shard, db, key, &waiter.op);
        let empty = wakeup.is_none();
        if !empty {
            moved |= matches!(waiter.op, BlockOp::Move { .. });
            b.queues.borrow_mut().remove(waiter.shard, waiter.id);
        }
        super::answer(shard, waiter.id, db, key.clone(), waiter.op, wakeup);
        if empty {
            return (None, moved);
        }
    }
}

/// Sends a served waiter its wake-up: at once on this shard, else over the mesh once the
/// owner's log holds the pop (`appendfsync always`).
fn deliver(shard: &Shard, waiter: Waiter, db: usize, key: Bytes, wakeup: Wakeup) {
    if waiter.shard == shard.id {
        super::answer(shard, waiter.id, db, key, waiter.op, Some(wakeup));
        return;
    }
    let Some(rc) = shard.blocking.shard() else {
        return;
    };
    let durable = shard.durable();
    let task = rc.clone();
    rc.spawn_main("blocking-deliver", async move {
        if let Some(point) = durable {
            point.reached().await;
        }
        let Waiter {
            shard: to, id, op, ..
        } = waiter;
        task.run_on(
            to,
            Box::new(move |s: &Shard| {
                super::answer(s, id, db, key, op, Some(wakeup));
                Frame::ok()
            }),
        )
        .await;
    })
    .detach();
}

/// Runs `op` for a reserved waiter on `key`: its wake-up, or `None` when the key had
/// nothing to give.
fn run_reserved(shard: &Shard, db: usize, key: &Bytes, op: &BlockOp) -> Option<Wakeup> {
    if op.needs_handoff(shard) {
        return is_ready(shard, db, key, op).then_some(Wakeup::Handoff);
    }
    match op.serve(shard, db, key) {
        Frame::Null => None,
        reply => Some(Wakeup::Reply(reply)),
    }
}

/// Hands `key`'s serving to a task, starting with `waiter` (on another shard).
fn start_remote(shard: &Shard, db: usize, key: Bytes, waiter: Waiter) {
    let Some(rc) = shard.blocking.shard() else {
        return;
    };
    shard
        .blocking
        .in_service
        .borrow_mut()
        .insert((db, key.clone()));
    let task = rc.clone();
    rc.spawn_main("blocking-serve", serve_remote(task, db, key, waiter))
        .detach();
}

/// Serves `key`'s queue from `first` (a waiter on another shard) on: reserve it over the
/// mesh, pop here as a gated keyspace job, send the reply to its shard; then the next
/// waiters (the local ones at once, as [`serve_local`]) until the key is empty or its queue
/// is done. The key leaves `in_service` inside the last job, so no push is missed.
async fn serve_remote(shard: Rc<Shard>, db: usize, key: Bytes, first: Waiter) {
    let mut busy: Vec<(usize, u64)> = Vec::new();
    let mut next = Some(first);
    while let Some(waiter) = next.take() {
        let id = waiter.id;
        let reservation = shard
            .run_on(
                waiter.shard,
                Box::new(move |s: &Shard| {
                    Frame::Integer(match s.blocking.slots.borrow_mut().reserve(id) {
                        Reservation::Granted => 0,
                        Reservation::Busy => 1,
                        Reservation::Gone => 2,
                    })
                }),
            )
            .await;
        match reservation {
            Frame::Integer(0) => {
                let op = waiter.op.clone();
                let wakeup = if op.needs_handoff(&shard) {
                    is_ready(&shard, db, &key, &op).then_some(Wakeup::Handoff)
                } else {
                    let (k, o) = (key.clone(), op.clone());
                    match shard
                        .run_on_in(
                            shard.id,
                            None,
                            Box::new(move |s: &Shard| o.serve(s, db, &k)),
                        )
                        .await
                    {
                        Frame::Null => None,
                        reply => Some(Wakeup::Reply(reply)),
                    }
                };
                if wakeup.is_some() {
                    shard.blocking.queues.borrow_mut().remove(waiter.shard, id);
                }
                let k = key.clone();
                shard
                    .run_on(
                        waiter.shard,
                        Box::new(move |s: &Shard| {
                            super::answer(s, id, db, k, op, wakeup);
                            Frame::ok()
                        }),
                    )
                    .await;
            }
            Frame::Integer(1) => busy.push((waiter.shard, id)),
            _ => {
                shard.blocking.queues.borrow_mut().remove(waiter.shard, id);
            }
        }
        // The next waiter, found (and the local ones served) in one gated job.
        let (k, skip) = (key.clone(), busy.clone());
        shard
            .run_on_in(
                shard.id,
                None,
                Box::new(move |s: &Shard| {
                    let b = &s.blocking;
                    b.serving_now.set(true);
                    let (found, _) = serve_local(s, db, &k, &skip);
                    b.serving_now.set(false);
                    match found {
                        Some(w) => b.found.borrow_mut().push(((db, k), w)),
                        None => {
                            b.in_service.borrow_mut().remove(&(db, k));
                        }
                    }
                    Frame::ok()
                }),
            )
            .await;
        let mut found = shard.blocking.found.borrow_mut();
        if let Some(at) = found.iter().position(|((d, k), _)| *d == db && *k == key) {
            next = Some(found.swap_remove(at).1);
        }
    }
    // Moves served meanwhile may have made other keys ready.
    after_command(&shard);
}
