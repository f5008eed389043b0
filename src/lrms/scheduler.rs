//! The LRMS's pure core: a contention-aware lease scheduler (papers 003 §4–6, 001 §3–4.3).
//!
//! * External leases are scheduled with backfilling on the host-level availability profile:
//!   FCFS (no overtaking), conservative (every waiting lease holds a reservation), or EASY
//!   with `pivots` reserved leases (the rest start only if they fit now without delaying a
//!   reservation; a large `pivots` behaves as conservative). Deadline-constrained leases always
//!   get a reservation and are rejected at admission if it would end after their deadline.
//!   With compression on, capacity freed early (by a preemption, a cancellation) moves every
//!   waiting reservation forward where it can go, never back. With a backfill depth (Slurm's
//!   `bf_max_job_test`), a scheduling pass considers only the first waiting leases of the
//!   queue: those further back hold no reservation and cannot start until they come closer.
//! * Local requests are decided **when they arrive** (paper 001 §4.1, local steps 1–5): served
//!   in their requested interval `[start, start + duration)` — reserved at once, so no external
//!   lease arriving later can take it — or rejected. When the interval is not free, the leases
//!   in play (running leases and waiting reservations holding hosts in it, paper 003 Fig. 2)
//!   form a [`Contention`], the policy (`policy.rs`) picks a minimal candidate set, and its
//!   leases are vacated *just in time*: as late as possible so that every VM is off its host
//!   by the requested start. An advance request therefore starts exactly at its start; only
//!   when its notice is shorter than the preemption it needs, or when it asks for "now", does
//!   it start late — by the pause and suspension time of the VMs preempted for it, never more
//!   (paper 003 Table III: 720 s → 745.6 s). If that lateness would carry the lease into
//!   leases that start after its interval, the interval is extended and the decision made
//!   again over it; if the set then chosen vacates sooner, the decision is made once more
//!   over the interval the lease will hold, among the leases chosen, so that what is carried
//!   out is minimal for the interval finally used.
//! * Preemption is planned to the microsecond with the overhead model: pauses one VM after
//!   another, suspensions and resumptions one VM at a time on the shared storage
//!   (`storage.rs`), stops for cancellable leases. The plan goes to the VMs as timed steps.
//!   Suspended leases go back in the queue (deadline leases first, by deadline, then by
//!   submission order) and resume where there is room; migratable ones are offered to the
//!   other clusters of the Grid first.
//! * Overhead is charged when a decision is made, with the cost function the policy ranked by
//!   ([`OverheadModel::set_cost`]), for the operations actually planned: when the shared
//!   storage is so busy that a lease's suspension could only end after the lease would have
//!   finished, it is left to finish and charged nothing; a migratable lease that finds no
//!   other cluster and resumes here gets the difference back ([`Action::Adjust`]).
//! * Durations are stated at a reference speed; this cluster runs them in time inversely
//!   proportional to its speed ([`Speed`]).
//!
//! The actor shell calls [`Core::submit_external`], [`Core::submit_local`], [`Core::tick`]
//! (at the times the core asks for), [`Core::vm_reported`], and the migration calls, and
//! carries out the returned [`Action`]s.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use super::admission::{
    AdmissionAsk, AdmissionControl, AdmissionPolicy, Monitor, QueueCounts, Verdict,
};
use super::availability::{Availability, UsageSteps, VmShape};
use super::contention::{Candidate, Contention};
use super::migration::Route;
use super::overhead::{Operation, OverheadModel};
use super::partition::{Charge, Partitions};
use super::policy::PreemptionPolicy;
use super::preemption::{self, Preemption};
use super::queue::{Listed, Queue, Rank};
use super::storage::Storage;
use crate::igg::Published;
use crate::model::HostSpec;
use crate::model::{LeaseRequest, LeaseType, Origin, RequestId, RequestState, VmEvent, VmState};
use crate::time::{stream_seed, EmuDuration, EmuTime};

/// How many times a decision may widen the local request's interval to cover its lateness.
const MAX_WINDOW_EXTENSIONS: usize = 4;

/// How waiting external leases are scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backfilling {
    /// First come, first served: no lease starts before an earlier one.
    Fcfs,
    /// Every waiting lease holds a reservation; later ones may fill holes.
    Conservative,
    /// Only the first `pivots` waiting leases hold reservations.
    Easy {
        /// How many waiting leases hold reservations.
        pivots: u32,
    },
}

named_enum! {
    /// How a cluster treats its local users' requests (`lrms.locals`).
    LocalRequests {
        /// Decided on arrival: reserved in their interval, preempting external leases if the
        /// policy allows, or rejected (papers 001 §4.1 and 003).
        Reserved => "reserved",
        /// Queued with the external leases and scheduled by the same backfilling, without
        /// priority and without preemption (paper 004's resource providers).
        Queued => "queued",
    }
}

named_enum! {
    /// How a cluster runs an external moldable request (`lrms.moldable`, paper 002).
    Moldable {
        /// Its work (tasks × task duration) spreads over every VM the cluster can hold, which
        /// then run for work / VMs (§IV: "moldable applications which can spread over all
        /// available resources in a cluster"; §V-B: "the duration … of the request changes
        /// accordingly").
        Spread => "spread",
        /// As the single-server model assumes: the request holds every VM the cluster can
        /// hold — the cluster serves one at a time — for its whole work, tasks × task duration
        /// (§V-B: "ω = meanNumberofTasks ∗ meanTaskDuration", the mean service time
        /// Algorithm 1 is given).
        SingleServer => "single-server",
    }
}

/// How long a moldable request of `tasks` tasks of `task` each runs on the `vms` VMs it is
/// given under `reading`: its work `tasks × task` spread over them (rounded up to the
/// microsecond), or the whole work as one server's job. Local requests are always spread:
/// paper 002's model needs their queue stable (eq. 4, ρ_l = λ_j/μ_l < 1), which at Table II's
/// local load (αl = 4 s) only spread requests are.
pub(crate) fn moldable_run(
    reading: Moldable,
    tasks: u32,
    task: EmuDuration,
    vms: u64,
) -> EmuDuration {
    let work = u128::from(tasks) * u128::from(task.as_micros());
    let run = match reading {
        Moldable::Spread => work.div_ceil(u128::from(vms.max(1))),
        Moldable::SingleServer => work,
    };
    EmuDuration::from_micros(u64::try_from(run).unwrap_or(u64::MAX))
}

/// How fast a cluster runs work stated at the reference speed: a lease of duration `d` takes
/// `d · reference / cluster` here (paper 000 §5.2: clusters of 2000, 3000 and 2100 MIPS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Speed {
    /// The speed durations are stated at, MIPS.
    pub reference_mips: u64,
    /// This cluster's speed, MIPS.
    pub cluster_mips: u64,
}

impl Default for Speed {
    fn default() -> Self {
        Speed {
            reference_mips: 1,
            cluster_mips: 1,
        }
    }
}

impl Speed {
    /// How long work of reference duration `d` takes here (to the microsecond, rounded).
    pub fn local(self, d: EmuDuration) -> EmuDuration {
        scale(d, self.reference_mips, self.cluster_mips)
    }

    /// The reference duration of work that takes `d` here.
    pub fn reference(self, d: EmuDuration) -> EmuDuration {
        scale(d, self.cluster_mips, self.reference_mips)
    }
}

fn scale(d: EmuDuration, num: u64, den: u64) -> EmuDuration {
    if num == den || den == 0 {
        return d;
    }
    let x = (u128::from(d.as_micros()) * u128::from(num) + u128::from(den) / 2) / u128::from(den);
    EmuDuration::from_micros(u64::try_from(x).unwrap_or(u64::MAX))
}

/// Settings of one LRMS core.
#[derive(Clone, Debug)]
pub struct Config {
    /// Scheduling of external leases.
    pub backfilling: Backfilling,
    /// Operation times.
    pub overhead: OverheadModel,
    /// VM deployment and boot.
    pub boot: EmuDuration,
    /// Seed for the policy's random choices (MOML sampling).
    pub seed: u64,
    /// Whether the Grid has another cluster a migratable lease could move to; if not,
    /// migratable leases are suspended and resumed here.
    pub can_migrate: bool,
    /// Whether VM memory limits placement (false: memory may be overcommitted).
    pub enforce_memory: bool,
    /// Search steps a preemption decision may take when room is not additive.
    pub search_budget: usize,
    /// This cluster's speed relative to the reference.
    pub speed: Speed,
    /// Whether waiting reservations are moved forward whenever leases are placed again
    /// after capacity was freed early (schedule compression).
    pub compress: bool,
    /// How local requests are treated.
    pub locals: LocalRequests,
    /// How an external moldable request runs here (`lrms.moldable`).
    pub moldable: Moldable,
    /// Multiple resource partitions (paper 004 §4.2): when the scheduler backfills, queued
    /// local requests go ahead of waiting Grid leases (priority scheduling: "the waiting
    /// queue is ordered by priority when the scheduler is backfilling"); reservations already
    /// made stay. Each partition has a size ([`Core::resize_partitions`]) and a job borrows
    /// from the other only its idle cores ([`super::partition`]). The local partition's share
    /// of the free slots is kept from the IGG by the actor's publication.
    pub partitions: bool,
    /// How many waiting leases, from the front of the queue, a scheduling pass considers
    /// (`lrms.backfill_depth`, Slurm's `bf_max_job_test`); `None`: all of them.
    pub backfill_depth: Option<usize>,
}

/// The policies an LRMS core decides with (its decision points).
pub struct Policies {
    /// Which leases to preempt for a local request.
    pub preemption: Box<dyn Preemption>,
    /// Admission control of external requests.
    pub admission: Box<dyn AdmissionControl>,
}

impl Policies {
    /// Shipped policies, as named by these values.
    pub fn builtin(preemption: PreemptionPolicy, admission: AdmissionPolicy) -> Policies {
        Policies {
            preemption: preemption::builtin(preemption),
            admission: super::admission::builtin(admission),
        }
    }
}

/// The timed steps one VM instance must take.
#[derive(Clone, Debug, PartialEq)]
pub struct VmPlan {
    /// VM index within the lease.
    pub vm: u32,
    /// Host index in the cluster.
    pub host: u16,
    /// The state the instance starts in.
    pub initial: VmState,
    /// Events and when they happen (shared by the VMs of a lease that take the same ones).
    pub steps: Steps,
}

/// A VM's timed events, in time order, shared: a fresh lease's VMs all take the same ones,
/// and a reservation's plan is cloned again when it starts.
pub type Steps = std::sync::Arc<[(EmuTime, VmEvent)]>;

/// A preemption decision, as made (for metrics, traces and tests).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The local request it was made for.
    pub local: RequestId,
    /// The interval the local request needed: widened if its lateness required, and then
    /// the interval it holds (from the requested start to the end of its run).
    pub window: (EmuTime, EmuTime),
    /// The leases in the chosen set and what happens to each, in arrival order.
    pub set: Vec<(RequestId, Operation)>,
    /// The set's cost: its operations plus δ if any reschedules — exactly what is charged.
    pub cost: EmuDuration,
    /// The δ included in `cost` (zero when nothing is rescheduled).
    pub reschedule: EmuDuration,
    /// When the last VM of the set is off its host.
    pub vacated_by: EmuTime,
    /// When the local lease starts.
    pub local_start: EmuTime,
    /// Whether the policy's choice is provably its optimum.
    pub exact: bool,
}

/// What the LRMS actor must do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Create VM instances on hosts and have them take these steps.
    RunVms {
        /// The lease.
        lease: RequestId,
        /// One plan per VM.
        plans: Vec<VmPlan>,
    },
    /// Give existing VM instances new steps (preemption): each drops its pending steps due
    /// after `after` (all of them with `None`) and takes these.
    CommandVms {
        /// The lease.
        lease: RequestId,
        /// Pending steps due at or before this time are kept.
        after: Option<EmuTime>,
        /// One plan per VM (`initial` is the state they are in).
        plans: Vec<VmPlan>,
    },
    /// The lease started for the first time (tell the requester).
    Started(RequestId),
    /// The lease reached a terminal state (tell the requester).
    Ended(RequestId, RequestState),
    /// Call [`Core::tick`] at this time.
    Wake(EmuTime),
    /// Offer a suspended migratable lease to the other clusters of the Grid.
    Relocate(Relocation),
    /// Account overhead (and, if `preempted`, one preemption of `vms` running VMs) to a lease.
    Charge {
        /// The lease.
        lease: RequestId,
        /// Time lost to operations.
        overhead: EmuDuration,
        /// Whether this is a preemption.
        preempted: bool,
        /// Running VMs preempted.
        vms: u32,
        /// VMs of a reservation moved later (not started: no VM touched).
        displaced: u32,
        /// Its lease type (preemptions are also counted per type).
        lease_type: LeaseType,
    },
    /// A request was accepted with terms resolved here: a moldable request's VMs (all the
    /// cluster's) and a deadline from its ratio.
    Terms {
        /// The lease.
        lease: RequestId,
        /// VMs it runs on here.
        vms: u32,
        /// Its deadline, if any.
        deadline: Option<EmuTime>,
    },
    /// Correct a lease's overhead: a migration that found no other cluster became a local
    /// suspension (`delta_us` = eq. 7 − eq. 8 for it, either sign).
    Adjust {
        /// The lease.
        lease: RequestId,
        /// Correction, µs.
        delta_us: i64,
    },
    /// A preemption decision was made (δ is charged once per decision that reschedules).
    Decision(Decision),
    /// The lease worked `work` on this cluster (an episode of it ended: completion or
    /// preemption).
    Worked {
        /// The lease.
        lease: RequestId,
        /// Time its VMs spent working here, in this cluster's time.
        work: EmuDuration,
    },
    /// The core found its own invariant broken (reported, never a panic).
    Violation(String),
}

/// What a lease holds on a cluster: the VMs it runs on, and its reservation's start and hosts
/// (`None` while it waits without one).
pub type Booking<'a> = (u32, Option<(EmuTime, &'a [u16])>);

/// A migratable lease looking for a new cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Relocation {
    /// The lease as submitted.
    pub req: LeaseRequest,
    /// Work already done, at the reference speed.
    pub work_done: EmuDuration,
    /// When each VM's memory image is on the source's storage.
    pub images_ready: Vec<EmuTime>,
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// In the queue (maybe with a reservation).
    Waiting,
    /// VMs deployed or resuming or working.
    Running,
    /// VMs being stopped (cancellation).
    Cancelling,
    /// Offered to other clusters; decided within the same instant.
    Relocating,
}

#[derive(Clone, Debug)]
struct Reservation {
    start: EmuTime,
    end: EmuTime,
    run_from: EmuTime,
    hosts: Vec<u16>,
    plans: Vec<VmPlan>,
}

#[derive(Clone, Debug)]
struct Lease {
    req: LeaseRequest,
    /// Run time here: the request's duration at this cluster's speed.
    duration: EmuDuration,
    phase: Phase,
    order: u64,
    res: Option<Reservation>,
    /// Work done, in this cluster's time.
    work_done: EmuDuration,
    images_ready: Option<Vec<EmuTime>>,
    migrated_in: bool,
    not_before: EmuTime,
    reported: u32,
    started_once: bool,
    /// Whether it waits in the backfilling queue (external leases, and local ones where
    /// locals are queued); a local lease that is not was reserved on arrival.
    queued: bool,
    /// How it is listed in the core's [`Queue`] (kept by [`Core::sync`]).
    listed: Option<Listed>,
    /// The cores its reservation takes from each partition (with partitions).
    charge: Option<Charge>,
}

/// What one VM of `req` needs.
fn shape_of(req: &LeaseRequest) -> VmShape {
    VmShape {
        cores: req.cores_per_vm,
        mem_mb: req.mem_mb,
    }
}

impl Lease {
    /// A lease that has just arrived: waiting, nothing done, its duration at this cluster's
    /// `speed`, `order`-th in the queue.
    fn waiting(req: LeaseRequest, speed: Speed, order: u64, now: EmuTime) -> Lease {
        Lease {
            duration: speed.local(req.duration),
            req,
            phase: Phase::Waiting,
            order,
            res: None,
            work_done: EmuDuration::ZERO,
            images_ready: None,
            migrated_in: false,
            not_before: now,
            reported: 0,
            started_once: false,
            queued: true,
            listed: None,
            charge: None,
        }
    }

    fn shape(&self) -> VmShape {
        shape_of(&self.req)
    }
    fn remaining(&self) -> EmuDuration {
        self.duration.saturating_sub(self.work_done)
    }
    fn is_local(&self) -> bool {
        self.req.origin == Origin::Local
    }
    fn deadline(&self) -> Option<EmuTime> {
        self.req
            .deadline
            .filter(|_| self.req.lease_type.deadline_constrained())
    }
}

