//! The IGG actor and its post office. Every inbound message is handled in its own task (the
//! Java IGG spawns a thread per message), so handlers interleave at their await points — for
//! example while one request waits for an LRMS's answer, the next is already being placed.
//! Placement decisions come from the pure dispatcher (`crate::igg::dispatch`); peering
//! decisions from the pure broker (`crate::igg::broker`), whose outputs this actor only
//! turns into messages on the (fault-injected) links between IGGs and into timers.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::rc::Rc;

use actix::{Actor, AsyncContext, Context, Handler};

use super::lrms::Lrms;
use super::messages::{
    AdoptLease, AssignLease, CrashOrRestart, FreeSlots, FromPeer, LeaseEnded, LeaseStarted,
    NegotiationTick, OfferTimeout, ProbeStart, RedirectTimeout, RelocateLease, RelocationOutcome,
    RemoteLeaseTimeout, SetPeers, SubmitExternal,
};
use super::users::Users;
use super::{cluster_unit_cost, Emu, Peer};
use crate::igg::broker::{Broker, Contract, Offered, Out, Standing};
use crate::igg::peering::{Answer, CostModel, NegotiationId, PriceRange};
use crate::igg::protocol::{Item, PeerMsg};
use crate::igg::slots::SlotStore;
use crate::igg::{Dispatcher, Loads};
use crate::model::{ClusterId, GridId, LeaseRequest, RequestId, RequestState};
use crate::time::EmuTime;
use crate::trace::ActorId;

/// What this IGG's leases take: per-cluster loads, and each lease's cluster and cores.
type LoadBook = (Loads, BTreeMap<RequestId, (usize, u64)>);

/// A Grid's InterGrid Gateway.
pub struct Igg {
    emu: Rc<Emu>,
    id: ActorId,
    grid: GridId,
    clusters: Vec<(ClusterId, Peer<Lrms>)>,
    dve: Option<Peer<Users>>,
    dispatcher: Dispatcher,
    /// Whether a request refused by the chosen cluster is offered to the others.
    retry: bool,
    /// Cores this IGG's leases take on each cluster (for least-load), and where each runs.
    loads: Rc<RefCell<LoadBook>>,
    /// The free time slots its clusters publish.
    slots: SlotStore,
    /// The other IGGs.
    peers: BTreeMap<GridId, Peer<Igg>>,
    /// Peering state.
    broker: Broker,
    /// This Grid's cost model (eq. 2 from its clusters' prices).
    cost: CostModel,
    /// Provider side: ends of redirected requests not yet acknowledged by their origin.
    remote_pending: BTreeMap<RequestId, (GridId, RequestState, u32)>,
    /// Origin side: redirected requests whose end has been passed on.
    remote_done: BTreeSet<RequestId>,
    /// Whether the IGG is down (crashed).
    down: bool,
    /// The providers' cost models this IGG prices its contracts from.
    providers: BTreeMap<GridId, CostModel>,
    /// When this IGG next tells its peers its unit cost.
    next_price_update: EmuTime,
}

