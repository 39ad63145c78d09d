//! Server introspection on a 2-shard server, on real sockets: TIME, INFO sections and
//! figures, INFO commandstats / errorstats deltas and CONFIG RESETSTAT, CLIENT LIST / KILL /
//! PAUSE / REPLY across shards, COMMAND LIST FILTERBY / GETKEYS / subcommand entries.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::{info_field, login_plain, RawClient, Server};
use shardline::keyspace::slot::owner_shard;

const ARGS: &[&str] = &["--tls", "off", "--smp", "2"];

/// `(id, shard)` of `client`, from its CLIENT INFO line.
fn identity(client: &mut RawClient) -> (String, String) {
    let line = common::text(client.request(&[b"CLIENT", b"INFO"]));
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
            .to_string()
    };
    (field("id"), field("shard"))
}

/// A logged-in client served by shard `shard` (the kernel spreads connections over the
/// shards' listeners; a few tries find one on each).
fn client_on_shard(server: &Server, shard: &str) -> (RawClient, String) {
    for _ in 0..200 {
        let mut client = login_plain(server);
        let (id, on) = identity(&mut client);
        if on == shard {
            return (client, id);
        }
    }
    panic!("no connection landed on shard {shard} in 200 tries");
}

/// A key owned by shard `shard` of a 2-shard server.
fn key_on(shard: usize) -> String {
    (0..)
        .map(|i| format!("key:{i}"))
        .find(|k| owner_shard(k.as_bytes(), 2) == shard)
        .expect("a key on that shard")
}

#[test]
fn time_is_the_unix_clock_in_seconds_and_microseconds() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    let reply = common::text(c.request(&[b"TIME"]));
    let parts: Vec<&str> = reply.split("\r\n").collect();
    assert_eq!(parts[0], "*2", "{reply:?}");
    let seconds: u64 = parts[2].parse().expect("seconds");
    let micros: u64 = parts[4].parse().expect("microseconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    assert!(seconds.abs_diff(now) <= 5, "{seconds} vs {now}");
    assert!(micros < 1_000_000);
}

