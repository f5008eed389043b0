//! The per-request metrics and the lease log, checked from the outside: `summary.json`'s
//! `request_metrics` recomputed here from `requests.csv` by the formulas of docs/outputs.md
//! (code of its own, not igemu's), and `leases.csv` checked lease by lease against
//! `requests.csv`, `intervals.csv` and `decisions.csv` on runs that preempt, displace,
//! migrate, cancel and redirect.

mod common;
use common::igemu;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// A CSV file as rows of cells by column name.
fn rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let header: Vec<String> = reader
        .headers()
        .expect("a header")
        .iter()
        .map(String::from)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.expect("a row");
            header
                .iter()
                .cloned()
                .zip(r.iter().map(String::from))
                .collect()
        })
        .collect()
}

fn num(cell: &str) -> Option<f64> {
    (!cell.is_empty()).then(|| {
        cell.parse()
            .unwrap_or_else(|_| panic!("`{cell}` is a number"))
    })
}

/// Runs `args` (after `run`) into a new folder of `tmp` named `name`; returns the folder.
fn run(tmp: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = tmp.join(name);
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--quiet", "--out", out.to_str().expect("utf-8")]);
    let o = igemu(&all);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// The metrics of one request by the formulas: waiting time of a started request; the
/// others of a completed one.
fn formulas(r: &HashMap<String, String>, tau: f64) -> [Option<f64>; 5] {
    let (submit, start, end) = (num(&r["submit_s"]), num(&r["start_s"]), num(&r["end_s"]));
    let duration = num(&r["duration_s"]).expect("a duration");
    let wait = start.zip(submit).map(|(s, q)| s - q);
    if r["state"] != "completed" {
        return [wait, None, None, None, None];
    }
    let (submit, start, end) = (submit.unwrap(), start.unwrap(), end.unwrap());
    let turnaround = end - submit;
    let slowdown = (duration > 0.0).then(|| turnaround / duration);
    let bounded = (turnaround / duration.max(tau)).max(1.0);
    let stretch = (end > start).then(|| turnaround / (end - start));
    [wait, Some(turnaround), slowdown, Some(bounded), stretch]
}

const METRICS: [&str; 5] = [
    "wait_s",
    "turnaround_s",
    "slowdown",
    "bounded_slowdown",
    "stretch",
];

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * a.abs().max(b.abs()).max(1.0)
}

/// Mean and nearest-rank percentiles of `values`, as docs/outputs.md defines them.
fn statistics(values: &[f64]) -> BTreeMap<&'static str, f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let rank = |p: f64| v[((p / 100.0 * n as f64).ceil() as usize).max(1) - 1];
    BTreeMap::from([
        ("mean", v.iter().sum::<f64>() / n as f64),
        ("p50", rank(50.0)),
        ("p90", rank(90.0)),
        ("p99", rank(99.0)),
        ("max", v[n - 1]),
    ])
}

/// Each row's metric columns are the formulas' values (seconds to the µs, ratios to 6
/// decimals).
fn check_rows(requests: &[HashMap<String, String>], tau: f64) {
    for r in requests {
        let expected = formulas(r, tau);
        for (k, metric) in METRICS.iter().enumerate() {
            let written = num(&r[*metric]);
            match (written, expected[k]) {
                (Some(w), Some(e)) => assert!(
                    (w - e).abs() <= 1e-6 * e.abs().max(1.0),
                    "{}: {metric} {w} vs {e}",
                    r["request_id"]
                ),
                (w, e) => assert_eq!(w, e, "{}: {metric}", r["request_id"]),
            }
        }
    }
}

