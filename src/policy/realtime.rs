//! External decisions in realtime runs: asked without stopping the emulation. When a plug-in
//! backed by a process is asked, its proxy sends the question and reports the decision
//! *pending*; the deciding actor then undoes what it was doing (it kept a copy of its core),
//! holds its input and every one after it — a scheduler busy deciding — while the rest of
//! the federation goes on. The process's answer is read by a thread of its own and posted to
//! the clock, which hands it to the actor at the emulated time it arrived (the wall time it
//! took, scaled by the speed-up); the actor handles its held input again, this time with
//! the answer, and then the inputs it held. A decision still unanswered `[external]
//! deadline` after it was asked is made by the topology's fallback (counted), or ends the
//! run. Each decision's latency (emulated, from question to answer) is kept per plug-in and
//! reported in `summary.json`.
//!
//! Admission is the exception: it is decided inside the IGG's request to a cluster, which is
//! answered within the instant, so its process is waited for there (at most the
//! `[external] timeout`).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use hdrhistogram::Histogram;
use serde_json::Value;

use super::external::Process;
use super::run::Site;
use crate::time::{EmuDuration, EmuTime, Lateness};
use crate::trace::ActorId;

/// A question sent and not yet answered.
struct Waiting {
    process: Rc<Process>,
    id: u64,
    by: ActorId,
    asked: EmuTime,
    site: Site,
    /// The trace record being handled when it was asked (the answer's cause).
    cause: Option<u64>,
}

/// The answers to the questions one input of an actor asked, in the order asked: each time
/// the input is handled again it asks the same questions in the same order, and the i-th
/// gets the i-th answer — until one has none yet, which is sent and leaves it pending again.
#[derive(Default)]
struct Replay {
    answers: Vec<Result<Value, String>>,
    next: usize,
}

/// Wakes an actor at an emulated time, for the trace record given (its held input is to be
/// handled again).
pub(crate) type Waker = Rc<dyn Fn(EmuTime, Option<u64>)>;

/// The trace record being handled now (what a question is caused by).
pub(crate) type Cause = Box<dyn Fn() -> Option<u64>>;

/// A realtime run's pending external decisions.
pub struct Realtime {
    /// How long a decision may take (emulated) before its fallback decides.
    pub deadline: EmuDuration,
    waiting: RefCell<Vec<Waiting>>,
    /// The actor whose current input left a decision pending (taken by the actor).
    pending: Cell<Option<ActorId>>,
    wakers: RefCell<BTreeMap<ActorId, Waker>>,
    latency: RefCell<BTreeMap<Site, Histogram<u64>>>,
    /// How late each site's actor handled the inputs it held while its decision was pending.
    held: RefCell<BTreeMap<Site, Histogram<u64>>>,
    /// Each actor's site that last left a decision pending.
    last: RefCell<BTreeMap<ActorId, Site>>,
    /// Per actor, the answers its current input has had.
    replays: RefCell<BTreeMap<ActorId, Replay>>,
    cause: Cause,
}

impl Realtime {
    /// Pending decisions that wait at most `deadline`; `cause` tells the trace record being
    /// handled.
    pub(crate) fn new(deadline: EmuDuration, cause: Cause) -> Realtime {
        Realtime {
            deadline,
            waiting: RefCell::new(Vec::new()),
            pending: Cell::new(None),
            wakers: RefCell::new(BTreeMap::new()),
            latency: RefCell::new(BTreeMap::new()),
            held: RefCell::new(BTreeMap::new()),
            last: RefCell::new(BTreeMap::new()),
            replays: RefCell::new(BTreeMap::new()),
            cause,
        }
    }

    /// How actor `by` is woken when its pending decision is answered or due.
    pub(crate) fn on_wake(&self, by: ActorId, waker: Waker) {
        self.wakers.borrow_mut().insert(by, waker);
    }

    /// The answer to the next question actor `by`'s input asks, if it has come.
    pub(crate) fn answer(&self, by: ActorId) -> Option<Result<Value, String>> {
        let mut replays = self.replays.borrow_mut();
        let r = replays.entry(by).or_default();
        let answer = r.answers.get(r.next).cloned()?;
        r.next += 1;
        Some(answer)
    }

    /// A proxy sent question `id` of `process` for actor `by` at `asked`: the input is
    /// pending until it is answered.
    pub(crate) fn sent(
        &self,
        (process, id): (Rc<Process>, u64),
        by: ActorId,
        asked: EmuTime,
        site: Site,
    ) {
        self.last.borrow_mut().insert(by, site.clone());
        self.waiting.borrow_mut().push(Waiting {
            process,
            id,
            by,
            asked,
            site,
            cause: (self.cause)(),
        });
        self.pending.set(Some(by));
    }

