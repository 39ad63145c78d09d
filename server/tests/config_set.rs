//! CONFIG GET with Redis's names and globs, CONFIG SET with Redis 7's all-or-nothing pairs and
//! error texts, applied on every shard of a 2-shard server (checked through behaviour on keys
//! owned by each shard, and through the append-only log's fsyncs on each shard).

mod common;

use common::replies::flat_map;
use common::{login_plain, wait_for, RawClient, Server};
use shardline::keyspace::slot::owner_shard;

const ARGS: &[&str] = &["--tls", "off", "--smp", "2"];

/// A key owned by each shard of a 2-shard server: `[on shard 0, on shard 1]`.
fn keys_on_both_shards(prefix: &str) -> [String; 2] {
    let pick = |shard| {
        (0..)
            .map(|i| format!("{prefix}:{i}"))
            .find(|k| owner_shard(k.as_bytes(), 2) == shard)
            .expect("a key on that shard")
    };
    [pick(0), pick(1)]
}

#[test]
fn config_get_answers_redis_names_and_globs() {
    let server = Server::start(&[
        "--tls",
        "off",
        "--smp",
        "2",
        "--maxmemory",
        "10mb",
        "--maxmemory-policy",
        "allkeys-lru",
        "--slowlog-log-slower-than",
        "-1",
    ]);
    let mut client = login_plain(&server);
    client.roundtrip(
        &[b"CONFIG", b"GET", b"maxmemory*"],
        &flat_map(&[
            ("maxmemory", "10485760"),
            ("maxmemory-policy", "allkeys-lru"),
            ("maxmemory-samples", "5"),
            ("maxmemory-clients", "0"),
        ]),
    );
    // Aliases answer under the name asked for; a glob shows both names.
    client.roundtrip(
        &[b"CONFIG", b"GET", b"hash-max-*"],
        &flat_map(&[
            ("hash-max-listpack-entries", "128"),
            ("hash-max-ziplist-entries", "128"),
            ("hash-max-listpack-value", "64"),
            ("hash-max-ziplist-value", "64"),
        ]),
    );
    client.roundtrip(
        &[
            b"CONFIG",
            b"GET",
            b"slowlog-*",
            b"databases",
            b"appendfsync",
            b"smp",
        ],
        &flat_map(&[
            ("appendfsync", "everysec"),
            ("slowlog-log-slower-than", "-1"),
            ("slowlog-max-len", "128"),
            ("databases", "16"),
            ("smp", "2"),
        ]),
    );
    client.roundtrip(
        &[b"CONFIG", b"GET", b"client-output-buffer-limit"],
        &flat_map(&[(
            "client-output-buffer-limit",
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        )]),
    );
    client.roundtrip(
        &[b"CONFIG", b"GET", b"tls-provider", b"aof-fsync-yield-us"],
        &flat_map(&[("tls-provider", "rustls"), ("aof-fsync-yield-us", "20")]),
    );
    client.roundtrip(&[b"CONFIG", b"GET", b"no-such-*"], b"*0\r\n");
}

#[test]
fn config_set_refuses_as_redis_and_changes_nothing_on_error() {
    let server = Server::start(ARGS);
    let mut client = login_plain(&server);
    let cases: &[(&[&[u8]], &str)] = &[
        (
            &[b"CONFIG", b"SET", b"foo", b"bar"],
            "-ERR Unknown option or number of arguments for CONFIG SET - 'foo'\r\n",
        ),
        (
            &[b"CONFIG", b"SET", b"databases", b"4"],
            "-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set \
             immutable config\r\n",
        ),
        (
            &[b"CONFIG", b"SET", b"maxmemory", b"1", b"maxmemory", b"2"],
            "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - duplicate \
             parameter\r\n",
        ),
        (
            &[b"CONFIG", b"SET", b"maxmemory", b"bla"],
            "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument \
             must be a memory value\r\n",
        ),
        (
            &[b"CONFIG", b"SET", b"appendfsync", b"sometimes"],
            "-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - \
             argument(s) must be one of the following: everysec, always, no\r\n",
        ),
        // All or nothing: the valid first pair is not applied either.
        (
            &[
                b"CONFIG",
                b"SET",
                b"maxmemory-policy",
                b"allkeys-lfu",
                b"maxmemory-samples",
                b"0",
            ],
            "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-samples') - \
             argument must be between 1 and 64 inclusive\r\n",
        ),
        (
            &[b"CONFIG", b"SET", b"maxmemory"],
            "-ERR wrong number of arguments for 'config|set' command\r\n",
        ),
    ];
    for (args, expected) in cases {
        client.roundtrip(args, expected.as_bytes());
    }
    client.roundtrip(
        &[b"CONFIG", b"GET", b"maxmemory-policy"],
        &flat_map(&[("maxmemory-policy", "noeviction")]),
    );
}

