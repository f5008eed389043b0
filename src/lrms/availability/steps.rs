//! Usage as a step function of time (cores or memory in use from each instant on): whether a
//! demand fits over an interval, the first step it would exceed, and walks over the steps for
//! the earliest start that fits.

use super::*;

/// Cores used cluster-wide from each change point on, ascending: a step function.
pub struct UsageSteps(pub(super) Vec<(EmuTime, i64)>);

impl UsageSteps {
    /// Cores used at instant `t`.
    pub fn used_at(&self, t: EmuTime) -> u64 {
        let i = self.0.partition_point(|&(x, _)| x <= t);
        if i == 0 {
            0
        } else {
            self.0[i - 1].1.max(0) as u64
        }
    }

    /// The change points and the cores used from each on.
    pub fn points(&self) -> impl Iterator<Item = (EmuTime, u64)> + '_ {
        self.0.iter().map(|&(t, u)| (t, u.max(0) as u64))
    }

    /// Whether `cores` more cores are free throughout `[start, end)` given `total` cores.
    pub fn fits(&self, start: EmuTime, end: EmuTime, cores: u64, total: u64) -> bool {
        let first = self.0.partition_point(|&(t, _)| t <= start);
        fits_from(&self.0, first, end, total as i64 - cores as i64)
    }

    /// [`UsageSteps::fits`] for a search that asks about starts in ascending order.
    pub fn walk(&self) -> StepsWalk<'_> {
        StepsWalk {
            steps: &self.0,
            first: 0,
            last_start: EmuTime::ZERO,
        }
    }
}

/// Whether use stays at most `limit` from the step in force at a start (`steps[first - 1]`,
/// the last at or before it; none: nothing used) through every step before `end`.
pub(super) fn fits_from(steps: &[(EmuTime, i64)], first: usize, end: EmuTime, limit: i64) -> bool {
    over_limit(steps, first, end, limit).is_none()
}

/// Where use first goes over `limit` in [`fits_from`]'s window: the index just after the
/// step that does (`first` when it is the one in force at the start, or when nothing used
/// already is), or `None` if use stays within the limit.
pub(super) fn over_limit(
    steps: &[(EmuTime, i64)],
    first: usize,
    end: EmuTime,
    limit: i64,
) -> Option<usize> {
    let at_start = first.checked_sub(1).map_or(0, |i| steps[i].1);
    if at_start > limit {
        return Some(first);
    }
    (steps[first..].iter())
        .take_while(|&&(t, _)| t < end)
        .position(|&(_, used)| used > limit)
        .map(|i| first + i + 1)
}

/// Answers [`UsageSteps::fits`] for starts that only go up (a search over candidate starts):
/// it finds the step in force at each start by walking on from the previous one instead of
/// searching all the steps again (hundreds of candidates per search in a long queue).
pub struct StepsWalk<'a> {
    pub(super) steps: &'a [(EmuTime, i64)],
    /// The number of steps at or before `last_start`.
    pub(super) first: usize,
    pub(super) last_start: EmuTime,
}

impl StepsWalk<'_> {
    /// [`UsageSteps::fits`]; a start earlier than the last one asked is searched for afresh.
    pub fn fits(&mut self, start: EmuTime, end: EmuTime, cores: u64, total: u64) -> bool {
        self.seek(start);
        fits_from(self.steps, self.first, end, total as i64 - cores as i64)
    }

    /// [`StepsWalk::fits`], or else the first instant from which a window as long could fit:
    /// every start from `start` until then meets a step over the limit (the first one inside
    /// its window, or one of those after it in force at it), so a search can pass over them
    /// untried.
    pub fn fits_or_next(
        &mut self,
        start: EmuTime,
        end: EmuTime,
        cores: u64,
        total: u64,
    ) -> Result<(), EmuTime> {
        self.seek(start);
        let limit = total as i64 - cores as i64;
        match over_limit(self.steps, self.first, end, limit) {
            None => Ok(()),
            Some(after) => Err((self.steps[after..].iter())
                .find(|&&(_, used)| used <= limit)
                .map_or(EmuTime::NEVER, |&(t, _)| t)),
        }
    }

    /// Moves to the step in force at `start`.
    pub(super) fn seek(&mut self, start: EmuTime) {
        if start < self.last_start {
            self.first = self.steps.partition_point(|&(t, _)| t <= start);
        } else {
            while self.steps.get(self.first).is_some_and(|&(t, _)| t <= start) {
                self.first += 1;
            }
        }
        self.last_start = start;
    }
}

