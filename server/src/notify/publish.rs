//! Publishing keyspace events (Redis 7.0 `notify.c` `notifyKeyspaceEvent`): each event goes
//! to `__keyspace@<db>__:<key>` with the event name as message (class `K`) and to
//! `__keyevent@<db>__:<event>` with the key as message (class `E`), to this shard's
//! subscribers at once and to every other shard's through one job each over the cross-shard
//! mesh, queued in order after this shard's earlier ones.

use bytes::{BufMut, Bytes, BytesMut};

use super::flags;
use crate::keyspace::{Db, KeyEvent};
use crate::resp::Frame;
use crate::shard::Shard;

/// The `(channel, message)` pairs Redis publishes for `event` in database `db` under the
/// classes `enabled` (`K` and/or `E`): the keyspace one first, then the keyevent one.
pub fn messages(db: usize, event: &KeyEvent, enabled: u16, out: &mut Vec<(Bytes, Bytes)>) {
    let name = Bytes::from_static(event.event.as_bytes());
    if enabled & flags::KEYSPACE != 0 {
        out.push((channel(b"__keyspace@", db, &event.key), name.clone()));
    }
    if enabled & flags::KEYEVENT != 0 {
        out.push((channel(b"__keyevent@", db, &name), event.key.clone()));
    }
}

/// `<prefix><db>__:<suffix>`.
fn channel(prefix: &[u8], db: usize, suffix: &[u8]) -> Bytes {
    let db = db.to_string();
    let mut out = BytesMut::with_capacity(prefix.len() + db.len() + 3 + suffix.len());
    out.put_slice(prefix);
    out.put_slice(db.as_bytes());
    out.put_slice(b"__:");
    out.put_slice(suffix);
    out.freeze()
}

/// After a command (or an expiry sweep step) that ran on database `selected` of `dbs`:
/// publishes the events the databases gathered, in the order they were reported (a MOVE's
/// `new` and `move_to` in the target database after its `move_from` in the selected one, as
/// Redis). The classes in [`Shard::quiet_events`] (a step of a composed command, which
/// reports the command's events itself) are dropped.
pub fn after_command(shard: &Shard, dbs: &mut [Db], selected: usize) {
    let quiet = shard.quiet_events.get();
    if quiet == u16::MAX {
        dbs.iter_mut().for_each(Db::discard_events);
        return;
    }
    let enabled = dbs.get(selected).map_or(0, Db::notify_classes);
    let mut events: Vec<(usize, KeyEvent)> = Vec::new();
    for (index, db) in dbs.iter_mut().enumerate() {
        let kept = db
            .take_events()
            .into_iter()
            .filter(|e| e.class & quiet == 0);
        events.extend(kept.map(|e| (index, e)));
    }
    events.sort_by_key(|(_, e)| e.seq);
    let mut out = Vec::with_capacity(events.len() * 2);
    for (index, event) in &events {
        messages(*index, event, enabled, &mut out);
    }
    deliver(shard, out);
}

/// Publishes the events of a command composed of steps on several shards (cross-shard
/// RENAME, COPY, MSETNX), in Redis's order, from the shard that ran the composition: each
/// `(database, class, event, key)` is published when `notify-keyspace-events` selects its
/// class.
pub fn composed(shard: &Shard, events: &[(usize, u16, &'static str, Bytes)]) {
    let enabled = match shard.dbs.borrow().first() {
        Some(db) => db.notify_classes(),
        None => return,
    };
    if enabled == 0 {
        return;
    }
    let mut out = Vec::new();
    for (db, class, event, key) in events {
        if enabled & class != 0 {
            let event = KeyEvent {
                class: *class,
                event,
                key: key.clone(),
                seq: 0,
            };
            messages(*db, &event, enabled, &mut out);
        }
    }
    deliver(shard, out);
}

/// Publishes `messages` here and queues one job with all of them for every other shard.
fn deliver(shard: &Shard, messages: Vec<(Bytes, Bytes)>) {
    if messages.is_empty() {
        return;
    }
    for (channel, message) in &messages {
        shard.pubsub.publish(channel, message);
    }
    for peer in (0..shard.nr_shards).filter(|&p| p != shard.id) {
        let messages = messages.clone();
        shard.peers.post(
            peer,
            Box::new(move |s: &Shard| {
                for (channel, message) in &messages {
                    s.pubsub.publish(channel, message);
                }
                Frame::Null
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(db: usize, event: &'static str, key: &str, enabled: u16) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let event = KeyEvent {
            class: flags::GENERIC,
            event,
            key: Bytes::copy_from_slice(key.as_bytes()),
            seq: 0,
        };
        messages(db, &event, enabled, &mut out);
        out.into_iter()
            .map(|(c, m)| {
                (
                    String::from_utf8_lossy(&c).into_owned(),
                    String::from_utf8_lossy(&m).into_owned(),
                )
            })
            .collect()
    }

    fn owned(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(c, m)| (c.to_string(), m.to_string()))
            .collect()
    }

    #[test]
    fn keyspace_then_keyevent_as_redis() {
        let both = flags::KEYSPACE | flags::KEYEVENT;
        assert_eq!(
            pairs(9, "del", "foo", both),
            owned(&[("__keyspace@9__:foo", "del"), ("__keyevent@9__:del", "foo")])
        );
        assert_eq!(
            pairs(0, "expired", "a:b", flags::KEYEVENT),
            owned(&[("__keyevent@0__:expired", "a:b")])
        );
        assert_eq!(
            pairs(15, "set", "k", flags::KEYSPACE),
            owned(&[("__keyspace@15__:k", "set")])
        );
        assert!(pairs(0, "set", "k", flags::ALL).is_empty());
    }
}
