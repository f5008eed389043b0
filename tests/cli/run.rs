//! `igemu run`: its outputs, written deterministically, every printed count derived from them,
//! progress, provenance and interruptions.

use super::*;

/// The README's commands, run in order, never meet each other's outputs: each output folder
/// (`--out` of run, replay, sweep and stress; `./out` when a run gives none) belongs to one
/// command, or a run into a folder of another's would be refused (exit 2, "holds another run's
/// outputs"), as `--record ... --out out/live` and a later `--serve ... --out out/live` of
/// another topology were.
#[test]
fn the_readme_commands_give_each_its_own_output_folder() {
    let readme = std::fs::read_to_string(common::path("README.md")).expect("README.md");
    let mut owner: std::collections::BTreeMap<String, String> = Default::default();
    let mut clashes = Vec::new();
    let mut seen = 0;
    for line in readme.lines() {
        let Some(command) = line.trim().strip_prefix("cargo run --release -- ") else {
            continue;
        };
        // A comment after the command is no part of it.
        let command = command.split(" # ").next().unwrap_or(command).trim();
        let words: Vec<&str> = command.split_whitespace().collect();
        let folder = match words.first() {
            Some(&"run" | &"replay" | &"sweep" | &"stress") => {
                match words.iter().position(|w| *w == "--out") {
                    Some(i) => words
                        .get(i + 1)
                        .map(|w| w.trim_end_matches('/').to_string()),
                    None if words[0] == "run" => Some("out".to_string()),
                    None => None,
                }
            }
            _ => None,
        };
        let Some(folder) = folder else { continue };
        seen += 1;
        match owner.get(&folder) {
            Some(first) if first != command => {
                clashes.push(format!("{folder}: `{first}` and `{command}`"));
            }
            Some(_) => {}
            None => {
                owner.insert(folder, command.to_string());
            }
        }
    }
    assert!(
        seen >= 15,
        "only {seen} README commands with an output folder"
    );
    assert!(clashes.is_empty(), "{}", clashes.join("\n"));
}