#[test]
fn info_sections_follow_redis_selection_rules() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    let headers = |c: &mut RawClient, args: &[&[u8]]| {
        common::text(c.request(args))
            .lines()
            .filter(|l| l.starts_with("# "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let default = [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "# Stats",
        "# Replication",
        "# CPU",
        "# Modules",
        "# Errorstats",
        "# Cluster",
        "# Keyspace",
    ];
    assert_eq!(headers(&mut c, &[b"INFO"]), default);
    assert_eq!(headers(&mut c, &[b"INFO", b"default"]), default);
    assert_eq!(headers(&mut c, &[b"INFO", b"cpu", b"default"]), default);
    let mut all = default.to_vec();
    all.insert(8, "# Commandstats");
    assert_eq!(headers(&mut c, &[b"INFO", b"all"]), all);
    assert_eq!(headers(&mut c, &[b"INFO", b"everything"]), all);
    assert_eq!(
        headers(&mut c, &[b"INFO", b"KEYSPACE", b"cpu", b"sentinel"]),
        ["# CPU", "# Keyspace"]
    );
    assert_eq!(common::text(c.request(&[b"INFO", b"nosuch"])), "$0\r\n\r\n");

    let info = common::text(c.request(&[b"INFO", b"everything"]));
    assert!(
        info_field(&info, "used_memory")
            .parse::<u64>()
            .expect("used_memory")
            > 0
    );
    assert!(
        info_field(&info, "used_memory_rss")
            .parse::<u64>()
            .expect("rss")
            > 0
    );
    assert_eq!(
        info_field(&info, "process_id"),
        server.child.id().to_string()
    );
    assert_eq!(info_field(&info, "tcp_port"), server.port());
    assert_eq!(info_field(&info, "role"), "master");
    assert_eq!(info_field(&info, "cluster_enabled"), "0");
    assert_eq!(info_field(&info, "connected_clients"), "1");
    assert!(
        info_field(&info, "used_cpu_user")
            .parse::<f64>()
            .expect("cpu")
            > 0.0
    );
}

#[test]
fn commandstats_and_errorstats_count_every_shard_and_reset() {
    let server = Server::start(ARGS);
    let mut a = login_plain(&server);
    let (mut b, _) = client_on_shard(&server, "1");
    a.roundtrip(&[b"CONFIG", b"RESETSTAT"], b"+OK\r\n");
    let (k0, k1) = (key_on(0), key_on(1));
    a.roundtrip(&[b"SET", k0.as_bytes(), b"v"], b"+OK\r\n");
    for _ in 0..3 {
        a.roundtrip(&[b"GET", k0.as_bytes()], b"$1\r\nv\r\n");
        b.roundtrip(&[b"GET", k1.as_bytes()], b"$-1\r\n");
    }
    a.roundtrip(
        &[b"GET"],
        b"-ERR wrong number of arguments for 'get' command\r\n",
    );
    b.roundtrip(
        &[b"LPUSH", k0.as_bytes(), b"x"],
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );
    b.send(&[b"NOSUCH"]);
    b.read_reply();

    let stats = common::text(a.request(&[b"INFO", b"commandstats"]));
    let calls = |name: &str| {
        let line = info_field(&stats, &format!("cmdstat_{name}"));
        line.split(',')
            .filter(|kv| !kv.starts_with("usec"))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(calls("get"), "calls=6,rejected_calls=1,failed_calls=0");
    assert_eq!(calls("lpush"), "calls=1,rejected_calls=0,failed_calls=1");
    assert_eq!(calls("set"), "calls=1,rejected_calls=0,failed_calls=0");
    assert_eq!(calls("config"), "calls=1,rejected_calls=0,failed_calls=0");

    let info = common::text(a.request(&[b"INFO", b"errorstats", b"stats"]));
    assert_eq!(info_field(&info, "errorstat_ERR"), "count=2");
    assert_eq!(info_field(&info, "errorstat_WRONGTYPE"), "count=1");
    assert_eq!(info_field(&info, "total_error_replies"), "3");
    assert_eq!(info_field(&info, "keyspace_hits"), "3");
    assert_eq!(info_field(&info, "keyspace_misses"), "3");
    // RESETSTAT, SET, 6 GETs, GET (arity), LPUSH, INFO commandstats and this INFO; an
    // unknown command is not one.
    assert_eq!(info_field(&info, "total_commands_processed"), "11");

    a.roundtrip(&[b"CONFIG", b"RESETSTAT"], b"+OK\r\n");
    let info = common::text(a.request(&[b"INFO", b"all"]));
    assert!(!info.contains("cmdstat_get"), "{info}");
    assert!(!info.contains("errorstat_"), "{info}");
    assert_eq!(info_field(&info, "total_error_replies"), "0");
    assert_eq!(info_field(&info, "keyspace_hits"), "0");
    assert_eq!(
        info_field(&info, "cmdstat_config").split(',').next(),
        Some("calls=1")
    );
}

#[test]
fn client_list_shows_every_shard_and_client_kill_closes_a_connection_on_another_shard() {
    let server = Server::start(ARGS);
    let (mut killer, killer_id) = client_on_shard(&server, "0");
    let (mut victim, victim_id) = client_on_shard(&server, "1");
    let (mut bystander, _) = client_on_shard(&server, "1");
    victim.roundtrip(&[b"CLIENT", b"SETNAME", b"victim"], b"+OK\r\n");
    victim.roundtrip(&[b"SELECT", b"3"], b"+OK\r\n");

    let list = common::text(killer.request(&[b"CLIENT", b"LIST"]));
    let lines: Vec<&str> = list.lines().skip(1).filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "{list}");
    let own = lines
        .iter()
        .find(|l| l.starts_with(&format!("id={killer_id} ")))
        .expect("own line");
    assert!(own.contains(" qbuf=26 "), "{own}");
    assert!(own.contains(" cmd=client|list "), "{own}");
    assert!(own.ends_with(" shard=0"), "{own}");
    let other = lines
        .iter()
        .find(|l| l.starts_with(&format!("id={victim_id} ")))
        .expect("victim line");
    assert!(other.contains(" name=victim "), "{other}");
    assert!(other.contains(" db=3 "), "{other}");
    assert!(other.contains(" cmd=select "), "{other}");
    assert!(other.contains(" flags=N "), "{other}");
    assert!(other.ends_with(" shard=1"), "{other}");

    let only = common::text(killer.request(&[b"CLIENT", b"LIST", b"ID", victim_id.as_bytes()]));
    assert_eq!(only.lines().filter(|l| l.starts_with("id=")).count(), 1);
    assert_eq!(
        common::text(killer.request(&[b"CLIENT", b"LIST", b"TYPE", b"pubsub"])),
        "$0\r\n\r\n"
    );

    killer.roundtrip(
        &[b"CLIENT", b"KILL", b"ID", b"0"],
        b"-ERR client-id should be greater than 0\r\n",
    );
    killer.roundtrip(
        &[b"CLIENT", b"KILL", b"ID", victim_id.as_bytes()],
        b":1\r\n",
    );
    assert!(victim.closed_by_server());
    bystander.roundtrip(&[b"PING"], b"+PONG\r\n");
    killer.roundtrip(
        &[b"CLIENT", b"KILL", b"ID", victim_id.as_bytes()],
        b":0\r\n",
    );
    killer.roundtrip(
        &[b"CLIENT", b"KILL", b"127.0.0.1:1"],
        b"-ERR No such client\r\n",
    );
    // SKIPME yes (the default) spares the caller; the bystander goes.
    killer.roundtrip(&[b"CLIENT", b"KILL", b"SKIPME", b"yes"], b":1\r\n");
    assert!(bystander.closed_by_server());
    killer.roundtrip(&[b"PING"], b"+PONG\r\n");
    assert_eq!(
        server.metric(
            "shardline_connections_closed_total",
            &[("reason", "killed")]
        ),
        2.0
    );
}

#[test]
fn client_pause_write_holds_writes_on_every_shard_until_unpause_and_lets_reads_through() {
    let server = Server::start(ARGS);
    let (mut admin, _) = client_on_shard(&server, "0");
    let (writer, _) = client_on_shard(&server, "1");
    let (mut reader, _) = client_on_shard(&server, "1");
    let key = key_on(1);
    admin.roundtrip(&[b"CLIENT", b"PAUSE", b"60000", b"WRITE"], b"+OK\r\n");

    let (done, result) = mpsc::channel();
    let set_key = key.clone();
    let thread = std::thread::spawn(move || {
        let mut writer = writer;
        let reply = writer.request(&[b"SET", set_key.as_bytes(), b"after"]);
        let _ = done.send(reply);
        writer
    });
    // Reads on the paused shard are served while the write waits.
    reader.roundtrip(&[b"GET", key.as_bytes()], b"$-1\r\n");
    reader.roundtrip(&[b"PING"], b"+PONG\r\n");
    assert!(
        result.recv_timeout(Duration::from_millis(300)).is_err(),
        "SET was answered during CLIENT PAUSE WRITE"
    );
    admin.roundtrip(&[b"CLIENT", b"UNPAUSE"], b"+OK\r\n");
    let reply = result
        .recv_timeout(Duration::from_secs(10))
        .expect("SET answered after UNPAUSE");
    assert_eq!(reply, b"+OK\r\n");
    reader.roundtrip(&[b"GET", key.as_bytes()], b"$5\r\nafter\r\n");
    thread.join().expect("writer thread");

    admin.roundtrip(
        &[b"CLIENT", b"PAUSE", b"-1"],
        b"-ERR timeout is negative\r\n",
    );
    admin.roundtrip(
        &[b"CLIENT", b"PAUSE", b"10", b"SOME"],
        b"-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n",
    );
}

#[test]
fn client_reply_off_on_and_skip() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    c.send(&[b"CLIENT", b"REPLY", b"OFF"]);
    c.send(&[b"PING", b"one"]);
    c.send(&[b"CLIENT", b"REPLY", b"ON"]);
    c.send(&[b"PING", b"two"]);
    c.send(&[b"CLIENT", b"REPLY", b"SKIP"]);
    c.send(&[b"PING", b"three"]);
    c.send(&[b"PING", b"four"]);
    let expected = b"+OK\r\n$3\r\ntwo\r\n$4\r\nfour\r\n";
    assert_eq!(
        common::text(c.read_exact_len(expected.len())),
        common::text(expected.to_vec())
    );
    c.roundtrip(
        &[b"CLIENT", b"NO-EVICT", b"maybe"],
        b"-ERR syntax error\r\n",
    );
    c.roundtrip(&[b"CLIENT", b"NO-EVICT", b"on"], b"+OK\r\n");
    assert!(common::text(c.request(&[b"CLIENT", b"INFO"])).contains(" flags=e "));
    // RESET turns replies back on and NO-EVICT off.
    c.send(&[b"CLIENT", b"REPLY", b"OFF"]);
    c.roundtrip(&[b"RESET"], b"+RESET\r\n");
    c.roundtrip(
        &[b"AUTH", b"default", server.password.as_bytes()],
        b"+OK\r\n",
    );
    assert!(common::text(c.request(&[b"CLIENT", b"INFO"])).contains(" flags=N "));
}

#[test]
fn command_list_filters_getkeys_and_subcommand_entries() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    c.roundtrip(
        &[b"COMMAND", b"LIST", b"FILTERBY", b"PATTERN", b"get"],
        b"*1\r\n$3\r\nget\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"LIST", b"FILTERBY", b"PATTERN", b"config|*re*"],
        b"*2\r\n$16\r\nconfig|resetstat\r\n$14\r\nconfig|rewrite\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"LIST", b"FILTERBY", b"MODULE", b"x"],
        b"*0\r\n",
    );
    c.roundtrip(&[b"COMMAND", b"LIST", b"bad"], b"-ERR syntax error\r\n");
    let all = common::text(c.request(&[b"COMMAND", b"LIST"]));
    assert!(all.contains("\r\nclient|kill\r\n") && all.contains("\r\ntime\r\n"));
    c.roundtrip(
        &[b"COMMAND", b"GETKEYS", b"MSET", b"a", b"1", b"b", b"2"],
        b"*2\r\n$1\r\na\r\n$1\r\nb\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"GETKEYSANDFLAGS", b"SET", b"k1", b"v1"],
        b"*1\r\n*2\r\n$2\r\nk1\r\n*2\r\n+OW\r\n+update\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"GETKEYS", b"PING"],
        b"-ERR The command has no key arguments\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"GETKEYS", b"NOSUCH", b"k"],
        b"-ERR Invalid command specified\r\n",
    );
    c.roundtrip(
        &[b"COMMAND", b"INFO", b"get|key", b"config|get|x"],
        b"*2\r\n$-1\r\n$-1\r\n",
    );
    let config = common::text(c.request(&[b"COMMAND", b"INFO", b"config"]));
    assert!(config.contains("$10\r\nconfig|get\r\n:-3\r\n"), "{config}");
}

