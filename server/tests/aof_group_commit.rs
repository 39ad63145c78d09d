//! Group commit under `--appendfsync always` with pipelined clients: up to
//! `--aof-max-inflight-fsyncs` fdatasyncs of a shard's log run at once (records written while
//! one runs get their own at once), every acknowledged write is covered by one and survives a
//! `kill -9`, and with `--aof-max-inflight-fsyncs 1` they run one at a time.

mod common;

use std::time::{Duration, Instant};

use common::{login_plain, wait_for, Server};

const CLIENTS: usize = 8;
/// SETs each client sends in one write before reading their replies.
const PIPELINE: usize = 32;
/// Rounds of `PIPELINE` SETs per client between two looks at the metrics.
const ROUNDS: usize = 20;

fn args(inflight: &str) -> Vec<&str> {
    vec![
        "--tls",
        "off",
        "--smp",
        "1",
        "--appendfsync",
        "always",
        "--aof-max-inflight-fsyncs",
        inflight,
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

#[test]
fn pipelined_clients_get_overlapping_fdatasyncs() {
    let server = Server::start(&args("2"));
    let overlapped = |s: &Server| s.metric("shardline_aof_overlapped_fsyncs_total", &[]);
    let sets = load_until(&server, |s| overlapped(s) > 0.0);
    assert_all_covered(&server, sets);
    let fsyncs = server.metric("shardline_aof_fsync_duration_seconds_count", &[]);
    let overlapped = overlapped(&server);
    assert!(
        overlapped > 0.0 && overlapped < fsyncs,
        "{overlapped} of {fsyncs} fdatasyncs overlapped another for {sets} SETs"
    );
    // Every acknowledged SET was in the log before its reply left.
    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), &args("2"), &password);
    let mut client = login_plain(&server);
    assert_eq!(
        client.request(&[b"DBSIZE"]),
        format!(":{sets}\r\n").into_bytes()
    );
}

#[test]
fn one_inflight_fsync_runs_them_one_at_a_time() {
    let server = Server::start(&args("1"));
    // As much load as the test above needs at most, in groups of several records.
    let sets = load_until(&server, |s| {
        s.metric("shardline_aof_fsync_duration_seconds_count", &[]) >= 20.0
    });
    assert_all_covered(&server, sets);
    assert_eq!(
        server.metric("shardline_aof_overlapped_fsyncs_total", &[]),
        0.0
    );
}
