//! Free time slots published by each LRMS (paper 004 §4.1, §5.3), as kept by the IGG: per
//! cluster, an ordered step function of free cores up to a horizon, with the cluster's price
//! per resource unit (eq. 1). The IGG queries it for the earliest start of a request and for
//! its clusters' and Grid's load.

use std::cell::{Cell, OnceCell};
use std::collections::BTreeMap;

use super::dispatch::Loads;
use crate::model::published::Ask;
pub use crate::model::Published;
use crate::time::{EmuDuration, EmuTime};

/// The IGG's store of its clusters' free time slots, by cluster index within the Grid.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlotStore {
    clusters: BTreeMap<usize, Published>,
    /// Per cluster, the work (core-microseconds) the IGG dispatched there since its last
    /// publication that its slots could not hold before their horizon.
    beyond: BTreeMap<usize, u128>,
}

impl SlotStore {
    /// Replaces cluster `j`'s publication.
    pub(crate) fn publish(&mut self, j: usize, p: Published) {
        debug_assert!(
            p.free.windows(2).all(|w| w[0].0 < w[1].0),
            "published steps are strictly ascending"
        );
        self.clusters.insert(j, p);
        self.beyond.remove(&j);
    }

    /// Where cluster `j` would start a request of `cores` for `length`, as the IGG
    /// dispatching it can tell: the earliest start its published slots hold, or — where they
    /// hold none before their horizon — the horizon's end delayed by the work the IGG has
    /// dispatched there past the horizon since the publication, spread over its cores (past
    /// the horizon nothing is published; what the IGG sent is all it knows). `None` if the
    /// cluster has not published or is smaller than the request.
    pub(crate) fn dispatch_start_on(
        &self,
        j: usize,
        now: EmuTime,
        cores: u64,
        length: EmuDuration,
    ) -> Option<EmuTime> {
        let p = self.clusters.get(&j)?;
        if cores > p.cores {
            return None;
        }
        p.earliest(now, cores, length).or_else(|| {
            let sent = self.beyond.get(&j).copied().unwrap_or(0);
            let wait = sent / u128::from(p.cores.max(1));
            let wait = EmuDuration::from_micros(u64::try_from(wait).unwrap_or(u64::MAX));
            Some(p.until.max(now) + wait)
        })
    }

    /// Books a request dispatched to cluster `j` at `start` ([`SlotStore::dispatch_start_on`]):
    /// its slot, or past the horizon its work.
    pub(crate) fn book_dispatched(
        &mut self,
        j: usize,
        start: EmuTime,
        cores: u64,
        length: EmuDuration,
    ) {
        let Some(p) = self.clusters.get_mut(&j) else {
            return;
        };
        if start < p.until {
            p.book(start, cores, length);
        } else {
            let work = u128::from(cores) * u128::from(length.as_micros());
            *self.beyond.entry(j).or_default() += work;
        }
    }

    /// Takes `cores` on cluster `j` for `[start, start + length)`.
    pub(crate) fn book(&mut self, j: usize, start: EmuTime, cores: u64, length: EmuDuration) {
        if let Some(p) = self.clusters.get_mut(&j) {
            p.book(start, cores, length);
        }
    }

    /// Whether cluster `j` has published.
    pub(crate) fn knows(&self, j: usize) -> bool {
        self.clusters.contains_key(&j)
    }

    /// The clusters `0..n` as least-load sees them: for each, the cores busy on average over
    /// `[now, now + horizon)` (rounded up) and its cores; `None` unless all have published.
    pub(crate) fn loads(&self, n: usize, now: EmuTime, horizon: EmuDuration) -> Option<Loads> {
        let mut loads = Loads {
            busy: Vec::with_capacity(n),
            cores: Vec::with_capacity(n),
        };
        for j in 0..n {
            let p = self.clusters.get(&j)?;
            let busy = p.used_units(now, now + horizon) / horizon.as_secs_f64().max(1e-6);
            loads.busy.push(busy.ceil() as u64);
            loads.cores.push(p.cores);
        }
        (n > 0).then_some(loads)
    }

