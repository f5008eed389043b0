//! Emulated time: [`EmuTime`] and [`EmuDuration`] in integer microseconds, their text forms
//! ([`parse_duration`], [`format_secs`]), the one [`Clock`] every actor reads "now" from and
//! sets timers with, the order of same-time deliveries when interleavings are explored
//! ([`interleave`]) and as a record holds it ([`record`]), and the per-component seeds of a run's random streams.

mod clock;
pub mod interleave;
pub mod pacing;
mod radix;
pub mod record;
pub mod remote;
mod text;

pub(crate) use clock::{lateness_histogram, record_lateness};
pub use clock::{
    wait_lateness_probe, Clock, ClockMode, Group, InstantLoad, Lateness, Members, Near,
    OrderOutcome, Stopwatch, TimerHandle, Work,
};
pub use interleave::Lane;
pub(crate) use text::write_digits;
pub(crate) use text::write_secs_ascii;
pub use text::{format_secs, parse_duration, write_secs};

use std::fmt;
use std::ops::{Add, AddAssign, Mul, Sub};

use serde::Serialize;

/// A point in emulated time: microseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct EmuTime(u64);

/// A span of emulated time in microseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct EmuDuration(u64);

const MICROS_PER_SEC: u64 = 1_000_000;

/// The longest duration and the latest time an input may give, in seconds: 10^12 s (about
/// 31 700 years). Emulated time is a `u64` of microseconds, which ends at 1.8·10^13 s; the
/// limit leaves room for the sums a run makes (arrival + wait + run time + overheads) without
/// reaching the end, so no time read from input saturates or wraps.
pub const MAX_SECS: u64 = 1_000_000_000_000;

impl EmuTime {
    /// The start of every run.
    pub const ZERO: EmuTime = EmuTime(0);
    /// A time that never comes; used as "no deadline".
    pub const NEVER: EmuTime = EmuTime(u64::MAX);

    /// The time `micros` microseconds after the start.
    pub const fn from_micros(micros: u64) -> Self {
        EmuTime(micros)
    }
    /// The time `secs` whole seconds after the start.
    pub const fn from_secs(secs: u64) -> Self {
        EmuTime(secs.saturating_mul(MICROS_PER_SEC))
    }
    /// Microseconds since the start.
    pub const fn as_micros(self) -> u64 {
        self.0
    }
    /// Seconds since the start, as a decimal (for outputs only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SEC as f64
    }
    /// Time elapsed since `earlier`, zero if `earlier` is later.
    pub fn since(self, earlier: EmuTime) -> EmuDuration {
        EmuDuration(self.0.saturating_sub(earlier.0))
    }
    /// The time `d` before this one, or the start of the run.
    pub fn earlier_by(self, d: EmuDuration) -> EmuTime {
        EmuTime(self.0.saturating_sub(d.0))
    }
}

impl EmuDuration {
    /// No time at all.
    pub const ZERO: EmuDuration = EmuDuration(0);

    /// A duration of `micros` microseconds.
    pub const fn from_micros(micros: u64) -> Self {
        EmuDuration(micros)
    }
    /// A duration of `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        EmuDuration(millis.saturating_mul(1_000))
    }
    /// A duration of `secs` whole seconds.
    pub const fn from_secs(secs: u64) -> Self {
        EmuDuration(secs.saturating_mul(MICROS_PER_SEC))
    }
    /// A duration from decimal seconds, rounded to the nearest microsecond; negative and NaN
    /// inputs give zero, and anything past the end of emulated time (`+inf` included) gives
    /// the longest duration — never zero, so an endless operation is not taken for an instant
    /// one. Inputs are checked with [`EmuDuration::checked_from_secs_f64`].
    pub fn from_secs_f64(secs: f64) -> Self {
        if secs > 0.0 {
            // A float-to-integer cast saturates.
            EmuDuration((secs * MICROS_PER_SEC as f64).round() as u64)
        } else {
            EmuDuration::ZERO
        }
    }
    /// A duration from decimal seconds if they are a number from 0 to [`MAX_SECS`], else
    /// `None`.
    pub fn checked_from_secs_f64(secs: f64) -> Option<Self> {
        (secs.is_finite() && (0.0..=MAX_SECS as f64).contains(&secs))
            .then(|| EmuDuration::from_secs_f64(secs))
    }
    /// Microseconds in this duration.
    pub const fn as_micros(self) -> u64 {
        self.0
    }
    /// Seconds in this duration, as a decimal (for outputs and rate arithmetic).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / MICROS_PER_SEC as f64
    }
    /// `self - other`, or zero.
    pub fn saturating_sub(self, other: EmuDuration) -> EmuDuration {
        EmuDuration(self.0.saturating_sub(other.0))
    }
}

