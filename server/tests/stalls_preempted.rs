//! Stalls the machine causes, told apart from stalls the server causes: a busy loop pinned to
//! the shard's CPU takes it away from the shard thread in the middle of polls, and the stalls
//! that follow must be counted as preempted. One test in its own binary: its busy loop must
//! not disturb other tests.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Server;

/// Longest the busy loop runs, whatever happens to the test.
const HOG_LIMIT: Duration = Duration::from_secs(20);

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is an empty set; `cpu` comes from the allowed set, below
    // CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn figures(server: &Server) -> (f64, f64, f64) {
    let body = server.scrape();
    (
        common::metric_sum(&body, "shardline_reactor_stalls_count", &[]),
        common::metric_sum(&body, "shardline_reactor_stalls_preempted_total", &[]),
        common::metric_sum(&body, "shardline_reactor_preempted_seconds_total", &[]),
    )
}

#[test]
fn a_busy_loop_on_the_shards_cpu_makes_preempted_stalls() {
    let server = Server::start(&["--smp", "1"]);
    let cpus = shardline::cpus::allowed_cpus().expect("affinity");
    let shard_cpu = cpus[0];
    // The load generator runs elsewhere when it can, so the shard competes with the busy
    // loop only.
    pin_to(cpus[cpus.len() - 1]);

    let stop = Arc::new(AtomicBool::new(false));
    let hog = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            pin_to(shard_cpu);
            let started = Instant::now();
            let mut spins = 0u64;
            while !stop.load(Ordering::Relaxed) && started.elapsed() < HOG_LIMIT {
                spins = std::hint::black_box(spins.wrapping_add(1));
            }
        })
    };
    let benchmark = |requests: &str| {
        Command::new("redis-benchmark")
            .args(["--tls", "--cacert"])
            .arg(server.cert())
            .args(["-h", "127.0.0.1", "-p", &server.port()])
            .args(["--user", "default", "-a", &server.password])
            .args(["-t", "get", "-n", requests, "-c", "8", "-P", "1", "-q"])
            .output()
            .expect("run redis-benchmark (install redis-tools)")
    };
    // The first connections after a start stall the shard on their own (fresh allocator pages
    // for the TLS and connection state): made before the window measured.
    benchmark("2000");
    // Let the busy loop take its share of the CPU first.
    std::thread::sleep(Duration::from_millis(200));
    let before = figures(&server);

    // Eight clients sending GETs one at a time keep the shard busy, so the scheduler switches
    // between it and the busy loop in the middle of its polls, while each poll stays short (a
    // pipelined batch would make polls of this debug build long enough to stall on the CPU
    // too: 34 of 48 stalls preempted in one run).
    let out = benchmark("60000");
    let after = figures(&server);
    stop.store(true, Ordering::Relaxed);
    hog.join().expect("busy loop");
    assert!(
        out.status.success(),
        "redis-benchmark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let stalls = after.0 - before.0;
    let preempted = after.1 - before.1;
    let preempted_seconds = after.2 - before.2;
    eprintln!("{stalls} stalls, {preempted} preempted, {preempted_seconds:.3} s preempted");
    assert!(
        stalls >= 3.0,
        "only {stalls} stall(s) with a busy loop on the shard's CPU"
    );
    assert!(
        preempted >= 0.9 * stalls,
        "{preempted} of {stalls} stalls counted as preempted"
    );
    // Each preempted stall spent more than half of its run off the CPU; a stall is at least
    // 1 ms (2 × the default task quota of 0.5 ms).
    assert!(
        preempted_seconds >= preempted * 0.000_5,
        "{preempted_seconds} s preempted over {preempted} preempted stalls"
    );
}
