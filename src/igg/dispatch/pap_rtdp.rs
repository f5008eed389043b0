//! PAP-RTDP (paper 000 Algorithms 1 and 2): PAP's arrival rates as routing fractions,
//! dispatched by a billiard sequence per request type.

use super::{normalise, pap_rates, rotation, Billiard, Dispatch, DispatchAsk, DispatchSetup};

/// PAP's allocation, request-type billiard dispatch.
#[derive(Clone, Debug)]
pub struct PapRtdp {
    billiard: Billiard,
    n: usize,
}

impl PapRtdp {
    /// PAP-RTDP over `setup`'s clusters.
    pub fn new(setup: &DispatchSetup) -> PapRtdp {
        let models = &setup.models;
        let fractions = normalise(pap_rates(models, setup.rate, 1e-3));
        let fastest = (0..models.len())
            .min_by(|&a, &b| models[a].theta.total_cmp(&models[b].theta))
            .unwrap_or(0);
        PapRtdp {
            billiard: Billiard::new(fractions, fastest),
            n: models.len(),
        }
    }
}

impl Dispatch for PapRtdp {
    fn name(&self) -> String {
        "pap-rtdp".into()
    }

    fn order(&mut self, ask: &DispatchAsk<'_>) -> Vec<usize> {
        if self.n == 0 {
            return Vec::new();
        }
        let first = self.billiard.next(ask.request.lease_type).unwrap_or(0);
        rotation(first, self.n)
    }
}
