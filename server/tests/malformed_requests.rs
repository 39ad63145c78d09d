//! Hostile input found by fuzzing (fuzz/), sent over TLS: the client gets Redis 7's exact
//! one-line error reply, and the shard keeps serving.

mod common;

use common::{RawClient, Server};

/// A bulk header line that is only CRLF, or starts with LF: before the fix the parser
/// panicked on the first and the shard (the whole one-shard server) died.
#[test]
fn bulk_header_without_type_byte_closes_only_that_client() {
    let server = Server::start(&["--smp", "1"]);
    let mut good = RawClient::authenticated(&server);

    // Replies checked byte for byte against redis-server 7.0.15 (CR/LF shown as a space).
    let expected = b"-ERR Protocol error: expected '$', got ' '\r\n";
    for input in [&b"*1\r\n\r\n"[..], b"*1\r\n\nx\r\n"] {
        let mut bad = RawClient::connect(&server);
        bad.send_raw(input);
        assert_eq!(
            String::from_utf8_lossy(&bad.read_exact_len(expected.len())),
            String::from_utf8_lossy(expected),
            "reply to {input:?}"
        );
        assert!(bad.closed_by_server(), "connection closed after {input:?}");
        good.roundtrip(&[b"PING"], b"+PONG\r\n");
    }
    good.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    good.roundtrip(&[b"GET", b"k"], b"$1\r\nv\r\n");
}

/// An error reply that quotes a client's argument: CR/LF in the argument must not end the
/// reply early (before the fix the client read `-ERR Unsupported option a` and then `+OK`
/// as the reply to its next command).
#[test]
fn line_breaks_in_a_quoted_argument_stay_inside_the_error_reply() {
    let server = Server::start(&["--smp", "1"]);
    let mut client = RawClient::authenticated(&server);
    client.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    // Reply checked byte for byte against redis-server 7.0.15.
    client.roundtrip(
        &[b"EXPIRE", b"k", b"10", b"a\r\n+OK"],
        b"-ERR Unsupported option a  +OK\r\n",
    );
    client.roundtrip(&[b"TTL", b"k"], b":-1\r\n");
}
