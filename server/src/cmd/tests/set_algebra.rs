//! SINTER SUNION SDIFF, their STORE forms, SINTERCARD, SMOVE (Redis 7.0 `t_set.c`), on one
//! shard; replies checked against redis-server 7.0.15.

use super::{exec, r, r3, WRONGTYPE};
use crate::keyspace::Db;
use crate::resp::Frame;

/// The members of a set reply, sorted.
fn members(db: &mut Db, line: &str) -> Vec<String> {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    let mut out: Vec<String> = match exec(db, 0, &args) {
        Frame::Set(items) | Frame::Array(items) => items
            .into_iter()
            .map(|f| match f {
                Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
                other => format!("{other:?}"),
            })
            .collect(),
        other => vec![format!("{other:?}")],
    };
    out.sort();
    out
}

fn setup(db: &mut Db) {
    r(db, "SADD a 1 2 3 4 x");
    r(db, "SADD b 2 3 4 5 y");
    r(db, "SADD c 3 4 6 x");
    r(db, "SET str v");
}

#[test]
fn sinter_sunion_sdiff() {
    let mut db = Db::new();
    setup(&mut db);
    assert_eq!(members(&mut db, "SINTER a b c"), ["3", "4"]);
    assert_eq!(members(&mut db, "SINTER a b"), ["2", "3", "4"]);
    assert_eq!(members(&mut db, "SINTER a nokey"), Vec::<String>::new());
    assert_eq!(
        members(&mut db, "SUNION a b c nokey"),
        ["1", "2", "3", "4", "5", "6", "x", "y"]
    );
    assert_eq!(members(&mut db, "SDIFF a b c"), ["1"]);
    assert_eq!(members(&mut db, "SDIFF a nokey b"), ["1", "x"]);
    assert_eq!(members(&mut db, "SDIFF nokey a"), Vec::<String>::new());
    assert_eq!(r3(&mut db, "SINTER a nokey"), "~0\r\n");
    assert_eq!(r(&mut db, "SINTER a nokey"), "*0\r\n");
    // WRONGTYPE wins over a missing key anywhere in the list.
    for line in [
        "SINTER nokey str",
        "SUNION a str",
        "SDIFF a str",
        "SDIFF nokey str",
    ] {
        assert_eq!(r(&mut db, line), WRONGTYPE, "{line}");
    }
}

#[test]
fn store_forms() {
    let mut db = Db::new();
    setup(&mut db);
    assert_eq!(r(&mut db, "SINTERSTORE d a b"), ":3\r\n");
    assert_eq!(members(&mut db, "SMEMBERS d"), ["2", "3", "4"]);
    r(&mut db, "EXPIRE d 100");
    assert_eq!(r(&mut db, "SUNIONSTORE d a b c"), ":8\r\n");
    assert_eq!(r(&mut db, "TTL d"), ":-1\r\n");
    assert_eq!(r(&mut db, "SDIFFSTORE d a b"), ":2\r\n");
    assert_eq!(members(&mut db, "SMEMBERS d"), ["1", "x"]);
    assert_eq!(r(&mut db, "SINTERSTORE d a nokey"), ":0\r\n");
    assert_eq!(r(&mut db, "EXISTS d"), ":0\r\n");
    r(&mut db, "SADD d z");
    assert_eq!(r(&mut db, "SDIFFSTORE d a a"), ":0\r\n");
    assert_eq!(r(&mut db, "EXISTS d"), ":0\r\n");
    // The destination may hold any type: it is replaced.
    assert_eq!(r(&mut db, "SINTERSTORE str a b"), ":3\r\n");
    assert_eq!(r(&mut db, "TYPE str"), "+set\r\n");
    r(&mut db, "SET str v");
    assert_eq!(r(&mut db, "SUNIONSTORE d a str"), WRONGTYPE);
}

#[test]
fn sintercard_and_its_errors() {
    let mut db = Db::new();
    setup(&mut db);
    assert_eq!(r(&mut db, "SINTERCARD 2 a b"), ":3\r\n");
    assert_eq!(r(&mut db, "SINTERCARD 3 a b c LIMIT 1"), ":1\r\n");
    assert_eq!(r(&mut db, "SINTERCARD 3 a b c limit 0"), ":2\r\n");
    assert_eq!(r(&mut db, "SINTERCARD 1 nokey"), ":0\r\n");
    let bad_numkeys = "-ERR numkeys should be greater than 0\r\n";
    assert_eq!(r(&mut db, "SINTERCARD 0 a"), bad_numkeys);
    assert_eq!(r(&mut db, "SINTERCARD -1 a"), bad_numkeys);
    assert_eq!(r(&mut db, "SINTERCARD x a"), bad_numkeys);
    assert_eq!(
        r(&mut db, "SINTERCARD 3 a b"),
        "-ERR Number of keys can't be greater than number of args\r\n"
    );
    assert_eq!(
        r(&mut db, "SINTERCARD 2 a b LIMIT"),
        "-ERR syntax error\r\n"
    );
    assert_eq!(
        r(&mut db, "SINTERCARD 2 a b foo 1"),
        "-ERR syntax error\r\n"
    );
    let bad_limit = "-ERR LIMIT can't be negative\r\n";
    assert_eq!(r(&mut db, "SINTERCARD 2 a b LIMIT -1"), bad_limit);
    assert_eq!(r(&mut db, "SINTERCARD 2 a b LIMIT x"), bad_limit);
    assert_eq!(r(&mut db, "SINTERCARD 2 a str"), WRONGTYPE);
}

#[test]
fn smove() {
    let mut db = Db::new();
    setup(&mut db);
    assert_eq!(r(&mut db, "SMOVE a b 1"), ":1\r\n");
    assert_eq!(members(&mut db, "SMEMBERS a"), ["2", "3", "4", "x"]);
    assert_eq!(r(&mut db, "SISMEMBER b 1"), ":1\r\n");
    assert_eq!(r(&mut db, "SMOVE a b zz"), ":0\r\n");
    assert_eq!(r(&mut db, "SMOVE nokey b 1"), ":0\r\n");
    assert_eq!(r(&mut db, "SMOVE a str 2"), WRONGTYPE);
    assert_eq!(r(&mut db, "SMOVE str a 2"), WRONGTYPE);
    assert_eq!(r(&mut db, "SMOVE a new 2"), ":1\r\n");
    assert_eq!(members(&mut db, "SMEMBERS new"), ["2"]);
    assert_eq!(r(&mut db, "SMOVE a a x"), ":1\r\n");
    assert_eq!(r(&mut db, "SMOVE a a qq"), ":0\r\n");
    // Moving a member the destination holds: only the source changes.
    let dirty = db.dirty();
    assert_eq!(r(&mut db, "SMOVE a b 3"), ":1\r\n");
    assert_eq!(db.dirty(), dirty + 1);
    // The last member: the source is deleted.
    r(&mut db, "SADD one only");
    assert_eq!(r(&mut db, "SMOVE one b only"), ":1\r\n");
    assert_eq!(r(&mut db, "EXISTS one"), ":0\r\n");
}
