//! Tests of the LRMS core: intake, admission, placement, local requests, preemption and
//! compression, against hand-worked cases and property tests.

use super::*;
use crate::lrms::availability::tests::hosts;
use crate::lrms::PacpOmega;
use crate::model::{ClusterId, GridId};
use proptest::test_runner::TestCaseError;
use proptest::{prop_assert, prop_assert_eq};

pub(crate) fn config(backfilling: Backfilling) -> Config {
    Config {
        backfilling,
        overhead: OverheadModel::gluster_testbed(),
        boot: EmuDuration::ZERO,
        seed: 1,
        can_migrate: false,
        enforce_memory: true,
        search_budget: super::super::policy::SEARCH_BUDGET,
        speed: Speed::default(),
        compress: false,
        locals: LocalRequests::Reserved,
        moldable: Moldable::Spread,
        partitions: false,
        backfill_depth: None,
    }
}

fn with(preemption: PreemptionPolicy) -> Policies {
    Policies::builtin(preemption, AdmissionPolicy::Cacp)
}

fn core(n: usize, backfilling: Backfilling, preemption: PreemptionPolicy) -> Core {
    Core::new(&hosts(n, 4, 4096), config(backfilling), with(preemption))
}

fn req(id: u32, origin: Origin, arrival: u64, vms: u32, mem: u32, secs: u64) -> LeaseRequest {
    LeaseRequest {
        id: RequestId(id),
        origin,
        grid: GridId(0),
        cluster: Some(ClusterId(0)),
        arrival: EmuTime::from_secs(arrival),
        start: None,
        vms,
        cores_per_vm: 1,
        mem_mb: mem,
        duration: EmuDuration::from_secs(secs),
        lease_type: if origin == Origin::Local {
            LeaseType::DeadlineNonPreemptable
        } else {
            LeaseType::BestEffortSuspendable
        },
        deadline: None,
        moldable: false,
        deadline_ratio: None,
    }
}

fn started(actions: &[Action]) -> Vec<u32> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::RunVms { lease, .. } => Some(lease.0),
            _ => None,
        })
        .collect()
}

fn decision(actions: &[Action]) -> Option<&Decision> {
    actions.iter().find_map(|a| match a {
        Action::Decision(d) => Some(d),
        _ => None,
    })
}

#[test]
fn conservative_backfilling_fills_a_hole_without_delaying_the_head() {
    // 1 host, 4 cores. Lease 0 takes 3 cores for 100 s; lease 1 needs 4 (waits to 100);
    // lease 2 needs 1 core for 50 s: it fits now and ends before lease 1's reservation.
    let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Nop);
    let t0 = EmuTime::ZERO;
    assert_eq!(
        started(
            &c.submit_external(req(0, Origin::External, 0, 3, 100, 100), t0)
                .unwrap()
        ),
        vec![0]
    );
    assert!(started(
        &c.submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
            .unwrap()
    )
    .is_empty());
    assert_eq!(
        started(
            &c.submit_external(req(2, Origin::External, 0, 1, 100, 50), t0)
                .unwrap()
        ),
        vec![2]
    );
    // A 1-core lease for 150 s would delay lease 1: it is reserved after it instead.
    let a = c
        .submit_external(req(3, Origin::External, 0, 1, 100, 150), t0)
        .unwrap();
    assert!(started(&a).is_empty());
    assert!(a.contains(&Action::Wake(EmuTime::from_secs(200))), "{a:?}");
    assert!(c.availability().within_capacity());
}

/// The hole-filling scenario of the test above, on a core with backfill depth `depth`:
/// what lease 2 (1 core for 50 s, third in line) gets at once.
fn third_in_line(backfilling: Backfilling, depth: Option<usize>) -> (Core, Vec<Action>) {
    let mut cfg = config(backfilling);
    cfg.backfill_depth = depth;
    let mut c = Core::new(&hosts(1, 4, 4096), cfg, with(PreemptionPolicy::Nop));
    let t0 = EmuTime::ZERO;
    for (id, vms, secs) in [(0, 3, 100), (1, 4, 100)] {
        c.submit_external(req(id, Origin::External, 0, vms, 100, secs), t0)
            .unwrap();
    }
    let a = c
        .submit_external(req(2, Origin::External, 0, 1, 100, 50), t0)
        .unwrap();
    (c, a)
}

