//! LMOVE RPOPLPUSH LMPOP (Redis 7.0 `t_list.c`), on one shard; replies checked against
//! redis-server 7.0.15.

use super::{r, r3, WRONGTYPE};
use crate::keyspace::Db;

const SYNTAX: &str = "-ERR syntax error\r\n";

#[test]
fn lmove_and_rpoplpush() {
    let mut db = Db::new();
    r(&mut db, "RPUSH l1 a b c d");
    r(&mut db, "RPUSH l2 x y");
    assert_eq!(r(&mut db, "LMOVE l1 l2 LEFT RIGHT"), "$1\r\na\r\n");
    assert_eq!(
        r(&mut db, "LRANGE l2 0 -1"),
        "*3\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\na\r\n"
    );
    assert_eq!(r(&mut db, "LMOVE l1 l2 right left"), "$1\r\nd\r\n");
    assert_eq!(r(&mut db, "LINDEX l2 0"), "$1\r\nd\r\n");
    // Same list: a rotation.
    assert_eq!(r(&mut db, "LMOVE l1 l1 LEFT RIGHT"), "$1\r\nb\r\n");
    assert_eq!(r(&mut db, "LRANGE l1 0 -1"), "*2\r\n$1\r\nc\r\n$1\r\nb\r\n");
    assert_eq!(r(&mut db, "LMOVE l1 l2 up left"), SYNTAX);
    assert_eq!(r(&mut db, "LMOVE nokey l2 left left"), "$-1\r\n");
    assert_eq!(r3(&mut db, "LMOVE nokey l2 left left"), "_\r\n");
    r(&mut db, "SET str v");
    assert_eq!(r(&mut db, "LMOVE l1 str left left"), WRONGTYPE);
    assert_eq!(r(&mut db, "LMOVE str l1 left left"), WRONGTYPE);
    assert_eq!(r(&mut db, "RPOPLPUSH l1 l3"), "$1\r\nb\r\n");
    assert_eq!(r(&mut db, "RPOPLPUSH l1 l3"), "$1\r\nc\r\n");
    assert_eq!(r(&mut db, "EXISTS l1"), ":0\r\n");
    assert_eq!(r(&mut db, "LRANGE l3 0 -1"), "*2\r\n$1\r\nc\r\n$1\r\nb\r\n");
    assert_eq!(r(&mut db, "RPOPLPUSH nokey l3"), "$-1\r\n");
    assert_eq!(r(&mut db, "RPOPLPUSH l3 str"), WRONGTYPE);
    // A missing source answers nil even when the destination has the wrong type.
    assert_eq!(r(&mut db, "RPOPLPUSH nokey str"), "$-1\r\n");
}

#[test]
fn lmpop() {
    let mut db = Db::new();
    r(&mut db, "RPUSH m1 a b c");
    r(&mut db, "RPUSH m2 d e f g");
    assert_eq!(
        r(&mut db, "LMPOP 2 m1 m2 LEFT"),
        "*2\r\n$2\r\nm1\r\n*1\r\n$1\r\na\r\n"
    );
    assert_eq!(
        r(&mut db, "LMPOP 2 nokey m2 RIGHT COUNT 2"),
        "*2\r\n$2\r\nm2\r\n*2\r\n$1\r\ng\r\n$1\r\nf\r\n"
    );
    assert_eq!(
        r(&mut db, "LMPOP 1 m2 left count 10"),
        "*2\r\n$2\r\nm2\r\n*2\r\n$1\r\nd\r\n$1\r\ne\r\n"
    );
    assert_eq!(r(&mut db, "EXISTS m2"), ":0\r\n");
    assert_eq!(r(&mut db, "LMPOP 2 nokey nokey2 LEFT"), "*-1\r\n");
    assert_eq!(r3(&mut db, "LMPOP 2 nokey nokey2 LEFT"), "_\r\n");
    r(&mut db, "SET str v");
    assert_eq!(r(&mut db, "LMPOP 2 str m1 LEFT"), WRONGTYPE);
    // A key after the popped one is not looked at.
    assert_eq!(
        r(&mut db, "LMPOP 2 m1 str LEFT"),
        "*2\r\n$2\r\nm1\r\n*1\r\n$1\r\nb\r\n"
    );
    let bad_numkeys = "-ERR numkeys should be greater than 0\r\n";
    assert_eq!(r(&mut db, "LMPOP 0 m1 LEFT"), bad_numkeys);
    assert_eq!(r(&mut db, "LMPOP -1 m1 LEFT"), bad_numkeys);
    assert_eq!(r(&mut db, "LMPOP 5 m1 LEFT"), SYNTAX);
    assert_eq!(r(&mut db, "LMPOP 1 m1 middle"), SYNTAX);
    let bad_count = "-ERR count should be greater than 0\r\n";
    assert_eq!(r(&mut db, "LMPOP 1 m1 LEFT COUNT 0"), bad_count);
    assert_eq!(r(&mut db, "LMPOP 1 m1 LEFT COUNT x"), bad_count);
    assert_eq!(r(&mut db, "LMPOP 1 m1 LEFT COUNT 1 COUNT 1"), SYNTAX);
    assert_eq!(r(&mut db, "LMPOP 1 m1 LEFT foo"), SYNTAX);
    assert_eq!(r(&mut db, "LMPOP 1 m1 LEFT COUNT"), SYNTAX);
}
