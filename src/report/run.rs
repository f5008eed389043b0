//! A run's page: provenance, key figures, requests, then the Gantt charts ([`super::hosts`]),
//! utilisation ([`super::usage`]) and peering, from `summary.json` (checked as read,
//! [`super::summary`]) and the CSV files beside it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

use serde_json::Value;

use super::html::{figure, page, table, table_of};
use super::requests::{reason_names, Requests};
use super::summary::ORIGINS;
use super::svg::{self, escape, number, LEASE_TYPES};
use super::{hosts, requests, summary, usage, Window};
use crate::Error;

/// The page of the run whose outputs are in `dir`, drawing `window` of emulated time.
pub(super) fn report(dir: &Path, window: Option<Window>) -> Result<String, Error> {
    let summary = summary::read(&dir.join("summary.json"))?;
    let requests_path = dir.join("requests.csv");
    let requests = if requests_path.exists() {
        Some(requests::read(&requests_path, &summary)?)
    } else {
        None
    };
    let mut body = String::new();
    provenance_section(&mut body, &summary.value);
    figures_section(&mut body, &summary.value);
    requests_section(&mut body, requests.as_ref());
    hosts::section(&mut body, dir, &summary, requests.as_ref(), window)?;
    usage::section(&mut body, dir, &summary, window)?;
    peering_section(&mut body, dir, &summary.value, requests.as_ref())?;
    let nav = [
        ("provenance", "Provenance"),
        ("figures", "Key figures"),
        ("requests", "Requests"),
        ("hosts", "Hosts"),
        ("utilisation", "Utilisation"),
        ("peering", "Peering"),
    ];
    Ok(page(
        &format!("igemu run: {}", summary.topology),
        &nav,
        &body,
    ))
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
fn scalars(object: &Value) -> Vec<(String, &Value)> {
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

fn figures_section(body: &mut String, summary: &Value) {
    body.push_str("<h2 id=\"figures\">Key figures</h2>");
    headlines(body, summary);
    body.push_str("<p class=\"note\">As <code>summary.json</code> has them (docs/outputs.md says what each means): times in emulated seconds, shares in percent where the key ends in <code>_pct</code>.</p>");
    let skip = ["seed", "wall_s", "speedup"];
    let rows: Vec<Vec<String>> = scalars(summary)
        .into_iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .map(|(k, v)| vec![k.clone(), figure(&k, v)])
        .collect();
    table(body, &["figure", "value"], &rows, 1);
    if let Some(clusters) = summary["clusters"].as_object() {
        body.push_str("<h3>Per cluster</h3>");
        let names: Vec<&String> = clusters.keys().collect();
        let mut keys: Vec<String> = Vec::new();
        for c in clusters.values() {
            for (k, _) in scalars(c) {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        let rows: Vec<Vec<String>> = keys
            .iter()
            .map(|k| {
                std::iter::once(k.clone())
                    .chain(names.iter().map(|c| figure(k, &clusters[c.as_str()][k])))
                    .collect()
            })
            .collect();
        let mut header = vec!["figure"];
        header.extend(names.iter().map(|s| s.as_str()));
        table(body, &header, &rows, 1);
    }
}

fn requests_section(body: &mut String, requests: Option<&Requests>) {
    body.push_str("<h2 id=\"requests\">Requests</h2>");
    let Some(requests) = requests else {
        body.push_str("<p class=\"note\">No requests.csv in this directory.</p>");
        return;
    };
    // By (origin, lease type) × state, origins by name as the table has always listed them.
    let mut by_name: Vec<usize> = (0..ORIGINS.len()).collect();
    by_name.sort_by_key(|o| ORIGINS[*o]);
    let mut rows: Vec<Vec<String>> = Vec::new();
    for o in by_name {
        for (lease, counts) in requests.counts[o].iter().enumerate() {
            if counts.iter().sum::<u64>() > 0 {
                let mut row = vec![ORIGINS[o].to_string(), LEASE_TYPES[lease].to_string()];
                row.extend(counts.iter().map(u64::to_string));
                rows.push(row);
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
    table_of(body, &header, &rows, 2, (rows.len(), "requests.csv"));
    let names = reason_names();
    let mut reasons: Vec<(&str, u64)> = (requests.reasons.iter().enumerate())
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| (names.get(k).copied().unwrap_or("not recorded"), *n))
        .collect();
    reasons.sort();
    if !reasons.is_empty() {
        body.push_str("<h3>Why requests were rejected</h3>");
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

fn peering_section(
    body: &mut String,
    dir: &Path,
    summary: &Value,
    requests: Option<&Requests>,
) -> Result<(), Error> {
    body.push_str("<h2 id=\"peering\">Peering</h2>");
    let Some(grids) = summary["grids"].as_object().filter(|g| !g.is_empty()) else {
        body.push_str("<p class=\"note\">No per-Grid figures in summary.json.</p>");
        return Ok(());
    };
    grid_figures(body, grids);
    // Redirections as requests.csv has them: one per request a peer took over, as the
    // Grids' `negotiations.redirected` count them.
    let (redirected, total, after) = requests.map_or((&[][..], 0, 0), |r| {
        (
            &r.redirected[..],
            r.redirected_total,
            r.rejected_after_redirect,
        )
    });
    let _ = write!(body, "<h3>Redirected requests ({total})</h3>");
    if total > 0 {
        let _ = write!(
            body,
            "<p class=\"note\">Requests a peer took over (negotiations.redirected above, summed over the Grids): {} started by the peer, {after} rejected after redirect (every cluster of the peer refused it at admission; requests.csv's outcome <code>rejected-after-redirect</code>, its reason says why).</p>",
            total - after
        );
        let header = [
            "request",
            "from Grid",
            "served by",
            "cluster",
            "outcome",
            "submit_s",
            "start_s",
        ];
        let whole = "requests.csv (the rows whose served_by is not their grid, or whose outcome is rejected-after-redirect)";
        table_of(body, &header, redirected, 5, (total, whole));
    }
    negotiations_section(body, &dir.join("trace.jsonl"))
}

/// Per-Grid figures: scalars, then the negotiation counters flattened.
fn grid_figures(body: &mut String, grids: &serde_json::Map<String, Value>) {
    let names: Vec<&String> = grids.keys().collect();
    let mut keys: Vec<String> = Vec::new();
    for g in grids.values() {
        for (k, _) in scalars(g) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        for (k, _) in scalars(&g["negotiations"]) {
            let k = format!("negotiations.{k}");
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            let mut row = vec![k.clone()];
            for g in &names {
                let v = match k.strip_prefix("negotiations.") {
                    Some(n) => &grids[g.as_str()]["negotiations"][n],
                    None => &grids[g.as_str()][k],
                };
                row.push(figure(k, v));
            }
            row
        })
        .collect();
    let mut header = vec!["figure"];
    header.extend(names.iter().map(|s| s.as_str()));
    table(body, &header, &rows, 1);
}

/// Every negotiation of the trace at `trace`, when the run was traced.
fn negotiations_section(body: &mut String, trace: &Path) -> Result<(), Error> {
    body.push_str("<h3>Negotiations</h3>");
    if !trace.exists() {
        body.push_str("<p class=\"note\">Run with <code>--trace</code> to list every negotiation here (the trace holds the offers and answers).</p>");
        return Ok(());
    }
    let rows = negotiation_rows(trace)?;
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *outcomes.entry(r.outcome).or_default() += 1;
    }
    let redirected = rows
        .iter()
        .filter(|r| r.redirect == Some("redirected"))
        .count();
    let after_redirect = rows
        .iter()
        .filter(|r| r.at_provider == Some("rejected"))
        .count();
    let listing = format!("igemu trace {} --negotiations", trace.display());
    let _ = write!(
        body,
        "<p class=\"note\">{} offered request(s) in negotiations: {}{}. The same list as CSV: <code>{}</code>.</p>",
        rows.len(),
        outcomes
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        match (redirected, after_redirect) {
            (0, _) => String::new(),
            (n, 0) => format!("; {n} redirected"),
            (n, k) => format!(
                "; {n} redirected, {k} of them rejected after redirect by the provider's clusters (at_provider: rejected)"
            ),
        },
        escape(&listing)
    );
    let price = |p: Option<f64>| p.map_or("–".into(), number);
    let cells: Vec<Vec<String>> = (rows.iter().take(super::html::TABLE_ROWS))
        .map(|r| {
            vec![
                r.negotiation.to_string(),
                r.requester.clone(),
                r.provider.clone(),
                r.request.clone(),
                r.outcome.to_string(),
                r.redirect.unwrap_or("").to_string(),
                r.at_provider.unwrap_or("").to_string(),
                price(r.price),
                r.contract.map_or("–".into(), |c| {
                    format!("{}–{}", number(c.min), number(c.max))
                }),
                r.messages.to_string(),
                number(r.duration_us as f64 / 1e6),
            ]
        })
        .collect();
    let header = [
        "negotiation",
        "requester",
        "provider",
        "request",
        "outcome",
        "redirect",
        "at_provider",
        "price",
        "contract",
        "messages",
        "duration_s",
    ];
    table_of(
        body,
        &header,
        &cells,
        7,
        (rows.len(), "the CSV the command above prints"),
    );
    Ok(())
}

/// The negotiations of a trace, reading it a line at a time (each at most
/// [`crate::trace::render::MAX_LINE`] bytes) and keeping only a few numbers per offered
/// request (see [`crate::trace::render::NegotiationTally`]).
fn negotiation_rows(path: &Path) -> Result<Vec<crate::trace::render::NegotiationRow>, Error> {
    use crate::trace::render::MAX_LINE;
    let file = std::fs::File::open(path)
        .map_err(|e| Error::Input(format!("{}: cannot read the file: {e}", path.display())))?;
    let lines = std::io::BufReader::new(crate::input::LineCapped::new(file, MAX_LINE)).lines();
    let mut tally = crate::trace::render::NegotiationTally::new();
    let mut last_seq: Option<u64> = None;
    for (i, line) in lines.enumerate() {
        let line = line.map_err(|e| match crate::input::line_too_long(&e) {
            Some(long) => Error::Input(format!(
                "{}:{}: error: longer than {MAX_LINE} bytes; not a trace record",
                path.display(),
                long.line
            )),
            None => Error::Input(format!("{}:{}: {e}", path.display(), i + 1)),
        })?;
        // Negotiations' records, and the providers' reports on the requests they took over.
        if !line.contains("\"negotiation\"") && !line.contains("\"kind\":\"RemoteLease\"") {
            continue;
        }
        let event: crate::trace::render::Event = serde_json::from_str(&line).map_err(|e| {
            Error::Input(format!(
                "{}:{}: error: not a trace record: {e}",
                path.display(),
                i + 1
            ))
        })?;
        // The records it reads come in seq order in one run's trace: two traces concatenated
        // would count each negotiation twice.
        if let Some(before) = last_seq.replace(event.seq).filter(|b| event.seq <= *b) {
            return Err(Error::Input(format!(
                "{}:{}: error: {}",
                path.display(),
                i + 1,
                crate::trace::render::out_of_order(event.seq, before)
            )));
        }
        tally.push(&event);
    }
    Ok(tally.rows().collect())
}
