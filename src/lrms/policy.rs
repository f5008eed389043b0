//! Preemption policies: which leases in play to preempt so a local request fits (paper 003
//! §6, paper 001 §4.3.1, paper 000 §4.2). A policy sees a [`Contention`] — the leases in play,
//! what preempting each would do and cost, and the real room a set of them frees — and returns
//! a *minimal candidate set*: its removal leaves room for the local request and no lease of it
//! can be dropped. Every set a policy returns is minimal, whatever the policy ranks by.
//!
//! The cost of a set is [`OverheadModel::set_cost`](super::overhead::OverheadModel::set_cost):
//! each lease's operation cost plus δ once if any operation reschedules work. It is what the
//! LRMS charges.
//!
//! Paper 003's optimising policies (exact optimum over the candidate sets):
//! * **MLIP** (eq. 10): fewest leases. Ties: the set with the most VMs (Haizea's
//!   largest-first, which gives Table III's {1, 6}), then arrival order (below).
//! * **MOV** (eq. 9): least cost. Ties: arrival order — this keeps Table III's {5, 2, 3}
//!   over the equally cheap {5, 6}.
//! * **MOML** (Algorithm 1): α = the median cost of the minimal candidate sets, then the
//!   fewest leases among sets costing at most α; ties by cost, then arrival order. The median
//!   is exact when the minimal sets can be enumerated ([`EXACT_MEDIAN_LIMIT`] leases in play,
//!   [`ENUMERATION_BUDGET`] search steps), otherwise taken over [`MEDIAN_SAMPLES`] random
//!   minimal sets (a documented approximation, tested against enumeration).
//! * **least-valuable** (paper 000 §4.2, its ref. \[33\]): preempts less valuable leases first —
//!   cancellable before suspendable before migratable: it minimises the running migratable VMs
//!   preempted, then the suspendable ones, then the cancellable ones, then the cost, then the
//!   number of leases. Valuable leases are touched only when the cheaper types cannot make room.
//!
//! "Arrival order" breaks remaining ties: among equally good sets, the one whose most recently
//! submitted lease is the oldest (compared lease by lease from the newest down) — the oldest
//! leases are preempted first, and the sets it prefers are automatically minimal.
//!
//! Paper 001's per-lease score orders (Haizea's mapper): leases are sorted by a preemptability
//! score and taken in that order until there is room; leases the last one made redundant are
//! then dropped, least preemptable first, so the set is minimal.
//! * **MWT**: least waiting time first (waiting = time since submission not spent working);
//!   ties to the younger lease.
//! * **MOV (paper 001, `mov-score`)**: eq. 1, score 1 / (overhead of the lease) — cheapest
//!   first (a lease that costs nothing before any that costs something); ties to the younger
//!   lease. Eq. 1's `n·(mem/s + mem/r)` is the suspension cost of
//!   eq. 7 without its millisecond pauses; the score uses the full operation cost so that what
//!   ranks is what is charged.
//! * **CP(α)** (eq. 2): score α·v + (1 − α)·w with both terms preemptability scores in [0, 1]
//!   over the leases in play, as Haizea's scores are: v = eq. 1's score relative to the
//!   cheapest lease with a cost (h⁺_min / h), w = 1 − waiting / the longest waiting. A lease
//!   that costs nothing has v = 1 plus an infinitesimal edge over the cheapest paid one (eq.
//!   1's 1 / 0 is above every 1 / h): for α > 0, ties on the score go to the cheaper lease,
//!   then to the younger. Highest first. α = 0 is exactly MWT's order and α = 1 exactly eq.
//!   1's (free leases first, then cheapest first). (Raw seconds would let waiting times,
//!   hours, drown overheads, seconds: CP(0.31) would be MWT.)
//!
//! Algorithms. When room is additive (every set frees the sum of what its leases free alone —
//! paper 003's VM counting, eq. 1, is a special case; see [`Contention::additive`]), MLIP is a
//! sort, MOV, MOML and least-valuable are exact dynamic programs over (leases, VMs), and
//! MOML's median enumerates or samples covers. Otherwise the optimising policies run a
//! branch and bound over the leases in play, seeded by a greedy set (leases or whole hosts'
//! leases by cost per VM of room), within [`SEARCH_BUDGET`] steps: exact when it finishes
//! ([`Choice::exact`]), the best set found otherwise (still minimal).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use std::collections::HashSet;

use super::contention::{Contention, RoomTracker};
use crate::model::LeaseType;

/// With at most this many leases in play, MOML's median is taken over every minimal set.
pub const EXACT_MEDIAN_LIMIT: usize = 16;
/// Search steps allowed to enumerate MOML's minimal sets before falling back to sampling.
pub const ENUMERATION_BUDGET: usize = 50_000;
/// Random minimal sets MOML draws to estimate the median when it cannot enumerate them.
pub const MEDIAN_SAMPLES: usize = 512;
/// Entries (leases × set sizes × VMs) MOML's count-layered DP may fill (≈ 100 MB of tables).
pub(crate) const LAYERED_DP_LIMIT: usize = 12_000_000;
/// Search steps the branch and bound may take for one decision (non-additive room).
pub const SEARCH_BUDGET: usize = 20_000;

/// How many hosts a search's bound by host may look at per step of its budget, in all: past
/// that it prunes by lease count alone, so a search with hundreds of leases over hundreds of
/// hosts costs at most about ten times its steps (paper 000 at three times its external
/// load: 9 s of CPU with the cap, 20 s without).
const HOST_BOUND_WORK: usize = 8;

/// A preemption policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PreemptionPolicy {
    /// Never preempt: a local request that does not fit is rejected.
    Nop,
    /// Minimum leases involved (paper 003 eq. 10).
    Mlip,
    /// Minimum overhead (paper 003 eq. 9): the cheapest candidate set.
    Mov,
    /// Minimum overhead, minimum leases (paper 003 Algorithm 1).
    Moml,
    /// Minimum waiting time (paper 001 §4.3.1).
    Mwt,
    /// Paper 001's minimum overhead: leases ordered by eq. 1's score.
    MovScore,
    /// Combinatorial (paper 001 eq. 2): α·overhead score + (1 − α)·waiting score.
    Cp {
        /// Weight of the overhead score, 0–1.
        alpha: f64,
    },
    /// Less valuable leases first: cancellable, then suspendable, then migratable (paper 000).
    LeastValuable,
}

/// A policy's choice: indices into the contention's candidates, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The leases to preempt.
    pub set: Vec<usize>,
    /// Whether the set is provably the policy's optimum (always true for the score orders
    /// and on additive room; false when a search ran out of steps).
    pub exact: bool,
}

/// Picks a minimal candidate set for `c`, or `None` if the policy does not preempt or no set
/// makes room. `seed` drives MOML's sampling; `budget` bounds a search.
pub fn choose(
    policy: PreemptionPolicy,
    c: &Contention,
    seed: u64,
    budget: usize,
) -> Option<Choice> {
    if policy == PreemptionPolicy::Nop || c.hopeless() {
        return None;
    }
    if c.makes_room(&[]) {
        return Some(Choice {
            set: Vec::new(),
            exact: true,
        });
    }
    if let Some(order) = score_order(policy, c) {
        return Some(Choice {
            set: take_in_order(c, &order),
            exact: true,
        });
    }
    if let Some(add) = c.additive() {
        let need = u64::from(c.need).saturating_sub(add.base);
        let items = items_of(c, &add.gains);
        let set = choose_additive(policy, &items, need, c.reschedule.as_micros(), seed)?;
        return Some(Choice { set, exact: true });
    }
    match policy {
        PreemptionPolicy::Moml => moml_general(c, seed, budget),
        _ => {
            let obj = Objective::of(
                policy,
                &items_of(c, &vec![0; c.candidates.len()]),
                c.reschedule.as_micros(),
            );
            let (set, exact) = search(c, &obj, budget, None)?;
            Some(Choice { set, exact })
        }
    }
}

/// One lease as the additive algorithms see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// Local VMs of room it frees.
    pub gain: u64,
    /// VMs in the lease (MLIP's tie-break).
    pub vms: u32,
    /// Running VMs its operation preempts.
    pub preempted_vms: u32,
    /// Its lease type (least-valuable's classes).
    pub lease_type: LeaseType,
    /// Cost of its operation, µs, without δ.
    pub cost: u64,
    /// Whether its operation reschedules work (brings δ).
    pub reschedules: bool,
    /// Waiting time, µs.
    pub waiting: u64,
    /// Submission time, µs (younger = larger).
    pub arrival: u64,
}

fn items_of(c: &Contention, gains: &[u64]) -> Vec<Item> {
    c.candidates
        .iter()
        .zip(gains)
        .map(|(x, &gain)| Item {
            gain,
            vms: x.vms,
            preempted_vms: x.preempted_vms,
            lease_type: x.lease_type,
            cost: x.cost.as_micros(),
            reschedules: x.op.reschedules(),
            waiting: x.waiting.as_micros(),
            arrival: x.arrival.as_micros(),
        })
        .collect()
}

// ---- objectives ----

/// An optimising policy's objective: each lease's weight, plus `delta` once if the set
/// reschedules work; smaller is better. Lexicographic criteria are packed into the bits of a
/// `u128`. An optional cap bounds the set's cost (MOML's second phase).
struct Objective {
    weight: Vec<u128>,
    delta: u128,
    cap: Option<u64>,
    cost: Vec<u64>,
    reschedule: u64,
    reschedules: Vec<bool>,
}

