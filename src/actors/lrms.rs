//! The LRMS actor: receives local requests from its users and external leases (new or
//! migrating) from its IGG, asks the pure core (`crate::lrms::Core`) what to do, and carries
//! out its actions: creating VM instances on hosts, sending them their timed plans, waking
//! itself when the core asks, telling requesters when leases start and end, offering
//! suspended migratable leases to the IGG, and reporting overheads to the metrics.

use std::collections::BTreeMap;
use std::rc::Rc;

use actix::{Actor, AsyncContext, Context, Handler, MessageResult};

use super::host::Host;
use super::igg::Igg;
use super::messages::{
    AdoptAnswer, AdoptLease, AssignAnswer, AssignLease, LeaseEnded, LeaseStarted, ProbeStart,
    RelocateLease, RelocationOutcome, StartOffer, SubmitLocal, Tick, VmCommand, VmRef, VmReport,
};
use super::messages::{
    FreeSlots, GridSlots, PolicyAnswer, PolicyDeadline, PublishTick, Reallocate, SlotsRequest,
};
use super::users::Users;
use super::vm::{Vm, VmSpec};
use super::{Emu, Own, OwnCell, Peer};
use crate::igg::slots::Published;
use crate::lrms::provider::{Forecast, Partitions, FORECAST_WINDOW};
use crate::lrms::{Action, Config, Core, Policies, VmPlan};
use crate::metrics::Violation;
use crate::model::{ClusterId, GridId, HostSpec, Origin, RequestId, RequestState};
use crate::time::{EmuDuration, EmuTime};
use crate::trace::ActorId;

pub use crate::plan::Publishing;

/// A cluster's local resource management system.
pub struct Lrms {
    emu: Rc<Emu>,
    id: ActorId,
    cluster: ClusterId,
    grid: GridId,
    igg: Peer<Igg>,
    users: Option<Peer<Users>>,
    /// Its hosts' addresses, shared by the VMs placed on each.
    hosts: Vec<Rc<Peer<Host>>>,
    publishing: Option<Publishing>,
    /// The local-load estimate of a partitioned provider, and the local partition it sizes
    /// (cores).
    forecast: Option<(Forecast, u64)>,
    core: Core,
    /// Each lease's VMs: their addresses, shared with the VMs themselves (for the steps they
    /// plan).
    vms: BTreeMap<RequestId, Vec<Rc<Peer<Vm>>>>,
    /// Its own address, for its timed sends and its VMs' reports (one, shared: an actix
    /// address clone allocates twice).
    me: OwnCell<Lrms>,
    /// Realtime runs with an external preemption policy: the local request whose decision is
    /// pending and the inputs held meanwhile (see [`crate::policy::realtime`]).
    later: Option<Later>,
    /// The Grid's other clusters' last publications, passed on by the IGG ([`GridSlots`]).
    elsewhere: BTreeMap<ClusterId, Published>,
}

/// What an LRMS holds while an external decision is pending: a scheduler busy deciding.
#[derive(Default)]
struct Later {
    /// The local request whose preemption decision is pending.
    busy: Option<SubmitLocal>,
    /// Inputs that came meanwhile, in order, with when each came.
    held: std::collections::VecDeque<(EmuTime, Held)>,
    /// The pending decision's deadline, called off when it is answered.
    deadline: Option<crate::time::TimerHandle>,
}

/// An input held while a decision is pending.
enum Held {
    Local(SubmitLocal),
    Tick,
    Report(VmReport),
    Publish,
    Reallocate,
    Outcome(RelocationOutcome),
    Slots(GridSlots),
}

/// What an LRMS is built from.
pub struct LrmsSpec {
    /// Its cluster.
    pub cluster: ClusterId,
    /// The cluster's Grid.
    pub grid: GridId,
    /// Its Grid's IGG.
    pub igg: Peer<Igg>,
    /// Its local users, if any.
    pub users: Option<Peer<Users>>,
    /// Its hosts, and what each holds.
    pub hosts: Vec<(Peer<Host>, HostSpec)>,
    /// The core's configuration (scheduling, timings).
    pub config: Config,
    /// The core's policies (preemption, admission).
    pub policies: Policies,
    /// Whether and how it publishes free slots.
    pub publishing: Option<Publishing>,
    /// Whether its preemption decisions are answered later (a realtime run's external
    /// policy): it then holds its inputs while one is pending.
    pub decides_later: bool,
}

