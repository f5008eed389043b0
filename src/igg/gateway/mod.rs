//! The IGG's decisions, pure: [`Gateway::on`] takes one input (a request, a publication, a
//! timer, a peer's message, a lease's start or end) at an emulated instant and returns the
//! [`Effect`]s to carry out, in order — messages to peers, timers, placements on the Grid's
//! clusters, notes to the DVE manager, observations for the metrics. It owns what the IGG
//! knows: its clusters' loads and published slots, its dispatcher, its peering state (the
//! broker) and its cost model. The actor (`actors::igg`) is the post office that carries the
//! effects out; the calls to LRMSs that a placement or a relocation makes happen there, and
//! their results come back as inputs.

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::broker::{Broker, Contract, Item, Offered, Out, Outcomes, Standing};
use super::dispatch::{Dispatch, DispatchAsk};
use super::negotiation::{AnswerPolicy, OfferPolicy};
use super::peering::{CostModel, NegotiationId, PriceRange};
use super::promise::{Booking, Promises};
use super::protocol::PeerMsg;
use super::slots::{Published, SlotStore, SlotsAt};
use super::Loads;
use crate::lrms::{Refusal, Relocation};
use crate::model::{ClusterId, GridId, LeaseRequest, RejectReason, RequestId, RequestState};
use crate::time::{EmuDuration, EmuTime};

mod peers;
#[cfg(test)]
mod tests;

/// The gateway's fixed settings (from `[peering]` and `[igg]`).
#[derive(Clone, Debug)]
pub struct GatewaySettings {
    /// Whether a request refused by the chosen cluster is offered to the others.
    pub retry: bool,
    /// How far ahead loads are read from published slots.
    pub horizon: EmuDuration,
    /// The Grid load (over a request's cost window) from which its requests are offered to
    /// peers.
    pub load_threshold: f64,
    /// Time between negotiation rounds, drawn uniformly from this range at each round (paper
    /// 004 §6.4: 1–5 min).
    pub interval: (EmuDuration, EmuDuration),
    /// Time between updates of this Grid's unit cost, drawn uniformly from this range at each
    /// update (paper 004 §6.4: 1–6 h).
    pub price_update: (EmuDuration, EmuDuration),
    /// How long an offer (beyond the provider's longest evaluation interval), a redirection
    /// or a lease report waits for its answer; each resend waits twice as long as the one
    /// before.
    pub offer_timeout: EmuDuration,
    /// Whether the clusters publish their free slots only when asked: at each round, and
    /// for each request placed (otherwise periodically).
    pub on_request: bool,
    /// Whether another Grid holds a contract with this one (it then evaluates offers).
    pub provides: bool,
    /// Seed of the interval draws.
    pub seed: u64,
    /// Steepness of the cost functions (eq. 1).
    pub steepness: f64,
    /// Retries of an offer or a redirection.
    pub retries: u32,
    /// How long a provider's ticket lives unconfirmed.
    pub ticket_ttl: EmuDuration,
    /// The contracts this Grid holds as a requester: provider and terms.
    pub contracts: Vec<(GridId, super::peering::Contract)>,
    /// Test-only: a requester serves a request itself when a redirection's acknowledgement
    /// is late (the bug the invariant checker must catch).
    pub broken_protocol: bool,
}

