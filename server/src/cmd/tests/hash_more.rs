//! HMSET HSETNX HMGET HKEYS HVALS HEXISTS HSTRLEN HINCRBY; replies checked
//! against redis-server 7.0.15.

use super::*;

#[test]
fn hmset_hmget() {
    let mut db = Db::new();
    r(&mut db, "HSET h a 1 b 2");
    assert_eq!(
        r(&mut db, "HMGET h a z b"),
        "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n"
    );
    assert_eq!(r(&mut db, "HMGET nope a b"), "*2\r\n$-1\r\n$-1\r\n");
    assert_eq!(r3(&mut db, "HMGET nope a"), "*1\r\n_\r\n");
    assert_eq!(r(&mut db, "HMSET h c 3"), "+OK\r\n");
    assert_eq!(r(&mut db, "HMSET new a 1 b 2"), "+OK\r\n");
    assert_eq!(r(&mut db, "HLEN new"), ":2\r\n");
    assert_eq!(
        r(&mut db, "HMSET h c"),
        "-ERR wrong number of arguments for 'hmset' command\r\n"
    );
    assert_eq!(
        r(&mut db, "HMSET h c 1 d"),
        "-ERR wrong number of arguments for 'hmset' command\r\n"
    );
    assert_eq!(
        r(&mut db, "HMGET h"),
        "-ERR wrong number of arguments for 'hmget' command\r\n"
    );
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "HMGET s a"), WRONGTYPE);
    assert_eq!(r(&mut db, "HMSET s a 1"), WRONGTYPE);
}

#[test]
fn hsetnx_hexists_hstrlen() {
    let mut db = Db::new();
    r(&mut db, "HSET h a 1 str abc");
    assert_eq!(r(&mut db, "HSETNX h a 9"), ":0\r\n");
    assert_eq!(r(&mut db, "HGET h a"), "$1\r\n1\r\n");
    assert_eq!(r(&mut db, "HSETNX h q 9"), ":1\r\n");
    assert_eq!(r(&mut db, "HSETNX n a 1"), ":1\r\n");
    assert_eq!(r(&mut db, "HEXISTS h a"), ":1\r\n");
    assert_eq!(r(&mut db, "HEXISTS h z"), ":0\r\n");
    assert_eq!(r(&mut db, "HEXISTS nope a"), ":0\r\n");
    assert_eq!(r(&mut db, "HSTRLEN h str"), ":3\r\n");
    assert_eq!(r(&mut db, "HSTRLEN h zz"), ":0\r\n");
    assert_eq!(r(&mut db, "HSTRLEN nope a"), ":0\r\n");
    r(&mut db, "SET s v");
    for cmd in ["HSETNX s a 1", "HEXISTS s a", "HSTRLEN s a"] {
        assert_eq!(r(&mut db, cmd), WRONGTYPE, "{cmd}");
    }
    assert_eq!(
        r(&mut db, "HEXISTS h"),
        "-ERR wrong number of arguments for 'hexists' command\r\n"
    );
}

#[test]
fn hkeys_hvals() {
    let mut db = Db::new();
    r(&mut db, "HSET h a 1");
    assert_eq!(r(&mut db, "HKEYS h"), "*1\r\n$1\r\na\r\n");
    assert_eq!(r3(&mut db, "HVALS h"), "*1\r\n$1\r\n1\r\n");
    r(&mut db, "HSET h b 2");
    let keys = r(&mut db, "HKEYS h");
    assert!(keys == "*2\r\n$1\r\na\r\n$1\r\nb\r\n" || keys == "*2\r\n$1\r\nb\r\n$1\r\na\r\n");
    assert_eq!(r(&mut db, "HKEYS nope"), "*0\r\n");
    assert_eq!(r(&mut db, "HVALS nope"), "*0\r\n");
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "HKEYS s"), WRONGTYPE);
    assert_eq!(r(&mut db, "HVALS s"), WRONGTYPE);
    r(&mut db, "HDEL h a b");
    assert_eq!(r(&mut db, "EXISTS h"), ":0\r\n");
}

#[test]
fn hincrby() {
    let mut db = Db::new();
    r(
        &mut db,
        "HSET h a 1 str abc big 9223372036854775807 neg -9223372036854775808 lead 01",
    );
    assert_eq!(r(&mut db, "HINCRBY h a 5"), ":6\r\n");
    assert_eq!(r(&mut db, "HINCRBY h z -5"), ":-5\r\n");
    assert_eq!(r(&mut db, "HINCRBY new f 1"), ":1\r\n");
    assert_eq!(r(&mut db, "HINCRBY h a x"), NOT_INT);
    assert_eq!(r(&mut db, "HINCRBY h a 1.5"), NOT_INT);
    assert_eq!(r(&mut db, "HINCRBY nope a x"), NOT_INT);
    assert_eq!(r(&mut db, "EXISTS nope"), ":0\r\n");
    let not_int = "-ERR hash value is not an integer\r\n";
    assert_eq!(r(&mut db, "HINCRBY h str 1"), not_int);
    assert_eq!(r(&mut db, "HINCRBY h lead 1"), not_int);
    let overflow = "-ERR increment or decrement would overflow\r\n";
    assert_eq!(r(&mut db, "HINCRBY h big 1"), overflow);
    assert_eq!(r(&mut db, "HINCRBY h big 0"), ":9223372036854775807\r\n");
    assert_eq!(r(&mut db, "HINCRBY h neg -1"), overflow);
    assert_eq!(r(&mut db, "HINCRBY h neg 0"), ":-9223372036854775808\r\n");
    assert_eq!(r(&mut db, "HINCRBY h a 9223372036854775807"), overflow);
    assert_eq!(r(&mut db, "HGET h a"), "$1\r\n6\r\n");
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "HINCRBY s a 1"), WRONGTYPE);
    assert_eq!(
        r(&mut db, "HINCRBY h a"),
        "-ERR wrong number of arguments for 'hincrby' command\r\n"
    );
}
