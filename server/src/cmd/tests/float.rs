//! INCRBYFLOAT HINCRBYFLOAT; replies checked against redis-server 7.0.15
//! (x87 `long double` results).

use super::*;

const NOT_FLOAT: &str = "-ERR value is not a valid float\r\n";
const NAN_INF: &str = "-ERR increment would produce NaN or Infinity\r\n";

#[test]
fn incrbyfloat() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "INCRBYFLOAT f 0.1"), "$3\r\n0.1\r\n");
    assert_eq!(r(&mut db, "INCRBYFLOAT f 0.2"), "$3\r\n0.3\r\n");
    assert_eq!(
        r(&mut db, "INCRBYFLOAT f 1e3"),
        "$22\r\n1000.29999999999999999\r\n"
    );
    assert_eq!(r(&mut db, "INCRBYFLOAT f -1000.3"), "$1\r\n0\r\n");
    assert_eq!(r(&mut db, "GET f"), "$1\r\n0\r\n");
    assert_eq!(r(&mut db, "INCRBYFLOAT f 0x10"), "$2\r\n16\r\n");
    assert_eq!(r(&mut db, "INCRBYFLOAT f 1.5e-20"), "$2\r\n16\r\n");
    assert_eq!(r(&mut db, "INCRBYFLOAT g -0"), "$1\r\n0\r\n");
    assert_eq!(r(&mut db, "INCRBYFLOAT g +5"), "$1\r\n5\r\n");
    assert_eq!(r(&mut db, "INCRBYFLOAT g .5"), "$3\r\n5.5\r\n");
    assert_eq!(r(&mut db, "INCRBYFLOAT g 5."), "$4\r\n10.5\r\n");
    assert_eq!(
        r(&mut db, "INCRBYFLOAT h 123456789012345678901234567890"),
        "$30\r\n123456789012345678899921813504\r\n"
    );
    assert_eq!(
        r(&mut db, "INCRBYFLOAT i 0.000000000000000005"),
        "$1\r\n0\r\n"
    );
    assert_eq!(
        r(&mut db, "INCRBYFLOAT j 0.000000000000000015"),
        "$19\r\n0.00000000000000002\r\n"
    );
    r(&mut db, "SET n 10");
    assert_eq!(r(&mut db, "INCRBYFLOAT n 1.25"), "$5\r\n11.25\r\n");
}

#[test]
fn incrbyfloat_keeps_ttl() {
    let mut db = Db::new();
    rt(&mut db, 0, "SET t 5");
    rt(&mut db, 0, "EXPIRE t 100");
    assert_eq!(rt(&mut db, 0, "INCRBYFLOAT t 1.25"), "$4\r\n6.25\r\n");
    assert_eq!(rt(&mut db, 0, "TTL t"), ":100\r\n");
}

#[test]
fn incrbyfloat_errors() {
    let mut db = Db::new();
    r(&mut db, "SET f 1");
    assert_eq!(
        run_at(&mut db, 0, &[b"INCRBYFLOAT", b"f", b" 1"]),
        NOT_FLOAT
    );
    for bad in ["x", "nan", "1e", "1e5000", "1e-5000", "0x", "1.2.3"] {
        assert_eq!(
            r(&mut db, &format!("INCRBYFLOAT f {bad}")),
            NOT_FLOAT,
            "{bad}"
        );
    }
    assert_eq!(run_at(&mut db, 0, &[b"INCRBYFLOAT", b"f", b""]), NOT_FLOAT);
    assert_eq!(r(&mut db, "INCRBYFLOAT f inf"), NAN_INF);
    assert_eq!(r(&mut db, "INCRBYFLOAT f -Infinity"), NAN_INF);
    let max = r(&mut db, "INCRBYFLOAT k 1.0e4932");
    assert!(max.starts_with("$4933\r\n10000000000000000000060189493879638913238377742545331"));
    assert_eq!(r(&mut db, "INCRBYFLOAT k 1.0e4932"), NAN_INF);
    assert_eq!(r(&mut db, "GET f"), "$1\r\n1\r\n");
    r(&mut db, "SET str abc");
    assert_eq!(r(&mut db, "INCRBYFLOAT str 1"), NOT_FLOAT);
    r(&mut db, "SET inf inf");
    assert_eq!(r(&mut db, "INCRBYFLOAT inf 1"), NAN_INF);
    r(&mut db, "RPUSH l a");
    assert_eq!(r(&mut db, "INCRBYFLOAT l 1"), WRONGTYPE);
    assert_eq!(r(&mut db, "INCRBYFLOAT l x"), WRONGTYPE);
    assert_eq!(
        r(&mut db, "INCRBYFLOAT f"),
        "-ERR wrong number of arguments for 'incrbyfloat' command\r\n"
    );
}

