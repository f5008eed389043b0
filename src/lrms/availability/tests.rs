//! Tests of the availability profile and host placement; `hosts` builds test hosts for
//! the scheduler's tests too.

use super::*;
use proptest::test_runner::TestCaseError;

/// `n` identical hosts of `cores` cores and `mem` MB at 1000 MIPS.
pub(crate) fn hosts(n: usize, cores: u32, mem: u64) -> Vec<HostSpec> {
    vec![
        HostSpec {
            cores,
            memory_mb: mem,
            mips: 1000
        };
        n
    ]
}
const VM: VmShape = VmShape {
    cores: 1,
    mem_mb: 512,
};
fn t(s: u64) -> EmuTime {
    EmuTime::from_secs(s)
}

#[test]
fn earliest_start_waits_for_the_slot_that_frees_room() {
    let mut a = Availability::new(&hosts(2, 2, 4096), true);
    a.reserve(RequestId(0), &[0, 0, 1], VM, t(0), t(100));
    // 2 VMs for 50 s: only one core is free until t=100.
    let (start, placed) = a
        .earliest(t(10), EmuDuration::from_secs(50), 2, VM)
        .unwrap();
    assert_eq!(start, t(100));
    assert_eq!(placed, vec![0, 0]);
    // 1 VM fits now on host 1.
    assert_eq!(
        a.earliest(t(10), EmuDuration::from_secs(50), 1, VM),
        Some((t(10), vec![1]))
    );
}

#[test]
fn memory_limits_placement_per_host() {
    let a = Availability::new(&hosts(2, 8, 1024), true);
    let big = VmShape {
        cores: 1,
        mem_mb: 600,
    };
    assert_eq!(a.place(2, big, t(0), t(1)), Some(vec![0, 1]));
    assert_eq!(a.place(3, big, t(0), t(1)), None);
    assert!(!a.could_ever_fit(3, big));
    // Where memory is overcommitted, only cores count.
    let loose = Availability::new(&hosts(2, 8, 1024), false);
    assert_eq!(loose.place(3, big, t(0), t(1)), Some(vec![0, 0, 0]));
    assert_eq!(loose.capacities(), vec![(8, None), (8, None)]);
}

#[test]
fn a_window_sees_the_peak_not_the_start() {
    let mut a = Availability::new(&hosts(1, 4, 8192), true);
    a.reserve(RequestId(0), &[0, 0, 0], VM, t(50), t(60));
    assert_eq!(a.room(0, VM, t(0), t(40)), 4);
    assert_eq!(a.room(0, VM, t(0), t(55)), 1);
    assert_eq!(a.room(0, VM, t(60), t(70)), 4);
}

/// A naive profile: every slot in one list, scanned in full.
#[derive(Default)]
struct Naive(Vec<(usize, RequestId, u32, EmuTime, EmuTime)>);

impl Naive {
    fn room(&self, h: usize, cores: u64, start: EmuTime, end: EmuTime) -> u64 {
        // Peak use over the window: use only rises at a slot's start (or the window's).
        let mut points: Vec<EmuTime> = vec![start];
        points.extend(
            self.0
                .iter()
                .filter(|s| s.0 == h && s.3 > start && s.3 < end)
                .map(|s| s.3),
        );
        let peak = points
            .iter()
            .map(|&t| {
                self.0
                    .iter()
                    .filter(|s| s.0 == h && s.3 <= t && s.4 > t)
                    .count() as u64
            })
            .max()
            .unwrap_or(0);
        cores.saturating_sub(peak)
    }
}