/// INFO used_memory, in bytes.
fn used_memory(client: &mut RawClient) -> i64 {
    let info = common::text(client.request(&[b"INFO", b"memory"]));
    info_field(&info, "used_memory")
        .parse()
        .expect("used_memory")
}

/// INFO used_memory follows the data both ways, as Redis's: 50 MB of SETs (500 values of
/// 100 000 bytes over both shards) raise it by about 50 MB, FLUSHALL brings it back down.
/// (It used to be mimalloc's committed memory: +27 MB, and it never fell.)
#[test]
fn used_memory_follows_the_data() {
    let server = Server::start(&[ARGS, &["--appendonly", "no"]].concat());
    let mut c = login_plain(&server);
    let before = used_memory(&mut c);
    let value = vec![b'v'; 100_000];
    for i in 0..500 {
        let key = format!("big:{i}");
        c.roundtrip(&[b"SET", key.as_bytes(), &value], b"+OK\r\n");
    }
    let full = used_memory(&mut c);
    let grown = full - before;
    assert!(
        (48_000_000..60_000_000).contains(&grown),
        "used_memory {before} -> {full}: +{grown} for 50 MB of values"
    );
    c.roundtrip(&[b"FLUSHALL"], b"+OK\r\n");
    let after = used_memory(&mut c);
    assert!(
        after < before + 2_000_000,
        "used_memory {before} -> {full} -> {after} after FLUSHALL"
    );
    // Many small keys: the keyspace's tables are given back too (a cleared table kept its
    // capacity: 11.6 MB stayed after 50 000 keys).
    let small = vec![b's'; 1000];
    for batch in 0..50 {
        let keys: Vec<String> = (0..1000).map(|i| format!("small:{batch}:{i}")).collect();
        let mut args: Vec<&[u8]> = vec![b"MSET"];
        for key in &keys {
            args.push(key.as_bytes());
            args.push(&small);
        }
        c.roundtrip(&args, b"+OK\r\n");
    }
    let full = used_memory(&mut c);
    c.roundtrip(&[b"FLUSHALL"], b"+OK\r\n");
    let after = used_memory(&mut c);
    assert!(
        after < before + 2_000_000,
        "used_memory {before} -> {full} -> {after} after FLUSHALL of 50 000 keys"
    );
}

/// One large request (a 100 000-member SADD, ~0.7 MB) does not stay counted after its key is
/// unlinked: the connection gives its grown input buffer back (the parsed arguments were
/// slices of it). Redis's unit/lazyfree checks the same with `used_memory < orig * 2`.
#[test]
fn a_large_request_is_not_kept_after_unlink() {
    let server = Server::start(&[ARGS, &["--appendonly", "no"]].concat());
    let mut c = login_plain(&server);
    let before = used_memory(&mut c);
    let members: Vec<Vec<u8>> = (0..100_000).map(|i| i.to_string().into_bytes()).collect();
    let mut args: Vec<&[u8]> = vec![b"SADD", b"myset"];
    args.extend(members.iter().map(Vec::as_slice));
    c.roundtrip(&args, b":100000\r\n");
    let peak = used_memory(&mut c);
    c.roundtrip(&[b"UNLINK", b"myset"], b":1\r\n");
    let after = used_memory(&mut c);
    assert!(
        peak > before + 1_000_000 && after < before + 500_000,
        "used_memory {before} -> {peak} -> {after}"
    );
}
