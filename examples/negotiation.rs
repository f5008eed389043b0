//! Negotiation policies of one's own, both sides of paper 004's Fig. 3:
//!
//! * `haggle` (provider side): never accept the opening price; counter-offer halfway between
//!   the offer and the contract's maximum when that covers the request's cost, else reject.
//! * `split` (requester side): offer to every contract in ascending maximum price, opening
//!   halfway through its range, and take a counter-offer up to what serving at home costs.
//!
//! ```sh
//! cargo run --release --example negotiation -- run topologies/peering-small.toml \
//!     --set igg.answer=haggle --set igg.offer=split
//! ```

use igemu::igg::negotiation::{AnswerPolicy, OfferAsk, OfferPlan, OfferPolicy, PlanAsk};
use igemu::igg::Answer;
use igemu::policy::Registry;

/// Counter-offers halfway to the maximum.
pub struct Haggle;

impl AnswerPolicy for Haggle {
    fn name(&self) -> String {
        "haggle".into()
    }

    fn answer(&mut self, ask: &OfferAsk<'_>) -> Answer {
        let price = (ask.price + ask.max) / 2.0;
        if ask.cost <= price * ask.units {
            Answer::Counter { price }
        } else {
            Answer::Reject
        }
    }
}

/// Every contract, cheapest maximum first, opening halfway.
pub struct Split;

impl OfferPolicy for Split {
    fn name(&self) -> String {
        "split".into()
    }

    fn plan(&mut self, ask: &PlanAsk<'_>) -> Vec<OfferPlan> {
        let mut contracts: Vec<_> = ask.contracts.iter().filter(|c| !c.tried).collect();
        contracts.sort_by(|a, b| a.max.total_cmp(&b.max));
        let home = ask.home_cost / ask.units.max(f64::MIN_POSITIVE);
        contracts
            .into_iter()
            .map(|c| OfferPlan {
                peer: c.peer,
                price: (c.min + c.max) / 2.0,
                limit: if home.is_finite() {
                    home.max(0.0)
                } else {
                    c.max
                },
            })
            .collect()
    }
}

/// The registry with this example's policies.
pub fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.answer("haggle", |_| Box::new(Haggle));
    r.offer("split", |_| Box::new(Split));
    r
}

#[allow(dead_code)] // the tests use `registry` alone
fn main() -> std::process::ExitCode {
    igemu::cli::main_with(registry())
}