impl Add<EmuDuration> for EmuTime {
    type Output = EmuTime;
    /// Saturates at [`EmuTime::NEVER`] rather than overflowing.
    fn add(self, rhs: EmuDuration) -> EmuTime {
        EmuTime(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign<EmuDuration> for EmuTime {
    fn add_assign(&mut self, rhs: EmuDuration) {
        *self = *self + rhs;
    }
}

impl Sub<EmuTime> for EmuTime {
    type Output = EmuDuration;
    /// Saturates at zero: a duration is never negative.
    fn sub(self, rhs: EmuTime) -> EmuDuration {
        self.since(rhs)
    }
}

impl Add for EmuDuration {
    type Output = EmuDuration;
    fn add(self, rhs: EmuDuration) -> EmuDuration {
        EmuDuration(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for EmuDuration {
    fn add_assign(&mut self, rhs: EmuDuration) {
        *self = *self + rhs;
    }
}

impl Mul<u64> for EmuDuration {
    type Output = EmuDuration;
    fn mul(self, rhs: u64) -> EmuDuration {
        EmuDuration(self.0.saturating_mul(rhs))
    }
}

impl std::iter::Sum for EmuDuration {
    fn sum<I: Iterator<Item = EmuDuration>>(iter: I) -> EmuDuration {
        iter.fold(EmuDuration::ZERO, |a, b| a + b)
    }
}

impl fmt::Display for EmuDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", format_secs(self.0))
    }
}

impl fmt::Display for EmuTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={}s", format_secs(self.0))
    }
}

/// A deterministic 64-bit seed for the random stream of component `name` in a run seeded
/// with `run_seed` (SplitMix64 over an FNV-1a hash of the name: stable across Rust versions).
pub fn stream_seed(run_seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = run_seed ^ h;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_arithmetic_is_exact_and_saturating() {
        let t = EmuTime::from_secs(10) + EmuDuration::from_micros(7);
        assert_eq!(t.as_micros(), 10_000_007);
        assert_eq!(t - EmuTime::from_secs(10), EmuDuration::from_micros(7));
        assert_eq!(EmuTime::ZERO - t, EmuDuration::ZERO);
        assert_eq!(EmuTime::NEVER + EmuDuration::from_secs(1), EmuTime::NEVER);
        assert_eq!(EmuDuration::from_secs(3) * 4, EmuDuration::from_secs(12));
        let total: EmuDuration = [1, 2, 3].iter().map(|&s| EmuDuration::from_secs(s)).sum();
        assert_eq!(total, EmuDuration::from_secs(6));
        // 1 GB at 6.36 MB/s, the paper's suspension time, rounds to the microsecond.
        assert_eq!(
            EmuDuration::from_secs_f64(1024.0 / 6.36).as_micros(),
            161_006_289
        );
        // An infinite time (a rate that underflows to zero) is not an instant.
        assert_eq!(
            EmuDuration::from_secs_f64(f64::INFINITY).as_micros(),
            u64::MAX
        );
        assert_eq!(
            EmuDuration::from_secs_f64(1024.0 / 1e-310).as_micros(),
            u64::MAX
        );
        assert_eq!(EmuDuration::from_secs_f64(f64::NAN), EmuDuration::ZERO);
        assert_eq!(EmuDuration::checked_from_secs_f64(1e15), None);
        assert_eq!(EmuDuration::checked_from_secs_f64(-1.0), None);
        assert_eq!(
            EmuDuration::checked_from_secs_f64(1e12).map(EmuDuration::as_micros),
            Some(1_000_000_000_000_000_000)
        );
    }

    #[test]
    fn stream_seeds_differ_by_name_and_seed() {
        assert_ne!(stream_seed(1, "a"), stream_seed(1, "b"));
        assert_ne!(stream_seed(1, "a"), stream_seed(2, "a"));
        // Pinned: every run's random streams, hence every shipped output, hang on this value.
        assert_eq!(stream_seed(7, "lrms:c1"), 17_672_108_269_843_145_878);
    }
}
