//! Pure scheduling logic of a cluster's LRMS: the host-level availability profile,
//! backfilling, the contention of a local request with the leases in play, preemption
//! policies, the overhead model (the one cost function) and the shared storage timeline. No actors, no clocks: the LRMS actor feeds the [`scheduler::Core`]
//! requests, times and VM reports and carries out the [`scheduler::Action`]s it returns.

pub mod admission;
pub(crate) mod availability;
pub mod contention;
pub mod migration;
pub mod names;
pub(crate) mod overhead;
pub mod partition;
pub mod policy;
pub mod preemption;
pub mod provider;
pub(crate) mod queue;
pub(crate) mod scheduler;
pub(crate) mod storage;

pub use admission::{
    AdmissionAsk, AdmissionControl, AdmissionPolicy, Measured, Monitor, PacpOmega, QueueCounts,
    Verdict,
};
pub use availability::VmShape;
pub use contention::{Candidate, Contention};
pub use migration::Route;
pub use overhead::{Operation, OverheadModel, Timings};
pub use policy::{choose, choose_additive, Choice, Item, PreemptionPolicy, SEARCH_BUDGET};
pub use scheduler::{
    Action, Backfilling, Booking, Config, Core, Decision, LeaseView, LocalRequests, Moldable,
    Policies, Refusal, Relocation, Speed, Steps, VmPlan,
};