impl Lrms {
    /// The LRMS `spec` describes.
    pub fn new(emu: Rc<Emu>, id: ActorId, spec: LrmsSpec) -> Lrms {
        let (hosts, host_specs): (Vec<Rc<Peer<Host>>>, Vec<HostSpec>) = (spec.hosts.into_iter())
            .map(|(peer, host)| (Rc::new(peer), host))
            .unzip();
        let core = Core::new(&host_specs, spec.config, spec.policies);
        Lrms {
            emu,
            id,
            cluster: spec.cluster,
            grid: spec.grid,
            igg: spec.igg,
            users: spec.users,
            hosts,
            forecast: match spec.publishing.as_ref().map(|p| p.partitions) {
                Some(Partitions::Forecast) => {
                    Some((Forecast::new(FORECAST_WINDOW, EmuTime::ZERO), 0))
                }
                Some(Partitions::Fixed) => Some((Forecast::mean(EmuTime::ZERO), 0)),
                _ => None,
            },
            publishing: spec.publishing,
            core,
            vms: BTreeMap::new(),
            me: OwnCell::default(),
            later: spec.decides_later.then(Later::default),
            elsewhere: BTreeMap::new(),
        }
    }

    /// Whether an external decision is pending: inputs are held.
    fn busy(&self) -> bool {
        self.later.as_ref().is_some_and(|l| l.busy.is_some())
    }

    /// Holds `input` until the pending decision is answered.
    fn hold(&mut self, input: Held) {
        let now = self.emu.now();
        if let Some(l) = &mut self.later {
            l.held.push_back((now, input));
        }
    }

    /// Handles a held input.
    fn handle_held(&mut self, held: Held, ctx: &mut Context<Self>) {
        match held {
            Held::Local(m) => self.local(m, false, ctx),
            Held::Tick => self.tick(ctx),
            Held::Report(m) => self.report(m, ctx),
            Held::Publish => self.publish(ctx),
            Held::Reallocate => self.reallocate(ctx),
            Held::Outcome(m) => self.outcome(m, ctx),
            Held::Slots(m) => self.grid_slots(m),
        }
    }

    /// The pending decision was answered (or is due): the local request is handled again,
    /// then the inputs held meanwhile, until one leaves a decision pending again.
    fn decided(&mut self, ctx: &mut Context<Self>) {
        let Some(l) = &mut self.later else {
            return;
        };
        if let Some(d) = l.deadline.take() {
            d.cancel();
        }
        let Some(busy) = l.busy.take() else {
            return;
        };
        self.local(busy, true, ctx);
        loop {
            let next = match &mut self.later {
                Some(l) if l.busy.is_none() => l.held.pop_front(),
                _ => None,
            };
            let Some((came, h)) = next else { break };
            if let Some(rt) = self.emu.plugins.realtime() {
                rt.held(self.id, self.emu.now().since(came));
            }
            self.handle_held(h, ctx);
        }
    }

    /// This LRMS's own address, for its timed sends and its VMs (see [`Own`]).
    fn own(&self, ctx: &Context<Self>) -> Rc<Own<Lrms>> {
        self.me.get(self, self.id, ctx)
    }

    fn origin(&self, lease: RequestId) -> Origin {
        self.emu.request(lease).origin
    }

    fn tell_requester<M>(&self, lease: RequestId, msg: M)
    where
        M: actix::Message<Result = ()> + crate::trace::Traced + Send + 'static,
        Peer<Igg>: super::Inbox<M>,
        Peer<Users>: super::Inbox<M>,
    {
        match (self.origin(lease), &self.users) {
            (Origin::External, _) => self.emu.send(self.id, &self.igg, msg),
            (Origin::Local, Some(u)) => self.emu.send(self.id, u, msg),
            (Origin::Local, None) => {}
        }
    }

    fn command(&self, lease: RequestId, plan: VmPlan, keep_until: Option<EmuTime>, vm: &Peer<Vm>) {
        let msg = VmCommand {
            vm: VmRef { lease, vm: plan.vm },
            keep_until,
            steps: plan.steps,
        };
        self.emu.send(self.id, vm, msg);
    }

