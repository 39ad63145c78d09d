//! Numbered databases (SELECT, `--databases`) on a 2-shard server with keys on both shards:
//! isolation, FLUSHDB / FLUSHALL / SWAPDB / MOVE, INFO keyspace, CLIENT INFO, RESET, SELECT in
//! MULTI, and every key back in its database after `kill -9`, a rewrite, or a restart with
//! another `--smp`.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{aof_path, login_plain, start_failure, wait_for, RawClient, Server};
use shardline::keyspace::slot::owner_shard;

const ARGS: &[&str] = &["--tls", "off", "--smp", "2", "--appendfsync", "always"];

/// Two keys owned by different shards of a 2-shard server: `(on shard 0, on shard 1)`.
fn keys_on_both_shards() -> (String, String) {
    let pick = |shard| {
        (0..)
            .map(|i| format!("key:{i}"))
            .find(|k| owner_shard(k.as_bytes(), 2) == shard)
            .expect("a key on that shard")
    };
    (pick(0), pick(1))
}

fn bulk(value: &str) -> Vec<u8> {
    format!("${}\r\n{value}\r\n", value.len()).into_bytes()
}

fn select(client: &mut RawClient, db: usize) {
    client.roundtrip(&[b"SELECT", db.to_string().as_bytes()], b"+OK\r\n");
}

/// The `db<N>:` lines of INFO keyspace.
fn keyspace_lines(client: &mut RawClient) -> Vec<String> {
    common::text(client.request(&[b"INFO", b"keyspace"]))
        .lines()
        .filter(|line| line.starts_with("db"))
        .map(str::to_string)
        .collect()
}

/// Writes in databases 0, 3 and 7 on both shards; `(database, key, value)` of each.
fn fill_databases(client: &mut RawClient) -> Vec<(usize, String, String)> {
    let (a, b) = keys_on_both_shards();
    let mut written = Vec::new();
    for db in [0, 3, 7] {
        select(client, db);
        for key in [&a, &b] {
            let value = format!("{key} in db {db}");
            client.roundtrip(&[b"SET", key.as_bytes(), value.as_bytes()], b"+OK\r\n");
            written.push((db, key.clone(), value));
        }
        let list = format!("list:{db}");
        client.roundtrip(&[b"RPUSH", list.as_bytes(), b"x", b"y"], b":2\r\n");
    }
    written
}

/// Every key of [`fill_databases`] is in its database, and each database holds only those.
fn check_databases(client: &mut RawClient, written: &[(usize, String, String)], what: &str) {
    for &(db, ref key, ref value) in written {
        select(client, db);
        assert_eq!(
            common::text(client.request(&[b"GET", key.as_bytes()])),
            common::text(bulk(value)),
            "{what}: {key} in db {db}"
        );
    }
    for db in [0, 3, 7] {
        select(client, db);
        client.roundtrip(&[b"DBSIZE"], b":3\r\n");
        let list = format!("list:{db}");
        client.roundtrip(
            &[b"LRANGE", list.as_bytes(), b"0", b"-1"],
            b"*2\r\n$1\r\nx\r\n$1\r\ny\r\n",
        );
    }
    for db in [1, 2, 15] {
        select(client, db);
        client.roundtrip(&[b"DBSIZE"], b":0\r\n");
    }
}