impl Igg {
    /// The IGG of Grid `grid` with these clusters' LRMSs and (if any) its DVE manager.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        grid: GridId,
        clusters: Vec<(ClusterId, Peer<Lrms>)>,
        dve: Option<Peer<Users>>,
        dispatcher: Dispatcher,
        retry: bool,
    ) -> Igg {
        let cores = clusters
            .iter()
            .map(|(c, _)| emu.topo.cluster(*c).cores())
            .collect();
        let loads = Loads {
            busy: vec![0; clusters.len()],
            cores,
        };
        let p = &emu.topo.peering;
        let mut cost = CostModel::from_providers(
            &clusters
                .iter()
                .map(|(c, _)| {
                    (
                        cluster_unit_cost(&emu, *c),
                        emu.topo.cluster(*c).cores() as f64,
                    )
                })
                .collect::<Vec<_>>(),
        );
        cost.steepness = p.steepness;
        let broker = Broker::new(grid, Vec::new(), p.retries, p.ticket_ttl);
        Igg {
            emu,
            id,
            grid,
            clusters,
            dve,
            dispatcher,
            retry,
            loads: Rc::new(RefCell::new((loads, BTreeMap::new()))),
            slots: SlotStore::default(),
            peers: BTreeMap::new(),
            broker,
            cost,
            remote_pending: BTreeMap::new(),
            remote_done: BTreeSet::new(),
            down: false,
            providers: BTreeMap::new(),
            next_price_update: EmuTime::ZERO,
        }
    }

    /// The post office: run `handler` as its own task.
    fn post(&self, handler: impl Future<Output = ()> + 'static) {
        actix::spawn(handler);
    }

    fn index_of(&self, cluster: ClusterId) -> Option<usize> {
        self.clusters.iter().position(|(c, _)| *c == cluster)
    }

    fn me(&self, ctx: &Context<Self>) -> Peer<Igg> {
        Peer {
            id: self.id,
            addr: ctx.address(),
        }
    }

    /// The contracts this IGG holds as a requester, priced from each provider's cost model.
    fn contracts(&self, providers: &BTreeMap<GridId, CostModel>) -> Vec<Contract> {
        self.emu
            .topo
            .contract_pairs()
            .into_iter()
            .filter(|(from, _, _)| *from == self.grid)
            .filter_map(|(_, to, c)| {
                let range = PriceRange::of_contract(&c, providers.get(&to)?);
                Some(Contract { peer: to, range })
            })
            .collect()
    }

    /// Places an external request on this Grid's clusters (its own, or one redirected here).
    fn place(&mut self, req: LeaseRequest, ctx: &mut Context<Self>) {
        let (emu, me, dve, retry) = (Rc::clone(&self.emu), self.id, self.dve.clone(), self.retry);
        let own = self.me(ctx);
        let peers: Vec<Peer<Lrms>> = self.clusters.iter().map(|(_, p)| p.clone()).collect();
        let now = self.emu.now();
        // Earliest-start uses the published free slots when every cluster has published;
        // until then it asks the LRMSs (inside the task, so other messages go on).
        let from_slots = self.dispatcher.asks_for_offers()
            && (0..self.clusters.len()).all(|j| self.slots.knows(j));
        let decided = if !self.dispatcher.asks_for_offers() {
            // Least-load reads the clusters' published loads when all have published (they
            // count local work too), else the cores this IGG's own leases take.
            let horizon = self.emu.topo.peering.horizon;
            let loads = self
                .slots
                .loads(self.clusters.len(), now, horizon)
                .unwrap_or_else(|| self.loads.borrow().0.clone());
            Some(self.dispatcher.order(&req, &loads, &[]))
        } else if from_slots {
            let offers: Vec<Option<u64>> = (0..self.clusters.len())
                .map(|j| {
                    self.slots
                        .earliest_on(j, now, req.cores(), req.duration)
                        .map(|t| t.as_micros())
                })
                .collect();
            Some(self.dispatcher.order(&req, &Loads::default(), &offers))
        } else {
            None
        };
        let mut dispatcher = self.dispatcher.clone();
        let foreign = self.broker.foreign.contains_key(&req.id);
        self.post(async move {
            let order = match decided {
                Some(order) => order,
                None => {
                    let mut offers = Vec::with_capacity(peers.len());
                    for lrms in &peers {
                        let offer = emu.call(me, lrms, ProbeStart(req.clone())).await;
                        offers.push(offer.and_then(|o| o.start).map(|t| t.as_micros()));
                    }
                    dispatcher.order(&req, &Loads::default(), &offers)
                }
            };
            let tries = if retry { order.len() } else { 1 };
            for &j in order.iter().take(tries) {
                let answer = emu.call(me, &peers[j], AssignLease(req.clone())).await;
                if answer.is_some_and(|a| a.accepted) {
                    return;
                }
            }
            emu.metrics
                .borrow_mut()
                .ended(req.id, RequestState::Rejected, emu.now());
            if foreign {
                // A request redirected here that no cluster takes: its origin learns of it
                // through our LeaseEnded path, as for one an LRMS ended.
                emu.send(
                    me,
                    &own,
                    LeaseEnded {
                        lease: req.id,
                        state: RequestState::Rejected,
                    },
                );
                return;
            }
            if let Some(dve) = dve {
                emu.send(
                    me,
                    &dve,
                    LeaseEnded {
                        lease: req.id,
                        state: RequestState::Rejected,
                    },
                );
            }
        });
    }

    /// Carries out the broker's outputs.
    fn apply(&mut self, outs: Vec<Out>, ctx: &mut Context<Self>) {
        let p = self.emu.topo.peering.clone();
        let me = self.me(ctx);
        for out in outs {
            match out {
                Out::Send { peer, msg } => {
                    let Some(to) = self.peers.get(&peer) else {
                        continue;
                    };
                    let now = self.emu.now();
                    match &msg {
                        PeerMsg::Offer { negotiation, .. } => {
                            let negotiation = *negotiation;
                            self.emu
                                .metrics
                                .borrow_mut()
                                .offer_sent(negotiation, self.grid);
                            self.emu
                                .send_link(self.grid, peer, self.id, to, self.said(msg));
                            self.emu.send_at(
                                now + p.offer_timeout,
                                self.id,
                                &me,
                                OfferTimeout(negotiation),
                            );
                        }
                        PeerMsg::Redirect {
                            negotiation, req, ..
                        } => {
                            let timeout = RedirectTimeout {
                                negotiation: *negotiation,
                                lease: req.id,
                            };
                            self.emu
                                .send_link(self.grid, peer, self.id, to, self.said(msg));
                            self.emu
                                .send_at(now + p.offer_timeout, self.id, &me, timeout);
                        }
                        _ => self
                            .emu
                            .send_link(self.grid, peer, self.id, to, self.said(msg)),
                    }
                }
                Out::ServeLocally(req) | Out::ServeForPeer(req) => self.place(req, ctx),
            }
        }
        self.emu
            .metrics
            .borrow_mut()
            .outcomes(self.grid, &self.broker.outcomes);
    }

    /// `msg` as this IGG says it to a peer.
    fn said(&self, msg: PeerMsg) -> FromPeer {
        FromPeer {
            from: self.grid,
            msg,
        }
    }

    /// Sends `msg` to the IGG of Grid `to`, if it is a peer.
    fn tell(&self, to: GridId, msg: PeerMsg) {
        if let Some(peer) = self.peers.get(&to) {
            self.emu
                .send_link(self.grid, to, self.id, peer, self.said(msg));
        }
    }

    fn send_remote(
        &self,
        lease: RequestId,
        origin: GridId,
        ended: Option<RequestState>,
        attempt: u32,
    ) {
        self.tell(
            origin,
            PeerMsg::LeaseReport {
                lease,
                ended,
                attempt,
            },
        );
    }
}

