//! Runs `shardline-bench --smoke` against the freshly built `shardline` binary so the harness
//! cannot rot: the Markdown, JSON and SVG outputs must exist and the JSON must hold a headline
//! row per hash mode and `--hash-batch` setting (auto, off) with a positive connection rate and
//! a mean batch size (exactly 1 with batching off), a durability row per append-only log
//! setting and pipeline depth with a positive request rate, a restart row that got every
//! key back, and types rows (ZADD, ZRANGE, PUBLISH fan-out) whose subscribers got every message.
//!
//! The binary is `$SHARDLINE_BIN`, else `target/debug/shardline` of this workspace (build it
//! first: `cargo build -p shardline`; `./test.sh` does). Needs redis-benchmark (redis-tools)
//! and, for the peer rows, redis-server.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The smoke run is planned for under 40 s; this bound only catches hangs.
const LIMIT: Duration = Duration::from_secs(150);

fn shardline_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("SHARDLINE_BIN") {
        return PathBuf::from(bin);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("debug/shardline")
}

#[test]
fn smoke_run_writes_tables_json_and_chart() {
    let shardline = shardline_bin();
    assert!(
        shardline.is_file(),
        "{} is missing: run `cargo build -p shardline` first or set SHARDLINE_BIN",
        shardline.display()
    );
    let out_dir =
        std::env::temp_dir().join(format!("shardline-bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);

    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardline-bench"))
        .arg("--smoke")
        .arg("--out-dir")
        .arg(&out_dir)
        .arg("--shardline-bin")
        .arg(&shardline)
        .arg("--load-bin")
        .arg(env!("CARGO_BIN_EXE_shardline-load"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("shardline-bench starts");
    // Drain both pipes on threads so the child never blocks on a full pipe.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let err_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for shardline-bench") {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("shardline-bench --smoke ran longer than {LIMIT:?}");
        }
        thread::sleep(Duration::from_millis(100));
    };
    let stdout = out_reader.join().expect("stdout reader");
    let stderr = err_reader.join().expect("stderr reader");
    eprintln!("{stderr}");
    eprintln!(
        "shardline-bench --smoke took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        status.success(),
        "shardline-bench failed ({status})\n{stdout}"
    );
    assert!(
        stdout.contains("| inline |"),
        "no table on stdout:\n{stdout}"
    );

    for file in ["results.json", "chart.svg", "results.md"] {
        let path = out_dir.join(file);
        let meta = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(meta.len() > 0, "{} is empty", path.display());
    }
    let svg = std::fs::read_to_string(out_dir.join("chart.svg")).expect("chart readable");
    assert!(svg.starts_with("<svg"), "chart is not SVG");

    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("results.json")).expect("JSON readable"),
    )
    .expect("valid JSON");
    let rows = json["headline"].as_array().expect("headline array");
    for mode in ["inline", "yield", "offload"] {
        for batch in ["auto", "off"] {
            let row = rows
                .iter()
                .find(|r| r["mode"] == mode && r["hash_batch"] == batch)
                .unwrap_or_else(|| panic!("no headline row for {mode}, --hash-batch {batch}"));
            let rate = row["conn_per_s_per_shard"]["median"]
                .as_f64()
                .unwrap_or(0.0);
            assert!(
                rate > 0.0,
                "{mode}, batch {batch}: conn/s per shard is {rate}"
            );
            // Every verification is in a batch of at least one; with batching off, of one.
            let mean = row["batch_size_mean"]["median"].as_f64().unwrap_or(0.0);
            if batch == "off" {
                assert_eq!(mean, 1.0, "{mode}, batch off: mean batch size");
            } else {
                assert!(mean >= 1.0, "{mode}, batch auto: mean batch size {mean}");
            }
        }
    }
    assert!(
        json["rpc"].as_array().is_some_and(|r| !r.is_empty()),
        "no RPC rows"
    );
    let scrape = json["scrape"].as_array().expect("scrape rows");
    assert_eq!(scrape.len(), 2, "scrape rows: alone and scraped");
    assert!(scrape[0]["scrape_interval_ms"].is_null());
    assert_eq!(scrape[1]["scrape_interval_ms"], 100);
    assert!(
        scrape[1]["runs"][0]["scrapes"].as_u64().unwrap_or(0) >= 1,
        "no scrape during the scraped run: {}",
        scrape[1]
    );
    let durability = json["durability"].as_array().expect("durability rows");
    for persistence in ["off", "everysec", "always"] {
        for pipeline in [16, 1] {
            let row = durability
                .iter()
                .find(|r| {
                    r["server"] == "shardline"
                        && r["persistence"] == persistence
                        && r["pipeline"] == pipeline
                })
                .unwrap_or_else(|| panic!("no durability row for {persistence} -P {pipeline}"));
            let rate = row["req_per_s"]["median"].as_f64().unwrap_or(0.0);
            assert!(rate > 0.0, "{persistence} -P {pipeline}: req/s is {rate}");
        }
    }
    let restart = json["restart"].as_array().expect("restart rows");
    let shardline_restart = restart
        .iter()
        .find(|r| r["server"] == "shardline")
        .expect("a shardline restart row");
    let keys = json["plan"]["restart_keys"].as_u64().expect("restart_keys");
    assert_eq!(shardline_restart["keys_written"].as_u64(), Some(keys));
    assert_eq!(shardline_restart["runs"][0]["keys"].as_u64(), Some(keys));
    assert!(
        shardline_restart["load_s"]["median"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0
    );
    let types = json["types"].as_array().expect("types rows");
    for workload in ["ZADD", "ZRANGE 0 9 WITHSCORES", "PUBLISH fan-out"] {
        let row = types
            .iter()
            .find(|r| r["server"] == "shardline" && r["workload"] == workload)
            .unwrap_or_else(|| panic!("no shardline types row for {workload}"));
        let rate = row["req_per_s"]["median"].as_f64().unwrap_or(0.0);
        assert!(rate > 0.0, "{workload}: req/s is {rate}");
        let cpu = row["cpu_us_per_op"]["median"].as_f64().unwrap_or(0.0);
        assert!(cpu > 0.0, "{workload}: server CPU per operation is {cpu}");
    }
    let fan_out = types
        .iter()
        .find(|r| r["server"] == "shardline" && r["workload"] == "PUBLISH fan-out")
        .expect("fan-out row");
    let run = &fan_out["runs"][0];
    let (delivered, expected) = (
        run["delivered"].as_u64().unwrap_or(0),
        run["expected_deliveries"].as_u64().unwrap_or(0),
    );
    // Every subscriber got every PUBLISH of the run (redis-benchmark may send up to -c × -P
    // more than -n).
    assert_eq!(run["subscribers"].as_u64(), Some(8));
    assert!(
        expected > 0 && delivered >= expected && delivered % 8 == 0,
        "fan-out delivered {delivered} of {expected}"
    );
    assert!(
        fan_out["deliveries_per_s"]["median"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0,
        "no deliveries/s: {fan_out}"
    );
    assert!(
        json["goals"].as_array().is_some_and(|g| g.len() >= 5),
        "no goals"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}