pub(super) fn without_wall_clock(summary: &str) -> String {
    summary
        .lines()
        .filter(|l| !l.trim_start().starts_with("\"wall_s\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn run_writes_outputs_and_two_processes_agree_byte_for_byte() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dirs: Vec<PathBuf> = (0..2).map(|i| tmp.path().join(format!("run{i}"))).collect();
    for d in &dirs {
        let out = igemu(&[
            "run",
            "--trace",
            "--seed",
            "7",
            "--out",
            d.to_str().expect("utf-8"),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("quickstart (virtual mode, seed 7)"),
            "{stdout}"
        );
    }
    for name in ["requests.csv", "trace.jsonl"] {
        let a = std::fs::read(dirs[0].join(name)).expect("written");
        let b = std::fs::read(dirs[1].join(name)).expect("written");
        assert!(!a.is_empty(), "{name} is empty");
        assert!(a == b, "{name} differs between two identical runs");
    }
    let sa = std::fs::read_to_string(dirs[0].join("summary.json")).expect("written");
    let sb = std::fs::read_to_string(dirs[1].join("summary.json")).expect("written");
    assert_eq!(without_wall_clock(&sa), without_wall_clock(&sb));
    let summary: serde_json::Value = serde_json::from_str(&sa).expect("summary is JSON");
    assert_eq!(summary["seed"], 7);
    assert_eq!(summary["mode"], "virtual");
}

#[test]
fn a_runs_summary_says_what_was_run_and_under_which_policies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().to_str().expect("utf-8");
    let file = "topologies/peering-small.toml";
    let o = igemu(&["run", file, "--set", "igg.provider=cbm", "--out", out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("summary.json")).expect("summary");
    let s: serde_json::Value = serde_json::from_str(&text).expect("json");
    let p = &s["provenance"];
    assert_eq!(p["igemu"], env!("CARGO_PKG_VERSION"));
    assert_eq!(p["topology_path"], file);
    assert_eq!(p["overrides"][0], "igg.provider=cbm");
    assert_eq!(p["topology_hash"].as_str().map(str::len), Some(16));
    assert_eq!(s["policies"]["grid:busy"], "dispatch rr, provider cbm");
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.contains("provider cbm"), "{printed}");
    // The same run again replaces its outputs; another run is refused unless told to
    // overwrite (then the old outputs are gone: a different file gives a different hash).
    let again = igemu(&["run", file, "--set", "igg.provider=cbm", "--out", out]);
    assert!(again.status.success(), "{}", stderr(&again));
    let refused = igemu(&["run", "topologies/quickstart.toml", "--out", out]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("--overwrite"),
        "{}",
        stderr(&refused)
    );
    std::fs::write(dir.path().join("notes.txt"), "mine").expect("written");
    let other = igemu(&[
        "run",
        "topologies/quickstart.toml",
        "--out",
        out,
        "--overwrite",
    ]);
    assert!(other.status.success(), "{}", stderr(&other));
    assert!(
        dir.path().join("notes.txt").exists(),
        "only a run's own files are removed"
    );
    assert!(!dir.path().join("trace.jsonl").exists());
    let text = std::fs::read_to_string(dir.path().join("summary.json")).expect("summary");
    let s2: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_ne!(s2["provenance"]["topology_hash"], p["topology_hash"]);
}

/// The integers of `text` by the word before each (`rejected 18` → ("rejected", 18)), with
/// `(`, `)`, `,`, `;` and `:` taken as spaces; a word given twice keeps its first number.
pub(super) fn counts_by_word(text: &str) -> std::collections::BTreeMap<String, u64> {
    let spaced: String = text
        .chars()
        .map(|c| if "(),;:".contains(c) { ' ' } else { c })
        .collect();
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let mut out = std::collections::BTreeMap::new();
    for pair in words.windows(2) {
        if let Ok(n) = pair[1].parse::<u64>() {
            out.entry(pair[0].to_string()).or_insert(n);
        }
    }
    out
}

/// The cells of each row of the first `<table>` after `marker` in a report page, tags and
/// the figure's gloss (`576.5 (9.6 min)` → `576.5`) left out.
pub(super) fn html_rows(page: &str, marker: &str) -> Vec<Vec<String>> {
    let from = page
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in the report"));
    let rest = &page[from..];
    let table = &rest[rest.find("<table>").expect("a table")..];
    let table = &table[..table.find("</table>").expect("the table's end")];
    table
        .split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = &cell[cell.find('>').expect("a tag's end") + 1..];
                    let text = &text[..text.find("</td>").unwrap_or(text.len())];
                    text.split(" (").next().unwrap_or_default().to_string()
                })
                .collect()
        })
        .filter(|cells: &Vec<String>| !cells.is_empty())
        .collect()
}

/// A CSV's rows, each a map from column to cell.
type Rows = Vec<std::collections::BTreeMap<String, String>>;

/// The outputs of one traced, reported `igemu run`: what it printed, its CSVs (with the
/// negotiations CSV `igemu trace --negotiations` makes), `summary.json` and the report.
struct RunOutputs {
    printed: String,
    requests: Rows,
    decisions: Rows,
    intervals: Rows,
    negotiations: Rows,
    summary: serde_json::Value,
    page: String,
}

impl RunOutputs {
    /// The printed line starting `start`.
    fn line(&self, start: &str) -> String {
        self.printed
            .lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("a line starting `{start}` in:\n{}", self.printed))
            .to_string()
    }

    /// The figure under `key` in the report's figures table (which names each figure for a
    /// person, its key in the name's tooltip).
    fn figure(&self, key: &str) -> u64 {
        let figures_html = self
            .page
            .split("id=\"figures\"")
            .nth(1)
            .expect("a figures section");
        let figures_html = figures_html.split("<h2").next().unwrap_or_default();
        let figures: std::collections::BTreeMap<String, String> =
            (figures_html.split("<tr><td title=\"").skip(1))
                .filter_map(|row| {
                    let (key, rest) = row.split_once('"')?;
                    let value = rest
                        .split("<td class=\"n\">")
                        .nth(1)?
                        .split("</td>")
                        .next()?;
                    Some((key.to_string(), value.to_string()))
                })
                .collect();
        figures[key]
            .parse()
            .unwrap_or_else(|_| panic!("{key}: {}", figures[key]))
    }

    /// The count of Grid number `g` under `negotiations.{key}` in the report's per-Grid
    /// peering table (a row per figure, its key in the name's tooltip).
    fn reported_negotiations(&self, key: &str, g: usize) -> u64 {
        let peering = self
            .page
            .split("id=\"peering\"")
            .nth(1)
            .expect("a peering section");
        let row = peering
            .split(&format!("<td title=\"negotiations.{key}\">"))
            .nth(1)
            .unwrap_or_else(|| panic!("negotiations.{key} in the report"));
        let row = row.split("</tr>").next().unwrap_or_default();
        let cell = row
            .split("<td class=\"n\">")
            .nth(1 + g)
            .expect("a cell per Grid");
        cell.split("</td>")
            .next()
            .unwrap_or_default()
            .parse()
            .expect("a count")
    }

    /// The negotiations CSV's rows of requester `grid` whose `column` holds `value`.
    fn rows_where(&self, grid: &str, column: &str, value: &str) -> u64 {
        self.negotiations
            .iter()
            .filter(|r| r["requester"] == grid && r[column] == value)
            .count() as u64
    }
}

