//! `requests.csv` read a row at a time for a run's page: counts by origin, lease type and
//! state, rejections by reason and the first requests redirected to a peer, each row checked
//! and the counts checked against `summary.json`'s (the page shows both).

use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use serde::Deserialize;

use super::html::TABLE_ROWS;
use super::read::{check_time, check_value, one_of, Rows};
use super::spans::Interner;
use super::summary::{state_names, Summary, ORIGINS};
use super::svg::{number, LEASE_TYPES};
use crate::metrics::Outcome;
use crate::model::RejectReason;
use crate::Error;

/// A row of `requests.csv` as read, borrowing the row's text.
#[derive(Deserialize)]
struct Row<'a> {
    request_id: &'a str,
    grid: &'a str,
    #[serde(default)]
    cluster: &'a str,
    origin: &'a str,
    lease_type: &'a str,
    #[serde(default)]
    submit_s: Option<f64>,
    #[serde(default)]
    start_s: Option<f64>,
    #[serde(default)]
    end_s: Option<f64>,
    state: &'a str,
    #[serde(default, borrow)]
    served_by: Option<&'a str>,
    #[serde(default, borrow)]
    reason: Option<&'a str>,
    // The per-request metrics (an older requests.csv has none).
    #[serde(default)]
    wait_s: Option<f64>,
    #[serde(default)]
    turnaround_s: Option<f64>,
    #[serde(default)]
    slowdown: Option<f64>,
    #[serde(default)]
    bounded_slowdown: Option<f64>,
    #[serde(default)]
    stretch: Option<f64>,
    #[serde(default, borrow)]
    outcome: Option<&'a str>,
}

/// What the page shows of `requests.csv`.
pub(super) struct Requests {
    /// Rows read.
    pub rows: u64,
    /// By origin ([`ORIGINS`]), lease type ([`LEASE_TYPES`]) and state.
    pub counts: [[[u64; 4]; 4]; 2],
    /// Rejected requests by reason ([`RejectReason::ALL`]), then those with none recorded.
    pub reasons: [u64; 8],
    /// The first [`TABLE_ROWS`] requests redirected to a peer — served by another Grid than
    /// their own, or rejected after redirect — as table rows (request, from Grid, served by,
    /// cluster, outcome, submit_s, start_s).
    pub redirected: Vec<Vec<String>>,
    /// How many requests were (the summary's `negotiations.redirected`, summed over Grids).
    pub redirected_total: usize,
    /// Of those, how many were rejected after redirect.
    pub rejected_after_redirect: usize,
    /// Cancelled requests with an end.
    pub cancelled: u64,
    /// With a window: the counts of the requests submitted in it.
    pub in_window: Option<InWindow>,
    /// Whether it has the per-request metrics' columns, and how many requests have each
    /// (in [`crate::metrics::METRIC_NAMES`]' order).
    pub measured: Option<[u64; 5]>,
}

/// The counts of the requests submitted in a report's window.
#[derive(Default)]
pub(super) struct InWindow {
    /// Requests.
    pub rows: u64,
    /// As [`Requests::counts`].
    pub counts: [[[u64; 4]; 4]; 2],
    /// As [`Requests::reasons`].
    pub reasons: [u64; 8],
    /// Requests served by another Grid than their own.
    pub redirected: usize,
}

/// The names of rejection reasons, in [`RejectReason::ALL`]'s order.
pub(super) fn reason_names() -> [&'static str; 7] {
    RejectReason::ALL.map(RejectReason::as_str)
}

