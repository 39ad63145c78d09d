use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use glommio::{LocalExecutorBuilder, Placement};

use super::*;
use crate::activity::{self, Activity};
use crate::task::instrument;
use crate::test_support::{assert_close, sample};

/// Log lines captured from `tracing` on the executor thread.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Ok(mut sink) = self.0.lock() {
            sink.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn capture_logs(captured: &Captured) -> tracing::subscriber::DefaultGuard {
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .finish();
    tracing::subscriber::set_default(subscriber)
}

/// Runs `body` inside a real glommio executor (own thread) with the monitor installed and
/// logs captured.
fn on_shard<F, Fut>(metrics: &Metrics, cfg: StallConfig, body: F) -> String
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let metrics = metrics.clone();
    let captured = Captured::default();
    let logs = captured.clone();
    let handle = LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(64 << 10)
        .preempt_timer(cfg.task_quota)
        .name("stall-test")
        .spawn(move || async move {
            let _logs = capture_logs(&logs);
            install_shard_monitor(0, cfg, &metrics);
            body().await;
            assert!(uninstall_shard_monitor());
        })
        .expect("executor starts (RLIMIT_MEMLOCK >= 512 KiB?)");
    handle.join().expect("executor thread finishes");
    captured.text()
}

fn busy_wait(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn cfg(notify: Duration) -> StallConfig {
    StallConfig {
        task_quota: Duration::from_micros(500),
        blocked_reactor_notify: notify,
        reports_per_minute: 5,
        watchdog: false,
    }
}

const SHARD0: &[(&str, &str)] = &[("shard", "0")];

#[test]
fn a_3ms_poll_is_one_stall_with_violation_time_and_one_report() {
    let metrics = Metrics::new();
    let logs = on_shard(&metrics, cfg(Duration::from_millis(1)), || async {
        let task = instrument("main", async {
            activity::set(Activity::Command("GET"));
            busy_wait(Duration::from_millis(3));
        });
        glommio::spawn_local(task).await;
    });
    let count = sample(&metrics, "shardline_reactor_stalls_count", SHARD0);
    assert_eq!(count, Some(1.0));
    let ran = sample(&metrics, "shardline_reactor_stalls_sum", SHARD0).unwrap_or(0.0);
    assert!(ran >= 0.003, "stall of {ran} s");
    // 3 ms lies in the (2.048 ms, 4.096 ms] bucket unless the OS preempted the busy loop.
    assert_eq!(
        sample(
            &metrics,
            "shardline_reactor_stalls_bucket",
            &[("shard", "0"), ("le", "0.002048")]
        ),
        Some(0.0)
    );
    let group = [("shard", "0"), ("group", "main")];
    let violation = sample(
        &metrics,
        "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
        &group,
    );
    assert_close(violation, ran - 0.0005);
    assert!(violation.unwrap_or(0.0) >= 0.0025);
    assert_eq!(
        sample(&metrics, "shardline_stall_detector_reported_total", SHARD0),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &metrics,
            "shardline_stall_detector_suppressed_total",
            SHARD0
        ),
        Some(0.0)
    );

    let reports: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("Reactor stalled"))
        .collect();
    assert_eq!(reports.len(), 1, "logs:\n{logs}");
    let line = reports[0];
    assert!(line.trim_start().starts_with("WARN"), "{line}");
    let rest = line
        .split_once("Reactor stalled for ")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let (ms, tail) = rest.split_once(' ').unwrap_or_default();
    assert!(ms.parse::<u64>().unwrap_or(0) >= 3, "{line}");
    // The poll spins: on the CPU unless the machine preempted it.
    let split = tail
        .strip_prefix("ms on shard 0 (on CPU ")
        .and_then(|t| t.strip_suffix("), in task queue main, while command GET"))
        .unwrap_or_else(|| panic!("{line}"));
    let (on_cpu, preempted) = split
        .split_once(" ms, preempted ")
        .and_then(|(a, b)| {
            Some((
                a.parse::<u64>().ok()?,
                b.strip_suffix(" ms")?.parse::<u64>().ok()?,
            ))
        })
        .unwrap_or_else(|| panic!("{line}"));
    assert!(on_cpu + preempted >= 2, "{line}");
    assert!(
        sample(&metrics, "shardline_reactor_stalls_preempted_total", SHARD0).is_some(),
        "the preempted-stall counter is exported"
    );
}