#[test]
fn each_database_is_its_own_keyspace_on_every_shard() {
    let server = Server::start(&["--tls", "off", "--smp", "2"]);
    let mut c = login_plain(&server);
    let (a, b) = keys_on_both_shards();
    for key in [&a, &b] {
        c.roundtrip(&[b"SET", key.as_bytes(), b"zero"], b"+OK\r\n");
    }
    select(&mut c, 5);
    for key in [&a, &b] {
        c.roundtrip(&[b"GET", key.as_bytes()], b"$-1\r\n");
        c.roundtrip(
            &[b"SET", key.as_bytes(), b"five", b"EX", b"1000"],
            b"+OK\r\n",
        );
        c.roundtrip(&[b"GET", key.as_bytes()], b"$4\r\nfive\r\n");
    }
    c.roundtrip(&[b"SET", b"only5", b"v"], b"+OK\r\n");
    c.roundtrip(&[b"DBSIZE"], b":3\r\n");
    let mut keys = common::text(c.request(&[b"KEYS", b"*"]));
    assert!(
        keys.starts_with("*3\r\n") && keys.contains("only5"),
        "{keys}"
    );
    // A whole SCAN of database 5 (over both shards) sees its three keys.
    let mut cursor = b"0".to_vec();
    let mut seen = 0;
    loop {
        let reply = c.request(&[b"SCAN", &cursor]);
        let body = common::text(reply);
        seen += body.matches("key:").count() + body.matches("only5").count();
        let next = body.lines().nth(2).expect("a cursor").to_string();
        if next == "0" {
            break;
        }
        cursor = next.into_bytes();
    }
    assert_eq!(seen, 3);
    assert_eq!(
        common::text(c.request(&[b"CLIENT", b"INFO"]))
            .split(' ')
            .find(|f| f.starts_with("db="))
            .expect("db= field"),
        "db=5"
    );
    select(&mut c, 0);
    for key in [&a, &b] {
        c.roundtrip(&[b"GET", key.as_bytes()], b"$4\r\nzero\r\n");
    }
    c.roundtrip(&[b"EXISTS", b"only5"], b":0\r\n");
    c.roundtrip(&[b"DBSIZE"], b":2\r\n");
    keys = common::text(c.request(&[b"KEYS", b"*"]));
    assert!(keys.starts_with("*2\r\n"), "{keys}");
    assert_eq!(
        keyspace_lines(&mut c),
        [
            "db0:keys=2,expires=0,avg_ttl=0",
            "db5:keys=3,expires=2,avg_ttl=0"
        ]
    );

    // SELECT errors (Redis 7.0 texts).
    c.roundtrip(&[b"SELECT", b"16"], b"-ERR DB index is out of range\r\n");
    c.roundtrip(&[b"SELECT", b"-1"], b"-ERR DB index is out of range\r\n");
    c.roundtrip(
        &[b"SELECT", b"x"],
        b"-ERR value is not an integer or out of range\r\n",
    );
    c.roundtrip(&[b"SELECT", b"15"], b"+OK\r\n");
    c.roundtrip(
        &[b"CONFIG", b"GET", b"databases"],
        b"*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n",
    );

    // HELLO keeps the database (Redis 7.0); RESET goes back to 0.
    select(&mut c, 5);
    let hello = [
        &b"HELLO"[..],
        b"2",
        b"AUTH",
        b"default",
        server.password.as_bytes(),
    ];
    c.request(&hello);
    c.roundtrip(&[b"GET", b"only5"], b"$1\r\nv\r\n");
    c.roundtrip(&[b"RESET"], b"+RESET\r\n");
    c.request(&hello);
    c.roundtrip(&[b"GET", b"only5"], b"$-1\r\n");
    c.roundtrip(&[b"GET", a.as_bytes()], b"$4\r\nzero\r\n");

    // Another connection is on database 0 whatever this one selected.
    select(&mut c, 5);
    let mut other = login_plain(&server);
    other.roundtrip(&[b"GET", b"only5"], b"$-1\r\n");
    other.roundtrip(&[b"DBSIZE"], b":2\r\n");
}

