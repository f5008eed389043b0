//! What a run observed — one record per request, per-cluster counters — and the paper
//! metrics computed from them: utilisation (paper 003 eq. 11, paper 000 eq. 21), rejection
//! rates, preemptions and overhead, best-effort makespan (paper 003 eq. 13), AWRT (paper 000
//! eqs. 23–24) and waiting time. Actors report observations here as a side channel; it is
//! not part of the emulated system and sends no messages. `observe` records, `invariants`
//! names what a run must keep, `figures` computes the papers' metrics, `per_request` each
//! request's waiting time, slowdown, bounded slowdown and stretch and their statistics,
//! `leases` each lease's events (`leases.csv`), `timeline` the use of each cluster over time.

mod figures;
mod invariants;
mod leases;
mod observe;
mod per_request;
mod timeline;

pub use figures::*;
pub use invariants::Violation;
pub use leases::{lease_rows, Cause, LeaseEvent, LeaseEventKind, LeaseLog, LeaseRow, LeaseRows};
pub use observe::*;
pub use per_request::*;
pub use timeline::{usage, UsageRow};
