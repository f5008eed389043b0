//! Peering between IGGs (paper 004 §3–5), pure: the Grid's cost function and the marginal cost
//! of a request (eqs. 1–3), contracts (fixed-price and price-range, eq. 4), and the offer /
//! counter-offer negotiation of Fig. 3 as two small state machines — the requester's and the
//! provider's — with tickets that hold a provider's tentative capacity so that concurrent
//! negotiations never promise the same capacity twice. The IGG actor only carries the
//! messages and timers.
//!
//! Units: a *resource unit* is one core for one second. Loads are fractions (0–1) of the
//! units a Grid has until a horizon.

use std::collections::BTreeMap;

use crate::model::RequestId;
use crate::time::EmuTime;

/// The Grid's cost model: a quadratic cost function over its load (paper 004 §5).
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// p_cost: the average price paid to providers per resource unit (eq. 2).
    pub unit_cost: f64,
    /// β: how steeply the unit price grows with load; the unit price is
    /// p_cost·(1 + (βL)²).
    pub steepness: f64,
}

impl CostModel {
    /// Eq. 2: p_cost as the providers' unit prices weighted by the units they contribute.
    pub fn from_providers(providers: &[(f64, f64)]) -> CostModel {
        let units: f64 = providers.iter().map(|(_, u)| u).sum();
        let unit_cost = if units > 0.0 {
            providers.iter().map(|(p, u)| p * u).sum::<f64>() / units
        } else {
            0.0
        };
        CostModel {
            unit_cost,
            steepness: 1.0,
        }
    }

    /// Eq. 1 (a provider's price): its cost plus cost × its load.
    pub fn provider_price(cost: f64, load: f64) -> f64 {
        crate::model::published::provider_price(cost, load)
    }

    /// The total cost cost(L) of running `capacity · L` units: L_units · p(1 + (βL)²).
    pub fn total(&self, load: f64, capacity: f64) -> f64 {
        let l = load.max(0.0);
        l * capacity * self.unit_cost * (1.0 + (self.steepness * l).powi(2))
    }

    /// Eq. 3: the marginal cost of `units` more units at load `load` of `capacity`.
    pub fn marginal(&self, units: f64, load: f64, capacity: f64) -> f64 {
        if capacity <= 0.0 {
            return f64::INFINITY;
        }
        self.total(load + units / capacity, capacity) - self.total(load, capacity)
    }

    /// The marginal cost of one unit at load `load` (capacity-independent limit).
    pub fn unit_marginal(&self, load: f64) -> f64 {
        self.unit_cost * (1.0 + 3.0 * (self.steepness * load).powi(2))
    }

    /// Eq. 4 with u_units = 1: d_k(L), the drop in the per-unit marginal cost from removing
    /// load k at load L.
    pub fn d_k(&self, load: f64, k: f64) -> f64 {
        self.unit_marginal(load) - self.unit_marginal((load - k).max(0.0))
    }
}

/// A contract's price range per resource unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PriceRange {
    /// The least IGG_i pays (its opening offer).
    pub min: f64,
    /// The most IGG_i pays.
    pub max: f64,
}

impl PriceRange {
    /// A fixed-price contract: `[max, max]`, with max the marginal unit cost at load L.
    pub fn fixed(provider: &CostModel, threshold: f64) -> PriceRange {
        let max = provider.unit_marginal(threshold);
        PriceRange { min: max, max }
    }

    /// A price-range contract: `[max − d_k(L), max]` (paper 004 §5.1, §6.1).
    pub fn ranged(provider: &CostModel, threshold: f64, k: f64) -> PriceRange {
        let max = provider.unit_marginal(threshold);
        PriceRange {
            min: (max - provider.d_k(threshold, k)).max(0.0),
            max,
        }
    }
}

impl PriceRange {
    /// The range of `contract` given its provider's current cost model: fixed-price or
    /// price-range at the contract's L and k; an explicit `price_max` moves the range so it
    /// ends there, keeping its width.
    pub fn of_contract(contract: &Contract, provider: &CostModel) -> PriceRange {
        let range = match contract.kind {
            ContractKind::FixedPrice => PriceRange::fixed(provider, contract.load_threshold),
            ContractKind::PriceRange => {
                PriceRange::ranged(provider, contract.load_threshold, contract.k)
            }
        };
        match contract.price_max {
            Some(max) => PriceRange {
                min: (max - (range.max - range.min)).max(0.0),
                max,
            },
            None => range,
        }
    }
}

