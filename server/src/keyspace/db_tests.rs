use super::*;

fn s(v: &[u8]) -> Value {
    Value::Str(Bytes::copy_from_slice(v))
}

#[test]
fn set_get_remove() {
    let mut db = Db::new();
    db.set(b"k", s(b"v"), false, 0);
    assert_eq!(db.get(b"k", 0), Some(&s(b"v")));
    assert_eq!(db.len(), 1);
    assert_eq!(db.remove(b"k", 0), Some(s(b"v")));
    assert_eq!(db.get(b"k", 0), None);
    assert!(db.is_empty());
}

#[test]
fn lazy_expiry_is_strictly_after_deadline() {
    let mut db = Db::new();
    db.set(b"k", s(b"v"), false, 0);
    assert!(db.set_deadline(b"k", 1000));
    assert_eq!(db.expires_len(), 1);
    assert_eq!(db.deadline(b"k", 1000), Some(Some(1000)));
    assert!(db.get(b"k", 1000).is_some());
    assert!(db.get(b"k", 1001).is_none());
    assert_eq!(db.len(), 0);
    assert_eq!(db.expires_len(), 0);
}

#[test]
fn set_drops_or_keeps_ttl() {
    let mut db = Db::new();
    db.set(b"k", s(b"1"), false, 0);
    db.set_deadline(b"k", 500);
    db.set(b"k", s(b"2"), true, 10);
    assert_eq!(db.deadline(b"k", 10), Some(Some(500)));
    db.set(b"k", s(b"3"), false, 10);
    assert_eq!(db.deadline(b"k", 10), Some(None));
    assert_eq!(db.expires_len(), 0);
    // KEEPTTL on an already expired key does not resurrect the deadline.
    db.set_deadline(b"k", 20);
    db.set(b"k", s(b"4"), true, 30);
    assert_eq!(db.deadline(b"k", 30), Some(None));
}

#[test]
fn persist() {
    let mut db = Db::new();
    db.set(b"k", s(b"v"), false, 0);
    assert!(!db.persist(b"k", 0));
    db.set_deadline(b"k", 100);
    assert!(db.persist(b"k", 0));
    assert_eq!(db.expires_len(), 0);
    assert!(db.get(b"k", 1_000_000).is_some());
}

#[test]
fn sweep_is_bounded_and_ordered() {
    let mut db = Db::new();
    for i in 0..10u64 {
        let key = format!("k{i}");
        db.set(key.as_bytes(), s(b"v"), false, 0);
        db.set_deadline(key.as_bytes(), 100 + i);
    }
    db.set(b"forever", s(b"v"), false, 0);
    assert_eq!(db.sweep_expired(100, 100), 0);
    assert_eq!(db.sweep_expired(105, 3), 3);
    assert_eq!(db.len(), 8);
    assert!(db.get(b"k3", 0).is_some());
    assert_eq!(db.sweep_expired(105, 100), 2);
    assert_eq!(db.sweep_expired(1000, 100), 5);
    assert_eq!(db.len(), 1);
    assert_eq!(db.expires_len(), 0);
}

#[test]
fn keys_pattern() {
    let mut db = Db::new();
    for k in ["user:1", "user:2", "other"] {
        db.set(k.as_bytes(), s(b"v"), false, 0);
    }
    db.set_deadline(b"user:2", 5);
    let mut got = db.keys(b"user:*", 10);
    got.sort();
    assert_eq!(got, vec![Bytes::from_static(b"user:1")]);
    assert_eq!(db.keys(b"*", 0).len(), 3);
}

fn full_scan(db: &mut Db, count: usize) -> Vec<Bytes> {
    let mut cursor = 0;
    let mut out = Vec::new();
    loop {
        let (next, keys, _) = db.scan(cursor, count, None, None, 0);
        out.extend(keys);
        if next == 0 {
            return out;
        }
        assert!(next < 1 << SCAN_CURSOR_BITS);
        cursor = next;
    }
}

#[test]
fn scan_returns_every_key_once() {
    let mut db = Db::new();
    for i in 0..1000 {
        db.set(format!("key:{i}").as_bytes(), s(b"v"), false, 0);
    }
    let mut got = full_scan(&mut db, 7);
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 1000);
    assert_eq!(full_scan(&mut db, 10_000).len(), 1000);
}

#[test]
fn scan_survives_concurrent_changes() {
    let mut db = Db::new();
    for i in 0..500 {
        db.set(format!("stable:{i}").as_bytes(), s(b"v"), false, 0);
    }
    let mut cursor = 0;
    let mut seen = Vec::new();
    let mut round = 0;
    loop {
        let (next, keys, _) = db.scan(cursor, 10, None, None, 0);
        seen.extend(keys);
        // Churn between calls: add and delete other keys.
        for j in 0..20 {
            db.set(format!("churn:{round}:{j}").as_bytes(), s(b"v"), false, 0);
        }
        for j in 0..10 {
            db.remove(format!("churn:{round}:{j}").as_bytes(), 0);
        }
        round += 1;
        if next == 0 {
            break;
        }
        cursor = next;
    }
    for i in 0..500 {
        let k = Bytes::from(format!("stable:{i}"));
        assert_eq!(seen.iter().filter(|s| **s == k).count(), 1, "{k:?}");
    }
}

