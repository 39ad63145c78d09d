//! What the append-only log shows the operator: `shardline check-aof [--fix]`, INFO
//! persistence, LASTSAVE and the `aof_*` metrics.

mod common;

use std::process::Command;

use common::{aof_path, info_field, login_plain, wait_for, Server};

const ARGS: &[&str] = &["--tls", "off", "--smp", "2", "--appendfsync", "always"];

fn check_aof(args: &[&std::ffi::OsStr]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_shardline"))
        .arg("check-aof")
        .args(args)
        .output()
        .expect("run shardline check-aof");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Three keys with one hash tag (one shard), then a crash; returns the dir, the password and
/// the log holding the keys.
fn three_keys() -> (tempfile::TempDir, String, std::path::PathBuf) {
    let server = Server::start(ARGS);
    let mut client = login_plain(&server);
    for (key, value) in [(&b"{c}1"[..], &b"x"[..]), (b"{c}2", b"y"), (b"{c}3", b"z")] {
        client.roundtrip(&[b"SET", key, value], b"+OK\r\n");
    }
    let password = server.password.clone();
    let dir = server.kill9();
    let log = (0..2)
        .map(|shard| aof_path(dir.path(), shard))
        .find(|path| std::fs::metadata(path).is_ok_and(|m| m.len() > 0))
        .expect("the log holding the keys");
    (dir, password, log)
}

const RECORD: usize = b"*3\r\n$3\r\nSET\r\n$4\r\n{c}1\r\n$1\r\nx\r\n".len();

#[test]
fn check_aof_reports_the_first_bad_record_and_fix_truncates_there() {
    let (dir, password, log) = three_keys();
    let size = std::fs::metadata(&log).unwrap().len() as usize;
    assert_eq!(size, 3 * RECORD);
    let (ok, text) = check_aof(&[log.as_os_str()]);
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!("size={size}, ok_up_to={size}, diff=0"))
            && text.contains("is valid"),
        "{text}"
    );

    let mut bytes = std::fs::read(&log).unwrap();
    bytes[RECORD + 4] = b'!'; // the '$' of the second record's first bulk string
    std::fs::write(&log, &bytes).unwrap();
    let (ok, text) = check_aof(&[log.as_os_str()]);
    assert!(!ok, "{text}");
    let at = format!(
        "{}:{RECORD}: bad record: expected '$' starting a bulk string",
        log.display()
    );
    assert!(text.contains(&at), "{text}");
    assert!(
        text.contains(&format!("ok_up_to={RECORD}, diff={}", size - RECORD)),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bytes,
        "checking without --fix changed the file"
    );

    let (ok, text) = check_aof(&["--fix".as_ref(), log.as_os_str()]);
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "Successfully truncated AOF {} to {RECORD} bytes",
            log.display()
        )),
        "{text}"
    );
    assert_eq!(std::fs::read(&log).unwrap(), &bytes[..RECORD]);

    let server = Server::restart_in(dir, ARGS, &password);
    let mut client = login_plain(&server);
    client.roundtrip(
        &[b"MGET", b"{c}1", b"{c}2", b"{c}3"],
        b"*3\r\n$1\r\nx\r\n$-1\r\n$-1\r\n",
    );
}

#[test]
fn check_aof_reports_a_truncated_tail() {
    let (_dir, _, log) = three_keys();
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&log, &bytes[..bytes.len() - 3]).unwrap();
    let (ok, text) = check_aof(&[log.as_os_str()]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "{}:{}: the file ends inside a record",
            log.display(),
            2 * RECORD
        )),
        "{text}"
    );
    let (ok, text) = check_aof(&[log.as_os_str(), "--fix".as_ref()]);
    assert!(ok, "{text}");
    assert_eq!(std::fs::metadata(&log).unwrap().len() as usize, 2 * RECORD);
}

