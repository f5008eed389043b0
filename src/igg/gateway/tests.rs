//! Tests of the gateway's decisions: dispatch, retries, peering and relocation, input by input.

use super::*;
use crate::igg::broker::tests::req;
use crate::igg::dispatch::ClusterModel;
use crate::igg::dispatch::DispatchName;
use crate::igg::peering::{Answer, Contract as Terms, ContractKind};

fn settings(contracts: Vec<(GridId, Terms)>) -> GatewaySettings {
    GatewaySettings {
        retry: true,
        horizon: EmuDuration::from_secs(3600),
        load_threshold: 0.5,
        interval: (EmuDuration::from_secs(60), EmuDuration::from_secs(60)),
        price_update: (EmuDuration::from_secs(3600), EmuDuration::from_secs(3600)),
        on_request: false,
        provides: true,
        seed: 1,
        offer_timeout: EmuDuration::from_secs(30),
        steepness: 1.0,
        retries: 1,
        ticket_ttl: EmuDuration::from_secs(600),
        contracts,
        broken_protocol: false,
    }
}

/// The dispatch model of the tests' one 4-core cluster.
fn model() -> ClusterModel {
    ClusterModel {
        cores: 4.0,
        speed: 1.0,
        local_rate: 0.0,
        tau: 0.0,
        mu: 0.0,
        theta: 1.0,
        omega: 1.0,
    }
}

/// Grid `g` with one 4-core cluster (id `g`); Grid 0 holds a contract with Grid 1.
/// The shipped negotiation policies with dispatch `name` over one cluster of `model`.
fn policies(name: DispatchName, model: ClusterModel) -> GatewayPolicies {
    let setup = crate::igg::DispatchSetup {
        grid: "g".into(),
        clusters: vec!["c".into()],
        models: vec![model],
        rate: 0.0,
        seed: 1,
    };
    GatewayPolicies {
        dispatch: crate::igg::dispatch::builtin(name, &setup),
        answer: Box::new(crate::igg::negotiation::MarginalCost),
        offer: Box::new(crate::igg::negotiation::CheapestContract),
    }
}

fn gateway(g: u16) -> Gateway {
    let model = model();
    let terms = Terms {
        from: GridId(0),
        to: GridId(1),
        both_ways: false,
        kind: ContractKind::FixedPrice,
        price_max: None,
        load_threshold: 0.9,
        k: 0.1,
    };
    let contracts = if g == 0 {
        vec![(GridId(1), terms)]
    } else {
        Vec::new()
    };
    let cost = CostModel::from_providers(&[(1.0, 4.0)]);
    let mut gw = Gateway::new(
        GridId(g),
        &[(ClusterId(g), 4)],
        cost,
        policies(DispatchName::RoundRobin, model),
        settings(contracts),
    );
    let providers = (0..2)
        .map(|p| (GridId(p), CostModel::from_providers(&[(1.0, 4.0)])))
        .collect();
    gw.on(
        Input::Peers {
            peers: vec![GridId(1 - g)],
            providers,
        },
        EmuTime::ZERO,
    );
    gw
}

/// Cluster `g` publishes `free` of its 4 cores free for the next 10 hours.
fn publish(gw: &mut Gateway, g: u16, free: u64) {
    let slots = Published {
        free: [(EmuTime::ZERO, free)].into_iter().collect(),
        until: EmuTime::from_secs(36_000),
        cores: 4,
        price: 1.0,
    };
    let input = Input::FreeSlots {
        cluster: ClusterId(g),
        slots,
    };
    assert!(gw.on(input, EmuTime::ZERO).is_empty());
}

