//! The IGG actor: the post office around the pure [`Gateway`]. Every input becomes a call of
//! `Gateway::on`, and its effects become messages, timers and tasks. Placements and
//! relocations run in their own tasks (the Java IGG spawns a thread per message), so they
//! interleave at their await points — while one request waits for an LRMS's answer, the next
//! is already being placed — and report back to the gateway directly, not by message.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use actix::{Actor, Context, Handler};

use super::lrms::Lrms;
use super::messages::{
    AdoptLease, AssignLease, CrashOrRestart, FreeSlots, FromPeer, GridSlots, LeaseEnded,
    LeaseStarted, NegotiationTick, OfferTimeout, PolicyAnswer, PolicyDeadline, ProbeStart,
    RedirectTimeout, RelocateLease, RelocationOutcome, RemoteLeaseTimeout, SetPeers, SlotsRequest,
    SubmitExternal,
};
use super::users::Users;
use super::{Emu, Peer};
use crate::igg::gateway::{DveNote, Effect, Gateway, Input, Observation, Timer};
use crate::lrms::Relocation;
use crate::model::{ClusterId, GridId, LeaseRequest};
use crate::policy::external::ExternalGateway;
use crate::time::TimerHandle;
use crate::trace::ActorId;

/// What the post office's tasks need: the run, this IGG's name and address, its clusters'
/// LRMSs, its DVE manager and its peers.
struct Office {
    emu: Rc<Emu>,
    id: ActorId,
    grid: GridId,
    /// Its own address, for its timers (shared: an actix address clone allocates twice).
    me: Rc<Peer<Igg>>,
    clusters: Vec<(ClusterId, Peer<Lrms>)>,
    /// Whether each cluster's publication is passed on to the others ([`IggSpec`]).
    share_slots: bool,
    dve: Option<Peer<Users>>,
    peers: RefCell<BTreeMap<GridId, Peer<Igg>>>,
    /// Timeouts pending, so that an answer can call its timeout off.
    timers: RefCell<BTreeMap<Timer, TimerHandle>>,
    /// Realtime runs with an external gateway policy: the input whose decision is pending and
    /// the inputs held meanwhile (see [`crate::policy::realtime`]).
    later: Option<Later>,
}

/// What an IGG holds while an external decision is pending: a gateway busy deciding.
#[derive(Default)]
struct Later {
    /// The input whose decision is pending.
    busy: RefCell<Option<Input>>,
    /// Inputs that came meanwhile, in order, with when each came.
    held: RefCell<std::collections::VecDeque<(crate::time::EmuTime, Input)>>,
    /// The pending decision's deadline, called off when it is answered.
    deadline: RefCell<Option<TimerHandle>>,
}

/// Who decides for an IGG: igemu's gateway, or an external process playing it (`igg.
/// implementation`): both take an input at an instant and return the effects to carry out.
pub enum GatewayCore {
    /// igemu's gateway, with its policies.
    Igemu(Box<Gateway>),
    /// An external process.
    External(Box<ExternalGateway>),
}

impl GatewayCore {
    /// The effects of `input` at `now`.
    fn on(&mut self, input: Input, now: crate::time::EmuTime) -> Vec<Effect> {
        match self {
            GatewayCore::Igemu(g) => g.on(input, now),
            GatewayCore::External(g) => g.on(input, now),
        }
    }

    /// Its Grid.
    fn grid(&self) -> GridId {
        match self {
            GatewayCore::Igemu(g) => g.grid(),
            GatewayCore::External(g) => g.grid(),
        }
    }

    /// A copy of igemu's gateway's state, to undo an input (an external gateway is waited
    /// for: nothing to undo).
    fn snapshot(&self) -> Option<Gateway> {
        match self {
            GatewayCore::Igemu(g) => Some((**g).clone()),
            GatewayCore::External(_) => None,
        }
    }

    fn restore(&mut self, earlier: Gateway) {
        if let GatewayCore::Igemu(g) = self {
            g.restore(earlier);
        }
    }
}

/// A Grid's InterGrid Gateway.
pub struct Igg {
    office: Rc<Office>,
    gateway: Rc<RefCell<GatewayCore>>,
}