#[test]
fn a_lease_beyond_the_backfill_depth_is_not_considered_until_it_comes_closer() {
    let easy = Backfilling::Easy { pivots: 1 };
    for backfilling in [Backfilling::Conservative, easy] {
        // Without a depth, lease 2 fills the hole at once.
        assert_eq!(started(&third_in_line(backfilling, None).1), vec![2]);
        // With depth 1, only lease 1 (reserved at 100) is considered: lease 2 gets
        // nothing though it fits, as Slurm's bf_max_job_test leaves such a job alone.
        let (mut c, a) = third_in_line(backfilling, Some(1));
        assert!(
            a.iter()
                .all(|x| !matches!(x, Action::Wake(_) | Action::RunVms { .. })),
            "{backfilling:?}: {a:?}"
        );
        // Lease 0 ends at 100; lease 1 starts, and lease 2, now first in line, is
        // reserved after it.
        let t = EmuTime::from_secs(100);
        let mut out = Vec::new();
        for _ in 0..3 {
            out.extend(c.vm_reported(RequestId(0), VmState::Finished, t));
        }
        out.extend(c.tick(t));
        assert_eq!(started(&out), vec![1], "{backfilling:?}");
        assert!(
            out.contains(&Action::Wake(EmuTime::from_secs(200))),
            "{out:?}"
        );
        let slot = c.leases().into_iter().find(|l| l.id == RequestId(2));
        assert_eq!(
            slot.and_then(|l| l.slot).map(|s| s.0),
            Some(EmuTime::from_secs(200))
        );
    }
}

/// Runs `n` external leases of mixed sizes (a fixed pseudo-random sequence, arriving
/// every 7 s) on 3 hosts of 4 cores to their ends, completing VMs when their plans say;
/// returns every action in order with its time.
fn drive(backfilling: Backfilling, depth: Option<usize>, n: u32) -> Vec<(EmuTime, Action)> {
    let mut cfg = config(backfilling);
    cfg.backfill_depth = depth;
    let mut c = Core::new(&hosts(3, 4, 4096), cfg, with(PreemptionPolicy::Nop));
    enum Event {
        Submit(LeaseRequest),
        Wake,
        Done(RequestId),
    }
    let mut events: BTreeMap<(EmuTime, u64), Event> = BTreeMap::new();
    let mut x = 12345u64;
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (vms, secs) = (1 + (x >> 33) % 12, 20 + (x >> 45) % 300);
        let r = req(i, Origin::External, 7 * u64::from(i), vms as u32, 100, secs);
        events.insert((r.arrival, u64::from(i)), Event::Submit(r));
    }
    let mut seq = u64::from(n);
    let mut log = Vec::new();
    while let Some(((t, _), e)) = events.pop_first() {
        let out = match e {
            Event::Submit(r) => c.submit_external(r, t).unwrap_or_default(),
            Event::Wake => c.tick(t),
            Event::Done(lease) => c.vm_reported(lease, VmState::Finished, t),
        };
        for a in out {
            seq += 1;
            match &a {
                Action::Wake(at) => {
                    events.insert((*at, seq), Event::Wake);
                }
                Action::RunVms { lease, plans } => {
                    for p in plans.iter() {
                        let end = p.steps.iter().find(|s| s.1 == VmEvent::Completed);
                        seq += 1;
                        events.insert((end.map_or(t, |s| s.0), seq), Event::Done(*lease));
                    }
                }
                _ => {}
            }
            log.push((t, a));
        }
    }
    log
}

#[test]
fn a_backfill_depth_past_the_queue_changes_nothing() {
    let easy = Backfilling::Easy { pivots: 2 };
    for backfilling in [Backfilling::Fcfs, Backfilling::Conservative, easy] {
        let unbounded = drive(backfilling, None, 60);
        assert_eq!(
            drive(backfilling, Some(1000), 60),
            unbounded,
            "{backfilling:?}"
        );
        let ended = |log: &[(EmuTime, Action)]| {
            log.iter()
                .filter(|(_, a)| matches!(a, Action::Ended(..)))
                .count()
        };
        assert_eq!(ended(&unbounded), 60, "{backfilling:?}");
        // A shallow depth still runs every lease, in another order.
        let shallow = drive(backfilling, Some(2), 60);
        assert_eq!(ended(&shallow), 60, "{backfilling:?}");
    }
}

