//! The lease events of a run's page, from `leases.csv`: a table of events for each of a few
//! hundred leases (those a preemption, displacement or migration touched first, then the
//! first submitted), each under an anchor the Gantt charts' bars link to. The file is read
//! twice, a row at a time: every row checked (times within emulated time and in order, event
//! and operation names igemu writes, hosts as numbers) and its requests and ends counted
//! against `summary.json`, while choosing the leases; then only the chosen leases' rows are
//! kept.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::rc::Rc;

use serde::Deserialize;

use super::html::table_of;
use super::read::{check_time, one_of, Rows};
use super::summary::{state_names, Summary};
use super::svg::{escape, number};
use crate::metrics::LeaseEventKind;
use crate::Error;

/// Leases given a table of their events at most.
pub(super) const MAX_LEASE_TABLES: usize = 200;

/// Events a lease's table shows at most (the rest are in `leases.csv`).
const MAX_LEASE_ROWS: usize = 40;

/// A row of `leases.csv` as read, borrowing the row's text.
#[derive(Deserialize)]
struct Row<'a> {
    time_s: f64,
    request_id: &'a str,
    event: &'a str,
    #[serde(default)]
    grid: &'a str,
    #[serde(default)]
    cluster: &'a str,
    #[serde(default)]
    hosts: &'a str,
    #[serde(default)]
    vms: Option<u64>,
    #[serde(default)]
    cause: &'a str,
    #[serde(default)]
    operation: &'a str,
    #[serde(default)]
    planned_s: Option<f64>,
}

/// The operations a preemption row may name.
const OPERATIONS: [&str; 3] = ["stop", "suspend", "migrate"];

/// The leases given a table on the page, and their rows.
pub(super) struct LeaseTables {
    /// Each chosen lease's anchor number (`lease-N`), by request id.
    pub anchors: HashMap<Rc<str>, u32>,
    /// The chosen leases in the order their tables come, with their rows (cells as shown)
    /// and how many events each has in all.
    leases: Vec<(Rc<str>, Vec<Vec<String>>, usize)>,
    /// Rows in the file.
    rows: u64,
    /// Leases in the file.
    leases_in_all: u64,
}

/// How the leases for tables are chosen as the file is read: the first leases something
/// happened to beyond their start and end (preempted, displaced, resumed, migrated), then
/// the first leases of all, at most [`MAX_LEASE_TABLES`] of each kept.
#[derive(Default)]
struct Choice {
    /// Leases seen, in first-appearance order, capped; whether each is touched.
    first: Vec<Rc<str>>,
    touched: Vec<Rc<str>>,
    known: HashMap<Rc<str>, bool>,
}

impl Choice {
    fn see(&mut self, lease: &str, touched: bool) {
        let full = self.first.len() >= MAX_LEASE_TABLES;
        let seen = self.known.get(lease).copied();
        if seen.is_none() && full && !(touched && self.touched.len() < MAX_LEASE_TABLES) {
            return;
        }
        let name: Rc<str> = match self.known.get_key_value(lease) {
            Some((k, _)) => Rc::clone(k),
            None => Rc::from(lease),
        };
        if seen.is_none() && !full {
            self.first.push(Rc::clone(&name));
        }
        if touched && seen != Some(true) && self.touched.len() < MAX_LEASE_TABLES {
            self.touched.push(Rc::clone(&name));
            self.known.insert(name, true);
        } else if seen.is_none() {
            self.known.insert(name, false);
        }
    }

    /// The chosen leases, touched first, in the order they first appeared.
    fn chosen(self) -> Vec<Rc<str>> {
        let order: HashMap<&str, usize> = (self.first.iter().enumerate())
            .map(|(i, n)| (&**n, i))
            .collect();
        let mut out = self.touched.clone();
        for n in &self.first {
            if out.len() >= MAX_LEASE_TABLES {
                break;
            }
            if !self.known.get(n).copied().unwrap_or(false) {
                out.push(Rc::clone(n));
            }
        }
        out.sort_by_key(|n| order.get(&**n).copied().unwrap_or(usize::MAX));
        out
    }
}

/// Reads the `leases.csv` at `path`, each row checked and its counts checked against
/// `summary`'s; `None` when there is none.
pub(super) fn read(path: &Path, summary: &Summary) -> Result<Option<LeaseTables>, Error> {
    if !path.exists() {
        return Ok(None);
    }
    let names = LeaseEventKind::ALL.map(LeaseEventKind::as_str);
    let mut choice = Choice::default();
    let mut counts = [0u64; LeaseEventKind::ALL.len()];
    let mut rows_in_all = 0u64;
    each_row(path, |r, rows| {
        let kind = LeaseEventKind::ALL[usize::from(one_of(rows, "event", r.event, &names)?)];
        counts[kind as usize] += 1;
        rows_in_all += 1;
        let touched = matches!(
            kind,
            LeaseEventKind::Preempted
                | LeaseEventKind::Displaced
                | LeaseEventKind::Resumed
                | LeaseEventKind::Migrated
        );
        choice.see(r.request_id, touched);
        Ok(())
    })?;
    check_counts(path, summary, &counts)?;
    let chosen = choice.chosen();
    let anchors: HashMap<Rc<str>, u32> = (chosen.iter().enumerate())
        .map(|(i, n)| (Rc::clone(n), i as u32))
        .collect();
    let mut leases: Vec<(Rc<str>, Vec<Vec<String>>, usize)> = chosen
        .iter()
        .map(|n| (Rc::clone(n), Vec::new(), 0))
        .collect();
    each_row(path, |r, _| {
        if let Some(&k) = anchors.get(r.request_id) {
            let (_, cells, n) = &mut leases[k as usize];
            *n += 1;
            if cells.len() < MAX_LEASE_ROWS {
                cells.push(cells_of(&r));
            }
        }
        Ok(())
    })?;
    Ok(Some(LeaseTables {
        anchors,
        leases,
        rows: rows_in_all,
        leases_in_all: counts[LeaseEventKind::Requested as usize],
    }))
}

