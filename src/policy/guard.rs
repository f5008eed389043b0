//! Guards: every plug-in (a policy igemu does not ship, in Rust or an external process) is
//! wrapped in the guard of its decision point, which implements the same trait. A guard asks
//! the plug-in, checks the answer ([`super::checks`]), counts the decision, writes it to the
//! trace, and when the answer cannot be carried out — or the process behind it failed — lets
//! the topology's fallback decide (counted), or ends the run with an error naming the
//! policy, the decision and what was wrong.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use serde_json::Value;

use super::checks;
use super::external::protocol::{self as p, Names};
use super::run::{Note, PolicyFailure, Site, Witness};
use crate::igg::dispatch::{Dispatch, DispatchAsk, DispatchSetup};
use crate::igg::negotiation::{
    AnswerPolicy, CounterAsk, OfferAsk, OfferPlan, OfferPolicy, PlanAsk,
};
use crate::igg::peering::Answer;
use crate::lrms::admission::{AdmissionAsk, AdmissionControl, Verdict};
use crate::lrms::contention::Contention;
use crate::lrms::policy::Choice;
use crate::lrms::preemption::{Ask, Preemption};
use crate::lrms::Refusal;
use crate::model::RequestId;
use crate::trace::ActorId;

/// Where an external proxy reports why it could not answer (the process failed, or its
/// answer had the wrong shape), or that the answer will come later (realtime runs); a Rust
/// plug-in's guard finds it empty.
#[derive(Clone, Debug, Default)]
pub(crate) struct Fault {
    failure: Rc<RefCell<Option<String>>>,
    pending: Rc<std::cell::Cell<bool>>,
    /// The answer came for a question that has changed since (realtime).
    stale: Rc<std::cell::Cell<bool>>,
}

impl Fault {
    /// Reports a failure (the first since the guard last looked stands).
    pub(crate) fn report(&self, why: String) {
        self.failure.borrow_mut().get_or_insert(why);
    }

    /// Reports that the question was sent and its answer will come later: the decision is
    /// pending, and whatever is decided now is undone.
    pub(crate) fn pend(&self) {
        self.pending.set(true);
    }

    /// Reports that the answer given was to the question as it was asked, which has changed
    /// since: if it does not fit, it is asked again rather than held against the policy.
    pub(crate) fn stale(&self) {
        self.stale.set(true);
    }

    fn take(&self) -> Option<String> {
        self.failure.borrow_mut().take()
    }

    fn take_pending(&self) -> bool {
        self.pending.replace(false)
    }

    fn take_stale(&self) -> bool {
        self.stale.replace(false)
    }
}

/// What every guard holds.
pub(crate) struct Guard {
    /// Where it decides.
    pub site: Site,
    /// The deciding actor (trace records are its).
    pub by: ActorId,
    /// The run.
    pub witness: Weak<dyn Witness>,
    /// Where a proxy reports failures.
    pub fault: Fault,
    /// How requests and Grids are named in trace records.
    pub names: Names,
}

