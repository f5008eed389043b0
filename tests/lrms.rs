//! The LRMS through the whole emulation: paper 003's Table III, preemption operations at the
//! right times in the trace, migration through the IGG, and invariants on random workloads
//! under random policies.

mod common;
use common::{capacity_breaches, from_text, load, run_traced, trace};

use std::collections::HashMap;

use igemu::model::RequestState;
use igemu::{run, RunOptions, RunResult};
use proptest::prelude::*;

fn preempted(r: &RunResult) -> Vec<String> {
    let mut ids: Vec<String> = r
        .topology
        .requests
        .iter()
        .zip(&r.records)
        .filter(|(_, rec)| rec.preemptions > 0)
        .map(|(req, _)| r.topology.label(req.id).to_string())
        .collect();
    ids.sort();
    ids
}

/// Paper 003 Table III: preempted leases, overhead (±0.3 s) and makespan per policy.
#[test]
fn paper_003_table_iii_is_reproduced() {
    let table = [
        // policy, preempted leases, overhead (s), makespan (s)
        ("mlip", vec!["1", "6"], 59.9, 7800.0),
        ("mov", vec!["2", "3", "5"], 27.8, 8479.0),
        ("moml", vec!["5", "6"], 27.8, 7800.0),
    ];
    let mut makespans = HashMap::new();
    for (policy, leases, overhead, makespan) in &table {
        let set = format!("lrms.preemption={policy}");
        let r = run(
            load("topologies/paper003-testbed.toml", &[&set]),
            &RunOptions::default(),
        )
        .expect("runs");
        let s = &r.summary;
        assert_eq!(preempted(&r), *leases, "{policy} preempts the paper's set");
        assert!(
            (s.metrics.overhead_s - overhead).abs() <= 0.3,
            "{policy}: overhead {} vs {overhead}",
            s.metrics.overhead_s
        );
        assert_eq!(
            s.requests.local.completed, 1,
            "{policy} serves the local lease"
        );
        assert_eq!(s.requests.external.completed, 6);
        assert_eq!(s.invariant_violations, 0, "{:?}", s.violation_examples);
        if *policy != "mov" {
            let err = (s.makespan_s - makespan).abs() / makespan;
            assert!(
                err <= 0.01,
                "{policy}: makespan {} vs {makespan}",
                s.makespan_s
            );
        }
        makespans.insert(*policy, s.makespan_s);
    }
    assert!(
        makespans["mov"] > makespans["mlip"] && makespans["mov"] > makespans["moml"],
        "{makespans:?}"
    );
    // With no preemption the local lease is rejected.
    let r = run(
        load("topologies/paper003-testbed.toml", &["lrms.preemption=nop"]),
        &RunOptions::default(),
    )
    .expect("runs");
    assert_eq!(r.summary.requests.local.rejected, 1);
    assert_eq!(r.summary.metrics.lease_preemptions, 0);
    assert_eq!(r.summary.metrics.local_rejection_rate, 1.0);
}

