//! Least valuable first (paper 000 §4.2): cancellable before suspendable before migratable leases, then the cost, then the number of leases.

use super::{search, Ask, Preemption};
use crate::lrms::contention::Contention;
use crate::lrms::policy::{Choice, PreemptionPolicy};

/// Least valuable first (paper 000 §4.2): cancellable before suspendable before migratable leases, then the cost, then the number of leases.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeastValuable;

impl Preemption for LeastValuable {
    fn name(&self) -> String {
        "least-valuable".into()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        search(PreemptionPolicy::LeastValuable, c, ask)
    }
}