/// What an IGG is built from.
pub struct IggSpec {
    /// Its own address.
    pub me: Peer<Igg>,
    /// Its clusters' LRMSs.
    pub clusters: Vec<(ClusterId, Peer<Lrms>)>,
    /// Whether it passes each cluster's free slots on to the Grid's other clusters
    /// ([`GridSlots`]): where the Grid has several clusters, one of which preempts, and the
    /// run has migratable leases, whose preemption may take the migration route.
    pub share_slots: bool,
    /// Its DVE manager, if the Grid has external users.
    pub dve: Option<Peer<Users>>,
    /// Its decisions.
    pub gateway: GatewayCore,
    /// Whether its decisions are answered later (a realtime run's external policy): it then
    /// holds its inputs while one is pending.
    pub decides_later: bool,
}

impl Igg {
    /// The IGG `spec` describes.
    pub fn new(emu: Rc<Emu>, spec: IggSpec) -> Igg {
        Igg {
            office: Rc::new(Office {
                emu,
                id: spec.me.id,
                grid: spec.gateway.grid(),
                me: Rc::new(spec.me),
                clusters: spec.clusters,
                share_slots: spec.share_slots,
                dve: spec.dve,
                peers: RefCell::new(BTreeMap::new()),
                timers: RefCell::new(BTreeMap::new()),
                later: spec.decides_later.then(Later::default),
            }),
            gateway: Rc::new(RefCell::new(spec.gateway)),
        }
    }

    /// Forgets a timeout that fired (before the gateway may set the same one again).
    fn fired(&self, timer: Timer) {
        self.office.timers.borrow_mut().remove(&timer);
    }

    /// Feeds `input` to the gateway and carries out its effects.
    fn on(&self, input: Input) {
        on(&self.office, &self.gateway, input);
    }
}

/// Feeds `input` to the gateway and carries out its effects (also from the post office's
/// tasks, which hold the office and the gateway, not the actor).
fn on(office: &Rc<Office>, gateway: &Rc<RefCell<GatewayCore>>, input: Input) {
    for effect in decide(office, gateway, input).unwrap_or_default() {
        carry_out(office, gateway, effect);
    }
}

/// The gateway's effects for `input`; `None` when it is held: a decision of an external
/// policy is pending (this input's, undone until the answer comes, or an earlier one's).
fn decide(
    office: &Rc<Office>,
    gateway: &Rc<RefCell<GatewayCore>>,
    input: Input,
) -> Option<Vec<Effect>> {
    let now = office.emu.now();
    let Some(later) = &office.later else {
        return Some(gateway.borrow_mut().on(input, now));
    };
    if later.busy.borrow().is_some() {
        later.held.borrow_mut().push_back((now, input));
        return None;
    }
    let Some(before) = gateway.borrow().snapshot() else {
        return Some(gateway.borrow_mut().on(input, now));
    };
    let effects = gateway.borrow_mut().on(input.clone(), now);
    let rt = office.emu.plugins.realtime();
    if !rt.is_some_and(|rt| rt.take_pending(office.id)) {
        return Some(effects);
    }
    gateway.borrow_mut().restore(before);
    *later.busy.borrow_mut() = Some(input);
    if let Some(rt) = rt {
        if let Some(id) = rt.waiting_for(office.id) {
            let (me, due) = (Rc::clone(&office.me), now + rt.deadline);
            let handle = (office.emu).send_at_cancellable(due, office.id, me, PolicyDeadline(id));
            *later.deadline.borrow_mut() = Some(handle);
        }
    }
    None
}

/// The pending decision was answered (or is due): its input is handled again, then the
/// inputs held meanwhile, until one leaves a decision pending again.
fn decided(office: &Rc<Office>, gateway: &Rc<RefCell<GatewayCore>>) {
    let Some(later) = &office.later else {
        return;
    };
    if let Some(d) = later.deadline.borrow_mut().take() {
        d.cancel();
    }
    let Some(busy) = later.busy.borrow_mut().take() else {
        return;
    };
    on(office, gateway, busy);
    while later.busy.borrow().is_none() {
        let Some((came, next)) = later.held.borrow_mut().pop_front() else {
            break;
        };
        if let Some(rt) = office.emu.plugins.realtime() {
            rt.held(office.id, office.emu.now().since(came));
        }
        on(office, gateway, next);
    }
}