/// Under MOML, lease 5 (2 VMs of 64 MB) is paused at 720 s (5 ms per VM), its VMs are
/// written to storage one at a time at 40 MB/s (1.6 s each), then lease 6's; it resumes when
/// lease 1 ends at 3600 s. The trace must show those steps at those times.
#[test]
fn preemption_steps_happen_at_the_overhead_models_times() {
    let dir = tempfile::tempdir().expect("temp dir");
    run_traced(
        load(
            "topologies/paper003-testbed.toml",
            &["lrms.preemption=moml"],
        ),
        dir.path(),
    );
    let steps: Vec<(String, u32, u64)> = trace(dir.path())
        .into_iter()
        .filter(|e| e["request"] == "5" && e["from"] == e["to"])
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or_default().to_string(),
                e["vm"].as_u64().unwrap_or(9) as u32,
                e["t_us"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let at = |kind: &str, vm: u32| {
        steps
            .iter()
            .filter(|(k, v, _)| k == kind && *v == vm)
            .map(|s| s.2)
            .collect::<Vec<_>>()
    };
    assert_eq!(at("Pause", 0), vec![720_000_000]);
    assert_eq!(at("Pause", 1), vec![720_005_000]);
    assert_eq!(at("Suspend", 0), vec![720_010_000]);
    assert_eq!(at("Suspended", 0), vec![721_610_000]);
    assert_eq!(at("Suspend", 1), vec![721_610_000]);
    assert_eq!(at("Suspended", 1), vec![723_210_000]);
    assert_eq!(at("Resume", 0), vec![3_600_000_000]);
    assert_eq!(at("Resumed", 1), vec![3_603_200_000]);
    assert_eq!(at("Unpause", 1), vec![3_603_210_000]);
    // 2 210 s of work were left: 2 400 s minus the 190 s done from 530 s to 720 s.
    assert_eq!(at("Completed", 0), vec![5_813_210_000]);
}

/// Two one-host clusters; an external lease of `kind` runs on c1 (round-robin's first
/// choice) when a local request for the whole of c1 arrives.
fn two_clusters(kind: &str) -> String {
    let deadline = if kind == "migratable" {
        "deadline = \"10h\"\n"
    } else {
        ""
    };
    format!(
        r#"
[lrms]
profile = "nfs-100mbps"
preemption = "mov"
[[grid]]
name = "g"
[[grid.cluster]]
name = "c1"
hosts = {{ count = 1, cores = 4, memory_mb = 8192 }}
[[grid.cluster]]
name = "c2"
hosts = {{ count = 1, cores = 4, memory_mb = 8192 }}
[[workload]]
name = "ext"
origin = "external"
grid = "g"
[[workload.request]]
id = "victim"
arrival = "0s"
vms = 2
mem_mb = 1024
duration = "2h"
type = "{kind}"
{deadline}
[[workload]]
name = "users"
origin = "local"
grid = "g"
cluster = "c1"
[[workload.request]]
id = "local"
arrival = "30m"
vms = 4
mem_mb = 1024
duration = "1h"
"#
    )
}

fn record<'a>(r: &'a RunResult, label: &str) -> &'a igemu::metrics::RequestRecord {
    let i = r
        .topology
        .request_labels
        .iter()
        .position(|l| l == label)
        .expect("known label");
    &r.records[i]
}

#[test]
fn a_preempted_cancellable_lease_is_stopped_and_ends_cancelled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let r = run_traced(from_text(&two_clusters("cancellable")), dir.path());
    assert_eq!(
        r.summary.invariant_violations, 0,
        "{:?}",
        r.summary.violation_examples
    );
    let victim = record(&r, "victim");
    assert_eq!(victim.state, Some(RequestState::Cancelled));
    assert_eq!(victim.end, Some(igemu::time::EmuTime::from_secs(1800)));
    assert_eq!(
        record(&r, "local").start,
        Some(igemu::time::EmuTime::from_secs(1800))
    );
    let stops = trace(dir.path())
        .iter()
        .filter(|e| e["kind"] == "Stop" && e["request"] == "victim")
        .count();
    assert_eq!(stops, 2);
}

#[test]
fn a_preempted_migratable_lease_moves_to_another_cluster_through_the_igg() {
    let dir = tempfile::tempdir().expect("temp dir");
    let r = run_traced(from_text(&two_clusters("migratable")), dir.path());
    assert_eq!(
        r.summary.invariant_violations, 0,
        "{:?}",
        r.summary.violation_examples
    );
    let victim = record(&r, "victim");
    assert_eq!(victim.state, Some(RequestState::Completed));
    assert_eq!(victim.migrations, 1);
    assert_eq!(
        victim.cluster.map(|c| r.topology.cluster(c).name.clone()),
        Some("c2".into())
    );
    assert_eq!(r.summary.metrics.migrations, 1);
    let events = trace(dir.path());
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e["request"] == "victim")
        .map(|e| e["kind"].as_str().unwrap_or_default())
        .collect();
    let pos = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    // The IGG finds the destination at the decision instant, while the VMs are suspending.
    assert!(pos("VmCommand") < pos("RelocateLease"));
    assert!(pos("RelocateLease") < pos("AdoptLease") && pos("AdoptLease") < pos("AdoptAnswer"));
    assert!(
        pos("AdoptAnswer") < pos("RelocationOutcome") && pos("RelocationOutcome") < pos("Migrated")
    );
    assert!(pos("Migrated") < pos("Resume"));
    // Resumed on c2's host, after the images were suspended (161.0 s per GB, one after the
    // other) and copied (160.2 s per GB, one after the other).
    let resumed_on_c2 = events
        .iter()
        .any(|e| e["request"] == "victim" && e["kind"] == "Occupy" && e["to"] == "host:g/c2/0");
    assert!(resumed_on_c2);
    let t = |kind: &str, vm: u64| {
        events
            .iter()
            .filter(|e| e["request"] == "victim" && e["kind"] == kind && e["vm"] == vm)
            .map(|e| e["t_us"].as_u64().unwrap_or(0) as f64 / 1e6)
            .next_back()
            .unwrap_or(f64::NAN)
    };
    let (ts, tc) = (1024.0 / 6.36, 160.2);
    let suspended_last = 1800.0 + 0.010 + 2.0 * ts;
    assert!(
        (t("Suspended", 1) - suspended_last).abs() < 1e-3,
        "{}",
        t("Suspended", 1)
    );
    assert!(
        (t("Migrated", 0) - (1800.010 + ts + tc)).abs() < 1e-3,
        "{}",
        t("Migrated", 0)
    );
    assert!(victim.end.expect("ended") <= igemu::time::EmuTime::from_secs(36_000));
}

