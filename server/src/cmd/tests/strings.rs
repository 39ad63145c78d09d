use super::*;

#[test]
fn get_set_basic() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "GET k"), "$-1\r\n");
    assert_eq!(r3(&mut db, "GET k"), "_\r\n");
    assert_eq!(r(&mut db, "SET k v"), "+OK\r\n");
    assert_eq!(r(&mut db, "GET k"), "$1\r\nv\r\n");
    assert_eq!(
        run_at(&mut db, 0, &[b"SET", b"bin", b"a\r\n\0b"]),
        "+OK\r\n"
    );
    assert_eq!(r(&mut db, "GET bin"), "$5\r\na\r\n\0b\r\n");
    assert_eq!(run_at(&mut db, 0, &[b"SET", b"empty", b""]), "+OK\r\n");
    assert_eq!(r(&mut db, "GET empty"), "$0\r\n\r\n");
}

#[test]
fn set_options() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "SET k v NX"), "+OK\r\n");
    assert_eq!(r(&mut db, "SET k w NX"), "$-1\r\n");
    assert_eq!(r3(&mut db, "SET k w NX"), "_\r\n");
    assert_eq!(r(&mut db, "SET k w xx"), "+OK\r\n");
    assert_eq!(r(&mut db, "SET other w XX"), "$-1\r\n");
    assert_eq!(r(&mut db, "SET k x GET"), "$1\r\nw\r\n");
    assert_eq!(r(&mut db, "SET new x GET"), "$-1\r\n");
    assert_eq!(r(&mut db, "SET k y NX GET"), "$1\r\nx\r\n");
    assert_eq!(r(&mut db, "GET k"), "$1\r\nx\r\n");
    assert_eq!(r(&mut db, "SET k v NX NX"), "$-1\r\n");
    r(&mut db, "RPUSH list a");
    assert_eq!(r(&mut db, "SET list v GET"), WRONGTYPE);
    assert_eq!(r(&mut db, "SET list v"), "+OK\r\n");
    assert_eq!(r(&mut db, "GET list"), "$1\r\nv\r\n");
}

#[test]
fn set_option_errors() {
    let mut db = Db::new();
    let syntax = "-ERR syntax error\r\n";
    for line in [
        "SET k v NX XX",
        "SET k v XX NX",
        "SET k v EX",
        "SET k v EX 10 PX 10",
        "SET k v EX 10 KEEPTTL",
        "SET k v KEEPTTL EX 10",
        "SET k v FOO",
        "SET k v PXAT 5 EXAT 5",
        "SET k v EX 10 EX",
        "SET k v PERSIST",
    ] {
        assert_eq!(r(&mut db, line), syntax, "{line}");
    }
    assert_eq!(r(&mut db, "SET k v EX abc"), NOT_INT);
    assert_eq!(r(&mut db, "SET k v EX abc FOO"), syntax);
    let bad = "-ERR invalid expire time in 'set' command\r\n";
    assert_eq!(r(&mut db, "SET k v EX 0"), bad);
    assert_eq!(r(&mut db, "SET k v PX -5"), bad);
    assert_eq!(r(&mut db, "SET k v EX 9223372036854776"), bad);
    assert_eq!(rt(&mut db, 10, "SET k v PX 9223372036854775800"), bad);
    assert_eq!(r(&mut db, "SET k v EXAT 0"), bad);
    assert_eq!(r(&mut db, "GET k"), "$-1\r\n");
    assert_eq!(r(&mut db, "SET k v EX 5 EX 7"), "+OK\r\n");
    assert_eq!(r(&mut db, "TTL k"), ":7\r\n");
}

#[test]
fn set_expiry_forms() {
    let mut db = Db::new();
    let now = 1_700_000_000_000;
    assert_eq!(rt(&mut db, now, "SET a v EX 10"), "+OK\r\n");
    assert_eq!(rt(&mut db, now, "PTTL a"), ":10000\r\n");
    assert_eq!(rt(&mut db, now, "SET b v PX 1500"), "+OK\r\n");
    assert_eq!(rt(&mut db, now, "PTTL b"), ":1500\r\n");
    assert_eq!(rt(&mut db, now, "SET c v EXAT 1700000100"), "+OK\r\n");
    assert_eq!(rt(&mut db, now, "TTL c"), ":100\r\n");
    assert_eq!(rt(&mut db, now, "SET d v PXAT 1700000000500"), "+OK\r\n");
    assert_eq!(rt(&mut db, now, "PEXPIRETIME d"), ":1700000000500\r\n");
    // An absolute deadline in the past: OK, but the key is gone.
    assert_eq!(rt(&mut db, now, "SET e v PXAT 1000"), "+OK\r\n");
    assert_eq!(rt(&mut db, now, "EXISTS e"), ":0\r\n");
    // KEEPTTL keeps, a plain SET clears.
    assert_eq!(rt(&mut db, now, "SET a w KEEPTTL"), "+OK\r\n");
    assert_eq!(rt(&mut db, now, "PTTL a"), ":10000\r\n");
    assert_eq!(rt(&mut db, now, "SET a w"), "+OK\r\n");
    assert_eq!(rt(&mut db, now, "PTTL a"), ":-1\r\n");
    // Expiry is strict: alive at the deadline, gone 1 ms after.
    assert_eq!(rt(&mut db, now + 1500, "GET b"), "$1\r\nv\r\n");
    assert_eq!(rt(&mut db, now + 1501, "GET b"), "$-1\r\n");
}

