//! External decisions in realtime runs: asked without stopping the emulation. When a plug-in
//! backed by a process is asked, its proxy sends the question and reports the decision
//! *pending*; the deciding actor then undoes the input it was handling (it kept a copy of
//! its core) and holds it, and every plain message after it — a scheduler busy deciding —
//! while the rest of the federation goes on. The process's answer is read by a thread of its
//! own and posted to the clock, which hands it to the actor at the emulated time it arrived
//! (the wall time it took, scaled by the speed-up); the actor handles its held input again,
//! this time with the answer, and then the inputs it held.
//!
//! An *attempt* is one handling of an input. It asks its questions in order; the first one
//! with no answer yet is sent and ends the attempt (later decision points of the attempt
//! send nothing). The next attempt gets the answers in the same order — each checked
//! against the question as it is asked now: if the question changed meanwhile (time went on,
//! the cluster answered its IGG's requests) and the answer no longer fits, it is asked again
//! (at most [`REASKS`] times), not held against the policy. Decisions are counted and traced
//! only when an attempt completes.
//!
//! A decision unanswered within its deadline — `[external] deadline` of emulated time, or
//! `[external] timeout` of wall time scaled by the speed-up, whichever is shorter — is made
//! by the topology's fallback (counted), or ends the run; its late answer is dropped. Each
//! decision's latency is kept per plug-in, with how late its actor handled what it held.
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

/// How many times one question of an input is asked again because the input's situation
/// changed while its answer came and the answer no longer fits.
pub const REASKS: u32 = 3;

/// A question sent and not yet answered.
struct Waiting {
    process: Rc<Process>,
    id: u64,
    by: ActorId,
    asked: EmuTime,
    site: Site,
    question: Value,
    /// The trace record being handled when it was asked (the answer's cause).
    cause: Option<u64>,
}

/// The answers one input of an actor has had, in the order its attempts ask: each attempt
/// asks the same questions in the same order, and the i-th gets the i-th answer (with the
/// question it answered).
#[derive(Default)]
struct Replay {
    answers: Vec<Answered>,
    next: usize,
    reasks: u32,
}

/// One answer an input has had.
#[derive(Clone)]
pub(crate) struct Answered {
    /// The question it answered, as it was asked.
    pub question: Value,
    /// The process's answer, or why none came.
    pub answer: Result<Value, String>,
    /// No answer came within the deadline (the fallback decides; it is not asked again).
    pub missed: bool,
}

/// Wakes an actor at an emulated time, for the trace record given (its held input is to be
/// handled again).
pub(crate) type Waker = Rc<dyn Fn(EmuTime, Option<u64>)>;

/// The trace record being handled now (what a question is caused by).
pub(crate) type Cause = Box<dyn Fn() -> Option<u64>>;

/// A decision's bookkeeping (its count and trace record), kept until its attempt completes.
type Deferred = Box<dyn FnOnce()>;

