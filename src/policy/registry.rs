//! The policy registry: for each decision point, the names a topology may give and how to
//! build the policy each stands for. igemu's own policies are registered here exactly as a
//! user's are ([`Registry::builtin`]); a program that embeds igemu adds its own
//! ([`Registry::preemption`] and the others) and hands the registry to the topology reader
//! ([`crate::topology::Overrides::registry`]) or to the whole CLI
//! ([`crate::cli::main_with`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Point, EXTERNAL_PREFIX};
use crate::igg::dispatch::{self, Dispatch, DispatchName, DispatchSetup};
use crate::igg::negotiation::{self, AnswerName, AnswerPolicy, OfferName, OfferPolicy};
use crate::lrms::admission::{self, AdmissionControl};
use crate::lrms::names::{AdmissionName, AdmissionSettings, PreemptionName};
use crate::lrms::preemption::{self, Preemption};

/// The name of igemu's own gateway (`igg.implementation`).
pub const GATEWAY: &str = "igemu";

/// What an LRMS's policies (preemption, admission) are built from.
#[derive(Clone, Debug, PartialEq)]
pub struct LrmsSetup {
    /// The cluster, as outputs name it (`grid/cluster`).
    pub cluster: String,
    /// A seed for the policy's own random choices (derived from the run's seed and the
    /// cluster).
    pub seed: u64,
    /// `lrms.cp_alpha`: CP's weight of the overhead score.
    pub cp_alpha: f64,
    /// The shipped admission policies' settings: `lrms.pacp_low_urgency`,
    /// `pacp_low_ratio`, `pacp_high_ratio` and `pacp_omega` (PACP's deadline model and ω),
    /// `queue_limit` (the fixed policy's limit) and `racp_scale`.
    pub admission: AdmissionSettings,
}

/// What a Grid's negotiation policies (answer, offer) are built from.
#[derive(Clone, Debug, PartialEq)]
pub struct PeeringSetup {
    /// The Grid.
    pub grid: String,
    /// A seed for the policy's own random choices.
    pub seed: u64,
}

/// Builds a preemption policy.
pub type PreemptionMaker = dyn Fn(&LrmsSetup) -> Box<dyn Preemption> + Send + Sync;
/// Builds an admission policy.
pub type AdmissionMaker = dyn Fn(&LrmsSetup) -> Box<dyn AdmissionControl> + Send + Sync;
/// Builds a dispatch policy.
pub type DispatchMaker = dyn Fn(&DispatchSetup) -> Box<dyn Dispatch> + Send + Sync;
/// Builds a provider-side negotiation policy.
pub type AnswerMaker = dyn Fn(&PeeringSetup) -> Box<dyn AnswerPolicy> + Send + Sync;
/// Builds a requester-side negotiation policy.
pub type OfferMaker = dyn Fn(&PeeringSetup) -> Box<dyn OfferPolicy> + Send + Sync;

/// One registered policy.
struct Entry<M: ?Sized> {
    make: Arc<M>,
    /// Shipped with igemu: its answers are trusted (they are tested against the papers) and
    /// not traced as a plug-in's.
    shipped: bool,
    /// A dispatch policy that reads the clusters' published slots (they then publish).
    reads_slots: bool,
}

impl<M: ?Sized> Clone for Entry<M> {
    fn clone(&self) -> Self {
        Entry {
            make: Arc::clone(&self.make),
            shipped: self.shipped,
            reads_slots: self.reads_slots,
        }
    }
}

#[derive(Clone, Default)]
struct Tables {
    preemption: BTreeMap<String, Entry<PreemptionMaker>>,
    admission: BTreeMap<String, Entry<AdmissionMaker>>,
    dispatch: BTreeMap<String, Entry<DispatchMaker>>,
    answer: BTreeMap<String, Entry<AnswerMaker>>,
    offer: BTreeMap<String, Entry<OfferMaker>>,
    problems: Vec<String>,
}

/// The policies a run may name, by decision point. Cheap to clone (shared).
#[derive(Clone)]
pub struct Registry {
    tables: Arc<Tables>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Registry");
        for p in Point::ALL {
            d.field(p.as_str(), &self.names(*p));
        }
        d.finish()
    }
}