#[test]
fn tiny_polls_add_no_stall_and_no_report() {
    let metrics = Metrics::new();
    let logs = on_shard(&metrics, cfg(Duration::from_millis(25)), || async {
        for i in 0..20u64 {
            let task = instrument("main", async move {
                activity::set(Activity::Command("PING"));
                std::hint::black_box((0..100u64).fold(i, |a, b| a ^ b))
            });
            glommio::spawn_local(task).await;
        }
    });
    assert_eq!(
        sample(&metrics, "shardline_reactor_stalls_count", SHARD0),
        Some(0.0)
    );
    assert_eq!(
        sample(&metrics, "shardline_reactor_stalls_sum", SHARD0),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &metrics,
            "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
            &[("shard", "0"), ("group", "main")],
        ),
        None
    );
    assert_eq!(
        sample(&metrics, "shardline_stall_detector_reported_total", SHARD0),
        Some(0.0)
    );
    assert!(!logs.contains("Reactor stalled"), "{logs}");
}

#[test]
fn reports_are_limited_per_minute_and_suppressed_ones_summarised() {
    let metrics = Metrics::new();
    let logs = on_shard(&metrics, cfg(Duration::from_millis(1)), || async {
        declare_task_queue("auth");
        for _ in 0..7 {
            let task = instrument("auth", async {
                activity::set(Activity::AuthHash);
                busy_wait(Duration::from_micros(1_500));
            });
            glommio::spawn_local(task).await;
        }
        // Within the minute: no summary yet.
        maintenance_tick();
        tracing::info!("-- minute over --");
        maintenance_tick_at(Instant::now() + Duration::from_secs(61));
        // Summarised once only.
        maintenance_tick_at(Instant::now() + Duration::from_secs(62));
    });
    assert_eq!(
        sample(&metrics, "shardline_reactor_stalls_count", SHARD0),
        Some(7.0)
    );
    assert_eq!(
        sample(&metrics, "shardline_stall_detector_reported_total", SHARD0),
        Some(5.0)
    );
    assert_eq!(
        sample(
            &metrics,
            "shardline_stall_detector_suppressed_total",
            SHARD0
        ),
        Some(2.0)
    );
    let violation = sample(
        &metrics,
        "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
        &[("shard", "0"), ("group", "auth")],
    )
    .unwrap_or(0.0);
    assert!(violation >= 7.0 * 0.001, "violation {violation}");

    let (before, after) = logs.split_once("-- minute over --").unwrap_or_default();
    let reports: Vec<&str> = before
        .lines()
        .filter(|l| l.contains("Reactor stalled"))
        .collect();
    assert_eq!(reports.len(), 5, "logs:\n{logs}");
    assert!(reports.iter().all(|l| l.contains(" ms on shard 0 (on CPU ")
        && l.ends_with("), in task queue auth, while auth-hash")));
    assert!(!before.contains("suppressed"), "{logs}");
    let summaries: Vec<&str> = after.lines().filter(|l| l.contains("Rate-limit")).collect();
    assert_eq!(summaries.len(), 1, "logs:\n{logs}");
    assert!(
        summaries[0].trim_start().starts_with("WARN"),
        "{}",
        summaries[0]
    );
    assert!(summaries[0].ends_with("Rate-limit: suppressed 2 reports on shard 0"));
}

#[test]
fn declared_task_queue_is_exported_at_zero() {
    let metrics = Metrics::new();
    on_shard(&metrics, StallConfig::default(), || async {
        declare_task_queue("maintenance");
    });
    assert_eq!(
        sample(
            &metrics,
            "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
            &[("shard", "0"), ("group", "maintenance")],
        ),
        Some(0.0)
    );
}

#[test]
fn no_monitor_means_no_accounting() {
    // This test thread has no monitor: a long instrumented poll is simply run.
    let metrics = Metrics::new();
    let _shard = metrics.shard(0);
    let task = instrument("main", async {
        busy_wait(Duration::from_millis(2));
        7
    });
    let mut task = Box::pin(task);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert_eq!(task.as_mut().poll(&mut cx), std::task::Poll::Ready(7));
    maintenance_tick();
    assert!(!uninstall_shard_monitor());
}

#[test]
fn config_from_millis() {
    let cfg = StallConfig::from_millis(0.5, 25.0, 5).expect("valid");
    assert_eq!(cfg, StallConfig::default());
    assert_eq!(cfg.stall_threshold(), Duration::from_millis(1));
    let err = StallConfig::from_millis(-1.0, 25.0, 5).expect_err("negative");
    assert_eq!(
        err.to_string(),
        "--task-quota-ms must be a non-negative number of milliseconds, got -1"
    );
    assert!(StallConfig::from_millis(0.5, f64::NAN, 5).is_err());
}
