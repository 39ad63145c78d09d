//! Group commit under `--appendfsync always` with pipelined clients: one durable write
//! (`RWF_DSYNC`) covers many records, every acknowledged write is covered by one and survives
//! a `kill -9`, and a shard appending records while its durable write runs yields its CPU to
//! it unless `--aof-fsync-yield-us 0`.

mod common;

use std::time::{Duration, Instant};

use common::{login_plain, wait_for, Server};

const CLIENTS: usize = 8;
/// SETs each client sends in one write before reading their replies.
const PIPELINE: usize = 32;
/// Rounds of `PIPELINE` SETs per client between two looks at the metrics.
const ROUNDS: usize = 20;

fn args(yield_us: &str) -> Vec<&str> {
    vec![
        "--tls",
        "off",
        "--smp",
        "1",
        "--appendfsync",
        "always",
        "--aof-fsync-yield-us",
        yield_us,
    ]
}

/// `CLIENTS` clients each send `ROUNDS` pipelines of `PIPELINE` SETs (distinct keys, from
/// `first` on) and check every reply; returns the SETs acknowledged.
fn pipelined_load(server: &Server, first: usize) -> usize {
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let mut conn = login_plain(server);
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    let mut batch = Vec::new();
                    for i in 0..PIPELINE {
                        let key = format!("k:{client}:{}", first + round * PIPELINE + i);
                        batch.extend_from_slice(
                            format!("*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$1\r\nv\r\n", key.len())
                                .as_bytes(),
                        );
                    }
                    conn.send_raw(&batch);
                    for _ in 0..PIPELINE {
                        assert_eq!(conn.read_reply(), b"+OK\r\n");
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("client thread");
    }
    CLIENTS * ROUNDS * PIPELINE
}

/// Loads until `done` holds on the metrics (at most 30 s); returns the SETs acknowledged.
fn load_until(server: &Server, mut done: impl FnMut(&Server) -> bool) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut sets = 0;
    loop {
        sets += pipelined_load(server, sets);
        // The `aof_*` series are updated once a second.
        std::thread::sleep(Duration::from_millis(1100));
        if done(server) || Instant::now() > deadline {
            return sets;
        }
    }
}

/// Every acknowledged SET is one record, covered by an fdatasync once its reply left.
fn assert_all_covered(server: &Server, sets: usize) {
    wait_for(|| server.metric("shardline_aof_records_total", &[]) == sets as f64);
    assert_eq!(
        server.metric("shardline_aof_fsynced_records_total", &[]),
        sets as f64
    );
}

/// Records per durable write (fdatasync or `RWF_DSYNC` group write) so far.
fn group_size(server: &Server) -> f64 {
    server.metric("shardline_aof_fsynced_records_total", &[])
        / server.metric("shardline_aof_fsync_duration_seconds_count", &[])
}

#[test]
fn pipelined_clients_share_durable_writes_and_the_shard_yields_to_them() {
    let server = Server::start(&args("20"));
    let yields = |s: &Server| s.metric("shardline_aof_cpu_yields_total", &[]);
    let sets = load_until(&server, |s| yields(s) > 0.0);
    assert_all_covered(&server, sets);
    assert!(yields(&server) > 0.0, "no CPU yield in {sets} SETs");
    // 8 clients with 32 SETs in flight each: a group carries far more than one record.
    let group = group_size(&server);
    assert!(group > 4.0, "{group} records per durable write");
    // Every acknowledged SET was in the log before its reply left.
    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), &args("20"), &password);
    let mut client = login_plain(&server);
    assert_eq!(
        client.request(&[b"DBSIZE"]),
        format!(":{sets}\r\n").into_bytes()
    );
}

#[test]
fn a_zero_yield_interval_never_yields() {
    let server = Server::start(&args("0"));
    let sets = load_until(&server, |s| {
        s.metric("shardline_aof_fsync_duration_seconds_count", &[]) >= 20.0
    });
    assert_all_covered(&server, sets);
    assert!(group_size(&server) > 4.0);
    assert_eq!(server.metric("shardline_aof_cpu_yields_total", &[]), 0.0);
}