#[test]
fn config_set_reaches_every_shard() {
    let server = Server::start(ARGS);
    let mut client = login_plain(&server);
    let [a, b] = keys_on_both_shards("cfg");
    client.roundtrip(
        &[
            b"CONFIG",
            b"SET",
            b"maxmemory-policy",
            b"allkeys-lfu",
            b"hash-max-ziplist-entries",
            b"1",
            b"lfu-log-factor",
            b"10",
        ],
        b"+OK\r\n",
    );
    for key in [&a, &b] {
        // Keys created under LFU start at Redis's LFU_INIT_VAL; the first read always counts.
        client.roundtrip(&[b"HSET", key.as_bytes(), b"f", b"v"], b":1\r\n");
        client.roundtrip(&[b"OBJECT", b"FREQ", key.as_bytes()], b":5\r\n");
        client.roundtrip(&[b"HGET", key.as_bytes(), b"f"], b"$1\r\nv\r\n");
        client.roundtrip(&[b"OBJECT", b"FREQ", key.as_bytes()], b":6\r\n");
        client.roundtrip(
            &[b"OBJECT", b"ENCODING", key.as_bytes()],
            b"$8\r\nlistpack\r\n",
        );
        client.roundtrip(&[b"HSET", key.as_bytes(), b"g", b"w"], b":1\r\n");
        client.roundtrip(
            &[b"OBJECT", b"ENCODING", key.as_bytes()],
            b"$9\r\nhashtable\r\n",
        );
    }
    // Every connection (whichever shard accepted it) reads the new values.
    for _ in 0..6 {
        let mut other = login_plain(&server);
        other.roundtrip(
            &[b"CONFIG", b"GET", b"maxmemory-policy"],
            &flat_map(&[("maxmemory-policy", "allkeys-lfu")]),
        );
    }
    client.roundtrip(&[b"CONFIG", b"SET", b"maxmemory", b"1"], b"+OK\r\n");
    for key in [&a, &b] {
        client.roundtrip(
            &[b"SET", key.as_bytes(), b"x"],
            b"-OOM command not allowed when used memory > 'maxmemory'.\r\n",
        );
    }
    client.roundtrip(&[b"CONFIG", b"SET", b"maxmemory", b"0"], b"+OK\r\n");
    for key in [&a, &b] {
        client.roundtrip(&[b"SET", key.as_bytes(), b"x"], b"+OK\r\n");
    }
}

/// Sum of the shard's fdatasyncs so far (`aof_fsync_duration_seconds_count`).
fn fsyncs(server: &Server, shard: &str) -> f64 {
    server.metric(
        "shardline_aof_fsync_duration_seconds_count",
        &[("shard", shard)],
    )
}

#[test]
fn config_set_appendfsync_switches_every_shards_log() {
    let server = Server::start(&["--tls", "off", "--smp", "2", "--appendfsync", "no"]);
    let mut client = login_plain(&server);
    let [a, b] = keys_on_both_shards("fsync");
    for key in [&a, &b] {
        client.roundtrip(&[b"SET", key.as_bytes(), b"1"], b"+OK\r\n");
    }
    std::thread::sleep(std::time::Duration::from_millis(2500));
    // `no`: the OS decides; shardline never calls fdatasync.
    assert_eq!((fsyncs(&server, "0"), fsyncs(&server, "1")), (0.0, 0.0));
    client.roundtrip(&[b"CONFIG", b"SET", b"appendfsync", b"always"], b"+OK\r\n");
    client.roundtrip(
        &[b"CONFIG", b"GET", b"appendfsync"],
        &flat_map(&[("appendfsync", "always")]),
    );
    for key in [&a, &b] {
        client.roundtrip(&[b"SET", key.as_bytes(), b"2"], b"+OK\r\n");
    }
    wait_for(|| fsyncs(&server, "0") >= 1.0 && fsyncs(&server, "1") >= 1.0);
}

