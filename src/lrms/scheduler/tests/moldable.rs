//! Tests of paper 002's moldable requests and admission control in the scheduler: each
//! reading's VMs, run time and deadline, and PACP's and the fixed queue limit.

use super::*;

#[test]
fn a_moldable_request_larger_than_the_cluster_spreads_over_it() {
    // 3 hosts × 4 cores = 12 VMs; 30 tasks of 100 s are 3000 VM-seconds: 250 s on 12 VMs.
    let mut c = core(3, Backfilling::Conservative, PreemptionPolicy::Nop);
    let mut bag = req(0, Origin::External, 0, 30, 100, 100);
    bag.moldable = true;
    bag.deadline_ratio = Some(2.0);
    let a = c
        .submit_external(bag, EmuTime::ZERO)
        .expect("adapts to the cluster");
    assert!(a.contains(&Action::Terms {
        lease: RequestId(0),
        vms: 12,
        deadline: Some(EmuTime::from_secs(500)),
    }));
    assert_eq!(c.leases()[0].duration, EmuDuration::from_secs(250));
    // A VM no host can hold is refused whatever the mould.
    let mut huge = req(1, Origin::External, 0, 2, 8192, 100);
    huge.moldable = true;
    assert_eq!(
        c.submit_external(huge, EmuTime::ZERO),
        Err(Refusal::TooLarge)
    );
}

#[test]
fn a_single_server_moldable_request_holds_the_cluster_for_its_whole_work() {
    // 3 hosts × 4 cores = 12 VMs; 3 tasks of 100 s: paper 002's ω = tasks × task
    // duration = 300 s on all 12 VMs, and a deadline of 2 run times, 600 s after arrival.
    let mut cfg = config(Backfilling::Conservative);
    cfg.moldable = Moldable::SingleServer;
    let mut c = Core::new(&hosts(3, 4, 4096), cfg, with(PreemptionPolicy::Nop));
    let mut bag = req(0, Origin::External, 0, 3, 100, 100);
    bag.moldable = true;
    bag.deadline_ratio = Some(2.0);
    let a = c.submit_external(bag.clone(), EmuTime::ZERO).unwrap();
    assert!(a.contains(&Action::Terms {
        lease: RequestId(0),
        vms: 12,
        deadline: Some(EmuTime::from_secs(600)),
    }));
    assert_eq!(c.leases()[0].duration, EmuDuration::from_secs(300));
    // The cluster serves one at a time: the next waits for the whole run.
    bag.id = RequestId(1);
    c.submit_external(bag, EmuTime::ZERO).unwrap();
    let next = c.leases().into_iter().find(|l| l.id == RequestId(1));
    assert_eq!(
        next.and_then(|l| l.slot).map(|s| s.0),
        Some(EmuTime::from_secs(300))
    );
    // A local moldable request is spread whatever the reading: 300 VM-s over 12 VMs.
    let mut local = req(2, Origin::Local, 0, 3, 100, 100);
    local.moldable = true;
    let mut c = Core::new(
        &hosts(3, 4, 4096),
        cfg_single(),
        with(PreemptionPolicy::Nop),
    );
    c.submit_local(local, EmuTime::ZERO).unwrap();
    assert_eq!(c.leases()[0].duration, EmuDuration::from_secs(25));
}

fn cfg_single() -> Config {
    let mut cfg = config(Backfilling::Conservative);
    cfg.moldable = Moldable::SingleServer;
    cfg
}