/// The cluster-wide use after `deltas` (second, change in cores), summed per second.
fn steps_of(deltas: &[(u64, i64)]) -> UsageSteps {
    let mut by_time: BTreeMap<u64, i64> = BTreeMap::new();
    for &(x, d) in deltas {
        *by_time.entry(x).or_default() += d;
    }
    let mut used = 0;
    UsageSteps(
        by_time
            .into_iter()
            .map(|(x, d)| {
                used += d;
                (t(x), used)
            })
            .collect(),
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..Default::default() })]

    /// A walk over the usage steps answers as the steps do, for starts in any order
    /// (ascending, as a search asks, with repeats and the odd step back).
    #[test]
    fn a_walk_over_the_steps_answers_as_the_steps(
        deltas in proptest::collection::vec((0u64..60, -3i64..4), 0..30),
        asks in proptest::collection::vec((0u64..70, 0u64..30, 0u64..5), 1..40),
        total in 1u64..9,
        ascending in proptest::bool::ANY,
    ) {
        let steps = steps_of(&deltas);
        let mut asks = asks;
        if ascending {
            asks.sort_unstable();
        }
        let (mut walk, mut skipping) = (steps.walk(), steps.walk());
        for (start, length, cores) in asks {
            let (start, end) = (EmuTime::from_secs(start), EmuTime::from_secs(start + length));
            let fits = steps.fits(start, end, cores, total);
            proptest::prop_assert_eq!(walk.fits(start, end, cores, total), fits);
            let next = skipping.fits_or_next(start, end, cores, total);
            proptest::prop_assert_eq!(next.is_ok(), fits);
            // No window as long starting before the instant it names fits (steps are at
            // whole seconds: half seconds between them stand for every instant).
            if let Err(next) = next {
                proptest::prop_assert!(next > start);
                let mut at = start;
                while at < next && at < EmuTime::from_secs(80) {
                    let len = end.since(start);
                    proptest::prop_assert!(!steps.fits(at, at + len, cores, total), "{:?} fits", at);
                    at += EmuDuration::from_millis(500);
                }
            }
        }
    }

    /// The two-ended vector holds what a plain vector given the same inserts and removals
    /// holds, wherever they fall (front side, back side, an empty one), through its spare
    /// room being made, used up and given back.
    #[test]
    fn a_two_ended_vector_keeps_the_order_of_a_plain_one(
        ops in proptest::collection::vec((proptest::bool::ANY, 0usize..1000, 0u32..1000), 0..400),
    ) {
        let (mut two, mut plain) = (TwoEnded::default(), Vec::new());
        for (insert, at, value) in ops {
            if insert || plain.is_empty() {
                let i = at % (plain.len() + 1);
                two.insert(i, value);
                plain.insert(i, value);
            } else {
                let i = at % plain.len();
                proptest::prop_assert_eq!(two.remove(i), plain.remove(i));
            }
            proptest::prop_assert_eq!(two.as_slice(), plain.as_slice());
        }
    }

    /// The prepared maxima answer as a scan of each window's steps does.
    #[test]
    fn earlier_fits_answers_as_fits_excluding(
        deltas in proptest::collection::vec((0u64..60, -3i64..4), 0..30),
        own in (1u64..40, 1u64..25, 1u64..4),
        floor in 0u64..40,
        cores in 1u64..5,
        total in 1u64..9,
    ) {
        let steps = steps_of(&deltas);
        let own = (t(own.0), t(own.0 + own.1), own.2);
        let floor = t(floor);
        let len = own.1.since(own.0);
        let earlier = steps.earlier_fits(floor, cores, total, own);
        let mut at = floor;
        while at < own.0 {
            proptest::prop_assert_eq!(
                earlier.fits_or_next(at).is_ok(),
                steps.fits_excluding(at, at + len, cores, total, own),
                "start {:?}", at
            );
            // No window starting before the next one it names fits (steps are at whole
            // seconds: half seconds between them stand for every instant).
            if let Err(next) = earlier.fits_or_next(at) {
                proptest::prop_assert!(next > at);
                let mut between = at + EmuDuration::from_millis(500);
                while between < next.min(own.0) {
                    proptest::prop_assert!(
                        !steps.fits_excluding(between, between + len, cores, total, own),
                        "{:?} fits, but {:?} said nothing does before {:?}", between, at, next
                    );
                    between += EmuDuration::from_millis(500);
                }
            }
            at += EmuDuration::from_secs(1);
        }
    }

    /// The cluster-wide use and the slot ends stay the sums over the slots held (each
    /// weighted by its cores), and each lease's list of its slots stays theirs, through
    /// leases of several VMs of several cores reserved,
    /// released from an instant on, cut, and forgotten.
    #[test]
    fn the_cluster_wide_indexes_follow_the_slots(
        ops in proptest::collection::vec((0u8..4, 0u32..5, 1u32..4, 0u64..200, 1u64..100, 1usize..4), 1..50),
    ) {
        let mut a = Availability::new(&hosts(3, 16, 1 << 30), true);
        for (op, lease, cores, at, len, vms) in ops {
            let (id, shape) = (RequestId(lease), VmShape { cores, mem_mb: 512 });
            let (s, e) = (t(at), t(at + len));
            match op {
                0 | 1 => {
                    let on: Vec<u16> = (0..vms).map(|v| (v % 3) as u16).collect();
                    // A lease of this id at this start takes the place of its VMs there.
                    a.reserve(id, &on, shape, s, e);
                }
                2 => a.release_from(id, s),
                _ => {
                    if let Some(x) = a.holds(EmuTime::ZERO, EmuTime::NEVER).into_iter().find(|x| x.lease == id) {
                        a.end_vm(id, x.vm, x.start, x.start + EmuDuration::from_secs(len / 2));
                    }
                    a.forget_before(t(at / 4));
                }
            }
            let (mut deltas, mut ends) = (BTreeMap::new(), BTreeMap::new());
            for x in a.holds(EmuTime::ZERO, EmuTime::NEVER) {
                *deltas.entry(x.start).or_insert(0i64) += i64::from(x.cores);
                *deltas.entry(x.end).or_insert(0i64) -= i64::from(x.cores);
                *ends.entry(x.end).or_insert(0u32) += 1;
            }
            deltas.retain(|_, d| *d != 0);
            proptest::prop_assert_eq!(&a.deltas, &deltas);
            proptest::prop_assert_eq!(&a.ends, &ends);
            // And each lease's list of where its slots are.
            let mut owned: BTreeMap<RequestId, BTreeSet<(EmuTime, u16, u32)>> = BTreeMap::new();
            for x in a.holds(EmuTime::ZERO, EmuTime::NEVER) {
                owned.entry(x.lease).or_default().insert((x.start, x.host as u16, x.vm));
            }
            proptest::prop_assert_eq!(&a.owned, &owned);
        }
    }

    /// The indexed profile answers every room question as a full scan of its slots does,
    /// through reservations, cuts, releases and forgetting.
    #[test]
    fn indexed_room_matches_a_full_scan(
        ops in proptest::collection::vec((0u8..6, 0u32..6, 0u64..3, 0u64..400, 1u64..300), 1..60),
        probes in proptest::collection::vec((0u64..3, 0u64..700, 1u64..300), 1..20),
    ) {
        let mut a = Availability::new(&hosts(3, 4, 1 << 30), true);
        let mut naive = Naive::default();
        let mut now = EmuTime::ZERO;
        for (i, &op) in ops.iter().enumerate() {
            apply_op(&mut a, &mut naive, &mut now, i, op);
            check_counts(&a, &naive, i)?;
            check_probes(&a, &probes, i)?;
        }
        for &(h, at, len) in &probes {
            let (s, e) = (t(at), t(at) + EmuDuration::from_secs(len));
            proptest::prop_assert_eq!(a.room(h as usize, VM, s, e), naive.room(h as usize, 4, s, e));
        }
        check_rising_starts(&a, &probes)?;
        let mut held: Vec<_> = a.holds(EmuTime::ZERO, EmuTime::NEVER).iter().map(|x| (x.host, x.lease, x.vm, x.start, x.end)).collect();
        let mut expected = naive.0.clone();
        held.sort();
        expected.sort();
        proptest::prop_assert_eq!(held, expected);
    }
}

