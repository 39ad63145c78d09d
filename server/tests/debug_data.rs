//! DEBUG DIGEST, DIGEST-VALUE, OBJECT, RELOAD and LOADAOF through the binary, on two shards
//! with keys on both: the digest depends on the data only (not on insertion order, shard,
//! restart or shard count), and the reloads keep the data. Replies as redis-server 7.0.15's
//! where they are Redis's (empty digest, errors, OBJECT's fields).

mod common;

use common::{key_on, text, RawClient, Server};

const ARGS: &[&str] = &["--smp", "2", "--enable-debug-command"];

const ZEROS: &str = "0000000000000000000000000000000000000000";

fn digest(client: &mut RawClient) -> String {
    let reply = text(client.request(&[b"DEBUG", b"DIGEST"]));
    let hex = reply
        .strip_prefix('+')
        .and_then(|r| r.strip_suffix("\r\n"))
        .unwrap_or_else(|| panic!("not a status reply: {reply:?}"));
    assert_eq!(hex.len(), 40, "{hex}");
    assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{hex}");
    hex.to_owned()
}

fn run(client: &mut RawClient, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let reply = text(client.request(&args));
    assert!(!reply.starts_with('-'), "{args:?}: {reply}");
    reply
}

/// Keys of every type on both shards, one with a deadline, one in database 1; with
/// `reversed`, every key and every member goes in the other order.
fn fill(client: &mut RawClient, reversed: bool) {
    let order = |mut v: Vec<&'static str>| {
        if reversed {
            v.reverse();
        }
        v
    };
    // Groups of commands, one per key.
    let mut groups: Vec<Vec<Vec<String>>> = Vec::new();
    for shard in 0..2 {
        let k = |prefix: &str| key_on(shard, prefix);
        groups.push(vec![vec!["SET".into(), k("str"), format!("value{shard}")]]);
        groups.push(vec![vec![
            "RPUSH".into(),
            k("list"),
            "a".into(),
            "b".into(),
            "c".into(),
        ]]);
        let mut sadd = vec!["SADD".into(), k("set")];
        sadd.extend(
            order(vec!["x", "y", "z", "1", "2"])
                .into_iter()
                .map(String::from),
        );
        groups.push(vec![sadd]);
        let mut hset = vec!["HSET".into(), k("hash")];
        for f in order(vec!["f1", "f2", "f3"]) {
            hset.extend([f.to_owned(), format!("v-{f}")]);
        }
        groups.push(vec![hset]);
        let mut zadd = vec!["ZADD".into(), k("zset")];
        for m in order(vec!["m1", "m2", "m3"]) {
            zadd.extend([m[1..].to_owned(), m.to_owned()]);
        }
        groups.push(vec![zadd]);
        groups.push(vec![
            vec!["SET".into(), k("ttl"), "t".into()],
            vec!["PEXPIREAT".into(), k("ttl"), "4102444800000".into()],
        ]);
    }
    if reversed {
        groups.reverse();
    }
    for command in groups.iter().flatten() {
        let args: Vec<&str> = command.iter().map(String::as_str).collect();
        run(client, &args);
    }
    run(client, &["SELECT", "1"]);
    run(client, &["SET", "in-db-1", "v"]);
    run(client, &["SELECT", "0"]);
}

/// The empty dataset's digest is 40 zeros (as Redis); the same data inserted in other orders
/// gives the same digest; any change of a value, a TTL or a database gives another one, and
/// undoing it gives the first back.
#[test]
fn digest_depends_on_the_data_only() {
    let server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    client.roundtrip(&[b"DEBUG", b"DIGEST"], format!("+{ZEROS}\r\n").as_bytes());
    fill(&mut client, false);
    let first = digest(&mut client);
    assert_ne!(first, ZEROS);
    run(&mut client, &["FLUSHALL"]);
    client.roundtrip(&[b"DEBUG", b"DIGEST"], format!("+{ZEROS}\r\n").as_bytes());
    fill(&mut client, true);
    assert_eq!(digest(&mut client), first, "same data in another order");

    let (s0, s1) = (key_on(0, "str"), key_on(1, "set"));
    let ttl = key_on(1, "ttl");
    let changes: &[(&[&str], &[&str])] = &[
        (&["SET", &s0, "other"], &["SET", &s0, "value0"]),
        (&["SREM", &s1, "x"], &["SADD", &s1, "x"]),
        (
            &["PEXPIREAT", &ttl, "4102444800001"],
            &["PEXPIREAT", &ttl, "4102444800000"],
        ),
        (&["MOVE", &s0, "2"], &["SET", &s0, "value0"]),
        (&["SET", "new", "v"], &["DEL", "new"]),
    ];
    for (change, undo) in changes {
        run(&mut client, change);
        assert_ne!(digest(&mut client), first, "after {change:?}");
        run(&mut client, undo);
        if change[0] == "MOVE" {
            run(&mut client, &["SELECT", "2"]);
            run(&mut client, &["DEL", &s0]);
            run(&mut client, &["SELECT", "0"]);
        }
        assert_eq!(digest(&mut client), first, "after {undo:?}");
    }
}

