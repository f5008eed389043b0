//! RACP (Sharifian et al., paper 002's baseline): a queue of N_q = μ_e / λ external
//! requests, from the service rate of external requests and the arrival rate of local ones
//! as the cluster measures them, times a sensitivity scale (`lrms.racp_scale`, 1 by default).

use super::{racp_queue_length, AdmissionAsk, AdmissionControl, Learnt, QueueModel, Verdict};

/// RACP with its limit as learnt so far.
#[derive(Clone, Copy, Debug)]
pub struct Racp {
    scale: f64,
    learnt: Learnt,
}

impl Default for Racp {
    /// RACP as the paper writes it: N_q = μ_e / λ.
    fn default() -> Racp {
        Racp::scaled(1.0)
    }
}

impl Racp {
    /// RACP with N_q = `scale` · μ_e / λ.
    pub fn scaled(scale: f64) -> Racp {
        Racp {
            scale,
            learnt: Learnt::default(),
        }
    }
}

impl AdmissionControl for Racp {
    fn name(&self) -> String {
        "racp".into()
    }

    fn admit(&mut self, ask: &AdmissionAsk<'_>) -> Verdict {
        let scale = self.scale;
        self.learnt
            .limit(ask, |m| racp_queue_length(&QueueModel::of(m, 0.0), scale))
    }
}