impl Guard {
    /// Settles one decision: `answer` is the plug-in's (checked), `fallback` decides when it
    /// cannot (`None` without a fallback), `safe` is carried out while a failure ends the run.
    fn settle<A>(
        &self,
        decision: (&str, Option<RequestId>),
        question: impl FnOnce() -> Value,
        answer: Result<A, String>,
        fallback: impl FnOnce() -> Option<A>,
        (safe, shown): (A, impl Fn(&A) -> Value),
    ) -> A {
        let Some(w) = self.witness.upgrade() else {
            return answer.unwrap_or(safe);
        };
        if self.fault.take_pending() {
            // Asked, not answered: the actor undoes this input and handles it again with
            // the answer; nothing is counted or traced now.
            return safe;
        }
        let stale = self.fault.take_stale();
        let answer = match self.fault.take() {
            Some(why) => Err(why),
            None => answer,
        };
        let realtime = w.plugins().realtime().cloned();
        let holds = realtime
            .as_ref()
            .filter(|rt| self.site.point != super::Point::Admission && rt.holds(self.by));
        let (chosen, fell_back) = match answer {
            Ok(a) => (a, None),
            // The situation changed while the answer came: ask again with the question as
            // it is now (the attempt is pending).
            Err(_) if stale && holds.is_some_and(|rt| rt.ask_again(self.by, w.now())) => {
                return safe
            }
            Err(why) => match fallback() {
                Some(a) => (a, Some(why)),
                None => {
                    w.plugins().fail(PolicyFailure {
                        site: self.site.clone(),
                        at: w.now(),
                        decision: decision.0.to_string(),
                        what: why,
                    });
                    w.plugins().count(&self.site, false);
                    return safe;
                }
            },
        };
        let note = w.tracing().then(|| Note {
            point: self.site.point.as_str(),
            policy: self.site.policy.clone(),
            request: decision.1,
            question: question(),
            answer: shown(&chosen),
            fallback: fell_back.clone(),
        });
        let (site, by, fb) = (self.site.clone(), self.by, fell_back.is_some());
        let book = move || {
            w.plugins().count(&site, fb);
            if let Some(note) = note {
                w.note(by, &note);
            }
        };
        match holds {
            // Carried out if this attempt completes; an undone attempt decides again.
            Some(rt) => rt.defer(self.by, Box::new(book)),
            None => book(),
        }
        chosen
    }

    fn request(&self, id: RequestId) -> String {
        self.names
            .requests
            .get(id.0 as usize)
            .cloned()
            .unwrap_or_default()
    }
}

/// A guarded preemption plug-in.
pub(crate) struct GuardedPreemption {
    /// The plug-in.
    pub inner: Box<dyn Preemption>,
    /// The topology's fallback, if any.
    pub fallback: Option<Box<dyn Preemption>>,
    /// Its guard.
    pub guard: Guard,
}

impl Preemption for GuardedPreemption {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        // Nothing to decide: no set could make room, or nothing needs to go.
        if c.hopeless() {
            return None;
        }
        if c.makes_room(&[]) {
            return Some(Choice {
                set: Vec::new(),
                exact: true,
            });
        }
        let mut answer = self.inner.choose(c, ask);
        let label = |id| self.guard.request(id);
        let checked = checks::preemption(c, &mut answer, &label).map(|()| answer);
        let Self {
            fallback, guard, ..
        } = self;
        let names = &guard.names;
        let decision = format!(
            "preemption for local request {}",
            guard.request(ask.local.id)
        );
        guard.settle(
            (&decision, Some(ask.local.id)),
            || p::preemption_question(c, ask, names, false),
            checked,
            || fallback.as_mut().map(|f| f.choose(c, ask)),
            (None, |a: &Option<Choice>| p::preemption_shown(a, c, names)),
        )
    }

    fn preempts(&self) -> bool {
        self.inner.preempts()
    }
}

/// A guarded admission plug-in.
pub(crate) struct GuardedAdmission {
    /// The plug-in.
    pub inner: Box<dyn AdmissionControl>,
    /// The topology's fallback, if any.
    pub fallback: Option<Box<dyn AdmissionControl>>,
    /// Its guard.
    pub guard: Guard,
}

impl AdmissionControl for GuardedAdmission {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn admit(&mut self, ask: &AdmissionAsk<'_>) -> Verdict {
        let answer = Ok(self.inner.admit(ask));
        let Self {
            fallback, guard, ..
        } = self;
        let names = &guard.names;
        let cluster = guard.site.at.trim_start_matches("cluster:").to_string();
        let decision = format!("admission of request {}", guard.request(ask.request.id));
        guard.settle(
            (&decision, Some(ask.request.id)),
            || p::admission_question(ask, &cluster, names),
            answer,
            || fallback.as_mut().map(|f| f.admit(ask)),
            (Verdict::Refuse(Refusal::QueueFull), p::admission_shown),
        )
    }
}