impl Objective {
    fn of(policy: PreemptionPolicy, items: &[Item], reschedule: u64) -> Objective {
        let total_vms: u128 = items.iter().map(|x| u128::from(x.vms)).sum::<u128>() + 1;
        let (weight, delta): (Vec<u128>, u128) = match policy {
            PreemptionPolicy::Mlip => (
                items
                    .iter()
                    .map(|x| total_vms - u128::from(x.vms))
                    .collect(),
                0,
            ),
            PreemptionPolicy::LeastValuable => (
                items
                    .iter()
                    .map(|x| {
                        let vms = u128::from(x.preempted_vms);
                        let class = match x.lease_type {
                            LeaseType::DeadlineMigratable => vms << 108,
                            LeaseType::BestEffortSuspendable => vms << 88,
                            _ => vms << 68,
                        };
                        class + (u128::from(x.cost) << 12) + 1
                    })
                    .collect(),
                u128::from(reschedule) << 12,
            ),
            // MOV, and MOML's pieces.
            _ => (
                items.iter().map(|x| u128::from(x.cost)).collect(),
                u128::from(reschedule),
            ),
        };
        Objective {
            weight,
            delta,
            cap: None,
            cost: items.iter().map(|x| x.cost).collect(),
            reschedule,
            reschedules: items.iter().map(|x| x.reschedules).collect(),
        }
    }

    /// MOML's second phase: fewest leases, then cost, among sets costing at most `cap`.
    fn fewest_within(items: &[Item], reschedule: u64, cap: u64) -> Objective {
        Objective {
            weight: items
                .iter()
                .map(|x| (1u128 << 64) + u128::from(x.cost))
                .collect(),
            delta: u128::from(reschedule),
            cap: Some(cap),
            cost: items.iter().map(|x| x.cost).collect(),
            reschedule,
            reschedules: items.iter().map(|x| x.reschedules).collect(),
        }
    }

    fn value(&self, set: &[usize]) -> u128 {
        let sum: u128 = set.iter().map(|&i| self.weight[i]).sum();
        if set.iter().any(|&i| self.reschedules[i]) {
            sum + self.delta
        } else {
            sum
        }
    }

    fn within_cap(&self, set: &[usize]) -> bool {
        self.cap
            .is_none_or(|cap| set_cost(&self.cost, &self.reschedules, self.reschedule, set) <= cap)
    }
}

/// A set's weight and cost summed, and whether a lease of it reschedules: its value and
/// cost as [`Objective::value`] and [`set_cost`] give them, grown a lease at a time.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    weight: u128,
    cost: u64,
    reschedules: bool,
}

impl Sums {
    /// The sums with lease `i` added.
    fn with(self, obj: &Objective, i: usize) -> Sums {
        Sums {
            weight: self.weight + obj.weight[i],
            cost: self.cost + obj.cost[i],
            reschedules: self.reschedules || obj.reschedules[i],
        }
    }

    /// [`Objective::value`] of the set.
    fn value(&self, obj: &Objective) -> u128 {
        match self.reschedules {
            true => self.weight + obj.delta,
            false => self.weight,
        }
    }

    /// [`Objective::within_cap`] of the set.
    fn within_cap(&self, obj: &Objective) -> bool {
        let cost = match self.reschedules {
            true => self.cost + obj.reschedule,
            false => self.cost,
        };
        obj.cap.is_none_or(|cap| cost <= cap)
    }
}

/// The cost of a set in µs: its operations plus δ once if any reschedules.
fn set_cost(cost: &[u64], reschedules: &[bool], reschedule: u64, set: &[usize]) -> u64 {
    let sum: u64 = set.iter().map(|&i| cost[i]).sum();
    if set.iter().any(|&i| reschedules[i]) {
        sum + reschedule
    } else {
        sum
    }
}

/// Arrival-order tie-break key: the set's indices (= arrival ranks) from the newest down;
/// smaller is preferred.
fn newest_first(set: &[usize]) -> Vec<usize> {
    let mut v = set.to_vec();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v
}

/// Whether `(value, set)` beats `(best_value, best)`.
fn better(value: u128, set: &[usize], best: Option<&(u128, Vec<usize>)>) -> bool {
    match best {
        None => true,
        Some((bv, bs)) => value < *bv || (value == *bv && newest_first(set) < newest_first(bs)),
    }
}

// ---- score orders (paper 001) ----

/// The order in which a score policy takes leases, or `None` for an optimising policy.
fn score_order(policy: PreemptionPolicy, c: &Contention) -> Option<Vec<usize>> {
    let items = items_of(c, &vec![0; c.candidates.len()]);
    score_order_items(policy, &items)
}

fn score_order_items(policy: PreemptionPolicy, items: &[Item]) -> Option<Vec<usize>> {
    let alpha = match policy {
        PreemptionPolicy::Mwt => 0.0,
        PreemptionPolicy::MovScore => 1.0,
        PreemptionPolicy::Cp { alpha } => alpha,
        _ => return None,
    };
    let min_cost = items.iter().map(|x| x.cost).filter(|&h| h > 0).min();
    let max_wait = items.iter().map(|x| x.waiting).max().unwrap_or(0);
    let score_of = |x: &Item| {
        let v = match min_cost {
            Some(m) => m as f64 / x.cost.max(m) as f64,
            None => 1.0,
        };
        let w = if max_wait == 0 {
            1.0
        } else {
            1.0 - x.waiting as f64 / max_wait as f64
        };
        // α = 0 and α = 1 use one score only, so that their orders are exactly MWT's and
        // eq. 1's (no rounding of the other term can interfere).
        if alpha <= 0.0 {
            w
        } else if alpha >= 1.0 {
            v
        } else {
            alpha * v + (1.0 - alpha) * w
        }
    };
    let score: Vec<f64> = items.iter().map(score_of).collect();
    // Where the overhead counts (α > 0), a tie on the score goes to the cheaper lease: a
    // lease that costs nothing has v = 1 as the cheapest paid one has, plus an infinitesimal
    // edge — so at α = 1 the order is exactly eq. 1's (1 / 0 above every 1 / h), and a free
    // lease is never passed over for a paid one it ties with.
    let cheaper = |a: usize, b: usize| match alpha > 0.0 {
        true => items[a].cost.cmp(&items[b].cost),
        false => std::cmp::Ordering::Equal,
    };
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| {
        score[b]
            .total_cmp(&score[a])
            .then(cheaper(a, b))
            .then(items[b].arrival.cmp(&items[a].arrival))
            .then(b.cmp(&a))
    });
    Some(order)
}

