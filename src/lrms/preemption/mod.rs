//! The preemption decision point (paper 003 §6, paper 001 §4.3.1, paper 000 §4.2): when a
//! local request does not fit in its interval, which of the leases in play to preempt.
//!
//! A policy implements [`Preemption`]: it sees the [`Contention`] — the local request's VM
//! shape, how many VMs must fit, its interval, and every lease that could be preempted with
//! its lease type, VMs, memory, waiting time, what preempting it would do and what that costs
//! ([`crate::lrms::OverheadModel::operation_cost`], the one cost function), and the room any
//! set of them frees on the real hosts ([`Contention::room`]) — and returns the set to
//! preempt, or `None` to preempt nothing (the local request is then rejected).
//!
//! Every shipped policy is a type of its own in this folder implementing the trait, built by
//! name through [`crate::policy::Registry`] as a user's own policy is. The optimising ones
//! share the search machinery of [`crate::lrms::policy`] (dynamic programs on additive room,
//! branch and bound otherwise).

mod cp;
mod least_valuable;
mod mlip;
mod moml;
mod mov;
mod mov_score;
mod mwt;
mod nop;

pub use cp::Cp;
pub use least_valuable::LeastValuable;
pub use mlip::Mlip;
pub use moml::Moml;
pub use mov::Mov;
pub use mov_score::MovScore;
pub use mwt::Mwt;
pub use nop::Nop;

use super::contention::Contention;
use super::policy::{Choice, PreemptionPolicy};
use crate::model::LeaseRequest;
use crate::time::EmuTime;

/// What a preemption decision is asked beside its contention.
#[derive(Clone, Copy, Debug)]
pub struct Ask<'a> {
    /// When the decision is made.
    pub now: EmuTime,
    /// The local request that needs room.
    pub local: &'a LeaseRequest,
    /// A seed for this decision's random choices (derived from the run's seed, the cluster
    /// and the decision's number, so a run is reproducible).
    pub seed: u64,
    /// Search steps the decision may take (`lrms.search_budget`).
    pub budget: usize,
}

/// A preemption policy: which leases in play to preempt so that a local request fits.
///
/// The answer is checked before it is carried out when the policy is not one igemu ships: a
/// set that does not make room, or names a lease twice or one out of range, stops the run
/// with an error naming the policy (or falls back to a named built-in, when the topology
/// says so).
pub trait Preemption {
    /// The policy's name as outputs show it (`summary.json`'s `policies`).
    fn name(&self) -> String;

    /// The leases to preempt (indices into `c.candidates`, ascending, each once) so that
    /// the local request fits; `None` to preempt nothing (it is rejected). Called only when
    /// the request does not fit as things are.
    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice>;

    /// Whether the policy ever preempts: a policy that never does lets the LRMS reject a
    /// local request that does not fit without working out its contention.
    fn preempts(&self) -> bool {
        true
    }
}

/// The shipped policy a [`PreemptionPolicy`] value names.
pub fn builtin(policy: PreemptionPolicy) -> Box<dyn Preemption> {
    match policy {
        PreemptionPolicy::Nop => Box::new(Nop),
        PreemptionPolicy::Mlip => Box::new(Mlip),
        PreemptionPolicy::Mov => Box::new(Mov),
        PreemptionPolicy::Moml => Box::new(Moml),
        PreemptionPolicy::Mwt => Box::new(Mwt),
        PreemptionPolicy::MovScore => Box::new(MovScore),
        PreemptionPolicy::Cp { alpha } => Box::new(Cp { alpha }),
        PreemptionPolicy::LeastValuable => Box::new(LeastValuable),
    }
}

/// The machinery's choice for one of the shipped kinds (what each shipped policy calls).
fn search(policy: PreemptionPolicy, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
    super::policy::choose(policy, c, ask.seed, ask.budget)
}
