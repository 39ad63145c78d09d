//! Databases in the log: SELECT records on the way in, SELECT on replay (in and out of
//! transactions), and a rewrite's dump racing SWAPDB / FLUSHDB.

use std::cell::Cell;

use bytes::Bytes;

use super::record::{decode, encode};
use super::replay::{apply, Scanner};
use super::rewrite::dump_step;
use super::writer::select_record;
use crate::cmd::databases::execute_in;
use crate::keyspace::Db;

fn args(words: &[&str]) -> Vec<Bytes> {
    words.iter().map(|w| Bytes::from(w.to_string())).collect()
}

fn dbs(n: usize) -> Vec<Db> {
    (0..n).map(|_| Db::new()).collect()
}

/// Every key of every database, sorted: (db, key, GET reply).
fn state(dbs: &mut [Db]) -> Vec<(usize, Bytes, String)> {
    let mut out = Vec::new();
    for index in 0..dbs.len() {
        for key in dbs[index].keys(b"*", 0) {
            let value = execute_in(dbs, index, &[Bytes::from("GET"), key.clone()], 0);
            out.push((index, key, format!("{value:?}")));
        }
    }
    out.sort();
    out
}

/// Replays `log` (whole records) into fresh databases, from database 0.
fn replay(log: &[u8], n: usize) -> Result<Vec<Db>, String> {
    let mut dbs = dbs(n);
    let mut selected = 0;
    let mut scanner = Scanner::default();
    let used = scanner
        .feed(log, 0, &mut |commands| {
            apply(&mut dbs, &mut selected, commands)
        })
        .map_err(|fault| format!("{}: {}", fault.offset, fault.message))?;
    assert_eq!(used, log.len(), "whole records");
    Ok(dbs)
}

#[test]
fn a_select_precedes_only_a_change_of_database_and_follows_a_reset() {
    // Appending to a file that holds records: the database is unknown.
    let selected = Cell::new(None);
    let mut out = Vec::new();
    assert_eq!(select_record(&selected, &mut out, 0), 1, "unknown at start");
    assert_eq!(select_record(&selected, &mut out, 0), 0);
    assert_eq!(select_record(&selected, &mut out, 12), 1);
    assert_eq!(select_record(&selected, &mut out, 12), 0);
    selected.set(Some(0)); // a rotation: the new file is replayed from database 0
    assert_eq!(select_record(&selected, &mut out, 12), 1);
    assert_eq!(select_record(&selected, &mut out, 0), 1);
    let mut expected = Vec::new();
    encode(&mut expected, &[&b"SELECT"[..], b"0"]);
    encode(&mut expected, &[&b"SELECT"[..], b"12"]);
    encode(&mut expected, &[&b"SELECT"[..], b"12"]);
    encode(&mut expected, &[&b"SELECT"[..], b"0"]);
    assert_eq!(out, expected);
}