/// Checks `summary.json`'s `request_metrics` of the run in `dir` against the statistics of
/// `requests.csv` computed here, and each row's metric columns against the formulas.
fn check_request_metrics(dir: &Path) {
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary"))
            .expect("json");
    let m = &summary["request_metrics"];
    let tau = m["bounded_slowdown_tau_s"].as_f64().expect("τ");
    assert_eq!(m["percentiles"], "nearest-rank");
    // Requests submitted in the warm-up are in requests.csv but in no statistic.
    let warm_up = summary["warm_up_s"].as_f64().unwrap_or(0.0);
    let mut requests = rows(&dir.join("requests.csv"));
    check_rows(&requests, tau);
    requests.retain(|r| num(&r["submit_s"]).expect("submitted") >= warm_up);
    // The measured requests by group, with their metrics by the formulas.
    let mut groups: BTreeMap<String, Vec<[Option<f64>; 5]>> = BTreeMap::new();
    for r in &requests {
        let expected = formulas(r, tau);
        let (grid, origin, lease) = (&r["grid"], &r["origin"], &r["lease_type"]);
        for key in [
            "all".to_string(),
            format!("by_grid.{grid}"),
            format!("by_origin.{origin}"),
            format!("by_lease_type.{lease}"),
            format!("by_grid_origin.{grid}/{origin}"),
        ] {
            groups.entry(key).or_default().push(expected);
        }
    }
    let mut checked = 0;
    for (key, members) in &groups {
        let set = match key.split_once('.') {
            None => &m[key.as_str()],
            Some((group, name)) => &m[group][name],
        };
        assert!(set.is_object(), "summary has no {key}");
        for (k, metric) in METRICS.iter().enumerate() {
            let values: Vec<f64> = members.iter().filter_map(|x| x[k]).collect();
            let stats = &set[*metric];
            assert_eq!(
                stats["n"].as_u64(),
                Some(values.len() as u64),
                "{key}.{metric}.n"
            );
            if values.is_empty() {
                assert!(
                    stats["mean"].is_null(),
                    "{key}.{metric}: null without values"
                );
                continue;
            }
            for (figure, ours) in statistics(&values) {
                let theirs = stats[figure].as_f64().expect("a number");
                assert!(
                    close(ours, theirs, 1e-9),
                    "{key}.{metric}.{figure}: summary {theirs}, requests.csv {ours}"
                );
                checked += 1;
            }
        }
    }
    // And no group the requests do not make; one whose requests all came in the warm-up
    // measures none.
    for group in ["by_grid", "by_origin", "by_lease_type", "by_grid_origin"] {
        for (name, stats) in m[group].as_object().expect("an object") {
            let measured = groups.contains_key(&format!("{group}.{name}"));
            let empty = stats["wait_s"]["n"] == 0 && warm_up > 0.0;
            assert!(measured || empty, "{group}.{name}");
        }
    }
    assert!(checked > 0);
}

#[test]
fn request_metrics_in_the_summary_are_what_requests_csv_gives_by_the_formulas() {
    let tmp = tempfile::tempdir().expect("temp dir");
    for (name, args) in [
        (
            "p003",
            &[
                "topologies/paper003-testbed.toml",
                "--set",
                "lrms.preemption=moml",
            ][..],
        ),
        ("peering", &["topologies/peering-small.toml"][..]),
        (
            "tau",
            &[
                "topologies/peering-small.toml",
                "--set",
                "metrics.bounded_slowdown_tau_s=600",
            ][..],
        ),
        ("p000", &["topologies/paper000-three-clusters.toml"][..]),
        (
            "warm",
            &[
                "topologies/peering-small.toml",
                "--set",
                "metrics.warm_up=\"3h\"",
            ][..],
        ),
    ] {
        let dir = run(tmp.path(), name, args);
        check_request_metrics(&dir);
    }
    // τ is the one set, and it bounds: a longer τ never raises a bounded slowdown.
    let summary = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(tmp.path().join(name).join("summary.json"));
        serde_json::from_str(&text.expect("summary")).expect("json")
    };
    let (ten, long) = (summary("peering"), summary("tau"));
    let bsld =
        |s: &serde_json::Value| s["request_metrics"]["all"]["bounded_slowdown"]["mean"].as_f64();
    assert_eq!(ten["request_metrics"]["bounded_slowdown_tau_s"], 10.0);
    assert_eq!(long["request_metrics"]["bounded_slowdown_tau_s"], 600.0);
    assert!(
        bsld(&long) < bsld(&ten),
        "{:?} vs {:?}",
        bsld(&long),
        bsld(&ten)
    );
    assert_eq!(
        ten["request_metrics"]["all"]["slowdown"],
        long["request_metrics"]["all"]["slowdown"]
    );
}

