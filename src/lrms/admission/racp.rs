//! RACP (Sharifian et al., paper 002's baseline): a queue of N_q = μ_e / λ external
//! requests, from the service rate of external requests and the arrival rate of local ones
//! as the cluster measures them.

use super::{racp_queue_length, AdmissionAsk, AdmissionControl, Learnt, QueueModel, Verdict};

/// RACP with its limit as learnt so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct Racp {
    learnt: Learnt,
}

impl AdmissionControl for Racp {
    fn name(&self) -> String {
        "racp".into()
    }

    fn admit(&mut self, ask: &AdmissionAsk<'_>) -> Verdict {
        self.learnt
            .limit(ask, |m| racp_queue_length(&QueueModel::of(m, 0.0)))
    }
}
