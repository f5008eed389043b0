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

use std::collections::HashSet;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::contention::{Contention, RoomTracker};
use crate::model::LeaseType;

mod cover;
mod search;

use cover::*;
use search::*;

#[cfg(test)]
mod tests;

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
