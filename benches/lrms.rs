//! LRMS benchmarks: how long a preemption policy takes to decide as the number of leases in
//! play grows (10 … 1000) — on additive room (every lease holds its VMs for the whole interval:
//! the polynomial algorithms) and on real, non-additive contention (leases ending and
//! reservations starting inside the interval: the search) — and a full run of a busy 256-core
//! cluster with preemption.
//!
//! Run with `cargo bench --bench lrms` (add `-- quick` for a smoke run). Figures go to
//! `docs/performance.md`.

use std::time::Instant;

use igemu::lrms::Operation;
use igemu::lrms::VmShape;
use igemu::lrms::{choose, choose_additive, Item, PreemptionPolicy, SEARCH_BUDGET};
use igemu::lrms::{Candidate, Contention};
use igemu::model::{LeaseType, RequestId};
use igemu::time::{EmuDuration, EmuTime};
use igemu::topology::{self, Overrides};
use igemu::{run, RunOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `n` leases in play on additive room, as in the first round's benchmark: 1–8 VMs each,
/// suspension costs of 10–300 s per VM, waits up to 10 000 s.
fn items(n: usize, rng: &mut StdRng) -> Vec<Item> {
    (0..n)
        .map(|i| {
            let vms = rng.random_range(1..=8u32);
            Item {
                gain: u64::from(vms),
                vms,
                preempted_vms: vms,
                lease_type: LeaseType::BestEffortSuspendable,
                cost: EmuDuration::from_secs_f64(f64::from(vms) * rng.random_range(10.0..300.0))
                    .as_micros(),
                reschedules: true,
                waiting: EmuDuration::from_secs(rng.random_range(0..10_000)).as_micros(),
                arrival: i as u64,
            }
        })
        .collect()
}

/// A contention on 64 hosts of 4 cores where room is not additive: `n` leases in play, half
/// running and ending inside the interval, half reservations starting inside it, packed on
/// the cores one after another; the local request needs `need` VMs for the interval.
fn contention(n: usize, need: u32, rng: &mut StdRng) -> Contention {
    let t = EmuTime::from_secs;
    let shape = VmShape {
        cores: 1,
        mem_mb: 1024,
    };
    let mut c = Contention::new(
        shape,
        need,
        (t(1000), t(5000)),
        EmuDuration::from_millis(2300),
        &[(4, Some(16_384)); 64],
    );
    let mut free_from = [t(0); 256];
    for i in 0..n {
        let running = i % 2 == 0;
        let vms = rng.random_range(1..=4u32);
        let op = if running {
            Operation::Suspend
        } else {
            Operation::Displace
        };
        let idx = c.add_candidate(Candidate {
            lease: RequestId(i as u32),
            op,
            lease_type: LeaseType::BestEffortSuspendable,
            vms,
            mem_mb: 1024,
            preempted_vms: if running { vms } else { 0 },
            cost: if running {
                EmuDuration::from_secs_f64(f64::from(vms) * 287.1)
            } else {
                EmuDuration::ZERO
            },
            waiting: EmuDuration::from_secs(rng.random_range(0..10_000)),
            arrival: t(i as u64),
        });
        for _ in 0..vms {
            // The core that frees first takes the next VM.
            let core = (0..256).min_by_key(|&k| free_from[k]).unwrap_or(0);
            let start = if running {
                t(0)
            } else {
                free_from[core].max(t(1000))
            };
            let end = start + EmuDuration::from_secs(rng.random_range(1500..4000));
            free_from[core] = end;
            c.add_held(core / 4, idx, start, end, 1, 1024);
        }
    }
    c
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
        ("mov-score", PreemptionPolicy::MovScore),
        ("least-val", PreemptionPolicy::LeastValuable),
    ];
    additive_room_table(&policies, reps, &mut rng);
    contention_table(&policies, reps, &mut rng);
    full_runs(quick);
}

/// The policies' decision times on additive room, a row per number of leases in play.
fn additive_room_table(policies: &[(&str, PreemptionPolicy)], reps: usize, rng: &mut StdRng) {
    println!(
        "policy decision time on additive room, median of {reps} (need = 64 VMs, or half the VMs in play if fewer)"
    );
    print!("{:>8}", "leases");
    for (name, _) in policies {
        print!("{name:>12}");
    }
    println!();
    for n in [10usize, 30, 100, 200, 300, 1000] {
        print!("{n:>8}");
        for (_, p) in policies {
            let times: Vec<f64> = (0..reps)
                .map(|k| {
                    let c = items(n, rng);
                    let total: u64 = c.iter().map(|x| x.gain).sum();
                    let need = 64.min(total / 2).max(1);
                    let t = Instant::now();
                    let set = choose_additive(*p, &c, need, 2_300_000, k as u64);
                    let dt = t.elapsed().as_secs_f64();
                    assert!(set.is_some(), "a cover exists");
                    dt
                })
                .collect();
            print!("{:>10.3}ms", median(times) * 1e3);
        }
        println!();
    }
}

/// The policies' decision times on non-additive contention, and how many of their choices
/// were exact, a row per number of leases in play.
fn contention_table(policies: &[(&str, PreemptionPolicy)], reps: usize, rng: &mut StdRng) {
    println!(
        "policy decision time on non-additive contention (64 hosts x 4 cores, leases ending and reservations starting inside the interval), median of {reps}, need = 16 VMs"
    );
    print!("{:>8}", "leases");
    for (name, _) in policies {
        print!("{name:>12}");
    }
    println!("{:>12}", "exact");
    for n in [10usize, 30, 100, 200] {
        print!("{n:>8}");
        let mut exact = (0, 0);
        for (_, p) in policies {
            let times: Vec<f64> = (0..reps)
                .map(|k| {
                    let c = contention(n, 16, rng);
                    let t = Instant::now();
                    let choice = choose(*p, &c, k as u64, SEARCH_BUDGET);
                    let dt = t.elapsed().as_secs_f64();
                    if let Some(ch) = choice {
                        exact.0 += usize::from(ch.exact);
                        exact.1 += 1;
                    }
                    dt
                })
                .collect();
            print!("{:>10.3}ms", median(times) * 1e3);
        }
        println!("{:>9}/{}", exact.0, exact.1);
    }
}

/// Whole runs of a busy cluster, without preemption and under MOML (smaller when `quick`).
fn full_runs(quick: bool) {
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
                    // Every lease a decision touched: running ones preempted and waiting
                    // reservations displaced (docs/performance.md's column counts both).
                    r.summary.metrics.lease_preemptions + r.summary.metrics.lease_displacements,
                )
            })
            .collect();
        let wall = median(times.iter().map(|x| x.0).collect());
        let (_, messages, events, preemptions) = times[0];
        println!(
            "full run, 256 cores, {externals} external + {locals} local leases over 2 days, {policy}: {wall:.3} s wall, {messages} messages, {events} timed events, {preemptions} leases preempted or displaced"
        );
    }
}
