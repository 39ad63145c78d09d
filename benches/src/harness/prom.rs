//! Scraping shardline's Prometheus `/metrics` and computing per-shard deltas between two
//! scrapes (counters and histogram buckets).
//!
//! Parses the subset of the text exposition format that a Prometheus client library emits:
//! `name{label="value",…} number` lines, comments ignored.

use std::collections::BTreeMap;
use std::time::Duration;

use super::error::HarnessError;

/// Labels of one series, sorted by name.
pub type Labels = BTreeMap<String, String>;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name, e.g. `shardline_reactor_stalls_count`.
    pub name: String,
    /// Its labels.
    pub labels: Labels,
    /// Its value.
    pub value: f64,
}

/// All samples of one scrape.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    /// Samples in exposition order.
    pub samples: Vec<Sample>,
}

fn parse_labels(text: &str) -> Result<Labels, String> {
    let mut labels = Labels::new();
    let mut rest = text.trim_start_matches([',', ' ']);
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| format!("no '=' in {rest:?}"))?;
        let name = rest[..eq].trim().to_owned();
        let after = rest[eq + 1..].trim_start();
        let body = after
            .strip_prefix('"')
            .ok_or_else(|| format!("label value not quoted in {rest:?}"))?;
        let mut value = String::new();
        let mut chars = body.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("dangling escape".into()),
                },
                Some((_, c)) => value.push(c),
                None => return Err(format!("unterminated label value in {rest:?}")),
            }
        };
        labels.insert(name, value);
        rest = body[end + 1..].trim_start_matches([',', ' ']);
    }
    Ok(labels)
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => text.parse().map_err(|_| format!("bad value {text:?}")),
    }
}

impl Scrape {
    /// Parses exposition text.
    ///
    /// # Errors
    /// A description of the first malformed line.
    pub fn parse(text: &str) -> Result<Scrape, String> {
        let mut samples = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (series, value) = match line.rfind('}') {
                Some(close) => (&line[..=close], line[close + 1..].trim()),
                None => line
                    .split_once(' ')
                    .map(|(s, v)| (s, v.trim()))
                    .ok_or_else(|| format!("no value in {line:?}"))?,
            };
            let value = value.split_whitespace().next().unwrap_or_default();
            let (name, labels) = match series.split_once('{') {
                Some((name, labels)) => (name, parse_labels(labels.trim_end_matches('}'))?),
                None => (series, Labels::new()),
            };
            samples.push(Sample {
                name: name.to_owned(),
                labels,
                value: parse_value(value)?,
            });
        }
        Ok(Scrape { samples })
    }

    /// Fetches and parses `url`.
    ///
    /// # Errors
    /// [`HarnessError::Process`] when the endpoint does not answer with 200,
    /// [`HarnessError::Parse`] for malformed text.
    pub fn fetch(url: &str) -> Result<Scrape, HarnessError> {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .new_agent();
        let text = agent
            .get(url)
            .call()
            .and_then(|mut r| r.body_mut().read_to_string())
            .map_err(|e| HarnessError::Process {
                what: format!("scrape of {url}"),
                detail: e.to_string(),
            })?;
        Scrape::parse(&text).map_err(|detail| HarnessError::Parse {
            what: format!("metrics from {url}"),
            detail,
        })
    }

    /// Sum of `name`'s samples grouped by the value of `label` (other labels summed over).
    pub fn sum_by(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self.samples.iter().filter(|s| s.name == name) {
            let key = s.labels.get(label).cloned().unwrap_or_default();
            *out.entry(key).or_insert(0.0) += s.value;
        }
        out
    }

    /// Sum of `name`'s samples whose labels include every `(label, value)` of `filter`.
    pub fn sum_where(&self, name: &str, filter: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                filter
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }

    /// Cumulative bucket counts of histogram `base` (samples `base_bucket`), summed over all
    /// other labels, sorted by upper bound `le` (seconds for our histograms).
    pub fn buckets(&self, base: &str) -> Vec<(f64, f64)> {
        let name = format!("{base}_bucket");
        let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for s in self.samples.iter().filter(|s| s.name == name) {
            let Some(le) = s.labels.get("le").and_then(|v| parse_value(v).ok()) else {
                continue;
            };
            let entry = by_le.entry(le.to_bits()).or_insert((le, 0.0));
            entry.1 += s.value;
        }
        let mut out: Vec<(f64, f64)> = by_le.into_values().collect();
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        out
    }
}

/// `after − before` per label value of `sum_by(name, label)`.
pub fn delta_by(before: &Scrape, after: &Scrape, name: &str, label: &str) -> BTreeMap<String, f64> {
    let old = before.sum_by(name, label);
    after
        .sum_by(name, label)
        .into_iter()
        .map(|(k, v)| {
            let prev = old.get(&k).copied().unwrap_or(0.0);
            (k, v - prev)
        })
        .collect()
}