/// One random operation of [`indexed_room_matches_a_full_scan`], applied to the profile and
/// to the full scan's list of slots alike.
fn apply_op(
    a: &mut Availability,
    naive: &mut Naive,
    now: &mut EmuTime,
    i: usize,
    (op, lease, host, at, len): (u8, u32, u64, u64, u64),
) {
    let id = RequestId(lease);
    match op {
        // Reserve one VM (index i keeps VMs distinct) where the host has room.
        0 | 1 => {
            let (s, e) = (
                t(at).max(*now),
                t(at).max(*now) + EmuDuration::from_secs(len),
            );
            if a.room(host as usize, VM, s, e) > 0 {
                a.reserve_vm(host as u16, id, i as u32, VM, s, e);
                naive.0.push((host as usize, id, i as u32, s, e));
            }
        }
        // Cut or stretch a slot of this lease.
        2 => {
            if let Some(k) = naive.0.iter().position(|x| x.1 == id) {
                let (h, _, vm, s, old_end) = naive.0[k];
                let end = s + EmuDuration::from_secs(len / 2);
                if end <= old_end || a.room(h, VM, old_end, end) > 0 {
                    a.end_vm(id, vm, s, end);
                    if end > s {
                        naive.0[k].4 = end;
                    } else {
                        naive.0.remove(k);
                    }
                }
            }
        }
        3 => {
            // This lease, or one of those reserved two VMs at once.
            let id = if host == 0 {
                RequestId(100 + (at % 60) as u32)
            } else {
                id
            };
            let from = t(len);
            a.release_from(id, from);
            naive.0.retain(|x| !(x.1 == id && x.3 >= from));
        }
        // A lease of its own with VMs on two hosts at once (VM k on the k-th).
        5 => {
            let id = RequestId(100 + i as u32);
            let (s, e) = (
                t(at).max(*now),
                t(at).max(*now) + EmuDuration::from_secs(len),
            );
            let pair = [host as u16, ((host + 1) % 3) as u16];
            if pair.iter().all(|&h| a.room(usize::from(h), VM, s, e) > 0) {
                a.reserve(id, &pair, VM, s, e);
                for (vm, &h) in pair.iter().enumerate() {
                    naive.0.push((usize::from(h), id, vm as u32, s, e));
                }
            }
        }
        _ => {
            *now = (*now).max(t(at));
            a.forget_before(*now);
            naive.0.retain(|x| x.4 > *now);
        }
    }
}