/// Delivers every peer message between the two gateways until none is left — an offer
/// followed by its provider's round, which evaluates it; returns every other effect, by
/// Grid.
fn settle(gws: &mut [Gateway; 2], first: Vec<(usize, Effect)>) -> Vec<(usize, Effect)> {
    let mut queue: std::collections::VecDeque<(usize, Effect)> = first.into();
    let mut rest = Vec::new();
    while let Some((g, effect)) = queue.pop_front() {
        match effect {
            Effect::Send { to, msg } => {
                let at = usize::from(to.0);
                let offer = matches!(msg, PeerMsg::Offer { .. });
                let input = Input::Peer {
                    from: GridId(g as u16),
                    msg,
                };
                let mut more = gws[at].on(input, EmuTime::from_secs(1));
                if offer {
                    more.extend(gws[at].on(Input::Tick, EmuTime::from_secs(1)));
                }
                queue.extend(more.into_iter().map(|e| (at, e)));
            }
            other => rest.push((g, other)),
        }
    }
    rest
}

#[test]
fn with_contracts_requests_wait_for_the_round_and_only_an_overloaded_grid_offers_them() {
    // Paper 004 §5.2: requests are stored during an interval and handled at the round.
    let mut gw = gateway(0);
    publish(&mut gw, 0, 4); // idle: every request's window is free
    assert!(gw.on(Input::Submit(req(1)), EmuTime::ZERO).is_empty());
    let round = gw.on(Input::Tick, EmuTime::from_secs(60));
    assert!(round
        .iter()
        .any(|e| matches!(e, Effect::Place { req, .. } if req.id == RequestId(1))));
    assert!(!round.iter().any(|e| matches!(
        e,
        Effect::Send {
            msg: PeerMsg::Offer { .. },
            ..
        }
    )));
    // Full until the horizon: the same request is over the threshold and offered.
    publish(&mut gw, 0, 0);
    gw.on(Input::Submit(req(2)), EmuTime::from_secs(61));
    let round = gw.on(Input::Tick, EmuTime::from_secs(120));
    assert!(round.iter().any(|e| matches!(
        e,
        Effect::Send { msg: PeerMsg::Offer { items, .. }, .. } if items[0].req.id == RequestId(2)
    )));
}

#[test]
fn a_requests_cost_window_ends_at_its_deadline_or_virtual_deadline() {
    // Paper 004 §5.2: the horizon of a request's cost is its deadline; for a best-effort
    // request, the start the gateway's slots give it plus its run time.
    let mut gw = gateway(0);
    let mut free = BTreeMap::new();
    free.insert(EmuTime::ZERO, 0);
    free.insert(EmuTime::from_secs(1000), 4);
    let slots = Published {
        free: free.into_iter().collect(),
        until: EmuTime::from_secs(36_000),
        cores: 4,
        price: 1.0,
    };
    gw.on(
        Input::FreeSlots {
            cluster: ClusterId(0),
            slots,
        },
        EmuTime::ZERO,
    );
    let best_effort = req(1); // 1 core, 100 s
    assert_eq!(
        gw.cost_horizon(&best_effort, EmuTime::ZERO, &gw.slots.at(EmuTime::ZERO)),
        EmuTime::from_secs(1100)
    );
    // Busy for 1000 of its 1100 s: load 10/11.
    let (load, capacity) = gw.window(&best_effort, EmuTime::ZERO, &gw.slots.at(EmuTime::ZERO));
    assert!((load - 1000.0 / 1100.0).abs() < 1e-9, "{load}");
    assert!((capacity - 4.0 * 1100.0).abs() < 1e-9);
    let mut deadline = req(2);
    deadline.lease_type = crate::model::LeaseType::DeadlineMigratable;
    deadline.deadline = Some(EmuTime::from_secs(5000));
    assert_eq!(
        gw.cost_horizon(&deadline, EmuTime::ZERO, &gw.slots.at(EmuTime::ZERO)),
        EmuTime::from_secs(5000)
    );
    // A deadline already passed falls back to the virtual deadline.
    assert_eq!(
        gw.cost_horizon(
            &deadline,
            EmuTime::from_secs(6000),
            &gw.slots.at(EmuTime::from_secs(6000))
        ),
        EmuTime::from_secs(6100)
    );
}

