//! Output folders: what a command may replace, what it refuses, and files written whole or not
//! at all.

use super::*;

mod single_files;

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

pub(super) fn tmp_str(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_str().expect("utf-8").to_string()
}

/// Runs the `igemu` binary like [`igemu`], but gives up on it after `secs` seconds (killed;
/// `None`): for commands that would block forever if a fix regressed (a FIFO read twice).
/// Its exit code and standard error otherwise.
pub(super) fn igemu_within(args: &[&str], secs: u64) -> Option<(Option<i32>, String)> {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_igemu"));
    cmd.args(args);
    within(cmd, secs)
}

/// Runs the `igemu` binary as [`igemu_within`] does, with its address space limited to `kib`
/// KiB (`ulimit -v`, through `sh`): a reader that holds a whole input fails there with an
/// abort ("memory allocation of ... failed", exit 134), not by filling the machine.
#[cfg(unix)]
pub(super) fn igemu_in_memory(kib: u64, args: &[&str], secs: u64) -> Option<(Option<i32>, String)> {
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_igemu"))
        .args(args);
    within(cmd, secs)
}

/// Runs `cmd` from the crate root as [`igemu_within`] describes.
pub(super) fn within(mut cmd: std::process::Command, secs: u64) -> Option<(Option<i32>, String)> {
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
pub(super) fn refused(args: &[&str], expect: &str) -> Output {
    let o = igemu(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
    assert!(stderr(&o).contains(expect), "{args:?}: {}", stderr(&o));
    o
}

/// Unix only: a symbolic link at `link` to `target`.
#[cfg(unix)]
pub(super) fn link(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink made");
}

/// A `summary.json` with every key `igemu report` reads: no requests, `clusters` as
/// (`grid/cluster`, hosts), and `grids` as (name, figures) JSON.
pub(super) fn run_summary(end_s: f64, clusters: &[(&str, u64)], grids: &[(&str, &str)]) -> String {
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

/// The folder `name` in `tmp`, made.
fn made_dir(tmp: &tempfile::TempDir, name: &str) -> PathBuf {
    let d = tmp.path().join(name);
    std::fs::create_dir_all(&d).expect("dir made");
    d
}

/// `p` as an owned string.
fn owned(p: &Path) -> String {
    p.to_str().expect("utf-8").to_string()
}

/// Makes `path` a file of zeros past every cap (sparse: no disk is used), with no line end.
fn zeros(path: &Path) {
    let _ = std::fs::remove_file(path);
    let f = std::fs::File::create(path).expect("created");
    f.set_len((16 << 20) + 1).expect("sized");
}

#[cfg(unix)]
#[test]
fn huge_files_in_run_and_sweep_directories_are_refused_at_the_cap() {
    if !Path::new("/dev/zero").exists() {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let (dir, s) = (|name: &str| made_dir(&tmp, name), owned);
    // Before: "out of memory" after 1.6 GB, or an abort (exit 134).
    let z1 = dir("z1");
    zeros(&z1.join("summary.json"));
    refused(
        &["report", &s(&z1)],
        "summary.json: cannot read the file: larger than 16 MiB",
    );
    huge_files_a_sweep_reads_are_refused_at_the_cap(&tmp);
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
    // A device where an output directory keeps a file is not read at all.
    let z7 = dir("z7");
    link("/dev/zero", &z7.join("summary.json"));
    refused(&["report", &s(&z7)], "summary.json: not a regular file");
}

/// `sweep merge` refuses a huge runs file and a huge sweep.json beside one, and a resumed
/// sweep a huge runs file of its own, at the cap.
#[cfg(unix)]
fn huge_files_a_sweep_reads_are_refused_at_the_cap(tmp: &tempfile::TempDir) {
    let (dir, s) = (|name: &str| made_dir(tmp, name), owned);
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

/// Runs `igemu` with `args` and asserts it succeeds.
fn ok(args: &[&str]) {
    let o = igemu(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
}

/// The names in folder `d`, sorted.
fn listing(d: &Path) -> Vec<String> {
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
    a_run_and_a_sweep_replace_each_other_only_with_overwrite(&out, &other);
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
    a_shard_of_another_sweep_does_not_join_the_shards(dir.path(), &sweep, &other);
    results_without_their_record_are_refused_but_resume(dir.path(), &sweep, &out, &before);
}

/// A run into the sweep's folder `out`: refused, and with `--overwrite` the folder holds the
/// run alone; a sweep (`other`) into the run's folder: refused, and with `--overwrite` the
/// sweep alone.
fn a_run_and_a_sweep_replace_each_other_only_with_overwrite(out: &Path, other: &Path) {
    refused(
        &["run", "--out", s(out), "--quiet"],
        "holds a sweep's outputs (sweep.json, paired.csv, points.csv, runs.csv)",
    );
    assert!(!out.join("summary.json").exists());
    ok(&["run", "--out", s(out), "--quiet", "--overwrite"]);
    assert_eq!(
        listing(out),
        [
            "decisions.csv",
            "intervals.csv",
            "leases.csv",
            "requests.csv",
            "summary.json",
            "utilization.csv"
        ]
    );
    refused(
        &["sweep", s(other), "--out", s(out), "--quiet"],
        "holds a run's outputs (summary.json, ",
    );
    assert!(!out.join("runs.csv").exists());
    ok(&["sweep", s(other), "--out", s(out), "--quiet", "--overwrite"]);
    assert_eq!(
        listing(out),
        ["paired.csv", "points.csv", "runs.csv", "sweep.json"]
    );
}

/// Shards of one sweep share a folder; a shard of another sweep does not join them.
fn a_shard_of_another_sweep_does_not_join_the_shards(dir: &Path, sweep: &Path, other: &Path) {
    let shards = dir.join("shards");
    for i in ["0/2", "1/2"] {
        ok(&[
            "sweep",
            s(sweep),
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
            s(other),
            "--out",
            s(&shards),
            "--shard",
            "0/2",
            "--quiet",
        ],
        "sweep-0-of-2.json: the seeds differ",
    );
}

/// Results with no record of their inputs are another sweep's too; such results (an older
/// igemu's, here copied from `out`) still resume, as docs/sweeps.md promises, to the same
/// runs (`before`).
fn results_without_their_record_are_refused_but_resume(
    dir: &Path,
    sweep: &Path,
    out: &Path,
    before: &[u8],
) {
    let bare = dir.join("bare");
    std::fs::create_dir(&bare).expect("created");
    std::fs::write(bare.join("runs.csv"), "run,seed,error\n").expect("written");
    refused(
        &["sweep", s(sweep), "--out", s(&bare), "--quiet"],
        "runs.csv without the sweep.json saying what made it",
    );
    let old = dir.join("old");
    std::fs::create_dir(&old).expect("created");
    for f in ["runs.csv", "points.csv", "paired.csv"] {
        std::fs::copy(out.join(f), old.join(f)).expect("copied");
    }
    refused(
        &["sweep", s(sweep), "--out", s(&old), "--quiet"],
        "points.csv without the sweep.json",
    );
    ok(&["sweep", s(sweep), "--out", s(&old), "--quiet", "--resume"]);
    assert_eq!(
        std::fs::read(old.join("runs.csv")).expect("runs.csv"),
        before
    );
}

/// `sweep merge --out OUT MORE...` of the two shards in `shards`.
fn merge_shards(shards: &Path, out: &Path, more: &[&str]) -> Output {
    let files = [
        shards.join("runs-0-of-2.csv"),
        shards.join("runs-1-of-2.csv"),
    ];
    let mut args = vec!["sweep", "merge", "--out", s(out)];
    args.extend_from_slice(more);
    args.extend(files.iter().map(|f| s(f)));
    igemu(&args)
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
    for _ in 0..2 {
        let o = merge_shards(&shards, &shards, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    overwrite_beside_the_shards_removes_only_strays_igemu_wrote(&shards);
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
        let o = merge_shards(&shards, out, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
        assert_eq!(std::fs::read_dir(out).expect("listed").count(), before);
        let o = merge_shards(&shards, out, &["--overwrite"]);
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

/// A stray file beside the shards is the only thing --overwrite removes there: the shards
/// and their records, the merge's own inputs, stay; a points.csv igemu did not write is
/// refused even with --overwrite, and kept.
fn overwrite_beside_the_shards_removes_only_strays_igemu_wrote(shards: &Path) {
    std::fs::remove_file(shards.join("sweep.json")).expect("removed");
    let stray = "set:igg.dispatch,metric,n,mean,ci95_low,ci95_high\nrr,m,1,2,2,2\n";
    std::fs::write(shards.join("points.csv"), stray).expect("written");
    let o = merge_shards(shards, shards, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = merge_shards(shards, shards, &["--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(shards.join("points.csv"), "stray\n").expect("written");
    let o = merge_shards(shards, shards, &["--overwrite"]);
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
    let o = merge_shards(shards, shards, &["--overwrite"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for kept in [
        "runs-0-of-2.csv",
        "runs-1-of-2.csv",
        "sweep-0-of-2.json",
        "sweep-1-of-2.json",
    ] {
        assert!(shards.join(kept).exists(), "{kept} was removed");
    }
}
