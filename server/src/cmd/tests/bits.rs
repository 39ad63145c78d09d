//! SETBIT and GETBIT (Redis 7.0 `bitops.c`), and the string-length limit they share with
//! SETRANGE and APPEND.

use super::{r, WRONGTYPE};
use crate::keyspace::Db;

const BAD_OFFSET: &str = "-ERR bit offset is not an integer or out of range\r\n";
const BAD_BIT: &str = "-ERR bit is not an integer or out of range\r\n";
const EXCEEDS: &str = "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n";

#[test]
fn setbit_sets_msb_first_and_grows_with_zeros() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "SETBIT k 0 1"), ":0\r\n");
    assert_eq!(r(&mut db, "GET k"), "$1\r\n\u{fffd}\r\n");
    assert_eq!(r(&mut db, "SETBIT k 0 0"), ":1\r\n");
    assert_eq!(r(&mut db, "SETBIT k 23 1"), ":0\r\n");
    assert_eq!(r(&mut db, "GET k"), "$3\r\n\0\0\u{1}\r\n");
    assert_eq!(r(&mut db, "SETBIT k 23 1"), ":1\r\n");
    assert_eq!(r(&mut db, "GETBIT k 23"), ":1\r\n");
    assert_eq!(r(&mut db, "GETBIT k 22"), ":0\r\n");
    assert_eq!(r(&mut db, "GETBIT k 24"), ":0\r\n");
    assert_eq!(r(&mut db, "GETBIT nope 4294967295"), ":0\r\n");
    // "1" (0x31) → "3" (0x33).
    r(&mut db, "SET n 1");
    assert_eq!(r(&mut db, "SETBIT n 6 1"), ":0\r\n");
    assert_eq!(r(&mut db, "GET n"), "$1\r\n3\r\n");
}

#[test]
fn setbit_errors_in_redis_order() {
    let mut db = Db::new();
    r(&mut db, "RPUSH l a");
    for offset in ["-1", "4294967296", "x", "9223372036854775808"] {
        assert_eq!(r(&mut db, &format!("SETBIT l {offset} 2")), BAD_OFFSET);
        assert_eq!(r(&mut db, &format!("GETBIT l {offset}")), BAD_OFFSET);
    }
    for bit in ["-1", "2", "x"] {
        assert_eq!(r(&mut db, &format!("SETBIT l 0 {bit}")), BAD_BIT);
    }
    assert_eq!(r(&mut db, "SETBIT l 0 1"), WRONGTYPE);
    assert_eq!(r(&mut db, "GETBIT l 0"), WRONGTYPE);
    assert_eq!(r(&mut db, "EXISTS k"), ":0\r\n");
}

#[test]
fn max_string_len_bounds_setbit_setrange_and_append() {
    let mut db = Db::new();
    db.set_max_string_len(4);
    assert_eq!(r(&mut db, "SETBIT k 31 1"), ":0\r\n");
    assert_eq!(r(&mut db, "SETBIT k 32 1"), BAD_OFFSET);
    assert_eq!(r(&mut db, "GETBIT k 32"), BAD_OFFSET);
    assert_eq!(r(&mut db, "APPEND k x"), EXCEEDS);
    assert_eq!(r(&mut db, "SETRANGE k 4 x"), EXCEEDS);
    assert_eq!(r(&mut db, "SETRANGE j 3 xy"), EXCEEDS);
    assert_eq!(r(&mut db, "SETRANGE j 2 xy"), ":4\r\n");
    assert_eq!(r(&mut db, "STRLEN k"), ":4\r\n");
}