    /// Starts one VM actor per plan on its host and sends it its plan.
    fn run_vms(&mut self, lease: RequestId, plans: Vec<VmPlan>, ctx: &mut Context<Self>) {
        let req = self.emu.request(lease);
        let (cores, mem_mb) = (req.cores_per_vm, req.mem_mb);
        let owner = self.own(ctx);
        let mut peers = Vec::with_capacity(plans.len());
        for plan in plans {
            let id = self.emu.tracer.register_vm(lease, plan.vm);
            let host = Rc::clone(&self.hosts[usize::from(plan.host)]);
            let vm = VmRef { lease, vm: plan.vm };
            // Started as `Actor::start` starts it, but with its address taken once, before:
            // the VM shares it (an actix address clone allocates twice).
            let vm_ctx = Context::<Vm>::new();
            let peer = Rc::new(Peer {
                id,
                addr: vm_ctx.address(),
            });
            let spec = VmSpec {
                owner: Rc::clone(&owner),
                host,
                vm,
                cores,
                mem_mb,
                place: (self.cluster, plan.host),
                me: Rc::downgrade(&peer),
            };
            let actor = Vm::new(Rc::clone(&self.emu), id, spec, plan.initial);
            actix::spawn(vm_ctx.into_future(actor));
            self.command(lease, plan, None, &peer);
            peers.push(peer);
        }
        self.vms.insert(lease, peers);
    }

    /// The actions that only report to the metrics.
    fn observe(&self, action: Action) {
        match action {
            Action::Charge {
                lease,
                overhead,
                preempted,
                vms,
                displaced,
                lease_type,
            } => {
                self.emu.metrics.borrow_mut().charge(
                    self.cluster,
                    lease,
                    overhead,
                    preempted.then_some((vms, displaced, lease_type)),
                );
            }
            Action::Terms {
                lease,
                vms,
                deadline,
            } => {
                self.emu.metrics.borrow_mut().terms(lease, vms, deadline);
            }
            Action::Adjust { lease, delta_us } => {
                self.emu
                    .metrics
                    .borrow_mut()
                    .adjust(self.cluster, lease, delta_us);
            }
            Action::Decision(d) => {
                tracing::debug!(
                    local = d.local.0,
                    set = ?d.set,
                    cost_s = d.cost.as_secs_f64(),
                    exact = d.exact,
                    "preemption decision"
                );
                self.emu
                    .metrics
                    .borrow_mut()
                    .decision(self.cluster, &d, self.emu.now());
            }
            Action::Worked { lease, work } => {
                self.emu
                    .metrics
                    .borrow_mut()
                    .worked(self.cluster, lease, work);
            }
            Action::Violation(what) => {
                let what = Violation::Lrms {
                    lrms: self.emu.tracer.name(self.id).to_string(),
                    what,
                };
                self.emu.metrics.borrow_mut().violation(what);
            }
            _ => {} // carried out by `apply`
        }
    }

    /// Carries out the core's actions.
    fn apply(&mut self, actions: Vec<Action>, ctx: &mut Context<Self>) {
        let mut log = LeaseNotes::new(self.emu.metrics.borrow().records_lease_events());
        for action in actions {
            match action {
                Action::RunVms { lease, plans } => self.launch(lease, plans, &log, ctx),
                Action::CommandVms {
                    lease,
                    after,
                    plans,
                } => self.command_vms(lease, after, plans, &mut log),
                Action::Started(lease) => self.lease_started(lease),
                Action::Ended(lease, state) => self.lease_ended(lease, state),
                Action::Wake(at) => {
                    let me = self.own(ctx);
                    self.emu.send_at(at, self.id, me, Tick);
                }
                Action::Relocate(relocation) => {
                    let msg = RelocateLease {
                        from: self.cluster,
                        relocation,
                    };
                    self.emu.send(self.id, &self.igg, msg);
                }
                observation => {
                    if log.on {
                        self.note(&observation, &mut log);
                    }
                    self.observe(observation)
                }
            }
        }
        self.book_displaced(log);
    }

