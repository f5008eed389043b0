//! BCF (paper 000 eq. 27): biggest cluster first — random, with P_j ∝ Σ_i s_ij, the
//! cluster's computing power.

use super::{Dispatch, DispatchAsk, DispatchSetup, Weighted};

/// Biggest cluster first.
#[derive(Clone, Debug)]
pub struct Bcf(Weighted);

impl Bcf {
    /// BCF over `setup`'s clusters.
    pub fn new(setup: &DispatchSetup) -> Bcf {
        let weights = setup.models.iter().map(|m| m.speed).collect();
        Bcf(Weighted::new(weights, setup.seed))
    }

    /// The routing fractions P_j.
    pub fn fractions(&self) -> &[f64] {
        self.0.fractions()
    }
}

impl Dispatch for Bcf {
    fn name(&self) -> String {
        "bcf".into()
    }

    fn order(&mut self, _: &DispatchAsk<'_>) -> Vec<usize> {
        self.0.order()
    }
}
