//! `igemu stress`: its results, its seeds, and its folder shared with no run or sweep.

use super::*;

/// The smallest stress test: one seed of the small peering topology, no faults, quiet.
pub(super) const ONE_QUIET_STRESS: [&str; 7] = [
    "stress",
    "topologies/peering-small.toml",
    "--seeds",
    "1",
    "--faults",
    "none",
    "--quiet",
];

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
    stress_refuses_overrides_of_the_keys_it_sets();
    stress_runs_from_its_first_seed();
    seeds_past_the_largest_are_refused_with_a_range_that_is_accepted();
}

/// Every other key stress sets in a run after the user's overrides is refused too, naming
/// the flag that sets it; a fault key the chosen settings leave alone still applies.
fn stress_refuses_overrides_of_the_keys_it_sets() {
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
}

/// `--first-seed 7 --seeds 2` runs seeds 7 and 8, each row's reproduce line naming its own.
fn stress_runs_from_its_first_seed() {
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
}

/// Seeds past the largest are refused; near the largest seed the advice is a range that is
/// accepted: it advised `--first-seed 18446744073709551615 --seeds 100000`, itself refused.
fn seeds_past_the_largest_are_refused_with_a_range_that_is_accepted() {
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
