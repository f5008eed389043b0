//! PACP (paper 002 Algorithm 1): the queue length K at which the M/G/1/K model of the
//! cluster's external queue, with service stretched by preemptions, reaches the expected
//! deadline of eq. 13.

use super::{
    expected_deadline, pacp_queue_length, AdmissionAsk, AdmissionControl, Learnt, Measured,
    PacpOmega, QueueModel, Verdict,
};

/// PACP with eq. 13's deadline model and its limit as learnt so far.
#[derive(Clone, Copy, Debug)]
pub struct Pacp {
    low_urgency: f64,
    low_ratio: f64,
    high_ratio: f64,
    omega: PacpOmega,
    learnt: Learnt,
}

impl Pacp {
    /// PACP with rate_l (share of low-urgency requests), u_l and u_h (the mean deadline
    /// ratios of low- and high-urgency requests).
    pub fn new(low_urgency: f64, low_ratio: f64, high_ratio: f64) -> Pacp {
        Pacp {
            low_urgency,
            low_ratio,
            high_ratio,
            omega: PacpOmega::Measured,
            learnt: Learnt::default(),
        }
    }

    /// This PACP with ω taken from `omega`.
    pub fn with_omega(self, omega: PacpOmega) -> Pacp {
        Pacp { omega, ..self }
    }
}

/// The measured workload with ω taken from `omega`: the service time measured, or the work.
fn with_omega(m: &Measured, omega: PacpOmega) -> Measured {
    match omega {
        PacpOmega::Measured => *m,
        PacpOmega::Work => Measured {
            external_service: m.external_work,
            external_run: m.external_work,
            ..*m
        },
    }
}

impl AdmissionControl for Pacp {
    fn name(&self) -> String {
        "pacp".into()
    }

    fn admit(&mut self, ask: &AdmissionAsk<'_>) -> Verdict {
        let (rate_l, u_l, u_h) = (self.low_urgency, self.low_ratio, self.high_ratio);
        let omega = self.omega;
        self.learnt.limit(ask, |m| {
            let m = &with_omega(m, omega);
            // The deadline ratios are of a request's run time (§IV-A: "deadlineRatio =
            // deadline/runtime").
            let deadline = expected_deadline(rate_l, u_l, u_h, m.external_run);
            pacp_queue_length(&QueueModel::of(m, deadline))
        })
    }
}
