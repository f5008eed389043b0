//! An IGG's peering state, pure: as a *requester*, the queue of requests it wants to offload,
//! its contracts (tried in ascending price), its outstanding offers and redirections with
//! their timeouts and retries; as a *provider*, its tickets and the requests it serves for
//! peers; and what each redirection costs. Every input is a method returning the messages
//! to send ([`Out`]); the gateway (`igg::gateway`) turns them into effects and timeouts.
//!
//! Robustness under faults: offers time out and are retried a bounded number of times, and a
//! request a peer's answer leaves out is offered to that peer again at most as often;
//! redirections are resent until acknowledged, each wait twice the one before
//! (`igg::backoff`); answers and redirections are idempotent (duplicates are answered again,
//! never acted on twice); tickets expire. A requester that has sent a redirection never serves the
//! request itself unless the provider refuses it explicitly, so a lost acknowledgement cannot
//! make two Grids serve one request (the provider's report on the request stands for a lost
//! acknowledgement: `redirecting_to`). An answer that comes after the requester gave its offer
//! up is declined at once, so the provider's ticket is released without waiting for expiry.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::negotiation::{
    AnswerPolicy, CheapestContract, ContractView, CounterAsk, MarginalCost, OfferAsk, OfferPlan,
    OfferPolicy, PlanAsk,
};
use super::peering::{
    Answer, CostModel, NegotiationId, OfferState, PriceRange, Ticket, TicketError, Tickets,
};
use super::promise::{self, Promises};
pub(crate) use super::protocol::Item;
use super::protocol::PeerMsg;
use crate::model::{GridId, LeaseRequest, RequestId};
use crate::time::{EmuDuration, EmuTime};

/// A contract as the requester sees it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Contract {
    /// The provider.
    pub peer: GridId,
    /// Its current price range.
    pub range: PriceRange,
}

/// What a redirection taken by the provider costs the requester.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Payment {
    /// Resource units redirected.
    pub units: f64,
    /// Money paid for them.
    pub amount: f64,
}

/// What the broker wants sent or done.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Out {
    /// Send `msg` to the IGG of Grid `peer` (offers and redirections are timed out by the
    /// gateway after `offer_timeout`).
    Send {
        /// The other IGG.
        peer: GridId,
        /// What to tell it.
        msg: PeerMsg,
    },
    /// Serve this request here (place it on this Grid's clusters).
    ServeLocally(LeaseRequest),
    /// Serve this peer's request here (it was redirected to us).
    ServeForPeer(LeaseRequest),
}

#[derive(Clone, Debug)]
struct Queued {
    item: Item,
    /// What serving it at home costs, as evaluated at the last round (unbounded for a
    /// request no cluster of this Grid would take).
    home_cost: f64,
    /// Every cluster of this Grid refused it: home cannot serve it at any cost.
    unservable: bool,
    tried: BTreeSet<GridId>,
    /// The plan its current offer follows (set when it is offered).
    plan: Option<OfferPlan>,
    /// How many answers of its current peer left it out: past `retries`, that peer counts
    /// as tried (a peer that never answers about it cannot have it offered every round).
    unanswered: u32,
}

impl Queued {
    /// `peer` has had its chance with this request: it is not offered to it again.
    fn done_with(&mut self, peer: GridId) {
        self.tried.insert(peer);
        self.unanswered = 0;
    }
}

/// An offer a provider holds until its next evaluation (paper 004 §5.2).
#[derive(Clone, Debug)]
struct Pending {
    from: GridId,
    negotiation: NegotiationId,
    items: Vec<Item>,
    price: f64,
    max: f64,
}

#[derive(Clone, Debug)]
struct Outbound {
    peer: GridId,
    items: BTreeMap<RequestId, (Queued, OfferState)>,
    price: f64,
    max: f64,
    retries: u32,
}

#[derive(Clone, Debug)]
struct Redirecting {
    peer: GridId,
    negotiation: NegotiationId,
    queued: Queued,
    price: f64,
    retries: u32,
}