#[test]
fn publication_on_request_asks_the_clusters_before_the_round_and_each_placement() {
    let mut gw = gateway(0);
    gw.settings.on_request = true;
    publish(&mut gw, 0, 0);
    gw.on(Input::Submit(req(1)), EmuTime::ZERO);
    let tick = gw.on(Input::Tick, EmuTime::from_secs(60));
    assert!(matches!(
        &tick[..],
        [
            Effect::Timer {
                timer: Timer::Tick,
                ..
            },
            Effect::Refresh
        ]
    ));
    // The fresh slots show an idle cluster: request 1 is served at home.
    publish(&mut gw, 0, 4);
    let round = gw.on(Input::Refreshed, EmuTime::from_secs(60));
    assert!(round
        .iter()
        .any(|e| matches!(e, Effect::Place { req, .. } if req.id == RequestId(1))));
    // Earliest-start dispatch asks the clusters for each request rather than reading
    // slots that may be hours old.
    gw.dispatch = policies(DispatchName::EarliestStart, model()).dispatch;
    assert!(matches!(
        gw.place(req(2), EmuTime::from_secs(61)),
        Effect::Probe(r) if r.id == RequestId(2)
    ));
    gw.settings.on_request = false;
    assert!(matches!(
        gw.place(req(3), EmuTime::from_secs(61)),
        Effect::Place { .. }
    ));
}

#[test]
fn a_provider_answers_offers_at_its_round_dearest_first() {
    // Two offers from Grid 0 wait at Grid 1 until its round; they are answered in
    // decreasing order of price, whatever order they came in.
    let mut provider = gateway(1);
    publish(&mut provider, 1, 4);
    let offer = |negotiation, price| Input::Peer {
        from: GridId(0),
        msg: PeerMsg::Offer {
            negotiation,
            items: vec![Item {
                req: req(negotiation as u32),
                units: 100.0,
            }],
            price,
            max: 10.0,
        },
    };
    assert!(provider.on(offer(1, 1.0), EmuTime::ZERO).is_empty(), "held");
    assert!(provider.on(offer(2, 2.0), EmuTime::ZERO).is_empty(), "held");
    assert!(
        provider.on(offer(2, 2.0), EmuTime::ZERO).is_empty(),
        "a duplicate held once"
    );
    let answered: Vec<NegotiationId> = provider
        .on(Input::Tick, EmuTime::from_secs(60))
        .into_iter()
        .filter_map(|e| match e {
            Effect::Send {
                msg: PeerMsg::Answer { negotiation, .. },
                ..
            } => Some(negotiation),
            _ => None,
        })
        .collect();
    assert_eq!(answered, vec![2, 1]);
    // A duplicate of an answered offer is answered again at once.
    let again = provider.on(offer(1, 1.0), EmuTime::from_secs(61));
    assert!(matches!(
        &again[..],
        [
            Effect::Send {
                msg: PeerMsg::Answer { negotiation: 1, .. },
                ..
            },
            ..
        ]
    ));
}

fn observed(effects: &[(usize, Effect)]) -> Vec<(usize, &Observation)> {
    effects
        .iter()
        .filter_map(|(g, e)| match e {
            Effect::Observe(o) => Some((*g, o)),
            _ => None,
        })
        .collect()
}

