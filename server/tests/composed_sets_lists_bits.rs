//! Set algebra (SINTER … SINTERCARD, SMOVE), list moves (LMOVE, RPOPLPUSH, LMPOP) and BITOP
//! through the real binary with two shards, keys on both: replies as Redis 7.0.15 gives them,
//! the cross-shard compositions inside and outside MULTI/EXEC, and a restart that replays the
//! append-only logs to the same values.

mod common;

use common::{key_on, login_plain, persistence_field, wait_for, RawClient, Server};

const SMP2: &[&str] = &["--tls", "off", "--smp", "2", "--appendfsync", "always"];
const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

/// Sends a space-separated command; the reply as text.
fn req(c: &mut RawClient, line: &str) -> String {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    String::from_utf8_lossy(&c.request(&args)).into_owned()
}

/// Keys for the test: `(name on shard 0, name on shard 1)` per prefix.
struct Keys {
    a0: String,
    b1: String,
    inter1: String,
    union0: String,
    diff1: String,
    l0: String,
    l1: String,
    s0: String,
    s1: String,
    bits1: String,
    none0: String,
}

fn keys() -> Keys {
    Keys {
        a0: key_on(0, "set-a"),
        b1: key_on(1, "set-b"),
        inter1: key_on(1, "inter"),
        union0: key_on(0, "union"),
        diff1: key_on(1, "diff"),
        l0: key_on(0, "list"),
        l1: key_on(1, "list"),
        s0: key_on(0, "str"),
        s1: key_on(1, "str"),
        bits1: key_on(1, "bits"),
        none0: key_on(0, "none"),
    }
}

/// The values the compositions leave, read back key by key (order-independent for sets).
fn state(c: &mut RawClient, k: &Keys) -> Vec<String> {
    let mut out = Vec::new();
    for set in [&k.a0, &k.b1, &k.inter1, &k.union0, &k.diff1] {
        out.push(req(c, &format!("SCARD {set}")));
        out.push(req(c, &format!("SMISMEMBER {set} 1 2 3 4 x y")));
    }
    for list in [&k.l0, &k.l1] {
        out.push(req(c, &format!("LRANGE {list} 0 -1")));
    }
    out.push(req(c, &format!("GET {}", k.bits1)));
    out.push(req(c, &format!("TTL {}", k.union0)));
    out
}

