//! Waiting on the wall clock in realtime: a thread's blocking wait (spin, then nap), how late
//! this machine wakes (the probe `--speedup auto` uses), the oversleep histogram, timer
//! lateness, and a stopwatch.

use super::*;

/// The least time before a realtime deadline the clock stops sleeping the thread and spins,
/// when every actor is idle: the OS wakes a sleeping thread up to a few hundred microseconds
/// late. It spins longer where the OS has woken it later (see [`Oversleep`]).
pub(super) const REALTIME_BLOCKING_SPIN: std::time::Duration =
    std::time::Duration::from_micros(400);

/// The longest an idle realtime clock spins before a deadline, however late the OS wakes it.
pub(super) const REALTIME_BLOCKING_SPIN_MAX: std::time::Duration =
    std::time::Duration::from_millis(5);

/// Width of a bucket of [`Oversleep`], µs.
pub(super) const OVERSLEEP_BUCKET_US: u64 = 25;

/// Buckets of [`Oversleep`]: up to the longest spin, the last one open-ended.
pub(super) const OVERSLEEP_BUCKETS: usize =
    (REALTIME_BLOCKING_SPIN_MAX.as_micros() as u64 / OVERSLEEP_BUCKET_US) as usize + 1;

/// The longest the clock sleeps the thread at once (it looks again after).
pub(super) const REALTIME_BLOCKING_NAP: std::time::Duration = std::time::Duration::from_millis(20);

/// Timer lateness in realtime mode, in emulated milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Lateness {
    /// Median lateness.
    pub p50: f64,
    /// 99th-percentile lateness.
    pub p99: f64,
    /// Worst lateness.
    pub max: f64,
    /// How many timers fired.
    pub samples: u64,
}

