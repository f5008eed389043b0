//! Lawson and Smirni's multiple resource partitions as paper 004 §4.2 describes them: each
//! partition (here the Grid's, 0, and the local jobs', 1) has a size in cores; a job of a
//! partition takes its cores from its own partition's idle cores first, and "in case the
//! partition does not have enough resources, the job can still start execution if additional
//! resources can be borrowed from other partitions without delaying their pivots".
//!
//! What this module owns is the bookkeeping and the rule, nothing else:
//! * every lease holding cores (running or reserved) is a [`Charge`]: the cores it takes from
//!   each partition over its window — its own partition's, and what it borrowed;
//! * a partition's *idle* cores over a window are its size less the most its charges take at
//!   any instant of the window. A pivot's reservation is a charge, so a borrower that takes
//!   only idle cores never delays it;
//! * a job may borrow whatever it lacks from the other partition's idle cores, whether it
//!   starts now or is reserved for later (a pivot, or every job under conservative
//!   backfilling), as the authors' own implementation of the policy does (GridSim 5's
//!   `AggressiveMultiPartitions`, by paper 004's first author: a pivot is scheduled at the
//!   earlier of its partition's earliest start and the earliest start over all partitions,
//!   borrowing there the processors no other job or pivot holds).
//!
//! The rule decides where every lease that queues may start (with `lrms.locals = "queued"`,
//! paper 004's providers, local jobs too). A local request decided on arrival
//! (`"reserved"`) is placed on the hosts alone, preempting Grid leases if it must — the
//! preemption decision sees the hosts, so its placement must — and is charged all the same
//! ([`Partitions::take_anyway`]), so the Grid partition's planning sees the cores it holds.
//!
//! The charge of a lease is fixed over its window (the same cores from each partition
//! throughout), except that a lease suspended or stopped holds it only until its VMs are off
//! their hosts, as its slots. Sizes change at each publication (the forecast, `Mf`, or the mean local
//! load, `M`); charges made before stay as they were.

use std::collections::BTreeMap;

use crate::time::EmuTime;

/// The Grid's partition (every external lease).
pub const GRID: usize = 0;
/// The local jobs' partition.
pub const LOCAL: usize = 1;

/// The cores a lease takes from each partition over `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Charge {
    /// When it begins to hold them.
    pub start: EmuTime,
    /// When it lets them go.
    pub end: EmuTime,
    /// Cores taken from each partition (by index: [`GRID`], [`LOCAL`]).
    pub taken: [u64; 2],
}

/// Two partitions' sizes and their charges over time.
#[derive(Clone, Debug)]
pub struct Partitions {
    /// The cluster's cores.
    total: u64,
    /// Each partition's size (they add up to `total`).
    limits: [u64; 2],
    /// Each partition's charged cores, as changes at instants.
    deltas: [BTreeMap<EmuTime, i64>; 2],
}

impl Partitions {
    /// A cluster of `total` cores: every core the Grid's until the local partition is sized.
    pub fn new(total: u64) -> Partitions {
        Partitions {
            total,
            limits: [total, 0],
            deltas: [BTreeMap::new(), BTreeMap::new()],
        }
    }

    /// Sizes the local partition at `local` cores (at most the cluster); the Grid's gets the
    /// rest.
    pub fn resize(&mut self, local: u64) {
        let local = local.min(self.total);
        self.limits = [self.total - local, local];
    }

    /// Each partition's size.
    pub fn limits(&self) -> [u64; 2] {
        self.limits
    }

    /// Records a charge.
    pub fn add(&mut self, c: &Charge) {
        self.shift(c, 1);
    }

    /// Takes a recorded charge out.
    pub fn remove(&mut self, c: &Charge) {
        self.shift(c, -1);
    }

