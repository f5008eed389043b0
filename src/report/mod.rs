//! `igemu report`: one self-contained `report.html` of a run directory (provenance, key
//! figures, a Gantt chart per cluster, utilisation over time, peering) or of a sweep
//! directory (each metric against the varied key with 95 % confidence intervals, and the
//! table behind it).
//!
//! The charts are static SVG written here ([`svg`]) rather than drawn by a charting script
//! or a plotting crate: a Gantt chart of VM lanes is not a chart type such crates offer, SVG
//! needs no script to render (the page opens offline, in any browser, and prints), tooltips
//! come free with `<title>`, and merging spans per pixel keeps a large run's page small. The
//! page's one script only checks, for tests, that every chart drew.

pub mod svg;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::Deserialize;
use serde_json::Value;

use crate::Error;
use svg::{escape, number, HostSpan, LEASE_COLOURS, LEASE_TYPES};

/// Host rows a Gantt chart draws at most: hosts that held a VM (the first by number), then
/// idle ones. A row costs up to a bar per pixel column and lane, so a cluster of 60 000 busy
/// hosts, every one drawn, made a page of 1.4 GB.
const MAX_HOST_ROWS: usize = 2_000;

/// Rows of a long table shown in full; the rest are counted.
const TABLE_ROWS: usize = 300;

/// What a report shows and where it goes.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only this window of emulated time in the Gantt and utilisation charts (a run's report).
    pub window: Option<Window>,
    /// The file to write (default `report.html` in the directory).
    pub out: Option<PathBuf>,
}

/// A window of emulated time, seconds: `from`, to `to` or the end of the run.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Window {
    /// Its start.
    pub from: f64,
    /// Its end; `None` for the end of the run.
    pub to: Option<f64>,
}

impl Window {
    /// Parses `FROM..TO`, `..TO` or `FROM..`, each a duration (`12h`, `1d6h`, `5400`).
    pub fn parse(text: &str) -> Result<Window, String> {
        let hint = "write FROM..TO with durations, e.g. `12h..1d`, `..6h` or `2d..`";
        let Some((a, b)) = text.split_once("..") else {
            return Err(format!("`{text}` is not a window; {hint}"));
        };
        let secs = |t: &str| -> Result<Option<f64>, String> {
            if t.trim().is_empty() {
                return Ok(None);
            }
            crate::time::parse_duration(t)
                .map(|d| Some(d.as_secs_f64()))
                .map_err(|e| format!("`{text}`: {e}; {hint}"))
        };
        let (from, to) = (secs(a)?.unwrap_or(0.0), secs(b)?);
        match to {
            Some(t) if t == from => {
                return Err(format!(
                    "`{text}` is empty: it ends where it starts; {hint}"
                ))
            }
            Some(t) if t < from => return Err(format!("`{text}` ends before it starts; {hint}")),
            _ => {}
        }
        Ok(Window { from, to })
    }

    /// The time scale of the window in a run that ended at `end`.
    fn scale(window: Option<Window>, end: f64) -> svg::TimeScale {
        match window {
            None => svg::TimeScale::to(end),
            Some(w) => svg::TimeScale::between(w.from, w.to.unwrap_or(end.max(w.from + 1.0))),
        }
    }
}

/// Writes the report of `dir` (a run's or a sweep's output directory) — into `report.html`
/// there unless `options` say otherwise — and returns its path. The file is written whole or
/// not at all.
pub fn write(dir: &Path, options: &Options) -> Result<PathBuf, Error> {
    // Every file the report may read from `dir`, and the one it replaces there.
    let read = || {
        (crate::RUN_OUTPUTS.iter()).chain(&["runs.csv", "points.csv", "paired.csv", "sweep.json"])
    };
    crate::check_regular_files(dir, |name| {
        name == "report.html" || read().any(|r| *r == name)
    })?;
    if let Some(out) = &options.out {
        let inputs: Vec<PathBuf> = read().map(|name| dir.join(name)).collect();
        let report: crate::OutputKind = ("an igemu report", |h| {
            h.starts_with(b"<!DOCTYPE html>") && h.windows(12).any(|w| w == b"<title>igemu")
        });
        crate::check_output_file("--out", out, &inputs, report)?;
    }
    let html = render(dir, options)?;
    let path = options
        .out
        .clone()
        .unwrap_or_else(|| dir.join("report.html"));
    crate::write_atomically(&path, html.as_bytes()).map_err(Error::output(&path))?;
    Ok(path)
}

/// The report of `dir` as HTML: a run's if it holds `summary.json`, a sweep's if it holds
/// `points.csv` (or only `runs.csv`).
pub fn render(dir: &Path, options: &Options) -> Result<String, Error> {
    if !dir.is_dir() {
        return Err(Error::Usage(format!(
            "{} is not a directory; give a run's --out directory (with summary.json) or a sweep's (with points.csv)",
            dir.display()
        )));
    }
    if dir.join("summary.json").exists() {
        run_report(dir, options.window)
    } else if dir.join("points.csv").exists() {
        sweep_report(dir)
    } else {
        Err(Error::Usage(format!(
            "{} holds neither a run's outputs (summary.json) nor a finished sweep's (points.csv); run `igemu run --out {0}` or `igemu sweep FILE --out {0}` first",
            dir.display()
        )))
    }
}

/// Reads a JSON file of a run or sweep whole, up to [`crate::input::MAX_JSON_BYTES`].
fn read_text(path: &Path) -> Result<String, Error> {
    crate::input::read_capped(path, crate::input::MAX_JSON_BYTES)
        .map_err(|e| Error::Input(format!("{}: cannot read the file: {e}", path.display())))
}

/// Opens a CSV file for a [`csv::Reader`], lines capped at [`crate::input::MAX_CSV_LINE`].
fn open_csv(path: &Path) -> Result<csv::Reader<crate::input::LineCapped<std::fs::File>>, Error> {
    crate::input::open_csv(path)
        .map(csv::Reader::from_reader)
        .map_err(|e| Error::Input(format!("{}: cannot read the file: {e}", path.display())))
}

/// A CSV error as an input error at its place (see [`crate::input::csv_problem`]).
fn csv_error(path: &Path, e: &csv::Error) -> Error {
    Error::Input(crate::input::csv_problem(path, e))
}

/// What a file that is no run's output can be mended by.
const REGENERATE: &str =
    "hint: the report reads the files `igemu run` writes; regenerate them with the same igemu";

