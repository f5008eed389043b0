//! MWT (paper 001 §4.3.1): leases in order of least waiting time until there is room, redundant ones dropped.

use super::{search, Ask, Preemption};
use crate::lrms::contention::Contention;
use crate::lrms::policy::{Choice, PreemptionPolicy};

/// MWT (paper 001 §4.3.1): leases in order of least waiting time until there is room, redundant ones dropped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mwt;

impl Preemption for Mwt {
    fn name(&self) -> String {
        "mwt".into()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        search(PreemptionPolicy::Mwt, c, ask)
    }
}
