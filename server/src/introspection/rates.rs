//! INFO's `instantaneous_ops_per_sec`, `instantaneous_input_kbps` and
//! `instantaneous_output_kbps` (Redis 7.0 `trackInstantaneousMetric`): each shard samples its
//! counters once a second; the rate is the change between the last two samples.

use std::cell::Cell;
use std::time::Instant;

/// One sample of a shard's counters.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: Instant,
    commands: u64,
    input_bytes: u64,
    output_bytes: u64,
}

/// The last two samples.
#[derive(Debug, Default)]
pub struct Rates {
    previous: Cell<Option<Sample>>,
    latest: Cell<Option<Sample>>,
}

/// Commands per second and KiB per second in and out, between the last two samples.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RateFigures {
    /// Commands per second.
    pub ops_per_sec: f64,
    /// Request KiB per second.
    pub input_kbps: f64,
    /// Reply KiB per second.
    pub output_kbps: f64,
}

impl Rates {
    /// Records the shard's counters now.
    pub fn sample(&self, commands: u64, input_bytes: u64, output_bytes: u64) {
        self.previous.set(self.latest.get());
        self.latest.set(Some(Sample {
            at: Instant::now(),
            commands,
            input_bytes,
            output_bytes,
        }));
    }

    /// The rates between the last two samples; zero before two were taken or after a reset.
    pub fn figures(&self) -> RateFigures {
        let (Some(a), Some(b)) = (self.previous.get(), self.latest.get()) else {
            return RateFigures::default();
        };
        let secs = b.at.duration_since(a.at).as_secs_f64();
        if secs <= 0.0 {
            return RateFigures::default();
        }
        let per_sec = |x: u64, y: u64| y.saturating_sub(x) as f64 / secs;
        RateFigures {
            ops_per_sec: per_sec(a.commands, b.commands),
            input_kbps: per_sec(a.input_bytes, b.input_bytes) / 1024.0,
            output_kbps: per_sec(a.output_bytes, b.output_bytes) / 1024.0,
        }
    }

    /// CONFIG RESETSTAT: forget the samples.
    pub fn reset(&self) {
        self.previous.set(None);
        self.latest.set(None);
    }
}
