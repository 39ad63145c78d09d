//! The types table (issue 14): sorted sets and Pub/Sub fan-out, shardline against
//! redis-server 7, both over TLS with the same certificate, client and pinning as the RPC table.
//!
//! - `ZADD`: redis-benchmark's built-in `zadd` test (7.0 sends `ZADD myzset <score>
//!   element:<rand>`, the score random too under `-r`), persistent connections, `-c 50 -P 16
//!   -r 100000`.
//! - `ZRANGE`: the custom command `ZRANGE bench:zset 0 9 WITHSCORES` on a sorted set of
//!   [`ZSET_MEMBERS`] members loaded first, so every reply holds 10 members and their scores.
//! - `PUBLISH`: [`SUBSCRIBERS`] subscriber connections of the harness's own (threads pinned to
//!   the client CPUs, reading continuously) on [`CHANNEL`], and redis-benchmark sending
//!   `PUBLISH bench:chan <16 bytes>` at `-c 10 -P 16`. The subscribers count what they get;
//!   the server's CPU is divided by those deliveries.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use super::endpoint::Endpoint;
use super::error::HarnessError;
use super::plan::HashMode;
use super::procstat;
use super::redis_benchmark::Workload;
use super::restart::{connector, load_err};
use super::results::{TypesRow, TypesRun};
use super::rpc::{REDIS, SHARDLINE};
use super::server::ServerSpec;
use super::session::Session;
use crate::load::conn::Stage;
use crate::resp::{self, Reply};
use crate::stats::Summary;

/// Members of the sorted set that `ZRANGE` reads.
pub const ZSET_MEMBERS: u64 = 1_000;
/// Key of that sorted set.
pub const ZSET_KEY: &str = "bench:zset";
/// Subscribers of the fan-out.
pub const SUBSCRIBERS: u32 = 8;
/// The channel they subscribe to.
pub const CHANNEL: &str = "bench:chan";
/// redis-benchmark `-c` of the publishers.
pub const PUBLISH_CLIENTS: u32 = 10;
/// Payload of every PUBLISH (16 bytes).
pub const PAYLOAD: &str = "0123456789abcdef";

/// Row label of the `ZADD` workload.
pub const ZADD: &str = "ZADD";
/// Row label of the `ZRANGE` workload.
pub const ZRANGE: &str = "ZRANGE 0 9 WITHSCORES";
/// Row label of the fan-out workload.
pub const PUBLISH: &str = "PUBLISH fan-out";

/// The workloads, in the order one server start runs them.
pub const WORKLOADS: [&str; 3] = [ZADD, ZRANGE, PUBLISH];

/// How long the subscribers may go without a message after the publishers finished before
/// the count is taken as final.
const DRAIN_QUIET: Duration = Duration::from_secs(1);

/// The redis-benchmark workload of the row labelled `label`, with the RPC table's sizes.
pub fn workload(session: &Session, label: &str) -> Workload {
    let plan = &session.plan;
    let base = Workload {
        test: "zadd".to_owned(),
        clients: plan.rpc_clients,
        requests: plan.rpc_calibration_requests,
        keepalive: true,
        pipeline: plan.rpc_pipeline,
        keyspace: Some(plan.rpc_keyspace),
        data_size: plan.rpc_value_bytes,
        command: Vec::new(),
    };
    let command = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect();
    match label {
        ZRANGE => Workload {
            test: label.to_owned(),
            keyspace: None,
            command: command(&["ZRANGE", ZSET_KEY, "0", "9", "WITHSCORES"]),
            ..base
        },
        PUBLISH => Workload {
            test: label.to_owned(),
            clients: PUBLISH_CLIENTS,
            keyspace: None,
            command: command(&["PUBLISH", CHANNEL, PAYLOAD]),
            ..base
        },
        _ => base,
    }
}

/// Loads `ZADD bench:zset i member:i` for `i` in `0..ZSET_MEMBERS` in one pipelined command
/// and returns ZCARD.
fn load_zset(ep: &Endpoint) -> Result<i64, HarnessError> {
    let fail = load_err("loading the sorted set");
    let mut conn = connector(ep, Duration::from_secs(30))?
        .open_authenticated()
        .map_err(&fail)?;
    let mut args = vec!["ZADD".to_owned(), ZSET_KEY.to_owned()];
    for i in 0..ZSET_MEMBERS {
        args.push(i.to_string());
        args.push(format!("member:{i}"));
    }
    let mut request = Vec::new();
    resp::encode_command(&mut request, &args);
    resp::encode_command(&mut request, &["ZCARD", ZSET_KEY]);
    let replies = conn
        .round_trip(&request, 2, Stage::Command)
        .map_err(&fail)?;
    match replies.get(1) {
        Some(Reply::Integer(n)) => Ok(*n),
        other => Err(HarnessError::Process {
            what: "loading the sorted set".into(),
            detail: format!("ZCARD answered {other:?}"),
        }),
    }
}

