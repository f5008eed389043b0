//! What a cluster publishes of its free time slots (paper 004 §4.1, §5.3): an ordered step
//! function of free cores up to a horizon, with its price per resource unit (eq. 1). The LRMS
//! makes it, the IGG keeps and books it (`igg::slots`), and an LRMS reads its Grid's
//! other clusters' for a migration route; plain data with the earliest-start search both use.

use std::collections::BTreeMap;

use crate::time::{EmuDuration, EmuTime};

/// Eq. 1 (a provider's price per resource unit): its cost plus cost × its load.
pub fn provider_price(cost: f64, load: f64) -> f64 {
    cost + cost * load
}

/// One cluster's last publication.
#[derive(Clone, Debug, PartialEq)]
pub struct Published {
    /// Free cores from each instant on: strictly ascending instants, one entry each (a sorted
    /// array: the IGG walks it for every request of every round). Entries at or past `until`
    /// may be there; [`Published::free_at`] takes nothing as free there.
    pub free: Vec<(EmuTime, u64)>,
    /// The end of the published horizon.
    pub until: EmuTime,
    /// Cores of the cluster.
    pub cores: u64,
    /// Price per resource unit (eq. 1).
    pub price: f64,
}

impl Published {
    /// What a cluster of `cores` publishes at `now`: its free cores until `now + horizon`, and
    /// its price for a resource unit at its `load` (eq. 1, from its `unit_cost`).
    pub fn new(
        now: EmuTime,
        horizon: EmuDuration,
        (free, load): (BTreeMap<EmuTime, u64>, f64),
        cores: u64,
        unit_cost: f64,
    ) -> Published {
        Published {
            free: free.into_iter().collect(),
            until: now + horizon,
            cores,
            price: provider_price(unit_cost, load),
        }
    }

    /// Free cores at instant `t` (0 past the horizon: unknown is not free).
    pub fn free_at(&self, t: EmuTime) -> u64 {
        if t >= self.until {
            return 0;
        }
        match self.free.partition_point(|&(at, _)| at <= t) {
            0 => self.cores,
            i => self.free[i - 1].1,
        }
    }

    /// The steps at or after `from`.
    pub(crate) fn steps_from(&self, from: EmuTime) -> &[(EmuTime, u64)] {
        &self.free[self.free.partition_point(|&(at, _)| at < from)..]
    }

    /// The steps at or after `from` and before `to`.
    fn steps_in(&self, from: EmuTime, to: EmuTime) -> &[(EmuTime, u64)] {
        let rest = self.steps_from(from);
        &rest[..rest.partition_point(|&(at, _)| at < to)]
    }

    /// Used resource units (core-seconds) over `[from, to)`. Past the horizon the last
    /// published step holds on (a step at or after the horizon counts as fully used); unlike
    /// [`Published::free_at`], which calls unknown time not free. Kept so: the paper 004
    /// reproductions were measured with it.
    pub fn used_units(&self, from: EmuTime, to: EmuTime) -> f64 {
        if to <= from {
            return 0.0;
        }
        // One pass over the steps in [from, to): the segment before each step (and before
        // `to`) is busy at the free cores in force where it begins. Segments are summed in
        // time order, as before, so the float result does not change.
        let mut t = from;
        let mut free = self.free_at(from);
        let mut used = 0.0;
        let mut segment = |until: EmuTime, free_then: u64, t: EmuTime| {
            let busy = self.cores.saturating_sub(free_then);
            used += busy as f64 * until.since(t).as_secs_f64();
        };
        for &(p, f) in self.steps_in(from, to) {
            if p > t {
                segment(p, free, t);
                t = p;
            }
            free = if p >= self.until { 0 } else { f };
        }
        if to > t {
            segment(to, free, t);
        }
        used
    }

