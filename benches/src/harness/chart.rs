//! The SVG chart: new connections/s per shard and reactor stalls per shard for each
//! `--hash-mode` (median bars, min–max error bars).
//!
//! Uses plotters' SVG backend only, built without the `ttf` feature: text is laid out with
//! plotters' built-in size estimate and written as SVG `<text>`, so no system font is needed.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::error::HarnessError;
use super::markdown::num;
use super::results::HeadlineRow;
use crate::stats::Summary;

const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);

fn chart_err(e: impl std::fmt::Display) -> HarnessError {
    HarnessError::Config(format!("cannot draw the chart: {e}"))
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_desc: &str,
    labels: &[String],
    values: &[&Summary],
    color: RGBColor,
) -> Result<(), HarnessError>
where
    DB::ErrorType: 'static,
{
    let top = values
        .iter()
        .map(|s| if s.max.is_finite() { s.max } else { 0.0 })
        .fold(0.0f64, f64::max);
    let y_max = if top > 0.0 { top * 1.2 } else { 1.0 };
    let n = labels.len();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        // plotters' integer ranges include their end: 0..n-1 gives exactly n slots.
        .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0f64..y_max)
        .map_err(chart_err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_desc)
        .y_label_formatter(&|v| num(*v))
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()
        .map_err(chart_err)?;
    chart
        .draw_series(
            Histogram::vertical(&chart)
                .style(color.filled())
                .margin(24)
                .data(
                    values
                        .iter()
                        .enumerate()
                        .map(|(i, s)| (i, finite(s.median))),
                ),
        )
        .map_err(chart_err)?;
    chart
        .draw_series(
            values
                .iter()
                .enumerate()
                .filter(|(_, s)| s.runs.len() > 1)
                .map(|(i, s)| {
                    ErrorBar::new_vertical(
                        SegmentValue::CenterOf(i),
                        finite(s.min),
                        finite(s.median),
                        finite(s.max),
                        BLACK.stroke_width(1),
                        10,
                    )
                }),
        )
        .map_err(chart_err)?;
    chart
        .draw_series(values.iter().enumerate().map(|(i, s)| {
            Text::new(
                num(s.median),
                (
                    SegmentValue::CenterOf(i),
                    finite(s.max).max(finite(s.median)) + y_max * 0.03,
                ),
                ("sans-serif", 14)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            )
        }))
        .map_err(chart_err)?;
    Ok(())
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// Writes the chart of `rows` to `path` (SVG).
///
/// # Errors
/// [`HarnessError::Config`] when plotters cannot draw or write the file.
pub fn write(rows: &[HeadlineRow], path: &Path) -> Result<(), HarnessError> {
    let labels: Vec<String> = rows.iter().map(|r| r.label()).collect();
    let root = SVGBackend::new(path, (980, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_err)?;
    let (left, right) = root.split_horizontally(490);
    let conn: Vec<&Summary> = rows.iter().map(|r| &r.conn_per_s_per_shard).collect();
    panel(
        &left,
        "New TLS connections/s per shard (AUTH each)",
        "connections/s",
        &labels,
        &conn,
        BLUE,
    )?;
    let stalls: Vec<&Summary> = rows.iter().map(|r| &r.stalls_per_shard).collect();
    panel(
        &right,
        "Reactor stalls per shard during the storm",
        "stalls",
        &labels,
        &stalls,
        ORANGE,
    )?;
    root.present().map_err(chart_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;

    fn row(mode: &str, conn: &[f64], stalls: &[f64]) -> HeadlineRow {
        let s = |v: &[f64]| Summary::of(v).expect("values");
        HeadlineRow {
            mode: mode.into(),
            hash_batch: None,
            batch_size_mean: None,
            conn_per_s_per_shard: s(conn),
            stalls_per_shard: s(stalls),
            stalls_preempted_per_shard: None,
            quota_violation_ms_per_shard: s(&[0.0]),
            login_p99_ms: s(&[1.0]),
            hash_p99_ms: None,
            own_conn_per_s_per_shard: s(&[1.0]),
            probe_p50_ms: s(&[1.0]),
            probe_p99_ms: s(&[1.0]),
            probe_max_ms: s(&[1.0]),
            server_cpu_util: s(&[1.0]),
            server_cpu_ms_per_conn: s(&[1.0]),
            others_on_server_cpus: s(&[0.0]),
            runs: Vec::new(),
        }
    }

    #[test]
    fn draws_an_svg_without_system_fonts() {
        let dir = std::env::temp_dir().join(format!("shardline-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("chart.svg");
        let rows = vec![
            row(
                "inline",
                &[240.0, 244.0, 250.0],
                &[13000.0, 13186.0, 13300.0],
            ),
            row("yield", &[238.0, 241.0, 243.0], &[10.0, 12.0, 15.0]),
            row("offload", &[40.0, 41.5, 43.0], &[100.0, 109.0, 120.0]),
        ];
        write(&rows, &path).expect("chart drawn");
        let svg = std::fs::read_to_string(&path).expect("svg written");
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        assert!(svg.contains("inline") && svg.contains("offload"));
        assert!(svg.contains("13,186"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
