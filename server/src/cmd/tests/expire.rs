use super::*;

const NOW: u64 = 1_000_000;

#[test]
fn ttl_states() {
    let mut db = Db::new();
    assert_eq!(rt(&mut db, NOW, "TTL k"), ":-2\r\n");
    assert_eq!(rt(&mut db, NOW, "PTTL k"), ":-2\r\n");
    r(&mut db, "SET k v");
    assert_eq!(rt(&mut db, NOW, "TTL k"), ":-1\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRETIME k"), ":-1\r\n");
    assert_eq!(rt(&mut db, NOW, "PEXPIRE k 1499"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "TTL k"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "PTTL k"), ":1499\r\n");
    assert_eq!(rt(&mut db, NOW + 1000, "TTL k"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW, "PEXPIRE k 1500"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "TTL k"), ":2\r\n");
    assert_eq!(rt(&mut db, NOW, "PEXPIRETIME k"), ":1001500\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRETIME k"), ":1002\r\n");
    assert_eq!(rt(&mut db, NOW + 1500, "PTTL k"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW + 1501, "PTTL k"), ":-2\r\n");
}

#[test]
fn expire_forms() {
    let mut db = Db::new();
    assert_eq!(rt(&mut db, NOW, "EXPIRE nope 10"), ":0\r\n");
    r(&mut db, "MSET a 1 b 2 c 3 d 4");
    assert_eq!(rt(&mut db, NOW, "EXPIRE a 10"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "PTTL a"), ":10000\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIREAT b 2000"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "PTTL b"), ":1000000\r\n");
    assert_eq!(rt(&mut db, NOW, "PEXPIREAT c 1000005"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "PTTL c"), ":5\r\n");
    // A deadline not in the future deletes the key and replies 1.
    assert_eq!(rt(&mut db, NOW, "PEXPIREAT d 1000000"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "EXISTS d"), ":0\r\n");
    r(&mut db, "SET d 4");
    assert_eq!(rt(&mut db, NOW, "EXPIRE d -1"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "EXISTS d"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRE a x"), NOT_INT);
    let bad = "-ERR invalid expire time in 'expire' command\r\n";
    assert_eq!(rt(&mut db, NOW, "EXPIRE a 9223372036854776"), bad);
    assert_eq!(
        rt(&mut db, NOW, "PEXPIRE a 9223372036854775807"),
        "-ERR invalid expire time in 'pexpire' command\r\n"
    );
}

#[test]
fn expire_conditions() {
    let mut db = Db::new();
    r(&mut db, "SET k v");
    assert_eq!(rt(&mut db, NOW, "EXPIRE k 100 XX"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRE k 100 GT"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRE k 100 LT"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRE k 50 NX"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRE k 200 LT"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRE k 100 GT"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRE k 200 gt"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "EXPIRE k 50 XX LT"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "TTL k"), ":50\r\n");
    assert_eq!(
        rt(&mut db, NOW, "EXPIRE k 5 NX XX"),
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
    );
    assert_eq!(
        rt(&mut db, NOW, "EXPIRE k 5 GT LT"),
        "-ERR GT and LT options at the same time are not compatible\r\n"
    );
    assert_eq!(
        rt(&mut db, NOW, "EXPIRE k 5 FOO"),
        "-ERR Unsupported option FOO\r\n"
    );
    // Options are checked before the number.
    assert_eq!(
        rt(&mut db, NOW, "EXPIRE k x FOO"),
        "-ERR Unsupported option FOO\r\n"
    );
}

#[test]
fn persist_and_overwrite() {
    let mut db = Db::new();
    assert_eq!(rt(&mut db, NOW, "PERSIST k"), ":0\r\n");
    r(&mut db, "SET k v");
    assert_eq!(rt(&mut db, NOW, "PERSIST k"), ":0\r\n");
    rt(&mut db, NOW, "EXPIRE k 10");
    assert_eq!(rt(&mut db, NOW, "PERSIST k"), ":1\r\n");
    assert_eq!(rt(&mut db, NOW, "TTL k"), ":-1\r\n");
    rt(&mut db, NOW, "EXPIRE k 10");
    rt(&mut db, NOW, "SET k w");
    assert_eq!(rt(&mut db, NOW, "TTL k"), ":-1\r\n");
    assert_eq!(db.expires_len(), 0);
}

#[test]
fn lazy_expiry_on_every_type() {
    let mut db = Db::new();
    r(&mut db, "RPUSH l a");
    r(&mut db, "HSET h f v");
    r(&mut db, "SADD s m");
    for k in ["l", "h", "s"] {
        rt(&mut db, NOW, &format!("PEXPIRE {k} 1"));
    }
    assert_eq!(rt(&mut db, NOW + 2, "LLEN l"), ":0\r\n");
    assert_eq!(rt(&mut db, NOW + 2, "HGET h f"), "$-1\r\n");
    assert_eq!(rt(&mut db, NOW + 2, "SCARD s"), ":0\r\n");
    assert_eq!((db.len(), db.expires_len()), (0, 0));
}

#[test]
fn expiretime_rounds_without_overflow_at_the_edge() {
    // Checked against redis-server 7.0.15.
    let mut db = Db::new();
    r(&mut db, "SET k v");
    assert_eq!(
        rt(&mut db, NOW, "PEXPIREAT k 9223372036854775807"),
        ":1\r\n"
    );
    assert_eq!(rt(&mut db, NOW, "EXPIRETIME k"), ":9223372036854776\r\n");
    assert_eq!(
        rt(&mut db, NOW, "PEXPIRETIME k"),
        ":9223372036854775807\r\n"
    );
    assert_eq!(rt(&mut db, NOW, "TTL k"), ":9223372036853776\r\n");
}

#[test]
fn a_plain_set_over_an_expired_key_expires_it_first() {
    let mut db = Db::new();
    r(&mut db, "SET k old");
    r(&mut db, "PEXPIREAT k 10");
    r(&mut db, "SET live v");
    r(&mut db, "PEXPIREAT live 100");
    let expired_before = db.stats().expired;
    // At 11 ms `k` is expired: the SET removes and counts it (as Redis's expireIfNeeded),
    // then writes a key without a deadline.
    assert_eq!(rt(&mut db, 11, "SET k new"), "+OK\r\n");
    assert_eq!(db.stats().expired, expired_before + 1);
    assert_eq!(rt(&mut db, 11, "GET k"), "$3\r\nnew\r\n");
    assert_eq!(rt(&mut db, 11, "PTTL k"), ":-1\r\n");
    // A live key is overwritten in place: its deadline goes (no KEEPTTL), nothing is counted.
    assert_eq!(rt(&mut db, 11, "SET live w"), "+OK\r\n");
    assert_eq!(db.stats().expired, expired_before + 1);
    assert_eq!(rt(&mut db, 11, "PTTL live"), ":-1\r\n");
    assert_eq!(rt(&mut db, 11, "SET live x KEEPTTL"), "+OK\r\n");
    assert_eq!(rt(&mut db, 11, "DBSIZE"), ":2\r\n");
}
