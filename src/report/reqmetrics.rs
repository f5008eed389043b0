//! The request metrics of a run's page: waiting time, turnaround, slowdown, bounded slowdown
//! and stretch — mean and nearest-rank percentiles overall, per Grid, origin, lease type,
//! and Grid and origin — from `summary.json`'s `request_metrics` (checked as read,
//! [`super::summary`]). A run written before igemu had them has no such key: the section
//! says so.

use std::fmt::Write as _;

use serde_json::Value;

use super::html::table;
use super::summary::{METRIC_FIGURES, METRIC_GROUPS};
use super::svg::number;

/// How the page heads each metric's table: its title and unit.
const TITLES: [(&str, &str, &str); 5] = [
    ("wait_s", "Waiting time", "s"),
    ("turnaround_s", "Turnaround time", "s"),
    ("slowdown", "Slowdown", ""),
    ("bounded_slowdown", "Bounded slowdown", ""),
    ("stretch", "Stretch", ""),
];

/// Appends the request metrics' tables to `body` (under the Requests section).
pub(super) fn section(body: &mut String, metrics: Option<&Value>) {
    body.push_str("<h3 id=\"request-metrics\">Request metrics</h3>");
    let Some(m) = metrics else {
        body.push_str("<p class=\"note\">This run's summary.json has no <code>request_metrics</code> (written by igemu since it has them): run it again to see waiting time, slowdown, bounded slowdown and stretch here.</p>");
        return;
    };
    let tau = m["bounded_slowdown_tau_s"].as_f64().unwrap_or_default();
    let _ = write!(
        body,
        "<p class=\"note\">Per request, as <code>requests.csv</code>'s last columns have them (docs/outputs.md): waiting time = start − submit (every request that started); turnaround = end − submit, slowdown = turnaround / requested duration, bounded slowdown = max(1, turnaround / max(duration, τ)) with τ = {} s, stretch = turnaround / (end − start) (Batsim's <code>stretch</code>) — these over completed requests. <i>n</i> counts the requests that have the metric; percentiles are nearest-rank.</p>",
        number(tau)
    );
    for (metric, title, unit) in TITLES {
        let suffix = if unit.is_empty() {
            String::new()
        } else {
            format!(" ({unit})")
        };
        let _ = write!(body, "<h4>{title}{suffix}</h4>");
        let mut rows = vec![row("all requests", &m["all"][metric])];
        for (group, label) in METRIC_GROUPS {
            for (name, set) in m[group].as_object().into_iter().flatten() {
                rows.push(row(&format!("{label} {name}"), &set[metric]));
            }
        }
        let mut header = vec!["requests".to_string(), "n".to_string()];
        header.extend(METRIC_FIGURES.iter().map(|f| format!("{f}{suffix}")));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        table(body, &header, &rows, 1);
    }
}

/// A table row: the group, then `n` and each figure of `stats` (`–` where none).
fn row(group: &str, stats: &Value) -> Vec<String> {
    let mut row = vec![
        group.to_string(),
        stats["n"].as_u64().unwrap_or(0).to_string(),
    ];
    row.extend((METRIC_FIGURES.iter()).map(|f| stats[f].as_f64().map_or("–".into(), number)));
    row
}
