//! The one [`Clock`] every actor reads "now" from and sets timers with.
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
use std::rc::Rc;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::{EmuDuration, EmuTime, MICROS_PER_SEC};

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
    now_mirror: std::cell::OnceCell<std::sync::Arc<std::sync::atomic::AtomicU64>>,
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
                now_mirror: std::cell::OnceCell::new(),
            }),
        }
    }

    /// From now on, stores emulated now (µs) into `mirror` whenever timed events fire, for a
    /// progress display on another thread (relaxed ordering; it decides nothing). Only the
    /// first mirror given is kept.
    pub fn mirror_now(&self, mirror: std::sync::Arc<std::sync::atomic::AtomicU64>) {
        let _ = self.inner.now_mirror.set(mirror);
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
        if let Some(m) = self.inner.now_mirror.get() {
            m.store(now.as_micros(), std::sync::atomic::Ordering::Relaxed);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
