//! CP(α) (paper 001 eq. 2): leases in order of α·(overhead score) + (1 − α)·(waiting score),
//! highest first, until there is room; α = 0 is MWT's order, α = 1 eq. 1's.

use super::{search, Ask, Preemption};
use crate::lrms::contention::Contention;
use crate::lrms::policy::{Choice, PreemptionPolicy};

/// The combinatorial policy with weight `alpha` on the overhead score.
#[derive(Clone, Copy, Debug)]
pub struct Cp {
    /// Weight of the overhead score, 0–1 (`lrms.cp_alpha`).
    pub alpha: f64,
}

impl Preemption for Cp {
    fn name(&self) -> String {
        "cp".into()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        search(PreemptionPolicy::Cp { alpha: self.alpha }, c, ask)
    }
}
