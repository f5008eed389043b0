//! The requester's side of paper 004 Fig. 3: a request is offered under the contracts in
//! ascending price where serving it at home costs more than the contract's minimum (step 1),
//! at that minimum, and a counter-offer is taken only if serving at home costs more (step 3).

use super::{CounterAsk, OfferPlan, OfferPolicy, PlanAsk};
use crate::igg::peering::{requester_takes_counter, worth_offering};

/// The cheapest contract worth trying first.
#[derive(Clone, Copy, Debug, Default)]
pub struct CheapestContract;

impl OfferPolicy for CheapestContract {
    fn name(&self) -> String {
        "cheapest-contract".into()
    }

    fn plan(&mut self, ask: &PlanAsk<'_>) -> Vec<OfferPlan> {
        let per_unit = ask.home_cost / ask.units;
        ask.contracts
            .iter()
            .filter(|c| !c.tried && worth_offering(ask.home_cost, ask.units, c.min))
            .map(|c| OfferPlan {
                peer: c.peer,
                price: c.min,
                limit: per_unit,
            })
            .collect()
    }

    fn takes_counter(&mut self, ask: &CounterAsk<'_>) -> bool {
        requester_takes_counter(ask.home_cost, ask.units, ask.counter)
    }
}
