//! Running our own client, `shardline-load`, as a separate (pinned) process.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::endpoint::Endpoint;
use super::error::HarnessError;
use super::process::{pinned_command, run_to_completion, Managed};
use crate::load::probe::ProbeReport;
use crate::load::storm::StormReport;

/// How to invoke `shardline-load`.
#[derive(Debug, Clone)]
pub struct LoadClient {
    /// The `shardline-load` binary.
    pub bin: PathBuf,
    /// CPUs for `taskset -c`, if pinned.
    pub cpus: Option<String>,
}

fn parse_json<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> Result<T, HarnessError> {
    serde_json::from_str(text).map_err(|e| HarnessError::Parse {
        what: format!("{what} report"),
        detail: format!("{e}: {text:?}"),
    })
}

impl LoadClient {
    fn command(&self, endpoint: &Endpoint) -> Command {
        let mut cmd = pinned_command(&self.bin, self.cpus.as_deref());
        cmd.args(["--port", &endpoint.port.to_string()])
            .args(["--user", &endpoint.user])
            .env("SHARDLINE_LOAD_PASSWORD", &endpoint.password);
        match &endpoint.tls_ca {
            Some(ca) => cmd.arg("--cacert").arg(ca),
            None => cmd.args(["--tls", "off"]),
        };
        cmd
    }

    /// Runs a connection-per-request storm for `duration` with `concurrency` threads.
    ///
    /// # Errors
    /// [`HarnessError::Process`] when the client fails, [`HarnessError::Parse`] for a bad
    /// report.
    pub fn storm(
        &self,
        endpoint: &Endpoint,
        concurrency: u32,
        duration: Duration,
    ) -> Result<StormReport, HarnessError> {
        let mut cmd = self.command(endpoint);
        cmd.arg("storm")
            .args(["--concurrency", &concurrency.to_string()])
            .args(["--duration-s", &duration.as_secs_f64().to_string()]);
        let done = run_to_completion(
            "shardline-load storm",
            cmd,
            duration * 2 + Duration::from_secs(30),
        )?;
        if !done.status.success() {
            return Err(HarnessError::Process {
                what: "shardline-load storm".into(),
                detail: format!("{}: {}", done.status, done.stderr.trim()),
            });
        }
        parse_json("storm", &done.stdout)
    }

    /// Starts a GET probe (`connections` persistent connections, `rate` GETs/s in total) that
    /// runs until [`RunningProbe::finish`] or `max_duration`, and waits until it is ready.
    ///
    /// # Errors
    /// [`HarnessError::Process`] when it does not get ready within 30 s.
    pub fn start_probe(
        &self,
        endpoint: &Endpoint,
        connections: u32,
        rate: f64,
        max_duration: Duration,
    ) -> Result<RunningProbe, HarnessError> {
        let mut cmd = self.command(endpoint);
        cmd.arg("--until-stdin-eof")
            .arg("probe")
            .args(["--connections", &connections.to_string()])
            .args(["--rate", &rate.to_string()])
            .args(["--duration-s", &max_duration.as_secs_f64().to_string()]);
        let mut process = Managed::spawn("shardline-load probe", cmd, true)?;
        process.wait_for_line(Duration::from_secs(30), |l| {
            l.contains("probe ready").then_some(())
        })?;
        Ok(RunningProbe {
            process,
            max_duration,
        })
    }
}

/// A probe in progress.
pub struct RunningProbe {
    process: Managed,
    max_duration: Duration,
}

impl RunningProbe {
    /// Ends the probe (closes its stdin) and reads its report.
    ///
    /// # Errors
    /// [`HarnessError::Process`] when it fails, [`HarnessError::Parse`] for a bad report.
    pub fn finish(mut self) -> Result<ProbeReport, HarnessError> {
        self.process.close_stdin();
        let status = self
            .process
            .wait(self.max_duration + Duration::from_secs(30))?;
        if !status.success() {
            return Err(HarnessError::Process {
                what: "shardline-load probe".into(),
                detail: format!("{status}\n{}", self.process.output_tail(10)),
            });
        }
        // The reader thread may still be copying the last lines: give it a moment.
        let mut text = self.process.stdout_text();
        for _ in 0..50 {
            if serde_json::from_str::<ProbeReport>(&text).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            text = self.process.stdout_text();
        }
        parse_json("probe", &text)
    }
}