/// A CSV row: cells by column name.
type Row = HashMap<String, String>;

/// What the lease log is checked against, besides `requests.csv`: each lease's spans in
/// `intervals.csv`, each decision's (local request, lease) → operation, and each request's
/// origin.
struct LeaseContext<'a> {
    spans: HashMap<&'a str, Vec<&'a Row>>,
    decided: HashMap<(String, String), String>,
    origin: HashMap<&'a str, &'a str>,
}

/// Checks the `leases.csv` of the run in `dir` against its other outputs, lease by lease;
/// returns how many rows of each event it has.
fn check_lease_log(dir: &Path) -> BTreeMap<String, usize> {
    let log = rows(&dir.join("leases.csv"));
    let requests = rows(&dir.join("requests.csv"));
    let intervals = rows(&dir.join("intervals.csv"));
    let decisions = rows(&dir.join("decisions.csv"));
    // In time order.
    let times: Vec<f64> = log
        .iter()
        .map(|r| num(&r["time_s"]).expect("a time"))
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "leases.csv out of time order"
    );
    let mut by_lease: HashMap<&str, Vec<&Row>> = HashMap::new();
    for r in &log {
        by_lease
            .entry(r["request_id"].as_str())
            .or_default()
            .push(r);
    }
    let mut context = LeaseContext {
        spans: HashMap::new(),
        decided: HashMap::new(),
        origin: (requests.iter())
            .map(|r| (r["request_id"].as_str(), r["origin"].as_str()))
            .collect(),
    };
    for s in &intervals {
        let lease = s["request_id"].as_str();
        context.spans.entry(lease).or_default().push(s);
    }
    for d in &decisions {
        for (lease, op) in d["preempted"].split(' ').zip(d["operations"].split(' ')) {
            context.decided.insert(
                (d["local_request"].clone(), lease.to_string()),
                op.to_string(),
            );
        }
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for r in &log {
        *counts.entry(r["event"].clone()).or_default() += 1;
    }
    for q in &requests {
        let events = &by_lease[q["request_id"].as_str()];
        let ends = check_lease_submission_start_and_end(q, events);
        check_lease_preemptions_and_migrations(q, events, &ends, &context);
        check_lease_hosts_and_spans(q, events, &context);
    }
    // Every lease of the log is a request.
    assert_eq!(by_lease.len(), requests.len());
    counts
}

/// The rows of `events` of kind `kind`.
fn of_kind<'a>(events: &[&'a Row], kind: &str) -> Vec<&'a Row> {
    events
        .iter()
        .copied()
        .filter(|e| e["event"] == kind)
        .collect()
}

/// A lease log row's time.
fn at(e: &Row) -> f64 {
    num(&e["time_s"]).expect("a time")
}

/// The hosts in a cell of host numbers separated by spaces.
fn hosts_of(cell: &str) -> BTreeSet<u32> {
    cell.split(' ')
        .filter(|h| !h.is_empty())
        .map(|h| h.parse().expect("a host"))
        .collect()
}