impl Actor for Igg {
    type Context = Context<Self>;
}

impl Handler<SetPeers> for Igg {
    type Result = ();
    fn handle(&mut self, msg: SetPeers, ctx: &mut Context<Self>) {
        self.peers = msg.0.into_iter().filter(|(g, _)| *g != self.grid).collect();
        let providers: BTreeMap<GridId, CostModel> = (0..self.emu.topo.grids.len())
            .map(|g| {
                let gid = GridId(g as u16);
                let clusters = &self.emu.topo.grids[g].clusters;
                let mut m = CostModel::from_providers(
                    &clusters
                        .iter()
                        .map(|c| {
                            (
                                cluster_unit_cost(&self.emu, *c),
                                self.emu.topo.cluster(*c).cores() as f64,
                            )
                        })
                        .collect::<Vec<_>>(),
                );
                m.steepness = self.emu.topo.peering.steepness;
                (gid, m)
            })
            .collect();
        self.broker.update_prices(self.contracts(&providers));
        self.providers = providers;
        if self.broker.has_contracts() {
            let me = self.me(ctx);
            self.emu.send_at(
                self.emu.now() + self.emu.topo.peering.interval,
                self.id,
                &me,
                NegotiationTick,
            );
        }
        for crash in self
            .emu
            .faults
            .borrow()
            .config()
            .crashes
            .iter()
            .filter(|c| c.grid == self.grid)
        {
            let me = self.me(ctx);
            self.emu
                .send_at(crash.at, self.id, &me, CrashOrRestart { crash: true });
            self.emu.send_at(
                crash.at + crash.down_for,
                self.id,
                &me,
                CrashOrRestart { crash: false },
            );
        }
    }
}

