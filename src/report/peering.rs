//! The peering section of a run's page, for a run of several Grids that negotiated: figures
//! first — the negotiation counters per Grid (from `summary.json`), offers by outcome and the
//! prices offered and agreed over time (when the run was traced), the money the Grids paid
//! one another (`summary.json`) — then the tables: the per-Grid peering figures, the requests
//! redirected and every negotiation. A run of one Grid, or of Grids that never negotiated,
//! has no such section.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::Path;

use serde_json::{Map, Value};

use super::html::{figure_table, left_out_note, push_chart, table_of, TABLE_ROWS};
use super::requests::Requests;
use super::run::{figure_name, scalars};
use super::summary::Summary;
use super::svg::peering::{self as draw, PricePoint, TimeBins, MAX_GRIDS, OUTCOMES};
use super::svg::{self, escape, number};
use super::Window;
use crate::trace::render::NegotiationRow;
use crate::Error;

/// The per-Grid keys of `summary.json` that are about peering (the others, AWRTs, are in the
/// key figures).
pub(super) const PEERING_KEYS: [&str; 4] = [
    "redirected_pct",
    "messages_per_redirect",
    "paid",
    "received",
];

/// `summary.json`'s negotiation counters, with a colour and the words a legend gives them.
const COUNTERS: [(&str, &str, &str); 9] = [
    ("offers", "#666666", "requests offered"),
    ("accepted", "#009E73", "accepted"),
    ("countered_taken", "#0072B2", "counter-offer taken"),
    ("countered_declined", "#56B4E9", "counter-offer declined"),
    ("rejected", "#D55E00", "rejected"),
    ("timeouts", "#E69F00", "timed out"),
    ("redirected", "#CC79A7", "redirected"),
    (
        "rejected_after_redirect",
        "#000000",
        "rejected after redirect",
    ),
    ("late_declined", "#999999", "late answer declined"),
];

/// The unit money is written in.
const MONEY: &str = "currency units";

/// Whether the Grids of `grids` peered: two or more, and one offered, paid, was paid or
/// redirected anything.
fn peered(grids: &Map<String, Value>) -> bool {
    let positive = |v: &Value| v.as_f64().is_some_and(|x| x > 0.0);
    grids.len() > 1
        && grids.values().any(|g| {
            positive(&g["negotiations"]["offers"])
                || positive(&g["paid"])
                || positive(&g["received"])
                || positive(&g["redirected_pct"])
        })
}

/// Appends the peering section of the run whose outputs are in `dir`, if its Grids peered.
pub(super) fn section(
    body: &mut String,
    dir: &Path,
    summary: &Summary,
    requests: Option<&Requests>,
    window: Option<Window>,
) -> Result<(), Error> {
    let Some(grids) = summary.value["grids"].as_object().filter(|g| peered(g)) else {
        return Ok(());
    };
    body.push_str("<h2 id=\"peering\">Peering</h2>");
    let names: Vec<String> = grids.keys().take(MAX_GRIDS).cloned().collect();
    let mut left_out = 0;
    let _ = write!(
        body,
        "<p class=\"note\">Money is in the contracts' currency units: a contract prices a resource unit, one core for one second (paper 004, which names no currency).{}</p>",
        if window.is_some() {
            " The counters, money and figures per Grid are the whole run's; the redirected requests and the negotiations are the window's."
        } else {
            ""
        }
    );
    let whole = if window.is_some() {
        " (the whole run)"
    } else {
        ""
    };
    let _ = write!(body, "<h3>Negotiations per Grid{whole}</h3>");
    let counts: Vec<Vec<u64>> = (names.iter())
        .map(|g| {
            COUNTERS
                .iter()
                .map(|(k, _, _)| grids[g]["negotiations"][*k].as_u64().unwrap_or(0))
                .collect()
        })
        .collect();
    let chart = draw::counters_per_grid("negotiations per grid", &names, &counts, &COUNTERS);
    push_chart(body, &chart, &mut left_out);
    // The trace's negotiations (those first offered in the window, with one).
    let trace = dir.join("trace.jsonl");
    let all = if trace.exists() {
        Some(negotiation_rows(&trace)?)
    } else {
        None
    };
    let scale = Window::scale(window, summary.end);
    let shown: Vec<&NegotiationRow> = (all.iter().flatten())
        .filter(|r| window.is_none() || scale.overlaps(start(r), start(r)))
        .collect();
    over_time(
        body,
        all.is_some(),
        &shown,
        (scale, window.is_some()),
        &mut left_out,
    );
    money(body, grids, (&names, whole), &mut left_out);
    let _ = write!(body, "<h3>Peering figures per Grid{whole}</h3>");
    grid_table(body, grids);
    if grids.len() > MAX_GRIDS {
        let _ = write!(
            body,
            "<p class=\"note\">The charts draw the first {MAX_GRIDS} of {} Grids; summary.json has them all.</p>",
            grids.len()
        );
    }
    redirected(body, requests);
    if let Some(all) = &all {
        negotiations(body, &trace, (all.len(), &shown), window.is_some());
    }
    left_out_note(
        body,
        left_out,
        "peering charts are",
        "summary.json and trace.jsonl",
    );
    Ok(())
}