fn places(effects: &[(usize, Effect)]) -> Vec<(usize, RequestId)> {
    effects
        .iter()
        .filter_map(|(g, e)| match e {
            Effect::Place { req, .. } => Some((*g, req.id)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_request_no_cluster_takes_is_rejected_and_its_user_told() {
    let mut gw = gateway(1);
    let placed = gw.on(Input::Submit(req(1)), EmuTime::ZERO);
    assert!(matches!(
        &placed[..],
        [Effect::Place { order, tries: 1, .. }] if order == &vec![0]
    ));
    let unplaced = Input::Unplaced {
        req: req(1),
        refusal: Some(Refusal::TooLarge),
    };
    assert!(matches!(
        &gw.on(unplaced, EmuTime::ZERO)[..],
        [
            Effect::Observe(Observation::Rejected(RequestId(1), RejectReason::TooLarge)),
            Effect::Dve {
                note: DveNote::Ended(RequestId(1), RequestState::Rejected),
                posted: false
            }
        ]
    ));
    // Offered to no cluster at all: the IGG found none.
    gw.on(Input::Submit(req(2)), EmuTime::ZERO);
    let nowhere = Input::Unplaced {
        req: req(2),
        refusal: None,
    };
    assert!(matches!(
        &gw.on(nowhere, EmuTime::ZERO)[..],
        [
            Effect::Observe(Observation::Rejected(RequestId(2), RejectReason::NoCluster)),
            ..
        ]
    ));
}

#[test]
fn clusters_refusals_combine_to_the_closest_one() {
    use Refusal::*;
    assert_eq!(Refusal::combine(&[TooLarge, TooLarge]), Some(TooLarge));
    assert_eq!(
        Refusal::combine(&[TooLarge, QueueFull, Deadline]),
        Some(QueueFull)
    );
    assert_eq!(Refusal::combine(&[]), None);
    assert_eq!(QueueFull.reason(), RejectReason::QueueLimit);
}

#[test]
fn a_request_every_cluster_refuses_is_offered_to_peers_before_it_is_rejected() {
    // Paper 001 §4.1: Grid 0 has a contract; its cluster refuses request 1.
    let mut gw = gateway(0);
    assert!(gw.on(Input::Submit(req(1)), EmuTime::ZERO).is_empty());
    let placed = gw.on(Input::Tick, EmuTime::from_secs(1));
    assert!(placed.iter().any(|e| matches!(e, Effect::Place { .. })));
    let refused = Input::Unplaced {
        req: req(1),
        refusal: Some(Refusal::Deadline),
    };
    assert!(
        gw.on(refused.clone(), EmuTime::ZERO).is_empty(),
        "not rejected yet"
    );
    let round = gw.on(Input::Tick, EmuTime::from_secs(60));
    let offer = round.iter().find_map(|e| match e {
        Effect::Send {
            msg: PeerMsg::Offer {
                negotiation, items, ..
            },
            ..
        } if items.iter().any(|i| i.req.id == RequestId(1)) => Some(*negotiation),
        _ => None,
    });
    let n = offer.expect("request 1 is offered to the peer");
    // No answer comes (sent again once, then given up): the next round serves it at home.
    gw.on(Input::OfferTimeout(n), EmuTime::from_secs(90));
    gw.on(Input::OfferTimeout(n), EmuTime::from_secs(120));
    let next = gw.on(Input::Tick, EmuTime::from_secs(120));
    assert!(next
        .iter()
        .any(|e| matches!(e, Effect::Place { req, .. } if req.id == RequestId(1))));
    // Refused there again: now it is rejected, once and for all — for peering's silence,
    // not for the clusters' deadline refusal (the peer was the last hope).
    let again = gw.on(refused, EmuTime::from_secs(121));
    assert!(matches!(
        &again[..],
        [
            Effect::Observe(Observation::Rejected(
                RequestId(1),
                RejectReason::PeeringTimeout
            )),
            ..
        ]
    ));
}

#[test]
fn a_redirected_request_is_served_once_and_paid_for_what_the_provider_receives() {
    let mut gws = [gateway(0), gateway(1)];
    publish(&mut gws[0], 0, 0); // Grid 0 is full: its requests queue for peering
    publish(&mut gws[1], 1, 4);
    for id in 1..=3 {
        assert!(gws[0].on(Input::Submit(req(id)), EmuTime::ZERO).is_empty());
    }
    let round = gws[0].on(Input::Tick, EmuTime::from_secs(60));
    let rest = settle(&mut gws, round.into_iter().map(|e| (0, e)).collect());
    let paid: f64 = observed(&rest)
        .iter()
        .filter_map(|(_, o)| match o {
            Observation::Paid { amount, .. } => Some(*amount),
            _ => None,
        })
        .sum();
    let received: f64 = observed(&rest)
        .iter()
        .filter_map(|(_, o)| match o {
            Observation::Received { amount, .. } => Some(*amount),
            _ => None,
        })
        .sum();
    assert!(paid > 0.0, "some request is redirected: {rest:?}");
    assert!(
        (paid - received).abs() < 1e-9,
        "{paid} paid, {received} received"
    );
    // Every request is placed exactly once, on one Grid or the other.
    let mut placed: Vec<RequestId> = places(&rest).iter().map(|p| p.1).collect();
    placed.sort();
    assert_eq!(placed, vec![RequestId(1), RequestId(2), RequestId(3)]);
    // What Grid 1 places are exactly the requests it was paid to take over.
    let mut served_for_peer: Vec<RequestId> = places(&rest)
        .iter()
        .filter(|p| p.0 == 1)
        .map(|p| p.1)
        .collect();
    let mut taken: Vec<RequestId> = observed(&rest)
        .iter()
        .filter_map(|(g, o)| match o {
            Observation::Received { lease, .. } if *g == 1 => Some(*lease),
            _ => None,
        })
        .collect();
    served_for_peer.sort();
    taken.sort();
    assert_eq!(served_for_peer, taken);
}

#[test]
fn a_duplicate_redirection_is_acknowledged_again_but_served_once() {
    let mut gws = [gateway(0), gateway(1)];
    publish(&mut gws[0], 0, 0);
    publish(&mut gws[1], 1, 4);
    gws[0].on(Input::Submit(req(1)), EmuTime::ZERO);
    // The first protocol message sent (a round also sends this Grid's price first).
    let sent = |effects: Vec<Effect>| {
        effects.into_iter().find_map(|e| match e {
            Effect::Send { msg, .. } if !matches!(msg, PeerMsg::Price { .. }) => Some(msg),
            _ => None,
        })
    };
    let offer = sent(gws[0].on(Input::Tick, EmuTime::from_secs(60))).expect("an offer");
    let offered = Input::Peer {
        from: GridId(0),
        msg: offer,
    };
    assert!(
        gws[1].on(offered, EmuTime::ZERO).is_empty(),
        "held for the round"
    );
    let answer = sent(gws[1].on(Input::Tick, EmuTime::from_secs(1))).expect("an answer");
    let answered = Input::Peer {
        from: GridId(1),
        msg: answer,
    };
    let redirect = sent(gws[0].on(answered, EmuTime::ZERO)).expect("a redirection");
    assert!(matches!(redirect, PeerMsg::Redirect { .. }));
    let deliver = |gw: &mut Gateway| {
        let input = Input::Peer {
            from: GridId(0),
            msg: redirect.clone(),
        };
        gw.on(input, EmuTime::from_secs(2))
    };
    let first = deliver(&mut gws[1]);
    let again = deliver(&mut gws[1]);
    let acks = |effects: &[Effect]| {
        effects
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Effect::Send {
                        msg: PeerMsg::RedirectAck { accepted: true, .. },
                        ..
                    }
                )
            })
            .count()
    };
    let serves = |effects: &[Effect]| {
        effects
            .iter()
            .filter(|e| matches!(e, Effect::Place { .. }))
            .count()
    };
    assert_eq!((acks(&first), serves(&first)), (1, 1));
    assert_eq!((acks(&again), serves(&again)), (1, 0));
}

#[test]
fn an_unanswered_offer_is_retried_then_its_requests_served_at_home() {
    let mut gw = gateway(0);
    publish(&mut gw, 0, 0);
    gw.on(Input::Submit(req(1)), EmuTime::ZERO);
    let round = gw.on(Input::Tick, EmuTime::from_secs(60));
    let offers = |effects: &[Effect]| -> Vec<NegotiationId> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Send {
                    msg: PeerMsg::Offer { negotiation, .. },
                    ..
                } => Some(*negotiation),
                _ => None,
            })
            .collect()
    };
    let n = offers(&round)[0];
    assert!(round.iter().any(|e| matches!(
        e,
        // The provider's longest round (60 s) plus the offer timeout (30 s).
        Effect::Timer { at, timer: Timer::Offer(m) } if *at == EmuTime::from_secs(150) && *m == n
    )));
    // One retry (`retries = 1`), then the peer is given up and the offer settled.
    let retry = gw.on(Input::OfferTimeout(n), EmuTime::from_secs(150));
    assert_eq!(offers(&retry), vec![n]);
    let given_up = gw.on(Input::OfferTimeout(n), EmuTime::from_secs(240));
    assert!(offers(&given_up).is_empty());
    assert!(given_up
        .iter()
        .any(|e| matches!(e, Effect::Observe(Observation::OfferSettled(m)) if *m == n)));
    let next = gw.on(Input::Tick, EmuTime::from_secs(240));
    assert!(next
        .iter()
        .any(|e| matches!(e, Effect::Place { req, .. } if req.id == RequestId(1))));
}

