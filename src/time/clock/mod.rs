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
//!
//!   Asking tokio costs a runtime park per distinct event time, so the clock first asks a
//!   cheaper question (see [`Work`]): the one send path counts the work it sets in motion —
//!   messages not yet handled, replies not yet taken, spawned tasks not yet started — and the
//!   clock, after firing, puts itself at the back of the arbiter's run queue. When it runs
//!   again, every task that was ready when it fired has run, and if nothing counted is left,
//!   nothing can still act at the current time: it steps at once. Otherwise (work not
//!   counted, such as a call whose receiver's mailbox is full) it falls back on tokio's idle
//!   detection, which is always exact.
//! * **Realtime mode.** The wall clock paces the run: an event due at emulated time `t` fires
//!   when the wall time since the start reaches `t / speedup`, and not before. What the
//!   actors see is still the event's own time (logical time, as ns-3's realtime scheduler
//!   keeps it), one instant at a time, each settled before the next; so a run that cannot keep
//!   up runs late in wall time but gives the virtual run's results. How late each event fired
//!   (wall-clock emulated time minus its due time) goes into an HDR histogram so a user can
//!   see whether the chosen speed-up was sustainable.
//!
//! Nothing else in igemu reads `Instant::now()` or sleeps; tokio's `timeout` is not used.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::task::{Context, Poll};

use hdrhistogram::Histogram;
use serde::Serialize;

use super::interleave::{Interleaver, Lane};
use super::radix::RadixHeap;
use super::record::{OrderLog, OrderScript};
use super::remote::Mailbox;
use super::{EmuDuration, EmuTime, MICROS_PER_SEC};

mod order;
mod timers;
mod wall;

pub use timers::*;
pub use wall::*;

#[cfg(test)]
mod tests;

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

/// How many times the virtual clock lets the ready tasks run while counted work is in flight
/// before it asks tokio instead (work that stays counted without any task being ready, such
/// as a call waiting for room in a full mailbox, must not make it spin).
const COUNTED_ROUNDS: u32 = 16;

/// The most times a realtime clock lets ready tasks run while waiting for held deliveries'
/// work to settle.
const SETTLE_ROUNDS_MAX: u32 = 1 << 16;

/// How long before a realtime deadline the clock stops sleeping and starts yielding, when it
/// must let other tasks run meanwhile.
const REALTIME_SPIN: std::time::Duration = std::time::Duration::from_micros(1500);

/// A queued event: what to run, and what can call it off, read by the clock so that a
/// cancelled event costs no call.
struct Pending {
    fire: Fire,
    /// Where the callback will read first (see [`Pending::fetch_ahead`]).
    near: Near,
    /// Which event of its group it is (0 for an event of its own).
    member: u32,
    /// Scheduled for a later instant than the one it was scheduled at: a timer, whose
    /// lateness a realtime run measures (an event for the current instant is part of the
    /// work of that instant, not a timer that can be on time).
    timer: bool,
}

/// What a queued event runs.
enum Fire {
    /// A callback of its own, and the handle that can call it off (for cancellable events).
    Once(Callback, Option<Rc<Cell<Option<EmuTime>>>>),
    /// Event [`Pending::member`] of a group: the group holds what it needs and its cut-off,
    /// in one allocation for all its events (see [`Group`]).
    Member(Rc<Group<dyn Members>>),
}

// The queue's entries are this and their key (16 bytes): one cache line each. A group's
// event must not make every event larger than a closure's.
const _: () = assert!(std::mem::size_of::<Pending>() <= 48);

/// Cache lines before an actor's fields that [`Pending::fetch_ahead`] asks for.
const HOME_LINES_BEFORE: usize = 12;

/// Where a delivery will read first, for the clock to fetch into the cache while the event
/// before it runs: the receiver's mailbox and its state, each 0 when not known. Hints only:
/// the clock never reads through them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Near {
    /// The receiver's mailbox.
    pub mailbox: usize,
    /// The receiver's state (an actor's own fields).
    pub home: usize,
}

impl Near {
    /// Nothing known.
    pub const NONE: Near = Near {
        mailbox: 0,
        home: 0,
    };
}

