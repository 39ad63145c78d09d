//! DEBUG subcommands behind `--enable-debug-command`, with the exact replies of
//! redis-server 7.0.15 (`enable-debug-command yes`) in RESP2 and RESP3: ERROR, PROTOCOL,
//! SET-ACTIVE-EXPIRE, QUICKLIST-PACKED-THRESHOLD, REPLYBUFFER; Redis subcommands not served
//! here are refused by name. DIGEST, DIGEST-VALUE, OBJECT, RELOAD and LOADAOF: `debug_data.rs`.

mod common;

use std::time::Duration;

use common::{int_reply, RawClient, Server};

const ARGS: &[&str] = &["--smp", "2", "--enable-debug-command"];

/// (type, RESP2 reply, RESP3 reply), as redis-server 7.0.15 answers DEBUG PROTOCOL.
const PROTOCOL: &[(&str, &[u8], &[u8])] = &[
    (
        "string",
        b"$11\r\nHello World\r\n",
        b"$11\r\nHello World\r\n",
    ),
    ("integer", b":12345\r\n", b":12345\r\n"),
    ("double", b"$5\r\n3.141\r\n", b",3.141\r\n"),
    (
        "bignum",
        b"$37\r\n1234567999999999999999999999999999999\r\n",
        b"(1234567999999999999999999999999999999\r\n",
    ),
    ("null", b"$-1\r\n", b"_\r\n"),
    (
        "array",
        b"*3\r\n:0\r\n:1\r\n:2\r\n",
        b"*3\r\n:0\r\n:1\r\n:2\r\n",
    ),
    (
        "set",
        b"*3\r\n:0\r\n:1\r\n:2\r\n",
        b"~3\r\n:0\r\n:1\r\n:2\r\n",
    ),
    (
        "map",
        b"*6\r\n:0\r\n:0\r\n:1\r\n:1\r\n:2\r\n:0\r\n",
        b"%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n",
    ),
    (
        "attrib",
        b"$39\r\nSome real reply following the attribute\r\n",
        b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n\
          $39\r\nSome real reply following the attribute\r\n",
    ),
    (
        "push",
        b"-ERR RESP2 is not supported by this command\r\n",
        b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n\
          $40\r\nSome real reply following the push reply\r\n",
    ),
    (
        "verbatim",
        b"$25\r\nThis is a verbatim\nstring\r\n",
        b"=29\r\ntxt:This is a verbatim\nstring\r\n",
    ),
    ("true", b":1\r\n", b"#t\r\n"),
    ("false", b":0\r\n", b"#f\r\n"),
    (
        "nosuch",
        b"-ERR Wrong protocol type name. Please use one of the following: \
          string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false\r\n",
        b"-ERR Wrong protocol type name. Please use one of the following: \
          string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false\r\n",
    ),
];

#[test]
fn debug_protocol_replies_every_type_as_redis_in_resp2_and_resp3() {
    let server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    for (kind, resp2, _) in PROTOCOL {
        client.roundtrip(&[b"DEBUG", b"PROTOCOL", kind.as_bytes()], resp2);
    }
    let hello = client.request(&[b"HELLO", b"3"]);
    assert!(hello.starts_with(b"%7\r\n"), "{hello:?}");
    for (kind, _, resp3) in PROTOCOL {
        client.roundtrip(&[b"DEBUG", b"PROTOCOL", kind.as_bytes()], resp3);
    }
}

#[test]
fn debug_error_and_accepted_subcommands_answer_as_redis() {
    let server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    client.roundtrip(
        &[b"DEBUG", b"ERROR", b"my message here"],
        b"-my message here\r\n",
    );
    client.roundtrip(&[b"DEBUG", b"ERROR", b"-X y"], b"--X y\r\n");
    for ok in [
        &[&b"DEBUG"[..], b"QUICKLIST-PACKED-THRESHOLD", b"100"][..],
        &[b"DEBUG", b"quicklist-packed-threshold", b"0"],
        &[b"DEBUG", b"REPLYBUFFER", b"peak-reset-time", b"never"],
        &[b"DEBUG", b"REPLYBUFFER", b"resizing", b"0"],
    ] {
        client.roundtrip(ok, b"+OK\r\n");
    }
    client.roundtrip(
        &[b"DEBUG", b"QUICKLIST-PACKED-THRESHOLD", b"5gb"],
        b"-ERR argument must be a memory value bigger than 1 and smaller than 4gb\r\n",
    );
    for (args, name) in [
        (&[&b"DEBUG"[..], b"REPLYBUFFER", b"x"][..], "REPLYBUFFER"),
        (&[b"DEBUG", b"ERROR"], "ERROR"),
        (&[b"DEBUG", b"SET-ACTIVE-EXPIRE"], "SET-ACTIVE-EXPIRE"),
        (&[b"DEBUG", b"PROTOCOL"], "PROTOCOL"),
        (&[b"DEBUG", b"NOSUCH"], "NOSUCH"),
    ] {
        client.roundtrip(
            args,
            format!(
                "-ERR unknown subcommand or wrong number of arguments for '{name}'. Try DEBUG \
                 HELP.\r\n"
            )
            .as_bytes(),
        );
    }
    for name in ["POPULATE", "HTSTATS-KEY", "jmap"] {
        client.roundtrip(
            &[b"DEBUG", name.as_bytes()],
            format!(
                "-ERR DEBUG {} is not supported by shardline\r\n",
                name.to_ascii_uppercase()
            )
            .as_bytes(),
        );
    }
}

/// DEBUG SET-ACTIVE-EXPIRE 0 stops every shard's expiry sweep (expired keys stay counted
/// until touched), 1 starts it again.
#[test]
fn debug_set_active_expire_turns_the_sweep_off_and_on() {
    let server = Server::start(ARGS);
    let mut client = RawClient::authenticated(&server);
    let dbsize = |client: &mut RawClient| int_reply(&client.request(&[b"DBSIZE"]));
    client.roundtrip(&[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0"], b"+OK\r\n");
    for i in 0..20 {
        let key = format!("k{i}");
        client.roundtrip(&[b"SET", key.as_bytes(), b"v", b"PX", b"50"], b"+OK\r\n");
    }
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(dbsize(&mut client), 20, "no sweep while off");
    client.roundtrip(&[b"DEBUG", b"SET-ACTIVE-EXPIRE", b"1"], b"+OK\r\n");
    common::wait_for(|| dbsize(&mut client) == 0);
}