    /// Runs `lease`'s VMs by `plans`, logging it as the lease's event when `log` is on.
    fn launch(
        &mut self,
        lease: RequestId,
        plans: Vec<VmPlan>,
        log: &LeaseNotes,
        ctx: &mut Context<Self>,
    ) {
        if log.on {
            let hosts = plans.iter().map(|p| p.host).collect();
            let (now, place) = (self.emu.now(), (self.grid, self.cluster));
            let vms = plans.len() as u32;
            let mut m = self.emu.metrics.borrow_mut();
            m.lease_runs(now, lease, place, hosts, vms);
        }
        self.run_vms(lease, plans, ctx)
    }

    /// Gives `lease`'s running VMs new steps by `plans`, from `after` (noted in `log` when
    /// it is on, for the preemption that follows).
    fn command_vms(
        &mut self,
        lease: RequestId,
        after: Option<EmuTime>,
        plans: Vec<VmPlan>,
        log: &mut LeaseNotes,
    ) {
        if log.on {
            let hosts = plans.iter().map(|p| p.host).collect();
            log.commanded.push((lease, hosts, after));
        }
        let Some(peers) = self.vms.get(&lease) else {
            return;
        };
        for plan in plans {
            if let Some(vm) = peers.get(plan.vm as usize) {
                self.command(lease, plan, after, vm);
            }
        }
    }

    /// `lease` started here: recorded, and its requester told.
    fn lease_started(&self, lease: RequestId) {
        self.emu
            .metrics
            .borrow_mut()
            .started(lease, self.cluster, self.grid, self.emu.now());
        self.tell_requester(
            lease,
            LeaseStarted {
                lease,
                cluster: self.cluster,
            },
        );
    }

    /// `lease` ended here in `state`: its VMs forgotten, recorded, and its requester told.
    fn lease_ended(&mut self, lease: RequestId, state: RequestState) {
        self.vms.remove(&lease);
        self.emu
            .metrics
            .borrow_mut()
            .ended(lease, state, self.emu.now());
        self.tell_requester(lease, LeaseEnded { lease, state });
    }

    /// Logs (when `log` is on) the new reservation of each lease the batch displaced, made in
    /// the same decision.
    fn book_displaced(&self, log: LeaseNotes) {
        if log.on && !log.displaced.is_empty() {
            let (now, place) = (self.emu.now(), (self.grid, self.cluster));
            let mut m = self.emu.metrics.borrow_mut();
            for lease in log.displaced {
                if let Some(booking) = self.core.booking(lease) {
                    m.lease_booked(now, lease, place, booking, log.decided_for);
                }
            }
        }
    }

    /// Logs a preemption or displacement as the lease's event (`log`: what this batch of
    /// actions did before), and remembers the local request a decision was for.
    fn note(&self, action: &Action, log: &mut LeaseNotes) {
        match action {
            Action::Charge {
                lease,
                preempted: true,
                vms,
                displaced,
                ..
            } => {
                let commanded = log.commanded.iter().rev().find(|c| c.0 == *lease);
                let (hosts, from) = commanded.map_or((Vec::new(), None), |c| (c.1.clone(), c.2));
                let moved = *displaced > 0;
                if moved {
                    log.displaced.push(*lease);
                }
                let (now, place) = (self.emu.now(), (self.grid, self.cluster));
                let what = (hosts, if moved { *displaced } else { *vms }, from);
                let mut m = self.emu.metrics.borrow_mut();
                m.lease_vacated(now, *lease, place, what, moved);
            }
            Action::Decision(d) => log.decided_for = Some(d.local),
            _ => {}
        }
    }

    /// Logs that lease `lease` was taken in here, with the reservation it was given.
    fn note_accepted(&self, lease: RequestId) {
        let mut m = self.emu.metrics.borrow_mut();
        if !m.records_lease_events() {
            return;
        }
        if let Some(booking) = self.core.booking(lease) {
            let place = (self.grid, self.cluster);
            m.lease_accepted(self.emu.now(), lease, place, booking);
        }
    }
}

/// What a batch of the core's actions did that the lease log needs (gathered only when it
/// is recorded, `on`).
struct LeaseNotes {
    on: bool,
    /// Leases whose VMs were given new steps: their hosts and when the steps apply from.
    commanded: Vec<(RequestId, Vec<u16>, Option<EmuTime>)>,
    /// Leases whose reservations were displaced.
    displaced: Vec<RequestId>,
    /// The local request of the batch's preemption decision.
    decided_for: Option<RequestId>,
}

