//! Tests of paper 004's partitions in the scheduler: each partition's pivot and borrowing, and
//! property tests that partitions stay within their sizes, that borrowing delays no pivot and
//! that reserved locals preempting Grid leases never overfill a host.

use super::*;

#[test]
fn with_partitions_local_leases_have_their_own_easy_pivot() {
    // EASY, one pivot; 1 host of 4 cores, all busy for 100 s. A 4-core external lease
    // waits and takes the pivot; a 4-core local lease then waits too. With partitions it
    // is its own partition's pivot and holds a reservation (after the external one);
    // without, it has none and waits for the queue to move.
    let reserved = |partitions: bool| {
        let (mut cfg, policy) = (
            config(Backfilling::Easy { pivots: 1 }),
            PreemptionPolicy::Nop,
        );
        cfg.locals = LocalRequests::Queued;
        cfg.partitions = partitions;
        let mut c = Core::new(&hosts(1, 4, 4096), cfg, with(policy));
        let t0 = EmuTime::ZERO;
        c.submit_external(req(0, Origin::External, 0, 4, 100, 100), t0)
            .unwrap();
        c.submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
            .unwrap();
        c.submit_local(req(2, Origin::Local, 0, 4, 100, 100), t0)
            .unwrap();
        c.leases()
            .into_iter()
            .find(|l| l.id == RequestId(2))
            .and_then(|l| l.slot)
            .map(|s| s.0)
    };
    assert_eq!(reserved(true), Some(EmuTime::from_secs(200)));
    assert_eq!(reserved(false), None);
}

/// A conservative core on one host of 8 cores, locals queued, with or without
/// partitions (the local one of 4 cores).
fn partitioned(partitions: bool) -> Core {
    let mut cfg = config(Backfilling::Conservative);
    cfg.locals = LocalRequests::Queued;
    cfg.partitions = partitions;
    let mut c = Core::new(&hosts(1, 8, 8192), cfg, with(PreemptionPolicy::Nop));
    c.resize_partitions(4);
    c
}

fn reserved_at(c: &Core, id: u32) -> Option<u64> {
    let l = c.leases.get(&RequestId(id))?;
    l.res
        .as_ref()
        .map(|r| r.start.since(EmuTime::ZERO).as_secs_f64() as u64)
}

#[test]
fn with_partitions_a_reservation_borrows_the_other_partitions_idle_cores() {
    // Local L1 (4 cores, 50 s) and Grid G1 (4 cores, 100 s) start at once, each on its
    // own partition. Grid G2 (4 cores, 50 s) is reserved when L1 ends (50), on the local
    // partition's idle cores — a reservation for later borrows as a start now does, as the
    // authors' GridSim policy schedules a pivot at the earliest start over all partitions.
    // Local L2 (4 cores) then waits until both give their cores back (100) and takes its
    // own partition's.
    let t0 = EmuTime::ZERO;
    let run = |partitions: bool| {
        let mut c = partitioned(partitions);
        c.submit_local(req(1, Origin::Local, 0, 4, 100, 50), t0)
            .unwrap();
        c.submit_external(req(2, Origin::External, 0, 4, 100, 100), t0)
            .unwrap();
        c.submit_external(req(3, Origin::External, 0, 4, 100, 50), t0)
            .unwrap();
        c.submit_local(req(4, Origin::Local, 0, 4, 100, 30), t0)
            .unwrap();
        let charges = (1..=4).map(|id| c.leases[&RequestId(id)].charge.map(|ch| ch.taken));
        let charges: Vec<_> = charges.collect();
        (
            (1..=4).map(|id| reserved_at(&c, id)).collect::<Vec<_>>(),
            charges,
        )
    };
    let slots = vec![Some(0), Some(0), Some(50), Some(100)];
    assert_eq!(run(false).0, slots);
    let (with, charges) = run(true);
    assert_eq!(with, slots);
    assert_eq!(
        charges,
        vec![Some([0, 4]), Some([4, 0]), Some([0, 4]), Some([0, 4])]
    );
    // At its start a Grid lease borrows the local partition's idle cores: with the
    // local partition empty, 8 Grid cores start at once.
    let mut c = partitioned(true);
    let out = c
        .submit_external(req(5, Origin::External, 0, 8, 100, 10), t0)
        .unwrap();
    assert_eq!(started(&out), vec![5]);
    assert_eq!(
        c.leases[&RequestId(5)].charge.map(|ch| ch.taken),
        Some([4, 4])
    );
}