#[test]
fn flushdb_flushall_swapdb_and_move_act_on_the_right_databases() {
    let server = Server::start(&["--tls", "off", "--smp", "2", "--databases", "4"]);
    let mut c = login_plain(&server);
    let (a, b) = keys_on_both_shards();
    for db in 0..3 {
        select(&mut c, db);
        for key in [&a, &b] {
            let value = format!("v{db}");
            c.roundtrip(&[b"SET", key.as_bytes(), value.as_bytes()], b"+OK\r\n");
        }
    }
    c.roundtrip(&[b"SELECT", b"4"], b"-ERR DB index is out of range\r\n");
    // FLUSHDB clears database 2 only.
    c.roundtrip(&[b"FLUSHDB"], b"+OK\r\n");
    c.roundtrip(&[b"DBSIZE"], b":0\r\n");
    select(&mut c, 1);
    c.roundtrip(&[b"DBSIZE"], b":2\r\n");

    // SWAPDB on every shard.
    c.roundtrip(&[b"SWAPDB", b"0", b"1"], b"+OK\r\n");
    for key in [&a, &b] {
        c.roundtrip(&[b"GET", key.as_bytes()], b"$2\r\nv0\r\n");
    }
    select(&mut c, 0);
    for key in [&a, &b] {
        c.roundtrip(&[b"GET", key.as_bytes()], b"$2\r\nv1\r\n");
    }
    c.roundtrip(&[b"SWAPDB", b"x", b"1"], b"-ERR invalid first DB index\r\n");
    c.roundtrip(
        &[b"SWAPDB", b"1", b"y"],
        b"-ERR invalid second DB index\r\n",
    );
    c.roundtrip(
        &[b"SWAPDB", b"1", b"4"],
        b"-ERR DB index is out of range\r\n",
    );
    c.roundtrip(
        &[b"SWAPDB", b"1"],
        b"-ERR wrong number of arguments for 'swapdb' command\r\n",
    );

    // MOVE on each key's owner shard, with its deadline.
    c.roundtrip(
        &[b"SET", b"ttl", b"t", b"PXAT", b"4000000000000"],
        b"+OK\r\n",
    );
    c.roundtrip(&[b"MOVE", b"ttl", b"3"], b":1\r\n");
    c.roundtrip(&[b"EXISTS", b"ttl"], b":0\r\n");
    c.roundtrip(&[b"MOVE", b"ttl", b"3"], b":0\r\n");
    c.roundtrip(&[b"MOVE", a.as_bytes(), b"1"], b":0\r\n");
    c.roundtrip(
        &[b"MOVE", a.as_bytes(), b"0"],
        b"-ERR source and destination objects are the same\r\n",
    );
    c.roundtrip(
        &[b"MOVE", a.as_bytes(), b"9"],
        b"-ERR DB index is out of range\r\n",
    );
    c.roundtrip(
        &[b"MOVE", a.as_bytes(), b"one"],
        b"-ERR value is not an integer or out of range\r\n",
    );
    c.roundtrip(&[b"MOVE", b.as_bytes(), b"2"], b":1\r\n");
    select(&mut c, 3);
    c.roundtrip(&[b"PEXPIRETIME", b"ttl"], b":4000000000000\r\n");
    select(&mut c, 2);
    c.roundtrip(&[b"GET", b.as_bytes()], b"$2\r\nv1\r\n");
    assert_eq!(
        keyspace_lines(&mut c),
        [
            "db0:keys=1,expires=0,avg_ttl=0",
            "db1:keys=2,expires=0,avg_ttl=0",
            "db2:keys=1,expires=0,avg_ttl=0",
            "db3:keys=1,expires=1,avg_ttl=0"
        ]
    );
    let info = common::text(c.request(&[b"COMMAND", b"INFO", b"move", b"swapdb"]));
    assert!(
        info.contains("move\r\n:3\r\n") && info.contains("swapdb\r\n:3\r\n"),
        "{info}"
    );

    // FLUSHALL empties every database.
    c.roundtrip(&[b"FLUSHALL"], b"+OK\r\n");
    assert!(keyspace_lines(&mut c).is_empty());
}

#[test]
fn select_inside_multi_changes_the_database_for_what_follows() {
    let server = Server::start(&["--tls", "off", "--smp", "2"]);
    let mut c = login_plain(&server);
    let (a, b) = keys_on_both_shards();
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"SET", a.as_bytes(), b"in0"], b"+QUEUED\r\n");
    c.roundtrip(&[b"SELECT", b"6"], b"+QUEUED\r\n");
    c.roundtrip(&[b"SET", a.as_bytes(), b"in6"], b"+QUEUED\r\n");
    c.roundtrip(&[b"SET", b.as_bytes(), b"in6"], b"+QUEUED\r\n");
    c.roundtrip(&[b"SELECT", b"99"], b"+QUEUED\r\n");
    c.roundtrip(
        &[b"EXEC"],
        b"*5\r\n+OK\r\n+OK\r\n+OK\r\n+OK\r\n-ERR DB index is out of range\r\n",
    );
    // The session stays on database 6 after EXEC.
    c.roundtrip(&[b"GET", a.as_bytes()], b"$3\r\nin6\r\n");
    c.roundtrip(&[b"DBSIZE"], b":2\r\n");
    select(&mut c, 0);
    c.roundtrip(&[b"GET", a.as_bytes()], b"$3\r\nin0\r\n");
    c.roundtrip(&[b"EXISTS", b.as_bytes()], b":0\r\n");
}

