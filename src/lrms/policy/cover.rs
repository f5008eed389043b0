//! Exact dynamic programs for additive room (every set frees the sum of what its leases free
//! alone): min-weight covers over (leases in arrival order, room still to cover, optionally the
//! number of leases), and MOML's median cover cost, enumerated or sampled.

use super::*;

/// A weight the cover DP can add and compare: `u64` when the objective fits, else `u128`.
pub(super) trait Weight:
    Copy + Ord + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self>
{
    const NONE: Self;
    const ZERO: Self;
    fn from_u128(x: u128) -> Self;
}

/// Min-weight covers by dynamic programming over (leases in arrival order, room still to
/// cover, optionally the number of leases): `best[i][j][r]` is the least weight of `j` of the
/// first `i` leases that free at least `r`. One table per lease taken into account is kept
/// for the reconstruction, which walks back from the newest lease and leaves a lease out
/// whenever an equally good cover exists without it — so among equally good covers it
/// returns the arrival-order favourite (and, weights being non-negative, a minimal one).
pub(super) struct CoverDp<W> {
    pub(super) width: usize,
    pub(super) layers: usize,
    /// The leases taken into account, in arrival order, and the table after each.
    pub(super) used: Vec<usize>,
    pub(super) tables: Vec<Vec<W>>,
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
pub(super) fn best_covers(
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

pub(super) fn best_covers_in<W: Weight>(
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
pub(super) fn best_cover(items: &[Item], need: u64, obj: &Objective) -> Option<(Vec<usize>, u128)> {
    best_covers(items, need, obj, None).pop().flatten()
}

pub(super) fn median_of(mut costs: Vec<u64>) -> Option<f64> {
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
pub(super) fn sample_cover_costs(
    items: &[Item],
    need: u64,
    reschedule: u64,
    seed: u64,
) -> Option<Vec<u64>> {
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

pub(super) fn moml_additive(
    items: &[Item],
    need: u64,
    reschedule: u64,
    seed: u64,
) -> Option<Vec<usize>> {
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