/// One input to the gateway.
#[derive(Clone, Debug)]
pub enum Input {
    /// The other Grids and every Grid's cost model (once, before the run).
    Peers {
        /// The other Grids.
        peers: Vec<GridId>,
        /// Every Grid's cost model, to price contracts from.
        providers: BTreeMap<GridId, CostModel>,
    },
    /// An external request from this Grid's DVE manager.
    Submit(LeaseRequest),
    /// A cluster published its free slots.
    FreeSlots {
        /// The cluster.
        cluster: ClusterId,
        /// What it published.
        slots: Published,
    },
    /// The negotiation timer.
    Tick,
    /// Every cluster has answered the slot request a round made (publication on request):
    /// the round goes on.
    Refreshed,
    /// A peer IGG's message.
    Peer {
        /// Its Grid.
        from: GridId,
        /// The message.
        msg: PeerMsg,
    },
    /// An offer's answer is overdue.
    OfferTimeout(NegotiationId),
    /// A redirection's acknowledgement is overdue.
    RedirectTimeout(RequestId),
    /// The acknowledgement of a lease report is overdue.
    ReportTimeout(RequestId),
    /// A lease placed by this IGG started on one of its clusters.
    LeaseStarted {
        /// The lease.
        lease: RequestId,
        /// Where.
        cluster: ClusterId,
        /// Its cores.
        cores: u64,
    },
    /// A lease placed by this IGG (or refused everywhere) ended.
    LeaseEnded {
        /// The lease.
        lease: RequestId,
        /// How.
        state: RequestState,
    },
    /// Every cluster's earliest start for a request (earliest-start dispatch before the
    /// clusters have published): `None` where a cluster would refuse it.
    Probed {
        /// The request.
        req: LeaseRequest,
        /// Per cluster, its earliest start (µs).
        offers: Vec<Option<u64>>,
    },
    /// A placement found no cluster.
    Unplaced {
        /// The request.
        req: LeaseRequest,
        /// What the clusters' refusals said together ([`Refusal::combine`]); `None` when no
        /// cluster was offered it (or none answered).
        refusal: Option<Refusal>,
    },
    /// A cluster asks to move a suspended migratable lease elsewhere in the Grid.
    Relocate {
        /// The lease and its state (passed on to the clusters that may adopt it).
        relocation: Relocation,
        /// The cluster it leaves.
        from: ClusterId,
    },
    /// A relocation ended: the cluster that adopted the lease, if any.
    Relocated {
        /// The lease.
        lease: RequestId,
        /// The adopting cluster.
        to: Option<ClusterId>,
    },
    /// The IGG crashes (volatile state lost) or restarts.
    Crash(bool),
}

/// What the DVE manager is told.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DveNote {
    /// A lease started on a cluster.
    Started(RequestId, ClusterId),
    /// A lease reached a terminal state.
    Ended(RequestId, RequestState),
}

/// A timer the gateway sets; it comes back as the matching input, unless called off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timer {
    /// [`Input::Tick`].
    Tick,
    /// [`Input::OfferTimeout`].
    Offer(NegotiationId),
    /// [`Input::RedirectTimeout`] (with the negotiation, for traces).
    Redirect(NegotiationId, RequestId),
    /// [`Input::ReportTimeout`].
    Report(RequestId),
}

/// What the metrics observe.
#[derive(Clone, Debug, PartialEq)]
pub enum Observation {
    /// A request no cluster took was rejected, for this reason.
    Rejected(RequestId, RejectReason),
    /// An offer was sent.
    OfferSent(NegotiationId),
    /// An offer was answered, or given up.
    OfferSettled(NegotiationId),
    /// A redirected request was taken over from `from`, for `amount`.
    Received {
        /// The requester.
        from: GridId,
        /// The request.
        lease: RequestId,
        /// Its negotiation.
        negotiation: NegotiationId,
        /// What the requester pays.
        amount: f64,
    },
    /// A redirection was acknowledged: `units` paid for with `amount`.
    Paid {
        /// The provider.
        to: GridId,
        /// Resource units redirected.
        units: f64,
        /// Money paid.
        amount: f64,
    },
    /// The negotiation outcomes so far.
    Outcomes(Outcomes),
}

/// One thing the actor carries out.
#[derive(Clone, Debug)]
pub enum Effect {
    /// Send `msg` to the IGG of Grid `to`.
    Send {
        /// The peer.
        to: GridId,
        /// The message.
        msg: PeerMsg,
    },
    /// Call off the pending timer (its answer came): it neither fires nor shows in the trace.
    Cancel(Timer),
    /// Come back with this timer's input at `at`.
    Timer {
        /// When.
        at: EmuTime,
        /// Which.
        timer: Timer,
    },
    /// Ask every cluster for its free slots now (each answer comes back as
    /// [`Input::FreeSlots`]), then come back with [`Input::Refreshed`].
    Refresh,
    /// Ask every cluster for its earliest start for `req`, then come back with
    /// [`Input::Probed`] (its placement follows in the same task).
    Probe(LeaseRequest),
    /// Place a request on the Grid's clusters (through the post office).
    Place {
        /// The request.
        req: LeaseRequest,
        /// The clusters to try, in order (indices into the Grid's clusters).
        order: Vec<usize>,
        /// How many clusters to try at most.
        tries: usize,
    },
    /// Offer a lease to these clusters in turn, then tell `source` where it went.
    Relocate {
        /// The lease and its state.
        relocation: Relocation,
        /// The clusters to try, in order.
        to_try: Vec<ClusterId>,
        /// The cluster it leaves.
        source: ClusterId,
    },
    /// Tell the DVE manager, through the post office (`posted`) or at once.
    Dve {
        /// What.
        note: DveNote,
        /// Whether the note goes out from its own task.
        posted: bool,
    },
    /// For the metrics.
    Observe(Observation),
}