/// Counts of a requester's negotiations: `offers` and `timeouts` per offer message (one
/// offer carries a batch of requests), the others per request offered (a request offered to
/// two peers in turn counts in each negotiation) — one row each of `igemu trace
/// --negotiations`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Outcomes {
    /// Offer messages sent (each a batch of requests; a resent offer counts again).
    pub offers: u64,
    /// Requests the provider accepted at the offered price.
    pub accepted: u64,
    /// Requests whose counter-offer was taken.
    pub countered_taken: u64,
    /// Requests whose counter-offer was declined.
    pub countered_declined: u64,
    /// Requests whose offer the provider rejected.
    pub rejected: u64,
    /// Offer messages that timed out (each a batch; a resent offer's timeout counts again).
    pub timeouts: u64,
    /// Requests redirected: the provider acknowledged taking them over.
    pub redirected: u64,
    /// Of those, requests every cluster of the provider then refused at admission (the
    /// provider reported them rejected): they end rejected, outcome
    /// `rejected-after-redirect`.
    pub rejected_after_redirect: u64,
    /// Requests accepted or counter-offered in an answer that came after this Grid gave the
    /// offer up (timed out, retries spent) or settled it: declined at once (`PeerDecline`
    /// with verdict `late`), so the provider's ticket is released without waiting for its
    /// expiry. Counted per answer: a duplicated answer counts again.
    pub late_declined: u64,
}

/// An offer as the provider receives it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Offered<'a> {
    /// The requester.
    pub from: GridId,
    /// Negotiation id.
    pub negotiation: NegotiationId,
    /// The offered requests.
    pub items: &'a [Item],
    /// Offered unit price.
    pub price: f64,
    /// The contract's maximum unit price.
    pub max: f64,
}

/// The provider's standing when it evaluates offers: its cost model and, per request, its
/// load (0–1, before tickets) and capacity in resource units over the request's cost window
/// (paper 004 §5.2: up to the request's deadline or virtual deadline).
pub(crate) struct Standing<'a> {
    /// Its cost model.
    pub cost: &'a CostModel,
    /// Load and capacity over the window of a request.
    pub window: &'a dyn Fn(&LeaseRequest) -> (f64, f64),
    /// What its clusters can promise: a request they cannot run by its deadline is rejected
    /// whatever the policy would answer; `None`: not checked.
    pub promises: Option<&'a mut Promises>,
}

/// An IGG's peering state.
pub(crate) struct Broker {
    me: GridId,
    /// How it answers offers (provider side).
    answer: Box<dyn AnswerPolicy>,
    /// Whom it offers requests to (requester side).
    offer: Box<dyn OfferPolicy>,
    next: u64,
    /// Contracts in ascending minimum price.
    contracts: Vec<Contract>,
    queue: VecDeque<Queued>,
    outbound: BTreeMap<NegotiationId, Outbound>,
    redirecting: BTreeMap<RequestId, Redirecting>,
    retries: u32,
    ticket_ttl: EmuDuration,
    /// Tickets issued as a provider.
    tickets: Tickets,
    /// Requests served for peers: origin and price.
    foreign: BTreeMap<RequestId, (GridId, NegotiationId)>,
    /// Negotiation outcomes.
    outcomes: Outcomes,
    /// Answers already given, by (requester, negotiation), for duplicate offers.
    answered: BTreeMap<(GridId, NegotiationId), Vec<(RequestId, Answer)>>,
    /// Offers received and not yet evaluated, in arrival order.
    pending: Vec<Pending>,
    /// Redirections taken over, kept after the request ends (persistent, like `foreign`), so
    /// that a late duplicate is acknowledged again rather than refused — a refusal would make
    /// the requester serve the request a second time.
    taken: BTreeSet<(NegotiationId, RequestId)>,
    /// Requests every cluster refused, by how many peers declined them and how many let their
    /// offers time out: why such a request is finally rejected (kept until it is asked).
    verdicts: BTreeMap<RequestId, PeerVerdicts>,
}

/// How the peers a request every cluster refused was offered to answered.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct PeerVerdicts {
    declined: u32,
    timed_out: u32,
}

