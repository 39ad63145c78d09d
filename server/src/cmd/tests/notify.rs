//! The keyspace events each command reports (Redis 7.0's `notifyKeyspaceEvent` calls; the
//! sequences were checked against redis-server 7.0.15 with `notify-keyspace-events AKEnm`).

use bytes::Bytes;

use super::rt;
use crate::cmd::databases::execute_in;
use crate::keyspace::Db;
use crate::notify::flags;

/// A database reporting every class.
fn db() -> Db {
    let mut db = Db::new();
    db.set_notify_flags(flags::parse(b"AKEnm").expect("valid"));
    db
}

/// Runs `line` at `now` and returns its events as `event key`, in order.
fn ev(db: &mut Db, now: u64, line: &str) -> Vec<String> {
    rt(db, now, line);
    taken(db)
}

fn taken(db: &mut Db) -> Vec<String> {
    db.take_events()
        .into_iter()
        .map(|e| format!("{} {}", e.event, String::from_utf8_lossy(&e.key)))
        .collect()
}

#[test]
fn off_by_default_and_without_k_or_e() {
    let mut plain = Db::new();
    assert!(!plain.notifies());
    assert!(ev(&mut plain, 0, "SET k v").is_empty());
    let mut no_target = Db::new();
    no_target.set_notify_flags(flags::ALL);
    assert!(!no_target.notifies());
    assert!(ev(&mut no_target, 0, "LPUSH l a").is_empty());
}

#[test]
fn classes_mask_events() {
    let mut db = Db::new();
    db.set_notify_flags(flags::parse(b"Kl").expect("valid"));
    assert!(ev(&mut db, 0, "SET k v").is_empty());
    assert_eq!(ev(&mut db, 0, "LPUSH l a"), ["lpush l"]);
    assert!(ev(&mut db, 0, "DEL l").is_empty());
}

#[test]
fn string_events() {
    let mut db = db();
    assert_eq!(ev(&mut db, 0, "SET s 1"), ["new s", "set s"]);
    assert_eq!(ev(&mut db, 0, "SET s 2 EX 100"), ["set s", "expire s"]);
    assert!(ev(&mut db, 0, "SET s 3 NX").is_empty());
    assert!(ev(&mut db, 0, "SETNX s x").is_empty());
    assert_eq!(ev(&mut db, 0, "SETNX s2 x"), ["new s2", "set s2"]);
    assert_eq!(
        ev(&mut db, 0, "SETEX s3 100 v"),
        ["new s3", "set s3", "expire s3"]
    );
    assert_eq!(
        ev(&mut db, 0, "MSET m1 a m2 b"),
        ["new m1", "set m1", "new m2", "set m2"]
    );
    assert!(ev(&mut db, 0, "MSETNX m1 z m3 c").is_empty());
    assert_eq!(ev(&mut db, 0, "APPEND s xyz"), ["append s"]);
    assert_eq!(ev(&mut db, 0, "APPEND ap x"), ["new ap", "append ap"]);
    assert_eq!(ev(&mut db, 0, "SETRANGE s 1 QQ"), ["setrange s"]);
    assert!(ev(&mut db, 0, "SETRANGE s 0 ").is_empty());
    assert!(ev(&mut db, 0, "SETRANGE nokey 0 ").is_empty());
    assert_eq!(
        ev(&mut db, 0, "GETSET gs g"),
        ["keymiss gs", "new gs", "set gs"]
    );
    assert_eq!(ev(&mut db, 0, "INCR i"), ["new i", "incrby i"]);
    assert_eq!(ev(&mut db, 0, "DECRBY i 2"), ["incrby i"]);
    assert_eq!(
        ev(&mut db, 0, "INCRBYFLOAT f 1.5"),
        ["new f", "incrbyfloat f"]
    );
    assert_eq!(ev(&mut db, 0, "SETBIT b 3 1"), ["new b", "setbit b"]);
    assert!(ev(&mut db, 0, "SETBIT b 3 1").is_empty());
    assert_eq!(ev(&mut db, 0, "SETBIT b 9 0"), ["setbit b"]);
    assert_eq!(ev(&mut db, 0, "GETDEL s2"), ["del s2"]);
    assert_eq!(ev(&mut db, 0, "GETDEL nosuch"), ["keymiss nosuch"]);
    assert_eq!(ev(&mut db, 0, "GETEX s3 PERSIST"), ["persist s3"]);
    assert!(ev(&mut db, 0, "GETEX s3 PERSIST").is_empty());
    assert_eq!(ev(&mut db, 0, "GETEX s3 EX 50"), ["expire s3"]);
    assert_eq!(ev(&mut db, 10, "GETEX s3 PXAT 1"), ["del s3"]);
}

