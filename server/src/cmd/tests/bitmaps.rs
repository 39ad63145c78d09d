//! BITCOUNT BITPOS BITFIELD BITFIELD_RO BITOP (Redis 7.0 `bitops.c`), replies checked against
//! redis-server 7.0.15.

use super::{r, r3, WRONGTYPE};
use crate::keyspace::Db;

const SYNTAX: &str = "-ERR syntax error\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const BAD_OFFSET: &str = "-ERR bit offset is not an integer or out of range\r\n";
const BAD_TYPE: &str = "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n";

#[test]
fn bitcount_ranges_in_bytes_and_bits() {
    let mut db = Db::new();
    r(&mut db, "SET s foobar");
    assert_eq!(r(&mut db, "BITCOUNT s"), ":26\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s 1 1"), ":6\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s 1 1 BYTE"), ":6\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s 1 1 bit"), ":1\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s 5 30 BIT"), ":17\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s -3 -1"), ":10\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s -1 -3"), ":0\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s 4 2"), ":0\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s 0 1000"), ":26\r\n");
    assert_eq!(r(&mut db, "BITCOUNT s 0"), SYNTAX);
    assert_eq!(r(&mut db, "BITCOUNT s 0 1 2"), SYNTAX);
    assert_eq!(r(&mut db, "BITCOUNT s 0 1 bit x"), SYNTAX);
    assert_eq!(r(&mut db, "BITCOUNT s a 1"), NOT_INT);
    // A missing key answers 0 before its arguments are read (7.0).
    assert_eq!(r(&mut db, "BITCOUNT nokey 0 1 foo"), ":0\r\n");
    r(&mut db, "LPUSH l a");
    assert_eq!(r(&mut db, "BITCOUNT l"), WRONGTYPE);
}

#[test]
fn bitpos_finds_set_and_clear_bits() {
    let mut db = Db::new();
    r(&mut db, "SETBIT s 7 1");
    r(&mut db, "SETBIT s 8 1");
    r(&mut db, "SETBIT s 23 0");
    // 0x01 0x80 0x00
    assert_eq!(r(&mut db, "BITPOS s 1"), ":7\r\n");
    assert_eq!(r(&mut db, "BITPOS s 0"), ":0\r\n");
    assert_eq!(r(&mut db, "BITPOS s 1 1"), ":8\r\n");
    assert_eq!(r(&mut db, "BITPOS s 1 2"), ":-1\r\n");
    assert_eq!(r(&mut db, "BITPOS s 1 8 8 BIT"), ":8\r\n");
    assert_eq!(r(&mut db, "BITPOS s 1 9 -1 bit"), ":-1\r\n");
    assert_eq!(r(&mut db, "BITPOS s 0 7 8 BIT"), ":-1\r\n");
    assert_eq!(r(&mut db, "BITPOS s 1 2 1"), ":-1\r\n");
    r(&mut db, "SET ones \u{7f}");
    r(&mut db, "SETBIT ones 0 1");
    // All ones: with no end, the first clear bit is just past the string.
    assert_eq!(r(&mut db, "BITPOS ones 0"), ":8\r\n");
    assert_eq!(r(&mut db, "BITPOS ones 0 0"), ":8\r\n");
    assert_eq!(r(&mut db, "BITPOS ones 0 0 -1"), ":-1\r\n");
    assert_eq!(r(&mut db, "BITPOS nokey 1"), ":-1\r\n");
    assert_eq!(r(&mut db, "BITPOS nokey 0"), ":0\r\n");
    assert_eq!(
        r(&mut db, "BITPOS s 2"),
        "-ERR The bit argument must be 1 or 0.\r\n"
    );
    assert_eq!(r(&mut db, "BITPOS s x"), NOT_INT);
    assert_eq!(r(&mut db, "BITPOS s 1 a"), NOT_INT);
    assert_eq!(r(&mut db, "BITPOS s 1 0 1 foo"), SYNTAX);
    assert_eq!(r(&mut db, "BITPOS s 1 0 1 bit x"), SYNTAX);
    r(&mut db, "LPUSH l a");
    assert_eq!(r(&mut db, "BITPOS l 1"), WRONGTYPE);
}

#[test]
fn bitfield_get_set_incrby_with_overflow() {
    let mut db = Db::new();
    assert_eq!(
        r(
            &mut db,
            "BITFIELD bf SET i8 0 100 GET i8 0 INCRBY i8 0 100 GET u4 0"
        ),
        "*4\r\n:0\r\n:100\r\n:-56\r\n:12\r\n"
    );
    assert_eq!(
        r(&mut db, "BITFIELD bf OVERFLOW SAT INCRBY i8 0 -100 OVERFLOW FAIL INCRBY i8 0 -100 OVERFLOW WRAP INCRBY i8 0 -100"),
        "*3\r\n:-128\r\n$-1\r\n:28\r\n"
    );
    assert_eq!(
        r(
            &mut db,
            "BITFIELD bf SET u8 #1 255 GET u8 #1 INCRBY u8 #1 10 OVERFLOW SAT INCRBY u8 #1 1000"
        ),
        "*4\r\n:0\r\n:255\r\n:9\r\n:255\r\n"
    );
    assert_eq!(
        r(&mut db, "BITFIELD bf SET u8 16 -1 OVERFLOW SAT SET u8 24 -1 OVERFLOW FAIL SET u8 32 256 GET u8 16 GET u8 24"),
        "*5\r\n:0\r\n:0\r\n$-1\r\n:255\r\n:255\r\n"
    );
    assert_eq!(
        r(
            &mut db,
            "BITFIELD x SET i64 0 -1 GET u63 0 GET i64 0 INCRBY i64 0 -9223372036854775807"
        ),
        "*4\r\n:0\r\n:9223372036854775807\r\n:-1\r\n:-9223372036854775808\r\n"
    );
    assert_eq!(r3(&mut db, "BITFIELD_RO bf GET u8 #1"), "*1\r\n:255\r\n");
    assert_eq!(r(&mut db, "BITFIELD nokey GET i8 0"), "*1\r\n:0\r\n");
    assert_eq!(r(&mut db, "EXISTS nokey"), ":0\r\n");
    // FAIL writes nothing but the string is still created to hold the field.
    assert_eq!(
        r(&mut db, "BITFIELD f OVERFLOW FAIL INCRBY u2 0 10"),
        "*1\r\n$-1\r\n"
    );
    assert_eq!(r(&mut db, "STRLEN f"), ":1\r\n");
    assert_eq!(r(&mut db, "BITFIELD bf"), "*0\r\n");
}

