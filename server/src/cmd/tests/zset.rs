//! Sorted set commands; replies checked against redis-server 7.0.15.
use super::*;

const NOT_FLOAT: &str = "-ERR value is not a valid float\r\n";

#[test]
fn zadd_options_and_errors() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "ZADD z 1 a 2 b 3 c"), ":3\r\n");
    assert_eq!(r(&mut db, "ZADD z xx 10 new"), ":0\r\n");
    assert_eq!(r(&mut db, "ZADD z xx ch 10 a 2 b"), ":1\r\n");
    assert_eq!(r(&mut db, "ZADD z gt ch 5 a 100 b"), ":1\r\n");
    assert_eq!(r(&mut db, "ZADD z lt ch 5 a 100 b"), ":1\r\n");
    assert_eq!(r(&mut db, "ZADD z nx incr 1 a"), "$-1\r\n");
    assert_eq!(r3(&mut db, "ZADD z nx incr 1 a"), "_\r\n");
    assert_eq!(r(&mut db, "ZADD z incr 1.5 a"), "$3\r\n6.5\r\n");
    assert_eq!(r3(&mut db, "ZADD z incr 1 a"), ",7.5\r\n");
    assert_eq!(r(&mut db, "ZADD missing xx 1 a"), ":0\r\n");
    assert_eq!(r(&mut db, "EXISTS missing"), ":0\r\n");
    assert_eq!(
        r(&mut db, "ZADD z nx xx 1 a"),
        "-ERR XX and NX options at the same time are not compatible\r\n"
    );
    for line in ["ZADD z gt lt 1 a", "ZADD z nx gt 1 a"] {
        assert_eq!(
            r(&mut db, line),
            "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"
        );
    }
    assert_eq!(
        r(&mut db, "ZADD z incr 1 a 2 b"),
        "-ERR INCR option supports a single increment-element pair\r\n"
    );
    assert_eq!(r(&mut db, "ZADD z 1 a 2"), "-ERR syntax error\r\n");
    assert_eq!(r(&mut db, "ZADD z nx ch"), "-ERR syntax error\r\n");
    assert_eq!(r(&mut db, "ZADD z nan a"), NOT_FLOAT);
    assert_eq!(r(&mut db, "ZADD z 1e400 a"), NOT_FLOAT);
    assert_eq!(r(&mut db, "ZADD z 0x10 hex"), ":1\r\n");
    assert_eq!(r(&mut db, "ZSCORE z hex"), "$2\r\n16\r\n");
    r(&mut db, "ZADD inf +inf a");
    assert_eq!(
        r(&mut db, "ZINCRBY inf -inf a"),
        "-ERR resulting score is not a number (NaN)\r\n"
    );
    assert_eq!(r(&mut db, "ZSCORE inf a"), "$3\r\ninf\r\n");
    assert_eq!(r(&mut db, "ZINCRBY z x a"), NOT_FLOAT);
    assert_eq!(
        r(&mut db, "ZINCRBY z 0.1 new"),
        "$19\r\n0.10000000000000001\r\n"
    );
    assert_eq!(r(&mut db, "TYPE z"), "+zset\r\n");
    r(&mut db, "SET s v");
    for line in [
        "ZADD s 1 a",
        "ZINCRBY s 1 a",
        "ZSCORE s a",
        "ZCARD s",
        "ZRANGE s 0 1",
        "ZREM s a",
        "ZRANK s a",
        "ZPOPMIN s",
        "ZPOPMIN s 0",
        "ZRANDMEMBER s",
        "ZSCAN s 0",
        "ZCOUNT s 0 1",
        "ZREMRANGEBYRANK s 0 1",
    ] {
        assert_eq!(r(&mut db, line), WRONGTYPE, "{line}");
    }
}

#[test]
fn scores_ranks_counts() {
    let mut db = Db::new();
    r(&mut db, "ZADD z 1 a 2 b 3 c -inf mi +inf ma");
    assert_eq!(r(&mut db, "ZCARD z"), ":5\r\n");
    assert_eq!(r(&mut db, "ZCARD nope"), ":0\r\n");
    assert_eq!(r(&mut db, "ZSCORE z mi"), "$4\r\n-inf\r\n");
    assert_eq!(r(&mut db, "ZSCORE z nope"), "$-1\r\n");
    assert_eq!(r(&mut db, "ZMSCORE z a nope"), "*2\r\n$1\r\n1\r\n$-1\r\n");
    assert_eq!(r3(&mut db, "ZMSCORE z a nope"), "*2\r\n,1\r\n_\r\n");
    assert_eq!(r(&mut db, "ZRANK z c"), ":3\r\n");
    assert_eq!(r(&mut db, "ZREVRANK z c"), ":1\r\n");
    assert_eq!(r(&mut db, "ZRANK z nope"), "$-1\r\n");
    assert_eq!(r(&mut db, "ZRANK nope a"), "$-1\r\n");
    assert_eq!(r(&mut db, "ZCOUNT z -inf +inf"), ":5\r\n");
    assert_eq!(r(&mut db, "ZCOUNT z (1 3"), ":2\r\n");
    assert_eq!(r(&mut db, "ZCOUNT z 3 1"), ":0\r\n");
    assert_eq!(
        r(&mut db, "ZCOUNT z x 3"),
        "-ERR min or max is not a float\r\n"
    );
    assert_eq!(r(&mut db, "ZREM z a nope"), ":1\r\n");
    assert_eq!(r(&mut db, "ZREM z b c mi ma"), ":4\r\n");
    assert_eq!(r(&mut db, "EXISTS z"), ":0\r\n");
}