impl LeaseNotes {
    fn new(on: bool) -> LeaseNotes {
        LeaseNotes {
            on,
            commanded: Vec::new(),
            displaced: Vec::new(),
            decided_for: None,
        }
    }
}

impl Lrms {
    /// The cluster's free time slots now, as `p` says to publish them: with a forecast, the
    /// Grid partition's (the forecast local load its local jobs do not hold is kept back),
    /// priced at the load that leaves (eq. 1 on the load estimate).
    fn slots(&self, p: &Publishing) -> FreeSlots {
        let now = self.emu.now();
        let (free, load) = self.core.free_slots(now, p.horizon);
        let mut slots = Published::new(now, p.horizon, (free, load), p.cores, p.unit_cost);
        if let Some((_, reserve)) = &self.forecast {
            let local = self.core.local_usage(now, slots.until);
            crate::lrms::provider::keep_back(&mut slots, now, &local, *reserve, p.unit_cost);
        }
        FreeSlots {
            cluster: self.cluster,
            slots,
        }
    }

    /// Whether the local partition is sized by a forecast (`Mf`).
    fn forecasts(&self) -> bool {
        self.publishing
            .as_ref()
            .is_some_and(|p| p.partitions == Partitions::Forecast)
    }

    /// A partitioned provider before it publishes: the local partition sized for the next
    /// interval; with a forecast, the queue first scheduled conservatively (Algorithm 1).
    fn forecast_for_publication(&mut self, ctx: &mut Context<Self>) {
        let now = self.emu.now();
        let forecasts = self.forecasts();
        let Some((f, reserve)) = &mut self.forecast else {
            return;
        };
        *reserve = f.publish(now).round() as u64;
        let local = *reserve;
        self.core.resize_partitions(local);
        if forecasts {
            let actions = self.core.reserve_all(now);
            self.apply(actions, ctx);
        }
    }
}

emu_shell!(Lrms);

handles_caused!(
    Lrms;
    GridSlots,
    PolicyAnswer,
    PolicyDeadline,
    PublishTick,
    Reallocate,
    RelocationOutcome,
    SubmitLocal,
    Tick,
    VmReport;
    calls: AdoptLease,
    AssignLease,
    ProbeStart,
    SlotsRequest
);

impl Actor for Lrms {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.later.is_some() {
            super::wake_on_answers(&self.emu, self.id, self.own(ctx));
        }
        if self
            .publishing
            .as_ref()
            .is_some_and(|p| p.interval.is_some())
        {
            let me = self.own(ctx);
            self.emu.send_at(self.emu.now(), self.id, me, PublishTick);
        }
    }
}

impl Handler<PublishTick> for Lrms {
    type Result = ();
    fn handle(&mut self, _: PublishTick, ctx: &mut Context<Self>) {
        if self.busy() {
            self.hold(Held::Publish);
        } else {
            self.publish(ctx);
        }
    }
}

impl Handler<Reallocate> for Lrms {
    type Result = ();
    fn handle(&mut self, _: Reallocate, ctx: &mut Context<Self>) {
        if self.busy() {
            self.hold(Held::Reallocate);
        } else {
            self.reallocate(ctx);
        }
    }
}

impl Handler<RelocationOutcome> for Lrms {
    type Result = ();
    fn handle(&mut self, msg: RelocationOutcome, ctx: &mut Context<Self>) {
        if self.busy() {
            self.hold(Held::Outcome(msg));
        } else {
            self.outcome(msg, ctx);
        }
    }
}

impl Lrms {
    /// A periodic publication of the free slots (and the next one set).
    fn publish(&mut self, ctx: &mut Context<Self>) {
        let Some(interval) = self.publishing.as_ref().and_then(|p| p.interval) else {
            return;
        };
        self.forecast_for_publication(ctx);
        if let Some(p) = &self.publishing {
            let slots = self.slots(p);
            self.emu.send(self.id, &self.igg, slots);
        }
        let me = self.own(ctx);
        let now = self.emu.now();
        self.emu
            .send_at(now + interval, self.id, me.clone(), PublishTick);
        if self.forecasts() {
            let half = EmuDuration::from_micros(interval.as_micros() / 2);
            self.emu.send_at(now + half, self.id, me, Reallocate);
        }
    }