#[test]
fn getdel_mget_mset_setnx() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "MSET a 1 b 2"), "+OK\r\n");
    assert_eq!(
        r(&mut db, "MSET a 1 b"),
        "-ERR wrong number of arguments for 'mset' command\r\n"
    );
    r(&mut db, "SADD s m");
    assert_eq!(
        r(&mut db, "MGET a nope b s"),
        "*4\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n$-1\r\n"
    );
    assert_eq!(r3(&mut db, "MGET nope"), "*1\r\n_\r\n");
    assert_eq!(r(&mut db, "GETDEL a"), "$1\r\n1\r\n");
    assert_eq!(r(&mut db, "GETDEL a"), "$-1\r\n");
    assert_eq!(r(&mut db, "GETDEL s"), WRONGTYPE);
    assert_eq!(r(&mut db, "SETNX b x"), ":0\r\n");
    assert_eq!(r(&mut db, "SETNX s x"), ":0\r\n");
    assert_eq!(r(&mut db, "SETNX c x"), ":1\r\n");
    assert_eq!(r(&mut db, "GET c"), "$1\r\nx\r\n");
    assert_eq!(r(&mut db, "GET s"), WRONGTYPE);
}

#[test]
fn append_strlen() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "STRLEN k"), ":0\r\n");
    assert_eq!(r(&mut db, "APPEND k hello"), ":5\r\n");
    assert_eq!(r(&mut db, "APPEND k _world"), ":11\r\n");
    assert_eq!(r(&mut db, "GET k"), "$11\r\nhello_world\r\n");
    assert_eq!(r(&mut db, "STRLEN k"), ":11\r\n");
    r(&mut db, "LPUSH l a");
    assert_eq!(r(&mut db, "APPEND l x"), WRONGTYPE);
    assert_eq!(r(&mut db, "STRLEN l"), WRONGTYPE);
    // APPEND keeps the TTL.
    r(&mut db, "PEXPIRE k 100");
    r(&mut db, "APPEND k !");
    assert_eq!(r(&mut db, "PTTL k"), ":100\r\n");
}

#[test]
fn counters() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "INCR n"), ":1\r\n");
    assert_eq!(r(&mut db, "INCRBY n 10"), ":11\r\n");
    assert_eq!(r(&mut db, "DECR n"), ":10\r\n");
    assert_eq!(r(&mut db, "DECRBY n 20"), ":-10\r\n");
    assert_eq!(r(&mut db, "GET n"), "$3\r\n-10\r\n");
    assert_eq!(r(&mut db, "INCRBY n x"), NOT_INT);
    assert_eq!(r(&mut db, "INCRBY n 1.5"), NOT_INT);
    r(&mut db, "SET s abc");
    assert_eq!(r(&mut db, "INCR s"), NOT_INT);
    r(&mut db, "SET s 007");
    assert_eq!(r(&mut db, "INCR s"), NOT_INT);
    r(&mut db, "SET max 9223372036854775807");
    assert_eq!(
        r(&mut db, "INCR max"),
        "-ERR increment or decrement would overflow\r\n"
    );
    r(&mut db, "SET min -9223372036854775808");
    assert_eq!(
        r(&mut db, "DECR min"),
        "-ERR increment or decrement would overflow\r\n"
    );
    assert_eq!(
        r(&mut db, "DECRBY n -9223372036854775808"),
        "-ERR decrement would overflow\r\n"
    );
    r(&mut db, "SADD set m");
    assert_eq!(r(&mut db, "INCR set"), WRONGTYPE);
    // INCR keeps the TTL.
    r(&mut db, "SET t 1 PX 100");
    r(&mut db, "INCR t");
    assert_eq!(r(&mut db, "PTTL t"), ":100\r\n");
}
