//! The two negotiation decision points of peering between IGGs (paper 004 §5.2, Fig. 3):
//!
//! * **answer** (provider side, [`AnswerPolicy`]): given a request a peer offers — its
//!   units, the offered unit price, the contract's maximum, and the provider's own load,
//!   capacity, tickets and marginal cost over the request's cost window — accept, make a
//!   counter-offer at a unit price, or reject. Shipped: [`MarginalCost`] (Fig. 3 step 2).
//! * **offer** (requester side, [`OfferPolicy`]): given a request this Grid is overloaded
//!   for — its units, what serving it at home costs, and the contracts with their current
//!   price ranges — which peers to offer it to, in what order, at what opening unit price
//!   and up to what unit price a counter-offer is taken. Shipped: [`CheapestContract`]
//!   (Fig. 3 steps 1 and 3).
//!
//! The broker (`igg::broker`) keeps everything else — tickets, batches, retries, timeouts,
//! idempotent answers — so a policy decides and never has to keep the protocol correct.

mod cheapest_contract;
mod marginal_cost;

pub use cheapest_contract::CheapestContract;
pub use marginal_cost::MarginalCost;

use super::peering::{Answer, NegotiationId};
use crate::model::{GridId, LeaseRequest};
use crate::time::EmuTime;

named_enum! {
    /// The shipped provider-side policies (`igg.answer`).
    AnswerName {
        /// Accept if the request's marginal cost is covered by the offer, counter-offer at
        /// that cost up to the contract's maximum, else reject (paper 004 Fig. 3).
        MarginalCost => "marginal-cost",
    }
}

named_enum! {
    /// The shipped requester-side policies (`igg.offer`).
    OfferName {
        /// Contracts in ascending price, where serving at home costs more than the
        /// contract's minimum; a counter-offer taken when cheaper than home (paper 004 Fig. 3).
        CheapestContract => "cheapest-contract",
    }
}

/// What a provider is asked about one offered request.
#[derive(Clone, Copy, Debug)]
pub struct OfferAsk<'a> {
    /// When the provider evaluates it (at its round).
    pub now: EmuTime,
    /// The requester.
    pub from: GridId,
    /// The negotiation.
    pub negotiation: NegotiationId,
    /// The request.
    pub request: &'a LeaseRequest,
    /// Its resource units (core-seconds).
    pub units: f64,
    /// The unit price offered.
    pub price: f64,
    /// The contract's maximum unit price.
    pub max: f64,
    /// The provider's load (0–1) over the request's cost window, counting the units its
    /// tickets already hold.
    pub load: f64,
    /// The provider's capacity in resource units over that window.
    pub capacity: f64,
    /// Units held by the provider's tickets (offers it has answered, not yet settled).
    pub held: f64,
    /// What serving the request costs the provider at that load (eq. 3).
    pub cost: f64,
    /// The provider's unit cost p_cost (eq. 2).
    pub unit_cost: f64,
}

/// A provider-side negotiation policy: how an IGG answers a request a peer offers.
///
/// A policy that is not one igemu ships has its answers checked: a counter-offer's price
/// must be a number from 0 to the contract's maximum.
pub trait AnswerPolicy {
    /// The policy's name as outputs show it.
    fn name(&self) -> String;

    /// Accept (at the offered price), counter at a unit price, or reject. An accept or a
    /// counter holds a ticket for the request's units until the requester settles.
    fn answer(&mut self, ask: &OfferAsk<'_>) -> Answer;
}

/// A contract as a requester sees it at a round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContractView {
    /// The provider.
    pub peer: GridId,
    /// Its current minimum unit price (the contract's opening offer).
    pub min: f64,
    /// Its current maximum unit price.
    pub max: f64,
    /// Whether this request was already offered to it (and not taken).
    pub tried: bool,
}

/// What a requester is asked about one request it is overloaded for, at a round.
#[derive(Clone, Copy, Debug)]
pub struct PlanAsk<'a> {
    /// When.
    pub now: EmuTime,
    /// The request.
    pub request: &'a LeaseRequest,
    /// Its resource units.
    pub units: f64,
    /// What serving it at home costs (eq. 3 at this Grid's load over its window); infinite
    /// when no cluster of this Grid would take it.
    pub home_cost: f64,
    /// The contracts this Grid holds, in ascending minimum price.
    pub contracts: &'a [ContractView],
}

/// One step of a requester's plan: offer to `peer` at `price`, taking a counter-offer up to
/// `limit` (unit prices).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OfferPlan {
    /// The provider.
    pub peer: GridId,
    /// The opening unit price (within the contract's range).
    pub price: f64,
    /// The highest unit price of a counter-offer the requester takes.
    pub limit: f64,
}

/// What a requester is asked when a provider counter-offers.
#[derive(Clone, Copy, Debug)]
pub struct CounterAsk<'a> {
    /// The request.
    pub request: &'a LeaseRequest,
    /// Its resource units.
    pub units: f64,
    /// What serving it at home costs.
    pub home_cost: f64,
    /// The counter-offer's unit price.
    pub counter: f64,
    /// The plan the offer followed.
    pub plan: OfferPlan,
}

/// A requester-side negotiation policy: whom an overloaded IGG offers a request to.
///
/// A policy that is not one igemu ships has its plans checked: each peer must be one this
/// Grid holds a contract with, each price within that contract's range, each limit a number
/// of at least 0.
pub trait OfferPolicy {
    /// The policy's name as outputs show it.
    fn name(&self) -> String;

    /// The peers to offer `ask.request` to, in order; the first not yet tried gets the
    /// offer at this round. Empty: serve it at home.
    fn plan(&mut self, ask: &PlanAsk<'_>) -> Vec<OfferPlan>;

    /// Whether to take a counter-offer: by default when it is at most the plan's limit.
    fn takes_counter(&mut self, ask: &CounterAsk<'_>) -> bool {
        ask.counter <= ask.plan.limit
    }
}

/// The shipped provider-side policy `name` stands for.
pub fn builtin_answer(name: AnswerName) -> Box<dyn AnswerPolicy> {
    match name {
        AnswerName::MarginalCost => Box::new(MarginalCost),
    }
}

/// The shipped requester-side policy `name` stands for.
pub fn builtin_offer(name: OfferName) -> Box<dyn OfferPolicy> {
    match name {
        OfferName::CheapestContract => Box::new(CheapestContract),
    }
}