#[test]
fn generic_events() {
    let mut db = db();
    rt(&mut db, 0, "MSET a 1 b 2 c 3");
    taken(&mut db);
    assert_eq!(ev(&mut db, 0, "DEL a nosuch b"), ["del a", "del b"]);
    assert_eq!(ev(&mut db, 0, "UNLINK c"), ["del c"]);
    rt(&mut db, 0, "SET k v");
    taken(&mut db);
    assert_eq!(ev(&mut db, 0, "EXPIRE k 100"), ["expire k"]);
    assert!(ev(&mut db, 0, "EXPIRE k 100 NX").is_empty());
    assert_eq!(ev(&mut db, 0, "PERSIST k"), ["persist k"]);
    assert!(ev(&mut db, 0, "PERSIST k").is_empty());
    assert_eq!(ev(&mut db, 10, "PEXPIRE k -1"), ["del k"]);
    rt(&mut db, 0, "SET r1 v");
    rt(&mut db, 0, "SET r3 v");
    taken(&mut db);
    assert_eq!(
        ev(&mut db, 0, "RENAME r1 r2"),
        ["new r2", "rename_from r1", "rename_to r2"]
    );
    // Over an existing key: deleted first, so the destination is new again.
    assert_eq!(
        ev(&mut db, 0, "RENAME r2 r3"),
        ["new r3", "rename_from r2", "rename_to r3"]
    );
    assert_eq!(
        ev(&mut db, 0, "RENAMENX r3 r4"),
        ["new r4", "rename_from r3", "rename_to r4"]
    );
}

#[test]
fn restore_events() {
    let mut db = db();
    rt(&mut db, 0, "SET src v");
    let payload = match crate::cmd::execute(
        &mut db,
        &[Bytes::from_static(b"DUMP"), Bytes::from_static(b"src")],
        0,
    ) {
        crate::resp::Frame::Bulk(p) => p,
        other => panic!("DUMP: {other:?}"),
    };
    taken(&mut db);
    let restore = |db: &mut Db, now: u64, extra: &[&[u8]]| {
        let mut args = vec![
            Bytes::from_static(b"RESTORE"),
            Bytes::from_static(b"rs"),
            Bytes::copy_from_slice(extra[0]),
            payload.clone(),
        ];
        args.extend(extra[1..].iter().map(|a| Bytes::copy_from_slice(a)));
        crate::cmd::execute(db, &args, now);
        taken(db)
    };
    assert_eq!(restore(&mut db, 0, &[b"0"]), ["new rs", "restore rs"]);
    assert_eq!(
        restore(&mut db, 0, &[b"0", b"REPLACE"]),
        ["new rs", "restore rs"]
    );
    // A deadline already past: the replaced key is deleted.
    assert_eq!(
        restore(&mut db, 10, &[b"1", b"REPLACE", b"ABSTTL"]),
        ["del rs"]
    );
    assert!(restore(&mut db, 10, &[b"1", b"ABSTTL"]).is_empty());
}

