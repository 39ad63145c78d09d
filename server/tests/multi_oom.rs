//! `maxmemory` and transactions (Redis 7.0 `processCommand`): while memory is over the
//! limit, every command queued inside MULTI (but EXEC, DISCARD, QUIT, RESET) is refused with
//! `-OOM` and EXEC then aborts; an EXEC holding a `denyoom` command is refused with
//! `-EXECABORT … because of: OOM …`, one holding only reads runs; DISCARD still works. Also
//! CONFIG SET `maxmemory` evicting at once, with its `evicted` keyspace events.

mod common;

use common::{login_plain, RawClient, Server};

const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";

fn start() -> Server {
    Server::start(&["--tls", "off", "--smp", "2", "--appendonly", "no"])
}

fn maxmemory(admin: &mut RawClient, bytes: &[u8]) {
    admin.roundtrip(&[b"CONFIG", b"SET", b"maxmemory", bytes], b"+OK\r\n");
}

#[test]
fn commands_queued_while_out_of_memory_are_refused_and_exec_aborts() {
    let server = start();
    let mut client = login_plain(&server);
    let mut admin = login_plain(&server);
    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"foo1{t}", b"bar1"], b"+QUEUED\r\n");
    maxmemory(&mut admin, b"1");
    // A write, a read and a keyless command alike: queueing uses memory.
    client.roundtrip(&[b"LPUSH", b"mylist{t}", b"v"], OOM);
    client.roundtrip(&[b"GET", b"foo1{t}"], OOM);
    client.roundtrip(&[b"PING"], OOM);
    maxmemory(&mut admin, b"0");
    client.roundtrip(&[b"SET", b"foo2{t}", b"bar2"], b"+QUEUED\r\n");
    client.roundtrip(
        &[b"EXEC"],
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    );
    client.roundtrip(&[b"EXISTS", b"foo1{t}", b"foo2{t}"], b":0\r\n");
}

#[test]
fn discard_works_while_out_of_memory() {
    let server = start();
    let mut client = login_plain(&server);
    let mut admin = login_plain(&server);
    maxmemory(&mut admin, b"1");
    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"x", b"1"], OOM);
    client.roundtrip(&[b"DISCARD"], b"+OK\r\n");
    maxmemory(&mut admin, b"0");
    client.roundtrip(&[b"PING"], b"+PONG\r\n");
}

#[test]
fn exec_is_refused_only_when_it_holds_a_denyoom_command() {
    let server = start();
    let mut client = login_plain(&server);
    let mut admin = login_plain(&server);
    client.roundtrip(&[b"SET", b"x", b"value"], b"+OK\r\n");

    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    client.roundtrip(&[b"GET", b"x"], b"+QUEUED\r\n");
    client.roundtrip(&[b"PING"], b"+QUEUED\r\n");
    maxmemory(&mut admin, b"1");
    client.roundtrip(&[b"EXEC"], b"*2\r\n$5\r\nvalue\r\n+PONG\r\n");
    maxmemory(&mut admin, b"0");

    client.roundtrip(&[b"MULTI"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"x", b"1"], b"+QUEUED\r\n");
    client.roundtrip(&[b"GET", b"x"], b"+QUEUED\r\n");
    maxmemory(&mut admin, b"1");
    client.roundtrip(
        &[b"EXEC"],
        b"-EXECABORT Transaction discarded because of: OOM command not allowed when used \
          memory > 'maxmemory'.\r\n",
    );
    maxmemory(&mut admin, b"0");
    // The transaction is gone, nothing of it ran; as Redis, EXEC counts as rejected.
    client.roundtrip(&[b"EXEC"], b"-ERR EXEC without MULTI\r\n");
    client.roundtrip(&[b"GET", b"x"], b"$5\r\nvalue\r\n");
    let stats = common::text(client.request(&[b"INFO", b"commandstats"]));
    let exec = stats
        .lines()
        .find(|line| line.starts_with("cmdstat_exec:"))
        .expect("cmdstat_exec");
    // As Redis: the refused EXEC is a rejected call, EXEC without MULTI a failed one.
    assert!(exec.ends_with(",rejected_calls=1,failed_calls=1"), "{exec}");
}

#[test]
fn config_set_maxmemory_evicts_at_once_and_publishes_evicted_events() {
    let server = start();
    let mut admin = login_plain(&server);
    let mut subscriber = login_plain(&server);
    admin.roundtrip(
        &[b"CONFIG", b"SET", b"notify-keyspace-events", b"Ee"],
        b"+OK\r\n",
    );
    admin.roundtrip(
        &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lru"],
        b"+OK\r\n",
    );
    subscriber.roundtrip(
        &[b"PSUBSCRIBE", b"*"],
        b"*3\r\n$10\r\npsubscribe\r\n$1\r\n*\r\n:1\r\n",
    );
    admin.roundtrip(&[b"SET", b"foo", b"bar"], b"+OK\r\n");
    // No command follows: the new limit alone evicts, as Redis's `updateMaxmemory`.
    maxmemory(&mut admin, b"1");
    assert_eq!(
        common::text(subscriber.read_reply()),
        "*4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$22\r\n__keyevent@0__:evicted\r\n$3\r\nfoo\r\n"
    );
    maxmemory(&mut admin, b"0");
    admin.roundtrip(&[b"DBSIZE"], b":0\r\n");
    assert_eq!(
        common::info_field(
            &common::text(admin.request(&[b"INFO", b"stats"])),
            "evicted_keys"
        ),
        "1"
    );
}