#[test]
fn every_key_is_back_in_its_database_after_kill9() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    let written = fill_databases(&mut c);
    // SWAPDB and MOVE are logged too: swap 9 and 10, move a key from 10 to 11.
    select(&mut c, 9);
    c.roundtrip(&[b"SET", b"swapped", b"from9"], b"+OK\r\n");
    c.roundtrip(&[b"SET", b"moved", b"m", b"EX", b"1000"], b"+OK\r\n");
    c.roundtrip(&[b"SWAPDB", b"9", b"10"], b"+OK\r\n");
    select(&mut c, 10);
    c.roundtrip(&[b"MOVE", b"moved", b"11"], b":1\r\n");
    // A key that expires in database 3: its expiry is logged under database 3.
    select(&mut c, 3);
    c.roundtrip(&[b"SET", b"short", b"v", b"PX", b"100"], b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(300));
    wait_for(|| keyspace_lines(&mut c).contains(&"db3:keys=3,expires=0,avg_ttl=0".into()));
    // Database 12 flushed, database 13 kept.
    select(&mut c, 12);
    c.roundtrip(&[b"SET", b"flushed", b"v"], b"+OK\r\n");
    c.roundtrip(&[b"FLUSHDB"], b"+OK\r\n");
    let password = server.password.clone();

    let server = Server::restart_in(server.kill9(), ARGS, &password);
    let mut c = login_plain(&server);
    check_databases(&mut c, &written, "after kill -9");
    select(&mut c, 10);
    c.roundtrip(&[b"GET", b"swapped"], b"$5\r\nfrom9\r\n");
    c.roundtrip(&[b"DBSIZE"], b":1\r\n");
    select(&mut c, 11);
    c.roundtrip(&[b"GET", b"moved"], b"$1\r\nm\r\n");
    let ttl = common::text(c.request(&[b"TTL", b"moved"]));
    let ttl: i64 = ttl.trim_start_matches(':').trim().parse().unwrap();
    assert!(
        (900..=1000).contains(&ttl),
        "the deadline moved with the key: {ttl}"
    );
    select(&mut c, 3);
    c.roundtrip(&[b"EXISTS", b"short"], b":0\r\n");
    select(&mut c, 9);
    c.roundtrip(&[b"DBSIZE"], b":0\r\n");
    select(&mut c, 12);
    c.roundtrip(&[b"DBSIZE"], b":0\r\n");
}

#[test]
fn a_rewrite_keeps_every_database_and_the_log_after_it_names_its_database() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    let written = fill_databases(&mut c);
    // The last record before the rewrite is for database 7, like the first one after it.
    c.roundtrip(
        &[b"BGREWRITEAOF"],
        b"+Background append only file rewriting started\r\n",
    );
    wait_for(|| {
        let info = common::text(c.request(&[b"INFO", b"persistence"]));
        info.contains("aof_rewrites:2\r") && info.contains("aof_rewrite_in_progress:0\r")
    });
    let dir = server.dir.path().join("appendonlydir");
    for shard in 0..2 {
        let base = std::fs::read(dir.join(format!("shard-{shard}.base.1.aof"))).unwrap();
        let base = String::from_utf8_lossy(&base);
        for db in [0, 3, 7] {
            assert!(
                base.contains(&format!("SELECT\r\n$1\r\n{db}\r\n")),
                "shard {shard} base lacks SELECT {db}: {base:?}"
            );
        }
    }
    select(&mut c, 7);
    c.roundtrip(&[b"SET", b"after", b"rewrite"], b"+OK\r\n");
    c.roundtrip(&[b"DEL", b"after"], b":1\r\n");
    c.roundtrip(&[b"SET", b"after", b"rewrite"], b"+OK\r\n");
    let password = server.password.clone();

    let server = Server::restart_in(server.kill9(), ARGS, &password);
    let mut c = login_plain(&server);
    select(&mut c, 7);
    c.roundtrip(&[b"GET", b"after"], b"$7\r\nrewrite\r\n");
    c.roundtrip(&[b"DEL", b"after"], b":1\r\n");
    check_databases(&mut c, &written, "after a rewrite and kill -9");
}