#[test]
fn list_events() {
    let mut db = db();
    assert_eq!(ev(&mut db, 0, "LPUSH l a b"), ["new l", "lpush l"]);
    assert_eq!(ev(&mut db, 0, "RPUSH l c"), ["rpush l"]);
    assert!(ev(&mut db, 0, "LPUSHX nol a").is_empty());
    assert_eq!(ev(&mut db, 0, "RPUSHX l d"), ["rpush l"]);
    assert_eq!(ev(&mut db, 0, "LPOP l"), ["lpop l"]);
    assert!(ev(&mut db, 0, "RPOP l 0").is_empty());
    assert_eq!(ev(&mut db, 0, "RPOP l 1"), ["rpop l"]);
    assert_eq!(ev(&mut db, 0, "LSET l 0 z"), ["lset l"]);
    assert_eq!(ev(&mut db, 0, "LINSERT l BEFORE z y"), ["linsert l"]);
    assert!(ev(&mut db, 0, "LINSERT l BEFORE nope y").is_empty());
    assert!(ev(&mut db, 0, "LREM l 0 nope").is_empty());
    assert_eq!(ev(&mut db, 0, "LREM l 0 y"), ["lrem l"]);
    assert_eq!(ev(&mut db, 0, "LTRIM l 5 10"), ["ltrim l", "del l"]);
    rt(&mut db, 0, "RPUSH l2 a b c");
    taken(&mut db);
    assert_eq!(ev(&mut db, 0, "LTRIM l2 0 -1"), ["ltrim l2"]);
    assert_eq!(ev(&mut db, 0, "LPOP l2 5"), ["lpop l2", "del l2"]);
}

#[test]
fn hash_events() {
    let mut db = db();
    assert_eq!(ev(&mut db, 0, "HSET h a 1 b 2"), ["new h", "hset h"]);
    assert_eq!(ev(&mut db, 0, "HSET h a 1"), ["hset h"]);
    assert_eq!(ev(&mut db, 0, "HMSET h c 3"), ["hset h"]);
    assert!(ev(&mut db, 0, "HSETNX h a 9").is_empty());
    assert_eq!(ev(&mut db, 0, "HSETNX h d 9"), ["hset h"]);
    assert_eq!(ev(&mut db, 0, "HINCRBY h n 3"), ["hincrby h"]);
    assert_eq!(ev(&mut db, 0, "HINCRBYFLOAT h f 1.5"), ["hincrbyfloat h"]);
    assert!(ev(&mut db, 0, "HDEL h zz").is_empty());
    assert_eq!(ev(&mut db, 0, "HDEL h a b c d n f"), ["hdel h", "del h"]);
}

#[test]
fn set_events() {
    let mut db = db();
    assert_eq!(ev(&mut db, 0, "SADD st a b"), ["new st", "sadd st"]);
    assert!(ev(&mut db, 0, "SADD st a").is_empty());
    assert!(ev(&mut db, 0, "SREM st x").is_empty());
    assert_eq!(ev(&mut db, 0, "SREM st a"), ["srem st"]);
    assert!(ev(&mut db, 0, "SPOP st 0").is_empty());
    assert_eq!(ev(&mut db, 0, "SPOP st"), ["spop st", "del st"]);
    rt(&mut db, 0, "SADD st2 a b c");
    taken(&mut db);
    assert_eq!(ev(&mut db, 0, "SPOP st2 5"), ["spop st2", "del st2"]);
}

#[test]
fn expired_and_missed_keys() {
    let mut db = db();
    rt(&mut db, 0, "SET e v PX 10");
    taken(&mut db);
    // Found expired by a read: `expired`, then the read's `keymiss`.
    assert_eq!(ev(&mut db, 100, "GET e"), ["expired e", "keymiss e"]);
    assert_eq!(ev(&mut db, 100, "GET missing"), ["keymiss missing"]);
    // A write command's lookup: `expired` only.
    rt(&mut db, 0, "SET e2 v PX 10");
    taken(&mut db);
    assert_eq!(
        ev(&mut db, 100, "LPUSH e2 a"),
        ["expired e2", "new e2", "lpush e2"]
    );
    // The active sweep.
    rt(&mut db, 0, "SET e3 v PX 10");
    taken(&mut db);
    assert_eq!(db.sweep_expired(100, 10), 1);
    assert_eq!(taken(&mut db), ["expired e3"]);
}