/// Reads the `requests.csv` at `path`, each row checked, and checks its counts against
/// `summary`'s; with `window` (from, to), also counts the requests submitted in it.
pub(super) fn read(
    path: &Path,
    summary: &Summary,
    window: Option<(f64, f64)>,
) -> Result<Requests, Error> {
    let mut out = Requests {
        rows: 0,
        counts: [[[0; 4]; 4]; 2],
        reasons: [0; 8],
        redirected: Vec::new(),
        redirected_total: 0,
        rejected_after_redirect: 0,
        cancelled: 0,
        in_window: window.map(|_| InWindow::default()),
        measured: None,
    };
    let mut rows = Rows::open(path)?;
    let names = crate::metrics::METRIC_NAMES;
    if names.iter().all(|m| rows.headers.iter().any(|h| h == *m)) {
        out.measured = Some([0; 5]);
    }
    let mut record = csv::StringRecord::new();
    while rows.next(&mut record)? {
        let r: Row = rows.parse(&record)?;
        for (what, t) in [
            ("submit_s", r.submit_s),
            ("start_s", r.start_s),
            ("end_s", r.end_s),
        ] {
            if let Some(t) = t {
                check_time(path, rows.line, what, t)?;
            }
        }
        let kind = Kind::of(&rows, &r)?;
        // Requests submitted in the run's warm-up are in no statistic of the summary.
        let counted = r.submit_s.is_none_or(|t| t >= summary.warm_up_s);
        let measured = if counted { out.measured.as_mut() } else { None };
        check_measures(path, rows.line, &r, measured)?;
        out.count(&r, &kind, window);
    }
    check_counts(path, &out, summary)?;
    Ok(out)
}

/// A row's place among the counts: the indices of its origin, lease type, state and
/// rejection reason (past the last: none), and its state's name.
struct Kind {
    /// In [`ORIGINS`].
    origin: usize,
    /// In [`LEASE_TYPES`].
    lease: usize,
    /// In [`state_names`].
    state: usize,
    /// In [`reason_names`]; past the last: none recorded.
    reason: usize,
    /// The state's name.
    state_name: &'static str,
}

impl Kind {
    /// Row `r`'s kind, or an error at the row (of `rows`) naming a value igemu does not write.
    fn of(rows: &Rows, r: &Row) -> Result<Kind, Error> {
        let (states, reasons) = (state_names(), reason_names());
        let origin = usize::from(one_of(rows, "origin", r.origin, &ORIGINS)?);
        let lease = usize::from(one_of(rows, "lease_type", r.lease_type, &LEASE_TYPES)?);
        let state = usize::from(one_of(rows, "state", r.state, &states)?);
        let reason = match r.reason.filter(|s| !s.is_empty()) {
            Some(name) => usize::from(one_of(rows, "reason", name, &reasons)?),
            None => reasons.len(),
        };
        Ok(Kind {
            origin,
            lease,
            state,
            reason,
            state_name: states[state],
        })
    }
}

/// Checks row `r`'s (at `line` of `path`) per-request metrics, and counts in `measured`
/// (when the file has their columns and the row counts) the requests that have each.
fn check_measures(
    path: &Path,
    line: usize,
    r: &Row,
    mut measured: Option<&mut [u64; 5]>,
) -> Result<(), Error> {
    let names = crate::metrics::METRIC_NAMES;
    let measures = [
        r.wait_s,
        r.turnaround_s,
        r.slowdown,
        r.bounded_slowdown,
        r.stretch,
    ];
    for (k, m) in measures.into_iter().enumerate() {
        if let Some(x) = m {
            check_value(path, line, names[k], x)?;
        }
        if let Some(n) = measured.as_deref_mut() {
            n[k] += u64::from(m.is_some());
        }
    }
    Ok(())
}

impl Requests {
    /// Counts row `r` of `kind`: by origin, lease type and state, rejected by reason,
    /// cancelled, redirected (the first kept as table rows); and in `window`, if given.
    fn count(&mut self, r: &Row, kind: &Kind, window: Option<(f64, f64)>) {
        let Kind {
            origin,
            lease,
            state,
            reason,
            state_name,
        } = *kind;
        self.rows += 1;
        self.counts[origin][lease][state] += 1;
        let rejected = state_name == "rejected";
        if rejected {
            self.reasons[reason] += 1;
        }
        if state_name == "cancelled" && r.end_s.is_some() {
            self.cancelled += 1;
        }
        // Taken over by a peer: started there, or refused there by every cluster.
        let after_redirect = r.outcome == Some(Outcome::RejectedAfterRedirect.as_str());
        self.rejected_after_redirect += usize::from(after_redirect);
        let redirected =
            after_redirect || r.served_by.is_some_and(|s| !s.is_empty() && s != r.grid);
        self.redirected_total += usize::from(redirected);
        let shown = match (&mut self.in_window, window) {
            (Some(w), Some((from, to))) => {
                let inside = r.submit_s.is_some_and(|t| t >= from && t <= to);
                if inside {
                    w.rows += 1;
                    w.counts[origin][lease][state] += 1;
                    w.reasons[reason] += u64::from(rejected);
                    w.redirected += usize::from(redirected);
                }
                inside
            }
            _ => true,
        };
        if redirected && shown && self.redirected.len() < TABLE_ROWS {
            self.redirected.push(redirected_row(r));
        }
    }
}

