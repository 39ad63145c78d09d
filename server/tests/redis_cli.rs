//! The real binary, driven by redis-cli over TLS: exact replies.

mod common;

use common::Server;

fn redis_cli_commands_return_exact_replies(provider: &str) {
    let server = Server::start(&["--tls-provider", provider, "--smp", "2"]);
    let cli = |args: &[&str]| server.cli(args);
    assert_eq!(cli(&["PING"]), "PONG");
    assert_eq!(cli(&["PING", "hello"]), "hello");
    assert_eq!(
        cli(&["PING", "a", "b"]),
        "ERR wrong number of arguments for 'ping' command"
    );
    assert_eq!(
        cli(&["COMMAND", "COUNT", "x"]),
        "ERR wrong number of arguments for 'command|count' command"
    );
    let mut raw = common::RawClient::connect(&server);
    raw.send_raw(format!("AUTH {}\r\n", server.password).as_bytes());
    assert_eq!(raw.read_exact_len(5), b"+OK\r\n");
    raw.roundtrip(&[b"COMMAND", b"INFO", b"nosuch"], b"*1\r\n$-1\r\n");
    assert_eq!(cli(&["ECHO", "a b"]), "a b");
    // Scripts and functions, as redis-cli prints Redis's replies.
    assert_eq!(cli(&["FUNCTION", "FLUSH"]), "OK");
    assert_eq!(cli(&["FUNCTION", "flush", "async"]), "OK");
    assert_eq!(
        cli(&["FUNCTION", "FLUSH", "later"]),
        "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
    );
    assert_eq!(
        cli(&["FUNCTION", "FLUSH", "sync", "x"]),
        "ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP."
    );
    assert_eq!(cli(&["FUNCTION", "list"]), "");
    assert_eq!(
        cli(&["SCRIPT", "LOAD", "return 1"]),
        "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
    );
    assert_eq!(
        cli(&["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"]),
        "1"
    );
    assert_eq!(
        cli(&[
            "FUNCTION",
            "LOAD",
            "#!lua name=cli\nredis.register_function('hello', function() return 'hi' end)"
        ]),
        "cli"
    );
    assert_eq!(cli(&["FCALL", "hello", "0"]), "hi");
    assert_eq!(cli(&["FUNCTION", "DELETE", "cli"]), "OK");
    assert_eq!(cli(&["SET", "greeting", "hello"]), "OK");
    assert_eq!(cli(&["GET", "greeting"]), "hello");
    assert_eq!(cli(&["APPEND", "greeting", " world"]), "11");
    assert_eq!(cli(&["STRLEN", "greeting"]), "11");
    assert_eq!(cli(&["SET", "n", "41"]), "OK");
    assert_eq!(cli(&["INCR", "n"]), "42");
    assert_eq!(cli(&["INCRBY", "n", "-50"]), "-8");
    assert_eq!(
        cli(&["DECR", "greeting"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(cli(&["MSET", "{t}a", "1", "{t}b", "2", "c", "3"]), "OK");
    assert_eq!(cli(&["MGET", "{t}a", "c", "missing", "{t}b"]), "1\n3\n\n2");
    assert_eq!(cli(&["EXISTS", "{t}a", "c", "missing"]), "2");
    assert_eq!(cli(&["RPUSH", "list", "a", "b", "c"]), "3");
    assert_eq!(cli(&["LPUSH", "list", "z"]), "4");
    assert_eq!(cli(&["LRANGE", "list", "0", "-1"]), "z\na\nb\nc");
    assert_eq!(cli(&["LPOP", "list"]), "z");
    assert_eq!(cli(&["TYPE", "list"]), "list");
    assert_eq!(
        cli(&["GET", "list"]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(cli(&["HSET", "h", "f1", "v1", "f2", "v2"]), "2");
    assert_eq!(cli(&["HGET", "h", "f2"]), "v2");
    assert_eq!(cli(&["HLEN", "h"]), "2");
    assert_eq!(cli(&["SADD", "s", "x", "y", "x"]), "2");
    assert_eq!(cli(&["SISMEMBER", "s", "y"]), "1");
    assert_eq!(cli(&["SCARD", "s"]), "2");
    assert_eq!(cli(&["SET", "tmp", "v", "EX", "100"]), "OK");
    let ttl: i64 = cli(&["TTL", "tmp"]).parse().expect("ttl");
    assert!((99..=100).contains(&ttl), "ttl {ttl}");
    assert_eq!(cli(&["PERSIST", "tmp"]), "1");
    assert_eq!(cli(&["TTL", "tmp"]), "-1");
    assert_eq!(cli(&["DEL", "tmp", "{t}a", "{t}b", "missing"]), "3");
    assert_eq!(cli(&["SELECT", "0"]), "OK");
    assert_eq!(cli(&["SELECT", "15"]), "OK");
    assert_eq!(cli(&["SELECT", "16"]), "ERR DB index is out of range");
    let out = server.cli_output(&["NOSUCH", "x"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end_matches('\n'),
        "ERR unknown command 'NOSUCH', with args beginning with: 'x' "
    );
    assert_eq!(
        cli(&["GET"]),
        "ERR wrong number of arguments for 'get' command"
    );
    // greeting, n, c, list, h, s
    assert_eq!(cli(&["DBSIZE"]), "6");
    let mut keys: Vec<String> = cli(&["KEYS", "*"]).lines().map(str::to_owned).collect();
    keys.sort();
    assert_eq!(keys, ["c", "greeting", "h", "list", "n", "s"]);
    assert_eq!(cli(&["CONFIG", "GET", "save"]), "save");
    assert_eq!(cli(&["CONFIG", "GET", "appendonly"]), "appendonly\nyes");
    let info = cli(&["INFO", "keyspace"]);
    assert!(info.contains("db0:keys=6,expires=0,avg_ttl=0"), "{info}");
    assert_eq!(cli(&["FLUSHALL"]), "OK");
    assert_eq!(cli(&["DBSIZE"]), "0");
}

#[test]
fn scan_visits_every_key_once_across_shards() {
    let server = Server::start(&["--smp", "2"]);
    let mut args = vec!["MSET"];
    let names: Vec<String> = (0..300).map(|i| format!("key:{i}")).collect();
    for name in &names {
        args.push(name);
        args.push("v");
    }
    assert_eq!(server.cli(&args), "OK");
    let mut seen = Vec::new();
    let mut cursor = "0".to_string();
    for _ in 0..1000 {
        let out = server.cli(&["SCAN", &cursor, "COUNT", "37"]);
        let mut lines = out.lines();
        cursor = lines.next().expect("cursor").to_string();
        seen.extend(lines.map(str::to_owned));
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(cursor, "0", "scan did not finish");
    seen.sort();
    let total = seen.len();
    seen.dedup();
    assert_eq!(total, seen.len(), "a key was returned twice");
    let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(seen, expected);
    let out = server.cli(&["--scan", "--pattern", "key:1?"]);
    let mut seen: Vec<&str> = out.lines().collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            "key:10", "key:11", "key:12", "key:13", "key:14", "key:15", "key:16", "key:17",
            "key:18", "key:19"
        ]
    );
}

#[test]
fn authentication_is_required_and_wrong_passwords_are_refused() {
    let server = Server::start(&["--smp", "1"]);
    // (stdout, stderr) of redis-cli without credentials of its own.
    let plain = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["--tls", "--cacert"])
            .arg(server.cert())
            .args(["-h", "127.0.0.1", "-p", &server.port()])
            .args(args)
            .output()
            .expect("redis-cli");
        (
            String::from_utf8_lossy(&out.stdout).trim_end().to_string(),
            String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
        )
    };
    assert_eq!(plain(&["GET", "k"]).0, "NOAUTH Authentication required.");
    for user in ["default", "nobody"] {
        let password = if user == "default" {
            "wrong"
        } else {
            server.password.as_str()
        };
        assert_eq!(
            plain(&[
                "--user",
                user,
                "--pass",
                password,
                "--no-auth-warning",
                "GET",
                "k"
            ]),
            (
                "NOAUTH Authentication required.".to_string(),
                "AUTH failed: WRONGPASS invalid username-password pair or user is disabled."
                    .to_string()
            )
        );
    }
    assert_eq!(server.cli(&["AUTH", "a", "b", "c"]), "ERR syntax error");
    assert_eq!(
        server.cli(&["AUTH", "default", "wrong"]),
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    // A failed AUTH keeps the identity the connection already had.
    assert_eq!(server.cli(&["GET", "k"]), "");
}

fn tls_is_required_and_plain_connections_fail(provider: &str) {
    let server = Server::start(&["--tls-provider", provider, "--smp", "1"]);
    let out = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &server.port(), "PING"])
        .output()
        .expect("redis-cli");
    assert_ne!(String::from_utf8_lossy(&out.stdout).trim(), "PONG");
    // The server counts the failed handshake as it closes; redis-cli may exit first.
    let failed = server.metric_reaching("shardline_tls_handshakes_failed_total", &[], 1.0);
    assert!(failed >= 1.0, "failed handshakes counted: {failed}");
}

#[test]
fn debug_is_refused_without_the_option() {
    let server = Server::start(&["--smp", "1"]);
    assert_eq!(
        server.cli(&["DEBUG", "SLEEP", "0"]),
        "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"no\", \
         you can enable it by restarting the server with --enable-debug-command."
    );
}

for_each_tls_provider!(
    redis_cli_commands_return_exact_replies,
    tls_is_required_and_plain_connections_fail,
);