#[test]
fn move_reports_in_both_databases_in_order() {
    let mut dbs: Vec<Db> = (0..4).map(|_| db()).collect();
    let args = |line: &str| -> Vec<Bytes> {
        line.split(' ')
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect()
    };
    execute_in(&mut dbs, 0, &args("SET k v"), 0);
    dbs[0].take_events();
    execute_in(&mut dbs, 0, &args("MOVE k 2"), 0);
    let mut all: Vec<(u64, usize, String)> = Vec::new();
    for (index, db) in dbs.iter_mut().enumerate() {
        for e in db.take_events() {
            all.push((
                e.seq,
                index,
                format!("{} {}", e.event, String::from_utf8_lossy(&e.key)),
            ));
        }
    }
    all.sort();
    let got: Vec<(usize, String)> = all.into_iter().map(|(_, i, e)| (i, e)).collect();
    assert_eq!(
        got,
        [
            (2, "new k".to_string()),
            (0, "move_from k".to_string()),
            (2, "move_to k".to_string())
        ]
    );
    execute_in(&mut dbs, 0, &args("SET c v"), 0);
    dbs[0].take_events();
    execute_in(&mut dbs, 0, &args("COPY c c1"), 0);
    assert_eq!(taken(&mut dbs[0]), ["new c1", "copy_to c1"]);
    execute_in(&mut dbs, 0, &args("COPY c c1"), 0);
    assert!(taken(&mut dbs[0]).is_empty());
    execute_in(&mut dbs, 0, &args("COPY c c1 REPLACE"), 0);
    assert_eq!(taken(&mut dbs[0]), ["new c1", "copy_to c1"]);
    execute_in(&mut dbs, 0, &args("COPY c c DB 3"), 0);
    assert!(dbs[0].take_events().is_empty());
    assert_eq!(taken(&mut dbs[3]), ["new c", "copy_to c"]);
}

/// A database reporting every class after `setup` ran, its events dropped.
fn with(setup: &[&str]) -> Db {
    let mut db = db();
    for line in setup {
        rt(&mut db, 0, line);
    }
    taken(&mut db);
    db
}