/// Who paid whom: a matrix from `paid_by_peer` (an older igemu's summary has only the totals,
/// in the table below).
fn money(
    body: &mut String,
    grids: &Map<String, Value>,
    (names, whole): (&[String], &str),
    left_out: &mut usize,
) {
    let _ = write!(body, "<h3>Money paid between Grids{whole}</h3>");
    if !grids.values().any(|g| g["paid_by_peer"].is_object()) {
        body.push_str("<p class=\"note\">summary.json has no <code>paid_by_peer</code> (an older igemu wrote it): what each Grid paid and received in all is in the table below.</p>");
        return;
    }
    let paid: Vec<Vec<f64>> = (names.iter())
        .map(|payer| {
            (names.iter())
                .map(|payee| grids[payer]["paid_by_peer"][payee].as_f64().unwrap_or(0.0))
                .collect()
        })
        .collect();
    let chart = draw::money_matrix("money between grids", names, &paid, MONEY);
    push_chart(body, &chart, left_out);
}

/// Per-Grid peering figures: the peering scalars, the negotiation counters and the shares
/// redirected and money paid per peer, each named with its unit.
fn grid_table(body: &mut String, grids: &Map<String, Value>) {
    let mut keys: Vec<String> = Vec::new();
    let mut add = |k: String| {
        if !keys.contains(&k) {
            keys.push(k);
        }
    };
    for g in grids.values() {
        for (k, _) in scalars(g)
            .into_iter()
            .filter(|(k, _)| PEERING_KEYS.contains(&k.as_str()))
        {
            add(k);
        }
        // The counters in the order a negotiation goes, then any other.
        let counters = COUNTERS.iter().map(|(k, _, _)| k.to_string());
        let known = counters.filter(|k| g["negotiations"][k.as_str()].is_number());
        for k in known.chain(scalars(&g["negotiations"]).into_iter().map(|(k, _)| k)) {
            add(format!("negotiations.{k}"));
        }
        for nested in ["redirected_pct_by_peer", "paid_by_peer"] {
            for (k, _) in scalars(&g[nested]) {
                add(format!("{nested}.{k}"));
            }
        }
    }
    let value = |g: &Value, k: &str| -> Value {
        match k.split_once('.') {
            Some((nested, inner)) => g[nested][inner].clone(),
            None => g[k].clone(),
        }
    };
    let rows: Vec<Vec<String>> = keys
        .iter()
        .map(|k| {
            std::iter::once(figure_name(k))
                .chain(grids.values().map(|g| {
                    let v = value(g, k);
                    if v.is_null() {
                        "–".into()
                    } else {
                        super::html::figure(k, &v)
                    }
                }))
                .collect()
        })
        .collect();
    let mut header = vec!["figure"];
    header.extend(grids.keys().map(String::as_str));
    figure_table(body, &header, &rows, &keys);
}

