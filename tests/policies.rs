//! Bring your own policy: policies of a program's own (Rust, through the registry) and
//! external processes (any language, over the decision protocol) at every decision point —
//! giving the shipped policies' outputs byte for byte when they re-implement them, their
//! decisions traced and counted, their bad answers and failures caught with a clear error
//! within seconds (or decided by a named fallback, counted), and nothing written then.

mod common;
use common::{igemu, load, path};

#[path = "../examples/admission.rs"]
mod admission_example;
#[path = "../examples/dispatch.rs"]
mod dispatch_example;
#[path = "../examples/negotiation.rs"]
mod negotiation_example;
#[path = "../examples/preemption.rs"]
mod preemption_example;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use igemu::lrms::preemption::{Ask, Preemption};
use igemu::lrms::{Choice, Contention};
use igemu::policy::Registry;
use igemu::topology::{self, Overrides};
use igemu::{run, RunOptions};

/// Whether `python3` runs here; if not, says the test is skipped (CI runs it where it can).
fn python() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 is not installed, so the external policies cannot run");
    }
    ok
}

const RR_PY: &str = "external:python3 examples/policies/rr.py";
const MOV_PY: &str = "external:python3 examples/policies/mov.py";

/// A policy of `tests/plugins/misbehave.py` in `mode`.
fn misbehave(mode: &str) -> String {
    format!("external:python3 tests/plugins/misbehave.py {mode}")
}

/// Runs the `igemu` binary on `topology` with `sets` into a fresh directory; returns the
/// directory, the exit code and stderr.
fn run_cli(topology: &str, sets: &[&str]) -> (tempfile::TempDir, i32, String) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = dir.path().join("out");
    let mut args = vec![
        "run",
        topology,
        "--out",
        out.to_str().expect("utf-8"),
        "--quiet",
    ];
    for s in sets {
        args.extend(["--set", s]);
    }
    let o = igemu(&args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    (dir, o.status.code().unwrap_or(-1), stderr)
}

/// Runs with `sets`, asserts igemu stopped with exit code 2 saying `says`; gives stderr.
fn stops_saying(topology: &str, sets: &[&str], says: &str) -> String {
    let (_, code, stderr) = run_cli(topology, sets);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(says), "`{says}` not in: {stderr}");
    stderr
}

fn output(dir: &tempfile::TempDir, file: &str) -> Vec<u8> {
    std::fs::read(dir.path().join("out").join(file))
        .unwrap_or_else(|e| panic!("{file} was written: {e}"))
}

#[test]
fn python_rr_and_mov_give_the_built_ins_outputs_byte_for_byte() {
    if !python() {
        return;
    }
    // An external dispatch policy may read the clusters' free slots, so they publish them,
    // and the IGG passes them on for the migration route of preemptions, which `rr` never
    // has: paper 000 is compared without migratable leases (their share to non-preemptable).
    let no_migratable: &[&str] = &[
        "workload.0.mix.migratable=0",
        "workload.0.mix.non_preemptable=0.5",
    ];
    for (topology, key, builtin, external, sets) in [
        (
            "topologies/paper003-testbed.toml",
            "lrms.preemption",
            "mov",
            MOV_PY,
            &[][..],
        ),
        (
            "topologies/paper000-three-clusters.toml",
            "igg.dispatch",
            "rr",
            RR_PY,
            no_migratable,
        ),
    ] {
        let ours = format!("{key}={builtin}");
        let theirs = format!("{key}={external}");
        let (a, code_a, err_a) = run_cli(topology, &[&[ours.as_str()][..], sets].concat());
        let (b, code_b, err_b) = run_cli(topology, &[&[theirs.as_str()][..], sets].concat());
        assert_eq!((code_a, code_b), (0, 0), "{err_a}\n{err_b}");
        for file in ["requests.csv", "decisions.csv"] {
            assert!(
                output(&a, file) == output(&b, file),
                "{topology}: {file} differs between {builtin} and {external}"
            );
        }
        // The external one is named among the plug-ins, with the decisions it made.
        let summary: serde_json::Value =
            serde_json::from_slice(&output(&b, "summary.json")).expect("json");
        let plugins = summary["plugins"].as_array().expect("plugins listed");
        assert_eq!(plugins.len(), 1, "{plugins:?}");
        assert_eq!(plugins[0]["policy"], external);
        assert!(plugins[0]["decisions"].as_u64() > Some(0));
        assert_eq!(plugins[0]["fallbacks"], 0);
    }
}

