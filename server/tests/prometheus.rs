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
