//! CPU time and context switches of a server process from `/proc` (all its threads), to
//! express a run's cost per request like Kudu's rpc-bench.

use std::time::Instant;

use procfs::process::Process;
use procfs::{CurrentSI, KernelStats};
use serde::{Deserialize, Serialize};

use super::error::HarnessError;

/// Counters of a process at one instant.
#[derive(Debug, Clone)]
pub struct CpuSample {
    at: Instant,
    /// User CPU, clock ticks (whole process, exited threads included).
    utime: u64,
    /// System CPU, clock ticks.
    stime: u64,
    /// Voluntary context switches summed over the live threads.
    voluntary: u64,
    /// Involuntary context switches summed over the live threads.
    nonvoluntary: u64,
}

/// Difference between two [`CpuSample`]s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuDelta {
    /// Wall time between the samples, seconds.
    pub wall_s: f64,
    /// User CPU, seconds.
    pub user_s: f64,
    /// System CPU, seconds.
    pub sys_s: f64,
    /// Voluntary context switches.
    pub voluntary_ctxt_switches: u64,
    /// Involuntary context switches.
    pub nonvoluntary_ctxt_switches: u64,
}

impl CpuDelta {
    /// CPU used per wall second (1.0 = one core busy).
    pub fn utilisation(&self) -> f64 {
        (self.user_s + self.sys_s) / self.wall_s.max(1e-9)
    }

    /// All context switches.
    pub fn ctxt_switches(&self) -> u64 {
        self.voluntary_ctxt_switches + self.nonvoluntary_ctxt_switches
    }
}

fn proc_err(pid: u32, e: procfs::ProcError) -> HarnessError {
    HarnessError::Parse {
        what: format!("/proc/{pid}"),
        detail: e.to_string(),
    }
}

/// Reads `/proc/PID/stat` (utime, stime) and every `/proc/PID/task/TID/status` (voluntary and
/// nonvoluntary context switches).
///
/// # Errors
/// [`HarnessError::Parse`] when the process is gone or `/proc` is unreadable.
pub fn sample(pid: u32) -> Result<CpuSample, HarnessError> {
    let id = i32::try_from(pid).map_err(|_| HarnessError::Config(format!("pid {pid}")))?;
    let process = Process::new(id).map_err(|e| proc_err(pid, e))?;
    let stat = process.stat().map_err(|e| proc_err(pid, e))?;
    let mut voluntary = 0;
    let mut nonvoluntary = 0;
    for task in process.tasks().map_err(|e| proc_err(pid, e))?.flatten() {
        // A thread may exit between listing and reading: skip it.
        if let Ok(status) = task.status() {
            voluntary += status.voluntary_ctxt_switches.unwrap_or(0);
            nonvoluntary += status.nonvoluntary_ctxt_switches.unwrap_or(0);
        }
    }
    Ok(CpuSample {
        at: Instant::now(),
        utime: stat.utime,
        stime: stat.stime,
        voluntary,
        nonvoluntary,
    })
}

/// `after − before`.
pub fn delta(before: &CpuSample, after: &CpuSample) -> CpuDelta {
    let tick = procfs::ticks_per_second().max(1) as f64;
    CpuDelta {
        wall_s: after.at.duration_since(before.at).as_secs_f64(),
        user_s: after.utime.saturating_sub(before.utime) as f64 / tick,
        sys_s: after.stime.saturating_sub(before.stime) as f64 / tick,
        voluntary_ctxt_switches: after.voluntary.saturating_sub(before.voluntary),
        nonvoluntary_ctxt_switches: after.nonvoluntary.saturating_sub(before.nonvoluntary),
    }
}

/// Busy clock ticks of every CPU (user, nice, system, irq, softirq, steal) from `/proc/stat`.
fn cpu_busy_ticks() -> Option<Vec<u64>> {
    let stats = KernelStats::current().ok()?;
    Some(
        stats
            .cpu_time
            .iter()
            .map(|t| {
                t.user
                    + t.nice
                    + t.system
                    + t.irq.unwrap_or(0)
                    + t.softirq.unwrap_or(0)
                    + t.steal.unwrap_or(0)
            })
            .collect(),
    )
}

/// The machine-wide `Tcp: RetransSegs` counter from `/proc/net/snmp` (segments retransmitted;
/// on loopback any retransmit means a packet was dropped and the sender waited for a
/// retransmission time-out, ≥ 200 ms).
pub fn tcp_retransmits() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let column = names.split_whitespace().position(|n| n == "RetransSegs")?;
    values.split_whitespace().nth(column)?.parse().ok()
}

/// Parses a `taskset -c` CPU list such as `0`, `0-1` or `0,2-3`.
pub fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// Measures a server process over a run, and how busy its CPUs were with *other* work
/// (other processes on the machine disturb the figures; this makes that visible).
pub struct Meter {
    pid: u32,
    cpus: Option<Vec<usize>>,
    process: CpuSample,
    system: Option<Vec<u64>>,
    retransmits: Option<u64>,
}

/// What a [`Meter`] measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metered {
    /// The server process.
    pub process: CpuDelta,
    /// CPU time (in cores) that other work used on the server's CPUs during the run; `None`
    /// when the server is not pinned.
    pub others_on_server_cpus: Option<f64>,
    /// TCP segments retransmitted on the whole machine during the run.
    pub tcp_retransmits: Option<u64>,
}

impl Meter {
    /// Starts measuring process `pid`, pinned to `cpus` (a `taskset -c` list) if any.
    ///
    /// # Errors
    /// As [`sample`].
    pub fn start(pid: u32, cpus: Option<&str>) -> Result<Meter, HarnessError> {
        Ok(Meter {
            pid,
            cpus: cpus.and_then(parse_cpu_list),
            system: cpu_busy_ticks(),
            retransmits: tcp_retransmits(),
            process: sample(pid)?,
        })
    }

    /// Ends the measurement.
    ///
    /// # Errors
    /// As [`sample`].
    pub fn stop(self) -> Result<Metered, HarnessError> {
        let after = sample(self.pid)?;
        let process = delta(&self.process, &after);
        let tick = procfs::ticks_per_second().max(1) as f64;
        let others = match (self.cpus, self.system, cpu_busy_ticks()) {
            (Some(cpus), Some(before), Some(now)) => {
                let busy: u64 = cpus
                    .iter()
                    .filter_map(|&c| Some(now.get(c)?.saturating_sub(*before.get(c)?)))
                    .sum();
                let busy_cores = busy as f64 / tick / process.wall_s.max(1e-9);
                Some((busy_cores - process.utilisation()).max(0.0))
            }
            _ => None,
        };
        let retransmits = self
            .retransmits
            .zip(tcp_retransmits())
            .map(|(before, after)| after.saturating_sub(before));
        Ok(Metered {
            process,
            others_on_server_cpus: others,
            tcp_retransmits: retransmits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_process() {
        let before = sample(std::process::id()).expect("own /proc entry");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let after = sample(std::process::id()).expect("own /proc entry");
        let d = delta(&before, &after);
        assert!(d.wall_s > 0.0);
        assert!(d.user_s >= 0.0 && d.sys_s >= 0.0);
        let metered = Meter::start(std::process::id(), Some("0"))
            .and_then(Meter::stop)
            .expect("own /proc entry");
        assert!(metered.others_on_server_cpus.is_some());
        assert!(tcp_retransmits().is_some());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("0-2,5"), Some(vec![0, 1, 2, 5]));
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list(""), None);
    }
}
