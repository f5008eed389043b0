//! A run's page: provenance, key figures, requests, then the Gantt charts ([`super::hosts`]),
//! utilisation ([`super::usage`]) and peering ([`super::peering`]), from `summary.json`
//! (checked as read, [`super::summary`]) and the CSV files beside it.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use super::html::{figure, figure_table, page, section, table, table_of};
use super::requests::{reason_names, Requests};
use super::summary::ORIGINS;
use super::svg::{self, escape, number, LEASE_TYPES};
use super::{hosts, labels, leases, peering, reqmetrics, requests, summary, usage, Window};
use crate::Error;

/// The page of the run whose outputs are in `dir`, drawing `window` of emulated time. A
/// section with nothing in it is left out (no requests, no VM, a run of one Grid or without
/// negotiations: no peering), and so is its link.
pub(super) fn report(dir: &Path, window: Option<Window>) -> Result<String, Error> {
    let summary = summary::read(&dir.join("summary.json"))?;
    let requests_path = dir.join("requests.csv");
    let bounds = window.map(|w| (w.from, w.to.unwrap_or(f64::INFINITY)));
    let requests = if requests_path.exists() {
        Some(requests::read(&requests_path, &summary, bounds)?)
    } else {
        None
    };
    let leases = leases::read(&dir.join("leases.csv"), &summary)?;
    let mut body = String::new();
    section(&mut body, "provenance", |b| {
        provenance_section(b, &summary.value);
        Ok::<_, Error>(())
    })?;
    section(&mut body, "figures", |b| {
        figures_section(b, &summary.value, window.is_some());
        Ok::<_, Error>(())
    })?;
    section(&mut body, "requests", |b| {
        requests_section(b, requests.as_ref());
        reqmetrics::section(b, summary.request_metrics.as_ref());
        Ok::<_, Error>(())
    })?;
    let anchors = leases.as_ref().map(|l| &l.anchors);
    section(&mut body, "hosts", |b| {
        hosts::section(b, dir, (&summary, requests.as_ref()), window, anchors)
    })?;
    section(&mut body, "leases", |b| {
        leases::section(b, leases.as_ref());
        Ok::<_, Error>(())
    })?;
    section(&mut body, "utilisation", |b| {
        usage::section(b, dir, &summary, window)
    })?;
    section(&mut body, "peering", |b| {
        peering::section(b, dir, &summary, requests.as_ref(), window)
    })?;
    let nav = [
        ("provenance", "Provenance"),
        ("figures", "Key figures"),
        ("requests", "Requests"),
        ("hosts", "Hosts"),
        ("leases", "Lease events"),
        ("utilisation", "Utilisation"),
        ("peering", "Peering"),
    ];
    let nav: Vec<(&str, &str)> = (nav.into_iter())
        .filter(|(anchor, _)| body.contains(&format!("<h2 id=\"{anchor}\"")))
        .collect();
    Ok(page(
        &format!("igemu run: {}", summary.topology),
        &nav,
        &body,
    ))
}

/// The build that made the run (`commit …, dirty`), or that an older igemu did not say.
fn build_of(provenance: &Value) -> String {
    if provenance.get("commit").is_none() {
        return "not recorded (an igemu before builds were recorded)".into();
    }
    crate::build_info::Build {
        commit: provenance["commit"].as_str().map(str::to_string),
        dirty: provenance["dirty"].as_bool(),
    }
    .describe()
}

