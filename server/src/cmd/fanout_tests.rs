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

#[test]
fn sharded_scan_visits_every_key_once() {
    let mut dbs = [Db::new(), Db::new(), Db::new(), Db::new()];
    for i in 0..200 {
        let key = format!("key:{i}");
        let shard = owner_shard(key.as_bytes(), dbs.len());
        execute(&mut dbs[shard], &b(&["SET", &key, "v"]), 0);
    }
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    for _ in 0..1000 {
        let (shard, sub) = match scan_route(&b(&["SCAN", &cursor, "COUNT", "9"]), dbs.len()) {
            Ok(r) => r,
            Err(e) => panic!("{e:?}"),
        };
        let reply = scan_finish(execute(&mut dbs[shard], &sub, 0), shard, dbs.len());
        let Frame::Array(items) = reply else {
            panic!("shape")
        };
        let [Frame::Bulk(next), Frame::Array(keys)] = &items[..] else {
            panic!("shape")
        };
        seen.extend(keys.iter().cloned());
        cursor = String::from_utf8_lossy(next).into_owned();
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
fn scan_route_edges() {
    assert_eq!(
        scan_route(&b(&["SCAN", "x"]), 2),
        Err(Frame::error("ERR invalid cursor"))
    );
    let done = Frame::Array(vec![Frame::bulk(b"0"), Frame::Array(Vec::new())]);
    assert_eq!(
        scan_route(&b(&["SCAN", &(5u64 << 48).to_string()]), 2),
        Err(done)
    );
    let (shard, sub) = scan_route(
        &b(&["SCAN", &((1u64 << 48) | 77).to_string(), "MATCH", "a*"]),
        2,
    )
    .unwrap_or_default();
    assert_eq!((shard, sub), (1, b(&["SCAN", "77", "MATCH", "a*"])));
    let err = Frame::error("ERR syntax error");
    assert_eq!(scan_finish(err.clone(), 0, 2), err);
    let local_done = Frame::Array(vec![Frame::bulk(b"0"), Frame::Array(Vec::new())]);
    assert_eq!(
        scan_finish(local_done, 0, 2),
        Frame::Array(vec![
            Frame::Bulk(Bytes::from((1u64 << 48).to_string())),
            Frame::Array(Vec::new())
        ])
    );
}