/// Two registries are equal when they offer the same names, shipped or not, at every point
/// (constructors cannot be compared: two programs registering the same names are taken to
/// offer the same policies).
impl PartialEq for Registry {
    fn eq(&self, other: &Registry) -> bool {
        Arc::ptr_eq(&self.tables, &other.tables)
            || Point::ALL.iter().all(|&p| {
                let names = self.names(p);
                names == other.names(p)
                    && (names.iter()).all(|n| self.is_shipped(p, n) == other.is_shipped(p, n))
            })
    }
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::builtin()
    }
}

fn shipped<M: ?Sized>(make: Arc<M>) -> Entry<M> {
    Entry {
        make,
        shipped: true,
        reads_slots: false,
    }
}

impl Registry {
    /// The policies igemu ships, under the names topologies give them.
    pub fn builtin() -> Registry {
        let mut t = Tables::default();
        for &name in PreemptionName::ALL {
            let make: Arc<PreemptionMaker> =
                Arc::new(move |s: &LrmsSetup| preemption::builtin(name.policy(s.cp_alpha)));
            t.preemption.insert(name.as_str().into(), shipped(make));
        }
        for &name in AdmissionName::ALL {
            let make: Arc<AdmissionMaker> =
                Arc::new(move |s: &LrmsSetup| admission::builtin(name.policy(&s.admission)));
            t.admission.insert(name.as_str().into(), shipped(make));
        }
        for &name in DispatchName::ALL {
            let make: Arc<DispatchMaker> =
                Arc::new(move |s: &DispatchSetup| dispatch::builtin(name, s));
            let mut e = shipped(make);
            e.reads_slots = matches!(name, DispatchName::LeastLoad | DispatchName::EarliestStart);
            t.dispatch.insert(name.as_str().into(), e);
        }
        for &name in AnswerName::ALL {
            let make: Arc<AnswerMaker> =
                Arc::new(move |_: &PeeringSetup| negotiation::builtin_answer(name));
            t.answer.insert(name.as_str().into(), shipped(make));
        }
        for &name in OfferName::ALL {
            let make: Arc<OfferMaker> =
                Arc::new(move |_: &PeeringSetup| negotiation::builtin_offer(name));
            t.offer.insert(name.as_str().into(), shipped(make));
        }
        Registry {
            tables: Arc::new(t),
        }
    }

    fn tables(&mut self) -> &mut Tables {
        Arc::make_mut(&mut self.tables)
    }