impl Handler<SubmitExternal> for Igg {
    type Result = ();
    fn handle(&mut self, msg: SubmitExternal, ctx: &mut Context<Self>) {
        let req = msg.0;
        if self.broker.has_contracts() {
            let p = &self.emu.topo.peering;
            let (load, capacity) = self.slots.grid_load(self.emu.now(), p.horizon);
            tracing::debug!(
                grid = self.grid.0,
                load,
                capacity,
                queued = self.broker.queued(),
                "IGG load at submission"
            );
            if load >= p.load_threshold && capacity > 0.0 {
                let units = req.cores() as f64 * req.duration.as_secs_f64();
                let home = self.cost.marginal(units, load, capacity);
                self.broker.enqueue(req, units, home);
                return;
            }
        }
        self.place(req, ctx);
    }
}

impl Handler<FreeSlots> for Igg {
    type Result = ();
    fn handle(&mut self, msg: FreeSlots, _: &mut Context<Self>) {
        if let Some(j) = self.index_of(msg.cluster) {
            self.slots.publish(j, msg.slots);
        }
    }
}

impl Handler<NegotiationTick> for Igg {
    type Result = ();
    fn handle(&mut self, _: NegotiationTick, ctx: &mut Context<Self>) {
        let me = self.me(ctx);
        self.emu.send_at(
            self.emu.now() + self.emu.topo.peering.interval,
            self.id,
            &me,
            NegotiationTick,
        );
        if self.down {
            return;
        }
        let now = self.emu.now();
        let p = &self.emu.topo.peering;
        if now >= self.next_price_update {
            self.next_price_update = now + p.price_update;
            // Eq. 2 over the clusters' current prices (eq. 1, load-dependent).
            let prices = self.slots.prices();
            if !prices.is_empty() {
                self.cost.unit_cost = CostModel::from_providers(&prices).unit_cost;
            }
            for &g in self.peers.keys() {
                self.tell(
                    g,
                    PeerMsg::Price {
                        unit_cost: self.cost.unit_cost,
                    },
                );
            }
        }
        let outs = self.broker.round();
        self.apply(outs, ctx);
    }
}

impl Handler<OfferTimeout> for Igg {
    type Result = ();
    fn handle(&mut self, msg: OfferTimeout, ctx: &mut Context<Self>) {
        let outs = self.broker.offer_timed_out(msg.0);
        if outs.is_empty() {
            self.emu.metrics.borrow_mut().offer_settled(msg.0);
        }
        self.apply(outs, ctx);
    }
}

impl Handler<RedirectTimeout> for Igg {
    type Result = ();
    fn handle(&mut self, msg: RedirectTimeout, ctx: &mut Context<Self>) {
        if !self.broker.awaiting_ack(msg.lease) {
            return;
        }
        if self.emu.broken_protocol {
            // The deliberate bug the invariant checker must catch: give up on the provider and
            // serve the request here, though the provider may already be running it.
            if let Some(Out::Send {
                msg: PeerMsg::Redirect { req, .. },
                ..
            }) = self.broker.redirect_timed_out(msg.lease).pop()
            {
                self.broker.on_redirect_ack(msg.lease, false);
                self.place(req, ctx);
            }
            return;
        }
        let outs = self.broker.redirect_timed_out(msg.lease);
        self.apply(outs, ctx);
    }
}

impl Handler<LeaseStarted> for Igg {
    type Result = ();
    fn handle(&mut self, msg: LeaseStarted, _: &mut Context<Self>) {
        if let Some(j) = self.index_of(msg.cluster) {
            let cores = self.emu.topo.requests[msg.lease.0 as usize].cores();
            let mut l = self.loads.borrow_mut();
            l.0.busy[j] += cores;
            l.1.insert(msg.lease, (j, cores));
        }
        if let Some((origin, _, _)) = self.broker.foreign.get(&msg.lease).copied() {
            self.send_remote(msg.lease, origin, None, 0);
            return;
        }
        let (emu, me, dve) = (Rc::clone(&self.emu), self.id, self.dve.clone());
        self.post(async move {
            if let Some(dve) = dve {
                emu.send(me, &dve, msg);
            }
        });
    }
}

