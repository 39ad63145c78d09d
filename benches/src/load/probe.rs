//! Persistent-connection GET probe: a few authenticated connections send GETs at a fixed
//! rate and record how long each took. Run beside a login storm, it shows the collateral damage
//! of reactor stalls on ordinary queries.
//!
//! Latency is measured from the moment a GET was *due* (its slot in the fixed schedule), not
//! from when it was sent, so a stalled server cannot hide its stall by delaying the probe's
//! next send (no coordinated omission). The service time (send → reply) is reported too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::conn::{Conn, Connector, Stage};
use super::LoadError;
use crate::resp;
use crate::stats::{micros_histogram, Latency};

/// Settings of a probe.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// Persistent connections, one thread each.
    pub connections: usize,
    /// GETs per second over all connections.
    pub rate_per_s: f64,
    /// Longest the probe runs.
    pub duration: Duration,
    /// Key the probe sets once and then reads.
    pub key: String,
    /// Extra attempts to reconnect after a broken connection.
    pub retries: u32,
}

/// Result of a probe.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Connections used.
    pub connections: usize,
    /// Wall time of the measurement, seconds.
    pub elapsed_s: f64,
    /// GETs answered.
    pub completed: u64,
    /// GETs that failed (I/O error or error reply).
    pub errors: u64,
    /// The first error's message, for diagnosis.
    pub first_error: Option<String>,
    /// From the GET's scheduled time to its reply, ms (what a user would see).
    pub latency: Latency,
    /// From writing the GET to its reply, ms.
    pub service: Latency,
}

struct Worker {
    completed: u64,
    errors: u64,
    first_error: Option<String>,
    latency: Histogram<u64>,
    service: Histogram<u64>,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// Runs a probe until `config.duration` passes or `stop` is set. `on_ready` is called once
/// every connection has authenticated and set the key (measurement then begins).
///
/// # Errors
/// [`LoadError::Config`] for bad settings; the first connection's error when no connection
/// could be set up.
pub fn run(
    connector: Arc<Connector>,
    config: &ProbeConfig,
    stop: Arc<AtomicBool>,
    on_ready: impl FnOnce(),
) -> Result<ProbeReport, LoadError> {
    if config.connections == 0 || config.rate_per_s.is_nan() || config.rate_per_s <= 0.0 {
        return Err(LoadError::Config(
            "probe needs connections > 0 and a positive rate".into(),
        ));
    }
    let interval = Duration::from_secs_f64(config.connections as f64 / config.rate_per_s);
    let mut set = Vec::new();
    resp::encode_command(&mut set, &["SET", config.key.as_str(), "probe-value"]);
    let mut get = Vec::new();
    resp::encode_command(&mut get, &["GET", config.key.as_str()]);
    let get: Arc<[u8]> = get.into();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), LoadError>>();
    let begin = Instant::now();
    let deadline = begin + config.duration;

    let handles: Vec<_> = (0..config.connections)
        .map(|i| {
            let connector = Arc::clone(&connector);
            let stop = Arc::clone(&stop);
            let get = Arc::clone(&get);
            let set = set.clone();
            let ready_tx = ready_tx.clone();
            let retries = config.retries;
            let connections = config.connections;
            thread::spawn(move || {
                let setup = connector
                    .open_authenticated()
                    .and_then(|mut c| c.round_trip(&set, 1, Stage::Command).map(|_| c));
                let conn = match setup {
                    Ok(conn) => {
                        let _ = ready_tx.send(Ok(()));
                        conn
                    }
                    Err(err) => {
                        let _ = ready_tx.send(Err(err));
                        return None;
                    }
                };
                // Spread the connections' slots evenly over one interval.
                let offset = interval.mul_f64(i as f64 / connections as f64);
                Some(measure(
                    conn, &connector, &get, interval, offset, deadline, &stop, retries,
                ))
            })
        })
        .collect();
    drop(ready_tx);

    let mut first_setup_error = None;
    let mut ready = 0;
    for result in ready_rx.iter().take(config.connections) {
        match result {
            Ok(()) => ready += 1,
            Err(err) => {
                first_setup_error.get_or_insert(err);
            }
        }
    }
    if ready > 0 {
        on_ready();
    }
    let mut latency = micros_histogram();
    let mut service = micros_histogram();
    let mut report = ProbeReport {
        connections: ready,
        ..ProbeReport::default()
    };
    for handle in handles {
        let joined = handle
            .join()
            .map_err(|_| LoadError::Config("a probe thread panicked".into()))?;
        if let Some(w) = joined {
            report.completed += w.completed;
            report.errors += w.errors;
            if report.first_error.is_none() {
                report.first_error = w.first_error;
            }
            let _ = latency.add(&w.latency);
            let _ = service.add(&w.service);
        }
    }
    if ready == 0 {
        return Err(first_setup_error
            .unwrap_or_else(|| LoadError::Config("no probe connection was set up".into())));
    }
    report.elapsed_s = begin.elapsed().as_secs_f64();
    report.latency = Latency::from_micros(&latency);
    report.service = Latency::from_micros(&service);
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
fn measure(
    mut conn: Conn,
    connector: &Connector,
    get: &[u8],
    interval: Duration,
    offset: Duration,
    deadline: Instant,
    stop: &AtomicBool,
    retries: u32,
) -> Worker {
    let mut w = Worker {
        completed: 0,
        errors: 0,
        first_error: None,
        latency: micros_histogram(),
        service: micros_histogram(),
    };
    let start = Instant::now() + offset;
    let mut reconnects_left = retries;
    for n in 0u32.. {
        let due = start + interval * n;
        if due >= deadline || stop.load(Ordering::Relaxed) {
            break;
        }
        sleep_until(due, stop);
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let sent = Instant::now();
        match conn.round_trip(get, 1, Stage::Command) {
            Ok(_) => {
                let done = Instant::now();
                w.completed += 1;
                let _ = w.latency.record(micros(done - due));
                let _ = w.service.record(micros(done - sent));
            }
            Err(err) => {
                w.errors += 1;
                w.first_error.get_or_insert(err.to_string());
                if reconnects_left == 0 {
                    break;
                }
                reconnects_left -= 1;
                match connector.open_authenticated() {
                    Ok(c) => conn = c,
                    Err(err) => {
                        w.first_error.get_or_insert(err.to_string());
                        break;
                    }
                }
            }
        }
    }
    w
}

/// Sleeps until `due`, in short steps so a stop request is seen quickly.
fn sleep_until(due: Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= due {
            return;
        }
        thread::sleep((due - now).min(Duration::from_millis(50)));
    }
}