/// The requests redirected to a peer (those submitted in the window, with one), as
/// requests.csv has them; nothing when the run redirected none.
fn redirected(body: &mut String, requests: Option<&Requests>) {
    let Some(r) = requests else {
        return;
    };
    let heading = match &r.in_window {
        Some(w) => format!(
            "Redirected requests ({} submitted in the window, of {} in the run)",
            w.redirected, r.redirected_total
        ),
        None => format!("Redirected requests ({})", r.redirected_total),
    };
    let shown = r
        .in_window
        .as_ref()
        .map_or(r.redirected_total, |w| w.redirected);
    if r.redirected_total == 0 {
        return;
    }
    let _ = write!(body, "<h3>{}</h3>", escape(&heading));
    if shown == 0 {
        body.push_str("<p class=\"note\">None.</p>");
        return;
    }
    let after = r.rejected_after_redirect;
    let _ = write!(
        body,
        "<p class=\"note\">Requests a peer took over in the run (negotiations.redirected, summed over the Grids): {} started by the peer, {after} rejected after redirect (every cluster of the peer refused it at admission; requests.csv's outcome <code>rejected-after-redirect</code>, its reason says why).</p>",
        r.redirected_total - after
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
    table_of(body, &header, &r.redirected, 5, (shown, whole));
}

/// When a negotiation about an offered request began, seconds.
fn start(r: &NegotiationRow) -> f64 {
    r.start_us as f64 / 1e6
}

/// Offers by outcome and the prices offered and agreed over time (over the window, else the
/// time the negotiations took), from the trace's negotiations `rows`; without a trace, a
/// note saying how to have them.
fn over_time(
    body: &mut String,
    traced: bool,
    rows: &[&NegotiationRow],
    (scale, windowed): (svg::TimeScale, bool),
    left_out: &mut usize,
) {
    body.push_str(if windowed {
        "<h3>Offers, answers and prices over time (in the window)</h3>"
    } else {
        "<h3>Offers, answers and prices over time</h3>"
    });
    if !traced {
        body.push_str("<p class=\"note\">Run with <code>--trace</code> to draw the offers, answers and prices over time and list every negotiation here (the trace holds them; summary.json only counts them).</p>");
        return;
    }
    if rows.is_empty() {
        body.push_str("<p class=\"note\">No request was first offered in the window.</p>");
        return;
    }
    let scale = if windowed {
        scale
    } else {
        let last = (rows.iter())
            .map(|r| (r.start_us + r.duration_us) as f64 / 1e6)
            .fold(0.0, f64::max);
        svg::TimeScale::to(last * 1.02)
    };
    let mut bins = TimeBins::over(&scale);
    let mut prices = Vec::new();
    for r in rows {
        let t = start(r);
        if let Some(o) = OUTCOMES.iter().position(|(name, _, _)| *name == r.outcome) {
            bins.add(t, o);
        }
        if let Some(p) = r.offered {
            prices.push(PricePoint {
                t,
                price: p,
                agreed: false,
            });
        }
        if let (Some(p), Some(_)) = (r.price, r.redirect) {
            prices.push(PricePoint {
                t: t + r.duration_us as f64 / 1e6,
                price: p,
                agreed: true,
            });
        }
    }
    body.push_str("<p class=\"note\">From the trace: each offered request counted once, in the time bin of its negotiation's first message, coloured by how the negotiation ended; then each offer's opening unit price at that time, and the price agreed when the request was redirected (hover a mark for its values).</p>");
    let chart = draw::outcomes_over_time("offers over time", &scale, &bins);
    push_chart(body, &chart, left_out);
    let chart = draw::prices_over_time("prices over time", &scale, &prices);
    push_chart(body, &chart, left_out);
}

/// The list of the negotiations `rows` of the trace at `trace` (of `all` offers of a request
/// in the run; those first offered in the window, when `windowed`).
fn negotiations(
    body: &mut String,
    trace: &Path,
    (all, rows): (usize, &[&NegotiationRow]),
    windowed: bool,
) {
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rows {
        *outcomes.entry(r.outcome).or_default() += 1;
    }
    let listing = format!("igemu trace {} --negotiations", trace.display());
    let said = outcomes
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ");
    if windowed {
        let _ = write!(
            body,
            "<h3>Negotiations ({} offers of a request in the window, of {all} in the run)</h3><p class=\"note\">{} of the run's {all} offered request(s) were first offered in the window: {said}. The run's list as CSV: <code>{}</code>.</p>",
            rows.len(),
            rows.len(),
            escape(&listing)
        );
    } else {
        let _ = write!(
            body,
            "<h3>Negotiations ({} offers of a request)</h3><p class=\"note\">{} offered request(s) in negotiations: {said}. The same list as CSV: <code>{}</code>.</p>",
            rows.len(),
            rows.len(),
            escape(&listing)
        );
    }
    if rows.is_empty() {
        return;
    }
    let price = |p: Option<f64>| p.map_or("–".into(), number);
    let cells: Vec<Vec<String>> = (rows.iter().take(TABLE_ROWS))
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
                number(start(r)),
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
        "start_s",
        "duration_s",
    ];
    table_of(
        body,
        &header,
        &cells,
        6,
        (rows.len(), "the CSV the command above prints"),
    );
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