/// The lease of request `q` (its log rows `events`) is requested once, first, at its
/// submission; started once, at its first start; and ends as requests.csv has it, last.
/// Returns its end rows.
fn check_lease_submission_start_and_end<'a>(q: &Row, events: &[&'a Row]) -> Vec<&'a Row> {
    let id = q["request_id"].as_str();
    // Requested once, first, at its submission.
    assert_eq!(events[0]["event"], "requested", "{id}");
    assert_eq!(of_kind(events, "requested").len(), 1, "{id}");
    assert_eq!(num(&q["submit_s"]), Some(at(events[0])), "{id}");
    // Started once, at its first start; its end as requests.csv has it.
    let started = of_kind(events, "started");
    match num(&q["start_s"]) {
        Some(s) => {
            assert_eq!(started.len(), 1, "{id}");
            assert_eq!(at(started[0]), s, "{id}");
        }
        None => assert!(started.is_empty(), "{id}"),
    }
    let state = q["state"].as_str();
    let ends: Vec<&Row> = events
        .iter()
        .copied()
        .filter(|e| ["completed", "cancelled", "rejected"].contains(&e["event"].as_str()))
        .collect();
    if state == "unfinished" {
        assert!(ends.is_empty(), "{id}");
    } else {
        assert_eq!(ends.len(), 1, "{id}: {ends:?}");
        let end = ends[0];
        assert_eq!(end["event"], state, "{id}");
        assert_eq!(num(&q["end_s"]), Some(at(end)), "{id}");
        assert!(
            std::ptr::eq(end, *events.last().expect("rows")),
            "{id}: the end is last"
        );
        match state {
            "rejected" => assert_eq!(end["cause"], q["reason"], "{id}"),
            _ => {
                assert_eq!(end["cluster"], q["cluster"], "{id}");
                assert_eq!(end["grid"], q["served_by"], "{id}");
            }
        }
    }
    ends
}

/// The lease of request `q` has its preemptions and displacements as counted, each with its
/// local request and the operation its decision gave; a cancelled lease was last stopped by
/// what cancelled it (`ends`); migrations as its outcome says.
fn check_lease_preemptions_and_migrations(
    q: &Row,
    events: &[&Row],
    ends: &[&Row],
    context: &LeaseContext,
) {
    let id = q["request_id"].as_str();
    let preempted = of_kind(events, "preempted");
    let displaced = of_kind(events, "displaced");
    assert_eq!(preempted.len().to_string(), q["preemptions"], "{id}");
    assert_eq!(displaced.len().to_string(), q["displacements"], "{id}");
    for p in preempted.iter().chain(&displaced) {
        let local = p["cause"].as_str();
        assert_eq!(
            context.origin.get(local),
            Some(&"local"),
            "{id}: preempted for {local}"
        );
        let op = context.decided.get(&(local.to_string(), id.to_string()));
        let expected = if p["event"] == "displaced" {
            "displace"
        } else {
            p["operation"].as_str()
        };
        assert_eq!(op.map(String::as_str), Some(expected), "{id} for {local}");
    }
    if q["state"] == "cancelled" {
        let last = preempted.last().expect("a cancelled lease was preempted");
        assert_eq!(last["operation"], "stop", "{id}");
        assert_eq!(ends[0]["cause"], last["cause"], "{id}");
    }
    let migrated = of_kind(events, "migrated");
    if q["outcome"] == "completed-after-migration" {
        assert!(!migrated.is_empty(), "{id}");
    }
    if !migrated.is_empty() {
        assert!(
            ["completed-after-migration", "completed-late", "unfinished"]
                .contains(&q["outcome"].as_str()),
            "{id}: {}",
            q["outcome"]
        );
    }
}

/// The hosts the VMs of request `q` held on its last cluster are among those it started or
/// resumed on there (all of them unless a start was recalled the instant it was made); in
/// intervals.csv each start or resumption deploys VMs at its time on its hosts, and each
/// preemption's first VM leaves running when the row plans it.
fn check_lease_hosts_and_spans(q: &Row, events: &[&Row], context: &LeaseContext) {
    let id = q["request_id"].as_str();
    let runs: Vec<&Row> = events
        .iter()
        .copied()
        .filter(|e| ["started", "resumed"].contains(&e["event"].as_str()))
        .collect();
    let ran_on: BTreeSet<u32> = (runs.iter())
        .filter(|e| e["cluster"] == q["cluster"])
        .flat_map(|e| hosts_of(&e["hosts"]))
        .collect();
    let held = hosts_of(&q["hosts"]);
    assert!(
        held.is_subset(&ran_on),
        "{id}: held {held:?}, ran on {ran_on:?}"
    );
    if of_kind(events, "displaced").is_empty() {
        assert_eq!(held, ran_on, "{id}");
    }
    let lease_spans = context.spans.get(id).cloned().unwrap_or_default();
    for e in &runs {
        let t = at(e);
        let here = hosts_of(&e["hosts"]);
        assert!(
            lease_spans.iter().any(|s| num(&s["start_s"]) == Some(t)
                && s["cluster"] == e["cluster"]
                && here.contains(&s["host"].parse().expect("a host"))),
            "{id}: no span from {t} on {here:?}"
        );
    }
    for p in &of_kind(events, "preempted") {
        let from = num(&p["planned_s"]).expect("a planned time");
        assert!(
            lease_spans
                .iter()
                .any(|s| s["state"] == "running" && num(&s["end_s"]) == Some(from)),
            "{id}: no running span ends at {from}"
        );
    }
}

