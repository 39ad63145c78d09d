use super::*;
use crate::cmd::execute;
use crate::keyspace::Db;
use crate::resp::Protocol;

fn b(items: &[&str]) -> Vec<Bytes> {
    items
        .iter()
        .map(|s| Bytes::copy_from_slice(s.as_bytes()))
        .collect()
}

fn enc(f: &Frame) -> String {
    String::from_utf8_lossy(&f.to_bytes(Protocol::Resp2)).into_owned()
}

#[test]
fn split_by_owner() {
    // "foo" → slot 12182 → shard 1 of 2; "bar" → slot 5061 → shard 0.
    let parts = split_keys(&b(&["MGET", "foo", "bar", "{foo}x"]), 1, 2).unwrap_or_default();
    assert_eq!(
        parts,
        vec![
            (0, b(&["MGET", "bar"]), vec![1]),
            (1, b(&["MGET", "foo", "{foo}x"]), vec![0, 2])
        ]
    );
    let parts = split_keys(&b(&["MSET", "foo", "1", "bar", "2"]), 2, 2).unwrap_or_default();
    assert_eq!(
        parts,
        vec![
            (0, b(&["MSET", "bar", "2"]), vec![1]),
            (1, b(&["MSET", "foo", "1"]), vec![0])
        ]
    );
    let single = split_keys(&b(&["DEL", "foo", "bar"]), 1, 1).unwrap_or_default();
    assert_eq!(single, vec![(0, b(&["DEL", "foo", "bar"]), vec![0, 1])]);
}

#[test]
fn split_errors() {
    let err = split_keys(&b(&["MSET", "a", "1", "b"]), 2, 2);
    assert_eq!(
        err,
        Err(Frame::error(
            "ERR wrong number of arguments for 'mset' command"
        ))
    );
    assert!(split_keys(&b(&["DEL"]), 1, 2).is_err());
    assert!(split_keys(&b(&["DEL", "a"]), 0, 2).is_err());
}

/// Runs a multi-key command over `n` separate Dbs and merges, end to end.
fn run_sharded(dbs: &mut [Db], args: &[Bytes], step: usize) -> Frame {
    let nkeys = (args.len() - 1) / step;
    let parts = match split_keys(args, step, dbs.len()) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let replies = parts
        .into_iter()
        .map(|(shard, sub, pos)| (pos, execute(&mut dbs[shard], &sub, 0)))
        .collect();
    merge_replies(&name, nkeys, replies)
}

fn all_shards(dbs: &mut [Db], args: &[Bytes]) -> Frame {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let replies = dbs
        .iter_mut()
        .map(|db| (Vec::new(), execute(db, args, 0)))
        .collect();
    merge_replies(&name, 0, replies)
}

#[test]
fn end_to_end_merges() {
    let mut dbs = vec![Db::new(), Db::new(), Db::new()];
    let keys: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
    let mut mset = vec!["MSET".to_string()];
    for k in &keys {
        mset.push(k.clone());
        mset.push(format!("v-{k}"));
    }
    let mset: Vec<&str> = mset.iter().map(String::as_str).collect();
    assert_eq!(run_sharded(&mut dbs, &b(&mset), 2), Frame::ok());
    assert!(
        dbs.iter().all(|db| !db.is_empty()),
        "keys spread over shards"
    );
    assert_eq!(all_shards(&mut dbs, &b(&["DBSIZE"])), Frame::Integer(20));
    assert_eq!(
        enc(&run_sharded(
            &mut dbs,
            &b(&["MGET", "k3", "nope", "k17", "k3"]),
            1
        )),
        "*4\r\n$4\r\nv-k3\r\n$-1\r\n$5\r\nv-k17\r\n$4\r\nv-k3\r\n"
    );
    assert_eq!(
        run_sharded(&mut dbs, &b(&["EXISTS", "k1", "k1", "k2", "x"]), 1),
        Frame::Integer(3)
    );
    assert_eq!(
        run_sharded(&mut dbs, &b(&["DEL", "k1", "k2", "x"]), 1),
        Frame::Integer(2)
    );
    match all_shards(&mut dbs, &b(&["KEYS", "k1*"])) {
        Frame::Array(items) => assert_eq!(items.len(), 10), // k10..k19
        other => panic!("{other:?}"),
    }
    assert_eq!(all_shards(&mut dbs, &b(&["FLUSHALL"])), Frame::ok());
    assert_eq!(all_shards(&mut dbs, &b(&["DBSIZE"])), Frame::Integer(0));
}

#[test]
fn merge_errors_win() {
    let e = Frame::error("WRONGTYPE x");
    assert_eq!(merge_sum(vec![Frame::Integer(1), e.clone()]), e);
    assert_eq!(merge_ok(vec![Frame::ok(), e.clone()]), e);
    assert_eq!(merge_concat(vec![e.clone()]), e);
    assert_eq!(merge_mget(1, vec![(vec![0], e.clone())]), e);
}

