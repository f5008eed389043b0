//! Paper 004's resource provider policies (§4, §6.3): how a cluster backfills (EASY, `Eb`, or
//! conservative, `Cb`) and whether it splits its resources into a local and a Grid partition
//! (`M`), sized by a load forecast (`Mf`). Named as the paper names them — `cb`, `cbm`,
//! `cbmf`, `eb`, `ebm`, `ebmf` — and chosen per Grid.
//!
//! What the partitions do here:
//! * **Priority.** When the scheduler backfills, local jobs go ahead of waiting Grid jobs
//!   (§4.2: "the waiting queue is ordered by priority when the scheduler is backfilling"; at
//!   a reallocation "backfill the jobs, starting with the local jobs"); reservations already
//!   made are kept. Under EASY each partition has its own pivots, as in Lawson and Smirni's
//!   policy.
//! * **Limits and borrowing** ([`super::partition`]). The local partition has the size the
//!   forecast (or the mean local load) gives it, the Grid's the rest; a job takes its own
//!   partition's idle cores first, and may borrow the other's idle cores — those no job or
//!   pivot of that partition holds over its window — whether it starts now or is reserved for
//!   later (as the authors' GridSim implementation schedules a pivot).
//! * **Forecast (`Mf`).** At each publication the provider forecasts its local load over the
//!   next interval with an exponentially weighted moving average of the local load of past
//!   intervals (§6.1: a window of 25 intervals, so α = 2 / (25 + 1)), schedules its queue
//!   conservatively (Algorithm 1, lines 3–5), and publishes free slots from which the share
//!   of the forecast its local jobs do not already hold is kept back (lines 6–10). Half an
//!   interval later, a reallocation event checks the forecast against the local load since
//!   the publication; if it was an underestimate, the partition is resized to the load seen
//!   and the slots are published again (lines 20–24).
//!
//! Without a forecast (`M`), the local partition is sized at each publication by the local
//! load measured so far (the mean over every past interval: no forecast technique, no
//! reallocation events), and kept back from the slots in the same way. A local load is the
//! cores × seconds of the local jobs submitted in an interval over the interval's length
//! (cores in demand).

use std::collections::BTreeMap;

use crate::model::published::{provider_price, Published};
use crate::time::{EmuDuration, EmuTime};

named_enum! {
    /// A resource provider policy of paper 004 (§6.3's acronyms; `[igg] provider`).
    ProviderPolicy {
        /// Conservative backfilling, one partition.
        Cb => "cb",
        /// Conservative backfilling, local and Grid partitions.
        CbM => "cbm",
        /// Conservative backfilling, partitions sized by a load forecast.
        CbMf => "cbmf",
        /// EASY backfilling, one partition.
        Eb => "eb",
        /// EASY backfilling, local and Grid partitions.
        EbM => "ebm",
        /// EASY backfilling, partitions sized by a load forecast (conservative at
        /// publications).
        EbMf => "ebmf",
    }
}

/// How a provider partitions its resources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partitions {
    /// One partition for every job.
    Single,
    /// Local and Grid partitions, local jobs first.
    Fixed,
    /// Local and Grid partitions resized by a load forecast.
    Forecast,
}

impl ProviderPolicy {
    /// Whether it backfills with EASY (else conservative).
    pub fn easy(self) -> bool {
        matches!(
            self,
            ProviderPolicy::Eb | ProviderPolicy::EbM | ProviderPolicy::EbMf
        )
    }

    /// Its partitions.
    pub fn partitions(self) -> Partitions {
        match self {
            ProviderPolicy::Cb | ProviderPolicy::Eb => Partitions::Single,
            ProviderPolicy::CbM | ProviderPolicy::EbM => Partitions::Fixed,
            ProviderPolicy::CbMf | ProviderPolicy::EbMf => Partitions::Forecast,
        }
    }
}

/// Intervals in the forecast's window (§6.1).
pub const FORECAST_WINDOW: u32 = 25;

/// A provider's local-load forecast: an exponentially weighted moving average over the
/// publication intervals, and the local demand of the interval under way.
#[derive(Clone, Debug)]
pub struct Forecast {
    /// The average's weight of the latest interval; `None`: the plain mean of all intervals.
    alpha: Option<f64>,
    /// Intervals folded in.
    intervals: u32,
    /// Forecast local load (cores) for the interval under way; `None` before the first.
    forecast: Option<f64>,
    /// Core-seconds of local jobs submitted since the interval began.
    demand: f64,
    since: EmuTime,
}