/// The profile within capacity, and its cluster-wide use and slot ends as counted from the
/// slots held.
fn check_counts(a: &Availability, naive: &Naive, i: usize) -> Result<(), TestCaseError> {
    proptest::prop_assert!(a.within_capacity());
    // The cluster-wide use and the slot ends, counted from the slots held.
    let (mut deltas, mut ends) = (BTreeMap::new(), BTreeMap::new());
    for &(_, _, _, s, e) in &naive.0 {
        *deltas.entry(s).or_insert(0i64) += 1;
        *deltas.entry(e).or_insert(0i64) -= 1;
        *ends.entry(e).or_insert(0u32) += 1;
    }
    deltas.retain(|_, d| *d != 0);
    proptest::prop_assert_eq!(&a.deltas, &deltas, "after op {}", i);
    proptest::prop_assert_eq!(&a.ends, &ends, "after op {}", i);
    Ok(())
}

/// Placements through the spans earlier placements found too full (kept across every
/// change, before and after what was forgotten) place as fresh first-fit placements do.
fn check_probes(
    a: &Availability,
    probes: &[(u64, u64, u64)],
    i: usize,
) -> Result<(), TestCaseError> {
    for &(_, at, len) in probes.iter().take(4) {
        let (s, e) = (t(at), t(at) + EmuDuration::from_secs(len));
        for shape in [
            VM,
            VmShape {
                cores: 3,
                mem_mb: 1024,
            },
        ] {
            for vms in [1, 3] {
                proptest::prop_assert_eq!(
                    a.place(vms, shape, s, e),
                    a.place_skipping(vms, shape, s, e, &mut Blocked::default()),
                    "{} VMs of {:?} over {:?}..{:?} after op {}",
                    vms,
                    shape,
                    s,
                    e,
                    i
                );
            }
        }
    }
    Ok(())
}