#[test]
fn hincrbyfloat() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "HINCRBYFLOAT h f 0.1"), "$3\r\n0.1\r\n");
    assert_eq!(r(&mut db, "HINCRBYFLOAT h f 0.2"), "$3\r\n0.3\r\n");
    assert_eq!(r(&mut db, "HGET h f"), "$3\r\n0.3\r\n");
    assert_eq!(r(&mut db, "HINCRBYFLOAT h z -0"), "$1\r\n0\r\n");
    let nan_arg = "-ERR value is NaN or Infinity\r\n";
    assert_eq!(r(&mut db, "HINCRBYFLOAT h f inf"), nan_arg);
    assert_eq!(r(&mut db, "HINCRBYFLOAT h f -inf"), nan_arg);
    assert_eq!(r(&mut db, "HINCRBYFLOAT nope f inf"), nan_arg);
    assert_eq!(r(&mut db, "HINCRBYFLOAT h f nan"), NOT_FLOAT);
    assert_eq!(r(&mut db, "HINCRBYFLOAT nope f x"), NOT_FLOAT);
    assert_eq!(r(&mut db, "EXISTS nope"), ":0\r\n");
    r(&mut db, "HSET h s abc");
    assert_eq!(
        r(&mut db, "HINCRBYFLOAT h s 1"),
        "-ERR hash value is not a float\r\n"
    );
    assert_eq!(r(&mut db, "HINCRBYFLOAT h s x"), NOT_FLOAT);
    r(&mut db, "HSET h big 1e4932");
    assert_eq!(r(&mut db, "HINCRBYFLOAT h big 1e4932"), NAN_INF);
    r(&mut db, "SET str v");
    assert_eq!(r(&mut db, "HINCRBYFLOAT str f 1"), WRONGTYPE);
    assert_eq!(r(&mut db, "HINCRBYFLOAT str f x"), NOT_FLOAT);
    assert_eq!(
        r(&mut db, "HINCRBYFLOAT h f"),
        "-ERR wrong number of arguments for 'hincrbyfloat' command\r\n"
    );
}

#[test]
fn nul_bytes_make_a_float_invalid_and_change_nothing() {
    let mut db = Db::new();
    for stored in [&b"1\x002"[..], b"\0", b"1\0", b"\x001"] {
        run_at(&mut db, 0, &[b"SET", b"n", stored]);
        assert_eq!(run_at(&mut db, 0, &[b"INCRBYFLOAT", b"n", b"1"]), NOT_FLOAT);
        assert_eq!(
            run_at(&mut db, 0, &[b"GET", b"n"]).into_bytes(),
            [format!("${}\r\n", stored.len()).as_bytes(), stored, b"\r\n"].concat()
        );
        run_at(&mut db, 0, &[b"HSET", b"h", b"f", stored]);
        assert_eq!(
            run_at(&mut db, 0, &[b"HINCRBYFLOAT", b"h", b"f", b"1"]),
            "-ERR hash value is not a float\r\n"
        );
    }
    for incr in [&b"2\x009"[..], b"\0", b"2\0"] {
        assert_eq!(run_at(&mut db, 0, &[b"INCRBYFLOAT", b"m", incr]), NOT_FLOAT);
        assert_eq!(
            run_at(&mut db, 0, &[b"HINCRBYFLOAT", b"hm", b"f", incr]),
            NOT_FLOAT
        );
    }
    assert_eq!(r(&mut db, "EXISTS m hm"), ":0\r\n");
}
