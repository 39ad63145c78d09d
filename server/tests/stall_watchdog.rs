//! The stall watchdog end to end: a poll blocked by `DEBUG SLEEP 2` is reported while it still
//! runs — with its task queue, activity and a backtrace of the shard thread — at the notify
//! threshold and again at 2×, 4×, …, within the per-minute limit, and its end is logged once
//! without a second report. One test in its own binary, so no other test's load delays it.

mod common;

use std::time::{Duration, Instant};

use common::{RawClient, Server};

/// `--blocked-reactor-notify-ms` of the test.
const NOTIFY_MS: u64 = 25;
/// `DEBUG SLEEP` length.
const SLEEP_MS: u64 = 2000;

fn in_progress(server: &Server) -> Vec<String> {
    server
        .log_lines()
        .into_iter()
        .filter(|l| l.contains("and still running"))
        .collect()
}

fn counter(server: &Server, name: &str) -> f64 {
    common::metric_sum(&server.scrape(), name, &[])
}

#[test]
fn a_blocked_poll_is_reported_while_it_runs_with_a_backtrace() {
    let server = Server::start(&[
        "--smp",
        "1",
        "--enable-debug-command",
        "--blocked-reactor-notify-ms",
        &NOTIFY_MS.to_string(),
    ]);
    let mut client = RawClient::connect(&server);
    let auth = format!("AUTH {}\r\n", server.password);
    client.send_raw(auth.as_bytes());
    assert_eq!(client.read_exact_len(5), b"+OK\r\n");
    let reported_before = counter(&server, "shardline_stall_detector_reported_total");
    let suppressed_before = counter(&server, "shardline_stall_detector_suppressed_total");
    assert!(in_progress(&server).is_empty());

    let sleeper = std::thread::spawn(move || {
        client.roundtrip(&[b"DEBUG", b"SLEEP", b"2"], b"+OK\r\n");
    });
    let sent = Instant::now();
    let first = loop {
        if let Some(line) = in_progress(&server).into_iter().next() {
            break (sent.elapsed(), line);
        }
        assert!(
            sent.elapsed() < Duration::from_millis(SLEEP_MS),
            "no in-progress report while DEBUG SLEEP ran"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    eprintln!("first in-progress report after {:?}: {}", first.0, first.1);
    // Seen within ~100 ms of the threshold (the watchdog looks every 6.25 ms here; the margin
    // is for a loaded machine).
    assert!(
        first.0 <= Duration::from_millis(NOTIFY_MS + 250),
        "first in-progress report {:?} after the command",
        first.0
    );
    assert!(
        first.1.contains(
            "on shard 0 and still running, in task queue main, while command debug; backtrace:"
        ),
        "{}",
        first.1
    );
    sleeper.join().expect("DEBUG SLEEP");

    // The report points 25, 50, …, 1600 ms fall inside the 2 s poll: seven, of which the
    // per-minute limit (5) logs five and counts the rest as suppressed.
    let due = (0..)
        .map(|k| NOTIFY_MS << k)
        .take_while(|&ms| ms < SLEEP_MS)
        .count() as f64;
    let mut ended = Vec::new();
    common::wait_for(|| {
        ended = server
            .log_lines()
            .into_iter()
            .filter(|l| l.contains("Reactor stall on shard 0 ended after"))
            .collect();
        !ended.is_empty()
    });
    let reported = counter(&server, "shardline_stall_detector_reported_total") - reported_before;
    let suppressed =
        counter(&server, "shardline_stall_detector_suppressed_total") - suppressed_before;
    assert_eq!(
        reported + suppressed,
        due,
        "reported {reported}, suppressed {suppressed}"
    );
    assert_eq!(reported, 5.0, "the per-minute limit");
    let reports = in_progress(&server);
    assert_eq!(reports.len(), 5, "{reports:#?}");
    // Each names a longer run than the one before (about twice as long).
    let ms: Vec<u64> = reports
        .iter()
        .filter_map(|l| {
            l.split_once("Reactor stalled for ")?
                .1
                .split_once(" ms")?
                .0
                .parse()
                .ok()
        })
        .collect();
    assert!(ms.windows(2).all(|w| w[1] > w[0]), "{ms:?}");
    // The backtrace (the lines `  N: module+0xOFFSET` after the report) is the shard
    // thread's: named with addr2line, it goes through the command that sleeps.
    let lines = server.log_lines();
    let at = lines
        .iter()
        .position(|l| l.contains("and still running"))
        .expect("report line");
    let offsets: Vec<String> = lines[at + 1..]
        .iter()
        .map_while(|l| {
            l.trim_start()
                .split_once(": ")
                .map(|(_, frame)| frame.to_string())
        })
        .filter_map(|frame| {
            Some(
                frame
                    .strip_prefix("shardline+")?
                    .split(' ')
                    .next()?
                    .to_string(),
            )
        })
        .collect();
    assert!(offsets.len() >= 5, "frames: {:#?}", &lines[at..]);
    let named = std::process::Command::new("addr2line")
        .args(["-C", "-f", "-i", "-e", env!("CARGO_BIN_EXE_shardline")])
        .args(&offsets)
        .output()
        .expect("addr2line (binutils)");
    let named = String::from_utf8_lossy(&named.stdout);
    assert!(
        named.contains("shardline::connection") && named.contains("sleep"),
        "backtrace without the sleeping command:\n{named}"
    );
    // The end is logged once, with the split, and is no second report.
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert!(ended[0].contains("blocked"), "{}", ended[0]);
    let end_reports: Vec<String> = server
        .log_lines()
        .into_iter()
        .filter(|l| l.contains("Reactor stalled for") && !l.contains("and still running"))
        .collect();
    assert!(end_reports.is_empty(), "{end_reports:?}");
}