/// A row that does not parse as the report expects, as an input error at its place.
fn malformed_row(path: &Path, e: &csv::Error) -> Error {
    Error::Input(format!(
        "{}\n    {REGENERATE}",
        crate::input::csv_problem(path, e)
    ))
}

/// Reads every row of a CSV file as `T`; a malformed row is an input error at its line.
fn read_csv<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, Error> {
    let mut reader = open_csv(path)?;
    // Read here, not by `deserialize`, which would drop an error in them (a header line too
    // long) and find no rows.
    reader.headers().map_err(|e| csv_error(path, &e))?;
    let mut rows = Vec::new();
    for row in reader.deserialize() {
        rows.push(row.map_err(|e| malformed_row(path, &e))?);
    }
    Ok(rows)
}

/// The latest time a run's outputs can hold: emulated time is a 64-bit count of
/// microseconds. A later one (`1e300`) is no run's, and drew every chart as one dot at 0.
const LAST_SECS: f64 = u64::MAX as f64 / 1e6;

/// A number as a message shows it: huge ones in exponent form (`1e300`, not 301 digits).
fn shown(value: f64) -> String {
    if value.abs() >= 1e15 {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

/// A time read from a file: finite, not negative, and within emulated time.
fn check_time(path: &Path, line: usize, what: &str, value: f64) -> Result<(), Error> {
    if value.is_finite() && (0.0..=LAST_SECS).contains(&value) {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "{}:{line}: error: `{what}` is {}; times are finite seconds from 0 to {LAST_SECS:.4e} (emulated time's end)",
            path.display(),
            shown(value)
        )))
    }
}

/// A count or amount read from a file: finite and not negative.
fn check_value(path: &Path, line: usize, what: &str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "{}:{line}: error: `{what}` is {value}; it is a finite amount ≥ 0",
            path.display()
        )))
    }
}

/// A row of `intervals.csv` as read, borrowing the row's text (nothing allocated per row).
#[derive(Deserialize)]
struct IntervalRow<'a> {
    request_id: &'a str,
    vm: u32,
    grid: &'a str,
    cluster: &'a str,
    host: u32,
    lease_type: &'a str,
    state: &'a str,
    start_s: f64,
    end_s: f64,
}

/// A row of `intervals.csv` as the report keeps it, its cluster aside: names shared (a
/// lease's VMs share its id, and a run has a handful of states), so a row takes 64 bytes
/// instead of five strings of its own.
struct Span {
    request: Rc<str>,
    vm: u32,
    host: u32,
    /// Its lease type's index in [`LEASE_TYPES`].
    lease: usize,
    state: Rc<str>,
    start_s: f64,
    end_s: f64,
}

/// The most rows of `intervals.csv` the report reads: each is kept while the page is drawn
/// (about 165 bytes a row in all, measured: 10 M rows took 1.65 GB), so this bounds its
/// memory near 3.3 GB; a run's spans are about one per VM.
const MAX_INTERVAL_ROWS: usize = 20_000_000;

/// One copy of each text seen: a row's names as shared strings.
#[derive(Default)]
struct Interner(HashSet<Rc<str>>);

impl Interner {
    fn get(&mut self, text: &str) -> Rc<str> {
        if let Some(known) = self.0.get(text) {
            return Rc::clone(known);
        }
        let new: Rc<str> = Rc::from(text);
        self.0.insert(Rc::clone(&new));
        new
    }
}

/// The spans of `intervals.csv` by cluster (grid, cluster), clusters in the order they first
/// appear, each row checked (times within emulated time, no span ending before it starts);
/// and the latest end.
#[allow(clippy::type_complexity)]
fn read_spans(path: &Path) -> Result<(Vec<((String, String), Vec<Span>)>, f64), Error> {
    read_spans_up_to(path, MAX_INTERVAL_ROWS)
}

/// [`read_spans`] with at most `max_rows` rows.
#[allow(clippy::type_complexity)]
fn read_spans_up_to(
    path: &Path,
    max_rows: usize,
) -> Result<(Vec<((String, String), Vec<Span>)>, f64), Error> {
    let mut reader = open_csv(path)?;
    let headers = reader.headers().map_err(|e| csv_error(path, &e))?.clone();
    let mut clusters: Vec<((String, String), Vec<Span>)> = Vec::new();
    let mut index: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let (mut names, mut end, mut rows) = (Interner::default(), 0.0f64, 0usize);
    let mut record = csv::StringRecord::new();
    while reader
        .read_record(&mut record)
        .map_err(|e| malformed_row(path, &e))?
    {
        rows += 1;
        // The row's number after the header, as before (the reader's own line count runs a
        // line short on CRLF files).
        let line = rows + 1;
        if rows > max_rows {
            return Err(Error::Input(format!(
                "{}:{line}: error: more than {max_rows} spans; the report keeps each while it draws, and stops here\n    hint: no igemu run writes this many (about one span per VM); check the path",
                path.display()
            )));
        }
        let r: IntervalRow =
            (record.deserialize(Some(&headers))).map_err(|e| malformed_row(path, &e))?;
        check_time(path, line, "start_s", r.start_s)?;
        check_time(path, line, "end_s", r.end_s)?;
        if r.end_s < r.start_s {
            return Err(Error::Input(format!(
                "{}:{line}: error: the span ends (end_s {}) before it starts (start_s {}); not a span igemu writes\n    {REGENERATE}",
                path.display(),
                r.end_s,
                r.start_s
            )));
        }
        end = end.max(r.end_s);
        let of_grid = match index.get_mut(r.grid) {
            Some(of_grid) => of_grid,
            None => index.entry(r.grid.to_string()).or_default(),
        };
        let c = match of_grid.get(r.cluster) {
            Some(&c) => c,
            None => {
                clusters.push(((r.grid.to_string(), r.cluster.to_string()), Vec::new()));
                of_grid.insert(r.cluster.to_string(), clusters.len() - 1);
                clusters.len() - 1
            }
        };
        clusters[c].1.push(Span {
            request: names.get(r.request_id),
            vm: r.vm,
            host: r.host,
            lease: lease_index(r.lease_type),
            state: names.get(r.state),
            start_s: r.start_s,
            end_s: r.end_s,
        });
    }
    Ok((clusters, end))
}

#[derive(Deserialize)]
struct UsageRow {
    time_s: f64,
    grid: String,
    cluster: String,
    cores_used: f64,
    cores_total: f64,
    mem_mb_used: f64,
    mem_mb_total: f64,
    queued: f64,
}

