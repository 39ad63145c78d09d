//! MULTI / EXEC / DISCARD over TLS with two shards: exact replies, as Redis 7 sends them.

mod common;

use common::{RawClient, Server};
use shardline::keyspace::slot::owner_shard;

/// Two keys owned by different shards of a 2-shard server.
fn keys_on_both_shards() -> (String, String) {
    let first = "tx:a".to_owned();
    let other = (0..)
        .map(|i| format!("tx:b{i}"))
        .find(|k| owner_shard(k.as_bytes(), 2) != owner_shard(first.as_bytes(), 2))
        .expect("a key on the other shard");
    (first, other)
}

fn authenticated(server: &Server) -> RawClient {
    let mut client = RawClient::connect(server);
    let auth = format!("AUTH {}\r\n", server.password);
    client.send_raw(auth.as_bytes());
    assert_eq!(client.read_exact_len(5), b"+OK\r\n");
    client
}

#[test]
fn exec_runs_the_queued_commands_on_one_shard_and_across_shards() {
    let server = Server::start(&["--smp", "2"]);
    let mut c = authenticated(&server);
    // Same owner shard (hash tag): one job on that shard.
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"SET", b"{u1}name", b"ann"], b"+QUEUED\r\n");
    c.roundtrip(&[b"INCR", b"{u1}visits"], b"+QUEUED\r\n");
    c.roundtrip(&[b"LPUSH", b"{u1}name", b"x"], b"+QUEUED\r\n");
    c.roundtrip(&[b"GET", b"{u1}name"], b"+QUEUED\r\n");
    c.roundtrip(
        &[b"EXEC"],
        b"*4\r\n+OK\r\n:1\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n$3\r\nann\r\n",
    );

    // Keys on both shards, a keyless command and MGET across shards.
    let (a, b) = keys_on_both_shards();
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"SET", a.as_bytes(), b"1"], b"+QUEUED\r\n");
    c.roundtrip(&[b"SET", b.as_bytes(), b"2"], b"+QUEUED\r\n");
    c.roundtrip(&[b"PING"], b"+QUEUED\r\n");
    c.roundtrip(&[b"MGET", a.as_bytes(), b.as_bytes()], b"+QUEUED\r\n");
    c.roundtrip(
        &[b"EXEC"],
        b"*4\r\n+OK\r\n+OK\r\n+PONG\r\n*2\r\n$1\r\n1\r\n$1\r\n2\r\n",
    );
    // An empty transaction.
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"EXEC"], b"*0\r\n");
    // The connection still works after EXEC.
    c.roundtrip(&[b"GET", b.as_bytes()], b"$1\r\n2\r\n");
}

#[test]
fn queueing_errors_discard_and_misuse_reply_as_redis() {
    let server = Server::start(&["--smp", "2"]);
    let mut c = authenticated(&server);
    c.roundtrip(&[b"EXEC"], b"-ERR EXEC without MULTI\r\n");
    c.roundtrip(&[b"DISCARD"], b"-ERR DISCARD without MULTI\r\n");

    // An unknown command or a wrong arity while queueing aborts EXEC; nothing runs.
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"SET", b"tx:k", b"v"], b"+QUEUED\r\n");
    c.roundtrip(&[b"MULTI"], b"-ERR MULTI calls can not be nested\r\n");
    c.roundtrip(
        &[b"GET"],
        b"-ERR wrong number of arguments for 'get' command\r\n",
    );
    c.roundtrip(
        &[b"EXEC"],
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    );
    c.roundtrip(&[b"EXISTS", b"tx:k"], b":0\r\n");

    // DISCARD drops the queue.
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"SET", b"tx:k", b"v"], b"+QUEUED\r\n");
    c.roundtrip(
        &[b"WATCH", b"tx:k"],
        b"-ERR WATCH inside MULTI is not allowed\r\n",
    );
    c.roundtrip(&[b"DISCARD"], b"+OK\r\n");
    c.roundtrip(&[b"EXISTS", b"tx:k"], b":0\r\n");

    // RESET leaves the transaction (and the login).
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"RESET"], b"+RESET\r\n");
    c.roundtrip(&[b"EXEC"], b"-NOAUTH Authentication required.\r\n");
}

#[test]
fn pipelined_transactions_keep_reply_order() {
    let server = Server::start(&["--smp", "2"]);
    let mut c = authenticated(&server);
    let (a, b) = keys_on_both_shards();
    // Everything in one write: replies must come back in request order.
    let mut batch = Vec::new();
    for args in [
        vec!["SET", a.as_str(), "x"],
        vec!["MULTI"],
        vec!["APPEND", a.as_str(), "y"],
        vec!["APPEND", b.as_str(), "z"],
        vec!["EXEC"],
        vec!["MGET", a.as_str(), b.as_str()],
    ] {
        batch.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in args {
            batch.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
    }
    c.send_raw(&batch);
    let expected: &[u8] =
        b"+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:2\r\n:1\r\n*2\r\n$2\r\nxy\r\n$1\r\nz\r\n";
    assert_eq!(
        String::from_utf8_lossy(&c.read_exact_len(expected.len())),
        String::from_utf8_lossy(expected)
    );
}
