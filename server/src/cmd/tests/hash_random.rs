use super::*;

#[test]
fn hrandfield_missing_key_and_errors() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "HRANDFIELD h"), "$-1\r\n");
    assert_eq!(r3(&mut db, "HRANDFIELD h"), "_\r\n");
    assert_eq!(r(&mut db, "HRANDFIELD h 5"), "*0\r\n");
    assert_eq!(r3(&mut db, "HRANDFIELD h -5 WITHVALUES"), "*0\r\n");
    // Arguments are checked before the lookup, as Redis does.
    assert_eq!(r(&mut db, "HRANDFIELD h 1 foo"), "-ERR syntax error\r\n");
    assert_eq!(
        r(&mut db, "HRANDFIELD h -4611686018427387904 WITHVALUES"),
        "-ERR value is out of range\r\n"
    );
    assert_eq!(
        r(&mut db, "HRANDFIELD h -4611686018427387903 WITHVALUES"),
        "*0\r\n"
    );
    r(&mut db, "HSET h a 1");
    assert_eq!(
        r(&mut db, "HRANDFIELD h -16777217"),
        "-ERR value is out of range\r\n"
    );
    assert_eq!(r(&mut db, "HRANDFIELD h 0"), "*0\r\n");
    r(&mut db, "SET s v");
    assert_eq!(r(&mut db, "HRANDFIELD s"), WRONGTYPE);
    assert_eq!(r(&mut db, "HRANDFIELD s 1"), WRONGTYPE);
}

#[test]
fn hrandfield_one_field_hash_is_deterministic() {
    let mut db = Db::new();
    r(&mut db, "HSET h f v");
    assert_eq!(r(&mut db, "HRANDFIELD h"), "$1\r\nf\r\n");
    assert_eq!(r(&mut db, "HRANDFIELD h 3"), "*1\r\n$1\r\nf\r\n");
    assert_eq!(
        r(&mut db, "HRANDFIELD h -2"),
        "*2\r\n$1\r\nf\r\n$1\r\nf\r\n"
    );
    assert_eq!(
        r(&mut db, "HRANDFIELD h -2 withvalues"),
        "*4\r\n$1\r\nf\r\n$1\r\nv\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    assert_eq!(
        r3(&mut db, "HRANDFIELD h 2 WITHVALUES"),
        "*1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
}

#[test]
fn sscan_hscan_small_and_missing() {
    let mut db = Db::new();
    assert_eq!(r(&mut db, "SSCAN s 0"), "*2\r\n$1\r\n0\r\n*0\r\n");
    assert_eq!(r(&mut db, "SSCAN s abc"), "-ERR invalid cursor\r\n");
    r(&mut db, "SADD s 7");
    assert_eq!(
        r(&mut db, "SSCAN s 99 COUNT 1"),
        "*2\r\n$1\r\n0\r\n*1\r\n$1\r\n7\r\n"
    );
    assert_eq!(r(&mut db, "SSCAN s 0 MATCH x*"), "*2\r\n$1\r\n0\r\n*0\r\n");
    r(&mut db, "HSET h f v");
    assert_eq!(
        r3(&mut db, "HSCAN h 0"),
        "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    assert_eq!(r(&mut db, "HSCAN s 0"), WRONGTYPE);
    assert_eq!(r(&mut db, "SSCAN h 0 COUNT 0"), WRONGTYPE);
    assert_eq!(r(&mut db, "HSCAN h 0 COUNT 0"), "-ERR syntax error\r\n");
}
