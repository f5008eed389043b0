//! Building the policy of each decision point where it decides: a shipped policy straight
//! from the registry; a plug-in (a user's registered policy, or an external process) wrapped
//! in its guard with its fallback. External processes are started once per run, before the
//! actors are built, each greeted with every decision point it will be asked.

use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use serde_json::json;

use super::external::{
    ExternalAdmission, ExternalAnswer, ExternalDispatch, ExternalOffer, ExternalPreemption, Names,
    Process, Proxy,
};
use super::guard::{
    Fault, Guard, GuardedAdmission, GuardedAnswer, GuardedDispatch, GuardedOffer, GuardedPreemption,
};
use super::run::{Plugins, Site, Witness};
use super::{Chosen, LrmsSetup, PeeringSetup, Point, Registry};
use crate::igg::dispatch::{Dispatch, DispatchSetup};
use crate::igg::negotiation::{AnswerPolicy, OfferPolicy};
use crate::lrms::admission::AdmissionControl;
use crate::lrms::preemption::Preemption;
use crate::trace::ActorId;

/// Builds the policies of a run's sites.
pub(crate) struct Builder<'a> {
    /// Where names are looked up.
    pub registry: &'a Registry,
    /// The run's plug-in state (its processes, counts, failure).
    pub plugins: &'a Plugins,
    /// The run, for the guards.
    pub witness: Weak<dyn Witness>,
    /// How requests and Grids are named.
    pub names: Names,
}

/// What a run tells each external process when it starts it (the handshake's `hello`) and
/// how long a process may take.
#[derive(Clone, Debug, PartialEq)]
pub struct Greeting {
    /// The run's mode: `virtual` or `realtime`.
    pub mode: &'static str,
    /// The run's seed.
    pub seed: u64,
    /// The topology's name.
    pub topology: String,
    /// Wall-clock time a process has to start, to answer and to exit.
    pub timeout: std::time::Duration,
}

/// Starts every external process `commands` names, each asked the decision points listed
/// with it (a failure to start, or to answer the handshake, is the run's error). In a
/// realtime run, each process's answers are read in the background and `arrived` is called
/// after each.
pub(crate) fn start_processes(
    commands: BTreeMap<String, Vec<Point>>,
    greeting: &Greeting,
    plugins: &Plugins,
    arrived: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
) -> Result<(), String> {
    for (name, points) in commands {
        if plugins.process(&name).is_some() {
            continue;
        }
        let words = Chosen::named(&name)
            .external()
            .ok_or_else(|| format!("`{name}` is not a command"))?;
        let command = name.trim_start_matches(super::EXTERNAL_PREFIX).trim();
        let hello = json!({
            "igemu": env!("CARGO_PKG_VERSION"),
            "mode": greeting.mode,
            "seed": greeting.seed,
            "topology": greeting.topology,
        });
        let p = Process::start(command, &words, &points, hello, greeting.timeout)?;
        if let Some(arrived) = &arrived {
            p.answer_in_background(std::sync::Arc::clone(arrived))?;
        }
        plugins.keep(&name, Rc::new(p));
    }
    Ok(())
}