    fn shift(&mut self, c: &Charge, sign: i64) {
        if c.end <= c.start {
            return;
        }
        for (p, &n) in c.taken.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let d = sign * n as i64;
            for (t, dt) in [(c.start, d), (c.end, -d)] {
                let e = self.deltas[p].entry(t).or_insert(0);
                *e += dt;
                if *e == 0 {
                    self.deltas[p].remove(&t);
                }
            }
        }
    }

    /// The most partition `p`'s charges take at any instant of `[start, end)`.
    pub fn peak(&self, p: usize, start: EmuTime, end: EmuTime) -> u64 {
        let d = &self.deltas[p];
        let mut used: i64 = d.range(..=start).map(|(_, v)| v).sum();
        let mut peak = used;
        if end > start {
            use std::ops::Bound::{Excluded, Unbounded};
            for (&t, v) in d.range((Excluded(start), Unbounded)) {
                if t >= end {
                    break;
                }
                used += v;
                peak = peak.max(used);
            }
        }
        peak.max(0) as u64
    }

    /// Partition `p`'s idle cores throughout `[start, end)`: its size less its peak there.
    pub fn idle(&self, p: usize, start: EmuTime, end: EmuTime) -> u64 {
        self.limits[p].saturating_sub(self.peak(p, start, end))
    }

    /// How a lease of partition `p` needing `cores` over `[start, end)` would take them:
    /// its partition's idle cores first, the rest borrowed from the other's idle cores.
    /// `None`: the rule does not let it run then.
    pub fn take(&self, p: usize, cores: u64, window: (EmuTime, EmuTime)) -> Option<[u64; 2]> {
        let idle = |x: usize| self.idle(x, window.0, window.1);
        rule(idle, (p, cores))
    }

    /// The partitions' use as it stands, cumulated, for many [`Profile::take`]s in a row (a
    /// search over start candidates): each answers as [`Partitions::take`] would.
    pub fn profile(&self) -> Profile {
        let cumulate = |d: &BTreeMap<EmuTime, i64>| {
            let mut used = 0;
            d.iter()
                .map(|(&t, &v)| {
                    used += v;
                    (t, used)
                })
                .collect()
        };
        Profile {
            limits: self.limits,
            steps: [cumulate(&self.deltas[0]), cumulate(&self.deltas[1])],
        }
    }

    /// [`Partitions::take`], or where the rule does not allow it (a lease put back in its
    /// old slot, a late deadline lease given the earliest slot anyway), its own partition's
    /// idle cores and the rest charged to the other partition.
    pub fn take_anyway(&self, p: usize, cores: u64, window: (EmuTime, EmuTime)) -> [u64; 2] {
        self.take(p, cores, window).unwrap_or_else(|| {
            let own = cores.min(self.idle(p, window.0, window.1));
            let mut taken = [0; 2];
            taken[p] = own;
            taken[1 - p] = cores - own;
            taken
        })
    }
}

/// Lawson and Smirni's rule given each partition's `idle` cores over the window: a job of
/// partition `p` needing `cores` takes its own partition's idle cores first and borrows the
/// rest from the other's idle cores.
fn rule(idle: impl Fn(usize) -> u64, (p, cores): (usize, u64)) -> Option<[u64; 2]> {
    let q = 1 - p;
    let own = cores.min(idle(p));
    let need = cores - own;
    if need > idle(q) {
        return None;
    }
    let mut taken = [0; 2];
    taken[p] = own;
    taken[q] = need;
    Some(taken)
}

/// A snapshot of [`Partitions`]: each partition's use from each change on.
#[derive(Clone, Debug)]
pub struct Profile {
    limits: [u64; 2],
    steps: [Vec<(EmuTime, i64)>; 2],
}

impl Profile {
    /// [`Partitions::peak`] on the snapshot.
    fn peak(&self, p: usize, start: EmuTime, end: EmuTime) -> u64 {
        let v = &self.steps[p];
        let i = v.partition_point(|&(t, _)| t <= start);
        let mut peak = if i > 0 { v[i - 1].1 } else { 0 };
        for &(t, used) in &v[i..] {
            if t >= end {
                break;
            }
            peak = peak.max(used);
        }
        peak.max(0) as u64
    }

