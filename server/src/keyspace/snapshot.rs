//! A point-in-time dump of one shard's keyspace taken while the shard keeps serving, with no
//! copy of the keyspace (the scheme of Dragonfly's snapshots): keys are visited in the SCAN
//! index order; a write about to change a key the dump has not visited yet first dumps the
//! key's value as it was, and marks it done. A key created after the start is marked done
//! without dumping (it is in the new incremental log). Memory: the records of keys dumped
//! ahead of the cursor until they are written, plus one entry per such key in `done_ahead`.

use std::collections::HashSet;

use bytes::Bytes;

use super::key::Key;
use super::value::Value;
use crate::aof::record::encode;
use crate::resp::double::double_text;

/// Elements per RPUSH/HSET/SADD record when a collection is dumped.
const ITEMS_PER_RECORD: usize = 128;

/// The state of a dump in progress (see the module doc).
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The database index this keyspace had when the dump started: its records go under
    /// `SELECT label` in the base file. A SWAPDB during the dump swaps whole keyspaces, dump
    /// state included, so each dump keeps describing the database it started in (replay
    /// applies the same SWAPDB to what the base loaded). No eager copy is needed.
    pub(super) label: usize,
    /// The last (scan position, key) visited; `None` before the first.
    pub(super) last: Option<(u64, Key)>,
    /// Keys after `last` already dumped (or created after the start).
    pub(super) done_ahead: HashSet<Key>,
    /// Dumped records not yet taken.
    pub(super) out: Vec<u8>,
    /// FLUSHALL/FLUSHDB ran during the dump. The log records it after the switch point, so
    /// replay empties the keyspace after loading the base whatever the base holds: the dump
    /// ends at once, complete. (After a SWAPDB the flushed keyspace is the one replay has
    /// moved to the same index, so this still holds.)
    pub(super) flushed: bool,
}

impl Snapshot {
    /// Whether (pos, key) was visited already.
    pub(super) fn visited(&self, pos: u64, key: &[u8]) -> bool {
        self.last
            .as_ref()
            .is_some_and(|(p, k)| (pos, key) <= (*p, k.as_ref()))
    }
}