    /// A forecasting provider's check half an interval after it published.
    fn reallocate(&mut self, ctx: &mut Context<Self>) {
        let now = self.emu.now();
        let Some((f, reserve)) = &mut self.forecast else {
            return;
        };
        // An underestimate: the partition is resized to the load seen, the queue backfilled
        // (locals first) and the gateway told.
        let Some(seen) = f.reallocation(now) else {
            return;
        };
        *reserve = seen.round() as u64;
        let local = *reserve;
        self.core.resize_partitions(local);
        let actions = self.core.reserve_all(now);
        self.apply(actions, ctx);
        if let Some(p) = &self.publishing {
            let slots = self.slots(p);
            self.emu.send(self.id, &self.igg, slots);
        }
    }

    /// Where a relocation of a lease of this cluster ended.
    fn outcome(&mut self, msg: RelocationOutcome, ctx: &mut Context<Self>) {
        let actions = self
            .core
            .relocated(msg.lease, msg.to.is_some(), self.emu.now());
        if msg.to.is_some() {
            self.vms.remove(&msg.lease);
        }
        self.apply(actions, ctx);
    }
}

impl Handler<SlotsRequest> for Lrms {
    type Result = MessageResult<SlotsRequest>;
    fn handle(&mut self, _: SlotsRequest, ctx: &mut Context<Self>) -> Self::Result {
        // Each answer is a publication (Algorithm 1's getFreeTimeSlots runs whenever the
        // provider sends its availability): a partitioned provider sizes its partition for it.
        self.forecast_for_publication(ctx);
        // An IGG asks only where its clusters publish; without settings, nothing is free.
        let fallback = Publishing {
            interval: None,
            horizon: EmuDuration::ZERO,
            cores: 0,
            unit_cost: 0.0,
            partitions: Partitions::Single,
        };
        MessageResult(self.slots(self.publishing.as_ref().unwrap_or(&fallback)))
    }
}

impl Handler<AssignLease> for Lrms {
    type Result = MessageResult<AssignLease>;
    fn handle(&mut self, msg: AssignLease, ctx: &mut Context<Self>) -> Self::Result {
        let lease = msg.0.id;
        self.emu.metrics.borrow_mut().offered(self.cluster);
        let refusal = match self.core.submit_external(msg.0, self.emu.now()) {
            Ok(actions) => {
                self.note_accepted(lease);
                self.apply(actions, ctx);
                None
            }
            Err(why) => {
                tracing::debug!(lease = lease.0, ?why, "LRMS refuses an external lease");
                self.emu.metrics.borrow_mut().refused(self.cluster);
                Some(why)
            }
        };
        MessageResult(AssignAnswer { lease, refusal })
    }
}

impl Handler<GridSlots> for Lrms {
    type Result = ();
    fn handle(&mut self, msg: GridSlots, _: &mut Context<Self>) {
        if self.busy() {
            self.hold(Held::Slots(msg));
        } else {
            self.grid_slots(msg);
        }
    }
}

impl Lrms {
    /// Another cluster of the Grid published: the core decides with its slots from now on.
    fn grid_slots(&mut self, msg: GridSlots) {
        self.elsewhere.insert(msg.cluster, msg.slots);
        self.core
            .set_elsewhere(self.elsewhere.values().cloned().collect());
    }
}

impl Handler<SubmitLocal> for Lrms {
    type Result = ();
    fn handle(&mut self, msg: SubmitLocal, ctx: &mut Context<Self>) {
        if self.busy() {
            self.hold(Held::Local(msg));
        } else {
            self.local(msg, false, ctx);
        }
    }
}

