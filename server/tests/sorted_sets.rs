//! Sorted sets through the real binary and redis-cli over TLS, with `--smp 2` and keys on
//! both shards: the multi-key commands composed across shards (ZUNIONSTORE, ZINTER, ZDIFF,
//! ZRANGESTORE, ZMPOP, also inside MULTI/EXEC), and the append-only log replaying what they
//! wrote after a restart.

mod common;

use common::Server;
use shardline::keyspace::slot::owner_shard;

/// The first key `{prefix}{i}` owned by `shard` of 2.
fn key_on(prefix: &str, shard: usize) -> String {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .find(|key| owner_shard(key.as_bytes(), 2) == shard)
        .unwrap_or_default()
}

#[test]
fn multi_key_commands_compose_across_shards_and_replay_from_the_log() {
    let mut server = Server::start(&["--smp", "2", "--appendfsync", "always"]);
    let (a, b) = (key_on("za", 0), key_on("zb", 1));
    let (dst0, dst1) = (key_on("dst", 0), key_on("dst", 1));
    assert_eq!(server.cli(&["ZADD", &a, "1", "x", "2", "y", "3", "z"]), "3");
    assert_eq!(
        server.cli(&["ZADD", &b, "10", "y", "20", "z", "30", "w"]),
        "3"
    );
    assert_eq!(server.cli(&["TYPE", &a]), "zset");
    assert_eq!(server.cli(&["OBJECT", "ENCODING", &a]), "listpack");

    // Sources on shards 0 and 1, destination on each shard in turn.
    assert_eq!(
        server.cli(&["ZUNIONSTORE", &dst1, "2", &a, &b, "WEIGHTS", "1", "2"]),
        "4"
    );
    assert_eq!(
        server.cli(&["ZRANGE", &dst1, "0", "-1", "WITHSCORES"]),
        "x\n1\ny\n22\nz\n43\nw\n60"
    );
    assert_eq!(
        server.cli(&["ZINTER", "2", &a, &b, "AGGREGATE", "MAX", "WITHSCORES"]),
        "y\n10\nz\n20"
    );
    assert_eq!(server.cli(&["ZDIFF", "2", &a, &b]), "x");
    assert_eq!(server.cli(&["ZINTERCARD", "2", &a, &b, "LIMIT", "1"]), "1");
    assert_eq!(
        server.cli(&["ZRANGESTORE", &dst0, &b, "15", "+inf", "BYSCORE"]),
        "2"
    );
    assert_eq!(server.cli(&["ZRANGE", &dst0, "0", "-1"]), "z\nw");
    // An empty result deletes the destination.
    assert_eq!(server.cli(&["ZINTERSTORE", &dst0, "2", &a, "nosuch"]), "0");
    assert_eq!(server.cli(&["EXISTS", &dst0]), "0");
    // WRONGTYPE from a source on the other shard.
    let s = key_on("str", 1);
    server.cli(&["SET", &s, "v"]);
    assert_eq!(
        server.cli(&["ZUNION", "2", &a, &s]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    // ZMPOP walks the keys in order across shards.
    let missing = key_on("none", 0);
    assert_eq!(
        server.cli(&["ZMPOP", "2", &missing, &b, "MAX", "COUNT", "2"]),
        format!("{b}\nw\n30\nz\n20")
    );
    // Inside MULTI/EXEC.
    let script = format!("MULTI\nZUNIONSTORE {dst0} 2 {a} {b}\nZCARD {dst0}\nEXEC\n");
    let mut child = std::process::Command::new("redis-cli")
        .args(["--tls", "--cacert"])
        .arg(server.cert())
        .args(["-h", "127.0.0.1", "-p", &server.port(), "--user", "default"])
        .args(["--pass", &server.password, "--no-auth-warning"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("redis-cli");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(script.as_bytes()).expect("write");
    }
    let output = child.wait_with_output().expect("redis-cli output");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        "OK\nQUEUED\nQUEUED\n3\n3"
    );

    // Everything written above replays from the per-shard logs.
    let before: Vec<String> = [&a, &b, &dst0, &dst1]
        .iter()
        .map(|k| server.cli(&["ZRANGE", k, "0", "-1", "WITHSCORES"]))
        .collect();
    assert!(server.terminate().is_some_and(|status| status.success()));
    let password = server.password.clone();
    let server = Server::restart_in(
        server.kill9(),
        &["--smp", "2", "--appendfsync", "always"],
        &password,
    );
    let after: Vec<String> = [&a, &b, &dst0, &dst1]
        .iter()
        .map(|k| server.cli(&["ZRANGE", k, "0", "-1", "WITHSCORES"]))
        .collect();
    assert_eq!(after, before);
    assert_eq!(after[2], "x\n1\nz\n3\ny\n12");
}
