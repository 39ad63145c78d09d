//! The `/metrics` endpoint of the real binary, checked by the real Prometheus tools: promtool's
//! lint on a live scrape, and a Prometheus server on loopback scraping every shard.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{http_get, Server};

#[test]
fn live_scrape_has_the_right_content_type_and_passes_promtool() {
    let server = Server::start(&["--smp", "2"]);
    // Some traffic so that labelled series exist.
    assert_eq!(server.cli(&["SET", "k", "v"]), "OK");
    assert_eq!(server.cli(&["GET", "k"]), "v");
    let (head, body) = http_get(server.metrics_addr, "/metrics");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    for shard in ["0", "1"] {
        assert!(body.contains(&format!(
            "shardline_reactor_stalls_count{{shard=\"{shard}\"}}"
        )));
    }
    assert_eq!(
        common::promtool_findings(&body),
        "",
        "promtool lint findings"
    );
}

#[test]
fn a_real_prometheus_scrapes_every_shard() {
    let server = Server::start(&["--smp", "2"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: shardline\n    \
             static_configs:\n      - targets: ['{}']\n",
            server.metrics_addr
        ),
    )
    .expect("config");
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
        probe.local_addr().expect("addr").port()
    };
    let web = format!("127.0.0.1:{port}");
    let mut prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus (Debian package prometheus)");
    let addr: std::net::SocketAddr = web.parse().expect("addr");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    let mut shards_seen = false;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        if std::net::TcpStream::connect(addr).is_err() {
            continue;
        }
        last = http_get(addr, "/api/v1/query?query=shardline_reactor_stalls_count").1;
        if last.contains("\"shard\":\"0\"") && last.contains("\"shard\":\"1\"") {
            shards_seen = true;
            break;
        }
    }
    let _ = prometheus.kill();
    let _ = prometheus.wait();
    assert!(shards_seen, "Prometheus never returned both shards: {last}");
    assert!(last.contains("\"status\":\"success\""), "{last}");
}

#[test]
fn the_keyspace_gauges_follow_the_keys_of_every_shard() {
    const KEYS: &str = "shardline_keyspace_keys";
    const BYTES: &str = "shardline_keyspace_used_bytes";
    let server = Server::start(&["--smp", "2"]);
    let mut mset = vec!["MSET".to_owned()];
    for i in 0..40 {
        mset.push(format!("key:{i}"));
        mset.push(format!("value:{i}"));
    }
    let args: Vec<&str> = mset.iter().map(String::as_str).collect();
    assert_eq!(server.cli(&args), "OK");
    assert_eq!(server.cli(&["DBSIZE"]), "40");
    // Sampled once a second on each shard.
    assert_eq!(server.metric_reaching(KEYS, &[], 40.0), 40.0);
    for shard in ["0", "1"] {
        let keys = server.metric(KEYS, &[("shard", shard)]);
        assert!(keys > 0.0 && keys < 40.0, "shard {shard}: {keys} keys");
        assert!(server.metric(BYTES, &[("shard", shard)]) > 0.0);
    }
    assert_eq!(server.cli(&["FLUSHALL"]), "OK");
    common::wait_for(|| server.metric(KEYS, &[]) == 0.0);
    assert_eq!(server.metric(BYTES, &[]), 0.0);
}

/// The series a dashboard or a `rate()` alert needs exist, at 0, in the very first scrape of a
/// server no client has reached: per shard and task queue, the quota-violation seconds and
/// the queue's runtime; the login path's command and error counters; the hash duration
/// histogram of the configured mode. And every series deploy/grafana and the alert rules
/// query is in that scrape.
#[test]
fn series_exist_at_zero_before_the_first_client() {
    let server = Server::start(&["--smp", "2", "--hash-mode", "yield"]);
    // Scraped as soon as the endpoint answers, without waiting for the shards to start (each
    // logs its log's replay once its metrics are made): the series must exist before that.
    let body = server.scrape();
    let present = |name: &str, labels: &[(&str, &str)]| {
        body.lines().filter(|l| !l.starts_with('#')).any(|line| {
            line.split_once(['{', ' '])
                .is_some_and(|(metric, _)| metric == name)
                && labels
                    .iter()
                    .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
    };
    let zero = |name: &str, labels: &[(&str, &str)]| {
        assert!(present(name, labels), "{name} {labels:?} missing:\n{body}");
        assert_eq!(
            common::metric_sum(&body, name, labels),
            0.0,
            "{name} {labels:?}"
        );
    };
    for shard in ["0", "1"] {
        for group in ["main", "auth", "maintenance"] {
            let labels = [("shard", shard), ("group", group)];
            assert!(
                present(
                    "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
                    &labels
                ),
                "quota violations of {labels:?} missing:\n{body}"
            );
            assert!(
                present("shardline_task_queue_runtime_seconds_total", &labels),
                "runtime of {labels:?} missing:\n{body}"
            );
        }
        let auth_queue = [("shard", shard), ("group", "auth")];
        zero("shardline_task_queue_runtime_seconds_total", &auth_queue);
        zero(
            "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
            &auth_queue,
        );
        for command in ["auth", "hello"] {
            zero(
                "shardline_commands_total",
                &[("shard", shard), ("command", command)],
            );
        }
        for kind in [
            "unknown_command",
            "arity",
            "noauth",
            "protocol",
            "wrongpass",
            "command",
        ] {
            zero(
                "shardline_command_errors_total",
                &[("shard", shard), ("kind", kind)],
            );
        }
        let yield_mode = [("shard", shard), ("mode", "yield")];
        zero(
            "shardline_password_hash_duration_seconds_count",
            &yield_mode,
        );
        zero("shardline_password_hash_batch_size_count", &yield_mode);
        for result in ["accepted", "rejected"] {
            zero(
                "shardline_logins_total",
                &[("shard", shard), ("result", result)],
            );
        }
    }
    assert_eq!(
        common::promtool_findings(&body),
        "",
        "promtool lint findings"
    );

    // Every series the dashboard and the alert rules query exists already.
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let mut queried = std::collections::BTreeSet::new();
    for file in ["grafana/shardline.json", "prometheus/alerts.yml"] {
        let text = std::fs::read_to_string(deploy.join(file)).expect("deploy file");
        for (i, _) in text.match_indices("shardline_") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            queried.insert(name);
        }
    }
    let missing: Vec<_> = queried
        .iter()
        .filter(|name| {
            // A histogram's name is queried as a prefix in a regex or a panel title.
            !["", "_bucket", "_count", "_sum"]
                .iter()
                .any(|suffix| present(&format!("{name}{suffix}"), &[]))
                && !body.contains(&format!("\n{name}"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "queried by deploy/ but absent before the first client: {missing:?}"
    );

    // A WRONGPASS reply counts as kind `wrongpass`.
    let mut client = common::RawClient::connect(&server);
    client.roundtrip(
        &[b"AUTH", b"not-the-password"],
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    let wrongpass = common::metric_sum(
        &server.scrape(),
        "shardline_command_errors_total",
        &[("kind", "wrongpass")],
    );
    assert_eq!(wrongpass, 1.0);
}
