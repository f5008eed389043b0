//! CACP (paper 002): admit every external request (an M/G/1/∞ queue).

use super::{AdmissionAsk, AdmissionControl, Verdict};

/// Admits everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cacp;

impl AdmissionControl for Cacp {
    fn name(&self) -> String {
        "cacp".into()
    }

    fn admit(&mut self, _: &AdmissionAsk<'_>) -> Verdict {
        Verdict::Admit
    }
}
