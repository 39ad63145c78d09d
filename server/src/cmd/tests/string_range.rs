//! GETEX SETEX PSETEX GETSET GETRANGE SETRANGE; replies checked against
//! redis-server 7.0.15.

use super::*;

#[test]
fn getex_options() {
    let mut db = Db::new();
    rt(&mut db, 1000, "SET s hello");
    assert_eq!(rt(&mut db, 1000, "GETEX s"), "$5\r\nhello\r\n");
    assert_eq!(rt(&mut db, 1000, "GETEX nope"), "$-1\r\n");
    assert_eq!(rt(&mut db, 1000, "GETEX s ex 100"), "$5\r\nhello\r\n");
    assert_eq!(rt(&mut db, 1000, "PTTL s"), ":100000\r\n");
    assert_eq!(rt(&mut db, 1000, "GETEX s PX 50 PX 60"), "$5\r\nhello\r\n");
    assert_eq!(rt(&mut db, 1000, "PTTL s"), ":60\r\n");
    assert_eq!(rt(&mut db, 1000, "GETEX s pxat 5000"), "$5\r\nhello\r\n");
    assert_eq!(rt(&mut db, 1000, "PTTL s"), ":4000\r\n");
    assert_eq!(rt(&mut db, 1000, "GETEX s exat 7"), "$5\r\nhello\r\n");
    assert_eq!(rt(&mut db, 1000, "PTTL s"), ":6000\r\n");
    assert_eq!(
        rt(&mut db, 1000, "GETEX s persist persist"),
        "$5\r\nhello\r\n"
    );
    assert_eq!(rt(&mut db, 1000, "PTTL s"), ":-1\r\n");
    // An absolute deadline not in the future deletes the key after replying.
    assert_eq!(rt(&mut db, 1000, "GETEX s exat 1"), "$5\r\nhello\r\n");
    assert_eq!(rt(&mut db, 1000, "EXISTS s"), ":0\r\n");
    rt(&mut db, 1000, "SET s2 v");
    assert_eq!(rt(&mut db, 1000, "GETEX s2 PXAT 1000"), "$1\r\nv\r\n");
    assert_eq!(rt(&mut db, 1000, "EXISTS s2"), ":0\r\n");
}

#[test]
fn getex_errors() {
    let mut db = Db::new();
    r(&mut db, "SET s hello");
    let invalid = "-ERR invalid expire time in 'getex' command\r\n";
    for bad in ["ex 0", "ex -1", "px 0", "exat 0", "ex 9223372036854775807"] {
        assert_eq!(r(&mut db, &format!("GETEX s {bad}")), invalid, "{bad}");
    }
    assert_eq!(rt(&mut db, 5, "GETEX s px 9223372036854775807"), invalid);
    assert_eq!(r(&mut db, "GETEX s ex x"), NOT_INT);
    for bad in [
        "ex",
        "ex 10 px 10",
        "persist ex 10",
        "ex 10 persist",
        "foo",
        "nx",
    ] {
        assert_eq!(
            r(&mut db, &format!("GETEX s {bad}")),
            "-ERR syntax error\r\n"
        );
    }
    // Syntax first, then the key, then the expire value.
    assert_eq!(r(&mut db, "GETEX nope ex x"), "$-1\r\n");
    assert_eq!(r(&mut db, "GETEX nope foo"), "-ERR syntax error\r\n");
    r(&mut db, "RPUSH l a");
    assert_eq!(r(&mut db, "GETEX l"), WRONGTYPE);
    assert_eq!(r(&mut db, "GETEX l ex x"), WRONGTYPE);
    assert_eq!(r(&mut db, "GETEX l foo"), "-ERR syntax error\r\n");
    assert_eq!(
        r(&mut db, "GETEX"),
        "-ERR wrong number of arguments for 'getex' command\r\n"
    );
}

#[test]
fn setex_psetex() {
    let mut db = Db::new();
    assert_eq!(rt(&mut db, 1000, "SETEX k 10 v"), "+OK\r\n");
    assert_eq!(rt(&mut db, 1000, "PTTL k"), ":10000\r\n");
    assert_eq!(rt(&mut db, 1000, "PSETEX k 1500 w"), "+OK\r\n");
    assert_eq!(rt(&mut db, 1000, "PTTL k"), ":1500\r\n");
    assert_eq!(rt(&mut db, 1000, "GET k"), "$1\r\nw\r\n");
    assert_eq!(rt(&mut db, 2501, "GET k"), "$-1\r\n");
    // Replaces any type.
    r(&mut db, "RPUSH l a");
    assert_eq!(r(&mut db, "SETEX l 100 v"), "+OK\r\n");
    assert_eq!(r(&mut db, "TYPE l"), "+string\r\n");
    for bad in ["0", "-5", "9223372036854775807"] {
        assert_eq!(
            r(&mut db, &format!("SETEX s {bad} v")),
            "-ERR invalid expire time in 'setex' command\r\n"
        );
    }
    assert_eq!(
        rt(&mut db, 5, "PSETEX s 9223372036854775807 v"),
        "-ERR invalid expire time in 'psetex' command\r\n"
    );
    assert_eq!(r(&mut db, "PSETEX s 92233720368547758 v"), "+OK\r\n");
    assert_eq!(r(&mut db, "SETEX s x v"), NOT_INT);
    assert_eq!(
        r(&mut db, "SETEX s 1"),
        "-ERR wrong number of arguments for 'setex' command\r\n"
    );
}

