//! Values past their caps and ranges: sizes, times, rates, seeds, overrides and periods, each
//! refused with the limit named, never a crash, a wrap or a hang.

use super::*;

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

/// One Grid of `clusters` clusters, each of `groups` host groups of `count` hosts.
pub(super) fn hosts_topology(clusters: usize, groups: usize, count: u64) -> String {
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
    workload_settings_out_of_range_are_errors_with_a_hint();
}

/// Workload settings out of their range (paper 000's DAS-2 model, deadlines) are errors
/// naming the value, with a hint to use a number unless they are not finite.
fn workload_settings_out_of_range_are_errors_with_a_hint() {
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
