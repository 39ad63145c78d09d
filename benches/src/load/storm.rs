//! Connection-per-request load: every request opens a new connection (TCP connect, full TLS
//! handshake), pipelines `AUTH user pass` with one command, reads both replies and closes.
//! This is what `redis-benchmark -k 0 --user U -a P` does; here it cross-checks that figure.
//!
//! With [`StormConfig::give_up_after`] the clients are impatient: a request not answered in
//! time is dropped (the connection closed) and tried again at once on a new connection, as a
//! client library with a timeout and retries does. The report's per-second completions then
//! show whether the server keeps its login rate while abandoned logins pile up.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::conn::{Connector, Stage};
use super::LoadError;
use crate::resp;
use crate::stats::{micros_histogram, Latency};

/// Settings of a storm.
#[derive(Debug, Clone)]
pub struct StormConfig {
    /// Client threads, each with at most one connection in progress.
    pub concurrency: usize,
    /// Longest the storm runs.
    pub duration: Duration,
    /// Stop after this many requests (started), if set.
    pub max_requests: Option<u64>,
    /// Extra attempts when the TCP connect or TLS handshake fails.
    pub retries: u32,
    /// Pause before each retry.
    pub retry_delay: Duration,
    /// The command sent after AUTH on every connection, e.g. `["GET", "key"]`.
    pub command: Vec<String>,
    /// Impatient clients: a request (connect, handshake, AUTH, command) not done within this
    /// long is given up and retried at once on a new connection. `None`: wait (bounded by the
    /// target's I/O timeout) and count a failure.
    pub give_up_after: Option<Duration>,
}

/// Result of a storm.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StormReport {
    /// Client threads used.
    pub concurrency: usize,
    /// Wall time from the first connect to the last reply, seconds.
    pub elapsed_s: f64,
    /// Requests that completed: connection, AUTH accepted and command answered.
    pub completed: u64,
    /// Completed connections per second (`completed / elapsed_s`).
    pub conn_per_s: f64,
    /// Failed requests by the stage that failed (after retries).
    pub failures: BTreeMap<Stage, u64>,
    /// The first failure's message, for diagnosis.
    pub first_error: Option<String>,
    /// Connect/handshake retries taken.
    pub retries: u64,
    /// Requests given up after [`StormConfig::give_up_after`] (and retried).
    #[serde(default)]
    pub gave_up: u64,
    /// Completed requests (each one login) in each whole second since the start, up to the
    /// last second with one before the end of the storm.
    #[serde(default)]
    pub per_second: Vec<u64>,
    /// From starting the TCP connect to the AUTH reply (handshake + login), ms.
    pub login: Latency,
    /// From starting the TCP connect to the command's reply, ms.
    pub request: Latency,
}

struct Worker {
    completed: u64,
    failures: BTreeMap<Stage, u64>,
    first_error: Option<String>,
    retries: u64,
    gave_up: u64,
    per_second: Vec<u64>,
    login: Histogram<u64>,
    request: Histogram<u64>,
}

impl Worker {
    fn new() -> Worker {
        Worker {
            completed: 0,
            failures: BTreeMap::new(),
            first_error: None,
            retries: 0,
            gave_up: 0,
            per_second: Vec::new(),
            login: micros_histogram(),
            request: micros_histogram(),
        }
    }

    fn fail(&mut self, stage: Stage, message: String) {
        *self.failures.entry(stage).or_default() += 1;
        self.first_error.get_or_insert(message);
    }

    /// One more completed request, done `since_start` after the storm began; the last,
    /// partial second (requests finishing after the deadline) is not in `per_second`.
    fn completed_at(&mut self, since_start: Duration, duration: Duration) {
        self.completed += 1;
        if since_start >= duration {
            return;
        }
        let second = usize::try_from(since_start.as_secs()).unwrap_or(usize::MAX);
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += 1;
    }
}