    /// Takes `cores` for `[start, start + length)` (a slot the gateway allocated), within
    /// the published horizon.
    pub fn book(&mut self, start: EmuTime, cores: u64, length: EmuDuration) {
        let end = (start + length).min(self.until);
        if end <= start {
            return;
        }
        let (at_start, at_end) = (self.free_at(start), self.free_at(end));
        // A step at each end of the slot (the one at its start, if new, repeats the cores
        // free there), then the cores taken from the steps within it.
        let mut mark = |t: EmuTime, free: u64| {
            let i = self.free.partition_point(|&(at, _)| at < t);
            if self.free.get(i).is_none_or(|&(at, _)| at != t) {
                self.free.insert(i, (t, free));
            }
        };
        mark(start, at_start);
        if end < self.until {
            mark(end, at_end);
        }
        let first = self.free.partition_point(|&(at, _)| at < start);
        for (at, f) in &mut self.free[first..] {
            if *at >= end {
                break;
            }
            *f = f.saturating_sub(cores);
        }
    }

    /// The earliest start at or after `now` with `cores` free for `length`, if within the
    /// published horizon.
    pub fn earliest(&self, now: EmuTime, cores: u64, length: EmuDuration) -> Option<EmuTime> {
        let ask = Ask {
            now,
            cores,
            length,
            before: EmuTime::NEVER,
        };
        self.first_fit(&ask)
    }

    /// [`Published::earliest`] for a run that may outlast the publication: the last step
    /// before the horizon is taken to hold on past it (as [`Published::used_units`] reads the
    /// time past the horizon), so a start found may end after the horizon.
    pub fn earliest_past_horizon(
        &self,
        now: EmuTime,
        cores: u64,
        length: EmuDuration,
    ) -> Option<EmuTime> {
        let ask = Ask {
            now,
            cores,
            length,
            before: EmuTime::NEVER,
        };
        let steps = self.steps_in(now, self.until.max(now));
        ask.first_fit(self.free_at(now), EmuTime::NEVER, steps.iter().copied())
    }

    /// The answer to `ask` from the published steps.
    pub(crate) fn first_fit(&self, ask: &Ask) -> Option<EmuTime> {
        // Past the horizon nothing is known to be free ([`Published::free_at`]): no run
        // starts there, and one running into it ends there.
        let steps = self.steps_in(ask.now, self.until.max(ask.now));
        ask.first_fit(self.free_at(ask.now), self.until, steps.iter().copied())
    }
}

/// An earliest-start question: from `now`, `cores` free for `length`, answered only with a
/// start before `before` (a search over several clusters wants no later one).
pub(crate) struct Ask {
    pub(crate) now: EmuTime,
    pub(crate) cores: u64,
    pub(crate) length: EmuDuration,
    pub(crate) before: EmuTime,
}

impl Ask {
    /// The earliest start over a cluster's `steps` (each instant from `now` on that its free
    /// cores change, and how many are free from then, up to its horizon `until`), with
    /// `free_now` free at `now`. One pass: the candidate is the start of the current run of
    /// steps with enough cores (`now` included); it wins once the run outlasts `length`. A
    /// start that fits past the horizon means none fits within it (later ends are later);
    /// with no run going, the next starts no earlier than the step at hand.
    pub(crate) fn first_fit(
        &self,
        free_now: u64,
        until: EmuTime,
        steps: impl Iterator<Item = (EmuTime, u64)>,
    ) -> Option<EmuTime> {
        let within = |start: EmuTime| (start + self.length <= until).then_some(start);
        if self.now >= self.before {
            return None;
        }
        let mut candidate = (free_now >= self.cores).then_some(self.now);
        for (at, free) in steps {
            match candidate {
                Some(start) => {
                    if start + self.length <= at {
                        return within(start);
                    }
                    if free < self.cores {
                        candidate = None;
                    }
                }
                None if at >= self.before => return None,
                None => {
                    if free >= self.cores {
                        candidate = Some(at);
                    }
                }
            }
        }
        candidate.and_then(within)
    }
}