    /// [`Partitions::take`] on the snapshot.
    pub fn take(&self, p: usize, cores: u64, (start, end): (EmuTime, EmuTime)) -> Option<[u64; 2]> {
        let idle = |x: usize| self.limits[x].saturating_sub(self.peak(x, start, end));
        rule(idle, (p, cores))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    fn charge(s: u64, e: u64, taken: [u64; 2]) -> Charge {
        Charge {
            start: t(s),
            end: t(e),
            taken,
        }
    }

    #[test]
    fn a_job_takes_its_own_partitions_idle_cores_first_and_borrows_only_idle_ones() {
        // 8 cores: Grid 5, local 3. A local job holds 3 local cores over [0, 100).
        let mut parts = Partitions::new(8);
        parts.resize(3);
        parts.add(&charge(0, 100, [0, 3]));
        // A local job of 2 cores borrows 2 of the Grid's 5 idle cores, now or planned for
        // later within the local job's window.
        assert_eq!(parts.take(LOCAL, 2, (t(0), t(50))), Some([2, 0]));
        assert_eq!(parts.take(LOCAL, 2, (t(10), t(50))), Some([2, 0]));
        // After the local job ends its own partition has room: taken there first.
        assert_eq!(parts.take(LOCAL, 2, (t(100), t(150))), Some([0, 2]));
        // A Grid pivot reserved on 4 Grid cores at [50, 150): a local job borrowing may take
        // only the one Grid core idle throughout its window if it overlaps the pivot.
        parts.add(&charge(50, 150, [4, 0]));
        assert_eq!(parts.take(LOCAL, 2, (t(0), t(60))), None);
        assert_eq!(parts.take(LOCAL, 1, (t(0), t(60))), Some([1, 0]));
        assert_eq!(parts.take(LOCAL, 5, (t(0), t(50))), Some([5, 0]));
        // A job larger than its partition takes all of it and borrows the excess.
        assert_eq!(parts.take(LOCAL, 4, (t(150), t(200))), Some([1, 3]));
        assert_eq!(parts.take(LOCAL, 4, (t(90), t(200))), None);
        // Taken out, the charges leave nothing behind.
        parts.remove(&charge(0, 100, [0, 3]));
        parts.remove(&charge(50, 150, [4, 0]));
        assert_eq!(parts.peak(GRID, t(0), t(1000)), 0);
        assert!(parts.deltas.iter().all(BTreeMap::is_empty));
    }

    /// An independent reference: each partition's use at every whole second, summed from
    /// the charges themselves.
    fn used_at(charges: &[Charge], p: usize, s: u64) -> u64 {
        charges
            .iter()
            .filter(|c| c.start <= t(s) && t(s) < c.end)
            .map(|c| c.taken[p])
            .sum()
    }

    /// The rule from the paper's sentence, second by second: its own partition's idle cores
    /// first; the rest borrowed only from cores the other partition leaves idle at every
    /// second of the window (so none of its pivots, which are charges, is delayed).
    fn reference(
        limits: [u64; 2],
        charges: &[Charge],
        (p, cores, s, e): (usize, u64, u64, u64),
    ) -> Option<[u64; 2]> {
        let idle = |x: usize| {
            (s..e.max(s + 1))
                .map(|sec| limits[x].saturating_sub(used_at(charges, x, sec)))
                .min()
                .unwrap_or(limits[x])
        };
        let own = cores.min(idle(p));
        let borrow = cores - own;
        (borrow <= idle(1 - p)).then(|| {
            let mut taken = [0; 2];
            taken[p] = own;
            taken[1 - p] = borrow;
            taken
        })
    }

    fn job() -> impl Strategy<Value = (usize, u64, u64, u64)> {
        (0..2usize, 1..10u64, 0..40u64, 1..30u64)
            .prop_map(|(p, cores, s, len)| (p, cores, s, s + len))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::proptest_cases(300)))]

        /// Random small clusters, charges placed one by one by the rule itself: each answer
        /// equals the reference's, and once charged, no partition ever holds more than its
        /// size plus what its own jobs borrowed, nor does a borrower take cores another
        /// partition's charges (its pivots) hold.
        #[test]
        fn the_rule_matches_a_second_by_second_reference(
            total in 1..16u64,
            local in 0..16u64,
            jobs in proptest::collection::vec(job(), 1..12),
        ) {
            let mut parts = Partitions::new(total);
            parts.resize(local);
            let limits = parts.limits();
            prop_assert_eq!(limits[0] + limits[1], total);
            let mut charges: Vec<Charge> = Vec::new();
            for j in jobs {
                let (p, cores, s, e) = j;
                let got = parts.take(p, cores, (t(s), t(e)));
                prop_assert_eq!(got, reference(limits, &charges, j));
                prop_assert_eq!(parts.profile().take(p, cores, (t(s), t(e))), got);
                let Some(taken) = got else { continue };
                prop_assert_eq!(taken[0] + taken[1], cores);
                let c = charge(s, e, taken);
                parts.add(&c);
                charges.push(c);
                for sec in 0..80 {
                    for (x, &limit) in limits.iter().enumerate() {
                        // Never over its size: what any job took from it was idle.
                        prop_assert!(used_at(&charges, x, sec) <= limit);
                        prop_assert_eq!(parts.peak(x, t(sec), t(sec + 1)), used_at(&charges, x, sec));
                    }
                }
            }
            for c in &charges {
                parts.remove(c);
            }
            prop_assert!(parts.deltas.iter().all(BTreeMap::is_empty));
        }
    }
}
