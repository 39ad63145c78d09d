//! Stall accounting end to end: `DEBUG SLEEP` blocks a shard on purpose and the metrics and the
//! stall reporter must show exactly that stall. One test in its own binary, so no other test's
//! load preempts the shard threads and adds stalls of its own.

mod common;

use common::{RawClient, Server};

fn stall_figures(server: &Server) -> (f64, f64, f64, f64) {
    let body = server.scrape();
    (
        common::metric_sum(&body, "shardline_reactor_stalls_count", &[]),
        common::metric_sum(&body, "shardline_reactor_stalls_sum", &[]),
        common::metric_sum(
            &body,
            "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
            &[],
        ),
        common::metric_sum(&body, "shardline_stall_detector_reported_total", &[]),
    )
}

/// Pins the calling thread to the last CPU it may use, so the client never preempts the shard
/// (pinned to the first CPU) in the middle of a poll — which would count as a stall. Call it
/// after starting the server: a child inherits the mask.
fn pin_client_away_from_shard_0() {
    let cpus = shardline::cpus::allowed_cpus().expect("affinity");
    if cpus.len() < 2 {
        return;
    }
    let cpu = cpus[cpus.len() - 1];
    // SAFETY: a zeroed cpu_set_t is an empty set; `cpu` is below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[test]
fn debug_sleep_adds_exactly_one_stall_and_ordinary_commands_add_none() {
    // Notify at 60 ms: the watchdog reports DEBUG SLEEP 0.1 once while it runs (the next
    // point, 120 ms, is after its end), or, on a machine too loaded for that, its end does.
    let server = Server::start(&[
        "--smp",
        "1",
        "--enable-debug-command",
        "--blocked-reactor-notify-ms",
        "60",
    ]);
    pin_client_away_from_shard_0();
    let mut client = RawClient::connect(&server);
    let auth = format!("AUTH {}\r\n", server.password);
    client.send_raw(auth.as_bytes());
    assert_eq!(client.read_exact_len(5), b"+OK\r\n");

    // Warm up: the round trips also make sure the poll that answered AUTH has been accounted
    // (the shard accounts a poll just after it returns, which can be after the reply arrives).
    for _ in 0..20 {
        client.roundtrip(&[b"SET", b"warm-up", b"value"], b"+OK\r\n");
        client.roundtrip(&[b"GET", b"warm-up"], b"$5\r\nvalue\r\n");
    }

    // Ordinary commands on a persistent connection: no stall, no report. A stall is wall-clock
    // time, so another process preempting the shard thread mid-poll (a loaded CI machine) makes
    // one the server did not cause: the check is made on a window in which the kernel did not
    // preempt the shard thread (its nonvoluntary_ctxt_switches did not move), up to 5 tries.
    let shard_thread = common::thread_status_path(server.child.id(), "shard-0");
    let start = stall_figures(&server);
    let mut clean_window = false;
    for attempt in 1..=5 {
        let preempted_before = common::involuntary_switches(&shard_thread);
        let before = stall_figures(&server);
        for i in 0..200 {
            let key = format!("key:{i}");
            client.roundtrip(&[b"SET", key.as_bytes(), b"value"], b"+OK\r\n");
            client.roundtrip(&[b"GET", key.as_bytes()], b"$5\r\nvalue\r\n");
        }
        let after = stall_figures(&server);
        let preempted = common::involuntary_switches(&shard_thread) - preempted_before;
        let stalls = after.0 - before.0;
        assert!(
            stalls <= preempted as f64,
            "{stalls} stall(s) from ordinary commands, more than the {preempted} preemption(s) \
             of the shard thread; buckets: {:?}",
            server
                .scrape()
                .lines()
                .filter(|l| l.starts_with("shardline_reactor_stalls_bucket"))
                .collect::<Vec<_>>()
        );
        if preempted == 0 {
            clean_window = true;
            break;
        }
        eprintln!(
            "attempt {attempt}: shard thread preempted {preempted} time(s), {stalls} stall(s)"
        );
    }
    if !clean_window {
        eprintln!("no window without preemption of the shard thread; checked stalls ≤ preemptions");
    }
    let after = stall_figures(&server);
    assert_eq!(after.3 - start.3, 0.0, "reports from ordinary commands");

    // DEBUG SLEEP 0.1: exactly one stall of at least 100 ms, one report; the shard slept
    // (blocked), it was not preempted.
    let before = after;
    let preempted_stalls = |server: &Server| {
        common::metric_sum(
            &server.scrape(),
            "shardline_reactor_stalls_preempted_total",
            &[],
        )
    };
    let preempted_before = preempted_stalls(&server);
    client.roundtrip(&[b"DEBUG", b"SLEEP", b"0.1"], b"+OK\r\n");
    // The stall is accounted when the poll returns, just after the reply went out.
    let mut after = stall_figures(&server);
    for _ in 0..100 {
        if after.0 > before.0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        after = stall_figures(&server);
    }
    assert_eq!(after.0 - before.0, 1.0, "stall count delta");
    assert!(
        after.1 - before.1 >= 0.1,
        "stall sum delta {}",
        after.1 - before.1
    );
    assert!(
        after.2 - before.2 >= 0.099,
        "violation delta {}",
        after.2 - before.2
    );
    assert_eq!(after.3 - before.3, 1.0, "reported delta");
    assert_eq!(
        preempted_stalls(&server) - preempted_before,
        0.0,
        "preempted stalls"
    );
    let reports: Vec<String> = server
        .log_lines()
        .into_iter()
        .filter(|l| l.contains("Reactor stalled for"))
        .collect();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(
        reports[0].contains("in task queue main, while command debug"),
        "{}",
        reports[0]
    );
    // "(on CPU 0 ms, preempted 0 ms, blocked 100 ms)": most of the poll was the sleep. Said by
    // the end report, or by the end line of a stall the watchdog reported.
    let split_line = server
        .log_lines()
        .into_iter()
        .find(|l| l.contains(", blocked ") && l.contains("while command debug"))
        .unwrap_or_else(|| panic!("no line with the blocked time: {reports:?}"));
    let blocked_ms: u64 = split_line
        .split_once(", blocked ")
        .and_then(|(_, rest)| rest.split_once(" ms)"))
        .and_then(|(ms, _)| ms.parse().ok())
        .unwrap_or_else(|| panic!("no blocked time in {split_line}"));
    assert!(blocked_ms >= 90, "{split_line}");
    // The 100 ms stall sits in the 131.072 ms bucket, not below.
    let body = server.scrape();
    let at_65ms = common::metric_sum(
        &body,
        "shardline_reactor_stalls_bucket",
        &[("le", "0.065536")],
    );
    let at_131ms = common::metric_sum(
        &body,
        "shardline_reactor_stalls_bucket",
        &[("le", "0.131072")],
    );
    assert_eq!(at_131ms - at_65ms, 1.0, "{body}");
}
