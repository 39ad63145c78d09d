//! `--maxmemory` split over 2 shards, under each `--maxmemory-policy`: Redis's `-OOM` error
//! for `denyoom` commands when nothing may be evicted, evictions (counted in
//! `shardline_evicted_keys_total`) that keep the dataset within the limit otherwise, and the
//! keys each policy must spare.

mod common;

use common::{login_plain, RawClient, Server};

const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";

fn start(policy: &str) -> Server {
    Server::start(&[
        "--tls",
        "off",
        "--smp",
        "2",
        "--appendonly",
        "no",
        "--maxmemory",
        "200kb",
        "--maxmemory-policy",
        policy,
    ])
}

fn dbsize(client: &mut RawClient) -> u64 {
    let reply = String::from_utf8_lossy(&client.request(&[b"DBSIZE"])).into_owned();
    reply
        .trim_start_matches(':')
        .trim_end()
        .parse()
        .expect("DBSIZE integer")
}

fn evicted(server: &Server) -> f64 {
    server.metric("shardline_evicted_keys_total", &[])
}

/// Writes `count` keys `prefix:N` with a 100-byte value (each ~200 bytes in the estimate:
/// 400 KB in all, twice the limit); every write must succeed.
fn fill(
    client: &mut RawClient,
    prefix: &str,
    count: usize,
    ttl: Option<u64>,
    between: impl Fn(&mut RawClient),
) {
    let value = [b'v'; 100];
    for i in 0..count {
        let key = format!("{prefix}:{i}");
        match ttl {
            Some(seconds) => {
                let ex = (seconds + i as u64).to_string();
                client.roundtrip(
                    &[b"SET", key.as_bytes(), &value, b"EX", ex.as_bytes()],
                    b"+OK\r\n",
                );
            }
            None => client.roundtrip(&[b"SET", key.as_bytes(), &value], b"+OK\r\n"),
        }
        if i % 20 == 19 {
            between(client);
        }
    }
}

#[test]
fn noeviction_refuses_denyoom_commands_only() {
    let server = start("noeviction");
    let mut client = login_plain(&server);
    let value = [b'v'; 100];
    let mut refused_at = None;
    for i in 0..4000 {
        let key = format!("k:{i}");
        client.send(&[b"SET", key.as_bytes(), &value]);
        let reply = client.read_reply();
        if reply != b"+OK\r\n" {
            assert_eq!(
                String::from_utf8_lossy(&reply),
                String::from_utf8_lossy(OOM)
            );
            refused_at = Some(i);
            break;
        }
    }
    let refused_at = refused_at.expect("an OOM error before 4000 keys of 200 bytes");
    assert!(refused_at > 100, "refused after only {refused_at} keys");
    // Reads and deletions still run; nothing was evicted.
    client.roundtrip(
        &[b"GET", b"k:0"],
        &[b"$100\r\n".as_slice(), &value, b"\r\n"].concat(),
    );
    client.roundtrip(&[b"DEL", b"k:0", b"k:1", b"k:2"], b":3\r\n");
    assert_eq!(evicted(&server), 0.0);
    client.roundtrip(&[b"CONFIG", b"SET", b"maxmemory", b"0"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"after", b"1"], b"+OK\r\n");
}

#[test]
fn allkeys_lru_evicts_idle_keys_and_spares_hot_ones() {
    let server = start("allkeys-lru");
    let mut client = login_plain(&server);
    let before = evicted(&server);
    for i in 0..4 {
        client.roundtrip(&[b"SET", format!("hot:{i}").as_bytes(), b"h"], b"+OK\r\n");
    }
    let touch_hot = |client: &mut RawClient| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        for i in 0..4 {
            client.roundtrip(&[b"GET", format!("hot:{i}").as_bytes()], b"$1\r\nh\r\n");
        }
    };
    fill(&mut client, "cold", 2000, None, touch_hot);
    let size = dbsize(&mut client);
    assert!(size < 2004, "nothing evicted: {size} keys");
    assert!(size > 500, "evicted too much: {size} keys");
    let evicted_now = evicted(&server) - before;
    assert_eq!(evicted_now, (2004 - size) as f64);
    for i in 0..4 {
        client.roundtrip(&[b"EXISTS", format!("hot:{i}").as_bytes()], b":1\r\n");
    }
}

#[test]
fn allkeys_random_evicts() {
    let server = start("allkeys-random");
    let mut client = login_plain(&server);
    fill(&mut client, "r", 2000, None, |_| {});
    let size = dbsize(&mut client);
    assert!((500..2000).contains(&size), "{size} keys");
    assert_eq!(evicted(&server), (2000 - size) as f64);
}

#[test]
fn volatile_policies_evict_only_keys_with_a_deadline() {
    for policy in [
        "volatile-lru",
        "volatile-random",
        "volatile-ttl",
        "volatile-lfu",
    ] {
        let server = start(policy);
        let mut client = login_plain(&server);
        fill(&mut client, "keep", 300, None, |_| {});
        fill(&mut client, "tmp", 2000, Some(1000), |_| {});
        let size = dbsize(&mut client);
        assert!(size < 2300, "{policy}: nothing evicted");
        assert_eq!(evicted(&server), (2300 - size) as f64, "{policy}");
        for i in 0..300 {
            client.roundtrip(&[b"EXISTS", format!("keep:{i}").as_bytes()], b":1\r\n");
        }
        // Only keys without a deadline left to evict: a write that needs memory fails.
        client.roundtrip(&[b"PERSIST", b"tmp:1999"], b":1\r\n");
        let mut refused = false;
        for i in 0..3000 {
            client.send(&[b"SET", format!("more:{i}").as_bytes(), &[b'v'; 100]]);
            let reply = client.read_reply();
            if reply == OOM {
                refused = true;
                break;
            }
            assert_eq!(reply, b"+OK\r\n", "{policy}");
        }
        assert!(refused, "{policy}: no OOM once no volatile key is left");
    }
}

#[test]
fn volatile_ttl_evicts_nearest_deadlines_first() {
    let server = start("volatile-ttl");
    let mut client = login_plain(&server);
    fill(&mut client, "t", 2000, Some(1000), |_| {});
    // The survivors have the later deadlines: their mean index is well above the middle.
    let mut survivors = Vec::new();
    for i in 0..2000 {
        if client.request(&[b"EXISTS", format!("t:{i}").as_bytes()]) == b":1\r\n" {
            survivors.push(i as f64);
        }
    }
    assert!(!survivors.is_empty() && survivors.len() < 2000);
    let mean = survivors.iter().sum::<f64>() / survivors.len() as f64;
    assert!(mean > 1200.0, "mean surviving index {mean}");
    // Each shard evicts its nearest deadline first: the earliest key went, the latest stayed.
    client.roundtrip(&[b"EXISTS", b"t:0"], b":0\r\n");
    client.roundtrip(&[b"EXISTS", b"t:1999"], b":1\r\n");
}
