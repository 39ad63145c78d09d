//! Which shard serves a connection, connections on a chosen shard, and blocked clients.

use super::{info_field, wait_for, RawClient, Server};

/// The shard serving `client`'s connection (CLIENT INFO `shard=`).
pub fn shard_of(client: &mut RawClient) -> usize {
    let info = String::from_utf8_lossy(&client.request(&[b"CLIENT", b"INFO"])).into_owned();
    info.split_whitespace()
        .find_map(|kv| kv.strip_prefix("shard="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no shard= in {info}"))
}

/// A logged-in connection served by shard `shard` (SO_REUSEPORT picks: up to 200 tries).
pub fn client_on(server: &Server, shard: usize) -> RawClient {
    for _ in 0..200 {
        let mut client = RawClient::authenticated(server);
        if shard_of(&mut client) == shard {
            return client;
        }
    }
    panic!("no connection landed on shard {shard} in 200 tries");
}

/// INFO `blocked_clients`, summed over the shards.
pub fn blocked_clients(client: &mut RawClient) -> usize {
    let info = String::from_utf8_lossy(&client.request(&[b"INFO", b"clients"])).into_owned();
    info_field(&info, "blocked_clients")
        .parse()
        .unwrap_or_else(|_| panic!("no blocked_clients in {info}"))
}

/// Waits until `n` clients are blocked.
pub fn wait_blocked(client: &mut RawClient, n: usize) {
    wait_for(|| blocked_clients(client) == n);
}

/// A RESP2 bulk string of `s`.
pub fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}