/// Haizea's mapper: the shortest prefix of `order` that makes room, then every lease made
/// redundant dropped, least preemptable first.
fn take_in_order(c: &Contention, order: &[usize]) -> Vec<usize> {
    // Room only grows with the prefix: find the shortest that makes room by bisection.
    let (mut lo, mut hi) = (1usize, order.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if c.makes_room(&order[..mid]) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let prefix = &order[..lo];
    let mut t = RoomTracker::new(c);
    t.reset_to(prefix);
    let need = u64::from(c.need);
    // The last lease taken is needed (the prefix before it did not make room); any earlier
    // one may have become redundant.
    for &i in prefix[..prefix.len().saturating_sub(1)].iter().rev() {
        if t.room_if_toggled(i) >= need {
            t.set(i, false);
        }
    }
    let mut set: Vec<usize> = prefix.iter().copied().filter(|&i| t.contains(i)).collect();
    set.sort_unstable();
    set
}

fn take_in_order_additive(items: &[Item], order: &[usize], need: u64) -> Option<Vec<usize>> {
    let mut got = 0u64;
    let mut prefix = Vec::new();
    for &i in order {
        if got >= need {
            break;
        }
        got += items[i].gain;
        prefix.push(i);
    }
    if got < need {
        return None;
    }
    for k in (0..prefix.len().saturating_sub(1)).rev() {
        let g = items[prefix[k]].gain;
        if got - g >= need {
            got -= g;
            prefix.remove(k);
        }
    }
    prefix.sort_unstable();
    Some(prefix)
}

// ---- additive room: exact polynomial algorithms ----

/// Chooses a minimal set on additive room: `need` more local VMs, each item freeing its
/// `gain`; δ = `reschedule` µs. Public for the benchmarks.
pub fn choose_additive(
    policy: PreemptionPolicy,
    items: &[Item],
    need: u64,
    reschedule: u64,
    seed: u64,
) -> Option<Vec<usize>> {
    if need == 0 {
        return Some(Vec::new());
    }
    let total: u64 = items.iter().map(|x| x.gain).sum();
    if total < need || policy == PreemptionPolicy::Nop {
        return None;
    }
    if let Some(order) = score_order_items(policy, items) {
        return take_in_order_additive(items, &order, need);
    }
    match policy {
        PreemptionPolicy::Mlip if items.iter().all(|x| x.gain == u64::from(x.vms)) => {
            // Largest first is exact for the fewest leases and, with gains equal to VMs,
            // frees the most VMs among them; equal sizes go to the older lease.
            let mut order: Vec<usize> = (0..items.len()).collect();
            order.sort_by_key(|&i| (std::cmp::Reverse(items[i].gain), i));
            take_in_order_additive(items, &order, need)
        }
        PreemptionPolicy::Moml => moml_additive(items, need, reschedule, seed),
        _ => {
            let obj = Objective::of(policy, items, reschedule);
            best_cover(items, need, &obj).map(|(set, _)| set)
        }
    }
}

/// A weight the cover DP can add and compare: `u64` when the objective fits, else `u128`.
trait Weight: Copy + Ord + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> {
    const NONE: Self;
    const ZERO: Self;
    fn from_u128(x: u128) -> Self;
}

impl Weight for u64 {
    const NONE: u64 = u64::MAX;
    const ZERO: u64 = 0;
    fn from_u128(x: u128) -> u64 {
        u64::try_from(x).unwrap_or(u64::MAX)
    }
}

impl Weight for u128 {
    const NONE: u128 = u128::MAX;
    const ZERO: u128 = 0;
    fn from_u128(x: u128) -> u128 {
        x
    }
}

/// Min-weight covers by dynamic programming over (leases in arrival order, room still to
/// cover, optionally the number of leases): `best[i][j][r]` is the least weight of `j` of the
/// first `i` leases that free at least `r`. One table per lease taken into account is kept
/// for the reconstruction, which walks back from the newest lease and leaves a lease out
/// whenever an equally good cover exists without it — so among equally good covers it
/// returns the arrival-order favourite (and, weights being non-negative, a minimal one).
struct CoverDp<W> {
    width: usize,
    layers: usize,
    /// The leases taken into account, in arrival order, and the table after each.
    used: Vec<usize>,
    tables: Vec<Vec<W>>,
}

impl<W: Weight> CoverDp<W> {
    fn run(
        items: &[Item],
        weight: &[W],
        allowed: &dyn Fn(usize) -> bool,
        need: u64,
        layers: usize,
    ) -> CoverDp<W> {
        let width = need as usize + 1;
        let mut best = vec![W::NONE; layers * width];
        // Covering nothing costs nothing, with zero leases.
        best[0] = W::ZERO;
        let mut tables = vec![best.clone()];
        let mut used = Vec::new();
        // With a count, r = 0 matters too (a lease may be one of the `j` without being needed
        // for room); without one, covering nothing needs no lease.
        let lowest = usize::from(layers == 1);
        for (i, x) in items.iter().enumerate() {
            if !allowed(i) || x.gain == 0 {
                continue;
            }
            let g = x.gain.min(need) as usize;
            let w = weight[i];
            // In place, from the top layer and requirement down, so each lease is used at
            // most once: best[j+1][r] ← best[j][r − g] + w.
            for j in (0..layers).rev() {
                let (from_j, to_j) = if layers == 1 {
                    (0, 0)
                } else if j + 1 < layers {
                    (j, j + 1)
                } else {
                    continue;
                };
                for r in (lowest..width).rev() {
                    let base = best[from_j * width + r.saturating_sub(g)];
                    if base == W::NONE {
                        continue;
                    }
                    let new = base + w;
                    let to = &mut best[to_j * width + r];
                    if new < *to {
                        *to = new;
                    }
                }
            }
            used.push(i);
            tables.push(best.clone());
        }
        CoverDp {
            width,
            layers,
            used,
            tables,
        }
    }

    /// The best cover value with `count` leases (or any number when the DP has no count).
    fn value(&self, count: usize) -> Option<W> {
        let v = self.tables.last()?[count * self.width + self.width - 1];
        (v != W::NONE).then_some(v)
    }

    fn reconstruct(&self, items: &[Item], weight: &[W], count: usize) -> Option<Vec<usize>> {
        let (mut j, mut r) = (count, self.width - 1);
        let mut target = self.value(count)?;
        let mut set = Vec::new();
        for k in (0..self.used.len()).rev() {
            if r == 0 && (self.layers == 1 || j == 0) {
                break;
            }
            if self.tables[k][j * self.width + r] == target {
                continue;
            }
            let i = self.used[k];
            set.push(i);
            target = target - weight[i];
            r = r.saturating_sub(items[i].gain.min((self.width - 1) as u64) as usize);
            if self.layers > 1 {
                j = j.checked_sub(1)?;
            }
        }
        set.reverse();
        Some(set)
    }
}

/// The best covers under `obj` with each number of leases up to `max_count` (or, with
/// `max_count` `None`, the best cover of any size at index 0). δ is handled by solving
/// without the rescheduling leases and with all of them, then comparing.
fn best_covers(
    items: &[Item],
    need: u64,
    obj: &Objective,
    max_count: Option<usize>,
) -> Vec<Option<(Vec<usize>, u128)>> {
    let sum: u128 = obj.weight.iter().sum::<u128>() + obj.delta;
    if sum < u128::from(u64::MAX) {
        let w: Vec<u64> = obj.weight.iter().map(|&x| u64::from_u128(x)).collect();
        best_covers_in(items, need, obj, &w, max_count)
    } else {
        best_covers_in(items, need, obj, &obj.weight, max_count)
    }
}

fn best_covers_in<W: Weight>(
    items: &[Item],
    need: u64,
    obj: &Objective,
    weight: &[W],
    max_count: Option<usize>,
) -> Vec<Option<(Vec<usize>, u128)>> {
    let layers = max_count.map_or(1, |n| n + 1);
    let counts: Vec<usize> = match max_count {
        Some(n) => (0..=n).collect(),
        None => vec![0],
    };
    let mut best: Vec<Option<(u128, Vec<usize>)>> = vec![None; counts.len()];
    let useful = |i: usize, resched: bool| items[i].gain > 0 && obj.reschedules[i] == resched;
    let has_plain = (0..items.len()).any(|i| useful(i, false));
    let has_resched = (0..items.len()).any(|i| useful(i, true));
    // Pass 1: without rescheduling leases (no δ); pass 2: with all leases.
    let mut passes = Vec::new();
    if has_plain && has_resched && obj.delta > 0 {
        passes.push(false);
    }
    passes.push(true);
    for with_resched in passes {
        let allowed = |i: usize| with_resched || !obj.reschedules[i];
        let dp = CoverDp::run(items, weight, &allowed, need, layers);
        for (slot, &n) in counts.iter().enumerate() {
            if dp.value(n).is_none() {
                continue;
            }
            let Some(set) = dp.reconstruct(items, weight, n) else {
                continue;
            };
            let v = obj.value(&set);
            if better(v, &set, best[slot].as_ref()) {
                best[slot] = Some((v, set));
            }
        }
    }
    best.into_iter().map(|b| b.map(|(v, s)| (s, v))).collect()
}

/// The best cover under `obj`.
fn best_cover(items: &[Item], need: u64, obj: &Objective) -> Option<(Vec<usize>, u128)> {
    best_covers(items, need, obj, None).pop().flatten()
}

fn median_of(mut costs: Vec<u64>) -> Option<f64> {
    if costs.is_empty() {
        return None;
    }
    costs.sort_unstable();
    let n = costs.len();
    Some(if n % 2 == 1 {
        costs[n / 2] as f64
    } else {
        (costs[n / 2 - 1] as f64 + costs[n / 2] as f64) / 2.0
    })
}

/// The median cost of the minimal covers on additive room: every one when few leases are in
/// play, sampled otherwise.
pub(crate) fn median_cover_cost(
    items: &[Item],
    need: u64,
    reschedule: u64,
    seed: u64,
) -> Option<f64> {
    let useful: Vec<usize> = (0..items.len()).filter(|&i| items[i].gain > 0).collect();
    let cost: Vec<u64> = items.iter().map(|x| x.cost).collect();
    let resched: Vec<bool> = items.iter().map(|x| x.reschedules).collect();
    if useful.len() <= EXACT_MEDIAN_LIMIT {
        let mut costs = Vec::new();
        for mask in 1u32..(1u32 << useful.len()) {
            let (mut sum, mut smallest, mut c, mut r) = (0u64, u64::MAX, 0u64, false);
            for (b, &i) in useful.iter().enumerate() {
                if mask & (1 << b) != 0 {
                    sum += items[i].gain;
                    smallest = smallest.min(items[i].gain);
                    c += cost[i];
                    r |= resched[i];
                }
            }
            // Minimal: covers, and dropping its smallest lease would not.
            if sum >= need && sum - smallest < need {
                costs.push(if r { c + reschedule } else { c });
            }
        }
        return median_of(costs);
    }
    sample_cover_costs(items, need, reschedule, seed).and_then(median_of)
}

/// The costs of [`MEDIAN_SAMPLES`] random minimal covers: leases in a random order until the
/// need is covered, then redundant ones dropped in a random order.
fn sample_cover_costs(items: &[Item], need: u64, reschedule: u64, seed: u64) -> Option<Vec<u64>> {
    let cost: Vec<u64> = items.iter().map(|x| x.cost).collect();
    let resched: Vec<bool> = items.iter().map(|x| x.reschedules).collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..items.len()).filter(|&i| items[i].gain > 0).collect();
    let mut costs = Vec::with_capacity(MEDIAN_SAMPLES);
    let mut set: Vec<usize> = Vec::new();
    for _ in 0..MEDIAN_SAMPLES {
        order.shuffle(&mut rng);
        let mut got = 0u64;
        set.clear();
        for &i in &order {
            if got >= need {
                break;
            }
            got += items[i].gain;
            set.push(i);
        }
        if got < need {
            return None;
        }
        set.shuffle(&mut rng);
        set.retain(|&i| {
            let g = items[i].gain;
            if got - g >= need {
                got -= g;
                false
            } else {
                true
            }
        });
        costs.push(set_cost(&cost, &resched, reschedule, &set));
    }
    Some(costs)
}

fn moml_additive(items: &[Item], need: u64, reschedule: u64, seed: u64) -> Option<Vec<usize>> {
    let alpha = median_cover_cost(items, need, reschedule, seed)?;
    let mov = Objective::of(PreemptionPolicy::Mov, items, reschedule);
    let (mov_set, _) = best_cover(items, need, &mov)?;
    // The cheapest cover costs at most the median, so the answer has at most as many leases
    // as MOV's: the cheapest cover of each size up to that, and the first within α is
    // MOML's set (it is minimal: dropping a redundant lease would give a smaller size
    // within α). The count-layered tables grow as leases × sizes × VMs: beyond
    // `LAYERED_DP_LIMIT` entries, MOV's set — within α by construction — is used instead.
    let entries = items.len() * (mov_set.len() + 1) * (need as usize + 1);
    if entries > LAYERED_DP_LIMIT {
        return Some(mov_set);
    }
    let by_count = best_covers(items, need, &mov, Some(mov_set.len()));
    by_count
        .into_iter()
        .flatten()
        .find(|(set, _)| set_cost(&mov.cost, &mov.reschedules, reschedule, set) as f64 <= alpha)
        .map(|(set, _)| set)
        .or(Some(mov_set))
}

// ---- non-additive room: greedy and branch and bound ----

