//! Per-request metrics as a scheduling researcher reads them in Batsim's `jobs.csv`, Evalys
//! and Haizea: waiting time, turnaround time, slowdown, bounded slowdown and stretch of each
//! request (`requests.csv`'s last columns), and their mean and percentiles over the run and
//! per Grid, origin and lease type (`summary.json`'s `request_metrics`).
//!
//! With `submit`, `start` (the first start), `end` and `duration` (the requested run time,
//! `requests.csv`'s `duration_s`):
//!
//! - waiting time = start − submit (Batsim's `waiting_time`, Haizea's `get_waiting_time`);
//! - turnaround time = end − submit (Batsim's `turnaround_time`);
//! - slowdown = turnaround / duration: the time in the system over the time it would take
//!   on a dedicated system, neither waiting nor preempted (Feitelson's slowdown; Haizea's
//!   `get_slowdown` without its bound; the "stretch" of Bender et al., flow time over
//!   processing time);
//! - bounded slowdown = max(1, turnaround / max(duration, τ)), τ = 10 s unless
//!   `[metrics] bounded_slowdown_tau_s` says otherwise (Feitelson et al.'s bounded
//!   slowdown; Haizea's `get_slowdown(bound=10)` without the floor of 1);
//! - stretch = turnaround / (end − start): the time in the system over the time from its
//!   first start to its end, suspensions and their operations included (Batsim's and
//!   Evalys's `stretch`, turnaround over `execution_time`).
//!
//! Waiting time is given for every request that started; the others only for completed ones
//! (a cancelled lease did not do its work, a rejected or unfinished one has no end). A ratio
//! whose denominator is zero (a request of no duration, one that ended where it started) is
//! not given. Percentiles are nearest-rank: the p-th of n sorted values is the ⌈p·n/100⌉-th.

use std::collections::BTreeMap;

use serde::Serialize;

use super::observe::RequestRecord;
use crate::model::{LeaseRequest, LeaseType, Origin, RequestState};
use crate::time::{EmuDuration, EmuTime};
use crate::topology::Topology;

/// τ of the bounded slowdown when the topology sets none, seconds (defined with the
/// topology's `[metrics]` settings, which default to it).
pub use crate::topology::DEFAULT_TAU_S;

/// What a request's metrics are computed from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Times {
    /// When it was submitted.
    pub submit: EmuTime,
    /// When it first started, if it did.
    pub start: Option<EmuTime>,
    /// When it reached its terminal state, if it did.
    pub end: Option<EmuTime>,
    /// Its requested run time.
    pub duration: EmuDuration,
    /// Whether it completed.
    pub completed: bool,
}

impl Times {
    /// The times of request `req` as `rec` observed it.
    pub fn of(req: &LeaseRequest, rec: &RequestRecord) -> Times {
        Times {
            submit: req.arrival,
            start: rec.start,
            end: rec.end,
            duration: req.duration,
            completed: rec.state == Some(RequestState::Completed),
        }
    }
}

/// One request's metrics; `None` where a metric does not apply (see the module's doc).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Measures {
    /// start − submit, seconds.
    pub wait_s: Option<f64>,
    /// end − submit, seconds.
    pub turnaround_s: Option<f64>,
    /// turnaround / duration.
    pub slowdown: Option<f64>,
    /// max(1, turnaround / max(duration, τ)).
    pub bounded_slowdown: Option<f64>,
    /// turnaround / (end − start).
    pub stretch: Option<f64>,
}

/// The metrics' names as `requests.csv` and `summary.json` write them, in [`Measures::all`]'s
/// order.
pub const METRIC_NAMES: [&str; 5] = [
    "wait_s",
    "turnaround_s",
    "slowdown",
    "bounded_slowdown",
    "stretch",
];

impl Measures {
    /// The metrics of a request with `times`, τ = `tau_s` seconds (> 0).
    pub fn of(times: &Times, tau_s: f64) -> Measures {
        let secs = |d: EmuDuration| d.as_secs_f64();
        let wait_s = times.start.map(|s| secs(s.since(times.submit)));
        let (Some(start), Some(end), true) = (times.start, times.end, times.completed) else {
            return Measures {
                wait_s,
                ..Measures::default()
            };
        };
        let turnaround = secs(end.since(times.submit));
        let run = secs(times.duration);
        let execution = secs(end.since(start));
        let ratio = |d: f64| (d > 0.0).then(|| turnaround / d);
        Measures {
            wait_s,
            turnaround_s: Some(turnaround),
            slowdown: ratio(run),
            bounded_slowdown: Some((turnaround / run.max(tau_s)).max(1.0)),
            stretch: ratio(execution),
        }
    }

