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
                        .earliest_on(j, now, req.cores(), req.duration)
                        .map(|t| t.as_micros())
                })
                .collect();
            let order = self.order(&req, now, &Loads::default(), &offers);
            // The chosen slot is the gateway's now (paper 004 §5.3): later requests see it
            // taken until the cluster publishes again.
            if let Some(&j) = order.first() {
                if let Some(start) = offers[j] {
                    let start = EmuTime::from_micros(start);
                    self.slots.book(j, start, req.cores(), req.duration);
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

    fn on_peer(&mut self, from: GridId, msg: PeerMsg, now: EmuTime, out: &mut Vec<Effect>) {
        match msg {
            PeerMsg::Offer {
                negotiation,
                items,
                price,
                max,
            } => {
                let offered = Offered {
                    from,
                    negotiation,
                    items: &items,
                    price,
                    max,
                };
                self.receive_offer(&offered, now, out);
            }
            PeerMsg::Answer {
                negotiation,
                answers,
            } => {
                out.push(Effect::Cancel(Timer::Offer(negotiation)));
                out.push(Effect::Observe(Observation::OfferSettled(negotiation)));
                let outs = self.broker.on_answers(from, negotiation, &answers);
                self.carry(outs, now, out);
            }
            PeerMsg::Redirect {
                negotiation,
                req,
                price,
            } => self.redirected_here(from, (negotiation, price), req, now, out),
            PeerMsg::RedirectAck {
                negotiation,
                lease,
                accepted,
            } => {
                out.push(Effect::Cancel(Timer::Redirect(negotiation, lease)));
                self.redirect_acknowledged(from, (negotiation, lease), accepted, now, out);
            }
            PeerMsg::Decline {
                negotiation, lease, ..
            } => self.broker.on_decline(negotiation, lease),
            PeerMsg::LeaseReport { lease, ended, .. } => {
                self.lease_reported(from, lease, ended, now, out)
            }
            PeerMsg::LeaseReportAck { lease } => {
                out.push(Effect::Cancel(Timer::Report(lease)));
                self.reports_pending.remove(&lease);
            }
            PeerMsg::Price { unit_cost } => {
                if let Some(m) = self.providers.get_mut(&from) {
                    m.unit_cost = unit_cost;
                }
                self.reprice();
            }
        }
    }

    /// A provider reports on a request this Grid redirected to it: started, or ended in
    /// `ended` (acknowledged, and passed on once).
    fn lease_reported(
        &mut self,
        from: GridId,
        lease: RequestId,
        ended: Option<RequestState>,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        if let Some(negotiation) = self.broker.redirecting_to(lease, from) {
            // The provider took the redirection over and its acknowledgement was lost (else
            // this Grid would never pay for it): the report stands for it.
            out.push(Effect::Cancel(Timer::Redirect(negotiation, lease)));
            self.redirect_acknowledged(from, (negotiation, lease), true, now, out);
        }
        let Some(state) = ended else {
            return;
        };
        out.push(Effect::Send {
            to: from,
            msg: PeerMsg::LeaseReportAck { lease },
        });
        if self.reports_done.insert(lease) {
            if state == RequestState::Rejected {
                // Redirected, taken, then refused by the provider's clusters.
                self.broker.redirect_rejected();
                out.push(Effect::Observe(Observation::Outcomes(
                    self.broker.outcomes().clone(),
                )));
            }
            out.push(Effect::Dve {
                note: DveNote::Ended(lease, state),
                posted: false,
            });
        }
    }

    /// An offer is held until this IGG's next round; a duplicate of one answered is answered
    /// again at once.
    fn receive_offer(&mut self, offered: &Offered<'_>, now: EmuTime, out: &mut Vec<Effect>) {
        if let Some(again) = self.broker.receive_offer(offered) {
            self.carry(vec![again], now, out);
        }
    }

    /// A requester redirects `req` here at unit `price`: observe what it will pay the first
    /// time the request becomes ours.
    fn redirected_here(
        &mut self,
        from: GridId,
        (negotiation, price): (NegotiationId, f64),
        req: LeaseRequest,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        let (outs, received) = self.broker.on_redirect(from, negotiation, &req, price, now);
        if let Some(amount) = received {
            out.push(Effect::Observe(Observation::Received {
                from,
                lease: req.id,
                negotiation,
                amount,
            }));
        }
        self.carry(outs, now, out);
    }

    /// A provider acknowledges a redirection: observe what this Grid paid for it.
    fn redirect_acknowledged(
        &mut self,
        from: GridId,
        (negotiation, lease): (NegotiationId, RequestId),
        accepted: bool,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        let (outs, payment) = self.broker.on_redirect_ack(negotiation, lease, accepted);
        if let Some(p) = payment {
            out.push(Effect::Observe(Observation::Paid {
                to: from,
                units: p.units,
                amount: p.amount,
            }));
        }
        self.carry(outs, now, out);
    }

    fn redirect_timed_out(&mut self, lease: RequestId, now: EmuTime, out: &mut Vec<Effect>) {
        if !self.broker.awaiting_ack(lease) {
            return;
        }
        if self.settings.broken_protocol {
            // The deliberate bug: give up on the provider and serve the request here, though
            // the provider may already be running it.
            if let Some(Out::Send {
                msg: PeerMsg::Redirect {
                    req, negotiation, ..
                },
                ..
            }) = self.broker.redirect_timed_out(lease).pop()
            {
                self.broker.on_redirect_ack(negotiation, lease, false);
                out.push(self.place(req, now));
            }
            return;
        }
        let outs = self.broker.redirect_timed_out(lease);
        self.carry(outs, now, out);
    }

    /// Turns the broker's outputs into effects (with their timeouts), then observes the
    /// negotiation outcomes.
    fn carry(&mut self, outs: Vec<Out>, now: EmuTime, out: &mut Vec<Effect>) {
        let timeout = self.settings.offer_timeout;
        for o in outs {
            match o {
                Out::Send { peer, msg } => {
                    if !self.peers.contains(&peer) {
                        continue;
                    }
                    let timer = match &msg {
                        PeerMsg::Offer { negotiation, .. } => {
                            out.push(Effect::Observe(Observation::OfferSent(*negotiation)));
                            Some(Timer::Offer(*negotiation))
                        }
                        PeerMsg::Redirect {
                            negotiation, req, ..
                        } => Some(Timer::Redirect(*negotiation, req.id)),
                        _ => None,
                    };
                    out.push(Effect::Send { to: peer, msg });
                    if let Some(t) = timer {
                        // Each resend waits twice as long for the network; an offer waits
                        // for the provider's next round as well.
                        let at = match t {
                            Timer::Offer(n) => {
                                let resends = self.broker.offer_resends(n);
                                now + super::backoff::wait(timeout, resends)
                                    + self.settings.interval.1
                            }
                            Timer::Redirect(_, lease) => {
                                let resends = self.broker.redirect_resends(lease);
                                now + super::backoff::wait(timeout, resends)
                            }
                            Timer::Tick | Timer::Report(_) => now + timeout,
                        };
                        out.push(Effect::Timer { at, timer: t });
                    }
                }
                Out::ServeLocally(req) | Out::ServeForPeer(req) => {
                    let place = self.place(req, now);
                    out.push(place);
                }
            }
        }
        out.push(Effect::Observe(Observation::Outcomes(
            self.broker.outcomes().clone(),
        )));
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

#[cfg(test)]
mod tests {
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
}