/// A greedy minimal set under `obj`: repeatedly removes the lease, or all remaining leases of
/// one host, with the least weight per VM of room gained, then drops redundant leases,
/// heaviest first.
fn greedy(c: &Contention, obj: &Objective) -> Option<Vec<usize>> {
    let need = u64::from(c.need);
    let mut t = RoomTracker::new(c);
    let mut chosen: Vec<usize> = Vec::new();
    // The chosen set's weight, cost and whether it reschedules, kept as it grows: a move's
    // value and cost come from them without building the trial set.
    let mut chosen_sum = Sums::default();
    let bundles = t.bundles();
    let n = c.candidates.len();
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    while t.room() < need {
        let before = t.room();
        let chosen_value = chosen_sum.value(obj);
        let mut best: Option<(f64, Vec<usize>)> = None;
        // Whether `moves` (within the cap) beat the best so far with `gain` more room.
        let mut offer = |gain: u64, moves: &[usize], trial: Sums| {
            if gain == 0 {
                return;
            }
            let w = (trial.value(obj) - chosen_value) as f64 / gain as f64;
            if best
                .as_ref()
                .is_none_or(|b| (w, moves.len()) < (b.0, b.1.len()))
            {
                best = Some((w, moves.to_vec()));
            }
        };
        for i in 0..n {
            if t.contains(i) {
                continue;
            }
            let trial = chosen_sum.with(obj, i);
            if trial.within_cap(obj) {
                let gain = t.room_if_toggled(i).saturating_sub(before);
                offer(gain, &[i], trial);
            }
        }
        // Hosts holding the same leases offer the same move: each is weighed once.
        seen.clear();
        for b in &bundles {
            let moves: Vec<usize> = b.iter().copied().filter(|&i| !t.contains(i)).collect();
            if moves.len() <= 1 {
                continue;
            }
            let mut key = moves.clone();
            key.sort_unstable();
            if !seen.insert(key) {
                continue;
            }
            let trial = moves.iter().fold(chosen_sum, |s, &i| s.with(obj, i));
            if !trial.within_cap(obj) {
                continue;
            }
            for &i in &moves {
                t.set(i, true);
            }
            let gain = t.room().saturating_sub(before);
            for &i in &moves {
                t.set(i, false);
            }
            offer(gain, &moves, trial);
        }
        let (_, moves) = best?;
        for i in moves {
            t.set(i, true);
            chosen.push(i);
            chosen_sum = chosen_sum.with(obj, i);
        }
    }
    without_redundant(t, &chosen, obj, need)
}

/// The greedy's last step: drops from the tracked set the leases of `chosen` that later
/// choices made redundant, heaviest first; the set, ascending, if it is within the cap.
fn without_redundant(
    mut t: RoomTracker<'_>,
    chosen: &[usize],
    obj: &Objective,
    need: u64,
) -> Option<Vec<usize>> {
    let mut by_weight = chosen.to_vec();
    by_weight.sort_by(|&a, &b| obj.weight[b].cmp(&obj.weight[a]).then(b.cmp(&a)));
    for i in by_weight {
        if t.room_if_toggled(i) >= need {
            t.set(i, false);
        }
    }
    let set: Vec<usize> = (0..obj.weight.len()).filter(|&i| t.contains(i)).collect();
    obj.within_cap(&set).then_some(set)
}

/// Branch and bound over the leases in play, newest first, leaving a lease out before taking
/// it — so among equally good sets the first found is the arrival-order favourite. Prunes a
/// branch when even every undecided lease could not make room, or when the fewest undecided
/// leases that could (by their gain bounds) would already weigh more than the best set.
/// Returns the best set and whether the search finished within `budget` steps.
fn search(
    c: &Contention,
    obj: &Objective,
    budget: usize,
    seed_set: Option<Vec<usize>>,
) -> Option<(Vec<usize>, bool)> {
    let need = u64::from(c.need);
    let mut chosen = RoomTracker::new(c);
    let mut possible = RoomTracker::new(c);
    let bounds = chosen.gain_bounds();
    let order: Vec<usize> = (0..c.candidates.len())
        .rev()
        .filter(|&i| bounds[i] > 0)
        .collect();
    for &i in &order {
        possible.set(i, true);
    }
    if possible.room() < need {
        return None;
    }
    let suffix = SuffixBounds::new(&order, &bounds, &obj.weight, need);
    // Shares are kept in units of 1/`scale` of weight (so a light lease over many hosts
    // still has a share), with `scale` small enough that every sum of them fits.
    let total = obj.weight.iter().fold(0u128, |a, &w| a.saturating_add(w));
    let scale = 1u128 << total.leading_zeros().min(16);
    let shares = (0..c.candidates.len())
        .map(|i| {
            let (w, span) = (obj.weight[i], chosen.host_span(i).max(1) as u128);
            w / span * scale + w % span * scale / span
        })
        .collect();
    // The hosts the undecided leases hold, for each search depth: those of `order[pos..]`
    // are the first `touched_by[pos]` of `touched`.
    let (mut touched, mut touched_by) = (Vec::new(), vec![0; order.len() + 1]);
    let mut seen = vec![false; chosen.host_count()];
    for pos in (0..order.len()).rev() {
        for &(h, _) in c.spans(order[pos]) {
            if !std::mem::replace(&mut seen[h], true) {
                touched.push(h);
            }
        }
        touched_by[pos] = touched.len();
    }
    let mut s = Search {
        obj,
        need,
        order,
        suffix,
        shares,
        scale,
        touched,
        touched_by,
        hosts: Vec::new(),
        gains: Vec::new(),
        host_work: 0,
        best: None,
        best_from_search: false,
        steps: 0,
        budget,
        set: Vec::new(),
    };
    let seed = seed_set.or_else(|| greedy(c, obj));
    if let Some(set) = seed {
        if obj.within_cap(&set) {
            s.best = Some((obj.value(&set), set));
        }
    }
    s.dfs(0, &mut chosen, &mut possible);
    let exact = s.steps <= s.budget;
    s.best.map(|(_, mut set)| {
        set.sort_unstable();
        (set, exact)
    })
}

struct Search<'o> {
    obj: &'o Objective,
    need: u64,
    order: Vec<usize>,
    /// The lower bound's sorted gains and weights for each suffix of `order`.
    suffix: SuffixBounds,
    /// Each lease's weight split evenly over the hosts it holds, in units of 1/`scale`
    /// (rounded down).
    shares: Vec<u128>,
    scale: u128,
    /// The hosts held by the leases of `order[pos..]`: the first `touched_by[pos]`.
    touched: Vec<usize>,
    touched_by: Vec<usize>,
    /// Scratch for [`Search::host_bound`].
    hosts: Vec<HostCost>,
    gains: Vec<u64>,
    /// Hosts [`Search::host_bound`] has looked at so far.
    host_work: usize,
    best: Option<(u128, Vec<usize>)>,
    /// Whether `best` was found by the search (then equal values found later lose).
    best_from_search: bool,
    steps: usize,
    budget: usize,
    set: Vec<usize>,
}

impl Search<'_> {
    fn dfs(&mut self, pos: usize, chosen: &mut RoomTracker<'_>, possible: &mut RoomTracker<'_>) {
        self.steps += 1;
        if self.steps > self.budget {
            return;
        }
        let value = self.obj.value(&self.set);
        if chosen.room() >= self.need {
            if self.obj.within_cap(&self.set) && better(value, &self.set, self.best.as_ref()) {
                self.best = Some((value, self.set.clone()));
                self.best_from_search = true;
            }
            return;
        }
        if pos == self.order.len() || possible.room() < self.need {
            return;
        }
        if let Some(cap) = self.obj.cap {
            if set_cost(
                &self.obj.cost,
                &self.obj.reschedules,
                self.obj.reschedule,
                &self.set,
            ) > cap
            {
                return;
            }
        }
        if let Some(bv) = self.best.as_ref().map(|(v, _)| *v) {
            let from_search = self.best_from_search;
            let prunes = |lower: u128| lower > bv || (lower == bv && from_search);
            if prunes(value + self.lower_bound(pos, chosen.room())) {
                return;
            }
            let missing = self.need - chosen.room();
            if self.host_work <= HOST_BOUND_WORK.saturating_mul(self.budget)
                && prunes(value.saturating_add(self.host_bound(pos, missing, chosen, possible)))
            {
                return;
            }
        }
        let i = self.order[pos];
        // Leave it out first.
        possible.set(i, false);
        self.dfs(pos + 1, chosen, possible);
        possible.set(i, true);
        // Then take it.
        chosen.set(i, true);
        self.set.push(i);
        self.dfs(pos + 1, chosen, possible);
        self.set.pop();
        chosen.set(i, false);
    }

    /// The least weight the undecided leases must add, counted by host. A host gains at most
    /// its room with every undecided lease gone, and gaining any room takes one undecided
    /// lease on it — every one on an all-or-nothing host. So a completion frees at least the
    /// fewest hosts whose gains reach `missing`, say k, and weighs at least (1) the k least
    /// host costs counted in shares (a lease's weight split evenly over the hosts it holds,
    /// so its shares sum to at most its weight), and (2) the k-th least host cost counted in
    /// whole weights (one of any k hosts costs that much).
    fn host_bound(
        &mut self,
        pos: usize,
        missing: u64,
        chosen: &RoomTracker<'_>,
        possible: &RoomTracker<'_>,
    ) -> u128 {
        self.hosts.clear();
        self.host_work += self.touched_by[pos];
        // Only hosts of undecided leases can gain.
        for &h in &self.touched[..self.touched_by[pos]] {
            let gain = possible.room_on(h).saturating_sub(chosen.room_on(h));
            if gain == 0 {
                continue;
            }
            let undecided = chosen
                .members_on(h)
                .iter()
                .filter(|&&i| possible.contains(i) && !chosen.contains(i))
                .map(|&i| (self.shares[i], self.obj.weight[i]));
            let cost = match chosen.all_or_nothing_on(h) {
                // Saturating sums stay lower bounds.
                true => undecided.fold((0u128, 0u128), |a, x| {
                    (a.0.saturating_add(x.0), a.1.saturating_add(x.1))
                }),
                false => {
                    undecided.fold((u128::MAX, u128::MAX), |a, x| (a.0.min(x.0), a.1.min(x.1)))
                }
            };
            self.hosts.push(HostCost {
                gain,
                shares: cost.0,
                whole: cost.1,
            });
        }
        // The fewest hosts that could gain enough: largest gains first (only how many
        // matters, so the gains alone are sorted).
        self.gains.clear();
        self.gains.extend(self.hosts.iter().map(|h| h.gain));
        self.gains.sort_unstable_by_key(|&g| std::cmp::Reverse(g));
        let mut fewest = 0;
        let mut gained = 0u64;
        while gained < missing && fewest < self.gains.len() {
            gained += self.gains[fewest];
            fewest += 1;
        }
        if gained < missing {
            return u128::MAX;
        }
        if fewest == 0 {
            return 0;
        }
        // The `fewest` least shares, in any order (their sum does not depend on it).
        self.hosts
            .select_nth_unstable_by_key(fewest - 1, |h| h.shares);
        let scaled = self.hosts[..fewest]
            .iter()
            .fold(0u128, |a, h| a.saturating_add(h.shares));
        let (_, kth, _) = self
            .hosts
            .select_nth_unstable_by_key(fewest - 1, |h| h.whole);
        // Weights are whole: a completion weighs at least the shares rounded up.
        scaled.div_ceil(self.scale).max(kth.whole)
    }

    /// The least weight the undecided leases must add: as many of them as their gain bounds
    /// say are needed at the least, each at least as heavy as the lightest.
    fn lower_bound(&self, pos: usize, room: u64) -> u128 {
        self.suffix.lower_bound(pos, self.need.saturating_sub(room))
    }
}