/// A timed plan for running a lease from `start`.
struct Plan {
    end: EmuTime,
    run_from: EmuTime,
    steps: Vec<(VmState, Steps)>,
    bookings: Vec<(EmuTime, EmuDuration)>,
}

/// How one lease of a chosen set is vacated.
#[derive(Clone, Debug)]
struct Vacating {
    id: RequestId,
    op: Operation,
    /// When its first VM is paused or stopped.
    from: EmuTime,
    /// Per VM: (pause or stop, suspension start, off the host).
    vms: Vec<(EmuTime, EmuTime, EmuTime)>,
}

/// A preemption decision ready to be carried out: how its set is vacated, when the last VM
/// is off its host, the end of the interval it was decided over, and whether the policy's
/// choice was provably its optimum.
struct Decided {
    vacating: Vec<Vacating>,
    done: EmuTime,
    end: EmuTime,
    exact: bool,
}

/// The LRMS core of one cluster.
pub struct Core {
    cfg: Config,
    preemption: Box<dyn Preemption>,
    admission: Box<dyn AdmissionControl>,
    monitor: Monitor,
    avail: Availability,
    storage: Storage,
    leases: BTreeMap<RequestId, Lease>,
    next_order: u64,
    wakes: BTreeSet<EmuTime>,
    /// Reservations by start, for [`Core::start_due`]: every waiting lease whose reservation
    /// starts at `.0` has an entry (put in when it is committed, or when a lease holding one
    /// becomes waiting again; taken out when the reservation is dropped or replaced); an
    /// entry whose lease moved on otherwise is dropped once its start has passed. A tick then
    /// looks at the reservations due, not at every lease.
    starts: BTreeSet<(EmuTime, RequestId)>,
    /// The leases waiting in the backfilling queue, in queue order.
    queue: Queue,
    decisions: u64,
    /// The other clusters of the Grid as they last published their free slots (the migration
    /// route of a preemption, [`Route`]).
    elsewhere: Vec<Published>,
    /// The partitions' sizes and charges (used with [`Config::partitions`]).
    parts: Partitions,
    /// The instant of the input being handled: a start then may borrow (set by each input).
    now: Cell<EmuTime>,
}

/// Why the core refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// More than the cluster could ever hold.
    TooLarge,
    /// It would end after its deadline.
    Deadline,
    /// Local request: no room in its interval even after preempting every preemptable lease
    /// (or the policy does not preempt).
    NoRoom,
    /// Admission control: the external queue is full.
    QueueFull,
}

impl Refusal {
    /// The reason a request refused this way is rejected with (when nothing else takes it).
    pub fn reason(self) -> crate::model::RejectReason {
        use crate::model::RejectReason;
        match self {
            Refusal::TooLarge => RejectReason::TooLarge,
            Refusal::Deadline => RejectReason::Deadline,
            Refusal::NoRoom => RejectReason::NoRoom,
            Refusal::QueueFull => RejectReason::QueueLimit,
        }
    }

    /// What several clusters' refusals of one request say together: too large only if every
    /// cluster found it too large, else the first other refusal in the order they were
    /// tried (the cluster the IGG preferred came closest to taking it).
    pub fn combine(refusals: &[Refusal]) -> Option<Refusal> {
        refusals
            .iter()
            .copied()
            .find(|r| *r != Refusal::TooLarge)
            .or_else(|| refusals.first().copied())
    }
}

/// A read-only view of one lease, for inspection and tests.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseView {
    /// The lease.
    pub id: RequestId,
    /// Whether it is running (VMs deployed, resuming or working).
    pub running: bool,
    /// Its current reservation or running episode: (start, work starts, end).
    pub slot: Option<(EmuTime, EmuTime, EmuTime)>,
    /// Work done here so far, in this cluster's time.
    pub work_done: EmuDuration,
    /// Its run time here.
    pub duration: EmuDuration,
    /// Whether it has memory images to resume from.
    pub suspended: bool,
}

/// A copy of a core's state, for what-if scheduling (the debug check of `Core::stays_put`)
/// and to undo an input ([`Core::restore`]): it has the state but not the policies — a copy
/// never decides, so it gets ones that never preempt and admit everything (a user's policy
/// need not be clonable).
impl Clone for Core {
    fn clone(&self) -> Core {
        Core {
            cfg: self.cfg.clone(),
            preemption: Box::new(preemption::Nop),
            admission: Box::new(super::admission::Cacp),
            monitor: self.monitor.clone(),
            avail: self.avail.clone(),
            storage: self.storage.clone(),
            leases: self.leases.clone(),
            next_order: self.next_order,
            wakes: self.wakes.clone(),
            starts: self.starts.clone(),
            queue: self.queue.clone(),
            decisions: self.decisions,
            elsewhere: self.elsewhere.clone(),
            parts: self.parts.clone(),
            now: self.now.clone(),
        }
    }
}

impl Core {
    /// Puts back the state of `earlier`, a copy of this core taken before ([`Clone`]),
    /// keeping this core's policies: what an input did is undone (a realtime run whose
    /// external decision is pending handles the input again once it is answered).
    pub fn restore(&mut self, earlier: Core) {
        let preemption = std::mem::replace(&mut self.preemption, Box::new(preemption::Nop));
        let admission = std::mem::replace(&mut self.admission, Box::new(super::admission::Cacp));
        *self = earlier;
        self.preemption = preemption;
        self.admission = admission;
    }
}

/// A cluster's external leases, counted for its admission policy.
struct ExternalQueue<'a>(&'a BTreeMap<RequestId, Lease>);

impl QueueCounts for ExternalQueue<'_> {
    fn external(&self) -> (usize, usize) {
        let ext = self.0.values().filter(|l| !l.is_local());
        let (mut waiting, mut held) = (0, 0);
        for l in ext {
            held += 1;
            if l.phase == Phase::Waiting && !l.started_once {
                waiting += 1;
            }
        }
        (waiting, held)
    }
}

/// Time intervals where capacity was freed, merged and sorted (compression's skip test).
struct Freed(Vec<(EmuTime, EmuTime)>);

impl Freed {
    fn new(intervals: Vec<(EmuTime, EmuTime)>) -> Freed {
        let mut f = Freed(Vec::with_capacity(intervals.len()));
        for (s, e) in intervals {
            f.add(s, e);
        }
        f
    }

    /// Adds `[start, end)`, merging it with the intervals it touches.
    fn add(&mut self, start: EmuTime, end: EmuTime) {
        if end <= start {
            return;
        }
        let lo = self.0.partition_point(|&(_, e)| e < start);
        let hi = self.0.partition_point(|&(s, _)| s <= end);
        let (mut s, mut e) = (start, end);
        if lo < hi {
            s = s.min(self.0[lo].0);
            e = e.max(self.0[hi - 1].1);
        }
        self.0.splice(lo..hi, std::iter::once((s, e)));
    }
}

impl Core {
    /// A core for a cluster with these hosts, deciding with `policies`.
    pub fn new(hosts: &[HostSpec], cfg: Config, policies: Policies) -> Core {
        let mut avail = Availability::new(hosts, cfg.enforce_memory);
        let total = avail.total_cores();
        if cfg.compress {
            avail.track_freed();
        }
        Core {
            avail,
            preemption: policies.preemption,
            admission: policies.admission,
            monitor: Monitor::new(),
            cfg,
            storage: Storage::default(),
            leases: BTreeMap::new(),
            next_order: 0,
            wakes: BTreeSet::new(),
            starts: BTreeSet::new(),
            queue: Queue::default(),
            decisions: 0,
            elsewhere: Vec::new(),
            parts: Partitions::new(total),
            now: Cell::new(EmuTime::ZERO),
        }
    }

    /// The other clusters of the Grid as they last published their free slots: where a
    /// migratable lease that cannot keep its deadline here may be migrated to ([`Route`]).
    pub fn set_elsewhere(&mut self, published: Vec<Published>) {
        self.elsewhere = published;
    }

    /// The availability profile (for inspection and tests).
    pub fn availability(&self) -> &Availability {
        &self.avail
    }

    /// Every lease the core holds, in id order (for inspection and tests).
    pub fn leases(&self) -> Vec<LeaseView> {
        self.leases
            .iter()
            .map(|(id, l)| LeaseView {
                id: *id,
                running: l.phase == Phase::Running,
                slot: l.res.as_ref().map(|r| (r.start, r.run_from, r.end)),
                work_done: l.work_done,
                duration: l.duration,
                suspended: l.images_ready.is_some(),
            })
            .collect()
    }