#[test]
fn sorted_set_events() {
    // Redis 7.0.15 t_zset.c: zadd/zincr (only when something was added or updated),
    // zrem, zremrangeby*, zpopmin/zpopmax (ZMPOP too), the STORE forms and ZRANGESTORE
    // (`del` of an existing destination for an empty result), `del` of an emptied key.
    let mut db = with(&[]);
    assert_eq!(ev(&mut db, 0, "ZADD z 1 a 2 b"), ["new z", "zadd z"]);
    let mut db = with(&["ZADD z 1 a"]);
    assert!(ev(&mut db, 0, "ZADD z 1 a").is_empty());
    let mut db = with(&["ZADD z 1 a"]);
    assert_eq!(ev(&mut db, 0, "ZADD z CH 2 a"), ["zadd z"]);
    let mut db = with(&["ZADD z 1 a"]);
    assert_eq!(ev(&mut db, 0, "ZADD z INCR 1 a"), ["zincr z"]);
    let mut db = with(&["ZADD z 1 a"]);
    assert!(ev(&mut db, 0, "ZADD z INCR 0 a").is_empty());
    let mut db = with(&[]);
    assert!(ev(&mut db, 0, "ZADD z XX 1 a").is_empty());
    let mut db = with(&[]);
    assert_eq!(ev(&mut db, 0, "ZINCRBY z 1 a"), ["new z", "zincr z"]);
    let mut db = with(&["ZADD z 1 a"]);
    assert!(ev(&mut db, 0, "ZINCRBY z 0 a").is_empty());
    let mut db = with(&["ZADD z 1 a 2 b"]);
    assert_eq!(ev(&mut db, 0, "ZREM z a x"), ["zrem z"]);
    let mut db = with(&["ZADD z 1 a"]);
    assert_eq!(ev(&mut db, 0, "ZREM z a"), ["zrem z", "del z"]);
    let mut db = with(&["ZADD z 1 a"]);
    assert!(ev(&mut db, 0, "ZREM z x").is_empty());
    let mut db = with(&["ZADD z 1 a 2 b"]);
    assert_eq!(
        ev(&mut db, 0, "ZREMRANGEBYSCORE z 1 1"),
        ["zremrangebyscore z"]
    );
    let mut db = with(&["ZADD z 1 a 2 b"]);
    assert_eq!(
        ev(&mut db, 0, "ZREMRANGEBYRANK z 0 -1"),
        ["zremrangebyrank z", "del z"]
    );
    let mut db = with(&["ZADD z 0 a 0 b"]);
    assert_eq!(
        ev(&mut db, 0, "ZREMRANGEBYLEX z [a [a"),
        ["zremrangebylex z"]
    );
    let mut db = with(&["ZADD z 1 a"]);
    assert!(ev(&mut db, 0, "ZREMRANGEBYSCORE z 5 6").is_empty());
    let mut db = with(&["ZADD z 1 a 2 b"]);
    assert_eq!(ev(&mut db, 0, "ZPOPMIN z"), ["zpopmin z"]);
    let mut db = with(&["ZADD z 1 a 2 b"]);
    assert_eq!(ev(&mut db, 0, "ZPOPMAX z 5"), ["zpopmax z", "del z"]);
    let mut db = with(&["ZADD z 1 a"]);
    assert!(ev(&mut db, 0, "ZPOPMIN z 0").is_empty());
    let mut db = with(&[]);
    assert!(ev(&mut db, 0, "ZPOPMIN z").is_empty());
    let mut db = with(&["ZADD z 1 a"]);
    assert_eq!(
        ev(&mut db, 0, "ZMPOP 2 y z MIN COUNT 3"),
        ["zpopmin z", "del z"]
    );
    let mut db = with(&["ZADD z 1 a 2 b"]);
    assert_eq!(ev(&mut db, 0, "ZMPOP 1 z MAX"), ["zpopmax z"]);
    let mut db = with(&["ZADD z 1 a", "ZADD d 1 x"]);
    assert_eq!(
        ev(&mut db, 0, "ZUNIONSTORE d 2 z y"),
        ["keymiss y", "zunionstore d"]
    );
    let mut db = with(&["ZADD z 1 a", "ZADD d 1 x"]);
    assert_eq!(
        ev(&mut db, 0, "ZINTERSTORE d 2 z y"),
        ["keymiss y", "del d"]
    );
    let mut db = with(&["ZADD z 1 a"]);
    assert_eq!(
        ev(&mut db, 0, "ZDIFFSTORE d 1 z"),
        ["new d", "zdiffstore d"]
    );
    let mut db = with(&["ZADD d 1 x"]);
    assert_eq!(ev(&mut db, 0, "ZINTERSTORE d 1 z"), ["keymiss z", "del d"]);
    let mut db = with(&[]);
    assert_eq!(ev(&mut db, 0, "ZINTERSTORE d 1 z"), ["keymiss z"]);
    let mut db = with(&["ZADD z 1 a", "ZADD d 1 x"]);
    assert_eq!(ev(&mut db, 0, "ZRANGESTORE d z 0 -1"), ["zrangestore d"]);
    let mut db = with(&["ZADD z 1 a"]);
    assert_eq!(
        ev(&mut db, 0, "ZRANGESTORE d z 0 -1"),
        ["new d", "zrangestore d"]
    );
    let mut db = with(&["ZADD d 1 x"]);
    assert_eq!(
        ev(&mut db, 0, "ZRANGESTORE d z 0 -1"),
        ["keymiss z", "del d"]
    );
    let mut db = with(&["ZADD z 1 a"]);
    assert!(ev(&mut db, 0, "ZUNION 1 z").is_empty());
}