/// A copy of a broker's state (to undo an input, [`Broker::restore`]): with the shipped
/// policies in place of its own (a user's policy need not be clonable; a copy never decides).
impl Clone for Broker {
    fn clone(&self) -> Broker {
        Broker {
            me: self.me,
            answer: Box::new(MarginalCost),
            offer: Box::new(CheapestContract),
            next: self.next,
            contracts: self.contracts.clone(),
            queue: self.queue.clone(),
            outbound: self.outbound.clone(),
            redirecting: self.redirecting.clone(),
            retries: self.retries,
            ticket_ttl: self.ticket_ttl,
            tickets: self.tickets.clone(),
            foreign: self.foreign.clone(),
            outcomes: self.outcomes.clone(),
            answered: self.answered.clone(),
            pending: self.pending.clone(),
            taken: self.taken.clone(),
            verdicts: self.verdicts.clone(),
        }
    }
}

impl Broker {
    /// The broker of Grid `me` with contracts (any order), retry bound and ticket lifetime.
    pub(crate) fn new(
        me: GridId,
        mut contracts: Vec<Contract>,
        retries: u32,
        ticket_ttl: EmuDuration,
    ) -> Broker {
        contracts.sort_by(|a, b| {
            a.range
                .min
                .total_cmp(&b.range.min)
                .then(a.peer.cmp(&b.peer))
        });
        Broker {
            me,
            answer: Box::new(MarginalCost),
            offer: Box::new(CheapestContract),
            next: 0,
            contracts,
            queue: VecDeque::new(),
            outbound: BTreeMap::new(),
            redirecting: BTreeMap::new(),
            retries,
            ticket_ttl,
            tickets: Tickets::default(),
            foreign: BTreeMap::new(),
            outcomes: Outcomes::default(),
            answered: BTreeMap::new(),
            pending: Vec::new(),
            verdicts: BTreeMap::new(),
            taken: BTreeSet::new(),
        }
    }

    /// The broker with these negotiation policies (instead of the shipped ones).
    pub(crate) fn with_policies(
        mut self,
        answer: Box<dyn AnswerPolicy>,
        offer: Box<dyn OfferPolicy>,
    ) -> Broker {
        self.answer = answer;
        self.offer = offer;
        self
    }

    /// Takes this broker's policies out (placeholders, the shipped ones, left in).
    fn take_policies(&mut self) -> (Box<dyn AnswerPolicy>, Box<dyn OfferPolicy>) {
        (
            std::mem::replace(&mut self.answer, Box::new(MarginalCost)),
            std::mem::replace(&mut self.offer, Box::new(CheapestContract)),
        )
    }

    /// Puts back the state of `earlier`, a copy taken before ([`Clone`]), keeping this
    /// broker's policies.
    pub(crate) fn restore(&mut self, earlier: Broker) {
        let (answer, offer) = self.take_policies();
        *self = earlier.with_policies(answer, offer);
    }

    /// Whether this IGG has any contract as a requester.
    pub(crate) fn has_contracts(&self) -> bool {
        !self.contracts.is_empty()
    }

    /// Replaces the contracts' prices (periodic update).
    pub(crate) fn update_prices(&mut self, mut contracts: Vec<Contract>) {
        contracts.sort_by(|a, b| {
            a.range
                .min
                .total_cmp(&b.range.min)
                .then(a.peer.cmp(&b.peer))
        });
        self.contracts = contracts;
    }

    /// Requests waiting to be offered.
    pub(crate) fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Queues a request until the next round, which offers it to peers or serves it here.
    pub(crate) fn enqueue(&mut self, req: LeaseRequest, units: f64) {
        self.queue.push_back(Queued {
            item: Item { req, units },
            home_cost: 0.0,
            unservable: false,
            tried: BTreeSet::new(),
            plan: None,
            unanswered: 0,
        });
    }

    /// Queues a request every cluster of this Grid refused: it is offered to every peer
    /// (any contract is worth trying, any counter-offer worth taking) before it is rejected.
    pub(crate) fn enqueue_unservable(&mut self, req: LeaseRequest, units: f64) {
        self.queue.push_back(Queued {
            item: Item { req, units },
            home_cost: f64::INFINITY,
            unservable: true,
            tried: BTreeSet::new(),
            plan: None,
            unanswered: 0,
        });
    }