/// DEBUG DIGEST-VALUE: one digest per key, 40 zeros for a missing key, equal for equal values
/// on either shard; no key: an empty array (as Redis).
#[test]
fn digest_value_per_key() {
    let server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    let (a, b) = (key_on(0, "a"), key_on(1, "b"));
    run(&mut client, &["SADD", &a, "1", "2", "x"]);
    run(&mut client, &["SADD", &b, "x", "2", "1"]);
    let reply = run(&mut client, &["DEBUG", "DIGEST-VALUE", &a, &b, "missing"]);
    let lines: Vec<&str> = reply.split("\r\n").collect();
    assert_eq!(lines[0], "*3", "{reply}");
    assert_eq!(lines[1], lines[2], "equal sets, one per shard");
    assert_ne!(lines[1], format!("+{ZEROS}"));
    assert_eq!(lines[3], format!("+{ZEROS}"));
    client.roundtrip(&[b"DEBUG", b"DIGEST-VALUE"], b"*0\r\n");
}

/// DEBUG OBJECT: Redis's status line with the key's encoding, the length of its RDB encoding
/// (as redis-server 7.0.15: `hello` 6, `12345` 3, set {a,b,c} 7, hash {f:v} 14, zset {a:1}
/// 13) and its idle time; `ERR no such key` for a missing key; no key: unknown subcommand.
#[test]
fn debug_object_fields() {
    let server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    let cases = [
        (key_on(0, "s"), vec!["SET", "hello"], "embstr", 6),
        (key_on(1, "n"), vec!["SET", "12345"], "int", 3),
        (key_on(0, "st"), vec!["SADD", "a", "b", "c"], "hashtable", 7),
        (key_on(1, "h"), vec!["HSET", "f", "v"], "listpack", 14),
        (key_on(0, "z"), vec!["ZADD", "1", "a"], "listpack", 13),
    ];
    for (key, command, encoding, length) in &cases {
        let mut args = vec![command[0], key.as_str()];
        args.extend(&command[1..]);
        run(&mut client, &args);
        let line = run(&mut client, &["DEBUG", "OBJECT", key]);
        let fields: Vec<&str> = line.trim_end().split(' ').collect();
        assert_eq!(fields.len(), 7, "{line}");
        assert_eq!(fields[0], "+Value");
        let address = fields[1].strip_prefix("at:0x").expect(&line);
        assert!(u64::from_str_radix(address, 16).is_ok(), "{line}");
        assert_eq!(fields[2], "refcount:1");
        assert_eq!(fields[3], format!("encoding:{encoding}"), "{line}");
        assert_eq!(fields[4], format!("serializedlength:{length}"), "{line}");
        let lru = fields[5].strip_prefix("lru:").expect(&line);
        assert!(lru.parse::<u32>().is_ok(), "{line}");
        assert_eq!(fields[6], "lru_seconds_idle:0", "{line}");
    }
    client.roundtrip(&[b"DEBUG", b"OBJECT", b"missing"], b"-ERR no such key\r\n");
    client.roundtrip(
        &[b"DEBUG", b"OBJECT"],
        b"-ERR unknown subcommand or wrong number of arguments for 'OBJECT'. Try DEBUG HELP.\r\n",
    );
}

/// The digest survives a restart (log replay) and a restart with another shard count.
#[test]
fn digest_survives_restart_and_smp_change() {
    let mut server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    fill(&mut client, false);
    let first = digest(&mut client);
    drop(client);
    assert!(server.terminate().is_some());
    let password = server.password.clone();
    let dir = server.kill9();
    let mut server = Server::restart_in(dir, ARGS, &password);
    let mut client = RawClient::authenticated(&server);
    assert_eq!(digest(&mut client), first, "after a restart");
    drop(client);
    assert!(server.terminate().is_some());
    let dir = server.kill9();
    let server = Server::restart_in(dir, &["--smp", "1", "--enable-debug-command"], &password);
    let mut client = RawClient::authenticated(&server);
    assert_eq!(digest(&mut client), first, "after a restart on one shard");
}