    /// The store as of `now`, for many queries before anything is booked or published.
    pub(crate) fn at(&self, now: EmuTime) -> SlotsAt<'_> {
        SlotsAt {
            now,
            clusters: self
                .clusters
                .iter()
                .map(|(&j, p)| (j, p, Cell::new(0), OnceCell::new()))
                .collect(),
        }
    }

    /// The Grid's load over the horizon, weighted by cluster size, and its capacity in units
    /// (the runs ask [`SlotsAt::grid_load`], tested against this).
    #[cfg(test)]
    pub(crate) fn grid_load(&self, now: EmuTime, horizon: EmuDuration) -> (f64, f64) {
        let (mut used, mut cap) = (0.0, 0.0);
        for p in self.clusters.values() {
            used += p.used_units(now, now + horizon);
            cap += p.cores as f64 * horizon.as_secs_f64();
        }
        (if cap > 0.0 { used / cap } else { 0.0 }, cap)
    }

    /// The end of the furthest published horizon, if any cluster has published (the runs ask
    /// [`SlotsAt::until`], tested against this).
    #[cfg(test)]
    pub(crate) fn until(&self) -> Option<EmuTime> {
        self.clusters.values().map(|p| p.until).max()
    }

    /// The earliest start on cluster `j` (see [`Published::earliest`]).
    pub(crate) fn earliest_on(
        &self,
        j: usize,
        now: EmuTime,
        cores: u64,
        length: EmuDuration,
    ) -> Option<EmuTime> {
        self.clusters.get(&j)?.earliest(now, cores, length)
    }

    /// The earliest start on cluster `j` of a run that may outlast its publication (see
    /// [`Published::earliest_past_horizon`]).
    pub(crate) fn earliest_past_horizon_on(
        &self,
        j: usize,
        now: EmuTime,
        cores: u64,
        length: EmuDuration,
    ) -> Option<EmuTime> {
        (self.clusters.get(&j)?).earliest_past_horizon(now, cores, length)
    }

    /// The end of the nearest published horizon, if any cluster has published: up to it,
    /// every cluster's publication says what is free.
    pub(crate) fn horizon_end(&self) -> Option<EmuTime> {
        self.clusters.values().map(|p| p.until).min()
    }

    /// Eq. 2's inputs: each cluster's price per unit and the resource units it contributes
    /// over `[now, until)` — the free core-seconds of its publication (paper 004 §5: "the
    /// number of resource units contributed by provider i until a given time horizon"). Where
    /// no cluster contributes any, each is weighted by its cores over the span instead.
    pub(crate) fn prices(&self, now: EmuTime, until: EmuTime) -> Vec<(f64, f64)> {
        let span = until.since(now).as_secs_f64();
        let free = |p: &Published| (p.cores as f64 * span - p.used_units(now, until)).max(0.0);
        let contributed: Vec<(f64, f64)> =
            self.clusters.values().map(|p| (p.price, free(p))).collect();
        if contributed.iter().any(|(_, u)| *u > 0.0) {
            contributed
        } else {
            self.clusters
                .values()
                .map(|p| (p.price, p.cores as f64 * span.max(1.0)))
                .collect()
        }
    }
}

/// One cluster's publication as seen from one instant, for many queries at that instant.
#[derive(Clone, Debug)]
struct ClusterAt {
    cores: u64,
    until: EmuTime,
    /// [`Published::free_at`] the instant.
    free_now: u64,
    /// The published steps from the instant on (the instant's own included), each with
    /// [`Published::used_units`]'s running state from the instant once it is taken in.
    steps: Vec<StepAt>,
    /// How many of the steps come before the horizon.
    before_until: usize,
}

/// A published step, and the load summed from the view's instant up to it.
#[derive(Clone, Copy, Debug)]
struct StepAt {
    /// When it takes effect.
    at: EmuTime,
    /// Free cores it publishes.
    free: u64,
    /// Where the running sum's open segment starts once this step is taken in.
    segment_from: EmuTime,
    /// Free cores in force over that segment (none past the horizon).
    segment_free: u64,
    /// Used core-seconds from the instant to `segment_from`.
    used: f64,
}

