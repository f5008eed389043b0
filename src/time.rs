//! Emulated time: [`EmuTime`] and [`EmuDuration`] in integer microseconds, and the one
//! [`Clock`] every actor reads "now" from and sets timers with.
//!
//! # Design
//!
//! Every actor lives on one actix arbiter (a tokio current-thread runtime), so the clock is a
//! single-threaded service: an `Rc` shared by all actors, holding a binary heap of due events
//! (FIFO among equal times, by a sequence number) behind **one** tokio sleep.
//!
//! * **Virtual mode.** The runtime is started with a paused tokio clock. Emulated time is *not*
//!   read from tokio: the clock keeps its own `now`, and uses a tokio sleep only as an idleness
//!   detector. Tokio auto-advances its paused clock — waking the sleep — only when no task is
//!   ready, i.e. when every actor has drained its mailbox. At that moment the clock jumps `now`
//!   to the earliest due event and fires every event due then. This is a discrete-event
//!   simulator driven by the actor runtime: exact to the microsecond (tokio's timer wheel has
//!   millisecond resolution, which is why we do not take its time), deterministic (one thread,
//!   FIFO ties), and as fast as the CPU allows.
//! * **Realtime mode.** Emulated time is wall time since the start multiplied by `speedup`.
//!   The sleep waits for the wall instant of the earliest event; when it fires late, the
//!   lateness (in emulated time) goes into an HDR histogram so a user can see whether the
//!   chosen speed-up was sustainable.
//!
//! Nothing else in igemu reads `Instant::now()` or sleeps; tokio's `timeout` is not used.

use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fmt;
use std::ops::{Add, AddAssign, Mul, Sub};
use std::rc::Rc;

use hdrhistogram::Histogram;
use serde::Serialize;

/// A point in emulated time: microseconds since the start of the run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct EmuTime(u64);

/// A span of emulated time in microseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct EmuDuration(u64);