/// A realtime run's pending external decisions.
pub struct Realtime {
    /// How long a decision may take (emulated) before its fallback decides.
    pub deadline: EmuDuration,
    waiting: RefCell<Vec<Waiting>>,
    /// The actor whose current attempt left a decision pending (taken by the actor).
    pending: Cell<Option<ActorId>>,
    wakers: RefCell<BTreeMap<ActorId, Waker>>,
    replays: RefCell<BTreeMap<ActorId, Replay>>,
    deferred: RefCell<Vec<(ActorId, Deferred)>>,
    latency: RefCell<BTreeMap<Site, Histogram<u64>>>,
    /// How late each site's actor handled the inputs it held while its decision was pending.
    held: RefCell<BTreeMap<Site, Histogram<u64>>>,
    /// Each actor's site that last left a decision pending.
    last: RefCell<BTreeMap<ActorId, Site>>,
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
            replays: RefCell::new(BTreeMap::new()),
            deferred: RefCell::new(Vec::new()),
            latency: RefCell::new(BTreeMap::new()),
            held: RefCell::new(BTreeMap::new()),
            last: RefCell::new(BTreeMap::new()),
            cause,
        }
    }

    /// How actor `by` is woken when its pending decision is answered.
    pub(crate) fn on_wake(&self, by: ActorId, waker: Waker) {
        self.wakers.borrow_mut().insert(by, waker);
    }

    /// Whether actor `by` holds its inputs while a decision is pending (its decisions are
    /// then made in attempts that may be undone).
    pub(crate) fn holds(&self, by: ActorId) -> bool {
        self.wakers.borrow().contains_key(&by)
    }

    /// Whether actor `by`'s current attempt has already left a decision pending (its later
    /// decision points then ask nothing).
    pub(crate) fn is_pending(&self, by: ActorId) -> bool {
        self.pending.get() == Some(by)
    }

    /// The next answer actor `by`'s attempt has had, with the question it answered.
    pub(crate) fn answer(&self, by: ActorId) -> Option<Answered> {
        let mut replays = self.replays.borrow_mut();
        let r = replays.entry(by).or_default();
        let answer = r.answers.get(r.next).cloned()?;
        r.next += 1;
        Some(answer)
    }

    /// The answer actor `by` just had no longer fits its question, which changed meanwhile:
    /// forget it, and have the actor handle its input again at once (`now`), asking anew.
    /// Returns whether it may (at most [`REASKS`] times per input); the attempt is then
    /// pending.
    pub(crate) fn ask_again(&self, by: ActorId, now: EmuTime) -> bool {
        {
            let mut replays = self.replays.borrow_mut();
            let Some(r) = replays.get_mut(&by) else {
                return false;
            };
            if r.reasks >= REASKS || r.next == 0 {
                return false;
            }
            r.reasks += 1;
            r.next -= 1;
            r.answers.truncate(r.next);
        }
        self.pending.set(Some(by));
        let waker = self.wakers.borrow().get(&by).cloned();
        if let Some(w) = waker {
            w(now, (self.cause)());
        }
        true
    }

    /// A proxy sent `question`, id `id` of `process`, for actor `by` at `asked`: the
    /// attempt is pending until it is answered.
    pub(crate) fn sent(
        &self,
        (process, id): (Rc<Process>, u64),
        by: ActorId,
        (asked, question): (EmuTime, Value),
        site: Site,
    ) {
        self.last.borrow_mut().insert(by, site.clone());
        self.waiting.borrow_mut().push(Waiting {
            process,
            id,
            by,
            asked,
            site,
            question,
            cause: (self.cause)(),
        });
        self.pending.set(Some(by));
    }

    /// Keeps a decision's bookkeeping until actor `by`'s attempt completes (dropped if it is
    /// undone).
    pub(crate) fn defer(&self, by: ActorId, f: Deferred) {
        self.deferred.borrow_mut().push((by, f));
    }

    /// Whether the attempt actor `by` just made left a decision pending (asked once after
    /// each attempt). If not, the input is done: its decisions' bookkeeping is carried out
    /// and its answers forgotten. If so, the bookkeeping is dropped (the next attempt makes
    /// the decisions again) and the next attempt asks from its first question.
    pub fn take_pending(&self, by: ActorId) -> bool {
        let pending = self.pending.get() == Some(by);
        let mine: Vec<Deferred> = {
            let mut all = self.deferred.borrow_mut();
            let (mine, others) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|(a, _)| *a == by);
            *all = others;
            mine.into_iter().map(|(_, f)| f).collect()
        };
        if pending {
            self.pending.set(None);
            if let Some(r) = self.replays.borrow_mut().get_mut(&by) {
                r.next = 0;
            }
        } else {
            self.replays.borrow_mut().remove(&by);
            for f in mine {
                f();
            }
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
        let mut came = Vec::new();
        self.waiting
            .borrow_mut()
            .retain(|w| match w.process.take(w.id) {
                None => true,
                Some(answer) => {
                    record(&mut self.latency.borrow_mut(), &w.site, now.since(w.asked));
                    let answered = Answered {
                        question: w.question.clone(),
                        answer,
                        missed: false,
                    };
                    came.push((w.by, w.cause, answered));
                    false
                }
            });
        for (by, cause, answer) in came {
            (self.replays.borrow_mut().entry(by).or_default().answers).push(answer);
            let waker = self.wakers.borrow().get(&by).cloned();
            if let Some(w) = waker {
                w(now, cause);
            }
        }
    }

    /// Actor `by`'s question `id` is due and unanswered: it gets the miss (the fallback
    /// decides when the actor handles its input again), and its late answer will be dropped.
    /// Returns whether it was still waited for.
    pub fn expire(&self, by: ActorId, id: u64, now: EmuTime) -> bool {
        let mut waiting = self.waiting.borrow_mut();
        let Some(i) = waiting.iter().position(|w| w.by == by && w.id == id) else {
            return false;
        };
        let w = waiting.remove(i);
        drop(waiting);
        w.process.forget(w.id);
        let took = now.since(w.asked);
        let miss = format!(
            "the external policy `{}` did not answer within {} s of emulated time ([external] deadline, or its wall-clock timeout at this speed-up)",
            w.process.command(),
            crate::time::format_secs(took.as_micros())
        );
        let missed = Answered {
            question: w.question,
            answer: Err(miss),
            missed: true,
        };
        (self.replays.borrow_mut().entry(by).or_default().answers).push(missed);
        record(&mut self.latency.borrow_mut(), &w.site, took);
        true
    }

    /// Actor `by` handled an input it held while its decision was pending, `late` after it
    /// came.
    pub fn held(&self, by: ActorId, late: EmuDuration) {
        if let Some(site) = self.last.borrow().get(&by) {
            record(&mut self.held.borrow_mut(), site, late);
        }
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
    // As timer lateness's: growing as needed, so a high speed-up's long waits are kept, not
    // clamped to a top bucket that would read as the p99.
    let h = all
        .entry(site.clone())
        .or_insert_with(crate::time::lateness_histogram);
    crate::time::record_lateness(h, took.as_micros().max(1));
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
