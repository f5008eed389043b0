//! Single-file outputs (traces, records, exports): written beside their path and renamed into
//! place, refused before any work where that would destroy something or where the folder is
//! missing.

use super::*;

/// Single-file outputs are written beside their path and renamed into place; a path where
/// that would destroy something is refused, exit 2, and left as it was: a device (here a
/// link to `/dev/null`, which the rename must not touch), a FIFO, a directory, the command's
/// own input, or an existing file of another kind. An earlier output of the same kind is
/// replaced.
#[cfg(unix)]
#[test]
fn single_file_outputs_never_replace_devices_inputs_or_other_files() {
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
    devices_directories_and_own_inputs_are_refused(&tmp, &trace);
    other_files_and_files_for_directories_are_refused(&tmp, &trace, &topology);
    // Nothing was touched.
    special_files_are_left_as_they_were(&tmp);
    assert_eq!(before(&trace), trace_bytes);
    assert_eq!(before(&at("run/summary.json")), summary_bytes);
    assert_eq!(before(&topology), topology_bytes);
    a_trace_the_topology_replays_is_an_input_too(&tmp);
    temporary_files_do_not_write_through_planted_links(&tmp, &trace);
    fifos_where_output_directories_keep_files_are_refused(&tmp);
    earlier_outputs_of_the_same_kind_are_replaced(&tmp, &trace);
}

/// `workload export` of the quickstart topology, its workload to follow.
const EXPORT: [&str; 4] = [
    "workload",
    "export",
    "topologies/quickstart.toml",
    "--workload",
];

/// A device (`null`, a link to `/dev/null`, and `fifo`), a directory, the command's own
/// input and the run's own outputs are refused as single-file outputs.
#[cfg(unix)]
fn devices_directories_and_own_inputs_are_refused(tmp: &tempfile::TempDir, trace: &str) {
    let at = |name: &str| tmp_str(tmp, name);
    let device = "not a regular file";
    refused(
        &["run", "--out", &at("o1"), "--record", &at("null")],
        device,
    );
    refused(&["trace", trace, "--chrome", &at("null")], device);
    // Were it opened to look at its first bytes, a FIFO would block: within a time limit.
    let (code, err) = igemu_within(&["trace", trace, "--chrome", &at("fifo")], 30)
        .expect("ends (not blocked opening the FIFO)");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(device), "{err}");
    refused(&["report", &at("run"), "--out", &at("null")], device);
    refused(
        &["trace", trace, "--negotiations", "--out", &at("run")],
        "a directory",
    );
    let own = "own input";
    refused(&["trace", trace, "--chrome", trace], own);
    refused(&["trace", trace, "--negotiations", "--out", trace], own);
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
}

/// An existing file of another kind (`topology`) is not replaced by a single-file output,
/// nor taken for a directory's `--out`.
#[cfg(unix)]
fn other_files_and_files_for_directories_are_refused(
    tmp: &tempfile::TempDir,
    trace: &str,
    topology: &str,
) {
    let at = |name: &str| tmp_str(tmp, name);
    let other = "is not replaced";
    refused(
        &["trace", trace, "--request", "ext-1", "--mermaid", topology],
        other,
    );
    refused(&["report", &at("run"), "--out", topology], other);
    refused(
        &[&EXPORT[..], &["alpha-dve", "--out", topology]].concat(),
        other,
    );
    // A directory's --out that is a file is a usage error too (it was exit 1, "File exists").
    let not_dir = "is a file, not a directory";
    refused(&["run", "--out", topology], not_dir);
    let stress = ["stress", "topologies/quickstart.toml", "--seeds", "1"];
    refused(
        &[&stress[..], &["--faults", "none", "--out", topology]].concat(),
        not_dir,
    );
}

/// The link to `/dev/null` and the FIFO are still what they were.
#[cfg(unix)]
fn special_files_are_left_as_they_were(tmp: &tempfile::TempDir) {
    use std::os::unix::fs::FileTypeExt;
    let null = std::fs::symlink_metadata(tmp_str(tmp, "null")).expect("still there");
    assert!(null.file_type().is_symlink());
    assert!(std::fs::metadata("/dev/null").is_ok_and(|m| m.file_type().is_char_device()));
    let fifo = std::fs::symlink_metadata(tmp_str(tmp, "fifo")).expect("still there");
    assert!(fifo.file_type().is_fifo());
}

/// A trace the topology replays is an input too, even when it is an earlier export.
#[cfg(unix)]
fn a_trace_the_topology_replays_is_an_input_too(tmp: &tempfile::TempDir) {
    let at = |name: &str| tmp_str(tmp, name);
    let before = |p: &str| std::fs::read(p).expect("readable");
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
    refused(&export_trace, "own input");
    assert_eq!(before(&frozen), frozen_bytes);
}

/// Temporary files have names of their own, created only where nothing is: a link planted
/// at the name they once had (`c.json.tmp`) is not written through.
#[cfg(unix)]
fn temporary_files_do_not_write_through_planted_links(tmp: &tempfile::TempDir, trace: &str) {
    let at = |name: &str| tmp_str(tmp, name);
    std::fs::write(at("victim"), "victim").expect("written");
    for planted in ["c.json.tmp", ".c.json.tmp", "r.html.tmp", "e.swf.tmp"] {
        std::os::unix::fs::symlink(at("victim"), at(planted)).expect("symlink");
    }
    assert!(igemu(&["trace", trace, "--chrome", &at("c.json")])
        .status
        .success());
    assert!(igemu(&["report", &at("run"), "--out", &at("r.html")])
        .status
        .success());
    let o = igemu(&[&EXPORT[..], &["alpha-dve", "--out", &at("e.swf")]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(at("victim")).expect("readable"), b"victim");
}

/// A FIFO where an output directory keeps a file is refused, not read (a read blocks until
/// something writes) nor replaced.
#[cfg(unix)]
fn fifos_where_output_directories_keep_files_are_refused(tmp: &tempfile::TempDir) {
    let at = |name: &str| tmp_str(tmp, name);
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
}

/// An earlier output of the same kind is replaced.
#[cfg(unix)]
fn earlier_outputs_of_the_same_kind_are_replaced(tmp: &tempfile::TempDir, trace: &str) {
    let at = |name: &str| tmp_str(tmp, name);
    for _ in 0..2 {
        let mermaid = [
            "trace",
            trace,
            "--request",
            "ext-1",
            "--mermaid",
            &at("m.mmd"),
        ];
        assert!(igemu(&mermaid).status.success());
        assert!(igemu(&["report", &at("run"), "--out", &at("r.html")])
            .status
            .success());
        let o = igemu(&[&EXPORT[..], &["alpha-dve", "--out", &at("e.swf")]].concat());
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