#[derive(Deserialize)]
struct RequestRow {
    request_id: String,
    grid: String,
    #[serde(default)]
    cluster: String,
    origin: String,
    lease_type: String,
    #[serde(default)]
    submit_s: Option<f64>,
    #[serde(default)]
    start_s: Option<f64>,
    #[serde(default)]
    end_s: Option<f64>,
    state: String,
    #[serde(default)]
    served_by: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

fn lease_index(name: &str) -> usize {
    LEASE_TYPES.iter().position(|t| *t == name).unwrap_or(3)
}

/// The page around `body`: inlined style, the striped patterns, and the self-check script.
fn page(title: &str, nav: &[(&str, &str)], body: &str) -> String {
    let mut html = String::with_capacity(body.len() + 4096);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{}{}</style></head><body>",
        escape(title),
        PAGE_STYLE,
        svg::style()
    );
    html.push_str(&svg::shared_defs());
    let _ = write!(html, "<header><h1>{}</h1><nav>", escape(title));
    for (anchor, name) in nav {
        let _ = write!(html, "<a href=\"#{anchor}\">{}</a>", escape(name));
    }
    html.push_str("</nav></header><main>");
    html.push_str(body);
    let _ = writeln!(
        html,
        "</main><footer>Written by igemu {} (<code>igemu report</code>). Charts are static SVG; hover a bar or point for its values.</footer><script>{SELF_CHECK}</script></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    html
}

const PAGE_STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#222;background:#fff}\
header{position:sticky;top:0;background:#fafafa;border-bottom:1px solid #ddd;padding:8px 20px;z-index:1}\
h1{font-size:20px;margin:0 0 4px}nav a{margin-right:14px;color:#0645ad;text-decoration:none}\
main{padding:0 20px 30px;max-width:1160px}h2{margin-top:32px;border-bottom:1px solid #ddd}\
h3{margin:22px 0 6px;font-size:15px}table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}\
td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top;white-space:pre-line;overflow-wrap:anywhere}td:first-child{overflow-wrap:normal}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}\
.note{color:#555;font-size:13px}.key{display:flex;flex-wrap:wrap;gap:14px;font-size:13px;margin:6px 0}\
.key span{display:inline-flex;align-items:center;gap:5px}.sw{display:inline-block;width:22px;height:11px;border:1px solid #999}\
footer{padding:16px 20px;color:#666;font-size:12px;border-top:1px solid #ddd}\
.scroll{overflow-x:auto}code{font-size:12px}\
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0 16px}.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:120px;font-size:12px;color:#555;background:#fcfcfc}\
.card b{display:block;font-size:19px;color:#111;font-weight:600}";

/// Records, on the body, how many charts drew and any script error — what the browser test
/// reads from the DOM.
const SELF_CHECK: &str = "(function(){var errors=[];window.addEventListener('error',function(e){errors.push(String(e.message))});\
var log=console.error;console.error=function(){errors.push(Array.prototype.join.call(arguments,' '));log.apply(console,arguments)};\
function check(){var charts=document.querySelectorAll('svg.chart'),empty=[];\
for(var i=0;i<charts.length;i++){var b=charts[i].getBBox();if(charts[i].childElementCount<3||b.width<=0||b.height<=0){empty.push(charts[i].getAttribute('data-chart'))}}\
document.body.setAttribute('data-charts',String(charts.length));document.body.setAttribute('data-empty-charts',empty.join('|'));\
document.body.setAttribute('data-errors',errors.join('|'));document.body.setAttribute('data-checked','yes')}\
if(document.readyState==='complete'){check()}else{window.addEventListener('load',check)}})();";

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>], numeric_from: usize) {
    out.push_str("<div class=\"scroll\"><table><tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>");
    for row in rows.iter().take(TABLE_ROWS) {
        out.push_str("<tr>");
        for (k, cell) in row.iter().enumerate() {
            let class = if k >= numeric_from {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
    if rows.len() > TABLE_ROWS {
        let _ = write!(
            out,
            "<p class=\"note\">The first {TABLE_ROWS} of {} rows.</p>",
            rows.len()
        );
    }
}

/// A summary value for a table: seconds also as a duration, percents with `%`.
fn figure(key: &str, v: &Value) -> String {
    match v.as_f64() {
        Some(x) if key.ends_with("_s") && x.abs() >= 120.0 => {
            format!("{} ({})", number(x), svg::duration(x))
        }
        Some(x) if key.ends_with("_pct") => format!("{} %", number(x)),
        Some(x) => number(x),
        None => match v {
            Value::String(s) => s.clone(),
            Value::Null => "–".into(),
            Value::Bool(b) => b.to_string(),
            other => other.to_string(),
        },
    }
}

fn run_report(dir: &Path, window: Option<Window>) -> Result<String, Error> {
    let summary_path = dir.join("summary.json");
    let summary: Value = serde_json::from_str(&read_text(&summary_path)?).map_err(|e| {
        Error::Input(format!(
            "{}:{}: error: not JSON: {e}",
            summary_path.display(),
            e.line()
        ))
    })?;
    if !summary.is_object() {
        return Err(Error::Input(format!(
            "{}: not a run summary (a JSON object)",
            summary_path.display()
        )));
    }
    let topology = summary["topology"].as_str().unwrap_or("run").to_string();
    let mut body = String::new();
    provenance_section(&mut body, &summary);
    figures_section(&mut body, &summary);
    let requests_path = dir.join("requests.csv");
    let requests: Vec<RequestRow> = if requests_path.exists() {
        read_csv(&requests_path)?
    } else {
        Vec::new()
    };
    requests_section(&mut body, &requests);
    let end = summary["emulated_end_s"].as_f64().unwrap_or(0.0);
    if summary.get("emulated_end_s").is_some() && !(0.0..=LAST_SECS).contains(&end) {
        return Err(Error::Input(format!(
            "{}: error: `emulated_end_s` is {}; times are finite seconds from 0 to {LAST_SECS:.4e} (emulated time's end)",
            summary_path.display(),
            shown(end)
        )));
    }
    hosts_section(&mut body, dir, &summary, &requests, end, window)?;
    utilisation_section(&mut body, dir, end, window)?;
    peering_section(&mut body, dir, &summary, &requests)?;
    let nav = [
        ("provenance", "Provenance"),
        ("figures", "Key figures"),
        ("requests", "Requests"),
        ("hosts", "Hosts"),
        ("utilisation", "Utilisation"),
        ("peering", "Peering"),
    ];
    Ok(page(&format!("igemu run: {topology}"), &nav, &body))
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

fn requests_section(body: &mut String, requests: &[RequestRow]) {
    body.push_str("<h2 id=\"requests\">Requests</h2>");
    if requests.is_empty() {
        body.push_str("<p class=\"note\">No requests.csv in this directory.</p>");
        return;
    }
    // Count by (origin, lease type) × state.
    let states = ["completed", "rejected", "cancelled", "unfinished"];
    let mut counts: BTreeMap<(String, usize), [usize; 4]> = BTreeMap::new();
    for r in requests {
        let row = counts
            .entry((r.origin.clone(), lease_index(&r.lease_type)))
            .or_default();
        if let Some(k) = states.iter().position(|s| *s == r.state) {
            row[k] += 1;
        }
    }
    let rows: Vec<Vec<String>> = counts
        .iter()
        .map(|((origin, lease), c)| {
            let mut row = vec![origin.clone(), LEASE_TYPES[*lease].to_string()];
            row.extend(c.iter().map(|n| n.to_string()));
            row
        })
        .collect();
    table(
        body,
        &[
            "origin",
            "lease type",
            "completed",
            "rejected",
            "cancelled",
            "unfinished",
        ],
        &rows,
        2,
    );
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for r in requests.iter().filter(|r| r.state == "rejected") {
        *reasons
            .entry(
                r.reason
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .unwrap_or("not recorded"),
            )
            .or_default() += 1;
    }
    if !reasons.is_empty() {
        body.push_str("<h3>Why requests were rejected</h3>");
        let rows: Vec<Vec<String>> = reasons
            .iter()
            .map(|(k, n)| vec![k.to_string(), n.to_string()])
            .collect();
        table(body, &["reason", "requests"], &rows, 1);
    }
}

fn lease_key(out: &mut String) {
    out.push_str("<div class=\"key\">");
    for (k, name) in LEASE_TYPES.iter().enumerate() {
        let _ = write!(
            out,
            "<span><i class=\"sw\" style=\"background:{}\"></i>{name}</span>",
            LEASE_COLOURS[k]
        );
    }
    let _ = write!(
        out,
        "<span><i class=\"sw\" style=\"background:{0};opacity:.4\"></i>booting (pale)</span>\
         <span><i class=\"sw\" style=\"background:repeating-linear-gradient(45deg,{0} 0 3px,#fff 3px 6px)\"></i>paused, suspending, resuming, migrating (striped)</span>\
         <span><svg width=\"12\" height=\"10\"><path d=\"M6 10l5 -9h-10z\" fill=\"#d00\"/></svg>preemption (the VM stopped, paused, suspended or sent away)</span></div>",
        LEASE_COLOURS[1]
    );
}

fn hosts_section(
    body: &mut String,
    dir: &Path,
    summary: &Value,
    requests: &[RequestRow],
    end: f64,
    window: Option<Window>,
) -> Result<(), Error> {
    body.push_str("<h2 id=\"hosts\">Hosts</h2>");
    let path = dir.join("intervals.csv");
    if !path.exists() {
        body.push_str("<p class=\"note\">No intervals.csv in this directory (written by <code>igemu run</code>).</p>");
        return Ok(());
    }
    let (read, spans_end) = read_spans(&path)?;
    let scale = Window::scale(window, end.max(spans_end));
    let cancelled: BTreeMap<&str, f64> = requests
        .iter()
        .filter(|r| r.state == "cancelled")
        .filter_map(|r| Some((r.request_id.as_str(), r.end_s?)))
        .collect();
    // Clusters in file order of first appearance, then those that held no VM.
    let mut clusters = read;
    let spanned: BTreeSet<(String, String)> = clusters.iter().map(|(k, _)| k.clone()).collect();
    // Every cluster's host count, from summary.json (igemu 0.1 runs before it was recorded
    // show only the hosts that held a VM).
    let mut host_counts: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (name, figures) in summary["clusters"].as_object().into_iter().flatten() {
        if let (Some((g, c)), Some(n)) = (name.split_once('/'), figures["hosts"].as_u64()) {
            let key = (g.to_string(), c.to_string());
            if !spanned.contains(&key) {
                clusters.push((key.clone(), Vec::new()));
            }
            host_counts.insert(key, n);
        }
    }
    let _ = write!(
        body,
        "<p class=\"note\">One row per host, one lane per VM alive on it at once, from {} to {} of emulated time{}. Spans narrower than a pixel are merged (the tooltip counts them); <code>igemu report --window FROM..TO</code> draws a window in detail.</p>",
        svg::duration(scale.start),
        svg::duration(scale.end),
        if window.is_some() { " (the window asked for)" } else { "" }
    );
    lease_key(body);
    for (key, spans_of) in &clusters {
        let spans_of = &spans_of[..];
        // Up to a bound on rows, so that a huge cluster's page stays small: the hosts that
        // held a VM first, then idle ones. Only the drawn hosts' spans are put together.
        let count = host_counts.get(key).copied().unwrap_or(0);
        let all_held: BTreeSet<u32> = spans_of.iter().map(|s| s.host).collect();
        let held: BTreeSet<u32> = all_held.iter().copied().take(MAX_HOST_ROWS).collect();
        let held_hidden = all_held.len() - held.len();
        let chart = cluster_spans(spans_of, &cancelled, |h| held.contains(&h));
        let (spans, marks, names) = (chart.spans, chart.marks, chart.names);
        let (all_spans, all_marks) = (chart.spans_in_all, chart.marks_in_all);
        let shown_idle: Vec<u32> = (0..count.min(u64::from(u32::MAX)) as u32)
            .filter(|h| !all_held.contains(h))
            .take(MAX_HOST_ROWS.saturating_sub(held.len()))
            .collect();
        let in_range = all_held.iter().filter(|h| u64::from(**h) < count).count();
        let hidden = count.saturating_sub((in_range + shown_idle.len()) as u64);
        let mut hosts: Vec<u32> = held.iter().copied().chain(shown_idle).collect();
        hosts.sort_unstable();
        let _ = write!(
            body,
            "<h3>{}/{} — {} hosts ({} held a VM), {} VM spans, {} preemptions</h3>",
            escape(&key.0),
            escape(&key.1),
            count.max(all_held.len() as u64),
            all_held.len(),
            all_spans,
            all_marks
        );
        if held_hidden > 0 {
            let _ = write!(
                body,
                "<p class=\"note\">Only the first {MAX_HOST_ROWS} hosts that held a VM are drawn (to host {}); {held_hidden} more held one and are not drawn.</p>",
                held.last().copied().unwrap_or(0)
            );
        }
        if hidden > 0 {
            let _ = write!(
                body,
                "<p class=\"note\">{hidden} more hosts held no VM and are not drawn.</p>"
            );
        }
        body.push_str(&svg::gantt(
            &format!("gantt {}/{}", key.0, key.1),
            &scale,
            &hosts,
            &spans,
            &marks,
            &names,
        ));
    }
    Ok(())
}

/// A cluster's Gantt input ([`cluster_spans`]): the drawn hosts' spans, marks and instance
/// names, and how many spans and marks the whole cluster has.
struct ClusterChart {
    spans: Vec<HostSpan>,
    marks: Vec<svg::Mark>,
    names: Vec<String>,
    spans_in_all: usize,
    marks_in_all: usize,
}

/// A cluster's spans as Gantt input: VM instances (a lease's VM on one host, spans touching
/// end to start), preemption marks (a running span followed at once by a preemption
/// operation, or a cancelled lease's VM stopped when it ended) and instance names, for the
/// hosts `drawn` takes; the spans and marks of all counted.
fn cluster_spans(
    rows: &[Span],
    cancelled: &BTreeMap<&str, f64>,
    drawn: impl Fn(u32) -> bool,
) -> ClusterChart {
    // Each VM's spans on each host, VMs in (request, VM, host) order, each one's by start (a
    // stable sort keeps the file's order among equal starts): one sorted list, not a list
    // per VM (a run has about one span per VM).
    let mut sorted: Vec<&Span> = rows.iter().collect();
    sorted.sort_by(|a, b| {
        (&*a.request, a.vm, a.host)
            .cmp(&(&*b.request, b.vm, b.host))
            .then(a.start_s.total_cmp(&b.start_s))
    });
    let mut chart = ClusterChart {
        spans: Vec::new(),
        marks: Vec::new(),
        names: Vec::new(),
        spans_in_all: 0,
        marks_in_all: 0,
    };
    for list in sorted.chunk_by(|a, b| (&a.request, a.vm, a.host) == (&b.request, b.vm, b.host)) {
        let (request, vm, host) = (&*list[0].request, list[0].vm, list[0].host);
        // An instance of a host not drawn is only counted.
        let draw = drawn(host);
        let mut previous: Option<&Span> = None;
        for &r in list {
            let Some(drawn) = svg::Drawn::of(&r.state) else {
                previous = Some(r);
                continue;
            };
            // A new instance when the VM left the host in between (suspended, say).
            let joined = previous
                .is_some_and(|p| svg::Drawn::of(&p.state).is_some() && p.end_s >= r.start_s - 1e-6);
            if draw && !joined {
                chart.names.push(format!("{request} vm {vm}"));
            }
            let instance = chart.names.len().wrapping_sub(1);
            if let Some(p) = previous.filter(|_| joined) {
                if &*p.state == "running" && drawn == svg::Drawn::Operation {
                    chart.marks_in_all += 1;
                    if draw {
                        chart.marks.push(svg::Mark {
                            host,
                            instance,
                            at: r.start_s,
                            text: format!(
                                "{request} vm {vm} preempted at {} ({})",
                                svg::duration(r.start_s),
                                r.state
                            ),
                        });
                    }
                }
            }
            chart.spans_in_all += 1;
            if draw {
                chart.spans.push(HostSpan {
                    host,
                    instance,
                    lease: r.lease,
                    state: Rc::clone(&r.state),
                    drawn,
                    start: r.start_s,
                    end: r.end_s,
                });
            }
            previous = Some(r);
        }
        if let (Some(last), Some(at)) = (previous, cancelled.get(request)) {
            // `last` is drawn (running), so its instance is the last one named.
            if &*last.state == "running" && (last.end_s - at).abs() < 1e-6 {
                chart.marks_in_all += 1;
                if draw {
                    chart.marks.push(svg::Mark {
                        host,
                        instance: chart.names.len() - 1,
                        at: *at,
                        text: format!(
                            "{request} vm {vm} stopped (cancelled) at {}",
                            svg::duration(*at)
                        ),
                    });
                }
            }
        }
    }
    chart
}

/// A cluster's cores (%), memory (%) and queue length over time, as change points.
type ClusterSeries = [Vec<(f64, f64)>; 3];

fn utilisation_section(
    body: &mut String,
    dir: &Path,
    end: f64,
    window: Option<Window>,
) -> Result<(), Error> {
    body.push_str("<h2 id=\"utilisation\">Utilisation over time</h2>");
    let path = dir.join("utilization.csv");
    if !path.exists() {
        body.push_str("<p class=\"note\">No utilization.csv in this directory (written by <code>igemu run</code>).</p>");
        return Ok(());
    }
    let rows: Vec<UsageRow> = read_csv(&path)?;
    let mut end = end;
    for (i, r) in rows.iter().enumerate() {
        check_time(&path, i + 2, "time_s", r.time_s)?;
        for (what, v) in [
            ("cores_used", r.cores_used),
            ("cores_total", r.cores_total),
            ("mem_mb_used", r.mem_mb_used),
            ("mem_mb_total", r.mem_mb_total),
            ("queued", r.queued),
        ] {
            check_value(&path, i + 2, what, v)?;
        }
        end = end.max(r.time_s);
    }
    let scale = Window::scale(window, end);
    // Per Grid, per cluster in order of appearance.
    let mut grids: Vec<String> = Vec::new();
    let mut series: BTreeMap<String, Vec<(String, ClusterSeries)>> = BTreeMap::new();
    for r in &rows {
        if !grids.contains(&r.grid) {
            grids.push(r.grid.clone());
        }
        let clusters = series.entry(r.grid.clone()).or_default();
        let k = match clusters.iter().position(|(c, _)| *c == r.cluster) {
            Some(k) => k,
            None => {
                clusters.push((r.cluster.clone(), Default::default()));
                clusters.len() - 1
            }
        };
        let share = |used: f64, total: f64| {
            if total > 0.0 {
                100.0 * used / total
            } else {
                0.0
            }
        };
        let s = &mut clusters[k].1;
        s[0].push((r.time_s, share(r.cores_used, r.cores_total)));
        s[1].push((r.time_s, share(r.mem_mb_used, r.mem_mb_total)));
        s[2].push((r.time_s, r.queued));
    }
    body.push_str("<p class=\"note\">From utilization.csv, averaged over the time each pixel stands for: the share of each cluster's cores and memory held by VMs (booting, running, paused, suspending, resuming), and its queue (requests arrived, not yet started).</p>");
    for grid in grids {
        let clusters = &series[&grid];
        let _ = write!(body, "<h3>Grid {}</h3>", escape(&grid));
        let pick = |k: usize| -> Vec<svg::StepSeries> {
            clusters
                .iter()
                .map(|(c, s)| svg::StepSeries {
                    name: c.clone(),
                    points: s[k].clone(),
                })
                .collect()
        };
        body.push_str(&svg::step_chart(
            &format!("cores {grid}"),
            &scale,
            &pick(0),
            "cores in use, %",
            Some(100.0),
        ));
        body.push_str(&svg::step_chart(
            &format!("memory {grid}"),
            &scale,
            &pick(1),
            "memory in use, %",
            Some(100.0),
        ));
        body.push_str(&svg::step_chart(
            &format!("queue {grid}"),
            &scale,
            &pick(2),
            "requests queued",
            None,
        ));
    }
    Ok(())
}

fn peering_section(
    body: &mut String,
    dir: &Path,
    summary: &Value,
    requests: &[RequestRow],
) -> Result<(), Error> {
    body.push_str("<h2 id=\"peering\">Peering</h2>");
    let Some(grids) = summary["grids"].as_object().filter(|g| !g.is_empty()) else {
        body.push_str("<p class=\"note\">No per-Grid figures in summary.json.</p>");
        return Ok(());
    };
    // Per-Grid figures: scalars, then the negotiation counters flattened.
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
    // Redirections as requests.csv has them.
    let redirected: Vec<Vec<String>> = requests
        .iter()
        .filter(|r| {
            r.served_by
                .as_deref()
                .is_some_and(|s| !s.is_empty() && s != r.grid)
        })
        .map(|r| {
            vec![
                r.request_id.clone(),
                r.grid.clone(),
                r.served_by.clone().unwrap_or_default(),
                r.cluster.clone(),
                r.state.clone(),
                r.submit_s.map_or("–".into(), number),
                r.start_s.map_or("–".into(), number),
            ]
        })
        .collect();
    let _ = write!(body, "<h3>Redirected requests ({})</h3>", redirected.len());
    if !redirected.is_empty() {
        table(
            body,
            &[
                "request",
                "from Grid",
                "served by",
                "cluster",
                "state",
                "submit_s",
                "start_s",
            ],
            &redirected,
            5,
        );
    }
    body.push_str("<h3>Negotiations</h3>");
    let trace = dir.join("trace.jsonl");
    if !trace.exists() {
        body.push_str("<p class=\"note\">Run with <code>--trace</code> to list every negotiation here (the trace holds the offers and answers).</p>");
        return Ok(());
    }
    let rows = negotiation_rows(&trace)?;
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        *outcomes.entry(r.outcome).or_default() += 1;
    }
    let _ = write!(
        body,
        "<p class=\"note\">{} offered request(s) in negotiations: {}. The same list as CSV: <code>igemu trace {} --negotiations</code>.</p>",
        rows.len(),
        outcomes
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        escape(&trace.display().to_string())
    );
    let price = |p: Option<f64>| p.map_or("–".into(), number);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.negotiation.to_string(),
                r.requester.clone(),
                r.provider.clone(),
                r.request.clone(),
                r.outcome.to_string(),
                r.redirect.unwrap_or("").to_string(),
                price(r.price),
                r.contract.map_or("–".into(), |c| {
                    format!("{}–{}", number(c.min), number(c.max))
                }),
                r.messages.to_string(),
                number(r.duration_us as f64 / 1e6),
            ]
        })
        .collect();
    table(
        body,
        &[
            "negotiation",
            "requester",
            "provider",
            "request",
            "outcome",
            "redirect",
            "price",
            "contract",
            "messages",
            "duration_s",
        ],
        &cells,
        6,
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
        if !line.contains("\"negotiation\"") {
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

#[derive(Deserialize)]
struct PointRow {
    metric: String,
    n: f64,
    mean: Option<f64>,
    ci95_low: Option<f64>,
    ci95_high: Option<f64>,
}

fn sweep_report(dir: &Path) -> Result<String, Error> {
    let path = dir.join("points.csv");
    let mut reader = open_csv(&path)?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(&path, &e))?
        .iter()
        .map(String::from)
        .collect();
    let keys: Vec<usize> = (0..header.len())
        .filter(|k| header[*k].starts_with("set:"))
        .collect();
    if !header.iter().any(|h| h == "metric") {
        return Err(Error::Input(format!(
            "{}: not a sweep's points.csv (no `metric` column)",
            path.display()
        )));
    }
    let header_record = csv::StringRecord::from(header.clone());
    // Each row: the varied values, and the statistics.
    let mut points: Vec<(Vec<String>, PointRow)> = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| csv_error(&path, &e))?;
        let values: Vec<String> = keys.iter().map(|k| record[*k].to_string()).collect();
        let row: PointRow = record
            .deserialize(Some(&header_record))
            .map_err(|e| Error::Input(format!("{}:{}: error: {e}", path.display(), i + 2)))?;
        points.push((values, row));
    }
    let key_names: Vec<String> = keys
        .iter()
        .map(|k| header[*k].trim_start_matches("set:").to_string())
        .collect();
    // The x axis: the numeric key with the most values (the papers' swept parameter); the
    // other keys' combinations are the lines. With no numeric key, the first key's values are
    // categories on the x axis.
    let distinct = |k: usize| distinct(&points, k);
    let numeric = |k: usize| {
        distinct(k)
            .iter()
            .all(|v| v.parse::<f64>().is_ok_and(f64::is_finite))
    };
    let x_key = (0..keys.len())
        .filter(|k| numeric(*k))
        .max_by_key(|k| distinct(*k).len())
        .or(if keys.is_empty() { None } else { Some(0) });
    let categories: Option<Vec<String>> = x_key.filter(|k| !numeric(*k)).map(distinct);
    // Each category's place on the x axis, looked up per point.
    let category_at: HashMap<&str, usize> = categories
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    // The metrics in first-seen order, each with its points (grouped once: a sweep may
    // have thousands of metrics and points).
    let mut metrics: Vec<String> = Vec::new();
    let mut points_of: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, (_, p)) in points.iter().enumerate() {
        let of = points_of.entry(p.metric.as_str()).or_default();
        if of.is_empty() {
            metrics.push(p.metric.clone());
        }
        of.push(i);
    }
    let mut body = String::new();
    sweep_provenance(&mut body, dir);
    let x_label = x_key.map_or("point".to_string(), |k| key_names[k].clone());
    let _ = write!(
        body,
        "<h2 id=\"plots\">Metrics against {}</h2><p class=\"note\">Means over the seeds with 95 % confidence intervals (Student's t); one line per {}. Hover a point for its values.</p>",
        escape(&x_label),
        if keys.len() > 1 {
            escape(
                &key_names
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| Some(*k) != x_key)
                    .map(|(_, n)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(" × "),
            )
        } else {
            "sweep".into()
        }
    );
    let mut table_rows = Vec::new();
    for metric in &metrics {
        let mut lines: Vec<svg::CiSeries> = Vec::new();
        // Each line's index in `lines`, by name.
        let mut line_at: HashMap<String, usize> = HashMap::new();
        let of = points_of
            .get(metric.as_str())
            .map_or(&[][..], Vec::as_slice);
        for (values, p) in of.iter().map(|&i| &points[i]) {
            let line_name = values
                .iter()
                .enumerate()
                .filter(|(k, _)| Some(*k) != x_key)
                .map(|(k, v)| format!("{}={v}", key_names[k]))
                .collect::<Vec<_>>()
                .join(", ");
            let x = match (x_key, &categories) {
                (Some(k), Some(_)) => category_at.get(values[k].as_str()).map_or(0, |i| *i) as f64,
                (Some(k), None) => values[k].parse().unwrap_or(f64::NAN),
                (None, _) => 0.0,
            };
            let mean = p.mean.unwrap_or(f64::NAN);
            let point = svg::CiPoint {
                x,
                mean,
                low: p.ci95_low.unwrap_or(mean),
                high: p.ci95_high.unwrap_or(mean),
            };
            match line_at.get(&line_name) {
                Some(at) => lines[*at].points.push(point),
                None => {
                    line_at.insert(line_name.clone(), lines.len());
                    lines.push(svg::CiSeries {
                        name: if line_name.is_empty() {
                            metric.clone()
                        } else {
                            line_name
                        },
                        points: vec![point],
                    })
                }
            }
            let mut row = values.clone();
            row.extend([
                metric.clone(),
                number(p.n),
                p.mean.map_or("–".into(), number),
                p.ci95_low.map_or("–".into(), number),
                p.ci95_high.map_or("–".into(), number),
            ]);
            table_rows.push(row);
        }
        for l in &mut lines {
            l.points.sort_by(|a, b| a.x.total_cmp(&b.x));
        }
        let _ = write!(body, "<h3>{}</h3>", escape(metric));
        // The heading names the metric; the axis its last part, short enough to fit.
        let y_label: String = metric
            .rsplit('.')
            .next()
            .unwrap_or(metric)
            .chars()
            .take(28)
            .collect();
        body.push_str(&svg::ci_chart(
            metric,
            &x_label,
            &y_label,
            &lines,
            categories.as_deref(),
        ));
    }
    body.push_str("<h2 id=\"table\">The table behind the plots</h2><p class=\"note\">points.csv: per point and metric, the seeds that ran (n), the mean and its 95 % confidence interval.</p>");
    let mut header: Vec<&str> = key_names.iter().map(|s| s.as_str()).collect();
    header.extend(["metric", "n", "mean", "ci95_low", "ci95_high"]);
    table(&mut body, &header, &table_rows, key_names.len() + 1);
    paired_section(&mut body, dir)?;
    let nav = [
        ("provenance", "Provenance"),
        ("plots", "Plots"),
        ("table", "Table"),
        ("paired", "Paired differences"),
    ];
    let name = dir
        .file_name()
        .map_or("sweep".into(), |n| n.to_string_lossy().to_string());
    Ok(page(&format!("igemu sweep: {name}"), &nav, &body))
}

/// The values of varied key `k` over `points`, each once, in the order first met. A set beside
/// the list keeps this linear: a sweep may have a million points.
fn distinct<T>(points: &[(Vec<String>, T)], k: usize) -> Vec<String> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut order = Vec::new();
    for (v, _) in points {
        if seen.insert(&v[k]) {
            order.push(v[k].clone());
        }
    }
    order
}

