//! Sweeps, shards and merges, and stress tests: their records, resumption, progress and
//! results.

use super::*;

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

/// A sweep of a copy of `peering-small` (so the test can edit it) ending at `end`, varying
/// the dispatch policy over two seeds, in `dir`: the sweep file's path.
pub(super) fn small_sweep(dir: &Path, end: &str) -> PathBuf {
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

pub(super) fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("json")
}

pub(super) fn s(p: &Path) -> &str {
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
    sweep_json_records_what_the_small_sweep_ran(&r, &sweep);
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
    an_edited_topology_is_refused_unless_the_sweep_starts_over(
        dir.path(),
        &out,
        (&topology_hash, &sweep_hash),
    );
}

/// The `sweep.json` (`r`) of the small sweep at `sweep` (end 3h, dispatch rr and bcf, two
/// seeds) records its inputs, runs, policies and outputs.
fn sweep_json_records_what_the_small_sweep_ran(r: &serde_json::Value, sweep: &Path) {
    assert_eq!(r["igemu"], env!("CARGO_PKG_VERSION"));
    assert_eq!(r["sweep_path"], s(sweep));
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
}

/// The same sweep file (in `dir`) over an edited topology: `--resume` into `out` is refused,
/// naming the file; without --resume, other inputs' results are not replaced without
/// --overwrite; with it, the sweep starts over and records the new inputs (a new topology
/// hash, the same sweep hash as `hashes` had).
fn an_edited_topology_is_refused_unless_the_sweep_starts_over(
    dir: &Path,
    out: &Path,
    hashes: (&serde_json::Value, &serde_json::Value),
) {
    let (topology_hash, sweep_hash) = hashes;
    let sweep = small_sweep(dir, "3h");
    let topo = dir.join("small.toml");
    let text = std::fs::read_to_string(&topo).expect("readable");
    std::fs::write(&topo, text.replace("seed = 3", "seed = 4")).expect("written");
    let refused = igemu(&["sweep", s(&sweep), "--out", s(out), "--resume"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(
        err.contains("the topology file") && err.contains("small.toml changed"),
        "{err}"
    );
    let refused = igemu(&["sweep", s(&sweep), "--out", s(out), "--quiet"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("holds another sweep's results (sweep.json: the topology file"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(
        json(&out.join("sweep.json"))["topology_hash"],
        *topology_hash
    );
    let fresh = igemu(&[
        "sweep",
        s(&sweep),
        "--out",
        s(out),
        "--quiet",
        "--overwrite",
    ]);
    assert_eq!(fresh.status.code(), Some(0), "{}", stderr(&fresh));
    let r = json(&out.join("sweep.json"));
    assert_ne!(r["topology_hash"], *topology_hash);
    assert_eq!(r["sweep_hash"], *sweep_hash);
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

/// Runs `script` (a path from the crate root) with bash and `env`; its output.
pub(super) fn bash_script(script: &str, env: &[(&str, &str)]) -> std::process::Child {
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
