//! Forwarding to the owner shard: what a connection pipelines for another shard crosses in
//! batches (one message per poll, not one per command), its replies come back in batches, and
//! it still executes in order.

mod common;

use common::{encode_command, int_reply, RawClient, Server};
use shardline::keyspace::slot::owner_shard;

/// The first `n` keys `fw0`, `fw1`, … owned by `shard` of 2.
fn keys_on(shard: usize, n: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("fw{i}"))
        .filter(|key| owner_shard(key.as_bytes(), 2) == shard)
        .take(n)
        .collect()
}

#[test]
fn pipelined_forwards_cross_in_batches_and_keep_their_order() {
    let server = Server::start(&["--smp", "2"]);
    let mut client = RawClient::authenticated(&server);
    // 64 keys on each shard, interleaved: whichever shard the connection lands on, 64 of them
    // live on the other one.
    let keys: Vec<String> = keys_on(0, 64)
        .into_iter()
        .zip(keys_on(1, 64))
        .flat_map(|(a, b)| [a, b])
        .collect();
    let messages_before = server.metric("shardline_cross_shard_batch_requests_count", &[]);
    let forwarded_before = server.metric("shardline_cross_shard_batch_requests_sum", &[]);
    let reply_messages_before =
        server.metric("shardline_cross_shard_reply_batch_replies_count", &[]);
    let replied_before = server.metric("shardline_cross_shard_reply_batch_replies_sum", &[]);

    // One write: a SET of every key, then an INCR of every key, which must see its SET.
    let mut pipeline = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        pipeline.extend(encode_command(&[
            b"SET",
            key.as_bytes(),
            i.to_string().as_bytes(),
        ]));
    }
    for key in &keys {
        pipeline.extend(encode_command(&[b"INCR", key.as_bytes()]));
    }
    client.send_raw(&pipeline);
    for key in &keys {
        assert_eq!(client.read_reply(), b"+OK\r\n", "SET {key}");
    }
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(int_reply(&client.read_reply()), i as i64 + 1, "INCR {key}");
    }

    let forwarded =
        server.metric("shardline_cross_shard_batch_requests_sum", &[]) - forwarded_before;
    let messages =
        server.metric("shardline_cross_shard_batch_requests_count", &[]) - messages_before;
    assert_eq!(
        forwarded, 128.0,
        "64 SETs and 64 INCRs hop to the other shard"
    );
    // One message per command before batching; a loaded machine may split the pipeline where
    // the connection's task quota ends, but never into single commands.
    assert!(
        (1.0..=64.0).contains(&messages),
        "{forwarded} forwarded requests crossed in {messages} messages"
    );
    // The replies come back the same way: all of them, batched.
    let replied =
        server.metric("shardline_cross_shard_reply_batch_replies_sum", &[]) - replied_before;
    let reply_messages = server.metric("shardline_cross_shard_reply_batch_replies_count", &[])
        - reply_messages_before;
    assert_eq!(replied, 128.0, "every forwarded request is answered");
    assert!(
        (1.0..=64.0).contains(&reply_messages),
        "{replied} replies came back in {reply_messages} messages"
    );
    client.roundtrip(&[b"GET", keys[1].as_bytes()], b"$1\r\n2\r\n");
}