/// Appends the records recreating `key` with `value` and deadline `expires_at` (absolute
/// unix ms): SET, or RPUSH/HSET/SADD/ZADD in groups of 128 elements, then PEXPIREAT.
pub fn dump_entry(out: &mut Vec<u8>, key: &[u8], value: &Value, expires_at: Option<u64>) {
    match value {
        Value::Str(s) => encode(out, &[&b"SET"[..], key, s]),
        Value::List(items) => {
            let items: Vec<&Bytes> = items.iter().collect();
            for chunk in items.chunks(ITEMS_PER_RECORD) {
                let mut record: Vec<&[u8]> = vec![b"RPUSH", key];
                record.extend(chunk.iter().map(|b| b.as_ref()));
                encode(out, &record);
            }
        }
        Value::Hash(map) => {
            let pairs: Vec<(&Bytes, &Bytes)> = map.iter().collect();
            for chunk in pairs.chunks(ITEMS_PER_RECORD) {
                let mut record: Vec<&[u8]> = vec![b"HSET", key];
                for (field, value) in chunk {
                    record.push(field);
                    record.push(value);
                }
                encode(out, &record);
            }
        }
        Value::Set(members) => {
            let members: Vec<&Bytes> = members.iter().collect();
            for chunk in members.chunks(ITEMS_PER_RECORD) {
                let mut record: Vec<&[u8]> = vec![b"SADD", key];
                record.extend(chunk.iter().map(|b| b.as_ref()));
                encode(out, &record);
            }
        }
        Value::ZSet(zset) => {
            // `%.17g` scores parse back to the same double.
            let pairs: Vec<(String, &Bytes)> =
                zset.iter().map(|(m, s)| (double_text(s), m)).collect();
            for chunk in pairs.chunks(ITEMS_PER_RECORD) {
                let mut record: Vec<&[u8]> = vec![b"ZADD", key];
                for (score, member) in chunk {
                    record.push(score.as_bytes());
                    record.push(member);
                }
                encode(out, &record);
            }
        }
    }
    if let Some(at) = expires_at {
        let at = at.to_string();
        encode(out, &[&b"PEXPIREAT"[..], key, at.as_bytes()]);
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use crate::aof::record::{decode, encode};
    use crate::keyspace::{Db, Value};

    fn run(db: &mut Db, args: &[&str]) {
        let args: Vec<Bytes> = args.iter().map(|a| Bytes::from(a.to_string())).collect();
        crate::cmd::execute(db, &args, 0);
    }

    fn replay(dump: &[u8]) -> Db {
        let mut db = Db::new();
        let mut pos = 0;
        while pos < dump.len() {
            let (args, len) = decode(&dump[pos..]).expect("a whole record");
            crate::cmd::execute(&mut db, &args, 0);
            pos += len;
        }
        db
    }

    fn state(db: &mut Db) -> Vec<(Bytes, String, Option<u64>)> {
        let mut keys = db.keys(b"*", 0);
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let (value, at) = db.peek(&k).expect("listed key");
                let shown = match value {
                    Value::Str(s) => format!("{s:?}"),
                    Value::List(l) => format!("{l:?}"),
                    Value::Hash(h) => {
                        let mut pairs: Vec<_> = h.iter().collect();
                        pairs.sort();
                        format!("{pairs:?}")
                    }
                    Value::Set(s) => {
                        let mut members: Vec<_> = s.iter().collect();
                        members.sort();
                        format!("{members:?}")
                    }
                    Value::ZSet(z) => format!("{:?}", z.iter().collect::<Vec<_>>()),
                };
                (k, shown, at)
            })
            .collect()
    }

    #[test]
    fn the_dump_is_the_state_at_its_start_whatever_changes_meanwhile() {
        let mut db = Db::new();
        for i in 0..50 {
            run(&mut db, &["SET", &format!("s{i}"), &i.to_string()]);
            run(&mut db, &["RPUSH", &format!("l{i}"), "a", "b"]);
            run(&mut db, &["HSET", &format!("h{i}"), "f", "v"]);
            run(&mut db, &["SADD", &format!("t{i}"), "x", "y"]);
            run(
                &mut db,
                &["ZADD", &format!("z{i}"), "0.1", "x", "-inf", "y", "2", "w"],
            );
        }
        run(&mut db, &["PEXPIREAT", "s7", "4000000000000"]);
        let at_start = state(&mut db);
        db.start_snapshot(0);
        let mut dump = Vec::new();
        let (bytes, done) = db.snapshot_step(10).unwrap();
        assert!(!done);
        dump.extend(bytes);
        // Changes of every kind, to keys visited or not.
        for i in 0..50 {
            run(&mut db, &["SET", &format!("s{i}"), "changed"]);
            run(&mut db, &["RPUSH", &format!("l{i}"), "c"]);
            run(&mut db, &["DEL", &format!("h{i}")]);
            run(&mut db, &["SREM", &format!("t{i}"), "x"]);
            run(&mut db, &["ZINCRBY", &format!("z{i}"), "1", "x"]);
            run(&mut db, &["SET", &format!("new{i}"), "v"]);
        }
        run(&mut db, &["PERSIST", "s7"]);
        loop {
            let (bytes, done) = db.snapshot_step(7).unwrap();
            dump.extend(bytes);
            if done {
                break;
            }
        }
        assert_eq!(state(&mut replay(&dump)), at_start);
    }

    #[test]
    fn a_flush_ends_the_dump_and_the_log_after_it_wins() {
        let mut db = Db::new();
        for i in 0..50 {
            run(&mut db, &["SET", &format!("s{i}"), "v"]);
        }
        db.start_snapshot(0);
        let (mut dump, done) = db.snapshot_step(10).unwrap();
        assert!(!done);
        // The log after the switch point: the flush, then a new key.
        let mut after = Vec::new();
        run(&mut db, &["FLUSHALL"]);
        encode(&mut after, &[&b"FLUSHALL"[..]]);
        run(&mut db, &["SET", "new", "1"]);
        encode(&mut after, &[&b"SET"[..], b"new", b"1"]);
        assert_eq!(db.snapshot_step(10), Ok((Vec::new(), true)));
        assert!(
            db.snapshot_step(10).is_err(),
            "no dump in progress any more"
        );
        dump.extend(after);
        assert_eq!(state(&mut replay(&dump)), state(&mut db));
        assert_eq!(db.len(), 1);
    }
}