/// A redirected request's row in the page's table (its outcome, or its state in a file
/// from before `outcome`).
fn redirected_row(r: &Row) -> Vec<String> {
    let dash = |s: &str| {
        if s.is_empty() {
            "–".to_string()
        } else {
            s.to_string()
        }
    };
    vec![
        r.request_id.to_string(),
        r.grid.to_string(),
        dash(r.served_by.unwrap_or_default()),
        dash(r.cluster),
        r.outcome
            .filter(|o| !o.is_empty())
            .unwrap_or(r.state)
            .to_string(),
        r.submit_s.map_or("–".into(), number),
        r.start_s.map_or("–".into(), number),
    ]
}

/// The counts of `requests` (read from `path`) must be `summary`'s: the page shows both.
fn check_counts(path: &Path, requests: &Requests, summary: &Summary) -> Result<(), Error> {
    let refuse = |ours: u64, key: &str, theirs: u64, what: &str| {
        Error::Input(format!(
            "{}: error: it holds {ours} {what}, but {}'s `{key}` is {theirs}; the two files are not of one run\n    hint: give the directory of one run, or re-run `igemu run` to rewrite both",
            path.display(),
            summary.path.display()
        ))
    };
    let totals = &summary.requests;
    if requests.rows != totals.total {
        return Err(refuse(
            requests.rows,
            "requests.total",
            totals.total,
            "requests",
        ));
    }
    for (o, origin) in ORIGINS.iter().enumerate() {
        for (s, state) in state_names().iter().enumerate() {
            let ours: u64 = requests.counts[o].iter().map(|by_state| by_state[s]).sum();
            let theirs = totals.by[o][s];
            if ours != theirs {
                let key = format!("requests.{origin}.{state}");
                return Err(refuse(
                    ours,
                    &key,
                    theirs,
                    &format!("{origin} requests {state}"),
                ));
            }
        }
    }
    // Each metric's count of requests, where both files have them.
    let all = summary.request_metrics.as_ref().map(|m| &m["all"]);
    if let (Some(measured), Some(all)) = (requests.measured, all) {
        for (k, name) in crate::metrics::METRIC_NAMES.iter().enumerate() {
            let theirs = all[name]["n"].as_u64().unwrap_or_default();
            if measured[k] != theirs {
                let key = format!("request_metrics.all.{name}.n");
                return Err(refuse(
                    measured[k],
                    &key,
                    theirs,
                    &format!("requests with a {name}"),
                ));
            }
        }
    }
    Ok(())
}

/// When each cancelled request that `names` holds ended, from a second pass over the
/// `requests.csv` at `path` (read whole once already): only the requests an exact Gantt
/// chart draws are kept.
pub(super) fn cancelled_ends(
    path: &Path,
    names: &Interner,
) -> Result<HashMap<Rc<str>, f64>, Error> {
    let mut ends = HashMap::new();
    let mut rows = Rows::open(path)?;
    let mut record = csv::StringRecord::new();
    while rows.next(&mut record)? {
        let r: Row = rows.parse(&record)?;
        if let (Some(end), "cancelled") = (r.end_s, r.state) {
            if let Some(name) = names.find(r.request_id) {
                ends.insert(name, end);
            }
        }
    }
    Ok(ends)
}