/// The policies a gateway decides with (its decision points).
pub struct GatewayPolicies {
    /// In which order to try the Grid's clusters for a request.
    pub dispatch: Box<dyn Dispatch>,
    /// How to answer a peer's offer (provider side).
    pub answer: Box<dyn AnswerPolicy>,
    /// Whom to offer a request to (requester side).
    pub offer: Box<dyn OfferPolicy>,
}

/// A Grid's InterGrid Gateway, without the actor.
pub struct Gateway {
    grid: GridId,
    settings: GatewaySettings,
    clusters: Vec<ClusterId>,
    dispatch: Box<dyn Dispatch>,
    /// Cores this IGG's leases take on each cluster (for least-load).
    loads: Loads,
    /// Where each running lease is and its cores.
    placed: BTreeMap<RequestId, (usize, u64)>,
    slots: SlotStore,
    peers: Vec<GridId>,
    broker: Broker,
    /// This Grid's cost model (eq. 2 from its clusters' prices).
    cost: CostModel,
    /// The providers' cost models this IGG prices its contracts from.
    providers: BTreeMap<GridId, CostModel>,
    /// Provider side: ends of redirected requests not yet acknowledged by their origin.
    reports_pending: BTreeMap<RequestId, (GridId, RequestState, u32)>,
    /// Origin side: redirected requests whose end has been passed on.
    reports_done: BTreeSet<RequestId>,
    down: bool,
    next_price_update: EmuTime,
    /// Requests every cluster refused once, now offered to the peers (never twice).
    refused_here: BTreeSet<RequestId>,
    /// Draws of round and price-update intervals.
    rng: StdRng,
    /// By cluster index, the slots this IGG's promises (accepts and counter-offers) took
    /// since the cluster last published: the next evaluation's [`Promises`] sees them taken.
    promised: BTreeMap<usize, Vec<Booking>>,
}

/// A copy of a gateway's state (to undo an input, [`Gateway::restore`]): with the shipped
/// policies in place of its own (a user's policy need not be clonable; a copy never decides).
impl Clone for Gateway {
    fn clone(&self) -> Gateway {
        Gateway {
            grid: self.grid,
            settings: self.settings.clone(),
            clusters: self.clusters.clone(),
            dispatch: Box::new(super::dispatch::RoundRobin::default()),
            loads: self.loads.clone(),
            placed: self.placed.clone(),
            slots: self.slots.clone(),
            peers: self.peers.clone(),
            broker: self.broker.clone(),
            cost: self.cost.clone(),
            providers: self.providers.clone(),
            reports_pending: self.reports_pending.clone(),
            reports_done: self.reports_done.clone(),
            down: self.down,
            next_price_update: self.next_price_update,
            refused_here: self.refused_here.clone(),
            rng: self.rng.clone(),
            promised: self.promised.clone(),
        }
    }
}

impl Gateway {
    /// Puts back the state of `earlier`, a copy of this gateway taken before ([`Clone`]),
    /// keeping this gateway's policies: what an input did is undone (a realtime run whose
    /// external decision is pending handles the input again once it is answered).
    pub fn restore(&mut self, mut earlier: Gateway) {
        let empty = || Broker::new(self.grid, Vec::new(), 0, EmuDuration::ZERO);
        // The copy's broker state, with this broker's policies.
        let mut broker = std::mem::replace(&mut self.broker, empty());
        broker.restore(std::mem::replace(&mut earlier.broker, empty()));
        earlier.broker = broker;
        std::mem::swap(&mut earlier.dispatch, &mut self.dispatch);
        *self = earlier;
    }