#[test]
fn scan_filters() {
    let mut db = Db::new();
    db.set(b"a1", s(b"v"), false, 0);
    db.set(
        b"a2",
        Value::List([Bytes::from_static(b"x")].into_iter().collect()),
        false,
        0,
    );
    db.set(b"b1", s(b"v"), false, 0);
    db.set(b"gone", s(b"v"), false, 0);
    db.set_deadline(b"gone", 1);
    let (next, mut keys, _) = db.scan(0, 100, Some(b"a*"), None, 10);
    keys.sort();
    assert_eq!(
        (next, keys),
        (
            0,
            vec![Bytes::from_static(b"a1"), Bytes::from_static(b"a2")]
        )
    );
    let (_, keys, _) = db.scan(0, 100, None, Some(b"LIST"), 10);
    assert_eq!(keys, vec![Bytes::from_static(b"a2")]);
    let (_, keys, _) = db.scan(0, 100, None, Some(b"nosuchtype"), 10);
    assert!(keys.is_empty());
    // The expired key was deleted by the scan.
    assert_eq!(db.len(), 3);
}

#[test]
fn remove_if_empty_and_flush() {
    let mut db = Db::new();
    db.set(b"l", Value::List(Default::default()), false, 0);
    db.remove_if_empty(b"l");
    assert!(db.is_empty());
    db.set(b"k", s(b"v"), false, 0);
    db.set_deadline(b"k", 9);
    db.flush(1_000);
    assert_eq!((db.len(), db.expires_len()), (0, 0));
    assert_eq!(db.scan(0, 10, None, None, 0), (0, vec![], 0));
}

#[test]
fn bulk_load_builds_the_scan_index_at_the_end() {
    let mut db = Db::new();
    db.set(b"before", s(b"v"), false, 0);
    db.start_bulk_load();
    for i in 0..500u32 {
        db.set(format!("k{i}").as_bytes(), s(b"v"), false, 0);
    }
    for i in 0..100u32 {
        db.remove(format!("k{i}").as_bytes(), 0);
    }
    db.remove(b"before", 0);
    db.finish_bulk_load();
    let mut keys = full_scan(&mut db, 7);
    keys.sort();
    let mut expected: Vec<Bytes> = (100..500u32)
        .map(|i| Bytes::from(format!("k{i}")))
        .collect();
    expected.sort();
    assert_eq!(keys, expected);
    // The index is kept one key at a time again afterwards.
    db.set(b"after", s(b"v"), false, 0);
    assert_eq!(full_scan(&mut db, 1000).len(), 401);
    assert_eq!(db.remove(b"after", 0), Some(s(b"v")));
    assert_eq!(full_scan(&mut db, 1000).len(), 400);
}

#[test]
fn used_bytes_follows_every_change() {
    use crate::keyspace::memory::ENTRY_OVERHEAD;
    let mut db = Db::new();
    db.set(b"a", s(b"12345"), false, 0);
    assert_eq!(db.used_bytes(), ENTRY_OVERHEAD + 1 + 5);
    // Grown in place: counted once the command settles.
    if let Some(Value::Str(v)) = db.get_mut(b"a", 0) {
        *v = Bytes::from_static(b"1234567890");
    }
    db.settle();
    assert_eq!(db.used_bytes(), ENTRY_OVERHEAD + 1 + 10);
    db.set(b"b", s(b"x"), false, 0);
    db.set_deadline(b"b", 10);
    assert_eq!(db.used_bytes(), 2 * ENTRY_OVERHEAD + 1 + 10 + 1 + 1);
    // Lazy expiry, the sweep, removal and flush all give the bytes back.
    assert_eq!(db.get(b"b", 11), None);
    assert_eq!(db.used_bytes(), ENTRY_OVERHEAD + 1 + 10);
    db.set(b"c", s(b"y"), false, 0);
    db.set_deadline(b"c", 10);
    assert_eq!(db.sweep_expired(11, 10), 1);
    assert_eq!(db.used_bytes(), ENTRY_OVERHEAD + 1 + 10);
    db.remove(b"a", 0);
    assert_eq!(db.used_bytes(), 0);
    db.set(b"d", s(b"z"), false, 0);
    db.flush(1_000);
    assert_eq!(db.used_bytes(), 0);
}

#[test]
fn eviction_sample_scores_by_rank() {
    use crate::keyspace::db::evict::Rank;
    let mut db = Db::new();
    db.set(b"old", s(b"v"), false, 1_000);
    db.set(b"new", s(b"v"), false, 5_000);
    db.set_deadline(b"new", 9_000_000);
    let sample = db.eviction_sample(20, false, Rank::Idle, 10_000);
    let idle = |key: &[u8]| sample.iter().find(|c| c.key == key).map(|c| c.score);
    assert_eq!((idle(b"old"), idle(b"new")), (Some(9_000), Some(5_000)));
    // Volatile sampling sees only keys with a deadline.
    let volatile = db.eviction_sample(20, true, Rank::Deadline, 10_000);
    assert_eq!(volatile.len(), 1);
    assert_eq!(volatile[0].key, Bytes::from_static(b"new"));
    assert_eq!(
        db.evict(&Bytes::from_static(b"old")),
        ENTRY_OVERHEAD_PLUS_OLD
    );
}

const ENTRY_OVERHEAD_PLUS_OLD: u64 = crate::keyspace::memory::ENTRY_OVERHEAD + 3 + 1;