const MICROS_PER_SEC: u64 = 1_000_000;

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
    /// A duration from decimal seconds, rounded to the nearest microsecond; negative and
    /// non-finite inputs give zero.
    pub fn from_secs_f64(secs: f64) -> Self {
        if secs.is_finite() && secs > 0.0 {
            EmuDuration((secs * MICROS_PER_SEC as f64).round() as u64)
        } else {
            EmuDuration::ZERO
        }
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

/// Seconds with up to six decimals and no trailing zeros: `90`, `2.3`, `0.005`.
pub fn format_secs(micros: u64) -> String {
    let whole = micros / MICROS_PER_SEC;
    let frac = micros % MICROS_PER_SEC;
    if frac == 0 {
        whole.to_string()
    } else {
        let digits = format!("{frac:06}");
        format!("{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// Parses a human duration: `"90s"`, `"2h"`, `"1d"`, `"1h30m"`, `"500ms"`, `"250us"`,
/// `"1.5h"`, a clock form `"01:15:00"` (h:m:s), or a bare number of seconds (`"42"`).
pub fn parse_duration(text: &str) -> Result<EmuDuration, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    if s.contains(':') {
        return parse_clock(s);
    }
    if let Ok(secs) = s.parse::<f64>() {
        return checked_secs(secs, text);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(format!("`{text}` is not a duration"));
        }
        let value: f64 = rest[..num_len]
            .parse()
            .map_err(|_| format!("`{}` is not a number", &rest[..num_len]))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = rest[..unit_len].trim();
        rest = &rest[unit_len..];
        let scale = match unit {
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" | "secs" => 1.0,
            "m" | "min" | "mins" => 60.0,
            "h" | "hr" | "hrs" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            "w" | "week" | "weeks" => 604_800.0,
            "" => {
                return Err(format!(
                    "`{text}` needs a unit after {value} (us, ms, s, m, h, d, w)"
                ))
            }
            other => {
                return Err(format!(
                    "unknown time unit `{other}` in `{text}` (use us, ms, s, m, h, d, w)"
                ))
            }
        };
        total += value * scale;
    }
    checked_secs(total, text)
}

fn checked_secs(secs: f64, text: &str) -> Result<EmuDuration, String> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{text}` is not a non-negative duration"));
    }
    if secs > 1e12 {
        return Err(format!("`{text}` is too long (more than 10^12 s)"));
    }
    Ok(EmuDuration::from_secs_f64(secs))
}

fn parse_clock(s: &str) -> Result<EmuDuration, String> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 3 {
        return Err(format!("`{s}` is not a clock time; write hh:mm:ss"));
    }
    let h: u64 = parts[0]
        .parse()
        .map_err(|_| format!("bad hours in `{s}`"))?;
    let m: u64 = parts[1]
        .parse()
        .map_err(|_| format!("bad minutes in `{s}`"))?;
    let sec: f64 = parts[2]
        .parse()
        .map_err(|_| format!("bad seconds in `{s}`"))?;
    if m >= 60 || !(0.0..60.0).contains(&sec) {
        return Err(format!("`{s}`: minutes and seconds must be below 60"));
    }
    checked_secs((h * 3600 + m * 60) as f64 + sec, s)
}

/// How emulated time relates to the wall clock.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum ClockMode {
    /// Jump to the next event whenever every actor is idle; deterministic.
    Virtual,
    /// Emulated time runs `speedup` times faster than the wall clock.
    Realtime {
        /// Emulated seconds per wall second; always positive and finite.
        speedup: f64,
    },
}

type Callback = Box<dyn FnOnce()>;

/// How long before a realtime deadline the clock stops sleeping and starts yielding.
const REALTIME_SPIN: std::time::Duration = std::time::Duration::from_micros(1500);

struct Pending {
    due: EmuTime,
    seq: u64,
    fire: Callback,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.due == other.due && self.seq == other.seq
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest `(due, seq)` first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

struct ClockInner {
    mode: ClockMode,
    origin: tokio::time::Instant,
    virtual_now: Cell<EmuTime>,
    heap: RefCell<BinaryHeap<Pending>>,
    next_seq: Cell<u64>,
    wake: tokio::sync::Notify,
    fired: Cell<u64>,
    lateness_us: RefCell<Histogram<u64>>,
}

/// The one source of "now" and of timers, shared by every actor of a run (cheap to clone).
#[derive(Clone)]
pub struct Clock {
    inner: Rc<ClockInner>,
}

/// Calls off a timed event scheduled with [`Clock::at_cancellable`].
#[derive(Clone, Debug)]
pub struct TimerHandle(Rc<Cell<bool>>);

impl TimerHandle {
    /// The event will not fire (a no-op if it already has).
    pub fn cancel(&self) {
        self.0.set(true);
    }
}

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

impl Clock {
    /// A clock starting at emulated time zero now. Must be created inside the tokio runtime
    /// that will drive it (paused for [`ClockMode::Virtual`]).
    pub fn new(mode: ClockMode) -> Clock {
        // Invariant: 1 µs .. 1 day with 3 significant figures is a valid histogram range.
        let hist = Histogram::new_with_bounds(1, 86_400_000_000, 3)
            .expect("static histogram bounds are valid");
        Clock {
            inner: Rc::new(ClockInner {
                mode,
                origin: tokio::time::Instant::now(),
                virtual_now: Cell::new(EmuTime::ZERO),
                heap: RefCell::new(BinaryHeap::new()),
                next_seq: Cell::new(0),
                wake: tokio::sync::Notify::new(),
                fired: Cell::new(0),
                lateness_us: RefCell::new(hist),
            }),
        }
    }

    /// The clock's mode.
    pub fn mode(&self) -> ClockMode {
        self.inner.mode
    }

    /// The current emulated time.
    pub fn now(&self) -> EmuTime {
        match self.inner.mode {
            ClockMode::Virtual => self.inner.virtual_now.get(),
            ClockMode::Realtime { speedup } => {
                let wall = self.inner.origin.elapsed().as_secs_f64();
                EmuTime::from_micros((wall * speedup * MICROS_PER_SEC as f64) as u64)
            }
        }
    }

    /// Runs `fire` at emulated time `due` (or as soon as possible if `due` has passed).
    /// Events due at the same time run in the order they were scheduled.
    pub fn at(&self, due: EmuTime, fire: impl FnOnce() + 'static) {
        let seq = self.inner.next_seq.get();
        self.inner.next_seq.set(seq + 1);
        let mut heap = self.inner.heap.borrow_mut();
        let earliest = heap.peek().map(|p| p.due);
        heap.push(Pending {
            due,
            seq,
            fire: Box::new(fire),
        });
        drop(heap);
        if earliest.is_none_or(|e| due < e) {
            self.inner.wake.notify_one();
        }
    }

    /// Like [`Clock::at`], but the event can be called off with the returned handle.
    pub fn at_cancellable(&self, due: EmuTime, fire: impl FnOnce() + 'static) -> TimerHandle {
        let handle = TimerHandle(Rc::new(Cell::new(false)));
        let cancelled = Rc::clone(&handle.0);
        self.at(due, move || {
            if !cancelled.get() {
                fire();
            }
        });
        handle
    }

    /// Runs `fire` after `delay` of emulated time.
    pub fn after(&self, delay: EmuDuration, fire: impl FnOnce() + 'static) {
        self.at(self.now() + delay, fire);
    }

    /// How many timed events have fired so far.
    pub fn fired(&self) -> u64 {
        self.inner.fired.get()
    }

    /// How many timed events are waiting.
    pub fn pending(&self) -> usize {
        self.inner.heap.borrow().len()
    }

    /// Drops every timed event still waiting. Their closures hold the actors' shared state,
    /// which holds this clock: without this, a finished run's state would never be freed.
    pub fn discard_pending(&self) {
        let pending = std::mem::take(&mut *self.inner.heap.borrow_mut());
        drop(pending);
    }

    /// Timer lateness so far; `None` in virtual mode, where timers are never late.
    pub fn lateness(&self) -> Option<Lateness> {
        match self.inner.mode {
            ClockMode::Virtual => None,
            ClockMode::Realtime { .. } => {
                let h = self.inner.lateness_us.borrow();
                let ms = |us: u64| us as f64 / 1000.0;
                Some(Lateness {
                    p50: ms(h.value_at_quantile(0.5)),
                    p99: ms(h.value_at_quantile(0.99)),
                    max: ms(h.max()),
                    samples: h.len(),
                })
            }
        }
    }

    /// The wall instant (on tokio's clock) at which emulated time `due` arrives in realtime mode.
    fn wall_deadline(&self, due: EmuTime, speedup: f64) -> tokio::time::Instant {
        let wall_secs = due.as_micros() as f64 / MICROS_PER_SEC as f64 / speedup;
        let wall = std::time::Duration::from_secs_f64(wall_secs.min(1e9));
        self.inner.origin + wall
    }

    /// Pops and fires every event due at or before `now`, in `(due, seq)` order.
    /// Callbacks may schedule further events; those due by `now` fire in this same pass.
    fn fire_due(&self, now: EmuTime) {
        loop {
            let next = {
                let mut heap = self.inner.heap.borrow_mut();
                match heap.peek() {
                    Some(p) if p.due <= now => heap.pop(),
                    _ => None,
                }
            };
            let Some(event) = next else { break };
            if let ClockMode::Realtime { .. } = self.inner.mode {
                let late = now.since(event.due).as_micros().max(1);
                // Saturating record: a value beyond the histogram's range is clamped, not lost.
                self.inner.lateness_us.borrow_mut().saturating_record(late);
            }
            self.inner.fired.set(self.inner.fired.get() + 1);
            (event.fire)();
        }
    }

    /// Drives the timers forever; spawn exactly once per run on the run's arbiter.
    pub async fn drive(self) {
        // One sleep, re-armed each round: no timer allocation per event.
        let idle = tokio::time::sleep(std::time::Duration::ZERO);
        tokio::pin!(idle);
        loop {
            let head = self.inner.heap.borrow().peek().map(|p| p.due);
            match (head, self.inner.mode) {
                (None, _) => self.inner.wake.notified().await,
                (Some(_), ClockMode::Virtual) => {
                    // Wait until every actor is idle: the paused tokio clock only advances
                    // (and wakes this sleep) when no task is ready. Events scheduled
                    // meanwhile are in the heap when we look again, earlier ones included.
                    let step = tokio::time::Instant::now() + std::time::Duration::from_millis(1);
                    idle.as_mut().reset(step);
                    idle.as_mut().await;
                    let head = self.inner.heap.borrow().peek().map(|p| p.due);
                    if let Some(next) = head {
                        // Time never goes back: an event scheduled in the past fires now.
                        let now = next.max(self.inner.virtual_now.get());
                        self.inner.virtual_now.set(now);
                        self.fire_due(now);
                    }
                }
                (Some(due), ClockMode::Realtime { speedup }) => {
                    // Tokio's timer wheel rounds to whole milliseconds, which at a speed-up of
                    // 10^4 is 10 emulated seconds. So sleep to just before the deadline and
                    // yield (letting other tasks run) for the last stretch.
                    let deadline = self.wall_deadline(due, speedup);
                    let coarse = deadline.checked_sub(REALTIME_SPIN).unwrap_or(deadline);
                    idle.as_mut().reset(coarse);
                    tokio::select! {
                        biased;
                        _ = self.inner.wake.notified() => continue,
                        _ = idle.as_mut() => {}
                    }
                    while tokio::time::Instant::now() < deadline {
                        tokio::task::yield_now().await;
                    }
                    self.fire_due(self.now());
                }
            }
        }
    }
}

/// Measures the wall-clock length of a run for reporting (`wall_s`). It never feeds emulated
/// time; it lives here so that every read of the wall clock stays in this module.
pub struct Stopwatch(std::time::Instant);

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
    fn durations_parse_human_forms() {
        assert_eq!(parse_duration("90s").unwrap(), EmuDuration::from_secs(90));
        assert_eq!(parse_duration("2h").unwrap(), EmuDuration::from_secs(7200));
        assert_eq!(
            parse_duration("1d").unwrap(),
            EmuDuration::from_secs(86_400)
        );
        assert_eq!(
            parse_duration("1h30m").unwrap(),
            EmuDuration::from_secs(5400)
        );
        assert_eq!(
            parse_duration("5ms").unwrap(),
            EmuDuration::from_micros(5000)
        );
        assert_eq!(
            parse_duration("2.3s").unwrap(),
            EmuDuration::from_micros(2_300_000)
        );
        assert_eq!(
            parse_duration("00:08:50").unwrap(),
            EmuDuration::from_secs(530)
        );
        assert_eq!(parse_duration("42").unwrap(), EmuDuration::from_secs(42));
        assert_eq!(
            parse_duration("250us").unwrap(),
            EmuDuration::from_micros(250)
        );
    }

    #[test]
    fn bad_durations_are_errors_not_panics() {
        for bad in [
            "",
            "h",
            "5 parsecs",
            "-3s",
            "1:2",
            "00:61:00",
            "1e400",
            "s5",
            "5x",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
        }
    }

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
    }

    #[test]
    fn seconds_format_without_float_noise() {
        assert_eq!(format_secs(0), "0");
        assert_eq!(format_secs(2_300_000), "2.3");
        assert_eq!(format_secs(5_000), "0.005");
        assert_eq!(EmuDuration::from_secs(90).to_string(), "90s");
    }

    #[test]
    fn stream_seeds_differ_by_name_and_seed() {
        assert_ne!(stream_seed(1, "a"), stream_seed(1, "b"));
        assert_ne!(stream_seed(1, "a"), stream_seed(2, "a"));
        assert_eq!(stream_seed(7, "lrms:c1"), stream_seed(7, "lrms:c1"));
    }

    fn virtual_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
    }

    #[test]
    fn virtual_clock_fires_in_time_order_with_fifo_ties() {
        let rt = virtual_runtime();
        let local = tokio::task::LocalSet::new();
        let order = local.block_on(&rt, async {
            let clock = Clock::new(ClockMode::Virtual);
            let log = Rc::new(RefCell::new(Vec::new()));
            for (i, secs) in [(0u32, 5u64), (1, 1), (2, 5), (3, 3), (4, 1)] {
                let (log, c) = (log.clone(), clock.clone());
                clock.at(EmuTime::from_secs(secs), move || {
                    log.borrow_mut().push((i, c.now().as_micros()))
                });
            }
            tokio::task::spawn_local(clock.clone().drive());
            while clock.pending() > 0 {
                tokio::task::yield_now().await;
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            let v = log.borrow().clone();
            v
        });
        assert_eq!(
            order,
            vec![
                (1, 1_000_000),
                (4, 1_000_000),
                (3, 3_000_000),
                (0, 5_000_000),
                (2, 5_000_000)
            ]
        );
    }

    #[test]
    fn virtual_clock_takes_earlier_events_scheduled_while_waiting() {
        let rt = virtual_runtime();
        let local = tokio::task::LocalSet::new();
        let seen = local.block_on(&rt, async {
            let clock = Clock::new(ClockMode::Virtual);
            let log = Rc::new(RefCell::new(Vec::new()));
            let l = log.clone();
            let c = clock.clone();
            clock.at(EmuTime::from_secs(100), move || {
                l.borrow_mut().push(c.now())
            });
            tokio::task::spawn_local(clock.clone().drive());
            tokio::task::yield_now().await;
            // Scheduled after the driver started waiting for t=100: must still fire first.
            let l = log.clone();
            let c = clock.clone();
            clock.at(EmuTime::from_micros(3), move || {
                l.borrow_mut().push(c.now())
            });
            while clock.pending() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            let v = log.borrow().clone();
            v
        });
        assert_eq!(seen, vec![EmuTime::from_micros(3), EmuTime::from_secs(100)]);
    }
}
