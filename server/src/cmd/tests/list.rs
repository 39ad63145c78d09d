use super::*;

#[test]
fn push_range_len() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "LPUSH l a b c"), ":3\r\n");
    assert_eq!(r(&mut db, "RPUSH l d"), ":4\r\n");
    assert_eq!(
        r(&mut db, "LRANGE l 0 -1"),
        "*4\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\nd\r\n"
    );
    assert_eq!(r(&mut db, "LRANGE l 1 2"), "*2\r\n$1\r\nb\r\n$1\r\na\r\n");
    assert_eq!(
        r(&mut db, "LRANGE l -2 100"),
        "*2\r\n$1\r\na\r\n$1\r\nd\r\n"
    );
    assert_eq!(r(&mut db, "LRANGE l -100 0"), "*1\r\n$1\r\nc\r\n");
    assert_eq!(r(&mut db, "LRANGE l 3 1"), "*0\r\n");
    assert_eq!(r(&mut db, "LRANGE l 4 10"), "*0\r\n");
    assert_eq!(r(&mut db, "LRANGE nope 0 -1"), "*0\r\n");
    assert_eq!(r(&mut db, "LRANGE l x 1"), NOT_INT);
    assert_eq!(r(&mut db, "LLEN l"), ":4\r\n");
    assert_eq!(r(&mut db, "LLEN nope"), ":0\r\n");
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "LPUSH s a"), WRONGTYPE);
    assert_eq!(r(&mut db, "LRANGE s 0 1"), WRONGTYPE);
    assert_eq!(r(&mut db, "LLEN s"), WRONGTYPE);
}

#[test]
fn pop_without_count() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "LPOP nope"), "$-1\r\n");
    assert_eq!(r3(&mut db, "LPOP nope"), "_\r\n");
    r(&mut db, "RPUSH l a b c");
    assert_eq!(r(&mut db, "LPOP l"), "$1\r\na\r\n");
    assert_eq!(r(&mut db, "RPOP l"), "$1\r\nc\r\n");
    assert_eq!(r(&mut db, "RPOP l"), "$1\r\nb\r\n");
    assert_eq!(r(&mut db, "EXISTS l"), ":0\r\n");
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "LPOP s"), WRONGTYPE);
}

#[test]
fn pop_with_count() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "LPOP nope 2"), "*-1\r\n");
    assert_eq!(r3(&mut db, "LPOP nope 2"), "_\r\n");
    assert_eq!(r(&mut db, "LPOP nope 0"), "*-1\r\n");
    r(&mut db, "RPUSH l a b c d");
    assert_eq!(r(&mut db, "LPOP l 0"), "*0\r\n");
    assert_eq!(r(&mut db, "LPOP l 2"), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    assert_eq!(r(&mut db, "RPOP l 5"), "*2\r\n$1\r\nd\r\n$1\r\nc\r\n");
    assert_eq!(r(&mut db, "EXISTS l"), ":0\r\n");
    assert_eq!(
        r(&mut db, "LPOP l -1"),
        "-ERR value is out of range, must be positive\r\n"
    );
    assert_eq!(
        r(&mut db, "LPOP l x"),
        "-ERR value is out of range, must be positive\r\n"
    );
    assert_eq!(
        r(&mut db, "LPOP l 1 2"),
        "-ERR wrong number of arguments for 'lpop' command\r\n"
    );
}
