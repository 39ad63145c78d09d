//! MULTI / EXEC / DISCARD over TLS with two shards: exact replies, as Redis 7 sends them.

mod common;

use common::shards::shard_of;
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

/// One authenticated connection on each of the two shards.
fn clients_on_both_shards(server: &Server) -> (RawClient, RawClient) {
    let (mut zero, mut one) = (None, None);
    for _ in 0..64 {
        let mut client = authenticated(server);
        match shard_of(&mut client) {
            0 if zero.is_none() => zero = Some(client),
            1 if one.is_none() => one = Some(client),
            _ => {}
        }
        if let (Some(_), Some(_)) = (&zero, &one) {
            break;
        }
    }
    (
        zero.expect("a connection on shard 0"),
        one.expect("a connection on shard 1"),
    )
}

/// The payloads of the bulk strings of a flat array reply of bulk strings.
fn bulk_items(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply);
    let lines: Vec<&str> = text.split("\r\n").collect();
    lines
        .iter()
        .skip(1)
        .skip_while(|l| l.starts_with('*'))
        .skip(1)
        .step_by(2)
        .filter(|l| !l.is_empty())
        .map(|l| l.to_string())
        .collect()
}

#[test]
fn no_reader_sees_half_of_a_cross_shard_mset_or_exec() {
    let server = Server::start(&["--smp", "2"]);
    let (mut writer, mut reader) = clients_on_both_shards(&server);
    let (a, b) = keys_on_both_shards();
    writer.roundtrip(
        &[b"MSET", a.as_bytes(), b"0", b.as_bytes(), b"0"],
        b"+OK\r\n",
    );
    let rounds = 1500;
    let (wa, wb) = (a.clone(), b.clone());
    let writing = std::thread::spawn(move || {
        for i in 1..=rounds {
            let v = i.to_string();
            if i % 2 == 0 {
                let args: [&[u8]; 5] = [
                    b"MSET",
                    wa.as_bytes(),
                    v.as_bytes(),
                    wb.as_bytes(),
                    v.as_bytes(),
                ];
                writer.roundtrip(&args, b"+OK\r\n");
            } else {
                writer.roundtrip(&[b"MULTI"], b"+OK\r\n");
                writer.roundtrip(&[b"SET", wa.as_bytes(), v.as_bytes()], b"+QUEUED\r\n");
                writer.roundtrip(&[b"SET", wb.as_bytes(), v.as_bytes()], b"+QUEUED\r\n");
                writer.roundtrip(&[b"EXEC"], b"*2\r\n+OK\r\n+OK\r\n");
            }
        }
    });
    let mut reads = 0;
    while !writing.is_finished() || reads < 100 {
        let seen = bulk_items(&reader.request(&[b"MGET", a.as_bytes(), b.as_bytes()]));
        assert_eq!(seen.len(), 2, "MGET reply {seen:?}");
        assert_eq!(seen[0], seen[1], "MGET saw half of a write (read {reads})");
        reader.roundtrip(&[b"MULTI"], b"+OK\r\n");
        reader.roundtrip(&[b"GET", b.as_bytes()], b"+QUEUED\r\n");
        reader.roundtrip(&[b"GET", a.as_bytes()], b"+QUEUED\r\n");
        let seen = bulk_items(&reader.request(&[b"EXEC"]));
        assert_eq!(seen.len(), 2, "EXEC reply {seen:?}");
        assert_eq!(seen[0], seen[1], "EXEC saw half of a write (read {reads})");
        reads += 1;
    }
    writing.join().expect("writer");
    let last = rounds.to_string();
    let expected = format!("*2\r\n${n}\r\n{last}\r\n${n}\r\n{last}\r\n", n = last.len());
    reader.roundtrip(&[b"MGET", a.as_bytes(), b.as_bytes()], expected.as_bytes());
    assert!(
        server.metric(
            "shardline_cross_shard_transactions_total",
            &[("shard", "0")]
        ) + server.metric(
            "shardline_cross_shard_transactions_total",
            &[("shard", "1")]
        ) >= f64::from(rounds),
        "every cross-shard MSET and EXEC took the gates"
    );
}

/// MULTI, one queued command, EXEC: checks EXEC's reply.
fn exec_one(c: &mut RawClient, command: &[&[u8]], exec_reply: &[u8]) {
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(command, b"+QUEUED\r\n");
    c.roundtrip(&[b"EXEC"], exec_reply);
}