    /// The gateway of Grid `grid` over `clusters` (id, cores), whose own cost model (eq. 2
    /// over its clusters) is `cost`.
    pub fn new(
        grid: GridId,
        clusters: &[(ClusterId, u64)],
        cost: CostModel,
        policies: GatewayPolicies,
        settings: GatewaySettings,
    ) -> Gateway {
        let broker = Broker::new(grid, Vec::new(), settings.retries, settings.ticket_ttl)
            .with_policies(policies.answer, policies.offer);
        Gateway {
            grid,
            clusters: clusters.iter().map(|c| c.0).collect(),
            dispatch: policies.dispatch,
            loads: Loads {
                busy: vec![0; clusters.len()],
                cores: clusters.iter().map(|c| c.1).collect(),
            },
            placed: BTreeMap::new(),
            slots: SlotStore::default(),
            peers: Vec::new(),
            broker,
            cost,
            providers: BTreeMap::new(),
            reports_pending: BTreeMap::new(),
            reports_done: BTreeSet::new(),
            down: false,
            next_price_update: EmuTime::ZERO,
            refused_here: BTreeSet::new(),
            rng: StdRng::seed_from_u64(settings.seed),
            promised: BTreeMap::new(),
            settings,
        }
    }

    /// Its Grid.
    pub fn grid(&self) -> GridId {
        self.grid
    }

    /// Handles one input at `now`.
    pub fn on(&mut self, input: Input, now: EmuTime) -> Vec<Effect> {
        let mut out = Vec::new();
        match input {
            Input::Peers { peers, providers } => {
                self.peers = peers;
                self.providers = providers;
                self.reprice();
                if self.broker.has_contracts() || self.settings.provides {
                    let first = now + self.draw(self.settings.interval);
                    out.push(timer(first, Timer::Tick));
                }
            }
            Input::Submit(req) => self.submit(req, now, &mut out),
            Input::FreeSlots { cluster, slots } => {
                if let Some(j) = self.index_of(cluster) {
                    self.slots.publish(j, slots);
                    // What it publishes now shows the requests promised before and placed.
                    self.promised.remove(&j);
                }
            }
            Input::Tick => self.tick(now, &mut out),
            Input::Refreshed => self.round(now, &mut out),
            Input::Peer { from, msg } => self.on_peer(from, msg, now, &mut out),
            Input::OfferTimeout(negotiation) => {
                let outs = self.broker.offer_timed_out(negotiation);
                if outs.is_empty() {
                    out.push(Effect::Observe(Observation::OfferSettled(negotiation)));
                }
                self.carry(outs, now, &mut out);
            }
            Input::RedirectTimeout(lease) => self.redirect_timed_out(lease, now, &mut out),
            Input::ReportTimeout(lease) => self.report_timed_out(lease, now, &mut out),
            Input::LeaseStarted {
                lease,
                cluster,
                cores,
            } => self.lease_started(lease, cluster, cores, &mut out),
            Input::LeaseEnded { lease, state } => self.lease_ended(lease, state, now, &mut out),
            Input::Probed { req, offers } => {
                let order = self.order(&req, now, &Loads::default(), &offers);
                out.push(self.place_in(req, order));
            }
            Input::Unplaced { req, refusal } => self.unplaced(req, refusal, now, &mut out),
            Input::Relocate { relocation, from } => out.push(self.relocate(relocation, from)),
            Input::Relocated { lease, to } => self.relocated(lease, to),
            Input::Crash(crash) => {
                self.down = crash;
                if crash {
                    self.broker.crash(now);
                }
            }
        }
        out
    }

    /// A request no cluster placed: offered to the peers once when it is this Grid's own,
    /// else rejected (and its origin told when it came from a peer).
    fn unplaced(
        &mut self,
        req: LeaseRequest,
        refusal: Option<Refusal>,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        let foreign = self.broker.origin_of(req.id).is_some();
        // Paper 001 §4.1, external workflow: a request every cluster refuses is offered
        // to the peers (once) before it is rejected. Home cannot serve it, so its home
        // cost is unbounded: any contract is worth trying, any counter-offer worth
        // taking.
        let lease = req.id;
        if !foreign && self.broker.has_contracts() && self.refused_here.insert(lease) {
            let units = req.units();
            self.broker.enqueue_unservable(req, units);
            return;
        }
        // Peering's verdict when the peers were tried (the clusters refused first);
        // else the clusters' own refusal.
        let reason = self
            .broker
            .peering_reason(lease)
            .or(refusal.map(Refusal::reason))
            .unwrap_or(RejectReason::NoCluster);
        out.push(Effect::Observe(Observation::Rejected(lease, reason)));
        if foreign {
            // Its origin learns of it as of one an LRMS ended.
            self.lease_ended(lease, RequestState::Rejected, now, out);
        } else {
            out.push(Effect::Dve {
                note: DveNote::Ended(lease, RequestState::Rejected),
                posted: false,
            });
        }
    }