/// `after − before` per pair of values of labels `l1` and `l2` (others summed over).
pub fn delta_by_pair(
    before: &Scrape,
    after: &Scrape,
    name: &str,
    (l1, l2): (&str, &str),
) -> BTreeMap<(String, String), f64> {
    let group = |scrape: &Scrape| {
        let mut out: BTreeMap<(String, String), f64> = BTreeMap::new();
        for s in scrape.samples.iter().filter(|s| s.name == name) {
            let key = (
                s.labels.get(l1).cloned().unwrap_or_default(),
                s.labels.get(l2).cloned().unwrap_or_default(),
            );
            *out.entry(key).or_insert(0.0) += s.value;
        }
        out
    };
    let old = group(before);
    group(after)
        .into_iter()
        .map(|(k, v)| {
            let prev = old.get(&k).copied().unwrap_or(0.0);
            (k, v - prev)
        })
        .collect()
}

/// `after − before` of the cumulative buckets of histogram `base`.
pub fn bucket_delta(before: &Scrape, after: &Scrape, base: &str) -> Vec<(f64, f64)> {
    let old = before.buckets(base);
    after
        .buckets(base)
        .into_iter()
        .map(|(le, count)| {
            let prev = old
                .iter()
                .find(|(l, _)| l.to_bits() == le.to_bits())
                .map_or(0.0, |(_, c)| *c);
            (le, count - prev)
        })
        .collect()
}

/// Quantile `q` (0..1) of cumulative buckets, interpolating linearly inside the bucket as
/// Prometheus's `histogram_quantile` does. `None` without observations. A quantile in the
/// `+Inf` bucket returns the largest finite bound.
pub fn quantile(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut prev_le = 0.0;
    let mut prev_count = 0.0;
    for &(le, count) in buckets {
        if count >= rank {
            if le.is_infinite() {
                return Some(prev_le);
            }
            let in_bucket = count - prev_count;
            let frac = if in_bucket > 0.0 {
                (rank - prev_count) / in_bucket
            } else {
                1.0
            };
            return Some(prev_le + (le - prev_le) * frac);
        }
        prev_le = le;
        prev_count = count;
    }
    Some(prev_le)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP shardline_reactor_stalls Reactor stalls.
# TYPE shardline_reactor_stalls histogram
shardline_reactor_stalls_bucket{shard="0",le="0.001"} 2
shardline_reactor_stalls_bucket{shard="0",le="0.002"} 6
shardline_reactor_stalls_bucket{shard="0",le="+Inf"} 6
shardline_reactor_stalls_count{shard="0"} 6
shardline_reactor_stalls_count{shard="1"} 1
shardline_scheduler_time_spent_on_task_quota_violations_seconds_total{shard="0",group="auth"} 0.5
shardline_scheduler_time_spent_on_task_quota_violations_seconds_total{shard="0",group="main"} 0.25
shardline_password_hash_offload_queue_depth 0
odd{a="x\"y",b="1"} 1e3
"#;

    #[test]
    fn parses_samples_and_groups_them() {
        let s = Scrape::parse(TEXT).expect("valid text");
        assert_eq!(s.samples.len(), 9);
        let stalls = s.sum_by("shardline_reactor_stalls_count", "shard");
        assert_eq!(stalls.get("0"), Some(&6.0));
        assert_eq!(stalls.get("1"), Some(&1.0));
        let qv = s.sum_by(
            "shardline_scheduler_time_spent_on_task_quota_violations_seconds_total",
            "shard",
        );
        assert_eq!(qv.get("0"), Some(&0.75));
        assert_eq!(s.sum_where("odd", &[("a", "x\"y")]), 1000.0);
        assert_eq!(
            s.sum_where("shardline_password_hash_offload_queue_depth", &[]),
            0.0
        );
    }

    #[test]
    fn deltas_and_quantiles() {
        let before = Scrape::parse(TEXT).expect("valid text");
        let after = Scrape::parse(
            &TEXT
                .replace("le=\"0.002\"} 6", "le=\"0.002\"} 16")
                .replace("le=\"+Inf\"} 6", "le=\"+Inf\"} 16"),
        )
        .expect("valid text");
        let d = bucket_delta(&before, &after, "shardline_reactor_stalls");
        assert_eq!(d, vec![(0.001, 0.0), (0.002, 10.0), (f64::INFINITY, 10.0)]);
        let p50 = quantile(&d, 0.5).expect("observations");
        assert!((p50 - 0.0015).abs() < 1e-9, "{p50}");
        assert_eq!(quantile(&[(1.0, 0.0)], 0.5), None);
        let stalls = delta_by(&before, &after, "shardline_reactor_stalls_count", "shard");
        assert_eq!(stalls.get("0"), Some(&0.0));
    }

    #[test]
    fn refuses_malformed_lines() {
        assert!(Scrape::parse("name{a=\"x} 1").is_err());
        assert!(Scrape::parse("name x").is_err());
        assert!(Scrape::parse("lonely").is_err());
    }
}
