//! External policies in realtime: a decision takes the wall time its process takes, a missed
//! deadline falls back (counted) or stops the run, and many decisions asked in one round are
//! asked in turn.

use super::*;

/// The summary of a realtime run's outputs in `dir`.
pub(super) fn summary_of(dir: &tempfile::TempDir) -> serde_json::Value {
    serde_json::from_slice(&output(dir, "summary.json")).expect("json")
}

#[test]
fn in_realtime_a_decision_takes_the_wall_time_its_process_takes() {
    if !python() {
        return;
    }
    // Table III's local request arrives at 720 s; the process takes 20 ms of wall time per
    // decision, 200 s of emulated time at ×10 000: the emulation goes on meanwhile and the
    // decision is carried out when the answer comes.
    let t3 = "topologies/paper003-testbed.toml";
    let slow = format!("lrms.preemption={}", misbehave("slow 0.02"));
    let mode = ["emulation.mode=\"realtime\"", "emulation.speedup=10000"];
    let (dir, code, stderr) = run_cli(t3, &[&slow, mode[0], mode[1], "external.deadline=\"2h\""]);
    assert_eq!(code, 0, "{stderr}");
    let s = summary_of(&dir);
    let p = &s["plugins"][0];
    assert_eq!(
        (p["decisions"].as_u64(), p["fallbacks"].as_u64()),
        (Some(1), Some(0))
    );
    let latency = p["latency_ms"]["max"].as_f64().expect("latency reported");
    assert!(
        latency >= 200_000.0,
        "{latency} ms: at least 20 ms × 10 000"
    );
    let decisions = String::from_utf8(output(&dir, "decisions.csv")).expect("utf-8");
    let made_at: f64 = (decisions.lines().nth(1))
        .and_then(|row| row.split(',').next())
        .and_then(|t| t.parse().ok())
        .expect("a decision row");
    assert!(
        made_at >= 720.0 + 200.0,
        "made at {made_at} s, asked at 720 s"
    );
    assert_eq!(s["invariant_violations"], 0);
}

#[test]
fn in_realtime_a_missed_deadline_falls_back_counted_or_stops_the_run() {
    if !python() {
        return;
    }
    let t3 = "topologies/paper003-testbed.toml";
    let slow = format!("lrms.preemption={}", misbehave("slow 0.5"));
    let realtime = [
        "emulation.mode=\"realtime\"",
        "emulation.speedup=10000",
        "external.deadline=\"60s\"",
    ];
    let mut sets = vec![slow.as_str(), "lrms.preemption_fallback=mov"];
    sets.extend(realtime);
    let (dir, code, stderr) = run_cli(t3, &sets);
    assert_eq!(code, 0, "{stderr}");
    let p = &summary_of(&dir)["plugins"][0];
    assert_eq!(
        (p["decisions"].as_u64(), p["fallbacks"].as_u64()),
        (Some(1), Some(1))
    );
    // MOV decided, at the deadline: 60 s after the request came; the same leases as MOV
    // alone takes at 720 s.
    let (mov, _, _) = run_cli(t3, &["lrms.preemption=mov"]);
    let row = |d: &tempfile::TempDir| {
        let text = String::from_utf8(output(d, "decisions.csv")).expect("utf-8");
        let row: Vec<String> = (text.lines().nth(1).unwrap_or_default().split(','))
            .map(str::to_string)
            .collect();
        row
    };
    let (ours, theirs) = (row(&dir), row(&mov));
    assert_eq!((ours[0].as_str(), theirs[0].as_str()), ("780", "720"));
    assert_eq!(
        (&ours[6], &ours[7]),
        (&theirs[6], &theirs[7]),
        "preempted, operations"
    );
    // Without a fallback the miss ends the run, naming the deadline.
    let mut sets = vec![slow.as_str()];
    sets.extend(realtime);
    stops_saying(
        t3,
        &sets,
        "did not answer within 60 s of emulated time ([external] deadline",
    );
}

#[test]
fn in_realtime_the_python_rr_places_every_request_without_stopping_the_run() {
    if !python() {
        return;
    }
    let realtime = [
        "emulation.mode=\"realtime\"",
        "emulation.speedup=20000",
        // 1.8 s of wall time: room for a loaded machine, since no answer may miss it.
        "external.deadline=\"10h\"",
    ];
    let rr = format!("igg.dispatch={RR_PY}");
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("out");
    let mut args = vec!["run", "--out", out.to_str().expect("utf-8"), "--quiet"];
    for s in [rr.as_str()].iter().chain(&realtime) {
        args.extend(["--set", s]);
    }
    let o = igemu(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("summary"))
            .expect("json");
    let decided: u64 = (s["plugins"].as_array().expect("plugins").iter())
        .map(|p| p["decisions"].as_u64().unwrap_or(0))
        .sum();
    let external = &s["requests"]["external"];
    let total = ["completed", "rejected", "cancelled", "unfinished"]
        .iter()
        .map(|k| external[k].as_u64().unwrap_or(0))
        .sum::<u64>();
    assert!(
        decided >= total && total > 0,
        "{decided} decisions for {total} requests"
    );
    assert_eq!(external["unfinished"], 0);
    assert_eq!(s["invariant_violations"], 0);
}

#[test]
fn in_realtime_a_round_that_asks_many_decisions_asks_them_in_turn_and_counts_each_once() {
    if !python() {
        return;
    }
    // peering-small's rounds: the providers answer every offered request, the requesters plan
    // every queued one — many external decisions in one input of an IGG.
    let good = misbehave("good");
    let sets = [
        format!("igg.answer={good}"),
        format!("igg.offer={good}"),
        "emulation.mode=\"realtime\"".to_string(),
        "emulation.speedup=200000".to_string(),
        // 1.8 s of wall time: room for a loaded machine, since no answer may miss it.
        "external.deadline=\"100h\"".to_string(),
    ];
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().join("out");
    let mut args = vec![
        "run",
        "topologies/peering-small.toml",
        "--trace",
        "--quiet",
        "--out",
        out.to_str().expect("utf-8"),
    ];
    for s in &sets {
        args.extend(["--set", s.as_str()]);
    }
    let o = igemu(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("summary"))
            .expect("json");
    assert_eq!(s["invariant_violations"], 0, "{}", s["violation_examples"]);
    assert_eq!(s["requests"]["external"]["unfinished"], 0);
    let plugins = s["plugins"].as_array().expect("plugins");
    let counted: u64 = plugins
        .iter()
        .map(|p| p["decisions"].as_u64().unwrap_or(0))
        .sum();
    let fell_back: u64 = plugins
        .iter()
        .map(|p| p["fallbacks"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(fell_back, 0, "{plugins:?}");
    // Both points were asked, and each decision is one trace record: none of an attempt that
    // was undone.
    for point in ["answer", "offer"] {
        assert!(
            plugins
                .iter()
                .any(|p| p["point"] == point && p["decisions"].as_u64() > Some(0)),
            "{point}: {plugins:?}"
        );
    }
    let traced = common::trace(&out)
        .iter()
        .filter(|r| r["kind"] == "Decision")
        .count() as u64;
    assert_eq!(traced, counted);
}