/// Checks, second by second over the first 2000 s, that no partition is charged more
/// than its size and that each lease's charge covers its cores over its reservation.
fn check_partitions(c: &Core) -> Result<(), TestCaseError> {
    let [g, l] = c.parts.limits();
    let charges: Vec<(Charge, u64)> = c
        .leases
        .values()
        .filter_map(|x| x.charge.map(|ch| (ch, x.req.cores())))
        .collect();
    for (ch, cores) in &charges {
        prop_assert_eq!(ch.taken[0] + ch.taken[1], *cores);
    }
    for sec in 0..2000u64 {
        let at = EmuTime::from_secs(sec);
        let mut used = [0u64; 2];
        for (ch, _) in charges
            .iter()
            .filter(|(ch, _)| ch.start <= at && at < ch.end)
        {
            used[0] += ch.taken[0];
            used[1] += ch.taken[1];
        }
        prop_assert!(
            used[0] <= g && used[1] <= l,
            "at {}s {:?} of [{}, {}]",
            sec,
            used,
            g,
            l
        );
    }
    Ok(())
}

type Job = (bool, u32, u64, u64);

enum Ev {
    Submit(LeaseRequest),
    Wake,
    Done(RequestId),
}

/// The events `jobs` (local?, cores, seconds after the previous, run time) submit.
fn job_events(jobs: &[Job]) -> BTreeMap<(EmuTime, u64), Ev> {
    let mut at = 0;
    let mut events = BTreeMap::new();
    for (i, &(is_local, cores, gap, secs)) in jobs.iter().enumerate() {
        at += gap;
        let origin = if is_local {
            Origin::Local
        } else {
            Origin::External
        };
        let r = req(i as u32, origin, at, cores, 100, secs);
        events.insert((r.arrival, i as u64), Ev::Submit(r));
    }
    events
}

/// Drives a partitioned core (EASY with one pivot a partition, or conservative) with
/// `jobs` and checks at every event that the partitions stay within their sizes and that
/// no reservation is ever moved later — borrowing delays no pivot.
fn drive_partitioned(easy: bool, local: u64, jobs: &[Job]) -> Result<(), TestCaseError> {
    let mut cfg = config(if easy {
        Backfilling::Easy { pivots: 1 }
    } else {
        Backfilling::Conservative
    });
    cfg.locals = LocalRequests::Queued;
    cfg.partitions = true;
    let mut c = Core::new(&hosts(2, 4, 8192), cfg, with(PreemptionPolicy::Nop));
    c.resize_partitions(local);
    let mut events = job_events(jobs);
    let (mut seq, mut promised) = (1_000_000u64, BTreeMap::<RequestId, EmuTime>::new());
    while let Some(((t, _), e)) = events.pop_first() {
        let out = match e {
            Ev::Submit(r) if r.origin == Origin::Local => c.submit_local(r, t),
            Ev::Submit(r) => c.submit_external(r, t),
            Ev::Wake => Ok(c.tick(t)),
            Ev::Done(lease) => Ok(c.vm_reported(lease, VmState::Finished, t)),
        };
        for a in out.unwrap_or_default() {
            seq += 1;
            let at = match &a {
                Action::Wake(w) => (*w, Ev::Wake),
                Action::RunVms { lease, plans } => {
                    let done = plans[0].steps.iter().find(|s| s.1 == VmEvent::Completed);
                    for _ in 1..plans.len() {
                        seq += 1;
                        let end = done.map_or(t, |s| s.0);
                        events.insert((end, seq), Ev::Done(*lease));
                    }
                    seq += 1;
                    (done.map_or(t, |s| s.0), Ev::Done(*lease))
                }
                _ => continue,
            };
            events.insert((at.0, seq), at.1);
        }
        for (id, l) in &c.leases {
            if let (Phase::Waiting, Some(r)) = (&l.phase, &l.res) {
                let first = *promised.entry(*id).or_insert(r.start);
                prop_assert!(r.start <= first, "lease #{} moved later", id.0);
            }
        }
        check_partitions(&c)?;
    }
    prop_assert!(c.leases.is_empty(), "every lease ran");
    Ok(())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::proptest_cases(60)))]
    #[test]
    fn partitions_stay_within_their_sizes_and_borrowing_delays_no_pivot(
        easy in proptest::prelude::any::<bool>(),
        local in 0..9u64,
        jobs in proptest::collection::vec(
            (proptest::prelude::any::<bool>(), 1..8u32, 0..30u64, 5..120u64), 1..14),
    ) {
        drive_partitioned(easy, local, &jobs)?;
    }
}