/// A redirected request of the run in `dir` runs in the peer it went to: its `redirected`
/// row names its Grid and the peer.
fn a_redirected_request_runs_in_the_peer_it_went_to(dir: &Path) {
    let log = rows(&dir.join("leases.csv"));
    let requests = rows(&dir.join("requests.csv"));
    for q in requests
        .iter()
        .filter(|q| !q["served_by"].is_empty() && q["served_by"] != q["grid"])
    {
        let redirect = log
            .iter()
            .find(|r| r["request_id"] == q["request_id"] && r["event"] == "redirected")
            .unwrap_or_else(|| panic!("{} has no redirected row", q["request_id"]));
        assert_eq!(
            (&redirect["grid"], &redirect["cause"]),
            (&q["grid"], &q["served_by"])
        );
    }
}

#[test]
fn the_lease_log_agrees_with_requests_intervals_and_decisions_lease_by_lease() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Suspensions (paper 003 with MOML), stops and cancellations (paper 001's testbed),
    // displacements and migrations (paper 000), redirections to peers (peering-small).
    let p003 = moml_testbed(tmp.path());
    let counts = check_lease_log(&p003);
    assert_eq!(counts["preempted"], 2);
    assert_eq!(counts["resumed"], 2);
    let p000 = run(
        tmp.path(),
        "p000",
        &["topologies/paper000-three-clusters.toml"],
    );
    let counts = check_lease_log(&p000);
    for event in ["displaced", "migrated", "cancelled", "rejected", "resumed"] {
        assert!(
            counts.get(event).is_some_and(|n| *n > 0),
            "paper 000 has no {event}: {counts:?}"
        );
    }
    let peering = run(tmp.path(), "peering", &["topologies/peering-small.toml"]);
    let counts = check_lease_log(&peering);
    assert!(
        counts.get("redirected").is_some_and(|n| *n > 0),
        "{counts:?}"
    );
    a_redirected_request_runs_in_the_peer_it_went_to(&peering);
    // Grids on threads of their own (realtime): each shard logs its Grids' leases, merged
    // in time order, as consistent as one observer's.
    let threads = run(
        tmp.path(),
        "threads",
        &[
            "topologies/peering-small.toml",
            "--mode",
            "realtime",
            "--speedup",
            "50000",
            "--threads",
            "3",
        ],
    );
    let counts = check_lease_log(&threads);
    assert!(
        counts.get("redirected").is_some_and(|n| *n > 0),
        "{counts:?}"
    );
    // The same run again writes the same log, byte for byte.
    let again = run(
        tmp.path(),
        "p000-again",
        &["topologies/paper000-three-clusters.toml"],
    );
    assert_eq!(
        std::fs::read(p000.join("leases.csv")).expect("leases"),
        std::fs::read(again.join("leases.csv")).expect("leases")
    );
}