proptest::proptest! {
    /// The run time, VMs and deadline of a moldable external request under each reading,
    /// against paper 002's definitions written out here: single server, the whole cluster
    /// for tasks × task duration; spread, the same work over every VM (rounded up to the
    /// µs); per task, a VM per task for the task's duration (refused if the cluster cannot
    /// hold that many); deadline = arrival + ratio × run time. A local request is read per
    /// task under per-task, spread otherwise.
    #[test]
    fn moldable_terms_follow_the_reading(
        hosts_n in 1usize..6, tasks in 1u32..40, task_ms in 1u64..500_000,
        ratio in 0.5f64..8.0, arrival in 0u64..1000, reading in 0usize..3,
    ) {
        let reading = [Moldable::Spread, Moldable::SingleServer, Moldable::PerTask][reading];
        let mut cfg = config(Backfilling::Conservative);
        cfg.moldable = reading;
        let mut c = Core::new(&hosts(hosts_n, 4, 4096), cfg.clone(), with(PreemptionPolicy::Nop));
        let mut bag = req(0, Origin::External, arrival, tasks, 100, 0);
        bag.duration = EmuDuration::from_micros(task_ms * 1000);
        bag.moldable = true;
        bag.deadline_ratio = Some(ratio);
        let cap = 4 * hosts_n as u64;
        let work_us = u64::from(tasks) * task_ms * 1000;
        let (vms, run_us) = match reading {
            Moldable::Spread => (cap, work_us.div_ceil(cap)),
            Moldable::SingleServer => (cap, work_us),
            Moldable::PerTask => (u64::from(tasks), task_ms * 1000),
        };
        let mut local = bag.clone();
        (local.id, local.origin, local.deadline_ratio) = (RequestId(1), Origin::Local, None);
        local.lease_type = LeaseType::DeadlineNonPreemptable;
        let got = c.submit_external(bag, EmuTime::from_secs(arrival));
        if vms > cap {
            proptest::prop_assert_eq!(got, Err(Refusal::TooLarge));
            return Ok(());
        }
        let a = got.expect("fits");
        proptest::prop_assert_eq!(c.leases()[0].duration.as_micros(), run_us);
        let Some(Action::Terms { vms: got, deadline: Some(d), .. }) =
            a.iter().find(|x| matches!(x, Action::Terms { .. }))
        else {
            return Err(proptest::test_runner::TestCaseError::fail("no terms"));
        };
        proptest::prop_assert_eq!(u64::from(*got), vms);
        let want = arrival as f64 + ratio * run_us as f64 / 1e6;
        let slack = d.since(EmuTime::ZERO).as_secs_f64() - want;
        proptest::prop_assert!(slack.abs() < 2e-6, "deadline off by {slack} s");
        // The local request, on an empty cluster of its own.
        let mut c = Core::new(&hosts(hosts_n, 4, 4096), cfg, with(PreemptionPolicy::Nop));
        let a = c.submit_local(local, EmuTime::from_secs(arrival)).expect("fits");
        let (lvms, lrun) = match reading {
            Moldable::PerTask => (vms, run_us),
            _ => (cap, work_us.div_ceil(cap)),
        };
        proptest::prop_assert_eq!(c.leases()[0].duration.as_micros(), lrun);
        let got = a.iter().find_map(|x| match x {
            Action::Terms { vms, .. } => Some(u64::from(*vms)),
            _ => None,
        });
        proptest::prop_assert_eq!(got, Some(lvms));
    }
}