/// A CSV's rows as maps from column to cell.
fn read_rows(name: &Path) -> Rows {
    let mut r = csv::Reader::from_path(name).expect("a CSV");
    let header = r.headers().expect("a header").clone();
    r.records()
        .map(|row| {
            let row = row.expect("a row");
            header
                .iter()
                .map(String::from)
                .zip(row.iter().map(String::from))
                .collect()
        })
        .collect()
}

/// Runs `topology` with `seed`, a trace and a report into `dir`, makes the negotiations CSV
/// from its trace, and reads every output back.
fn run_and_read_outputs(dir: &Path, topology: &str, seed: &str) -> RunOutputs {
    let o = igemu(&[
        "run",
        topology,
        "--seed",
        seed,
        "--trace",
        "--report",
        "--out",
        s(dir),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let negotiations_csv = dir.join("negotiations.csv");
    let n = igemu(&[
        "trace",
        s(&dir.join("trace.jsonl")),
        "--negotiations",
        "--out",
        s(&negotiations_csv),
    ]);
    assert!(n.status.success(), "{}", stderr(&n));
    RunOutputs {
        printed: String::from_utf8_lossy(&o.stdout).into_owned(),
        requests: read_rows(&dir.join("requests.csv")),
        decisions: read_rows(&dir.join("decisions.csv")),
        intervals: read_rows(&dir.join("intervals.csv")),
        negotiations: read_rows(&negotiations_csv),
        summary: serde_json::from_str(
            &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
        )
        .expect("JSON"),
        page: std::fs::read_to_string(dir.join("report.html")).expect("report.html"),
    }
}

/// Issue 39, "one set of counts": every count `igemu run` prints is derived here from the
/// CSVs alone — `requests.csv`, `decisions.csv`, `intervals.csv` and the negotiations CSV —
/// and found the same in the printed lines, in `summary.json` (under the key of the same
/// name) and in the report. Seed 27 of the small peering topology has every kind: rejections,
/// cancellations, running leases preempted, reservations displaced, every negotiation
/// outcome, and requests redirected to a peer that the peer's clusters then rejected.
#[test]
fn every_printed_count_is_derived_from_the_csvs_and_the_same_in_summary_and_report() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Seed 27: a run with every answer and a request rejected after redirect (providers
    // check their slots before they promise, so such requests are rare: docs/outputs.md).
    let run = run_and_read_outputs(tmp.path(), "topologies/peering-small.toml", "27");
    requests_by_origin_and_state_are_the_same_everywhere(&run);
    let (preempted, displaced) = preemptions_are_the_same_everywhere(&run);
    vms_preempted_in_intervals_are_those_in_decisions(&run, preempted.1);
    overhead_is_the_csvs_sum(&run);
    assert!(preempted.0 > 0 && displaced.0 > 0, "the run has both");
    let cancelled = run.requests.iter().any(|r| r["state"] == "cancelled");
    assert!(cancelled, "and cancellations");
    let totals = each_grids_negotiations_are_the_same_everywhere(&run);
    rejected_after_redirect_are_the_same_requests_in_both_csvs(&run);
    printed_negotiations_are_the_grids_sums(&run, &totals);
}

/// Requests by origin and state: printed, summary.json's `requests`, the report's table.
fn requests_by_origin_and_state_are_the_same_everywhere(run: &RunOutputs) {
    let report_requests = html_rows(&run.page, "id=\"requests\"");
    for origin in ["local", "external"] {
        let printed = counts_by_word(&run.line(origin));
        for (k, state) in ["completed", "rejected", "cancelled", "unfinished"]
            .iter()
            .enumerate()
        {
            let derived = run
                .requests
                .iter()
                .filter(|r| r["origin"] == origin && r["state"] == *state)
                .count() as u64;
            let reported: u64 = report_requests
                .iter()
                .filter(|row| row[0] == origin)
                .map(|row| row[2 + k].parse::<u64>().expect("a count"))
                .sum();
            assert_eq!(printed[*state], derived, "{origin} {state}");
            assert_eq!(
                run.summary["requests"][origin][*state], derived,
                "{origin} {state}"
            );
            assert_eq!(reported, derived, "report: {origin} {state}");
        }
    }
}

/// `cell` of row `r` as a count.
fn num(r: &std::collections::BTreeMap<String, String>, k: &str) -> u64 {
    r[k].parse().expect(k)
}

/// The printed `decisions` line's parts: each part's first word and the counts after it.
fn decision_parts(run: &RunOutputs) -> std::collections::BTreeMap<String, Vec<u64>> {
    run.line("decisions")
        .split(", ")
        .map(|part| {
            let mut words = part.split_whitespace();
            let name = words.next().expect("a name").to_string();
            (name, words.filter_map(|w| w.parse().ok()).collect())
        })
        .collect()
}

/// Preemption decisions, leases and VMs: decisions.csv's operations on requests.csv's
/// leases; each key counts one kind, as requests.csv's `preemptions` and `displacements`;
/// the same printed, in summary.json and in the report. Returns the (leases, VMs) preempted
/// and displaced.
fn preemptions_are_the_same_everywhere(run: &RunOutputs) -> ((u64, u64), (u64, u64)) {
    let vms: std::collections::BTreeMap<&str, u64> = run
        .requests
        .iter()
        .map(|r| (r["request_id"].as_str(), num(r, "vms")))
        .collect();
    let (mut preempted, mut displaced) = ((0u64, 0u64), (0u64, 0u64));
    for d in &run.decisions {
        let ops = d["operations"].split_whitespace();
        for (lease, op) in d["preempted"].split_whitespace().zip(ops) {
            let count = match op {
                "stop" | "suspend" | "migrate" => &mut preempted,
                "displace" => &mut displaced,
                _ => continue,
            };
            count.0 += 1;
            count.1 += vms[lease];
        }
    }
    let column = |k: &str| run.requests.iter().map(|r| num(r, k)).sum::<u64>();
    assert_eq!(column("preemptions"), preempted.0);
    assert_eq!(column("displacements"), displaced.0);
    let parts = decision_parts(run);
    let derived = [
        ("decisions", "decisions", vec![run.decisions.len() as u64]),
        (
            "preemptions",
            "lease_preemptions",
            vec![preempted.0, preempted.1],
        ),
        (
            "displacements",
            "lease_displacements",
            vec![displaced.0, displaced.1],
        ),
    ];
    for (word, key, want) in derived {
        assert_eq!(parts[word], want, "printed {word}");
        assert_eq!(run.summary[key], want[0], "{key}");
        assert_eq!(run.figure(key), want[0], "report: {key}");
    }
    for (key, want) in [
        ("vm_preemptions", preempted.1),
        ("vm_displacements", displaced.1),
    ] {
        assert_eq!(run.summary[key], want, "{key}");
        assert_eq!(run.figure(key), want, "report: {key}");
    }
    // The report's Gantt headings count the VMs preempted on each cluster.
    let marked: u64 = run
        .page
        .split(" VMs preempted</h3>")
        .map(|h| h.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()))
        .take_while(Option::is_some)
        .flatten()
        .sum();
    assert_eq!(marked, preempted.1, "report: the hosts' headings");
    (preempted, displaced)
}

/// The VMs preempted, from intervals.csv alone: a running span followed at once on its host
/// by an operation (pause, suspension, migration), or running until its lease was
/// cancelled — as many as decisions.csv's (`from_decisions`).
fn vms_preempted_in_intervals_are_those_in_decisions(run: &RunOutputs, from_decisions: u64) {
    use std::collections::BTreeMap;
    // Each VM instance's spans (start, end, state), by (request, VM, host).
    type Spans = Vec<(f64, f64, String)>;
    let mut spans: BTreeMap<[String; 3], Spans> = BTreeMap::new();
    for i in &run.intervals {
        let key = [i["request_id"].clone(), i["vm"].clone(), i["host"].clone()];
        let t = |k: &str| i[k].parse::<f64>().expect(k);
        spans
            .entry(key)
            .or_default()
            .push((t("start_s"), t("end_s"), i["state"].clone()));
    }
    let cancelled_at: BTreeMap<&str, f64> = run
        .requests
        .iter()
        .filter(|r| r["state"] == "cancelled")
        .map(|r| (r["request_id"].as_str(), r["end_s"].parse().expect("end_s")))
        .collect();
    let mut vm_preempted = 0u64;
    for ([request, ..], list) in &mut spans {
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in list.windows(2) {
            let operated = ["paused", "suspending", "migrating"].contains(&w[1].2.as_str());
            vm_preempted += u64::from(w[0].2 == "running" && operated && w[0].1 == w[1].0);
        }
        let last = list.last().expect("a span");
        let stopped = cancelled_at
            .get(request.as_str())
            .is_some_and(|at| last.1 == *at);
        vm_preempted += u64::from(last.2 == "running" && stopped);
    }
    assert_eq!(
        vm_preempted, from_decisions,
        "VMs preempted: intervals.csv and decisions.csv"
    );
}

/// The printed overhead is requests.csv's `overhead_s` plus decisions.csv's `reschedule_s`.
fn overhead_is_the_csvs_sum(run: &RunOutputs) {
    let overhead: f64 = run
        .requests
        .iter()
        .map(|r| r["overhead_s"].parse::<f64>().expect("overhead"))
        .sum::<f64>()
        + run
            .decisions
            .iter()
            .map(|d| d["reschedule_s"].parse::<f64>().expect("reschedule"))
            .sum::<f64>();
    assert!(
        decision_parts(run).contains_key("overhead"),
        "{}",
        run.printed
    );
    assert!(
        run.line("decisions")
            .contains(&format!("overhead {overhead:.1} s")),
        "{overhead} in {}",
        run.printed
    );
}

/// Whether a requests.csv row was rejected after redirect.
fn after_redirect(r: &&std::collections::BTreeMap<String, String>) -> bool {
    r["outcome"] == "rejected-after-redirect"
}

/// Negotiations: the negotiations CSV's rows by requester, and the requests redirected as
/// requests.csv has them, against each Grid's summary counters and the report's peering
/// table. Sound links: no offer is resent, so each negotiation is one offer message.
/// Returns the counters summed over the Grids.
fn each_grids_negotiations_are_the_same_everywhere(
    run: &RunOutputs,
) -> std::collections::BTreeMap<&'static str, u64> {
    use std::collections::{BTreeMap, BTreeSet};
    let grids: Vec<String> = run.summary["grids"]
        .as_object()
        .expect("grids")
        .keys()
        .cloned()
        .collect();
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for (g, grid) in grids.iter().enumerate() {
        let offers: BTreeSet<&str> = run
            .negotiations
            .iter()
            .filter(|r| r["requester"] == *grid)
            .map(|r| r["negotiation"].as_str())
            .collect();
        let of_grid = run.requests.iter().filter(|r| r["grid"] == *grid);
        let taken = of_grid
            .clone()
            .filter(|r| !r["served_by"].is_empty() && r["served_by"] != *grid)
            .count() as u64;
        let rejected_there = of_grid.filter(after_redirect).count() as u64;
        let rows_where = |column: &str, value: &str| run.rows_where(grid, column, value);
        let derived = [
            ("offers", offers.len() as u64),
            ("timeouts", 0),
            ("accepted", rows_where("outcome", "accepted")),
            ("countered_taken", rows_where("outcome", "countered-taken")),
            (
                "countered_declined",
                rows_where("outcome", "countered-declined"),
            ),
            ("rejected", rows_where("outcome", "rejected")),
            ("redirected", rows_where("redirect", "redirected")),
            (
                "rejected_after_redirect",
                rows_where("at_provider", "rejected"),
            ),
        ];
        for (key, want) in derived {
            let counted = &run.summary["grids"][grid]["negotiations"][key];
            assert_eq!(counted, want, "{grid}: negotiations.{key}");
            let reported = run.reported_negotiations(key, g);
            assert_eq!(reported, want, "report: {grid} negotiations.{key}");
            *totals.entry(key).or_default() += want;
        }
        // requests.csv: redirected = started by a peer + rejected after redirect.
        let redirected = rows_where("redirect", "redirected");
        assert_eq!(taken + rejected_there, redirected, "{grid}");
        let at_provider = rows_where("at_provider", "rejected");
        assert_eq!(rejected_there, at_provider, "{grid}");
    }
    totals
}