/// One SCAN call over `dbs` (one per shard): `(next cursor, keys)`.
fn scan_call(dbs: &mut [Db], args: &[&str]) -> Result<(String, Vec<Frame>), Frame> {
    let (mut walk, mut step) = ScanWalk::start(&b(args), dbs.len())?;
    let mut asked = 0;
    loop {
        match step {
            ScanStep::Ask(shard, sub) => {
                asked += 1;
                assert!(asked <= dbs.len(), "one call asks each shard at most once");
                step = walk.step(execute(&mut dbs[shard], &sub, 0));
            }
            ScanStep::Reply(Frame::Array(items)) => {
                let [Frame::Bulk(next), Frame::Array(keys)] = &items[..] else {
                    panic!("shape {items:?}")
                };
                return Ok((String::from_utf8_lossy(next).into_owned(), keys.clone()));
            }
            ScanStep::Reply(other) => return Err(other),
        }
    }
}

fn sharded(n: usize, keys: usize) -> Vec<Db> {
    let mut dbs: Vec<Db> = (0..n).map(|_| Db::new()).collect();
    for i in 0..keys {
        let key = format!("key:{i}");
        let shard = owner_shard(key.as_bytes(), n);
        execute(&mut dbs[shard], &b(&["SET", &key, "v"]), 0);
    }
    dbs
}

#[test]
fn sharded_scan_visits_every_key_once() {
    let mut dbs = sharded(4, 200);
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    for _ in 0..1000 {
        let (next, keys) = scan_call(&mut dbs, &["SCAN", &cursor, "COUNT", "9"]).expect("reply");
        assert!(keys.len() >= 9 || next == "0", "{} keys", keys.len());
        seen.extend(keys);
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(cursor, "0");
    seen.sort_by_key(|f| format!("{f:?}"));
    seen.dedup();
    assert_eq!(seen.len(), 200);
}

#[test]
fn small_database_is_one_call() {
    let mut dbs = sharded(4, 30);
    let (next, keys) = scan_call(&mut dbs, &["SCAN", "0", "COUNT", "100"]).expect("reply");
    assert_eq!((next.as_str(), keys.len()), ("0", 30));
    // The filters do not shorten the walk: COUNT counts the keys examined.
    let (next, keys) =
        scan_call(&mut dbs, &["SCAN", "0", "MATCH", "key:1*", "COUNT", "100"]).expect("reply");
    assert_eq!((next.as_str(), keys.len()), ("0", 11));
    let (next, keys) = scan_call(&mut dbs, &["SCAN", "0", "TYPE", "set"]).expect("reply");
    assert_ne!(next, "0", "30 keys examined 10 at a time");
    assert!(keys.is_empty());
}

#[test]
fn scan_walk_edges() {
    let mut dbs = sharded(2, 0);
    assert_eq!(
        scan_call(&mut dbs, &["SCAN", "x"]),
        Err(Frame::error("ERR invalid cursor"))
    );
    assert_eq!(
        scan_call(&mut dbs, &["SCAN", "0", "COUNT"]),
        Err(Frame::error("ERR syntax error"))
    );
    assert_eq!(
        scan_call(&mut dbs, &["SCAN", "0", "COUNT", "x"]),
        Err(Frame::error("ERR value is not an integer or out of range"))
    );
    let done = Frame::Array(vec![Frame::bulk(b"0"), Frame::Array(Vec::new())]);
    assert_eq!(
        ScanWalk::start(&b(&["SCAN", &(5u64 << 48).to_string()]), 2).map(|_| ()),
        Err(done)
    );
    let (_, step) = ScanWalk::start(
        &b(&[
            "SCAN",
            &((1u64 << 48) | 77).to_string(),
            "MATCH",
            "a*",
            "COUNT",
            "5",
        ]),
        2,
    )
    .expect("started");
    assert_eq!(
        step,
        ScanStep::Ask(
            1,
            b(&["SCAN", "77", "MATCH", "a*", "COUNT", "5", "COUNT", "5"])
        )
    );
    let (mut walk, _) = ScanWalk::start(&b(&["SCAN", "0"]), 2).expect("started");
    let err = Frame::error("ERR syntax error");
    assert_eq!(walk.step(err.clone()), ScanStep::Reply(err));
    // Shard 0 done after 4 of 10 keys: shard 1 is asked for the 6 left.
    let (mut walk, _) = ScanWalk::start(&b(&["SCAN", "0"]), 2).expect("started");
    let local_done = Frame::Array(vec![
        Frame::bulk(b"0"),
        Frame::Array(Vec::new()),
        Frame::Integer(4),
    ]);
    assert_eq!(
        walk.step(local_done),
        ScanStep::Ask(1, b(&["SCAN", "0", "COUNT", "6"]))
    );
    // Shard 0 done after all 10: the call ends with the cursor of shard 1.
    let (mut walk, _) = ScanWalk::start(&b(&["SCAN", "0"]), 2).expect("started");
    let local_done = Frame::Array(vec![
        Frame::bulk(b"0"),
        Frame::Array(Vec::new()),
        Frame::Integer(10),
    ]);
    assert_eq!(
        walk.step(local_done),
        ScanStep::Reply(Frame::Array(vec![
            Frame::Bulk(Bytes::from((1u64 << 48).to_string())),
            Frame::Array(Vec::new())
        ]))
    );
}