#[test]
fn replay_follows_select_records_in_and_out_of_transactions() {
    let mut log = Vec::new();
    encode(&mut log, &[&b"SET"[..], b"k", b"zero"]);
    encode(&mut log, &[&b"SELECT"[..], b"3"]);
    encode(&mut log, &[&b"SET"[..], b"k", b"three"]);
    encode(&mut log, &[&b"MULTI"[..]]);
    encode(&mut log, &[&b"SELECT"[..], b"5"]);
    encode(&mut log, &[&b"SET"[..], b"k", b"five"]);
    encode(&mut log, &[&b"EXEC"[..]]);
    encode(&mut log, &[&b"SET"[..], b"j", b"five"]);
    encode(&mut log, &[&b"MOVE"[..], b"j", b"6"]);
    encode(&mut log, &[&b"SWAPDB"[..], b"0", b"7"]);
    let mut dbs = replay(&log, 8).unwrap();
    let get = |dbs: &mut [Db], db: usize, key: &str| {
        format!("{:?}", execute_in(dbs, db, &args(&["GET", key]), 0))
    };
    assert_eq!(get(&mut dbs, 7, "k"), r#"Bulk(b"zero")"#);
    assert_eq!(get(&mut dbs, 0, "k"), "Null");
    assert_eq!(get(&mut dbs, 3, "k"), r#"Bulk(b"three")"#);
    assert_eq!(get(&mut dbs, 5, "k"), r#"Bulk(b"five")"#);
    assert_eq!(get(&mut dbs, 5, "j"), "Null");
    assert_eq!(get(&mut dbs, 6, "j"), r#"Bulk(b"five")"#);
}

#[test]
fn a_select_beyond_the_databases_is_a_fault_naming_the_option_and_applies_nothing() {
    let mut log = Vec::new();
    encode(&mut log, &[&b"SET"[..], b"k", b"v"]);
    let at = log.len();
    encode(&mut log, &[&b"MULTI"[..]]);
    encode(&mut log, &[&b"SET"[..], b"before", b"v"]);
    encode(&mut log, &[&b"SELECT"[..], b"16"]);
    encode(&mut log, &[&b"EXEC"[..]]);
    let err = replay(&log, 16).expect_err("a fault");
    assert!(err.starts_with(&format!("{at}: SELECT 16")), "{err}");
    assert!(err.contains("--databases 16"), "{err}");
    // The same log with more databases replays.
    assert_eq!(state(&mut replay(&log, 17).unwrap()).len(), 2);
    // And a transaction's bad SELECT leaves no trace of the commands before it.
    let mut dbs = dbs(2);
    let mut selected = 0;
    let txn = [args(&["SET", "x", "1"]), args(&["SELECT", "2"])];
    assert!(apply(&mut dbs, &mut selected, &txn).is_err());
    assert!(dbs.iter().all(Db::is_empty));
}

/// A rewrite's dump of three databases with a SWAPDB, writes and a FLUSHDB in the middle: the
/// base (each label under its SELECT) plus the log after the switch point replays to the
/// live state.
#[test]
fn a_dump_racing_swapdb_and_flushdb_replays_to_the_live_state() {
    for flush in [false, true] {
        let mut live = dbs(3);
        for (db, prefix) in [(0, "a"), (1, "b"), (2, "c")] {
            for i in 0..100 {
                let key = format!("{prefix}{i}");
                execute_in(&mut live, db, &args(&["SET", &key, prefix]), 0);
            }
        }
        for (index, db) in live.iter_mut().enumerate() {
            db.start_snapshot(index);
        }
        let mut base: Vec<Vec<u8>> = vec![Vec::new(); 3];
        // Part of database 0's dump.
        let (bytes, done) = dump_step(&mut live, 0, 30).unwrap();
        assert!(!done);
        base[0].extend(bytes);
        // The log after the switch point, each record as the shard logs it.
        let mut after = Vec::new();
        let mut run = |live: &mut Vec<Db>, db: usize, words: &[&str]| {
            encode(&mut after, &[&b"SELECT"[..], db.to_string().as_bytes()]);
            let command = args(words);
            encode(&mut after, &command);
            execute_in(live, db, &command, 0);
        };
        run(&mut live, 0, &["SWAPDB", "0", "1"]);
        run(&mut live, 0, &["SET", "b1", "changed"]);
        run(&mut live, 1, &["DEL", "a99"]);
        run(&mut live, 1, &["SET", "a0", "changed"]);
        run(&mut live, 2, &["MOVE", "c5", "1"]);
        run(&mut live, 0, &["SWAPDB", "2", "0"]);
        if flush {
            run(&mut live, 2, &["FLUSHDB"]);
            run(&mut live, 2, &["SET", "after-flush", "1"]);
        }
        for (label, out) in base.iter_mut().enumerate() {
            loop {
                let (bytes, done) = dump_step(&mut live, label, 7).unwrap();
                out.extend(bytes);
                if done {
                    break;
                }
            }
        }
        let mut log = Vec::new();
        for (label, records) in base.iter().enumerate() {
            if !records.is_empty() {
                encode(&mut log, &[&b"SELECT"[..], label.to_string().as_bytes()]);
                log.extend(records);
            }
        }
        let base_only = replay(&log, 3).unwrap();
        assert_eq!(
            base_only.iter().map(Db::len).sum::<usize>(),
            if flush { 200 } else { 300 },
            "the base holds the state at the switch point (minus a flushed dump)"
        );
        log.extend(after);
        let mut replayed = replay(&log, 3).unwrap();
        assert_eq!(state(&mut replayed), state(&mut live), "flush: {flush}");
        // Nothing decodes oddly: every base record is a whole command.
        let mut pos = 0;
        while pos < log.len() {
            pos += decode(&log[pos..]).unwrap().1;
        }
    }
}