    /// Why a request every cluster refused, then offered to the peers, is rejected: declined
    /// by a peer, or else timed out; `None` if no peer was tried for it. Forgets it.
    pub(crate) fn peering_reason(
        &mut self,
        lease: RequestId,
    ) -> Option<crate::model::RejectReason> {
        use crate::model::RejectReason;
        let v = self.verdicts.remove(&lease)?;
        if v.declined > 0 {
            Some(RejectReason::PeersDeclined)
        } else if v.timed_out > 0 {
            Some(RejectReason::PeeringTimeout)
        } else {
            None
        }
    }

    fn new_negotiation(&mut self) -> NegotiationId {
        self.next += 1;
        (u64::from(self.me.0) << 32) | self.next
    }

    /// A negotiation round (paper 004 §5.2): each queued request's home cost is evaluated
    /// now by `home_cost` — `None` when this Grid is not overloaded for it, and it is served
    /// here — then the offer policy plans each of the others: the first peer of its plan not
    /// yet tried gets the offer. Offers go out one batch per contract (in ascending price) and
    /// opening price; the requests no plan offers are served locally.
    pub(crate) fn round(
        &mut self,
        now: EmuTime,
        mut home_cost: impl FnMut(&Item) -> Option<f64>,
    ) -> Vec<Out> {
        let mut out = Vec::new();
        let mut waiting = Vec::with_capacity(self.queue.len());
        for mut q in self.queue.drain(..) {
            let cost = if q.unservable {
                Some(f64::INFINITY)
            } else {
                home_cost(&q.item)
            };
            match cost {
                Some(c) => {
                    q.home_cost = c;
                    waiting.push(q);
                }
                None => out.push(Out::ServeLocally(q.item.req)),
            }
        }
        for q in &mut waiting {
            // A request nobody can run by its deadline any more is not offered.
            q.plan = promise::still_possible(&q.item.req, now)
                .then(|| self.plan_for(q, now))
                .flatten();
        }
        let contracts = self.contracts.clone();
        for c in &contracts {
            // Each opening price asked of this contract, in queue order: one batch each.
            while let Some(price) = waiting
                .iter()
                .find_map(|q| q.plan.filter(|p| p.peer == c.peer).map(|p| p.price))
            {
                let (offer, keep): (Vec<Queued>, Vec<Queued>) =
                    waiting.into_iter().partition(|q| {
                        matches!(q.plan, Some(p) if p.peer == c.peer && p.price.to_bits() == price.to_bits())
                    });
                waiting = keep;
                self.send_offer(c, price, offer, &mut out);
            }
        }
        out.extend(waiting.into_iter().map(|q| Out::ServeLocally(q.item.req)));
        out
    }

    /// The first step of the offer policy's plan for `q` that names a peer it has not tried
    /// under a contract this Grid holds.
    fn plan_for(&mut self, q: &Queued, now: EmuTime) -> Option<OfferPlan> {
        let views: Vec<ContractView> = self
            .contracts
            .iter()
            .map(|c| ContractView {
                peer: c.peer,
                min: c.range.min,
                max: c.range.max,
                tried: q.tried.contains(&c.peer),
            })
            .collect();
        let plan = self.offer.plan(&PlanAsk {
            now,
            request: &q.item.req,
            units: q.item.units,
            home_cost: q.home_cost,
            contracts: &views,
        });
        plan.into_iter()
            .find(|p| !q.tried.contains(&p.peer) && views.iter().any(|v| v.peer == p.peer))
    }

    /// Offers `offer` to contract `c`'s provider at unit `price` (one negotiation).
    fn send_offer(&mut self, c: &Contract, price: f64, offer: Vec<Queued>, out: &mut Vec<Out>) {
        let negotiation = self.new_negotiation();
        let items: Vec<Item> = offer.iter().map(|q| q.item.clone()).collect();
        out.push(Out::Send {
            peer: c.peer,
            msg: PeerMsg::Offer {
                negotiation,
                items,
                price,
                max: c.range.max,
            },
        });
        self.outcomes.offers += 1;
        let entries = offer
            .into_iter()
            .map(|q| (q.item.req.id, (q, OfferState::Offered)))
            .collect();
        self.outbound.insert(
            negotiation,
            Outbound {
                peer: c.peer,
                items: entries,
                price,
                max: c.range.max,
                retries: 0,
            },
        );
    }