#[test]
fn getset() {
    let mut db = Db::new();
    assert_eq!(rt(&mut db, 0, "GETSET k v"), "$-1\r\n");
    rt(&mut db, 0, "EXPIRE k 100");
    assert_eq!(rt(&mut db, 0, "GETSET k w"), "$1\r\nv\r\n");
    assert_eq!(rt(&mut db, 0, "TTL k"), ":-1\r\n");
    r(&mut db, "RPUSH l a");
    assert_eq!(r(&mut db, "GETSET l v"), WRONGTYPE);
    assert_eq!(r(&mut db, "TYPE l"), "+list\r\n");
    assert_eq!(
        r(&mut db, "GETSET k"),
        "-ERR wrong number of arguments for 'getset' command\r\n"
    );
}

#[test]
fn getrange() {
    let mut db = Db::new();
    r(&mut db, "SET s hello");
    let cases = [
        ("0 -1", "$5\r\nhello\r\n"),
        ("-3 -1", "$3\r\nllo\r\n"),
        ("-1 -3", "$0\r\n\r\n"),
        ("3 1", "$0\r\n\r\n"),
        ("0 100", "$5\r\nhello\r\n"),
        ("-100 1", "$2\r\nhe\r\n"),
        ("10 20", "$0\r\n\r\n"),
        ("4 -100", "$0\r\n\r\n"),
        (
            "-9223372036854775808 9223372036854775807",
            "$5\r\nhello\r\n",
        ),
    ];
    for (range, want) in cases {
        assert_eq!(r(&mut db, &format!("GETRANGE s {range}")), want, "{range}");
    }
    assert_eq!(r(&mut db, "GETRANGE nope 0 -1"), "$0\r\n\r\n");
    assert_eq!(r(&mut db, "GETRANGE nope x 1"), NOT_INT);
    assert_eq!(r(&mut db, "GETRANGE s 0 1.5"), NOT_INT);
    run_at(&mut db, 0, &[b"SET", b"e", b""]);
    assert_eq!(r(&mut db, "GETRANGE e 0 -1"), "$0\r\n\r\n");
    assert_eq!(r(&mut db, "GETRANGE e -1 0"), "$0\r\n\r\n");
    r(&mut db, "RPUSH l a");
    assert_eq!(r(&mut db, "GETRANGE l 0 1"), WRONGTYPE);
}

#[test]
fn setrange() {
    let mut db = Db::new();
    assert_eq!(
        run_at(&mut db, 0, &[b"SETRANGE", b"nope", b"0", b""]),
        ":0\r\n"
    );
    assert_eq!(r(&mut db, "EXISTS nope"), ":0\r\n");
    assert_eq!(r(&mut db, "SETRANGE k 3 ab"), ":5\r\n");
    assert_eq!(r(&mut db, "GET k"), "$5\r\n\0\0\0ab\r\n");
    rt(&mut db, 0, "SET s hello");
    rt(&mut db, 0, "EXPIRE s 100");
    assert_eq!(r(&mut db, "SETRANGE s 1 EL"), ":5\r\n");
    assert_eq!(r(&mut db, "GET s"), "$5\r\nhELlo\r\n");
    assert_eq!(r(&mut db, "TTL s"), ":100\r\n");
    assert_eq!(r(&mut db, "SETRANGE s 7 !"), ":8\r\n");
    assert_eq!(r(&mut db, "GET s"), "$8\r\nhELlo\0\0!\r\n");
    assert_eq!(
        run_at(&mut db, 0, &[b"SETRANGE", b"s", b"100", b""]),
        ":8\r\n"
    );
    let big = "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n";
    assert_eq!(r(&mut db, "SETRANGE s 536870911 ab"), big);
    assert_eq!(r(&mut db, "SETRANGE new 536870911 ab"), big);
    assert_eq!(r(&mut db, "SETRANGE s 9223372036854775807 a"), big);
    assert_eq!(
        r(&mut db, "SETRANGE s -1 a"),
        "-ERR offset is out of range\r\n"
    );
    assert_eq!(
        run_at(&mut db, 0, &[b"SETRANGE", b"nope", b"-1", b""]),
        "-ERR offset is out of range\r\n"
    );
    assert_eq!(r(&mut db, "SETRANGE s x a"), NOT_INT);
    r(&mut db, "RPUSH l a");
    assert_eq!(r(&mut db, "SETRANGE l 0 a"), WRONGTYPE);
    assert_eq!(
        run_at(&mut db, 0, &[b"SETRANGE", b"l", b"0", b""]),
        WRONGTYPE
    );
}