#[test]
fn an_external_policy_gives_the_same_outputs_run_after_run() {
    if !python() {
        return;
    }
    let set = format!("lrms.preemption={MOV_PY}");
    let traced = |dir: &Path| {
        let out = dir.join("out");
        let o = igemu(&[
            "run",
            "topologies/paper001-testbed.toml",
            "--set",
            &set,
            "--trace",
            "--quiet",
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        ["requests.csv", "decisions.csv", "trace.jsonl"]
            .map(|f| std::fs::read(out.join(f)).expect("written"))
    };
    let (a, b) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    assert!(traced(a.path()) == traced(b.path()));
}

#[test]
fn each_decision_of_a_plugin_is_a_trace_record_naming_its_cause() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let set = format!("lrms.preemption={MOV_PY}");
    let out = dir.path().join("out");
    let o = igemu(&[
        "run",
        "topologies/paper003-testbed.toml",
        "--set",
        &set,
        "--trace",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let trace = common::trace(&out);
    let decisions: Vec<&serde_json::Value> =
        trace.iter().filter(|r| r["kind"] == "Decision").collect();
    assert_eq!(decisions.len(), 1, "one preemption decision in Table III");
    let d = decisions[0];
    assert_eq!(d["from"], "lrms:igg1/rp");
    assert_eq!(d["request"], "7");
    assert_eq!(d["decision"]["point"], "preemption");
    assert_eq!(d["decision"]["question"]["need"], 5);
    assert_eq!(
        d["decision"]["question"]["candidates"]
            .as_array()
            .map(Vec::len),
        Some(6)
    );
    assert_eq!(
        d["decision"]["answer"]["preempt"],
        serde_json::json!(["2", "3", "5"])
    );
    // Its cause is the local request's arrival at the LRMS.
    let cause = d["cause"].as_u64().expect("a cause");
    let caused_by = trace
        .iter()
        .find(|r| r["seq"] == cause)
        .expect("the cause is traced");
    assert_eq!(caused_by["kind"], "SubmitLocal");
    // The decision is a record, not a message: the count of messages is the built-in's.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("summary"))
            .expect("json");
    let builtin = run(
        load("topologies/paper003-testbed.toml", &["lrms.preemption=mov"]),
        &RunOptions::default(),
    )
    .expect("runs");
    assert_eq!(summary["messages"], builtin.summary.messages);
}

/// An external policy in `mode` at `key` on `topology` fails the run with exit code 2, an
/// error holding each of `says`, within `within`, and nothing written: no outputs, no trace,
/// no record, no temporary file.
fn fails(topology: &str, key: &str, mode: &str, says: &[&str], within: Duration) {
    let set = format!("{key}={}", misbehave(mode));
    let dir = tempfile::tempdir().expect("a temp dir");
    let (out, record) = (dir.path().join("out"), dir.path().join("run.rec"));
    let started = Instant::now();
    let o = igemu(&[
        "run",
        topology,
        "--set",
        &set,
        "--set",
        "external.timeout=\"1s\"",
        "--trace",
        "--record",
        record.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
        "--quiet",
    ]);
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{mode}: {stderr}");
    assert!(took < within, "{mode}: took {took:?}");
    for s in says.iter().chain(&["misbehave.py"]) {
        assert!(stderr.contains(s), "{mode}: `{s}` not in: {stderr}");
    }
    assert!(
        !stderr.contains('\x1b'),
        "{mode}: escapes reach the terminal: {stderr:?}"
    );
    let left: Vec<String> = walk(dir.path());
    assert!(left.is_empty(), "{mode}: left behind: {left:?}");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p.display().to_string());
        }
    }
    files
}

