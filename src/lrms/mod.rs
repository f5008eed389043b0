//! Pure scheduling logic of a cluster's LRMS: the host-level availability profile,
//! backfilling, the contention of a local request with the leases in play, preemption
//! policies, the overhead model (the one cost function) and the shared storage timeline. No actors, no clocks: the LRMS actor feeds the [`scheduler::Core`]
//! requests, times and VM reports and carries out the [`scheduler::Action`]s it returns.

pub mod admission;
pub mod availability;
pub mod contention;
pub mod overhead;
pub mod policy;
pub mod scheduler;
pub mod storage;

pub use scheduler::{
    Action, Backfilling, Config, Core, Decision, LeaseView, Refusal, Relocation, Speed, VmPlan,
};
