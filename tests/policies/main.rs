//! Bring your own policy: policies of a program's own (Rust, through the registry) and
//! external processes (any language, over the decision protocol) at every decision point —
//! giving the shipped policies' outputs byte for byte when they re-implement them, their
//! decisions traced and counted, their bad answers and failures caught with a clear error
//! within seconds (or decided by a named fallback, counted), and nothing written then.

#[path = "../common/mod.rs"]
mod common;

use common::{igemu, load, path};

#[path = "../../examples/admission.rs"]
mod admission_example;
#[path = "../../examples/dispatch.rs"]
mod dispatch_example;
#[path = "../../examples/negotiation.rs"]
mod negotiation_example;
#[path = "../../examples/preemption.rs"]
mod preemption_example;

mod external;
mod gateway;
mod realtime;

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
        let sets = [
            set.as_str(),
            "lrms.compress=false",
            "lrms.moldable=spread",
            "lrms.profile=paper000-sim",
        ];
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