/// Pins the calling thread to `cpus` (a `taskset -c` list); does nothing without a list.
fn pin_thread(cpus: Option<&str>) {
    let Some(list) = cpus.and_then(procstat::parse_cpu_list) else {
        return;
    };
    // SAFETY: `set` is a plain bit mask initialised by CPU_ZERO; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for cpu in list {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Whether `reply` is a Pub/Sub `message` push.
pub fn is_message(reply: &Reply) -> bool {
    match reply {
        Reply::Array(Some(items)) => {
            matches!(items.first(), Some(Reply::Bulk(Some(kind))) if kind == b"message")
        }
        _ => false,
    }
}

/// Subscriber threads: each holds one connection subscribed to [`CHANNEL`] and counts the
/// messages it reads until told to stop.
struct Subscribers {
    received: Arc<AtomicU64>,
    last_message: Arc<std::sync::Mutex<Instant>>,
    stop: Arc<AtomicBool>,
    threads: Vec<thread::JoinHandle<Result<(), String>>>,
}

impl Subscribers {
    /// Opens `count` subscribers and waits until every one is subscribed.
    fn start(ep: &Endpoint, count: u32, cpus: Option<&str>) -> Result<Subscribers, HarnessError> {
        let fail = load_err("subscriber");
        let connector = Arc::new(connector(ep, Duration::from_millis(200))?);
        let received = Arc::new(AtomicU64::new(0));
        let last_message = Arc::new(std::sync::Mutex::new(Instant::now()));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let mut threads = Vec::new();
        for _ in 0..count {
            let connector = Arc::clone(&connector);
            let received = Arc::clone(&received);
            let last_message = Arc::clone(&last_message);
            let stop = Arc::clone(&stop);
            let ready = ready_tx.clone();
            let cpus = cpus.map(str::to_owned);
            threads.push(thread::spawn(move || -> Result<(), String> {
                pin_thread(cpus.as_deref());
                let mut conn = connector.open_authenticated().map_err(|e| e.to_string())?;
                let mut request = Vec::new();
                resp::encode_command(&mut request, &["SUBSCRIBE", CHANNEL]);
                let confirm = conn
                    .round_trip(&request, 1, Stage::Command)
                    .map_err(|e| e.to_string())?;
                let subscribed = matches!(
                    confirm.first(),
                    Some(Reply::Array(Some(items)))
                        if matches!(items.first(), Some(Reply::Bulk(Some(k))) if k == b"subscribe")
                );
                let _ = ready.send((subscribed, format!("{confirm:?}")));
                while !stop.load(Ordering::Relaxed) {
                    match conn.read_reply() {
                        Ok(reply) if is_message(&reply) => {
                            received.fetch_add(1, Ordering::Relaxed);
                            if let Ok(mut at) = last_message.lock() {
                                *at = Instant::now();
                            }
                        }
                        Ok(other) => return Err(format!("unexpected push {other:?}")),
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                            ) => {}
                        Err(e) => return Err(format!("subscriber connection: {e}")),
                    }
                }
                Ok(())
            }));
        }
        drop(ready_tx);
        let subs = Subscribers {
            received,
            last_message,
            stop,
            threads,
        };
        for _ in 0..count {
            match ready_rx.recv_timeout(Duration::from_secs(30)) {
                Ok((true, _)) => {}
                Ok((false, confirm)) => {
                    subs.finish().ok();
                    return Err(fail(crate::load::LoadError::Reply(format!(
                        "SUBSCRIBE answered {confirm}"
                    ))));
                }
                Err(_) => {
                    let err = subs.finish().err().unwrap_or_else(|| "no reply".into());
                    return Err(HarnessError::Process {
                        what: "subscriber".into(),
                        detail: format!("not subscribed within 30 s: {err}"),
                    });
                }
            }
        }
        Ok(subs)
    }

    /// Messages counted so far.
    fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Waits until `expected` messages arrived in all or none came for [`DRAIN_QUIET`];
    /// returns the count and when the last message arrived.
    fn drain(&self, expected: u64) -> (u64, Instant) {
        loop {
            let got = self.received();
            let last = self
                .last_message
                .lock()
                .map(|at| *at)
                .unwrap_or_else(|_| Instant::now());
            if got >= expected || last.elapsed() > DRAIN_QUIET {
                return (got, last);
            }
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the threads; the first subscriber error, if any.
    fn finish(self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        let mut first = Ok(());
        for t in self.threads {
            let r = t
                .join()
                .unwrap_or_else(|_| Err("subscriber panicked".into()));
            if first.is_ok() {
                first = r;
            }
        }
        first
    }
}

/// One server start: ZADD, then ZRANGE on the loaded set, then the fan-out.
fn one_server_run(session: &Session, spec: &ServerSpec) -> Result<Vec<TypesRun>, HarnessError> {
    let plan = &session.plan;
    let server = spec.start(&session.files)?;
    let ep = server.endpoint().clone();
    let timeout = session.timeout(plan.rpc_seconds);
    let members = load_zset(&ep)?;
    if members != ZSET_MEMBERS as i64 {
        return Err(HarnessError::Process {
            what: "loading the sorted set".into(),
            detail: format!("ZCARD {members}, expected {ZSET_MEMBERS}"),
        });
    }
    let mut out = Vec::new();
    for label in WORKLOADS {
        let subs = if label == PUBLISH {
            Some(Subscribers::start(
                &ep,
                SUBSCRIBERS,
                plan.client_cpus.as_deref(),
            )?)
        } else {
            None
        };
        let measured = (|| {
            let work = session.calibrate_rpc(&ep, &workload(session, label), timeout)?;
            let before = match &subs {
                // The calibration's messages settle first (no more for `DRAIN_QUIET`).
                Some(s) => s.drain(u64::MAX).0,
                None => 0,
            };
            let meter = procstat::Meter::start(server.pid(), spec.cpus())?;
            let started = Instant::now();
            let mut bench = session.bench.run(&ep, &work, timeout)?;
            bench.test = label.to_owned();
            let delivery = subs.as_ref().map(|s| {
                let expected = before + bench.requests * u64::from(SUBSCRIBERS);
                let (got, last) = s.drain(expected);
                (
                    got - before,
                    bench.requests * u64::from(SUBSCRIBERS),
                    last.saturating_duration_since(started).as_secs_f64(),
                )
            });
            let metered = meter.stop()?;
            Ok::<_, HarnessError>(TypesRun {
                bench,
                server_cpu: metered.process,
                others_on_server_cpus: metered.others_on_server_cpus,
                subscribers: subs.as_ref().map(|_| SUBSCRIBERS),
                delivered: delivery.map(|d| d.0),
                expected_deliveries: delivery.map(|d| d.1),
                delivery_s: delivery.map(|d| d.2),
            })
        })();
        if let Some(subs) = subs {
            if let Err(err) = subs.finish() {
                return Err(HarnessError::Process {
                    what: "subscriber".into(),
                    detail: err,
                });
            }
        }
        out.push(measured?);
    }
    server.stop();
    Ok(out)
}

/// Operations one run's CPU is divided by: deliveries for the fan-out, requests otherwise.
pub fn operations(run: &TypesRun) -> u64 {
    run.delivered.unwrap_or(run.bench.requests).max(1)
}

/// Deliveries per second of a fan-out run: deliveries ÷ (start of the publishers → last
/// message received).
pub fn deliveries_per_s(run: &TypesRun) -> Option<f64> {
    let (delivered, secs) = (run.delivered?, run.delivery_s?);
    (secs > 0.0).then(|| delivered as f64 / secs)
}

/// The rows of one server from its runs (one `Vec` per workload, in [`WORKLOADS`] order).
pub fn rows_of(server: &str, per_workload: Vec<Vec<TypesRun>>) -> Vec<TypesRow> {
    WORKLOADS
        .iter()
        .zip(per_workload)
        .map(|(label, runs)| TypesRow {
            server: server.to_owned(),
            workload: (*label).to_owned(),
            req_per_s: Summary::collect(runs.iter().map(|r| r.bench.rps)),
            deliveries_per_s: runs
                .iter()
                .map(deliveries_per_s)
                .collect::<Option<Vec<f64>>>()
                .filter(|v| !v.is_empty())
                .map(|v| Summary::collect(v.into_iter())),
            cpu_us_per_op: Summary::collect(
                runs.iter().map(|r| {
                    (r.server_cpu.user_s + r.server_cpu.sys_s) * 1e6 / operations(r) as f64
                }),
            ),
            client_cpu_util: Summary::collect(runs.iter().map(|r| r.bench.client_cpu_util)),
            ratio_to_redis: None,
            runs,
        })
        .collect()
}

/// Sets every shardline row's `ratio_to_redis` (median req/s ÷ redis-server's, same workload).
pub fn fill_ratios(rows: &mut [TypesRow]) {
    let redis: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r.server == REDIS)
        .map(|r| (r.workload.clone(), r.req_per_s.median))
        .collect();
    for row in rows.iter_mut().filter(|r| r.server == SHARDLINE) {
        row.ratio_to_redis = redis
            .iter()
            .find(|(w, _)| *w == row.workload)
            .and_then(|(_, rps)| (*rps > 0.0).then(|| row.req_per_s.median / rps));
    }
}

/// What is wrong with a fan-out run's count, if anything. redis-benchmark may send up to
/// `overshoot` (= `-c` × `-P`) PUBLISH calls beyond `-n` (its last pipelines are written
/// whole), so every subscriber must have received between `-n` and `-n + overshoot`
/// messages, and all subscribers the same number (the total a multiple of the subscribers).
pub fn delivery_problem(run: &TypesRun, overshoot: u32) -> Option<String> {
    let (got, subs) = (run.delivered?, u64::from(run.subscribers?.max(1)));
    let low = run.bench.requests * subs;
    let high = (run.bench.requests + u64::from(overshoot)) * subs;
    (got % subs != 0 || got < low || got > high).then(|| {
        format!(
            "subscribers received {got} messages; {} PUBLISH (-n) × {subs} subscribers = {low}, \
             at most {high} with redis-benchmark's last pipelines",
            run.bench.requests
        )
    })
}

/// Runs the types table: run *i* of both servers before run *i + 1*, alternating shardline
/// and redis-server. Servers that fail are reported in `notes`.
pub fn run(session: &Session, notes: &mut Vec<String>) -> Vec<TypesRow> {
    // As the RPC table: `--smp 1` on the server CPU, credentials cache on (the 50 logins of
    // every redis-benchmark invocation stay out of the per-request cost).
    let mut specs = vec![(
        SHARDLINE,
        ServerSpec::Shardline(session.shardline(HashMode::Yield, true, session.plan.cache_ttl_ms)),
    )];
    if let Some(redis) = session.redis(true) {
        specs.push((REDIS, ServerSpec::Redis(redis)));
    }
    let mut per_server: Vec<Option<Vec<Vec<TypesRun>>>> = specs
        .iter()
        .map(|_| Some(vec![Vec::new(); WORKLOADS.len()]))
        .collect();
    for i in 1..=session.plan.runs {
        for ((server, spec), slot) in specs.iter().zip(per_server.iter_mut()) {
            let Some(per_workload) = slot else { continue };
            match session.with_retry(&format!("{server} types run {i}"), || {
                one_server_run(session, spec)
            }) {
                Ok(runs) => {
                    for (bucket, run) in per_workload.iter_mut().zip(runs) {
                        session.progress(&format!(
                            "  {server} {} run {i}: {:.0} req/s{}, {:.2} server CPU µs per {}",
                            run.bench.test,
                            run.bench.rps,
                            deliveries_per_s(&run)
                                .map(|d| format!(
                                    ", {d:.0} deliveries/s ({} of {})",
                                    run.delivered.unwrap_or(0),
                                    run.expected_deliveries.unwrap_or(0)
                                ))
                                .unwrap_or_default(),
                            (run.server_cpu.user_s + run.server_cpu.sys_s) * 1e6
                                / operations(&run) as f64,
                            if run.delivered.is_some() {
                                "delivery"
                            } else {
                                "request"
                            }
                        ));
                        bucket.push(run);
                    }
                }
                Err(err) => {
                    notes.push(format!("types rows of {server} failed: {err}"));
                    *slot = None;
                }
            }
        }
    }
    let mut rows: Vec<TypesRow> = specs
        .iter()
        .zip(per_server)
        .filter_map(|((server, _), runs)| runs.map(|r| rows_of(server, r)))
        .flatten()
        .collect();
    fill_ratios(&mut rows);
    for row in rows.iter().filter(|r| r.workload == PUBLISH) {
        for run in &row.runs {
            if let Some(problem) =
                delivery_problem(run, PUBLISH_CLIENTS * session.plan.rpc_pipeline)
            {
                notes.push(format!("{} fan-out: {problem}", row.server));
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::procstat::CpuDelta;
    use crate::harness::redis_benchmark::BenchResult;

    fn run(rps: f64, requests: u64, cpu_s: f64, delivered: Option<u64>) -> TypesRun {
        TypesRun {
            bench: BenchResult {
                rps,
                requests,
                ..BenchResult::default()
            },
            server_cpu: CpuDelta {
                wall_s: 1.0,
                user_s: cpu_s * 0.75,
                sys_s: cpu_s * 0.25,
                ..CpuDelta::default()
            },
            subscribers: delivered.map(|_| SUBSCRIBERS),
            delivered,
            expected_deliveries: delivered.map(|_| requests * u64::from(SUBSCRIBERS)),
            delivery_s: delivered.map(|_| 2.0),
            ..TypesRun::default()
        }
    }

    #[test]
    fn recognises_messages_and_not_other_pushes() {
        let msg = Reply::Array(Some(vec![
            Reply::Bulk(Some(b"message".to_vec())),
            Reply::Bulk(Some(CHANNEL.as_bytes().to_vec())),
            Reply::Bulk(Some(PAYLOAD.as_bytes().to_vec())),
        ]));
        assert!(is_message(&msg));
        let confirm = Reply::Array(Some(vec![
            Reply::Bulk(Some(b"subscribe".to_vec())),
            Reply::Bulk(Some(CHANNEL.as_bytes().to_vec())),
            Reply::Integer(1),
        ]));
        assert!(!is_message(&confirm));
        assert!(!is_message(&Reply::Integer(8)));
        assert_eq!(PAYLOAD.len(), 16);
    }

    #[test]
    fn fan_out_counts_within_redis_benchmarks_overshoot_pass() {
        // 1000 PUBLISH asked, -c 10 -P 16: up to 160 more may be sent.
        let exact = run(1.0, 1000, 1.0, Some(8_000));
        assert_eq!(delivery_problem(&exact, 160), None);
        let over = run(1.0, 1000, 1.0, Some(8 * 1_015));
        assert_eq!(delivery_problem(&over, 160), None);
        let lost = run(1.0, 1000, 1.0, Some(7_999));
        assert!(delivery_problem(&lost, 160).is_some_and(|p| p.contains("7999")));
        let too_many = run(1.0, 1000, 1.0, Some(8 * 1_161));
        assert!(delivery_problem(&too_many, 160).is_some());
        assert_eq!(delivery_problem(&run(1.0, 1000, 1.0, None), 160), None);
    }

    #[test]
    fn rows_divide_cpu_by_deliveries_for_the_fan_out_and_compare_to_redis() {
        let shard = |rps: f64| {
            vec![
                vec![run(rps, 100_000, 0.5, None)],
                vec![run(rps / 2.0, 100_000, 0.5, None)],
                vec![run(rps / 4.0, 100_000, 0.8, Some(800_000))],
            ]
        };
        let mut rows = rows_of(SHARDLINE, shard(100_000.0));
        rows.extend(rows_of(REDIS, shard(200_000.0)));
        fill_ratios(&mut rows);
        assert_eq!(rows.len(), 6);
        assert_eq!(rows[0].workload, ZADD);
        assert_eq!(rows[1].workload, ZRANGE);
        assert_eq!(rows[2].workload, PUBLISH);
        // 0.5 s of CPU over 100,000 requests: 5 µs each.
        assert!((rows[0].cpu_us_per_op.median - 5.0).abs() < 1e-9);
        // 0.8 s over 800,000 deliveries: 1 µs each; 800,000 in 2 s.
        assert!((rows[2].cpu_us_per_op.median - 1.0).abs() < 1e-9);
        let d = rows[2].deliveries_per_s.as_ref().map(|s| s.median);
        assert_eq!(d, Some(400_000.0));
        assert!(rows[0].deliveries_per_s.is_none());
        for row in &rows[..3] {
            assert_eq!(row.ratio_to_redis, Some(0.5), "{}", row.workload);
        }
        assert!(rows[3..].iter().all(|r| r.ratio_to_redis.is_none()));
    }
}