    /// Whether `name` may be registered at `point`; if not, why (kept as a problem).
    fn check_new(&mut self, point: Point, name: &str) -> bool {
        let why = if name.is_empty() {
            Some("is empty".to_string())
        } else if name.starts_with(EXTERNAL_PREFIX) {
            Some(format!(
                "starts with `{EXTERNAL_PREFIX}`, which names external processes"
            ))
        } else if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            Some("may hold only letters, digits, `-`, `_` and `.`".into())
        } else if self.knows(point, name) {
            Some(format!("is already a {} policy", point.as_str()))
        } else {
            None
        };
        match why {
            Some(why) => {
                let problem = format!("the {} policy name `{name}` {why}", point.as_str());
                self.tables().problems.push(problem);
                false
            }
            None => true,
        }
    }

    /// Registers a preemption policy under `name`, built by `make` for each cluster that
    /// names it. A name that is empty, taken, or not made of letters, digits, `-`, `_` and
    /// `.` is refused: it is kept among [`Registry::problems`], which the topology reader
    /// and the CLI report.
    pub fn preemption(
        &mut self,
        name: &str,
        make: impl Fn(&LrmsSetup) -> Box<dyn Preemption> + Send + Sync + 'static,
    ) -> &mut Registry {
        if self.check_new(Point::Preemption, name) {
            let e = plugin(Arc::new(make) as Arc<PreemptionMaker>);
            self.tables().preemption.insert(name.into(), e);
        }
        self
    }

    /// Registers an admission policy under `name` (refused names as for
    /// [`Registry::preemption`]).
    pub fn admission(
        &mut self,
        name: &str,
        make: impl Fn(&LrmsSetup) -> Box<dyn AdmissionControl> + Send + Sync + 'static,
    ) -> &mut Registry {
        if self.check_new(Point::Admission, name) {
            let e = plugin(Arc::new(make) as Arc<AdmissionMaker>);
            self.tables().admission.insert(name.into(), e);
        }
        self
    }

    /// Registers a dispatch policy under `name` (refused names as for
    /// [`Registry::preemption`]). `reads_slots`: the policy reads the clusters' published
    /// free slots (loads and earliest starts), so the Grid's clusters publish them.
    pub fn dispatch(
        &mut self,
        name: &str,
        reads_slots: bool,
        make: impl Fn(&DispatchSetup) -> Box<dyn Dispatch> + Send + Sync + 'static,
    ) -> &mut Registry {
        if self.check_new(Point::Dispatch, name) {
            let mut e = plugin(Arc::new(make) as Arc<DispatchMaker>);
            e.reads_slots = reads_slots;
            self.tables().dispatch.insert(name.into(), e);
        }
        self
    }

    /// Registers a provider-side negotiation policy under `name` (refused names as for
    /// [`Registry::preemption`]).
    pub fn answer(
        &mut self,
        name: &str,
        make: impl Fn(&PeeringSetup) -> Box<dyn AnswerPolicy> + Send + Sync + 'static,
    ) -> &mut Registry {
        if self.check_new(Point::Answer, name) {
            let e = plugin(Arc::new(make) as Arc<AnswerMaker>);
            self.tables().answer.insert(name.into(), e);
        }
        self
    }

    /// Registers a requester-side negotiation policy under `name` (refused names as for
    /// [`Registry::preemption`]).
    pub fn offer(
        &mut self,
        name: &str,
        make: impl Fn(&PeeringSetup) -> Box<dyn OfferPolicy> + Send + Sync + 'static,
    ) -> &mut Registry {
        if self.check_new(Point::Offer, name) {
            let e = plugin(Arc::new(make) as Arc<OfferMaker>);
            self.tables().offer.insert(name.into(), e);
        }
        self
    }

    /// Registrations refused so far, each saying why.
    pub fn problems(&self) -> &[String] {
        &self.tables.problems
    }

    /// The names registered at `point`, in order.
    pub fn names(&self, point: Point) -> Vec<&str> {
        let t = &self.tables;
        match point {
            Point::Preemption => t.preemption.keys().map(String::as_str).collect(),
            Point::Admission => t.admission.keys().map(String::as_str).collect(),
            Point::Dispatch => t.dispatch.keys().map(String::as_str).collect(),
            Point::Answer => t.answer.keys().map(String::as_str).collect(),
            Point::Offer => t.offer.keys().map(String::as_str).collect(),
            // The gateway is igemu's or an external process: nothing is registered.
            Point::Gateway => vec![GATEWAY],
        }
    }

    /// Whether `name` is registered at `point`.
    pub fn knows(&self, point: Point, name: &str) -> bool {
        self.flags(point, name).is_some()
    }

    /// Whether the policy `name` of `point` ships with igemu (`None`: not registered).
    pub fn is_shipped(&self, point: Point, name: &str) -> Option<bool> {
        self.flags(point, name).map(|(shipped, _)| shipped)
    }

    /// Whether dispatch policy `name` reads the clusters' published slots.
    pub fn reads_slots(&self, name: &str) -> bool {
        self.flags(Point::Dispatch, name).is_some_and(|(_, r)| r)
    }

    fn flags(&self, point: Point, name: &str) -> Option<(bool, bool)> {
        let t = &self.tables;
        let f = |shipped, reads| Some((shipped, reads));
        match point {
            Point::Preemption => t.preemption.get(name).and_then(|e| f(e.shipped, false)),
            Point::Admission => t.admission.get(name).and_then(|e| f(e.shipped, false)),
            Point::Dispatch => t
                .dispatch
                .get(name)
                .and_then(|e| f(e.shipped, e.reads_slots)),
            Point::Answer => t.answer.get(name).and_then(|e| f(e.shipped, false)),
            Point::Offer => t.offer.get(name).and_then(|e| f(e.shipped, false)),
            Point::Gateway => (name == GATEWAY).then_some((true, false)),
        }
    }

    /// Builds preemption policy `name` for `setup` (`None`: not registered).
    pub fn make_preemption(&self, name: &str, setup: &LrmsSetup) -> Option<Box<dyn Preemption>> {
        self.tables.preemption.get(name).map(|e| (e.make)(setup))
    }

    /// Builds admission policy `name` for `setup` (`None`: not registered).
    pub fn make_admission(
        &self,
        name: &str,
        setup: &LrmsSetup,
    ) -> Option<Box<dyn AdmissionControl>> {
        self.tables.admission.get(name).map(|e| (e.make)(setup))
    }

    /// Builds dispatch policy `name` for `setup` (`None`: not registered).
    pub fn make_dispatch(&self, name: &str, setup: &DispatchSetup) -> Option<Box<dyn Dispatch>> {
        self.tables.dispatch.get(name).map(|e| (e.make)(setup))
    }

    /// Builds provider-side policy `name` for `setup` (`None`: not registered).
    pub fn make_answer(&self, name: &str, setup: &PeeringSetup) -> Option<Box<dyn AnswerPolicy>> {
        self.tables.answer.get(name).map(|e| (e.make)(setup))
    }

    /// Builds requester-side policy `name` for `setup` (`None`: not registered).
    pub fn make_offer(&self, name: &str, setup: &PeeringSetup) -> Option<Box<dyn OfferPolicy>> {
        self.tables.offer.get(name).map(|e| (e.make)(setup))
    }
}