    /// The metrics in [`METRIC_NAMES`]' order.
    pub fn all(&self) -> [Option<f64>; 5] {
        [
            self.wait_s,
            self.turnaround_s,
            self.slowdown,
            self.bounded_slowdown,
            self.stretch,
        ]
    }
}

/// The mean and nearest-rank percentiles of one metric over a set of requests: `n` of them
/// have it (the others are not counted); every figure is `null` when none has.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    /// Requests that have the metric.
    pub n: u64,
    /// Their mean.
    pub mean: Option<f64>,
    /// The median (nearest-rank 50th percentile).
    pub p50: Option<f64>,
    /// The nearest-rank 90th percentile.
    pub p90: Option<f64>,
    /// The nearest-rank 99th percentile.
    pub p99: Option<f64>,
    /// The largest.
    pub max: Option<f64>,
}

impl Stats {
    /// The statistics of `values` (reordered; finite numbers).
    pub fn of(values: &mut [f64]) -> Stats {
        let n = values.len();
        if n == 0 {
            return Stats::default();
        }
        let sum: f64 = values.iter().sum();
        let (min, max) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        // Rounding may put a sum over n a hair outside the values it averages.
        let mean = (sum / n as f64).clamp(min, max);
        // The ⌈p·n/100⌉-th smallest, counted from 1, each looked for among the values above
        // the one before (a selection leaves them after it): 1.6 n steps, not 3 n.
        let mut from = 0;
        let mut rank = |p: usize| {
            let k = (p * n).div_ceil(100).max(1) - 1;
            let x = *values[from..]
                .select_nth_unstable_by(k - from, f64::total_cmp)
                .1;
            from = k;
            x
        };
        let (p50, p90, p99) = (rank(50), rank(90), rank(99));
        Stats {
            n: n as u64,
            mean: Some(mean),
            p50: Some(p50),
            p90: Some(p90),
            p99: Some(p99),
            max: Some(max),
        }
    }
}

/// Every metric's statistics over one set of requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct MetricStats {
    /// Waiting time, seconds.
    pub wait_s: Stats,
    /// Turnaround time, seconds.
    pub turnaround_s: Stats,
    /// Slowdown.
    pub slowdown: Stats,
    /// Bounded slowdown.
    pub bounded_slowdown: Stats,
    /// Stretch.
    pub stretch: Stats,
}

impl MetricStats {
    /// The statistics over the requests `members` of `measures`, `buffer` reused for each
    /// metric's values.
    fn over(measures: &[Measures], members: &[u32], buffer: &mut Vec<f64>) -> MetricStats {
        let mut each = METRIC_NAMES.map(|_| Stats::default());
        for (m, stats) in each.iter_mut().enumerate() {
            buffer.clear();
            buffer.extend((members.iter()).filter_map(|&i| measures[i as usize].all()[m]));
            *stats = Stats::of(buffer);
        }
        let [wait_s, turnaround_s, slowdown, bounded_slowdown, stretch] = each;
        MetricStats {
            wait_s,
            turnaround_s,
            slowdown,
            bounded_slowdown,
            stretch,
        }
    }
}

/// `summary.json`'s `request_metrics`: the per-request metrics' statistics over every
/// request and per Grid (the Grid a request was submitted in), origin, lease type, and Grid
/// and origin together (`<grid>/<origin>`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RequestMetrics {
    /// τ of the bounded slowdown, seconds.
    pub bounded_slowdown_tau_s: f64,
    /// How percentiles are taken: `nearest-rank`.
    pub percentiles: &'static str,
    /// Over every request.
    pub all: MetricStats,
    /// Per Grid, by name.
    pub by_grid: BTreeMap<String, MetricStats>,
    /// Per origin (`local`, `external`).
    pub by_origin: BTreeMap<String, MetricStats>,
    /// Per lease type.
    pub by_lease_type: BTreeMap<String, MetricStats>,
    /// Per Grid and origin, by `<grid>/<origin>`.
    pub by_grid_origin: BTreeMap<String, MetricStats>,
}

impl RequestMetrics {
    /// The shape a run of `topo` gives `request_metrics`, every figure 0: its groups are
    /// those of the topology's requests (for naming a sweep's metrics before any run).
    pub fn skeleton(topo: &Topology) -> RequestMetrics {
        let zero = Some(0.0);
        let every = Measures {
            wait_s: zero,
            turnaround_s: zero,
            slowdown: zero,
            bounded_slowdown: zero,
            stretch: zero,
        };
        // Every request measured, whatever the warm-up: each group has each figure.
        statistics_of(topo, &vec![every; topo.requests.len()], &|_| true)
    }
}