#[test]
fn compositions_across_shards_and_replay() {
    let server = Server::start(SMP2);
    let mut c = login_plain(&server);
    let k = keys();
    let (a0, b1) = (&k.a0, &k.b1);
    assert_eq!(req(&mut c, &format!("SADD {a0} 1 2 3 x")), ":4\r\n");
    assert_eq!(req(&mut c, &format!("SADD {b1} 2 3 4 y")), ":4\r\n");

    // Read forms.
    assert_eq!(req(&mut c, &format!("SINTERCARD 2 {a0} {b1}")), ":2\r\n");
    assert_eq!(
        req(&mut c, &format!("SINTERCARD 2 {a0} {b1} LIMIT 1")),
        ":1\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("SDIFF {a0} {b1} {}", k.none0)).len(),
        "*2\r\n$1\r\n1\r\n$1\r\nx\r\n".len()
    );
    assert_eq!(req(&mut c, &format!("SINTER {a0} {}", k.none0)), "*0\r\n");
    assert_eq!(
        req(&mut c, &format!("RPUSH {} z", k.l1)),
        ":1\r\n",
        "a list to make WRONGTYPE"
    );
    assert_eq!(req(&mut c, &format!("SUNION {a0} {}", k.l1)), WRONGTYPE);
    assert_eq!(req(&mut c, &format!("DEL {}", k.l1)), ":1\r\n");

    // Store forms: the destination on either shard, an old TTL dropped.
    assert_eq!(
        req(&mut c, &format!("SINTERSTORE {} {a0} {b1}", k.inter1)),
        ":2\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("SET {} old EX 100", k.union0)),
        "+OK\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("SUNIONSTORE {} {a0} {b1}", k.union0)),
        ":6\r\n"
    );
    assert_eq!(req(&mut c, &format!("TTL {}", k.union0)), ":-1\r\n");
    assert_eq!(
        req(&mut c, &format!("SDIFFSTORE {} {b1} {a0}", k.diff1)),
        ":2\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("SMISMEMBER {} 4 y 2", k.diff1)),
        "*3\r\n:1\r\n:1\r\n:0\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("SINTERSTORE {} {a0} {}", k.diff1, k.none0)),
        ":0\r\n"
    );
    assert_eq!(req(&mut c, &format!("EXISTS {}", k.diff1)), ":0\r\n");
    assert_eq!(
        req(&mut c, &format!("SDIFFSTORE {} {b1} {a0}", k.diff1)),
        ":2\r\n"
    );

    // SMOVE: a new member, one the destination holds, a missing one; the source keeps its TTL.
    assert_eq!(req(&mut c, &format!("PEXPIRE {a0} 1000000")), ":1\r\n");
    assert_eq!(req(&mut c, &format!("SMOVE {a0} {b1} 1")), ":1\r\n");
    assert_eq!(req(&mut c, &format!("SMOVE {a0} {b1} 2")), ":1\r\n");
    assert_eq!(req(&mut c, &format!("SMOVE {a0} {b1} nope")), ":0\r\n");
    assert_eq!(
        req(&mut c, &format!("SMISMEMBER {a0} 1 2 3 x")),
        "*4\r\n:0\r\n:0\r\n:1\r\n:1\r\n"
    );
    assert_eq!(req(&mut c, &format!("SCARD {b1}")), ":5\r\n");
    assert!(req(&mut c, &format!("PTTL {a0}")).starts_with(":9"));

    // List moves.
    let (l0, l1) = (&k.l0, &k.l1);
    assert_eq!(req(&mut c, &format!("RPUSH {l0} a b c d e")), ":5\r\n");
    assert_eq!(
        req(&mut c, &format!("LMOVE {l0} {l1} LEFT RIGHT")),
        "$1\r\na\r\n"
    );
    assert_eq!(req(&mut c, &format!("RPOPLPUSH {l0} {l1}")), "$1\r\ne\r\n");
    assert_eq!(
        req(&mut c, &format!("LMOVE {l1} {l0} RIGHT LEFT")),
        "$1\r\na\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("LMOVE {} {l1} LEFT LEFT", k.none0)),
        "$-1\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("LMPOP 2 {} {l0} RIGHT COUNT 2", k.none0)),
        format!(
            "*2\r\n${}\r\n{l0}\r\n*2\r\n$1\r\nd\r\n$1\r\nc\r\n",
            l0.len()
        )
    );
    assert_eq!(
        req(&mut c, &format!("LMPOP 2 {} {} LEFT", k.none0, k.diff1)),
        WRONGTYPE
    );
    assert_eq!(
        req(&mut c, &format!("LMOVE {l0} {a0} LEFT LEFT")),
        WRONGTYPE
    );

    // BITOP: sources on both shards, the destination on shard 1.
    assert_eq!(req(&mut c, &format!("SET {} abc", k.s0)), "+OK\r\n");
    assert_eq!(req(&mut c, &format!("SET {} AB", k.s1)), "+OK\r\n");
    assert_eq!(
        req(&mut c, &format!("BITOP XOR {} {} {}", k.bits1, k.s0, k.s1)),
        ":3\r\n"
    );
    assert_eq!(req(&mut c, &format!("GET {}", k.bits1)), "$3\r\n  c\r\n");
    assert_eq!(
        req(&mut c, &format!("BITOP NOT {} {}", k.bits1, k.s0)),
        ":3\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("BITOP OR {} {} {}", k.bits1, k.s0, k.s1)),
        ":3\r\n"
    );
    assert_eq!(
        req(&mut c, &format!("BITOP OR {} {} {l0}", k.bits1, k.s0)),
        WRONGTYPE
    );

    // Inside MULTI/EXEC.
    assert_eq!(req(&mut c, "MULTI"), "+OK\r\n");
    assert_eq!(req(&mut c, &format!("SMOVE {b1} {a0} y")), "+QUEUED\r\n");
    assert_eq!(req(&mut c, &format!("RPOPLPUSH {l1} {l0}")), "+QUEUED\r\n");
    assert_eq!(
        req(&mut c, &format!("SINTERCARD 2 {a0} {b1}")),
        "+QUEUED\r\n"
    );
    assert_eq!(req(&mut c, "EXEC"), "*3\r\n:1\r\n$1\r\ne\r\n:1\r\n");

    let before = state(&mut c, &k);
    assert_eq!(
        before[0..2],
        [
            ":3\r\n".to_string(),
            "*6\r\n:0\r\n:0\r\n:1\r\n:0\r\n:1\r\n:1\r\n".to_string()
        ]
    );
    assert_eq!(before[10], "*3\r\n$1\r\ne\r\n$1\r\na\r\n$1\r\nb\r\n");
    assert_eq!(before[11], "*0\r\n");
    assert_eq!(before[12], "$3\r\nabc\r\n");
    let password = server.password.clone();
    let dir = server.kill9();
    let server = Server::restart_in(dir, SMP2, &password);
    let mut c = login_plain(&server);
    assert_eq!(state(&mut c, &k), before);
    assert!(req(&mut c, &format!("PTTL {a0}")).starts_with(":9"));
}