fn provenance_section(body: &mut String, summary: &Value) {
    body.push_str("<h2 id=\"provenance\">Provenance</h2>");
    let p = &summary["provenance"];
    let mut rows = vec![
        vec!["topology".into(), figure("", &summary["topology"])],
        vec![
            "igemu".into(),
            p["igemu"].as_str().unwrap_or("not recorded").into(),
        ],
        vec!["igemu build".into(), build_of(p)],
        vec![
            "topology file".into(),
            p["topology_path"]
                .as_str()
                .unwrap_or("the embedded quickstart")
                .into(),
        ],
        vec![
            "topology hash (FNV-1a 64)".into(),
            p["topology_hash"].as_str().unwrap_or("–").into(),
        ],
        vec!["seed".into(), figure("", &summary["seed"])],
        vec!["mode".into(), figure("", &summary["mode"])],
    ];
    let overrides: Vec<String> = p["overrides"]
        .as_array()
        .map(|a| a.iter().map(|v| figure("", v)).collect())
        .unwrap_or_default();
    rows.push(vec![
        "overrides (--set)".into(),
        if overrides.is_empty() {
            "none".into()
        } else {
            overrides.join("  ")
        },
    ]);
    rows.push(vec![
        "wall time".into(),
        format!("{} s", number(summary["wall_s"].as_f64().unwrap_or(0.0))),
    ]);
    table(body, &["what", "value"], &rows, 9);
    if let Some(policies) = summary["policies"].as_object() {
        body.push_str("<h3>Policies in force</h3>");
        let rows: Vec<Vec<String>> = policies
            .iter()
            .map(|(k, v)| vec![k.clone(), figure("", v)])
            .collect();
        table(body, &["where", "policy"], &rows, 9);
    }
}

/// Scalar numeric keys of a summary object, in file order.
pub(super) fn scalars(object: &Value) -> Vec<(String, &Value)> {
    object
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(_, v)| v.is_number())
                .map(|(k, v)| (k.clone(), v))
                .collect()
        })
        .unwrap_or_default()
}

/// The figures a reader looks for first, each under the names igemu has given it (the first
/// present is shown).
const HEADLINES: [(&str, &[&str]); 8] = [
    ("utilisation", &["utilization_pct", "utilization"]),
    ("AWRT of best-effort external leases", &["awrt_s"]),
    ("mean wait", &["mean_wait_s"]),
    ("VMs preempted", &["vm_preemptions"]),
    ("preemption overhead", &["overhead_s"]),
    (
        "external rejected",
        &["external_rejection_pct", "external_rejection_rate"],
    ),
    (
        "local rejected",
        &["local_rejection_pct", "local_rejection_rate"],
    ),
    ("makespan", &["makespan_s"]),
];

fn headlines(body: &mut String, summary: &Value) {
    body.push_str("<div class=\"cards\">");
    let requests = &summary["requests"];
    let count = |origin: &str, state: &str| requests[origin][state].as_u64().unwrap_or(0);
    let completed = count("local", "completed") + count("external", "completed");
    let _ = write!(
        body,
        "<div class=\"card\"><b>{completed} of {}</b>requests completed</div>",
        requests["total"].as_u64().unwrap_or(0)
    );
    for (label, keys) in HEADLINES {
        let Some((key, v)) = keys
            .iter()
            .find_map(|k| summary.get(*k).filter(|v| v.is_number()).map(|v| (*k, v)))
        else {
            continue;
        };
        let x = v.as_f64().unwrap_or(f64::NAN);
        let text = if key.ends_with("_s") {
            svg::duration(x)
        } else if key.ends_with("_pct") {
            format!("{} %", svg::trim(x, 1))
        } else if key.ends_with("_rate") || key == "utilization" {
            format!("{} %", svg::trim(100.0 * x, 1))
        } else {
            number(x)
        };
        let _ = write!(
            body,
            "<div class=\"card\" title=\"{key}\"><b>{}</b>{}</div>",
            escape(&text),
            escape(label)
        );
    }
    body.push_str("</div>");
}

fn figures_section(body: &mut String, summary: &Value, windowed: bool) {
    body.push_str(if windowed {
        "<h2 id=\"figures\">Key figures (the whole run)</h2>"
    } else {
        "<h2 id=\"figures\">Key figures</h2>"
    });
    headlines(body, summary);
    let _ = write!(
        body,
        "<p class=\"note\">{}As <code>summary.json</code> has them (docs/outputs.md says what each means; hover a name for its key): times in emulated seconds, shares in percent.</p>",
        if windowed {
            "Of the whole run: the window applies to the requests, Gantt charts, utilisation and peering below. "
        } else {
            ""
        }
    );
    let skip = ["seed", "wall_s", "speedup"];
    let figures: Vec<(String, &Value)> = scalars(summary)
        .into_iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .collect();
    let rows: Vec<Vec<String>> = (figures.iter())
        .map(|(k, v)| vec![figure_name(k), figure(k, v)])
        .collect();
    let titles: Vec<String> = figures.iter().map(|(k, _)| k.clone()).collect();
    figure_table(body, &["figure", "value"], &rows, &titles);
    if let Some(clusters) = summary["clusters"].as_object() {
        body.push_str("<h3>Per cluster</h3>");
        per_place_table(body, clusters, |_| true);
    }
    // Per Grid, when there are several: the figures that are not peering's (those are in
    // the peering section, when there was peering).
    if let Some(grids) = summary["grids"].as_object().filter(|g| g.len() > 1) {
        body.push_str("<h3>Per Grid</h3>");
        per_place_table(body, grids, |k| !peering::PEERING_KEYS.contains(&k));
    }
}

