//! The command line as a user meets it: the malformed-topology corpus, `validate` on every
//! shipped topology, `--set` mistakes, and `run` writing its outputs deterministically.

mod common;
use common::igemu;

use std::path::{Path, PathBuf};
use std::process::Output;

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
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
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
    }
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
    assert!(stderr(&out).contains("cannot read the file"));
    let out = igemu(&["run", "--mode", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
    let out = igemu(&["run", "--speedup", "fast"]);
    assert_eq!(out.status.code(), Some(2));
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
    // A different file gives a different hash.
    let other = igemu(&["run", "topologies/quickstart.toml", "--out", out]);
    assert!(other.status.success(), "{}", stderr(&other));
    let text = std::fs::read_to_string(dir.path().join("summary.json")).expect("summary");
    let s2: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_ne!(s2["provenance"]["topology_hash"], p["topology_hash"]);
}