/// The peer messages among `effects`.
fn sent(effects: &[Effect]) -> Vec<&PeerMsg> {
    (effects.iter())
        .filter_map(|e| match e {
            Effect::Send { msg, .. } if !matches!(msg, PeerMsg::Price { .. }) => Some(msg),
            _ => None,
        })
        .collect()
}

#[test]
fn an_answer_after_the_requester_gave_up_is_declined_at_once_and_frees_the_ticket() {
    // Grid 0 offers request 1 to Grid 1, whose round comes only after Grid 0 has spent
    // its retry and given the offer up (request 1 went home).
    let mut gws = [gateway(0), gateway(1)];
    publish(&mut gws[0], 0, 0);
    publish(&mut gws[1], 1, 4);
    gws[0].on(Input::Submit(req(1)), EmuTime::ZERO);
    let round = gws[0].on(Input::Tick, EmuTime::from_secs(60));
    let Some(&PeerMsg::Offer { negotiation: n, .. }) = sent(&round).first().copied() else {
        panic!("an offer: {round:?}")
    };
    let offer = sent(&round)[0].clone();
    let from0 = |msg: PeerMsg| Input::Peer {
        from: GridId(0),
        msg,
    };
    assert!(gws[1].on(from0(offer), EmuTime::from_secs(60)).is_empty());
    gws[0].on(Input::OfferTimeout(n), EmuTime::from_secs(150));
    gws[0].on(Input::OfferTimeout(n), EmuTime::from_secs(240));
    let answer = gws[1].on(Input::Tick, EmuTime::from_secs(250));
    let answer = sent(&answer)[0].clone();
    assert!(matches!(&answer, PeerMsg::Answer { answers, .. }
            if matches!(answers[..], [(RequestId(1), Answer::Accept { .. })])));
    // The late accept is declined at once, marked late, and counted.
    let reply = gws[0].on(
        Input::Peer {
            from: GridId(1),
            msg: answer,
        },
        EmuTime::from_secs(250),
    );
    let decline = sent(&reply)[0].clone();
    assert!(
        matches!(decline, PeerMsg::Decline { negotiation, lease: RequestId(1), late: true, .. } if negotiation == n)
    );
    assert!(reply.iter().any(|e| matches!(e,
            Effect::Observe(Observation::Outcomes(o)) if o.late_declined == 1 && o.accepted == 0)));
    assert!(
        !reply.iter().any(|e| matches!(e, Effect::Place { .. })),
        "nothing served"
    );
    // The provider releases the ticket then, long before its expiry (600 s): a
    // redirection under it would now be refused.
    assert!(gws[1]
        .on(from0(decline), EmuTime::from_secs(250))
        .is_empty());
    let redirect = PeerMsg::Redirect {
        negotiation: n,
        req: req(1),
        price: 1.0,
    };
    let refused = gws[1].on(from0(redirect), EmuTime::from_secs(251));
    assert!(matches!(
        sent(&refused)[..],
        [PeerMsg::RedirectAck {
            accepted: false,
            ..
        }]
    ));
}