fn random_topology(
    seed: u64,
    policy: &str,
    scheduler: &str,
    requests: &[(u16, u8, u8, u16, u8)],
) -> String {
    let mut t = format!(
        "[emulation]\nseed = {seed}\n[lrms]\nprofile = \"nfs-100mbps\"\npreemption = \"{policy}\"\nscheduler = \"{scheduler}\"\npivots = 2\n[[grid]]\nname = \"g\"\n[[grid.cluster]]\nname = \"c0\"\nhosts = {{ count = 3, cores = 4, memory_mb = 8192 }}\n[[grid.cluster]]\nname = \"c1\"\nhosts = {{ count = 2, cores = 4, memory_mb = 4096 }}\n"
    );
    let types = [
        "cancellable",
        "suspendable",
        "migratable",
        "non-preemptable",
    ];
    for (origin, local) in [("external", false), ("local", true)] {
        t += &format!("[[workload]]\nname = \"{origin}\"\norigin = \"{origin}\"\ngrid = \"g\"\n");
        if local {
            t += "cluster = \"c0\"\n";
        }
        for (i, &(arrival, vms, kind, dur, mem)) in requests.iter().enumerate() {
            let is_local = kind % 5 == 4;
            if is_local != local {
                continue;
            }
            let vms = 1 + u32::from(vms) % 8;
            let dur = 60 + u32::from(dur) % 7200;
            let mem = 256 * (1 + u32::from(mem) % 4);
            t += &format!("[[workload.request]]\nid = \"r{i}\"\narrival = {arrival}\nvms = {vms}\nmem_mb = {mem}\nduration = {dur}\n");
            if !local {
                let ty = types[usize::from(kind % 4)];
                t += &format!("type = \"{ty}\"\n");
                if ty == "migratable" || ty == "non-preemptable" {
                    t += &format!("deadline = {}\n", u32::from(arrival) + dur * 4 + 3600);
                }
            }
        }
    }
    t
}