    fn answered(&self, by: ActorId, answer: Result<Value, String>) {
        (self.replays.borrow_mut().entry(by).or_default().answers).push(answer);
    }

    /// Actor `by` handled an input it held while its decision was pending, `late` after it
    /// came.
    pub fn held(&self, by: ActorId, late: EmuDuration) {
        if let Some(site) = self.last.borrow().get(&by) {
            record(&mut self.held.borrow_mut(), site, late);
        }
    }

    /// Whether the input actor `by` just handled left a decision pending (asked once after
    /// each attempt): if not, the input is done and its answers are forgotten; either way the
    /// next attempt asks from its first question again.
    pub fn take_pending(&self, by: ActorId) -> bool {
        let pending = self.pending.get() == Some(by);
        if pending {
            self.pending.set(None);
            if let Some(r) = self.replays.borrow_mut().get_mut(&by) {
                r.next = 0;
            }
        } else {
            self.replays.borrow_mut().remove(&by);
        }
        pending
    }

    /// The question actor `by` waits on, if any (its id).
    pub fn waiting_for(&self, by: ActorId) -> Option<u64> {
        self.waiting
            .borrow()
            .iter()
            .find(|w| w.by == by)
            .map(|w| w.id)
    }

    /// Hands the answers that came to their actors, at emulated time `now` (the wall clock's).
    pub(crate) fn deliver(&self, now: EmuTime) {
        let mut woken = Vec::new();
        let mut came = Vec::new();
        self.waiting
            .borrow_mut()
            .retain(|w| match w.process.take(w.id) {
                None => true,
                Some(answer) => {
                    came.push((w.by, answer));
                    record(&mut self.latency.borrow_mut(), &w.site, now.since(w.asked));
                    woken.push((w.by, w.cause));
                    false
                }
            });
        for (by, answer) in came {
            self.answered(by, answer);
        }
        for (by, cause) in woken {
            let waker = self.wakers.borrow().get(&by).cloned();
            if let Some(w) = waker {
                w(now, cause);
            }
        }
    }

    /// Actor `by`'s question `id` is due and unanswered: its slot gets the miss (the fallback
    /// decides when the actor handles its input again). Returns whether it was still waited
    /// for.
    pub fn expire(&self, by: ActorId, id: u64, now: EmuTime) -> bool {
        let mut waiting = self.waiting.borrow_mut();
        let Some(i) = waiting.iter().position(|w| w.by == by && w.id == id) else {
            return false;
        };
        let w = waiting.remove(i);
        drop(waiting);
        let took = now.since(w.asked);
        let miss = format!(
            "the external policy `{}` did not answer within {} s of emulated time ([external] deadline)",
            w.process.command(),
            crate::time::format_secs(took.as_micros())
        );
        self.answered(by, Err(miss));
        record(&mut self.latency.borrow_mut(), &w.site, took);
        true
    }

    /// A site's decision latency so far, and how late its actor handled what it held
    /// (emulated milliseconds).
    pub(crate) fn figures(&self, site: &Site) -> (Option<Lateness>, Option<Lateness>) {
        (
            self.latency.borrow().get(site).map(Lateness::of),
            self.held.borrow().get(site).map(Lateness::of),
        )
    }
}

/// Adds `took` to `site`'s histogram in `all`.
fn record(all: &mut BTreeMap<Site, Histogram<u64>>, site: &Site, took: EmuDuration) {
    let h = all.entry(site.clone()).or_insert_with(|| {
        // Invariant: 1 µs .. 1 day with 3 significant figures is a valid range (as timer
        // lateness's).
        Histogram::new_with_bounds(1, 86_400_000_000, 3).expect("static histogram bounds are valid")
    });
    let _ = h.record(took.as_micros().clamp(1, 86_400_000_000));
}

thread_local! {
    /// What runs when an answer arrives on this thread's run (set by the run, per thread).
    static ARRIVED: RefCell<Option<Rc<dyn Fn()>>> = const { RefCell::new(None) };
}

/// Makes `f` what runs on this thread when a process posts that an answer came (the run's
/// delivery), or nothing with `None` (the run is over).
pub fn on_arrival(f: Option<Rc<dyn Fn()>>) {
    ARRIVED.with(|a| *a.borrow_mut() = f);
}

/// Runs this thread's delivery (a process's answer came).
pub(crate) fn arrived() {
    let f = ARRIVED.with(|a| a.borrow().clone());
    if let Some(f) = f {
        f();
    }
}