#[test]
fn a_report_from_the_provider_stands_for_a_lost_acknowledgement() {
    // Grid 1 takes request 1 over, but its acknowledgement is lost; its report that the
    // request started is the proof: Grid 0 pays and stops resending the redirection.
    let mut gws = [gateway(0), gateway(1)];
    publish(&mut gws[0], 0, 0);
    publish(&mut gws[1], 1, 4);
    gws[0].on(Input::Submit(req(1)), EmuTime::ZERO);
    let offer = sent(&gws[0].on(Input::Tick, EmuTime::from_secs(60)))[0].clone();
    let from = |g: u16, msg: PeerMsg| Input::Peer {
        from: GridId(g),
        msg,
    };
    gws[1].on(from(0, offer), EmuTime::from_secs(60));
    let answer = sent(&gws[1].on(Input::Tick, EmuTime::from_secs(70)))[0].clone();
    let redirect = sent(&gws[0].on(from(1, answer), EmuTime::from_secs(70)))[0].clone();
    let PeerMsg::Redirect { negotiation, .. } = redirect else {
        panic!("a redirection: {redirect:?}")
    };
    let taken = gws[1].on(from(0, redirect), EmuTime::from_secs(70));
    let paid = |effects: &[Effect]| {
        (effects.iter())
            .filter(|e| matches!(e, Effect::Observe(Observation::Paid { to: GridId(1), .. })))
            .count()
    };
    assert!(matches!(
        sent(&taken)[..],
        [PeerMsg::RedirectAck { accepted: true, .. }]
    ));
    let report = PeerMsg::LeaseReport {
        lease: RequestId(1),
        ended: None,
        attempt: 0,
    };
    let got = gws[0].on(from(1, report.clone()), EmuTime::from_secs(80));
    assert_eq!(paid(&got), 1);
    assert!(got.iter().any(|e| matches!(e,
            Effect::Cancel(Timer::Redirect(n, RequestId(1))) if *n == negotiation)));
    assert!(gws[0]
        .on(
            Input::RedirectTimeout(RequestId(1)),
            EmuTime::from_secs(100)
        )
        .is_empty());
    // Paid once: a second report, or the acknowledgement arriving late, pays nothing more.
    assert_eq!(paid(&gws[0].on(from(1, report), EmuTime::from_secs(90))), 0);
    let ack = sent(&taken)[0].clone();
    assert_eq!(paid(&gws[0].on(from(1, ack), EmuTime::from_secs(95))), 0);
}

