use super::*;

#[test]
fn del_unlink_exists_type() {
    let mut db = Db::new();
    r(&mut db, "MSET a 1 b 2 c 3");
    r(&mut db, "LPUSH l x");
    r(&mut db, "HSET h f v");
    r(&mut db, "SADD s m");
    assert_eq!(r(&mut db, "EXISTS a a nope b"), ":3\r\n");
    assert_eq!(r(&mut db, "TYPE a"), "+string\r\n");
    assert_eq!(r(&mut db, "TYPE l"), "+list\r\n");
    assert_eq!(r(&mut db, "TYPE h"), "+hash\r\n");
    assert_eq!(r(&mut db, "TYPE s"), "+set\r\n");
    assert_eq!(r(&mut db, "TYPE nope"), "+none\r\n");
    assert_eq!(r(&mut db, "DEL a a nope"), ":1\r\n");
    assert_eq!(r(&mut db, "UNLINK b l h"), ":3\r\n");
    assert_eq!(r(&mut db, "DBSIZE"), ":2\r\n");
    // Expired keys neither exist nor count as deleted.
    r(&mut db, "PEXPIRE c 10");
    assert_eq!(rt(&mut db, 11, "DEL c"), ":0\r\n");
    assert_eq!(rt(&mut db, 11, "EXISTS c"), ":0\r\n");
}

#[test]
fn keys_and_flush() {
    let mut db = Db::new();
    r(&mut db, "MSET user:1 a user:2 b other c");
    let mut reply = match exec(&mut db, 0, &[b"KEYS", b"user:*"]) {
        Frame::Array(items) => items,
        other => panic!("{other:?}"),
    };
    reply.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(
        encode(&Frame::Array(reply), Protocol::Resp2),
        "*2\r\n$6\r\nuser:1\r\n$6\r\nuser:2\r\n"
    );
    assert_eq!(r(&mut db, "KEYS nomatch*"), "*0\r\n");
    assert_eq!(r(&mut db, "KEYS other"), "*1\r\n$5\r\nother\r\n");
    assert_eq!(r(&mut db, "FLUSHDB extra arg"), "-ERR syntax error\r\n");
    assert_eq!(r(&mut db, "FLUSHDB lazy"), "-ERR syntax error\r\n");
    assert_eq!(r(&mut db, "FLUSHDB ASYNC"), "+OK\r\n");
    assert_eq!(r(&mut db, "DBSIZE"), ":0\r\n");
    r(&mut db, "SET k v");
    assert_eq!(r(&mut db, "FLUSHALL sync"), "+OK\r\n");
    assert_eq!(r(&mut db, "FLUSHALL"), "+OK\r\n");
    assert_eq!(r(&mut db, "DBSIZE"), ":0\r\n");
}

#[test]
fn scan_reply_shape_and_errors() {
    let mut db = Db::new();
    // One shard's step: `[cursor, keys, examined]` (see `fanout::ScanWalk`).
    assert_eq!(r(&mut db, "SCAN 0"), "*3\r\n$1\r\n0\r\n*0\r\n:0\r\n");
    r(&mut db, "SET only v");
    assert_eq!(
        r(&mut db, "SCAN 0"),
        "*3\r\n$1\r\n0\r\n*1\r\n$4\r\nonly\r\n:1\r\n"
    );
    assert_eq!(
        r(&mut db, "SCAN 0 MATCH o* COUNT 5 TYPE string"),
        "*3\r\n$1\r\n0\r\n*1\r\n$4\r\nonly\r\n:1\r\n"
    );
    assert_eq!(
        r(&mut db, "SCAN 0 TYPE list"),
        "*3\r\n$1\r\n0\r\n*0\r\n:1\r\n"
    );
    assert_eq!(
        r(&mut db, "SCAN 0 MATCH x*"),
        "*3\r\n$1\r\n0\r\n*0\r\n:1\r\n"
    );
    assert_eq!(r(&mut db, "SCAN x"), "-ERR invalid cursor\r\n");
    assert_eq!(r(&mut db, "SCAN 0 COUNT 0"), "-ERR syntax error\r\n");
    assert_eq!(r(&mut db, "SCAN 0 COUNT x"), NOT_INT);
    assert_eq!(r(&mut db, "SCAN 0 COUNT"), "-ERR syntax error\r\n");
    assert_eq!(r(&mut db, "SCAN 0 FOO bar"), "-ERR syntax error\r\n");
}

#[test]
fn scan_iterates_everything() {
    let mut db = Db::new();
    for i in 0..100 {
        rt(&mut db, 0, &format!("SET key:{i} v"));
    }
    let mut cursor = b"0".to_vec();
    let mut seen = Vec::new();
    loop {
        let reply = exec(&mut db, 0, &[b"SCAN", &cursor, b"COUNT", b"7"]);
        let Frame::Array(items) = reply else {
            panic!("not an array")
        };
        let [Frame::Bulk(next), Frame::Array(keys), Frame::Integer(_)] = &items[..] else {
            panic!("bad shape")
        };
        assert!(keys.len() <= 8);
        seen.extend(keys.iter().cloned());
        if &next[..] == b"0" {
            break;
        }
        cursor = next.to_vec();
    }
    assert_eq!(seen.len(), 100);
}
