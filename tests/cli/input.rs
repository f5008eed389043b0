//! Bad input as a user gives it: malformed topologies, overrides, flags, files of the wrong
//! kind and values past their caps, each refused at its place with exit code 2.

use super::*;

pub(super) fn files_in(dir: &str) -> Vec<PathBuf> {
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

#[test]
fn every_shipped_sweep_parses_and_each_of_its_points_loads() {
    // A sweep fails only when it runs a point whose overrides the topology refuses (a value
    // of the wrong type, a key that is not there): every point of every shipped sweep is
    // loaded here, with its fixed and varied overrides and its first seed.
    let mut failures = Vec::new();
    for f in files_in("topologies/sweeps") {
        let sweep = match igemu::sweep::parse(&f) {
            Ok(s) => s,
            Err(r) => {
                failures.push(format!("{}: {r}", f.display()));
                continue;
            }
        };
        let runs = sweep.runs();
        let first = sweep.seeds.first().copied();
        for run in runs.iter().filter(|r| Some(r.seed) == first) {
            let sets = igemu::topology::Overrides::sets(sweep.overrides(run));
            if let Err(r) = igemu::topology::load_file(&sweep.topology, &sets) {
                failures.push(format!("{} point {:?}: {r}", f.display(), run.point));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A Lublin99 stream whose inter-arrival scale is a denormal: a request about every second
/// for two days, 1066 times what the one 16-host cluster works off.
pub(super) const FLOOD: &str = r#"
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

/// `igemu validate` of `topologies/quickstart.toml` with `sets`: (exit code, standard error).
pub(super) fn validate_quickstart(sets: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["validate", "topologies/quickstart.toml"];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = igemu(&args);
    (o.status.code(), stderr(&o))
}

/// Writes `body` as `name` in `dir` and validates it: (exit code, standard error).
pub(super) fn validate_text(dir: &Path, name: &str, body: &str) -> (Option<i32>, String) {
    let file = dir.join(name);
    std::fs::write(&file, body).expect("written");
    let o = igemu(&["validate", file.to_str().expect("utf-8")]);
    (o.status.code(), stderr(&o))
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