impl Forecast {
    /// A forecast over a window of `window` intervals (α = 2 / (window + 1)).
    pub fn new(window: u32, now: EmuTime) -> Forecast {
        Forecast {
            alpha: Some(2.0 / (f64::from(window) + 1.0)),
            intervals: 0,
            forecast: None,
            demand: 0.0,
            since: now,
        }
    }

    /// The mean local load of every interval so far (no forecast: the `M` policies).
    pub fn mean(now: EmuTime) -> Forecast {
        Forecast {
            alpha: None,
            ..Forecast::new(FORECAST_WINDOW, now)
        }
    }

    /// A local job of `cores` for `duration` was submitted.
    pub fn local_submitted(&mut self, cores: u64, duration: EmuDuration) {
        self.demand += cores as f64 * duration.as_secs_f64();
    }

    /// The local load (cores) since the interval began.
    fn observed(&self, now: EmuTime) -> f64 {
        let span = now.since(self.since).as_secs_f64();
        if span > 0.0 {
            self.demand / span
        } else {
            0.0
        }
    }

    /// A publication at `now`: the interval that ends is folded into the average, a new one
    /// begins; returns the forecast local load (cores) for it.
    pub fn publish(&mut self, now: EmuTime) -> f64 {
        if now > self.since {
            let x = self.observed(now);
            self.intervals += 1;
            let alpha = self.alpha.unwrap_or(1.0 / f64::from(self.intervals));
            self.forecast = Some(match self.forecast {
                Some(f) => alpha * x + (1.0 - alpha) * f,
                None => x,
            });
        }
        self.demand = 0.0;
        self.since = now;
        self.forecast.unwrap_or(0.0)
    }

    /// A reallocation event at `now`: the local load since the publication if the forecast
    /// underestimated it (the partition is then resized to it), else `None`. The forecast
    /// itself stays the moving average of whole intervals (§6.1: "a window of 25
    /// intervals"): folding the half-interval's load into it would ratchet it up — an
    /// underestimate is acted on and an overestimate is not, and the shorter the interval,
    /// the noisier the half-interval's load and the more often it exceeds the average.
    pub fn reallocation(&self, now: EmuTime) -> Option<f64> {
        let seen = self.observed(now);
        let forecast = self.forecast.unwrap_or(0.0);
        (seen > forecast).then_some(seen)
    }
}

/// The Grid partition's free cores: `free` (the cluster's free cores from each change point
/// on) less the part of the local partition of `reserve` cores its local jobs do not hold
/// (`local`, the local jobs' cores from each change point on) — the Grid borrows only what
/// the forecast leaves.
pub fn grid_share(
    free: &BTreeMap<EmuTime, u64>,
    local: &BTreeMap<EmuTime, u64>,
    reserve: u64,
) -> BTreeMap<EmuTime, u64> {
    let at = |m: &BTreeMap<EmuTime, u64>, t: EmuTime| m.range(..=t).next_back().map_or(0, |e| *e.1);
    let mut points: Vec<EmuTime> = free.keys().chain(local.keys()).copied().collect();
    points.sort_unstable();
    points.dedup();
    let Some(&first) = free.keys().next() else {
        return BTreeMap::new();
    };
    let mut share = BTreeMap::new();
    let mut last = None;
    for t in points.into_iter().filter(|t| *t >= first) {
        let kept = reserve.saturating_sub(at(local, t));
        let f = at(free, t).saturating_sub(kept);
        if last != Some(f) {
            share.insert(t, f);
            last = Some(f);
        }
    }
    share
}