    /// What lease `id` holds here, if this core holds it: the VMs it runs on, and its
    /// reservation's start and hosts (`None` while it waits without one).
    pub fn booking(&self, id: RequestId) -> Option<Booking<'_>> {
        let l = self.leases.get(&id)?;
        Some((l.req.vms, l.res.as_ref().map(|r| (r.start, &r.hosts[..]))))
    }

    /// The cluster's free cores over `[now, now + horizon)` as an ordered step function, and
    /// the share of its capacity in use over that window (for the price of eq. 1).
    pub fn free_slots(&self, now: EmuTime, horizon: EmuDuration) -> (BTreeMap<EmuTime, u64>, f64) {
        let total = self.avail.total_cores();
        let steps = self.avail.usage_steps();
        let until = now + horizon;
        let mut free = BTreeMap::new();
        free.insert(now, total.saturating_sub(steps.used_at(now)));
        for (t, used) in steps.points().filter(|(t, _)| *t > now && *t < until) {
            free.insert(t, total.saturating_sub(used));
        }
        let mut used_units = 0.0;
        let times: Vec<EmuTime> = free.keys().copied().chain(std::iter::once(until)).collect();
        for w in times.windows(2) {
            used_units += (total - free[&w[0]]) as f64 * w[1].since(w[0]).as_secs_f64();
        }
        let cap = total as f64 * horizon.as_secs_f64();
        (free, if cap > 0.0 { used_units / cap } else { 0.0 })
    }

    /// Work done by a lease so far and work left, in this cluster's time (for tests of the
    /// invariant done + remaining = duration).
    pub fn work_done(&self, lease: RequestId) -> Option<(EmuDuration, EmuDuration)> {
        self.leases
            .get(&lease)
            .map(|l| (l.work_done, l.remaining()))
    }

    fn insert(&mut self, req: LeaseRequest, now: EmuTime) -> RequestId {
        let id = req.id;
        let order = self.next_order;
        self.next_order += 1;
        let mut lease = Lease::waiting(req, self.cfg.speed, order, now);
        lease.queued = !lease.is_local() || self.cfg.locals == LocalRequests::Queued;
        self.leases.insert(id, lease);
        self.sync(id);
        id
    }

    /// Where lease `l` (`id`) stands in the queue: with partitions, Grid leases after local
    /// ones; deadline leases first, by deadline; then in submission order.
    fn rank(&self, id: RequestId, l: &Lease) -> Rank {
        let deadline = l.deadline();
        let grid_after_locals = u8::from(self.cfg.partitions && !l.is_local());
        (
            (grid_after_locals, u8::from(deadline.is_none())),
            deadline.unwrap_or(EmuTime::NEVER),
            l.order,
            id,
        )
    }

    /// Brings lease `id`'s listing in the queue up to date with its phase and reservation:
    /// called after every change of either (and before a lease is forgotten).
    fn sync(&mut self, id: RequestId) {
        let Some(l) = self.leases.get(&id) else {
            return;
        };
        let now = (l.phase == Phase::Waiting && l.queued).then(|| Listed {
            rank: self.rank(id, l),
            partition: self.partition(l),
            reserved: l.res.as_ref().map(|r| r.start),
        });
        let was = l.listed;
        self.queue.relist(was, now);
        if let Some(l) = self.leases.get_mut(&id) {
            l.listed = now;
        }
    }

    /// Forgets lease `id` (and its place in the queue).
    fn forget(&mut self, id: RequestId) {
        self.uncharge(id);
        if let Some(l) = self.leases.remove(&id) {
            self.queue.relist(l.listed, None);
        }
    }

    // ---- planning ----

    /// The timed plan for running `l` from `start`: boot a fresh lease, or resume its images
    /// one VM at a time on the shared storage and unpause them one after another.
    fn plan(&self, l: &Lease, start: EmuTime) -> Plan {
        let v = l.req.vms as usize;
        let remaining = l.remaining();
        match &l.images_ready {
            None => {
                let run_from = start + self.cfg.boot;
                let end = run_from + remaining;
                let steps: Steps = [
                    (start, VmEvent::Deploy),
                    (run_from, VmEvent::Booted),
                    (end, VmEvent::Completed),
                ]
                .into();
                Plan {
                    end,
                    run_from,
                    steps: vec![(VmState::Pending, steps); v],
                    bookings: Vec::new(),
                }
            }
            Some(images) => {
                let m = &self.cfg.overhead;
                let tr = m.resume_vm(l.req.mem_mb);
                let mut bookings = Vec::with_capacity(v);
                let mut cursor = start;
                let mut per_vm: Vec<(VmState, Vec<(EmuTime, VmEvent)>)> = Vec::with_capacity(v);
                for &ready in images.iter().take(v) {
                    // Each VM's resumption starts after the previous one's ends, so the
                    // plan's own bookings never overlap what is asked of the storage.
                    let not_before = cursor.max(ready).max(start);
                    let r = self.storage.earliest(not_before, tr);
                    bookings.push((r, tr));
                    cursor = r + tr;
                    let mut steps = Vec::new();
                    let initial = if l.migrated_in {
                        steps.push((ready.max(start), VmEvent::Migrated));
                        VmState::Migrating
                    } else {
                        VmState::Suspended
                    };
                    steps.push((r, VmEvent::Resume));
                    steps.push((r + tr, VmEvent::Resumed));
                    per_vm.push((initial, steps));
                }
                let resumed = cursor;
                for (j, (_, steps)) in per_vm.iter_mut().enumerate() {
                    steps.push((resumed + m.pause * (j as u64 + 1), VmEvent::Unpause));
                }
                let run_from = resumed + m.pause * v as u64;
                let end = run_from + remaining;
                for (_, steps) in per_vm.iter_mut() {
                    steps.push((end, VmEvent::Completed));
                }
                Plan {
                    end,
                    run_from,
                    steps: (per_vm.into_iter())
                        .map(|(initial, steps)| (initial, steps.into()))
                        .collect(),
                    bookings,
                }
            }
        }
    }

    /// The earliest reservation for `id` at or after `not_before` (hosts held from the start
    /// of the plan to its end).
    fn find_slot(&self, id: RequestId, not_before: EmuTime) -> Option<(EmuTime, Plan, Vec<u16>)> {
        self.find_slot_for(&self.leases[&id], not_before)
    }

    fn find_slot_for(&self, l: &Lease, not_before: EmuTime) -> Option<(EmuTime, Plan, Vec<u16>)> {
        self.find_slot_before(l, not_before, EmuTime::NEVER)
    }

    /// [`Core::find_slot_for`] among the starts before `before` only.
    fn find_slot_before(
        &self,
        l: &Lease,
        not_before: EmuTime,
        before: EmuTime,
    ) -> Option<(EmuTime, Plan, Vec<u16>)> {
        let candidates = self.avail.start_candidates(not_before);
        self.find_slot_among(l, candidates.take_while(|&t| t < before))
    }

    /// The first of `candidates` (ascending starts) at which `l` can be reserved.
    fn find_slot_among(
        &self,
        l: &Lease,
        candidates: impl Iterator<Item = EmuTime>,
    ) -> Option<(EmuTime, Plan, Vec<u16>)> {
        let steps = self.avail.usage_steps();
        self.first_placement(l, candidates, Some(&steps))
    }

    /// [`Core::find_slot_among`], testing each start on the cluster-wide use `quick` first
    /// (`None`: the caller has, for the window the placement takes).
    fn first_placement(
        &self,
        l: &Lease,
        candidates: impl Iterator<Item = EmuTime>,
        quick: Option<&UsageSteps>,
    ) -> Option<(EmuTime, Plan, Vec<u16>)> {
        if !self.avail.could_ever_fit(l.req.vms, l.shape()) {
            return None;
        }
        let (cores, total) = (l.req.cores(), self.avail.total_cores());
        let mut quick = quick.map(UsageSteps::walk);
        // With partitions, their use cumulated once for every start tried.
        let parts = self.sized_partitions().then(|| self.parts.profile());
        let (k, now) = (self.partition(l), self.now.get());
        // Starts before this one fail the quick test (a step over the limit that every
        // window as long from them meets), so they are passed over untried.
        let mut untried_before = EmuTime::ZERO;
        // Hosts found too full at some instant (by this search or an earlier one) are
        // skipped for the starts whose windows hold it.
        for t in candidates {
            if t < untried_before {
                continue;
            }
            // The plan's length only depends on t through storage waits, which only make it
            // longer: the plain length is a valid quick test.
            if let Some(steps) = quick.as_mut() {
                if let Err(next) = steps.fits_or_next(t, t + l.remaining(), cores, total) {
                    untried_before = next;
                    continue;
                }
            }
            // A fresh lease's plan is only built for the start it gets.
            let end = match l.images_ready {
                None => t + self.cfg.boot + l.remaining(),
                Some(_) => self.plan(l, t).end,
            };
            if quick
                .as_mut()
                .is_some_and(|steps| !steps.fits(t, end, cores, total))
                || parts
                    .as_ref()
                    .is_some_and(|p| p.take(k, cores, (t, end), t <= now).is_none())
            {
                continue;
            }
            let placed = self.avail.place(l.req.vms, l.shape(), t, end);
            if let Some(hosts) = placed {
                return Some((t, self.plan(l, t), hosts));
            }
        }
        None
    }

    /// Whether `id` can start exactly at `t`.
    fn fits_at(&self, id: RequestId, t: EmuTime) -> Option<(Plan, Vec<u16>)> {
        let l = &self.leases[&id];
        let plan = self.plan(l, t);
        self.partition_take(l, t, plan.end)?;
        self.avail
            .place(l.req.vms, l.shape(), t, plan.end)
            .map(|hosts| (plan, hosts))
    }

    /// With partitions, the cores lease `l` would take from each over `[start, end)` by
    /// Lawson and Smirni's rule ([`Partitions::take`]; a start at the instant of the input
    /// may borrow), or `None` if the rule does not let it run then. Without, no limit.
    fn partition_take(&self, l: &Lease, start: EmuTime, end: EmuTime) -> Option<[u64; 2]> {
        if !self.sized_partitions() {
            return Some([0, 0]);
        }
        let now = start <= self.now.get();
        self.parts
            .take(self.partition(l), l.req.cores(), (start, end), now)
    }

    /// Records lease `id`'s charge for a reservation over `[start, end)` (with partitions),
    /// replacing the one it had.
    fn charge(&mut self, id: RequestId, start: EmuTime, end: EmuTime) {
        if !self.sized_partitions() {
            return;
        }
        self.uncharge(id);
        let l = &self.leases[&id];
        let now = start <= self.now.get();
        let taken = (self.parts).take_anyway(self.partition(l), l.req.cores(), (start, end), now);
        let c = Charge { start, end, taken };
        self.parts.add(&c);
        if let Some(l) = self.leases.get_mut(&id) {
            l.charge = Some(c);
        }
    }

    /// Whether the partitions' sizes and borrowing rule apply: with partitions where local
    /// jobs queue with the Grid's (paper 004's providers). Local requests decided on arrival
    /// (reserved, preempting if they must) stand outside any partition's queue.
    fn sized_partitions(&self) -> bool {
        self.cfg.partitions && self.cfg.locals == LocalRequests::Queued
    }

    /// Takes lease `id`'s charge out of its partitions.
    fn uncharge(&mut self, id: RequestId) {
        if let Some(c) = self.leases.get_mut(&id).and_then(|l| l.charge.take()) {
            self.parts.remove(&c);
        }
    }

    /// Sizes the local partition at `local` cores, the Grid's at the rest (paper 004 §4.2:
    /// at each publication, by the forecast or the mean local load; at a reallocation, by
    /// the load seen). Charges made before stay.
    pub fn resize_partitions(&mut self, local: u64) {
        self.parts.resize(local);
    }

    /// Each partition's size in cores: (Grid, local).
    pub fn partition_sizes(&self) -> (u64, u64) {
        let [g, l] = self.parts.limits();
        (g, l)
    }

    fn commit(
        &mut self,
        id: RequestId,
        start: EmuTime,
        plan: Plan,
        hosts: Vec<u16>,
        out: &mut Vec<Action>,
    ) {
        let shape = self.leases[&id].shape();
        self.avail.reserve(id, &hosts, shape, start, plan.end);
        self.charge(id, start, plan.end);
        for (t, d) in &plan.bookings {
            self.storage.book(id, *t, *d);
        }
        let plans = plan
            .steps
            .into_iter()
            .enumerate()
            .map(|(vm, (initial, steps))| VmPlan {
                vm: vm as u32,
                host: hosts[vm],
                initial,
                steps,
            })
            .collect();
        let l = self.leases.get_mut(&id).expect("committing a known lease");
        if let Some(old) = &l.res {
            self.starts.remove(&(old.start, id));
        }
        self.starts.insert((start, id));
        l.res = Some(Reservation {
            start,
            end: plan.end,
            run_from: plan.run_from,
            hosts,
            plans,
        });
        self.sync(id);
        self.wake(start, out);
    }

    /// Drops a lease's reservation: its slots and its storage bookings from the reservation's
    /// start (bookings before it belong to an earlier episode still being vacated).
    fn drop_reservation(&mut self, id: RequestId) {
        self.uncharge(id);
        if let Some(l) = self.leases.get_mut(&id) {
            if let Some(res) = l.res.take() {
                self.starts.remove(&(res.start, id));
                self.avail.release_from(id, res.start);
                self.storage.cancel(id, res.start);
            }
            self.sync(id);
        }
    }

    fn wake(&mut self, t: EmuTime, out: &mut Vec<Action>) {
        if self.wakes.insert(t) {
            out.push(Action::Wake(t));
        }
    }

    // ---- external leases ----

    /// The start FCFS allows: not before any earlier waiting lease's reservation. Read
    /// from the queue's counts when no later lease holds a reservation (a lease just
    /// submitted), else found by a walk.
    fn fcfs_floor(&self, order: u64) -> EmuTime {
        let walk = || {
            (self.leases.values())
                .filter(|l| l.order < order && l.phase == Phase::Waiting && l.queued)
                .filter_map(|l| l.res.as_ref().map(|r| r.start))
                .max()
                .unwrap_or(EmuTime::ZERO)
        };
        match self.queue.latest_start_before(order) {
            Some(t) => {
                debug_assert_eq!(t, walk(), "the queue's latest start before #{order}");
                t
            }
            None => walk(),
        }
    }

    /// The EASY partition a lease waits in: with partitions, local leases have their own
    /// pivots, as each of Lawson and Smirni's partitions does (paper 004 §4.2); without, one.
    fn partition(&self, l: &Lease) -> usize {
        usize::from(self.cfg.partitions && l.is_local())
    }

    /// Waiting leases holding reservations, per partition (kept by the queue).
    fn reserved_waiting(&self) -> [usize; 2] {
        self.queue.reserved()
    }

    /// Checks the queue against a walk over every lease (debug builds: once a pass).
    fn check_queue(&self) {
        if cfg!(debug_assertions) {
            let mut n = [0; 2];
            let mut waiting: Vec<(Rank, RequestId)> = Vec::new();
            for (id, l) in &self.leases {
                if l.phase == Phase::Waiting && l.queued {
                    n[self.partition(l)] += usize::from(l.res.is_some());
                    waiting.push((self.rank(*id, l), *id));
                }
            }
            waiting.sort_unstable();
            let listed: Vec<RequestId> = self.queue.in_order().map(|(id, _)| id).collect();
            debug_assert_eq!(n, self.queue.reserved(), "reservations the queue counts");
            debug_assert!(
                waiting.iter().map(|w| w.1).eq(listed.iter().copied()),
                "the queue lists the waiting leases in order"
            );
        }
    }

    /// Whether lease `id` is further back in the queue than a pass looks
    /// ([`Config::backfill_depth`]).
    fn beyond_depth(&self, id: RequestId) -> bool {
        let Some(depth) = self.cfg.backfill_depth else {
            return false;
        };
        let Some(listed) = self.leases.get(&id).and_then(|l| l.listed) else {
            return false;
        };
        self.queue.at_least_before(&listed.rank, depth)
    }

    /// Schedules one waiting lease of the queue by the backfilling policy — unless it is
    /// beyond the backfill depth, where it waits unscheduled for a later pass. Returns false
    /// only for a deadline lease that cannot meet its deadline.
    fn schedule_waiting(&mut self, id: RequestId, now: EmuTime, out: &mut Vec<Action>) -> bool {
        if self.beyond_depth(id) {
            return true;
        }
        // Only EASY counts the reservations held (a walk over every lease); the others
        // reserve for every lease.
        let reserved = match self.cfg.backfilling {
            Backfilling::Easy { .. } => self.reserved_waiting()[self.partition(&self.leases[&id])],
            Backfilling::Fcfs | Backfilling::Conservative => 0,
        };
        self.schedule_in_queue(id, now, out, (reserved, None))
    }

    /// [`Core::schedule_waiting`] given the number of waiting leases of its partition holding
    /// reservations
    /// and, if known, the cores free cluster-wide now (a lease EASY would only start now
    /// cannot if it needs more: a quick test before searching the hosts).
    fn schedule_in_queue(
        &mut self,
        id: RequestId,
        now: EmuTime,
        out: &mut Vec<Action>,
        (reserved, free_now): (usize, Option<u64>),
    ) -> bool {
        let l = &self.leases[&id];
        let not_before = now.max(l.not_before);
        let deadline = l.deadline();
        let must_reserve = deadline.is_some()
            || match self.cfg.backfilling {
                Backfilling::Fcfs | Backfilling::Conservative => true,
                Backfilling::Easy { pivots } => reserved < pivots as usize,
            };
        let slot = if must_reserve {
            let floor = match self.cfg.backfilling {
                Backfilling::Fcfs => self.fcfs_floor(l.order).max(not_before),
                _ => not_before,
            };
            self.find_slot(id, floor)
        } else if not_before == now && free_now.is_some_and(|f| l.req.cores() > f) {
            None
        } else {
            self.fits_at(id, not_before)
                .map(|(p, h)| (not_before, p, h))
        };
        match slot {
            Some((start, plan, hosts)) => {
                if deadline.is_some_and(|d| plan.end > d) && !self.leases[&id].started_once {
                    return false;
                }
                self.commit(id, start, plan, hosts, out);
                true
            }
            None => !must_reserve || deadline.is_none(),
        }
    }

    /// External leases waiting here (not started) and held here at all.
    /// The earliest start this cluster could give `req` now, booking nothing (for the IGG's
    /// earliest-start dispatch); `None` if it would refuse it.
    pub fn probe(&self, req: &LeaseRequest, now: EmuTime) -> Option<EmuTime> {
        self.now.set(now);
        let req = self.shaped(req.clone());
        let l = Lease::waiting(req, self.cfg.speed, self.next_order, now);
        let (start, plan, _) = self.find_slot_for(&l, now)?;
        l.deadline().is_none_or(|d| plan.end <= d).then_some(start)
    }

    /// The request as this cluster runs it: a moldable one on every VM the cluster can hold,
    /// for its run time under `lrms.moldable` ([`moldable_run`]), and a deadline given as a
    /// ratio of the run time resolved with the run time here. The result is rigid.
    fn shaped(&self, mut req: LeaseRequest) -> LeaseRequest {
        if req.moldable {
            let vms = self
                .avail
                .capacity_for(shape_of(&req))
                .clamp(1, u64::from(u32::MAX));
            let reading = match req.origin {
                Origin::External => self.cfg.moldable,
                Origin::Local => Moldable::Spread,
            };
            req.duration = moldable_run(reading, req.vms, req.duration, vms);
            req.vms = vms as u32;
            req.moldable = false;
        }
        if let Some(ratio) = req.deadline_ratio.take() {
            let run = self.cfg.boot + self.cfg.speed.local(req.duration);
            req.deadline =
                Some(req.arrival + EmuDuration::from_secs_f64(run.as_secs_f64() * ratio));
        }
        req
    }

    /// How long a request occupies the whole cluster: its VM-time here over the VMs the
    /// cluster can hold (paper 002's single-server view of a cluster).
    fn cluster_service(&self, req: &LeaseRequest) -> EmuDuration {
        let cap = self.avail.capacity_for(shape_of(req)).max(1);
        let run = self.cfg.speed.local(req.duration);
        EmuDuration::from_secs_f64(run.as_secs_f64() * f64::from(req.vms) / cap as f64)
    }

    /// Reports the VMs and deadline a reshaped (moldable or ratio-deadline) lease got here.
    fn terms(&self, id: RequestId, reshaped: bool, out: &mut Vec<Action>) {
        let l = &self.leases[&id];
        if reshaped {
            out.push(Action::Terms {
                lease: id,
                vms: l.req.vms,
                deadline: l.req.deadline,
            });
        }
    }

    /// Refuses a request no placement could ever hold, even on an empty cluster.
    fn fits_ever(&self, req: &LeaseRequest) -> Result<(), Refusal> {
        if self.avail.could_ever_fit(req.vms, shape_of(req)) {
            Ok(())
        } else {
            Err(Refusal::TooLarge)
        }
    }

    /// A request as this cluster runs it (shaped to its VMs and deadline ratio), and whether
    /// that reshaped it, if it could ever fit here.
    fn taken_in(&self, req: LeaseRequest) -> Result<(bool, LeaseRequest), Refusal> {
        let reshaped = req.moldable || req.deadline_ratio.is_some();
        let req = self.shaped(req);
        self.fits_ever(&req)?;
        Ok((reshaped, req))
    }

    /// An external lease assigned by the IGG: accepted (started or queued) or refused.
    pub fn submit_external(
        &mut self,
        req: LeaseRequest,
        now: EmuTime,
    ) -> Result<Vec<Action>, Refusal> {
        self.now.set(now);
        if self.leases.contains_key(&req.id) {
            // Only a gateway that is not igemu's assigns a lease its cluster holds already:
            // the checker is told, and the lease held stays as it is.
            let what = format!(
                "lease #{} assigned again while this cluster holds it",
                req.id.0
            );
            return Ok(vec![Action::Violation(what)]);
        }
        // Its work, tasks × task duration here, however it is shaped (PACP's ω by `work`).
        let work = self.cfg.speed.local(req.duration) * u64::from(req.vms);
        let (reshaped, req) = self.taken_in(req)?;
        self.monitor.offered(now);
        let service = self.cluster_service(&req);
        let verdict = self.admission.admit(&AdmissionAsk {
            now,
            request: &req,
            service,
            monitor: &self.monitor,
            queue: &ExternalQueue(&self.leases),
        });
        let limit = match verdict {
            Verdict::Refuse(why) => return Err(why),
            Verdict::Admit => None,
            Verdict::Limit(k) => Some(k),
        };
        // Counted only under a limit (a walk over every lease).
        let waiting = match limit {
            Some(_) => ExternalQueue(&self.leases).external().0,
            None => 0,
        };
        let id = self.insert(req, now);
        let mut out = Vec::new();
        if !self.schedule_waiting(id, now, &mut out) {
            self.forget(id);
            return Err(Refusal::Deadline);
        }
        if let Some(k) = limit {
            // At most k external requests wait: one that starts at once does not wait.
            let starts_now = self.leases[&id]
                .res
                .as_ref()
                .is_some_and(|r| r.start <= now);
            if !starts_now && waiting >= k {
                self.drop_reservation(id);
                self.forget(id);
                // Wakes it asked for were new (`wake` reports only those): take them back.
                for a in &out {
                    if let Action::Wake(t) = a {
                        self.wakes.remove(t);
                    }
                }
                return Err(Refusal::QueueFull);
            }
        }
        self.monitor.admitted(service, work);
        self.terms(id, reshaped, &mut out);
        out.extend(self.tick(now));
        Ok(out)
    }

    /// Places every waiting external lease that has no reservation (preempted, displaced,
    /// not a pivot, or beyond the backfill depth at an earlier pass): deadline leases first
    /// (earliest deadline), then submission order. With a backfill depth, only the first
    /// that many waiting leases are looked at.
    /// Without compression existing reservations are kept, so this costs only the affected
    /// leases. With it, every future reservation is taken out and placed again in the same
    /// order (GridSim's conservative backfilling on a cancellation): a lease's old slot is
    /// free when it is placed again, so none starts later than it was promised.
    ///
    /// Compression skips, exactly, the leases that cannot move: a lease booting fresh was
    /// placed (or last compressed) at its earliest start, its plan's length does not depend
    /// on when it starts, and capacity only ever grows where slots were removed or cut — so
    /// an earlier start it fits now has a window meeting capacity freed since, and its
    /// earliest such start is "now" or a slot end. Only those candidates are tested, on the
    /// cluster-wide cores (a necessary condition); a lease passing is placed again in full.
    /// Leases resuming from images (their plan depends on the storage) and FCFS queues (the
    /// floor depends on other leases) are always placed again.
    fn place_waiting(&mut self, now: EmuTime, out: &mut Vec<Action>) {
        self.check_queue();
        let compress = self.cfg.compress;
        // The first `backfill_depth` waiting leases, in queue order: those without a
        // reservation and, with compression, those whose reservation is still to come.
        let depth = self.cfg.backfill_depth.unwrap_or(usize::MAX);
        let waiting: Vec<RequestId> = (self.queue.in_order().take(depth))
            .filter(|(_, start)| start.is_none_or(|s| compress && s > now))
            .map(|(id, _)| id)
            .collect();
        let mut freed = Freed::new(self.avail.take_freed(now));
        let mut moved = Vec::new();
        // Cluster-wide use, rebuilt only after a change that moves it.
        let mut steps: Option<UsageSteps> = None;
        let total = self.avail.total_cores();
        // Waiting leases holding reservations, kept up to date through the pass; the cores
        // free now, recomputed after a placement.
        let mut reserved = self.reserved_waiting();
        let mut free_now: Option<u64> = None;
        let (queue, mut reexamined) = (waiting.len(), 0usize);
        for id in waiting {
            if self.leases[&id].res.is_some() {
                reexamined += 1;
                let cluster = (&mut freed, &mut steps, total);
                if let Some(interval) = self.compress_one(id, now, cluster, out) {
                    moved.push(interval);
                    free_now = None;
                }
                continue;
            }
            steps = None;
            let free = *free_now
                .get_or_insert_with(|| total.saturating_sub(self.avail.usage_steps().used_at(now)));
            let k = self.partition(&self.leases[&id]);
            let placed = self.schedule_in_queue(id, now, out, (reserved[k], Some(free)));
            if self.leases[&id].res.is_some() {
                reserved[k] += 1;
                free_now = None;
            }
            // A deadline lease that can no longer meet its deadline still gets the earliest
            // slot; its lateness shows in the outputs.
            if !placed {
                let floor = now.max(self.leases[&id].not_before);
                if let Some((start, plan, hosts)) = self.find_slot(id, floor) {
                    self.commit(id, start, plan, hosts, out);
                    reserved[k] += 1;
                    free_now = None;
                }
            }
        }
        // The policy's own work, for measuring how it grows with load (`RUST_LOG=
        // igemu::lrms::work=trace`; `scripts/scenario-cpu --load` sums it).
        tracing::trace!(
            target: "igemu::lrms::work",
            queue,
            reexamined,
            moved = moved.len(),
            "placement pass"
        );
        if compress {
            // This pass's own take-outs are accounted for; the slots leases left may still
            // serve leases earlier in the queue, at the next pass.
            self.avail.take_freed(now);
            for (start, end) in moved {
                self.avail.note_freed(start, end);
            }
        }
    }

    /// Compression of one reserved lease: placed again if it might start earlier (its old
    /// slot given up first, so it is never promised a later start). Returns the interval it
    /// left if it moved; records it in `freed` and forgets the usage `steps` then.
    fn compress_one(
        &mut self,
        id: RequestId,
        now: EmuTime,
        (freed, steps, total): (&mut Freed, &mut Option<UsageSteps>, u64),
        out: &mut Vec<Action>,
    ) -> Option<(EmuTime, EmuTime)> {
        let l = &self.leases[&id];
        let res = l.res.as_ref()?;
        let (promised, end) = (res.start, res.end);
        let floor = now.max(l.not_before);
        // With sized partitions a start may open without capacity freed (a start now may
        // borrow, a partition may have been resized): every lease is placed again.
        let skippable = l.images_ready.is_none()
            && self.cfg.backfilling != Backfilling::Fcfs
            && !self.sized_partitions();
        // Only starts whose windows meet capacity freed since are worth trying: every other
        // one did not fit before and still does not.
        let mut only = None;
        if skippable {
            let starts = self.earlier_starts(l, (promised, end), floor, freed, steps, total);
            if starts.is_empty() {
                debug_assert!(
                    self.stays_put(id, promised, now),
                    "compression skipped lease #{} that could move",
                    id.0
                );
                return None;
            }
            only = Some(starts);
        }
        let hosts = res.hosts.clone();
        self.drop_reservation(id);
        self.reserve_again(id, (promised, hosts.clone()), now, only, out);
        // Placed again at the same start on other hosts (or, resuming, ending at another
        // time), it still frees what it held.
        let same = self.leases[&id]
            .res
            .as_ref()
            .is_some_and(|r| r.start == promised && r.end == end && r.hosts == hosts);
        if same {
            return None;
        }
        freed.add(promised, end);
        *steps = None;
        Some((promised, end))
    }

    /// The starts at which fresh lease `l`, reserved at `own`, might start earlier than
    /// `own.0` now, ascending: the candidate starts in `[floor, own.0)` whose windows meet
    /// freed capacity and fit on the cluster-wide cores, its own reservation set aside.
    fn earlier_starts(
        &self,
        l: &Lease,
        own: (EmuTime, EmuTime),
        floor: EmuTime,
        freed: &Freed,
        steps: &mut Option<UsageSteps>,
        total: u64,
    ) -> Vec<EmuTime> {
        let (promised, end) = own;
        let len = end.since(promised);
        let cores = l.req.cores();
        if floor >= promised {
            return Vec::new();
        }
        // The windows meeting each freed interval, before the promised start; prepared only
        // if there is one.
        let ranges: Vec<(EmuTime, EmuTime)> = freed
            .0
            .iter()
            .map(|&(fs, fe)| (floor.max(fs.earlier_by(len)), promised.min(fe)))
            .filter(|(from, to)| from < to)
            .collect();
        if ranges.is_empty() {
            return Vec::new();
        }
        let steps = steps.get_or_insert_with(|| self.avail.usage_steps());
        let earlier = steps.earlier_fits(floor, cores, total, (promised, end, cores));
        let fits = |t: EmuTime| {
            let fits = earlier.fits_or_next(t);
            debug_assert_eq!(
                fits.is_ok(),
                steps.fits_excluding(t, t + len, cores, total, (promised, end, cores))
            );
            fits
        };
        let mut starts = Vec::new();
        for (from, to) in ranges {
            if from <= floor && fits(floor).is_ok() {
                starts.push(floor);
            }
            // Slot ends in the range, skipping those a step over the limit rules out.
            let mut skip_to = EmuTime::ZERO;
            for t in self
                .avail
                .ends_in(from.max(floor + EmuDuration::from_micros(1)), to)
            {
                if t < skip_to {
                    continue;
                }
                match fits(t) {
                    Ok(()) => starts.push(t),
                    Err(next) => skip_to = next,
                }
            }
        }
        starts.sort_unstable();
        starts.dedup();
        starts
    }

    /// Whether placing `id` again now would leave it at `promised` (checks the skip rule of
    /// [`Core::place_waiting`] on a copy; debug builds only).
    fn stays_put(&self, id: RequestId, promised: EmuTime, now: EmuTime) -> bool {
        let mut copy = self.clone();
        let hosts = copy.leases[&id]
            .res
            .as_ref()
            .map(|r| r.hosts.clone())
            .unwrap_or_default();
        copy.drop_reservation(id);
        copy.reserve_again(id, (promised, hosts), now, None, &mut Vec::new());
        copy.leases[&id].res.as_ref().map(|r| r.start) == Some(promised)
    }

    /// Reserves again a lease whose reservation at `promised` on `hosts` was just taken
    /// out: at the earliest start the backfilling allows if that is earlier (and still meets
    /// its deadline), else back in its old slot, which nothing has taken since.
    fn reserve_again(
        &mut self,
        id: RequestId,
        (promised, hosts): (EmuTime, Vec<u16>),
        now: EmuTime,
        only: Option<Vec<EmuTime>>,
        out: &mut Vec<Action>,
    ) {
        let l = &self.leases[&id];
        let floor = match self.cfg.backfilling {
            Backfilling::Fcfs => self.fcfs_floor(l.order).max(now.max(l.not_before)),
            _ => now.max(l.not_before),
        };
        let deadline = l.deadline();
        let found = match only {
            Some(starts) => {
                // They passed the cluster-wide test in `earlier_starts`, over the window a
                // fresh lease's reservation takes (boot and remaining work, as before).
                let found = self.first_placement(l, starts.into_iter(), None);
                debug_assert_eq!(
                    found.as_ref().map(|f| f.0),
                    self.find_slot_before(l, floor, promised).map(|f| f.0),
                    "lease #{}: the starts meeting freed capacity missed its earliest",
                    id.0
                );
                found
            }
            None => self.find_slot_before(l, floor, promised),
        };
        if let Some((start, plan, hosts)) =
            found.filter(|(_, plan, _)| deadline.is_none_or(|d| plan.end <= d))
        {
            self.commit(id, start, plan, hosts, out);
            return;
        }
        // Its old slot: the same hosts from the same start, for a plan no longer than before
        // (its storage bookings are free again too).
        let plan = self.plan(l, promised);
        let shape = l.shape();
        let mut per_host: BTreeMap<u16, u64> = BTreeMap::new();
        for &h in &hosts {
            *per_host.entry(h).or_default() += 1;
        }
        let old_fits = per_host
            .iter()
            .all(|(&h, &n)| self.avail.room(usize::from(h), shape, promised, plan.end) >= n);
        debug_assert!(old_fits, "a lease's own old slot is free");
        if old_fits {
            self.commit(id, promised, plan, hosts, out);
        } else if let Some((plan, hosts)) = self.fits_at(id, promised) {
            self.commit(id, promised, plan, hosts, out);
        } else {
            self.schedule_waiting(id, now, out);
        }
    }

    /// Cores local leases hold (running or reserved) from each change point on, over
    /// `[now, until)`: the local partition's actual use.
    pub fn local_usage(&self, now: EmuTime, until: EmuTime) -> BTreeMap<EmuTime, u64> {
        let mut deltas: BTreeMap<EmuTime, i64> = BTreeMap::new();
        for l in self.leases.values().filter(|l| l.is_local()) {
            if let Some(r) = &l.res {
                let (s, e) = (r.start.max(now), r.end.min(until));
                if s < e {
                    *deltas.entry(s).or_default() += l.req.cores() as i64;
                    *deltas.entry(e).or_default() -= l.req.cores() as i64;
                }
            }
        }
        let mut used = 0i64;
        let mut steps = BTreeMap::new();
        steps.insert(now, 0);
        for (t, d) in deltas {
            used += d;
            steps.insert(t, used.max(0) as u64);
        }
        steps
    }

    /// Gives every waiting lease a reservation, as conservative backfilling would (paper
    /// 004 Algorithm 1, lines 3–5: the load-forecast policy schedules its queue with an
    /// unbounded number of pivots before it publishes, then returns to EASY).
    pub fn reserve_all(&mut self, now: EmuTime) -> Vec<Action> {
        self.now.set(now);
        let easy = self.cfg.backfilling;
        self.cfg.backfilling = Backfilling::Conservative;
        let mut out = Vec::new();
        self.place_waiting(now, &mut out);
        self.cfg.backfilling = easy;
        out
    }

    // ---- local requests ----

    /// A local request, decided now: reserved in its interval, or after preempting external
    /// leases, or refused — or, where locals are queued, scheduled like any waiting lease
    /// (not before its requested start).
    pub fn submit_local(
        &mut self,
        req: LeaseRequest,
        now: EmuTime,
    ) -> Result<Vec<Action>, Refusal> {
        self.now.set(now);
        let (reshaped, req) = self.taken_in(req)?;
        self.monitor.local(now, self.cluster_service(&req));
        let start = req.start.unwrap_or(req.arrival).max(now);
        let id = self.insert(req, now);
        let mut out = Vec::new();
        if self.cfg.locals == LocalRequests::Queued {
            if let Some(l) = self.leases.get_mut(&id) {
                l.not_before = start;
            }
            // Scheduled like any waiting lease; with partitions, locals come first only among
            // the leases backfilled without a reservation (`place_waiting`).
            if !self.schedule_waiting(id, now, &mut out) {
                self.forget(id);
                return Err(Refusal::Deadline);
            }
            self.terms(id, reshaped, &mut out);
            out.extend(self.tick(now));
            return Ok(out);
        }
        if let Some((plan, hosts)) = self.fits_at(id, start) {
            self.commit(id, start, plan, hosts, &mut out);
            self.terms(id, reshaped, &mut out);
            out.extend(self.tick(now));
            return Ok(out);
        }
        match self.preempt_for(id, start, now, &mut out) {
            Ok(()) => {
                self.terms(id, reshaped, &mut out);
                out.extend(self.tick(now));
                Ok(out)
            }
            Err(r) => {
                self.forget(id);
                Err(r)
            }
        }
    }

    /// Work a lease has done by `t` (its current episode counted up to `t`).
    fn done_by(&self, l: &Lease, t: EmuTime) -> EmuDuration {
        match (&l.phase, &l.res) {
            (Phase::Running, Some(r)) => l.work_done + t.since(r.run_from),
            _ => l.work_done,
        }
    }

    /// How long vacating a running lease takes on idle storage.
    fn vacate_time(&self, l: &Lease, op: Operation) -> EmuDuration {
        let m = &self.cfg.overhead;
        match op {
            Operation::Stop => m.shutdown * u64::from(l.req.vms),
            Operation::Suspend | Operation::Migrate => m.suspend_lease(l.req.vms, l.req.mem_mb),
            Operation::Displace | Operation::Wait => EmuDuration::ZERO,
        }
    }

    /// What preempting `l` for a local request needing `[start, end)` would do, or `None` if
    /// it cannot be preempted (local, non-preemptable, not at work by the time it would have
    /// to be vacated, being vacated already, or a migratable lease whose deadline would not
    /// survive).
    fn candidacy(
        &self,
        l: &Lease,
        start: EmuTime,
        end: EmuTime,
        now: EmuTime,
    ) -> Option<Operation> {
        if l.is_local() || !l.req.lease_type.preemptable() {
            return None;
        }
        let res = l.res.as_ref()?;
        let running_op = OverheadModel::operation_for(l.req.lease_type, self.cfg.can_migrate)?;
        let op = match l.phase {
            Phase::Waiting => Operation::Displace,
            // Told to start this very instant: its VMs are recalled before they do anything.
            Phase::Running if res.start == now => Operation::Displace,
            Phase::Running => {
                let vacate = self.vacate_time(l, running_op);
                // The latest it can begin vacating and still be off its hosts by `start`.
                let latest = start.earlier_by(vacate).max(now);
                if res.run_from > latest {
                    // Booting or resuming: only preempted once at work.
                    return None;
                }
                if res.end <= latest + vacate {
                    // It ends before it could be vacated: the local lease waits for it.
                    Operation::Wait
                } else {
                    running_op
                }
            }
            _ => return None,
        };
        if l.req.lease_type == LeaseType::DeadlineMigratable && op != Operation::Wait {
            let begin = start.earlier_by(self.vacate_time(l, op)).max(now);
            return self.keeps_deadline(l, op, (begin, end), now).then_some(op);
        }
        Some(op)
    }

    /// Whether migratable lease `l`, preempted by `op` from `begin` on for a local lease
    /// ending at `end`, still finishes by its deadline: resumed here after `end` (suspended
    /// now), or — migrating — on another cluster whose published slots show room ([`Route`],
    /// paper 003 §4.2: "either on the same resource or on another resource").
    fn keeps_deadline(
        &self,
        l: &Lease,
        op: Operation,
        (begin, end): (EmuTime, EmuTime),
        now: EmuTime,
    ) -> bool {
        let m = &self.cfg.overhead;
        let (vms, mem) = (l.req.vms, l.req.mem_mb);
        let deadline = l.req.deadline.unwrap_or(EmuTime::NEVER);
        let remaining = l.duration.saturating_sub(self.done_by(l, now));
        let resume_at = end.max(now + m.suspend_lease(vms, mem));
        if resume_at + m.resume_lease(vms, mem) + remaining <= deadline {
            return true;
        }
        let route = Route {
            begin,
            migration: m.migrate_lease(vms, mem),
            remaining,
            cores: u64::from(vms) * u64::from(l.req.cores_per_vm),
            deadline,
        };
        op == Operation::Migrate && route.open(&self.elsewhere)
    }

    /// The contention of local lease `local` needing `[start, end)`: every lease holding a
    /// host then, as a candidate (in arrival order; only those of `among`, if given) or as a
    /// fixed hold.
    fn contention(
        &self,
        local: RequestId,
        start: EmuTime,
        end: EmuTime,
        now: EmuTime,
        among: Option<&[RequestId]>,
    ) -> Contention {
        let l = &self.leases[&local];
        let m = &self.cfg.overhead;
        let mut c = Contention::new(
            l.shape(),
            l.req.vms,
            (start, end),
            m.reschedule,
            &self.avail.capacities(),
        );
        let holds = self.avail.holds(start, end);
        let mut in_play: Vec<RequestId> = holds.iter().map(|h| h.lease).collect();
        in_play.sort_unstable();
        in_play.dedup();
        let mut cands: Vec<(EmuTime, u64, RequestId, Operation)> = in_play
            .iter()
            .filter(|id| **id != local && among.is_none_or(|ids| ids.contains(id)))
            .filter_map(|id| {
                let x = self.leases.get(id)?;
                let op = self.candidacy(x, start, end, now)?;
                Some((x.req.arrival, x.order, *id, op))
            })
            .collect();
        cands.sort_unstable();
        let mut index: BTreeMap<RequestId, (usize, EmuTime)> = BTreeMap::new();
        for (arrival, _, id, op) in cands {
            let x = &self.leases[&id];
            let res_start = x.res.as_ref().map_or(EmuTime::ZERO, |r| r.start);
            let waited = now
                .since(x.req.arrival)
                .saturating_sub(self.done_by(x, now));
            let i = c.add_candidate(Candidate {
                lease: id,
                op,
                lease_type: x.req.lease_type,
                vms: x.req.vms,
                mem_mb: x.req.mem_mb,
                preempted_vms: if op.preempts_vms() { x.req.vms } else { 0 },
                cost: m.operation_cost(op, x.req.vms, x.req.mem_mb),
                waiting: waited,
                arrival,
            });
            index.insert(id, (i, res_start));
        }
        for h in holds {
            let (cores, mem) = (u64::from(h.cores), h.mem_mb);
            match index.get(&h.lease) {
                // Only the lease's current episode or reservation goes with it; slots of an
                // earlier episode still being vacated stay.
                Some(&(i, from)) if h.start >= from => {
                    c.add_held(h.host, i, h.start, h.end, cores, mem)
                }
                _ if h.lease == local => {}
                _ => c.add_fixed(h.host, h.start, h.end, cores, mem),
            }
        }
        c
    }

    /// Plans vacating `set` of `c` so that every VM is off its host by `start` if the notice
    /// allows (suspensions begin as late as they can), else as soon as possible. Books nothing.
    fn plan_vacating(
        &self,
        c: &Contention,
        set: &[usize],
        start: EmuTime,
        now: EmuTime,
    ) -> (Vec<Vacating>, EmuTime) {
        let m = &self.cfg.overhead;
        let mut plans = Vec::with_capacity(set.len());
        let mut suspensions = Vec::new();
        for &i in set {
            let cand = &c.candidates[i];
            let l = &self.leases[&cand.lease];
            let v = l.req.vms;
            match cand.op {
                Operation::Displace => plans.push(Vacating {
                    id: cand.lease,
                    op: cand.op,
                    from: now,
                    vms: Vec::new(),
                }),
                Operation::Wait => {
                    let end = l.res.as_ref().map_or(now, |r| r.end);
                    plans.push(Vacating {
                        id: cand.lease,
                        op: cand.op,
                        from: end,
                        vms: vec![(end, end, end); v as usize],
                    });
                }
                Operation::Stop => {
                    let run_from = l.res.as_ref().map_or(now, |r| r.run_from);
                    let from = start
                        .earlier_by(m.shutdown * u64::from(v))
                        .max(now)
                        .max(run_from);
                    // VMs are stopped one after another; each is off its host when stopped.
                    let vms = (0..v)
                        .map(|j| {
                            let off = from + m.shutdown * (u64::from(j) + 1);
                            (off, off, off)
                        })
                        .collect();
                    plans.push(Vacating {
                        id: cand.lease,
                        op: cand.op,
                        from,
                        vms,
                    });
                }
                Operation::Suspend | Operation::Migrate => suspensions.push(i),
            }
        }
        if !suspensions.is_empty() {
            plans.extend(self.plan_suspensions(c, set, &suspensions, start, now));
        }
        let done = plans
            .iter()
            .flat_map(|p| p.vms.iter().map(|v| v.2))
            .max()
            .unwrap_or(now)
            .max(now);
        (plans, done)
    }

    /// The suspensions (and migrations) `suspensions` of a decision's set, started as late as they
    /// can be and still end by `start`.
    fn plan_suspensions(
        &self,
        c: &Contention,
        set: &[usize],
        suspensions: &[usize],
        start: EmuTime,
        now: EmuTime,
    ) -> Vec<Vacating> {
        // The latest common start of the suspensions that still ends by `start`; they
        // only end later when they start later, so bisect.
        // The storage as it will be: the resumptions booked for reservations this decision
        // moves are gone.
        let mut base = self.storage.clone();
        for &i in set {
            let x = &c.candidates[i];
            if x.op == Operation::Displace {
                if let Some(r) = self.leases.get(&x.lease).and_then(|l| l.res.as_ref()) {
                    base.cancel(x.lease, r.start);
                }
            }
        }
        let schedule = |t0: EmuTime| self.schedule_suspensions(c, suspensions, t0, &base);
        let (_, end_now) = schedule(now);
        let t0 = if end_now > start {
            now
        } else {
            let (mut lo, mut hi) = (now.as_micros(), start.as_micros());
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if schedule(EmuTime::from_micros(mid)).1 <= start {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            EmuTime::from_micros(lo)
        };
        schedule(t0).0
    }

    /// Pauses and suspensions of the leases `which` of `c`, beginning at `t0` (or when each is
    /// at work, if later), one VM at a time on the shared storage, in arrival order. A lease
    /// whose suspension could only end when it would have finished anyway (the storage is
    /// busy) is left to finish instead: it becomes a [`Operation::Wait`], off its hosts at its
    /// end, and takes no storage time.
    fn schedule_suspensions(
        &self,
        c: &Contention,
        which: &[usize],
        t0: EmuTime,
        base: &Storage,
    ) -> (Vec<Vacating>, EmuTime) {
        let m = &self.cfg.overhead;
        let mut storage = base.clone();
        let mut out = Vec::with_capacity(which.len());
        let mut last = t0;
        for &i in which {
            let cand = &c.candidates[i];
            let l = &self.leases[&cand.lease];
            let (run_from, end) = l
                .res
                .as_ref()
                .map_or((t0, EmuTime::NEVER), |r| (r.run_from, r.end));
            let from = t0.max(run_from);
            let mut trial = storage.clone();
            // Bookings of this lease not begun yet belong to the episode it leaves.
            trial.cancel(cand.lease, from);
            let (v, ts) = (l.req.vms, m.suspend_vm(l.req.mem_mb));
            let mut cursor = from + m.pause * u64::from(v);
            let mut slots = Vec::with_capacity(v as usize);
            for _ in 0..v {
                let s = trial.book(cand.lease, cursor, ts);
                cursor = s + ts;
                slots.push((s, cursor));
            }
            // The lease keeps working until its pauses must begin for its first suspension:
            // a lease queued behind others on the storage is not left paused meanwhile.
            let first = slots.first().map_or(cursor, |x| x.0);
            let from = first.earlier_by(m.pause * u64::from(v)).max(from);
            let vms: Vec<(EmuTime, EmuTime, EmuTime)> = slots
                .iter()
                .enumerate()
                .map(|(j, &(s, off))| (from + m.pause * j as u64, s, off))
                .collect();
            if cursor >= end {
                last = last.max(end);
                out.push(Vacating {
                    id: cand.lease,
                    op: Operation::Wait,
                    from: end,
                    vms: vec![(end, end, end); v as usize],
                });
                continue;
            }
            storage = trial;
            last = last.max(cursor);
            out.push(Vacating {
                id: cand.lease,
                op: cand.op,
                from,
                vms,
            });
        }
        (out, last)
    }

    /// Whether a lease not in the chosen set begins holding a host in `[from, until)`: the
    /// local lease's lateness would run into it.
    fn tail_taken(
        &self,
        local: RequestId,
        set: &[RequestId],
        from: EmuTime,
        until: EmuTime,
    ) -> bool {
        from < until
            && self
                .avail
                .holds(from, until)
                .iter()
                .any(|h| h.start >= from && h.lease != local && !set.contains(&h.lease))
    }

    /// Makes room for local request `id` asking for `start` by preempting, or refuses it.
    fn preempt_for(
        &mut self,
        id: RequestId,
        start: EmuTime,
        now: EmuTime,
        out: &mut Vec<Action>,
    ) -> Result<(), Refusal> {
        if !self.preemption.preempts() {
            return Err(Refusal::NoRoom);
        }
        let length = {
            let l = &self.leases[&id];
            self.plan(l, start).end.since(start)
        };
        let seed = stream_seed(self.cfg.seed, &format!("decision-{}", self.decisions));
        self.decisions += 1;
        let mut end = start + length;
        for _ in 0..MAX_WINDOW_EXTENSIONS {
            let c = self.contention(id, start, end, now, None);
            let choice = self.ask_policy(id, &c, now, seed).ok_or(Refusal::NoRoom)?;
            let (vacating, done) = self.plan_vacating(&c, &choice.set, start, now);
            let set_ids: Vec<RequestId> = vacating.iter().map(|v| v.id).collect();
            let latest_end = done.max(start) + length;
            if latest_end > end && self.tail_taken(id, &set_ids, end, latest_end) {
                // Late by its preemption, the lease would run into leases after its interval:
                // decide again over the interval it will really hold.
                end = latest_end;
                continue;
            }
            let decided = Decided {
                vacating,
                done,
                end,
                exact: choice.exact,
            };
            let decided = match latest_end < end {
                true => self.narrowed(id, (start, length), now, seed, decided),
                false => decided,
            };
            return self.carry_out(id, start, now, decided, out);
        }
        Err(Refusal::NoRoom)
    }

    /// The preemption policy's answer for local request `id` on contention `c`.
    fn ask_policy(
        &mut self,
        id: RequestId,
        c: &Contention,
        now: EmuTime,
        seed: u64,
    ) -> Option<super::policy::Choice> {
        let ask = preemption::Ask {
            now,
            local: &self.leases[&id].req,
            seed,
            budget: self.cfg.search_budget,
        };
        self.preemption.choose(c, &ask)
    }

    /// A decision made over an interval widened for its lateness whose set vacates sooner
    /// than that interval assumed: made again over the interval the local lease will hold
    /// (`start` to the end of its run of `length` once the set is vacated), among the leases
    /// chosen, until the set no longer changes — so what is carried out is minimal for the
    /// interval finally used. The set only shrinks, and vacating fewer leases never ends
    /// later, so the interval only narrows and the leases kept still leave room.
    fn narrowed(
        &mut self,
        id: RequestId,
        (start, length): (EmuTime, EmuDuration),
        now: EmuTime,
        seed: u64,
        mut d: Decided,
    ) -> Decided {
        for _ in 0..=d.vacating.len() {
            let end = d.done.max(start) + length;
            let ids: Vec<RequestId> = d.vacating.iter().map(|v| v.id).collect();
            let c = self.contention(id, start, end, now, Some(&ids));
            let Some(choice) = self.ask_policy(id, &c, now, seed) else {
                // Cannot happen with a policy that answers as it should (the leases chosen
                // leave room over the narrower interval); keep the wider decision.
                return d;
            };
            if choice.set.len() == ids.len() {
                return Decided { end, ..d };
            }
            let (vacating, done) = self.plan_vacating(&c, &choice.set, start, now);
            d = Decided {
                vacating,
                done,
                end,
                exact: d.exact && choice.exact,
            };
        }
        d
    }

    /// Carries out decision `d` for local request `id` asking for `start`: vacates its set,
    /// charges it, and reserves the local lease by the time its hosts are free.
    fn carry_out(
        &mut self,
        id: RequestId,
        start: EmuTime,
        now: EmuTime,
        d: Decided,
        out: &mut Vec<Action>,
    ) -> Result<(), Refusal> {
        // The cost of what is done: the policy's operations, except for leases the busy
        // storage turned into waits.
        let decision_cost = self.cfg.overhead.set_cost(d.vacating.iter().map(|v| {
            let l = &self.leases[&v.id];
            (v.op, l.req.vms, l.req.mem_mb)
        }));
        self.apply_vacating(&d.vacating, now, out);
        let reschedule = if d.vacating.iter().any(|v| v.op.reschedules()) {
            self.cfg.overhead.reschedule
        } else {
            EmuDuration::ZERO
        };
        let allowed = start.max(d.done);
        let placed = self.find_slot(id, start).filter(|(s, _, _)| *s <= allowed);
        let Some((s, plan, hosts)) = placed else {
            out.push(Action::Violation(format!(
                "local request #{} found no room by {} after its preemption decision",
                id.0, allowed
            )));
            self.place_waiting(now, out);
            return Err(Refusal::NoRoom);
        };
        self.commit(id, s, plan, hosts, out);
        out.push(Action::Decision(Decision {
            local: id,
            window: (start, d.end),
            set: d.vacating.iter().map(|v| (v.id, v.op)).collect(),
            cost: decision_cost,
            reschedule,
            vacated_by: d.done,
            local_start: s,
            exact: d.exact,
        }));
        self.place_waiting(now, out);
        Ok(())
    }

    /// Carries out a vacating plan: reservations dropped, VMs stopped or paused and
    /// suspended at their planned times, the suspended leases queued (or offered elsewhere),
    /// each lease charged its operation's cost.
    fn apply_vacating(&mut self, plans: &[Vacating], now: EmuTime, out: &mut Vec<Action>) {
        let mut plans = plans.to_vec();
        // Reservations are moved first, so the storage is as the plan assumed; then the rest
        // in arrival order, the order the suspensions were planned in.
        plans.sort_by_key(|p| (p.op != Operation::Displace, self.leases[&p.id].req.arrival));
        for p in plans {
            let l = &self.leases[&p.id];
            let (vms, mem, lease_type) = (l.req.vms, l.req.mem_mb, l.req.lease_type);
            let cost = self.cfg.overhead.operation_cost(p.op, vms, mem);
            let Some(res) = l.res.clone() else { continue };
            match p.op {
                Operation::Wait => continue,
                Operation::Displace => self.displace_now(p.id, &res, now, out),
                Operation::Stop => self.stop_for(&p, &res, out),
                Operation::Suspend | Operation::Migrate => self.suspend_for(&p, &res, now, out),
            }
            out.push(Action::Charge {
                lease: p.id,
                overhead: cost,
                preempted: true,
                vms: if p.op.preempts_vms() { vms } else { 0 },
                displaced: if p.op == Operation::Displace { vms } else { 0 },
                lease_type,
            });
        }
    }

    /// Moves a reservation out of the way; VMs told to start this very instant are recalled.
    fn displace_now(
        &mut self,
        id: RequestId,
        res: &Reservation,
        now: EmuTime,
        out: &mut Vec<Action>,
    ) {
        if self.leases[&id].phase == Phase::Running {
            // Recall VMs that were told to start this instant: they stop before doing
            // anything, and the lease waits again.
            let plans = res
                .hosts
                .iter()
                .enumerate()
                .map(|(vm, &host)| VmPlan {
                    vm: vm as u32,
                    host,
                    initial: VmState::Pending,
                    steps: [(now, VmEvent::Stop)].into(),
                })
                .collect();
            // Every step of theirs is called off, even one due this instant (a resumption
            // would otherwise begin and could not be stopped).
            out.push(Action::CommandVms {
                lease: id,
                after: None,
                plans,
            });
            self.waits_again(id);
        }
        self.drop_reservation(id);
    }

    /// Stops a cancellable lease's VMs at their planned times.
    fn stop_for(&mut self, p: &Vacating, res: &Reservation, out: &mut Vec<Action>) {
        let id = p.id;
        let l = &self.leases[&id];
        let done = self.done_by(l, p.from);
        let worked = done.saturating_sub(l.work_done);
        let mut vm_plans = Vec::with_capacity(p.vms.len());
        for (vm, &(stop, _, off)) in p.vms.iter().enumerate() {
            self.avail.end_vm(id, vm as u32, res.start, off);
            vm_plans.push(VmPlan {
                vm: vm as u32,
                host: res.hosts[vm],
                initial: VmState::Running,
                steps: [(stop, VmEvent::Stop)].into(),
            });
        }
        vacating_actions(id, p.from, vm_plans, worked, out);
        let l = self.leases.get_mut(&id).expect("known lease");
        l.phase = Phase::Cancelling;
        l.work_done = done;
        l.reported = 0;
        self.sync(id);
    }

    /// Pauses and suspends a lease's VMs to the shared storage one after another; a migrating
    /// lease is then offered to the IGG, a suspended one waits to be resumed here.
    fn suspend_for(
        &mut self,
        p: &Vacating,
        res: &Reservation,
        now: EmuTime,
        out: &mut Vec<Action>,
    ) {
        let id = p.id;
        let l = &self.leases[&id];
        let done = self.done_by(l, p.from);
        let worked = done.saturating_sub(l.work_done);
        let ts = self.cfg.overhead.suspend_vm(l.req.mem_mb);
        // Bookings of this lease not begun yet belong to an episode it leaves.
        self.storage.cancel(id, p.from);
        let mut vm_plans = Vec::with_capacity(p.vms.len());
        let mut images = Vec::with_capacity(p.vms.len());
        for (vm, &(pause, planned, _)) in p.vms.iter().enumerate() {
            let s = self.storage.book(id, planned, ts);
            let off = s + ts;
            images.push(off);
            self.avail.end_vm(id, vm as u32, res.start, off);
            vm_plans.push(VmPlan {
                vm: vm as u32,
                host: res.hosts[vm],
                initial: VmState::Running,
                steps: [
                    (pause, VmEvent::Pause),
                    (s, VmEvent::Suspend),
                    (off, VmEvent::Suspended),
                ]
                .into(),
            });
        }
        vacating_actions(id, p.from, vm_plans, worked, out);
        let last = images.iter().copied().max().unwrap_or(p.from);
        let migrate = p.op == Operation::Migrate;
        let (speed, reschedule) = (self.cfg.speed, self.cfg.overhead.reschedule);
        let l = self.leases.get_mut(&id).expect("known lease");
        l.work_done = done;
        l.res = None;
        l.images_ready = Some(images.clone());
        l.migrated_in = false;
        l.not_before = last.max(now + reschedule);
        l.phase = if migrate {
            Phase::Relocating
        } else {
            Phase::Waiting
        };
        if migrate {
            out.push(Action::Relocate(Relocation {
                req: l.req.clone(),
                work_done: speed.reference(done),
                images_ready: images,
            }));
        }
        self.sync(id);
    }

    // ---- migration ----

    /// The IGG found (or did not find) another cluster for a lease this core is relocating.
    pub fn relocated(&mut self, lease: RequestId, moved: bool, now: EmuTime) -> Vec<Action> {
        self.now.set(now);
        let mut out = Vec::new();
        let Some(l) = self.leases.get_mut(&lease) else {
            return out;
        };
        if l.phase != Phase::Relocating {
            return out;
        }
        if moved {
            // Its VMs are still being suspended here: their cut slots stay until they pass.
            self.forget(lease);
        } else {
            // No cluster took it: it is suspended and resumed here, which costs eq. 7
            // instead of the eq. 8 it was charged.
            let (v, mem) = (l.req.vms, l.req.mem_mb);
            self.waits_again(lease);
            let m = &self.cfg.overhead;
            let local = m.operation_cost(Operation::Suspend, v, mem).as_micros() as i64;
            let away = m.operation_cost(Operation::Migrate, v, mem).as_micros() as i64;
            out.push(Action::Adjust {
                lease,
                delta_us: local - away,
            });
            self.place_waiting(now, &mut out);
        }
        out.extend(self.tick(now));
        out
    }

    /// Another cluster's lease, suspended there, offered here. Accepted if its images can be
    /// copied and resumed here and it can still finish by its deadline. (Its copy was charged
    /// with the migration, eq. 8, by the source.)
    pub fn adopt(&mut self, r: &Relocation, now: EmuTime) -> Result<Vec<Action>, Refusal> {
        self.now.set(now);
        self.fits_ever(&r.req)?;
        let tc = self.cfg.overhead.copy_vm(r.req.mem_mb);
        let mut arrive = Vec::with_capacity(r.images_ready.len());
        let mut cursor = EmuTime::ZERO;
        for &ready in &r.images_ready {
            let start = cursor.max(ready);
            cursor = start + tc;
            arrive.push(cursor);
        }
        let first = arrive.first().copied().unwrap_or(now);
        let id = self.insert(r.req.clone(), now);
        let work_done = self.cfg.speed.local(r.work_done);
        let l = self.leases.get_mut(&id).expect("just inserted");
        l.work_done = work_done;
        l.images_ready = Some(arrive);
        l.migrated_in = true;
        l.not_before = first;
        l.started_once = true;
        let deadline = r.req.deadline.unwrap_or(EmuTime::NEVER);
        match self.find_slot(id, first) {
            Some((start, plan, hosts)) if plan.end <= deadline => {
                let mut out = Vec::new();
                self.commit(id, start, plan, hosts, &mut out);
                out.extend(self.tick(now));
                Ok(out)
            }
            _ => {
                self.forget(id);
                Err(Refusal::Deadline)
            }
        }
    }

    // ---- time and VM reports ----

    /// Starts what is due at `now`. Call at every [`Action::Wake`] time.
    pub fn tick(&mut self, now: EmuTime) -> Vec<Action> {
        self.now.set(now);
        let mut out = Vec::new();
        // Keep only wakes still to come (split_off costs the removed part, not the set).
        self.wakes = self.wakes.split_off(&(now + EmuDuration::from_micros(1)));
        self.start_due(now, &mut out);
        // EASY backfills at every event; with a backfill depth, every policy also schedules
        // here the leases that came within the depth.
        let easy = matches!(self.cfg.backfilling, Backfilling::Easy { .. });
        if easy || self.cfg.backfill_depth.is_some() {
            self.place_waiting(now, &mut out);
            self.start_due(now, &mut out);
        }
        out
    }

    /// Starts every waiting lease whose reservation begins by `now`.
    fn start_due(&mut self, now: EmuTime, out: &mut Vec<Action>) {
        let mut due = Vec::new();
        let mut passed = Vec::new();
        for &(t, id) in self.starts.range(..=(now, RequestId(u32::MAX))) {
            let holds = self.leases.get(&id).is_some_and(|l| {
                l.phase == Phase::Waiting && l.res.as_ref().is_some_and(|r| r.start == t)
            });
            if holds {
                due.push(id);
            }
            // Started now, or its lease moved on (a new reservation has its own entry).
            passed.push((t, id));
        }
        for entry in passed {
            self.starts.remove(&entry);
        }
        // In lease order, as a walk over the leases would start them.
        due.sort_unstable();
        debug_assert_eq!(
            due,
            self.leases
                .iter()
                .filter(|(_, l)| {
                    l.phase == Phase::Waiting && l.res.as_ref().is_some_and(|r| r.start <= now)
                })
                .map(|(id, _)| *id)
                .collect::<Vec<_>>(),
            "the index of reservations by start missed one due"
        );
        debug_assert!(
            self.starts.iter().all(|&(t, id)| self
                .leases
                .get(&id)
                .and_then(|l| l.res.as_ref())
                .is_some_and(|r| r.start == t)),
            "the index of reservations by start kept one no lease holds"
        );
        for id in due {
            self.start(id, out);
        }
    }

    /// Lease `id` waits again: if it still holds a reservation, it is due at its start.
    fn waits_again(&mut self, id: RequestId) {
        if let Some(l) = self.leases.get_mut(&id) {
            l.phase = Phase::Waiting;
            if let Some(r) = &l.res {
                self.starts.insert((r.start, id));
            }
            self.sync(id);
        }
    }

    fn start(&mut self, id: RequestId, out: &mut Vec<Action>) {
        let l = self.leases.get_mut(&id).expect("starting a known lease");
        let Some(res) = &l.res else { return };
        l.phase = Phase::Running;
        l.reported = 0;
        out.push(Action::RunVms {
            lease: id,
            plans: res.plans.clone(),
        });
        if !l.started_once {
            l.started_once = true;
            out.push(Action::Started(id));
        }
        self.sync(id);
    }

    /// A VM instance of `lease` reached `state` (finished, cancelled or suspended).
    pub fn vm_reported(&mut self, lease: RequestId, state: VmState, now: EmuTime) -> Vec<Action> {
        self.now.set(now);
        let mut out = Vec::new();
        let Some(l) = self.leases.get_mut(&lease) else {
            return out;
        };
        let terminal = match (state, &l.phase) {
            (VmState::Finished, Phase::Running) => Some(RequestState::Completed),
            (VmState::Cancelled, Phase::Cancelling) => Some(RequestState::Cancelled),
            _ => None,
        };
        let Some(outcome) = terminal else {
            return out;
        };
        l.reported += 1;
        if l.reported < l.req.vms {
            return out;
        }
        if outcome == RequestState::Completed {
            out.push(Action::Worked {
                lease,
                work: l.duration.saturating_sub(l.work_done),
            });
            l.work_done = l.duration;
        }
        self.avail.release(lease);
        self.forget(lease);
        out.push(Action::Ended(lease, outcome));
        self.avail.forget_before(now);
        self.storage.forget_before(now);
        if outcome == RequestState::Cancelled {
            // The cancelled lease's future was already cut; others may now start earlier.
            self.place_waiting(now, &mut out);
        }
        out.extend(self.tick(now));
        out
    }
}

