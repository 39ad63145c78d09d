//! End-to-end check of the `/metrics` endpoint: a populated registry served on
//! 127.0.0.1:0, fetched over real HTTP, and linted by `promtool check metrics`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use shardline_metrics::{serve, Metrics, TEXT_CONTENT_TYPE};

/// A registry with every family populated on two shards.
fn populated() -> Metrics {
    let metrics = Metrics::new();
    for id in 0..2 {
        let shard = metrics.shard(id);
        shard.connection_accepted();
        shard.connection_accepted();
        shard.connection_closed("client_quit");
        shard.connection_shed();
        shard.tls_handshake_started();
        shard.tls_handshake_completed(Duration::from_millis(2), false);
        shard.tls_handshake_failed("timeout");
        shard.login("accepted");
        shard.login("rejected");
        shard.login_wait(Duration::from_micros(300));
        shard.login_admission_waited();
        shard.password_hash("yield", Duration::from_micros(1200));
        shard.credentials_cache_hit();
        shard.credentials_cache_miss();
        shard.command("GET");
        shard.command("SET");
        shard.command_error("wrongtype");
        shard.set_password_hash_offload_queue_depth(1);
        shard.bytes_received(64);
        shard.bytes_sent(32);
        shard.record_executor_stats(shardline_metrics::ExecutorStatsDelta {
            task_runtime: Duration::from_millis(10),
            busy: Duration::from_millis(12),
            scheduler_runs: 3,
            tasks_executed: 9,
        });
        shard.record_task_queue_stats(
            "main",
            shardline_metrics::TaskQueueStatsDelta {
                runtime: Duration::from_millis(8),
                selected: 2,
                shares: 1000,
            },
        );
    }
    metrics
}

fn promtool_available() -> bool {
    Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[test]
fn serves_metrics_over_http_and_passes_promtool_lint() {
    let metrics = populated();
    let server = serve("127.0.0.1:0".parse().expect("address"), metrics).expect("bind");
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);

    let agent = ureq::Agent::new_with_defaults();
    let mut response = agent
        .get(&format!("http://{addr}/metrics"))
        .call()
        .expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    assert_eq!(content_type.as_deref(), Some(TEXT_CONTENT_TYPE));
    assert_eq!(
        TEXT_CONTENT_TYPE,
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let body = response.body_mut().read_to_string().expect("body");
    assert!(
        body.contains("shardline_reactor_stalls_count{shard=\"0\"} 0\n"),
        "{body}"
    );
    assert!(
        body.contains("shardline_commands_total{command=\"get\",shard=\"1\"} 1\n"),
        "{body}"
    );
    assert!(
        body.contains("shardline_connections_active{shard=\"0\"} 1\n"),
        "{body}"
    );
    // The process collector's families are served too (and linted below).
    #[cfg(target_os = "linux")]
    for name in [
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "process_max_fds ",
        "process_start_time_seconds ",
        "process_threads ",
        "process_virtual_memory_bytes ",
    ] {
        assert!(body.contains(name), "missing {name}in:\n{body}");
    }

    // Other paths are 404.
    let missing = agent
        .get(&format!("http://{addr}/other"))
        .config()
        .http_status_as_error(false)
        .build()
        .call()
        .expect("GET /other");
    assert_eq!(missing.status(), 404);

    server.shutdown();

    if !promtool_available() {
        eprintln!(
            "SKIPPED promtool lint: `promtool` is not installed (Debian package `prometheus`)"
        );
        return;
    }
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(body.as_bytes())
        .expect("write to promtool");
    let out = child.wait_with_output().expect("promtool finishes");
    let lint = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool failed: {lint}");
    assert_eq!(lint.trim(), "", "promtool lint findings");
}

#[test]
fn bind_errors_name_the_address() {
    let first = serve("127.0.0.1:0".parse().expect("address"), Metrics::new()).expect("bind");
    let taken = first.local_addr();
    let err = serve(taken, Metrics::new()).expect_err("port is taken");
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert!(
        err.to_string()
            .starts_with(&format!("cannot bind the metrics endpoint to {taken}: ")),
        "{err}"
    );
    first.shutdown();
}