#[test]
fn queued_locals_wait_in_the_backfilling_queue_without_priority_or_preemption() {
    // Paper 004's providers: 1 host, 4 cores, conservative backfilling, MOV preemption
    // configured but locals queued. A suspendable external lease takes 3 cores for 100 s;
    // a 4-VM local request arriving at t = 10 waits for it (nothing is preempted, nothing
    // is rejected); a later 1-core external lease still backfills the hole before it.
    let (mut cfg, policy) = (config(Backfilling::Conservative), PreemptionPolicy::Mov);
    cfg.locals = LocalRequests::Queued;
    let mut c = Core::new(&hosts(1, 4, 4096), cfg, with(policy));
    c.submit_external(req(0, Origin::External, 0, 3, 100, 100), EmuTime::ZERO)
        .unwrap();
    let t10 = EmuTime::from_secs(10);
    let a = c
        .submit_local(req(1, Origin::Local, 10, 4, 100, 100), t10)
        .expect("a queued local is never refused for room");
    assert!(decision(&a).is_none(), "no preemption decision: {a:?}");
    assert!(started(&a).is_empty());
    let slot = |c: &Core, id: u32| {
        c.leases()
            .into_iter()
            .find(|l| l.id == RequestId(id))
            .and_then(|l| l.slot)
            .map(|s| s.0)
    };
    assert_eq!(
        slot(&c, 1),
        Some(EmuTime::from_secs(100)),
        "reserved after lease 0"
    );
    let b = c
        .submit_external(req(2, Origin::External, 10, 1, 100, 50), t10)
        .unwrap();
    assert_eq!(started(&b), vec![2], "backfilled ahead of the local lease");
    // A 1-core external lease of 150 s would delay the local lease: it goes after it,
    // exactly as behind an external one (no priority either way).
    c.submit_external(req(3, Origin::External, 10, 1, 100, 150), t10)
        .unwrap();
    assert_eq!(slot(&c, 3), Some(EmuTime::from_secs(200)));
    assert!(c.availability().within_capacity());
}

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

#[test]
fn fcfs_never_lets_a_later_lease_overtake() {
    let mut c = core(1, Backfilling::Fcfs, PreemptionPolicy::Nop);
    let t0 = EmuTime::ZERO;
    c.submit_external(req(0, Origin::External, 0, 3, 100, 100), t0)
        .unwrap();
    c.submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
        .unwrap();
    // It would fit now, but FCFS keeps it behind lease 1, which takes the whole host
    // from 100 to 200.
    let a = c
        .submit_external(req(2, Origin::External, 0, 1, 100, 50), t0)
        .unwrap();
    assert!(started(&a).is_empty());
    assert!(a.contains(&Action::Wake(EmuTime::from_secs(200))), "{a:?}");
}

#[test]
fn easy_with_one_pivot_backfills_only_what_fits_now() {
    let mut c = core(1, Backfilling::Easy { pivots: 1 }, PreemptionPolicy::Nop);
    let t0 = EmuTime::ZERO;
    c.submit_external(req(0, Origin::External, 0, 3, 100, 100), t0)
        .unwrap();
    // The pivot: reserved at 100.
    let a = c
        .submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
        .unwrap();
    assert!(a.contains(&Action::Wake(EmuTime::from_secs(100))));
    // Not a pivot and does not fit now without delaying the pivot: no reservation.
    let a = c
        .submit_external(req(2, Origin::External, 0, 1, 100, 150), t0)
        .unwrap();
    assert!(
        a.iter()
            .all(|x| !matches!(x, Action::Wake(_) | Action::RunVms { .. })),
        "{a:?}"
    );
}

#[test]
fn deadline_leases_are_refused_at_admission_when_they_would_be_late() {
    let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Nop);
    c.submit_external(req(0, Origin::External, 0, 4, 100, 1000), EmuTime::ZERO)
        .unwrap();
    let mut late = req(1, Origin::External, 0, 1, 100, 100);
    late.lease_type = LeaseType::DeadlineNonPreemptable;
    late.deadline = Some(EmuTime::from_secs(500));
    assert_eq!(
        c.submit_external(late.clone(), EmuTime::ZERO),
        Err(Refusal::Deadline)
    );
    late.id = RequestId(2);
    late.deadline = Some(EmuTime::from_secs(1100));
    assert!(c.submit_external(late, EmuTime::ZERO).is_ok());
}

#[test]
fn nop_rejects_a_local_request_that_does_not_fit() {
    let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Nop);
    c.submit_external(req(0, Origin::External, 0, 4, 100, 1000), EmuTime::ZERO)
        .unwrap();
    assert_eq!(
        c.submit_local(
            req(1, Origin::Local, 10, 2, 100, 100),
            EmuTime::from_secs(10)
        ),
        Err(Refusal::NoRoom)
    );
}

