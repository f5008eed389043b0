//! Tests of sweeps: reading sweep files, points, records, shards and statistics.

use super::*;

/// A range's values read as written: each is `from + i·step` to the places `from` and
/// `step` are written with, not the float sum's tail (`0.15000000000000002`).
#[test]
fn a_ranges_values_read_as_their_decimal_steps() {
    let values = |range: &str| {
        let text = format!("topology = \"t.toml\"\n[vary]\n\"lrms.cp_alpha\" = {range}\n");
        let sweep = parse_text(&text, Path::new("s.toml")).expect("a sound sweep");
        sweep.vary[0].1.clone()
    };
    let got = values("{ from = 0.0, to = 1.0, step = 0.05 }");
    assert_eq!(got.len(), 21);
    for (i, v) in got.iter().enumerate() {
        // The decimal written by hand: i·5 hundredths.
        let want = format!("{}.{:02}", i * 5 / 100, i * 5 % 100);
        let want: f64 = want.parse().expect("a decimal");
        assert_eq!(v, &format!("{want:?}"), "value {i}");
    }
    assert_eq!(
        values("{ from = 3.8, to = 7.0, step = 0.8 }"),
        ["3.8", "4.6", "5.4", "6.2", "7.0"]
    );
    // Places beyond what a decimal rounding can keep are left as summed.
    assert_eq!(
        values("{ from = 1e-20, to = 3e-20, step = 1e-20 }").len(),
        3
    );
    assert_eq!(decimals(1e-20), None);
    assert_eq!(round_to(0.1 + 0.2, decimals(0.1)), 0.3);
    assert_eq!(round_to(1e300, Some(15)), 1e300);
}

