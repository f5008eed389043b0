//! LRMS benchmarks: how long a preemption policy takes to decide as the number of leases in
//! play grows (10 … 1000), and a full run of a busy 256-core cluster with preemption.
//!
//! Run with `cargo bench --bench lrms` (add `-- quick` for a smoke run). Figures go to
//! `docs/performance.md`.

use std::time::Instant;

use igemu::lrms::policy::{choose, Candidate, PreemptionPolicy};
use igemu::model::RequestId;
use igemu::time::{EmuDuration, EmuTime};
use igemu::topology::{self, Overrides};
use igemu::{run, RunOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn candidates(n: usize, rng: &mut StdRng) -> Vec<Candidate> {
    (0..n)
        .map(|i| {
            let vms = rng.random_range(1..=8);
            Candidate {
                lease: RequestId(i as u32),
                vms,
                cost: EmuDuration::from_secs_f64(f64::from(vms) * rng.random_range(10.0..300.0)),
                waiting: EmuDuration::from_secs(rng.random_range(0..10_000)),
                arrival: EmuTime::from_secs(i as u64),
            }
        })
        .collect()
}

/// A 256-core cluster (64 hosts × 4 cores) with `externals` external leases of mixed types
/// and `locals` local requests over two days.
fn busy_cluster(externals: usize, locals: usize, policy: &str, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut t = format!(
        "[emulation]\nseed = {seed}\n[lrms]\nprofile = \"nfs-100mbps\"\nscheduler = \"conservative\"\npreemption = \"{policy}\"\n\
         [[grid]]\nname = \"g\"\n[[grid.cluster]]\nname = \"c\"\nhosts = {{ count = 64, cores = 4, memory_mb = 8192 }}\n\
         [[workload]]\nname = \"e\"\norigin = \"external\"\ngrid = \"g\"\n"
    );
    let types = [
        "cancellable",
        "suspendable",
        "migratable",
        "non-preemptable",
    ];
    for i in 0..externals {
        let arrival = rng.random_range(0..172_800u64);
        let dur = rng.random_range(600..14_400u64);
        let ty = types[rng.random_range(0..4)];
        let vms = 1 << rng.random_range(0..5u32);
        t += &format!(
            "[[workload.request]]\nid = \"e{i}\"\narrival = {arrival}\nvms = {vms}\nmem_mb = 1024\nduration = {dur}\ntype = \"{ty}\"\n"
        );
        if ty == "migratable" || ty == "non-preemptable" {
            t += &format!("deadline = {}\n", arrival + dur * 6 + 86_400);
        }
    }
    t += "[[workload]]\nname = \"l\"\norigin = \"local\"\ngrid = \"g\"\ncluster = \"c\"\n";
    for i in 0..locals {
        let arrival = rng.random_range(0..172_800u64);
        let vms = rng.random_range(4..64);
        t += &format!(
            "[[workload.request]]\nid = \"l{i}\"\narrival = {arrival}\nvms = {vms}\nmem_mb = 1024\nduration = {}\n",
            rng.random_range(600..7200u64)
        );
    }
    t
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let reps = if quick { 3 } else { 21 };
    let mut rng = StdRng::seed_from_u64(42);
    let policies = [
        ("mlip", PreemptionPolicy::Mlip),
        ("mov", PreemptionPolicy::Mov),
        ("moml", PreemptionPolicy::Moml),
        ("mwt", PreemptionPolicy::Mwt),
        ("cp", PreemptionPolicy::Cp { alpha: 0.31 }),
    ];
    println!(
        "policy decision time, median of {reps} (need = 64 VMs, or half the VMs in play if fewer)"
    );
    print!("{:>8}", "leases");
    for (name, _) in &policies {
        print!("{name:>12}");
    }
    println!();
    for n in [10usize, 30, 100, 200, 300, 1000] {
        print!("{n:>8}");
        for (_, p) in &policies {
            let times: Vec<f64> = (0..reps)
                .map(|k| {
                    let c = candidates(n, &mut rng);
                    let total: u32 = c.iter().map(|x| x.vms).sum();
                    let need = 64.min(total / 2).max(1);
                    let t = Instant::now();
                    let set = choose(*p, &c, need, k as u64);
                    let dt = t.elapsed().as_secs_f64();
                    assert!(set.is_some(), "a cover exists");
                    dt
                })
                .collect();
            print!("{:>10.3}ms", median(times) * 1e3);
        }
        println!();
    }
    let (externals, locals) = if quick { (300, 40) } else { (2000, 300) };
    for policy in ["nop", "moml"] {
        let text = busy_cluster(externals, locals, policy, 7);
        let times: Vec<(f64, u64, u64, u64)> = (0..if quick { 1 } else { 3 })
            .map(|_| {
                let topo = topology::load_str(&text, "busy", "busy", None, &Overrides::default())
                    .unwrap_or_else(|r| panic!("{r}"));
                let t = Instant::now();
                let r = run(topo, &RunOptions::default()).expect("runs");
                (
                    t.elapsed().as_secs_f64(),
                    r.summary.messages,
                    r.summary.timed_events,
                    r.summary.metrics.lease_preemptions,
                )
            })
            .collect();
        let wall = median(times.iter().map(|x| x.0).collect());
        let (_, messages, events, preemptions) = times[0];
        println!(
            "full run, 256 cores, {externals} external + {locals} local leases over 2 days, {policy}: {wall:.3} s wall, {messages} messages, {events} timed events, {preemptions} lease preemptions"
        );
    }
}
