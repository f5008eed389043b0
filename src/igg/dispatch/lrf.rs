//! LRF (paper 000 eq. 26): least rate first — random, with P_j ∝ 1 − λ_j / Σλ, so clusters
//! with more local load get fewer external requests.

use super::{Dispatch, DispatchAsk, DispatchSetup, Weighted};

/// Least rate first.
#[derive(Clone, Debug)]
pub struct Lrf(Weighted);

impl Lrf {
    /// LRF over `setup`'s clusters.
    pub fn new(setup: &DispatchSetup) -> Lrf {
        let total: f64 = setup.models.iter().map(|m| m.local_rate).sum();
        let weights = setup
            .models
            .iter()
            .map(|m| {
                if total > 0.0 {
                    1.0 - m.local_rate / total
                } else {
                    1.0
                }
            })
            .collect();
        Lrf(Weighted::new(weights, setup.seed))
    }

    /// The routing fractions P_j.
    pub fn fractions(&self) -> &[f64] {
        self.0.fractions()
    }
}

impl Dispatch for Lrf {
    fn name(&self) -> String {
        "lrf".into()
    }

    fn order(&mut self, _: &DispatchAsk<'_>) -> Vec<usize> {
        self.0.order()
    }
}