named_enum! {
    /// The kind of a peering contract (paper 004 §5.1).
    ContractKind {
        /// One price per resource unit.
        FixedPrice => "fixed-price",
        /// A range `[price_max - D, price_max]` negotiated at run time.
        PriceRange => "price-range",
    }
}

/// A peering contract between two IGGs.
#[derive(Clone, Debug, PartialEq)]
pub struct Contract {
    /// The Grid that redirects requests (and pays).
    pub from: crate::model::GridId,
    /// The Grid that serves them.
    pub to: crate::model::GridId,
    /// Whether the contract also holds from `to` to `from`.
    pub both_ways: bool,
    /// Fixed-price or price-range.
    pub kind: ContractKind,
    /// An explicit maximum price per resource unit; derived from the cost function if absent.
    pub price_max: Option<f64>,
    /// L of eq. 4: the load (utilisation, 0–1) at which the unit cost reaches `price_max`.
    pub load_threshold: f64,
    /// k of eq. 4: the load decrease (0–1) that sets the width of a price range.
    pub k: f64,
}

/// Negotiation ids: unique per run (requester IGG index × 2^32 + counter).
pub type NegotiationId = u64;

/// The provider's answer for one offered request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Answer {
    /// Accepted at the offer's unit price.
    Accept {
        /// Unit price.
        price: f64,
    },
    /// Counter-offer at this unit price (the provider's unit cost).
    Counter {
        /// Unit price.
        price: f64,
    },
    /// Refused.
    Reject,
}

/// Fig. 3 step 2: the provider's answer to one request offered at `offer` per unit under a
/// contract whose maximum is `max`, given what serving it would cost the provider.
pub(crate) fn provider_answer(request_cost: f64, units: f64, offer: f64, max: f64) -> Answer {
    if request_cost <= offer * units {
        Answer::Accept { price: offer }
    } else if request_cost <= max * units {
        Answer::Counter {
            price: request_cost / units,
        }
    } else {
        Answer::Reject
    }
}

/// Fig. 3 step 3: the requester takes a counter-offer only if serving the request at home
/// still costs more than the counter-offer asks.
pub(crate) fn requester_takes_counter(home_cost: f64, units: f64, counter: f64) -> bool {
    home_cost > counter * units
}

/// Fig. 3 step 1: the requester offers a request under a contract only if its own unit cost
/// for it is above the contract's minimum price.
pub(crate) fn worth_offering(home_cost: f64, units: f64, contract_min: f64) -> bool {
    units > 0.0 && home_cost / units > contract_min
}

/// A provider's tentative hold on capacity for a request under negotiation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ticket {
    /// The negotiation.
    pub negotiation: NegotiationId,
    /// The request.
    pub lease: RequestId,
    /// Resource units held.
    pub units: f64,
    /// Unit price promised.
    pub price: f64,
    /// When the hold lapses if not confirmed.
    pub expires: EmuTime,
    /// Confirmed (the request was redirected here).
    pub confirmed: bool,
}

/// Why a ticket operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TicketError {
    /// No such ticket (expired, released, or never issued).
    Unknown,
    /// Already confirmed once (a duplicate confirmation is answered idempotently by the
    /// caller, never sold twice).
    AlreadyConfirmed,
}

/// The provider's ledger of tickets: the units it has promised.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tickets {
    held: BTreeMap<(NegotiationId, RequestId), Ticket>,
}

impl Tickets {
    /// Units held by unexpired tickets at `now` (confirmed tickets count until released).
    pub(crate) fn held_units(&self, now: EmuTime) -> f64 {
        self.held
            .values()
            .filter(|t| t.confirmed || t.expires > now)
            .map(|t| t.units)
            .sum()
    }

    /// Issues a ticket; re-issuing the same (negotiation, request) returns the existing one
    /// (duplicate offers are idempotent).
    pub(crate) fn issue(&mut self, t: Ticket) -> &Ticket {
        self.held.entry((t.negotiation, t.lease)).or_insert(t)
    }

    /// Looks a ticket up.
    pub(crate) fn get(&self, negotiation: NegotiationId, lease: RequestId) -> Option<&Ticket> {
        self.held.get(&(negotiation, lease))
    }

    /// Confirms a ticket (the request is being redirected here).
    pub(crate) fn confirm(
        &mut self,
        negotiation: NegotiationId,
        lease: RequestId,
        now: EmuTime,
    ) -> Result<&Ticket, TicketError> {
        let key = (negotiation, lease);
        match self.held.get(&key) {
            None => return Err(TicketError::Unknown),
            Some(t) if t.confirmed => return Err(TicketError::AlreadyConfirmed),
            Some(t) if t.expires <= now => {
                self.held.remove(&key);
                return Err(TicketError::Unknown);
            }
            Some(_) => {}
        }
        let t = self.held.get_mut(&key).ok_or(TicketError::Unknown)?;
        t.confirmed = true;
        Ok(t)
    }