/// A figure's name as a table shows it: its name and, but for counts, its unit.
pub(super) fn figure_name(key: &str) -> String {
    let q = labels::metric(key);
    match q.unit {
        labels::Unit::Count | labels::Unit::PerRequest => q.name,
        _ => format!("{} ({})", q.name, q.unit_text(0.0).0),
    }
}

/// A table of the scalar figures (those `keep` keeps) of each of `places` (clusters or
/// Grids, by name), a row per figure and a column per place.
fn per_place_table(
    body: &mut String,
    places: &serde_json::Map<String, Value>,
    keep: impl Fn(&str) -> bool,
) {
    let mut keys: Vec<String> = Vec::new();
    for p in places.values() {
        for (k, _) in scalars(p).into_iter().filter(|(k, _)| keep(k)) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            std::iter::once(figure_name(k))
                .chain(places.values().map(|p| figure(k, &p[k.as_str()])))
                .collect()
        })
        .collect();
    let mut header = vec!["figure"];
    header.extend(places.keys().map(|s| s.as_str()));
    figure_table(body, &header, &rows, &keys);
}

fn requests_section(body: &mut String, requests: Option<&Requests>) {
    let Some(requests) = requests else {
        return;
    };
    // The whole run's counts, or the window's (its requests submitted in it).
    let (rows, counts, reasons, heading) = match &requests.in_window {
        Some(w) => (
            w.rows,
            &w.counts,
            &w.reasons,
            format!(
                "Requests ({} submitted in the window, of {} in the run)",
                w.rows, requests.rows
            ),
        ),
        None => (
            requests.rows,
            &requests.counts,
            &requests.reasons,
            format!("Requests ({})", requests.rows),
        ),
    };
    if rows == 0 {
        return;
    }
    let _ = write!(body, "<h2 id=\"requests\">{}</h2>", escape(&heading));
    // By (origin, lease type) × state, origins by name as the table has always listed them.
    let mut by_name: Vec<usize> = (0..ORIGINS.len()).collect();
    by_name.sort_by_key(|o| ORIGINS[*o]);
    let mut table_rows: Vec<Vec<String>> = Vec::new();
    for o in by_name {
        for (lease, counts) in counts[o].iter().enumerate() {
            if counts.iter().sum::<u64>() > 0 {
                let mut row = vec![ORIGINS[o].to_string(), LEASE_TYPES[lease].to_string()];
                row.extend(counts.iter().map(u64::to_string));
                table_rows.push(row);
            }
        }
    }
    let header = [
        "origin",
        "lease type",
        "completed",
        "rejected",
        "cancelled",
        "unfinished",
    ];
    table_of(
        body,
        &header,
        &table_rows,
        2,
        (table_rows.len(), "requests.csv"),
    );
    let names = reason_names();
    let mut reasons: Vec<(&str, u64)> = (reasons.iter().enumerate())
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (names.get(k).copied().unwrap_or("not recorded"), *n))
        .collect();
    reasons.sort();
    if !reasons.is_empty() {
        let total: u64 = reasons.iter().map(|(_, n)| n).sum();
        let _ = write!(body, "<h3>Why requests were rejected ({total})</h3>");
        let rows: Vec<Vec<String>> = reasons
            .iter()
            .map(|(k, n)| vec![k.to_string(), n.to_string()])
            .collect();
        table_of(
            body,
            &["reason", "requests"],
            &rows,
            1,
            (rows.len(), "requests.csv"),
        );
    }
}
