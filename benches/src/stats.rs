//! Summaries of repeated measurements (median with min–max) and of latency histograms.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Median, minimum and maximum of the per-run values of one figure (unit: the figure's own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Median over runs (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest run value.
    pub min: f64,
    /// Largest run value.
    pub max: f64,
    /// Every run's value, in run order.
    pub runs: Vec<f64>,
}

impl Summary {
    /// Summarises `values`; `None` when there is no finite value.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[mid]
        } else {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        };
        Some(Summary {
            median,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            runs: values.to_vec(),
        })
    }

    /// Summarises the values of an iterator; NaN median/min/max when there is none.
    pub fn collect(values: impl Iterator<Item = f64>) -> Summary {
        let values: Vec<f64> = values.collect();
        Summary::of(&values).unwrap_or(Summary {
            median: f64::NAN,
            min: f64::NAN,
            max: f64::NAN,
            runs: values,
        })
    }
}

/// Latency percentiles of one client run, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Recorded samples.
    pub count: u64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Largest sample, ms.
    pub max_ms: f64,
    /// Mean, ms.
    pub mean_ms: f64,
}

impl Latency {
    /// Percentiles of a histogram whose samples are microseconds.
    pub fn from_micros(hist: &Histogram<u64>) -> Latency {
        if hist.is_empty() {
            return Latency::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            count: hist.len(),
            p50_ms: ms(hist.value_at_quantile(0.50)),
            p99_ms: ms(hist.value_at_quantile(0.99)),
            max_ms: ms(hist.max()),
            mean_ms: hist.mean() / 1000.0,
        }
    }
}

/// A histogram of microseconds from 1 µs to 10 minutes with 3 significant digits.
///
/// # Panics
/// Never: the bounds are constants that hdrhistogram accepts.
pub fn micros_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("constant histogram bounds are valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).expect("values");
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(s.runs, vec![3.0, 1.0, 2.0]);
        let s = Summary::of(&[4.0, 1.0, 2.0, 3.0]).expect("values");
        assert_eq!(s.median, 2.5);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn latency_in_milliseconds() {
        let mut h = micros_histogram();
        for us in [1_000, 2_000, 3_000] {
            h.record(us).expect("in range");
        }
        let l = Latency::from_micros(&h);
        assert_eq!(l.count, 3);
        assert!((l.p50_ms - 2.0).abs() < 0.01, "{l:?}");
        assert!((l.max_ms - 3.0).abs() < 0.01, "{l:?}");
    }
}
