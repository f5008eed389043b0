//! Tests of the broker's requester and provider state; `req` builds test requests for the
//! gateway's tests too.

use super::*;
use crate::model::{ClusterId, LeaseType, Origin};

pub(crate) fn req(id: u32) -> LeaseRequest {
    LeaseRequest {
        id: RequestId(id),
        origin: Origin::External,
        grid: GridId(0),
        cluster: None::<ClusterId>,
        arrival: EmuTime::ZERO,
        start: None,
        vms: 1,
        cores_per_vm: 1,
        mem_mb: 1,
        duration: EmuDuration::from_secs(100),
        lease_type: LeaseType::BestEffortSuspendable,
        deadline: None,
        moldable: false,
        deadline_ratio: None,
    }
}

/// Home costs by request id (a request not listed is not overloaded: served here).
fn at(costs: &[(u32, f64)]) -> impl Fn(&Item) -> Option<f64> + '_ {
    |it| costs.iter().find(|c| c.0 == it.req.id.0).map(|c| c.1)
}

fn requester() -> Broker {
    let c = |peer, min: f64| Contract {
        peer: GridId(peer),
        range: PriceRange {
            min,
            max: min * 2.0,
        },
    };
    Broker::new(
        GridId(0),
        vec![c(2, 1.5), c(1, 1.0)],
        2,
        EmuDuration::from_secs(600),
    )
}

#[test]
fn rounds_offer_in_ascending_price_and_fall_back_to_local_service() {
    let mut b = requester();
    b.enqueue(req(1), 100.0); // unit cost 2.0: worth offering to both
    b.enqueue(req(2), 100.0); // unit cost 1.2: only to the 1.0 contract
    b.enqueue(req(3), 100.0); // unit cost 0.5: to neither
    let out = b.round(EmuTime::ZERO, at(&[(1, 200.0), (2, 120.0), (3, 50.0)]));
    assert!(
        matches!(&out[0], Out::Send { peer, msg: PeerMsg::Offer { items, price, .. } } if *peer == GridId(1) && items.len() == 3 - 1 && *price == 1.0)
    );
    assert_eq!(out[1], Out::ServeLocally(req(3)));
}

#[test]
fn answers_redirect_accepted_decline_dear_counters_and_requeue() {
    let mut b = requester();
    b.enqueue(req(1), 100.0);
    b.enqueue(req(2), 100.0);
    let Out::Send {
        msg: PeerMsg::Offer { negotiation, .. },
        ..
    } = b.round(EmuTime::ZERO, at(&[(1, 200.0), (2, 120.0)]))[0].clone()
    else {
        panic!("an offer")
    };
    let out = b.on_answers(
        GridId(1),
        negotiation,
        &[
            (RequestId(1), Answer::Accept { price: 1.0 }),
            (RequestId(2), Answer::Counter { price: 1.5 }),
        ],
    );
    assert!(
        matches!(&out[0], Out::Send { msg: PeerMsg::Redirect { req, price, .. }, .. } if req.id == RequestId(1) && *price == 1.0)
    );
    assert!(
        matches!(&out[1], Out::Send { msg: PeerMsg::Decline { lease, price, .. }, .. } if *lease == RequestId(2) && *price == 1.5)
    );
    assert_eq!(b.queued(), 1);
    // A late duplicate answer does nothing.
    assert!(b
        .on_answers(GridId(1), negotiation, &[(RequestId(1), Answer::Reject)])
        .is_empty());
    // Request 2 was tried with peer 1; the 1.5 contract is not worth it at unit cost 1.2.
    assert_eq!(
        b.round(EmuTime::ZERO, at(&[(1, 200.0), (2, 120.0)])),
        vec![Out::ServeLocally(req(2))]
    );
    let (outs, payment) = b.on_redirect_ack(negotiation, RequestId(1), true);
    assert!(outs.is_empty());
    assert_eq!(payment.map(|p| p.amount), Some(100.0));
    assert_eq!(b.outcomes.redirected, 1);
}

