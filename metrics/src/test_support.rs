//! Helpers for this crate's unit tests: read one sample back from the text exposition.

use crate::Metrics;

/// The value of the sample `name{labels}` (exact label set, any order) in `metrics`'
/// text exposition, or `None` if there is no such sample.
pub(crate) fn sample(metrics: &Metrics, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let text = String::from_utf8(metrics.encode_text().ok()?).ok()?;
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, series_labels) = match series.split_once('{') {
                Some((n, rest)) => (n, rest.strip_suffix('}')?),
                None => (series, ""),
            };
            if series_name != name {
                return None;
            }
            let mut found: Vec<(&str, &str)> = series_labels
                .split(',')
                .filter(|pair| !pair.is_empty())
                .filter_map(|pair| {
                    let (k, v) = pair.split_once('=')?;
                    Some((k, v.strip_prefix('"')?.strip_suffix('"')?))
                })
                .collect();
            let mut wanted = labels.to_vec();
            found.sort_unstable();
            wanted.sort_unstable();
            (found == wanted).then(|| value.parse().ok()).flatten()
        })
}

/// Asserts `actual` is present and within 1e-9 of `expected`.
#[track_caller]
pub(crate) fn assert_close(actual: Option<f64>, expected: f64) {
    match actual {
        Some(v) => assert!((v - expected).abs() < 1e-9, "{v} != {expected}"),
        None => panic!("sample missing, expected {expected}"),
    }
}