/// DEBUG RELOAD and LOADAOF keep the data (same digest, same values); RELOAD's options as
/// Redis's (others refused with Redis's error).
#[test]
fn reload_and_loadaof_keep_the_data() {
    let server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    fill(&mut client, false);
    let first = digest(&mut client);
    let list = key_on(1, "list");
    for command in [
        &["DEBUG", "RELOAD"][..],
        &["DEBUG", "LOADAOF"],
        &["DEBUG", "RELOAD", "NOSAVE"],
        &["DEBUG", "RELOAD", "NOFLUSH", "MERGE"],
        &["DEBUG", "RELOAD", "nosave", "noflush"],
    ] {
        assert_eq!(run(&mut client, command), "+OK\r\n", "{command:?}");
        assert_eq!(digest(&mut client), first, "after {command:?}");
        assert_eq!(
            run(&mut client, &["LRANGE", &list, "0", "-1"]),
            "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
        );
    }
    // A key written after the last reload is in the log too.
    run(&mut client, &["SET", "late", "v"]);
    let with_late = digest(&mut client);
    assert_eq!(run(&mut client, &["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(digest(&mut client), with_late);
    assert_eq!(run(&mut client, &["GET", "late"]), "$1\r\nv\r\n");
    for line in [
        "DB reloaded by DEBUG RELOAD",
        "Append Only File loaded by DEBUG LOADAOF",
    ] {
        let log = server.log_reaching(line);
        assert!(log.iter().any(|l| l.contains(line)), "{line}");
    }
    client.roundtrip(
        &[b"DEBUG", b"RELOAD", b"FAST"],
        b"-ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.\r\n",
    );
}

/// Without the append-only log: RELOAD round-trips every value through the DUMP/RESTORE
/// encoder (same digest); RELOAD NOSAVE and LOADAOF have nothing to load and say so.
#[test]
fn reload_without_the_log() {
    let server = Server::start(&["--smp", "2", "--enable-debug-command", "--appendonly", "no"]);
    let mut client = RawClient::authenticated(&server);
    fill(&mut client, false);
    let first = digest(&mut client);
    assert_eq!(run(&mut client, &["DEBUG", "RELOAD"]), "+OK\r\n");
    assert_eq!(digest(&mut client), first);
    client.roundtrip(
        &[b"DEBUG", b"LOADAOF"],
        b"-ERR DEBUG LOADAOF needs the append-only log (--appendonly yes): it is off\r\n",
    );
    client.roundtrip(
        &[b"DEBUG", b"RELOAD", b"NOSAVE"],
        b"-ERR DEBUG RELOAD NOSAVE needs the append-only log (--appendonly yes): there is \
          nothing on disk to load\r\n",
    );
    assert_eq!(digest(&mut client), first);
}

/// Writes on both shards while DEBUG LOADAOF and RELOAD run: none is lost or applied twice
/// (each reload runs between commands, as in Redis).
#[test]
fn reloads_between_concurrent_writes() {
    let server = Server::start(ARGS);
    let keys = [key_on(0, "counter"), key_on(1, "counter")];
    let writer = {
        let mut client = RawClient::authenticated(&server);
        let keys = keys.clone();
        std::thread::spawn(move || {
            for _ in 0..300 {
                for key in &keys {
                    let reply = text(client.request(&[b"INCR", key.as_bytes()]));
                    assert!(reply.starts_with(':'), "{reply}");
                }
            }
        })
    };
    let mut client = RawClient::authenticated(&server);
    for i in 0..6 {
        let command: &[&str] = if i % 2 == 0 {
            &["DEBUG", "LOADAOF"]
        } else {
            &["DEBUG", "RELOAD"]
        };
        assert_eq!(run(&mut client, command), "+OK\r\n");
    }
    writer.join().expect("writer");
    for key in &keys {
        assert_eq!(run(&mut client, &["GET", key]), "$3\r\n300\r\n", "{key}");
    }
}

/// Inside MULTI/EXEC the data subcommands run in the transaction (no wait for its own gates).
#[test]
fn debug_data_inside_exec() {
    let server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    fill(&mut client, false);
    let first = digest(&mut client);
    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    for command in [
        &[&b"DEBUG"[..], b"DIGEST"][..],
        &[b"DEBUG", b"LOADAOF"],
        &[b"DEBUG", b"RELOAD"],
        &[b"DEBUG", b"OBJECT", b"missing"],
    ] {
        client.roundtrip(command, b"+QUEUED\r\n");
    }
    let reply = text(client.request(&[b"EXEC"]));
    assert_eq!(
        reply,
        format!("*4\r\n+{first}\r\n+OK\r\n+OK\r\n-ERR no such key\r\n")
    );
    assert_eq!(digest(&mut client), first);
}