#[test]
fn every_failure_of_an_external_process_is_a_clear_error_within_seconds() {
    if !python() {
        return;
    }
    let t3 = "topologies/paper003-testbed.toml";
    let key = "lrms.preemption";
    let soon = Duration::from_secs(20);
    fails(t3, key, "no-hello", &["exited"], soon);
    fails(t3, key, "old-protocol", &["protocol 99"], soon);
    fails(
        t3,
        key,
        "serves-nothing",
        &["preemption decision", "serves only: nothing"],
        soon,
    );
    let decision = "preemption for local request 7";
    fails(t3, key, "exit", &["exited", decision], soon);
    fails(
        t3,
        key,
        "hang",
        &["did not answer within 1s", decision],
        soon,
    );
    fails(
        t3,
        key,
        "garbage",
        &["not JSON", "this is not json", decision],
        soon,
    );
    fails(
        t3,
        key,
        "wrong-id",
        &["answered id 8 to question 1", decision],
        soon,
    );
    fails(
        t3,
        key,
        "decline",
        &["could not decide: no idea", decision],
        soon,
    );
    fails(
        t3,
        key,
        "stderr",
        &["Traceback: something broke", decision],
        soon,
    );
    fails(
        t3,
        key,
        "shapeless",
        &["must be a JSON object", decision],
        soon,
    );
    fails(
        t3,
        key,
        "impossible",
        &["leaves room for 0 of the 5 VMs", decision],
        soon,
    );
    // A program that is not there is refused before anything runs.
    stops_saying(
        t3,
        &["lrms.preemption=external:no-such-program-here x"],
        "`no-such-program-here` is not found",
    );
}

#[test]
fn policy_names_with_control_characters_are_refused_shown_escaped() {
    // A command is named in messages, traces and summaries: an escape sequence or a
    // right-to-left override in it is refused, and the refusal shows it escaped.
    for (set, says) in [
        (
            "lrms.preemption=external:py\x1b[31mthon3 x",
            "holds the character \\u{1b}",
        ),
        (
            "igg.dispatch=external:python3 \u{202e}rr.py",
            "holds the character \\u{202e}",
        ),
        (
            "igg.dispatch=\x1b[31mrr",
            "`\\u{1b}[31mrr` is not a valid `dispatch`",
        ),
        (
            "igg.dispatch_fallback=\x1b[2Jrr",
            "`\\u{1b}[2Jrr` is not a valid",
        ),
        (
            "lrms.scheduler=\x1b[31m",
            "`\\u{1b}[31m` is not a valid `scheduler`",
        ),
    ] {
        let stderr = stops_saying("topologies/paper003-testbed.toml", &[set], says);
        assert!(
            !stderr.contains('\x1b') && !stderr.contains('\u{202e}'),
            "{stderr:?}"
        );
    }
}

#[test]
fn impossible_answers_are_refused_at_every_decision_point() {
    if !python() {
        return;
    }
    let soon = Duration::from_secs(30);
    let t3 = "topologies/paper003-testbed.toml";
    fails(
        t3,
        "igg.dispatch",
        "impossible",
        &["cluster `nowhere`", "igg.dispatch"],
        soon,
    );
    fails(
        t3,
        "lrms.admission",
        "impossible",
        &["`limit` must be a whole number", "lrms.admission"],
        soon,
    );
    let peers = "topologies/peering-small.toml";
    fails(
        peers,
        "igg.answer",
        "impossible",
        &["counter-offers at unit price -1", "igg.answer"],
        soon,
    );
    fails(
        peers,
        "igg.offer",
        "impossible",
        &["outside the contract's range", "igg.offer"],
        soon,
    );
}