impl ClusterAt {
    fn of(p: &Published, now: EmuTime) -> ClusterAt {
        let free_now = p.free_at(now);
        let (mut t, mut free, mut used) = (now, free_now, 0.0);
        let steps: Vec<StepAt> = p
            .steps_from(now)
            .iter()
            .map(|&(at, f)| {
                if at > t {
                    used += p.cores.saturating_sub(free) as f64 * at.since(t).as_secs_f64();
                    t = at;
                }
                free = if at >= p.until { 0 } else { f };
                StepAt {
                    at,
                    free: f,
                    segment_from: t,
                    segment_free: free,
                    used,
                }
            })
            .collect();
        let before_until = steps.partition_point(|s: &StepAt| s.at < p.until);
        ClusterAt {
            cores: p.cores,
            until: p.until,
            free_now,
            steps,
            before_until,
        }
    }

    /// [`Published::used_units`] from the instant to `to`: the running state after the steps
    /// before `to`, and the last segment — the same sums in the same order, so the same float.
    fn used_units(&self, now: EmuTime, to: EmuTime) -> f64 {
        if to <= now {
            return 0.0;
        }
        let k = self.steps.partition_point(|s| s.at < to);
        let (t, free, mut used) = match k.checked_sub(1) {
            Some(last) => {
                let s = &self.steps[last];
                (s.segment_from, s.segment_free, s.used)
            }
            None => (now, self.free_now, 0.0),
        };
        if to > t {
            used += self.cores.saturating_sub(free) as f64 * to.since(t).as_secs_f64();
        }
        used
    }

    /// [`Published::first_fit`] from the instant, over the steps as an array.
    fn first_fit(&self, ask: &Ask) -> Option<EmuTime> {
        let steps = self.steps[..self.before_until].iter();
        ask.first_fit(self.free_now, self.until, steps.map(|s| (s.at, s.free)))
    }
}

/// The store as of one instant with nothing booked meanwhile, for the many queries of one
/// negotiation round (a window for every queued request). A cluster asked twice is laid out
/// for the rest (its steps in an array, with the load summed up to each), so that a window
/// takes a binary search for the load instead of a walk over the steps. Each answer is the
/// store's, float for float.
#[derive(Debug)]
pub(crate) struct SlotsAt<'a> {
    now: EmuTime,
    /// By cluster index, in the store's order: its publication, the queries it answered
    /// directly, and its layout once made.
    clusters: Vec<(usize, &'a Published, Cell<u8>, OnceCell<ClusterAt>)>,
}