impl Pending {
    /// Asks for what firing this event will read first: its closure or group, and the
    /// receiver's mailbox and state when known. With thousands of actors these are rarely in
    /// the cache, and the clock asks for the next event's while the one before runs (see
    /// docs/performance.md, "Timed deliveries, sixth pass").
    fn fetch_ahead(&self) {
        match &self.fire {
            Fire::Once(fire, _) => prefetch(&**fire as *const dyn FnOnce() as *const u8),
            Fire::Member(group) => {
                // Its cut-off first, then what its event reads (up to two lines).
                let at = Rc::as_ptr(group) as *const u8;
                prefetch(at);
                prefetch(at.wrapping_add(std::mem::size_of_val(&**group) - 1));
            }
        }
        let Near { mailbox, home } = self.near;
        if mailbox != 0 {
            // The mailbox's state and its waker lie in its first two lines.
            prefetch(mailbox as *const u8);
            prefetch(mailbox.wrapping_add(64) as *const u8);
        }
        if home != 0 {
            // An actor's fields sit in its tokio task, after the task's header and actix's
            // context, which the wake and the poll read first: the lines from 768 bytes before
            // the fields to the one after their start (measured: 1, 8 and 12 lines before
            // gave 1.7, 2.1 and 2.1-2.9 M deliveries/s under cache pressure).
            for line in 0..HOME_LINES_BEFORE + 2 {
                let at = home
                    .wrapping_sub(64 * HOME_LINES_BEFORE)
                    .wrapping_add(64 * line);
                prefetch(at as *const u8);
            }
        }
    }

    /// Runs the event if it is not called off at `due`; returns whether it ran.
    fn run(self, due: EmuTime) -> bool {
        match self.fire {
            Fire::Once(fire, cancelled) => {
                let runs = cancelled.is_none_or(|c| fires(&c, due));
                if runs {
                    fire();
                }
                runs
            }
            Fire::Member(group) => {
                let runs = fires(&group.cutoff, due);
                if runs {
                    group.events.fire(self.member);
                }
                runs
            }
        }
    }
}

