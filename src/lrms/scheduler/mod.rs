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
use crate::model::HostSpec;
use crate::model::Published;
use crate::model::{LeaseRequest, LeaseType, Origin, RequestId, RequestState, VmEvent, VmState};
use crate::time::{stream_seed, EmuDuration, EmuTime};

mod compression;
mod intake;
mod local;
mod moldable;
mod partitions;
mod placement;
mod preempt;
mod vacate;
mod waiting;

#[cfg(test)]
mod tests;

pub(crate) use moldable::moldable_run;
pub use moldable::Moldable;

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
    /// The placement pass ([`Core::passes`]) in which its reservation was last placed or
    /// looked at: compression may skip it only in the pass right after, the freed capacity
    /// it would need to move being what that pass takes (a lease beyond the backfill depth
    /// misses passes, and the capacity they freed).
    examined: u64,
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
            examined: 0,
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
    /// Placement passes ([`Core::place_waiting`]) so far.
    passes: u64,
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
            passes: self.passes,
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
            passes: 0,
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

    // ---- migration ----

    /// The IGG found (or did not find) another cluster for a lease this core is relocating.
    pub fn relocated(&mut self, lease: RequestId, moved: bool, now: EmuTime) -> Vec<Action> {
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