/// Whether an error is a client-side time-out (what an impatient client gives up on).
fn timed_out(err: &LoadError) -> bool {
    matches!(
        err,
        LoadError::Connection { source, .. }
            if matches!(source.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
    )
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// Runs a storm until `config.duration` passes, `config.max_requests` were started, or `stop`
/// is set.
///
/// # Errors
/// [`LoadError::Config`] for zero concurrency or an empty command.
pub fn run(
    connector: Arc<Connector>,
    config: &StormConfig,
    stop: Arc<AtomicBool>,
) -> Result<StormReport, LoadError> {
    if config.concurrency == 0 || config.command.is_empty() {
        return Err(LoadError::Config(
            "storm needs concurrency > 0 and a command".into(),
        ));
    }
    let mut request = connector
        .auth_request()
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let replies = if request.is_empty() { 1 } else { 2 };
    resp::encode_command(&mut request, &config.command);
    let request: Arc<[u8]> = request.into();
    let started = Arc::new(AtomicU64::new(0));
    let begin = Instant::now();
    let deadline = begin + config.duration;

    let handles: Vec<_> = (0..config.concurrency)
        .map(|_| {
            let connector = Arc::clone(&connector);
            let request = Arc::clone(&request);
            let started = Arc::clone(&started);
            let stop = Arc::clone(&stop);
            let config = config.clone();
            thread::spawn(move || {
                let mut w = Worker::new();
                let budget_left = || match config.max_requests {
                    None => true,
                    Some(max) => started.fetch_add(1, Ordering::Relaxed) < max,
                };
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline && budget_left() {
                    one_request(
                        &connector,
                        &config,
                        &request,
                        replies,
                        (begin, deadline),
                        &mut w,
                    );
                }
                w
            })
        })
        .collect();

    let mut total = Worker::new();
    for handle in handles {
        // A worker thread never panics on server behaviour; a panic is a client bug.
        let w = handle
            .join()
            .map_err(|_| LoadError::Config("a storm worker thread panicked".into()))?;
        total.completed += w.completed;
        total.retries += w.retries;
        total.gave_up += w.gave_up;
        if total.per_second.len() < w.per_second.len() {
            total.per_second.resize(w.per_second.len(), 0);
        }
        for (sum, n) in total.per_second.iter_mut().zip(&w.per_second) {
            *sum += n;
        }
        for (stage, n) in w.failures {
            *total.failures.entry(stage).or_default() += n;
        }
        if total.first_error.is_none() {
            total.first_error = w.first_error;
        }
        // Same bounds on both sides: adding cannot fail.
        let _ = total.login.add(&w.login);
        let _ = total.request.add(&w.request);
    }
    let elapsed_s = begin.elapsed().as_secs_f64();
    Ok(StormReport {
        concurrency: config.concurrency,
        elapsed_s,
        completed: total.completed,
        conn_per_s: total.completed as f64 / elapsed_s.max(1e-9),
        failures: total.failures,
        first_error: total.first_error,
        retries: total.retries,
        gave_up: total.gave_up,
        per_second: total.per_second,
        login: Latency::from_micros(&total.login),
        request: Latency::from_micros(&total.request),
    })
}

fn one_request(
    connector: &Connector,
    config: &StormConfig,
    request: &[u8],
    replies: usize,
    (begin, deadline): (Instant, Instant),
    w: &mut Worker,
) {
    let t0 = Instant::now();
    let mut attempt = 0;
    let mut conn = loop {
        match connector.open_by(config.give_up_after.map(|patience| t0 + patience)) {
            Ok(conn) => break conn,
            Err(err) if config.give_up_after.is_some() && timed_out(&err) => {
                w.gave_up += 1;
                return;
            }
            Err(_) if attempt < config.retries && Instant::now() < deadline => {
                attempt += 1;
                w.retries += 1;
                thread::sleep(config.retry_delay);
            }
            Err(err) => {
                let stage = match &err {
                    LoadError::Connection { stage, .. } => *stage,
                    _ => Stage::Connect,
                };
                w.fail(stage, err.to_string());
                return;
            }
        }
    };
    if let Some(patience) = config.give_up_after {
        let left = patience.saturating_sub(t0.elapsed());
        if left.is_zero() || conn.set_timeouts(left).is_err() {
            w.gave_up += 1;
            return;
        }
    }
    match conn.round_trip_raw(request, replies, Stage::Auth) {
        Err(err) if config.give_up_after.is_some() && timed_out(&err) => w.gave_up += 1,
        Err(err) => w.fail(Stage::Auth, err.to_string()),
        Ok((out, first)) => {
            let done = Instant::now();
            if let Some(err) = out
                .first()
                .filter(|_| replies == 2)
                .and_then(|r| r.as_error())
            {
                w.fail(Stage::Auth, format!("AUTH refused: {err}"));
            } else if let Some(err) = out.last().and_then(|r| r.as_error()) {
                w.fail(Stage::Command, format!("command refused: {err}"));
            } else {
                w.completed_at(done - begin, deadline - begin);
                let _ = w.login.record(micros(first - t0));
                let _ = w.request.record(micros(done - t0));
            }
        }
    }
}