#[test]
fn config_set_output_buffer_limit_applies_to_open_connections() {
    let server = Server::start(ARGS);
    let mut admin = login_plain(&server);
    let mut reader = login_plain(&server);
    admin.roundtrip(&[b"SET", b"big", &vec![b'x'; 64 * 1024]], b"+OK\r\n");
    admin.roundtrip(
        &[
            b"CONFIG",
            b"SET",
            b"client-output-buffer-limit",
            b"normal 16kb 0 0",
        ],
        b"+OK\r\n",
    );
    admin.roundtrip(
        &[b"CONFIG", b"GET", b"client-output-buffer-limit"],
        &flat_map(&[(
            "client-output-buffer-limit",
            "normal 16384 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        )]),
    );
    // The connection opened before the change is closed once unread replies pile up past
    // 16 KiB (without a limit it would just wait for the client to read).
    let mut pipeline = Vec::new();
    for _ in 0..200 {
        pipeline.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n");
    }
    reader.send_raw(&pipeline);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let got = reader.read_exact_len(200 * 65 * 1024);
    assert!(got.len() < 199 * 64 * 1024, "got {} bytes", got.len());
    assert!(reader.closed_by_server());
    wait_for(|| {
        server.metric(
            "shardline_connections_closed_total",
            &[("reason", "output_buffer_limit")],
        ) >= 1.0
    });
    let mut fresh = RawClient::plain(server.addr);
    fresh.roundtrip(
        &[b"AUTH", b"default", server.password.as_bytes()],
        b"+OK\r\n",
    );
    assert_eq!(common::text(fresh.request(&[b"PING"])), "+PONG\r\n");
}

#[test]
fn config_set_timeout_closes_idle_clients() {
    let server = Server::start(ARGS);
    let mut admin = login_plain(&server);
    let mut idle = login_plain(&server);
    admin.roundtrip(&[b"CONFIG", b"SET", b"timeout", b"1"], b"+OK\r\n");
    admin.roundtrip(
        &[b"CONFIG", b"GET", b"timeout"],
        &flat_map(&[("timeout", "1")]),
    );
    let started = std::time::Instant::now();
    assert!(idle.closed_by_server(), "the idle client was not closed");
    assert!(started.elapsed() >= std::time::Duration::from_millis(500));
    wait_for(|| {
        server.metric(
            "shardline_connections_closed_total",
            &[("reason", "idle_timeout")],
        ) >= 2.0
    });
    let mut fresh = login_plain(&server);
    fresh.roundtrip(&[b"CONFIG", b"SET", b"timeout", b"0"], b"+OK\r\n");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    fresh.roundtrip(&[b"PING"], b"+PONG\r\n");
}

#[test]
fn config_set_maxclients_refuses_new_clients_only() {
    let server = Server::start(ARGS);
    let mut admin = login_plain(&server);
    let mut second = login_plain(&server);
    admin.roundtrip(&[b"CONFIG", b"SET", b"maxclients", b"2"], b"+OK\r\n");
    let mut third = RawClient::plain(server.addr);
    third.roundtrip(&[b"PING"], b"-ERR max number of clients reached\r\n");
    // Clients already connected stay; raising the limit lets new ones in.
    second.roundtrip(&[b"PING"], b"+PONG\r\n");
    admin.roundtrip(&[b"CONFIG", b"SET", b"maxclients", b"10"], b"+OK\r\n");
    let mut fourth = login_plain(&server);
    fourth.roundtrip(
        &[b"CONFIG", b"GET", b"maxclients"],
        &flat_map(&[("maxclients", "10")]),
    );
}

/// The parameters Redis's Tcl units set: CONFIG GET lists them and CONFIG SET takes them with
/// Redis 7.0.15's replies and errors (each checked against redis-server 7.0.15);
/// `repl-backlog-size`, `maxmemory-clients` and `latency-monitor-threshold` are stored with no
/// effect, `daemonize` and `replicaof` are immutable; an unknown name and a port in use get
/// Redis's texts, and a failed CONFIG SET changes nothing.
#[test]
fn config_names_the_parameters_redis_units_set() {
    let server = Server::start(ARGS);
    let mut c = login_plain(&server);
    let failed = |name: &str, reason: &str| {
        format!("-ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}\r\n")
            .into_bytes()
    };
    let get = |c: &mut RawClient, name: &str, value: &str| {
        c.roundtrip(
            &[b"CONFIG", b"GET", name.as_bytes()],
            &flat_map(&[(name, value)]),
        )
    };
    get(&mut c, "repl-backlog-size", "1048576");
    c.roundtrip(
        &[b"CONFIG", b"SET", b"repl-backlog-size", b"10000002"],
        b"+OK\r\n",
    );
    get(&mut c, "repl-backlog-size", "10000002");
    get(&mut c, "maxmemory-clients", "0");
    c.roundtrip(
        &[b"CONFIG", b"SET", b"maxmemory-clients", b"200%"],
        &failed(
            "maxmemory-clients",
            "percentage argument must be less or equal to 100",
        ),
    );
    c.roundtrip(
        &[b"CONFIG", b"SET", b"maxmemory-clients", b"10%"],
        b"+OK\r\n",
    );
    get(&mut c, "maxmemory-clients", "10%");
    c.roundtrip(
        &[b"CONFIG", b"SET", b"maxmemory-clients", b"1mb"],
        b"+OK\r\n",
    );
    get(&mut c, "maxmemory-clients", "1048576");
    get(&mut c, "daemonize", "no");
    c.roundtrip(
        &[b"CONFIG", b"SET", b"daemonize", b"yes"],
        &failed("daemonize", "can't set immutable config"),
    );
    c.roundtrip(
        &[b"CONFIG", b"GET", b"*of"],
        &flat_map(&[("replicaof", ""), ("slaveof", "")]),
    );
    c.roundtrip(
        &[b"CONFIG", b"SET", b"replicaof", b""],
        &failed("replicaof", "can't set immutable config"),
    );
    get(&mut c, "latency-monitor-threshold", "0");
    c.roundtrip(
        &[b"CONFIG", b"SET", b"latency-monitor-threshold", b"-1"],
        &failed(
            "latency-monitor-threshold",
            "argument must be between 0 and 9223372036854775807 inclusive",
        ),
    );
    get(&mut c, "auto-aof-rewrite-percentage", "100");
    c.roundtrip(
        &[b"CONFIG", b"SET", b"auto-aof-rewrite-percentage", b"-1"],
        &failed(
            "auto-aof-rewrite-percentage",
            "argument must be between 0 and 2147483647 inclusive",
        ),
    );
    c.roundtrip(
        &[b"CONFIG", b"SET", b"nosuch", b"1"],
        b"-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n",
    );
    // The port in force is accepted; a port in use is refused and nothing else changes.
    let port = server.addr.port().to_string();
    c.roundtrip(&[b"CONFIG", b"SET", b"port", port.as_bytes()], b"+OK\r\n");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let used = taken.local_addr().expect("address").port().to_string();
    c.roundtrip(
        &[
            b"CONFIG",
            b"SET",
            b"maxmemory",
            b"10000001",
            b"port",
            used.as_bytes(),
        ],
        &failed("port", "Unable to listen on this port. Check server logs."),
    );
    get(&mut c, "maxmemory", "0");
    get(&mut c, "port", &port);
}

/// CONFIG SET auto-aof-rewrite-percentage / auto-aof-rewrite-min-size take effect: a server
/// started with automatic rewrites off rewrites its logs once they are turned on.
#[test]
fn auto_aof_rewrite_settings_take_effect() {
    let server = Server::start(
        &[
            ARGS,
            &["--appendonly", "yes", "--auto-aof-rewrite-percentage", "0"],
        ]
        .concat(),
    );
    let mut c = login_plain(&server);
    for i in 0..200 {
        c.roundtrip(&[b"SET", format!("k{i}").as_bytes(), b"v"], b"+OK\r\n");
    }
    let rewrites = |c: &mut RawClient| -> u64 {
        let info = common::text(c.request(&[b"INFO", b"persistence"]));
        common::info_field(&info, "aof_rewrites")
            .parse()
            .expect("aof_rewrites")
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(rewrites(&mut c), 0);
    c.roundtrip(
        &[
            b"CONFIG",
            b"SET",
            b"auto-aof-rewrite-min-size",
            b"1",
            b"auto-aof-rewrite-percentage",
            b"1",
        ],
        b"+OK\r\n",
    );
    wait_for(|| rewrites(&mut c) > 0);
}