    /// A lease report went unacknowledged: sent again, until acknowledged, each time
    /// waiting twice as long as before (`igg::backoff`).
    fn report_timed_out(&mut self, lease: RequestId, now: EmuTime, out: &mut Vec<Effect>) {
        if let Some((origin, state, attempt)) = self.reports_pending.get(&lease).copied() {
            let attempt = attempt.saturating_add(1);
            self.reports_pending.insert(lease, (origin, state, attempt));
            out.push(report(origin, lease, Some(state), attempt));
            let wait = super::backoff::wait(self.settings.offer_timeout, attempt);
            out.push(timer(now + wait, Timer::Report(lease)));
        }
    }

    fn lease_started(
        &mut self,
        lease: RequestId,
        cluster: ClusterId,
        cores: u64,
        out: &mut Vec<Effect>,
    ) {
        if let Some(j) = self.index_of(cluster) {
            self.loads.busy[j] += cores;
            self.placed.insert(lease, (j, cores));
        }
        match self.broker.origin_of(lease) {
            Some(origin) => out.push(report(origin, lease, None, 0)),
            None => out.push(Effect::Dve {
                note: DveNote::Started(lease, cluster),
                posted: true,
            }),
        }
    }

    fn lease_ended(
        &mut self,
        lease: RequestId,
        state: RequestState,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        if let Some((j, cores)) = self.placed.remove(&lease) {
            self.loads.busy[j] -= cores;
        }
        match self.broker.foreign_ended(lease) {
            Some(origin) => {
                self.reports_pending.insert(lease, (origin, state, 0));
                out.push(report(origin, lease, Some(state), 0));
                out.push(timer(
                    now + self.settings.offer_timeout,
                    Timer::Report(lease),
                ));
            }
            None => out.push(Effect::Dve {
                note: DveNote::Ended(lease, state),
                posted: true,
            }),
        }
    }

    /// The Grid's other clusters in order after the source; the first that can resume the
    /// lease by its deadline takes it over.
    fn relocate(&self, relocation: Relocation, from: ClusterId) -> Effect {
        let n = self.clusters.len();
        let first = self.index_of(from).unwrap_or(0);
        Effect::Relocate {
            relocation,
            to_try: (1..n).map(|k| self.clusters[(first + k) % n]).collect(),
            source: from,
        }
    }

    /// A relocated lease's cores move with it.
    fn relocated(&mut self, lease: RequestId, to: Option<ClusterId>) {
        if let Some(dest) = to.and_then(|c| self.index_of(c)) {
            if let Some((j, cores)) = self.placed.get(&lease).copied() {
                self.loads.busy[j] -= cores;
                self.loads.busy[dest] += cores;
                self.placed.insert(lease, (dest, cores));
            }
        }
    }

    fn index_of(&self, cluster: ClusterId) -> Option<usize> {
        self.clusters.iter().position(|c| *c == cluster)
    }

    /// Reprices this Grid's contracts from the providers' current cost models.
    fn reprice(&mut self) {
        let contracts = self
            .settings
            .contracts
            .iter()
            .filter_map(|(to, c)| {
                let range = PriceRange::of_contract(c, self.providers.get(to)?);
                Some(Contract { peer: *to, range })
            })
            .collect();
        self.broker.update_prices(contracts);
    }

    /// An external request: with contracts, it waits for the next round (paper 004 §5.2:
    /// "during a time interval, IGG_i stores the requests in the waiting queue"), which
    /// offers it to peers if this Grid is overloaded for it; without, it is placed now.
    fn submit(&mut self, req: LeaseRequest, now: EmuTime, out: &mut Vec<Effect>) {
        if self.broker.has_contracts() {
            let units = req.units();
            self.broker.enqueue(req, units);
            return;
        }
        out.push(self.place(req, now));
    }

