//! The provider's answer of paper 004 Fig. 3, step 2: accept if serving the request costs
//! no more than the offer pays, counter-offer at its cost up to the contract's maximum,
//! reject otherwise.

use super::{AnswerPolicy, OfferAsk};
use crate::igg::peering::{provider_answer, Answer};

/// Answers by the marginal cost of the request at the provider's load.
#[derive(Clone, Copy, Debug, Default)]
pub struct MarginalCost;

impl AnswerPolicy for MarginalCost {
    fn name(&self) -> String {
        "marginal-cost".into()
    }

    fn answer(&mut self, ask: &OfferAsk<'_>) -> Answer {
        provider_answer(ask.cost, ask.units, ask.price, ask.max)
    }
}