#[test]
fn a_request_a_peer_never_answers_about_is_offered_to_it_only_retries_plus_one_times() {
    let mut b = requester();
    b.enqueue(req(1), 100.0);
    b.enqueue(req(2), 100.0);
    let mut offered = 0;
    // The peer answers about request 2 only (rejecting it), then never mentions 1.
    for round in 0..10 {
        let out = b.round(EmuTime::ZERO, at(&[(1, 120.0), (2, 120.0)]));
        let Some(negotiation) = out.iter().find_map(|o| match o {
            Out::Send {
                msg: PeerMsg::Offer {
                    negotiation, items, ..
                },
                ..
            } if items.iter().any(|it| it.req.id == RequestId(1)) => Some(*negotiation),
            _ => None,
        }) else {
            assert_eq!(out, vec![Out::ServeLocally(req(1))], "round {round}");
            break;
        };
        offered += 1;
        b.on_answers(GridId(1), negotiation, &[(RequestId(2), Answer::Reject)]);
    }
    // `retries` = 2: the first offer and two more, then peer 1 counts as tried (the
    // 1.5 contract is not worth it at unit cost 1.2) and the request is served here.
    assert_eq!(offered, 3);
    assert_eq!(b.queued(), 0);
}

#[test]
fn offers_time_out_retry_then_give_the_peer_up() {
    let mut b = requester();
    b.enqueue(req(1), 100.0);
    let Out::Send {
        msg: PeerMsg::Offer { negotiation, .. },
        ..
    } = b.round(EmuTime::ZERO, at(&[(1, 120.0)]))[0].clone()
    else {
        panic!()
    };
    assert_eq!(b.offer_timed_out(negotiation).len(), 1);
    assert_eq!(b.offer_timed_out(negotiation).len(), 1);
    assert!(
        b.offer_timed_out(negotiation).is_empty(),
        "retries exhausted"
    );
    assert_eq!(
        b.round(EmuTime::ZERO, at(&[(1, 120.0)])),
        vec![Out::ServeLocally(req(1))]
    );
}

/// The acknowledgement the provider sends Grid 0 for `lease`'s redirection under
/// negotiation 7.
fn ack_of(lease: u32, accepted: bool) -> Vec<Out> {
    vec![Out::Send {
        peer: GridId(0),
        msg: PeerMsg::RedirectAck {
            negotiation: 7,
            lease: RequestId(lease),
            accepted,
        },
    }]
}

/// One provider's tickets through a whole story: held, offered twice, redirected twice,
/// lapsed, ended, redirected late.
#[test]
fn provider_tickets_hold_capacity_and_redirections_are_idempotent() {
    let mut p = Broker::new(GridId(1), vec![], 2, EmuDuration::from_secs(600));
    let cost = CostModel {
        unit_cost: 1.0,
        steepness: 1.0,
    };
    let items = vec![
        Item {
            req: req(1),
            units: 100.0,
        },
        Item {
            req: req(2),
            units: 100.0,
        },
    ];
    let now = EmuTime::from_secs(10);
    let offered = Offered {
        from: GridId(0),
        negotiation: 7,
        items: &items,
        price: 1.0,
        max: 3.0,
    };
    let empty = |_: &LeaseRequest| (0.0, 1000.0);
    let mut idle = Standing {
        cost: &cost,
        window: &empty,
        promises: None,
    };
    let Out::Send {
        msg: PeerMsg::Answer { answers, .. },
        ..
    } = p.answer_offer(&offered, &mut idle, now)
    else {
        panic!()
    };
    // The first request fits cheaply; the ticket it holds raises the load for the second.
    assert!(matches!(
        answers[0].1,
        Answer::Accept { .. } | Answer::Counter { .. }
    ));
    assert_eq!(p.tickets.held_units(now), 200.0);
    // A duplicate offer gets the same answers and issues nothing new.
    let again = p.answer_offer(&offered, &mut idle, now);
    assert_eq!(
        again,
        Out::Send {
            peer: GridId(0),
            msg: PeerMsg::Answer {
                negotiation: 7,
                answers: answers.clone()
            }
        }
    );
    assert_eq!(p.tickets.held_units(now), 200.0);
    let (first, received) = p.on_redirect(GridId(0), 7, &req(1), 1.0, now);
    assert_eq!(first.len(), 2, "ack and serve");
    assert_eq!(
        received,
        Some(100.0),
        "1.0 per unit for its ticket's 100 units"
    );
    let (dup, again) = p.on_redirect(GridId(0), 7, &req(1), 1.0, now);
    assert_eq!(dup.len(), 1, "a duplicate is only acknowledged");
    assert_eq!(again, None, "and not paid for twice");
    p.on_decline(7, RequestId(2));
    assert_eq!(p.tickets.held_units(now), 100.0);
    // After the ticket lapsed, a redirection is refused.
    let (late, _) = p.on_redirect(GridId(0), 7, &req(2), 1.0, now);
    assert_eq!(late, ack_of(2, false));
    assert_eq!(p.foreign_ended(RequestId(1)), Some(GridId(0)));
    assert_eq!(p.tickets.held_units(now), 0.0);
    // A very late duplicate of a redirection taken and finished is still acknowledged.
    let (later, _) = p.on_redirect(GridId(0), 7, &req(1), 1.0, now);
    assert_eq!(later, ack_of(1, true));
}