#[test]
fn a_named_fallback_decides_instead_and_is_counted() {
    if !python() {
        return;
    }
    let t3 = "topologies/paper003-testbed.toml";
    let bad = format!("lrms.preemption={}", misbehave("impossible"));
    let (a, code, stderr) = run_cli(t3, &[&bad, "lrms.preemption_fallback=mov"]);
    assert_eq!(code, 0, "{stderr}");
    let (b, _, _) = run_cli(t3, &["lrms.preemption=mov"]);
    assert!(output(&a, "decisions.csv") == output(&b, "decisions.csv"));
    let summary: serde_json::Value =
        serde_json::from_slice(&output(&a, "summary.json")).expect("json");
    let p = &summary["plugins"][0];
    assert_eq!(
        (p["decisions"].as_u64(), p["fallbacks"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(p["fallback"], "mov");
    // A process that fails for good leaves every later decision to the fallback too.
    let gone = format!("igg.dispatch={}", misbehave("exit"));
    let (c, code, stderr) = run_cli(t3, &[&gone, "igg.dispatch_fallback=rr"]);
    assert_eq!(code, 0, "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_slice(&output(&c, "summary.json")).expect("json");
    let p = &summary["plugins"][0];
    assert_eq!(p["decisions"].as_u64(), Some(6), "one per external request");
    assert_eq!(p["fallbacks"], p["decisions"]);
    // A fallback is a policy igemu has, never a process.
    stops_saying(
        t3,
        &[&bad, &format!("lrms.preemption_fallback={MOV_PY}")],
        "a fallback is a policy igemu ships",
    );
}

/// `topology` loaded with `registry`'s policies and `sets`.
fn with_registry(topology: &str, registry: &Registry, sets: &[&str]) -> igemu::topology::Topology {
    let overrides = Overrides {
        sets: sets.iter().map(|s| s.to_string()).collect(),
        registry: registry.clone(),
    };
    topology::load_file(&path(topology), &overrides).unwrap_or_else(|r| panic!("{r}"))
}

#[test]
fn a_programs_own_policies_run_beside_the_shipped_ones() {
    // Preemption: newest first takes leases 6 and 5 (3 + 2 VMs) for Table III's 5-VM local
    // request, where MOV takes {2, 3, 5}.
    let reg = preemption_example::registry();
    let r = run(
        with_registry(
            "topologies/paper003-testbed.toml",
            &reg,
            &["lrms.preemption=newest-first"],
        ),
        &RunOptions::default(),
    )
    .expect("runs");
    assert_eq!(r.decisions.len(), 1);
    let set: Vec<&str> = r.decisions[0]
        .decision
        .set
        .iter()
        .map(|(id, _)| r.topology.label(*id))
        .collect();
    assert_eq!(set, ["5", "6"]);
    assert_eq!(r.summary.plugins[0].policy, "newest-first");
    assert_eq!(r.summary.plugins[0].decisions, 1);
    // The shipped names still resolve through the same registry.
    assert!(
        with_registry(
            "topologies/paper003-testbed.toml",
            &reg,
            &["lrms.preemption=moml"]
        )
        .clusters[0]
            .lrms
            .preemption
            .name
            == "moml"
    );
    // An unknown name is refused with the registered ones as hints.
    let err = topology::load_file(
        &path("topologies/paper003-testbed.toml"),
        &Overrides::sets(vec!["lrms.preemption=newest-frist".into()]),
    )
    .expect_err("not registered by default");
    assert!(err.to_string().contains("external:CMD ARGS"), "{err}");
    let err = topology::load_file(
        &path("topologies/paper003-testbed.toml"),
        &Overrides {
            sets: vec!["lrms.preemption=newest-frist".into()],
            registry: reg,
        },
    )
    .expect_err("misspelt");
    assert!(
        err.to_string().contains("did you mean `newest-first`?"),
        "{err}"
    );
}

#[test]
fn the_dispatch_admission_and_negotiation_examples_decide_as_they_say() {
    // Most free first: paper 000's first request goes to the 256-core cluster, all idle.
    let r = run(
        with_registry(
            "topologies/paper000-three-clusters.toml",
            &dispatch_example::registry(),
            &["igg.dispatch=most-free", "emulation.end=\"2h\""],
        ),
        &RunOptions::default(),
    )
    .expect("runs");
    let first = r
        .records
        .iter()
        .zip(&r.topology.requests)
        .find(|(_, q)| q.origin == igemu::model::Origin::External);
    let (rec, _) = first.expect("an external request");
    assert_eq!(
        rec.cluster.map(|c| r.topology.cluster(c).name.as_str()),
        Some("c256")
    );
    // Short first refuses requests with reason queue-limit, which CACP never does (without
    // compression, whose filled holes keep the reference load's queues under its limit).
    let reg = admission_example::registry();
    let refused = |policy: &str| {
        let set = format!("lrms.admission={policy}");
        let sets = [set.as_str(), "lrms.compress=false"];
        let r = run(
            with_registry("topologies/paper002-admission.toml", &reg, &sets),
            &RunOptions::default(),
        )
        .expect("runs");
        r.summary.requests.external.rejected
    };
    assert_eq!(refused("cacp"), 0);
    assert!(refused("short-first") > 0);
    // Haggling never accepts an opening price: every answer is a counter-offer or a refusal.
    let r = run(
        with_registry(
            "topologies/peering-small.toml",
            &negotiation_example::registry(),
            &["igg.answer=haggle", "igg.offer=split"],
        ),
        &RunOptions::default(),
    )
    .expect("runs");
    let n: Vec<_> = r.summary.grids.values().map(|g| &g.negotiations).collect();
    assert_eq!(n.iter().map(|x| x.accepted).sum::<u64>(), 0);
    assert!(
        n.iter()
            .map(|x| x.countered_taken + x.countered_declined)
            .sum::<u64>()
            > 0
    );
    assert_eq!(r.summary.invariant_violations, 0);
}

/// A preemption policy whose sets never make room.
struct Useless;

impl Preemption for Useless {
    fn name(&self) -> String {
        "useless".into()
    }
    fn choose(&mut self, c: &Contention, _: &Ask<'_>) -> Option<Choice> {
        Some(Choice {
            set: vec![c.candidates.len() + 3],
            exact: true,
        })
    }
}

#[test]
fn a_rust_plugins_impossible_answer_stops_the_run_or_falls_back() {
    let mut reg = Registry::builtin();
    reg.preemption("useless", |_| Box::new(Useless));
    let topo = with_registry(
        "topologies/paper003-testbed.toml",
        &reg,
        &["lrms.preemption=useless"],
    );
    let err = run(topo, &RunOptions::default())
        .err()
        .expect("stopped")
        .to_string();
    assert!(
        err.contains("the preemption policy `useless` of cluster:igg1/rp failed at 720s"),
        "{err}"
    );
    assert!(
        err.contains("lease index 9 is not among the 6 candidates"),
        "{err}"
    );
    assert!(err.contains("lrms.preemption_fallback"), "{err}");
    let topo = with_registry(
        "topologies/paper003-testbed.toml",
        &reg,
        &["lrms.preemption=useless", "lrms.preemption_fallback=mlip"],
    );
    let r = run(topo, &RunOptions::default()).expect("the fallback decides");
    assert_eq!(r.summary.plugins[0].fallbacks, 1);
    let set: Vec<&str> = r.decisions[0]
        .decision
        .set
        .iter()
        .map(|(id, _)| r.topology.label(*id))
        .collect();
    assert_eq!(set, ["1", "6"], "MLIP's set of Table III");
}

/// The summary of a realtime run's outputs in `dir`.
fn summary_of(dir: &tempfile::TempDir) -> serde_json::Value {
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

const GATEWAY_PY: &str = "external:python3 examples/policies/gateway.py";

#[test]
fn an_external_gateway_plays_one_grid_of_paper_004_with_the_invariants_checked() {
    if !python() {
        return;
    }
    // Grid5000's gateway is the Python one: it serves its own requests and takes the
    // requests its peers redirect to it; the other two Grids' gateways are igemu's.
    let set = format!("grid.2.igg.implementation={GATEWAY_PY}");
    let r = run(
        load("topologies/paper004-three-grids.toml", &[&set]),
        &RunOptions::default(),
    )
    .expect("runs");
    let s = &r.summary;
    assert_eq!(s.invariant_violations, 0, "{:?}", s.violation_examples);
    assert_eq!(
        s.requests.external.unfinished + s.requests.local.unfinished,
        0
    );
    assert_eq!(s.plugins.len(), 1);
    assert_eq!(s.plugins[0].point, "gateway");
    assert_eq!(
        s.plugins[0].process.as_deref(),
        Some("simple gateway (python)")
    );
    assert!(s.plugins[0].decisions > 1000, "{:?}", s.plugins[0]);
    // Its peers redirected work to it, and it was paid for all of it (money is conserved:
    // an invariant), while it redirected nothing itself.
    let g5k = &s.grids["grid5000"];
    assert!(g5k.received > 0.0);
    assert_eq!(g5k.negotiations.offers, 0);
    let to_it: f64 = (s.grids.values())
        .filter_map(|g| g.redirected_pct_by_peer.get("grid5000"))
        .sum();
    assert!(to_it > 0.0);
}

#[test]
fn stress_finds_a_broken_external_gateways_bug_as_it_finds_the_built_in_ones() {
    if !python() {
        return;
    }
    let topo = load("topologies/peering-small.toml", &[]);
    let settings: Vec<_> = igemu::stress::presets(&topo)
        .into_iter()
        .filter(|p| p.name == "none" || p.name == "lossy")
        .collect();
    let registry = Registry::builtin();
    let plan = igemu::stress::StressPlan {
        registry: &registry,
        pace: igemu::stress::Pace::Virtual,
        settings: &settings,
        seeds: &[1, 2, 3],
        schedules: &[0],
    };
    let caught = |gateway: &str| {
        let sets = [format!("grid.2.igg.implementation={gateway}")];
        let runs = igemu::stress::stress(
            &path("topologies/peering-small.toml"),
            &sets,
            &plan,
            2,
            igemu::Broken::None,
            igemu::progress::Style::Quiet,
        );
        let mut by_fault = std::collections::BTreeMap::new();
        for r in &runs {
            let (n, _) = r.outcome.clone().unwrap_or_else(|e| panic!("{e}"));
            *by_fault.entry(r.fault.clone()).or_insert(0u64) += u64::from(n > 0);
        }
        (by_fault, runs)
    };
    let (sound, _) = caught(GATEWAY_PY);
    assert_eq!(
        sound.values().sum::<u64>(),
        0,
        "the sound gateway breaks nothing: {sound:?}"
    );
    let (broken, runs) = caught(&format!("{GATEWAY_PY} --broken"));
    // A timing flaw: no fault, no violation; lost messages make the peers retry a
    // redirection, which it then refuses while it serves the request.
    assert_eq!(broken["none"], 0);
    assert!(
        broken["lossy"] >= 2,
        "caught in {} of 3 lossy runs",
        broken["lossy"]
    );
    let example = (runs.iter())
        .find_map(|r| r.outcome.as_ref().ok().and_then(|o| o.1.first().cloned()))
        .expect("an example");
    assert!(
        example.contains("served by grids")
            || example.contains("ended twice")
            || example.contains("confirmed twice"),
        "{example}"
    );
}

#[test]
fn stress_runs_an_external_policy_under_every_fault_preset() {
    if !python() {
        return;
    }
    let topo = load("topologies/peering-small.toml", &[]);
    let settings = igemu::stress::presets(&topo);
    assert!(settings.len() >= 7, "every preset");
    let registry = Registry::builtin();
    let plan = igemu::stress::StressPlan {
        registry: &registry,
        pace: igemu::stress::Pace::Virtual,
        settings: &settings,
        seeds: &[1],
        schedules: &[0],
    };
    let sets = [format!("igg.dispatch={RR_PY}")];
    let runs = igemu::stress::stress(
        &path("topologies/peering-small.toml"),
        &sets,
        &plan,
        2,
        igemu::Broken::None,
        igemu::progress::Style::Quiet,
    );
    assert_eq!(runs.len(), settings.len());
    for r in &runs {
        assert_eq!(r.outcome, Ok((0, Vec::new())), "{}", r.fault);
        assert_eq!(r.ended.0, r.ended.1, "{}: every request ended", r.fault);
        assert!(
            r.sets.iter().any(|s| s.contains("rr.py")),
            "the external rr ran"
        );
    }
}

/// What `value` breaks of `schema` (a subset of JSON Schema: `$ref` to `#/$defs/…`,
/// `anyOf`, `type`, `const`, `enum`, `required`, `properties`, `items`, `minimum`), each with
/// its place.
fn schema_errors(
    root: &serde_json::Value,
    schema: &serde_json::Value,
    value: &serde_json::Value,
    at: &str,
) -> Vec<String> {
    use serde_json::Value;
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let def = r.trim_start_matches("#/$defs/");
        return schema_errors(root, &root["$defs"][def], value, at);
    }
    if let Some(alts) = schema.get("anyOf").and_then(Value::as_array) {
        let all: Vec<Vec<String>> = alts
            .iter()
            .map(|a| schema_errors(root, a, value, at))
            .collect();
        if all.iter().any(Vec::is_empty) {
            return Vec::new();
        }
        return vec![format!(
            "{at}: matches no alternative ({})",
            all.concat().join("; ")
        )];
    }
    let mut errors = leaf_errors(schema, value, at);
    if let (Some(props), Some(obj)) = (
        schema.get("properties").and_then(Value::as_object),
        value.as_object(),
    ) {
        for (k, s) in props {
            if let Some(v) = obj.get(k) {
                errors.extend(schema_errors(root, s, v, &format!("{at}.{k}")));
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), value.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            errors.extend(schema_errors(root, items, v, &format!("{at}[{i}]")));
        }
    }
    errors
}

/// What `value` breaks of `schema`'s own constraints (`type`, `const`, `enum`, `minimum`,
/// `required`), not its members'.
fn leaf_errors(schema: &serde_json::Value, value: &serde_json::Value, at: &str) -> Vec<String> {
    use serde_json::Value;
    let mut errors = Vec::new();
    let kind = |v: &Value, t: &str| match t {
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => false,
    };
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| kind(value, t)) {
        errors.push(format!("{at}: not one of {types:?}"));
    }
    if schema.get("const").is_some_and(|c| c != value) {
        errors.push(format!("{at}: not {}", schema["const"]));
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        if !e.contains(value) {
            errors.push(format!("{at}: {value} not among {e:?}"));
        }
    }
    if let (Some(min), Some(v)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) {
        if v < min {
            errors.push(format!("{at}: {v} below {min}"));
        }
    }
    if let (Some(req), Some(obj)) = (
        schema.get("required").and_then(Value::as_array),
        value.as_object(),
    ) {
        let missing = req
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| !obj.contains_key(*k));
        errors.extend(missing.map(|k| format!("{at}: `{k}` missing")));
    }
    errors
}

#[test]
fn every_message_of_a_real_exchange_follows_the_protocols_json_schema() {
    if !python() {
        return;
    }
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(path("docs/policy-protocol.schema.json")).expect("the schema"),
    )
    .expect("the schema is JSON");
    let dir = tempfile::tempdir().expect("dir");
    let log = dir.path().join("exchange.jsonl");
    let record = misbehave(&format!("record {}", log.display()));
    // Every decision point: preemption and dispatch on Table III's testbed, admission too;
    // answer, offer and a whole gateway on peering-small.
    for (topology, keys) in [
        (
            "topologies/paper003-testbed.toml",
            vec!["lrms.preemption", "lrms.admission", "igg.dispatch"],
        ),
        (
            "topologies/peering-small.toml",
            vec!["igg.answer", "igg.offer"],
        ),
        (
            "topologies/peering-small.toml",
            vec!["grid.2.igg.implementation"],
        ),
    ] {
        let sets: Vec<String> = keys.iter().map(|k| format!("{k}={record}")).collect();
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let (_, code, stderr) = run_cli(topology, &sets);
        assert_eq!(code, 0, "{stderr}");
    }
    let text = std::fs::read_to_string(&log).expect("the exchange was recorded");
    let mut points = std::collections::BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if let Some(p) = v["point"].as_str() {
            points.insert(p.to_string());
        }
        let errors = schema_errors(&schema, &schema, &v, "$");
        assert!(
            errors.is_empty(),
            "line {}: {line}\n{}",
            i + 1,
            errors.join("\n")
        );
    }
    let all: Vec<String> = [
        "admission",
        "answer",
        "dispatch",
        "gateway",
        "offer",
        "preemption",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(points.into_iter().collect::<Vec<_>>(), all);
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

#[test]
fn an_external_gateway_may_place_only_its_own_requests_and_each_once() {
    if !python() {
        return;
    }
    // A request a peer only offered is not this gateway's to place: a clear error.
    let offered = format!("grid.2.igg.implementation={}", misbehave("place-offered"));
    let stderr = stops_saying(
        "topologies/peering-small.toml",
        &[&offered],
        "which was never given to this gateway",
    );
    assert!(
        stderr.contains("igg.implementation") || stderr.contains("fix the gateway"),
        "{stderr}"
    );
    // Placing its own request twice reaches a cluster that holds it: the checker says so,
    // and the lease held is left as it is.
    let twice = format!("grid.0.igg.implementation={}", misbehave("place-twice"));
    let r = run(
        load("topologies/peering-small.toml", &[&twice]),
        &RunOptions::default(),
    )
    .expect("runs");
    assert!(r.summary.invariant_violations > 0);
    assert!(
        r.summary
            .violation_examples
            .iter()
            .any(|v| v.contains("assigned again while this cluster holds it")),
        "{:?}",
        r.summary.violation_examples
    );
}