impl SlotsAt<'_> {
    /// Cluster `c`'s layout, once it has been asked enough to be worth one.
    fn laid_out<'s>(
        &'s self,
        (_, p, asked, layout): &'s (usize, &Published, Cell<u8>, OnceCell<ClusterAt>),
    ) -> Option<&'s ClusterAt> {
        if layout.get().is_none() && asked.get() < 2 {
            asked.set(asked.get() + 1);
            return None;
        }
        Some(layout.get_or_init(|| ClusterAt::of(p, self.now)))
    }

    /// [`SlotStore::earliest_on`] at the view's instant.
    #[cfg(test)]
    pub(crate) fn earliest_on(&self, j: usize, cores: u64, length: EmuDuration) -> Option<EmuTime> {
        self.earliest_on_before(j, cores, length, EmuTime::NEVER)
    }

    /// `earliest_on` if it is before `before`, else `None` (the search stops
    /// there: a request's cost window only needs the earliest over all clusters).
    pub(crate) fn earliest_on_before(
        &self,
        j: usize,
        cores: u64,
        length: EmuDuration,
        before: EmuTime,
    ) -> Option<EmuTime> {
        let i = self.clusters.binary_search_by_key(&j, |c| c.0).ok()?;
        let c = &self.clusters[i];
        let ask = Ask {
            now: self.now,
            cores,
            length,
            before,
        };
        match self.laid_out(c) {
            Some(at) => at.first_fit(&ask),
            None => c.1.first_fit(&ask),
        }
    }

    /// The store's `grid_load` at the view's instant.
    pub(crate) fn grid_load(&self, horizon: EmuDuration) -> (f64, f64) {
        let (mut used, mut cap) = (0.0, 0.0);
        let to = self.now + horizon;
        for c in &self.clusters {
            used += match self.laid_out(c) {
                Some(at) => at.used_units(self.now, to),
                None => c.1.used_units(self.now, to),
            };
            cap += c.1.cores as f64 * horizon.as_secs_f64();
        }
        (if cap > 0.0 { used / cap } else { 0.0 }, cap)
    }

    /// The store's `until`.
    pub(crate) fn until(&self) -> Option<EmuTime> {
        self.clusters.iter().map(|c| c.1.until).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    /// Published steps from random ones: ascending, the last of any instant given twice.
    fn sorted(steps: impl Iterator<Item = (EmuTime, u64)>) -> Vec<(EmuTime, u64)> {
        steps.collect::<BTreeMap<_, _>>().into_iter().collect()
    }

    fn published() -> Published {
        // 8 cores: 2 free until 100, 6 free until 200, all free after, published to 1000.
        Published {
            free: vec![(t(0), 2), (t(100), 6), (t(200), 8)],
            until: t(1000),
            cores: 8,
            price: 1.0,
        }
    }

    /// Dispatches `n` requests of `cores` for `secs` by the earliest start the store tells,
    /// booking each; returns how many each cluster took.
    fn dispatch_all(
        store: &mut SlotStore,
        clusters: usize,
        n: usize,
        cores: u64,
        secs: u64,
    ) -> Vec<usize> {
        let mut took = vec![0; clusters];
        let length = EmuDuration::from_secs(secs);
        for _ in 0..n {
            let best = (0..clusters)
                .filter_map(|j| Some((store.dispatch_start_on(j, t(0), cores, length)?, j)))
                .min();
            let Some((start, j)) = best else { continue };
            store.book_dispatched(j, start, cores, length);
            took[j] += 1;
        }
        took
    }

    #[test]
    fn past_their_horizons_requests_spread_over_the_clusters_by_their_cores() {
        // Clusters of 4, 12 and 2 cores, all busy to their horizon at 1000 s: no slot holds
        // a request. Each goes where the work sent past the horizon, per core, is least —
        // not all to the first cluster — and none to a cluster smaller than it.
        let busy = |cores| Published {
            free: vec![(t(0), 0)],
            until: t(1000),
            cores,
            price: 1.0,
        };
        let mut store = SlotStore::default();
        for (j, cores) in [4, 12, 2].into_iter().enumerate() {
            store.publish(j, busy(cores));
        }
        assert_eq!(dispatch_all(&mut store, 3, 16, 4, 100), vec![4, 12, 0]);
        // A slot within the horizon comes first; a publication forgets what was sent.
        store.publish(2, published());
        assert_eq!(dispatch_all(&mut store, 3, 1, 2, 50), vec![0, 0, 1]);
        store.publish(0, busy(4));
        let at = store.dispatch_start_on(0, t(0), 4, EmuDuration::from_secs(100));
        assert_eq!(at, Some(t(1000)));
        let at = store.dispatch_start_on(1, t(0), 4, EmuDuration::from_secs(100));
        assert_eq!(at, Some(t(1000 + 12 * 400 / 12)));
    }

    #[test]
    fn earliest_start_follows_the_free_cores() {
        let p = published();
        assert_eq!(p.earliest(t(0), 2, EmuDuration::from_secs(50)), Some(t(0)));
        assert_eq!(
            p.earliest(t(0), 4, EmuDuration::from_secs(50)),
            Some(t(100))
        );
        assert_eq!(
            p.earliest(t(0), 8, EmuDuration::from_secs(50)),
            Some(t(200))
        );
        assert_eq!(
            p.earliest(t(0), 8, EmuDuration::from_secs(900)),
            None,
            "past the horizon"
        );
        // A step at the horizon publishes cores that are not known to be free there: not
        // even an empty slot starts on it, in the store or in a view laid out for a round.
        let edge = Published {
            free: vec![(t(0), 0), (t(30), 4)],
            until: t(30),
            cores: 4,
            price: 1.0,
        };
        assert_eq!(edge.earliest(t(0), 1, EmuDuration::ZERO), None);
        let mut store = SlotStore::default();
        store.publish(0, edge);
        let view = store.at(t(0));
        for _ in 0..3 {
            assert_eq!(view.earliest_on(0, 1, EmuDuration::ZERO), None);
        }
    }

    #[test]
    fn a_booked_slot_is_taken_until_the_next_publication() {
        let mut p = published();
        // 4 cores from 100 for 50 s: 2 left there, the step after 150 untouched.
        p.book(t(100), 4, EmuDuration::from_secs(50));
        assert_eq!(
            (
                p.free_at(t(99)),
                p.free_at(t(100)),
                p.free_at(t(150)),
                p.free_at(t(200))
            ),
            (2, 2, 6, 8)
        );
        assert_eq!(
            p.earliest(t(0), 4, EmuDuration::from_secs(10)),
            Some(t(150))
        );
        // Past the horizon nothing is booked, and nothing is free.
        p.book(t(990), 8, EmuDuration::from_secs(100));
        assert_eq!(
            (p.free_at(t(989)), p.free_at(t(995)), p.free_at(t(1000))),
            (8, 0, 0)
        );
    }

    #[test]
    fn eq_2_weights_each_price_by_the_units_contributed_to_the_horizon() {
        let mut s = SlotStore::default();
        s.publish(0, published()); // 8 cores: 800 of 1600 core-seconds used in [0, 200)
        let mut full = published();
        full.free = [(t(0), 0)].into_iter().collect(); // contributes nothing
        full.price = 2.0;
        s.publish(1, full);
        let w = s.prices(t(0), t(200));
        assert_eq!(w, vec![(1.0, 800.0), (2.0, 0.0)]);
        // Nothing free anywhere: by capacity.
        let mut none = SlotStore::default();
        let mut f = published();
        f.free = [(t(0), 0)].into_iter().collect();
        none.publish(0, f);
        assert_eq!(none.prices(t(0), t(200)), vec![(1.0, 1600.0)]);
    }

    #[test]
    fn a_kept_back_partition_leaves_less_free_and_a_dearer_price() {
        let mut p = published(); // 8 cores: 2 free to 100, 6 to 200, 8 after; until 1000
        let before = p.used_units(t(0), t(1000));
        // Locals hold nothing; 3 cores of local partition are kept back throughout.
        let none = BTreeMap::from([(t(0), 0)]);
        crate::lrms::provider::keep_back(&mut p, t(0), &none, 3, 1.0);
        assert_eq!(
            (p.free_at(t(0)), p.free_at(t(150)), p.free_at(t(500))),
            (0, 3, 5)
        );
        let load = p.used_units(t(0), t(1000)) / 8000.0;
        assert!(load > before / 8000.0);
        assert!(
            (p.price - (1.0 + load)).abs() < 1e-12,
            "eq. 1 at the load left"
        );
    }

    #[test]
    fn load_counts_used_core_seconds() {
        let p = published();
        // [0, 200): 6 busy × 100 s + 2 busy × 100 s = 800 core-seconds.
        assert!((p.used_units(t(0), t(200)) - 800.0).abs() < 1e-9);
        let mut s = SlotStore::default();
        s.publish(0, p);
        assert_eq!(
            s.earliest_on(0, t(0), 4, EmuDuration::from_secs(10)),
            Some(t(100))
        );
        // Least-load's view: 800 core-seconds over 200 s is 4 cores busy of 8; a cluster that
        // has not published leaves the view unknown.
        let loads = s
            .loads(1, t(0), EmuDuration::from_secs(200))
            .expect("all known");
        assert_eq!((loads.busy, loads.cores), (vec![4], vec![8]));
        assert!(s.loads(2, t(0), EmuDuration::from_secs(200)).is_none());
    }

    /// The definitions, by brute force: every instant a start could be (`now` and each
    /// step), tested over its whole window; busy core-seconds summed second by second.
    fn earliest_by_definition(
        p: &Published,
        now: EmuTime,
        cores: u64,
        length: EmuDuration,
    ) -> Option<EmuTime> {
        let free: BTreeMap<EmuTime, u64> = p.free.iter().copied().collect();
        let mut starts: Vec<EmuTime> = free.keys().copied().filter(|&s| s >= now).collect();
        starts.push(now);
        starts.sort();
        starts.into_iter().find(|&s| {
            p.free_at(s) >= cores
                && free.range(s..s + length).all(|(_, f)| *f >= cores)
                && s + length <= p.until
        })
    }

    /// Microseconds below `secs` seconds: half on whole seconds (where steps, windows and
    /// horizons meet), half anywhere.
    fn micros(secs: u64) -> impl proptest::strategy::Strategy<Value = u64> {
        use proptest::strategy::Strategy;
        (0..secs, proptest::bool::ANY, 0u64..1_000_000)
            .prop_map(|(s, whole, us)| s * 1_000_000 + if whole { 0 } else { us })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::proptest_cases(500), failure_persistence: None, ..Default::default() })]

        /// A view of the store at one instant answers every query as the store does, float
        /// for float, before and after it lays a cluster out (random clusters, bookings and
        /// queries; times to the microsecond, so the sums are not exact).
        #[test]
        fn a_view_answers_as_the_store(
            clusters in proptest::collection::vec(
                (proptest::collection::vec((micros(30), 0u64..9), 0..25), micros(32), 1u64..9),
                0..4,
            ),
            bookings in proptest::collection::vec((0usize..4, micros(30), 0u64..9, micros(9)), 0..6),
            now in micros(30),
            queries in proptest::collection::vec((0usize..5, 0u64..10, micros(20), micros(40)), 1..12),
        ) {
            let us = EmuTime::from_micros;
            let mut store = SlotStore::default();
            for (j, (steps, until, cores)) in clusters.iter().enumerate() {
                store.publish(j, Published {
                    free: sorted(steps.iter().map(|&(s, f)| (us(s), f.min(*cores)))),
                    until: us(*until),
                    cores: *cores,
                    price: 1.0,
                });
            }
            for &(j, start, cores, length) in &bookings {
                if j < clusters.len() {
                    store.book(j, us(start), cores, EmuDuration::from_micros(length));
                }
            }
            let now = us(now);
            let view = store.at(now);
            proptest::prop_assert_eq!(view.until(), store.until());
            for &(j, cores, length, before) in &queries {
                let length = EmuDuration::from_micros(length);
                let want = store.earliest_on(j, now, cores, length);
                proptest::prop_assert_eq!(view.earliest_on(j, cores, length), want);
                // Bounded: the same start if it is before the bound, else none.
                let before = us(before);
                let steps = store.clusters.get(&j).map(|p| p.free.iter().map(|&(at, _)| at).collect::<Vec<_>>());
                for before in steps.unwrap_or_default().into_iter().chain([before, now]) {
                    proptest::prop_assert_eq!(
                        view.earliest_on_before(j, cores, length, before),
                        want.filter(|&s| s < before)
                    );
                }
                let (load, cap) = view.grid_load(length);
                let (want_load, want_cap) = store.grid_load(now, length);
                proptest::prop_assert_eq!(load.to_bits(), want_load.to_bits());
                proptest::prop_assert_eq!(cap.to_bits(), want_cap.to_bits());
            }
        }

        /// A booking takes its cores from the free cores over its slot, cut at the horizon,
        /// and leaves them elsewhere (asked at every half second), its steps ascending.
        #[test]
        fn a_booking_takes_its_cores_over_its_slot(
            steps in proptest::collection::vec((0u64..60, 0u64..9), 0..20),
            until in 0u64..70,
            bookings in proptest::collection::vec((0u64..70, 0u64..5, 0u64..30), 1..6),
        ) {
            let mut p = Published {
                free: sorted(steps.iter().map(|&(s, f)| (t(s), f.min(8)))),
                until: t(until),
                cores: 8,
                price: 1.0,
            };
            for (start, cores, length) in bookings {
                let before = p.clone();
                p.book(t(start), cores, EmuDuration::from_secs(length));
                let end = (start + length).min(until);
                for half in 0..150 {
                    let at = EmuTime::from_micros(half * 500_000);
                    let taken = t(start) <= at && at < t(end);
                    let want = if taken { before.free_at(at).saturating_sub(cores) } else { before.free_at(at) };
                    proptest::prop_assert_eq!(p.free_at(at), want, "at {:?}", at);
                }
                proptest::prop_assert!(p.free.windows(2).all(|w| w[0].0 < w[1].0));
            }
        }

        /// The searches agree with the definition on long publications made of runs of
        /// steps (the free cores crossing a request's now and then, or at every step), after
        /// bookings, from the store and from a view (laid out once asked enough) with a
        /// bound.
        #[test]
        fn searches_over_long_publications_match_the_definition(
            runs in proptest::collection::vec((1usize..40, 0u64..9), 0..30),
            until in 0u64..1300,
            bookings in proptest::collection::vec((0u64..1300, 0u64..5, 0u64..200), 0..4),
            queries in proptest::collection::vec((0u64..1300, 0u64..10, 0u64..400, 0u64..1400), 1..8),
        ) {
            let free = runs.iter().flat_map(|&(n, f)| std::iter::repeat_n(f, n));
            let mut store = SlotStore::default();
            store.publish(0, Published {
                free: free.enumerate().map(|(i, f)| (t(i as u64), f)).collect(),
                until: t(until),
                cores: 8,
                price: 1.0,
            });
            for (start, cores, length) in bookings {
                store.book(0, t(start), cores, EmuDuration::from_secs(length));
            }
            let p = store.clusters[&0].clone();
            for (now, cores, length, before) in queries {
                let length = EmuDuration::from_secs(length);
                let want = earliest_by_definition(&p, t(now), cores, length);
                proptest::prop_assert_eq!(store.earliest_on(0, t(now), cores, length), want);
                let view = store.at(t(now));
                // The bound given, and at the answer itself and just past it.
                let bounds = [Some(t(before)), want, want.map(|w| w + EmuDuration::from_micros(1))];
                for _ in 0..4 {
                    // A window asks the load too: what lays a cluster out.
                    let _ = view.grid_load(length);
                    for before in bounds.into_iter().flatten() {
                        proptest::prop_assert_eq!(
                            view.earliest_on_before(0, cores, length, before),
                            want.filter(|&s| s < before)
                        );
                    }
                }
            }
        }

        /// The one-pass searches agree with the definitions on random publications (steps
        /// on whole seconds, so the per-second sum is exact).
        #[test]
        fn one_pass_searches_match_the_definitions(
            steps in proptest::collection::vec((0u64..300, 0u64..9), 0..25),
            until in 0u64..320,
            now in 0u64..300,
            cores in 0u64..10,
            length in 0u64..200,
            to in 0u64..340,
        ) {
            let p = Published {
                free: sorted(steps.iter().map(|&(s, f)| (t(s), f))),
                until: t(until),
                cores: 8,
                price: 1.0,
            };
            let length = EmuDuration::from_secs(length);
            proptest::prop_assert_eq!(
                p.earliest(t(now), cores, length),
                earliest_by_definition(&p, t(now), cores, length)
            );
            // Each second at the free cores in force where its segment began: at `now` or
            // at the last step since, none at or past the horizon.
            let step_at = |s: u64| {
                let began = (p.free.iter().rev())
                    .find(|&&(a, _)| t(now) <= a && a <= t(s))
                    .map_or(t(now), |&(a, _)| a);
                if began >= p.until { 0 } else { p.free_at(began) }
            };
            let by_second: u64 = (now..to.max(now))
                .map(|s| p.cores.saturating_sub(step_at(s)))
                .sum();
            proptest::prop_assert_eq!(p.used_units(t(now), t(to)), by_second as f64);
        }
    }
}