thread_local! {
    /// Counted work in flight on this thread: `(epoch of the clock counting it, count)`.
    static FLIGHT: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Epochs of clocks, unique in the process, so that a token outliving its run (or dropped on
/// another thread) can never change another run's count.
static EPOCHS: AtomicU64 = AtomicU64::new(1);

/// A token of work in flight: while one is alive the virtual clock will not step on its own
/// say-so (it asks tokio instead). The one send path takes one per message sent (dropped when
/// its handler starts), per reply awaited (dropped when the caller resumes) and per task
/// spawned (dropped after its first poll). A token cannot be forgotten: dropping it, by any
/// path, ends the work. Decrementing at the *start* of a handler is enough because a handler
/// runs to its end in the same poll of its actor, and the clock only looks between polls.
#[derive(Debug)]
pub struct Work {
    epoch: u64,
}

impl Work {
    /// Counts one piece of work in flight on this thread until the token is dropped.
    #[inline]
    pub fn begin() -> Work {
        FLIGHT.with(|f| {
            let (epoch, n) = f.get();
            f.set((epoch, n + 1));
            Work { epoch }
        })
    }
}

impl Drop for Work {
    #[inline]
    fn drop(&mut self) {
        FLIGHT.with(|f| {
            let (epoch, n) = f.get();
            if epoch == self.epoch {
                f.set((epoch, n.saturating_sub(1)));
            }
        });
    }
}

/// Puts the running task at the back of the arbiter's run queue once: a tokio `LocalSet`
/// runs its ready tasks first-in first-out, so when this completes, every task that was ready
/// when it was first polled has been polled. (Unlike `tokio::task::yield_now`, which defers
/// the wake to the runtime's next park, this costs no park.)
struct ToBack(bool);

impl Future for ToBack {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Drops the clock's pending events when the driver is dropped (its runtime shut down): their
/// closures hold the actors' shared state, which holds the clock, so without this a run that
/// ends with events pending would never be freed.
struct DiscardOnDrop(Clock);

impl Drop for DiscardOnDrop {
    fn drop(&mut self) {
        self.0.discard_pending();
    }
}

struct ClockInner {
    mode: ClockMode,
    /// When emulated time zero was on the wall (realtime): set when the driver starts, so
    /// that building the actors is not counted as lateness.
    origin: Cell<tokio::time::Instant>,
    logical_now: Cell<EmuTime>,
    heap: RefCell<RadixHeap<Pending>>,
    /// This clock's epoch in [`FLIGHT`].
    epoch: u64,
    /// Set when the run has ended: no event fires any more.
    halted: Cell<bool>,
    /// Whether all work is counted (see [`Clock::count_work`]).
    counted: Cell<bool>,
    /// Virtual steps taken on the count alone, and after asking tokio.
    steps: Cell<(u64, u64)>,
    next_seq: Cell<u64>,
    /// Wakes the driver (shared with the mailbox, for posts from other threads).
    wake: std::sync::Arc<tokio::sync::Notify>,
    fired: Cell<u64>,
    lateness_us: RefCell<Histogram<u64>>,
    now_mirror: std::cell::OnceCell<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Deliveries held back to be handed out in a perturbed order (virtual mode with
    /// interleaving on; see [`Clock::interleave`]).
    held: RefCell<Option<Interleaver<Callback>>>,
    /// Each instant's handling time, when asked for (see [`Clock::record_load`]).
    load: RefCell<Option<Vec<InstantLoad>>>,
    /// Whether deliveries go through [`Clock::deliver`] (held, logged or checked).
    tracking: Cell<bool>,
    /// Where the order of deliveries is recorded (see [`Clock::record_order`]).
    log: RefCell<Option<OrderLog>>,
    /// The recorded order a replay follows or checks (see [`Clock::replay_order`]).
    script: RefCell<Option<OrderScript>>,
    /// Where the replay first left its record.
    divergence: RefCell<Option<String>>,
    /// Called every so often in wall time by a realtime clock (see [`Clock::every_wall`]).
    tick: RefCell<Option<WallTick>>,
    /// Where other threads post events (a shard of a `--threads` run; see [`Clock::mailbox`]).
    mailbox: std::cell::OnceCell<std::sync::Arc<Mailbox>>,
    /// When emulated time zero is on the wall, if set before the driver starts (the shards
    /// of a `--threads` run share one origin).
    start_at: Cell<Option<std::time::Instant>>,
    /// How late the OS has woken an idle realtime clock from its naps, which sets how long
    /// before a deadline it stops sleeping and spins; `None`: it never spins (see
    /// [`Clock::sleep_without_spinning`]).
    oversleep: RefCell<Option<Oversleep>>,
}

/// A callback a realtime clock makes every `every` of wall time, with emulated now and
/// emulated time by the wall.
struct WallTick {
    every: std::time::Duration,
    last: std::time::Instant,
    call: Box<dyn FnMut(EmuTime, EmuTime)>,
}

/// How the recording or replay of a run's order of deliveries went ([`Clock::finish_order`]).
#[derive(Debug, Default)]
pub struct OrderOutcome {
    /// Recorded: the deliveries written, or the write error.
    pub recorded: Option<std::io::Result<u64>>,
    /// Replayed: the deliveries that followed the record, or where the run first left it.
    pub replayed: Option<Result<u64, String>>,
}

/// One instant of a virtual run as realtime pacing would meet it: when it is due, how long its
/// handling took on this machine (firing its events and the actors settling), and how many
/// timers came due in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InstantLoad {
    /// Emulated time of the instant, µs.
    pub due_us: u64,
    /// Wall time its handling took, ns.
    pub busy_ns: u64,
    /// Timers that came due in it.
    pub timers: u32,
}

/// The one source of "now" and of timers, shared by every actor of a run (cheap to clone).
#[derive(Clone)]
pub struct Clock {
    inner: Rc<ClockInner>,
}

impl Clock {
    /// A clock starting at emulated time zero now. Must be created inside the tokio runtime
    /// that will drive it (paused for [`ClockMode::Virtual`]).
    pub fn new(mode: ClockMode) -> Clock {
        let hist = lateness_histogram();
        // The newest clock on a thread owns its count of work in flight.
        let epoch = EPOCHS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        FLIGHT.with(|f| f.set((epoch, 0)));
        Clock {
            inner: Rc::new(ClockInner {
                mode,
                origin: Cell::new(tokio::time::Instant::now()),
                logical_now: Cell::new(EmuTime::ZERO),
                heap: RefCell::new(RadixHeap::default()),
                epoch,
                halted: Cell::new(false),
                counted: Cell::new(false),
                steps: Cell::new((0, 0)),
                next_seq: Cell::new(0),
                wake: std::sync::Arc::new(tokio::sync::Notify::new()),
                fired: Cell::new(0),
                lateness_us: RefCell::new(hist),
                now_mirror: std::cell::OnceCell::new(),
                held: RefCell::new(None),
                load: RefCell::new(None),
                tracking: Cell::new(false),
                log: RefCell::new(None),
                script: RefCell::new(None),
                divergence: RefCell::new(None),
                tick: RefCell::new(None),
                mailbox: std::cell::OnceCell::new(),
                start_at: Cell::new(None),
                oversleep: RefCell::new(Some(Oversleep::default())),
            }),
        }
    }

    /// In realtime mode, calls `call(now, wall_now)` about every `every` of wall time while
    /// the run goes on — between instants and while waiting for the next — for a live view
    /// (it must not schedule events or send messages: what it reads, it only reads). A
    /// virtual clock never calls it.
    pub fn every_wall(
        &self,
        every: std::time::Duration,
        call: impl FnMut(EmuTime, EmuTime) + 'static,
    ) {
        let now = std::time::Instant::now();
        *self.inner.tick.borrow_mut() = Some(WallTick {
            every,
            // The first call comes at once.
            last: now.checked_sub(every).unwrap_or(now),
            call: Box::new(call),
        });
    }

    /// Makes the wall tick's call if it is due.
    fn wall_tick(&self, speedup: f64) {
        let mut tick = self.inner.tick.borrow_mut();
        let Some(t) = tick.as_mut() else { return };
        if t.last.elapsed() < t.every {
            return;
        }
        t.last = std::time::Instant::now();
        let (now, wall) = (self.now(), self.wall_now(speedup));
        // Taken out while it runs: what it reads may not borrow the tick.
        let mut call = std::mem::replace(&mut t.call, Box::new(|_, _| {}));
        drop(tick);
        call(now, wall);
        if let Some(t) = self.inner.tick.borrow_mut().as_mut() {
            t.call = call;
        }
    }

    /// From now on (virtual mode), records each instant's handling time, for
    /// [`Clock::take_load`] (what `--speedup auto` calibrates from).
    pub fn record_load(&self) {
        if self.inner.mode == ClockMode::Virtual {
            *self.inner.load.borrow_mut() = Some(Vec::new());
        }
    }

    /// The instants recorded since [`Clock::record_load`] (empty if it was not called).
    pub fn take_load(&self) -> Vec<InstantLoad> {
        self.inner.load.borrow_mut().take().unwrap_or_default()
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

    /// The current emulated time: the time of the events being handled, in both modes (in
    /// realtime mode the wall clock decides when they are handled, not what time they see).
    #[inline]
    pub fn now(&self) -> EmuTime {
        self.inner.logical_now.get()
    }

    /// Emulated time as the wall clock has it in realtime mode (wall time since the start
    /// times the speed-up): where the run should be; `now` lags it by the lateness.
    fn wall_now(&self, speedup: f64) -> EmuTime {
        let wall = self.inner.origin.get().elapsed().as_secs_f64();
        EmuTime::from_micros((wall * speedup * MICROS_PER_SEC as f64) as u64)
    }

    /// Emulated time as the wall clock has it (realtime: wall time since the start times the
    /// speed-up, never before `now`); in virtual mode, `now`.
    pub fn wall_now_emulated(&self) -> EmuTime {
        match self.inner.mode {
            ClockMode::Virtual => self.now(),
            ClockMode::Realtime { speedup } => self.wall_now(speedup).max(self.now()),
        }
    }

    /// Runs `fire` at emulated time `due` (or as soon as possible if `due` has passed).
    /// Events due at the same time run in the order they were scheduled.
    pub fn at(&self, due: EmuTime, fire: impl FnOnce() + 'static) {
        self.at_near(due, Near::NONE, fire);
    }

    /// Like [`Clock::at`], with where the callback reads first (its receiver's mailbox and
    /// state, 0 when not known): the clock fetches them into the cache while the event before
    /// runs.
    pub fn at_near(&self, due: EmuTime, near: Near, fire: impl FnOnce() + 'static) {
        self.push(due, Fire::Once(Box::new(fire), None), 0, near);
    }

    /// Runs event `member` of `group` at emulated time `due`, unless the group has called it
    /// off by then; with where it reads first as for [`Clock::at_near`]. Ordered with every
    /// other event as [`Clock::at`] orders them.
    pub fn at_member(&self, due: EmuTime, near: Near, group: Rc<Group<dyn Members>>, member: u32) {
        self.push(due, Fire::Member(group), member, near);
    }

    fn push(&self, due: EmuTime, fire: Fire, member: u32, near: Near) {
        let timer = due > self.inner.logical_now.get();
        self.push_event(due, fire, member, timer, near);
    }

    fn push_event(&self, due: EmuTime, fire: Fire, member: u32, timer: bool, near: Near) {
        let seq = self.inner.next_seq.get();
        self.inner.next_seq.set(seq + 1);
        let mut heap = self.inner.heap.borrow_mut();
        // The driver waits on `wake` when there is nothing to do and, in realtime mode, for
        // the earliest deadline; in virtual mode only the first case needs a wake.
        let wake = match self.inner.mode {
            ClockMode::Virtual => heap.is_empty(),
            ClockMode::Realtime { .. } => heap.peek_due().is_none_or(|e| due.as_micros() < e),
        };
        heap.push(
            due.as_micros(),
            seq,
            Pending {
                fire,
                near,
                member,
                timer,
            },
        );
        drop(heap);
        if wake {
            self.inner.wake.notify_one();
        }
    }

    /// Like [`Clock::at`], but the event can be called off with the returned handle. A
    /// cancelled event still counts as fired (the count is an output), but runs nothing.
    pub fn at_cancellable(&self, due: EmuTime, fire: impl FnOnce() + 'static) -> TimerHandle {
        let handle = TimerHandle::new();
        self.at_with(due, Near::NONE, fire, &handle);
        handle
    }

    /// Like [`Clock::at_cancellable`], under a handle shared with other events (one
    /// allocation for a group that is called off together, or from an instant on), with
    /// where the callback reads first as for [`Clock::at_near`].
    pub fn at_with(
        &self,
        due: EmuTime,
        near: Near,
        fire: impl FnOnce() + 'static,
        handle: &TimerHandle,
    ) {
        let fire = Fire::Once(Box::new(fire), Some(Rc::clone(&handle.0)));
        self.push(due, fire, 0, near);
    }

    /// Where the next event to fire will read first (for tests of the callers' hints).
    #[cfg(test)]
    pub(crate) fn next_near(&self) -> Option<Near> {
        self.inner.heap.borrow_mut().peek().map(|p| p.near)
    }

    /// Promises that, from now on, every piece of work that can still act at the current
    /// emulated time is either a task ready in the arbiter's run queue or counted by a live
    /// [`Work`] token. The virtual clock then steps, when nothing is counted, without asking
    /// tokio whether every task is idle. [`crate::actors::Emu`] makes this promise: its send
    /// path counts every message, reply and spawned task. Work that is neither (a future
    /// woken by something else, such as a tokio timer or `yield_now`) must not exist in a run
    /// that makes it; without the promise the clock always asks tokio.
    pub fn count_work(&self) {
        self.inner.counted.set(true);
    }

    /// Virtual steps taken so far on the count of work alone, and after asking tokio.
    pub fn step_counts(&self) -> (u64, u64) {
        self.inner.steps.get()
    }

    /// Ends the run's time: no event fires after this (the director calls it when the run is
    /// over, so that nothing moves between its end and the collection of the results).
    pub fn halt(&self) {
        self.inner.halted.set(true);
        if let Some(m) = self.inner.mailbox.get() {
            m.close();
        }
    }

    /// The door other threads post events to this clock through (made on first call, on
    /// the thread that drives the clock): a shard of a `--threads` run hands it to the
    /// others. A post runs at its due time, or at once if the clock is past it, and counts
    /// as a timer for lateness.
    pub fn mailbox(&self) -> std::sync::Arc<Mailbox> {
        let m = self.inner.mailbox.get_or_init(|| {
            std::sync::Arc::new(Mailbox::new(std::sync::Arc::clone(&self.inner.wake)))
        });
        std::sync::Arc::clone(m)
    }

    /// Sets when emulated time zero is on the wall (realtime), instead of when the driver
    /// starts: the shards of a `--threads` run share one origin.
    pub fn start_at(&self, origin: std::time::Instant) {
        self.inner.start_at.set(Some(origin));
    }

    /// Makes an idle realtime clock sleep until its deadlines instead of spinning the last
    /// stretch: for threads that share fewer cores than they are, where a spinning thread
    /// takes the core another needs (and the OS then deschedules one for a whole slice).
    pub fn sleep_without_spinning(&self) {
        *self.inner.oversleep.borrow_mut() = None;
    }

    /// Takes what other threads posted into the queue of events.
    fn take_posts(&self) {
        let Some(m) = self.inner.mailbox.get() else {
            return;
        };
        for (due, run) in m.take() {
            let fire = Fire::Once(run, None);
            match due {
                Some(due) => self.push_event(due, fire, 0, true, Near::NONE),
                None => self.push_event(self.now(), fire, 0, false, Near::NONE),
            }
        }
    }

    /// Whether other threads posted events not yet taken.
    fn has_posts(&self) -> bool {
        self.inner.mailbox.get().is_some_and(|m| m.has_posts())
    }

    /// Timer lateness so far as a histogram of µs (to merge the shards' of a `--threads`
    /// run); `None` in virtual mode.
    pub fn lateness_histogram(&self) -> Option<Histogram<u64>> {
        match self.inner.mode {
            ClockMode::Virtual => None,
            ClockMode::Realtime { .. } => Some(self.inner.lateness_us.borrow().clone()),
        }
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
        // Taken out first: dropping closures may drop the last holder of other state.
        let pending = std::mem::take(&mut *self.inner.heap.borrow_mut());
        drop(pending);
        let held = self.inner.held.borrow_mut().as_mut().map(|q| {
            let mut taken = Interleaver::new(0);
            std::mem::swap(q, &mut taken);
            taken
        });
        drop(held);
    }

    /// Whether work is counted and none is in flight for this clock.
    fn quiet(&self) -> bool {
        self.inner.counted.get() && FLIGHT.with(|f| f.get() == (self.inner.epoch, 0))
    }

    /// Timer lateness so far; `None` in virtual mode, where timers are never late.
    pub fn lateness(&self) -> Option<Lateness> {
        self.lateness_histogram().map(|h| Lateness::of(&h))
    }

    /// The wall instant (on tokio's clock) at which emulated time `due` arrives in realtime mode.
    fn wall_deadline(&self, due: EmuTime, speedup: f64) -> tokio::time::Instant {
        let wall_secs = due.as_micros() as f64 / MICROS_PER_SEC as f64 / speedup;
        let wall = std::time::Duration::from_secs_f64(wall_secs.min(1e9));
        self.inner.origin.get() + wall
    }

    /// Pops and fires every event due at or before `now`, in `(due, seq)` order.
    /// Callbacks may schedule further events; those due by `now` fire in this same pass.
    /// Returns whether any callback ran (cancelled events run none).
    /// `wall`: in realtime mode, emulated time by the wall clock, to measure each event's
    /// lateness against.
    fn fire_due(&self, now: EmuTime, wall: Option<EmuTime>) -> bool {
        self.fire_counting(now, wall).0
    }

    /// [`Clock::fire_due`], also saying how many timers (see `Pending::timer`) came due.
    fn fire_counting(&self, now: EmuTime, wall: Option<EmuTime>) -> (bool, u32) {
        if let Some(m) = self.inner.now_mirror.get() {
            m.store(now.as_micros(), std::sync::atomic::Ordering::Relaxed);
        }
        let (mut ran, mut timers) = (false, 0u32);
        loop {
            let next = {
                let mut heap = self.inner.heap.borrow_mut();
                let next = heap.pop_due_by(now.as_micros());
                if next.is_some() {
                    if let Some(after) = heap.peek() {
                        after.fetch_ahead();
                    }
                }
                next
            };
            let Some((due, event)) = next else { break };
            timers = timers.saturating_add(u32::from(event.timer));
            if let (Some(wall), true) = (wall, event.timer) {
                let late = wall.since(EmuTime::from_micros(due)).as_micros().max(1);
                record_lateness(&mut self.inner.lateness_us.borrow_mut(), late);
            }
            self.inner.fired.set(self.inner.fired.get() + 1);
            ran |= event.run(EmuTime::from_micros(due));
        }
        (ran, timers)
    }

    /// Lets the actors handle what the last delivery set going, until no counted work is
    /// left (a realtime clock cannot ask tokio whether they are idle); bounded, in case work
    /// stays counted with no task ready.
    async fn settle_realtime(&self) {
        if !self.inner.counted.get() {
            return;
        }
        for _ in 0..SETTLE_ROUNDS_MAX {
            if self.quiet() {
                return;
            }
            ToBack(false).await;
        }
    }

    /// Drives the timers forever; spawn exactly once per run on the run's arbiter.
    pub async fn drive(self) {
        let _discard = DiscardOnDrop(self.clone());
        // Emulated time starts now, with every actor built and started.
        let origin = match self.inner.start_at.get() {
            Some(at) => tokio::time::Instant::from_std(at),
            None => tokio::time::Instant::now(),
        };
        self.inner.origin.set(origin);
        // One sleep, re-armed each round: no timer allocation per event.
        let idle = tokio::time::sleep(std::time::Duration::ZERO);
        tokio::pin!(idle);
        // The instant being handled, when its load is recorded: (due µs, start, timers).
        let mut open: Option<(u64, std::time::Instant, u32)> = None;
        // Whether every actor is known to be idle (nothing ran since they last were).
        let mut settled = false;
        loop {
            if self.inner.halted.get() {
                // The run is over; the runtime will drop this task (and the pending events).
                std::future::pending::<()>().await;
            }
            self.take_posts();
            // Deliveries held back by the interleaver are due now (only a virtual clock holds
            // any; the virtual branch looks at the heap again itself).
            let now = self.inner.logical_now.get().as_micros();
            let head =
                (self.inner.heap.borrow_mut().peek_due()).or_else(|| self.holding().then_some(now));
            match (head, self.inner.mode) {
                (None, _) => {
                    self.inner.wake.notified().await;
                    settled = false;
                }
                (Some(_), ClockMode::Virtual) => {
                    if !settled {
                        // Let every task that is ready run; if none of them left counted
                        // work behind, nothing can act at the current time any more.
                        // Counted work left means tasks made ready behind this one (a
                        // handler's messages): let them run too, a bounded number of rounds.
                        let mut rounds = if self.inner.counted.get() {
                            COUNTED_ROUNDS
                        } else {
                            0
                        };
                        while rounds > 0 {
                            ToBack(false).await;
                            rounds = if self.quiet() { 0 } else { rounds - 1 };
                        }
                        let (fast, slow) = self.inner.steps.get();
                        if self.quiet() {
                            self.inner.steps.set((fast + 1, slow));
                        } else {
                            self.inner.steps.set((fast, slow + 1));
                            // Not known: wait until every actor is idle. The paused tokio
                            // clock only advances (and wakes this sleep) when no task is ready.
                            let step =
                                tokio::time::Instant::now() + std::time::Duration::from_millis(1);
                            idle.as_mut().reset(step);
                            idle.as_mut().await;
                        }
                        if self.inner.halted.get() {
                            continue;
                        }
                    }
                    if let Some((due_us, start, timers)) = open.take() {
                        let busy_ns = start.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
                        if let Some(load) = self.inner.load.borrow_mut().as_mut() {
                            load.push(InstantLoad {
                                due_us,
                                busy_ns,
                                timers,
                            });
                        }
                    }
                    // Events scheduled meanwhile are in the heap, earlier ones included.
                    let head = self.inner.heap.borrow_mut().peek_due();
                    let now = self.inner.logical_now.get().as_micros();
                    if self.holding() && head.is_none_or(|h| h > now) {
                        // Everything due now has been handed to the interleaver: deliver the
                        // next it chooses, alone, and let the actors settle from it.
                        if let Some(deliver) = self.next_held() {
                            deliver();
                            settled = false;
                        }
                        continue;
                    }
                    if let Some(next) = head {
                        // Time never goes back: an event scheduled in the past fires now.
                        let now = EmuTime::from_micros(next).max(self.inner.logical_now.get());
                        self.inner.logical_now.set(now);
                        let recording = self.inner.load.borrow().is_some();
                        let start = recording.then(std::time::Instant::now);
                        let (ran, timers) = self.fire_counting(now, None);
                        if let Some(start) = start {
                            open = Some((now.as_micros(), start, timers));
                        }
                        // Only cancelled events fired: nothing ran, so all is still idle.
                        settled = !ran;
                    }
                }
                (Some(due), ClockMode::Realtime { speedup }) => {
                    self.wall_tick(speedup);
                    let heap_head = self.inner.heap.borrow_mut().peek_due();
                    if self.holding() && heap_head.is_none_or(|h| h > now) {
                        // Held deliveries of this instant: one at a time, each settled, as in
                        // virtual mode (the order, not the wall, decides what comes next).
                        if let Some(deliver) = self.next_held() {
                            deliver();
                            self.settle_realtime().await;
                        }
                        continue;
                    }
                    let due = EmuTime::from_micros(due);
                    let deadline = self.wall_deadline(due, speedup);
                    if self.quiet() {
                        // Every actor is idle, so nothing on this thread can run or schedule
                        // an earlier event before the deadline: sleep the thread itself (the
                        // OS wakes it within microseconds, tokio's timer wheel only to the
                        // millisecond, which at a speed-up of 3 600 is 3.6 emulated seconds)
                        // and spin the last stretch.
                        // A post from another thread wakes it (and is taken next round).
                        let woken = wait_blocking(
                            deadline.into_std(),
                            &self.inner.oversleep,
                            || self.wall_tick(speedup),
                            || self.has_posts(),
                        );
                        if woken {
                            continue;
                        }
                    } else if tokio::time::Instant::now() < deadline {
                        // Tokio's timer wheel rounds to whole milliseconds, which at a
                        // speed-up of 10^4 is 10 emulated seconds. So sleep to just before
                        // the deadline and yield (letting other tasks run) for the last
                        // stretch. An earlier event scheduled meanwhile wakes the loop.
                        let coarse = deadline.checked_sub(REALTIME_SPIN).unwrap_or(deadline);
                        // In steps of at most a nap, so that the wall tick keeps its pace.
                        let step = coarse.min(tokio::time::Instant::now() + REALTIME_BLOCKING_NAP);
                        idle.as_mut().reset(step);
                        tokio::select! {
                            biased;
                            _ = self.inner.wake.notified() => continue,
                            _ = idle.as_mut() => {}
                        }
                        if step < coarse {
                            continue;
                        }
                        while tokio::time::Instant::now() < deadline {
                            tokio::task::yield_now().await;
                        }
                    }
                    // Logical time, as ns-3's realtime scheduler keeps it: the events run at
                    // their own time, only as late as the wall makes them; one instant at a
                    // time, each settled before the next (as in virtual mode), so a late
                    // timer delays what follows in wall time but changes no result.
                    let now = due.max(self.inner.logical_now.get());
                    self.inner.logical_now.set(now);
                    let wall = self.wall_now(speedup);
                    if self.fire_due(now, Some(wall)) && self.inner.counted.get() {
                        let mut rounds = COUNTED_ROUNDS;
                        while rounds > 0 {
                            ToBack(false).await;
                            rounds = if self.quiet() { 0 } else { rounds - 1 };
                        }
                    }
                }
            }
        }
    }
}

/// A lane as a record's messages name it.
fn lane_text(lane: Lane) -> String {
    match lane {
        Lane::Channel { from, to } => format!("a delivery from actor {from} to actor {to}"),
        Lane::Task(n) => format!("the start of task {n}"),
    }
}

/// Asks the processor to bring `p`'s cache line in ahead of its use.
#[inline(always)]
fn prefetch(p: *const u8) {
    // SAFETY: a prefetch is a hint that never faults, whatever the address; SSE, which it
    // needs, is part of every x86_64 processor.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