    /// A uniform draw from `range`, to the microsecond.
    fn draw(&mut self, (lo, hi): (EmuDuration, EmuDuration)) -> EmuDuration {
        if hi <= lo {
            return lo;
        }
        EmuDuration::from_micros(self.rng.random_range(lo.as_micros()..=hi.as_micros()))
    }

    /// The end of `req`'s cost window (paper 004 §5.2): its deadline, or for a best-effort
    /// request its virtual deadline — the start the Grid's free slots give it plus its run
    /// time. Where no cluster has published, or none can start it within what it published,
    /// the window reaches past the published horizon, where nothing is known to be free.
    /// `slots`: this Grid's slots as of `now`.
    fn cost_horizon(&self, req: &LeaseRequest, now: EmuTime, slots: &SlotsAt<'_>) -> EmuTime {
        let run = req.duration;
        if let Some(d) = super::promise::deadline_of(req).filter(|d| *d > now) {
            return d;
        }
        // The earliest over the clusters: each searched only for one earlier than the best.
        let start = (0..self.clusters.len())
            .fold(None, |best, j| {
                let before = best.unwrap_or(EmuTime::NEVER);
                slots
                    .earliest_on_before(j, req.cores(), run, before)
                    .or(best)
            })
            .or_else(|| slots.until())
            .unwrap_or(now + self.settings.horizon);
        start.max(now) + run
    }

    /// This Grid's load (0–1) and capacity in resource units over `req`'s cost window
    /// (`slots`: as of `now`).
    fn window(&self, req: &LeaseRequest, now: EmuTime, slots: &SlotsAt<'_>) -> (f64, f64) {
        let end = self.cost_horizon(req, now, slots);
        let span = end.since(now).max(EmuDuration::from_secs(1));
        slots.grid_load(span)
    }

    /// Where to try a request (its own, or one redirected here).
    fn place(&mut self, req: LeaseRequest, now: EmuTime) -> Effect {
        let n = self.clusters.len();
        let order = if !self.dispatch.wants_starts() {
            // Least-load reads the clusters' published loads when all have published (they
            // count local work too), else the cores this IGG's own leases take.
            let loads = self
                .slots
                .loads(n, now, self.settings.horizon)
                .unwrap_or_else(|| self.loads.clone());
            let starts = match self.dispatch.reads_starts() {
                true => self.published_starts(&req, now).unwrap_or_default(),
                false => Vec::new(),
            };
            self.order(&req, now, &loads, &starts)
        } else if !self.settings.on_request && (0..n).all(|j| self.slots.knows(j)) {
            // Earliest-start uses the published free slots when every cluster has published;
            // until then, or where clusters publish on request, it asks the LRMSs.
            let offers: Vec<Option<u64>> = (0..n)
                .map(|j| {
                    self.slots
                        .dispatch_start_on(j, now, req.cores(), req.duration)
                        .map(|t| t.as_micros())
                })
                .collect();
            let order = self.order(&req, now, &Loads::default(), &offers);
            // The chosen slot is the gateway's now (paper 004 §5.3): later requests see it
            // taken until the cluster publishes again.
            if let Some(&j) = order.first() {
                if let Some(start) = offers[j] {
                    let start = EmuTime::from_micros(start);
                    self.slots
                        .book_dispatched(j, start, req.cores(), req.duration);
                }
            }
            order
        } else {
            return Effect::Probe(req);
        };
        self.place_in(req, order)
    }

    /// The dispatch policy's order for `req`.
    fn order(
        &mut self,
        req: &LeaseRequest,
        now: EmuTime,
        loads: &Loads,
        starts: &[Option<u64>],
    ) -> Vec<usize> {
        self.dispatch.order(&DispatchAsk {
            now,
            request: req,
            clusters: self.clusters.len(),
            loads,
            starts,
        })
    }

    /// Each cluster's earliest start for `req` in its published slots (`None` where it has
    /// none), when every cluster has published.
    fn published_starts(&self, req: &LeaseRequest, now: EmuTime) -> Option<Vec<Option<u64>>> {
        let n = self.clusters.len();
        (0..n).all(|j| self.slots.knows(j)).then(|| {
            (0..n)
                .map(|j| {
                    (self.slots.earliest_on(j, now, req.cores(), req.duration))
                        .map(|t| t.as_micros())
                })
                .collect()
        })
    }