/// Keeps the local partition back from a provider's published slots (paper 004 §4.2):
/// `reserve` cores of local partition are kept where the local jobs (`local`, their cores
/// from each change point on) do not hold them, and the price becomes eq. 1 at the load that
/// leaves (the load estimate of a forecasting provider).
pub fn keep_back(
    slots: &mut Published,
    now: EmuTime,
    local: &BTreeMap<EmuTime, u64>,
    reserve: u64,
    unit_cost: f64,
) {
    let free: BTreeMap<EmuTime, u64> = slots.free.iter().copied().collect();
    slots.free = grid_share(&free, local, reserve).into_iter().collect();
    let cap = slots.cores as f64 * slots.until.since(now).as_secs_f64();
    if cap > 0.0 {
        let load = slots.used_units(now, slots.until) / cap;
        slots.price = provider_price(unit_cost, load);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    #[test]
    fn the_forecast_is_an_ewma_of_the_local_load_per_interval() {
        let mut f = Forecast::new(FORECAST_WINDOW, t(0));
        // 10 cores busy for the whole of the first 100 s interval.
        f.local_submitted(10, EmuDuration::from_secs(100));
        assert!(
            (f.publish(t(100)) - 10.0).abs() < 1e-9,
            "the first is the load seen"
        );
        // None in the second: α = 2/26 of 0 and 24/26 of 10.
        let second = f.publish(t(200));
        assert!((second - 10.0 * 24.0 / 26.0).abs() < 1e-9, "{second}");
        // An underestimate is corrected at the reallocation; an overestimate is not.
        f.local_submitted(20, EmuDuration::from_secs(50));
        assert_eq!(f.reallocation(t(250)), Some(20.0));
        let mut g = Forecast::new(FORECAST_WINDOW, t(0));
        g.local_submitted(10, EmuDuration::from_secs(100));
        g.publish(t(100));
        assert_eq!(g.reallocation(t(150)), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..Default::default() })]
        /// Whatever the reallocation events saw, each publication's forecast is the
        /// exponentially weighted moving average of the whole intervals' local loads, written
        /// here from its definition (the first interval's load, then α x + (1 − α) f).
        #[test]
        fn reallocations_leave_the_moving_average_of_whole_intervals(
            intervals in proptest::collection::vec(
                (proptest::collection::vec((1u64..64, 1u64..400), 0..6), 0usize..7),
                1..30,
            ),
        ) {
            let alpha = 2.0 / (f64::from(FORECAST_WINDOW) + 1.0);
            let mut f = Forecast::new(FORECAST_WINDOW, t(0));
            let mut reference: Option<f64> = None;
            for (i, (jobs, half_jobs)) in intervals.iter().enumerate() {
                let start = 100 * i as u64;
                let mut demand = 0.0;
                for (k, (cores, secs)) in jobs.iter().enumerate() {
                    f.local_submitted(*cores, EmuDuration::from_secs(*secs));
                    demand += (*cores * *secs) as f64;
                    if k + 1 == *half_jobs {
                        // Half an interval in: the event may resize, but not re-average.
                        let seen = f.reallocation(t(start + 50));
                        let expect = (demand / 50.0 > reference.unwrap_or(0.0))
                            .then_some(demand / 50.0);
                        proptest::prop_assert_eq!(seen, expect);
                    }
                }
                let x = demand / 100.0;
                let want = reference.map_or(x, |r| alpha * x + (1.0 - alpha) * r);
                reference = Some(want);
                let got = f.publish(t(start + 100));
                proptest::prop_assert!((got - want).abs() <= 1e-9 * want.max(1.0), "{got} {want}");
            }
        }
    }

    #[test]
    fn without_a_forecast_the_partition_is_the_mean_local_load() {
        let mut m = Forecast::mean(t(0));
        m.local_submitted(10, EmuDuration::from_secs(100));
        assert_eq!(m.publish(t(100)), 10.0);
        assert_eq!(m.publish(t(200)), 5.0);
        m.local_submitted(30, EmuDuration::from_secs(100));
        assert_eq!(m.publish(t(300)), 40.0 / 3.0);
    }

    #[test]
    fn the_grid_share_keeps_back_the_forecast_its_locals_do_not_hold() {
        // 8 free until 100 then 4; locals hold 2 cores until 50; a forecast of 3 cores.
        let free: BTreeMap<EmuTime, u64> = [(t(0), 8), (t(100), 4)].into_iter().collect();
        let local: BTreeMap<EmuTime, u64> = [(t(0), 2), (t(50), 0)].into_iter().collect();
        let share = grid_share(&free, &local, 3);
        let expect: BTreeMap<EmuTime, u64> =
            [(t(0), 7), (t(50), 5), (t(100), 1)].into_iter().collect();
        assert_eq!(share, expect);
        // No reserve: the slots as scanned.
        assert_eq!(grid_share(&free, &local, 0), free);
    }

    #[test]
    fn the_policies_are_the_papers_combinations() {
        assert!(ProviderPolicy::EbMf.easy());
        assert_eq!(ProviderPolicy::EbMf.partitions(), Partitions::Forecast);
        assert!(!ProviderPolicy::CbM.easy());
        assert_eq!(ProviderPolicy::CbM.partitions(), Partitions::Fixed);
        assert_eq!(ProviderPolicy::parse("cb"), Some(ProviderPolicy::Cb));
    }
}
