//! A run's plug-ins: the external processes it started, how often each plug-in decided and
//! fell back, and the failure that stops the run, if any. Each run (each shard of a run on
//! several threads) has one [`Plugins`], which its guards and proxies share.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use serde::Serialize;

use super::external::Process;
use super::Point;
use crate::time::EmuTime;
use crate::trace::ActorId;

/// Where a policy decides: the actor, the decision point, the policy and its fallback.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// Where, as `summary.json`'s `policies` keys name it (`cluster:g/c`, `grid:g`).
    pub at: String,
    /// The decision point.
    pub point: Point,
    /// The policy's name (`external:CMD ARGS` for a process).
    pub policy: String,
    /// The fallback's name, if the topology gives one.
    pub fallback: Option<String>,
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the {} policy `{}` of {}",
            self.point.as_str(),
            self.policy,
            self.at
        )
    }
}

/// A plug-in failure that ends the run: which policy, at which decision, what was wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyFailure {
    /// Where.
    pub site: Site,
    /// When (emulated).
    pub at: EmuTime,
    /// The decision, in a few words (`preemption for local request loc-3`).
    pub decision: String,
    /// What was wrong.
    pub what: String,
}

impl std::fmt::Display for PolicyFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} failed at {} ({}): {}; ",
            self.site,
            crate::time::format_secs(self.at.as_micros()) + "s",
            self.decision,
            self.what,
        )?;
        match self.site.point {
            // A gateway's state cannot pass to another mid-run: there is no fallback.
            Point::Gateway => write!(f, "fix the gateway"),
            p => write!(
                f,
                "fix the policy, or name a built-in to fall back to with {}_fallback",
                p.key()
            ),
        }
    }
}

impl Point {
    /// The topology key that names this point's policy (`lrms.preemption`, `igg.dispatch`).
    pub fn key(self) -> &'static str {
        match self {
            Point::Preemption => "lrms.preemption",
            Point::Admission => "lrms.admission",
            Point::Dispatch => "igg.dispatch",
            Point::Answer => "igg.answer",
            Point::Offer => "igg.offer",
            Point::Gateway => "igg.implementation",
        }
    }
}

/// One plug-in in force, as `summary.json`'s `plugins` lists it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PluginRecord {
    /// Where it decides (`cluster:g/c`, `grid:g`).
    pub at: String,
    /// The decision point.
    pub point: String,
    /// The policy (`external:CMD ARGS` for a process).
    pub policy: String,
    /// What an external process called itself in its handshake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The fallback the topology names, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Decisions it was asked for.
    pub decisions: u64,
    /// Decisions its fallback made instead (a bad answer, a failed process, a missed
    /// deadline).
    pub fallbacks: u64,
    /// Realtime runs, an external process's: how long its decisions took, in emulated
    /// milliseconds from question to answer (or to the deadline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<crate::time::Lateness>,
    /// Realtime runs: how late (emulated milliseconds) its actor handled the inputs that came
    /// while one of its decisions was pending — the lateness its latency caused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_ms: Option<crate::time::Lateness>,
}

/// A run's plug-in state.
#[derive(Default)]
pub struct Plugins {
    records: RefCell<BTreeMap<Site, PluginRecord>>,
    failure: RefCell<Option<PolicyFailure>>,
    failed: Cell<bool>,
    /// Started processes, by the name topologies give them (`external:CMD ARGS`).
    processes: RefCell<Vec<(String, Rc<Process>)>>,
    /// Woken when a failure ends the run.
    stop: Rc<tokio::sync::Notify>,
    /// In a realtime run with external processes: their decisions in flight.
    realtime: std::cell::OnceCell<Rc<super::realtime::Realtime>>,
}

impl Plugins {
    /// Notes a plug-in in force at `site` (its record in `summary.json`).
    pub(crate) fn enlist(&self, site: &Site, process: Option<String>) {
        self.records.borrow_mut().insert(
            site.clone(),
            PluginRecord {
                at: site.at.clone(),
                point: site.point.as_str().into(),
                policy: site.policy.clone(),
                process,
                fallback: site.fallback.clone(),
                decisions: 0,
                fallbacks: 0,
                latency_ms: None,
                held_ms: None,
            },
        );
    }

    /// Makes external decisions pending rather than waited for (a realtime run), each due
    /// `deadline` after it is asked.
    pub fn answer_later(&self, deadline: crate::time::EmuDuration, cause: super::realtime::Cause) {
        let _ = self
            .realtime
            .set(Rc::new(super::realtime::Realtime::new(deadline, cause)));
    }

    /// The realtime run's decisions in flight, if the run answers them later.
    pub fn realtime(&self) -> Option<&Rc<super::realtime::Realtime>> {
        self.realtime.get()
    }

    /// Counts a decision asked of `site`'s plug-in, and whether its fallback made it.
    pub(crate) fn count(&self, site: &Site, fell_back: bool) {
        if let Some(r) = self.records.borrow_mut().get_mut(site) {
            r.decisions += 1;
            r.fallbacks += u64::from(fell_back);
        }
    }

    /// Ends the run with `failure` (the first one stands).
    pub(crate) fn fail(&self, failure: PolicyFailure) {
        if !self.failed.replace(true) {
            tracing::debug!(%failure, "a plug-in failed");
            *self.failure.borrow_mut() = Some(failure);
            self.stop.notify_one();
        }
    }

    /// Whether a failure ends the run.
    pub fn failed(&self) -> bool {
        self.failed.get()
    }

    /// The failure that ends the run, if any.
    pub fn failure(&self) -> Option<PolicyFailure> {
        self.failure.borrow().clone()
    }

    /// Resolves when a failure ends the run.
    pub(crate) fn stopped(&self) -> Rc<tokio::sync::Notify> {
        Rc::clone(&self.stop)
    }

    /// The plug-ins in force, with their counts, in site order.
    pub fn records(&self) -> Vec<PluginRecord> {
        let rt = self.realtime.get();
        (self.records.borrow().iter())
            .map(|(site, r)| {
                let (latency_ms, held_ms) = rt.map_or((None, None), |rt| rt.figures(site));
                PluginRecord {
                    latency_ms,
                    held_ms,
                    ..r.clone()
                }
            })
            .collect()
    }

    /// Keeps a started process, named as topologies name it, to end with the run.
    pub(crate) fn keep(&self, name: &str, p: Rc<Process>) {
        self.processes.borrow_mut().push((name.to_string(), p));
    }

    /// The started process topologies name `name` (`external:CMD ARGS`), if any.
    pub(crate) fn process(&self, name: &str) -> Option<Rc<Process>> {
        (self.processes.borrow().iter())
            .find(|(n, _)| n == name)
            .map(|(_, p)| Rc::clone(p))
    }

    /// Ends every process the run started (each told the run is over, then given its
    /// timeout to exit).
    pub fn finish(&self) {
        for (_, p) in self.processes.borrow_mut().drain(..) {
            p.end();
        }
    }
}

/// What a plug-in's guard reports to: the run's clock and trace.
pub trait Witness {
    /// The emulated time now.
    fn now(&self) -> EmuTime;
    /// The run's plug-in state.
    fn plugins(&self) -> &Plugins;
    /// Whether decisions are written to a trace (notes are made only then).
    fn tracing(&self) -> bool;
    /// Records a decision a plug-in made as a trace record (when the run is traced).
    fn note(&self, by: ActorId, note: &Note);
    /// The label of request `id` (as outputs name it).
    fn label(&self, id: crate::model::RequestId) -> String;
}

pub use crate::trace::Note;
