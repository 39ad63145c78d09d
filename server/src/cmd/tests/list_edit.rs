//! LPUSHX RPUSHX LINDEX LSET LREM LTRIM LINSERT LPOS; replies checked
//! against redis-server 7.0.15.

use super::*;

#[test]
fn pushx() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "LPUSHX l a"), ":0\r\n");
    assert_eq!(r(&mut db, "RPUSHX l a b"), ":0\r\n");
    assert_eq!(r(&mut db, "EXISTS l"), ":0\r\n");
    r(&mut db, "RPUSH l a");
    assert_eq!(r(&mut db, "LPUSHX l 1 2"), ":3\r\n");
    assert_eq!(r(&mut db, "RPUSHX l 3 4"), ":5\r\n");
    assert_eq!(
        r(&mut db, "LRANGE l 0 -1"),
        "*5\r\n$1\r\n2\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n3\r\n$1\r\n4\r\n"
    );
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "LPUSHX s a"), WRONGTYPE);
    assert_eq!(r(&mut db, "RPUSHX s a"), WRONGTYPE);
    assert_eq!(
        r(&mut db, "LPUSHX l"),
        "-ERR wrong number of arguments for 'lpushx' command\r\n"
    );
}

#[test]
fn lindex_lset() {
    let mut db = Db::new();
    r(&mut db, "RPUSH l a b c");
    assert_eq!(r(&mut db, "LINDEX l 0"), "$1\r\na\r\n");
    assert_eq!(r(&mut db, "LINDEX l -1"), "$1\r\nc\r\n");
    assert_eq!(r(&mut db, "LINDEX l 3"), "$-1\r\n");
    assert_eq!(r(&mut db, "LINDEX l -4"), "$-1\r\n");
    assert_eq!(r(&mut db, "LINDEX l -9223372036854775808"), "$-1\r\n");
    assert_eq!(r(&mut db, "LINDEX l x"), NOT_INT);
    // The key is looked up before the index is parsed.
    assert_eq!(r(&mut db, "LINDEX nope x"), "$-1\r\n");
    assert_eq!(r(&mut db, "LINDEX nope 0"), "$-1\r\n");
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "LINDEX s x"), WRONGTYPE);
    assert_eq!(r(&mut db, "LSET nope 0 v"), "-ERR no such key\r\n");
    assert_eq!(r(&mut db, "LSET nope x v"), "-ERR no such key\r\n");
    assert_eq!(r(&mut db, "LSET s x v"), WRONGTYPE);
    assert_eq!(r(&mut db, "LSET l x v"), NOT_INT);
    assert_eq!(r(&mut db, "LSET l 3 v"), "-ERR index out of range\r\n");
    assert_eq!(r(&mut db, "LSET l -4 v"), "-ERR index out of range\r\n");
    assert_eq!(r(&mut db, "LSET l -1 z"), "+OK\r\n");
    assert_eq!(r(&mut db, "LSET l 0 y"), "+OK\r\n");
    assert_eq!(
        r(&mut db, "LRANGE l 0 -1"),
        "*3\r\n$1\r\ny\r\n$1\r\nb\r\n$1\r\nz\r\n"
    );
}

#[test]
fn lrem() {
    let mut db = Db::new();
    r(&mut db, "RPUSH l a b c a b a");
    assert_eq!(r(&mut db, "LREM l x a"), NOT_INT);
    assert_eq!(r(&mut db, "LREM nope x a"), NOT_INT);
    assert_eq!(r(&mut db, "LREM nope 0 a"), ":0\r\n");
    assert_eq!(r(&mut db, "LREM l -1 a"), ":1\r\n");
    assert_eq!(
        r(&mut db, "LRANGE l 0 -1"),
        "*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    assert_eq!(r(&mut db, "LREM l 1 a"), ":1\r\n");
    assert_eq!(r(&mut db, "LREM l 0 b"), ":2\r\n");
    assert_eq!(r(&mut db, "LRANGE l 0 -1"), "*2\r\n$1\r\nc\r\n$1\r\na\r\n");
    assert_eq!(r(&mut db, "LREM l 5 z"), ":0\r\n");
    assert_eq!(r(&mut db, "LREM l -9223372036854775808 c"), ":1\r\n");
    assert_eq!(r(&mut db, "LREM l 0 a"), ":1\r\n");
    assert_eq!(r(&mut db, "EXISTS l"), ":0\r\n");
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "LREM s 0 a"), WRONGTYPE);
}