proptest::proptest! {
    #[test]
    fn a_provider_accepts_only_what_its_slots_run_by_the_deadline(
        busy in 0u64..=8,
        until_busy in 1u64..5_000,
        duration in 1u64..6_000,
        slack in 0u64..6_000,
    ) {
        use crate::igg::slots::{Published, SlotStore};
        use crate::model::LeaseType;
        // One 8-core cluster, `busy` cores taken until `until_busy`, published to
        // 10 000 s; idle on the cost model, so the policy alone would accept.
        let mut slots = SlotStore::default();
        slots.publish(0, Published {
            free: vec![(EmuTime::ZERO, 8 - busy), (EmuTime::from_secs(until_busy), 8)],
            until: EmuTime::from_secs(10_000),
            cores: 8,
            price: 1.0,
        });
        let mut r = req(1);
        (r.vms, r.lease_type) = (4, LeaseType::DeadlineMigratable);
        r.duration = EmuDuration::from_secs(duration);
        r.deadline = Some(EmuTime::from_secs(duration + slack));
        let items = [Item { req: r, units: 4.0 * duration as f64 }];
        let offered = Offered { from: GridId(0), negotiation: 1, items: &items, price: 9.0, max: 9.0 };
        let cost = CostModel { unit_cost: 1.0, steepness: 1.0 };
        let mut promises = Promises::new(&slots, 1, EmuTime::ZERO, &[]);
        let mut own = Standing {
            cost: &cost,
            window: &|_: &LeaseRequest| (0.0, 1e12),
            promises: Some(&mut promises),
        };
        let mut p = Broker::new(GridId(1), vec![], 2, EmuDuration::from_secs(600));
        let Out::Send { msg: PeerMsg::Answer { answers, .. }, .. } =
            p.answer_offer(&offered, &mut own, EmuTime::ZERO)
        else {
            panic!("an answer")
        };
        // Past the horizon (for a deadline past it) the last step, all free, holds on.
        let (start, deadline) = (if busy <= 4 { 0 } else { until_busy }, duration + slack);
        let fits = start + duration <= deadline.min(10_000)
            || deadline > 10_000 && start + duration <= deadline;
        proptest::prop_assert_eq!(matches!(answers[0].1, Answer::Accept { .. }), fits);
        proptest::prop_assert_eq!(answers[0].1 == Answer::Reject, !fits);
        // A rejected request holds no ticket.
        let held = if fits { 4.0 * duration as f64 } else { 0.0 };
        proptest::prop_assert_eq!(p.tickets.held_units(EmuTime::ZERO), held);
    }
}

