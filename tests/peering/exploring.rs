//! Faults and explored interleavings: reproducible runs under faults, the invariant checker
//! against a deliberately broken protocol, and schedules explored by number.

use super::*;

/// The stress presets of `topo` with these names, in the presets' order.
pub(super) fn presets_named(topo: &Topology, names: &[&str]) -> Vec<igemu::stress::FaultSetting> {
    presets(topo)
        .into_iter()
        .filter(|p| names.contains(&p.name.as_str()))
        .collect()
}

#[test]
fn runs_with_faults_are_reproducible_byte_for_byte() {
    let topo = small(&[]);
    let chaos = presets(&topo)
        .into_iter()
        .find(|p| p.name == "chaos")
        .expect("chaos preset");
    let mut traces = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().expect("temp dir");
        let sets: Vec<&str> = chaos.sets.iter().map(String::as_str).collect();
        let r = run(
            small(&sets),
            &RunOptions {
                trace_dir: Some(dir.path().to_path_buf()),
                ..RunOptions::default()
            },
        )
        .expect("runs");
        assert!(
            r.summary.faults.dropped + r.summary.faults.duplicated > 0,
            "faults were injected"
        );
        traces.push(std::fs::read(dir.path().join("trace.jsonl")).expect("trace"));
    }
    assert!(traces[0] == traces[1]);
}

#[test]
fn the_invariant_checker_catches_a_broken_protocol_and_passes_the_real_one() {
    let topo = small(&[]);
    let lossy = presets_named(&topo, &["lossy"]);
    let seeds = [1, 2, 3, 4];
    let plan = StressPlan {
        registry: &igemu::policy::Registry::builtin(),
        pace: Pace::Virtual,
        settings: &lossy,
        seeds: &seeds,
        schedules: &[0],
    };
    let sound = stress(&path(SMALL), &[], &plan, 2, Broken::None, Style::Quiet);
    for r in &sound {
        assert_eq!(
            r.outcome.as_ref().map(|o| o.0),
            Ok(0),
            "seed {}: {:?}",
            r.seed,
            r.outcome
        );
    }
    // The broken variant serves a request at home when an acknowledgement is late, though
    // the provider may be running it: some Grid serves a request twice.
    let broken = stress(&path(SMALL), &[], &plan, 2, Broken::LateAck, Style::Quiet);
    let caught: u64 = broken
        .iter()
        .filter_map(|r| r.outcome.as_ref().ok().map(|o| o.0))
        .sum();
    assert!(caught > 0, "the checker missed the broken protocol");
    let example = broken
        .iter()
        .find_map(|r| r.outcome.as_ref().ok().and_then(|o| o.1.first().cloned()))
        .expect("an example");
    // Serving at home a request a provider runs shows as two Grids serving it, as a request
    // ending twice, or — when home refuses it and offers it again — as a ticket confirmed twice.
    assert!(
        example.contains("served by grids")
            || example.contains("ended twice")
            || example.contains("confirmed twice"),
        "{example}"
    );
    // Every report names the command that reproduces it, and that command does: the broken
    // variant included, the same violations come out of `igemu run`.
    let cmd = broken[0].command(&path(SMALL));
    assert!(
        cmd.contains("--mode virtual")
            && cmd.contains("emulation.seed=1")
            && cmd.contains("fault.drop=0.1")
            && cmd.ends_with(" --broken-protocol"),
        "{cmd}"
    );
    let failing = broken
        .iter()
        .find(|r| r.outcome.as_ref().is_ok_and(|o| o.0 > 0))
        .expect("a run with violations");
    let out = std::env::temp_dir().join(format!("igemu-broken-repro-{}", std::process::id()));
    let mut args = vec!["run", SMALL, "--mode", "virtual", "--quiet", "--overwrite"];
    for s in &failing.sets {
        args.extend(["--set", s.as_str()]);
    }
    let dir = out.to_string_lossy().into_owned();
    args.extend(["--out", dir.as_str(), "--broken-protocol"]);
    let rerun = igemu(&args);
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(rerun.status.code(), Some(1), "{rerun:?}");
    let summary: serde_json::Value = serde_json::from_str(&summary).expect("summary.json");
    assert_eq!(
        summary["invariant_violations"].as_u64(),
        failing.outcome.as_ref().ok().map(|o| o.0),
        "the reproduce command gave other violations"
    );
}