/// When each timer of `effects` named by `which` is due, in seconds.
fn timers(effects: &[Effect], which: impl Fn(&Timer) -> bool) -> Vec<u64> {
    (effects.iter())
        .filter_map(|e| match e {
            Effect::Timer { at, timer } if which(timer) => Some(at.as_micros() / 1_000_000),
            _ => None,
        })
        .collect()
}

#[test]
fn unacknowledged_redirections_and_reports_are_resent_at_doubling_intervals() {
    let mut gws = [gateway(0), gateway(1)];
    publish(&mut gws[0], 0, 0);
    publish(&mut gws[1], 1, 4);
    gws[0].on(Input::Submit(req(1)), EmuTime::ZERO);
    // The offer reaches the provider, which answers at its round; the answer makes the
    // requester redirect, and that redirection is never acknowledged.
    let round = gws[0].on(Input::Tick, EmuTime::from_secs(60));
    let offer = round.into_iter().find_map(|e| match e {
        Effect::Send {
            msg: msg @ PeerMsg::Offer { .. },
            ..
        } => Some(msg),
        _ => None,
    });
    let from0 = |msg| Input::Peer {
        from: GridId(0),
        msg,
    };
    gws[1].on(from0(offer.expect("an offer")), EmuTime::from_secs(61));
    let answered = gws[1].on(Input::Tick, EmuTime::from_secs(61));
    let answer = answered.into_iter().find_map(|e| match e {
        Effect::Send {
            msg: msg @ PeerMsg::Answer { .. },
            ..
        } => Some(msg),
        _ => None,
    });
    let from1 = Input::Peer {
        from: GridId(1),
        msg: answer.expect("an answer"),
    };
    let redirect = |t: &Timer| matches!(t, Timer::Redirect(..));
    let mut now = 62;
    let mut due = timers(&gws[0].on(from1, EmuTime::from_secs(now)), redirect);
    let (mut waits, mut resent) = (Vec::new(), None);
    for _ in 0..4 {
        assert_eq!(due.len(), 1, "one redirection timer: {due:?}");
        waits.push(due[0] - now);
        now = due[0];
        let again = gws[0].on(
            Input::RedirectTimeout(RequestId(1)),
            EmuTime::from_secs(now),
        );
        due = timers(&again, redirect);
        resent = again.into_iter().find_map(|e| match e {
            Effect::Send {
                msg: msg @ PeerMsg::Redirect { .. },
                ..
            } => Some(msg),
            _ => None,
        });
        assert!(resent.is_some(), "resent at {now} s");
    }
    assert_eq!(waits, vec![30, 60, 120, 240]);
    // The last copy reaches the provider; the end of the lease is reported to a
    // requester that never acknowledges, with the same back-off.
    let provider = &mut gws[1];
    provider.on(
        from0(resent.expect("a redirection")),
        EmuTime::from_secs(now),
    );
    let ended = Input::LeaseEnded {
        lease: RequestId(1),
        state: RequestState::Completed,
    };
    let report = |t: &Timer| matches!(t, Timer::Report(_));
    let mut now = 5000;
    let mut due = timers(&provider.on(ended, EmuTime::from_secs(now)), report);
    let mut waits = Vec::new();
    for _ in 0..4 {
        assert_eq!(due.len(), 1, "one report timer: {due:?}");
        waits.push(due[0] - now);
        now = due[0];
        let again = provider.on(Input::ReportTimeout(RequestId(1)), EmuTime::from_secs(now));
        due = timers(&again, report);
    }
    assert_eq!(waits, vec![30, 60, 120, 240]);
}