/// Carries out one effect the gateway's core asked for.
fn carry_out(office: &Rc<Office>, gateway: &Rc<RefCell<GatewayCore>>, effect: Effect) {
    let emu = &office.emu;
    match effect {
        Effect::Send { to, msg } => {
            if let Some(peer) = office.peers.borrow().get(&to) {
                let msg = FromPeer {
                    from: office.grid,
                    msg,
                };
                emu.send_link((office.grid, to), office.id, peer, msg);
            }
        }
        Effect::Timer { at, timer } => set_timer(office, at, timer),
        Effect::Cancel(timer) => {
            if let Some(handle) = office.timers.borrow_mut().remove(&timer) {
                handle.cancel();
            }
        }
        Effect::Probe(req) => probe_then_place(office, gateway, req),
        Effect::Refresh => refresh_then_round(office, gateway),
        Effect::Place { req, order, tries } => {
            let (office, gateway) = (Rc::clone(office), Rc::clone(gateway));
            emu.spawn(async move { assign(&office, &gateway, req, &order, tries).await });
        }
        Effect::Relocate {
            relocation,
            to_try,
            source,
        } => relocate(office, gateway, relocation, to_try, source),
        Effect::Dve { note, posted } => tell_dve(office, note, posted),
        Effect::Observe(o) => observe(office, o),
    }
}

/// Sets the gateway's `timer` for `at`, replacing (cancelling) the one it had; the
/// negotiation tick is never cancelled, so it is not kept.
fn set_timer(office: &Rc<Office>, at: crate::time::EmuTime, timer: Timer) {
    let (emu, me) = (&office.emu, &office.me);
    let id = office.id;
    let handle = match timer {
        Timer::Tick => {
            emu.send_at(at, id, Rc::clone(me), NegotiationTick);
            return;
        }
        Timer::Offer(n) => emu.send_at_cancellable(at, id, Rc::clone(me), OfferTimeout(n)),
        Timer::Redirect(negotiation, lease) => {
            let msg = RedirectTimeout { negotiation, lease };
            emu.send_at_cancellable(at, id, Rc::clone(me), msg)
        }
        Timer::Report(lease) => {
            emu.send_at_cancellable(at, id, Rc::clone(me), RemoteLeaseTimeout(lease))
        }
    };
    if let Some(old) = office.timers.borrow_mut().insert(timer, handle) {
        old.cancel();
    }
}

/// Tells the DVE, if there is one, of a lease's start or end; `posted` tells it after the
/// current message is handled.
fn tell_dve(office: &Rc<Office>, note: DveNote, posted: bool) {
    let Some(dve) = office.dve.clone() else {
        return;
    };
    let (emu, from) = (Rc::clone(&office.emu), office.id);
    let tell = move || match note {
        DveNote::Started(lease, cluster) => emu.send(from, &dve, LeaseStarted { lease, cluster }),
        DveNote::Ended(lease, state) => emu.send(from, &dve, LeaseEnded { lease, state }),
    };
    if posted {
        office.emu.spawn(async move { tell() });
    } else {
        tell();
    }
}

/// Records what the gateway observed in the run's metrics.
fn observe(office: &Rc<Office>, o: Observation) {
    let emu = &office.emu;
    let mut m = emu.metrics.borrow_mut();
    match o {
        Observation::Rejected(lease, reason) => {
            m.reject_reason(lease, reason);
            m.ended(lease, crate::model::RequestState::Rejected, emu.now())
        }
        Observation::OfferSent(n) => m.offer_sent(n, office.grid),
        Observation::OfferSettled(n) => m.offer_settled(n),
        Observation::Received {
            from,
            lease,
            negotiation,
            amount,
        } => {
            m.lease_redirected(emu.now(), lease, from, office.grid);
            m.received(office.grid, from, lease, negotiation, amount)
        }
        Observation::Paid { to, units, amount } => m.paid(office.grid, to, units, amount),
        Observation::Outcomes(o) => m.outcomes(office.grid, &o),
    }
}

/// Passes cluster `from`'s publication on to the Grid's other clusters, if it shares them.
fn share(office: &Office, from: ClusterId, slots: &crate::igg::Published) {
    if !office.share_slots {
        return;
    }
    for (_, lrms) in office.clusters.iter().filter(|(c, _)| *c != from) {
        let msg = GridSlots {
            cluster: from,
            slots: slots.clone(),
        };
        office.emu.send(office.id, lrms, msg);
    }
}