#[test]
fn info_persistence_lastsave_and_metrics_have_real_values() {
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let server = Server::start(ARGS);
    let mut client = login_plain(&server);
    for i in 0..20 {
        let key = format!("k{i}");
        client.roundtrip(&[b"SET", key.as_bytes(), b"v"], b"+OK\r\n");
    }
    client.roundtrip(&[b"SET", b"k0", b"v", b"NX"], b"$-1\r\n"); // changed nothing: not logged
    let info = String::from_utf8_lossy(&client.request(&[b"INFO", b"persistence"])).into_owned();
    let on_disk: u64 = (0..2)
        .map(|s| {
            std::fs::metadata(aof_path(server.dir.path(), s))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(
        info_field(&info, "aof_current_size"),
        on_disk.to_string(),
        "{info}"
    );
    for (name, value) in [
        ("loading", "0"),
        ("aof_enabled", "1"),
        ("aof_rewrite_in_progress", "0"),
        ("aof_last_bgrewrite_status", "ok"),
        ("aof_last_write_status", "ok"),
        ("aof_buffer_length", "0"),
        ("aof_base_size", "0"),
        ("rdb_changes_since_last_save", "20"),
    ] {
        assert_eq!(info_field(&info, name), value, "{info}");
    }
    let lastsave = String::from_utf8_lossy(&client.request(&[b"LASTSAVE"])).into_owned();
    let lastsave: u64 = lastsave.trim().trim_start_matches(':').parse().unwrap();
    assert!(
        (before.saturating_sub(1)..=before + 30).contains(&lastsave),
        "LASTSAVE {lastsave}, test start {before}"
    );
    assert_eq!(
        info_field(&info, "rdb_last_save_time"),
        lastsave.to_string()
    );

    wait_for(|| server.metric("shardline_aof_records_total", &[]) == 20.0);
    assert_eq!(
        server.metric("shardline_aof_written_bytes_total", &[]),
        on_disk as f64
    );
    assert_eq!(
        server.metric("shardline_aof_fsynced_records_total", &[]),
        20.0
    );
    let fsyncs = server.metric("shardline_aof_fsync_duration_seconds_count", &[]);
    assert!(
        (1.0..=20.0).contains(&fsyncs),
        "{fsyncs} fdatasyncs for 20 writes"
    );
    assert_eq!(
        server.metric("shardline_aof_size_bytes", &[]),
        on_disk as f64
    );

    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), ARGS, &password);
    // The endpoint answers before the shards have replayed their logs.
    wait_for(|| server.metric("shardline_aof_replayed_records", &[]) == 20.0);
    let mut client = login_plain(&server);
    let info = String::from_utf8_lossy(&client.request(&[b"INFO", b"persistence"])).into_owned();
    // No rewrite ran: no base file; the replayed log is the current size.
    assert_eq!(info_field(&info, "aof_base_size"), "0", "{info}");
    assert_eq!(
        info_field(&info, "aof_current_size"),
        on_disk.to_string(),
        "{info}"
    );

    // A save (a rewrite here) is what "since last save" counts from.
    client.roundtrip(&[b"SET", b"one", b"more"], b"+OK\r\n");
    let changes = |client: &mut common::RawClient| {
        let info =
            String::from_utf8_lossy(&client.request(&[b"INFO", b"persistence"])).into_owned();
        info_field(&info, "rdb_changes_since_last_save")
    };
    assert_ne!(changes(&mut client), "0");
    client.roundtrip(&[b"SAVE"], b"+OK\r\n");
    assert_eq!(changes(&mut client), "0");
    client.roundtrip(&[b"SET", b"after", b"save"], b"+OK\r\n");
    assert_eq!(changes(&mut client), "1");
}

#[test]
fn info_persistence_without_the_log() {
    let server = Server::start(&["--tls", "off", "--appendonly", "no"]);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"SET", b"k", b"v"], b"+OK\r\n");
    let info = String::from_utf8_lossy(&client.request(&[b"INFO", b"persistence"])).into_owned();
    assert_eq!(info_field(&info, "aof_enabled"), "0", "{info}");
    assert!(!info.contains("aof_current_size"), "{info}");
}

#[test]
fn check_aof_on_a_manifest_checks_each_file_and_fixes_only_the_last() {
    let server = Server::start(ARGS);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"SET", b"{c}base", b"1"], b"+OK\r\n");
    client.roundtrip(&[b"SAVE"], b"+OK\r\n");
    client.roundtrip(&[b"SET", b"{c}incr", b"2"], b"+OK\r\n");
    let dir = server.kill9();
    let logs = dir.path().join("appendonlydir");
    let (manifest, base, incr) = (0..2)
        .map(|s| {
            (
                logs.join(format!("shard-{s}.manifest")),
                logs.join(format!("shard-{s}.base.1.aof")),
                logs.join(format!("shard-{s}.incr.1.aof")),
            )
        })
        .find(|(_, _, incr)| std::fs::metadata(incr).is_ok_and(|m| m.len() > 0))
        .expect("the shard holding {c}");
    let manifest_text = std::fs::read(&manifest).unwrap();

    let (ok, text) = check_aof(&[manifest.as_os_str()]);
    assert!(ok, "{text}");
    assert!(text.contains("names 2 file(s)"), "{text}");
    assert_eq!(text.matches("is valid").count(), 2, "{text}");

    // A torn last record in the incremental file: reported, and --fix cuts only that file.
    let incr_size = std::fs::metadata(&incr).unwrap().len();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&incr)
        .unwrap();
    std::io::Write::write_all(&mut file, b"*3\r\n$3\r\nSET").unwrap();
    let (ok, text) = check_aof(&[manifest.as_os_str()]);
    assert!(!ok && text.contains("use --fix"), "{text}");
    let (ok, text) = check_aof(&["--fix".as_ref(), manifest.as_os_str()]);
    assert!(ok, "{text}");
    assert_eq!(std::fs::metadata(&incr).unwrap().len(), incr_size);
    assert_eq!(std::fs::read(&manifest).unwrap(), manifest_text);

    // A bad base is never truncated through the manifest: every later file depends on it.
    let mut bytes = std::fs::read(&base).unwrap();
    bytes[0] = b'!';
    std::fs::write(&base, &bytes).unwrap();
    let (ok, text) = check_aof(&["--fix".as_ref(), manifest.as_os_str()]);
    assert!(
        !ok && text.contains("is not the last file of the log"),
        "{text}"
    );
    assert_eq!(std::fs::read(&base).unwrap(), bytes);
    assert_eq!(std::fs::read(&manifest).unwrap(), manifest_text);
}