/// Reads every row of the `leases.csv` at `path`, checked, into `visit`.
fn each_row(
    path: &Path,
    mut visit: impl FnMut(Row<'_>, &Rows) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut rows = Rows::open(path)?;
    for column in ["time_s", "request_id", "event"] {
        rows.column(column, "a lease log igemu writes")?;
    }
    let mut record = csv::StringRecord::new();
    let mut last = 0.0f64;
    while rows.next(&mut record)? {
        let r: Row = rows.parse(&record)?;
        check_time(path, rows.line, "time_s", r.time_s)?;
        if let Some(t) = r.planned_s {
            check_time(path, rows.line, "planned_s", t)?;
        }
        if r.time_s < last {
            return Err(rows.at_line(&format!(
                "error: `time_s` is {}, before the row above ({}); igemu writes leases.csv in time order",
                number(r.time_s),
                number(last)
            )));
        }
        last = r.time_s;
        if r.request_id.is_empty() {
            return Err(rows.at_line("error: `request_id` is empty"));
        }
        if !r.operation.is_empty() {
            one_of(&rows, "operation", r.operation, &OPERATIONS)?;
        }
        if let Some(h) = r.hosts.split(' ').find(|h| h.parse::<u16>().is_err()) {
            if !r.hosts.is_empty() {
                return Err(rows.at_line(&format!(
                    "error: `hosts` holds `{}`, not a host number (igemu writes them apart by spaces)",
                    super::read::text_shown(h)
                )));
            }
        }
        visit(r, &rows)?;
    }
    Ok(())
}

/// The counts of `leases.csv` must be `summary`'s: a `requested` row per request, and an end
/// row per request that ended so.
fn check_counts(path: &Path, summary: &Summary, counts: &[u64]) -> Result<(), Error> {
    let totals = &summary.requests;
    let state = |s: &str| {
        let k = state_names().iter().position(|n| *n == s).unwrap_or(0);
        totals.by.iter().map(|by| by[k]).sum::<u64>()
    };
    let checks = [
        (LeaseEventKind::Requested, "requests.total", totals.total),
        (
            LeaseEventKind::Completed,
            "requests.*.completed",
            state("completed"),
        ),
        (
            LeaseEventKind::Cancelled,
            "requests.*.cancelled",
            state("cancelled"),
        ),
        (
            LeaseEventKind::Rejected,
            "requests.*.rejected",
            state("rejected"),
        ),
    ];
    for (kind, key, theirs) in checks {
        let ours = counts[kind as usize];
        if ours != theirs {
            return Err(Error::Input(format!(
                "{}: error: it holds {ours} `{}` rows, but {}'s `{key}` counts {theirs}; the two files are not of one run\n    hint: give the directory of one run, or re-run `igemu run` to rewrite both",
                path.display(),
                kind.as_str(),
                summary.path.display()
            )));
        }
    }
    Ok(())
}

/// A row's cells as a lease's table shows them.
fn cells_of(r: &Row) -> Vec<String> {
    let place = match (r.grid, r.cluster) {
        (g, "") => g.to_string(),
        (g, c) => format!("{g}/{c}"),
    };
    vec![
        number(r.time_s),
        r.event.to_string(),
        place,
        r.hosts.to_string(),
        r.vms.map_or(String::new(), |n| n.to_string()),
        r.cause.to_string(),
        r.operation.to_string(),
        r.planned_s.map_or(String::new(), number),
    ]
}

/// Appends the Lease events section.
pub(super) fn section(body: &mut String, tables: Option<&LeaseTables>) {
    // Left out without leases.csv (a run by an igemu before it): nothing to list.
    let Some(t) = tables else {
        return;
    };
    body.push_str("<h2 id=\"leases\">Lease events</h2>");
    let _ = write!(
        body,
        "<p class=\"note\">Each lease's events in Haizea's vocabulary (docs/outputs.md): requested, redirected, accepted, scheduled or queued, started, displaced, preempted, resumed, migrated, completed, cancelled, rejected — with where, on which hosts, and why. {} events of {} leases are in <code>leases.csv</code>; the {} leases below come first those a preemption, displacement, resumption or migration touched, then the first submitted (at most {MAX_LEASE_TABLES}). A Gantt bar links to its lease's events here, or to this section when its lease has no table.</p>",
        t.rows,
        t.leases_in_all,
        t.leases.len()
    );
    let header = [
        "time_s",
        "event",
        "where",
        "hosts",
        "VMs",
        "cause",
        "operation",
        "planned_s",
    ];
    for (k, (lease, cells, n)) in t.leases.iter().enumerate() {
        let _ = write!(body, "<h4 id=\"lease-{k}\">Lease {}</h4>", escape(lease));
        let whole = format!("leases.csv (the rows whose request_id is {lease})");
        table_of(body, &header, cells, header.len(), (*n, &whole));
    }
}
