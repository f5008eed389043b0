//! MLIP (paper 003 eq. 10): the minimal candidate set with the fewest leases; ties to the set with the most VMs, then arrival order.

use super::{search, Ask, Preemption};
use crate::lrms::contention::Contention;
use crate::lrms::policy::{Choice, PreemptionPolicy};

/// MLIP (paper 003 eq. 10): the minimal candidate set with the fewest leases; ties to the set with the most VMs, then arrival order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mlip;

impl Preemption for Mlip {
    fn name(&self) -> String {
        "mlip".into()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        search(PreemptionPolicy::Mlip, c, ask)
    }
}