#[test]
fn ltrim() {
    let mut db = Db::new();
    r(&mut db, "RPUSH l a b c d e f");
    assert_eq!(r(&mut db, "LTRIM nope 0 1"), "+OK\r\n");
    assert_eq!(r(&mut db, "LTRIM nope x 1"), NOT_INT);
    assert_eq!(r(&mut db, "LTRIM l 0 y"), NOT_INT);
    assert_eq!(r(&mut db, "LTRIM l 1 -2"), "+OK\r\n");
    assert_eq!(
        r(&mut db, "LRANGE l 0 -1"),
        "*4\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"
    );
    assert_eq!(r(&mut db, "LTRIM l -100 100"), "+OK\r\n");
    assert_eq!(r(&mut db, "LLEN l"), ":4\r\n");
    assert_eq!(r(&mut db, "LTRIM l -2 -1"), "+OK\r\n");
    assert_eq!(r(&mut db, "LRANGE l 0 -1"), "*2\r\n$1\r\nd\r\n$1\r\ne\r\n");
    assert_eq!(r(&mut db, "LTRIM l 2 10"), "+OK\r\n");
    assert_eq!(r(&mut db, "EXISTS l"), ":0\r\n");
    r(&mut db, "RPUSH l a b c");
    assert_eq!(r(&mut db, "LTRIM l 2 1"), "+OK\r\n");
    assert_eq!(r(&mut db, "EXISTS l"), ":0\r\n");
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "LTRIM s 0 1"), WRONGTYPE);
}

#[test]
fn linsert() {
    let mut db = Db::new();
    r(&mut db, "RPUSH l a b c");
    assert_eq!(r(&mut db, "LINSERT l middle b x"), "-ERR syntax error\r\n");
    assert_eq!(
        r(&mut db, "LINSERT nope middle b x"),
        "-ERR syntax error\r\n"
    );
    assert_eq!(r(&mut db, "LINSERT nope before b x"), ":0\r\n");
    assert_eq!(r(&mut db, "EXISTS nope"), ":0\r\n");
    assert_eq!(r(&mut db, "LINSERT l before b x"), ":4\r\n");
    assert_eq!(r(&mut db, "LINSERT l AFTER b y"), ":5\r\n");
    assert_eq!(r(&mut db, "LINSERT l after c z"), ":6\r\n");
    assert_eq!(r(&mut db, "LINSERT l after zz y"), ":-1\r\n");
    assert_eq!(
        r(&mut db, "LRANGE l 0 -1"),
        "*6\r\n$1\r\na\r\n$1\r\nx\r\n$1\r\nb\r\n$1\r\ny\r\n$1\r\nc\r\n$1\r\nz\r\n"
    );
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "LINSERT s before b x"), WRONGTYPE);
    assert_eq!(
        r(&mut db, "LINSERT l before b"),
        "-ERR wrong number of arguments for 'linsert' command\r\n"
    );
}

#[test]
fn lpos() {
    let mut db = Db::new();
    r(&mut db, "RPUSH l a b c a b c a");
    let cases = [
        ("a", ":0\r\n"),
        ("z", "$-1\r\n"),
        ("a rank 2", ":3\r\n"),
        ("a rank -1", ":6\r\n"),
        ("a rank -2", ":3\r\n"),
        ("a rank -9223372036854775808", ":6\r\n"),
        ("a count 0", "*3\r\n:0\r\n:3\r\n:6\r\n"),
        ("a count 2", "*2\r\n:0\r\n:3\r\n"),
        ("a maxlen 3", ":0\r\n"),
        ("a maxlen 3 count 0", "*1\r\n:0\r\n"),
        ("a rank -1 count 0", "*3\r\n:6\r\n:3\r\n:0\r\n"),
        ("a rank -1 count 2 maxlen 4", "*2\r\n:6\r\n:3\r\n"),
        ("a rank 5 count 0", "*0\r\n"),
        ("z count 0", "*0\r\n"),
        ("a RANK 2 RANK 3", ":6\r\n"),
        ("a count 0 maxlen 0", "*3\r\n:0\r\n:3\r\n:6\r\n"),
        ("b maxlen 1", "$-1\r\n"),
    ];
    for (opts, want) in cases {
        assert_eq!(r(&mut db, &format!("LPOS l {opts}")), want, "{opts}");
    }
    let rank0 = "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                 second ... or use negative to start from the end of the list\r\n";
    let errors = [
        ("l a rank 0", rank0),
        ("l a rank x", NOT_INT),
        ("l a count -1", "-ERR COUNT can't be negative\r\n"),
        ("l a count x", "-ERR COUNT can't be negative\r\n"),
        ("l a maxlen -1", "-ERR MAXLEN can't be negative\r\n"),
        ("l a maxlen x", "-ERR MAXLEN can't be negative\r\n"),
        ("l a rank", "-ERR syntax error\r\n"),
        ("l a foo", "-ERR syntax error\r\n"),
        ("nope a rank 0", rank0),
        ("s a rank 0", rank0),
        ("nope a", "$-1\r\n"),
        ("nope a count 1", "*0\r\n"),
    ];
    r(&mut db, "SET s v");
    for (args, want) in errors {
        assert_eq!(r(&mut db, &format!("LPOS {args}")), want, "{args}");
    }
    assert_eq!(r(&mut db, "LPOS s a"), WRONGTYPE);
    assert_eq!(r3(&mut db, "LPOS nope a"), "_\r\n");
    assert_eq!(r3(&mut db, "LPOS l z"), "_\r\n");
}