#[test]
fn set_algebra_list_move_and_bitmap_events() {
    // t_set.c sinterGenericCommand/sunionDiffGenericCommand/smoveCommand, t_list.c
    // lmoveGenericCommand (push before pop)/mpopGenericCommand, bitops.c bitopCommand and
    // bitfieldGeneric (setbit only for a field changed, or a created or grown string).
    let mut db = with(&["SADD s a", "SADD d x"]);
    assert_eq!(ev(&mut db, 0, "SINTERSTORE d s"), ["sinterstore d"]);
    let mut db = with(&["SADD s a"]);
    assert_eq!(
        ev(&mut db, 0, "SUNIONSTORE d s t"),
        ["keymiss t", "new d", "sunionstore d"]
    );
    let mut db = with(&["SADD s a", "SADD d x"]);
    assert_eq!(ev(&mut db, 0, "SDIFFSTORE d s s"), ["del d"]);
    let mut db = with(&["SADD d x"]);
    assert_eq!(
        ev(&mut db, 0, "SINTERSTORE d s t"),
        ["keymiss s", "keymiss t", "del d"]
    );
    let mut db = with(&["SADD s a"]);
    assert_eq!(
        ev(&mut db, 0, "SMOVE s d a"),
        ["srem s", "del s", "new d", "sadd d"]
    );
    let mut db = with(&["SADD s a b", "SADD d a"]);
    assert_eq!(ev(&mut db, 0, "SMOVE s d a"), ["srem s"]);
    let mut db = with(&["SADD s a b", "SADD d b"]);
    assert_eq!(ev(&mut db, 0, "SMOVE s d a"), ["srem s", "sadd d"]);
    let mut db = with(&["SADD s a"]);
    assert!(ev(&mut db, 0, "SMOVE s d x").is_empty());
    let mut db = with(&["SADD s a"]);
    assert!(ev(&mut db, 0, "SMOVE s s a").is_empty());
    let mut db = with(&["RPUSH l a"]);
    assert_eq!(
        ev(&mut db, 0, "LMOVE l d LEFT RIGHT"),
        ["new d", "rpush d", "lpop l", "del l"]
    );
    let mut db = with(&["RPUSH l a b", "RPUSH d x"]);
    assert_eq!(ev(&mut db, 0, "RPOPLPUSH l d"), ["lpush d", "rpop l"]);
    let mut db = with(&["RPUSH l a"]);
    assert_eq!(
        ev(&mut db, 0, "LMOVE l l LEFT RIGHT"),
        ["rpush l", "lpop l"]
    );
    let mut db = with(&["RPUSH l a"]);
    assert_eq!(
        ev(&mut db, 0, "LMPOP 2 x l RIGHT COUNT 5"),
        ["rpop l", "del l"]
    );
    let mut db = with(&["RPUSH l a b"]);
    assert_eq!(ev(&mut db, 0, "LMPOP 1 l LEFT"), ["lpop l"]);
    let mut db = with(&["SET a x"]);
    assert_eq!(ev(&mut db, 0, "BITOP NOT d a"), ["new d", "set d"]);
    let mut db = with(&["SET d x"]);
    assert_eq!(
        ev(&mut db, 0, "BITOP AND d a b"),
        ["keymiss a", "keymiss b", "del d"]
    );
    let mut db = with(&["SET a x", "SET d y"]);
    assert_eq!(ev(&mut db, 0, "BITOP OR d a"), ["set d"]);
    let mut db = with(&[]);
    assert_eq!(
        ev(&mut db, 0, "BITFIELD b SET u8 0 255"),
        ["new b", "setbit b"]
    );
    let mut db = with(&["SET b x"]);
    assert!(ev(&mut db, 0, "BITFIELD b GET u8 0").is_empty());
    let mut db = with(&[]);
    assert_eq!(
        ev(
            &mut db,
            0,
            "BITFIELD b INCRBY u2 0 5 OVERFLOW FAIL INCRBY u2 0 5"
        ),
        ["new b", "setbit b"]
    );
    let mut db = with(&[]);
    assert_eq!(
        ev(&mut db, 0, "BITFIELD b OVERFLOW FAIL INCRBY u2 0 5"),
        ["new b"]
    );
    let mut db = with(&["SET b 1"]);
    assert!(ev(&mut db, 0, "BITFIELD b SET u8 0 49").is_empty());
    let mut db = with(&["SET b 1"]);
    assert_eq!(ev(&mut db, 0, "BITFIELD b SET u8 0 0"), ["setbit b"]);
    let mut db = with(&[]);
    assert_eq!(
        ev(&mut db, 0, "BITFIELD b SET u8 0 0"),
        ["new b", "setbit b"]
    );
    let mut db = with(&["SET b 1"]);
    assert!(ev(&mut db, 0, "BITFIELD b INCRBY u8 0 0 SET u8 0 49 GET u8 0").is_empty());
    let mut db = with(&["SET b 1"]);
    assert_eq!(ev(&mut db, 0, "BITFIELD b SET u8 8 0"), ["setbit b"]);
    let mut db = with(&["SET b 1"]);
    assert_eq!(
        ev(&mut db, 0, "BITFIELD b SET u8 0 50 SET u8 0 49"),
        ["setbit b"]
    );
}
