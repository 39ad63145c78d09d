//! Running redis-benchmark against an [`Endpoint`] and reading its `--csv` output.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::endpoint::Endpoint;
use super::error::HarnessError;
use super::process::{pinned_command, run_to_completion};

/// How to invoke redis-benchmark.
#[derive(Debug, Clone)]
pub struct RedisBenchmark {
    /// The `redis-benchmark` binary.
    pub bin: PathBuf,
    /// CPUs for `taskset -c`, if pinned.
    pub cpus: Option<String>,
}

/// One invocation's workload.
#[derive(Debug, Clone)]
pub struct Workload {
    /// `-t` test name, e.g. `get` or `set`.
    pub test: String,
    /// `-c` parallel connections.
    pub clients: u32,
    /// `-n` total requests.
    pub requests: u64,
    /// `-k 1` keep connections, `-k 0` reconnect for every request.
    pub keepalive: bool,
    /// `-P` pipelined requests per connection.
    pub pipeline: u32,
    /// `-r` random key space, if any.
    pub keyspace: Option<u64>,
    /// `-d` value size, bytes.
    pub data_size: u32,
    /// A custom command sent instead of the `-t` test when not empty (redis-benchmark takes
    /// it after the options, e.g. `ZRANGE key 0 9 WITHSCORES`); `test` is then only a label.
    pub command: Vec<String>,
}

/// One CSV row of redis-benchmark plus what the harness measured around it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Test name as printed (e.g. `GET`).
    pub test: String,
    /// Requests per second as redis-benchmark computed it.
    pub rps: f64,
    /// Mean latency, ms.
    pub avg_ms: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// Largest latency, ms.
    pub max_ms: f64,
    /// Requests sent (`-n`).
    pub requests: u64,
    /// Wall time of the whole invocation, seconds (includes start-up).
    pub wall_s: f64,
    /// redis-benchmark's own CPU (user + system) per wall second: near 1.0 means the client,
    /// not the server, may be the bottleneck.
    pub client_cpu_util: f64,
}

/// Parses the first data row of `redis-benchmark --csv` output:
/// `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"`.
///
/// # Errors
/// A description when no data row is present or a number is malformed.
pub fn parse_csv(stdout: &str) -> Result<BenchResult, String> {
    let row = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with('"') && !l.starts_with("\"test\""))
        .ok_or_else(|| format!("no CSV data row in {stdout:?}"))?;
    let cells: Vec<&str> = row.split(',').map(|c| c.trim_matches('"')).collect();
    if cells.len() < 8 {
        return Err(format!("expected 8 columns in {row:?}"));
    }
    let num = |i: usize| -> Result<f64, String> {
        cells[i]
            .parse()
            .map_err(|_| format!("bad number {:?} in {row:?}", cells[i]))
    };
    Ok(BenchResult {
        test: cells[0].to_owned(),
        rps: num(1)?,
        avg_ms: num(2)?,
        p50_ms: num(4)?,
        p99_ms: num(6)?,
        max_ms: num(7)?,
        ..BenchResult::default()
    })
}

impl RedisBenchmark {
    /// Runs `work` against `endpoint` (TLS with `--cacert` when the endpoint has a CA, ACL
    /// user via `--user/-a`), killing it after `timeout`.
    ///
    /// # Errors
    /// [`HarnessError::Process`] when it fails, times out or prints no result.
    pub fn run(
        &self,
        endpoint: &Endpoint,
        work: &Workload,
        timeout: Duration,
    ) -> Result<BenchResult, HarnessError> {
        let mut cmd = pinned_command(&self.bin, self.cpus.as_deref());
        cmd.args(["-h", "127.0.0.1", "-p", &endpoint.port.to_string()]);
        if let Some(ca) = &endpoint.tls_ca {
            cmd.arg("--tls").arg("--cacert").arg(ca);
        }
        cmd.args(["--user", &endpoint.user, "-a", &endpoint.password]);
        if work.command.is_empty() {
            cmd.args(["-t", &work.test]);
        }
        cmd.args(["-c", &work.clients.to_string()])
            .args(["-n", &work.requests.to_string()])
            .args(["-k", if work.keepalive { "1" } else { "0" }])
            .args(["-P", &work.pipeline.to_string()])
            .args(["-d", &work.data_size.to_string()])
            .arg("--csv");
        if let Some(r) = work.keyspace {
            cmd.args(["-r", &r.to_string()]);
        }
        cmd.args(&work.command);
        let done = run_to_completion("redis-benchmark", cmd, timeout)?;
        let fail = |detail: String| HarnessError::Process {
            what: "redis-benchmark".into(),
            detail: format!(
                "{detail}\nstderr: {}\nstdout: {}",
                done.stderr.trim(),
                done.stdout.trim()
            ),
        };
        if !done.status.success() {
            return Err(fail(format!("exited with {}", done.status)));
        }
        let mut result = parse_csv(&done.stdout).map_err(fail)?;
        result.requests = work.requests;
        result.wall_s = done.wall.as_secs_f64();
        result.client_cpu_util = (done.user_s + done.sys_s) / result.wall_s.max(1e-9);
        Ok(result)
    }

    /// Runs a short calibration with `probe_requests`, then sizes `work.requests` so the real
    /// run lasts about `seconds` (clamped to `min..=max`). Returns the calibration result and
    /// the sized workload.
    ///
    /// # Errors
    /// As [`RedisBenchmark::run`].
    pub fn calibrate(
        &self,
        endpoint: &Endpoint,
        work: &Workload,
        probe_requests: u64,
        seconds: f64,
        (min, max): (u64, u64),
        timeout: Duration,
    ) -> Result<(BenchResult, Workload), HarnessError> {
        let probe = Workload {
            requests: probe_requests,
            ..work.clone()
        };
        let warm = self.run(endpoint, &probe, timeout)?;
        let wanted = (warm.rps * seconds).round();
        let requests = if wanted.is_finite() && wanted > 0.0 {
            (wanted as u64).clamp(min, max)
        } else {
            min
        };
        Ok((
            warm,
            Workload {
                requests,
                ..work.clone()
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_csv_row() {
        let out = "WARNING: Keepalive disabled.\n\
                   \"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\
                   \"GET\",\"2718.87\",\"3.057\",\"0.736\",\"3.063\",\"4.503\",\"4.791\",\"12.103\"\n";
        let r = parse_csv(out).expect("row");
        assert_eq!(r.test, "GET");
        assert_eq!(r.rps, 2718.87);
        assert_eq!(r.p50_ms, 3.063);
        assert_eq!(r.p99_ms, 4.791);
        assert_eq!(r.max_ms, 12.103);
        assert!(parse_csv("\"test\",\"rps\"\n").is_err());
        assert!(parse_csv("\"GET\",\"x\",\"1\",\"1\",\"1\",\"1\",\"1\",\"1\"").is_err());
    }
}
