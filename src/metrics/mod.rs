//! What a run observed — one record per request, per-cluster counters — and the paper
//! metrics computed from them: utilisation (paper 003 eq. 11, paper 000 eq. 21), rejection
//! rates, preemptions and overhead, best-effort makespan (paper 003 eq. 13), AWRT (paper 000
//! eqs. 23–24) and waiting time. Actors report observations here as a side channel; it is
//! not part of the emulated system and sends no messages. `observe` records, `invariants`
//! names what a run must keep, `figures` computes the papers' metrics, `timeline` the use of
//! each cluster over time.

mod figures;
mod invariants;
mod observe;
mod timeline;

pub use figures::*;
pub use invariants::Violation;
pub use observe::*;
pub use timeline::{usage, UsageRow};