    /// The provider receives an offer: held until the next evaluation. A duplicate of an
    /// offer already answered gets the same answers again at once; a duplicate of one still
    /// held is dropped.
    pub(crate) fn receive_offer(&mut self, offer: &Offered<'_>) -> Option<Out> {
        let (from, negotiation) = (offer.from, offer.negotiation);
        if let Some(prev) = self.answered.get(&(from, negotiation)) {
            return Some(Out::Send {
                peer: from,
                msg: PeerMsg::Answer {
                    negotiation,
                    answers: prev.clone(),
                },
            });
        }
        let held = self
            .pending
            .iter()
            .any(|p| p.from == from && p.negotiation == negotiation);
        if !held {
            self.pending.push(Pending {
                from,
                negotiation,
                items: offer.items.to_vec(),
                price: offer.price,
                max: offer.max,
            });
        }
        None
    }

    /// The requests queued for the next round.
    pub(crate) fn queued_items(&self) -> impl Iterator<Item = &Item> {
        self.queue.iter().map(|q| &q.item)
    }

    /// The requests of the offers held for evaluation.
    pub(crate) fn pending_requests(&self) -> impl Iterator<Item = &LeaseRequest> {
        self.pending
            .iter()
            .flat_map(|p| p.items.iter().map(|it| &it.req))
    }

    /// Offers held for evaluation.
    pub(crate) fn pending_offers(&self) -> usize {
        self.pending.len()
    }

    /// The provider's evaluation (paper 004 §5.2): the offers held since the last one, in
    /// decreasing order of offered price (the earliest first among equals), each request
    /// answered from its cost at the provider's load over its window plus the units of the
    /// tickets already held — tickets issued earlier in this evaluation included.
    pub(crate) fn evaluate_offers(&mut self, own: &mut Standing<'_>, now: EmuTime) -> Vec<Out> {
        let mut offers = std::mem::take(&mut self.pending);
        offers.sort_by(|a, b| b.price.total_cmp(&a.price));
        offers
            .iter()
            .map(|p| {
                let offered = Offered {
                    from: p.from,
                    negotiation: p.negotiation,
                    items: &p.items,
                    price: p.price,
                    max: p.max,
                };
                self.answer_offer(&offered, own, now)
            })
            .collect()
    }

    /// The provider's answers to one offer, issuing tickets for accepts and counter-offers;
    /// the requests are taken in the order offered. A request its clusters cannot run by its
    /// deadline ([`Promises`]) is rejected before the policy is asked. A duplicate gets the
    /// same answers again.
    pub(crate) fn answer_offer(
        &mut self,
        offer: &Offered<'_>,
        own: &mut Standing<'_>,
        now: EmuTime,
    ) -> Out {
        let Offered {
            from,
            negotiation,
            items,
            price,
            max,
        } = *offer;
        if let Some(prev) = self.answered.get(&(from, negotiation)) {
            return Out::Send {
                peer: from,
                msg: PeerMsg::Answer {
                    negotiation,
                    answers: prev.clone(),
                },
            };
        }
        self.tickets.expire(now);
        let mut held = self.tickets.held_units(now);
        let mut answers = Vec::with_capacity(items.len());
        for it in items {
            if own.promises.as_ref().is_some_and(|p| !p.can_keep(&it.req)) {
                answers.push((it.req.id, Answer::Reject));
                continue;
            }
            let (load, capacity) = (own.window)(&it.req);
            let l = (load + held / capacity.max(1.0)).min(1.0);
            let c = own.cost.marginal(it.units, l, capacity);
            let a = self.answer.answer(&OfferAsk {
                now,
                from,
                negotiation,
                request: &it.req,
                units: it.units,
                price,
                max,
                load: l,
                capacity,
                held,
                cost: c,
                unit_cost: own.cost.unit_cost,
            });
            if let Answer::Accept { price: p } | Answer::Counter { price: p } = a {
                self.tickets.issue(Ticket {
                    negotiation,
                    lease: it.req.id,
                    units: it.units,
                    price: p,
                    expires: now + self.ticket_ttl,
                    confirmed: false,
                });
                held += it.units;
                if let Some(p) = own.promises.as_mut() {
                    p.promise(&it.req);
                }
            }
            answers.push((it.req.id, a));
        }
        self.answered.insert((from, negotiation), answers.clone());
        Out::Send {
            peer: from,
            msg: PeerMsg::Answer {
                negotiation,
                answers,
            },
        }
    }