#[test]
fn confidence_intervals_use_students_t() {
    let (m, h) = mean_ci(&[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(m, 2.5);
    // sd = 1.291, n = 4, t(3) = 3.1824: 3.1824 · 1.291 / 2.
    assert!((h - 3.182446 * (5.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-5);
    // Exact quantiles, also past the 30 degrees of freedom a printed table stops at.
    assert!((t975(1) - 12.7062).abs() < 1e-4);
    assert!((t975(40) - 2.0211).abs() < 1e-4);
    assert!(t975(0).is_nan());
    assert!(mean_ci(&[5.0]).1.is_nan());
}

/// The pre-flight runs the end of a sweep on stand-in rows: a run file whose columns
/// collide fails there, before any run, and a sound one passes.
#[test]
fn preflight_finds_what_the_end_of_a_sweep_would_fail_on() {
    let text = "topology = \"t.toml\"\nseeds = 3\n[vary]\n\"igg.dispatch\" = [\"rr\", \"lrf\"]\n";
    let sweep = parse_text(text, Path::new("s.toml")).expect("a sound sweep");
    let metrics = vec!["awrt_s".to_string(), "utilization_pct".to_string()];
    let header = runs_header(&sweep, &metrics);
    preflight(&sweep, &header, &metrics).expect("a sound sweep passes");
    let twice = vec!["awrt_s".to_string(), "seed".to_string()];
    let e = preflight(&sweep, &runs_header(&sweep, &twice), &twice).unwrap_err();
    assert!(e.contains("column `seed` comes twice"), "{e}");
    assert!(is_run_column("seed") && is_run_column("set:x") && !is_run_column("seeds"));
}

/// The problems `parse_text` reports for a sweep file varying `key` over `values` (TOML).
fn vary_problems(key: &str, values: &str) -> Option<String> {
    let text = format!("topology = \"t.toml\"\nseeds = 1\n[vary]\n\"{key}\" = {values}\n");
    parse_text(&text, Path::new("s.toml"))
        .err()
        .map(|r| r.to_string())
}

#[test]
fn two_spellings_of_one_value_are_one_value_listed_twice() {
    for (values, first, second, what) in [
        (r#"["1h", "60m"]"#, "1h", "60m", "the duration 3600 s"),
        (r#"["1h", 3600]"#, "1h", "3600", "the duration 3600 s"),
        (
            r#"[3600, "01:00:00"]"#,
            "3600",
            "01:00:00",
            "the duration 3600 s",
        ),
        (
            r#"["90s", "1m30s", 5]"#,
            "90s",
            "1m30s",
            "the duration 90 s",
        ),
        ("[1000, 1e3]", "1000", "1000.0", "the number 1000"),
        ("[0.5, 5e-1]", "0.5", "0.5", ""),
        // A duration key reads a plain number in a string as seconds.
        (r#"["3600", "1h"]"#, "3600", "1h", "the duration 3600 s"),
    ] {
        let m = vary_problems("emulation.end", values).expect(values);
        let expect = if first == second {
            format!("value {first} is listed twice for `emulation.end`")
        } else {
            format!("values {first} and {second} of `emulation.end` are one value ({what})")
        };
        assert!(m.contains(&expect), "{values}: {m}");
        assert_eq!(m.matches("error:").count(), 1, "{values}: {m}");
    }
    // Distinct values stay distinct: numbers a microsecond apart, names that are no
    // durations, and lists of other values.
    for values in [
        "[0.1, 0.1000001]",
        r#"["rr", "bcf", "pap-rtdp"]"#,
        r#"["1h", "61m", 3601, 3602.5]"#,
        r#"[["1m", "5m"], ["1m", "6m"]]"#,
        "[1, 2, 3]",
    ] {
        assert_eq!(vary_problems("emulation.end", values), None, "{values}");
    }
}

#[test]
fn old_share_names_point_to_their_percent_keys() {
    assert_eq!(
        renamed_metric("utilization").as_deref(),
        Some("utilization_pct")
    );
    assert_eq!(
        renamed_metric("clusters.g/c1.local_rejection_rate").as_deref(),
        Some("clusters.g/c1.local_rejection_pct")
    );
    assert_eq!(renamed_metric("dvr").as_deref(), Some("dvr_pct"));
    assert_eq!(renamed_metric("awrt_s"), None);
    assert_eq!(renamed_metric("utilization_pct"), None);
}

/// The report of sweep text that must not parse.
fn refused(text: &str) -> String {
    match parse_text(text, Path::new("s.toml")) {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(r) => r.to_string(),
    }
}

#[test]
fn a_seed_in_set_or_vary_is_refused_at_its_place_pointing_to_seeds() {
    for (body, line) in [
        ("[vary]\n\"emulation.seed\" = [1, 2, 3]\n", 3),
        ("[set]\n\" emulation . seed\" = 4\n", 3),
        // Unquoted, TOML reads it as the table `emulation` holding `seed`.
        ("[set]\nemulation.seed = 4\n", 3),
        ("[set]\n\"emulation\" = { seed = 4 }\n", 3),
        (
            "[vary]\n\"emulation.seed\" = { from = 1, to = 3, step = 1 }\n",
            3,
        ),
    ] {
        let err = refused(&format!("topology = \"t.toml\"\n{body}"));
        assert!(
            err.contains(&format!("s.toml:{line}:"))
                && err.contains("sets the seed, which a sweep sets for each run")
                && err.contains("seeds = [1, 7, 42]"),
            "{body}: {err}"
        );
    }
}

#[test]
fn repeated_seeds_values_metrics_and_keys_are_refused_at_their_place() {
    let cases = [
        (
            "seeds = [1, 2, 1]\n",
            "s.toml:2:16",
            "seed 1 is listed twice",
        ),
        (
            "seeds = [\"3\", 3]\n",
            "s.toml:2:15",
            "seed 3 is listed twice",
        ),
        (
            "[vary]\n\"lrms.cp_alpha\" = [0.1, 0.2, 0.1]\n",
            "s.toml:3:30",
            "value 0.1 is listed twice for `lrms.cp_alpha`",
        ),
        (
            "[vary]\n\"lrms.preemption\" = [\"nop\", \"cp\", \"nop\"]\n",
            "s.toml:3:",
            "value nop is listed twice for `lrms.preemption`",
        ),
        (
            "metrics = [\"awrt_s\", \"makespan_s\", \"awrt_s\"]\n",
            "s.toml:2:",
            "metric `awrt_s` is listed twice",
        ),
        (
            "[vary]\n\"lrms.cp_alpha\" = [0.1]\n\"lrms.cp_alpha \" = [0.2]\n",
            "s.toml:4:1",
            "`lrms.cp_alpha` in [vary] and `lrms.cp_alpha ` in [vary] name the same key",
        ),
        (
            "[set]\n\"lrms.cp_alpha\" = 0.1\n[vary]\n\"lrms. cp_alpha\" = [0.2]\n",
            "s.toml:5:1",
            "`lrms.cp_alpha` in [set] and `lrms. cp_alpha` in [vary] name the same key",
        ),
        (
            "[vary]\n\"workload.0.x\" = [1]\n\"workload.00.x\" = [2]\n",
            "s.toml:4:1",
            "name the same key",
        ),
    ];
    for (body, place, message) in cases {
        let err = refused(&format!("topology = \"t.toml\"\n{body}"));
        assert!(
            err.contains(place) && err.contains(message),
            "{body}: {err}"
        );
    }
    // Distinct values, seeds and keys are fine.
    let ok = parse_text(
        "topology = \"t.toml\"\nseeds = [1, 2]\n[set]\n\"lrms.cp_alpha\" = 0.1\n\
             [vary]\n\"lrms.preemption\" = [\"nop\", \"cp\"]\n",
        Path::new("s.toml"),
    );
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn runs_enumerate_every_point_and_seed_in_a_stable_order() {
    let s = Sweep {
        topology: PathBuf::from("t.toml"),
        seeds: vec![1, 2],
        metrics: Vec::new(),
        set: vec![("emulation.end".into(), "\"1d\"".into())],
        vary: vec![
            (
                "igg.dispatch".into(),
                vec!["\"rr\"".into(), "\"bcf\"".into()],
            ),
            ("x.y".into(), vec!["1.0".into(), "2.0".into(), "3.0".into()]),
        ],
        registry: crate::policy::Registry::builtin(),
    };
    let runs = s.runs();
    assert_eq!(runs.len(), 12);
    assert_eq!(runs[0].point, vec!["\"rr\"", "1.0"]);
    assert_eq!(runs[1].seed, 2);
    assert_eq!(runs[2].point, vec!["\"rr\"", "2.0"]);
    assert_eq!(runs[11].point, vec!["\"bcf\"", "3.0"]);
    assert_eq!(
        s.overrides(&runs[3]),
        vec![
            "emulation.end=\"1d\"",
            "igg.dispatch=\"rr\"",
            "x.y=2.0",
            "emulation.seed=2"
        ]
    );
}

/// points.csv lists the points in the order their runs come (the sweep file's order, last
/// key fastest), not in the values' text order, which would put 10 before 3.
#[test]
fn points_keep_the_order_the_sweep_lists_them_in() {
    let dir = runs::TempDir::new().expect("a temporary directory");
    let runs = dir.0.join("runs.csv");
    let mut text = String::from("run,seed,set:a,set:k,m,error\n");
    let points = [("b", "3"), ("b", "10"), ("a", "30"), ("a", "100")];
    for (i, (a, k)) in points.iter().enumerate() {
        for seed in 1..=2 {
            text += &format!("{},{seed},{a},{k},{i}.5,\n", 2 * i + seed - 1);
        }
    }
    std::fs::write(&runs, text).expect("written");
    let out = dir.0.join("points.csv");
    assert_eq!(summarize(&[runs], &out), Ok(4));
    let written = std::fs::read_to_string(&out).expect("read");
    let listed: Vec<(&str, &str)> = (written.lines().skip(1))
        .filter_map(|l| {
            l.split(',')
                .collect::<Vec<_>>()
                .get(..2)
                .map(|c| (c[0], c[1]))
        })
        .collect();
    assert_eq!(listed, points);
    assert!(written
        .lines()
        .nth(2)
        .is_some_and(|l| l.starts_with("b,10,m,2,1.5,")));
}
