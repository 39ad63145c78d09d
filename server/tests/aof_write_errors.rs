//! A log that cannot be written (a full disk; here RLIMIT_FSIZE, which fails writes with
//! EFBIG as a full disk fails them with ENOSPC): write commands are refused with Redis's
//! `MISCONF` error instead of being acknowledged, reads go on, and writes are accepted again
//! once the log can be written.

mod common;

use std::time::Duration;

use common::{login_plain, persistence_field, wait_for, Server};

const ARGS: &[&str] = &["--tls", "off", "--smp", "1", "--appendfsync", "everysec"];

#[test]
fn a_log_that_cannot_be_written_refuses_writes_with_misconf_until_it_can() {
    let server = Server::start_with_file_size_limit(ARGS, 16 * 1024);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"SET", b"early", b"before the limit"], b"+OK\r\n");
    wait_for(|| server.metric("shardline_aof_written_bytes_total", &[]) > 0.0);
    // Exported (at 0) alongside the other log counters.
    assert!(server
        .scrape()
        .contains("shardline_aof_write_errors_total{shard=\"0\"} 0\n"));

    // Fill the log past 16 KiB; once a write fails, SETs are refused.
    let value = vec![b'v'; 200];
    let mut refused = None;
    for i in 0..2000 {
        let key = format!("k{i}");
        let reply = client.request(&[b"SET", key.as_bytes(), &value]);
        if reply != b"+OK\r\n" {
            refused = Some(reply);
            break;
        }
        if i % 20 == 19 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let refused = String::from_utf8(refused.expect("a SET refused")).unwrap();
    assert_eq!(
        refused,
        "-MISCONF Errors writing to the AOF file: File too large (os error 27)\r\n"
    );
    assert_eq!(
        persistence_field(&mut client, "aof_last_write_status"),
        "err"
    );
    wait_for(|| server.metric("shardline_aof_write_errors_total", &[]) >= 1.0);
    // Reads and commands that change nothing go on.
    client.roundtrip(&[b"GET", b"early"], b"$16\r\nbefore the limit\r\n");
    client.roundtrip(&[b"PING"], b"+PONG\r\n");
    assert!(server
        .log_lines()
        .iter()
        .any(|l| l.contains("File too large") && l.contains("refused (MISCONF)")));

    // Room again: the buffered records are written, writes are accepted.
    server.set_file_size_limit(libc::RLIM_INFINITY);
    wait_for(|| persistence_field(&mut client, "aof_last_write_status") == "ok");
    client.roundtrip(&[b"SET", b"late", b"after"], b"+OK\r\n");
    assert!(server
        .log_lines()
        .iter()
        .any(|l| l.contains("writing works again")));

    // Everything acknowledged is in the log: a clean restart brings it back.
    let password = server.password.clone();
    let dbsize = client.request(&[b"DBSIZE"]);
    client.roundtrip(&[b"SAVE"], b"+OK\r\n");
    let server = Server::restart_in(server.kill9(), ARGS, &password);
    let mut client = login_plain(&server);
    client.roundtrip(&[b"DBSIZE"], &dbsize);
    client.roundtrip(&[b"GET", b"late"], b"$5\r\nafter\r\n");
    client.roundtrip(&[b"GET", b"early"], b"$16\r\nbefore the limit\r\n");
}

#[test]
fn with_always_info_still_answers_while_the_log_cannot_be_written() {
    let args = &["--tls", "off", "--smp", "2", "--appendfsync", "always"];
    let server = Server::start_with_file_size_limit(args, 16 * 1024);
    let mut writer = login_plain(&server);
    let mut observer = login_plain(&server);
    // A record larger than the limit: its write fails, so its reply waits for the disk.
    let value = vec![b'x'; 32 * 1024];
    writer.send(&[b"SET", b"big", &value]);
    // INFO gathers every shard's figures without waiting for any log.
    wait_for(|| persistence_field(&mut observer, "aof_last_write_status") == "err");
    server.set_file_size_limit(libc::RLIM_INFINITY);
    assert_eq!(writer.read_reply(), b"+OK\r\n");
    wait_for(|| persistence_field(&mut observer, "aof_last_write_status") == "ok");

    let password = server.password.clone();
    let server = Server::restart_in(server.kill9(), args, &password);
    let reply = login_plain(&server).request(&[b"STRLEN", b"big"]);
    assert_eq!(reply, b":32768\r\n");
}
