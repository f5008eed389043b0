//! MOV (paper 003 eq. 9): the cheapest minimal candidate set by the one cost function; ties by arrival order.

use super::{search, Ask, Preemption};
use crate::lrms::contention::Contention;
use crate::lrms::policy::{Choice, PreemptionPolicy};

/// MOV (paper 003 eq. 9): the cheapest minimal candidate set by the one cost function; ties by arrival order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mov;

impl Preemption for Mov {
    fn name(&self) -> String {
        "mov".into()
    }

    fn choose(&mut self, c: &Contention, ask: &Ask<'_>) -> Option<Choice> {
        search(PreemptionPolicy::Mov, c, ask)
    }
}
