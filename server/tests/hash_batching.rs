//! `--hash-batch`: AUTHs that reach a shard together are hashed together (multi-buffer
//! SHA-512) in every hash mode, and the `password_hash_batch_size` histogram shows it.

mod common;

use common::{RawClient, Server};

const CLIENTS: usize = 8;

/// Sends AUTH on every client before reading any reply, then checks every reply.
fn auth_burst(server: &Server, clients: &mut [RawClient], password: &str) {
    let frame = common::encode_command(&[b"AUTH", b"default", password.as_bytes()]);
    for c in clients.iter_mut() {
        c.send_raw(&frame);
    }
    for c in clients.iter_mut() {
        assert_eq!(c.read_reply(), b"+OK\r\n", "{}", server.port());
    }
}

/// (count, sum) of `shardline_password_hash_batch_size` for `mode`.
fn batch_sizes(server: &Server, mode: &str) -> (f64, f64) {
    let labels = [("mode", mode)];
    (
        server.metric("shardline_password_hash_batch_size_count", &labels),
        server.metric("shardline_password_hash_batch_size_sum", &labels),
    )
}

fn lanes() -> usize {
    shardline_auth::HashBatch::Auto
        .kernel()
        .map_or(1, |k| k.lanes())
}

#[test]
fn concurrent_auths_share_batches_in_every_hash_mode() {
    for mode in ["inline", "yield", "offload"] {
        let server = Server::start(&["--smp", "1", "--hash-mode", mode]);
        let info =
            String::from_utf8(RawClient::authenticated(&server).request(&[b"INFO", b"server"]))
                .expect("utf-8");
        assert!(
            info.contains(&format!("hash_batch_lanes:{}\r\n", lanes())),
            "{info}"
        );
        let mut clients: Vec<RawClient> =
            (0..CLIENTS).map(|_| RawClient::connect(&server)).collect();
        // Eight AUTHs read in one reactor turn are queued before the first is hashed; on a
        // loaded machine a burst can still be split, so up to 20 bursts are tried.
        let mut bursts = 0.0;
        let (mut count, mut sum) = (0.0, 0.0);
        for _ in 0..20 {
            auth_burst(&server, &mut clients, &server.password);
            bursts += 1.0;
            (count, sum) = batch_sizes(&server, mode);
            if sum > count {
                break;
            }
        }
        // One observation per hashed login: the `authenticated` client's and the bursts'.
        assert_eq!(count, 1.0 + bursts * CLIENTS as f64, "{mode}");
        if lanes() > 1 {
            assert!(
                sum > count,
                "{mode}: no batch larger than 1 in {bursts} bursts"
            );
            assert!(sum <= count * lanes() as f64, "{mode}");
        } else {
            assert_eq!(sum, count, "{mode}: no lanes, no batches");
        }
        assert_eq!(
            server.metric("shardline_logins_total", &[("result", "accepted")]),
            count
        );
    }
}

#[test]
fn hash_batch_off_hashes_one_login_at_a_time() {
    let server = Server::start(&["--smp", "1", "--hash-mode", "inline", "--hash-batch", "off"]);
    let mut admin = RawClient::authenticated(&server);
    assert_eq!(
        admin.request(&[b"CONFIG", b"GET", b"hash-batch"]),
        b"*2\r\n$10\r\nhash-batch\r\n$3\r\noff\r\n"
    );
    let info = String::from_utf8(admin.request(&[b"INFO", b"server"])).expect("utf-8");
    assert!(info.contains("hash_batch_lanes:1\r\n"), "{info}");
    let mut clients: Vec<RawClient> = (0..CLIENTS).map(|_| RawClient::connect(&server)).collect();
    for _ in 0..3 {
        auth_burst(&server, &mut clients, &server.password);
    }
    let (count, sum) = batch_sizes(&server, "inline");
    assert_eq!(count, 1.0 + 3.0 * CLIENTS as f64);
    assert_eq!(sum, count, "every login hashed alone");
    assert_eq!(
        server.metric(
            "shardline_password_hash_batch_size_bucket",
            &[("mode", "inline"), ("le", "1")]
        ),
        count
    );
}

#[test]
fn hash_batch_refuses_unknown_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = common::start_failure(dir.path(), &["--hash-batch", "on"]);
    assert!(
        err.contains("--hash-batch") && err.contains("auto"),
        "{err}"
    );
}