    /// Try the clusters in `order`: all of them, or only the first without `retry`.
    fn place_in(&self, req: LeaseRequest, order: Vec<usize>) -> Effect {
        let tries = if self.settings.retry { order.len() } else { 1 };
        Effect::Place { req, order, tries }
    }

    /// A round (paper 004 §5.2): update this Grid's unit cost if due, evaluate the offers
    /// peers made since the last round, then offer this Grid's queued requests — after
    /// asking the clusters for their slots where they publish on request.
    fn tick(&mut self, now: EmuTime, out: &mut Vec<Effect>) {
        let next = now + self.draw(self.settings.interval);
        out.push(timer(next, Timer::Tick));
        if self.down {
            return;
        }
        if self.settings.on_request {
            out.push(Effect::Refresh);
        } else {
            self.round(now, out);
        }
    }

    /// The round's work, on this IGG's current knowledge of its clusters' slots.
    fn round(&mut self, now: EmuTime, out: &mut Vec<Effect>) {
        if self.down {
            return;
        }
        if now >= self.next_price_update {
            self.next_price_update = now + self.draw(self.settings.price_update);
            // Eq. 2 over the clusters' current prices (eq. 1, load-dependent), weighted by the
            // units each contributes until the next update.
            let prices = self.slots.prices(now, self.next_price_update);
            if !prices.is_empty() {
                self.cost.unit_cost = CostModel::from_providers(&prices).unit_cost;
            }
            for &to in &self.peers {
                out.push(Effect::Send {
                    to,
                    msg: PeerMsg::Price {
                        unit_cost: self.cost.unit_cost,
                    },
                });
            }
        }
        if self.broker.pending_offers() > 0 {
            // Windows read from this Grid's slots, computed before the broker evaluates.
            let slots = self.slots.at(now);
            let windows: BTreeMap<RequestId, (f64, f64)> = self
                .broker
                .pending_requests()
                .map(|req| (req.id, self.window(req, now, &slots)))
                .collect();
            let window = |req: &LeaseRequest| windows.get(&req.id).copied().unwrap_or((1.0, 0.0));
            // The redirections of what it accepts arrive with the answers (the IGG knows no
            // link delay): its clusters' slots are read as of now.
            let promised: Vec<Booking> = self.promised.values().flatten().copied().collect();
            let mut promises = Promises::new(&self.slots, self.clusters.len(), now, &promised);
            let mut standing = Standing {
                cost: &self.cost,
                window: &window,
                promises: Some(&mut promises),
            };
            let answers = self.broker.evaluate_offers(&mut standing, now);
            for b in promises.booked() {
                self.promised.entry(b.0).or_default().push(b);
            }
            self.carry(answers, now, out);
        }
        // Home costs of the queued requests over their windows; below the threshold, a
        // request is served here.
        let threshold = self.settings.load_threshold;
        // Taken again: carrying the answers above may have booked slots.
        let slots = self.slots.at(now);
        let homes: BTreeMap<RequestId, Option<f64>> = self
            .broker
            .queued_items()
            .map(|it| {
                let (load, capacity) = self.window(&it.req, now, &slots);
                let over = load >= threshold && capacity > 0.0;
                tracing::debug!(
                    grid = self.grid.0,
                    load,
                    capacity,
                    over,
                    "IGG load over a request's window"
                );
                (
                    it.req.id,
                    over.then(|| self.cost.marginal(it.units, load, capacity)),
                )
            })
            .collect();
        tracing::debug!(
            grid = self.grid.0,
            queued = self.broker.queued(),
            "IGG round"
        );
        let home = |it: &Item| homes.get(&it.req.id).copied().flatten();
        let outs = self.broker.round(now, home);
        self.carry(outs, now, out);
    }
}

fn timer(at: EmuTime, timer: Timer) -> Effect {
    Effect::Timer { at, timer }
}

fn report(origin: GridId, lease: RequestId, ended: Option<RequestState>, attempt: u32) -> Effect {
    Effect::Send {
        to: origin,
        msg: PeerMsg::LeaseReport {
            lease,
            ended,
            attempt,
        },
    }
}
