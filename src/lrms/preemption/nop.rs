//! NOP: never preempt; a local request that does not fit is rejected (paper 003's baseline).

use super::{Ask, Preemption};
use crate::lrms::contention::Contention;
use crate::lrms::policy::Choice;

/// Never preempts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Nop;

impl Preemption for Nop {
    fn name(&self) -> String {
        "nop".into()
    }

    fn choose(&mut self, _: &Contention, _: &Ask<'_>) -> Option<Choice> {
        None
    }

    fn preempts(&self) -> bool {
        false
    }
}