#[test]
fn ranges_by_rank_score_and_lex() {
    let mut db = Db::new();
    r(&mut db, "ZADD z 1 a 2 b 3 c 4 d");
    assert_eq!(
        r(&mut db, "ZRANGE z 0 1 WITHSCORES"),
        "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"
    );
    assert_eq!(
        r3(&mut db, "ZRANGE z 0 1 WITHSCORES"),
        "*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2\r\n"
    );
    assert_eq!(r(&mut db, "ZRANGE z -2 -1"), "*2\r\n$1\r\nc\r\n$1\r\nd\r\n");
    assert_eq!(r(&mut db, "ZRANGE z 3 1"), "*0\r\n");
    assert_eq!(
        r(&mut db, "ZREVRANGE z 0 1"),
        "*2\r\n$1\r\nd\r\n$1\r\nc\r\n"
    );
    assert_eq!(
        r(&mut db, "ZRANGE z 0 -1 REV"),
        "*4\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n"
    );
    assert_eq!(
        r(&mut db, "ZRANGEBYSCORE z (1 3"),
        "*2\r\n$1\r\nb\r\n$1\r\nc\r\n"
    );
    assert_eq!(
        r(&mut db, "ZRANGEBYSCORE z -inf +inf LIMIT 1 2"),
        "*2\r\n$1\r\nb\r\n$1\r\nc\r\n"
    );
    assert_eq!(r(&mut db, "ZRANGEBYSCORE z -inf +inf LIMIT -1 2"), "*0\r\n");
    assert_eq!(
        r(&mut db, "ZRANGEBYSCORE z -inf +inf LIMIT 2 -1"),
        "*2\r\n$1\r\nc\r\n$1\r\nd\r\n"
    );
    assert_eq!(
        r(&mut db, "ZREVRANGEBYSCORE z 3 1 LIMIT 1 5"),
        "*2\r\n$1\r\nb\r\n$1\r\na\r\n"
    );
    assert_eq!(
        r(&mut db, "ZRANGE z 3 2 BYSCORE REV"),
        "*2\r\n$1\r\nc\r\n$1\r\nb\r\n"
    );
    assert_eq!(
        r(&mut db, "ZRANGE z 0 -1 LIMIT 0 1"),
        "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n"
    );
    assert_eq!(
        r(&mut db, "ZRANGE z - + BYLEX WITHSCORES"),
        "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"
    );
    assert_eq!(r(&mut db, "ZRANGE z 0 -1 foo"), "-ERR syntax error\r\n");
    assert_eq!(
        r(&mut db, "ZRANGEBYSCORE z 1 3 REV"),
        "-ERR syntax error\r\n"
    );
    assert_eq!(r(&mut db, "ZRANGE z a b"), NOT_INT);
    assert_eq!(r(&mut db, "ZRANGE nope 0 -1"), "*0\r\n");
    r(&mut db, "ZADD lex 0 a 0 b 0 c 0 d 0 e");
    assert_eq!(
        r(&mut db, "ZRANGEBYLEX lex [b (d"),
        "*2\r\n$1\r\nb\r\n$1\r\nc\r\n"
    );
    assert_eq!(
        r(&mut db, "ZREVRANGEBYLEX lex + - LIMIT 1 2"),
        "*2\r\n$1\r\nd\r\n$1\r\nc\r\n"
    );
    assert_eq!(
        r(&mut db, "ZRANGEBYLEX lex b d"),
        "-ERR min or max not valid string range item\r\n"
    );
    assert_eq!(r(&mut db, "ZLEXCOUNT lex [b (e"), ":3\r\n");
    assert_eq!(r(&mut db, "ZLEXCOUNT lex + -"), ":0\r\n");
}