/// The post office's task for a round where clusters publish on request: ask each for its
/// slots, hand them to the gateway, then let the round go on.
fn refresh_then_round(office: &Rc<Office>, gateway: &Rc<RefCell<GatewayCore>>) {
    let emu = Rc::clone(&office.emu);
    let (office, gateway) = (Rc::clone(office), Rc::clone(gateway));
    emu.spawn(async move {
        let (emu, me) = (&office.emu, office.id);
        for (_, lrms) in &office.clusters {
            if let Some(FreeSlots { cluster, slots }) = emu.call(me, lrms, SlotsRequest).await {
                share(&office, cluster, &slots);
                on(&office, &gateway, Input::FreeSlots { cluster, slots });
            }
        }
        on(&office, &gateway, Input::Refreshed);
    });
}

/// The post office's probing task: ask every cluster for its earliest start, let the gateway
/// order them, and place the request in the same task.
fn probe_then_place(office: &Rc<Office>, gateway: &Rc<RefCell<GatewayCore>>, req: LeaseRequest) {
    let emu = Rc::clone(&office.emu);
    let (office, gateway) = (Rc::clone(office), Rc::clone(gateway));
    emu.spawn(async move {
        let (emu, me) = (&office.emu, office.id);
        let mut offers = Vec::with_capacity(office.clusters.len());
        for (_, lrms) in &office.clusters {
            let offer = emu.call(me, lrms, ProbeStart(req.clone())).await;
            offers.push(offer.and_then(|o| o.start).map(|t| t.as_micros()));
        }
        let effects = decide(&office, &gateway, Input::Probed { req, offers });
        for effect in effects.unwrap_or_default() {
            match effect {
                Effect::Place { req, order, tries } => {
                    assign(&office, &gateway, req, &order, tries).await
                }
                other => carry_out(&office, &gateway, other),
            }
        }
    });
}

/// Offers the request to the clusters in `order` (at most `tries`); if none takes it, tells
/// the gateway.
async fn assign(
    office: &Rc<Office>,
    gateway: &Rc<RefCell<GatewayCore>>,
    req: LeaseRequest,
    order: &[usize],
    tries: usize,
) {
    let (emu, me) = (&office.emu, office.id);
    let mut refusals = Vec::new();
    for &j in order.iter().take(tries) {
        let answer = emu
            .call(me, &office.clusters[j].1, AssignLease(req.clone()))
            .await;
        match answer {
            Some(a) if a.accepted() => return,
            Some(a) => refusals.extend(a.refusal),
            None => {}
        }
    }
    let refusal = crate::lrms::Refusal::combine(&refusals);
    on(office, gateway, Input::Unplaced { req, refusal });
}

/// The post office's relocation task: offer the lease to `to_try` in turn; the first that
/// adopts it takes it over; the gateway moves its load and the source learns where it went.
fn relocate(
    office: &Rc<Office>,
    gateway: &Rc<RefCell<GatewayCore>>,
    relocation: Relocation,
    to_try: Vec<ClusterId>,
    source: ClusterId,
) {
    let emu = Rc::clone(&office.emu);
    let (office, gateway) = (Rc::clone(office), Rc::clone(gateway));
    emu.spawn(async move {
        let (emu, me) = (&office.emu, office.id);
        let lease = relocation.req.id;
        let mut to = None;
        for cluster in to_try {
            let Some((_, lrms)) = office.clusters.iter().find(|(c, _)| *c == cluster) else {
                continue;
            };
            let answer = emu.call(me, lrms, AdoptLease(relocation.clone())).await;
            if answer.is_some_and(|a| a.accepted) {
                to = Some(cluster);
                break;
            }
        }
        on(&office, &gateway, Input::Relocated { lease, to });
        let source = office.clusters.iter().find(|(c, _)| *c == source);
        if let Some((_, source)) = source {
            emu.send(me, source, RelocationOutcome { lease, to });
        }
    });
}

impl super::Shell for Igg {
    fn emu(&self) -> &super::Emu {
        &self.office.emu
    }
}

handles_caused!(
    Igg;
    CrashOrRestart,
    FreeSlots,
    FromPeer,
    LeaseEnded,
    LeaseStarted,
    NegotiationTick,
    OfferTimeout,
    PolicyAnswer,
    PolicyDeadline,
    RedirectTimeout,
    RelocateLease,
    RemoteLeaseTimeout,
    SubmitExternal
);

impl Actor for Igg {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        let office = &self.office;
        if office.later.is_some() {
            super::wake_on_answers(&office.emu, office.id, Rc::clone(&office.me));
        }
    }
}

impl Handler<PolicyAnswer> for Igg {
    type Result = ();
    fn handle(&mut self, _: PolicyAnswer, _: &mut Context<Self>) {
        decided(&self.office, &self.gateway);
    }
}