/// The redirection of request 1 that `b` makes next: offered in a round, accepted.
fn redirect_next(b: &mut Broker) -> (GridId, NegotiationId) {
    let Out::Send {
        peer,
        msg: PeerMsg::Offer { negotiation, .. },
    } = b.round(EmuTime::ZERO, at(&[(1, 200.0)]))[0].clone()
    else {
        panic!("an offer")
    };
    b.on_answers(
        peer,
        negotiation,
        &[(RequestId(1), Answer::Accept { price: 1.0 })],
    );
    assert!(b.awaiting_ack(RequestId(1)));
    (peer, negotiation)
}

#[test]
fn a_late_refusal_from_an_earlier_redirection_does_not_undo_the_current_one() {
    // Found by running the Grids on threads: a redirection refused by one provider, the
    // request offered again and redirected to another, then one of the first provider's
    // refusals of a resent copy arrives late. Taken as the answer to the second
    // redirection, it brought the request home while the second provider ran it.
    let mut b = requester();
    b.enqueue(req(1), 100.0);
    let (first, n1) = redirect_next(&mut b);
    assert_eq!(
        b.on_redirect_ack(n1, RequestId(1), false).0,
        vec![Out::ServeLocally(req(1))]
    );
    // Home refuses it too: offered again (here to the same provider: only the
    // negotiation tells the answers apart).
    b.enqueue(req(1), 100.0);
    let (second, n2) = redirect_next(&mut b);
    assert_eq!(second, first);
    assert_ne!(n2, n1);
    // The first provider's answer to a resent copy: stale.
    assert_eq!(
        b.on_redirect_ack(n1, RequestId(1), false),
        (Vec::new(), None)
    );
    assert!(
        b.awaiting_ack(RequestId(1)),
        "the second redirection stands"
    );
    let (out, paid) = b.on_redirect_ack(n2, RequestId(1), true);
    assert!(out.is_empty() && paid.is_some());
}

#[test]
fn a_duplicate_answer_never_declines_the_redirection_it_started() {
    let mut b = requester();
    b.enqueue(req(1), 100.0);
    let (peer, n) = redirect_next(&mut b);
    // After the negotiation was settled, an answer under it names request 1 again and
    // request 2 (counter-offered): 2 is declined, late; 1, being redirected under this
    // negotiation, is not.
    let copy = [
        (RequestId(1), Answer::Accept { price: 1.0 }),
        (RequestId(2), Answer::Counter { price: 1.5 }),
    ];
    let out = b.on_answers(peer, n, &copy);
    assert_eq!(
        out,
        vec![Out::Send {
            peer,
            msg: PeerMsg::Decline {
                negotiation: n,
                lease: RequestId(2),
                price: 1.5,
                late: true
            }
        }]
    );
    assert!(b.awaiting_ack(RequestId(1)));
    assert_eq!(b.outcomes.late_declined, 1);
    // From another Grid (a stray answer naming this negotiation), nothing it redirects
    // is spared either: only the provider's own answer is about that redirection.
    assert_eq!(b.on_answers(GridId(2), n, &copy).len(), 2);
}

#[test]
fn a_redirection_without_an_answer_is_resent_never_served_here() {
    let mut b = requester();
    b.enqueue(req(1), 100.0);
    let Out::Send {
        msg: PeerMsg::Offer { negotiation, .. },
        ..
    } = b.round(EmuTime::ZERO, at(&[(1, 200.0)]))[0].clone()
    else {
        panic!()
    };
    b.on_answers(
        GridId(1),
        negotiation,
        &[(RequestId(1), Answer::Accept { price: 1.0 })],
    );
    for _ in 0..5 {
        let out = b.redirect_timed_out(RequestId(1));
        assert!(matches!(
            &out[0],
            Out::Send {
                msg: PeerMsg::Redirect { .. },
                ..
            }
        ));
    }
    assert!(b.awaiting_ack(RequestId(1)));
    // Only an explicit refusal brings it home.
    assert_eq!(
        b.on_redirect_ack(negotiation, RequestId(1), false).0,
        vec![Out::ServeLocally(req(1))]
    );
}
