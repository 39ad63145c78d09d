use super::*;

#[test]
fn hset_hget_hlen_hdel() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "HSET h f1 v1 f2 v2"), ":2\r\n");
    assert_eq!(r(&mut db, "HSET h f1 x f3 v3"), ":1\r\n");
    assert_eq!(
        r(&mut db, "HSET h f1"),
        "-ERR wrong number of arguments for 'hset' command\r\n"
    );
    assert_eq!(
        r(&mut db, "HSET h f1 v f2"),
        "-ERR wrong number of arguments for 'hset' command\r\n"
    );
    assert_eq!(r(&mut db, "HGET h f1"), "$1\r\nx\r\n");
    assert_eq!(r(&mut db, "HGET h nope"), "$-1\r\n");
    assert_eq!(r(&mut db, "HGET nope f"), "$-1\r\n");
    assert_eq!(r(&mut db, "HLEN h"), ":3\r\n");
    assert_eq!(r(&mut db, "HLEN nope"), ":0\r\n");
    assert_eq!(r(&mut db, "HDEL h f1 f2 nope"), ":2\r\n");
    assert_eq!(r(&mut db, "HDEL nope f"), ":0\r\n");
    assert_eq!(r(&mut db, "HDEL h f3"), ":1\r\n");
    assert_eq!(r(&mut db, "EXISTS h"), ":0\r\n");
    r(&mut db, "SET s v");
    for line in ["HSET s f v", "HGET s f", "HDEL s f", "HLEN s", "HGETALL s"] {
        assert_eq!(r(&mut db, line), WRONGTYPE, "{line}");
    }
}

#[test]
fn hgetall_encodings() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "HGETALL nope"), "*0\r\n");
    assert_eq!(r3(&mut db, "HGETALL nope"), "%0\r\n");
    r(&mut db, "HSET h f v");
    assert_eq!(r(&mut db, "HGETALL h"), "*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
    assert_eq!(r3(&mut db, "HGETALL h"), "%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
}