/// One VM on a host as the scheduler commanded it: `[from, until)` on `host`.
struct Held {
    lease: RequestId,
    vm: u32,
    host: u16,
    cores: u64,
    from: EmuTime,
    until: EmuTime,
}

/// The first step of `steps` among `events`, if any.
fn first_of(steps: &[(EmuTime, VmEvent)], events: &[VmEvent]) -> Option<EmuTime> {
    steps.iter().find(|s| events.contains(&s.1)).map(|s| s.0)
}

const ENDS: [VmEvent; 3] = [VmEvent::Completed, VmEvent::Stop, VmEvent::Suspended];

/// The hosts as the VMs see them: every VM the scheduler ran, from its deployment or
/// resumption to the end its last command gave it — an independent record of what the
/// hosts hold, whatever the scheduler believes.
#[derive(Default)]
struct HostsSeen {
    held: Vec<Held>,
}

impl HostsSeen {
    /// Records `a`'s effect on the hosts; returns the VM reports it makes due, by time.
    fn apply(&mut self, c: &Core, a: &Action) -> Vec<(EmuTime, RequestId, VmState)> {
        let mut due = Vec::new();
        match a {
            Action::RunVms { lease, plans } => {
                let cores = u64::from(c.leases[lease].req.cores_per_vm);
                for p in plans {
                    let from = first_of(&p.steps, &[VmEvent::Deploy, VmEvent::Resume]);
                    let until = first_of(&p.steps, &ENDS).unwrap_or(EmuTime::NEVER);
                    let from = from.unwrap_or(until);
                    let (lease, vm, host) = (*lease, p.vm, p.host);
                    self.held.push(Held {
                        lease,
                        vm,
                        host,
                        cores,
                        from,
                        until,
                    });
                    if first_of(&p.steps, &[VmEvent::Completed]).is_some() {
                        due.push((until, lease, VmState::Finished));
                    }
                }
            }
            Action::CommandVms { lease, plans, .. } => {
                for p in plans {
                    let end = first_of(&p.steps, &ENDS);
                    let last = self
                        .held
                        .iter_mut()
                        .rev()
                        .find(|h| h.lease == *lease && h.vm == p.vm);
                    if let (Some(h), Some(end)) = (last, end) {
                        h.until = end;
                    }
                    if first_of(&p.steps, &[VmEvent::Stop]).is_some() {
                        due.push((end.unwrap_or(EmuTime::ZERO), *lease, VmState::Cancelled));
                    }
                }
            }
            _ => {}
        }
        due
    }

    /// Checks that no host ever held more cores than it has.
    fn within(&self, cores: u64) -> Result<(), TestCaseError> {
        for h in &self.held {
            let at = h.from;
            let used: u64 = (self.held.iter())
                .filter(|o| o.host == h.host && o.from <= at && at < o.until)
                .map(|o| o.cores)
                .sum();
            prop_assert!(
                used <= cores,
                "host {} holds {} cores at {:?}",
                h.host,
                used,
                at
            );
        }
        Ok(())
    }
}

