//! AACP (paper 002): one external lease in the cluster at a time.

use super::{AdmissionAsk, AdmissionControl, Verdict};
use crate::lrms::scheduler::Refusal;

/// Holds one external lease at a time: refuses while the cluster holds one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Aacp;

impl AdmissionControl for Aacp {
    fn name(&self) -> String {
        "aacp".into()
    }

    fn admit(&mut self, ask: &AdmissionAsk<'_>) -> Verdict {
        let (_, held) = ask.queue.external();
        if held >= 1 {
            Verdict::Refuse(Refusal::QueueFull)
        } else {
            Verdict::Admit
        }
    }
}