/// Each request's metrics, in request order.
pub fn measures(topo: &Topology, records: &[RequestRecord]) -> Vec<Measures> {
    let tau = topo.metrics.bounded_slowdown_tau_s;
    (topo.requests.iter().zip(records))
        .map(|(q, r)| Measures::of(&Times::of(q, r), tau))
        .collect()
}

/// The statistics of the requests' `measures` (in request order) overall and per group,
/// over the requests submitted from the warm-up on (`[metrics] warm_up`).
pub fn request_metrics(topo: &Topology, measures: &[Measures]) -> RequestMetrics {
    statistics_of(topo, measures, &|q| topo.metrics.measured(q.arrival))
}

/// The statistics of `measures` over the requests that are `measured`.
fn statistics_of(
    topo: &Topology,
    measures: &[Measures],
    measured: &dyn Fn(&LeaseRequest) -> bool,
) -> RequestMetrics {
    let requests = &topo.requests[..measures.len().min(topo.requests.len())];
    let mut buffer = Vec::new();
    // Requests submitted in the warm-up (`[metrics] warm_up`) are measured in no group, but
    // still make their group: the keys are the topology's, whatever the warm-up (a sweep
    // names its metrics before any run, `RequestMetrics::skeleton`).
    let everyone: Vec<u32> = (0..requests.len() as u32)
        .filter(|&i| measured(&requests[i as usize]))
        .collect();
    // The requests of each group, groups numbered by a key of the request (no name made
    // per request), then named.
    let mut over = |key: &dyn Fn(&LeaseRequest) -> usize, name: &dyn Fn(usize) -> String| {
        let mut groups: Vec<Option<Vec<u32>>> = Vec::new();
        for (i, q) in requests.iter().enumerate() {
            let k = key(q);
            if groups.len() <= k {
                groups.resize_with(k + 1, || None);
            }
            let members = groups[k].get_or_insert_with(Vec::new);
            if measured(q) {
                members.push(i as u32);
            }
        }
        (groups.iter().enumerate())
            .filter_map(|(k, members)| Some((k, members.as_ref()?)))
            .map(|(k, members)| (name(k), MetricStats::over(measures, members, &mut buffer)))
            .collect::<BTreeMap<_, _>>()
    };
    let grid_name = |g: usize| topo.grids[g].name.clone();
    let origins = [Origin::Local, Origin::External];
    let origin = |q: &LeaseRequest| usize::from(q.origin == Origin::External);
    let lease_type = |q: &LeaseRequest| {
        (LeaseType::ALL.iter())
            .position(|t| *t == q.lease_type)
            .unwrap_or(0)
    };
    let by_grid = over(&|q| usize::from(q.grid.0), &grid_name);
    let by_origin = over(&origin, &|k| origins[k].as_str().to_string());
    let by_lease_type = over(&lease_type, &|k| LeaseType::ALL[k].as_str().to_string());
    let by_grid_origin = over(&|q| 2 * usize::from(q.grid.0) + origin(q), &|k| {
        format!("{}/{}", grid_name(k / 2), origins[k % 2].as_str())
    });
    RequestMetrics {
        bounded_slowdown_tau_s: topo.metrics.bounded_slowdown_tau_s,
        percentiles: "nearest-rank",
        all: MetricStats::over(measures, &everyone, &mut buffer),
        by_grid,
        by_origin,
        by_lease_type,
        by_grid_origin,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn times(submit: u64, start: Option<u64>, end: Option<u64>, dur: u64, done: bool) -> Times {
        Times {
            submit: EmuTime::from_secs(submit),
            start: start.map(EmuTime::from_secs),
            end: end.map(EmuTime::from_secs),
            duration: EmuDuration::from_secs(dur),
            completed: done,
        }
    }

    #[test]
    fn each_metric_is_its_formula_and_only_where_it_applies() {
        // Submitted at 10, started at 40, suspended for a while, ended at 170; asked 100 s.
        let m = Measures::of(&times(10, Some(40), Some(170), 100, true), 10.0);
        assert_eq!(m.wait_s, Some(30.0));
        assert_eq!(m.turnaround_s, Some(160.0));
        assert_eq!(m.slowdown, Some(1.6));
        assert_eq!(m.bounded_slowdown, Some(1.6));
        assert_eq!(m.stretch, Some(160.0 / 130.0));
        // A 2 s request that waited 6 s: slowdown 4, bounded by τ = 10 s to 1 (floored).
        let short = Measures::of(&times(0, Some(6), Some(8), 2, true), 10.0);
        assert_eq!(
            (short.slowdown, short.bounded_slowdown),
            (Some(4.0), Some(1.0))
        );
        let bounded = Measures::of(&times(0, Some(28), Some(30), 2, true), 10.0);
        assert_eq!(bounded.bounded_slowdown, Some(3.0));
        // Cancelled: waited, nothing else. Rejected: nothing.
        let cancelled = Measures::of(&times(0, Some(5), Some(9), 2, false), 10.0);
        assert_eq!(
            cancelled,
            Measures {
                wait_s: Some(5.0),
                ..Measures::default()
            }
        );
        assert_eq!(
            Measures::of(&times(0, None, Some(0), 2, false), 10.0),
            Measures::default()
        );
        // No duration, no time between start and end: those ratios are not given.
        let instant = Measures::of(&times(3, Some(4), Some(4), 0, true), 10.0);
        assert_eq!((instant.slowdown, instant.stretch), (None, None));
        assert_eq!(instant.bounded_slowdown, Some(1.0));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let s = Stats::of(&mut v);
        assert_eq!(s.n, 10);
        assert_eq!(s.mean, Some(5.5));
        // ⌈0.5·10⌉ = 5th, ⌈0.9·10⌉ = 9th, ⌈0.99·10⌉ = 10th.
        assert_eq!(
            (s.p50, s.p90, s.p99, s.max),
            (Some(5.0), Some(9.0), Some(10.0), Some(10.0))
        );
        let s = Stats::of(&mut [7.0]);
        assert_eq!((s.p50, s.p99, s.max), (Some(7.0), Some(7.0), Some(7.0)));
        assert_eq!(Stats::of(&mut []), Stats::default());
    }

    fn arb_times() -> impl Strategy<Value = Times> {
        (
            0u64..1_000_000_000,
            proptest::option::of(0u64..1_000_000_000),
            0u64..1_000_000_000,
            0u64..100_000_000,
            any::<bool>(),
        )
            .prop_map(|(submit, wait, run, dur, done)| {
                let start = wait.map(|w| submit + w);
                Times {
                    submit: EmuTime::from_micros(submit),
                    start: start.map(EmuTime::from_micros),
                    end: start.map(|s| EmuTime::from_micros(s + run)),
                    duration: EmuDuration::from_micros(dur),
                    completed: done,
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: crate::proptest_cases(500), failure_persistence: None, ..Default::default() })]

        /// Bounded slowdown is at least 1, at most the slowdown where the run is at least τ
        /// (and equal to it there when that is ≥ 1); waiting ≤ turnaround; every figure is
        /// finite and not negative.
        #[test]
        fn bounded_slowdown_bounds_hold(t in arb_times(), tau in 0.001f64..1000.0) {
            let m = Measures::of(&t, tau);
            for v in m.all().into_iter().flatten() {
                prop_assert!(v.is_finite() && v >= 0.0, "{v}");
            }
            if let Some(b) = m.bounded_slowdown {
                prop_assert!(b >= 1.0);
                let run = t.duration.as_secs_f64();
                if let (Some(s), true) = (m.slowdown, run >= tau) {
                    prop_assert!(b >= s && (b - s.max(1.0)).abs() <= 1e-12 * b, "{b} vs {s}");
                    prop_assert!(b <= s.max(1.0));
                }
            }
            if let (Some(w), Some(ta)) = (m.wait_s, m.turnaround_s) {
                prop_assert!(w <= ta);
            }
            if let (Some(st), Some(_)) = (m.stretch, m.turnaround_s) {
                prop_assert!(st >= 1.0 - 1e-12, "stretch {st}: turnaround includes the run");
            }
            prop_assert_eq!(m.turnaround_s.is_some(), t.completed && t.start.is_some());
        }

        /// Percentiles are values of the set, in order, and the mean lies within it.
        #[test]
        fn statistics_are_ordered_and_within_the_values(
            values in proptest::collection::vec(0.0f64..1e9, 1..300)
        ) {
            let mut v = values.clone();
            let s = Stats::of(&mut v);
            let (lo, hi) = values.iter().fold((f64::INFINITY, 0f64), |(a, b), x| (a.min(*x), b.max(*x)));
            let [p50, p90, p99, max, mean] = [s.p50, s.p90, s.p99, s.max, s.mean].map(|x| x.expect("some"));
            prop_assert!(p50 <= p90 && p90 <= p99 && p99 <= max);
            prop_assert_eq!(max, hi);
            prop_assert!((lo..=hi).contains(&mean));
            for p in [p50, p90, p99] {
                prop_assert!(values.contains(&p));
            }
            // Nearest rank: at least p % of the values are ≤ the p-th percentile, fewer
            // than p % are below it.
            let n = values.len() as f64;
            for (p, x) in [(50.0, p50), (90.0, p90), (99.0, p99)] {
                let at_most = values.iter().filter(|v| **v <= x).count() as f64;
                let below = values.iter().filter(|v| **v < x).count() as f64;
                prop_assert!(at_most >= p / 100.0 * n && below < p / 100.0 * n);
            }
        }
    }
}
