//! The decision points' traits implemented by asking an external process: each proxy turns
//! its question into the protocol's JSON, asks, and turns the answer back. What goes wrong —
//! the process failed, or its answer has the wrong shape — is put in the proxy's [`Fault`]
//! for its guard, which decides what happens then (the fallback, or the end of the run).

use std::rc::Rc;

use serde_json::Value;

use super::protocol::{self as p, Names};
use super::Process;
use crate::igg::dispatch::{Dispatch, DispatchAsk, DispatchSetup};
use crate::igg::negotiation::{AnswerPolicy, OfferAsk, OfferPlan, OfferPolicy, PlanAsk};
use crate::igg::peering::Answer;
use crate::lrms::admission::{AdmissionAsk, AdmissionControl, Verdict};
use crate::lrms::contention::Contention;
use crate::lrms::policy::Choice;
use crate::lrms::preemption::{Ask, Preemption};
use crate::lrms::Refusal;
use crate::policy::guard::Fault;
use crate::policy::realtime::Realtime;
use crate::policy::{Point, Site};
use crate::time::EmuTime;
use crate::trace::ActorId;

/// What every proxy holds: the process, where it decides, the names questions use, and
/// where to report a failure.
pub(crate) struct Proxy {
    /// The process.
    pub process: Rc<Process>,
    /// Where it decides (`cluster:g/c`, `grid:g`).
    pub at: String,
    /// How requests and Grids are named.
    pub names: Names,
    /// Where a failure goes.
    pub fault: Fault,
    /// Realtime runs: where its decisions in flight are kept, the deciding actor, the site.
    pub later: Option<(Rc<Realtime>, ActorId, Site)>,
}

impl Proxy {
    /// Asks `question` at `point`; on failure reports it and returns `None`. In a realtime
    /// run (but for admission) the question is sent and the decision left pending, unless
    /// its answer has come (the actor handles the input again).
    fn ask<T>(
        &self,
        point: Point,
        now: EmuTime,
        question: Value,
        read: impl FnOnce(&Value) -> Result<T, String>,
    ) -> Option<T> {
        let answered = match &self.later {
            Some(later) if point != Point::Admission => {
                let (rt, by, _) = later;
                if rt.is_pending(*by) {
                    // An earlier question of this attempt is out: this one waits its turn.
                    self.fault.pend();
                    return None;
                }
                match rt.answer(*by) {
                    Some(a) => {
                        if !a.missed && a.question != question {
                            self.fault.stale();
                        }
                        a.answer
                    }
                    None => {
                        self.send_now(point, now, question, later);
                        return None;
                    }
                }
            }
            _ => self.process.ask(point, &self.at, now.as_micros(), question),
        };
        let read = answered.and_then(|a| {
            read(&a).map_err(|e| {
                let command = self.process.command();
                format!("the external policy `{command}` answered wrongly: {e}")
            })
        });
        match read {
            Ok(t) => Some(t),
            Err(why) => {
                self.fault.report(why);
                None
            }
        }
    }

    /// Sends `question` without waiting: the decision is pending.
    fn send_now(
        &self,
        point: Point,
        now: EmuTime,
        question: Value,
        (rt, by, site): &(Rc<Realtime>, ActorId, Site),
    ) {
        let sent = self
            .process
            .send(point, &self.at, now.as_micros(), question.clone());
        match sent {
            Ok(id) => {
                let sent = (Rc::clone(&self.process), id);
                rt.sent(sent, *by, (now, question), site.clone());
                self.fault.pend();
            }
            Err(why) => self.fault.report(why),
        }
    }

    fn name(&self) -> String {
        format!(
            "{}{}",
            crate::policy::EXTERNAL_PREFIX,
            self.process.command()
        )
    }
}

/// An external preemption policy.
pub(crate) struct ExternalPreemption(pub Proxy);

impl Preemption for ExternalPreemption {
    fn name(&self) -> String {
        self.0.name()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        let q = p::preemption_question(c, ask, &self.0.names, true);
        self.0
            .ask(Point::Preemption, ask.now, q, |a| {
                p::preemption_answer(a, c, &self.0.names)
            })
            .flatten()
    }
}

/// An external admission policy.
pub(crate) struct ExternalAdmission(pub Proxy);

impl AdmissionControl for ExternalAdmission {
    fn name(&self) -> String {
        self.0.name()
    }

    fn admit(&mut self, ask: &AdmissionAsk<'_>) -> Verdict {
        let cluster = self.0.at.trim_start_matches("cluster:").to_string();
        let q = p::admission_question(ask, &cluster, &self.0.names);
        self.0
            .ask(Point::Admission, ask.now, q, p::admission_answer)
            .unwrap_or(Verdict::Refuse(Refusal::QueueFull))
    }
}

/// An external dispatch policy.
pub(crate) struct ExternalDispatch {
    /// The process.
    pub proxy: Proxy,
    /// The Grid's clusters.
    pub setup: DispatchSetup,
}

impl Dispatch for ExternalDispatch {
    fn name(&self) -> String {
        self.proxy.name()
    }

    fn reads_starts(&self) -> bool {
        true
    }

    fn order(&mut self, ask: &DispatchAsk<'_>) -> Vec<usize> {
        let q = p::dispatch_question(ask, &self.setup, &self.proxy.names);
        self.proxy
            .ask(Point::Dispatch, ask.now, q, |a| {
                p::dispatch_answer(a, &self.setup)
            })
            .unwrap_or_default()
    }
}

/// An external provider-side negotiation policy.
pub(crate) struct ExternalAnswer(pub Proxy);

impl AnswerPolicy for ExternalAnswer {
    fn name(&self) -> String {
        self.0.name()
    }

    fn answer(&mut self, ask: &OfferAsk<'_>) -> Answer {
        let grid = self.0.at.trim_start_matches("grid:").to_string();
        let q = p::answer_question(ask, &grid, &self.0.names);
        self.0
            .ask(Point::Answer, ask.now, q, |a| p::answer_answer(a, ask))
            .unwrap_or(Answer::Reject)
    }
}

/// An external requester-side negotiation policy (counter-offers are taken up to each
/// step's limit, without asking).
pub(crate) struct ExternalOffer(pub Proxy);

impl OfferPolicy for ExternalOffer {
    fn name(&self) -> String {
        self.0.name()
    }

    fn plan(&mut self, ask: &PlanAsk<'_>) -> Vec<OfferPlan> {
        let grid = self.0.at.trim_start_matches("grid:").to_string();
        let q = p::offer_question(ask, &grid, &self.0.names);
        self.0
            .ask(Point::Offer, ask.now, q, |a| {
                p::offer_answer(a, ask, &self.0.names)
            })
            .unwrap_or_default()
    }
}