/// What freeing room on a host costs at the least, for [`Search::host_bound`].
struct HostCost {
    /// The most room the undecided leases could free on it.
    gain: u64,
    /// The least cost in shares (units of 1/`scale` weight) and in whole weights.
    shares: u128,
    whole: u128,
}

/// For each suffix `order[pos..]` of the search order, what [`Search::lower_bound`] needs,
/// computed once (the bound is taken at every step, and sorting the suffix each time was a
/// sixth of an overloaded run): the prefix sums of its gain bounds, largest first, up to the
/// first reaching `need`; of its weights, lightest first, as many; and its total weight.
struct SuffixBounds {
    gains: Vec<Vec<u64>>,
    light: Vec<Vec<u128>>,
    total: Vec<u128>,
}

impl SuffixBounds {
    fn new(order: &[usize], bounds: &[u64], weight: &[u128], need: u64) -> SuffixBounds {
        let n = order.len();
        let (mut gains, mut light, mut total) = (
            vec![Vec::new(); n + 1],
            vec![Vec::new(); n + 1],
            vec![0u128; n + 1],
        );
        // The suffix's gains (descending) and weights (ascending), grown from the back.
        let (mut by_gain, mut by_weight): (Vec<u64>, Vec<u128>) = (Vec::new(), Vec::new());
        for pos in (0..n).rev() {
            let (g, w) = (bounds[order[pos]], weight[order[pos]]);
            by_gain.insert(by_gain.partition_point(|&x| x > g), g);
            by_weight.insert(by_weight.partition_point(|&x| x < w), w);
            total[pos] = total[pos + 1] + w;
            let mut sum = 0u64;
            for &x in &by_gain {
                sum += x;
                gains[pos].push(sum);
                if sum >= need {
                    break;
                }
            }
            let mut acc = 0u128;
            light[pos] = by_weight[..gains[pos].len()]
                .iter()
                .map(|&x| {
                    acc += x;
                    acc
                })
                .collect();
        }
        SuffixBounds {
            gains,
            light,
            total,
        }
    }

    /// The least weight that covers `missing` more room from `order[pos..]`: the fewest of
    /// its leases whose gain bounds reach it (all of them if none do), at the lightest.
    fn lower_bound(&self, pos: usize, missing: u64) -> u128 {
        if missing == 0 {
            return 0;
        }
        match self.gains[pos].iter().position(|&g| g >= missing) {
            Some(k) => self.light[pos][k],
            None => self.total[pos],
        }
    }
}

/// MOML when room is not additive: the median over the minimal sets (enumerated when few
/// leases are in play, sampled otherwise), then the fewest leases within it.
fn moml_general(c: &Contention, seed: u64, budget: usize) -> Option<Choice> {
    let items = items_of(c, &vec![0; c.candidates.len()]);
    let cost: Vec<u64> = items.iter().map(|x| x.cost).collect();
    let resched: Vec<bool> = items.iter().map(|x| x.reschedules).collect();
    let delta = c.reschedule.as_micros();
    let of = |set: &[usize]| set_cost(&cost, &resched, delta, set);
    if let Some(minimal) = minimal_sets(c) {
        let alpha = median_of(minimal.iter().map(|s| of(s)).collect())?;
        let best = minimal
            .iter()
            .filter(|s| of(s) as f64 <= alpha)
            .min_by(|a, b| {
                a.len()
                    .cmp(&b.len())
                    .then(of(a).cmp(&of(b)))
                    .then(newest_first(a).cmp(&newest_first(b)))
            })?;
        let mut set = best.clone();
        set.sort_unstable();
        return Some(Choice { set, exact: true });
    }
    let alpha = sampled_median(c, seed, &of)?;
    let obj = Objective::fewest_within(&items, delta, alpha.floor() as u64);
    let mov = Objective::of(PreemptionPolicy::Mov, &items, delta);
    let seed_set = search(c, &mov, budget, None).map(|(s, _)| s);
    let (set, exact) = search(c, &obj, budget, seed_set.filter(|s| of(s) as f64 <= alpha))?;
    Some(Choice { set, exact })
}

/// Every minimal candidate set, if there are few enough leases in play to enumerate them.
fn minimal_sets(c: &Contention) -> Option<Vec<Vec<usize>>> {
    let mut chosen = RoomTracker::new(c);
    let bounds = chosen.gain_bounds();
    let useful: Vec<usize> = (0..c.candidates.len()).filter(|&i| bounds[i] > 0).collect();
    if useful.len() > EXACT_MEDIAN_LIMIT {
        return None;
    }
    let mut possible = RoomTracker::new(c);
    for &i in &useful {
        possible.set(i, true);
    }
    let need = u64::from(c.need);
    let mut out = Vec::new();
    let mut steps = 0usize;
    let mut set = Vec::new();
    #[allow(clippy::too_many_arguments)]
    fn walk(
        pos: usize,
        useful: &[usize],
        need: u64,
        chosen: &mut RoomTracker<'_>,
        possible: &mut RoomTracker<'_>,
        set: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
        steps: &mut usize,
    ) -> bool {
        *steps += 1;
        if *steps > ENUMERATION_BUDGET {
            return false;
        }
        if chosen.room() >= need {
            // Any larger set is not minimal; this one is if no lease of it can go.
            let minimal = set.iter().all(|&i| chosen.room_if_toggled(i) < need);
            if minimal {
                out.push(set.clone());
            }
            return true;
        }
        if pos == useful.len() || possible.room() < need {
            return true;
        }
        let i = useful[pos];
        possible.set(i, false);
        let ok = walk(pos + 1, useful, need, chosen, possible, set, out, steps);
        possible.set(i, true);
        if !ok {
            return false;
        }
        chosen.set(i, true);
        set.push(i);
        let ok = walk(pos + 1, useful, need, chosen, possible, set, out, steps);
        set.pop();
        chosen.set(i, false);
        ok
    }
    walk(
        0,
        &useful,
        need,
        &mut chosen,
        &mut possible,
        &mut set,
        &mut out,
        &mut steps,
    )
    .then_some(out)
}