#[test]
fn redis_cli_over_tls_sees_the_compositions() {
    let server = Server::start(&["--smp", "2"]);
    let (a0, b1) = (key_on(0, "cli-a"), key_on(1, "cli-b"));
    assert_eq!(server.cli(&["SADD", &a0, "m", "n"]), "2");
    assert_eq!(server.cli(&["SADD", &b1, "n", "o"]), "2");
    assert_eq!(server.cli(&["SINTER", &a0, &b1]), "n");
    assert_eq!(server.cli(&["SMOVE", &a0, &b1, "m"]), "1");
    assert_eq!(server.cli(&["SINTERCARD", "2", &a0, &b1]), "1");
    let (l0, l1) = (key_on(0, "cli-l"), key_on(1, "cli-l"));
    assert_eq!(server.cli(&["RPUSH", &l0, "x", "y"]), "2");
    assert_eq!(server.cli(&["LMOVE", &l0, &l1, "RIGHT", "LEFT"]), "y");
    assert_eq!(
        server.cli(&["LMPOP", "2", &l1, &l0, "LEFT"]),
        format!("{l1}\ny")
    );
    let (s0, s1) = (key_on(0, "cli-s"), key_on(1, "cli-s"));
    assert_eq!(server.cli(&["SET", &s0, "ab"]), "OK");
    assert_eq!(server.cli(&["SET", &s1, "a"]), "OK");
    assert_eq!(server.cli(&["BITOP", "AND", &s1, &s0, &s1]), "2");
    assert_eq!(server.cli(&["BITCOUNT", &s1]), "3");
}

/// A move whose step is refused midway (`MISCONF`: shard 0's log cannot be written, shard
/// 1's can) loses no element and duplicates none: refused on the destination, nothing
/// changed; refused on the source after the destination was written, that write is undone.
#[test]
fn a_refused_step_neither_loses_nor_duplicates_a_moved_element() {
    use std::time::Duration;
    let args = &["--tls", "off", "--smp", "2", "--appendfsync", "everysec"];
    let server = Server::start_with_file_size_limit(args, 16 * 1024);
    let mut c = login_plain(&server);
    let (src0, dst0) = (key_on(0, "src"), key_on(0, "dst"));
    let (src1, dst1) = (key_on(1, "src"), key_on(1, "dst"));
    let (list0, list1) = (key_on(0, "list"), key_on(1, "list"));
    assert_eq!(req(&mut c, &format!("SADD {src0} m n")), ":2\r\n");
    assert_eq!(req(&mut c, &format!("SADD {src1} m n")), ":2\r\n");
    assert_eq!(req(&mut c, &format!("RPUSH {list0} a b")), ":2\r\n");
    assert_eq!(req(&mut c, &format!("RPUSH {list1} a b")), ":2\r\n");
    // Fill shard 0's log until its writes are refused.
    let value = "v".repeat(200);
    let shard0_keys = (0..)
        .map(|i| format!("fill{i}"))
        .filter(|k| shardline::keyspace::slot::owner_shard(k.as_bytes(), 2) == 0);
    let mut refused = false;
    for (i, key) in shard0_keys.take(2000).enumerate() {
        if req(&mut c, &format!("SET {key} {value}")) != "+OK\r\n" {
            refused = true;
            break;
        }
        if i % 20 == 19 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    assert!(refused, "shard 0 never refused a write");
    let misconf = "-MISCONF Errors writing to the AOF file: File too large (os error 27)\r\n";

    // Destination on shard 0: its step is refused first, nothing moved.
    assert_eq!(req(&mut c, &format!("SMOVE {src1} {dst0} m")), misconf);
    assert_eq!(
        req(&mut c, &format!("LMOVE {list1} {list0} LEFT RIGHT")),
        misconf
    );
    // Source on shard 0: the destination (shard 1) is written, the source's step refused,
    // and the destination's write undone.
    assert_eq!(req(&mut c, &format!("SMOVE {src0} {dst1} m")), misconf);
    assert_eq!(req(&mut c, &format!("RPOPLPUSH {list0} {list1}")), misconf);

    let members = |c: &mut RawClient, key: &str| req(c, &format!("SMISMEMBER {key} m n"));
    assert_eq!(members(&mut c, &src0), "*2\r\n:1\r\n:1\r\n");
    assert_eq!(members(&mut c, &src1), "*2\r\n:1\r\n:1\r\n");
    assert_eq!(req(&mut c, &format!("EXISTS {dst0} {dst1}")), ":0\r\n");
    let ab = "*2\r\n$1\r\na\r\n$1\r\nb\r\n";
    assert_eq!(req(&mut c, &format!("LRANGE {list0} 0 -1")), ab);
    assert_eq!(req(&mut c, &format!("LRANGE {list1} 0 -1")), ab);

    // Room again: the same move goes through, and a restart replays the same state.
    server.set_file_size_limit(libc::RLIM_INFINITY);
    let mut moved = String::new();
    for _ in 0..200 {
        moved = req(&mut c, &format!("SMOVE {src0} {dst1} m"));
        if moved == ":1\r\n" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(moved, ":1\r\n");
    // everysec: let the last second of records reach the log before the crash.
    wait_for(|| persistence_field(&mut c, "aof_last_write_status") == "ok");
    std::thread::sleep(Duration::from_millis(1500));
    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), args, &password);
    let mut c = login_plain(&server);
    assert_eq!(members(&mut c, &src0), "*2\r\n:0\r\n:1\r\n");
    assert_eq!(members(&mut c, &dst1), "*2\r\n:1\r\n:0\r\n");
    assert_eq!(req(&mut c, &format!("LRANGE {list0} 0 -1")), ab);
    assert_eq!(req(&mut c, &format!("LRANGE {list1} 0 -1")), ab);
    assert_eq!(req(&mut c, &format!("EXISTS {dst0}")), ":0\r\n");
}
