//! Tests of the LRMS core: intake, admission, placement, local requests, preemption and
//! compression, against hand-worked cases and property tests.

use super::*;
use crate::lrms::availability::tests::hosts;
use crate::lrms::PacpOmega;
use crate::model::{ClusterId, GridId};
use proptest::test_runner::TestCaseError;
use proptest::{prop_assert, prop_assert_eq};

mod moldable;
mod partitions;

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