    /// The requester receives `from`'s answers: redirect what was accepted (or
    /// counter-offered and worth taking), decline the rest, and put declined requests back in
    /// the queue. Answers to an offer it no longer waits for are declined at once
    /// ([`Broker::decline_late`]).
    pub(crate) fn on_answers(
        &mut self,
        from: GridId,
        negotiation: NegotiationId,
        answers: &[(RequestId, Answer)],
    ) -> Vec<Out> {
        let Some(ob) = self.outbound.remove(&negotiation) else {
            return self.decline_late(from, negotiation, answers);
        };
        let mut out = Vec::new();
        let mut items = ob.items;
        for (lease, a) in answers {
            let Some((q, state)) = items.remove(lease) else {
                continue;
            };
            let offer = &mut self.offer;
            let next = state.on_answer(*a, |counter| {
                q.plan.is_some_and(|plan| {
                    offer.takes_counter(&CounterAsk {
                        request: &q.item.req,
                        units: q.item.units,
                        home_cost: q.home_cost,
                        counter,
                        plan,
                    })
                })
            });
            self.count_outcome(a, next.redirects().is_some());
            match next.redirects() {
                Some(price) => {
                    out.push(Out::Send {
                        peer: ob.peer,
                        msg: PeerMsg::Redirect {
                            negotiation,
                            req: q.item.req.clone(),
                            price,
                        },
                    });
                    self.redirecting.insert(
                        *lease,
                        Redirecting {
                            peer: ob.peer,
                            negotiation,
                            queued: q,
                            price,
                            retries: 0,
                        },
                    );
                }
                None => {
                    if let Answer::Counter { price } = *a {
                        out.push(Out::Send {
                            peer: ob.peer,
                            msg: PeerMsg::Decline {
                                negotiation,
                                lease: *lease,
                                price,
                                late: false,
                            },
                        });
                    }
                    let mut q = q;
                    q.done_with(ob.peer);
                    if q.unservable {
                        self.verdicts.entry(*lease).or_default().declined += 1;
                    }
                    self.queue.push_back(q);
                }
            }
        }
        self.requeue_unanswered(ob.peer, items);
        out
    }

    /// Requests an answer of `peer` did not mention go back to the queue for this peer again,
    /// as many times as an unanswered offer is retried.
    fn requeue_unanswered(
        &mut self,
        peer: GridId,
        items: BTreeMap<RequestId, (Queued, OfferState)>,
    ) {
        for (_, (mut q, _)) in items {
            q.unanswered += 1;
            if q.unanswered > self.retries {
                q.done_with(peer);
            }
            self.queue.push_back(q);
        }
    }

    /// An answer to an offer this requester gave up on (its timeout and retries ran out and
    /// the requests went on to other peers or home) or settled already (a duplicate): each
    /// accept or counter-offer in it is declined at once, so that the provider releases the
    /// ticket it holds now rather than at its expiry — except for a request being redirected
    /// under this very negotiation (a duplicate answer must not undo its redirection; once
    /// the provider has confirmed a ticket, a decline leaves it be).
    fn decline_late(
        &mut self,
        from: GridId,
        negotiation: NegotiationId,
        answers: &[(RequestId, Answer)],
    ) -> Vec<Out> {
        let mut out = Vec::new();
        for (lease, a) in answers {
            let (Answer::Accept { price } | Answer::Counter { price }) = *a else {
                continue; // a rejection holds nothing
            };
            let redirecting = (self.redirecting.get(lease))
                .is_some_and(|r| r.negotiation == negotiation && r.peer == from);
            if redirecting {
                continue;
            }
            self.outcomes.late_declined += 1;
            out.push(Out::Send {
                peer: from,
                msg: PeerMsg::Decline {
                    negotiation,
                    lease: *lease,
                    price,
                    late: true,
                },
            });
        }
        out
    }