impl Handler<LeaseEnded> for Igg {
    type Result = ();
    fn handle(&mut self, msg: LeaseEnded, ctx: &mut Context<Self>) {
        {
            let mut l = self.loads.borrow_mut();
            if let Some((j, cores)) = l.1.remove(&msg.lease) {
                l.0.busy[j] -= cores;
            }
        }
        if let Some(origin) = self.broker.foreign_ended(msg.lease) {
            self.remote_pending
                .insert(msg.lease, (origin, msg.state, 0));
            self.send_remote(msg.lease, origin, Some(msg.state), 0);
            let me = self.me(ctx);
            self.emu.send_at(
                self.emu.now() + self.emu.topo.peering.offer_timeout,
                self.id,
                &me,
                RemoteLeaseTimeout(msg.lease),
            );
            return;
        }
        let (emu, me, dve) = (Rc::clone(&self.emu), self.id, self.dve.clone());
        self.post(async move {
            if let Some(dve) = dve {
                emu.send(me, &dve, msg);
            }
        });
    }
}

impl Handler<RemoteLeaseTimeout> for Igg {
    type Result = ();
    fn handle(&mut self, msg: RemoteLeaseTimeout, ctx: &mut Context<Self>) {
        let Some((origin, state, attempt)) = self.remote_pending.get(&msg.0).copied() else {
            return;
        };
        self.remote_pending
            .insert(msg.0, (origin, state, attempt + 1));
        self.send_remote(msg.0, origin, Some(state), attempt + 1);
        let me = self.me(ctx);
        self.emu.send_at(
            self.emu.now() + self.emu.topo.peering.offer_timeout,
            self.id,
            &me,
            RemoteLeaseTimeout(msg.0),
        );
    }
}

impl Handler<CrashOrRestart> for Igg {
    type Result = ();
    fn handle(&mut self, msg: CrashOrRestart, _: &mut Context<Self>) {
        self.down = msg.crash;
        if msg.crash {
            self.broker.crash(self.emu.now());
        }
    }
}

impl Handler<RelocateLease> for Igg {
    type Result = ();
    fn handle(&mut self, msg: RelocateLease, _: &mut Context<Self>) {
        // Offer the lease to the Grid's other clusters in order after its source; the first
        // that can resume it by its deadline takes it over.
        let n = self.clusters.len();
        let from = self.index_of(msg.from).unwrap_or(0);
        let others: Vec<(ClusterId, Peer<Lrms>)> = (1..n)
            .map(|k| self.clusters[(from + k) % n].clone())
            .collect();
        let source = self.clusters.get(from).map(|(_, p)| p.clone());
        let (emu, me, loads) = (Rc::clone(&self.emu), self.id, Rc::clone(&self.loads));
        let index: Vec<ClusterId> = self.clusters.iter().map(|(c, _)| *c).collect();
        self.post(async move {
            let lease = msg.relocation.req.id;
            let mut to = None;
            for (cluster, lrms) in &others {
                let answer = emu.call(me, lrms, AdoptLease(msg.relocation.clone())).await;
                if answer.is_some_and(|a| a.accepted) {
                    to = Some(*cluster);
                    break;
                }
            }
            if let Some(dest) = to.and_then(|t| index.iter().position(|c| *c == t)) {
                // The lease's cores move with it.
                let mut l = loads.borrow_mut();
                if let Some((j, cores)) = l.1.get(&lease).copied() {
                    l.0.busy[j] -= cores;
                    l.0.busy[dest] += cores;
                    l.1.insert(lease, (dest, cores));
                }
            }
            if let Some(source) = source {
                emu.send(me, &source, RelocationOutcome { lease, to });
            }
        });
    }
}