/// What vacating a running lease tells the shell: the VMs' new plans (replacing their steps
/// from `from` on) and the work the lease did until then.
fn vacating_actions(
    id: RequestId,
    from: EmuTime,
    plans: Vec<VmPlan>,
    worked: EmuDuration,
    out: &mut Vec<Action>,
) {
    out.push(Action::CommandVms {
        lease: id,
        after: Some(from),
        plans,
    });
    out.push(Action::Worked {
        lease: id,
        work: worked,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lrms::availability::tests::hosts;
    use crate::lrms::PacpOmega;
    use crate::model::{ClusterId, GridId};
    use proptest::test_runner::TestCaseError;
    use proptest::{prop_assert, prop_assert_eq};

    pub(crate) fn config(backfilling: Backfilling) -> Config {
        Config {
            backfilling,
            overhead: OverheadModel::gluster_testbed(),
            boot: EmuDuration::ZERO,
            seed: 1,
            can_migrate: false,
            enforce_memory: true,
            search_budget: super::super::policy::SEARCH_BUDGET,
            speed: Speed::default(),
            compress: false,
            locals: LocalRequests::Reserved,
            moldable: Moldable::Spread,
            partitions: false,
            backfill_depth: None,
        }
    }

    fn with(preemption: PreemptionPolicy) -> Policies {
        Policies::builtin(preemption, AdmissionPolicy::Cacp)
    }

    fn core(n: usize, backfilling: Backfilling, preemption: PreemptionPolicy) -> Core {
        Core::new(&hosts(n, 4, 4096), config(backfilling), with(preemption))
    }

    fn req(id: u32, origin: Origin, arrival: u64, vms: u32, mem: u32, secs: u64) -> LeaseRequest {
        LeaseRequest {
            id: RequestId(id),
            origin,
            grid: GridId(0),
            cluster: Some(ClusterId(0)),
            arrival: EmuTime::from_secs(arrival),
            start: None,
            vms,
            cores_per_vm: 1,
            mem_mb: mem,
            duration: EmuDuration::from_secs(secs),
            lease_type: if origin == Origin::Local {
                LeaseType::DeadlineNonPreemptable
            } else {
                LeaseType::BestEffortSuspendable
            },
            deadline: None,
            moldable: false,
            deadline_ratio: None,
        }
    }

    fn started(actions: &[Action]) -> Vec<u32> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::RunVms { lease, .. } => Some(lease.0),
                _ => None,
            })
            .collect()
    }

    fn decision(actions: &[Action]) -> Option<&Decision> {
        actions.iter().find_map(|a| match a {
            Action::Decision(d) => Some(d),
            _ => None,
        })
    }

    #[test]
    fn conservative_backfilling_fills_a_hole_without_delaying_the_head() {
        // 1 host, 4 cores. Lease 0 takes 3 cores for 100 s; lease 1 needs 4 (waits to 100);
        // lease 2 needs 1 core for 50 s: it fits now and ends before lease 1's reservation.
        let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Nop);
        let t0 = EmuTime::ZERO;
        assert_eq!(
            started(
                &c.submit_external(req(0, Origin::External, 0, 3, 100, 100), t0)
                    .unwrap()
            ),
            vec![0]
        );
        assert!(started(
            &c.submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
                .unwrap()
        )
        .is_empty());
        assert_eq!(
            started(
                &c.submit_external(req(2, Origin::External, 0, 1, 100, 50), t0)
                    .unwrap()
            ),
            vec![2]
        );
        // A 1-core lease for 150 s would delay lease 1: it is reserved after it instead.
        let a = c
            .submit_external(req(3, Origin::External, 0, 1, 100, 150), t0)
            .unwrap();
        assert!(started(&a).is_empty());
        assert!(a.contains(&Action::Wake(EmuTime::from_secs(200))), "{a:?}");
        assert!(c.availability().within_capacity());
    }

    /// The hole-filling scenario of the test above, on a core with backfill depth `depth`:
    /// what lease 2 (1 core for 50 s, third in line) gets at once.
    fn third_in_line(backfilling: Backfilling, depth: Option<usize>) -> (Core, Vec<Action>) {
        let mut cfg = config(backfilling);
        cfg.backfill_depth = depth;
        let mut c = Core::new(&hosts(1, 4, 4096), cfg, with(PreemptionPolicy::Nop));
        let t0 = EmuTime::ZERO;
        for (id, vms, secs) in [(0, 3, 100), (1, 4, 100)] {
            c.submit_external(req(id, Origin::External, 0, vms, 100, secs), t0)
                .unwrap();
        }
        let a = c
            .submit_external(req(2, Origin::External, 0, 1, 100, 50), t0)
            .unwrap();
        (c, a)
    }

    #[test]
    fn a_lease_beyond_the_backfill_depth_is_not_considered_until_it_comes_closer() {
        let easy = Backfilling::Easy { pivots: 1 };
        for backfilling in [Backfilling::Conservative, easy] {
            // Without a depth, lease 2 fills the hole at once.
            assert_eq!(started(&third_in_line(backfilling, None).1), vec![2]);
            // With depth 1, only lease 1 (reserved at 100) is considered: lease 2 gets
            // nothing though it fits, as Slurm's bf_max_job_test leaves such a job alone.
            let (mut c, a) = third_in_line(backfilling, Some(1));
            assert!(
                a.iter()
                    .all(|x| !matches!(x, Action::Wake(_) | Action::RunVms { .. })),
                "{backfilling:?}: {a:?}"
            );
            // Lease 0 ends at 100; lease 1 starts, and lease 2, now first in line, is
            // reserved after it.
            let t = EmuTime::from_secs(100);
            let mut out = Vec::new();
            for _ in 0..3 {
                out.extend(c.vm_reported(RequestId(0), VmState::Finished, t));
            }
            out.extend(c.tick(t));
            assert_eq!(started(&out), vec![1], "{backfilling:?}");
            assert!(
                out.contains(&Action::Wake(EmuTime::from_secs(200))),
                "{out:?}"
            );
            let slot = c.leases().into_iter().find(|l| l.id == RequestId(2));
            assert_eq!(
                slot.and_then(|l| l.slot).map(|s| s.0),
                Some(EmuTime::from_secs(200))
            );
        }
    }

    /// Runs `n` external leases of mixed sizes (a fixed pseudo-random sequence, arriving
    /// every 7 s) on 3 hosts of 4 cores to their ends, completing VMs when their plans say;
    /// returns every action in order with its time.
    fn drive(backfilling: Backfilling, depth: Option<usize>, n: u32) -> Vec<(EmuTime, Action)> {
        let mut cfg = config(backfilling);
        cfg.backfill_depth = depth;
        let mut c = Core::new(&hosts(3, 4, 4096), cfg, with(PreemptionPolicy::Nop));
        enum Event {
            Submit(LeaseRequest),
            Wake,
            Done(RequestId),
        }
        let mut events: BTreeMap<(EmuTime, u64), Event> = BTreeMap::new();
        let mut x = 12345u64;
        for i in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (vms, secs) = (1 + (x >> 33) % 12, 20 + (x >> 45) % 300);
            let r = req(i, Origin::External, 7 * u64::from(i), vms as u32, 100, secs);
            events.insert((r.arrival, u64::from(i)), Event::Submit(r));
        }
        let mut seq = u64::from(n);
        let mut log = Vec::new();
        while let Some(((t, _), e)) = events.pop_first() {
            let out = match e {
                Event::Submit(r) => c.submit_external(r, t).unwrap_or_default(),
                Event::Wake => c.tick(t),
                Event::Done(lease) => c.vm_reported(lease, VmState::Finished, t),
            };
            for a in out {
                seq += 1;
                match &a {
                    Action::Wake(at) => {
                        events.insert((*at, seq), Event::Wake);
                    }
                    Action::RunVms { lease, plans } => {
                        for p in plans.iter() {
                            let end = p.steps.iter().find(|s| s.1 == VmEvent::Completed);
                            seq += 1;
                            events.insert((end.map_or(t, |s| s.0), seq), Event::Done(*lease));
                        }
                    }
                    _ => {}
                }
                log.push((t, a));
            }
        }
        log
    }

    #[test]
    fn a_backfill_depth_past_the_queue_changes_nothing() {
        let easy = Backfilling::Easy { pivots: 2 };
        for backfilling in [Backfilling::Fcfs, Backfilling::Conservative, easy] {
            let unbounded = drive(backfilling, None, 60);
            assert_eq!(
                drive(backfilling, Some(1000), 60),
                unbounded,
                "{backfilling:?}"
            );
            let ended = |log: &[(EmuTime, Action)]| {
                log.iter()
                    .filter(|(_, a)| matches!(a, Action::Ended(..)))
                    .count()
            };
            assert_eq!(ended(&unbounded), 60, "{backfilling:?}");
            // A shallow depth still runs every lease, in another order.
            let shallow = drive(backfilling, Some(2), 60);
            assert_eq!(ended(&shallow), 60, "{backfilling:?}");
        }
    }

    #[test]
    fn queued_locals_wait_in_the_backfilling_queue_without_priority_or_preemption() {
        // Paper 004's providers: 1 host, 4 cores, conservative backfilling, MOV preemption
        // configured but locals queued. A suspendable external lease takes 3 cores for 100 s;
        // a 4-VM local request arriving at t = 10 waits for it (nothing is preempted, nothing
        // is rejected); a later 1-core external lease still backfills the hole before it.
        let (mut cfg, policy) = (config(Backfilling::Conservative), PreemptionPolicy::Mov);
        cfg.locals = LocalRequests::Queued;
        let mut c = Core::new(&hosts(1, 4, 4096), cfg, with(policy));
        c.submit_external(req(0, Origin::External, 0, 3, 100, 100), EmuTime::ZERO)
            .unwrap();
        let t10 = EmuTime::from_secs(10);
        let a = c
            .submit_local(req(1, Origin::Local, 10, 4, 100, 100), t10)
            .expect("a queued local is never refused for room");
        assert!(decision(&a).is_none(), "no preemption decision: {a:?}");
        assert!(started(&a).is_empty());
        let slot = |c: &Core, id: u32| {
            c.leases()
                .into_iter()
                .find(|l| l.id == RequestId(id))
                .and_then(|l| l.slot)
                .map(|s| s.0)
        };
        assert_eq!(
            slot(&c, 1),
            Some(EmuTime::from_secs(100)),
            "reserved after lease 0"
        );
        let b = c
            .submit_external(req(2, Origin::External, 10, 1, 100, 50), t10)
            .unwrap();
        assert_eq!(started(&b), vec![2], "backfilled ahead of the local lease");
        // A 1-core external lease of 150 s would delay the local lease: it goes after it,
        // exactly as behind an external one (no priority either way).
        c.submit_external(req(3, Origin::External, 10, 1, 100, 150), t10)
            .unwrap();
        assert_eq!(slot(&c, 3), Some(EmuTime::from_secs(200)));
        assert!(c.availability().within_capacity());
    }

    #[test]
    fn with_partitions_local_leases_have_their_own_easy_pivot() {
        // EASY, one pivot; 1 host of 4 cores, all busy for 100 s. A 4-core external lease
        // waits and takes the pivot; a 4-core local lease then waits too. With partitions it
        // is its own partition's pivot and holds a reservation (after the external one);
        // without, it has none and waits for the queue to move.
        let reserved = |partitions: bool| {
            let (mut cfg, policy) = (
                config(Backfilling::Easy { pivots: 1 }),
                PreemptionPolicy::Nop,
            );
            cfg.locals = LocalRequests::Queued;
            cfg.partitions = partitions;
            let mut c = Core::new(&hosts(1, 4, 4096), cfg, with(policy));
            let t0 = EmuTime::ZERO;
            c.submit_external(req(0, Origin::External, 0, 4, 100, 100), t0)
                .unwrap();
            c.submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
                .unwrap();
            c.submit_local(req(2, Origin::Local, 0, 4, 100, 100), t0)
                .unwrap();
            c.leases()
                .into_iter()
                .find(|l| l.id == RequestId(2))
                .and_then(|l| l.slot)
                .map(|s| s.0)
        };
        assert_eq!(reserved(true), Some(EmuTime::from_secs(200)));
        assert_eq!(reserved(false), None);
    }

    /// A conservative core on one host of 8 cores, locals queued, with or without
    /// partitions (the local one of 4 cores).
    fn partitioned(partitions: bool) -> Core {
        let mut cfg = config(Backfilling::Conservative);
        cfg.locals = LocalRequests::Queued;
        cfg.partitions = partitions;
        let mut c = Core::new(&hosts(1, 8, 8192), cfg, with(PreemptionPolicy::Nop));
        c.resize_partitions(4);
        c
    }

    fn reserved_at(c: &Core, id: u32) -> Option<u64> {
        let l = c.leases.get(&RequestId(id))?;
        l.res
            .as_ref()
            .map(|r| r.start.since(EmuTime::ZERO).as_secs_f64() as u64)
    }

    #[test]
    fn with_partitions_a_reservation_waits_for_its_own_partition() {
        // Local L1 (4 cores, 50 s) and Grid G1 (4 cores, 100 s) start at once, each on its
        // own partition. Grid G2 (4 cores, 50 s) must wait: without partitions it is reserved
        // when L1 ends (50); with them it waits for the Grid partition (100) — it may borrow
        // the local partition's cores only when they are idle at its start. A local L2 (4
        // cores) then gets its own partition at 50, where without partitions it queues
        // behind G2 (100).
        let t0 = EmuTime::ZERO;
        let run = |partitions: bool| {
            let mut c = partitioned(partitions);
            c.submit_local(req(1, Origin::Local, 0, 4, 100, 50), t0)
                .unwrap();
            c.submit_external(req(2, Origin::External, 0, 4, 100, 100), t0)
                .unwrap();
            c.submit_external(req(3, Origin::External, 0, 4, 100, 50), t0)
                .unwrap();
            c.submit_local(req(4, Origin::Local, 0, 4, 100, 30), t0)
                .unwrap();
            (1..=4).map(|id| reserved_at(&c, id)).collect::<Vec<_>>()
        };
        assert_eq!(run(false), vec![Some(0), Some(0), Some(50), Some(100)]);
        assert_eq!(run(true), vec![Some(0), Some(0), Some(100), Some(50)]);
        // At its start a Grid lease borrows the local partition's idle cores: with the
        // local partition empty, 8 Grid cores start at once.
        let mut c = partitioned(true);
        let out = c
            .submit_external(req(5, Origin::External, 0, 8, 100, 10), t0)
            .unwrap();
        assert_eq!(started(&out), vec![5]);
        assert_eq!(
            c.leases[&RequestId(5)].charge.map(|ch| ch.taken),
            Some([4, 4])
        );
    }

    /// Checks, second by second over the first 2000 s, that no partition is charged more
    /// than its size and that each lease's charge covers its cores over its reservation.
    fn check_partitions(c: &Core) -> Result<(), TestCaseError> {
        let [g, l] = c.parts.limits();
        let charges: Vec<(Charge, u64)> = c
            .leases
            .values()
            .filter_map(|x| x.charge.map(|ch| (ch, x.req.cores())))
            .collect();
        for (ch, cores) in &charges {
            prop_assert_eq!(ch.taken[0] + ch.taken[1], *cores);
        }
        for sec in 0..2000u64 {
            let at = EmuTime::from_secs(sec);
            let mut used = [0u64; 2];
            for (ch, _) in charges
                .iter()
                .filter(|(ch, _)| ch.start <= at && at < ch.end)
            {
                used[0] += ch.taken[0];
                used[1] += ch.taken[1];
            }
            prop_assert!(
                used[0] <= g && used[1] <= l,
                "at {}s {:?} of [{}, {}]",
                sec,
                used,
                g,
                l
            );
        }
        Ok(())
    }

    type Job = (bool, u32, u64, u64);

    enum Ev {
        Submit(LeaseRequest),
        Wake,
        Done(RequestId),
    }

    /// The events `jobs` (local?, cores, seconds after the previous, run time) submit.
    fn job_events(jobs: &[Job]) -> BTreeMap<(EmuTime, u64), Ev> {
        let mut at = 0;
        let mut events = BTreeMap::new();
        for (i, &(is_local, cores, gap, secs)) in jobs.iter().enumerate() {
            at += gap;
            let origin = if is_local {
                Origin::Local
            } else {
                Origin::External
            };
            let r = req(i as u32, origin, at, cores, 100, secs);
            events.insert((r.arrival, i as u64), Ev::Submit(r));
        }
        events
    }

    /// Drives a partitioned core (EASY with one pivot a partition, or conservative) with
    /// `jobs` and checks at every event that the partitions stay within their sizes and that
    /// no reservation is ever moved later — borrowing delays no pivot.
    fn drive_partitioned(easy: bool, local: u64, jobs: &[Job]) -> Result<(), TestCaseError> {
        let mut cfg = config(if easy {
            Backfilling::Easy { pivots: 1 }
        } else {
            Backfilling::Conservative
        });
        cfg.locals = LocalRequests::Queued;
        cfg.partitions = true;
        let mut c = Core::new(&hosts(2, 4, 8192), cfg, with(PreemptionPolicy::Nop));
        c.resize_partitions(local);
        let mut events = job_events(jobs);
        let (mut seq, mut promised) = (1_000_000u64, BTreeMap::<RequestId, EmuTime>::new());
        while let Some(((t, _), e)) = events.pop_first() {
            let out = match e {
                Ev::Submit(r) if r.origin == Origin::Local => c.submit_local(r, t),
                Ev::Submit(r) => c.submit_external(r, t),
                Ev::Wake => Ok(c.tick(t)),
                Ev::Done(lease) => Ok(c.vm_reported(lease, VmState::Finished, t)),
            };
            for a in out.unwrap_or_default() {
                seq += 1;
                let at = match &a {
                    Action::Wake(w) => (*w, Ev::Wake),
                    Action::RunVms { lease, plans } => {
                        let done = plans[0].steps.iter().find(|s| s.1 == VmEvent::Completed);
                        for _ in 1..plans.len() {
                            seq += 1;
                            let end = done.map_or(t, |s| s.0);
                            events.insert((end, seq), Ev::Done(*lease));
                        }
                        seq += 1;
                        (done.map_or(t, |s| s.0), Ev::Done(*lease))
                    }
                    _ => continue,
                };
                events.insert((at.0, seq), at.1);
            }
            for (id, l) in &c.leases {
                if let (Phase::Waiting, Some(r)) = (&l.phase, &l.res) {
                    let first = *promised.entry(*id).or_insert(r.start);
                    prop_assert!(r.start <= first, "lease #{} moved later", id.0);
                }
            }
            check_partitions(&c)?;
        }
        prop_assert!(c.leases.is_empty(), "every lease ran");
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(60))]
        #[test]
        fn partitions_stay_within_their_sizes_and_borrowing_delays_no_pivot(
            easy in proptest::prelude::any::<bool>(),
            local in 0..9u64,
            jobs in proptest::collection::vec(
                (proptest::prelude::any::<bool>(), 1..8u32, 0..30u64, 5..120u64), 1..14),
        ) {
            drive_partitioned(easy, local, &jobs)?;
        }
    }

    #[test]
    fn fcfs_never_lets_a_later_lease_overtake() {
        let mut c = core(1, Backfilling::Fcfs, PreemptionPolicy::Nop);
        let t0 = EmuTime::ZERO;
        c.submit_external(req(0, Origin::External, 0, 3, 100, 100), t0)
            .unwrap();
        c.submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
            .unwrap();
        // It would fit now, but FCFS keeps it behind lease 1, which takes the whole host
        // from 100 to 200.
        let a = c
            .submit_external(req(2, Origin::External, 0, 1, 100, 50), t0)
            .unwrap();
        assert!(started(&a).is_empty());
        assert!(a.contains(&Action::Wake(EmuTime::from_secs(200))), "{a:?}");
    }

    #[test]
    fn easy_with_one_pivot_backfills_only_what_fits_now() {
        let mut c = core(1, Backfilling::Easy { pivots: 1 }, PreemptionPolicy::Nop);
        let t0 = EmuTime::ZERO;
        c.submit_external(req(0, Origin::External, 0, 3, 100, 100), t0)
            .unwrap();
        // The pivot: reserved at 100.
        let a = c
            .submit_external(req(1, Origin::External, 0, 4, 100, 100), t0)
            .unwrap();
        assert!(a.contains(&Action::Wake(EmuTime::from_secs(100))));
        // Not a pivot and does not fit now without delaying the pivot: no reservation.
        let a = c
            .submit_external(req(2, Origin::External, 0, 1, 100, 150), t0)
            .unwrap();
        assert!(
            a.iter()
                .all(|x| !matches!(x, Action::Wake(_) | Action::RunVms { .. })),
            "{a:?}"
        );
    }

    #[test]
    fn deadline_leases_are_refused_at_admission_when_they_would_be_late() {
        let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Nop);
        c.submit_external(req(0, Origin::External, 0, 4, 100, 1000), EmuTime::ZERO)
            .unwrap();
        let mut late = req(1, Origin::External, 0, 1, 100, 100);
        late.lease_type = LeaseType::DeadlineNonPreemptable;
        late.deadline = Some(EmuTime::from_secs(500));
        assert_eq!(
            c.submit_external(late.clone(), EmuTime::ZERO),
            Err(Refusal::Deadline)
        );
        late.id = RequestId(2);
        late.deadline = Some(EmuTime::from_secs(1100));
        assert!(c.submit_external(late, EmuTime::ZERO).is_ok());
    }

    #[test]
    fn nop_rejects_a_local_request_that_does_not_fit() {
        let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Nop);
        c.submit_external(req(0, Origin::External, 0, 4, 100, 1000), EmuTime::ZERO)
            .unwrap();
        assert_eq!(
            c.submit_local(
                req(1, Origin::Local, 10, 2, 100, 100),
                EmuTime::from_secs(10)
            ),
            Err(Refusal::NoRoom)
        );
    }

    #[test]
    fn suspension_is_timed_and_work_is_conserved() {
        // 1 host; a 4-VM suspendable lease runs; a 2-VM local request arrives at t=100.
        let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Mov);
        c.submit_external(req(0, Origin::External, 0, 4, 400, 1000), EmuTime::ZERO)
            .unwrap();
        let now = EmuTime::from_secs(100);
        let a = c
            .submit_local(req(1, Origin::Local, 100, 2, 100, 300), now)
            .unwrap();
        let plan = a
            .iter()
            .find_map(|x| match x {
                Action::CommandVms { plans, .. } => Some(plans.clone()),
                _ => None,
            })
            .expect("the external lease is preempted");
        // Pauses 5 ms apart, then four 10 s suspensions (400 MB at 40 MB/s) back to back.
        let ms = |m: u64| now + EmuDuration::from_millis(m);
        assert_eq!(plan[0].steps[0], (ms(0), VmEvent::Pause));
        assert_eq!(plan[3].steps[0], (ms(15), VmEvent::Pause));
        assert_eq!(plan[0].steps[1], (ms(20), VmEvent::Suspend));
        assert_eq!(plan[3].steps[2], (ms(40_020), VmEvent::Suspended));
        let (done, remaining) = c.work_done(RequestId(0)).unwrap();
        assert_eq!(done, EmuDuration::from_secs(100));
        assert_eq!(done + remaining, EmuDuration::from_secs(1000));
        // The local lease asked for now: it starts when its two VMs' hosts are vacated —
        // the first two suspensions, 20.02 s later — and the profile never overflows.
        let d = decision(&a).expect("a decision");
        assert_eq!(d.local_start, ms(20_020));
        assert!(c.availability().within_capacity());
    }

    #[test]
    fn an_advance_request_is_reserved_on_arrival_and_preempts_just_in_time() {
        // 1 host; a 4-VM suspendable lease runs from 0 for 2000 s. At t = 100 a local request
        // for 2 VMs asks to start at 1000. It is decided now: the external lease keeps running
        // until it must begin vacating — its four 10 s suspensions and 20 ms of pauses must end
        // by 1000 — and the local lease starts exactly at 1000.
        let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Mov);
        c.submit_external(req(0, Origin::External, 0, 4, 400, 2000), EmuTime::ZERO)
            .unwrap();
        let now = EmuTime::from_secs(100);
        let mut local = req(1, Origin::Local, 100, 2, 100, 300);
        local.start = Some(EmuTime::from_secs(1000));
        let a = c.submit_local(local, now).unwrap();
        let d = decision(&a).expect("decided on arrival").clone();
        assert_eq!(d.local_start, EmuTime::from_secs(1000));
        assert_eq!(d.vacated_by, EmuTime::from_secs(1000));
        let (pause, after) = a
            .iter()
            .find_map(|x| match x {
                Action::CommandVms { plans, after, .. } => Some((plans[0].steps[0], *after)),
                _ => None,
            })
            .unwrap();
        let t_p = EmuTime::from_secs(1000).earlier_by(EmuDuration::from_millis(40_020));
        assert_eq!(pause, (t_p, VmEvent::Pause));
        assert_eq!(after, Some(t_p));
        // Work until the pause counts: 1000 − 40.02 s.
        let (done, _) = c.work_done(RequestId(0)).unwrap();
        assert_eq!(done, t_p.since(EmuTime::ZERO));
        // An external lease arriving in between cannot take the local interval.
        let b = c
            .submit_external(
                req(2, Origin::External, 500, 4, 100, 700),
                EmuTime::from_secs(500),
            )
            .unwrap();
        assert!(started(&b).is_empty());
        assert!(c.availability().within_capacity());
    }

    #[test]
    fn a_moldable_request_larger_than_the_cluster_spreads_over_it() {
        // 3 hosts × 4 cores = 12 VMs; 30 tasks of 100 s are 3000 VM-seconds: 250 s on 12 VMs.
        let mut c = core(3, Backfilling::Conservative, PreemptionPolicy::Nop);
        let mut bag = req(0, Origin::External, 0, 30, 100, 100);
        bag.moldable = true;
        bag.deadline_ratio = Some(2.0);
        let a = c
            .submit_external(bag, EmuTime::ZERO)
            .expect("adapts to the cluster");
        assert!(a.contains(&Action::Terms {
            lease: RequestId(0),
            vms: 12,
            deadline: Some(EmuTime::from_secs(500)),
        }));
        assert_eq!(c.leases()[0].duration, EmuDuration::from_secs(250));
        // A VM no host can hold is refused whatever the mould.
        let mut huge = req(1, Origin::External, 0, 2, 8192, 100);
        huge.moldable = true;
        assert_eq!(
            c.submit_external(huge, EmuTime::ZERO),
            Err(Refusal::TooLarge)
        );
    }

    #[test]
    fn a_single_server_moldable_request_holds_the_cluster_for_its_whole_work() {
        // 3 hosts × 4 cores = 12 VMs; 3 tasks of 100 s: paper 002's ω = tasks × task
        // duration = 300 s on all 12 VMs, and a deadline of 2 run times, 600 s after arrival.
        let mut cfg = config(Backfilling::Conservative);
        cfg.moldable = Moldable::SingleServer;
        let mut c = Core::new(&hosts(3, 4, 4096), cfg, with(PreemptionPolicy::Nop));
        let mut bag = req(0, Origin::External, 0, 3, 100, 100);
        bag.moldable = true;
        bag.deadline_ratio = Some(2.0);
        let a = c.submit_external(bag.clone(), EmuTime::ZERO).unwrap();
        assert!(a.contains(&Action::Terms {
            lease: RequestId(0),
            vms: 12,
            deadline: Some(EmuTime::from_secs(600)),
        }));
        assert_eq!(c.leases()[0].duration, EmuDuration::from_secs(300));
        // The cluster serves one at a time: the next waits for the whole run.
        bag.id = RequestId(1);
        c.submit_external(bag, EmuTime::ZERO).unwrap();
        let next = c.leases().into_iter().find(|l| l.id == RequestId(1));
        assert_eq!(
            next.and_then(|l| l.slot).map(|s| s.0),
            Some(EmuTime::from_secs(300))
        );
        // A local moldable request is spread whatever the reading: 300 VM-s over 12 VMs.
        let mut local = req(2, Origin::Local, 0, 3, 100, 100);
        local.moldable = true;
        let mut c = Core::new(
            &hosts(3, 4, 4096),
            cfg_single(),
            with(PreemptionPolicy::Nop),
        );
        c.submit_local(local, EmuTime::ZERO).unwrap();
        assert_eq!(c.leases()[0].duration, EmuDuration::from_secs(25));
    }

    fn cfg_single() -> Config {
        let mut cfg = config(Backfilling::Conservative);
        cfg.moldable = Moldable::SingleServer;
        cfg
    }

    proptest::proptest! {
        /// The run time, VMs and deadline of a moldable external request under each reading,
        /// against paper 002's definitions written out here: single server, the whole cluster
        /// for tasks × task duration; spread, the same work over every VM (rounded up to the
        /// µs); deadline = arrival + ratio × run time.
        #[test]
        fn moldable_terms_follow_the_reading(
            hosts_n in 1usize..6, tasks in 1u32..40, task_ms in 1u64..500_000,
            ratio in 0.5f64..8.0, arrival in 0u64..1000, single in proptest::bool::ANY,
        ) {
            let mut cfg = config(Backfilling::Conservative);
            cfg.moldable = if single { Moldable::SingleServer } else { Moldable::Spread };
            let mut c = Core::new(&hosts(hosts_n, 4, 4096), cfg, with(PreemptionPolicy::Nop));
            let mut bag = req(0, Origin::External, arrival, tasks, 100, 0);
            bag.duration = EmuDuration::from_micros(task_ms * 1000);
            bag.moldable = true;
            bag.deadline_ratio = Some(ratio);
            let a = c.submit_external(bag, EmuTime::from_secs(arrival)).unwrap();
            let vms = 4 * hosts_n as u64;
            let work_us = u64::from(tasks) * task_ms * 1000;
            let run_us = if single { work_us } else { work_us.div_ceil(vms) };
            proptest::prop_assert_eq!(c.leases()[0].duration.as_micros(), run_us);
            let Some(Action::Terms { vms: got, deadline: Some(d), .. }) =
                a.iter().find(|x| matches!(x, Action::Terms { .. }))
            else {
                return Err(proptest::test_runner::TestCaseError::fail("no terms"));
            };
            proptest::prop_assert_eq!(u64::from(*got), vms);
            let want = arrival as f64 + ratio * run_us as f64 / 1e6;
            let slack = d.since(EmuTime::ZERO).as_secs_f64() - want;
            proptest::prop_assert!(slack.abs() < 2e-6, "deadline off by {slack} s");
        }
    }

    /// Feeds a PACP core (12 VMs, paper 002's deadline model) an external moldable request
    /// of 2 tasks × 30 s every 10 s and a local one of 1 task × 6 s every 10 s (at +5 s), for
    /// `secs`, completing VMs when their plans say; returns (admitted, refused as queue full).
    fn pacp_stream(reading: Moldable, omega: PacpOmega, secs: u64) -> (u32, u32) {
        let mut cfg = config(Backfilling::Conservative);
        cfg.moldable = reading;
        let pacp = AdmissionPolicy::Pacp {
            low_urgency: 0.5,
            low_ratio: 4.0,
            high_ratio: 2.0,
            omega,
        };
        let policies = Policies::builtin(PreemptionPolicy::Nop, pacp);
        let mut c = Core::new(&hosts(3, 4, 4096), cfg, policies);
        let mut events: BTreeMap<(EmuTime, u64), Option<(bool, LeaseRequest)>> = BTreeMap::new();
        let mut done: BTreeMap<(EmuTime, u64), RequestId> = BTreeMap::new();
        for i in 0..(secs / 10) as u32 {
            let t = 10 * u64::from(i);
            let mut e = req(2 * i, Origin::External, t, 2, 100, 30);
            let mut l = req(2 * i + 1, Origin::Local, t + 5, 1, 100, 6);
            (e.moldable, l.moldable) = (true, true);
            events.insert((e.arrival, u64::from(2 * i)), Some((true, e)));
            events.insert((l.arrival, u64::from(2 * i + 1)), Some((false, l)));
        }
        let (mut seq, mut admitted, mut full) = (1u64 << 40, 0, 0);
        loop {
            let next_event = events.first_key_value().map(|(k, _)| *k);
            let next_done = done.first_key_value().map(|(k, _)| *k);
            let done_first = next_done.is_some_and(|d| next_event.is_none_or(|e| d.0 <= e.0));
            let out = match (next_event, next_done) {
                (_, Some(d)) if done_first => {
                    let lease = done.remove(&d).unwrap(); // d is a key of `done`
                    c.vm_reported(lease, VmState::Finished, d.0)
                }
                (Some(k), _) => match events.remove(&k).flatten() {
                    None => c.tick(k.0),
                    Some((true, r)) => match c.submit_external(r, k.0) {
                        Ok(out) => {
                            admitted += 1;
                            out
                        }
                        Err(why) => {
                            full += u32::from(why == Refusal::QueueFull);
                            Vec::new()
                        }
                    },
                    Some((false, r)) => c.submit_local(r, k.0).unwrap_or_default(),
                },
                _ => return (admitted, full),
            };
            for a in out {
                seq += 1;
                match a {
                    Action::Wake(at) => drop(events.insert((at, seq), None)),
                    Action::RunVms { lease, plans } => {
                        for p in plans.iter() {
                            let end = p.steps.iter().find(|s| s.1 == VmEvent::Completed);
                            seq += 1;
                            done.insert((end.map_or(EmuTime::ZERO, |s| s.0), seq), lease);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn pacp_limits_an_overloaded_single_server_queue() {
        // Single server: ω = 60 s against an external request every 10 s (ρ_e ≈ 6): the queue
        // is unstable, Algorithm 1 finds a finite K and requests beyond it are refused.
        let measured = PacpOmega::Measured;
        let (admitted, full) = pacp_stream(Moldable::SingleServer, measured, 2000);
        assert!(full > 100, "admitted {admitted}, refused {full}");
        assert!(admitted >= 20, "admitted {admitted}");
        // Spread, the same stream runs in 5 s on 12 VMs (ρ_e ≈ 0.5): no limit is reached.
        assert_eq!(pacp_stream(Moldable::Spread, measured, 2000), (200, 0));
        // Given ω = tasks × task duration (60 s) as §V-B says, the model sees the single
        // server's overload and limits the queue, but a spread queue never grows to it.
        assert_eq!(
            pacp_stream(Moldable::Spread, PacpOmega::Work, 2000),
            (200, 0)
        );
    }

    #[test]
    fn a_queue_limit_counts_only_requests_that_wait() {
        let (cfg, policy) = (config(Backfilling::Conservative), PreemptionPolicy::Nop);
        let fixed = Policies::builtin(policy, AdmissionPolicy::Fixed(0));
        let mut c = Core::new(&hosts(1, 4, 4096), cfg, fixed);
        let t0 = EmuTime::ZERO;
        // Starts at once: admitted even with no waiting allowed.
        assert!(c
            .submit_external(req(0, Origin::External, 0, 4, 100, 100), t0)
            .is_ok());
        // Would wait: refused, and nothing of it is left behind.
        assert_eq!(
            c.submit_external(req(1, Origin::External, 0, 1, 100, 100), t0),
            Err(Refusal::QueueFull)
        );
        assert_eq!(c.leases().len(), 1);
        assert_eq!(c.availability().holds(t0, EmuTime::NEVER).len(), 4);
    }

    /// Issue 40: one 1-core host runs a migratable lease (one 660 MB VM, 1000 s, deadline
    /// 1300 s) when a local request for its core arrives at 100 s for 500 s. Suspended and
    /// resumed here after the local lease it would end at 1516 s, past its deadline; migrated
    /// (eq. 8: 52.8 s of copy, 16.5 s + 16.5 s of suspension and resumption, 10 ms of pauses:
    /// 85.8 s) it ends at 1085.8 s. With another cluster of the Grid publishing room it is a
    /// candidate and both are served; publishing none, or none free, it is not, as before.
    fn migration_route(elsewhere: Vec<Published>) -> Result<Vec<Action>, Refusal> {
        let mut cfg = config(Backfilling::Conservative);
        cfg.can_migrate = true;
        let mut c = Core::new(&hosts(1, 1, 4096), cfg, with(PreemptionPolicy::Mov));
        let mut m = req(0, Origin::External, 0, 1, 660, 1000);
        m.lease_type = LeaseType::DeadlineMigratable;
        m.deadline = Some(EmuTime::from_secs(1300));
        c.submit_external(m, EmuTime::ZERO).unwrap();
        c.set_elsewhere(elsewhere);
        let now = EmuTime::from_secs(100);
        c.submit_local(req(1, Origin::Local, 100, 1, 100, 500), now)
    }

    fn published(free: u64, until: u64) -> Published {
        Published {
            free: vec![(EmuTime::from_secs(100), free)],
            until: EmuTime::from_secs(until),
            cores: 4,
            price: 1.0,
        }
    }

    #[test]
    fn a_migratable_lease_that_keeps_its_deadline_only_by_migrating_is_a_candidate() {
        let a = migration_route(vec![published(4, 3700)]).expect("served by migrating");
        let d = decision(&a).expect("a decision");
        assert_eq!(d.set, vec![(RequestId(0), Operation::Migrate)]);
        let eq_8 = OverheadModel::gluster_testbed().migrate_lease(1, 660);
        assert!((eq_8.as_secs_f64() - 85.81).abs() < 1e-6, "{eq_8:?}");
        assert_eq!(d.cost, eq_8 + d.reschedule);
        assert!(a
            .iter()
            .any(|x| matches!(x, Action::Relocate(r) if r.req.id == RequestId(0))));
        // No room elsewhere: rejected as before.
        assert_eq!(migration_route(vec![]).err(), Some(Refusal::NoRoom));
        assert_eq!(
            migration_route(vec![published(0, 3700)]).err(),
            Some(Refusal::NoRoom)
        );
        // A horizon ending before it would finish there shows no room either.
        assert_eq!(
            migration_route(vec![published(4, 1000)]).err(),
            Some(Refusal::NoRoom)
        );
    }

    #[test]
    fn a_cancel_only_decision_costs_nothing() {
        let mut c = core(1, Backfilling::Conservative, PreemptionPolicy::Mov);
        let mut victim = req(0, Origin::External, 0, 4, 400, 1000);
        victim.lease_type = LeaseType::BestEffortCancellable;
        c.submit_external(victim, EmuTime::ZERO).unwrap();
        let a = c
            .submit_local(
                req(1, Origin::Local, 100, 2, 100, 300),
                EmuTime::from_secs(100),
            )
            .unwrap();
        let d = decision(&a).unwrap();
        assert_eq!(d.cost, EmuDuration::ZERO);
        assert_eq!(d.reschedule, EmuDuration::ZERO);
        assert_eq!(d.local_start, EmuTime::from_secs(100));
    }
    #[test]
    fn freed_intervals_merge_where_they_touch() {
        let t = EmuTime::from_secs;
        let mut f = Freed::new(vec![(t(50), t(60)), (t(10), t(20)), (t(20), t(30))]);
        assert_eq!(f.0, vec![(t(10), t(30)), (t(50), t(60))]);
        f.add(t(25), t(55));
        assert_eq!(f.0, vec![(t(10), t(60))]);
        f.add(t(70), t(70));
        assert_eq!(f.0, vec![(t(10), t(60))]);
        f.add(t(0), t(5));
        assert_eq!(f.0, vec![(t(0), t(5)), (t(10), t(60))]);
    }

    #[test]
    fn compression_moves_reservations_into_capacity_a_preemption_freed() {
        // 1 host, 4 cores. A cancellable lease holds all 4 until 1000 s; a 2-VM lease is
        // reserved after it. At 100 s a local request takes 2 cores for 300 s by cancelling
        // the first: 2 cores are free from 100 s on.
        let reserved_start = |compress: bool| {
            let (mut cfg, policy) = (config(Backfilling::Conservative), PreemptionPolicy::Mov);
            cfg.compress = compress;
            let mut c = Core::new(&hosts(1, 4, 4096), cfg, with(policy));
            let mut victim = req(0, Origin::External, 0, 4, 400, 1000);
            victim.lease_type = LeaseType::BestEffortCancellable;
            c.submit_external(victim, EmuTime::ZERO).unwrap();
            c.submit_external(req(1, Origin::External, 0, 2, 400, 100), EmuTime::ZERO)
                .unwrap();
            let now = EmuTime::from_secs(100);
            c.submit_local(req(2, Origin::Local, 100, 2, 400, 300), now)
                .unwrap();
            assert!(c.availability().within_capacity());
            c.leases()
                .into_iter()
                .find(|l| l.id == RequestId(1))
                .and_then(|l| l.slot)
                .map(|(start, _, _)| start)
        };
        // Without compression it keeps its slot; with it, it starts as soon as the cancelled
        // VMs are off, beside the local lease.
        assert_eq!(reserved_start(false), Some(EmuTime::from_secs(1000)));
        assert_eq!(reserved_start(true), Some(EmuTime::from_secs(100)));
    }
}
