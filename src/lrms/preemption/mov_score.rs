//! Paper 001's MOV (eq. 1): leases in order of the score 1 / overhead, cheapest first, until there is room.

use super::{search, Ask, Preemption};
use crate::lrms::contention::Contention;
use crate::lrms::policy::{Choice, PreemptionPolicy};

/// Paper 001's MOV (eq. 1): leases in order of the score 1 / overhead, cheapest first, until there is room.
#[derive(Clone, Copy, Debug, Default)]
pub struct MovScore;

impl Preemption for MovScore {
    fn name(&self) -> String {
        "mov-score".into()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        search(PreemptionPolicy::MovScore, c, ask)
    }
}