#[test]
fn suspension_is_timed_and_work_is_conserved() {
    // 1 host; a 4-VM suspendable lease runs; a 2-VM local request arrives at t=100.
    let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Mov);
    c.submit_external(req(0, Origin::External, 0, 4, 400, 1000), EmuTime::ZERO)
        .unwrap();
    let now = EmuTime::from_secs(100);
    let a = c
        .submit_local(req(1, Origin::Local, 100, 2, 100, 300), now)
        .unwrap();
    let plan = a
        .iter()
        .find_map(|x| match x {
            Action::CommandVms { plans, .. } => Some(plans.clone()),
            _ => None,
        })
        .expect("the external lease is preempted");
    // Pauses 5 ms apart, then four 10 s suspensions (400 MB at 40 MB/s) back to back.
    let ms = |m: u64| now + EmuDuration::from_millis(m);
    assert_eq!(plan[0].steps[0], (ms(0), VmEvent::Pause));
    assert_eq!(plan[3].steps[0], (ms(15), VmEvent::Pause));
    assert_eq!(plan[0].steps[1], (ms(20), VmEvent::Suspend));
    assert_eq!(plan[3].steps[2], (ms(40_020), VmEvent::Suspended));
    let (done, remaining) = c.work_done(RequestId(0)).unwrap();
    assert_eq!(done, EmuDuration::from_secs(100));
    assert_eq!(done + remaining, EmuDuration::from_secs(1000));
    // The local lease asked for now: it starts when its two VMs' hosts are vacated —
    // the first two suspensions, 20.02 s later — and the profile never overflows.
    let d = decision(&a).expect("a decision");
    assert_eq!(d.local_start, ms(20_020));
    assert!(c.availability().within_capacity());
}

#[test]
fn an_advance_request_is_reserved_on_arrival_and_preempts_just_in_time() {
    // 1 host; a 4-VM suspendable lease runs from 0 for 2000 s. At t = 100 a local request
    // for 2 VMs asks to start at 1000. It is decided now: the external lease keeps running
    // until it must begin vacating — its four 10 s suspensions and 20 ms of pauses must end
    // by 1000 — and the local lease starts exactly at 1000.
    let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Mov);
    c.submit_external(req(0, Origin::External, 0, 4, 400, 2000), EmuTime::ZERO)
        .unwrap();
    let now = EmuTime::from_secs(100);
    let mut local = req(1, Origin::Local, 100, 2, 100, 300);
    local.start = Some(EmuTime::from_secs(1000));
    let a = c.submit_local(local, now).unwrap();
    let d = decision(&a).expect("decided on arrival").clone();
    assert_eq!(d.local_start, EmuTime::from_secs(1000));
    assert_eq!(d.vacated_by, EmuTime::from_secs(1000));
    let (pause, after) = a
        .iter()
        .find_map(|x| match x {
            Action::CommandVms { plans, after, .. } => Some((plans[0].steps[0], *after)),
            _ => None,
        })
        .unwrap();
    let t_p = EmuTime::from_secs(1000).earlier_by(EmuDuration::from_millis(40_020));
    assert_eq!(pause, (t_p, VmEvent::Pause));
    assert_eq!(after, Some(t_p));
    // Work until the pause counts: 1000 − 40.02 s.
    let (done, _) = c.work_done(RequestId(0)).unwrap();
    assert_eq!(done, t_p.since(EmuTime::ZERO));
    // An external lease arriving in between cannot take the local interval.
    let b = c
        .submit_external(
            req(2, Origin::External, 500, 4, 100, 700),
            EmuTime::from_secs(500),
        )
        .unwrap();
    assert!(started(&b).is_empty());
    assert!(c.availability().within_capacity());
}

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

/// Issue 40: one 1-core host runs a migratable lease (one 660 MB VM, 1000 s, deadline
/// 1300 s) when a local request for its core arrives at 100 s for 500 s. Suspended and
/// resumed here after the local lease it would end at 1516 s, past its deadline; migrated
/// (eq. 8: 52.8 s of copy, 16.5 s + 16.5 s of suspension and resumption, 10 ms of pauses:
/// 85.8 s) it ends at 1085.8 s. With another cluster of the Grid publishing room it is a
/// candidate and both are served; publishing none, or none free, it is not, as before.
fn migration_route(elsewhere: Vec<Published>) -> Result<Vec<Action>, Refusal> {
    let mut cfg = config(Backfilling::Conservative);
    cfg.can_migrate = true;
    let mut c = Core::new(&hosts(1, 1, 4096), cfg, with(PreemptionPolicy::Mov));
    let mut m = req(0, Origin::External, 0, 1, 660, 1000);
    m.lease_type = LeaseType::DeadlineMigratable;
    m.deadline = Some(EmuTime::from_secs(1300));
    c.submit_external(m, EmuTime::ZERO).unwrap();
    c.set_elsewhere(elsewhere);
    let now = EmuTime::from_secs(100);
    c.submit_local(req(1, Origin::Local, 100, 1, 100, 500), now)
}