impl Lateness {
    /// The percentiles of `h`, a histogram of lateness in µs.
    pub fn of(h: &Histogram<u64>) -> Lateness {
        let ms = |us: u64| us as f64 / 1000.0;
        Lateness {
            p50: ms(h.value_at_quantile(0.5)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
            samples: h.len(),
        }
    }
}

/// An empty histogram of timer lateness in emulated µs, growing as needed: a wall second late
/// at ×1e9 is 31 emulated years, and a fixed top (it was one day) clamped such values and
/// printed the top bucket as the p99.
pub(crate) fn lateness_histogram() -> Histogram<u64> {
    // Invariant: 3 significant figures is a valid precision.
    Histogram::new(3).expect("3 significant figures is a valid precision")
}

/// Records `late` µs, growing the histogram to hold it (a saturating record would clamp it to
/// the current top); only a value it cannot grow to (past u64::MAX / 2 µs) is clamped.
pub(crate) fn record_lateness(h: &mut Histogram<u64>, late: u64) {
    if h.record(late).is_err() {
        h.saturating_record(late);
    }
}

/// Blocks the thread until `deadline`: parks it in naps of at most
/// [`REALTIME_BLOCKING_NAP`] until the spin margin `oversleep` sets before it (none when it is
/// `None`), then spins; each nap's lateness is recorded there. `between_naps` runs after each
/// nap; `woken` (a post from another thread, which also unparks the thread) ends the wait
/// early: returns whether it did.
pub(super) fn wait_blocking(
    deadline: std::time::Instant,
    oversleep: &RefCell<Option<Oversleep>>,
    mut between_naps: impl FnMut(),
    woken: impl Fn() -> bool,
) -> bool {
    loop {
        if woken() {
            return true;
        }
        let spin = oversleep
            .borrow()
            .as_ref()
            .map_or(std::time::Duration::ZERO, Oversleep::margin);
        let now = std::time::Instant::now();
        let Some(left) = deadline.checked_duration_since(now) else {
            return false;
        };
        if left > spin {
            let nap = (left - spin).min(REALTIME_BLOCKING_NAP);
            std::thread::park_timeout(nap);
            // An unpark (a post, maybe one already taken) or a spurious wake-up ends a nap
            // early: only a nap that ran its course says how late the OS wakes the thread.
            if let Some(late) = now.elapsed().checked_sub(nap) {
                if let Some(o) = oversleep.borrow_mut().as_mut() {
                    o.record(late);
                }
            }
            between_naps();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// How late this thread meets deadlines when it waits for them as an idle realtime clock does
/// (naps, then a spin whose margin it learns as it goes): a deadline each of `gaps` after the
/// last wait ended, each one's lateness past it. `--speedup auto` reads this machine's
/// wake-ups from it.
pub fn wait_lateness_probe(
    gaps: impl IntoIterator<Item = std::time::Duration>,
) -> Vec<std::time::Duration> {
    let oversleep = RefCell::new(Some(Oversleep::default()));
    gaps.into_iter()
        .map(|gap| {
            let deadline = std::time::Instant::now() + gap;
            wait_blocking(deadline, &oversleep, || {}, || false);
            std::time::Instant::now().saturating_duration_since(deadline)
        })
        .collect()
}

/// How late the OS has woken the thread from its naps, in buckets of
/// [`OVERSLEEP_BUCKET_US`]: an idle realtime clock spins for the last stretch before a
/// deadline instead of sleeping, and how long a stretch depends on the machine. On a
/// bare-metal Linux the OS wakes a sleeping thread 0.1-0.2 ms late; on a virtual machine whose
/// idle vCPU the host must wake, 0.5-0.8 ms at p99 and 2-3 ms at p99.9 (measured, 2026-11-26),
/// so a fixed margin either misses deadlines there or burns a core here. The margin is the
/// 99.9th percentile seen so far (leaving out at least the latest nap, so that one stop early
/// in a run does not set it), rounded up to its bucket's end, and one bucket more; at least
/// [`REALTIME_BLOCKING_SPIN`] and at most [`REALTIME_BLOCKING_SPIN_MAX`].
#[derive(Debug, Clone)]
pub(crate) struct Oversleep {
    pub(super) counts: [u32; OVERSLEEP_BUCKETS],
    pub(super) total: u32,
    /// The margin as of the last sample (kept, not recounted: a spinning wait reads it on
    /// every turn of its loop).
    pub(super) margin: std::time::Duration,
}

impl Default for Oversleep {
    fn default() -> Self {
        Oversleep {
            counts: [0; OVERSLEEP_BUCKETS],
            total: 0,
            margin: REALTIME_BLOCKING_SPIN,
        }
    }
}

impl Oversleep {
    /// The counts are halved whenever they reach this many samples: the margin follows the
    /// machine as it is now, not as it was an hour ago.
    pub(super) const AGE_AT: u32 = 1 << 16;

    /// Records one nap that ended `late` after it was asked to.
    pub(crate) fn record(&mut self, late: std::time::Duration) {
        let last = (OVERSLEEP_BUCKETS - 1) as u128;
        let bucket = (late.as_micros() / u128::from(OVERSLEEP_BUCKET_US)).min(last) as usize;
        self.counts[bucket] += 1;
        self.total += 1;
        if self.total >= Self::AGE_AT {
            self.counts.iter_mut().for_each(|c| *c /= 2);
            self.total = self.counts.iter().sum();
        }
        self.margin = self.margin_from_counts();
    }

    /// How long before a deadline to stop sleeping and spin.
    pub(crate) fn margin(&self) -> std::time::Duration {
        self.margin
    }

    pub(super) fn margin_from_counts(&self) -> std::time::Duration {
        // The bucket holding the 99.9th percentile: the first whose count, with those
        // before it, leaves at most 0.1 % of the samples above it (and at least one).
        let above_allowed = (self.total / 1000).max(1);
        let mut above = self.total;
        let mut bucket = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            above -= c;
            if above <= above_allowed {
                bucket = i;
                break;
            }
        }
        // Its upper edge, and one bucket more.
        let us = (bucket as u64 + 2) * OVERSLEEP_BUCKET_US;
        std::time::Duration::from_micros(us)
            .clamp(REALTIME_BLOCKING_SPIN, REALTIME_BLOCKING_SPIN_MAX)
    }
}

/// Measures the wall-clock length of a run for reporting (`wall_s`). It never feeds emulated
/// time; it lives here so that every read of the wall clock stays in this module.
pub struct Stopwatch(pub(super) std::time::Instant);

impl Stopwatch {
    /// Starts measuring.
    pub fn start() -> Stopwatch {
        Stopwatch(std::time::Instant::now())
    }
    /// Wall seconds since [`Stopwatch::start`].
    pub fn elapsed_secs(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}