#[test]
fn the_end_of_a_redirected_lease_is_reported_until_acknowledged() {
    let mut gws = [gateway(0), gateway(1)];
    publish(&mut gws[0], 0, 0);
    publish(&mut gws[1], 1, 4);
    gws[0].on(Input::Submit(req(1)), EmuTime::ZERO);
    let round = gws[0].on(Input::Tick, EmuTime::from_secs(60));
    let rest = settle(&mut gws, round.into_iter().map(|e| (0, e)).collect());
    assert_eq!(places(&rest), vec![(1, RequestId(1))]);
    let provider = &mut gws[1];
    let ended = Input::LeaseEnded {
        lease: RequestId(1),
        state: RequestState::Completed,
    };
    let reports = |effects: &[Effect], attempt: u32| {
        effects.iter().any(|e| {
            matches!(e, Effect::Send {
                    to: GridId(0),
                    msg: PeerMsg::LeaseReport {
                        lease: RequestId(1),
                        ended: Some(RequestState::Completed),
                        attempt: a,
                    },
                } if *a == attempt)
        })
    };
    let first = provider.on(ended, EmuTime::from_secs(500));
    assert!(reports(&first, 0));
    let again = provider.on(Input::ReportTimeout(RequestId(1)), EmuTime::from_secs(530));
    assert!(reports(&again, 1));
    let ack = Input::Peer {
        from: GridId(0),
        msg: PeerMsg::LeaseReportAck {
            lease: RequestId(1),
        },
    };
    // The acknowledgement calls the pending report timeout off; a stale one does nothing.
    assert!(matches!(
        &provider.on(ack, EmuTime::from_secs(531))[..],
        [Effect::Cancel(Timer::Report(RequestId(1)))]
    ));
    assert!(provider
        .on(Input::ReportTimeout(RequestId(1)), EmuTime::from_secs(560))
        .is_empty());
}
