//! MOML (paper 003 Algorithm 1): the fewest leases among the minimal sets costing at most the median cost α.

use super::{search, Ask, Preemption};
use crate::lrms::contention::Contention;
use crate::lrms::policy::{Choice, PreemptionPolicy};

/// MOML (paper 003 Algorithm 1): the fewest leases among the minimal sets costing at most the median cost α.
#[derive(Clone, Copy, Debug, Default)]
pub struct Moml;

impl Preemption for Moml {
    fn name(&self) -> String {
        "moml".into()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        search(PreemptionPolicy::Moml, c, ask)
    }
}
