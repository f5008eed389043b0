//! The search for general room (where a set frees more than the sum of its leases, or less): a
//! greedy seed (leases, or whole hosts' leases, by cost per VM of room), the branch and bound
//! over the leases in play within its step budget, and MOML's median over the minimal sets,
//! enumerated or sampled.

use super::*;

/// A greedy minimal set under `obj`: repeatedly removes the lease, or all remaining leases of
/// one host, with the least weight per VM of room gained, then drops redundant leases,
/// heaviest first.
pub(super) fn greedy(c: &Contention, obj: &Objective) -> Option<Vec<usize>> {
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
pub(super) fn without_redundant(
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
pub(super) fn search(
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

pub(super) struct Search<'o> {
    pub(super) obj: &'o Objective,
    pub(super) need: u64,
    pub(super) order: Vec<usize>,
    /// The lower bound's sorted gains and weights for each suffix of `order`.
    pub(super) suffix: SuffixBounds,
    /// Each lease's weight split evenly over the hosts it holds, in units of 1/`scale`
    /// (rounded down).
    pub(super) shares: Vec<u128>,
    pub(super) scale: u128,
    /// The hosts held by the leases of `order[pos..]`: the first `touched_by[pos]`.
    pub(super) touched: Vec<usize>,
    pub(super) touched_by: Vec<usize>,
    /// Scratch for [`Search::host_bound`].
    pub(super) hosts: Vec<HostCost>,
    pub(super) gains: Vec<u64>,
    /// Hosts [`Search::host_bound`] has looked at so far.
    pub(super) host_work: usize,
    pub(super) best: Option<(u128, Vec<usize>)>,
    /// Whether `best` was found by the search (then equal values found later lose).
    pub(super) best_from_search: bool,
    pub(super) steps: usize,
    pub(super) budget: usize,
    pub(super) set: Vec<usize>,
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
pub(super) struct HostCost {
    /// The most room the undecided leases could free on it.
    pub(super) gain: u64,
    /// The least cost in shares (units of 1/`scale` weight) and in whole weights.
    pub(super) shares: u128,
    pub(super) whole: u128,
}

/// For each suffix `order[pos..]` of the search order, what [`Search::lower_bound`] needs,
/// computed once (the bound is taken at every step, and sorting the suffix each time was a
/// sixth of an overloaded run): the prefix sums of its gain bounds, largest first, up to the
/// first reaching `need`; of its weights, lightest first, as many; and its total weight.
pub(super) struct SuffixBounds {
    pub(super) gains: Vec<Vec<u64>>,
    pub(super) light: Vec<Vec<u128>>,
    pub(super) total: Vec<u128>,
}

impl SuffixBounds {
    pub(super) fn new(order: &[usize], bounds: &[u64], weight: &[u128], need: u64) -> SuffixBounds {
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
    pub(super) fn lower_bound(&self, pos: usize, missing: u64) -> u128 {
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
pub(super) fn moml_general(c: &Contention, seed: u64, budget: usize) -> Option<Choice> {
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
pub(super) fn minimal_sets(c: &Contention) -> Option<Vec<Vec<usize>>> {
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
pub(super) fn sampled_median(
    c: &Contention,
    seed: u64,
    of: &dyn Fn(&[usize]) -> u64,
) -> Option<f64> {
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