fn plugin<M: ?Sized>(make: Arc<M>) -> Entry<M> {
    Entry {
        make,
        shipped: false,
        reads_slots: false,
    }
}

/// How `summary.json` has always described the shipped preemption and admission policies:
/// their values' Debug forms, lower case, with their parameters (`cp { alpha: 0.31 }`,
/// `leastvaluable`, `fixed(3)`; RACP's scale only when it is not 1, as before it existed);
/// `None` for other names.
pub(crate) fn described(
    point: Point,
    name: &str,
    cp_alpha: f64,
    settings: &AdmissionSettings,
) -> Option<String> {
    let lower = |d: String| d.to_lowercase();
    match point {
        Point::Preemption => {
            PreemptionName::parse(name).map(|n| lower(format!("{:?}", n.policy(cp_alpha))))
        }
        Point::Admission => AdmissionName::parse(name).map(|n| match n.policy(settings) {
            admission::AdmissionPolicy::Racp { scale: 1.0 } => "racp".into(),
            p => lower(format!("{p:?}")),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lrms::preemption::Nop;

    #[test]
    fn the_builtin_registry_knows_every_shipped_name() {
        let r = Registry::builtin();
        assert_eq!(r.names(Point::Preemption).len(), PreemptionName::ALL.len());
        assert!(r.knows(Point::Dispatch, "pap-rtdp"));
        assert_eq!(r.is_shipped(Point::Preemption, "mov"), Some(true));
        assert!(r.reads_slots("earliest-start") && !r.reads_slots("rr"));
        assert!(r.knows(Point::Answer, "marginal-cost"));
        assert!(r.knows(Point::Offer, "cheapest-contract"));
    }

    #[test]
    fn a_users_policy_is_registered_beside_them_and_bad_names_are_refused() {
        let mut r = Registry::builtin();
        let builtin = r.clone();
        r.preemption("never", |_| Box::new(Nop));
        assert!(r.knows(Point::Preemption, "never"));
        assert_eq!(r.is_shipped(Point::Preemption, "never"), Some(false));
        // The copy taken before is unchanged: registries are values.
        assert!(!builtin.knows(Point::Preemption, "never"));
        assert!(r.problems().is_empty());
        for bad in ["mov", "", "external:x", "two words", "never"] {
            r.preemption(bad, |_| Box::new(Nop));
        }
        assert_eq!(r.problems().len(), 5, "{:?}", r.problems());
        assert!(r.problems()[0].contains("`mov` is already"));
    }
}