/// Work done by each lease from its VMs' steps: the lease works while all its VMs run, i.e.
/// from the last VM's Booted/Unpause to the first VM's Pause/Completed/Stop of each episode.
fn work_done(events: &[serde_json::Value]) -> HashMap<String, u64> {
    let mut per_vm: HashMap<(String, u64), Vec<(u64, &str)>> = HashMap::new();
    for e in events {
        let kind = e["kind"].as_str().unwrap_or_default();
        if e["from"] != e["to"]
            || !["Booted", "Unpause", "Pause", "Completed", "Stop"].contains(&kind)
        {
            continue;
        }
        let key = (
            e["request"].as_str().unwrap_or_default().to_string(),
            e["vm"].as_u64().unwrap_or(0),
        );
        per_vm
            .entry(key)
            .or_default()
            .push((e["t_us"].as_u64().unwrap_or(0), kind));
    }
    let mut episodes: HashMap<String, Vec<Vec<(u64, u64)>>> = HashMap::new();
    for ((lease, _), evs) in per_vm {
        let mut spans = Vec::new();
        let mut from = None;
        for (t, k) in evs {
            match k {
                "Booted" | "Unpause" => from = Some(t),
                _ => {
                    if let Some(f) = from.take() {
                        spans.push((f, t));
                    }
                }
            }
        }
        episodes.entry(lease).or_default().push(spans);
    }
    episodes
        .into_iter()
        .map(|(lease, vms)| {
            let n = vms.iter().map(Vec::len).min().unwrap_or(0);
            let total = (0..n)
                .map(|k| {
                    let start = vms.iter().map(|v| v[k].0).max().unwrap_or(0);
                    let end = vms.iter().map(|v| v[k].1).min().unwrap_or(0);
                    end.saturating_sub(start)
                })
                .sum();
            (lease, total)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_on_random_workloads_and_policies(
        seed in 0u64..1000,
        policy in prop::sample::select(vec!["nop", "mlip", "mov", "moml", "mwt", "cp"]),
        scheduler in prop::sample::select(vec!["fcfs", "conservative", "easy"]),
        requests in prop::collection::vec((0u16..7200, any::<u8>(), any::<u8>(), any::<u16>(), any::<u8>()), 1..30),
    ) {
        let text = random_topology(seed, policy, scheduler, &requests);
        let dir = tempfile::tempdir().expect("temp dir");
        let r = run_traced(from_text(&text), dir.path());
        let s = &r.summary;
        // Hosts never over capacity (checked by the host actors and by replaying the trace);
        // no impossible VM transition; no request ends twice.
        prop_assert_eq!(s.invariant_violations, 0, "{:?}\n{}", s.violation_examples, text);
        let events = trace(dir.path());
        prop_assert_eq!(capacity_breaches(&r, &events), Vec::<String>::new());
        // Every request ends in exactly one terminal state.
        prop_assert_eq!(s.requests.local.unfinished + s.requests.external.unfinished, 0);
        // Completed leases did exactly their duration of work, however often preempted.
        let work = work_done(&events);
        for (req, rec) in r.topology.requests.iter().zip(&r.records) {
            let label = r.topology.label(req.id);
            let pauses_or_stops = events.iter().filter(|e| e["request"] == label && (e["kind"] == "Pause" || e["kind"] == "Stop")).count();
            if !req.lease_type.preemptable() {
                // Non-preemptable (and local) leases are never preempted.
                prop_assert_eq!(rec.preemptions, 0);
                prop_assert_eq!(pauses_or_stops, 0);
            }
            if rec.state == Some(RequestState::Completed) {
                prop_assert_eq!(work.get(label).copied().unwrap_or(0), req.duration.as_micros(), "{} {}", label, text);
            }
        }
        if policy == "nop" {
            prop_assert_eq!(s.metrics.lease_preemptions, 0);
        }
    }

    /// With only best-effort external leases and local requests that each fit the cluster and
    /// never overlap one another, preempting everything always makes room: a preempting
    /// policy must never reject a local request.
    #[test]
    fn locals_are_rejected_only_when_preemption_cannot_make_room(
        policy in prop::sample::select(vec!["mlip", "mov", "moml", "mwt", "cp"]),
        externals in prop::collection::vec((0u16..3600, 1u8..9, any::<bool>()), 1..20),
        locals in prop::collection::vec(1u8..13, 1..4),
    ) {
        let mut t = format!("[lrms]\nprofile = \"opennebula-gluster\"\npreemption = \"{policy}\"\n[[grid]]\nname = \"g\"\n[[grid.cluster]]\nname = \"c\"\nhosts = {{ count = 3, cores = 4, memory_mb = 4096 }}\n[[workload]]\nname = \"e\"\norigin = \"external\"\ngrid = \"g\"\n");
        for (i, (arrival, vms, cancellable)) in externals.iter().enumerate() {
            let ty = if *cancellable { "cancellable" } else { "suspendable" };
            t += &format!("[[workload.request]]\nid = \"e{i}\"\narrival = {arrival}\nvms = {vms}\nmem_mb = 256\nduration = 5000\ntype = \"{ty}\"\n");
        }
        t += "[[workload]]\nname = \"l\"\norigin = \"local\"\ngrid = \"g\"\ncluster = \"c\"\n";
        for (i, vms) in locals.iter().enumerate() {
            // Locals 10 000 s apart, each 1 000 s long: never overlapping.
            t += &format!("[[workload.request]]\nid = \"l{i}\"\narrival = {}\nvms = {vms}\nmem_mb = 256\nduration = 1000\n", 1800 + 10_000 * i);
        }
        let r = run(from_text(&t), &RunOptions::default()).expect("runs");
        prop_assert_eq!(r.summary.requests.local.rejected, 0, "{}", t);
        prop_assert_eq!(r.summary.invariant_violations, 0);
    }
}