fn sweep_provenance(body: &mut String, dir: &Path) {
    body.push_str("<h2 id=\"provenance\">Provenance</h2>");
    let manifest = crate::input::read_capped(&dir.join("sweep.json"), crate::input::MAX_JSON_BYTES)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let Some(manifest) = manifest.filter(Value::is_object) else {
        body.push_str(
            "<p class=\"note\">No sweep.json in this directory: what was run is not recorded.</p>",
        );
        return;
    };
    let rows: Vec<Vec<String>> = manifest
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| vec![k.clone(), plain(v)])
        .collect();
    table(body, &["what", "value"], &rows, 9);
}

/// A JSON value as a reader wants it in a table cell: strings bare, lists joined by commas,
/// a varied key as `key: values`, objects one `key: value` per line.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            items.iter().map(plain).collect::<Vec<_>>().join(", ")
        }
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join("\n"),
        Value::Object(o) => match (o.get("key"), o.get("values")) {
            (Some(k), Some(values)) if o.len() == 2 => format!("{}: {}", plain(k), plain(values)),
            _ if o.is_empty() => "none".into(),
            _ => o
                .iter()
                .map(|(k, v)| format!("{k}: {}", plain(v)))
                .collect::<Vec<_>>()
                .join("\n"),
        },
        other => other.to_string(),
    }
}