    /// Counts how a provider answered one request and whether the requester redirected it.
    fn count_outcome(&mut self, answer: &Answer, redirected: bool) {
        match (answer, redirected) {
            (Answer::Accept { .. }, _) => self.outcomes.accepted += 1,
            (Answer::Counter { .. }, true) => self.outcomes.countered_taken += 1,
            (Answer::Counter { .. }, false) => self.outcomes.countered_declined += 1,
            (Answer::Reject, _) => self.outcomes.rejected += 1,
        }
    }

    /// An offer's answer did not come in time: resend it, or give this peer up.
    pub(crate) fn offer_timed_out(&mut self, negotiation: NegotiationId) -> Vec<Out> {
        let Some(mut ob) = self.outbound.remove(&negotiation) else {
            return Vec::new();
        };
        self.outcomes.timeouts += 1;
        if ob.retries < self.retries {
            ob.retries += 1;
            let items = ob.items.values().map(|(q, _)| q.item.clone()).collect();
            let out = Out::Send {
                peer: ob.peer,
                msg: PeerMsg::Offer {
                    negotiation,
                    items,
                    price: ob.price,
                    max: ob.max,
                },
            };
            self.outcomes.offers += 1;
            self.outbound.insert(negotiation, ob);
            return vec![out];
        }
        for (lease, (mut q, _)) in ob.items {
            q.done_with(ob.peer);
            if q.unservable {
                self.verdicts.entry(lease).or_default().timed_out += 1;
            }
            self.queue.push_back(q);
        }
        Vec::new()
    }

    /// The provider receives a redirection: confirm the ticket (idempotently) and serve it;
    /// the second value is what the requester pays, the first time the request is taken.
    pub(crate) fn on_redirect(
        &mut self,
        from: GridId,
        negotiation: NegotiationId,
        req: &LeaseRequest,
        price: f64,
        now: EmuTime,
    ) -> (Vec<Out>, Option<f64>) {
        let ack = |accepted| Out::Send {
            peer: from,
            msg: PeerMsg::RedirectAck {
                negotiation,
                lease: req.id,
                accepted,
            },
        };
        if self.taken.contains(&(negotiation, req.id)) {
            // A duplicate of a redirection taken earlier (maybe already ended): ack again.
            return (vec![ack(true)], None);
        }
        match self.tickets.confirm(negotiation, req.id, now) {
            Ok(t) => {
                let received = price * t.units;
                self.foreign.insert(req.id, (from, negotiation));
                self.taken.insert((negotiation, req.id));
                (
                    vec![ack(true), Out::ServeForPeer(req.clone())],
                    Some(received),
                )
            }
            // A duplicate: the request is already ours; acknowledge again.
            Err(TicketError::AlreadyConfirmed) => (vec![ack(true)], None),
            Err(TicketError::Unknown) => (vec![ack(false)], None),
        }
    }

    /// A counter-offer was declined, or an answer came too late for its requester: release
    /// the ticket (unless confirmed: a late decline never undoes a redirection taken).
    pub(crate) fn on_decline(&mut self, negotiation: NegotiationId, lease: RequestId) {
        if self
            .tickets
            .get(negotiation, lease)
            .is_some_and(|t| !t.confirmed)
        {
            self.tickets.release(negotiation, lease);
        }
    }

    /// The requester learns how its redirection of `lease` under `negotiation` went: taken,
    /// it pays (the second value); refused, it serves the request here. An answer about
    /// another redirection of the same request (an earlier one, refused, whose resent copies
    /// are still being answered) is not about this one and changes nothing.
    pub(crate) fn on_redirect_ack(
        &mut self,
        negotiation: NegotiationId,
        lease: RequestId,
        accepted: bool,
    ) -> (Vec<Out>, Option<Payment>) {
        if self
            .redirecting
            .get(&lease)
            .is_none_or(|r| r.negotiation != negotiation)
        {
            return (Vec::new(), None); // a duplicate, or about another redirection
        }
        let Some(r) = self.redirecting.remove(&lease) else {
            return (Vec::new(), None);
        };
        if accepted {
            self.outcomes.redirected += 1;
            let units = r.queued.item.units;
            let payment = Payment {
                units,
                amount: r.price * units,
            };
            (Vec::new(), Some(payment))
        } else {
            if r.queued.unservable {
                self.verdicts.entry(lease).or_default().declined += 1;
            }
            (vec![Out::ServeLocally(r.queued.item.req)], None)
        }
    }