/// A guarded dispatch plug-in.
pub(crate) struct GuardedDispatch {
    /// The plug-in.
    pub inner: Box<dyn Dispatch>,
    /// The topology's fallback, if any.
    pub fallback: Option<Box<dyn Dispatch>>,
    /// Its guard.
    pub guard: Guard,
    /// The Grid's clusters.
    pub setup: DispatchSetup,
}

impl Dispatch for GuardedDispatch {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn order(&mut self, ask: &DispatchAsk<'_>) -> Vec<usize> {
        let order = self.inner.order(ask);
        let name = |j: usize| self.setup.clusters.get(j).cloned().unwrap_or_default();
        let checked = checks::dispatch(&order, ask.clusters, &name).map(|()| order);
        let Self {
            fallback,
            guard,
            setup,
            ..
        } = self;
        let names = &guard.names;
        let decision = format!("dispatch of request {}", guard.request(ask.request.id));
        guard.settle(
            (&decision, Some(ask.request.id)),
            || p::dispatch_question(ask, setup, names),
            checked,
            || fallback.as_mut().map(|f| f.order(ask)),
            (Vec::new(), |o: &Vec<usize>| p::dispatch_shown(o, setup)),
        )
    }

    fn wants_starts(&self) -> bool {
        self.inner.wants_starts()
    }

    fn reads_starts(&self) -> bool {
        self.inner.reads_starts()
    }
}

/// A guarded provider-side negotiation plug-in.
pub(crate) struct GuardedAnswer {
    /// The plug-in.
    pub inner: Box<dyn AnswerPolicy>,
    /// The topology's fallback, if any.
    pub fallback: Option<Box<dyn AnswerPolicy>>,
    /// Its guard.
    pub guard: Guard,
}

impl AnswerPolicy for GuardedAnswer {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn answer(&mut self, ask: &OfferAsk<'_>) -> Answer {
        let mut a = self.inner.answer(ask);
        let checked = checks::answer(&mut a, ask).map(|()| a);
        let Self {
            fallback, guard, ..
        } = self;
        let names = &guard.names;
        let grid = guard.site.at.trim_start_matches("grid:").to_string();
        let decision = format!(
            "answer to an offer of request {}",
            guard.request(ask.request.id)
        );
        guard.settle(
            (&decision, Some(ask.request.id)),
            || p::answer_question(ask, &grid, names),
            checked,
            || fallback.as_mut().map(|f| f.answer(ask)),
            (Answer::Reject, p::answer_shown),
        )
    }
}

/// A guarded requester-side negotiation plug-in.
pub(crate) struct GuardedOffer {
    /// The plug-in.
    pub inner: Box<dyn OfferPolicy>,
    /// The topology's fallback, if any.
    pub fallback: Option<Box<dyn OfferPolicy>>,
    /// Its guard.
    pub guard: Guard,
}

impl OfferPolicy for GuardedOffer {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn plan(&mut self, ask: &PlanAsk<'_>) -> Vec<OfferPlan> {
        let mut plan = self.inner.plan(ask);
        let name = |g| self.guard.names.grid_name(g);
        let checked = checks::offer(&mut plan, ask.contracts, &name).map(|()| plan);
        let Self {
            fallback, guard, ..
        } = self;
        let names = &guard.names;
        let grid = guard.site.at.trim_start_matches("grid:").to_string();
        let decision = format!("offer of request {}", guard.request(ask.request.id));
        guard.settle(
            (&decision, Some(ask.request.id)),
            || p::offer_question(ask, &grid, names),
            checked,
            || fallback.as_mut().map(|f| f.plan(ask)),
            (Vec::new(), |pl: &Vec<OfferPlan>| p::offer_shown(pl, names)),
        )
    }

    /// Taking a counter-offer is decided by the plan's limit (the policy's own rule where it
    /// has one): not a decision asked of an external process, so not counted.
    fn takes_counter(&mut self, ask: &CounterAsk<'_>) -> bool {
        self.inner.takes_counter(ask)
    }
}