#[test]
fn stress_and_trace_commands_work_end_to_end() {
    let out = igemu(&["stress", SMALL, "--seeds", "2", "--faults", "none,crash"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("4 runs, 0 with violations"), "{text}");
    assert_eq!(
        igemu(&["stress", SMALL, "--faults", "meteor"])
            .status
            .code(),
        Some(2)
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path().to_str().expect("utf-8");
    let out = igemu(&["run", SMALL, "--trace", "--out", d]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = std::fs::read_to_string(dir.path().join("trace.jsonl")).expect("trace");
    // Providers tell their peers their current unit cost, which reprices the contracts.
    assert!(trace.contains("\"kind\":\"PriceUpdate\""));
    let neg = trace
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["kind"] == "PeerRedirect")
        .and_then(|e| e["negotiation"].as_u64())
        .expect("a redirection happened");
    a_negotiation_draws_as_a_mermaid_diagram(dir.path(), neg);
    the_chrome_export_has_an_event_per_message(dir.path(), &trace);
}

/// `trace --negotiation N --mermaid` of the run in `dir` draws the negotiation `neg`'s
/// messages, what followed each redirection one line per lease unless `--vm-steps`.
fn a_negotiation_draws_as_a_mermaid_diagram(dir: &std::path::Path, neg: u64) {
    let mmd = dir.join("neg.mmd");
    let neg_s = neg.to_string();
    let out = igemu(&[
        "trace",
        dir.join("trace.jsonl").to_str().expect("utf-8"),
        "--negotiation",
        &neg_s,
        "--mermaid",
        mmd.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let diagram = std::fs::read_to_string(&mmd).expect("written");
    for kind in ["PeerOffer", "PeerAnswer", "PeerRedirect", "PeerRedirectAck"] {
        assert!(diagram.contains(kind), "{kind} missing from\n{diagram}");
    }
    // What followed each redirection is one line per lease, unless the steps are asked for.
    assert!(diagram.contains(": lease "), "{diagram}");
    assert!(!diagram.contains("AssignLease"), "{diagram}");
    let out = igemu(&[
        "trace",
        dir.join("trace.jsonl").to_str().expect("utf-8"),
        "--negotiation",
        &neg_s,
        "--vm-steps",
        "--mermaid",
        mmd.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let steps = std::fs::read_to_string(&mmd).expect("written");
    assert!(steps.contains("AssignLease") && !steps.contains(": lease "));
    assert!(steps.lines().count() > diagram.lines().count());
}

/// `trace --chrome` of the run in `dir` has an instant event per message of its `trace`.
fn the_chrome_export_has_an_event_per_message(dir: &std::path::Path, trace: &str) {
    let chrome = dir.join("all.json");
    let out = igemu(&[
        "trace",
        dir.join("trace.jsonl").to_str().expect("utf-8"),
        "--chrome",
        chrome.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&chrome).expect("written")).expect("JSON");
    let instants = json["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "i")
        .count();
    assert_eq!(instants, trace.lines().count(), "one event per message");
}

/// The trace of peering-small with `sets`, as text (written into a fresh directory).
pub(super) fn small_trace(name: &str, sets: &[&str]) -> (String, u64) {
    let dir = path(&format!("target/tmp/interleave-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let result = common::run_traced(small(sets), &dir);
    let text = std::fs::read_to_string(dir.join("trace.jsonl")).expect("trace written");
    let _ = std::fs::remove_dir_all(&dir);
    (text, result.summary.invariant_violations)
}

#[test]
fn an_explored_interleaving_is_reproduced_by_its_number_and_differs_from_fifo() {
    let seed = "emulation.seed=2";
    let (fifo, v0) = small_trace("fifo", &[seed]);
    let (ten, v10) = small_trace("ten", &[seed, "emulation.interleaving=10"]);
    let (again, _) = small_trace("again", &[seed, "emulation.interleaving=10"]);
    let (eleven, v11) = small_trace("eleven", &[seed, "emulation.interleaving=11"]);
    assert_eq!(
        ten, again,
        "the same schedule must deliver in the same order"
    );
    assert_ne!(ten, fifo, "a perturbed schedule must change some order");
    assert_ne!(ten, eleven, "two schedules must differ");
    // Schedule 10 of seed 2 once left a host over capacity for good: a resumed VM's new
    // instance arrived before its suspended one left, and the host kept one VM per key.
    assert_eq!((v0, v10, v11), (0, 0, 0));
}

#[test]
fn the_sound_protocol_keeps_every_invariant_under_explored_interleavings() {
    // Before hosts judged capacity at the end of an instant, a VM arriving at the instant
    // another left (in the perturbed order: first) was a violation in most of these runs.
    let topo = small(&[]);
    let settings = presets_named(&topo, &["none", "chaos"]);
    let plan = StressPlan {
        registry: &igemu::policy::Registry::builtin(),
        pace: Pace::Virtual,
        settings: &settings,
        seeds: &[1, 2, 3],
        schedules: &[1, 2, 3],
    };
    let runs = stress(&path(SMALL), &[], &plan, 2, Broken::None, Style::Quiet);
    assert_eq!(runs.len(), 18);
    for r in &runs {
        assert_eq!(
            r.outcome.as_ref().map(|o| o.0),
            Ok(0),
            "{}",
            r.command(&path(SMALL))
        );
        assert!(r
            .command(&path(SMALL))
            .contains(&format!("--set 'emulation.interleaving={}'", r.schedule)));
    }
}

#[test]
fn an_order_dependent_flaw_is_caught_by_explored_interleavings_and_never_by_faults_alone() {
    // Hosts that judge capacity at each arrival take for granted that a VM leaving at the
    // instant another arrives leaves first: true in FIFO order, whatever the faults.
    let topo = small(&[]);
    let settings = presets(&topo);
    let seeds = [1, 2, 3, 4];
    let caught = |schedules: &[u64]| {
        let plan = StressPlan {
            registry: &igemu::policy::Registry::builtin(),
            pace: Pace::Virtual,
            settings: &settings,
            seeds: &seeds,
            schedules,
        };
        let runs = stress(
            &path(SMALL),
            &[],
            &plan,
            2,
            Broken::EagerCapacity,
            Style::Quiet,
        );
        let with: Vec<&igemu::stress::StressRun> = runs
            .iter()
            .filter(|r| r.outcome.as_ref().is_ok_and(|o| o.0 > 0))
            .collect();
        for r in &with {
            let example = &r.outcome.as_ref().map(|o| o.1.clone()).unwrap_or_default()[0];
            assert!(example.contains("over capacity"), "{example}");
            assert!(r
                .command(&path(SMALL))
                .ends_with(" --broken-protocol=eager-capacity"));
        }
        (with.len(), runs.len())
    };
    let (fifo, runs) = caught(&[0]);
    assert_eq!(runs, seeds.len() * settings.len());
    assert_eq!(fifo, 0, "faults alone caught the order flaw");
    let (explored, runs) = caught(&[1]);
    assert!(
        explored * 2 > runs,
        "one explored schedule per run caught it in only {explored} of {runs} runs"
    );
}

#[test]
fn an_explored_schedule_in_realtime_gives_the_virtual_runs_results() {
    // Realtime runs in logical time: the same schedule gives the same order, whatever the
    // wall clock did meanwhile.
    let dir = scratch("schedule-realtime");
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let mut outs = Vec::new();
    for mode in ["realtime", "virtual"] {
        let out = dir.join(mode);
        let mut args = vec!["run", SMALL, "--mode", mode, "--quiet"];
        if mode == "realtime" {
            args.extend(["--speedup", "2000000"]);
        }
        let out_s = s(&out);
        args.extend(["--set", "emulation.interleaving=2", "--out", &out_s]);
        let ran = igemu(&args);
        assert_eq!(ran.status.code(), Some(0), "{ran:?}");
        assert_eq!(summary_of(&out)["interleaving"], 2);
        outs.push(std::fs::read(out.join("requests.csv")).expect("requests.csv"));
    }
    assert!(
        outs[0] == outs[1],
        "realtime and virtual differ under one schedule"
    );
}