impl Builder<'_> {
    /// The external process playing a whole gateway, as `chosen` names it (`None` for
    /// igemu's own).
    pub(crate) fn gateway(
        &self,
        chosen: &Chosen,
        setup: super::external::GatewaySetup,
        by: ActorId,
    ) -> Result<Option<super::external::ExternalGateway>, String> {
        if !chosen.is_external() {
            return Ok(None);
        }
        let process = (self.plugins.process(&chosen.name))
            .ok_or_else(|| format!("`{}` was not started", chosen.name))?;
        let site = Site {
            at: format!("grid:{}", self.names.grid_name(setup.grid)),
            point: Point::Gateway,
            policy: chosen.name.clone(),
            fallback: None,
        };
        self.plugins.enlist(&site, Some(process.name().to_string()));
        let witness = self.witness.clone();
        Ok(Some(super::external::ExternalGateway::new(
            setup,
            process,
            (site, by),
            witness,
        )))
    }

    /// The plug-in `chosen` names (a registered one by `make`, or its external process by
    /// `external`) in its guard by `wrap`; or the shipped policy itself, unguarded.
    #[allow(clippy::too_many_arguments)] // one per part of a site; grouped, they would be a struct used once
    fn build<T: ?Sized>(
        &self,
        chosen: &Chosen,
        (point, at, by): (Point, &str, ActorId),
        make: impl Fn(&str) -> Option<Box<T>>,
        external: impl FnOnce(Proxy) -> Box<T>,
        wrap: impl FnOnce(Box<T>, Option<Box<T>>, Guard) -> Box<T>,
    ) -> Result<Box<T>, String> {
        let unknown =
            |name: &str| format!("no {} policy is registered as `{name}`", point.as_str());
        let fault = Fault::default();
        let site = Site {
            at: at.to_string(),
            point,
            policy: chosen.name.clone(),
            fallback: chosen.fallback.clone(),
        };
        let (inner, process) = if chosen.is_external() {
            let process = self
                .plugins
                .process(&chosen.name)
                .ok_or_else(|| format!("`{}` was not started", chosen.name))?;
            let name = process.name().to_string();
            let later = (self.plugins.realtime()).map(|rt| (Rc::clone(rt), by, site.clone()));
            let proxy = Proxy {
                process,
                at: at.to_string(),
                names: self.names.clone(),
                fault: fault.clone(),
                later,
            };
            (external(proxy), Some(name))
        } else {
            let inner = make(&chosen.name).ok_or_else(|| unknown(&chosen.name))?;
            if self.registry.is_shipped(point, &chosen.name) == Some(true) {
                return Ok(inner);
            }
            (inner, None)
        };
        let fallback = match &chosen.fallback {
            Some(f) => Some(make(f).ok_or_else(|| unknown(f))?),
            None => None,
        };
        self.plugins.enlist(&site, process);
        let guard = Guard {
            site,
            by,
            witness: self.witness.clone(),
            fault,
            names: self.names.clone(),
        };
        Ok(wrap(inner, fallback, guard))
    }

    /// The preemption policy of cluster `setup.cluster`, deciding in actor `by`.
    pub(crate) fn preemption(
        &self,
        chosen: &Chosen,
        setup: &LrmsSetup,
        by: ActorId,
    ) -> Result<Box<dyn Preemption>, String> {
        let at = format!("cluster:{}", setup.cluster);
        self.build(
            chosen,
            (Point::Preemption, &at, by),
            |n| self.registry.make_preemption(n, setup),
            |proxy| Box::new(ExternalPreemption(proxy)),
            |inner, fallback, guard| {
                Box::new(GuardedPreemption {
                    inner,
                    fallback,
                    guard,
                })
            },
        )
    }

    /// The admission policy of cluster `setup.cluster`.
    pub(crate) fn admission(
        &self,
        chosen: &Chosen,
        setup: &LrmsSetup,
        by: ActorId,
    ) -> Result<Box<dyn AdmissionControl>, String> {
        let at = format!("cluster:{}", setup.cluster);
        self.build(
            chosen,
            (Point::Admission, &at, by),
            |n| self.registry.make_admission(n, setup),
            |proxy| Box::new(ExternalAdmission(proxy)),
            |inner, fallback, guard| {
                Box::new(GuardedAdmission {
                    inner,
                    fallback,
                    guard,
                })
            },
        )
    }

    /// The dispatch policy of Grid `setup.grid`.
    pub(crate) fn dispatch(
        &self,
        chosen: &Chosen,
        setup: &DispatchSetup,
        by: ActorId,
    ) -> Result<Box<dyn Dispatch>, String> {
        let at = format!("grid:{}", setup.grid);
        self.build(
            chosen,
            (Point::Dispatch, &at, by),
            |n| self.registry.make_dispatch(n, setup),
            |proxy| {
                Box::new(ExternalDispatch {
                    proxy,
                    setup: setup.clone(),
                })
            },
            |inner, fallback, guard| {
                Box::new(GuardedDispatch {
                    inner,
                    fallback,
                    guard,
                    setup: setup.clone(),
                })
            },
        )
    }

    /// The provider-side negotiation policy of Grid `setup.grid`.
    pub(crate) fn answer(
        &self,
        chosen: &Chosen,
        setup: &PeeringSetup,
        by: ActorId,
    ) -> Result<Box<dyn AnswerPolicy>, String> {
        let at = format!("grid:{}", setup.grid);
        self.build(
            chosen,
            (Point::Answer, &at, by),
            |n| self.registry.make_answer(n, setup),
            |proxy| Box::new(ExternalAnswer(proxy)),
            |inner, fallback, guard| {
                Box::new(GuardedAnswer {
                    inner,
                    fallback,
                    guard,
                })
            },
        )
    }

    /// The requester-side negotiation policy of Grid `setup.grid`.
    pub(crate) fn offer(
        &self,
        chosen: &Chosen,
        setup: &PeeringSetup,
        by: ActorId,
    ) -> Result<Box<dyn OfferPolicy>, String> {
        let at = format!("grid:{}", setup.grid);
        self.build(
            chosen,
            (Point::Offer, &at, by),
            |n| self.registry.make_offer(n, setup),
            |proxy| Box::new(ExternalOffer(proxy)),
            |inner, fallback, guard| {
                Box::new(GuardedOffer {
                    inner,
                    fallback,
                    guard,
                })
            },
        )
    }
}