/// `igemu report` on `dir`: its page, or its error (exit 2 expected then).
fn report(dir: &Path) -> Result<String, String> {
    let o = igemu(&["report", dir.to_str().expect("utf-8")]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    match o.status.code() {
        Some(0) => Ok(std::fs::read_to_string(dir.join("report.html")).expect("report.html")),
        Some(2) => {
            assert!(
                !dir.join("report.html").exists(),
                "a page left behind: {err}"
            );
            Err(err)
        }
        other => panic!("exit {other:?}: {err}"),
    }
}

/// Paper 003's testbed under MOML (preemptions, so every lease event), run into `tmp/p003`.
fn moml_testbed(tmp: &std::path::Path) -> std::path::PathBuf {
    run(
        tmp,
        "p003",
        &[
            "topologies/paper003-testbed.toml",
            "--set",
            "lrms.preemption=moml",
        ],
    )
}

#[test]
fn a_runs_page_shows_request_metrics_and_links_each_gantt_bar_to_its_leases_events() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = moml_testbed(tmp.path());
    let html = report(&dir).expect("a page");
    for says in [
        "<h3 id=\"request-metrics\">Request metrics</h3>",
        "<h4>Bounded slowdown</h4>",
        "<h4>Waiting time (s)</h4>",
        "<th>mean (s)</th>",
        "<td>lease type suspendable</td>",
        "with τ = 10 s",
        "<h2 id=\"leases\">Lease events</h2>",
        "<a href=\"#leases\">Lease events</a>",
    ] {
        assert!(html.contains(says), "no `{says}`");
    }
    each_bar_links_to_its_leases_table(&html);
    an_older_runs_outputs_still_report(&dir);
}

/// Every bar of the page `html` links to its lease's table, each link's target is on the
/// page, and the leases a preemption touched come first.
fn each_bar_links_to_its_leases_table(html: &str) {
    let links: BTreeSet<&str> = html
        .match_indices("<a href=\"#lease-")
        .map(|(at, _)| {
            let rest = &html[at + "<a href=\"#".len()..];
            &rest[..rest.find('"').expect("a quote")]
        })
        .collect();
    assert_eq!(
        links.len(),
        7,
        "a table for each of the 7 leases: {links:?}"
    );
    for link in &links {
        assert!(
            html.contains(&format!("<h4 id=\"{link}\">Lease ")),
            "{link}"
        );
    }
    // Bars are classed by how they are drawn (booting, running, operation) and lease type.
    let mut bars = 0;
    for class in ["b", "r", "o"] {
        for lease_type in 0..4 {
            let bar = format!("<rect class=\"{class}{lease_type}\"");
            bars += html.matches(&bar).count();
            let linked = format!("\">{bar}");
            assert_eq!(
                html.matches(&bar).count(),
                html.matches(&linked).count(),
                "{bar}"
            );
        }
    }
    assert!(bars > 0);
    let first = html.find("<h4 id=\"lease-0\">Lease ").expect("lease-0");
    assert!(html[first..].starts_with("<h4 id=\"lease-0\">Lease 1</h4>"));
    let five = &html[html.find("<h4 id=\"lease-4\">").expect("lease-4")..];
    let five = &five[..five.find("</table>").expect("its table")];
    for cell in [
        "<td>preempted</td>",
        "<td>7</td>",
        "<td>suspend</td>",
        "<td>resumed</td>",
    ] {
        assert!(five.contains(cell), "lease 5's table has no {cell}: {five}");
    }
}

/// An older run's outputs in `dir` (no leases.csv, no metric columns or key) still report,
/// the sections saying what is missing and the bars linking nowhere.
fn an_older_runs_outputs_still_report(dir: &Path) {
    std::fs::remove_file(dir.join("leases.csv")).expect("removed");
    let requests = std::fs::read_to_string(dir.join("requests.csv")).expect("requests");
    let old: String = requests
        .lines()
        .map(|l| l.split(',').take(20).collect::<Vec<_>>().join(",") + "\n")
        .collect();
    std::fs::write(dir.join("requests.csv"), old).expect("written");
    let summary_path = dir.join("summary.json");
    let text = std::fs::read_to_string(&summary_path).expect("summary");
    let mut summary: serde_json::Value = serde_json::from_str(&text).expect("json");
    summary
        .as_object_mut()
        .expect("an object")
        .remove("request_metrics");
    std::fs::write(&summary_path, summary.to_string()).expect("written");
    let html = report(dir).expect("an older run's page");
    assert!(html.contains("has no <code>request_metrics</code>"));
    // Without leases.csv the lease-events section, having nothing, is left out.
    assert!(!html.contains("<h2 id=\"leases\""));
    assert!(!html.contains("<a href=\"#lease-"));
    assert!(html.contains("<rect class=\"r"), "the Gantt chart is drawn");
}