/// The same requests: rejected after redirect in requests.csv (with the peer's clusters'
/// reason) and in the negotiations CSV.
fn rejected_after_redirect_are_the_same_requests_in_both_csvs(run: &RunOutputs) {
    use std::collections::BTreeSet;
    let rejected_there: BTreeSet<&str> = run
        .requests
        .iter()
        .filter(after_redirect)
        .inspect(|r| assert!(r["state"] == "rejected" && !r["reason"].is_empty(), "{r:?}"))
        .map(|r| r["request_id"].as_str())
        .collect();
    let reported_rejected: BTreeSet<&str> = run
        .negotiations
        .iter()
        .filter(|r| r["at_provider"] == "rejected")
        .map(|r| r["request"].as_str())
        .collect();
    assert_eq!(rejected_there, reported_rejected);
    assert!(
        !rejected_there.is_empty(),
        "the run has requests rejected after redirect"
    );
}

/// The printed negotiations line and the report's heading are the Grids' counters summed
/// (`totals`), and the run has every answer.
fn printed_negotiations_are_the_grids_sums(
    run: &RunOutputs,
    totals: &std::collections::BTreeMap<&str, u64>,
) {
    let printed_negotiations = counts_by_word(&run.line("negotiations:"));
    for (word, key) in [
        ("offers", "offers"),
        ("timeouts", "timeouts"),
        ("accepted", "accepted"),
        ("countered-taken", "countered_taken"),
        ("countered-declined", "countered_declined"),
        ("rejected", "rejected"),
        ("redirected", "redirected"),
        ("redirect", "rejected_after_redirect"),
    ] {
        assert_eq!(printed_negotiations[word], totals[key], "printed {word}");
    }
    assert!(run.line("negotiations:").contains(&format!(
        "(rejected after redirect {})",
        totals["rejected_after_redirect"]
    )));
    for key in [
        "accepted",
        "countered_taken",
        "countered_declined",
        "rejected",
    ] {
        assert!(totals[key] > 0, "the run has every answer: {totals:?}");
    }
    // The report's heading counts what the Grids' `redirected` do, and says how many of them
    // were rejected after redirect.
    assert!(
        run.page.contains(&format!(
            "<h3>Redirected requests ({})</h3>",
            totals["redirected"]
        )),
        "the report's heading"
    );
    assert!(run.page.contains(&format!(
        "{} started by the peer, {} rejected after redirect",
        totals["redirected"] - totals["rejected_after_redirect"],
        totals["rejected_after_redirect"]
    )));
}