/// Feeds a PACP core (12 VMs, paper 002's deadline model) an external moldable request
/// of 2 tasks × 30 s every 10 s and a local one of 1 task × 6 s every 10 s (at +5 s), for
/// `secs`, completing VMs when their plans say; returns (admitted, refused as queue full).
fn pacp_stream(reading: Moldable, omega: PacpOmega, secs: u64) -> (u32, u32) {
    let mut cfg = config(Backfilling::Conservative);
    cfg.moldable = reading;
    let pacp = AdmissionPolicy::Pacp {
        low_urgency: 0.5,
        low_ratio: 4.0,
        high_ratio: 2.0,
        omega,
    };
    let policies = Policies::builtin(PreemptionPolicy::Nop, pacp);
    let mut c = Core::new(&hosts(3, 4, 4096), cfg, policies);
    let mut events: BTreeMap<(EmuTime, u64), Option<(bool, LeaseRequest)>> = BTreeMap::new();
    let mut done: BTreeMap<(EmuTime, u64), RequestId> = BTreeMap::new();
    for i in 0..(secs / 10) as u32 {
        let t = 10 * u64::from(i);
        let mut e = req(2 * i, Origin::External, t, 2, 100, 30);
        let mut l = req(2 * i + 1, Origin::Local, t + 5, 1, 100, 6);
        (e.moldable, l.moldable) = (true, true);
        events.insert((e.arrival, u64::from(2 * i)), Some((true, e)));
        events.insert((l.arrival, u64::from(2 * i + 1)), Some((false, l)));
    }
    let (mut seq, mut admitted, mut full) = (1u64 << 40, 0, 0);
    loop {
        let next_event = events.first_key_value().map(|(k, _)| *k);
        let next_done = done.first_key_value().map(|(k, _)| *k);
        let done_first = next_done.is_some_and(|d| next_event.is_none_or(|e| d.0 <= e.0));
        let out = match (next_event, next_done) {
            (_, Some(d)) if done_first => {
                let lease = done.remove(&d).unwrap(); // d is a key of `done`
                c.vm_reported(lease, VmState::Finished, d.0)
            }
            (Some(k), _) => match events.remove(&k).flatten() {
                None => c.tick(k.0),
                Some((true, r)) => match c.submit_external(r, k.0) {
                    Ok(out) => {
                        admitted += 1;
                        out
                    }
                    Err(why) => {
                        full += u32::from(why == Refusal::QueueFull);
                        Vec::new()
                    }
                },
                Some((false, r)) => c.submit_local(r, k.0).unwrap_or_default(),
            },
            _ => return (admitted, full),
        };
        for a in out {
            seq += 1;
            match a {
                Action::Wake(at) => drop(events.insert((at, seq), None)),
                Action::RunVms { lease, plans } => {
                    for p in plans.iter() {
                        let end = p.steps.iter().find(|s| s.1 == VmEvent::Completed);
                        seq += 1;
                        done.insert((end.map_or(EmuTime::ZERO, |s| s.0), seq), lease);
                    }
                }
                _ => {}
            }
        }
    }
}

#[test]
fn pacp_limits_an_overloaded_single_server_queue() {
    // Single server: ω = 60 s against an external request every 10 s (ρ_e ≈ 6): the queue
    // is unstable, Algorithm 1 finds a finite K and requests beyond it are refused.
    let measured = PacpOmega::Measured;
    let (admitted, full) = pacp_stream(Moldable::SingleServer, measured, 2000);
    assert!(full > 100, "admitted {admitted}, refused {full}");
    assert!(admitted >= 20, "admitted {admitted}");
    // Spread, the same stream runs in 5 s on 12 VMs (ρ_e ≈ 0.5): no limit is reached.
    assert_eq!(pacp_stream(Moldable::Spread, measured, 2000), (200, 0));
    // Given ω = tasks × task duration (60 s) as §V-B says, the model sees the single
    // server's overload and limits the queue, but a spread queue never grows to it.
    assert_eq!(
        pacp_stream(Moldable::Spread, PacpOmega::Work, 2000),
        (200, 0)
    );
}

#[test]
fn a_queue_limit_counts_only_requests_that_wait() {
    let (cfg, policy) = (config(Backfilling::Conservative), PreemptionPolicy::Nop);
    let fixed = Policies::builtin(policy, AdmissionPolicy::Fixed(0));
    let mut c = Core::new(&hosts(1, 4, 4096), cfg, fixed);
    let t0 = EmuTime::ZERO;
    // Starts at once: admitted even with no waiting allowed.
    assert!(c
        .submit_external(req(0, Origin::External, 0, 4, 100, 100), t0)
        .is_ok());
    // Would wait: refused, and nothing of it is left behind.
    assert_eq!(
        c.submit_external(req(1, Origin::External, 0, 1, 100, 100), t0),
        Err(Refusal::QueueFull)
    );
    assert_eq!(c.leases().len(), 1);
    assert_eq!(c.availability().holds(t0, EmuTime::NEVER).len(), 4);
}