    /// No acknowledgement in time: resend the redirection (never serve it here without an
    /// explicit refusal: the provider may already be running it). The gateway waits twice as
    /// long for each resend's acknowledgement ([`Broker::redirect_resends`]).
    pub(crate) fn redirect_timed_out(&mut self, lease: RequestId) -> Vec<Out> {
        let Some(r) = self.redirecting.get_mut(&lease) else {
            return Vec::new();
        };
        r.retries = r.retries.saturating_add(1);
        vec![Out::Send {
            peer: r.peer,
            msg: PeerMsg::Redirect {
                negotiation: r.negotiation,
                req: r.queued.item.req.clone(),
                price: r.price,
            },
        }]
    }

    /// The Grid that redirected `lease` here, while this Grid serves it.
    pub(crate) fn origin_of(&self, lease: RequestId) -> Option<GridId> {
        self.foreign.get(&lease).map(|f| f.0)
    }

    /// How many times the offer of `negotiation` has been resent (0 before its first
    /// timeout): its next wait backs off by that much.
    pub(crate) fn offer_resends(&self, negotiation: NegotiationId) -> u32 {
        self.outbound.get(&negotiation).map_or(0, |ob| ob.retries)
    }

    /// How many times the redirection of `lease` has been resent (0 before its first
    /// timeout): its next wait backs off by that much.
    pub(crate) fn redirect_resends(&self, lease: RequestId) -> u32 {
        self.redirecting.get(&lease).map_or(0, |r| r.retries)
    }

    /// Negotiation outcomes so far.
    pub(crate) fn outcomes(&self) -> &Outcomes {
        &self.outcomes
    }

    /// A provider reported that a request this Grid redirected to it was rejected there
    /// (every cluster of the provider refused it at admission). Counted once per request:
    /// the caller passes each report's first copy only.
    pub(crate) fn redirect_rejected(&mut self) {
        self.outcomes.rejected_after_redirect += 1;
    }

    /// Whether a redirection of `lease` is still waiting for its acknowledgement.
    pub(crate) fn awaiting_ack(&self, lease: RequestId) -> bool {
        self.redirecting.contains_key(&lease)
    }

    /// The negotiation under which `lease` is being redirected to `peer`, while its
    /// acknowledgement is awaited.
    pub(crate) fn redirecting_to(&self, lease: RequestId, peer: GridId) -> Option<NegotiationId> {
        (self.redirecting.get(&lease))
            .filter(|r| r.peer == peer)
            .map(|r| r.negotiation)
    }

    /// A request this Grid serves for a peer ended: release its ticket; returns its origin.
    pub(crate) fn foreign_ended(&mut self, lease: RequestId) -> Option<GridId> {
        let (origin, negotiation) = self.foreign.remove(&lease)?;
        self.tickets.release(negotiation, lease);
        Some(origin)
    }

    /// Drops volatile state on a crash: unanswered and held offers are forgotten (they will time out
    /// at the requester), unconfirmed tickets lapse. Confirmed tickets, the requests served
    /// for peers and the ledger are kept (the Java IGG persists them in its database).
    pub(crate) fn crash(&mut self, now: EmuTime) {
        self.answered.clear();
        self.pending.clear();
        let expired: Vec<(NegotiationId, RequestId)> = self
            .tickets
            .all()
            .filter(|t| !t.confirmed)
            .map(|t| (t.negotiation, t.lease))
            .collect();
        for (n, l) in expired {
            self.tickets.release(n, l);
        }
        self.tickets.expire(now);
    }
}

#[cfg(test)]
pub(crate) mod tests;
