use super::*;

#[test]
fn sadd_srem_scard_sismember() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "SADD s a b a"), ":2\r\n");
    assert_eq!(r(&mut db, "SADD s b c"), ":1\r\n");
    assert_eq!(r(&mut db, "SCARD s"), ":3\r\n");
    assert_eq!(r(&mut db, "SCARD nope"), ":0\r\n");
    assert_eq!(r(&mut db, "SISMEMBER s a"), ":1\r\n");
    assert_eq!(r3(&mut db, "SISMEMBER s z"), ":0\r\n");
    assert_eq!(r(&mut db, "SISMEMBER nope a"), ":0\r\n");
    assert_eq!(r(&mut db, "SREM s a z"), ":1\r\n");
    assert_eq!(r(&mut db, "SREM nope a"), ":0\r\n");
    assert_eq!(r(&mut db, "SREM s b c"), ":2\r\n");
    assert_eq!(r(&mut db, "EXISTS s"), ":0\r\n");
    r(&mut db, "SET k v");
    for line in [
        "SADD k a",
        "SREM k a",
        "SCARD k",
        "SISMEMBER k a",
        "SMEMBERS k",
        "SPOP k",
        "SPOP k 1",
    ] {
        assert_eq!(r(&mut db, line), WRONGTYPE, "{line}");
    }
}

#[test]
fn smembers_encodings() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "SMEMBERS nope"), "*0\r\n");
    assert_eq!(r3(&mut db, "SMEMBERS nope"), "~0\r\n");
    r(&mut db, "SADD s m");
    assert_eq!(r(&mut db, "SMEMBERS s"), "*1\r\n$1\r\nm\r\n");
    assert_eq!(r3(&mut db, "SMEMBERS s"), "~1\r\n$1\r\nm\r\n");
}

#[test]
fn spop() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "SPOP nope"), "$-1\r\n");
    assert_eq!(r3(&mut db, "SPOP nope"), "_\r\n");
    assert_eq!(r(&mut db, "SPOP nope 3"), "*0\r\n");
    assert_eq!(r3(&mut db, "SPOP nope 3"), "~0\r\n");
    r(&mut db, "SADD one x");
    assert_eq!(r(&mut db, "SPOP one"), "$1\r\nx\r\n");
    assert_eq!(r(&mut db, "EXISTS one"), ":0\r\n");
    r(&mut db, "SADD s a b c d");
    assert_eq!(r(&mut db, "SPOP s 0"), "*0\r\n");
    let two = r(&mut db, "SPOP s 2");
    assert!(two.starts_with("*2\r\n$1\r\n"), "{two}");
    assert_eq!(r(&mut db, "SCARD s"), ":2\r\n");
    let rest = r3(&mut db, "SPOP s 10");
    assert!(rest.starts_with("~2\r\n"), "{rest}");
    assert_eq!(r(&mut db, "EXISTS s"), ":0\r\n");
    assert_eq!(
        r(&mut db, "SPOP s -1"),
        "-ERR value is out of range, must be positive\r\n"
    );
    assert_eq!(
        r(&mut db, "SPOP s x"),
        "-ERR value is out of range, must be positive\r\n"
    );
    assert_eq!(r(&mut db, "SPOP s 1 2"), "-ERR syntax error\r\n");
}

#[test]
fn smismember() {
    let mut db = Db::new();
    r(&mut db, "SADD s a b c");
    assert_eq!(r(&mut db, "SMISMEMBER s a z c"), "*3\r\n:1\r\n:0\r\n:1\r\n");
    assert_eq!(r3(&mut db, "SMISMEMBER s a z"), "*2\r\n:1\r\n:0\r\n");
    assert_eq!(r(&mut db, "SMISMEMBER nope a b"), "*2\r\n:0\r\n:0\r\n");
    r(&mut db, "SET str v");
    assert_eq!(r(&mut db, "SMISMEMBER str a"), WRONGTYPE);
    assert_eq!(
        r(&mut db, "SMISMEMBER s"),
        "-ERR wrong number of arguments for 'smismember' command\r\n"
    );
}

#[test]
fn srandmember() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "SRANDMEMBER nope"), "$-1\r\n");
    assert_eq!(r(&mut db, "SRANDMEMBER nope 5"), "*0\r\n");
    assert_eq!(r3(&mut db, "SRANDMEMBER nope 5"), "*0\r\n");
    assert_eq!(r(&mut db, "SRANDMEMBER nope x"), NOT_INT);
    let range = "-ERR value is out of range, value must between -9223372036854775807 and \
                 9223372036854775807\r\n";
    assert_eq!(r(&mut db, "SRANDMEMBER nope -9223372036854775808"), range);
    assert_eq!(r(&mut db, "SRANDMEMBER nope 1 2"), "-ERR syntax error\r\n");
    r(&mut db, "SADD one a");
    assert_eq!(r(&mut db, "SRANDMEMBER one"), "$1\r\na\r\n");
    assert_eq!(r(&mut db, "SRANDMEMBER one 5"), "*1\r\n$1\r\na\r\n");
    // A huge count is the whole set (it used to overflow an allocation and kill the shard).
    assert_eq!(
        r(&mut db, "SRANDMEMBER one 9223372036854775807"),
        "*1\r\n$1\r\na\r\n"
    );
    assert_eq!(
        r(&mut db, "SRANDMEMBER one -3"),
        "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n"
    );
    assert_eq!(r(&mut db, "SRANDMEMBER one 0"), "*0\r\n");
    r(&mut db, "SADD s a b c");
    assert!(r(&mut db, "SRANDMEMBER s 2").starts_with("*2\r\n"));
    assert!(r3(&mut db, "SRANDMEMBER s 3").starts_with("*3\r\n"));
    assert!(r(&mut db, "SRANDMEMBER s 9").starts_with("*3\r\n"));
    assert!(r(&mut db, "SRANDMEMBER s -5").starts_with("*5\r\n"));
    let distinct = exec(&mut db, 0, &[b"SRANDMEMBER", b"s", b"3"]);
    let Frame::Array(items) = distinct else {
        panic!("not an array");
    };
    let set: std::collections::HashSet<_> = items.iter().map(|f| format!("{f:?}")).collect();
    assert_eq!(set.len(), 3);
    assert_eq!(r(&mut db, "SCARD s"), ":3\r\n");
    r(&mut db, "SET str v");
    assert_eq!(r(&mut db, "SRANDMEMBER str"), WRONGTYPE);
    assert_eq!(r(&mut db, "SRANDMEMBER str 2"), WRONGTYPE);
    assert_eq!(r(&mut db, "SRANDMEMBER str x"), NOT_INT);
    assert_eq!(r(&mut db, "SRANDMEMBER s 1 2"), "-ERR syntax error\r\n");
    assert_eq!(
        r(&mut db, "SRANDMEMBER s -16777217"),
        "-ERR value is out of range\r\n"
    );
}