fn paired_section(body: &mut String, dir: &Path) -> Result<(), Error> {
    body.push_str("<h2 id=\"paired\">Paired differences</h2>");
    let path = dir.join("paired.csv");
    if !path.exists() {
        body.push_str(
            "<p class=\"note\">No paired.csv (written when a policy-like key is varied).</p>",
        );
        return Ok(());
    }
    let mut reader = open_csv(&path)?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(&path, &e))?
        .iter()
        .map(|h| h.trim_start_matches("set:").to_string())
        .collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(&path, &e))?;
        rows.push(
            record
                .iter()
                .map(|c| c.parse::<f64>().map_or(c.to_string(), number))
                .collect(),
        );
    }
    body.push_str("<p class=\"note\">Per-seed differences b − a between two values of a policy-like key, the other keys fixed: mean and 95 % CI. An interval that excludes 0 is a difference the seeds agree on.</p>");
    let header: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
    let numeric_from = header
        .iter()
        .position(|h| *h == "n")
        .unwrap_or(header.len());
    table(body, &header, &rows, numeric_from);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_from_durations_and_refuse_nonsense() {
        let w = Window::parse("12h..1d").expect("valid");
        assert_eq!((w.from, w.to), (43_200.0, Some(86_400.0)));
        assert_eq!(Window::parse("..6h").expect("valid").from, 0.0);
        assert_eq!(Window::parse("2d..").expect("valid").to, None);
        for bad in ["6h", "5h..2h", "x..2h", "1h..1h", "0..0", "..0"] {
            let e = Window::parse(bad).expect_err(bad);
            assert!(e.contains("FROM..TO"), "{bad}: {e}");
        }
        // An empty window is not a reversed one.
        let e = Window::parse("1h..1h").expect_err("empty");
        assert!(
            e.starts_with("`1h..1h` is empty: it ends where it starts"),
            "{e}"
        );
        assert!(Window::parse("0..0")
            .expect_err("empty")
            .contains("is empty"));
        let e = Window::parse("5h..2h").expect_err("reversed");
        assert!(e.contains("ends before it starts"), "{e}");
    }

    #[test]
    fn distinct_values_are_found_in_linear_time_in_first_seen_order() {
        let points: Vec<(Vec<String>, ())> = ["b", "a", "b", "c", "a"]
            .iter()
            .map(|v| (vec![v.to_string()], ()))
            .collect();
        assert_eq!(distinct(&points, 0), ["b", "a", "c"]);
        // 300 000 values of one key (a legal sweep): before, a list search per point (> 60 s).
        let n = 300_000;
        let points: Vec<(Vec<String>, ())> = (0..n).map(|i| (vec![i.to_string()], ())).collect();
        let started = std::time::Instant::now();
        assert_eq!(distinct(&points, 0).len(), n);
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    }

    fn row(request: &str, host: u32, state: &str, start: f64, end: f64) -> Span {
        Span {
            request: request.into(),
            vm: 0,
            host,
            lease: lease_index("suspendable"),
            state: state.into(),
            start_s: start,
            end_s: end,
        }
    }

    #[test]
    fn preemptions_are_marked_where_a_running_vm_was_operated_on_or_stopped() {
        let rows = [
            // Suspended and resumed on another host: one mark, two instances.
            row("a", 0, "running", 0.0, 10.0),
            row("a", 0, "suspending", 10.0, 12.0),
            row("a", 0, "suspended", 12.0, 20.0),
            row("a", 1, "resuming", 20.0, 22.0),
            row("a", 1, "running", 22.0, 30.0),
            // Cancelled at 15: a mark; completed at 40: none.
            row("b", 2, "booting", 0.0, 1.0),
            row("b", 2, "running", 1.0, 15.0),
            row("c", 3, "running", 0.0, 40.0),
        ];
        let cancelled = BTreeMap::from([("b", 15.0)]);
        let chart = cluster_spans(&rows, &cancelled, |_| true);
        // `suspended` holds no place on a host, so it is not drawn.
        assert_eq!(chart.spans.len(), 7);
        assert_eq!((chart.spans_in_all, chart.marks_in_all), (7, 2));
        assert_eq!(chart.names.len(), 4, "{:?}", chart.names);
        let at: Vec<(u32, f64)> = chart.marks.iter().map(|m| (m.host, m.at)).collect();
        assert_eq!(at, vec![(0, 10.0), (2, 15.0)]);
        // Hosts not drawn are counted, not put together: host 0 left out keeps host 2's
        // mark and every count.
        let chart = cluster_spans(&rows, &cancelled, |h| h != 0);
        assert_eq!((chart.spans.len(), chart.spans_in_all), (5, 7));
        assert_eq!((chart.marks.len(), chart.marks_in_all), (1, 2));
        assert_eq!(chart.names.len(), 3, "{:?}", chart.names);
        assert!(chart.spans.iter().all(|s| s.host != 0 && s.instance < 3));
    }

    /// Spans are read up to a bound (the report keeps each), the error at the first row past
    /// it; names are shared between rows, and clusters kept in the order they appear.
    #[test]
    fn spans_are_read_up_to_a_bound_with_their_names_shared() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("intervals.csv");
        let mut csv =
            String::from("request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\n");
        for (i, cluster) in ["b", "a", "b", "a", "b"].iter().enumerate() {
            let _ = writeln!(csv, "r1,{i},g,{cluster},{i},cancellable,running,{i},99");
        }
        std::fs::write(&path, csv).expect("written");
        let (clusters, end) = read_spans_up_to(&path, 5).expect("reads");
        assert_eq!(end, 99.0);
        let keys: Vec<&str> = clusters.iter().map(|((_, c), _)| c.as_str()).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(clusters[0].1.len(), 3);
        let (x, y) = (&clusters[0].1[0], &clusters[1].1[1]);
        assert!(Rc::ptr_eq(&x.request, &y.request) && Rc::ptr_eq(&x.state, &y.state));
        let Err(Error::Input(e)) = read_spans_up_to(&path, 3) else {
            panic!("read past the bound");
        };
        assert!(
            e.contains("intervals.csv:5: error: more than 3 spans"),
            "{e}"
        );
    }

    /// A cluster with more busy hosts than a chart draws: the first MAX_HOST_ROWS are drawn
    /// and the rest counted, so the page stays small (60 000 busy hosts made 1.4 GB).
    #[test]
    fn a_chart_draws_at_most_max_host_rows_busy_hosts_and_counts_the_rest() {
        let dir = tempfile::tempdir().expect("temp dir");
        let n = MAX_HOST_ROWS + 500;
        std::fs::write(
            dir.path().join("summary.json"),
            format!("{{\"topology\": \"t\", \"emulated_end_s\": 100, \"clusters\": {{\"g/c\": {{\"hosts\": {n}}}}}}}"),
        )
        .expect("written");
        let mut csv =
            String::from("request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\n");
        for h in 0..n {
            let _ = writeln!(csv, "r{h},0,g,c,{h},cancellable,running,1,99");
        }
        std::fs::write(dir.path().join("intervals.csv"), csv).expect("written");
        let page = render(dir.path(), &Options::default()).expect("renders");
        assert!(
            page.contains(&format!(
                "Only the first {MAX_HOST_ROWS} hosts that held a VM are drawn (to host {}); 500 more held one",
                MAX_HOST_ROWS - 1
            )),
            "no note"
        );
        assert!(page.contains(&format!("{n} hosts ({n} held a VM), {n} VM spans")));
        assert!(page.contains(&format!("Gantt chart of gantt g/c: {MAX_HOST_ROWS} hosts")));
    }
}