#[test]
fn watch_aborts_exec_when_a_key_on_any_shard_changes() {
    let server = Server::start(&["--smp", "2"]);
    let (mut c, mut other) = clients_on_both_shards(&server);
    let (a, b) = keys_on_both_shards();
    c.roundtrip(&[b"SET", a.as_bytes(), b"1"], b"+OK\r\n");

    // Unmodified watched keys on both shards: EXEC runs.
    c.roundtrip(&[b"WATCH", a.as_bytes(), b.as_bytes()], b"+OK\r\n");
    exec_one(&mut c, &[b"INCR", a.as_bytes()], b"*1\r\n:2\r\n");

    // Another connection (other shard) creates a watched key that was missing: EXEC aborts
    // with a null array and nothing runs; the keys are no longer watched afterwards.
    c.roundtrip(&[b"WATCH", a.as_bytes(), b.as_bytes()], b"+OK\r\n");
    other.roundtrip(&[b"SET", b.as_bytes(), b"x"], b"+OK\r\n");
    exec_one(&mut c, &[b"INCR", a.as_bytes()], b"*-1\r\n");
    c.roundtrip(&[b"GET", a.as_bytes()], b"$1\r\n2\r\n");
    exec_one(&mut c, &[b"INCR", a.as_bytes()], b"*1\r\n:3\r\n");

    // EXPIRE, FLUSHDB and another database: as Redis.
    c.roundtrip(&[b"WATCH", a.as_bytes()], b"+OK\r\n");
    other.roundtrip(&[b"EXPIRE", a.as_bytes(), b"100"], b":1\r\n");
    exec_one(&mut c, &[b"PING"], b"*-1\r\n");
    c.roundtrip(&[b"WATCH", b.as_bytes()], b"+OK\r\n");
    other.roundtrip(&[b"SELECT", b"3"], b"+OK\r\n");
    other.roundtrip(&[b"SET", b.as_bytes(), b"elsewhere"], b"+OK\r\n");
    exec_one(&mut c, &[b"PING"], b"*1\r\n+PONG\r\n");
    c.roundtrip(&[b"WATCH", b.as_bytes()], b"+OK\r\n");
    other.roundtrip(&[b"SELECT", b"0"], b"+OK\r\n");
    other.roundtrip(&[b"FLUSHDB"], b"+OK\r\n");
    exec_one(&mut c, &[b"PING"], b"*-1\r\n");

    // UNWATCH and DISCARD forget the watched keys.
    c.roundtrip(&[b"WATCH", a.as_bytes()], b"+OK\r\n");
    other.roundtrip(&[b"SET", a.as_bytes(), b"5"], b"+OK\r\n");
    c.roundtrip(&[b"UNWATCH"], b"+OK\r\n");
    exec_one(&mut c, &[b"INCR", a.as_bytes()], b"*1\r\n:6\r\n");
    c.roundtrip(&[b"WATCH", a.as_bytes()], b"+OK\r\n");
    other.roundtrip(&[b"SET", a.as_bytes(), b"10"], b"+OK\r\n");
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"DISCARD"], b"+OK\r\n");
    exec_one(&mut c, &[b"INCR", a.as_bytes()], b"*1\r\n:11\r\n");
}

#[test]
fn commands_not_allowed_in_multi_abort_it_and_save_inside_exec_does_not_hang() {
    let server = Server::start(&["--smp", "2"]);
    let mut c = authenticated(&server);
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"SET", b"tx:s", b"1"], b"+QUEUED\r\n");
    c.roundtrip(
        &[b"SAVE"],
        b"-ERR Command not allowed inside a transaction\r\n",
    );
    c.roundtrip(
        &[b"EXEC"],
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    );
    // BGREWRITEAOF (a connection command reaching every shard) inside a transaction that
    // holds every shard's gate.
    let (a, b) = keys_on_both_shards();
    c.roundtrip(&[b"MULTI"], b"+OK\r\n");
    c.roundtrip(&[b"SET", a.as_bytes(), b"1"], b"+QUEUED\r\n");
    c.roundtrip(&[b"BGREWRITEAOF"], b"+QUEUED\r\n");
    c.roundtrip(&[b"SET", b.as_bytes(), b"2"], b"+QUEUED\r\n");
    let reply = String::from_utf8_lossy(&c.request(&[b"EXEC"])).into_owned();
    assert!(
        reply.starts_with("*3\r\n+OK\r\n+Background append only file rewriting")
            && reply.ends_with("+OK\r\n"),
        "EXEC reply {reply:?}"
    );
    c.roundtrip(&[b"DBSIZE"], b":2\r\n");
}