    /// Releases a ticket (declined, or the redirected lease ended).
    pub(crate) fn release(
        &mut self,
        negotiation: NegotiationId,
        lease: RequestId,
    ) -> Option<Ticket> {
        self.held.remove(&(negotiation, lease))
    }

    /// Drops unconfirmed tickets that expired by `now`; returns how many.
    pub(crate) fn expire(&mut self, now: EmuTime) -> usize {
        let before = self.held.len();
        self.held.retain(|_, t| t.confirmed || t.expires > now);
        before - self.held.len()
    }

    /// Every ticket (for invariant checks).
    pub(crate) fn all(&self) -> impl Iterator<Item = &Ticket> {
        self.held.values()
    }
}

/// Where one offered request stands on the requester's side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum OfferState {
    /// Offered, no answer yet.
    Offered,
    /// Accepted by the provider (at its price): redirect it.
    Accepted(f64),
    /// Counter-offered; the requester took it: redirect it.
    CounterTaken(f64),
    /// Counter-offered and declined, or rejected: try the next contract.
    Declined,
}

impl OfferState {
    /// The requester's next state on the provider's `answer`; `takes` says whether it takes
    /// a counter-offer at a unit price. Answers to a settled request (duplicates, late
    /// replies) change nothing.
    pub(crate) fn on_answer(self, answer: Answer, takes: impl FnOnce(f64) -> bool) -> OfferState {
        match (self, answer) {
            (OfferState::Offered, Answer::Accept { price }) => OfferState::Accepted(price),
            (OfferState::Offered, Answer::Counter { price }) if takes(price) => {
                OfferState::CounterTaken(price)
            }
            (OfferState::Offered, Answer::Counter { .. } | Answer::Reject) => OfferState::Declined,
            (settled, _) => settled,
        }
    }