impl Handler<FromPeer> for Igg {
    type Result = ();
    fn handle(&mut self, FromPeer { from, msg }: FromPeer, ctx: &mut Context<Self>) {
        match msg {
            PeerMsg::Offer {
                negotiation,
                items,
                price,
                max,
            } => self.on_offer(from, negotiation, &items, (price, max), ctx),
            PeerMsg::Answer {
                negotiation,
                answers,
            } => self.on_answers(negotiation, &answers, ctx),
            PeerMsg::Redirect {
                negotiation,
                req,
                price,
            } => self.on_redirect(from, negotiation, &req, price, ctx),
            PeerMsg::RedirectAck {
                lease, accepted, ..
            } => self.on_redirect_ack(from, lease, accepted, ctx),
            PeerMsg::Decline {
                negotiation, lease, ..
            } => self.broker.on_decline(negotiation, lease),
            PeerMsg::LeaseReport { lease, ended, .. } => self.on_lease_report(from, lease, ended),
            PeerMsg::LeaseReportAck { lease } => {
                self.remote_pending.remove(&lease);
            }
            PeerMsg::Price { unit_cost } => self.on_price(from, unit_cost),
        }
    }
}

impl Igg {
    fn on_offer(
        &mut self,
        from: GridId,
        negotiation: NegotiationId,
        items: &[Item],
        (price, max): (f64, f64),
        ctx: &mut Context<Self>,
    ) {
        let p = &self.emu.topo.peering;
        let now = self.emu.now();
        let (load, capacity) = self.slots.grid_load(now, p.horizon);
        let offered = Offered {
            from,
            negotiation,
            items,
            price,
            max,
        };
        let out = self.broker.answer_offer(
            &offered,
            &Standing {
                cost: &self.cost,
                load,
                capacity,
            },
            now,
        );
        self.apply(vec![out], ctx);
    }

    fn on_answers(
        &mut self,
        negotiation: NegotiationId,
        answers: &[(RequestId, Answer)],
        ctx: &mut Context<Self>,
    ) {
        self.emu.metrics.borrow_mut().offer_settled(negotiation);
        let outs = self.broker.on_answers(negotiation, answers);
        self.apply(outs, ctx);
    }

    fn on_redirect(
        &mut self,
        from: GridId,
        negotiation: NegotiationId,
        req: &LeaseRequest,
        price: f64,
        ctx: &mut Context<Self>,
    ) {
        let now = self.emu.now();
        let before = self.broker.foreign.contains_key(&req.id);
        let outs = self.broker.on_redirect(from, negotiation, req, price, now);
        if !before && self.broker.foreign.contains_key(&req.id) {
            let units = self
                .broker
                .tickets
                .get(negotiation, req.id)
                .map_or(0.0, |t| t.units);
            self.emu.metrics.borrow_mut().received(
                self.grid,
                from,
                req.id,
                negotiation,
                price * units,
            );
        }
        self.apply(outs, ctx);
    }

    fn on_redirect_ack(
        &mut self,
        from: GridId,
        lease: RequestId,
        accepted: bool,
        ctx: &mut Context<Self>,
    ) {
        let redirecting = self.broker.awaiting_ack(lease);
        let paid_before: f64 = self.broker.paid.values().sum();
        let outs = self.broker.on_redirect_ack(lease, accepted);
        let paid_after: f64 = self.broker.paid.values().sum();
        if redirecting && accepted {
            let req = &self.emu.topo.requests[lease.0 as usize];
            let units = req.cores() as f64 * req.duration.as_secs_f64();
            self.emu
                .metrics
                .borrow_mut()
                .paid(self.grid, from, units, paid_after - paid_before);
        }
        self.apply(outs, ctx);
    }

    fn on_lease_report(&mut self, from: GridId, lease: RequestId, ended: Option<RequestState>) {
        let Some(state) = ended else {
            return;
        };
        self.tell(from, PeerMsg::LeaseReportAck { lease });
        if !self.remote_done.insert(lease) {
            return; // a duplicate report
        }
        if let Some(dve) = &self.dve {
            self.emu.send(self.id, dve, LeaseEnded { lease, state });
        }
    }

    fn on_price(&mut self, from: GridId, unit_cost: f64) {
        if let Some(m) = self.providers.get_mut(&from) {
            m.unit_cost = unit_cost;
        }
        let providers = std::mem::take(&mut self.providers);
        self.broker.update_prices(self.contracts(&providers));
        self.providers = providers;
    }
}
