//! PAP-RND (paper 000 Algorithm 1): PAP's arrival rates as routing fractions, dispatched at
//! random.

use super::{pap_rates, Dispatch, DispatchAsk, DispatchSetup, Weighted};

/// PAP's allocation, random dispatch.
#[derive(Clone, Debug)]
pub struct PapRnd(Weighted);

impl PapRnd {
    /// PAP-RND over `setup`'s clusters.
    pub fn new(setup: &DispatchSetup) -> PapRnd {
        PapRnd(Weighted::new(
            pap_rates(&setup.models, setup.rate, 1e-3),
            setup.seed,
        ))
    }

    /// The routing fractions P_j.
    pub fn fractions(&self) -> &[f64] {
        self.0.fractions()
    }
}

impl Dispatch for PapRnd {
    fn name(&self) -> String {
        "pap-rnd".into()
    }

    fn order(&mut self, _: &DispatchAsk<'_>) -> Vec<usize> {
        self.0.order()
    }
}