/// The median cost of [`MEDIAN_SAMPLES`] random minimal sets: leases in a random order until
/// there is room, then redundant ones dropped in a random order.
fn sampled_median(c: &Contention, seed: u64, of: &dyn Fn(&[usize]) -> u64) -> Option<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..c.candidates.len()).collect();
    let need = u64::from(c.need);
    let mut t = RoomTracker::new(c);
    let mut costs = Vec::with_capacity(MEDIAN_SAMPLES);
    for _ in 0..MEDIAN_SAMPLES {
        order.shuffle(&mut rng);
        t.reset_to(&[]);
        let mut set = Vec::new();
        for &i in &order {
            if t.room() >= need {
                break;
            }
            t.set(i, true);
            set.push(i);
        }
        if t.room() < need {
            return None;
        }
        set.shuffle(&mut rng);
        for &i in &set {
            if t.room_if_toggled(i) >= need {
                t.set(i, false);
            }
        }
        let kept: Vec<usize> = set.into_iter().filter(|&i| t.contains(i)).collect();
        costs.push(of(&kept));
    }
    median_of(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_minimal_additive(items: &[Item], set: &[usize], need: u64) -> bool {
        let sum: u64 = set.iter().map(|&i| items[i].gain).sum();
        let smallest = set.iter().map(|&i| items[i].gain).min().unwrap_or(0);
        sum >= need && sum - smallest < need
    }

    use crate::lrms::availability::VmShape;
    use crate::lrms::contention::Candidate;
    use crate::lrms::overhead::Operation;
    use crate::model::RequestId;
    use crate::time::{EmuDuration, EmuTime};
    use proptest::prelude::*;

    /// The leases of paper 003 Table II at t = 720 s on the Gluster testbed (cost = suspend +
    /// resume of their memory at 40 MB/s plus 2·v·5 ms), in arrival order, as additive items.
    fn table_ii() -> Vec<Item> {
        let leases = [
            (3, 256, 0),
            (1, 128, 300),
            (2, 128, 360),
            (1, 256, 480),
            (2, 64, 530),
            (3, 128, 580),
        ];
        leases
            .iter()
            .map(|&(vms, mem, arrival)| Item {
                gain: u64::from(vms),
                vms,
                preempted_vms: vms,
                lease_type: LeaseType::BestEffortSuspendable,
                cost: EmuDuration::from_secs_f64(
                    2.0 * f64::from(vms * mem) / 40.0 + 2.0 * f64::from(vms) * 0.005,
                )
                .as_micros(),
                reschedules: true,
                waiting: 0,
                arrival: arrival * 1_000_000,
            })
            .collect()
    }

    const DELTA: u64 = 2_300_000;

    fn ids(set: &[usize]) -> Vec<usize> {
        set.iter().map(|&i| i + 1).collect()
    }

    #[test]
    fn table_iii_sets_for_a_five_vm_local_request() {
        let c = table_ii();
        let pick = |p| ids(&choose_additive(p, &c, 5, DELTA, 1).expect("a set"));
        assert_eq!(pick(PreemptionPolicy::Mlip), vec![1, 6]);
        assert_eq!(pick(PreemptionPolicy::Mov), vec![2, 3, 5]);
        assert_eq!(pick(PreemptionPolicy::Moml), vec![5, 6]);
        assert_eq!(
            choose_additive(PreemptionPolicy::Nop, &c, 5, DELTA, 1),
            None
        );
    }

    #[test]
    fn table_ii_has_nine_minimal_covers_with_median_of_768_mb() {
        let c = table_ii();
        let median = median_cover_cost(&c, 5, DELTA, 1).unwrap();
        // 768 MB written and read back at 40 MB/s, plus 2·5·5 ms of pauses ({6, 2, 4}), + δ.
        let expected = 2.0 * 768.0 / 40.0 + 2.0 * 5.0 * 0.005 + 2.3;
        assert!((median / 1e6 - expected).abs() < 1e-6, "{median}");
    }

    #[test]
    fn score_orders_follow_paper_001() {
        let mut c = table_ii();
        for (i, w) in [100u64, 5, 5, 50, 70, 1].iter().enumerate() {
            c[i].waiting = w * 1_000_000;
        }
        // MWT: 6 (1 s), then 2 and 3 (5 s each; 3 is younger): {6, 3} frees 5.
        assert_eq!(
            ids(&choose_additive(PreemptionPolicy::Mwt, &c, 5, DELTA, 1).unwrap()),
            vec![3, 6]
        );
        // CP at α = 0 is MWT, at α = 1 paper 001's MOV (eq. 1: cheapest first).
        assert_eq!(
            choose_additive(PreemptionPolicy::Cp { alpha: 0.0 }, &c, 5, DELTA, 1),
            choose_additive(PreemptionPolicy::Mwt, &c, 5, DELTA, 1)
        );
        assert_eq!(
            choose_additive(PreemptionPolicy::Cp { alpha: 1.0 }, &c, 5, DELTA, 1),
            choose_additive(PreemptionPolicy::MovScore, &c, 5, DELTA, 1)
        );
        // Eq. 1's order, cheapest first: 2 (128 MB, one VM: 10 ms of pauses), 5 (128 MB, two
        // VMs), 4, 3, ...; 2 + 5 + 4 + 3 covers 5 VMs and 4 is then redundant: {2, 3, 5}.
        assert_eq!(
            ids(&choose_additive(PreemptionPolicy::MovScore, &c, 5, DELTA, 1).unwrap()),
            vec![2, 3, 5]
        );
    }

    #[test]
    fn cp_weighs_normalised_scores_and_differs_from_both_ends() {
        // One VM needed; A is young and dear, B cheap but long waiting, C in between.
        let mk = |cost_s: u64, waiting_s: u64, arrival| Item {
            gain: 1,
            vms: 1,
            preempted_vms: 1,
            lease_type: LeaseType::BestEffortSuspendable,
            cost: cost_s * 1_000_000,
            reschedules: true,
            waiting: waiting_s * 1_000_000,
            arrival,
        };
        let items = vec![mk(10, 0, 3), mk(5, 1000, 1), mk(6, 100, 2)];
        let pick = |p| choose_additive(p, &items, 1, DELTA, 1).unwrap();
        assert_eq!(pick(PreemptionPolicy::Mwt), vec![0]);
        assert_eq!(pick(PreemptionPolicy::MovScore), vec![1]);
        // v = 0.5, 1, 0.83; w = 1, 0, 0.9: 0.31·v + 0.69·w = 0.845, 0.31, 0.879.
        assert_eq!(pick(PreemptionPolicy::Cp { alpha: 0.31 }), vec![2]);
    }

    #[test]
    fn a_lease_that_costs_nothing_is_ranked_before_the_cheapest_paid_one() {
        // Issue 40: an older cancellable lease stopped for nothing, and a younger suspendable
        // one whose suspension costs 8.7 s; equal waiting; either alone frees the one VM
        // needed. The free one used to tie with the paid one (v = 1 both) and lose to the
        // younger; "least overhead first" takes it.
        let mk = |cost, waiting, arrival, t| Item {
            gain: 1,
            vms: 1,
            preempted_vms: 1,
            lease_type: t,
            cost,
            reschedules: t != LeaseType::BestEffortCancellable,
            waiting,
            arrival,
        };
        let items = vec![
            mk(0, 60_000_000, 1, LeaseType::BestEffortCancellable),
            mk(8_700_000, 60_000_000, 2, LeaseType::BestEffortSuspendable),
        ];
        let pick = |p| choose_additive(p, &items, 1, DELTA, 1).unwrap();
        assert_eq!(pick(PreemptionPolicy::MovScore), vec![0]);
        assert_eq!(pick(PreemptionPolicy::Cp { alpha: 0.31 }), vec![0]);
        assert_eq!(pick(PreemptionPolicy::Cp { alpha: 1.0 }), vec![0]);
        // MWT disregards overheads: the tie goes to the younger lease, as before.
        assert_eq!(pick(PreemptionPolicy::Mwt), vec![1]);
        assert_eq!(pick(PreemptionPolicy::Cp { alpha: 0.0 }), vec![1]);
        // A free lease that waited much longer still loses under CP: the edge is a tie-break.
        let items = vec![
            mk(0, 600_000_000, 1, LeaseType::BestEffortCancellable),
            mk(8_700_000, 0, 2, LeaseType::BestEffortSuspendable),
        ];
        let pick = |p| choose_additive(p, &items, 1, DELTA, 1).unwrap();
        assert_eq!(pick(PreemptionPolicy::Cp { alpha: 0.31 }), vec![1]);
        assert_eq!(pick(PreemptionPolicy::MovScore), vec![0]);
    }

    /// Eq. 1's order written from the formula: score 1 / h as an extended real (1 / 0 = ∞),
    /// highest first, ties to the younger lease.
    fn eq_1_order(items: &[Item]) -> Vec<usize> {
        let score = |x: &Item| match x.cost {
            0 => f64::INFINITY,
            h => 1.0 / h as f64,
        };
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| {
            score(&items[b])
                .total_cmp(&score(&items[a]))
                .then(items[b].arrival.cmp(&items[a].arrival))
                .then(b.cmp(&a))
        });
        order
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..ProptestConfig::default() })]

        /// With free leases among paid ones (and equal costs), α = 1 and `mov-score` take eq.
        /// 1's order exactly, α = 0 MWT's, and at any α a free lease comes before every paid
        /// lease it ties with on waiting.
        #[test]
        fn score_orders_rank_free_leases_first_and_keep_their_ends(
            leases in prop::collection::vec((prop::sample::select(vec![0u64, 0, 5, 5, 8_700_000, 30_000_000]), 0u64..4, 0u64..6), 1..9),
            alpha in 0.0f64..=1.0,
        ) {
            let items: Vec<Item> = leases.iter().map(|&(cost, w, arrival)| Item {
                gain: 1,
                vms: 1,
                preempted_vms: 1,
                lease_type: LeaseType::BestEffortSuspendable,
                cost,
                reschedules: cost > 0,
                waiting: w * 1_000_000,
                arrival,
            }).collect();
            let eq1 = eq_1_order(&items);
            prop_assert_eq!(score_order_items(PreemptionPolicy::MovScore, &items).unwrap(), eq1.clone());
            prop_assert_eq!(score_order_items(PreemptionPolicy::Cp { alpha: 1.0 }, &items).unwrap(), eq1);
            let mut mwt: Vec<usize> = (0..items.len()).collect();
            mwt.sort_by(|&a, &b| items[a].waiting.cmp(&items[b].waiting).then(items[b].arrival.cmp(&items[a].arrival)).then(b.cmp(&a)));
            prop_assert_eq!(score_order_items(PreemptionPolicy::Cp { alpha: 0.0 }, &items).unwrap(), mwt.clone());
            prop_assert_eq!(score_order_items(PreemptionPolicy::Mwt, &items).unwrap(), mwt);
            if alpha > 0.0 {
                let order = score_order_items(PreemptionPolicy::Cp { alpha }, &items).unwrap();
                let pos = |i: usize| order.iter().position(|&x| x == i).unwrap();
                for (f, free) in items.iter().enumerate().filter(|(_, x)| x.cost == 0) {
                    for (p, _) in items.iter().enumerate().filter(|(_, x)| x.cost > 0 && x.waiting == free.waiting) {
                        prop_assert!(pos(f) < pos(p), "free {} after paid {} in {:?}", f, p, order);
                    }
                }
            }
        }
    }

    #[test]
    fn least_valuable_touches_valuable_leases_only_when_it_must() {
        let mk = |gain, t: LeaseType, cost| Item {
            gain,
            vms: gain as u32,
            preempted_vms: gain as u32,
            lease_type: t,
            cost,
            reschedules: t != LeaseType::BestEffortCancellable,
            waiting: 0,
            arrival: 0,
        };
        let items = vec![
            mk(4, LeaseType::DeadlineMigratable, 10),
            mk(2, LeaseType::BestEffortSuspendable, 500),
            mk(2, LeaseType::BestEffortCancellable, 0),
            mk(1, LeaseType::BestEffortCancellable, 0),
        ];
        let pick =
            |need| choose_additive(PreemptionPolicy::LeastValuable, &items, need, 7, 1).unwrap();
        assert_eq!(pick(2), vec![2]);
        assert_eq!(pick(3), vec![2, 3]);
        assert_eq!(pick(4), vec![1, 2]);
        assert_eq!(pick(6), vec![0, 2]);
        // MOV would take the cheap migratable lease where it can.
        assert_eq!(
            choose_additive(PreemptionPolicy::Mov, &items, 4, 7, 1).unwrap(),
            vec![0]
        );
    }

    #[test]
    fn mov_never_takes_a_zero_cost_lease_it_does_not_need() {
        // A reservation (cost 0) that covers alone, and an older one that also does: the older
        // alone is chosen, never both.
        let mk = |gain, cost, arrival| Item {
            gain,
            vms: gain as u32,
            preempted_vms: 0,
            lease_type: LeaseType::BestEffortSuspendable,
            cost,
            reschedules: false,
            waiting: 0,
            arrival,
        };
        let items = vec![mk(4, 0, 1), mk(4, 0, 2), mk(2, 9, 3)];
        assert_eq!(
            choose_additive(PreemptionPolicy::Mov, &items, 4, 7, 1),
            Some(vec![0])
        );
    }

    // ---- brute force over additive items ----

    fn covers(c: &[Item], need: u64) -> Vec<Vec<usize>> {
        (1u32..(1 << c.len()))
            .map(|mask| {
                (0..c.len())
                    .filter(|&i| mask & (1 << i) != 0)
                    .collect::<Vec<_>>()
            })
            .filter(|s| s.iter().map(|&i| c[i].gain).sum::<u64>() >= need)
            .collect()
    }

    fn arb_items() -> impl Strategy<Value = Vec<Item>> {
        prop::collection::vec(
            (1u64..6, 0u64..500, 0u64..1000, 0u8..4, any::<bool>()),
            1..11,
        )
        .prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (gain, cost, waiting, t, reservation))| {
                    let lease_type = [
                        LeaseType::BestEffortCancellable,
                        LeaseType::BestEffortSuspendable,
                        LeaseType::DeadlineMigratable,
                        LeaseType::BestEffortSuspendable,
                    ][usize::from(t)];
                    let running = !reservation;
                    Item {
                        gain,
                        vms: gain as u32,
                        preempted_vms: if running { gain as u32 } else { 0 },
                        lease_type,
                        cost: if running && lease_type != LeaseType::BestEffortCancellable {
                            cost * 1_000_000
                        } else {
                            0
                        },
                        reschedules: running && lease_type != LeaseType::BestEffortCancellable,
                        waiting: waiting * 1_000_000,
                        arrival: i as u64,
                    }
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..ProptestConfig::default() })]

        /// The precomputed bound is the definition's: the fewest undecided leases whose gain
        /// bounds reach the missing room, each weighed as the lightest undecided ones.
        #[test]
        fn suffix_bounds_equal_the_bound_by_sorting(
            leases in prop::collection::vec((1u64..9, 0u128..50), 0..14),
            need in 1u64..20,
            missing_cut in 0u64..20,
        ) {
            let order: Vec<usize> = (0..leases.len()).rev().collect();
            let bounds: Vec<u64> = leases.iter().map(|l| l.0).collect();
            let weight: Vec<u128> = leases.iter().map(|l| l.1).collect();
            let sb = SuffixBounds::new(&order, &bounds, &weight, need);
            let missing = missing_cut.min(need);
            for pos in 0..=order.len() {
                let rest = &order[pos..];
                let mut gains: Vec<u64> = rest.iter().map(|&i| bounds[i]).collect();
                gains.sort_unstable_by(|a, b| b.cmp(a));
                let mut k = 0;
                let mut got = 0;
                while got < missing && k < gains.len() {
                    got += gains[k];
                    k += 1;
                }
                let mut w: Vec<u128> = rest.iter().map(|&i| weight[i]).collect();
                w.sort_unstable();
                let expected: u128 = if missing == 0 { 0 } else { w.iter().take(k).sum() };
                prop_assert_eq!(sb.lower_bound(pos, missing), expected, "pos {}", pos);
            }
        }

        #[test]
        fn additive_policies_agree_with_brute_force(c in arb_items(), need in 1u64..12) {
            let all = covers(&c, need);
            let minimal: Vec<&Vec<usize>> = all.iter().filter(|s| is_minimal_additive(&c, s, need)).collect();
            let cost = |s: &[usize]| set_cost(&c.iter().map(|x| x.cost).collect::<Vec<_>>(), &c.iter().map(|x| x.reschedules).collect::<Vec<_>>(), DELTA, s);
            for p in [PreemptionPolicy::Mlip, PreemptionPolicy::Mov, PreemptionPolicy::Moml, PreemptionPolicy::Mwt, PreemptionPolicy::MovScore, PreemptionPolicy::Cp { alpha: 0.31 }, PreemptionPolicy::LeastValuable] {
                let got = choose_additive(p, &c, need, DELTA, 7);
                if all.is_empty() {
                    prop_assert!(got.is_none());
                    continue;
                }
                let set = got.expect("a cover exists");
                prop_assert!(is_minimal_additive(&c, &set, need), "{:?} is not minimal for {:?}", set, p);
                match p {
                    PreemptionPolicy::Mlip => {
                        let fewest = minimal.iter().map(|s| s.len()).min().unwrap();
                        prop_assert_eq!(set.len(), fewest);
                        let most_vms = minimal.iter().filter(|s| s.len() == fewest).map(|s| s.iter().map(|&i| c[i].vms).sum::<u32>()).max().unwrap();
                        prop_assert_eq!(set.iter().map(|&i| c[i].vms).sum::<u32>(), most_vms);
                    }
                    PreemptionPolicy::Mov => {
                        let best = all.iter().map(|s| (cost(s), newest_first(s))).min().unwrap();
                        prop_assert_eq!((cost(&set), newest_first(&set)), best);
                    }
                    PreemptionPolicy::Moml => {
                        let mut costs: Vec<u64> = minimal.iter().map(|s| cost(s)).collect();
                        costs.sort_unstable();
                        let alpha = median_of(costs).unwrap();
                        let within: Vec<&&Vec<usize>> = minimal.iter().filter(|s| cost(s) as f64 <= alpha).collect();
                        let fewest = within.iter().map(|s| s.len()).min().unwrap();
                        prop_assert_eq!(set.len(), fewest);
                        prop_assert!(cost(&set) as f64 <= alpha);
                    }
                    PreemptionPolicy::LeastValuable => {
                        let key = |s: &[usize]| {
                            let class = |t: LeaseType| s.iter().filter(|&&i| c[i].lease_type == t).map(|&i| c[i].preempted_vms).sum::<u32>();
                            (class(LeaseType::DeadlineMigratable), class(LeaseType::BestEffortSuspendable), class(LeaseType::BestEffortCancellable), cost(s), s.len())
                        };
                        let best = all.iter().map(|s| key(s)).min().unwrap();
                        prop_assert_eq!(key(&set), best);
                    }
                    _ => {}
                }
            }
        }
    }

    /// The sampled median is an approximation; on small random cases where both can be
    /// computed, MOML with the sampled α picks a set of the same size as with the exact α in
    /// the large majority of cases.
    #[test]
    fn sampled_median_leads_moml_to_the_same_set_size_as_enumeration() {
        use rand::Rng;
        let mut rng = StdRng::seed_from_u64(11);
        let (mut same, mut cases) = (0, 0);
        for _ in 0..300 {
            let n = rng.random_range(4..=12);
            let items: Vec<Item> = (0..n)
                .map(|i| Item {
                    gain: rng.random_range(1..6),
                    vms: 1,
                    preempted_vms: 1,
                    lease_type: LeaseType::BestEffortSuspendable,
                    cost: rng.random_range(1..500),
                    reschedules: false,
                    waiting: 0,
                    arrival: i,
                })
                .collect();
            let need = rng.random_range(1..12);
            let exact = median_cover_cost(&items, need, 0, 5);
            let sampled = sampled_median_additive(&items, need, 5);
            let (Some(exact), Some(sampled)) = (exact, sampled) else {
                continue;
            };
            let size = |alpha: f64| {
                let mov = Objective::of(PreemptionPolicy::Mov, &items, 0);
                best_covers(&items, need, &mov, Some(items.len()))
                    .into_iter()
                    .flatten()
                    .find(|(s, _)| set_cost(&mov.cost, &mov.reschedules, 0, s) as f64 <= alpha)
                    .map(|(s, _)| s.len())
            };
            cases += 1;
            if size(exact) == size(sampled) {
                same += 1;
            }
        }
        assert!(cases > 200);
        let rate = f64::from(same) / f64::from(cases);
        assert!(
            rate >= 0.9,
            "MOML's set size agrees in only {:.1} % of cases",
            rate * 100.0
        );
    }

    /// The sampler of [`median_cover_cost`] on its own (what it does beyond the limit).
    fn sampled_median_additive(items: &[Item], need: u64, seed: u64) -> Option<f64> {
        sample_cover_costs(items, need, 0, seed).and_then(median_of)
    }

    // ---- non-additive: the general search against brute force ----

    fn general_case() -> impl Strategy<Value = (Vec<(u32, u8, u64, bool)>, u32)> {
        // Leases: (VMs, type, cost, whether it is a reservation starting mid-window).
        (
            prop::collection::vec((1u32..3, 0u8..3, 1u64..400, any::<bool>()), 1..9),
            1u32..4,
        )
    }

    /// Builds a contention on 8 hosts of 2 cores: running leases hold their cores from the
    /// start of the window to its middle, reservations from the middle on, so that room is
    /// not additive (a running lease and the reservation after it on the same core free a
    /// core only together).
    fn build(leases: &[(u32, u8, u64, bool)], need: u32) -> Contention {
        let mut c = case_contention(need, &[(2, Some(4096)); 8]);
        let mut next_core = [0u32; 2]; // per phase, the next core to fill
        for (i, &lease) in leases.iter().enumerate() {
            let (idx, (s, e)) = add_case_lease(&mut c, i, lease);
            let phase = usize::from(lease.3);
            for _ in 0..lease.0 {
                let slot = next_core[phase];
                next_core[phase] += 1;
                c.add_held((slot / 2) as usize, idx, s, e, 1, 256);
            }
        }
        c
    }

    /// A contention for local VMs of 1 core and 256 MB over [0, 100 s) on `hosts`.
    fn case_contention(need: u32, hosts: &[(u64, Option<u64>)]) -> Contention {
        let shape = VmShape {
            cores: 1,
            mem_mb: 256,
        };
        Contention::new(
            shape,
            need,
            (EmuTime::ZERO, EmuTime::from_secs(100)),
            EmuDuration::from_secs(2),
            hosts,
        )
    }

    /// Adds lease `i` of a generated case, (VMs, type, cost, whether a reservation from the
    /// window's middle), as a candidate: a reservation is displaced, a running lease stopped
    /// if cancellable and suspended otherwise, and only suspensions cost. Returns its index
    /// and the interval its VMs hold.
    fn add_case_lease(
        c: &mut Contention,
        i: usize,
        (vms, ty, cost, reservation): (u32, u8, u64, bool),
    ) -> (usize, (EmuTime, EmuTime)) {
        let t = EmuTime::from_secs;
        let lease_type = [
            LeaseType::BestEffortCancellable,
            LeaseType::BestEffortSuspendable,
            LeaseType::DeadlineMigratable,
        ][usize::from(ty)];
        let op = match (reservation, lease_type) {
            (true, _) => Operation::Displace,
            (false, LeaseType::BestEffortCancellable) => Operation::Stop,
            (false, _) => Operation::Suspend,
        };
        let idx = c.add_candidate(Candidate {
            lease: RequestId(i as u32),
            op,
            lease_type,
            vms,
            mem_mb: 512,
            preempted_vms: if op.preempts_vms() { vms } else { 0 },
            cost: if op == Operation::Suspend {
                EmuDuration::from_secs(cost)
            } else {
                EmuDuration::ZERO
            },
            waiting: EmuDuration::from_secs(cost % 97),
            arrival: t(i as u64),
        });
        let held = match reservation {
            true => (t(50), t(200)),
            false => (t(0), t(50)),
        };
        (idx, held)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn general_policies_agree_with_brute_force((leases, need) in general_case()) {
            let c = build(&leases, need);
            let n = c.candidates.len();
            let all: Vec<Vec<usize>> = (1u32..(1 << n)).map(|m| (0..n).filter(|&i| m & (1 << i) != 0).collect::<Vec<_>>()).filter(|s| c.makes_room(s)).collect();
            let minimal: Vec<&Vec<usize>> = all.iter().filter(|s| c.is_minimal(s)).collect();
            let items = items_of(&c, &vec![0; n]);
            let cost = |s: &[usize]| set_cost(&items.iter().map(|x| x.cost).collect::<Vec<_>>(), &items.iter().map(|x| x.reschedules).collect::<Vec<_>>(), c.reschedule.as_micros(), s);
            for p in [PreemptionPolicy::Mlip, PreemptionPolicy::Mov, PreemptionPolicy::Moml, PreemptionPolicy::Mwt, PreemptionPolicy::Cp { alpha: 0.31 }, PreemptionPolicy::LeastValuable] {
                let got = choose(p, &c, 3, SEARCH_BUDGET);
                if all.is_empty() || c.makes_room(&[]) {
                    continue;
                }
                let Choice { set, exact } = got.expect("a set exists");
                prop_assert!(c.is_minimal(&set), "{:?}: {:?} not minimal", p, set);
                prop_assert!(exact);
                match p {
                    PreemptionPolicy::Mlip => {
                        let best = minimal.iter().map(|s| (s.len(), std::cmp::Reverse(s.iter().map(|&i| c.candidates[i].vms).sum::<u32>()), newest_first(s))).min().unwrap();
                        prop_assert_eq!((set.len(), std::cmp::Reverse(set.iter().map(|&i| c.candidates[i].vms).sum::<u32>()), newest_first(&set)), best);
                    }
                    PreemptionPolicy::Mov => {
                        let best = all.iter().map(|s| (cost(s), newest_first(s))).min().unwrap();
                        prop_assert_eq!((cost(&set), newest_first(&set)), best);
                    }
                    PreemptionPolicy::Moml => {
                        let alpha = median_of(minimal.iter().map(|s| cost(s)).collect()).unwrap();
                        let best = minimal.iter().filter(|s| cost(s) as f64 <= alpha).map(|s| (s.len(), cost(s), newest_first(s))).min().unwrap();
                        prop_assert_eq!((set.len(), cost(&set), newest_first(&set)), best);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Leases on one-core hosts (paper 000's), as in [`general_case`], the VMs needed, and a
    /// seed scattering each lease's VMs.
    type OneCoreCase = (Vec<(u32, u8, u64, bool)>, u32, u64);

    fn one_core_case() -> impl Strategy<Value = OneCoreCase> {
        (
            prop::collection::vec((1u32..4, 0u8..3, 0u64..300, any::<bool>()), 3..12),
            1u32..5,
            any::<u64>(),
        )
    }

    /// Eight one-core hosts, where a host has room only once every hold on it is gone (so
    /// searches take the all-or-nothing path), each lease's VMs scattered over free hosts by
    /// `seed` (reservations weigh 1 under least-valuable, as most of paper 000's leases in
    /// play do); odd seeds pin host 7 with a hold no preemption removes.
    fn build_one_core(leases: &[(u32, u8, u64, bool)], need: u32, seed: u64) -> Contention {
        let mut c = case_contention(need, &[(1, Some(1024)); 8]);
        let mut rng = seed;
        let mut next = || {
            rng = rng
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (rng >> 33) as usize
        };
        let mut free: [Vec<usize>; 2] = [(0..8).collect(), (0..8).collect()];
        if seed % 2 == 1 {
            free[0].retain(|&h| h != 7);
            c.add_fixed(7, EmuTime::ZERO, EmuTime::from_secs(50), 1, 256);
        }
        for (i, &lease) in leases.iter().enumerate() {
            let (idx, (s, e)) = add_case_lease(&mut c, i, lease);
            let free = &mut free[usize::from(lease.3)];
            for _ in 0..lease.0 {
                if free.is_empty() {
                    break;
                }
                let host = free.swap_remove(next() % free.len());
                c.add_held(host, idx, s, e, 1, 256);
            }
        }
        c
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..ProptestConfig::default() })]

        /// The branch and bound, with its bounds by lease and by host, finds what trying
        /// every set finds: the lightest set that makes room, newest-first favourite among
        /// equals — on hosts whose room is all or nothing, where leases span several hosts.
        #[test]
        fn search_finds_the_lightest_set_on_one_core_hosts((leases, need, seed) in one_core_case()) {
            let c = build_one_core(&leases, need, seed);
            let n = c.candidates.len();
            if c.makes_room(&[]) {
                return Ok(()); // nothing to choose (a third of the cases or so)
            }
            let items = items_of(&c, &vec![0; n]);
            for p in [PreemptionPolicy::LeastValuable, PreemptionPolicy::Mov, PreemptionPolicy::Mlip] {
                let obj = Objective::of(p, &items, c.reschedule.as_micros());
                let brute = (1u32..(1 << n))
                    .map(|m| (0..n).filter(|&i| m & (1 << i) != 0).collect::<Vec<_>>())
                    .filter(|s| c.makes_room(s))
                    .map(|s| (obj.value(&s), newest_first(&s), s))
                    .min();
                let got = search(&c, &obj, usize::MAX, None);
                match (brute, got) {
                    (None, None) => {}
                    (Some((value, _, want)), Some((set, exact))) => {
                        prop_assert!(exact);
                        prop_assert_eq!(obj.value(&set), value, "{:?}: {:?} against {:?}", p, set, want);
                        prop_assert_eq!(set, want, "{:?}", p);
                    }
                    (b, g) => prop_assert!(false, "{:?}: brute force {:?}, search {:?}", p, b, g),
                }
            }
        }
    }

    // ---- the greedy seed against the greedy it replaced ----

    /// The greedy search as first written: each move weighed by building its trial set (the
    /// reference for the one that keeps the chosen set's sums and weighs each distinct
    /// host bundle once).
    fn greedy_by_trial_sets(c: &Contention, obj: &Objective) -> Option<Vec<usize>> {
        let need = u64::from(c.need);
        let mut t = RoomTracker::new(c);
        let mut chosen: Vec<usize> = Vec::new();
        let bundles = t.bundles();
        let n = c.candidates.len();
        while t.room() < need {
            let before = t.room();
            let mut best: Option<(f64, usize, Vec<usize>)> = None;
            let mut consider = |t: &mut RoomTracker<'_>, moves: Vec<usize>, chosen: &[usize]| {
                if moves.is_empty() {
                    return;
                }
                for &i in &moves {
                    t.set(i, true);
                }
                let gain = t.room().saturating_sub(before);
                let mut trial: Vec<usize> = chosen.to_vec();
                trial.extend(&moves);
                let ok = obj.within_cap(&trial);
                for &i in &moves {
                    t.set(i, false);
                }
                if gain == 0 || !ok {
                    return;
                }
                let w = (obj.value(&trial) - obj.value(chosen)) as f64 / gain as f64;
                let key = (w, moves.len(), moves.clone());
                if best
                    .as_ref()
                    .is_none_or(|b| (key.0, key.1) < (b.0, b.2.len()))
                {
                    best = Some((w, moves.len(), moves));
                }
            };
            for i in 0..n {
                if !t.contains(i) {
                    consider(&mut t, vec![i], &chosen);
                }
            }
            for b in &bundles {
                let moves: Vec<usize> = b.iter().copied().filter(|&i| !t.contains(i)).collect();
                if moves.len() > 1 {
                    consider(&mut t, moves, &chosen);
                }
            }
            let (_, _, moves) = best?;
            for i in moves {
                t.set(i, true);
                chosen.push(i);
            }
        }
        without_redundant(t, &chosen, obj, need)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..ProptestConfig::default() })]

        /// The greedy seed picks the set the straightforward greedy picks, under every
        /// objective, with and without MOML's cost cap.
        #[test]
        fn greedy_picks_what_weighing_trial_sets_picks(
            c in crate::lrms::contention::tests::arb_contention(),
            cap in 0u64..20,
        ) {
            let items = items_of(&c, &vec![0; c.candidates.len()]);
            let reschedule = c.reschedule.as_micros();
            let mut objectives: Vec<Objective> = [PreemptionPolicy::Mlip, PreemptionPolicy::Mov, PreemptionPolicy::Mwt, PreemptionPolicy::LeastValuable]
                .into_iter()
                .map(|p| Objective::of(p, &items, reschedule))
                .collect();
            objectives.push(Objective::fewest_within(&items, reschedule, cap * 1_000_000));
            for obj in &objectives {
                prop_assert_eq!(greedy(&c, obj), greedy_by_trial_sets(&c, obj));
            }
        }
    }
}