fn published(free: u64, until: u64) -> Published {
    Published {
        free: vec![(EmuTime::from_secs(100), free)],
        until: EmuTime::from_secs(until),
        cores: 4,
        price: 1.0,
    }
}

#[test]
fn a_migratable_lease_that_keeps_its_deadline_only_by_migrating_is_a_candidate() {
    let a = migration_route(vec![published(4, 3700)]).expect("served by migrating");
    let d = decision(&a).expect("a decision");
    assert_eq!(d.set, vec![(RequestId(0), Operation::Migrate)]);
    let eq_8 = OverheadModel::gluster_testbed().migrate_lease(1, 660);
    assert!((eq_8.as_secs_f64() - 85.81).abs() < 1e-6, "{eq_8:?}");
    assert_eq!(d.cost, eq_8 + d.reschedule);
    assert!(a
        .iter()
        .any(|x| matches!(x, Action::Relocate(r) if r.req.id == RequestId(0))));
    // No room elsewhere: rejected as before.
    assert_eq!(migration_route(vec![]).err(), Some(Refusal::NoRoom));
    assert_eq!(
        migration_route(vec![published(0, 3700)]).err(),
        Some(Refusal::NoRoom)
    );
    // A horizon ending before it would finish there shows no room either.
    assert_eq!(
        migration_route(vec![published(4, 1000)]).err(),
        Some(Refusal::NoRoom)
    );
}

#[test]
fn a_cancel_only_decision_costs_nothing() {
    let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Mov);
    let mut victim = req(0, Origin::External, 0, 4, 400, 1000);
    victim.lease_type = LeaseType::BestEffortCancellable;
    c.submit_external(victim, EmuTime::ZERO).unwrap();
    let a = c
        .submit_local(
            req(1, Origin::Local, 100, 2, 100, 300),
            EmuTime::from_secs(100),
        )
        .unwrap();
    let d = decision(&a).unwrap();
    assert_eq!(d.cost, EmuDuration::ZERO);
    assert_eq!(d.reschedule, EmuDuration::ZERO);
    assert_eq!(d.local_start, EmuTime::from_secs(100));
}
#[test]
fn freed_intervals_merge_where_they_touch() {
    let t = EmuTime::from_secs;
    let mut f = Freed::new(vec![(t(50), t(60)), (t(10), t(20)), (t(20), t(30))]);
    assert_eq!(f.0, vec![(t(10), t(30)), (t(50), t(60))]);
    f.add(t(25), t(55));
    assert_eq!(f.0, vec![(t(10), t(60))]);
    f.add(t(70), t(70));
    assert_eq!(f.0, vec![(t(10), t(60))]);
    f.add(t(0), t(5));
    assert_eq!(f.0, vec![(t(0), t(5)), (t(10), t(60))]);
}

#[test]
fn compression_moves_reservations_into_capacity_a_preemption_freed() {
    // 1 host, 4 cores. A cancellable lease holds all 4 until 1000 s; a 2-VM lease is
    // reserved after it. At 100 s a local request takes 2 cores for 300 s by cancelling
    // the first: 2 cores are free from 100 s on.
    let reserved_start = |compress: bool| {
        let (mut cfg, policy) = (config(Backfilling::Conservative), PreemptionPolicy::Mov);
        cfg.compress = compress;
        let mut c = Core::new(&hosts(1, 4, 4096), cfg, with(policy));
        let mut victim = req(0, Origin::External, 0, 4, 400, 1000);
        victim.lease_type = LeaseType::BestEffortCancellable;
        c.submit_external(victim, EmuTime::ZERO).unwrap();
        c.submit_external(req(1, Origin::External, 0, 2, 400, 100), EmuTime::ZERO)
            .unwrap();
        let now = EmuTime::from_secs(100);
        c.submit_local(req(2, Origin::Local, 100, 2, 400, 300), now)
            .unwrap();
        assert!(c.availability().within_capacity());
        c.leases()
            .into_iter()
            .find(|l| l.id == RequestId(1))
            .and_then(|l| l.slot)
            .map(|(start, _, _)| start)
    };
    // Without compression it keeps its slot; with it, it starts as soon as the cancelled
    // VMs are off, beside the local lease.
    assert_eq!(reserved_start(false), Some(EmuTime::from_secs(1000)));
    assert_eq!(reserved_start(true), Some(EmuTime::from_secs(100)));
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