/// Drives a core with partitions (the local one of `local` cores) whose local requests are
/// reserved on arrival and preempt Grid leases (MOV), the VMs following its commands (a
/// lease commanded again drops the reports its earlier plan made due); checks that the
/// hosts never hold more than their cores.
fn drive_reserved(easy: bool, local: u64, jobs: &[Job]) -> Result<(), TestCaseError> {
    let mut cfg = config(if easy {
        Backfilling::Easy { pivots: 1 }
    } else {
        Backfilling::Conservative
    });
    cfg.partitions = true;
    let mut c = Core::new(&hosts(2, 4, 8192), cfg, with(PreemptionPolicy::Mov));
    c.resize_partitions(local);
    let mut events = job_events(jobs);
    let mut seen = HostsSeen::default();
    // Each lease's reports are of its latest command (its generation).
    let mut generation: BTreeMap<RequestId, u64> = BTreeMap::new();
    let mut reports: BTreeMap<(EmuTime, u64), (RequestId, VmState, u64)> = BTreeMap::new();
    let mut seq = 1_000_000u64;
    loop {
        let next_event = events.first_key_value().map(|(k, _)| *k);
        let next_report = reports.first_key_value().map(|(k, _)| *k);
        let out = match (next_event, next_report) {
            (None, None) => break,
            (Some(e), r) if r.is_none_or(|r| e.0 <= r.0) => {
                let Some(((t, _), e)) = events.pop_first() else {
                    break;
                };
                match e {
                    Ev::Submit(r) if r.origin == Origin::Local => c.submit_local(r, t),
                    Ev::Submit(r) => c.submit_external(r, t),
                    Ev::Wake | Ev::Done(_) => Ok(c.tick(t)),
                }
            }
            _ => {
                let Some(((t, _), (lease, state, g))) = reports.pop_first() else {
                    break;
                };
                if generation.get(&lease) != Some(&g) {
                    continue;
                }
                Ok(c.vm_reported(lease, state, t))
            }
        };
        for a in out.unwrap_or_default() {
            seq += 1;
            if let Action::Wake(w) = a {
                events.insert((w, seq), Ev::Wake);
                continue;
            }
            if let Action::RunVms { lease, .. } | Action::CommandVms { lease, .. } = &a {
                *generation.entry(*lease).or_default() += 1;
            }
            for (t, lease, state) in seen.apply(&c, &a) {
                seq += 1;
                reports.insert((t, seq), (lease, state, generation[&lease]));
            }
            prop_assert!(!matches!(a, Action::Violation(_)), "{:?}", a);
        }
    }
    seen.within(4)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::proptest_cases(200)))]
    /// Partitions with local requests reserved on arrival, preempting: whatever the
    /// scheduler decides, the hosts never hold more than their cores (a decision carried
    /// out reaches the VMs even when the local request then finds no room).
    #[test]
    fn with_partitions_and_reserved_locals_no_host_is_ever_over_capacity(
        easy in proptest::prelude::any::<bool>(),
        local in 0..9u64,
        jobs in proptest::collection::vec(
            (proptest::prelude::any::<bool>(), 1..8u32, 0..30u64, 5..120u64), 1..14),
    ) {
        drive_reserved(easy, local, &jobs)?;
    }
}

#[test]
fn a_suspended_lease_holds_its_partition_only_until_its_vms_are_off() {
    // One host of 4 cores, EASY with one pivot, partitions (local 2 cores), locals reserved
    // on arrival. Grid A on all 4 cores runs; Grid B waits as the pivot. A is suspended for
    // a 4-core local request at 10 s and waits again without a reservation (B is the
    // pivot): its charge ends when its last VM is off the host, where its slots end — not
    // at its old end, which would keep the Grid partition's cores from B and from others.
    let mut cfg = config(Backfilling::Easy { pivots: 1 });
    cfg.partitions = true;
    let mut c = Core::new(&hosts(1, 4, 8192), cfg, with(PreemptionPolicy::Mov));
    c.resize_partitions(2);
    let t0 = EmuTime::ZERO;
    c.submit_external(req(0, Origin::External, 0, 4, 100, 1000), t0)
        .unwrap();
    c.submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
        .unwrap();
    let at = EmuTime::from_secs(10);
    let out = c
        .submit_local(req(2, Origin::Local, 10, 4, 100, 50), at)
        .unwrap();
    assert_eq!(decision(&out).map(|d| d.set.len()), Some(1));
    let a = &c.leases[&RequestId(0)];
    assert!(a.res.is_none(), "A waits without a reservation");
    let off = a
        .images_ready
        .as_ref()
        .and_then(|i| i.iter().max().copied());
    assert!(off.is_some_and(|off| off < EmuTime::from_secs(60)));
    assert_eq!(
        a.charge.map(|ch| (ch.start, ch.end)),
        off.map(|off| (t0, off))
    );
    // The local lease, placed on the hosts once A is off, takes its own partition's 2
    // idle cores and 2 of the Grid's.
    let local = &c.leases[&RequestId(2)];
    assert_eq!(local.charge.map(|ch| ch.taken), Some([2, 2]));
}