#[test]
fn logging_to_a_pipe_has_no_colour_codes() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args(["run", "--out", &tmp_str(&tmp, "o")])
        .env("RUST_LOG", "debug")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("DEBUG"), "debug logging is on: {err}");
    assert!(!err.contains('\x1b'), "colour codes in piped logs");
}

/// Quickstart ended at 4 h: at 4000× it takes 3.6 wall seconds, past the two seconds before
/// progress shows.
#[test]
fn a_long_run_shows_plain_progress_lines_on_a_pipe_and_none_with_quiet() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let o = tmp_str(&tmp, "o");
    let args = [
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "4000",
        "--set",
        "emulation.end=4h",
        "--out",
        &o,
    ];
    let out = igemu(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("run: emulated"))
        .collect();
    assert!(!progress.is_empty(), "no progress line in {err:?}");
    assert!(
        // The end is the topology's own: known, so the time left is (end - now) / speed-up.
        progress[0].contains(" h of 4.0 h, ")
            && progress[0].contains("s elapsed, ~")
            && progress[0].ends_with(" left"),
        "{err:?}"
    );
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");

    let mut quiet = args.to_vec();
    quiet.push("--quiet");
    let out = igemu(&quiet);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("run: emulated"), "{}", stderr(&out));
    let out = igemu(&ONE_QUIET_STRESS);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "stress --quiet shows no progress");
}