#[test]
fn remove_ranges_and_pops() {
    let mut db = Db::new();
    r(&mut db, "ZADD z 1 a 2 b 3 c 4 d 5 e");
    assert_eq!(r(&mut db, "ZREMRANGEBYRANK z -1 -1"), ":1\r\n");
    assert_eq!(r(&mut db, "ZREMRANGEBYSCORE z -inf (2"), ":1\r\n");
    assert_eq!(
        r(&mut db, "ZREMRANGEBYSCORE z a b"),
        "-ERR min or max is not a float\r\n"
    );
    assert_eq!(r(&mut db, "ZREMRANGEBYLEX z [a (c"), ":1\r\n");
    assert_eq!(r(&mut db, "ZRANGE z 0 -1"), "*2\r\n$1\r\nc\r\n$1\r\nd\r\n");
    assert_eq!(r(&mut db, "ZPOPMIN z"), "*2\r\n$1\r\nc\r\n$1\r\n3\r\n");
    assert_eq!(r3(&mut db, "ZPOPMIN z 0"), "*0\r\n");
    assert_eq!(r3(&mut db, "ZPOPMAX z 5"), "*1\r\n*2\r\n$1\r\nd\r\n,4\r\n");
    assert_eq!(r(&mut db, "EXISTS z"), ":0\r\n");
    assert_eq!(r(&mut db, "ZPOPMIN z"), "*0\r\n");
    assert_eq!(
        r(&mut db, "ZPOPMIN z -1"),
        "-ERR value is out of range, must be positive\r\n"
    );
    assert_eq!(r(&mut db, "ZPOPMIN z 1 2"), "-ERR syntax error\r\n");
}

#[test]
fn zrandmember_counts() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "ZRANDMEMBER nope"), "$-1\r\n");
    assert_eq!(r(&mut db, "ZRANDMEMBER nope 3"), "*0\r\n");
    r(&mut db, "ZADD z 1 a 2 b 3 c");
    assert_eq!(r(&mut db, "ZRANDMEMBER z 0"), "*0\r\n");
    let all = r(&mut db, "ZRANDMEMBER z 10");
    assert!(all.starts_with("*3\r\n"), "{all}");
    let repeated = r3(&mut db, "ZRANDMEMBER z -5 WITHSCORES");
    assert!(repeated.starts_with("*5\r\n*2\r\n"), "{repeated}");
    assert_eq!(r(&mut db, "ZRANDMEMBER z 1 foo"), "-ERR syntax error\r\n");
    assert_eq!(
        r(&mut db, "ZRANDMEMBER z -9223372036854775808"),
        "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"
    );
    assert_eq!(
        r(&mut db, "ZRANDMEMBER z 9223372036854775807 WITHSCORES"),
        "-ERR value is out of range\r\n"
    );
}

#[test]
fn zscan_small_set_whole_in_score_order() {
    let mut db = Db::new();
    r(&mut db, "ZADD z 2 b 1.5 a");
    assert_eq!(
        r(&mut db, "ZSCAN z 0"),
        "*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n"
    );
    assert_eq!(
        r(&mut db, "ZSCAN z 0 MATCH b"),
        "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n"
    );
    assert_eq!(r(&mut db, "ZSCAN nope 0"), "*2\r\n$1\r\n0\r\n*0\r\n");
    for i in 0..300 {
        rt(&mut db, 0, &format!("ZADD big {i} m{i}"));
    }
    let mut cursor = "0".to_string();
    let mut seen = 0;
    loop {
        let frame = exec(
            &mut db,
            0,
            &[b"ZSCAN", b"big", cursor.as_bytes(), b"COUNT", b"50"],
        );
        let Frame::Array(parts) = frame else {
            panic!("not an array");
        };
        let (Some(Frame::Bulk(next)), Some(Frame::Array(items))) = (parts.first(), parts.get(1))
        else {
            panic!("bad reply");
        };
        seen += items.len() / 2;
        cursor = String::from_utf8_lossy(next).into_owned();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen, 300);
}

#[test]
fn snapshot_and_dump_round_trip() {
    let mut db = Db::new();
    r(&mut db, "ZADD z 0.1 a -inf b 3 c");
    let dumped = exec(&mut db, 0, &[b"DUMP", b"z"]);
    let Frame::Bulk(payload) = dumped else {
        panic!("no payload");
    };
    let args: Vec<&[u8]> = vec![b"RESTORE", b"z2", b"0", &payload];
    assert_eq!(run_at(&mut db, 0, &args), "+OK\r\n");
    assert_eq!(
        r(&mut db, "ZRANGE z2 0 -1 WITHSCORES"),
        "*6\r\n$1\r\nb\r\n$4\r\n-inf\r\n$1\r\na\r\n$19\r\n0.10000000000000001\r\n$1\r\nc\r\n$1\r\n3\r\n"
    );
}

#[test]
fn negative_zero_is_stored_as_zero() {
    // redis-server 7.0.15: the listpack keeps `d2string`'s `0`; ZINCRBY's own reply says -0.
    let mut db = Db::new();
    assert_eq!(r(&mut db, "ZADD z -0 m"), ":1\r\n");
    assert_eq!(r(&mut db, "ZSCORE z m"), "$1\r\n0\r\n");
    assert_eq!(r3(&mut db, "ZSCORE z m"), ",0\r\n");
    assert_eq!(r(&mut db, "ZINCRBY z3 -0 a"), "$2\r\n-0\r\n");
    assert_eq!(r(&mut db, "ZSCORE z3 a"), "$1\r\n0\r\n");
}
