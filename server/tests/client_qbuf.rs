//! CLIENT LIST `qbuf` / `qbuf-free` as Redis 7.0 reports them (unit/querybuf): `qbuf` is
//! what is buffered unparsed now (0 for an idle connection), `qbuf + qbuf-free` the query
//! buffer's allocation: one 16 KiB read after a small request, given back after 3 s idle,
//! grown by a big request and shrunk back towards the recent peak by later small ones.

mod common;

use std::time::Duration;

use common::{login_plain, text, RawClient, Server};

/// `(qbuf, qbuf-free)` of the connection named `name`, from `admin`'s CLIENT LIST.
fn query_buffer(admin: &mut RawClient, name: &str) -> (usize, usize) {
    let list = text(admin.request(&[b"CLIENT", b"LIST"]));
    let line = list
        .lines()
        .find(|line| line.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no {name} in {list}"));
    let field = |key: &str| -> usize {
        line.split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line}"))
    };
    (field("qbuf"), field("qbuf-free"))
}

#[test]
fn qbuf_and_qbuf_free_follow_redis_query_buffer() {
    let server = Server::start(&["--tls", "off", "--smp", "1", "--appendonly", "no"]);
    let mut admin = login_plain(&server);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"CLIENT", b"SETNAME", b"qb"], b"+OK\r\n");
    let (qbuf, free) = query_buffer(&mut admin, "qb");
    assert_eq!(qbuf, 0, "nothing left unparsed");
    assert!((16384..32768).contains(&(qbuf + free)), "{free}");
    // Idle for more than 2 whole seconds: given back.
    std::thread::sleep(Duration::from_millis(3100));
    assert_eq!(query_buffer(&mut admin, "qb"), (0, 0));

    let big = vec![b'A'; 400_000];
    client.roundtrip(&[b"SET", b"x", &big], b"+OK\r\n");
    let (_, grown) = query_buffer(&mut admin, "qb");
    assert!(grown > 32768, "{grown}");
    let mut shrunk = grown;
    for _ in 0..100 {
        client.roundtrip(&[b"SET", b"x", &big[..100]], b"+OK\r\n");
        shrunk = query_buffer(&mut admin, "qb").1;
        if shrunk < grown {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(shrunk > 0 && shrunk < grown, "{shrunk} of {grown}");
}