/// The git commit (and whether the build's files differed from it) is in `igemu --version`,
/// `summary.json`, `sweep.json` and both reports: what makes a figure reproducible.
#[test]
fn every_output_names_the_build_that_made_it() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "HEAD"]) else {
        eprintln!("not a git checkout: the build records no commit");
        return;
    };
    let short = &head[..12];
    let version = igemu(&["--version"]);
    assert!(String::from_utf8_lossy(&version.stdout).contains(short));
    let dir = tempfile::tempdir().expect("temp dir");
    let run = dir.path().join("run");
    let o = igemu(&["run", "--report", "--out", s(&run)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = &json(&run.join("summary.json"))["provenance"];
    assert_eq!(p["commit"], head.as_str());
    assert!(p["dirty"].is_boolean());
    let page = std::fs::read_to_string(run.join("report.html")).expect("report");
    assert!(page.contains(short), "the run's report names the commit");
    let sweep = small_sweep(dir.path(), "1h");
    let out = dir.path().join("sweep");
    let o = igemu(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&out.join("sweep.json"))["commit"], head.as_str());
    let o = igemu(&["report", s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(out.join("report.html")).expect("report");
    assert!(page.contains(short), "the sweep's report names the commit");
}

/// Starts igemu with `args` from the crate root, its output piped.
pub(super) fn spawn_igemu(args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("igemu starts")
}

/// Sends `signal` (`INT`, `TERM`) to `child` once `ready` holds (checked every 50 ms, for at
/// most 60 s); its output after it ends.
pub(super) fn interrupt_when(
    mut child: std::process::Child,
    signal: &str,
    ready: impl Fn() -> bool,
) -> Output {
    let start = std::time::Instant::now();
    while !ready() && start.elapsed() < std::time::Duration::from_secs(60) {
        assert!(
            child.try_wait().expect("waitable").is_none(),
            "ended before the signal"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sent = std::process::Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    child.wait_with_output().expect("igemu ends")
}

/// Ctrl-C used to end igemu with 130 and not a word. Now it says what was kept: a run, that
/// its folder holds what it held before (nothing of the run is written until the run ends);
/// a sweep, how many runs its run file keeps and the command that goes on with it (which
/// then does); a batch system's SIGTERM the same, with 143.
#[test]
fn an_interruption_says_what_was_kept_and_how_to_go_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = dir.path().join("run");
    let child = spawn_igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "100",
        "--quiet",
        "--out",
        s(&run),
    ]);
    let o = interrupt_when(child, "INT", || run.exists());
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let said = stderr(&o);
    assert!(
        said.contains("interrupted (Ctrl-C)") && said.contains("holds what it held before"),
        "{said}"
    );
    assert!(!run.join("summary.json").exists());

    let sweep = dir.path().join("s.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = {:?}\nseeds = 4\nmetrics = [\"makespan_s\"]\n[set]\n\"emulation.end\" = \"4h\"\n\
             \"emulation.mode\" = \"realtime\"\n\"emulation.speedup\" = 8000\n",
            common::path("topologies/quickstart.toml").display().to_string()
        ),
    )
    .expect("written");
    let out = dir.path().join("sweep");
    let runs = out.join("runs.csv");
    let child = spawn_igemu(&[
        "sweep",
        s(&sweep),
        "--out",
        s(&out),
        "--jobs",
        "1",
        "--quiet",
    ]);
    let one_row = || std::fs::read_to_string(&runs).is_ok_and(|t| t.lines().count() >= 2);
    let o = interrupt_when(child, "TERM", one_row);
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    let said = stderr(&o);
    let resume = format!("igemu sweep {} --out {} --resume", s(&sweep), s(&out));
    assert!(
        said.contains("interrupted (SIGTERM)") && said.contains(&resume),
        "{said}"
    );
    let kept = std::fs::read_to_string(&runs)
        .expect("kept")
        .lines()
        .count()
        - 1;
    assert!(
        said.contains(&format!("{kept} of 4 runs are kept")),
        "{kept}: {said}"
    );
    let o = igemu(&["sweep", s(&sweep), "--out", s(&out), "--resume", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains(&format!("{kept} already done")));
}