#[test]
fn a_swapdb_during_a_rewrite_loses_and_resurrects_nothing() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    // Enough keys that dumping them takes many steps (256 keys each) across polls.
    for (db, prefix) in [(0, "a"), (1, "b")] {
        select(&mut c, db);
        common::mset_batches(
            &mut c,
            prefix,
            30,
            b"a value of a few dozen bytes, to make the dump longer",
        );
    }
    c.roundtrip(
        &[b"BGREWRITEAOF"],
        b"+Background append only file rewriting started\r\n",
    );
    wait_for(|| {
        (0..2).all(|s| {
            let path = server
                .dir
                .path()
                .join(format!("appendonlydir/shard-{s}.manifest"));
            std::fs::read_to_string(path)
                .unwrap_or_default()
                .contains("incr.1.aof")
        })
    });
    c.roundtrip(&[b"SWAPDB", b"0", b"1"], b"+OK\r\n");
    // Database 1 now holds the a-keys: change one, delete one, add one.
    c.roundtrip(&[b"SET", b"a0:0", b"changed"], b"+OK\r\n");
    c.roundtrip(&[b"DEL", b"a0:1"], b":1\r\n");
    c.roundtrip(&[b"SET", b"new", b"1"], b"+OK\r\n");
    wait_for(|| {
        let info = common::text(c.request(&[b"INFO", b"persistence"]));
        info.contains("aof_rewrites:2\r") && info.contains("aof_rewrite_in_progress:0\r")
    });
    let password = server.password.clone();

    let server = Server::restart_in(server.kill9(), ARGS, &password);
    let mut c = login_plain(&server);
    c.roundtrip(&[b"DBSIZE"], b":30000\r\n");
    c.roundtrip(&[b"EXISTS", b"a0:0", b"new"], b":0\r\n");
    c.roundtrip(&[b"EXISTS", b"b0:0", b"b29:999"], b":2\r\n");
    select(&mut c, 1);
    c.roundtrip(&[b"DBSIZE"], b":30000\r\n");
    c.roundtrip(&[b"GET", b"a0:0"], b"$7\r\nchanged\r\n");
    c.roundtrip(&[b"EXISTS", b"a0:1", b"b0:0"], b":0\r\n");
    c.roundtrip(&[b"EXISTS", b"new", b"a29:999"], b":2\r\n");
}

#[test]
fn a_restart_with_another_smp_keeps_every_database() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    let written = fill_databases(&mut c);
    let password = server.password.clone();
    let one = ["--tls", "off", "--smp", "1", "--appendfsync", "always"];
    let server = Server::restart_in(server.kill9(), &one, &password);
    let mut c = login_plain(&server);
    check_databases(&mut c, &written, "after --smp 2 → 1");
}

#[test]
fn a_select_beyond_databases_in_the_log_refuses_the_start() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    c.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    let password = server.password.clone();
    let dir = server.kill9();
    let log = aof_path(dir.path(), 0);
    let offset = std::fs::metadata(&log).unwrap().len();
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    // A key shard 0 owns, so that its log is the one to hold it.
    let (key, _) = keys_on_both_shards();
    let records = format!(
        "*2\r\n$6\r\nSELECT\r\n$2\r\n20\r\n*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$1\r\ny\r\n",
        key.len()
    );
    file.write_all(records.as_bytes()).unwrap();
    drop(file);
    let err = start_failure(dir.path(), ARGS);
    let at = format!("{}:{offset}:", log.display());
    assert!(err.contains(&at), "expected {at} in {err}");
    assert!(err.contains("--databases 16"), "{err}");
    // With enough databases the same log starts, and the key is in database 20.
    let mut args = ARGS.to_vec();
    args.extend(["--databases", "21"]);
    let server = Server::restart_in(dir, &args, &password);
    let mut c = login_plain(&server);
    c.roundtrip(&[b"GET", b"k"], b"$1\r\nv\r\n");
    select(&mut c, 20);
    c.roundtrip(&[b"GET", key.as_bytes()], b"$1\r\ny\r\n");
}
