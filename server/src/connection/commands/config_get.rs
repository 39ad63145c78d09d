//! CONFIG GET: the parameters clients and tools ask for (redis-benchmark asks `save` and
//! `appendonly` at start). Configuration is set by flags; CONFIG SET is refused.

use bytes::Bytes;

use crate::keyspace::glob::string_match;
use crate::resp::Frame;
use crate::shard::Shard;

/// `CONFIG GET pattern [pattern …]` → map of matching parameters (RESP2: flat array);
/// `CONFIG SET` → error; `CONFIG RESETSTAT` → OK (no-op).
pub fn config(shard: &Shard, args: &[Bytes]) -> Frame {
    let sub = args[1].to_ascii_uppercase();
    match sub.as_slice() {
        b"GET" if args.len() >= 3 => {
            let params = parameters(shard);
            let mut pairs = Vec::new();
            for (name, value) in &params {
                if args[2..]
                    .iter()
                    .any(|p| string_match(p, name.as_bytes(), true))
                {
                    pairs.push((
                        Frame::Bulk(Bytes::copy_from_slice(name.as_bytes())),
                        Frame::Bulk(Bytes::from(value.clone())),
                    ));
                }
            }
            Frame::Map(pairs)
        }
        b"GET" => Frame::error("ERR wrong number of arguments for 'config|get' command"),
        b"SET" => Frame::error(
            "ERR CONFIG SET is not supported: shardline is configured by command-line flags",
        ),
        b"RESETSTAT" => Frame::ok(),
        _ => Frame::error(format!(
            "ERR unknown subcommand '{}'. Try CONFIG HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

fn parameters(shard: &Shard) -> Vec<(&'static str, String)> {
    let config = &shard.shared.config;
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let tls = shard.shared.tls.is_some();
    let port = shard.shared.bound.port().to_string();
    vec![
        ("appendonly", "no".into()),
        ("bind", shard.shared.bound.ip().to_string()),
        (
            "client-output-buffer-limit",
            config.client_output_buffer_limit.to_string(),
        ),
        ("databases", config.databases.to_string()),
        ("enable-debug-command", yes_no(config.enable_debug_command)),
        ("maxclients", shard.shared.clients.max().to_string()),
        ("maxmemory", "0".into()),
        ("maxmemory-policy", "noeviction".into()),
        ("port", if tls { "0".into() } else { port.clone() }),
        ("proto-max-bulk-len", config.proto_max_bulk_len.to_string()),
        (
            "client-query-buffer-limit",
            config.client_query_buffer_limit.to_string(),
        ),
        ("save", String::new()),
        ("timeout", "0".into()),
        ("tls-port", if tls { port } else { "0".into() }),
    ]
}