impl Handler<PolicyDeadline> for Igg {
    type Result = ();
    fn handle(&mut self, msg: PolicyDeadline, _: &mut Context<Self>) {
        let office = &self.office;
        let expired = (office.emu.plugins.realtime())
            .is_some_and(|rt| rt.expire(office.id, msg.0, office.emu.now()));
        if expired {
            decided(office, &self.gateway);
        }
    }
}

impl Handler<SetPeers> for Igg {
    type Result = ();
    fn handle(&mut self, msg: SetPeers, _: &mut Context<Self>) {
        let office = &self.office;
        let emu = &office.emu;
        let peers: BTreeMap<GridId, Peer<Igg>> = msg
            .peers
            .into_iter()
            .filter(|(g, _)| *g != office.grid)
            .collect();
        let grids: Vec<GridId> = peers.keys().copied().collect();
        *office.peers.borrow_mut() = peers;
        self.on(Input::Peers {
            peers: grids,
            providers: msg.providers,
        });
        let me = &office.me;
        for crash in emu
            .faults
            .borrow()
            .config()
            .crashes
            .iter()
            .filter(|c| c.grid == office.grid)
        {
            emu.send_at(
                crash.at,
                office.id,
                Rc::clone(me),
                CrashOrRestart { crash: true },
            );
            emu.send_at(
                crash.at + crash.down_for,
                office.id,
                Rc::clone(me),
                CrashOrRestart { crash: false },
            );
        }
    }
}

impl Handler<SubmitExternal> for Igg {
    type Result = ();
    fn handle(&mut self, msg: SubmitExternal, _: &mut Context<Self>) {
        self.on(Input::Submit(msg.0));
    }
}

impl Handler<FreeSlots> for Igg {
    type Result = ();
    fn handle(&mut self, msg: FreeSlots, _: &mut Context<Self>) {
        share(&self.office, msg.cluster, &msg.slots);
        self.on(Input::FreeSlots {
            cluster: msg.cluster,
            slots: msg.slots,
        });
    }
}

impl Handler<NegotiationTick> for Igg {
    type Result = ();
    fn handle(&mut self, _: NegotiationTick, _: &mut Context<Self>) {
        self.on(Input::Tick);
    }
}

impl Handler<FromPeer> for Igg {
    type Result = ();
    fn handle(&mut self, FromPeer { from, msg }: FromPeer, _: &mut Context<Self>) {
        self.on(Input::Peer { from, msg });
    }
}

impl Handler<OfferTimeout> for Igg {
    type Result = ();
    fn handle(&mut self, msg: OfferTimeout, _: &mut Context<Self>) {
        self.fired(Timer::Offer(msg.0));
        self.on(Input::OfferTimeout(msg.0));
    }
}

impl Handler<RedirectTimeout> for Igg {
    type Result = ();
    fn handle(&mut self, msg: RedirectTimeout, _: &mut Context<Self>) {
        self.fired(Timer::Redirect(msg.negotiation, msg.lease));
        self.on(Input::RedirectTimeout(msg.lease));
    }
}

impl Handler<RemoteLeaseTimeout> for Igg {
    type Result = ();
    fn handle(&mut self, msg: RemoteLeaseTimeout, _: &mut Context<Self>) {
        self.fired(Timer::Report(msg.0));
        self.on(Input::ReportTimeout(msg.0));
    }
}

impl Handler<LeaseStarted> for Igg {
    type Result = ();
    fn handle(&mut self, msg: LeaseStarted, _: &mut Context<Self>) {
        let cores = self.office.emu.request(msg.lease).cores();
        self.on(Input::LeaseStarted {
            lease: msg.lease,
            cluster: msg.cluster,
            cores,
        });
    }
}

impl Handler<LeaseEnded> for Igg {
    type Result = ();
    fn handle(&mut self, msg: LeaseEnded, _: &mut Context<Self>) {
        self.on(Input::LeaseEnded {
            lease: msg.lease,
            state: msg.state,
        });
    }
}

impl Handler<CrashOrRestart> for Igg {
    type Result = ();
    fn handle(&mut self, msg: CrashOrRestart, _: &mut Context<Self>) {
        self.on(Input::Crash(msg.crash));
    }
}

impl Handler<RelocateLease> for Igg {
    type Result = ();
    fn handle(&mut self, msg: RelocateLease, _: &mut Context<Self>) {
        self.on(Input::Relocate {
            relocation: msg.relocation,
            from: msg.from,
        });
    }
}
