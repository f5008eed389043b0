//! What makes a plug-in's answer possible, per decision point, pure: each check returns what
//! is wrong, in words a user can act on. A guard (`policy::guard`) runs them before an answer
//! is carried out.

use crate::igg::negotiation::{ContractView, OfferAsk, OfferPlan};
use crate::igg::peering::Answer;
use crate::lrms::contention::Contention;
use crate::lrms::policy::Choice;
use crate::model::GridId;

/// A preemption set: each lease once, every one a candidate, and room made for the local
/// request. `None` (preempt nothing) is always possible. Sorts the set. `label` names a
/// lease in messages.
pub fn preemption(
    c: &Contention,
    choice: &mut Option<Choice>,
    label: &dyn Fn(crate::model::RequestId) -> String,
) -> Result<(), String> {
    let Some(choice) = choice else {
        return Ok(());
    };
    let n = c.candidates.len();
    if let Some(&bad) = choice.set.iter().find(|&&i| i >= n) {
        return Err(format!("lease index {bad} is not among the {n} candidates"));
    }
    choice.set.sort_unstable();
    if let Some(w) = choice.set.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!(
            "names lease `{}` twice",
            label(c.candidates[w[0]].lease)
        ));
    }
    let room = c.room(&choice.set);
    if room < u64::from(c.need) {
        return Err(format!(
            "preempting {} lease(s) leaves room for {room} of the {} VMs the local request needs",
            choice.set.len(),
            c.need
        ));
    }
    Ok(())
}

/// A dispatch order: indices of the Grid's `n` clusters, each at most once. `name` names a
/// cluster in messages.
pub fn dispatch(order: &[usize], n: usize, name: &dyn Fn(usize) -> String) -> Result<(), String> {
    if let Some(&bad) = order.iter().find(|&&j| j >= n) {
        return Err(format!(
            "cluster index {bad} is not one of the Grid's {n} clusters"
        ));
    }
    let mut seen = vec![false; n];
    for &j in order {
        if std::mem::replace(&mut seen[j], true) {
            return Err(format!("names cluster `{}` twice", name(j)));
        }
    }
    Ok(())
}

/// A provider's answer: an accept at the price offered, a counter-offer at a price from 0 to
/// the contract's maximum (one within [`PRICE_TOLERANCE`] of it is clamped to it).
pub fn answer(a: &mut Answer, ask: &OfferAsk<'_>) -> Result<(), String> {
    match a {
        Answer::Accept { price } if price.to_bits() != ask.price.to_bits() => Err(format!(
            "accepts at unit price {price}, not the {} offered",
            ask.price
        )),
        Answer::Counter { price } if !(price.is_finite() && *price >= 0.0) => Err(format!(
            "counter-offers at unit price {price}: a price is a number of at least 0"
        )),
        Answer::Counter { price } => match within(*price, 0.0, ask.max) {
            Some(p) => {
                *price = p;
                Ok(())
            }
            None => Err(format!(
                "counter-offers at unit price {price}, above the contract's maximum {}",
                ask.max
            )),
        },
        Answer::Accept { .. } | Answer::Reject => Ok(()),
    }
}

/// How far outside a range a price may be and still be taken (then clamped into it): prices
/// cross the protocol as decimal text, and a language that prints fewer digits than a
/// double holds must still be able to offer a contract's exact minimum.
pub const PRICE_TOLERANCE: f64 = 1e-9;

/// `x` clamped into `[lo, hi]` if it is within [`PRICE_TOLERANCE`] (relative) of it.
fn within(x: f64, lo: f64, hi: f64) -> Option<f64> {
    let slack = |b: f64| PRICE_TOLERANCE * b.abs().max(1.0);
    (x >= lo - slack(lo) && x <= hi + slack(hi)).then(|| x.clamp(lo, hi))
}

/// A requester's plan: each step a peer this Grid holds a contract with, at a price within
/// that contract's range (a price within [`PRICE_TOLERANCE`] of it is clamped into it), with
/// a limit of at least 0. `grid` names a Grid in messages.
pub fn offer(
    plan: &mut [OfferPlan],
    contracts: &[ContractView],
    grid: &dyn Fn(GridId) -> String,
) -> Result<(), String> {
    for p in plan.iter_mut() {
        let Some(c) = contracts.iter().find(|c| c.peer == p.peer) else {
            return Err(format!(
                "offers to grid `{}`, with which this one holds no contract",
                grid(p.peer)
            ));
        };
        match within(p.price, c.min, c.max).filter(|_| p.price.is_finite()) {
            Some(price) => p.price = price,
            None => {
                return Err(format!(
                    "offers at unit price {}, outside the contract's range [{}, {}]",
                    p.price, c.min, c.max
                ))
            }
        }
        if p.limit.is_nan() || p.limit < 0.0 {
            return Err(format!(
                "takes counter-offers up to {}: a limit is a number of at least 0",
                p.limit
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispatch_order_names_known_clusters_once() {
        let name = |j: usize| format!("c{j}");
        assert!(dispatch(&[2, 0, 1], 3, &name).is_ok());
        assert!(dispatch(&[], 3, &name).is_ok());
        assert!(dispatch(&[3], 3, &name)
            .unwrap_err()
            .contains("not one of the Grid's 3"));
        assert!(dispatch(&[1, 1], 3, &name)
            .unwrap_err()
            .contains("names cluster `c1` twice"));
    }

    #[test]
    fn an_offer_plan_stays_within_its_contracts() {
        let contracts = [ContractView {
            peer: GridId(1),
            min: 1.0,
            max: 2.0,
            tried: false,
        }];
        let step = |peer, price, limit| OfferPlan {
            peer: GridId(peer),
            price,
            limit,
        };
        let name = |g: GridId| format!("g{}", g.0);
        let check = |mut plan: Vec<OfferPlan>| offer(&mut plan, &contracts, &name).map(|()| plan);
        assert!(check(vec![step(1, 1.5, 3.0)]).is_ok());
        assert!(check(vec![step(1, 2.0, f64::INFINITY)]).is_ok());
        assert!(check(vec![step(2, 1.5, 3.0)])
            .unwrap_err()
            .contains("grid `g2`"));
        assert!(check(vec![step(1, 0.5, 3.0)]).is_err());
        assert!(check(vec![step(1, f64::NAN, 3.0)]).is_err());
        assert!(check(vec![step(1, 1.0, -1.0)]).is_err());
        // A price a hair below the minimum, as a language printing fewer digits writes it,
        // is the minimum; one clearly below is not.
        let close = check(vec![step(1, 1.0 - 1e-12, 3.0)]).expect("within the tolerance");
        assert_eq!(close[0].price.to_bits(), 1.0f64.to_bits());
        assert!(check(vec![step(1, 1.0 - 1e-6, 3.0)]).is_err());
    }
}