/// A search over rising starts with a shared `Blocked` places as fresh first-fit
/// placements do, for every shape.
fn check_rising_starts(a: &Availability, probes: &[(u64, u64, u64)]) -> Result<(), TestCaseError> {
    for shape in [
        VM,
        VmShape {
            cores: 2,
            mem_mb: 1024,
        },
        VmShape {
            cores: 1,
            mem_mb: 1 << 29,
        },
    ] {
        for vms in [1, 2, 5] {
            let mut blocked = Blocked::default();
            let mut starts: Vec<u64> = probes.iter().map(|p| p.1).collect();
            starts.sort_unstable();
            for (k, &at) in starts.iter().enumerate() {
                // Lengths vary (as resuming plans' do) but windows only move later.
                let len = EmuDuration::from_secs(probes[k].2);
                let (s, e) = (t(at), t(at) + len);
                proptest::prop_assert_eq!(
                    a.place_skipping(vms, shape, s, e, &mut blocked),
                    a.place(vms, shape, s, e),
                    "{} VMs of {:?} over {:?}..{:?}",
                    vms,
                    shape,
                    s,
                    e
                );
            }
        }
    }
    Ok(())
}

/// A host with more slots alive at once than the sweep keeps inline answers as the full
/// scan does (the sorting fallback), on windows before, across and after the crowd.
#[test]
fn a_slot_taken_again_shorter_gives_its_capacity_back() {
    let mut a = Availability::new(&hosts(1, 1, 1 << 20), true);
    a.reserve_vm(0, RequestId(1), 0, VM, t(0), t(100));
    assert_eq!(a.place(1, VM, t(50), t(60)), None);
    // The same VM of the same lease from the same start, now ending earlier.
    a.reserve_vm(0, RequestId(1), 0, VM, t(0), t(10));
    assert_eq!(a.place(1, VM, t(50), t(60)), Some(vec![0]));
    assert_eq!(a.cores_used_at(t(5)), 1);
    assert_eq!(a.cores_used_at(t(50)), 0);
    assert_eq!(a.usage_steps().used_at(t(50)), 0);
    assert!(a.within_capacity());
}

#[test]
fn a_crowded_host_is_measured_by_its_fallback() {
    let mut a = Availability::new(&hosts(1, 64, 1 << 30), true);
    let mut naive = Naive::default();
    for i in 0..50u32 {
        // Staggered: VM i from i s to 100 + 3i s, so up to 50 are alive at once.
        let (s, e) = (t(u64::from(i)), t(100 + 3 * u64::from(i)));
        a.reserve_vm(0, RequestId(i), 0, VM, s, e);
        naive.0.push((0, RequestId(i), 0, s, e));
    }
    for (from, to) in [
        (0, 10),
        (0, 400),
        (20, 60),
        (49, 50),
        (120, 200),
        (240, 300),
    ] {
        assert_eq!(
            a.room(0, VM, t(from), t(to)),
            naive.room(0, 64, t(from), t(to)),
            "window {from}..{to}"
        );
    }
    assert_eq!(a.room(0, VM, t(49), t(50)), 14, "50 alive of 64 cores");
}

#[test]
fn cutting_and_releasing_give_room_back() {
    let mut a = Availability::new(&hosts(1, 2, 8192), true);
    a.reserve(RequestId(1), &[0, 0], VM, t(0), t(100));
    a.end_vm(RequestId(1), 0, t(0), t(10));
    assert_eq!(a.room(0, VM, t(20), t(30)), 1);
    a.release(RequestId(1));
    assert_eq!(a.room(0, VM, t(0), t(30)), 2);
    assert!(a.within_capacity());
}
