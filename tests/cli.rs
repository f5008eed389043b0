//! The command line as a user meets it: the malformed-topology corpus, `validate` on every
//! shipped topology, `--set` mistakes, and `run` writing its outputs deterministically.

mod common;
use common::igemu;

use std::path::{Path, PathBuf};
use std::process::Output;

/// The smallest stress test: one seed of the small peering topology, no faults, quiet.
const ONE_QUIET_STRESS: [&str; 7] = [
    "stress",
    "topologies/peering-small.toml",
    "--seeds",
    "1",
    "--faults",
    "none",
    "--quiet",
];

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn files_in(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("directory exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// Every file in `tests/malformed/` states, in `# expect:` lines, text that `validate` must
/// print (places as `file:line:col`); each must be reported with exit code 2.
#[test]
fn every_malformed_topology_is_reported_with_its_place_and_exit_code_2() {
    let files = files_in("tests/malformed");
    assert!(files.len() >= 15, "the corpus has {} files", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        let expects: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        assert!(
            !expects.is_empty(),
            "{} has no `# expect:` line",
            f.display()
        );
        let rel = f
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .expect("inside the crate");
        let out = igemu(&["validate", rel.to_str().expect("utf-8 path")]);
        let err = stderr(&out);
        if out.status.code() != Some(2) {
            failures.push(format!(
                "{}: exit {:?}\n{err}",
                f.display(),
                out.status.code()
            ));
        }
        for e in expects {
            if !err.contains(e) {
                failures.push(format!("{}: missing `{e}` in\n{err}", f.display()));
            }
        }
        assert!(
            !err.contains("panicked"),
            "{} made igemu panic:\n{err}",
            f.display()
        );
        // A message shows user text escaped: a control character would restyle the
        // terminal, an invisible one (zero-width, bidirectional, byte order mark) hide or
        // reorder what the message says.
        let raw = err.chars().find(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
        });
        if let Some(c) = raw {
            failures.push(format!("{}: {c:?} shown raw in\n{err}", f.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

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

#[test]
fn every_shipped_topology_validates() {
    for f in files_in("topologies") {
        let out = igemu(&["validate", f.to_str().expect("utf-8 path")]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            f.display(),
            stderr(&out)
        );
        // Nothing to warn about: the papers' scenarios are not floods.
        assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    }
}

/// A Lublin99 stream whose inter-arrival scale is a denormal: a request about every second
/// for two days, 1066 times what the one 16-host cluster works off.
const FLOOD: &str = r#"
[[grid]]
name = "g"
[[grid.cluster]]
name = "c"
hosts = { count = 16, cores = 4, memory_mb = 16384 }
[[workload]]
name = "flood"
origin = "external"
grid = "g"
model = "lublin99"
[workload.lublin99]
b_arr = 1e-300
"#;

#[test]
fn a_flood_is_warned_about_by_validate_and_run_with_the_fix() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (code, err) = validate_text(dir.path(), "flood.toml", FLOOD);
    assert_eq!(code, Some(0), "{err}");
    let file = dir.path().join("flood.toml");
    let place = format!(
        "{}:7:1: warning: offered load is 1066.5× the capacity of Grid `g`",
        file.display()
    );
    assert!(err.contains(&place), "{err}");
    assert!(err.contains("to about 172637 waiting requests"), "{err}");
    assert!(
        err.contains("set lrms.backfill_depth (as Slurm's bf_max_job_test)"),
        "{err}"
    );
    // `run` says it too, before it starts (here stopped at once by a message cap).
    let out = dir.path().join("out");
    let o = igemu(&[
        "run",
        file.to_str().expect("utf-8"),
        "--set",
        "emulation.max_messages=10",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("warning: offered load is 1066.5×"), "{err}");
    assert!(
        err.contains("the run sent more than 10 messages (emulation.max_messages)"),
        "{err}"
    );
    // A backfill depth of 0 is no depth at all.
    let (code, err) = validate_quickstart(&["lrms.backfill_depth=0"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("backfill_depth"), "{err}");
    // A reading of moldable requests igemu does not know names the two it does.
    let (code, err) = validate_quickstart(&["lrms.moldable=rigid"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("expected one of: spread, single-server"),
        "{err}"
    );
    assert_eq!(
        validate_quickstart(&["lrms.moldable=single-server"]).0,
        Some(0)
    );
}

#[test]
fn bad_overrides_name_the_override_and_exit_2() {
    let out = igemu(&[
        "run",
        "--set",
        "lrms.preemtion=mov",
        "--set",
        "emulation.seed=abc",
        "--out",
        "/nonexistent/never-written",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--set lrms.preemtion=mov: error: unknown key `preemtion` in [lrms]"),
        "{err}"
    );
    assert!(err.contains("did you mean `preemption`?"), "{err}");
    assert!(
        err.contains(
            "--set emulation.seed=abc: error: `seed` in [emulation] must be a whole number"
        ),
        "{err}"
    );
    assert!(err.contains("2 problems found"), "{err}");
}

#[test]
fn a_missing_file_and_bad_flags_exit_2() {
    let out = igemu(&["validate", "no/such/file.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no/such/file.toml: error: the file does not exist"));
    let out = igemu(&["run", "--mode", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
    let out = igemu(&["run", "--speedup", "fast"]);
    assert_eq!(out.status.code(), Some(2));
    // A flag that changes only the diagram, without one: it did nothing, silently.
    let out = igemu(&["trace", "no/such/trace.jsonl", "--vm-lanes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--mermaid"), "{}", stderr(&out));
}

#[test]
fn threads_are_refused_where_a_run_must_stay_on_one_and_nothing_is_written() {
    let small = "topologies/peering-small.toml";
    let out = "target/tmp/cli-threads-refused";
    let _ = std::fs::remove_dir_all(out);
    let rt = ["--mode", "realtime", "--speedup", "1000"];
    let with_rt =
        |more: &[&'static str]| -> Vec<&'static str> { rt.iter().chain(more).copied().collect() };
    let cases: [(Vec<&str>, &str); 7] = [
        (
            vec!["--mode", "virtual", "--threads", "2"],
            "--mode realtime",
        ),
        (
            with_rt(&["--threads", "2", "--trace"]),
            "(its records are numbered",
        ),
        (
            with_rt(&["--threads", "3", "--record", "x.rec"]),
            "(it records the order",
        ),
        (
            with_rt(&["--threads", "2", "--serve", "127.0.0.1:0"]),
            "(it draws one thread",
        ),
        (
            with_rt(&["--threads", "2", "--set", "emulation.interleaving=3"]),
            "emulation.interleaving needs the run on one thread (it reorders",
        ),
        (with_rt(&["--threads", "0"]), "--threads"),
        (with_rt(&["--threads=-1"]), "--threads"),
    ];
    for (flags, named) in cases {
        let mut args = vec!["run", small, "--quiet", "--out", out];
        args.extend_from_slice(&flags);
        let ran = igemu(&args);
        assert_eq!(ran.status.code(), Some(2), "{flags:?}: {ran:?}");
        assert!(stderr(&ran).contains(named), "{flags:?}: {}", stderr(&ran));
        assert!(
            !std::path::Path::new(out).exists(),
            "{flags:?} wrote outputs"
        );
    }
    for (flags, named) in [
        (&["--mode", "realtime"][..], "--speedup"),
        (&["--speedup", "10"][..], "--mode realtime"),
        (&["--threads", "2"][..], "--mode realtime"),
        (
            &[
                "--mode",
                "realtime",
                "--speedup",
                "1000",
                "--threads",
                "2",
                "--interleavings",
                "2",
            ][..],
            "--interleavings",
        ),
    ] {
        let mut args = vec![
            "stress", small, "--seeds", "1", "--faults", "none", "--quiet",
        ];
        args.extend_from_slice(flags);
        let ran = igemu(&args);
        assert_eq!(ran.status.code(), Some(2), "stress {flags:?}: {ran:?}");
        assert!(
            stderr(&ran).contains(named),
            "stress {flags:?}: {}",
            stderr(&ran)
        );
    }
}

fn without_wall_clock(summary: &str) -> String {
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
fn counts_by_word(text: &str) -> std::collections::BTreeMap<String, u64> {
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
fn html_rows(page: &str, marker: &str) -> Vec<Vec<String>> {
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

/// Issue 39, "one set of counts": every count `igemu run` prints is derived here from the
/// CSVs alone — `requests.csv`, `decisions.csv`, `intervals.csv` and the negotiations CSV —
/// and found the same in the printed lines, in `summary.json` (under the key of the same
/// name) and in the report. Seed 1 of the small peering topology has every kind: rejections,
/// cancellations, running leases preempted, reservations displaced, every negotiation
/// outcome, and requests redirected to a peer that the peer's clusters then rejected.
#[test]
fn every_printed_count_is_derived_from_the_csvs_and_the_same_in_summary_and_report() {
    use std::collections::{BTreeMap, BTreeSet};
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let out = s(dir);
    // Seed 27: a run with every answer and a request rejected after redirect (providers
    // check their slots before they promise, so such requests are rare: docs/outputs.md).
    let o = igemu(&[
        "run",
        "topologies/peering-small.toml",
        "--seed",
        "27",
        "--trace",
        "--report",
        "--out",
        out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = |start: &str| {
        printed
            .lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("a line starting `{start}` in:\n{printed}"))
            .to_string()
    };
    let negotiations_csv = dir.join("negotiations.csv");
    let n = igemu(&[
        "trace",
        s(&dir.join("trace.jsonl")),
        "--negotiations",
        "--out",
        s(&negotiations_csv),
    ]);
    assert!(n.status.success(), "{}", stderr(&n));
    let read = |name: &Path| -> Vec<BTreeMap<String, String>> {
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
    };
    let requests = read(&dir.join("requests.csv"));
    let decisions = read(&dir.join("decisions.csv"));
    let intervals = read(&dir.join("intervals.csv"));
    let negotiations = read(&negotiations_csv);
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
    )
    .expect("JSON");
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    // The figures table names each figure for a person, its key in the name's tooltip.
    let figures_html = page
        .split("id=\"figures\"")
        .nth(1)
        .expect("a figures section");
    let figures_html = figures_html.split("<h2").next().unwrap_or_default();
    let figures: BTreeMap<String, String> = (figures_html.split("<tr><td title=\"").skip(1))
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
    let figure = |key: &str| -> u64 {
        figures[key]
            .parse()
            .unwrap_or_else(|_| panic!("{key}: {}", figures[key]))
    };
    let num = |r: &BTreeMap<String, String>, k: &str| -> u64 { r[k].parse().expect(k) };

    // Requests by origin and state: printed, summary.json's `requests`, the report's table.
    let report_requests = html_rows(&page, "id=\"requests\"");
    for origin in ["local", "external"] {
        let printed = counts_by_word(&line(origin));
        for (k, state) in ["completed", "rejected", "cancelled", "unfinished"]
            .iter()
            .enumerate()
        {
            let derived = requests
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
                summary["requests"][origin][*state], derived,
                "{origin} {state}"
            );
            assert_eq!(reported, derived, "report: {origin} {state}");
        }
    }

    // Preemption decisions, leases and VMs: decisions.csv's operations on requests.csv's
    // leases; each key counts one kind, as requests.csv's `preemptions` and `displacements`.
    let vms: BTreeMap<&str, u64> = requests
        .iter()
        .map(|r| (r["request_id"].as_str(), num(r, "vms")))
        .collect();
    let (mut preempted, mut displaced) = ((0u64, 0u64), (0u64, 0u64));
    for d in &decisions {
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
    let column = |k: &str| requests.iter().map(|r| num(r, k)).sum::<u64>();
    assert_eq!(column("preemptions"), preempted.0);
    assert_eq!(column("displacements"), displaced.0);
    // The VMs preempted, from intervals.csv alone: a running span followed at once on its host
    // by an operation (pause, suspension, migration), or running until its lease was
    // cancelled.
    // Each VM instance's spans (start, end, state), by (request, VM, host).
    type Spans = Vec<(f64, f64, String)>;
    let mut spans: BTreeMap<[String; 3], Spans> = BTreeMap::new();
    for i in &intervals {
        let key = [i["request_id"].clone(), i["vm"].clone(), i["host"].clone()];
        let t = |k: &str| i[k].parse::<f64>().expect(k);
        spans
            .entry(key)
            .or_default()
            .push((t("start_s"), t("end_s"), i["state"].clone()));
    }
    let cancelled_at: BTreeMap<&str, f64> = requests
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
        vm_preempted, preempted.1,
        "VMs preempted: intervals.csv and decisions.csv"
    );
    let parts: BTreeMap<String, Vec<u64>> = line("decisions")
        .split(", ")
        .map(|part| {
            let mut words = part.split_whitespace();
            let name = words.next().expect("a name").to_string();
            (name, words.filter_map(|w| w.parse().ok()).collect())
        })
        .collect();
    let derived = [
        ("decisions", "decisions", vec![decisions.len() as u64]),
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
        assert_eq!(summary[key], want[0], "{key}");
        assert_eq!(figure(key), want[0], "report: {key}");
    }
    for (key, want) in [
        ("vm_preemptions", preempted.1),
        ("vm_displacements", displaced.1),
    ] {
        assert_eq!(summary[key], want, "{key}");
        assert_eq!(figure(key), want, "report: {key}");
    }
    // The report's Gantt headings count the VMs preempted on each cluster.
    let marked: u64 = page
        .split(" VMs preempted</h3>")
        .map(|h| h.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()))
        .take_while(Option::is_some)
        .flatten()
        .sum();
    assert_eq!(marked, preempted.1, "report: the hosts' headings");
    let overhead: f64 = requests
        .iter()
        .map(|r| r["overhead_s"].parse::<f64>().expect("overhead"))
        .sum::<f64>()
        + decisions
            .iter()
            .map(|d| d["reschedule_s"].parse::<f64>().expect("reschedule"))
            .sum::<f64>();
    assert!(parts.contains_key("overhead"), "{printed}");
    assert!(
        line("decisions").contains(&format!("overhead {overhead:.1} s")),
        "{overhead} in {printed}"
    );
    assert!(preempted.0 > 0 && displaced.0 > 0, "the run has both");
    assert!(!cancelled_at.is_empty(), "and cancellations");

    // Negotiations: the negotiations CSV's rows by requester, and the requests redirected
    // as requests.csv has them, against the printed sums, each Grid's summary counters and
    // the report's peering table. Sound links: no offer is resent, so each negotiation is
    // one offer message.
    let grids: Vec<String> = summary["grids"]
        .as_object()
        .expect("grids")
        .keys()
        .cloned()
        .collect();
    // The report's per-Grid table: a row per figure, its key in the name's tooltip.
    let peering = page
        .split("id=\"peering\"")
        .nth(1)
        .expect("a peering section");
    let reported = |key: &str, g: usize| -> u64 {
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
    };
    let rows_where = |grid: &str, column: &str, value: &str| {
        negotiations
            .iter()
            .filter(|r| r["requester"] == grid && r[column] == value)
            .count() as u64
    };
    let after_redirect = |r: &&BTreeMap<String, String>| r["outcome"] == "rejected-after-redirect";
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for (g, grid) in grids.iter().enumerate() {
        let offers: BTreeSet<&str> = negotiations
            .iter()
            .filter(|r| r["requester"] == *grid)
            .map(|r| r["negotiation"].as_str())
            .collect();
        let of_grid = requests.iter().filter(|r| r["grid"] == *grid);
        let taken = of_grid
            .clone()
            .filter(|r| !r["served_by"].is_empty() && r["served_by"] != *grid)
            .count() as u64;
        let rejected_there = of_grid.filter(after_redirect).count() as u64;
        let derived = [
            ("offers", offers.len() as u64),
            ("timeouts", 0),
            ("accepted", rows_where(grid, "outcome", "accepted")),
            (
                "countered_taken",
                rows_where(grid, "outcome", "countered-taken"),
            ),
            (
                "countered_declined",
                rows_where(grid, "outcome", "countered-declined"),
            ),
            ("rejected", rows_where(grid, "outcome", "rejected")),
            ("redirected", rows_where(grid, "redirect", "redirected")),
            (
                "rejected_after_redirect",
                rows_where(grid, "at_provider", "rejected"),
            ),
        ];
        for (key, want) in derived {
            let counted = &summary["grids"][grid]["negotiations"][key];
            assert_eq!(counted, want, "{grid}: negotiations.{key}");
            assert_eq!(reported(key, g), want, "report: {grid} negotiations.{key}");
            *totals.entry(key).or_default() += want;
        }
        // requests.csv: redirected = started by a peer + rejected after redirect.
        assert_eq!(
            taken + rejected_there,
            rows_where(grid, "redirect", "redirected"),
            "{grid}"
        );
        assert_eq!(
            rejected_there,
            rows_where(grid, "at_provider", "rejected"),
            "{grid}"
        );
    }
    // The same requests: rejected after redirect in requests.csv (with the peer's clusters'
    // reason) and in the negotiations CSV.
    let rejected_there: BTreeSet<&str> = requests
        .iter()
        .filter(after_redirect)
        .inspect(|r| assert!(r["state"] == "rejected" && !r["reason"].is_empty(), "{r:?}"))
        .map(|r| r["request_id"].as_str())
        .collect();
    let reported_rejected: BTreeSet<&str> = negotiations
        .iter()
        .filter(|r| r["at_provider"] == "rejected")
        .map(|r| r["request"].as_str())
        .collect();
    assert_eq!(rejected_there, reported_rejected);
    assert!(
        !rejected_there.is_empty(),
        "the run has requests rejected after redirect"
    );
    let printed_negotiations = counts_by_word(&line("negotiations:"));
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
    assert!(line("negotiations:").contains(&format!(
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
        page.contains(&format!(
            "<h3>Redirected requests ({})</h3>",
            totals["redirected"]
        )),
        "the report's heading"
    );
    assert!(page.contains(&format!(
        "{} started by the peer, {} rejected after redirect",
        totals["redirected"] - totals["rejected_after_redirect"],
        totals["rejected_after_redirect"]
    )));
}

/// The same run is known by what it runs, not by how the command spells it: the topology's
/// contents (a path with `./`, or through a link, is the same file) and each override's key
/// and value (`lrms.cp_alpha = 0.1` is `lrms.cp_alpha=0.1`). Before, both were refused as
/// another run's outputs (audit). A changed file or another value still is; a run's outputs
/// still record the path and the overrides as given.
#[test]
fn the_same_run_spelled_another_way_replaces_its_outputs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = tmp_str(&dir, "pv");
    let topology = tmp_str(&dir, "t.toml");
    std::fs::copy(common::path("topologies/quickstart.toml"), &topology).expect("copy");
    let dotted = format!("{}/./t.toml", dir.path().display());
    let run = |file: &str, set: &str| igemu(&["run", file, "--set", set, "--out", &out, "--quiet"]);
    for (file, set) in [
        (topology.as_str(), "lrms.cp_alpha=0.1"),
        (dotted.as_str(), "lrms.cp_alpha=0.1"),
        (topology.as_str(), " lrms . cp_alpha = 0.1"),
        (topology.as_str(), "lrms.cp_alpha=1e-1"),
    ] {
        let o = run(file, set);
        assert!(o.status.success(), "{file} {set}: {}", stderr(&o));
        let summary = json(&dir.path().join("pv/summary.json"));
        assert_eq!(summary["provenance"]["topology_path"], file);
        assert_eq!(summary["provenance"]["overrides"][0], set);
    }
    let another = "holds another run's outputs";
    let o = run(&topology, "lrms.cp_alpha=0.2");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(another), "{}", stderr(&o));
    // The same contents in another folder are another run: a topology's traces and
    // profiles are read from its own folder.
    std::fs::create_dir(dir.path().join("elsewhere")).expect("folder");
    let elsewhere = tmp_str(&dir, "elsewhere/t.toml");
    std::fs::copy(&topology, &elsewhere).expect("copy");
    let o = run(&elsewhere, "lrms.cp_alpha=0.1");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(another), "{}", stderr(&o));
    let text = std::fs::read_to_string(&topology).expect("topology");
    std::fs::write(&topology, text + "\n# changed\n").expect("written");
    let o = run(&topology, "lrms.cp_alpha=0.1");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(another), "{}", stderr(&o));
}

/// A run's outputs replace the previous run's as a set: when writing them fails part-way
/// (here the summary's temporary file cannot be created), the old requests.csv, trace and
/// summary are still there, whole, and no temporary file is left; the next run replaces them
/// all, its trace included, and leaves no temporary file either.
#[test]
fn a_failed_write_leaves_the_previous_run_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().to_str().expect("utf-8");
    let file = "topologies/peering-small.toml";
    let first = igemu(&["run", file, "--trace", "--out", out]);
    assert!(first.status.success(), "{}", stderr(&first));
    let read = |name: &str| std::fs::read(dir.path().join(name)).expect(name);
    let old = ["requests.csv", "summary.json", "trace.jsonl"].map(read);
    // A directory where the new summary would be staged: its write fails.
    let blocker = dir.path().join(".summary.json.tmp");
    std::fs::create_dir(&blocker).expect("blocker");
    let seed = [
        "run",
        file,
        "--trace",
        "--set",
        "emulation.seed=7",
        "--out",
        out,
        "--overwrite",
    ];
    let failed = igemu(&seed);
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    assert_eq!(
        ["requests.csv", "summary.json", "trace.jsonl"].map(read),
        old
    );
    std::fs::remove_dir(&blocker).expect("blocker removed");
    let staged: Vec<_> = std::fs::read_dir(dir.path())
        .expect("listing")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(staged.is_empty(), "temporary files left: {staged:?}");
    let replaced = igemu(&seed);
    assert!(replaced.status.success(), "{}", stderr(&replaced));
    assert_ne!(read("requests.csv"), old[0]);
    assert_ne!(read("trace.jsonl"), old[2]);
    let summary: serde_json::Value = serde_json::from_slice(&read("summary.json")).expect("json");
    assert_eq!(summary["seed"], 7);
    let left = std::fs::read_dir(dir.path())
        .expect("listing")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .count();
    assert_eq!(left, 0);
}

/// Two runs into one folder at once: the second is refused (exit 2) while the first holds
/// the folder, rather than removing and renaming the first's staged files (both said their
/// outputs were written, and the folder held no trace or files of both). The folder is
/// held here as a run holds it.
#[cfg(unix)]
#[test]
fn a_run_into_a_folder_another_run_is_writing_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().to_str().expect("utf-8");
    let held = std::fs::File::open(dir.path()).expect("folder opened");
    held.try_lock().expect("folder held");
    let o = refused(
        &["run", "--trace", "--out", out],
        "another igemu run is writing its outputs there now",
    );
    assert!(!stderr(&o).contains("panicked"));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("listing")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "written while held: {left:?}");
    held.unlock().expect("released");
    let ran = igemu(&["run", "--trace", "--out", out]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    assert!(dir.path().join("trace.jsonl").is_file());
}

/// An --out that is a link to nothing, or a folder where no file can be made, is refused
/// before the run (exit 2, naming the folder and the fix), not after it (exit 1, naming a
/// hidden temporary file, with the run's work lost).
#[cfg(unix)]
#[test]
fn an_out_folder_that_cannot_take_files_is_refused_before_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).expect("symlink");
    refused(
        &["run", "--out", link.to_str().expect("utf-8")],
        "which does not exist; create the folder it points to",
    );
    let stress = [&ONE_QUIET_STRESS[..], &["--out"]].concat();
    refused(
        &[&stress[..], &[link.to_str().expect("utf-8")]].concat(),
        "which does not exist",
    );
    let closed = dir.path().join("closed");
    std::fs::create_dir(&closed).expect("folder");
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    // A superuser writes anywhere: nothing to refuse then.
    if std::fs::write(closed.join("x"), "").is_err() {
        let out = closed.to_str().expect("utf-8");
        refused(&["run", "--out", out], "igemu cannot create files there");
        refused(
            &[&stress[..], &[out]].concat(),
            "igemu cannot create files there",
        );
    }
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn tmp_str(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_str().expect("utf-8").to_string()
}

/// Runs the `igemu` binary like [`igemu`], but gives up on it after `secs` seconds (killed;
/// `None`): for commands that would block forever if a fix regressed (a FIFO read twice).
/// Its exit code and standard error otherwise.
fn igemu_within(args: &[&str], secs: u64) -> Option<(Option<i32>, String)> {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"));
    cmd.args(args);
    within(cmd, secs)
}

/// Runs the `igemu` binary as [`igemu_within`] does, with its address space limited to `kib`
/// KiB (`ulimit -v`, through `sh`): a reader that holds a whole input fails there with an
/// abort ("memory allocation of ... failed", exit 134), not by filling the machine.
#[cfg(unix)]
fn igemu_in_memory(kib: u64, args: &[&str], secs: u64) -> Option<(Option<i32>, String)> {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_igemu"))
        .args(args);
    within(cmd, secs)
}

/// Runs `cmd` from the crate root as [`igemu_within`] describes.
fn within(mut cmd: std::process::Command, secs: u64) -> Option<(Option<i32>, String)> {
    let mut child = cmd
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    // Drained as it comes: a child writing more than a pipe holds would otherwise block.
    let mut pipe = child.stderr.take().expect("piped");
    let err = std::thread::spawn(move || {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
        err
    });
    for _ in 0..secs * 10 {
        if let Some(status) = child.try_wait().expect("waits") {
            return Some((status.code(), err.join().expect("stderr read")));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Runs the `igemu` binary and checks it refused: exit 2, `expect` in its standard error.
fn refused(args: &[&str], expect: &str) -> Output {
    let o = igemu(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    assert!(stderr(&o).contains(expect), "{args:?}: {}", stderr(&o));
    o
}

#[test]
fn running_a_missing_topology_says_it_does_not_exist_not_built_in() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = igemu(&["run", "nosuch.toml", "--out", &tmp_str(&tmp, "o")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("nosuch.toml: error: the file does not exist"),
        "{err}"
    );
    assert!(!err.contains("built-in"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn tracing_an_unknown_request_is_an_error_naming_it_with_a_suggestion() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp_str(&tmp, "run");
    let out = igemu(&["run", "--trace", "--out", &dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = format!("{dir}/trace.jsonl");
    let text = std::fs::read_to_string(&trace).expect("trace written");
    assert!(
        text.contains("\"request\":\"ext-1\""),
        "quickstart names ext-1"
    );

    let out = igemu(&["trace", &trace, "--request", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no message names request `nosuch`; its requests include"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "nothing printed for an unknown request"
    );

    let mmd = tmp_str(&tmp, "x.mmd");
    let out = igemu(&["trace", &trace, "--request", "ext-1x", "--mermaid", &mmd]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("did you mean `ext-1`?"),
        "{}",
        stderr(&out)
    );
    assert!(!Path::new(&mmd).exists(), "no empty diagram written");

    let out = igemu(&["trace", &trace, "--request", "ext-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!out.stdout.is_empty());
}

#[test]
fn trace_lines_are_capped_and_a_trace_out_of_order_is_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let cap = igemu::trace::render::MAX_LINE;
    let message = format!(":1: longer than {cap} bytes; not a trace record");
    // Before: an abort (exit 134) after allocating gigabytes.
    if Path::new("/dev/zero").exists() {
        let chrome = tmp_str(&tmp, "c.json");
        for args in [
            &["--request", "x"][..],
            &["--negotiations"][..],
            &["--negotiation", "1"][..],
            &["--chrome", &chrome][..],
        ] {
            let o = igemu(&[&["trace", "/dev/zero"][..], args].concat());
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains(&message), "{args:?}: {}", stderr(&o));
        }
    }
    // Backwards, one line without a newline: before, quadratic in its length (minutes).
    let long = tmp_str(&tmp, "long.jsonl");
    std::fs::write(&long, vec![b'a'; cap + 1]).expect("written");
    let (code, err) = igemu_within(&["trace", &long, "--why", "0"], 60).expect("ends");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("long.jsonl{message}")), "{err}");
    // Two records numbered 5 then a 3: before, "has no message 5".
    let record = |seq: u64, cause: u64| {
        format!(
            r#"{{"seq":{seq},"t_us":0,"t":"0","from":"a","to":"b","kind":"Arrive","cause":{cause}}}"#
        )
    };
    let dup = tmp_str(&tmp, "dup.jsonl");
    let text = [record(5, 3), record(5, 4), record(3, 5)].join("\n");
    std::fs::write(&dup, text).expect("written");
    let o = igemu(&["trace", &dup, "--why", "5"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "dup.jsonl:3: seq 3 after 5: the trace is not in seq order (two traces concatenated?)"
        ),
        "{}",
        stderr(&o)
    );
    // A cause after its effect is an error at its line, not a chain cut short in silence.
    let cycle = tmp_str(&tmp, "cycle.jsonl");
    std::fs::write(&cycle, [record(1, 0), record(2, 7)].join("\n")).expect("written");
    let o = igemu(&["trace", &cycle, "--why", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cycle.jsonl:2: message 2 gives 7 as its cause"),
        "{}",
        stderr(&o)
    );
    // Every reader refuses two traces concatenated, not only --why: before, each negotiation
    // and request counted twice.
    let run = tmp_str(&tmp, "run");
    let ran = igemu(&[
        "run",
        "topologies/peering-small.toml",
        "--out",
        &run,
        "--trace",
        "--quiet",
    ]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let one = std::fs::read(format!("{run}/trace.jsonl")).expect("trace");
    let lines = one.iter().filter(|&&b| b == b'\n').count();
    std::fs::write(format!("{run}/trace.jsonl"), [&one[..], &one[..]].concat()).expect("written");
    let twice = format!("{run}/trace.jsonl");
    for args in [
        vec!["trace", &twice, "--negotiations"],
        vec!["trace", &twice, "--request", "busy-users-6"],
        vec!["report", &run],
    ] {
        let o = igemu(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("the trace is not in seq order"),
            "{args:?}: {err}"
        );
        if args[0] == "trace" {
            let at = format!("trace.jsonl:{}: seq", lines + 1);
            assert!(err.contains(&at), "{args:?}: {err}");
        }
    }
}

/// Audit N12's trace findings: read errors of `igemu trace` lacked the `igemu:` prefix;
/// `--why` on `/dev/zero` said "has no message 0" (a device seeks as if empty) and on a pipe
/// "line 0: cannot read: Illegal seek". --why reads backwards, so it now refuses what it
/// cannot seek in, saying so; the other selections still read a pipe.
#[cfg(unix)]
#[test]
fn trace_errors_are_prefixed_and_why_refuses_a_pipe_or_device_saying_why() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let record = |seq: u64, cause: Option<u64>| {
        let cause = cause.map_or("null".to_string(), |c| c.to_string());
        format!(
            r#"{{"seq":{seq},"t_us":0,"t":"0","from":"a","to":"b","kind":"Arrive","request":"r","cause":{cause}}}"#
        )
    };
    let trace = tmp_str(&tmp, "t.jsonl");
    let text = [record(0, None), record(1, Some(0)), record(2, Some(1))].join("\n");
    std::fs::write(&trace, text + "\n").expect("written");
    let bad = tmp_str(&tmp, "bad.jsonl");
    std::fs::write(&bad, "{\"seq\": 0}\nnot json\n").expect("written");
    let starts = |args: &[&str], prefix: &str| {
        let o = igemu(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with(prefix), "{args:?}: {}", stderr(&o));
    };
    starts(&["trace", &bad], &format!("igemu: {bad}:1: missing field"));
    starts(&["trace", &bad, "--why", "0"], &format!("igemu: {bad}:2: "));
    let missing = tmp_str(&tmp, "missing.jsonl");
    starts(
        &["trace", &missing, "--request", "r"],
        &format!("igemu: {missing}: cannot read the file"),
    );
    let regular = "so it needs a regular file, not a pipe or a device";
    let folder = tmp.path().to_str().expect("utf-8");
    starts(
        &["trace", folder, "--why", "0"],
        &format!("igemu: {folder}: that is a folder; give its trace.jsonl"),
    );
    if Path::new("/dev/zero").exists() {
        let long = format!(
            "igemu: /dev/zero:1: longer than {} bytes",
            igemu::trace::render::MAX_LINE
        );
        starts(&["trace", "/dev/zero"], &long);
        let (code, err) = igemu_within(&["trace", "/dev/zero", "--why", "0"], 30).expect("ends");
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.starts_with("igemu: /dev/zero: --why reads the trace backwards"),
            "{err}"
        );
        assert!(
            err.contains(regular) && !err.contains("no message"),
            "{err}"
        );
    }
    // A pipe: refused with the reason, not "line 0: Illegal seek"; --request reads it.
    let piped = |args: &str| {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c")
            .arg(format!("cat \"$1\" | exec \"$0\" trace /dev/stdin {args}"))
            .arg(env!("CARGO_BIN_EXE_igemu"))
            .arg(&trace);
        within(cmd, 30).expect("ends")
    };
    let (code, err) = piped("--why 2");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("igemu: /dev/stdin: --why reads"), "{err}");
    assert!(
        err.contains(regular) && !err.contains("Illegal seek"),
        "{err}"
    );
    let (code, err) = piped("--request r");
    assert_eq!(code, Some(0), "{err}");
    // The same trace as a regular file answers --why.
    let o = igemu(&["trace", &trace, "--why", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
}

#[test]
fn a_file_with_many_problems_prints_the_first_hundred_and_counts_the_rest() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let base = std::fs::read_to_string(common::path("topologies/quickstart.toml")).expect("read");
    let keys: String = (0..1000).map(|i| format!("k{i} = 1\n")).collect();
    let file = tmp_str(&tmp, "many.toml");
    let text = base.replacen("[emulation]\n", &format!("[emulation]\n{keys}"), 1);
    std::fs::write(&file, text).expect("written");
    let o = igemu(&["validate", &file]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches(": error: ").count(), 100, "{err}");
    assert!(err.contains("`k0`"), "{err}");
    assert!(err.contains("... and 900 more\n"), "{err}");
    assert!(err.contains("many.toml: 1000 problems found"), "{err}");
}

/// Unix only: a symbolic link at `link` to `target`.
#[cfg(unix)]
fn link(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink made");
}

/// A `summary.json` with every key `igemu report` reads: no requests, `clusters` as
/// (`grid/cluster`, hosts), and `grids` as (name, figures) JSON.
fn run_summary(end_s: f64, clusters: &[(&str, u64)], grids: &[(&str, &str)]) -> String {
    let counts = r#"{"completed": 0, "rejected": 0, "cancelled": 0, "unfinished": 0}"#;
    let clusters: Vec<String> = clusters
        .iter()
        .map(|(name, hosts)| format!("\"{name}\": {{\"hosts\": {hosts}}}"))
        .collect();
    let grids: Vec<String> = grids
        .iter()
        .map(|(name, figures)| format!("\"{name}\": {figures}"))
        .collect();
    format!(
        r#"{{"topology": "t", "mode": "virtual", "seed": 1, "policies": {{}}, "emulated_end_s": {end_s}, "wall_s": 0,
"requests": {{"total": 0, "local": {counts}, "external": {counts}}}, "clusters": {{{}}}, "grids": {{{}}}}}"#,
        clusters.join(", "),
        grids.join(", ")
    )
}

#[cfg(unix)]
#[test]
fn huge_files_in_run_and_sweep_directories_are_refused_at_the_cap() {
    if !Path::new("/dev/zero").exists() {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = |name: &str| {
        let d = tmp.path().join(name);
        std::fs::create_dir_all(&d).expect("dir made");
        d
    };
    let s = |p: &Path| p.to_str().expect("utf-8").to_string();
    // A file of zeros past every cap (sparse: no disk is used), with no line end.
    let zeros = |path: &Path| {
        let _ = std::fs::remove_file(path);
        let f = std::fs::File::create(path).expect("created");
        f.set_len((16 << 20) + 1).expect("sized");
    };
    // Before: "out of memory" after 1.6 GB, or an abort (exit 134).
    let z1 = dir("z1");
    zeros(&z1.join("summary.json"));
    refused(
        &["report", &s(&z1)],
        "summary.json: cannot read the file: larger than 16 MiB",
    );
    let z3 = tmp.path().join("z3");
    refused(
        &["sweep", "merge", "--out", &s(&z3), "/dev/zero"],
        "/dev/zero:1: longer than 1048576 bytes; not a CSV row",
    );
    let z2 = dir("z2");
    std::fs::write(z2.join("runs.csv"), "run,seed,x,error\n0,1,2,\n").expect("written");
    link("/dev/zero", &z2.join("sweep.json"));
    refused(
        &["sweep", "merge", "--out", &s(&z3), &s(&z2.join("runs.csv"))],
        "sweep.json: larger than 16 MiB",
    );
    let z4 = dir("z4");
    // The negotiations are drawn and listed from the trace for Grids that negotiated.
    let offered = r#"{"negotiations": {"offers": 1}, "paid": 0, "received": 0}"#;
    let grids = run_summary(0.0, &[], &[("g", offered), ("h", offered)]);
    std::fs::write(z4.join("summary.json"), grids).expect("written");
    zeros(&z4.join("trace.jsonl"));
    refused(
        &["report", &s(&z4)],
        "trace.jsonl:1: error: longer than 16777216 bytes; not a trace record",
    );
    for csv in [
        "requests.csv",
        "intervals.csv",
        "utilization.csv",
        "leases.csv",
    ] {
        let z = dir(&format!("z-{csv}"));
        std::fs::write(z.join("summary.json"), run_summary(0.0, &[], &[])).expect("written");
        zeros(&z.join(csv));
        refused(
            &["report", &s(&z)],
            &format!("{csv}:1: longer than 1048576 bytes; not a CSV row"),
        );
    }
    let z5 = dir("z5");
    zeros(&z5.join("points.csv"));
    refused(
        &["report", &s(&z5)],
        "points.csv:1: longer than 1048576 bytes",
    );
    // A resumed sweep reads its run file back too (it used to loop or fill memory).
    let z6 = dir("z6");
    let sweep = small_sweep(&z6, "2h");
    let out = z6.join("out");
    let ran = igemu(&["sweep", &s(&sweep), "--out", &s(&out), "--quiet"]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    zeros(&out.join("runs.csv"));
    refused(
        &[
            "sweep",
            &s(&sweep),
            "--out",
            &s(&out),
            "--resume",
            "--quiet",
        ],
        "runs.csv:1: longer than 1048576 bytes",
    );
    // A device where an output directory keeps a file is not read at all.
    let z7 = dir("z7");
    link("/dev/zero", &z7.join("summary.json"));
    refused(&["report", &s(&z7)], "summary.json: not a regular file");
}

#[test]
fn merge_refuses_values_and_run_numbers_no_sweep_writes_at_their_place() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp_str(&tmp, "merged");
    for (body, expect) in [
        (
            "run,seed,m,error\n0,1,nan,\n",
            "bad.csv:2: `nan` in column m is not a finite number",
        ),
        (
            "run,seed,m,error\n0,1,2,\n1,2,-inf,\n",
            "bad.csv:3: `-inf` in column m is not a finite number",
        ),
        // Their variance overflowed: mean 0, CI -inf..inf.
        (
            "run,seed,m,error\n0,1,1e308,\n1,2,-1e308,\n",
            "bad.csv:2: `1e308` in column m is beyond ±1e100",
        ),
        (
            "run,seed,m,error\n-1,1,3,\n",
            "bad.csv:2: run `-1` is not a run number",
        ),
        (
            "run,seed,m,error\n0,1,3,\n0,2,4,\n",
            "bad.csv:3: run 0 again (also at ",
        ),
        (
            "run,seed,m,m,error\n0,1,2,3,\n",
            "bad.csv:1: column `m` comes twice",
        ),
        // Text in a metric cell was dropped silently: the point's mean of fewer runs.
        (
            "run,seed,m,error\n0,1,2,\n1,2,fast,\n",
            "bad.csv:3: `fast` in column m is not a number",
        ),
        (
            "run,seed,m,error\n0,1,\u{1b}[2J,\n",
            "bad.csv:2: `\\u{1b}[2J` in column m is not a number",
        ),
    ] {
        let bad = tmp_str(&tmp, "bad.csv");
        std::fs::write(&bad, body).expect("written");
        let o = igemu(&["sweep", "merge", "--out", &out, &bad]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{body}: {}", stderr(&o));
        assert!(
            !Path::new(&out).join("points.csv").exists(),
            "{body}: nothing summarised"
        );
    }
    // Large values that are not absurd still summarise, with finite intervals.
    let good = tmp_str(&tmp, "good.csv");
    std::fs::write(&good, "run,seed,m,error\n0,1,1e90,\n1,2,-1e90,\n").expect("written");
    let o = igemu(&["sweep", "merge", "--out", &out, &good]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let points = std::fs::read_to_string(Path::new(&out).join("points.csv")).expect("points");
    assert!(
        !points.contains("inf") && !points.contains("NaN"),
        "{points}"
    );
}

#[test]
fn inspecting_a_file_that_is_no_workload_trace_says_so_in_one_line() {
    let out = igemu(&["workload", "inspect", "topologies/quickstart.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("topologies/quickstart.toml: neither an SWF nor a GWF trace"),
        "{err}"
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = tmp.path().join("x.swf");
    std::fs::write(&bin, [0xff, 0xfe, 0x00, 0x01]).expect("written");
    let out = igemu(&["workload", "inspect", bin.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("neither an SWF nor a GWF trace"));
    // No job line at all (empty, or comments only) is refused too, not summarised as
    // "jobs 0 ... mean -0".
    for (name, text) in [("empty.swf", ""), ("comments.swf", "; Version: 2.2\n\n")] {
        let file = tmp.path().join(name);
        std::fs::write(&file, text).expect("written");
        let out = igemu(&["workload", "inspect", file.to_str().expect("utf-8")]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(stderr(&out).contains("no job line"), "{}", stderr(&out));
    }
    let out = igemu(&["workload", "inspect", "topologies/traces/synthetic-64.swf"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn speedup_in_virtual_mode_is_an_error() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = igemu(&["run", "--speedup", "100", "--out", &tmp_str(&tmp, "o")]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--speedup applies to realtime mode only"),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists(), "nothing ran");
    // A speed-up that is no finite number in range is refused as a flag, saying so (NaN was
    // passed on as an override that is not TOML: "must be a number, found a string").
    for bad in ["nan", "inf", "0", "1e10"] {
        for cmd in [
            &["run", "--mode", "realtime"][..],
            &["stress", "topologies/quickstart.toml", "--mode", "realtime"],
        ] {
            let o = igemu(&[cmd, &["--speedup", bad, "--out", &tmp_str(&tmp, "o")]].concat());
            assert_eq!(o.status.code(), Some(2), "{cmd:?} {bad}");
            let err = stderr(&o);
            assert!(
                err.contains(&format!("`{bad}` is not in 1e-3 ..= 1e9")),
                "{err}"
            );
        }
    }
    assert!(!tmp.path().join("o").exists(), "nothing ran");
}

#[test]
fn speedup_auto_measures_a_virtual_run_and_runs_at_what_it_chose() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Two emulated minutes: on a machine that wakes late (a virtual machine's vCPU: ms-long
    // stops), auto chooses x100 or less, and the whole quickstart would take minutes.
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "auto",
        "--set",
        "emulation.end=120s",
        "--out",
        &tmp_str(&tmp, "o"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("speed-up auto: x"))
        .unwrap_or_else(|| panic!("no choice printed: {stdout}"));
    let chosen: f64 = line
        .strip_prefix("speed-up auto: x")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no speed-up in {line}"));
    // It says how long the run will take, before it runs.
    assert!(
        line.contains(" chosen: 2.0 emulated minutes in ~") && line.contains(" of wall time"),
        "{line}"
    );
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("o/summary.json")).expect("written"),
    )
    .expect("JSON");
    let ran = summary["speedup"].as_f64().expect("a realtime speed-up");
    assert!((ran - chosen).abs() <= 0.5, "printed x{chosen}, ran x{ran}");
    // summary.json records the choice and its prediction: the run's emulated end (known
    // exactly, the realtime run repeating the virtual one) over the speed-up.
    let auto = &summary["speedup_auto"];
    assert_eq!(auto["speedup"].as_f64(), Some(ran), "{auto}");
    assert_eq!(auto["emulated_end_s"].as_f64(), Some(120.0), "{auto}");
    assert_eq!(auto["end_exact"].as_bool(), Some(true), "{auto}");
    assert_eq!(auto["max_wall_s"].as_f64(), Some(600.0), "{auto}");
    let wall = auto["predicted_wall_s"].as_f64().expect("a prediction");
    assert!((wall - 120.0 / ran).abs() < 1e-9, "{auto}");
    assert!(
        auto["predicted_p99_ms"]
            .as_f64()
            .is_some_and(|p| p <= 500.0),
        "{auto}"
    );
    // The provenance names the speed-up that ran, not a placeholder.
    let overrides = summary["provenance"]["overrides"].to_string();
    assert!(
        // (serde_json's float parsing may differ in the last digit: compare the whole part.)
        overrides.contains(&format!("emulation.speedup={}.", ran.trunc() as u64))
            && !overrides.contains("speedup=1.0\""),
        "{overrides}"
    );
    // Auto is a realtime speed-up too, and other words are no speed-up.
    let virt = igemu(&["run", "--speedup", "auto", "--out", &tmp_str(&tmp, "v")]);
    assert_eq!(virt.status.code(), Some(2), "{}", stderr(&virt));
    let word = igemu(&["run", "--mode", "realtime", "--speedup", "fast"]);
    assert_eq!(word.status.code(), Some(2));
    assert!(
        stderr(&word).contains("neither a number nor `auto`"),
        "{}",
        stderr(&word)
    );
}

#[test]
fn speedup_auto_refuses_a_run_longer_than_max_wall_and_names_its_prediction() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // The quickstart's 4.1 emulated hours: auto never chooses more than x100 000 (a wake of
    // at least 5 us must stay under 0.5 s of lateness), so the run takes at least 0.149 s.
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "auto",
        "--max-wall",
        "100ms",
        "--out",
        &tmp_str(&tmp, "o"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--speedup auto: x")
            && err.contains("the run's 4.1 emulated hours take ~")
            && err.contains("of wall time, more than --max-wall 0.100s allows")
            && err.contains("--max-wall")
            && err.contains("drop --mode realtime: the same results")
            && err.contains("--set emulation.end="),
        "{err}"
    );
    assert!(!tmp.path().join("o").exists(), "nothing ran");
}

#[test]
fn max_wall_takes_a_wall_time_above_zero_and_only_with_speedup_auto() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let o = tmp_str(&tmp, "o");
    for (bad, says) in [
        ("0s", "no time at all"),
        ("soon", "is not a duration"),
        ("-5m", "is not a duration"),
        ("10 parsecs", "unknown time unit"),
        ("", "empty duration"),
    ] {
        let flag = format!("--max-wall={bad}");
        let out = igemu(&[
            "run",
            "--mode",
            "realtime",
            "--speedup",
            "auto",
            &flag,
            "--out",
            &o,
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(stderr(&out).contains(says), "{bad:?}: {}", stderr(&out));
    }
    let fixed = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "3600",
        "--max-wall",
        "10m",
        "--out",
        &o,
    ]);
    assert_eq!(fixed.status.code(), Some(2));
    assert!(
        stderr(&fixed).contains("--max-wall bounds the wall time --speedup auto may choose"),
        "{}",
        stderr(&fixed)
    );
    assert!(!tmp.path().join("o").exists(), "nothing ran");
}

#[test]
fn a_realtime_run_says_how_long_it_will_take_before_it_starts() {
    let tmp = tempfile::tempdir().expect("temp dir");
    // Its end known from a virtual run of the same topology (the realtime run repeats it).
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "1e6",
        "--out",
        &tmp_str(&tmp, "a"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("realtime at x1000000: 4.1 emulated hours in ~0.015s of wall time (the end from a virtual run of the same topology, "),
        "{stdout}"
    );
    // A fixed end needs no virtual run.
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "1e6",
        "--set",
        "emulation.end=2h",
        "--out",
        &tmp_str(&tmp, "b"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("realtime at x1000000: 2.0 emulated hours (the topology's end) in ~0.007s of wall time\n"),
        "{stdout}"
    );
}

#[test]
fn a_realtime_run_too_fast_for_its_timers_says_so() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = igemu(&[
        "run",
        "--mode",
        "realtime",
        "--speedup",
        "1e9",
        "--out",
        &tmp_str(&tmp, "o"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("o/summary.json")).expect("written"),
    )
    .expect("JSON");
    assert_eq!(summary["speedup_sustainable"], false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("speed-up: too fast: p99 timer lateness")
            && stdout.contains("try a lower --speedup"),
        "{stdout}"
    );
}

#[test]
fn the_lateness_verdict_has_its_threshold_at_one_emulated_second() {
    let l = |p99: f64| igemu::time::Lateness {
        p50: 0.0,
        p99,
        max: p99,
        samples: 10,
    };
    assert_eq!(igemu::lateness_verdict(&l(430.0)), "sustainable");
    assert_eq!(
        igemu::lateness_verdict(&l(2500.0)),
        "too fast: p99 timer lateness 2.500 s, over 1 s: this machine did not keep the pace — try a lower --speedup"
    );
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

#[test]
fn stress_writes_its_results_as_csv_and_json() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("stress");
    let out = igemu(&[
        "stress",
        "topologies/peering-small.toml",
        "--seeds",
        "2",
        "--faults",
        "none,lossy",
        "--jobs",
        "2",
        "--out",
        dir.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let csv = std::fs::read_to_string(dir.join("stress.csv")).expect("stress.csv written");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5, "a header and 4 runs:\n{csv}");
    assert_eq!(
        lines[0],
        "faults,seed,schedule,violations,error,dropped,duplicated,reordered,cut,ended,requests,reproduce"
    );
    // faults, seed, schedule (0: FIFO), violations, no error, no faults applied.
    assert!(lines[1].starts_with("none,1,0,0,,0,0,0,0,"), "{}", lines[1]);
    assert!(lines[3].starts_with("lossy,1,0,0,,"), "{}", lines[3]);
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("stress.json")).expect("stress.json written"),
    )
    .expect("stress.json is JSON");
    assert_eq!(json["runs"], 4);
    assert_eq!(json["bad_runs"], 0);
    let lossy = &json["results"][2];
    assert_eq!(lossy["faults"], "lossy");
    assert_eq!(lossy["violations"], 0);
    assert!(lossy["fault_counts"]["dropped"].as_u64().expect("a count") > 0);
    assert!(lossy["reproduce"]
        .as_str()
        .expect("a command")
        .contains("--set 'fault.drop=0.1'"));
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("listable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.ends_with(".tmp")),
        "temporary files left: {names:?}"
    );
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

/// The Chrome export of a run with suspensions (Table III's testbed under MOML) as Perfetto
/// shows it: a process per Grid, a track per host that held a VM, and each VM's states as
/// slices that follow one another without overlapping, on host lanes that never hold two
/// slices at once.
#[test]
fn a_chrome_export_is_a_gantt_of_vm_states_on_host_tracks() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp_str(&tmp, "run");
    let out = igemu(&[
        "run",
        "topologies/paper003-testbed.toml",
        "--set",
        "lrms.preemption=moml",
        "--trace",
        "--quiet",
        "--out",
        &dir,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trace = format!("{dir}/trace.jsonl");
    let json = tmp_str(&tmp, "gantt.json");
    let out = igemu(&["trace", &trace, "--chrome", &json]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&json).expect("export written");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = doc["traceEvents"].as_array().expect("an array");
    let names = |what: &str| -> Vec<(u64, u64, String)> {
        events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == what)
            .map(|e| {
                let id = |k: &str| e[k].as_u64().unwrap_or(u64::MAX);
                let name = e["args"]["name"].as_str().unwrap_or("").to_string();
                (id("pid"), id("tid"), name)
            })
            .collect()
    };
    // What the trace itself says: its Grids (IGGs) and the hosts VMs occupied.
    let records = igemu::trace::render::parse(&std::fs::read_to_string(&trace).expect("trace"))
        .expect("valid trace");
    let grids: std::collections::BTreeSet<&str> = records
        .iter()
        .filter_map(|e| e.from.strip_prefix("igg:"))
        .collect();
    let hosts: std::collections::BTreeSet<String> = records
        .iter()
        .filter(|e| e.kind == "Occupy")
        .filter_map(|e| e.to.strip_prefix("host:").map(|h| format!("host {h}")))
        .collect();
    assert!(!grids.is_empty() && !hosts.is_empty());
    let processes = names("process_name");
    for g in &grids {
        assert!(
            processes.iter().any(|p| p.2 == format!("grid {g}")),
            "no process for Grid {g}: {processes:?}"
        );
    }
    let threads = names("thread_name");
    for h in &hosts {
        assert!(
            threads.iter().any(|t| &t.2 == h),
            "no track for {h}: {threads:?}"
        );
    }
    const STATES: [&str; 8] = [
        "pending",
        "booting",
        "running",
        "paused",
        "suspending",
        "suspended",
        "resuming",
        "migrating",
    ];
    let slices: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "vm")
        .collect();
    let kinds: std::collections::BTreeSet<&str> =
        slices.iter().filter_map(|e| e["name"].as_str()).collect();
    assert!(
        kinds.contains("running") && kinds.contains("suspended"),
        "{kinds:?}"
    );
    let mut per_vm: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
    let mut per_track: std::collections::BTreeMap<(u64, u64), Vec<(u64, u64)>> = Default::default();
    for s in &slices {
        let name = s["name"].as_str().unwrap_or("");
        assert!(STATES.contains(&name), "{s}");
        let (ts, dur) = (
            s["ts"].as_u64().expect("ts"),
            s["dur"].as_u64().expect("dur"),
        );
        assert!(dur > 0, "{s}");
        let vm = s["args"]["vm"].as_str().expect("the VM").to_string();
        per_vm.entry(vm).or_default().push((ts, ts + dur));
        let track = (
            s["pid"].as_u64().unwrap_or(0),
            s["tid"].as_u64().unwrap_or(0),
        );
        assert!(
            threads.iter().any(|t| (t.0, t.1) == track),
            "slice on an unnamed track: {s}"
        );
        per_track.entry(track).or_default().push((ts, ts + dur));
    }
    let mut contiguous = 0;
    let tracks = per_track
        .into_iter()
        .map(|((pid, tid), spans)| (format!("track {pid}/{tid}"), spans));
    for (what, mut spans) in per_vm.clone().into_iter().chain(tracks) {
        spans.sort_unstable();
        for w in spans.windows(2) {
            assert!(w[1].0 >= w[0].1, "{what}: {:?} overlaps {:?}", w[0], w[1]);
            contiguous += usize::from(w[1].0 == w[0].1);
        }
    }
    assert!(contiguous > 0, "a VM's states follow one another");
    // A suspended VM's states run on: suspending, then suspended, then resuming, without a gap.
    let suspended = slices
        .iter()
        .find(|s| s["name"] == "suspended")
        .expect("a suspension");
    let vm = suspended["args"]["vm"].as_str().expect("the VM");
    let mut spans = per_vm[vm].clone();
    spans.sort_unstable();
    let at = spans
        .iter()
        .position(|s| Some(s.0) == suspended["ts"].as_u64())
        .expect("its span");
    assert!(at > 0 && at + 1 < spans.len(), "{vm}: {spans:?}");
    assert_eq!(spans[at - 1].1, spans[at].0, "{vm}: {spans:?}");
    assert_eq!(spans[at].1, spans[at + 1].0, "{vm}: {spans:?}");
    // Same trace, same export.
    let again = tmp_str(&tmp, "again.json");
    igemu(&["trace", &trace, "--chrome", &again]);
    assert_eq!(std::fs::read(&again).expect("written"), text.as_bytes());
    assert!(
        !Path::new(&format!("{json}.tmp")).exists(),
        "no temporary file left"
    );
}

/// `run --trace` with filters writes exactly the full trace's lines that pass all of them
/// (byte for byte, with the full run's numbers) and counts every message as before; a bad
/// filter is a usage error before anything runs.
#[test]
fn a_filtered_trace_holds_only_matching_lines_and_the_same_count() {
    use igemu::trace::{actor_matches, KINDS};
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = |name: &str, extra: &[&str]| -> (String, serde_json::Value) {
        let dir = tmp_str(&tmp, name);
        let mut args = vec![
            "run",
            "topologies/peering-small.toml",
            "--trace",
            "--quiet",
            "--out",
            &dir,
        ];
        args.extend_from_slice(extra);
        let out = igemu(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let trace = std::fs::read_to_string(format!("{dir}/trace.jsonl")).expect("trace");
        let summary = std::fs::read_to_string(format!("{dir}/summary.json")).expect("summary");
        (trace, serde_json::from_str(&summary).expect("JSON"))
    };
    let (full, full_summary) = run("full", &[]);
    let (kinds, actors, window) = (
        "PeerOffer,PeerAnswer,AssignLease,Tick",
        "igg:,lrms:busy/",
        "1000s..2d",
    );
    let (cut, cut_summary) = run(
        "cut",
        &[
            "--trace-kinds",
            kinds,
            "--trace-actors",
            actors,
            "--trace-window",
            window,
        ],
    );
    assert_eq!(full_summary["messages"], cut_summary["messages"]);
    let records = igemu::trace::render::parse(&full).expect("valid trace");
    for e in &records {
        assert!(
            KINDS.contains(&e.kind.as_str()),
            "{} is not in KINDS",
            e.kind
        );
    }
    let patterns: Vec<&str> = actors.split(',').collect();
    let (from, to) = (1_000_000_000, 2 * 86_400_000_000);
    let expected: Vec<&str> = full
        .lines()
        .zip(&records)
        .filter(|(_, e)| {
            kinds.split(',').any(|k| k == e.kind)
                && patterns
                    .iter()
                    .any(|p| actor_matches(p, &e.from) || actor_matches(p, &e.to))
                && (from..to).contains(&e.t_us)
        })
        .map(|(l, _)| l)
        .collect();
    let got: Vec<&str> = cut.lines().collect();
    assert!(got.len() > 10, "a few messages pass: {}", got.len());
    assert!(got.len() < records.len() / 4, "most do not");
    assert_eq!(got, expected);
    let kept_kinds: std::collections::BTreeSet<&str> = igemu::trace::render::parse(&cut)
        .expect("valid")
        .iter()
        .map(|e| {
            kinds
                .split(',')
                .find(|k| *k == e.kind)
                .expect("a kept kind")
        })
        .collect();
    assert_eq!(kept_kinds.len(), 4, "{kept_kinds:?}");

    for (flag, value, says) in [
        ("--trace-kinds", "PeerOfer", "did you mean `PeerOffer`?"),
        ("--trace-window", "1h-2h", "e.g. `1h..2h`"),
        ("--trace-window", "2h..1h", "empty window"),
        ("--trace-actors", ",", "e.g. `igg:`"),
    ] {
        let dir = tmp_str(&tmp, "bad");
        let out = igemu(&[
            "run",
            "topologies/peering-small.toml",
            "--trace",
            "--out",
            &dir,
            flag,
            value,
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = stderr(&out);
        assert!(err.contains(says) && err.contains(flag), "{err}");
        assert!(!Path::new(&dir).exists(), "nothing ran");
    }
}

/// Headless Chromium when this machine has it: `IGEMU_CHROMIUM`, else `chromium` or
/// `chromium-browser` on the PATH (CI installs Debian's `chromium`).
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IGEMU_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|n| dir.join(n)))
        .find(|p| p.is_file())
}

/// Loads `page` in headless Chromium, saves a screenshot to `screenshot`, and returns the
/// `<body>` tag of the DOM after the page's load event (where the report's self-check writes
/// what it found) and Chromium's log.
fn load_in_chromium(chrome: &Path, page: &Path, screenshot: &Path) -> (String, String) {
    let profile = tempfile::tempdir().expect("temporary directory");
    let url = format!("file://{}", page.display());
    let base = |extra: &[String]| {
        std::process::Command::new(chrome)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--enable-logging=stderr",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium starts")
    };
    let dom = base(&["--dump-dom".into()]);
    assert!(dom.status.success(), "chromium failed: {}", stderr(&dom));
    let dom_text = String::from_utf8_lossy(&dom.stdout).into_owned();
    let body = dom_text
        .find("<body")
        .and_then(|at| {
            dom_text[at..]
                .find('>')
                .map(|end| dom_text[at..=at + end].to_string())
        })
        .unwrap_or_default();
    let shot = base(&[
        "--window-size=1200,2400".into(),
        format!("--screenshot={}", screenshot.display()),
    ]);
    assert!(shot.status.success(), "chromium failed: {}", stderr(&shot));
    (body, stderr(&dom))
}

/// A report must open offline: nothing fetched at view time.
fn assert_self_contained(html: &str) {
    for needle in ["<script src", "<link", "@import", "url(http", "src=\"http"] {
        assert!(!html.contains(needle), "the report loads `{needle}`");
    }
    let outside: Vec<&str> = html
        .match_indices("http")
        .map(|(at, _)| &html[at..(at + 40).min(html.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(outside.is_empty(), "addresses in the report: {outside:?}");
}

/// Checks what the report's self-check wrote on `<body>`: every chart drew, `charts` of them,
/// and no script error; and that Chromium logged no uncaught error.
fn assert_drew(body: &str, log: &str, charts: usize) {
    assert!(
        body.contains("data-checked=\"yes\""),
        "the page never loaded: {body}"
    );
    assert!(
        body.contains(&format!("data-charts=\"{charts}\"")),
        "expected {charts} charts: {body}"
    );
    assert!(
        body.contains("data-empty-charts=\"\""),
        "empty charts: {body}"
    );
    assert!(body.contains("data-errors=\"\""), "script errors: {body}");
    assert!(!log.contains("Uncaught"), "console errors:\n{log}");
    // Every in-page link (the navigation, the Gantt bars) has its target on the page.
    assert!(
        body.contains("data-broken-links=\"\"") && !body.contains("data-links=\"0\""),
        "links without a target: {body}"
    );
}

/// The `<body>` tag of the DOM of the page at `url` in headless Chromium, after its load
/// event (where the self-check writes what it found).
fn body_at(chrome: &Path, url: &str) -> String {
    let profile = tempfile::tempdir().expect("temporary directory");
    let dom = std::process::Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", url])
        .output()
        .expect("chromium starts");
    assert!(dom.status.success(), "chromium failed: {}", stderr(&dom));
    let text = String::from_utf8_lossy(&dom.stdout).into_owned();
    let at = text.find("<body").expect("a body");
    text[at..at + text[at..].find('>').expect("its end") + 1].to_string()
}

#[test]
fn a_runs_report_is_one_self_contained_page_whose_charts_draw_in_a_browser() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("run");
    let o = igemu(&[
        "run",
        "topologies/peering-small.toml",
        "--trace",
        "--report",
        "--quiet",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = out.join("report.html");
    let html = std::fs::read_to_string(&page).expect("report.html written");
    assert_self_contained(&html);
    // What a reader must find: provenance, a Gantt chart per cluster that ran a VM, three
    // utilisation charts per Grid, and the negotiation list from the trace.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary"))
            .expect("json");
    let clusters = summary["clusters"].as_object().expect("clusters");
    let grids = summary["grids"].as_object().expect("grids").len();
    for (c, figures) in clusters {
        assert!(
            html.contains(&format!("data-chart=\"gantt {c}\"")),
            "no Gantt chart of {c}"
        );
        // Every host has its row, idle or not.
        let hosts = figures["hosts"].as_u64().expect("hosts");
        assert!(
            html.contains(&format!("{c} — {hosts} hosts (")),
            "{c}: not {hosts} hosts"
        );
    }
    let rows = html.matches(">host ").count() as u64;
    let all_hosts = summary["hosts"].as_u64().expect("hosts");
    assert!(
        rows > 0 && rows <= all_hosts,
        "{rows} host labels for {all_hosts} hosts"
    );
    assert!(html.contains("topology_hash") || html.contains("topology hash"));
    assert!(html.contains(
        summary["provenance"]["topology_hash"]
            .as_str()
            .expect("hash")
    ));
    let negotiations = igemu(&[
        "trace",
        out.join("trace.jsonl").to_str().expect("utf-8"),
        "--negotiations",
    ]);
    let offered = String::from_utf8_lossy(&negotiations.stdout)
        .lines()
        .count()
        - 1;
    assert!(offered > 0, "the topology negotiates");
    assert!(
        html.contains(&format!("{offered} offered request(s) in negotiations")),
        "the report lists every negotiation"
    );
    assert!(html.contains(&format!(
        "<h3>Negotiations ({offered} offers of a request)</h3>"
    )));
    // Peering drawn: the counters per Grid, the money between Grids, and (traced) the offers
    // by outcome and the prices over time, each axis with its unit.
    for chart in [
        "negotiations per grid",
        "money between grids",
        "offers over time",
        "prices over time",
    ] {
        assert!(
            html.contains(&format!("data-chart=\"{chart}\"")),
            "no {chart} chart"
        );
    }
    assert!(html.contains(">price (currency units/core-s)"));
    assert!(html.contains("paid to peers (currency units)"));
    assert!(html.contains("<a href=\"#peering\">Peering</a>"));
    let charts = clusters.len() + 3 * grids + 4;
    assert_eq!(html.matches("<svg class=\"chart\"").count(), charts);
    // A windowed report counts the window in its headings, and draws the window.
    let windowed = dir.path().join("window.html");
    let o = igemu(&[
        "report",
        out.to_str().expect("utf-8"),
        "--window",
        "1h..3h",
        "--out",
        windowed.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let window = std::fs::read_to_string(&windowed).expect("written");
    let redirected = summary["requests"]["total"].as_u64().expect("total");
    assert!(window.contains(&format!(
        " submitted in the window, of {redirected} in the run)</h2>"
    )));
    assert!(window.contains("Redirected requests (") && window.contains("in the window, of "));
    assert!(window.contains("offers of a request in the window, of "));
    assert!(window.contains("hosts; in the window: "));
    assert!(window.contains("Key figures (the whole run)"));
    // The report is the same from `igemu report`, byte for byte.
    let again = igemu(&["report", out.to_str().expect("utf-8")]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&page).expect("report"), html);

    // Every VM a preemption hit is marked once on its host (paper 001's testbed suspends).
    let preempting = dir.path().join("p001");
    let o = igemu(&[
        "run",
        "topologies/paper001-testbed.toml",
        "--report",
        "--quiet",
        "--out",
        preempting.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p001: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(preempting.join("summary.json")).expect("summary"),
    )
    .expect("json");
    let marked = std::fs::read_to_string(preempting.join("report.html"))
        .expect("report")
        .matches("class=\"mark\"")
        .count();
    assert!(marked > 0);
    assert_eq!(
        marked as u64,
        p001["vm_preemptions"].as_u64().expect("count")
    );
    // One Grid: no peering section, nor its link (it was an all-zero table).
    let p001_page = std::fs::read_to_string(preempting.join("report.html")).expect("report");
    assert!(!p001_page.contains("id=\"peering\"") && !p001_page.contains("#peering"));

    let Some(chrome) = chromium() else {
        eprintln!("SKIPPED the browser check: no chromium on the PATH (install Debian's `chromium`, or set IGEMU_CHROMIUM)");
        return;
    };
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-run.png");
    let (body, log) = load_in_chromium(&chrome, &page, &screenshot);
    assert_drew(&body, &log, charts);
    let drawn = body
        .split("data-drawn=\"")
        .nth(1)
        .and_then(|d| d.split('"').next())
        .unwrap_or_default();
    for chart in [
        "negotiations per grid",
        "money between grids",
        "offers over time",
        "prices over time",
    ] {
        assert!(
            drawn.split('|').any(|c| c == chart),
            "{chart} did not draw: {drawn}"
        );
    }
    // The windowed page draws too (its charts over the window).
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-window.png");
    let (body, log) = load_in_chromium(&chrome, &windowed, &shot);
    assert_drew(&body, &log, charts);
    // A Gantt bar's link, followed, lands on its lease's table of events.
    let at = html
        .find("<a href=\"#lease-")
        .expect("a bar linked to its lease's events");
    let link = &html[at + "<a href=\"#".len()..];
    let link = &link[..link.find('"').expect("a quote")];
    let landed = body_at(&chrome, &format!("file://{}#{link}", page.display()));
    assert!(
        landed.contains(&format!("data-target=\"{link} h4\"")),
        "#{link} leads nowhere: {landed}"
    );
    let png = std::fs::read(&screenshot).expect("screenshot saved");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a blank screenshot"
    );
    eprintln!("screenshot: {}", screenshot.display());
}

#[test]
fn a_sweeps_report_plots_each_metric_against_the_varied_key_with_intervals() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let sweep = dir.path().join("s.toml");
    let topo = common::path("topologies/peering-small.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = {:?}\nseeds = 3\nmetrics = [\"makespan_s\", \"awrt_s\"]\n[vary]\n\"igg.dispatch\" = [\"rr\", \"bcf\"]\n\"workload.0.das2.arrival_scale\" = [40, 80]\n",
            topo.display().to_string()
        ),
    )
    .expect("written");
    let out = dir.path().join("sweep");
    let o = igemu(&[
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The terminal gets the points as a table: a header, a row per point, two lines after.
    let printed = String::from_utf8_lossy(&o.stdout).into_owned();
    let table: Vec<&str> = printed.lines().skip(1).collect();
    assert_eq!(table.len(), 1 + 4 + 2, "{printed}");
    assert!(
        table[0].contains("dispatch") && table[0].contains("arrival_scale"),
        "{printed}"
    );
    assert!(table[0].contains("makespan_s") && table[0].contains("awrt_s"));
    assert!(table.iter().all(|l| l.chars().count() <= 100), "{printed}");
    assert!(table[1].contains(" ± "), "{printed}");
    let o = igemu(&["report", out.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = out.join("report.html");
    let html = std::fs::read_to_string(&page).expect("report.html written");
    assert_self_contained(&html);
    // One chart per metric, the numeric key on the x axis and one line per policy, a point
    // per (policy, value) with its interval.
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 2);
    // The arrival scale is drawn as the rate it gives (the topology's shape known), named
    // with its unit; the raw key is the label's tooltip, and the y axes have units.
    assert!(html.contains(
        "Metrics against arrival rate of external requests of workload busy-users (requests/h)"
    ));
    assert!(html.contains("<title>workload.0.das2.arrival_scale: the Weibull scale"));
    assert!(html.contains(">makespan (d)</text>") || html.contains(">makespan (h)</text>"));
    assert_eq!(html.matches("<g class=\"point\">").count(), 2 * 2 * 2);
    assert!(html.contains(">dispatch: rr</text>") && html.contains(">dispatch: bcf</text>"));
    assert!(html.contains("<title>igg.dispatch=rr</title>"));
    // The table behind it is wide: a row per point, a column per metric.
    let points = std::fs::read_to_string(out.join("points.csv")).expect("points");
    assert_eq!(points.lines().count() - 1, 8);
    let table = &html[html.find("id=\"table\"").expect("table")..];
    let table = &table[..table.find("</table>").expect("end")];
    assert_eq!(table.matches("<tr>").count(), 1 + 4);
    assert!(table.contains("<th>makespan_s</th><th>awrt_s</th>"));
    let Some(chrome) = chromium() else {
        eprintln!("SKIPPED the browser check: no chromium on the PATH (install Debian's `chromium`, or set IGEMU_CHROMIUM)");
        return;
    };
    let screenshot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-sweep.png");
    let (body, log) = load_in_chromium(&chrome, &page, &screenshot);
    assert_drew(&body, &log, 2);
}

#[test]
fn reporting_a_directory_with_no_outputs_or_bad_ones_exits_2() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("neither a run's outputs"),
        "{}",
        stderr(&o)
    );
    let o = igemu(&["report", "no/such/dir"]);
    assert_eq!(o.status.code(), Some(2));
    // A malformed intervals.csv is named with its line, and no report is left behind.
    let summary = run_summary(0.0, &[("g/c", 1)], &[]);
    std::fs::write(dir.path().join("summary.json"), &summary).expect("written");
    std::fs::write(
        dir.path().join("intervals.csv"),
        "request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\nr,0,g,c,0,cancellable,running,5,x\n",
    )
    .expect("written");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("intervals.csv:2"), "{}", stderr(&o));
    assert!(!dir.path().join("report.html").exists());
    // Negative or infinite times are refused, not drawn.
    std::fs::write(
        dir.path().join("intervals.csv"),
        "request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\nr,0,g,c,4294967295,cancellable,running,5,inf\n",
    )
    .expect("written");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("finite seconds"), "{}", stderr(&o));
    // And times past emulated time's end, or a span ending before it starts: no run's, and
    // drawn as nothing (the chart's scale ran to 1e300 s) without a word.
    for (row, says) in [
        ("5,1e300", "finite seconds from 0 to"),
        ("5,1", "ends (end_s 1) before it starts (start_s 5)"),
    ] {
        std::fs::write(
            dir.path().join("intervals.csv"),
            format!("request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\nr,0,g,c,0,cancellable,running,{row}\n"),
        )
        .expect("written");
        let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("intervals.csv:2"), "{}", stderr(&o));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    // And a summary whose end is no run's (the page said "from 0 s to 1157...0 d").
    std::fs::write(
        dir.path().join("summary.json"),
        run_summary(1e300, &[("g/c", 1)], &[]),
    )
    .expect("written");
    std::fs::remove_file(dir.path().join("intervals.csv")).expect("removed");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("summary.json: error: `emulated_end_s` is 1e300"),
        "{}",
        stderr(&o)
    );
    std::fs::write(dir.path().join("summary.json"), &summary).expect("written");
    std::fs::write(dir.path().join("intervals.csv"), "").expect("written");
    // So are amounts that are not numbers (they would draw as nothing, or break the SVG).
    std::fs::remove_file(dir.path().join("intervals.csv")).expect("removed");
    std::fs::write(
        dir.path().join("utilization.csv"),
        "time_s,grid,cluster,cores_used,cores_total,mem_mb_used,mem_mb_total,queued\n0,g,c,5,8,1,2,NaN\n",
    )
    .expect("written");
    let o = igemu(&["report", dir.path().to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("utilization.csv:2"), "{}", stderr(&o));
}

/// The run of the embedded quickstart, written into `dir`.
fn quickstart_run(dir: &Path) -> PathBuf {
    let out = dir.join("run");
    let o = igemu(&["run", "--out", out.to_str().expect("utf-8"), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// Replaces the first `from` in line `line` (1-based) of the file at `path` by `to`.
fn edit_line(path: &Path, line: usize, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("readable");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    assert!(
        lines[line - 1].contains(from),
        "{}: {}",
        path.display(),
        lines[line - 1]
    );
    lines[line - 1] = lines[line - 1].replacen(from, to, 1);
    std::fs::write(path, lines.join("\n") + "\n").expect("written");
}

/// `igemu report` on `dir` must exit 2 with `expect`, leaving no page behind.
fn report_refused(dir: &Path, expect: &[&str]) {
    let o = igemu(&["report", dir.to_str().expect("utf-8")]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for e in expect {
        assert!(err.contains(e), "expected `{e}` in: {err}");
    }
    assert!(!dir.join("report.html").exists());
}

/// A `summary.json` that is not a run's (empty, a key missing or of the wrong type) is
/// refused naming the key, what was expected and the fix: it drew "0 of 0 requests
/// completed" beside a table of requests.
#[test]
fn a_summary_missing_a_key_or_holding_the_wrong_type_is_refused_with_the_key_and_the_fix() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = quickstart_run(tmp.path());
    let summary = run.join("summary.json");
    let whole = std::fs::read_to_string(&summary).expect("summary");
    let original: serde_json::Value = serde_json::from_str(&whole).expect("json");
    let fix = "re-run it (same topology and seed) to rewrite the run's directory";
    std::fs::write(&summary, "{}").expect("written");
    report_refused(
        &run,
        &[
            "summary.json: error: `topology` is missing; the report expects a string there",
            fix,
        ],
    );
    let edits: [(&str, serde_json::Value, &str); 4] = [
        (
            "/requests/total",
            "10".into(),
            "`requests.total` is \"10\" (a string); the report expects a whole number ≥ 0 there",
        ),
        (
            "/requests/local/completed",
            serde_json::Value::Null,
            "`requests.local.completed` is null (null); the report expects a whole number ≥ 0",
        ),
        (
            "/utilization_pct",
            "high".into(),
            "`utilization_pct` is \"high\" (a string); the report expects a finite number there",
        ),
        (
            "/clusters/alpha~1a1/hosts",
            (-4).into(),
            "`clusters.alpha/a1.hosts` is -4 (a number); the report expects a whole number ≥ 0",
        ),
    ];
    for (pointer, value, says) in edits {
        let mut edited = original.clone();
        *edited.pointer_mut(pointer).expect(pointer) = value;
        std::fs::write(&summary, edited.to_string()).expect("written");
        report_refused(&run, &["summary.json: error: ", says, fix]);
    }
    // A key the page reads, gone; and counts that do not add up to the total.
    let mut edited = original.clone();
    edited["requests"]
        .as_object_mut()
        .expect("requests")
        .remove("external");
    std::fs::write(&summary, edited.to_string()).expect("written");
    report_refused(
        &run,
        &["`requests.external` is missing; the report expects an object"],
    );
    let mut edited = original.clone();
    edited["requests"]["total"] = 11.into();
    std::fs::write(&summary, edited.to_string()).expect("written");
    report_refused(
        &run,
        &["`requests.total` is 11, but `requests.local` and `requests.external` count 10 requests"],
    );
    std::fs::write(&summary, whole).expect("written");
    assert!(igemu(&["report", run.to_str().expect("utf-8")])
        .status
        .success());
}

/// A run's CSV files with a value igemu never writes (a state, a lease type), a row of
/// another run (a cluster or host its summary does not have), rows out of time order, or
/// counts that disagree with `summary.json` are refused at file:line, with both numbers.
#[test]
fn a_runs_files_that_disagree_or_hold_values_igemu_never_writes_are_refused_at_their_place() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let run = quickstart_run(tmp.path());
    let file = |name: &str| run.join(name);
    let keep: Vec<(String, String)> = ["requests.csv", "intervals.csv", "utilization.csv"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                std::fs::read_to_string(file(n)).expect("readable"),
            )
        })
        .collect();
    let restore = || {
        for (name, text) in &keep {
            std::fs::write(file(name), text).expect("written");
        }
    };
    // The page drew "7 of 10 requests completed" from the summary beside a table of 9.
    let requests = &keep[0].1;
    let cut: Vec<&str> = requests.lines().collect();
    std::fs::write(file("requests.csv"), cut[..cut.len() - 1].join("\n") + "\n").expect("cut");
    report_refused(
        &run,
        &[
            "requests.csv: error: it holds 9 requests, but",
            "summary.json's `requests.total` is 10; the two files are not of one run",
        ],
    );
    restore();
    let edits: [(&str, usize, &str, &str, &[&str]); 7] = [
        (
            "requests.csv",
            2,
            ",completed,",
            ",rejected,",
            &[
                "requests.csv: error: it holds 6 external requests completed, but",
                "summary.json's `requests.external.completed` is 7",
            ],
        ),
        (
            "requests.csv",
            3,
            ",completed,",
            ",done,",
            &["requests.csv:3: error: `state` is `done`; igemu writes one of completed, rejected, cancelled, unfinished"],
        ),
        (
            "intervals.csv",
            2,
            "suspendable",
            "spot",
            &["intervals.csv:2: error: `lease_type` is `spot`; igemu writes one of cancellable"],
        ),
        (
            "intervals.csv",
            3,
            "alpha,a1,0,",
            "alpha,a9,0,",
            &["intervals.csv:3: error: cluster `alpha/a9` is not one of summary.json's `clusters`"],
        ),
        (
            "intervals.csv",
            4,
            "alpha,a1,0,",
            "alpha,a1,4,",
            &["intervals.csv:4: error: host 4 of alpha/a1, which has 4 hosts in summary.json"],
        ),
        (
            "intervals.csv",
            2,
            ",300,",
            ",soon,",
            &["intervals.csv:2: error: `start_s` is `soon`, not what igemu writes there"],
        ),
        (
            "utilization.csv",
            4,
            "600,alpha,a1,",
            "100,alpha,a1,",
            &["utilization.csv:4: error: `time_s` 100 comes after 300 for alpha/a1"],
        ),
    ];
    for (name, line, from, to, says) in edits {
        edit_line(&file(name), line, from, to);
        report_refused(&run, says);
        restore();
    }
    assert!(igemu(&["report", run.to_str().expect("utf-8")])
        .status
        .success());
}

/// A sweep's files with a NaN where a number must be, text in a numeric cell, a run twice
/// or a seed twice at a point, `n` that do not add up to the runs, or a `sweep.json` that is
/// not JSON are refused at file:line (the page drew them as nothing, or not at all).
#[test]
fn a_sweeps_files_that_disagree_or_hold_nan_are_refused_at_their_place() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(tmp.path(), "2h");
    let out = tmp.path().join("out");
    let o = igemu(&[
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let file = |name: &str| out.join(name);
    let keep: Vec<(String, String)> = ["points.csv", "runs.csv", "paired.csv", "sweep.json"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                std::fs::read_to_string(file(n)).expect("readable"),
            )
        })
        .collect();
    let restore = || {
        for (name, text) in &keep {
            std::fs::write(file(name), text).expect("written");
        }
    };
    // points.csv: set:igg.dispatch,metric,n,mean,ci95_low,ci95_high.
    let row = |text: &str, line: usize| -> Vec<String> {
        text.lines()
            .nth(line - 1)
            .expect("a row")
            .split(',')
            .map(String::from)
            .collect()
    };
    let mean = row(&keep[0].1, 3)[3].clone();
    edit_line(&file("points.csv"), 3, &format!(",{mean},"), ",NaN,");
    report_refused(&out, &["points.csv:3: error: `mean` is NaN, but `n` is 2: over 1 run or more it is a finite number"]);
    restore();
    edit_line(&file("points.csv"), 2, ",2,", ",two,");
    report_refused(
        &out,
        &["points.csv:2: error: `n` is `two`; it counts the runs behind the point"],
    );
    restore();
    edit_line(&file("points.csv"), 2, ",2,", ",3,");
    report_refused(
        &out,
        &[
            "points.csv: error: the `n` of metric `utilization_pct` add up to 5, but",
            "runs.csv holds 4 runs that measured it",
        ],
    );
    restore();
    // runs.csv: run,seed,set:igg.dispatch,utilization_pct,makespan_s,error.
    let runs = &keep[1].1;
    let last = runs.lines().last().expect("a run").to_string();
    std::fs::write(file("runs.csv"), format!("{runs}{last}\n")).expect("written");
    report_refused(&out, &["runs.csv:6: error: run 3 again (also at line 5)"]);
    let again = last.replacen("3,", "9,", 1);
    std::fs::write(file("runs.csv"), format!("{runs}{again}\n")).expect("written");
    report_refused(&out, &["runs.csv:6: error: run 9 has the point (igg.dispatch=bcf) and seed 2 of the run at line 5"]);
    let cut: Vec<&str> = runs.lines().collect();
    std::fs::write(file("runs.csv"), cut[..cut.len() - 1].join("\n") + "\n").expect("cut");
    report_refused(
        &out,
        &["add up to 4, but", "runs.csv holds 3 runs that measured it"],
    );
    restore();
    let paired = &keep[2].1;
    let diff = row(paired, 2)[6].clone();
    edit_line(&file("paired.csv"), 2, &diff, "x");
    report_refused(
        &out,
        &["paired.csv:2: error: `mean_diff` is `x`, not a number"],
    );
    restore();
    std::fs::write(file("sweep.json"), "{").expect("written");
    report_refused(&out, &["sweep.json:1: error: not JSON"]);
    restore();
    let o = igemu(&["report", out.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// A run of 2.1 M spans (more than a page keeps one by one) on 4 000 busy hosts: the page
/// stays under its cap, draws that cluster merged per pixel and says so, and still draws a
/// small cluster span by span. Before, every span was kept (19 M of them took 2 GiB and
/// more) and this page took about a bar per pixel and host.
#[test]
fn a_run_with_millions_of_spans_gives_a_page_under_the_cap_that_says_it_merged() {
    use std::io::Write;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let summary = run_summary(60_000.0, &[("g/big", 4_000), ("g/small", 8)], &[]);
    std::fs::write(dir.join("summary.json"), summary).expect("written");
    let file = std::fs::File::create(dir.join("intervals.csv")).expect("created");
    let mut w = std::io::BufWriter::new(file);
    writeln!(
        w,
        "request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s"
    )
    .expect("written");
    let leases = [
        "cancellable",
        "suspendable",
        "migratable",
        "non-preemptable",
    ];
    for i in 0..2_100_000u32 {
        // Host by host, VMs of 50 s with gaps between them, lease types in turn.
        let (host, slot) = (i % 4_000, i / 4_000);
        let start = slot * 100 + host % 7;
        let lease = leases[(i % 4) as usize];
        writeln!(
            w,
            "r{i},0,g,big,{host},{lease},running,{start},{}",
            start + 50
        )
        .expect("written");
    }
    for i in 0..1_000u32 {
        let start = i * 50;
        writeln!(
            w,
            "s{i},0,g,small,{},suspendable,running,{start},{}",
            i % 8,
            start + 40
        )
        .expect("written");
    }
    w.flush().expect("flushed");
    drop(w);
    let o = igemu(&["report", dir.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report");
    assert!(
        page.len() <= igemu::report::PAGE_CAP,
        "{} bytes",
        page.len()
    );
    assert!(
        page.contains("g/big — 4000 hosts (4000 held a VM), 2100000 VM spans, merged per pixel")
    );
    assert!(page.contains("Merged per pixel: the run has more spans than a page draws one by one (2000000 in all). Each row stands for 20 hosts"));
    assert!(page.contains("g/small — 8 hosts (8 held a VM), 1000 VM spans, 0 VMs preempted"));
    assert_eq!(page.matches("<svg class=\"chart\"").count(), 2);
}

/// A sweep of 200 000 points (5 000 values × 20 policies × 2 metrics): the page stays under
/// its cap, merges each line's points within a pixel and says so, and its table shows its
/// first rows and says where the rest are. Before, the page took 44 MB.
#[test]
fn a_sweep_of_200k_points_gives_a_page_under_the_cap_that_says_it_merged() {
    use std::io::Write;
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let file = std::fs::File::create(dir.join("points.csv")).expect("created");
    let mut w = std::io::BufWriter::new(file);
    writeln!(w, "set:x,set:policy,metric,n,mean,ci95_low,ci95_high").expect("written");
    for x in 0..5_000u32 {
        for p in 0..20u32 {
            for (m, metric) in ["awrt_s", "utilization_pct"].iter().enumerate() {
                let mean = f64::from(x * (p + 1)) / 7.0 + m as f64;
                writeln!(
                    w,
                    "{x},p{p},{metric},3,{mean},{},{}",
                    mean - 1.5,
                    mean + 1.5
                )
                .expect("written");
            }
        }
    }
    w.flush().expect("flushed");
    drop(w);
    let o = igemu(&["report", dir.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(dir.join("report.html")).expect("report");
    assert!(
        page.len() <= igemu::report::PAGE_CAP,
        "{} bytes",
        page.len()
    );
    assert_eq!(page.matches("<svg class=\"chart\"").count(), 2);
    assert!(page.contains(
        "100000 points lie within a pixel of another of their line and are drawn merged"
    ));
    // A row per point: 100 000 of them.
    assert!(page.contains("300 of 100000 rows shown; the whole table is in points.csv."));
    // A point per pixel column and line at most.
    assert!(page.matches("<g class=\"point\">").count() <= 2 * 20 * 988);
}

/// A sweep of a copy of `peering-small` (so the test can edit it) ending at `end`, varying
/// the dispatch policy over two seeds, in `dir`: the sweep file's path.
fn small_sweep(dir: &Path, end: &str) -> PathBuf {
    let topo = dir.join("small.toml");
    if !topo.exists() {
        let text = std::fs::read_to_string(common::path("topologies/peering-small.toml"))
            .expect("readable");
        std::fs::write(&topo, text).expect("written");
    }
    let sweep = dir.join("s.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = \"small.toml\"\nseeds = 2\nmetrics = [\"utilization_pct\", \"makespan_s\"]\n\
             [set]\n\"emulation.end\" = \"{end}\"\n[vary]\n\"igg.dispatch\" = [\"rr\", \"bcf\"]\n"
        ),
    )
    .expect("written");
    sweep
}

/// The documented default, "every numeric summary key", made runs.csv's `seed` column twice
/// (the summary has a `seed` too): every run ran, then the sweep exited 1 with no points.csv.
/// Now the default leaves the run file's own columns out, a metric named like one is refused
/// at its place before anything runs, and whatever the end of a sweep would fail on is tried
/// on stand-in rows first.
#[test]
fn a_sweep_without_metrics_writes_points_and_run_columns_are_refused_as_metrics() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "1h");
    let text = std::fs::read_to_string(&sweep).expect("readable");
    let without = text.replace("metrics = [\"utilization_pct\", \"makespan_s\"]\n", "");
    assert_ne!(without, text, "the metrics line was removed");
    std::fs::write(&sweep, without).expect("written");
    let out = dir.path().join("out");
    let o = igemu(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let points = std::fs::read_to_string(out.join("points.csv")).expect("points.csv written");
    assert!(points.contains(",awrt_s,"), "{points}");
    assert!(
        !points.contains(",seed,"),
        "the seed is no metric: {points}"
    );
    let runs = std::fs::read_to_string(out.join("runs.csv")).expect("runs.csv written");
    let header = runs.lines().next().unwrap_or_default();
    assert_eq!(
        header.split(',').filter(|c| *c == "seed").count(),
        1,
        "{header}"
    );

    for name in ["seed", "run", "error", "set:igg.dispatch"] {
        let bad = dir.path().join("bad.toml");
        std::fs::write(
            &bad,
            text.replace("\"makespan_s\"", &format!("\"makespan_s\", \"{name}\"")),
        )
        .expect("written");
        let out = dir.path().join(format!("bad-{}", name.replace(':', "-")));
        let o = igemu(&[
            "sweep",
            bad.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("bad.toml:3:") && stderr(&o).contains("column of the run file"),
            "{name}: {}",
            stderr(&o)
        );
        assert!(!out.exists(), "{name}: nothing ran, nothing was written");
    }
}

/// `--resume` keeps the finished rows of the run file: a row of text where a metric is, a NaN,
/// or a second row of one run were taken as they were (the text dropped from the means, the
/// second row replacing the first, the NaN failing only at the end with exit 1). Each is
/// refused before anything runs, at its line, with exit 2, and the file is left as it was.
#[test]
fn resume_refuses_a_run_file_with_text_nan_or_a_run_twice_at_its_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let sweep = small_sweep(dir.path(), "1h");
    let ok = igemu(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let runs = out.join("runs.csv");
    let whole = std::fs::read_to_string(&runs).expect("runs.csv");
    let lines: Vec<&str> = whole.lines().collect();
    assert_eq!(lines.len(), 5, "{whole}");
    // Row of run 1 (line 3): its first metric replaced.
    let with_cell = |cell: &str| {
        let mut cells: Vec<&str> = lines[2].split(',').collect();
        cells[3] = cell;
        cells.join(",")
    };
    for (edited, expect) in [
        (
            [lines[0], lines[1], &with_cell("quick"), lines[3], lines[4]].join("\n"),
            "runs.csv:3: `quick` in column utilization_pct is not a number".to_string(),
        ),
        (
            [lines[0], lines[1], &with_cell("NaN"), lines[3], lines[4]].join("\n"),
            "runs.csv:3: `NaN` in column utilization_pct is not a finite number".to_string(),
        ),
        (
            [lines[0], lines[1], lines[2], lines[3], lines[4], lines[2]].join("\n"),
            "runs.csv:6: run 1 again (also at line 3)".to_string(),
        ),
    ] {
        let edited = edited + "\n";
        std::fs::write(&runs, &edited).expect("written");
        let o = igemu(&["sweep", s(&sweep), "--out", s(&out), "--resume", "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{edited}: {}", stderr(&o));
        assert!(stderr(&o).contains(&expect), "{expect}: {}", stderr(&o));
        assert_eq!(
            std::fs::read_to_string(&runs).expect("runs.csv"),
            edited,
            "left as it was"
        );
    }
}

/// `--overwrite` removed or replaced any file named like igemu's outputs (a user's
/// points.csv, stress.json, sweep.json …). Now a file of such a name that igemu did not write
/// is refused by every command that writes into the folder, named, and left as it was; and
/// the root of the file system is no output folder.
#[test]
fn overwrite_replaces_only_igemus_own_files_and_the_root_is_no_output_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "1h");
    for (name, text) in [
        ("points.csv", "my,own,table\n1,2,3\n"),
        ("stress.json", "{\"mine\": true}\n"),
        ("sweep.json", "{}\n"),
        ("summary.json", "{\"provenance\": {}}\n"),
        ("report.html", "<!DOCTYPE html><title>My page</title>\n"),
    ] {
        let out = dir.path().join(format!("out-{name}"));
        std::fs::create_dir_all(&out).expect("mkdir");
        std::fs::write(out.join(name), text).expect("written");
        for args in [
            vec!["run", "--out", s(&out), "--overwrite", "--quiet"],
            vec![
                "sweep",
                s(&sweep),
                "--out",
                s(&out),
                "--overwrite",
                "--quiet",
            ],
            vec![
                "stress",
                "topologies/peering-small.toml",
                "--seeds",
                "1",
                "--out",
                s(&out),
                "--overwrite",
                "--quiet",
            ],
        ] {
            let o = igemu(&args);
            assert_eq!(o.status.code(), Some(2), "{name} {args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(name) && stderr(&o).contains("not written by igemu"),
                "{name} {args:?}: {}",
                stderr(&o)
            );
            assert_eq!(
                std::fs::read_to_string(out.join(name)).expect("still there"),
                text,
                "{name} {args:?}: left as it was"
            );
            let left: Vec<_> = std::fs::read_dir(&out).expect("dir").collect();
            assert_eq!(left.len(), 1, "{name} {args:?}: nothing else written");
        }
    }
    // igemu's own files are still replaced with --overwrite.
    let out = dir.path().join("own");
    let o = igemu(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = igemu(&["run", "--out", s(&out), "--overwrite", "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.join("summary.json").exists() && !out.join("points.csv").exists());

    for root in ["/", "/tmp/.."] {
        let o = igemu(&["run", "--out", root, "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{root}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("root of the file system"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!Path::new("/summary.json").exists());
}

/// A sweep run again into its folder left the last sweep's points.csv, paired.csv and
/// report.html while it ran: interrupted, they stood beside a partial run file and were
/// drawn as whole. They go when the sweep starts, and come back when it ends.
#[test]
fn a_sweep_run_again_removes_its_points_until_it_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let sweep = small_sweep(dir.path(), "1h");
    let o = igemu(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = igemu(&["report", s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(out.join("points.csv").exists() && out.join("report.html").exists());
    // The same sweep again, with runs long enough to stop it while it runs.
    let long = small_sweep(dir.path(), "2000h");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args([
            "sweep",
            s(&long),
            "--out",
            s(&out),
            "--overwrite",
            "--quiet",
            "--jobs",
            "1",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("igemu starts");
    // The run file is rewritten (header only) once the folder is ready for the new runs.
    let started = (0..600).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::read_to_string(out.join("runs.csv")).is_ok_and(|t| t.lines().count() == 1)
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(started, "the re-run started");
    for gone in ["points.csv", "paired.csv", "report.html"] {
        assert!(
            !out.join(gone).exists(),
            "{gone} left beside a partial run file"
        );
    }
    // The report says what the folder holds and how to finish it.
    let o = igemu(&["report", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds an unfinished sweep (sweep.json says so")
            && stderr(&o).contains(&format!("igemu sweep {} --out", s(&long)))
            && stderr(&o).contains("--resume"),
        "{}",
        stderr(&o)
    );
}

/// Text from input reached the terminal and diagrams raw: a newline in a trace record's `kind`
/// added lines to a Mermaid diagram, and an escape sequence in a trace or in a topology's
/// `name` (a file's or an override's) set the window title and cleared the screen. Such
/// records and values are refused, at their place, shown escaped; nothing raw is printed.
#[test]
fn control_characters_from_traces_and_topologies_never_reach_a_terminal_or_diagram() {
    let dir = tempfile::tempdir().expect("temp dir");
    let raw = |o: &Output| {
        let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(o));
        all.chars()
            .find(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
    };
    let trace = dir.path().join("t.jsonl");
    for (line, field) in [
        (
            r#"{"seq":0,"t_us":0,"from":"igg:a","to":"igg:b","kind":"PeerOffer\nparticipant X","negotiation":1}"#,
            "kind",
        ),
        (
            r#"{"seq":0,"t_us":0,"from":"igg:a","to":"igg:b\u001b]0;pwned\u0007","kind":"PeerOffer","negotiation":1}"#,
            "to",
        ),
    ] {
        std::fs::write(&trace, format!("{line}\n")).expect("written");
        let mermaid = dir.path().join("m.mmd");
        for args in [
            vec!["trace", s(&trace)],
            vec![
                "trace",
                s(&trace),
                "--negotiation",
                "1",
                "--mermaid",
                s(&mermaid),
            ],
            vec!["trace", s(&trace), "--negotiations"],
        ] {
            let o = igemu(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(&format!("t.jsonl:1: `{field}` holds a control")),
                "{}",
                stderr(&o)
            );
            assert_eq!(raw(&o), None, "{args:?}");
            assert!(!mermaid.exists(), "no diagram written");
        }
    }
    let o = igemu(&[
        "run",
        "--set",
        "name=\"x\u{1b}[2J\"",
        "--out",
        s(&dir.path().join("o")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("U+001B"), "{}", stderr(&o));
    assert_eq!(raw(&o), None);
    let o = igemu(&[
        "run",
        "--set",
        "name=x\u{7}",
        "--out",
        s(&dir.path().join("o")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(raw(&o), None);
}

/// `--trace-actors igg:alpa` ran with exit 0 and an empty trace, where `--trace-kinds` said
/// "did you mean". A pattern naming no actor of the run is refused before it, with the closest
/// name; and every actor a traced run names is in the catalogue the check uses, so no real
/// actor is ever refused.
#[test]
fn trace_actor_patterns_that_name_no_actor_are_refused_with_the_closest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("o");
    let o = igemu(&[
        "run",
        "--trace",
        "--trace-actors",
        "igg:alpha,igg:alpa",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`igg:alpa` names no actor of this run; did you mean `igg:alpha`?"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "nothing ran");
    for topology in [
        "topologies/quickstart.toml",
        "topologies/peering-small.toml",
    ] {
        let o = igemu(&[
            "run",
            topology,
            "--trace",
            "--out",
            s(&out),
            "--overwrite",
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let topo = igemu::topology::load_file(
            &common::path(topology),
            &igemu::topology::Overrides::default(),
        )
        .expect("loads");
        let catalogue = igemu::trace::actor_catalogue(&topo);
        let trace = std::fs::read_to_string(out.join("trace.jsonl")).expect("trace");
        let mut names = std::collections::BTreeSet::new();
        for line in trace.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            names.extend(["from", "to"].map(|k| v[k].as_str().unwrap_or_default().to_string()));
        }
        assert!(names.len() > 5, "{names:?}");
        for name in names {
            igemu::trace::check_actor_patterns(std::slice::from_ref(&name), &catalogue)
                .unwrap_or_else(|e| panic!("{topology}: {name}: {e}"));
        }
        for p in ["igg:", "host:", "vm:", "director", "lrms:*"] {
            igemu::trace::check_actor_patterns(&[p.to_string()], &catalogue).expect(p);
        }
    }
}

/// A sweep naming a missing topology gave the topology reader's message (no sweep file, no
/// line, `igemu run`'s hint), and a topology that is not UTF-8 gave no line and "check the
/// path". Each now names its place and what to do.
#[test]
fn a_missing_topology_and_a_file_that_is_not_utf8_are_reported_at_their_place() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = dir.path().join("s.toml");
    std::fs::write(&sweep, "seeds = 2\ntopology = \"nope.toml\"\n").expect("written");
    let o = igemu(&["sweep", s(&sweep), "--out", s(&dir.path().join("o"))]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("s.toml:2:12: error: the topology `nope.toml`"),
        "{err}"
    );
    assert!(
        err.contains("does not exist") && err.contains("relative to the sweep file's folder"),
        "{err}"
    );
    assert!(!err.contains("igemu run"), "{err}");

    let mut bytes = b"# a comment\nname = \"caf".to_vec();
    bytes.push(0xE9); // Latin-1 é
    bytes.extend_from_slice(b"\"\n");
    let topo = dir.path().join("latin1.toml");
    std::fs::write(&topo, bytes).expect("written");
    for args in [
        vec!["validate", s(&topo)],
        vec!["run", s(&topo), "--out", s(&dir.path().join("r"))],
    ] {
        let o = igemu(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("latin1.toml:2:12: error: byte 0xE9 is not UTF-8 text"),
            "{err}"
        );
        assert!(
            err.contains("save the file as UTF-8") && !err.contains("check the path"),
            "{err}"
        );
    }
}

/// A topology given to `sweep` gave nine errors (one per key), a sweep file given to `run` or
/// `validate` two beside the point, and `report` on a stress test's folder suggested a run
/// into it that would be refused. Each now says what the file or folder is, in one message.
#[test]
fn a_file_or_folder_of_the_wrong_kind_is_named_as_what_it_is() {
    let o = igemu(&["sweep", "topologies/quickstart.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("this is a topology file, not a sweep file"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("1 problem found"), "{}", stderr(&o));
    for command in ["validate", "run"] {
        let o = igemu(&[command, "topologies/sweeps/paper000-fig5.toml"]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("this is a sweep file, not a topology")
                && stderr(&o).contains("igemu sweep topologies/sweeps/paper000-fig5.toml")
                && stderr(&o).contains("1 problem found"),
            "{command}: {}",
            stderr(&o)
        );
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("st");
    let o = igemu(&[
        "stress",
        "topologies/quickstart.toml",
        "--seeds",
        "1",
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = igemu(&["report", s(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds a stress test's results")
            && !stderr(&o).contains("igemu run --out"),
        "{}",
        stderr(&o)
    );
}

/// A value of a varied key is compared as a run reads it: `"1h"`, `"60m"` and `3600` set one
/// end, so listed together they would be one point's runs counted as three points (audit).
#[test]
fn a_sweep_refuses_two_spellings_of_one_varied_value_naming_both() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "1h");
    let text = std::fs::read_to_string(&sweep).expect("sweep");
    let text = text.replace(
        "[vary]\n",
        "[vary]\n\"emulation.end\" = [\"1h\", \"60m\", 3600, \"2h\"]\n",
    );
    let text = text.replace("\"emulation.end\" = \"1h\"\n", "");
    std::fs::write(&sweep, text).expect("written");
    let out = tmp_str(&dir, "o");
    let o = refused(
        &["sweep", s(&sweep), "--out", &out, "--quiet"],
        "values 1h and 60m of `emulation.end` are one value (the duration 3600 s)",
    );
    assert!(
        stderr(&o).contains("values 1h and 3600 of `emulation.end` are one value"),
        "{}",
        stderr(&o)
    );
    assert!(
        !Path::new(&out).exists(),
        "nothing is made for a refused sweep"
    );
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("json")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

/// `sweep.json` records what a sweep ran, and `--resume` refuses (exit 2, naming the change)
/// when the fixed `[set]` or the topology file changed since — which `runs.csv` cannot show.
#[test]
fn a_sweep_records_its_inputs_and_resume_refuses_changed_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let sweep = small_sweep(dir.path(), "3h");
    let ok = igemu(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let r = json(&out.join("sweep.json"));
    assert_eq!(r["igemu"], env!("CARGO_PKG_VERSION"));
    assert_eq!(r["sweep_path"], s(&sweep));
    assert!(
        r["topology_path"]
            .as_str()
            .is_some_and(|p| p.ends_with("small.toml")),
        "{r}"
    );
    assert_eq!(r["set"]["emulation.end"], "\"3h\"");
    assert_eq!(r["vary"][0]["key"], "igg.dispatch");
    assert_eq!(
        r["vary"][0]["values"],
        serde_json::json!(["\"rr\"", "\"bcf\""])
    );
    assert_eq!(r["seeds"], serde_json::json!([1, 2]));
    assert_eq!(r["runs"], 4);
    assert_eq!(r["finished"], true);
    assert_eq!(r["policies"]["peering"], "contracts price-range");
    assert_eq!(
        r["outputs"],
        serde_json::json!(["runs.csv", "points.csv", "paired.csv"])
    );
    let (topology_hash, sweep_hash) = (r["topology_hash"].clone(), r["sweep_hash"].clone());
    assert!(topology_hash.as_str().is_some_and(|h| h.len() == 16), "{r}");
    // The same inputs resume (nothing left to run).
    let again = igemu(&["sweep", s(&sweep), "--out", s(&out), "--resume", "--quiet"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        !out.join("sweep.json.tmp").exists(),
        "written through a temporary file"
    );

    // Another fixed value: refused, naming it; nothing is replaced.
    let changed = small_sweep(dir.path(), "2h");
    let refused = igemu(&["sweep", s(&changed), "--out", s(&out), "--resume"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("sweep.json")
            && err.contains("[set] \"emulation.end\" was \"3h\", now \"2h\""),
        "{err}"
    );
    assert_eq!(
        json(&out.join("sweep.json"))["set"]["emulation.end"],
        "\"3h\""
    );

    // The same sweep file over an edited topology: refused, naming the file.
    small_sweep(dir.path(), "3h");
    let topo = dir.path().join("small.toml");
    let text = std::fs::read_to_string(&topo).expect("readable");
    std::fs::write(&topo, text.replace("seed = 3", "seed = 4")).expect("written");
    let refused = igemu(&["sweep", s(&sweep), "--out", s(&out), "--resume"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("the topology file") && err.contains("small.toml changed"),
        "{err}"
    );
    // Without --resume, other inputs' results are not replaced without --overwrite; with
    // it, the sweep starts over and records the new inputs.
    let refused = igemu(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("holds another sweep's results (sweep.json: the topology file"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(
        json(&out.join("sweep.json"))["topology_hash"],
        topology_hash
    );
    let fresh = igemu(&[
        "sweep",
        s(&sweep),
        "--out",
        s(&out),
        "--quiet",
        "--overwrite",
    ]);
    assert_eq!(fresh.status.code(), Some(0), "{}", stderr(&fresh));
    let r = json(&out.join("sweep.json"));
    assert_ne!(r["topology_hash"], topology_hash);
    assert_eq!(r["sweep_hash"], sweep_hash);
}

/// Shards record their inputs in `sweep-I-of-N.json`; `sweep merge` writes one `sweep.json`
/// from them, and refuses shards of different sweeps.
#[test]
fn merged_shards_record_their_sweep_and_shards_of_two_sweeps_do_not_merge() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "3h");
    let shards = dir.path().join("shards");
    for i in 0..2 {
        let shard = format!("{i}/2");
        let o = igemu(&[
            "sweep",
            s(&sweep),
            "--out",
            s(&shards),
            "--shard",
            &shard,
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let r = json(&shards.join(format!("sweep-{i}-of-2.json")));
        assert_eq!(r["shard"], shard);
        assert_eq!(
            r["outputs"],
            serde_json::json!([format!("runs-{i}-of-2.csv")])
        );
    }
    assert!(!shards.join("sweep.json").exists());
    let merged = dir.path().join("merged");
    let runs = |i: usize| shards.join(format!("runs-{i}-of-2.csv"));
    let (r0, r1) = (runs(0), runs(1));
    let o = igemu(&["sweep", "merge", "--out", s(&merged), s(&r0), s(&r1)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let m = json(&merged.join("sweep.json"));
    let shard0 = json(&shards.join("sweep-0-of-2.json"));
    assert_eq!(m["shard"], serde_json::Value::Null);
    assert_eq!(m["finished"], true);
    assert_eq!(m["topology_hash"], shard0["topology_hash"]);
    assert_eq!(m["merged_from"], serde_json::json!([s(&r0), s(&r1)]));
    assert_eq!(
        m["outputs"],
        serde_json::json!(["runs.csv", "points.csv", "paired.csv"])
    );

    // A shard of the same sweep file with another fixed value does not merge with shard 0.
    let other = dir.path().join("other");
    let changed = small_sweep(dir.path(), "2h");
    let o = igemu(&[
        "sweep",
        s(&changed),
        "--out",
        s(&other),
        "--shard",
        "1/2",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r1 = other.join("runs-1-of-2.csv");
    let o = igemu(&[
        "sweep",
        "merge",
        "--out",
        s(&dir.path().join("bad")),
        s(&r0),
        s(&r1),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("record different sweeps") && stderr(&o).contains("emulation.end"),
        "{}",
        stderr(&o)
    );
}

/// A sweep of two realtime runs of 3.6 wall seconds each (quickstart to 4 h at 4000×) shows
/// plain progress lines on a pipe — runs done, elapsed, time left, no escape codes — and
/// nothing with --quiet.
#[test]
fn a_long_sweep_shows_plain_progress_lines_on_a_pipe_and_none_with_quiet() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = dir.path().join("rt.toml");
    let topo = common::path("topologies/quickstart.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = {:?}\nseeds = 2\nmetrics = [\"makespan_s\"]\n[set]\n\
             \"emulation.mode\" = \"realtime\"\n\"emulation.speedup\" = 4000.0\n\
             \"emulation.end\" = \"4h\"\n",
            s(&topo)
        ),
    )
    .expect("written");
    let out = dir.path().join("out");
    let o = igemu(&["sweep", s(&sweep), "--out", s(&out), "--jobs", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("sweep: ")).collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("/2 runs, ") && l.contains("s elapsed, ~")),
        "{err:?}"
    );
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
    let o = igemu(&[
        "sweep",
        s(&sweep),
        "--out",
        s(&out),
        "--jobs",
        "1",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "sweep --quiet shows no progress");
}

#[test]
fn a_reader_that_goes_away_ends_the_output_quietly() {
    // More lines than a pipe holds, to a reader that closed its end at once: `validate ...
    // | head -1` must not panic (exit 101) on the broken pipe.
    let files = vec!["topologies/quickstart.toml"; 5_000];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .arg("validate")
        .args(&files)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("igemu starts");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("igemu ends");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn inputs_beyond_their_caps_are_refused_with_the_cap_named_not_a_crash() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let topo = common::path("topologies/quickstart.toml");
    let cases = [
        ("seeds = 1000000000000\n", "1000000000000 seeds"),
        (
            "[vary]\n\"lrms.cp_alpha\" = { from = 1, to = 1e15, step = 1 }\n",
            "1000000000000000 values",
        ),
        (
            "seeds = 1000\n[vary]\n\"lrms.cp_alpha\" = { from = 1, to = 2000, step = 1 }\n",
            "2000000 runs (points × seeds)",
        ),
    ];
    for (k, (body, expect)) in cases.iter().enumerate() {
        let sweep = dir.path().join(format!("s{k}.toml"));
        std::fs::write(
            &sweep,
            format!("topology = {:?}\n{body}", topo.display().to_string()),
        )
        .expect("written");
        let o = igemu(&[
            "sweep",
            sweep.to_str().expect("utf-8"),
            "--out",
            &tmp_str(&dir, "o"),
        ]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{body}: {}", stderr(&o));
    }
    let o = igemu(&[
        "stress",
        "topologies/quickstart.toml",
        "--seeds",
        "18446744073709551615",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("more than 100000")
            && stderr(&o).contains("--first-seed 100001 --seeds 100000"),
        "{}",
        stderr(&o)
    );
    // An endless file is read only up to the cap.
    if Path::new("/dev/zero").exists() {
        for args in [&["validate", "/dev/zero"][..], &["run", "/dev/zero"][..]] {
            let o = igemu(args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
            assert!(stderr(&o).contains("larger than 16 MiB"), "{}", stderr(&o));
        }
    }
}

/// Before: SWF and GWF traces were read whole, up to 2 GiB, before parsing, so `/dev/zero`
/// took 4.8 s and 2.2 GB to be refused, and aborted (exit 134) under a 1.5 GB limit. Now a
/// trace is streamed a line at a time, and a line with no end is refused at line 1.
#[cfg(unix)]
#[test]
fn a_workload_trace_with_no_line_end_is_refused_at_line_1_in_little_memory() {
    if !Path::new("/dev/zero").exists() {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let long = format!(
        "longer than {} bytes: not a line of a trace",
        igemu::workload::tracefile::MAX_LINE
    );
    let hint = "hint: a workload trace (SWF, GWF) is a text file of job lines";
    let mut cases = vec![(
        vec!["workload".to_string(), "inspect".into(), "/dev/zero".into()],
        format!("/dev/zero:1: error: {long}"),
    )];
    for model in ["swf", "gwf"] {
        let topology = tmp.path().join(format!("{model}.toml"));
        let body = format!(
            "[[grid]]\nname = \"a\"\n[[grid.cluster]]\nname = \"c\"\n\
             hosts = {{ count = 1, cores = 4, memory_mb = 8192 }}\n\
             [[workload]]\norigin = \"external\"\ngrid = \"a\"\nmodel = \"{model}\"\n\
             [workload.{model}]\npath = \"/dev/zero\"\n"
        );
        std::fs::write(&topology, body).expect("written");
        let topology = topology.to_str().expect("utf-8").to_string();
        let expect = format!("{model}.toml:11:8: error: /dev/zero: line 1: {long}");
        cases.push((vec!["validate".into(), topology.clone()], expect.clone()));
        let out = tmp_str(&tmp, &format!("{model}-out"));
        cases.push((vec!["run".into(), topology, "--out".into(), out], expect));
    }
    for (args, expect) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, err) = igemu_in_memory(1_500_000, &args, 30).expect("ends in seconds");
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(&expect), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: {err}");
    }
}

#[test]
fn a_workload_no_draw_can_satisfy_is_an_error_not_a_hang() {
    // Before: validate never returned (a rejection loop waiting for a run time under 1 ms).
    let o = igemu(&[
        "validate",
        "topologies/paper000-three-clusters.toml",
        "--set",
        "workload.0.das2.duration_max_s=0.001",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("raise duration_max_s or lower duration_a"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn merging_a_run_file_into_its_own_directory_keeps_it() {
    // `sweep merge --out D D/runs.csv` used to truncate its own input before reading it.
    let dir = tempfile::tempdir().expect("temporary directory");
    let sweep = dir.path().join("s.toml");
    let topo = common::path("topologies/quickstart.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = {:?}\nseeds = 2\nmetrics = [\"makespan_s\"]\n",
            topo.display().to_string()
        ),
    )
    .expect("written");
    let out = dir.path().join("o");
    let o = igemu(&[
        "sweep",
        sweep.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs = out.join("runs.csv");
    let before = std::fs::read_to_string(&runs).expect("runs");
    let o = igemu(&[
        "sweep",
        "merge",
        "--out",
        out.to_str().expect("utf-8"),
        runs.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&runs).expect("runs"), before);
    assert_eq!(before.lines().count(), 3);
}

/// `igemu validate` of `topologies/quickstart.toml` with `sets`: (exit code, standard error).
fn validate_quickstart(sets: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["validate", "topologies/quickstart.toml"];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = igemu(&args);
    (o.status.code(), stderr(&o))
}

/// Writes `body` as `name` in `dir` and validates it: (exit code, standard error).
fn validate_text(dir: &Path, name: &str, body: &str) -> (Option<i32>, String) {
    let file = dir.join(name);
    std::fs::write(&file, body).expect("written");
    let o = igemu(&["validate", file.to_str().expect("utf-8")]);
    (o.status.code(), stderr(&o))
}

/// One Grid of `clusters` clusters, each of `groups` host groups of `count` hosts.
fn hosts_topology(clusters: usize, groups: usize, count: u64) -> String {
    let mut t = String::from("[[grid]]\nname = \"g\"\n");
    for c in 0..clusters {
        t.push_str(&format!("[[grid.cluster]]\nname = \"c{c}\"\nhosts = ["));
        for _ in 0..groups {
            t.push_str(&format!(
                "{{ count = {count}, cores = 1, memory_mb = 1024 }}, "
            ));
        }
        t.push_str("]\n");
    }
    t
}

#[test]
fn clusters_past_16_bit_host_indices_and_topologies_past_the_host_cap_are_refused() {
    // Before: up to a million hosts a group and any number of groups and clusters were
    // taken (and allocated); hosts are numbered in 16 bits, so VMs of host 65 536 and up
    // landed on the wrong hosts.
    let dir = tempfile::tempdir().expect("temporary directory");
    let (code, err) = validate_quickstart(&["grid.0.cluster.0.hosts.count=70000"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("`count` = 70000 is out of range") && err.contains("0 to 65535"),
        "{err}"
    );
    let (code, err) = validate_quickstart(&["grid.0.cluster.0.hosts.count=99999999999999999999"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("`count` = 99999999999999999999 is out of range"),
        "{err}"
    );
    let (code, err) = validate_text(dir.path(), "two.toml", &hosts_topology(1, 2, 40_000));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("two.toml:5:"), "{err}");
    assert!(
        err.contains("has 80000 hosts so far, more than 65535"),
        "{err}"
    );
    assert!(err.contains("split it into several clusters"), "{err}");
    let (code, err) = validate_text(dir.path(), "many.toml", &hosts_topology(17, 1, 60_000));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("the topology has 1020000 hosts so far, more than 1000000"),
        "{err}"
    );
    assert!(err.contains("about 1 KB"), "{err}");
    // At the limits, it validates.
    let (code, err) = validate_text(dir.path(), "max.toml", &hosts_topology(1, 1, 65_535));
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn times_past_the_end_of_emulated_time_are_errors_at_their_place_not_wrapped() {
    // Before: an integer of seconds saturated to "never", an hour count times 3600 wrapped
    // around to a short time, a trace's run time saturated, a rate factor stretched the span
    // past the end of time: all silently accepted.
    let range = "from 0 to 10^12 s";
    for (set, expect) in [
        ("emulation.end=1000000000000000", range),
        ("emulation.end=1e15", range),
        ("emulation.horizon=-5", range),
        ("emulation.end=\"5124095576030432:00:00\"", range),
        ("emulation.end=\"18446744073709551615:00:00\"", range),
        ("workload.0.request.0.arrival=1000000000001", range),
        ("workload.0.request.0.duration=1e15", range),
        ("workload.0.request.2.deadline=9223372036854775807", range),
        ("peering.interval=[\"1m\", 1e300]", range),
        ("fault.delay=1e13", range),
    ] {
        let (code, err) = validate_quickstart(&[set]);
        assert_eq!(code, Some(2), "{set}: {err}");
        assert!(
            err.contains(&format!("--set {set}: error:")),
            "{set}: {err}"
        );
        assert!(err.contains(expect), "{set}: {err}");
    }
    let o = igemu(&[
        "validate",
        "topologies/paper000-three-clusters.toml",
        "--set",
        "workload.0.span=900000000000",
        "--set",
        "workload.0.rate_factor=100",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("span × rate_factor = 90000000000000 s"),
        "{}",
        stderr(&o)
    );
    // A duration stated at the reference speed lasts longer on a slower cluster.
    let (code, err) = validate_quickstart(&[
        "emulation.reference_mips=1000000000",
        "workload.0.request.0.duration=900000000",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("request `ext-1` (900000000 s at the reference speed) would run until"),
        "{err}"
    );
    // A trace's times past the end are errors at their line and field.
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(
        dir.path().join("t.swf"),
        "1 0 0 1e15 1 -1 -1 1 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n",
    )
    .expect("written");
    let (code, err) = validate_text(
        dir.path(),
        "swf.toml",
        "[[grid]]\nname = \"a\"\n[[grid.cluster]]\nname = \"c\"\n\
         hosts = { count = 1, cores = 4, memory_mb = 8192 }\n\
         [[workload]]\norigin = \"external\"\ngrid = \"a\"\nmodel = \"swf\"\n\
         [workload.swf]\npath = \"t.swf\"\n",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("line 1") && err.contains("field 4 is 1000000000000000 s"),
        "{err}"
    );
}

#[test]
fn a_rate_too_small_for_a_finite_operation_time_is_an_error_at_its_place() {
    // Before: suspend_rate_mb_s = 1e-310 (a denormal, above zero) was taken, 1024 MB / 1e-310
    // overflowed to infinity and the suspension took no time at all.
    let dir = tempfile::tempdir().expect("temporary directory");
    let profile = |rate: &str| {
        format!(
            "name = \"slow\"\n[timings]\nsuspend_rate_mb_s = {rate}\nresume_rate_mb_s = 8.0\n\
             copy_rate_mb_s = 6.0\n"
        )
    };
    let topo = "[lrms]\nprofile = \"slow.toml\"\n[[grid]]\nname = \"a\"\n[[grid.cluster]]\n\
                name = \"c\"\nhosts = { count = 1, cores = 4, memory_mb = 8192 }\n";
    for rate in ["1e-310", "0.0", "nan", "inf", "1e300"] {
        std::fs::write(dir.path().join("slow.toml"), profile(rate)).expect("written");
        let (code, err) = validate_text(dir.path(), "t.toml", topo);
        assert_eq!(code, Some(2), "{rate}: {err}");
        assert!(
            err.contains("slow.toml:3:21: error: `suspend_rate_mb_s`"),
            "{rate}: {err}"
        );
        if rate != "nan" && rate != "inf" {
            assert!(err.contains("from 0.01 to 1000000000"), "{rate}: {err}");
        }
    }
    std::fs::write(dir.path().join("slow.toml"), profile("0.01")).expect("written");
    let (code, err) = validate_text(dir.path(), "t.toml", topo);
    assert_eq!(code, Some(0), "{err}");
    // The realtime speedup is a rate too.
    let (code, err) = validate_quickstart(&["emulation.mode=realtime", "emulation.speedup=1e-310"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`speedup` = 1e-310 is out of range"), "{err}");
}

#[test]
fn a_written_request_id_cannot_take_a_generated_ones_name() {
    // Before: `g-1` written in one workload and generated as the first request of workload
    // `g` were two requests under one id in every output.
    let dir = tempfile::tempdir().expect("temporary directory");
    let body = |first: bool| {
        let written = "[[workload]]\nname = \"x\"\norigin = \"external\"\ngrid = \"a\"\n\
                       [[workload.request]]\nid = \"g-1\"\narrival = \"0s\"\nduration = \"1h\"\n\
                       vms = 1\nmem_mb = 512\n";
        let generated = "[[workload]]\nname = \"g\"\norigin = \"external\"\ngrid = \"a\"\n\
                         model = \"das2\"\nspan = \"1h\"\n";
        let (a, b) = if first {
            (written, generated)
        } else {
            (generated, written)
        };
        format!(
            "[[grid]]\nname = \"a\"\n[[grid.cluster]]\nname = \"c\"\n\
             hosts = {{ count = 4, cores = 4, memory_mb = 8192 }}\n{a}{b}"
        )
    };
    for first in [true, false] {
        let (code, err) = validate_text(dir.path(), "dup.toml", &body(first));
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains("error: request id `g-1` is used twice"),
            "{err}"
        );
        assert!(
            err.contains("request #1 of workload `x` (its `id`)"),
            "{err}"
        );
        assert!(
            err.contains("request 1 of workload `g` (named `g-<n>`"),
            "{err}"
        );
        let line = if first { 11 } else { 17 };
        assert!(err.contains(&format!("dup.toml:{line}:6: error")), "{err}");
    }
}

#[test]
fn empty_hosts_clusters_and_grids_are_errors_at_their_place() {
    // Before: `hosts = []` dropped the cluster without a word (only "unknown cluster" where a
    // workload named it), and `grid = []` or `cluster = []` said nothing of the empty list.
    for (set, expect) in [
        (
            "grid.0.cluster.0.hosts=[]",
            "--set grid.0.cluster.0.hosts=[]: error: `hosts` of cluster `a1` of grid `alpha` is empty",
        ),
        (
            "grid.0.cluster=[]",
            "--set grid.0.cluster=[]: error: `cluster` of grid `alpha` is empty",
        ),
        ("grid=[]", "--set grid=[]: error: `grid` is empty"),
    ] {
        let (code, err) = validate_quickstart(&[set]);
        assert_eq!(code, Some(2), "{set}: {err}");
        assert!(err.contains(expect), "{set}: {err}");
    }
    // A sweep's empty lists made no run at all (or silently took every metric).
    let dir = tempfile::tempdir().expect("temporary directory");
    let topo = common::path("topologies/quickstart.toml");
    for (body, expect) in [
        ("seeds = []\n", "s.toml:2:9: error: `seeds` lists no seed"),
        (
            "metrics = []\n",
            "s.toml:2:11: error: `metrics` lists no metric",
        ),
        (
            "[vary]\n\"igg.dispatch\" = []\n",
            "s.toml:3:18: error: `igg.dispatch` in [vary] lists no value",
        ),
    ] {
        let sweep = dir.path().join("s.toml");
        std::fs::write(
            &sweep,
            format!("topology = {:?}\n{body}", topo.display().to_string()),
        )
        .expect("written");
        let o = igemu(&["sweep", s(&sweep), "--out", &tmp_str(&dir, "o"), "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{body}: {}", stderr(&o));
    }
}

#[test]
fn seeds_take_the_whole_u64_range_on_the_command_line_in_topologies_and_sweeps() {
    // Before: TOML integers stop at 2^63 − 1, so `--seed 18446744073709551615` (a u64) was
    // refused as an out-of-range integer.
    let dir = tempfile::tempdir().expect("temporary directory");
    let big = "18446744073709551615";
    let out = tmp_str(&dir, "run");
    let o = igemu(&[
        "run",
        "topologies/quickstart.toml",
        "--seed",
        big,
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = json(&dir.path().join("run/summary.json"));
    assert_eq!(summary["seed"].as_u64(), Some(u64::MAX));
    assert_eq!(
        summary["provenance"]["overrides"][0].as_str(),
        Some(format!("emulation.seed={big}").as_str())
    );
    for set in [
        format!("emulation.seed=\"{big}\""),
        format!("emulation.seed={big}"),
    ] {
        let (code, err) = validate_quickstart(&[&set]);
        assert_eq!(code, Some(0), "{set}: {err}");
    }
    let (code, err) = validate_quickstart(&["emulation.seed=-1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("from 0 to 18446744073709551615"), "{err}");
    let sweep = dir.path().join("s.toml");
    let topo = common::path("topologies/quickstart.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = {:?}\nseeds = [1, \"{big}\"]\nmetrics = [\"makespan_s\"]\n",
            topo.display().to_string()
        ),
    )
    .expect("written");
    let o = igemu(&["sweep", s(&sweep), "--out", &tmp_str(&dir, "sw"), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let runs = std::fs::read_to_string(dir.path().join("sw/runs.csv")).expect("runs");
    assert!(runs.contains(&format!("\n1,{big},")), "{runs}");
}

#[test]
fn numeric_settings_out_of_their_documented_range_are_errors_naming_value_and_range() {
    // Before: each of these was taken (non-finite floats are valid TOML) and broke a run
    // later: infinite prices, a Weibull shape whose draws overflow, an endless wall wait.
    for (set, expect) in [
        (
            "peering.steepness=1e300",
            "`steepness` = 1e300 is out of range",
        ),
        (
            "peering.steepness=nan",
            "`steepness` = NaN in [peering] must be a finite number",
        ),
        (
            "peering.unit_cost=[0.5, inf]",
            "`unit_cost` = [0.5, inf] in [peering] is out of range",
        ),
        ("peering.load_threshold=-inf", "must be a finite number"),
        (
            "contract.0.price_max=1e300",
            "`price_max` = 1e300 is out of range",
        ),
        (
            "lrms.pacp_low_ratio=1e300",
            "`pacp_low_ratio` = 1e300 is out of range",
        ),
        (
            "lrms.cp_alpha=2",
            "`cp_alpha` = 2 is out of range in [lrms]",
        ),
        ("fault.drop=nan", "must be a finite number"),
        (
            "grid.0.cluster.0.hosts.cores=100000",
            "`cores` = 100000 is out of range",
        ),
        ("grid.0.cluster.0.hosts.mips=0", "`mips` must be at least 1"),
        (
            "fault.delay={kind=\"uniform\",min=\"5s\",max=\"1s\"}",
            "has min 5s above max 1s",
        ),
    ] {
        let (code, err) = validate_quickstart(&[set]);
        assert_eq!(code, Some(2), "{set}: {err}");
        assert!(
            err.contains(&format!("--set {set}: error:")),
            "{set}: {err}"
        );
        assert!(err.contains(expect), "{set}: {err}");
    }
    for (set, expect) in [
        (
            "workload.0.das2.arrival_scale=1e-310",
            "`arrival_scale` = 1e-310 is out of range",
        ),
        (
            "workload.0.das2.arrival_shape=1e-300",
            "`arrival_shape` = 1e-300 is out of range",
        ),
        (
            "workload.0.das2.size_h=1e300",
            "`size_h` = 1e300 is out of range",
        ),
        ("workload.0.das2.duration_a=inf", "must be a finite number"),
        (
            "workload.0.deadlines.high_mean=1e300",
            "`high_mean` = 1e300 is out of range",
        ),
    ] {
        let o = igemu(&[
            "validate",
            "topologies/paper000-three-clusters.toml",
            "--set",
            set,
        ]);
        assert_eq!(o.status.code(), Some(2), "{set}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{set}: {}", stderr(&o));
        if !expect.contains("finite") {
            assert!(
                stderr(&o).contains("hint: use a number"),
                "{set}: {}",
                stderr(&o)
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn a_sweep_summary_that_cannot_be_written_leaves_the_old_one_whole() {
    // Before: points.csv and paired.csv were written in place, so a failure midway (a full
    // disk) left a truncated file; now each goes through a temporary file renamed at the end.
    let dir = tempfile::tempdir().expect("temporary directory");
    let sweep = dir.path().join("s.toml");
    let topo = common::path("topologies/quickstart.toml");
    std::fs::write(
        &sweep,
        format!(
            "topology = {:?}\nseeds = 2\nmetrics = [\"makespan_s\"]\n[vary]\n\"igg.dispatch\" = [\"rr\", \"lrf\"]\n",
            topo.display().to_string()
        ),
    )
    .expect("written");
    let out = dir.path().join("o");
    let o = igemu(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // An earlier merge of the same sweep, its files marked.
    let merged = dir.path().join("merged");
    std::fs::create_dir_all(&merged).expect("made");
    std::fs::copy(out.join("sweep.json"), merged.join("sweep.json")).expect("copied");
    // (Each with igemu's columns: --overwrite replaces igemu's files only.)
    let files = [
        ("runs.csv", "run,seed,set:igg.dispatch,makespan_s,error\n"),
        (
            "points.csv",
            "set:igg.dispatch,metric,n,mean,ci95_low,ci95_high\n",
        ),
        (
            "paired.csv",
            "key,a,b,metric,n,mean_diff,ci95_low,ci95_high\n",
        ),
    ];
    for (file, old) in files {
        std::fs::write(merged.join(file), old).expect("written");
    }
    // A disk with no room left: no file may grow past 0 bytes; the first write ends the
    // process (SIGXFSZ), as a full disk and a Ctrl-C at once would.
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 0 && exec \"$0\" sweep merge --out \"$1\" \"$2\"")
        .arg(env!("CARGO_BIN_EXE_igemu"))
        .arg(&merged)
        .arg(out.join("runs.csv"))
        .output()
        .expect("sh runs");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        o.status.signal(),
        Some(25),
        "killed writing: {}",
        stderr(&o)
    );
    for (file, old) in files {
        assert_eq!(
            std::fs::read_to_string(merged.join(file)).expect("still there"),
            old,
            "{file}"
        );
    }
}

#[test]
fn errors_to_a_reader_that_goes_away_end_quietly_with_exit_code_2() {
    // `igemu validate BAD 2>&1 | head -1`: the diagnostics went through eprintln!, which
    // panicked (exit 101) on the closed standard error.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args(["validate", "topologies/quickstart.toml"])
        .args(["--set", "grid.0.cluster.0.hosts.count=70000"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("igemu starts");
    drop(child.stderr.take());
    let status = child.wait().expect("igemu ends");
    assert_eq!(status.code(), Some(2));
}

/// `GET path` from a server at `addr`; the whole response.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("the live view listens");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("request sent");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// The JSON body of an HTTP response.
fn json_body(response: &str) -> serde_json::Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[test]
fn the_live_view_shows_a_realtime_run_as_it_goes_and_stops_with_it() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("live");
    // About 5 s of wall time.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args(["run", "topologies/peering-small.toml", "--mode", "realtime"])
        .args([
            "--speedup",
            "100000",
            "--serve",
            "127.0.0.1:0",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("igemu starts");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = first
        .strip_prefix("live view: http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("no address: {first}"))
        .to_string();
    // A browser, meanwhile, for as long as the run lasts.
    let browser = chromium().map(|chrome| {
        let url = format!("http://{addr}/");
        std::thread::spawn(move || {
            let profile = tempfile::tempdir().expect("temporary directory");
            std::process::Command::new(chrome)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                ])
                .args([
                    "--disable-background-networking",
                    "--disable-component-update",
                ])
                .args(["--disable-sync", "--enable-logging=stderr"])
                // Waits while the page's event stream is open: until the run ends.
                .args(["--virtual-time-budget=3000", "--dump-dom"])
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg(url)
                .output()
                .expect("chromium starts")
        })
    });
    let page = http_get(&addr, "/");
    assert!(page.starts_with("HTTP/1.1 200") && page.contains("EventSource(\"/events\")"));
    // Values change while the run proceeds (the first frame comes when it starts).
    let mut a = serde_json::Value::Null;
    for _ in 0..50 {
        let r = http_get(&addr, "/frame");
        if !r.ends_with("\r\n\r\n") {
            a = json_body(&r);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(800));
    let b = json_body(&http_get(&addr, "/frame"));
    assert!(
        b["t_s"].as_f64() > a["t_s"].as_f64() && b["messages"].as_u64() > a["messages"].as_u64(),
        "{a}\n{b}"
    );
    assert_eq!(b["clusters"].as_array().map(Vec::len), Some(4), "{b}");
    assert!(!b["recent"].as_array().expect("recent").is_empty(), "{b}");
    // The event stream: frames at least once a second, the last one saying the run is done.
    let stream = http_get(&addr, "/events");
    let frames: Vec<serde_json::Value> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("data: {\"topology\""))
        .map(|l| serde_json::from_str(&format!("{{\"topology\"{l}")).expect("a frame"))
        .collect();
    assert!(frames.len() >= 3, "{} frames", frames.len());
    let last = frames.last().expect("frames");
    assert_eq!(last["done"], true, "{last}");
    assert!(stream.contains("event: end"));
    let status = child.wait().expect("igemu ends");
    assert!(status.success(), "{status:?}");
    // Done with the run: nothing listens any more.
    assert!(
        std::net::TcpStream::connect(&addr).is_err(),
        "still serving"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary"))
            .expect("json");
    assert_eq!(
        last["messages"], summary["messages"],
        "the last frame is the run's end"
    );

    let Some(browser) = browser else {
        eprintln!("SKIPPED the browser check: no chromium on the PATH (install Debian's `chromium`, or set IGEMU_CHROMIUM)");
        return;
    };
    let shown = browser.join().expect("browser thread");
    assert!(
        shown.status.success(),
        "chromium failed: {}",
        stderr(&shown)
    );
    let dom = String::from_utf8_lossy(&shown.stdout);
    let body = dom
        .find("<body")
        .and_then(|at| {
            dom[at..]
                .find('>')
                .map(|end| dom[at..=at + end].to_string())
        })
        .unwrap_or_default();
    let attr = |name: &str| -> u64 {
        body.split(&format!("data-{name}=\""))
            .nth(1)
            .and_then(|v| v.split('"').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    assert!(
        body.contains("data-state=\"ended\""),
        "the page did not follow the run: {body}"
    );
    assert!(
        attr("frames") >= 3 && attr("times") >= 3,
        "values did not change: {body}"
    );
    assert!(body.contains("data-errors=\"0\""), "script errors: {body}");
    assert!(
        !stderr(&shown).contains("Uncaught"),
        "console errors:\n{}",
        stderr(&shown)
    );
    assert!(dom.contains("busy/b1"), "no clusters drawn");
}

/// A realtime run of the small peering topology serving its live view (`--serve ADDR` and
/// `extra`), started in the background: the child and the address it says it serves at.
fn live_run(serve: &str, extra: &[&str], out: &Path) -> (std::process::Child, Option<String>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args(["run", "topologies/peering-small.toml", "--mode", "realtime"])
        // About 25 s of wall time: these tests end it sooner.
        .args(["--speedup", "20000", "--quiet", "--serve", serve])
        .args(extra)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("igemu starts");
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let addr = first
        .strip_prefix("live view: http://")
        .and_then(|a| a.strip_suffix('/'))
        .map(str::to_string);
    (child, addr)
}

/// Ends a child this test started and returns its standard error.
fn end(mut child: std::process::Child) -> String {
    use std::io::Read;
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// `--serve` on an address that is not loopback is refused (exit 2, nothing written) unless
/// `--serve-public` says so; then it serves, with a warning that other machines can see it.
#[test]
fn the_live_view_listens_beyond_loopback_only_when_told_to_and_says_so() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("o");
    let out_s = out.to_str().expect("utf-8 path");
    for addr in ["0.0.0.0:0", "[::]:0", "0:0"] {
        let ran = refused(
            &[
                "run",
                "topologies/peering-small.toml",
                "--mode",
                "realtime",
                "--speedup",
                "1000",
                "--quiet",
                "--serve",
                addr,
                "--out",
                out_s,
            ],
            "--serve-public",
        );
        assert!(
            stderr(&ran).contains("not a loopback address"),
            "{addr}: {}",
            stderr(&ran)
        );
        assert!(!out.exists(), "{addr}: outputs written");
    }
    // The flag alone means nothing.
    let ran = igemu(&["run", "--serve-public", "--out", out_s]);
    assert_eq!(ran.status.code(), Some(2), "{}", stderr(&ran));
    assert!(!out.exists());
    // Told to: it listens on every interface (port 0: a free one), and warns.
    let (child, addr) = live_run("0.0.0.0:0", &["--serve-public"], &out);
    let port = addr
        .as_deref()
        .and_then(|a| a.strip_prefix("0.0.0.0:"))
        .map(str::to_string);
    // Reached here through loopback only.
    let page = port
        .as_ref()
        .map(|p| http_get(&format!("127.0.0.1:{p}"), "/"))
        .unwrap_or_default();
    let err = end(child);
    assert!(port.is_some(), "no address on 0.0.0.0: {addr:?}: {err}");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        err.contains("warning") && err.contains("reachable from other machines"),
        "{err}"
    );
    // Loopback needs no flag and gets no warning.
    let (child, addr) = live_run("localhost:0", &[], &tmp.path().join("o2"));
    let err = end(child);
    assert!(addr.is_some(), "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// The first line of the answer to `GET path`, or what went wrong; bounded in time.
fn http_status(addr: std::net::SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let timeout = std::time::Duration::from_secs(5);
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, timeout) else {
        return "cannot connect".into();
    };
    let _ = s.set_read_timeout(Some(timeout));
    if write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").is_err() {
        return "cannot send".into();
    }
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out);
    out.lines().next().unwrap_or("no answer").to_string()
}

/// `n` sockets holding connections to `addr` the slow way: each sends the start of a request
/// line, then a byte a second, and is opened again as soon as the server answers or closes
/// it. Says on `ready` how many are open at first; ends when `stop` is set or after 20 s.
/// Returns how many times a socket was opened again.
fn slowloris(
    addr: std::net::SocketAddr,
    n: usize,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ready: std::sync::mpsc::Sender<usize>,
) -> usize {
    use std::io::{ErrorKind, Read, Write};
    use std::time::{Duration, Instant};
    let open = || -> Option<std::net::TcpStream> {
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
        s.write_all(b"GET /").ok()?;
        s.set_nonblocking(true).ok()?;
        Some(s)
    };
    let mut sockets: Vec<(Option<std::net::TcpStream>, Instant)> =
        (0..n).map(|_| (open(), Instant::now())).collect();
    let _ = ready.send(sockets.iter().filter(|s| s.0.is_some()).count());
    let end = Instant::now() + Duration::from_secs(20);
    let mut reopened = 0;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < end {
        for (socket, last) in &mut sockets {
            let mut alive = socket.as_mut().is_some_and(|s| {
                // Any answer (503, 408) or a close ends this one.
                matches!(s.read(&mut [0u8; 512]), Err(e) if e.kind() == ErrorKind::WouldBlock)
            });
            if alive && last.elapsed() >= Duration::from_secs(1) {
                alive = socket.as_mut().is_some_and(|s| s.write(b"a").is_ok());
                *last = Instant::now();
            }
            if !alive {
                *socket = open();
                *last = Instant::now();
                reopened += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reopened
}

/// 200 slow sockets (slowloris) do not starve the live view: page loads and an event stream
/// are all answered while they are held. (The threaded server of before had 16 places, each
/// held 2 s by a slow socket: 0 to 2 of 40 page loads got through.)
#[test]
fn slow_sockets_do_not_starve_the_live_view() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    const SLOW: usize = 200;
    const LOADS: usize = 40;
    let tmp = tempfile::tempdir().expect("temp dir");
    let (child, addr) = live_run("127.0.0.1:0", &[], &tmp.path().join("o"));
    let Some(addr) = addr.and_then(|a| a.parse::<std::net::SocketAddr>().ok()) else {
        panic!("no address: {}", end(child));
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (ready, opened) = std::sync::mpsc::channel();
    let held = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || slowloris(addr, SLOW, stop, ready))
    };
    let opened = opened.recv().unwrap_or(0);
    // Let the server take them all in.
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let statuses: Vec<String> = (0..LOADS)
        .map(|_| {
            let s = http_status(addr, "/");
            std::thread::sleep(Duration::from_millis(20));
            s
        })
        .collect();
    let loads = start.elapsed();
    // An event stream: its head and a first frame.
    let mut events = String::new();
    if let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
        let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = write!(s, "GET /events HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        let by = Instant::now() + Duration::from_secs(5);
        let mut buf = [0u8; 4096];
        while Instant::now() < by && !events.contains("data: {") {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => events.push_str(&String::from_utf8_lossy(&buf[..n])),
                Err(_) => {}
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let reopened = held.join().expect("slow sockets");
    let err = end(child);
    let ok = statuses
        .iter()
        .filter(|s| s.starts_with("HTTP/1.1 200"))
        .count();
    eprintln!(
        "with {opened} slow sockets held ({reopened} reopened): {ok} of {LOADS} page loads answered 200 OK in {loads:?}"
    );
    assert_eq!(ok, LOADS, "{statuses:?}\n{err}");
    assert_eq!(opened, SLOW, "{err}");
    assert!(
        events.starts_with("HTTP/1.1 200")
            && events.contains("text/event-stream")
            && events.contains("data: {"),
        "{events}"
    );
}

/// Single-file outputs are written beside their path and renamed into place; a path where
/// that would destroy something is refused, exit 2, and left as it was: a device (here a
/// link to `/dev/null`, which the rename must not touch), a FIFO, a directory, the command's
/// own input, or an existing file of another kind. An earlier output of the same kind is
/// replaced.
#[cfg(unix)]
#[test]
fn single_file_outputs_never_replace_devices_inputs_or_other_files() {
    use std::os::unix::fs::FileTypeExt;
    let tmp = tempfile::tempdir().expect("temp dir");
    let at = |name: &str| tmp_str(&tmp, name);
    let run = igemu(&["run", "--out", &at("run"), "--trace", "--quiet"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let trace = at("run/trace.jsonl");
    std::os::unix::fs::symlink("/dev/null", at("null")).expect("symlink");
    let fifo = std::process::Command::new("mkfifo")
        .arg(at("fifo"))
        .status();
    assert!(fifo.is_ok_and(|s| s.success()), "mkfifo");
    let topology = at("topology.toml");
    std::fs::copy(common::path("topologies/quickstart.toml"), &topology).expect("copy");
    let before = |p: &str| std::fs::read(p).expect("readable");
    let (trace_bytes, summary_bytes, topology_bytes) = (
        before(&trace),
        before(&at("run/summary.json")),
        before(&topology),
    );
    let device = "not a regular file";
    refused(
        &["run", "--out", &at("o1"), "--record", &at("null")],
        device,
    );
    refused(&["trace", &trace, "--chrome", &at("null")], device);
    // Were it opened to look at its first bytes, a FIFO would block: within a time limit.
    let (code, err) = igemu_within(&["trace", &trace, "--chrome", &at("fifo")], 30)
        .expect("ends (not blocked opening the FIFO)");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(device), "{err}");
    refused(&["report", &at("run"), "--out", &at("null")], device);
    refused(
        &["trace", &trace, "--negotiations", "--out", &at("run")],
        "a directory",
    );
    let own = "own input";
    refused(&["trace", &trace, "--chrome", &trace], own);
    refused(&["trace", &trace, "--negotiations", "--out", &trace], own);
    refused(
        &["report", &at("run"), "--out", &at("run/summary.json")],
        own,
    );
    // The run's own outputs in --out, however the record's directory is spelled.
    let own_output = "the run writes its own";
    let dotted = format!("{}/../run/summary.json", at("run"));
    refused(
        &["run", "--out", &at("run"), "--record", &dotted],
        own_output,
    );
    std::os::unix::fs::symlink(at("run"), at("run-link")).expect("symlink");
    let linked = at("run-link/requests.csv");
    refused(
        &["run", "--out", &at("run"), "--record", &linked],
        own_output,
    );
    let other = "is not replaced";
    refused(
        &[
            "trace",
            &trace,
            "--request",
            "ext-1",
            "--mermaid",
            &topology,
        ],
        other,
    );
    refused(&["report", &at("run"), "--out", &topology], other);
    let export = [
        "workload",
        "export",
        "topologies/quickstart.toml",
        "--workload",
    ];
    refused(
        &[&export[..], &["alpha-dve", "--out", &topology]].concat(),
        other,
    );
    // A directory's --out that is a file is a usage error too (it was exit 1, "File exists").
    let not_dir = "is a file, not a directory";
    refused(&["run", "--out", &topology], not_dir);
    let stress = ["stress", "topologies/quickstart.toml", "--seeds", "1"];
    refused(
        &[&stress[..], &["--faults", "none", "--out", &topology]].concat(),
        not_dir,
    );
    // Nothing was touched.
    let null = std::fs::symlink_metadata(at("null")).expect("still there");
    assert!(null.file_type().is_symlink());
    assert!(std::fs::metadata("/dev/null").is_ok_and(|m| m.file_type().is_char_device()));
    let fifo = std::fs::symlink_metadata(at("fifo")).expect("still there");
    assert!(fifo.file_type().is_fifo());
    assert_eq!(before(&trace), trace_bytes);
    assert_eq!(before(&at("run/summary.json")), summary_bytes);
    assert_eq!(before(&topology), topology_bytes);
    // A trace the topology replays is an input too, even when it is an earlier export.
    std::fs::create_dir_all(at("traces")).expect("dir");
    std::fs::copy(
        common::path("topologies/traces/synthetic-64.swf"),
        at("traces/synthetic-64.swf"),
    )
    .expect("copied");
    let replay = at("replay.toml");
    let text = std::fs::read_to_string(common::path("topologies/swf-replay.toml")).expect("read");
    std::fs::write(&replay, &text).expect("written");
    let frozen = at("traces/frozen.swf");
    let export_trace = [
        "workload",
        "export",
        &replay,
        "--workload",
        "trace",
        "--out",
        &frozen,
    ];
    let o = igemu(&export_trace);
    assert!(o.status.success(), "{}", stderr(&o));
    let replays_frozen = text.replace("traces/synthetic-64.swf", "traces/frozen.swf");
    std::fs::write(&replay, replays_frozen).expect("written");
    let frozen_bytes = before(&frozen);
    refused(&export_trace, own);
    assert_eq!(before(&frozen), frozen_bytes);
    // Temporary files have names of their own, created only where nothing is: a link
    // planted at the name they once had (`c.json.tmp`) is not written through.
    std::fs::write(at("victim"), "victim").expect("written");
    for planted in ["c.json.tmp", ".c.json.tmp", "r.html.tmp", "e.swf.tmp"] {
        std::os::unix::fs::symlink(at("victim"), at(planted)).expect("symlink");
    }
    assert!(igemu(&["trace", &trace, "--chrome", &at("c.json")])
        .status
        .success());
    assert!(igemu(&["report", &at("run"), "--out", &at("r.html")])
        .status
        .success());
    let o = igemu(&[&export[..], &["alpha-dve", "--out", &at("e.swf")]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(before(&at("victim")), b"victim");
    // A FIFO where an output directory keeps a file is refused, not read (a read blocks
    // until something writes) nor replaced.
    let fifo_in = |dir: &str, name: &str| {
        std::fs::create_dir_all(at(dir)).expect("dir");
        let made = std::process::Command::new("mkfifo")
            .arg(at(&format!("{dir}/{name}")))
            .status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    };
    fifo_in("f1", "summary.json");
    fifo_in("f2", "stress.csv");
    fifo_in("f3", "report.html");
    let stress = [
        "stress",
        "topologies/quickstart.toml",
        "--seeds",
        "1",
        "--faults",
    ];
    for args in [
        vec!["run", "--out", &at("f1"), "--quiet"],
        [&stress[..], &["none", "--out", &at("f2"), "--quiet"]].concat(),
        vec!["report", &at("f3")],
    ] {
        let (code, err) = igemu_within(&args, 30).expect("ends (not blocked on a FIFO)");
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("not a regular file"), "{args:?}: {err}");
    }
    // An earlier output of the same kind is replaced.
    for _ in 0..2 {
        let mermaid = [
            "trace",
            &trace,
            "--request",
            "ext-1",
            "--mermaid",
            &at("m.mmd"),
        ];
        assert!(igemu(&mermaid).status.success());
        assert!(igemu(&["report", &at("run"), "--out", &at("r.html")])
            .status
            .success());
        let o = igemu(&[&export[..], &["alpha-dve", "--out", &at("e.swf")]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
    }
}

/// A single-file output in a folder that does not exist is refused before any work, exit 2,
/// naming the path given and the folder to create, and nothing is made: before, `run --record
/// nodir/x.rec` ran, left its `--out` folder, and failed (exit 1) naming its hidden temporary
/// file. The `--out` folder a run makes may hold the record (`--record D/run.rec --out D`).
#[test]
fn single_file_outputs_in_a_missing_folder_are_refused_before_any_work() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let at = |name: &str| tmp_str(&tmp, name);
    let run = igemu(&["run", "--out", &at("run"), "--trace", "--quiet"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let trace = at("run/trace.jsonl");
    let missing = at("nodir/x.out");
    let fix = format!(
        "{missing}: the folder {} does not exist; create it first",
        at("nodir")
    );
    refused(
        &["run", "--record", &missing, "--out", &at("o"), "--quiet"],
        &format!("--record {fix}"),
    );
    assert!(!Path::new(&at("o")).exists(), "the run made its --out");
    for flag in ["--chrome", "--mermaid"] {
        refused(&["trace", &trace, flag, &missing], &format!("{flag} {fix}"));
    }
    refused(
        &["trace", &trace, "--negotiations", "--out", &missing],
        &format!("--out {fix}"),
    );
    refused(
        &["report", &at("run"), "--out", &missing],
        &format!("--out {fix}"),
    );
    refused(
        &[
            "workload",
            "export",
            "topologies/quickstart.toml",
            "--workload",
            "alpha-dve",
            "--out",
            &missing,
        ],
        &format!("--out {fix}"),
    );
    // A file where the folder should be.
    refused(
        &[
            "report",
            &at("run"),
            "--out",
            &at("run/summary.json/r.html"),
        ],
        "is a file, not a folder",
    );
    assert!(!Path::new(&at("nodir")).exists());
    assert!(!Path::new(&at("run/report.html")).exists());
    // A record in the --out the run makes needs no folder yet, but not through `..`: that
    // path needs a folder inside it, which nothing makes.
    refused(
        &[
            "run",
            "--record",
            &at("o2/sub/../x.rec"),
            "--out",
            &at("o2"),
            "--quiet",
        ],
        "does not exist; create it first",
    );
    assert!(!Path::new(&at("o2")).exists(), "the run made its --out");
    let made = igemu(&[
        "run",
        "--record",
        &at("new/run.rec"),
        "--out",
        &at("new"),
        "--quiet",
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    assert!(Path::new(&at("new/run.rec")).is_file());
}

/// Each period and the end are valid alone, but together they can make a run whose timers
/// alone would take years: validation refuses the combination, naming the periods and the
/// end, and a short run with the same fast timers is accepted and ends.
#[test]
fn periods_too_short_for_the_runs_end_are_refused_and_short_runs_with_them_end() {
    for sets in [
        &["emulation.end=1e12", "peering.publish_interval=1e-6"][..],
        &["emulation.end=1e12"],
        &["peering.interval=1e-6"],
    ] {
        let mut args = vec!["validate"];
        for s in sets {
            args.extend(["--set", s]);
        }
        args.push("topologies/quickstart.toml");
        let o = igemu(&args);
        assert_eq!(o.status.code(), Some(2), "{sets:?}");
        let err = stderr(&o);
        assert!(err.contains("periodic timers would fire about"), "{err}");
        assert!(err.contains("peering.publish_interval"), "{err}");
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let fast = [
        "run",
        "--set",
        "emulation.end=60",
        "--set",
        "peering.publish_interval=0.001",
        "--out",
        &tmp_str(&tmp, "o"),
        "--quiet",
    ];
    let o = igemu(&fast);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `--jobs 0` would run nothing: refused (exit 2) by `sweep` and `stress`, not clamped to 1;
/// `run --threads` above the Grids runs one thread per Grid, as its help says.
#[test]
fn jobs_0_is_refused_and_the_thread_clamp_is_documented() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "1h");
    let out = dir.path().join("out");
    for args in [
        vec!["sweep", s(&sweep), "--out", s(&out), "--jobs", "0"],
        vec![
            "stress",
            "topologies/peering-small.toml",
            "--seeds",
            "1",
            "--jobs",
            "0",
        ],
    ] {
        let o = igemu(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--jobs 0 would run nothing"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!out.exists(), "nothing was written");
    let help = String::from_utf8_lossy(&igemu(&["run", "--help"]).stdout).into_owned();
    assert!(
        help.contains("N above the number of Grids runs one thread per Grid"),
        "{help}"
    );
}

/// `stress` sets every run's seed itself: a seed among its `--set` overrides (however the key
/// is spelled) is refused, not ignored while the report claimed it; `--first-seed` runs other
/// seeds than 1..=N, and each reproduce line names its own.
#[test]
fn stress_refuses_a_seed_override_and_runs_from_its_first_seed() {
    for set in [
        "emulation.seed=99",
        " emulation . seed =99",
        "emulation={ seed = 99 }",
    ] {
        let o = igemu(&[&ONE_QUIET_STRESS[..], &["--set", set]].concat());
        assert_eq!(o.status.code(), Some(2), "{set}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("stress sets each run's seed itself")
                && stderr(&o).contains("--first-seed"),
            "{set}: {}",
            stderr(&o)
        );
    }
    // Every other key stress sets in a run after the user's overrides is refused too, naming
    // the flag that sets it; a fault key the chosen settings leave alone still applies.
    let stress = |faults: &str, set: &str| {
        let small = "topologies/peering-small.toml";
        let args = [
            "stress", small, "--seeds", "1", "--faults", faults, "--quiet",
        ];
        igemu(&[&args[..], &["--set", set]].concat())
    };
    for (faults, set, by) in [
        ("lossy", "fault.drop=0.5", "--faults lossy"),
        ("none,lossy", "fault={ drop = 0.5 }", "--faults lossy"),
        ("none", "emulation.interleaving=2", "--interleavings"),
        ("none", "emulation.mode=\"virtual\"", "--mode"),
    ] {
        let o = stress(faults, set);
        assert_eq!(o.status.code(), Some(2), "{set}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("in the runs of {by}")),
            "{}",
            stderr(&o)
        );
    }
    let o = stress("none", "fault.drop=0.5");
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("st");
    let o = igemu(&[
        "stress",
        "topologies/peering-small.toml",
        "--seeds",
        "2",
        "--first-seed",
        "7",
        "--faults",
        "none",
        "--set",
        "emulation.end=2h",
        "--out",
        s(&out),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let csv = std::fs::read_to_string(out.join("stress.csv")).expect("stress.csv");
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(
        rows[0].starts_with("none,7,") && rows[0].contains("emulation.seed=7"),
        "{csv}"
    );
    assert!(
        rows[1].starts_with("none,8,") && rows[1].contains("emulation.seed=8"),
        "{csv}"
    );
    let o = igemu(&[
        "stress",
        "topologies/peering-small.toml",
        "--seeds",
        "2",
        "--first-seed",
        "18446744073709551615",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("goes past the largest seed"),
        "{}",
        stderr(&o)
    );
    // Near the largest seed the advice is a range that is accepted: it advised
    // `--first-seed 18446744073709551615 --seeds 100000`, itself refused.
    let o = refused(
        &[
            "stress",
            "topologies/peering-small.toml",
            "--seeds",
            "100001",
            "--first-seed",
            "18446744073709551000",
        ],
        "there are 616 seeds. Give --first-seed 18446744073709551000 --seeds 616",
    );
    assert!(
        !stderr(&o).contains("--first-seed 18446744073709551615 --seeds 100000"),
        "{}",
        stderr(&o)
    );
}

/// `sweep merge` refuses what would read as a whole sweep and is not one: a split with a
/// shard missing (known from the shards' records, or their files' names without records),
/// run files with no run at all, and two rows of one point and seed (one run counted twice).
/// Nothing is written.
#[test]
fn merge_refuses_missing_shards_empty_run_files_and_a_run_listed_twice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "1h");
    let shards = dir.path().join("shards");
    for i in 0..2 {
        let shard = format!("{i}/2");
        let o = igemu(&[
            "sweep",
            s(&sweep),
            "--out",
            s(&shards),
            "--shard",
            &shard,
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let r0 = shards.join("runs-0-of-2.csv");
    let merged = dir.path().join("merged");
    let refused = |files: &[&Path], expect: &str| {
        let mut args = vec!["sweep", "merge", "--out", s(&merged)];
        args.extend(files.iter().map(|f| s(f)));
        let o = igemu(&args);
        assert_eq!(o.status.code(), Some(2), "{files:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expect), "{files:?}: {}", stderr(&o));
        assert!(
            !merged.join("runs.csv").exists() && !merged.join("sweep.json").exists(),
            "{files:?}: nothing is written"
        );
    };
    refused(&[&r0], "shard 1/2 is missing: give every shard's run file");
    // Without its record, the file's name says which shard it is.
    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).expect("created");
    std::fs::copy(&r0, bare.join("runs-0-of-2.csv")).expect("copied");
    refused(&[&bare.join("runs-0-of-2.csv")], "shard 1/2 is missing");
    // A run file with its header only.
    let text = std::fs::read_to_string(&r0).expect("readable");
    let header = text.lines().next().expect("a header");
    let empty = dir.path().join("empty.csv");
    std::fs::write(&empty, format!("{header}\n")).expect("written");
    refused(&[&empty], "no runs in");
    // A row copied under another run number: the same point and seed twice.
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let copy = lines[1].replacen("0,", "9,", 1);
    lines.push(copy);
    let twice = dir.path().join("twice.csv");
    std::fs::write(&twice, lines.join("\n") + "\n").expect("written");
    refused(
        &[&twice],
        "run 9 has the point (igg.dispatch=rr) and seed 1 of run 0",
    );
    // Every shard: merged.
    let o = igemu(&[
        "sweep",
        "merge",
        "--out",
        s(&merged),
        s(&r0),
        s(&shards.join("runs-1-of-2.csv")),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A folder holds one run or one sweep: `sweep` refuses another sweep's results (its
/// `sweep.json` records other inputs) and a run's outputs, `run` a sweep's, each unless
/// `--overwrite`, which leaves the folder holding the new one alone. The same sweep again, and
/// shards of one sweep sharing a folder, need no flag.
#[test]
fn runs_and_sweeps_do_not_replace_or_mix_with_each_other_without_overwrite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "1h");
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        std::fs::read_to_string(&sweep)
            .expect("readable")
            .replace("seeds = 2", "seeds = 1"),
    )
    .expect("written");
    let out = dir.path().join("out");
    let ok = |args: &[&str]| {
        let o = igemu(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    };
    let listing = |d: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .expect("a folder")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    };
    ok(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    let before = std::fs::read(out.join("runs.csv")).expect("runs.csv");
    // The same sweep again replaces its own results.
    ok(&["sweep", s(&sweep), "--out", s(&out), "--quiet"]);
    // Another sweep: refused, nothing touched.
    refused(
        &["sweep", s(&other), "--out", s(&out), "--quiet"],
        "holds another sweep's results (sweep.json: the seeds differ)",
    );
    assert_eq!(
        std::fs::read(out.join("runs.csv")).expect("runs.csv"),
        before
    );
    // A run into the sweep's folder: refused.
    refused(
        &["run", "--out", s(&out), "--quiet"],
        "holds a sweep's outputs (sweep.json, paired.csv, points.csv, runs.csv)",
    );
    assert!(!out.join("summary.json").exists());
    // With --overwrite the run replaces the sweep: the folder holds the run alone.
    ok(&["run", "--out", s(&out), "--quiet", "--overwrite"]);
    assert_eq!(
        listing(&out),
        [
            "decisions.csv",
            "intervals.csv",
            "leases.csv",
            "requests.csv",
            "summary.json",
            "utilization.csv"
        ]
    );
    // A sweep into the run's folder: refused; with --overwrite, the sweep alone.
    refused(
        &["sweep", s(&other), "--out", s(&out), "--quiet"],
        "holds a run's outputs (summary.json, ",
    );
    assert!(!out.join("runs.csv").exists());
    ok(&[
        "sweep",
        s(&other),
        "--out",
        s(&out),
        "--quiet",
        "--overwrite",
    ]);
    assert_eq!(
        listing(&out),
        ["paired.csv", "points.csv", "runs.csv", "sweep.json"]
    );
    // The other sweep's results give way to this one's with --overwrite only.
    ok(&[
        "sweep",
        s(&sweep),
        "--out",
        s(&out),
        "--quiet",
        "--overwrite",
    ]);
    assert_eq!(
        std::fs::read(out.join("runs.csv")).expect("runs.csv"),
        before
    );
    // Shards of one sweep share a folder; a shard of another sweep does not join them.
    let shards = dir.path().join("shards");
    for i in ["0/2", "1/2"] {
        ok(&[
            "sweep",
            s(&sweep),
            "--out",
            s(&shards),
            "--shard",
            i,
            "--quiet",
        ]);
    }
    refused(
        &[
            "sweep",
            s(&other),
            "--out",
            s(&shards),
            "--shard",
            "0/2",
            "--quiet",
        ],
        "sweep-0-of-2.json: the seeds differ",
    );
    // Results with no record of their inputs are another sweep's too.
    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).expect("created");
    std::fs::write(bare.join("runs.csv"), "run,seed,error\n").expect("written");
    refused(
        &["sweep", s(&sweep), "--out", s(&bare), "--quiet"],
        "runs.csv without the sweep.json saying what made it",
    );
    // Such results (an older igemu's) still resume, as docs/sweeps.md promises.
    let old = dir.path().join("old");
    std::fs::create_dir(&old).expect("created");
    for f in ["runs.csv", "points.csv", "paired.csv"] {
        std::fs::copy(out.join(f), old.join(f)).expect("copied");
    }
    refused(
        &["sweep", s(&sweep), "--out", s(&old), "--quiet"],
        "points.csv without the sweep.json",
    );
    ok(&["sweep", s(&sweep), "--out", s(&old), "--quiet", "--resume"]);
    assert_eq!(
        std::fs::read(old.join("runs.csv")).expect("runs.csv"),
        before
    );
}

/// `sweep merge` reads a run file given as a pipe (`<(...)`, here a FIFO with a writer):
/// such a file can be read only once, and is (its rows checked as they are read).
#[cfg(unix)]
#[test]
fn merge_reads_a_run_file_given_as_a_pipe() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "1h");
    let whole = dir.path().join("whole");
    let ran = igemu(&["sweep", s(&sweep), "--out", s(&whole), "--quiet"]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let runs = std::fs::read(whole.join("runs.csv")).expect("runs.csv");
    let fifo = dir.path().join("pipe.csv");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|st| st.success()), "mkfifo");
    let writer = {
        let (fifo, runs) = (fifo.clone(), runs.clone());
        std::thread::spawn(move || std::fs::write(fifo, runs))
    };
    let merged = dir.path().join("merged");
    // Before: the pipe was read twice, and the second read waited forever for a writer.
    let o = igemu_within(&["sweep", "merge", "--out", s(&merged), s(&fifo)], 60);
    // A writer igemu never read from waits to open the pipe: open it, so the test ends.
    for _ in 0..50 {
        if writer.is_finished() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    if !writer.is_finished() {
        drop(std::fs::File::open(&fifo));
    }
    let _ = writer.join();
    let (code, err) = o.expect("the merge ends");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        std::fs::read(merged.join("runs.csv")).expect("merged"),
        runs
    );
    assert_eq!(
        std::fs::read(merged.join("points.csv")).expect("merged points"),
        std::fs::read(whole.join("points.csv")).expect("points")
    );
}

/// A folder holds one run, one sweep or one stress test: stress refuses a run's or a
/// sweep's folder, and run and sweep refuse a stress test's, leaving each as it was, unless
/// --overwrite.
#[test]
fn stress_results_and_runs_or_sweeps_do_not_mix_in_one_folder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let at = |name: &str| tmp_str(&dir, name);
    let stress = [
        "stress",
        "topologies/quickstart.toml",
        "--seeds",
        "1",
        "--faults",
    ];
    let stress_into =
        |out: &str| igemu(&[&stress[..], &["none", "--quiet", "--out", out]].concat());
    let ran = igemu(&["run", "--out", &at("run"), "--quiet"]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let o = stress_into(&at("run"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds a run's or a sweep's outputs"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(&at("run/stress.csv")).exists());
    assert!(stress_into(&at("st")).status.success());
    let before = std::fs::read(at("st/stress.csv")).expect("stress.csv");
    let sweep = small_sweep(dir.path(), "1h");
    for args in [
        vec!["run", "--out", &at("st"), "--quiet"],
        vec!["sweep", s(&sweep), "--out", &at("st"), "--quiet"],
    ] {
        let o = igemu(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("holds a stress test's results"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(std::fs::read(at("st/stress.csv")).expect("kept"), before);
    assert!(!Path::new(&at("st/summary.json")).exists());
    // --overwrite replaces them, as it replaces a run's.
    let o = igemu(&[
        "sweep",
        s(&sweep),
        "--out",
        &at("st"),
        "--quiet",
        "--overwrite",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!Path::new(&at("st/stress.csv")).exists());
    assert!(!Path::new(&at("st/stress.json")).exists());
    assert!(Path::new(&at("st/points.csv")).exists());
}

/// A stress test keeps to the rule of runs and sweeps: into a folder holding another stress
/// test's results (other inputs, or none recorded) it is refused unless --overwrite — before,
/// it replaced them silently (audit) — while the same stress test, however its topology's
/// path is spelled, replaces its own. --overwrite also lets a run and a stress test replace
/// each other's outputs, each removed once the new ones are whole.
#[test]
fn stress_replaces_another_stress_tests_results_only_with_overwrite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let st = tmp_str(&dir, "st");
    let stress = |topology: &str, seeds: &str, more: &[&str]| {
        let args = [
            "stress", topology, "--seeds", seeds, "--faults", "none", "--quiet", "--out", &st,
        ];
        igemu(&[&args[..], more].concat())
    };
    let rows = || {
        std::fs::read_to_string(dir.path().join("st/stress.csv"))
            .expect("stress.csv")
            .lines()
            .count()
            - 1
    };
    let o = stress("topologies/quickstart.toml", "1", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let inputs = &json(&dir.path().join("st/stress.json"))["inputs"];
    assert_eq!(inputs["seeds"], 1);
    assert_eq!(inputs["faults"][0], "none");
    assert_eq!(
        inputs["provenance"]["topology_path"],
        "topologies/quickstart.toml"
    );
    let o = stress("./topologies/quickstart.toml", "1", &[]);
    assert!(o.status.success(), "the same stress test: {}", stderr(&o));
    let before = std::fs::read(dir.path().join("st/stress.csv")).expect("stress.csv");
    let o = stress("topologies/quickstart.toml", "2", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds another stress test's results (stress.json: made from other inputs); pass --overwrite"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(dir.path().join("st/stress.csv")).expect("kept"),
        before
    );
    // Results an older igemu wrote say nothing of their inputs: another stress test's.
    let record = dir.path().join("st/stress.json");
    let mut old = json(&record);
    old.as_object_mut().expect("object").remove("inputs");
    std::fs::write(&record, old.to_string()).expect("written");
    let o = stress("topologies/quickstart.toml", "1", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("stress.json without the inputs that made it"),
        "{}",
        stderr(&o)
    );
    let o = stress("topologies/quickstart.toml", "2", &["--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(rows(), 2);
    assert_eq!(json(&record)["inputs"]["seeds"], 2);
    // A run over the stress test's folder, and back.
    let o = igemu(&["run", "--out", &st, "--quiet", "--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!record.exists() && !dir.path().join("st/stress.csv").exists());
    let o = stress("topologies/quickstart.toml", "1", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = stress("topologies/quickstart.toml", "1", &["--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!dir.path().join("st/summary.json").exists());
    assert_eq!(rows(), 1);
}

/// `sweep merge --out` keeps to the rule of `sweep --out`: beside its shards, or over an
/// earlier merge of the same sweep, it merges; a folder holding another sweep's results or a
/// run's outputs is refused unless --overwrite, which leaves the merge alone there.
#[test]
fn merge_refuses_another_sweeps_or_a_runs_folder_without_overwrite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "1h");
    let shards = dir.path().join("shards");
    for i in 0..2 {
        let shard = format!("{i}/2");
        let args = [
            "sweep",
            s(&sweep),
            "--shard",
            &shard,
            "--out",
            s(&shards),
            "--quiet",
        ];
        assert!(igemu(&args).status.success());
    }
    let files = [
        shards.join("runs-0-of-2.csv"),
        shards.join("runs-1-of-2.csv"),
    ];
    let merge = |out: &Path, more: &[&str]| {
        let mut args = vec!["sweep", "merge", "--out", s(out)];
        args.extend_from_slice(more);
        args.extend(files.iter().map(|f| s(f)));
        igemu(&args)
    };
    for _ in 0..2 {
        let o = merge(&shards, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // A stray file beside the shards is the only thing --overwrite removes there: the shards
    // and their records, the merge's own inputs, stay.
    std::fs::remove_file(shards.join("sweep.json")).expect("removed");
    let stray = "set:igg.dispatch,metric,n,mean,ci95_low,ci95_high\nrr,m,1,2,2,2\n";
    std::fs::write(shards.join("points.csv"), stray).expect("written");
    let o = merge(&shards, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = merge(&shards, &["--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A points.csv igemu did not write is refused even with --overwrite, and kept.
    std::fs::write(shards.join("points.csv"), "stray\n").expect("written");
    let o = merge(&shards, &["--overwrite"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not written by igemu"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(shards.join("points.csv")).expect("kept"),
        "stray\n"
    );
    std::fs::remove_file(shards.join("points.csv")).expect("removed");
    let o = merge(&shards, &["--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for kept in [
        "runs-0-of-2.csv",
        "runs-1-of-2.csv",
        "sweep-0-of-2.json",
        "sweep-1-of-2.json",
    ] {
        assert!(shards.join(kept).exists(), "{kept} was removed");
    }
    let other = dir.path().join("other");
    std::fs::write(
        dir.path().join("other.toml"),
        "topology = \"small.toml\"\nseeds = 1\nmetrics = [\"makespan_s\"]\n[vary]\n\"igg.dispatch\" = [\"rr\"]\n",
    )
    .expect("written");
    let o = igemu(&[
        "sweep",
        &tmp_str(&dir, "other.toml"),
        "--out",
        s(&other),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run = dir.path().join("run");
    assert!(igemu(&["run", "--out", s(&run), "--quiet"])
        .status
        .success());
    for (out, why) in [
        (&other, "holds another sweep's results"),
        (&run, "holds a run's outputs"),
    ] {
        let before = std::fs::read_dir(out).expect("listed").count();
        let o = merge(out, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
        assert_eq!(std::fs::read_dir(out).expect("listed").count(), before);
        let o = merge(out, &["--overwrite"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let mut left: Vec<String> = std::fs::read_dir(out)
            .expect("listed")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let merged = ["paired.csv", "points.csv", "runs.csv", "sweep.json"];
        assert_eq!(left, merged, "{out:?}");
    }
}

/// Overrides are placed one by one by a walk of their table: more than a run takes
/// (`MAX_OVERRIDES`) are refused before any is placed, naming the first one over (a sweep
/// file of 100 000 `[set]` keys took 16 s to reach its first error, 800 000 would take
/// minutes).
#[test]
fn too_many_overrides_are_refused_before_any_is_placed() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let over = igemu::topology::MAX_OVERRIDES + 1;
    let keys: String = (0..over).map(|i| format!("\"lrms.k{i}\" = 1\n")).collect();
    let sweep = tmp.path().join("s.toml");
    let topo = common::path("topologies/quickstart.toml");
    let text = format!(
        "topology = {:?}\nseeds = 1\nmetrics = [\"utilization_pct\"]\n[set]\n{keys}",
        topo.display().to_string()
    );
    std::fs::write(&sweep, text).expect("written");
    let o = igemu(&["sweep", s(&sweep), "--out", &tmp_str(&tmp, "o"), "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    let limit = igemu::topology::MAX_OVERRIDES;
    assert!(
        err.contains(&format!("overrides; a run takes at most {limit}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("--set lrms.k{limit}=1: error")),
        "{err}"
    );
}

/// Runs `script` (a path from the crate root) with bash and `env`; its output.
fn bash_script(script: &str, env: &[(&str, &str)]) -> std::process::Child {
    std::process::Command::new("bash")
        .arg(common::path(script))
        .envs(env.iter().copied())
        .env("IGEMU", env!("CARGO_BIN_EXE_igemu"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bash runs")
}

/// docs/sweeps.md's Slurm job array, run as Slurm would run it: every task at once with the
/// variables Slurm sets (here an array `--array=4-8:2`, so the shard is the task's rank, not
/// its id), one task resubmitted alone (it resumes), then the merge: the merged files
/// are byte for byte the unsharded sweep's. The docs show the scripts as shipped.
#[test]
fn the_slurm_job_array_runs_a_shard_per_task_and_the_merge_joins_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sweep = small_sweep(dir.path(), "3h");
    let out = dir.path().join("array");
    let task = |id: &str| {
        let vars = [
            ("SWEEP", s(&sweep)),
            ("OUT", s(&out)),
            ("SLURM_ARRAY_TASK_ID", id),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "4"),
            ("SLURM_ARRAY_TASK_STEP", "2"),
            ("SLURM_CPUS_PER_TASK", "1"),
        ];
        bash_script("scripts/slurm/sweep-shard.sbatch", &vars)
    };
    let tasks: Vec<_> = ["4", "6", "8"].into_iter().map(task).collect();
    for t in tasks {
        let o = t.wait_with_output().expect("task ends");
        assert!(o.status.success(), "{}", stderr(&o));
    }
    for i in 0..3 {
        assert!(out.join(format!("runs-{i}-of-3.csv")).exists(), "shard {i}");
    }
    // Shard 1 submitted again, as the docs say to resubmit a failed task: it resumes.
    let shard1 = std::fs::read(out.join("runs-1-of-3.csv")).expect("shard 1");
    let vars = [
        ("SWEEP", s(&sweep)),
        ("OUT", s(&out)),
        ("SLURM_ARRAY_TASK_ID", "1"),
        ("SLURM_ARRAY_TASK_COUNT", "1"),
        ("SHARDS", "3"),
    ];
    let again = bash_script("scripts/slurm/sweep-shard.sbatch", &vars)
        .wait_with_output()
        .expect("resubmitted task ends");
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        std::fs::read(out.join("runs-1-of-3.csv")).expect("read"),
        shard1
    );

    let merge = [("OUT", s(&out)), ("SHARDS", "3"), ("REPORT", "1")];
    let o = bash_script("scripts/slurm/sweep-merge.sbatch", &merge)
        .wait_with_output()
        .expect("merge ends");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("report.html").exists());
    let whole = dir.path().join("whole");
    let o = igemu(&["sweep", s(&sweep), "--out", s(&whole), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["runs.csv", "points.csv", "paired.csv"] {
        let read = |d: &Path| std::fs::read(d.join(f)).expect("written");
        assert_eq!(read(&out), read(&whole), "{f}");
    }
    assert_eq!(
        json(&out.join("sweep.json"))["merged_from"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );

    let missing = [("OUT", s(&out)), ("SHARDS", "5")];
    let o = bash_script("scripts/slurm/sweep-merge.sbatch", &missing)
        .wait_with_output()
        .expect("merge ends");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let docs = std::fs::read_to_string(common::path("docs/sweeps.md")).expect("docs");
    for script in ["sweep-shard.sbatch", "sweep-merge.sbatch", "submit"] {
        let text = std::fs::read_to_string(common::path(&format!("scripts/slurm/{script}")))
            .expect("script");
        assert!(
            docs.contains(&text),
            "docs/sweeps.md shows {script} as shipped"
        );
    }
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
fn spawn_igemu(args: &[&str]) -> std::process::Child {
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
fn interrupt_when(
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