impl Lrms {
    /// A local request (`again`: handled again, its pending decision answered).
    fn local(&mut self, msg: SubmitLocal, again: bool, ctx: &mut Context<Self>) {
        let lease = msg.0.id;
        if !again {
            if let Some((f, _)) = &mut self.forecast {
                f.local_submitted(msg.0.cores(), msg.0.duration);
            }
        }
        // A copy to go back to if the decision is left pending (realtime external policy).
        let before = self.later.is_some().then(|| self.core.clone());
        let decided = self.core.submit_local(msg.0.clone(), self.emu.now());
        if let Some(before) = before {
            if self.went_pending() {
                self.core.restore(before);
                self.wait_for(msg, ctx);
                return;
            }
        }
        match decided {
            Ok(actions) => {
                self.note_accepted(lease);
                self.apply(actions, ctx)
            }
            Err(why) => {
                tracing::debug!(lease = lease.0, ?why, "LRMS rejects a local request");
                self.emu
                    .metrics
                    .borrow_mut()
                    .reject_reason(lease, why.reason());
                self.apply(vec![Action::Ended(lease, RequestState::Rejected)], ctx);
            }
        }
    }

    /// Whether the input just handled left an external decision pending.
    fn went_pending(&self) -> bool {
        (self.emu.plugins.realtime()).is_some_and(|rt| rt.take_pending(self.id))
    }

    /// Holds `msg` until its pending decision is answered, or due.
    fn wait_for(&mut self, msg: SubmitLocal, ctx: &mut Context<Self>) {
        let Some(rt) = self.emu.plugins.realtime().cloned() else {
            return;
        };
        let deadline = rt.waiting_for(self.id).map(|id| {
            let me = self.own(ctx);
            let due = self.emu.now() + rt.deadline;
            self.emu
                .send_at_cancellable(due, self.id, me, PolicyDeadline(id))
        });
        if let Some(l) = &mut self.later {
            l.busy = Some(msg);
            l.deadline = deadline;
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let actions = self.core.tick(self.emu.now());
        self.apply(actions, ctx);
    }

    fn report(&mut self, msg: VmReport, ctx: &mut Context<Self>) {
        let actions = self
            .core
            .vm_reported(msg.vm.lease, msg.state, self.emu.now());
        self.apply(actions, ctx);
    }
}

impl Handler<PolicyAnswer> for Lrms {
    type Result = ();
    fn handle(&mut self, _: PolicyAnswer, ctx: &mut Context<Self>) {
        self.decided(ctx);
    }
}

impl Handler<PolicyDeadline> for Lrms {
    type Result = ();
    fn handle(&mut self, msg: PolicyDeadline, ctx: &mut Context<Self>) {
        let expired = (self.emu.plugins.realtime())
            .is_some_and(|rt| rt.expire(self.id, msg.0, self.emu.now()));
        if expired {
            self.decided(ctx);
        }
    }
}

impl Handler<Tick> for Lrms {
    type Result = ();
    fn handle(&mut self, _: Tick, ctx: &mut Context<Self>) {
        if self.busy() {
            self.hold(Held::Tick);
        } else {
            self.tick(ctx);
        }
    }
}

impl Handler<VmReport> for Lrms {
    type Result = ();
    fn handle(&mut self, msg: VmReport, ctx: &mut Context<Self>) {
        if self.busy() {
            self.hold(Held::Report(msg));
        } else {
            self.report(msg, ctx);
        }
    }
}

impl Handler<AdoptLease> for Lrms {
    type Result = MessageResult<AdoptLease>;
    fn handle(&mut self, msg: AdoptLease, ctx: &mut Context<Self>) -> Self::Result {
        let lease = msg.0.req.id;
        let accepted = match self.core.adopt(&msg.0, self.emu.now()) {
            Ok(actions) => {
                let (now, place) = (self.emu.now(), (self.grid, self.cluster));
                let mut m = self.emu.metrics.borrow_mut();
                m.migrated(lease, place, now);
                if let Some(booking) = self.core.booking(lease) {
                    m.lease_booked(now, lease, place, booking, None);
                }
                drop(m);
                self.apply(actions, ctx);
                true
            }
            Err(_) => false,
        };
        MessageResult(AdoptAnswer { lease, accepted })
    }
}

impl Handler<ProbeStart> for Lrms {
    type Result = MessageResult<ProbeStart>;
    fn handle(&mut self, msg: ProbeStart, _: &mut Context<Self>) -> Self::Result {
        let start = self.core.probe(&msg.0, self.emu.now());
        MessageResult(StartOffer {
            lease: msg.0.id,
            start,
        })
    }
}