/// A `leases.csv` or metrics igemu never writes, or of another run, is refused at its
/// place (exit 2) and no page is written.
#[test]
fn a_lease_log_or_metrics_igemu_never_writes_are_refused_at_their_place() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = moml_testbed(tmp.path());
    let file = |n: &str| dir.join(n);
    let keep: Vec<(&str, String)> = ["leases.csv", "requests.csv", "summary.json"]
        .into_iter()
        .map(|n| (n, std::fs::read_to_string(file(n)).expect("readable")))
        .collect();
    let restore = || {
        for (n, text) in &keep {
            std::fs::write(file(n), text).expect("written");
        }
    };
    let edit = |name: &str, line: usize, from: &str, to: &str| {
        let text = std::fs::read_to_string(file(name)).expect("readable");
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        assert!(lines[line - 1].contains(from), "{}", lines[line - 1]);
        lines[line - 1] = lines[line - 1].replacen(from, to, 1);
        std::fs::write(file(name), lines.join("\n") + "\n").expect("written");
    };
    let leases = &keep[0].1;
    let lines: Vec<&str> = leases.lines().collect();
    let completed = lines
        .iter()
        .position(|l| l.contains(",completed,"))
        .expect("a completed row");
    let cases: [(&dyn Fn(), &[&str]); 7] = [
        (&|| edit("leases.csv", 3, ",accepted,", ",exploded,"), &["leases.csv:3: error: `event` is `exploded`; igemu writes one of requested, redirected"]),
        (&|| edit("leases.csv", 4, "0,1,", "9999,1,"), &["leases.csv:5: error: `time_s` is 0, before the row above (9999)"]),
        (&|| edit("leases.csv", 4, ",0,", ",zero,"), &["leases.csv:4: error: `hosts` holds `zero`, not a host number"]),
        (
            &|| {
                let cut: Vec<&str> = (lines.iter().enumerate())
                    .filter(|(i, _)| *i != completed)
                    .map(|(_, l)| *l)
                    .collect();
                std::fs::write(file("leases.csv"), cut.join("\n") + "\n").expect("written");
            },
            &["leases.csv: error: it holds 6 `completed` rows, but", "`requests.*.completed` counts 7; the two files are not of one run"],
        ),
        (&|| edit("requests.csv", 2, ",0,3600,1,1,1", ",0,3600,,1,1"), &["requests.csv: error: it holds 6 requests with a slowdown, but", "`request_metrics.all.slowdown.n` is 7"]),
        (&|| edit("requests.csv", 2, ",0,3600,1,1,1", ",0,3600,-1,1,1"), &["requests.csv:2: error: `slowdown` is -1; it is a finite amount ≥ 0"]),
        (
            &|| {
                let mut s: serde_json::Value = serde_json::from_str(&keep[2].1).expect("json");
                s["request_metrics"]["by_origin"]["external"]["stretch"]["p50"] = 9.0.into();
                std::fs::write(file("summary.json"), s.to_string()).expect("written");
            },
            &["`request_metrics.by_origin.external.stretch.p90` is 1 (a number), below the one before; the report expects percentiles in order"],
        ),
    ];
    for (break_it, says) in cases {
        break_it();
        let err = report(&dir).expect_err("refused");
        for s in says {
            assert!(err.contains(s), "expected `{s}` in: {err}");
        }
        restore();
    }
    report(&dir).expect("the run's own files report");
}