impl UsageSteps {
    /// Like [`UsageSteps::fits`], as if `own` (`[start, end)` taking `cores`) were released.
    pub fn fits_excluding(
        &self,
        start: EmuTime,
        end: EmuTime,
        cores: u64,
        total: u64,
        own: (EmuTime, EmuTime, u64),
    ) -> bool {
        let limit = total as i64 - cores as i64;
        let own_at = |t: EmuTime| {
            if own.0 <= t && t < own.1 {
                own.2 as i64
            } else {
                0
            }
        };
        let first = self.0.partition_point(|&(t, _)| t <= start);
        let at_start = if first == 0 { 0 } else { self.0[first - 1].1 };
        if at_start - own_at(start) > limit {
            return false;
        }
        // Where `own` ends the use may not change (another slot starting there), yet what it
        // leaves counts in full from then on.
        if start < own.1 && own.1 < end && self.used_at(own.1) as i64 > limit {
            return false;
        }
        self.0[first..]
            .iter()
            .take_while(|&&(t, _)| t < end)
            .all(|&(t, used)| used - own_at(t) <= limit)
    }
}

/// [`UsageSteps::fits_excluding`] for many windows before `own`: each as long as `own`,
/// starting at or after a floor and before `own`'s start, answered in O(log n) from an index
/// prepared once — a compression tests a lease's earlier starts by the dozen, and scanning
/// each window's steps was a sixth of an overloaded run.
pub struct EarlierFits<'a> {
    pub(super) steps: &'a [(EmuTime, i64)],
    /// First step after the floor: the windows' steps are from here on.
    pub(super) base: usize,
    /// `next_over[j - base]`: the first step at or after `j` using too much for the window
    /// (more than the limit, `own`'s cores not counted within `own`'s time), or the first
    /// step at or after `own`'s end if none is.
    pub(super) next_over: Vec<usize>,
    pub(super) limit: i64,
    pub(super) len: EmuDuration,
}

impl UsageSteps {
    /// Prepares [`EarlierFits`] for `cores` more cores over windows as long as `own`
    /// (`[start, end)` taking its cores), starting in `[floor, own.0)`, with `own` released.
    pub fn earlier_fits(
        &self,
        floor: EmuTime,
        cores: u64,
        total: u64,
        own: (EmuTime, EmuTime, u64),
    ) -> EarlierFits<'_> {
        let steps = &self.0[..];
        let limit = total as i64 - cores as i64;
        let base = steps.partition_point(|&(t, _)| t <= floor);
        let own_to = steps.partition_point(|&(t, _)| t < own.1).max(base);
        let mut next_over = vec![own_to; own_to - base + 1];
        for j in (base..own_to).rev() {
            let (at, used) = steps[j];
            let released = if at >= own.0 { own.2 as i64 } else { 0 };
            next_over[j - base] = if used - released > limit {
                j
            } else {
                next_over[j + 1 - base]
            };
        }
        EarlierFits {
            steps,
            base,
            next_over,
            limit,
            len: own.1.since(own.0),
        }
    }
}

impl EarlierFits<'_> {
    /// Whether the window from `t` (in `[floor, own.0)`) fits — what
    /// `fits_excluding(t, t + len, cores, total, own)` answers — and if it does not, the first instant
    /// after `t` from which one might (`EmuTime::NEVER` if none): every window starting in
    /// between holds the step over the limit that this one does, or starts in it.
    pub fn fits_or_next(&self, t: EmuTime) -> Result<(), EmuTime> {
        let steps = self.steps;
        let after = |j: usize| steps.get(j).map_or(EmuTime::NEVER, |s| s.0);
        // The step in force at `t` (before `own`, so unreduced), then every step in
        // `(t, t + len)`; the window ends before `own` does.
        let k = steps.partition_point(|&(x, _)| x <= t);
        let at_t = if k == 0 { 0 } else { steps[k - 1].1 };
        if at_t > self.limit {
            // In force until the next step.
            return Err(after(k));
        }
        let reach = steps.partition_point(|&(x, _)| x < t + self.len);
        // `t` is at or after the floor, so `k >= base`.
        let over = self.next_over[k.max(self.base) - self.base];
        match over >= reach {
            true => Ok(()),
            // Later windows meet step `over` until they start after it ends (before `own`,
            // where every start lies, it is unreduced too).
            false => Err(after(over + 1)),
        }
    }
}