#[test]
fn bitfield_errors() {
    let mut db = Db::new();
    for line in [
        "BITFIELD k GET u64 0",
        "BITFIELD k GET i65 0",
        "BITFIELD k GET I8 0",
        "BITFIELD k GET i0 0",
    ] {
        assert_eq!(r(&mut db, line), BAD_TYPE, "{line}");
    }
    assert_eq!(r(&mut db, "BITFIELD k GET i8 -1"), BAD_OFFSET);
    assert_eq!(r(&mut db, "BITFIELD k GET i8 #-1"), BAD_OFFSET);
    assert_eq!(r(&mut db, "BITFIELD k GET i8 4294967296"), BAD_OFFSET);
    assert_eq!(r(&mut db, "BITFIELD k GET i8 #536870912"), BAD_OFFSET);
    assert_eq!(
        r(&mut db, "BITFIELD k OVERFLOW foo"),
        "-ERR Invalid OVERFLOW type specified\r\n"
    );
    assert_eq!(r(&mut db, "BITFIELD k GET i8"), SYNTAX);
    assert_eq!(r(&mut db, "BITFIELD k foo"), SYNTAX);
    assert_eq!(r(&mut db, "BITFIELD k INCRBY i8 0 x"), NOT_INT);
    assert_eq!(
        r(&mut db, "BITFIELD_RO k SET i8 0 1"),
        "-ERR BITFIELD_RO only supports the GET subcommand\r\n"
    );
    r(&mut db, "LPUSH l a");
    assert_eq!(r(&mut db, "BITFIELD l GET i8 0"), WRONGTYPE);
    assert_eq!(r(&mut db, "BITFIELD l SET i8 0 1"), WRONGTYPE);
    assert_eq!(r(&mut db, "EXISTS k"), ":0\r\n");
}

#[test]
fn bitfield_and_setbit_count_only_changes() {
    let mut db = Db::new();
    r(&mut db, "BITFIELD k SET i5 0 0");
    r(&mut db, "SETBIT b 0 0");
    let dirty = db.dirty();
    r(&mut db, "BITFIELD k SET i5 0 0");
    r(&mut db, "SETBIT b 0 0");
    assert_eq!(db.dirty(), dirty);
    r(&mut db, "BITFIELD k SET i5 0 1");
    r(&mut db, "SETBIT b 0 1");
    assert!(db.dirty() > dirty);
}

#[test]
fn bitop_and_or_xor_not() {
    let mut db = Db::new();
    r(&mut db, "SET a abc");
    r(&mut db, "SET b \u{1}");
    assert_eq!(r(&mut db, "BITOP AND d a b"), ":3\r\n");
    assert_eq!(r(&mut db, "GET d"), "$3\r\n\u{1}\0\0\r\n");
    assert_eq!(r(&mut db, "BITOP or d a b nokey"), ":3\r\n");
    assert_eq!(r(&mut db, "GET d"), "$3\r\nabc\r\n");
    assert_eq!(r(&mut db, "BITOP XOR d a b"), ":3\r\n");
    assert_eq!(r(&mut db, "GET d"), "$3\r\n`bc\r\n");
    r(&mut db, "SET n \u{f}");
    assert_eq!(r(&mut db, "BITOP NOT d n"), ":1\r\n");
    assert_eq!(r(&mut db, "GETRANGE d 0 0"), "$1\r\n\u{fffd}\r\n");
    assert_eq!(r(&mut db, "BITCOUNT d"), ":4\r\n");
    // The destination loses its TTL; an empty result deletes it.
    r(&mut db, "EXPIRE d 100");
    assert_eq!(r(&mut db, "BITOP OR d a"), ":3\r\n");
    assert_eq!(r(&mut db, "TTL d"), ":-1\r\n");
    assert_eq!(r(&mut db, "BITOP AND d nokey nokey2"), ":0\r\n");
    assert_eq!(r(&mut db, "EXISTS d"), ":0\r\n");
    assert_eq!(
        r(&mut db, "BITOP NOT d a b"),
        "-ERR BITOP NOT must be called with a single source key.\r\n"
    );
    assert_eq!(r(&mut db, "BITOP foo d a"), SYNTAX);
    r(&mut db, "LPUSH l x");
    assert_eq!(r(&mut db, "BITOP OR d a l"), WRONGTYPE);
}