    /// Whether the request is to be redirected to the provider.
    pub(crate) fn redirects(self) -> Option<f64> {
        match self {
            OfferState::Accepted(p) | OfferState::CounterTaken(p) => Some(p),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contracts_range_follows_its_kind_and_an_explicit_maximum() {
        use crate::model::GridId;
        let provider = model();
        let mut c = Contract {
            from: GridId(0),
            to: GridId(1),
            both_ways: true,
            kind: ContractKind::PriceRange,
            price_max: None,
            load_threshold: 0.95,
            k: 0.05,
        };
        let ranged = PriceRange::of_contract(&c, &provider);
        assert_eq!(ranged, PriceRange::ranged(&provider, 0.95, 0.05));
        assert!(ranged.min < ranged.max);
        c.price_max = Some(10.0);
        let capped = PriceRange::of_contract(&c, &provider);
        assert_eq!(capped.max, 10.0);
        assert!((capped.max - capped.min - (ranged.max - ranged.min)).abs() < 1e-12);
        c.kind = ContractKind::FixedPrice;
        c.price_max = None;
        let fixed = PriceRange::of_contract(&c, &provider);
        assert_eq!((fixed.min, fixed.max), (ranged.max, ranged.max));
    }

    fn model() -> CostModel {
        CostModel {
            unit_cost: 1.0,
            steepness: 1.0,
        }
    }

    #[test]
    fn cost_is_quadratic_in_load_and_marginal_cost_rises() {
        let m = model();
        assert_eq!(m.total(0.0, 100.0), 0.0);
        assert!((m.total(0.5, 100.0) - 50.0 * 1.25).abs() < 1e-9);
        let low = m.marginal(10.0, 0.1, 1000.0);
        let high = m.marginal(10.0, 0.9, 1000.0);
        assert!(high > low, "{low} {high}");
        // The per-unit marginal cost approaches p(1 + 3β²L²) for small requests.
        assert!((m.marginal(1.0, 0.5, 1e6) - m.unit_marginal(0.5)).abs() < 1e-4);
        // Eq. 2: weighted by contributed units.
        let p = CostModel::from_providers(&[(0.9, 100.0), (1.0, 300.0)]);
        assert!((p.unit_cost - 0.975).abs() < 1e-12);
        assert!((CostModel::provider_price(1.0, 0.5) - 1.5).abs() < 1e-12);
    }

    #[test]
    fn contracts_price_at_the_threshold_and_ranges_by_d_k() {
        let m = model();
        let fixed = PriceRange::fixed(&m, 0.95);
        assert_eq!(fixed.min, fixed.max);
        assert!((fixed.max - (1.0 + 3.0 * 0.95 * 0.95)).abs() < 1e-12);
        let ranged = PriceRange::ranged(&m, 0.95, 0.05);
        assert_eq!(ranged.max, fixed.max);
        let d = 3.0 * (0.95f64.powi(2) - 0.90f64.powi(2));
        assert!((ranged.max - ranged.min - d).abs() < 1e-12);
    }

    // Fig. 3, every branch.

    #[test]
    fn step_1_offer_only_when_home_unit_cost_exceeds_the_contract_minimum() {
        assert!(worth_offering(150.0, 100.0, 1.2));
        assert!(!worth_offering(110.0, 100.0, 1.2));
        assert!(!worth_offering(110.0, 0.0, 1.2));
    }

    #[test]
    fn step_2_1_provider_accepts_at_the_offered_price() {
        assert_eq!(
            provider_answer(100.0, 100.0, 1.0, 2.0),
            Answer::Accept { price: 1.0 }
        );
    }

    #[test]
    fn step_2_2_provider_counters_with_its_unit_cost() {
        assert_eq!(
            provider_answer(150.0, 100.0, 1.0, 2.0),
            Answer::Counter { price: 1.5 }
        );
    }

    #[test]
    fn step_2_3_provider_rejects_above_the_maximum() {
        assert_eq!(provider_answer(250.0, 100.0, 1.0, 2.0), Answer::Reject);
    }

    #[test]
    fn step_3_1_requester_takes_a_cheaper_counter_offer() {
        let s = OfferState::Offered.on_answer(Answer::Counter { price: 1.5 }, |p| {
            requester_takes_counter(180.0, 100.0, p)
        });
        assert_eq!(s, OfferState::CounterTaken(1.5));
        assert_eq!(s.redirects(), Some(1.5));
    }

    #[test]
    fn step_3_2_requester_declines_a_dearer_counter_offer_and_rejections() {
        assert_eq!(
            OfferState::Offered.on_answer(Answer::Counter { price: 1.5 }, |p| {
                requester_takes_counter(140.0, 100.0, p)
            }),
            OfferState::Declined
        );
        assert_eq!(
            OfferState::Offered
                .on_answer(Answer::Reject, |p| requester_takes_counter(140.0, 100.0, p)),
            OfferState::Declined
        );
        assert_eq!(
            OfferState::Offered.on_answer(Answer::Accept { price: 1.0 }, |p| {
                requester_takes_counter(140.0, 100.0, p)
            }),
            OfferState::Accepted(1.0)
        );
    }

    #[test]
    fn late_or_duplicate_answers_change_nothing() {
        let accepted = OfferState::Accepted(1.0);
        assert_eq!(
            accepted.on_answer(Answer::Reject, |p| requester_takes_counter(1.0, 1.0, p)),
            accepted
        );
        assert_eq!(
            OfferState::Declined.on_answer(Answer::Accept { price: 1.0 }, |p| {
                requester_takes_counter(1.0, 1.0, p)
            }),
            OfferState::Declined
        );
        assert_eq!(OfferState::Declined.redirects(), None);
    }

    #[test]
    fn tickets_hold_capacity_expire_and_are_never_sold_twice() {
        let mut t = Tickets::default();
        let at = EmuTime::from_secs;
        let ticket = |n, l| Ticket {
            negotiation: n,
            lease: RequestId(l),
            units: 10.0,
            price: 1.0,
            expires: at(100),
            confirmed: false,
        };
        t.issue(ticket(1, 1));
        t.issue(ticket(1, 1)); // a duplicate offer
        t.issue(ticket(2, 2));
        assert_eq!(t.held_units(at(50)), 20.0);
        assert!(t.confirm(1, RequestId(1), at(60)).is_ok());
        assert_eq!(
            t.confirm(1, RequestId(1), at(61)),
            Err(TicketError::AlreadyConfirmed)
        );
        // Unconfirmed tickets lapse; confirmed ones stay until released.
        assert_eq!(t.held_units(at(150)), 10.0);
        assert_eq!(t.expire(at(150)), 1);
        assert_eq!(
            t.confirm(2, RequestId(2), at(151)),
            Err(TicketError::Unknown)
        );
        assert!(t.release(1, RequestId(1)).is_some());
        assert_eq!(t.held_units(at(150)), 0.0);
    }
}