/// Σ size × response over Σ size (paper 004 eq. 5) of the completed requests of `grid` and
/// `origin` in `requests`, size = VMs × requested duration (one core per VM here).
fn awrt(requests: &[HashMap<String, String>], grid: &str, origin: &str, from: f64) -> f64 {
    let (mut w, mut s) = (0.0, 0.0);
    for r in requests {
        let submit = num(&r["submit_s"]).expect("submitted");
        if r["grid"] != grid || r["origin"] != origin || r["state"] != "completed" || submit < from
        {
            continue;
        }
        let size = num(&r["vms"]).expect("vms") * num(&r["duration_s"]).expect("duration");
        w += size * (num(&r["end_s"]).expect("ended") - submit);
        s += size;
    }
    // None to measure: the summary writes 0.
    if s > 0.0 {
        w / s
    } else {
        0.0
    }
}

#[test]
fn a_warm_up_leaves_its_requests_out_of_the_figures_and_changes_nothing_that_runs() {
    // Paper 004 §6.1 disregards its runs' first two weeks: `metrics.warm_up`.
    let tmp = tempfile::tempdir().expect("temp dir");
    let whole = run(tmp.path(), "whole", &["topologies/peering-small.toml"]);
    let set = [
        "topologies/peering-small.toml",
        "--set",
        "metrics.warm_up=\"3h\"",
    ];
    let warm = run(tmp.path(), "warm", &set);
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).expect("an output");
    // The same run: every request and decision as without the warm-up.
    for f in ["requests.csv", "decisions.csv"] {
        assert_eq!(read(&whole, f), read(&warm, f), "{f}");
    }
    let json = |d: &Path| -> serde_json::Value {
        serde_json::from_str(&read(d, "summary.json")).expect("json")
    };
    let (a, b) = (json(&whole), json(&warm));
    assert!(a.get("warm_up_s").is_none());
    assert_eq!(b["warm_up_s"], 10800.0);
    assert_eq!(a["requests"], b["requests"]);
    assert_eq!(
        a["metrics"]["utilization_pct"],
        b["metrics"]["utilization_pct"]
    );
    // Each Grid's AWRTs are those of the requests submitted from 3 h on.
    let requests = rows(&warm.join("requests.csv"));
    let mut moved = 0;
    for (grid, figures) in b["grids"].as_object().expect("grids") {
        for (origin, key) in [("external", "awrt_grid_s"), ("local", "awrt_local_s")] {
            let ours = awrt(&requests, grid, origin, 10800.0);
            let theirs = figures[key].as_f64().expect("a number");
            assert!(
                close(ours, theirs, 1e-9),
                "{grid}.{key}: {theirs} vs {ours}"
            );
            let before = a["grids"][grid][key].as_f64().expect("a number");
            assert!(close(awrt(&requests, grid, origin, 0.0), before, 1e-9));
            moved += usize::from(!close(before, theirs, 1e-6));
        }
    }
    assert!(moved > 0, "the warm-up changed no AWRT");
    // The report reads the run whole: its check of requests.csv against the summary's
    // request_metrics counts the rows from the warm-up on.
    let page = report(&warm).expect("a warm-up run reports");
    assert!(page.contains("warm-up left out of the request figures"));
}

#[test]
fn a_sweep_names_request_metrics_whatever_the_warm_up_leaves_out() {
    // Metric names come from the topology before any run: a group every request of which
    // came in the warm-up is still named, and its figures are empty cells (n = 0).
    let tmp = tempfile::tempdir().expect("temp dir");
    let sweep = common::sweep_file(
        tmp.path(),
        "topologies/peering-small.toml",
        "seeds = 1\nmetrics = [\"request_metrics.by_grid.busy.wait_s.mean\"]\n\
         [set]\n\"metrics.warm_up\" = \"30d\"\n",
    );
    let out = tmp.path().join("out");
    let o = common::sweep(&sweep, &out, &["--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = rows(&out.join("runs.csv"));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["request_metrics.by_grid.busy.wait_s.mean"], "");
}
