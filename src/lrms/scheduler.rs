//! The LRMS's pure core: a contention-aware lease scheduler (papers 003 §4–6, 001 §4.1–4.3).
//!
//! * External leases are scheduled with backfilling on the host-level availability profile:
//!   FCFS (no overtaking), conservative (every waiting lease holds a reservation), or EASY
//!   with `pivots` reserved leases (the rest start only if they fit now without delaying a
//!   reservation; a large `pivots` behaves as conservative). Deadline-constrained leases always
//!   get a reservation and are rejected at admission if it would end after their deadline.
//! * Local requests are served in their requested interval or rejected. When one does not
//!   fit, the leases in play — running external leases and reservations waiting in the queue
//!   that overlap the interval (paper 003 Fig. 2) — form the candidates, less non-preemptable
//!   ones and migratable ones whose deadline could not survive; the policy (`policy.rs`)
//!   picks a set covering the VMs needed. Paper 003 counts only VMs (eq. 1); the core checks
//!   the choice against the real host-level profile and, if memory or timing leaves it
//!   short, asks the policy again for one more VM, up to every lease in play.
//! * Preemption is planned to the microsecond with the overhead model: pauses one VM after
//!   another, suspensions and resumptions one VM at a time on the shared storage
//!   (`storage.rs`), stops for cancellable leases. The plan goes to the VMs as timed steps.
//!   Suspended leases go back in the queue (deadline leases first, by deadline, then by
//!   submission order) and resume where there is room; migratable ones are offered to the
//!   other clusters of the Grid first.
//!
//! The actor shell calls [`Core::submit_external`], [`Core::submit_local`], [`Core::tick`]
//! (at the times the core asks for), [`Core::vm_reported`], and the migration calls, and
//! carries out the returned [`Action`]s.

use std::collections::{BTreeMap, BTreeSet};

use super::admission::Admission;
use super::availability::{Availability, VmShape};
use super::overhead::OverheadModel;
use super::policy::{self, Candidate, PreemptionPolicy};
use super::storage::Storage;
use crate::model::{LeaseRequest, LeaseType, Origin, RequestId, RequestState, VmEvent, VmState};
use crate::time::{stream_seed, EmuDuration, EmuTime};
use crate::topology::HostSpec;

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

/// Settings of one LRMS core.
#[derive(Clone, Debug)]
pub struct Config {
    /// Scheduling of external leases.
    pub backfilling: Backfilling,
    /// Which leases to preempt for a local request.
    pub preemption: PreemptionPolicy,
    /// Operation times.
    pub overhead: OverheadModel,
    /// VM deployment and boot.
    pub boot: EmuDuration,
    /// Seed for the policy's random choices (MOML sampling).
    pub seed: u64,
    /// How many external requests may wait (admission control).
    pub admission: Admission,
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
    /// Events and when they happen.
    pub steps: Vec<(EmuTime, VmEvent)>,
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
    /// Give existing VM instances new steps (preemption).
    CommandVms {
        /// The lease.
        lease: RequestId,
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
    /// Account overhead (and, if `preempted`, one preemption of `vms` VMs) to a lease.
    Charge {
        /// The lease.
        lease: RequestId,
        /// Time lost to operations.
        overhead: EmuDuration,
        /// Whether this is a preemption.
        preempted: bool,
        /// VMs preempted (running VMs only).
        vms: u32,
    },
    /// A preemption decision was made (δ is charged once per decision).
    Decision {
        /// The local request that caused it.
        local: RequestId,
        /// Leases preempted, in arrival order.
        preempted: Vec<RequestId>,
        /// The rescheduling cost δ.
        reschedule: EmuDuration,
    },
}

/// A migratable lease looking for a new cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Relocation {
    /// The lease as submitted.
    pub req: LeaseRequest,
    /// Work already done.
    pub work_done: EmuDuration,
    /// When each VM's memory image is on the source's storage.
    pub images_ready: Vec<EmuTime>,
    /// Preemptions so far.
    pub preemptions: u32,
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
    /// Gone from this cluster.
    Done,
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
    phase: Phase,
    order: u64,
    res: Option<Reservation>,
    work_done: EmuDuration,
    images_ready: Option<Vec<EmuTime>>,
    migrated_in: bool,
    not_before: EmuTime,
    reported: u32,
    started_once: bool,
}

/// What one VM of `req` needs.
fn shape_of(req: &LeaseRequest) -> VmShape {
    VmShape {
        cores: req.cores_per_vm,
        mem_mb: req.mem_mb,
    }
}

impl Lease {
    fn shape(&self) -> VmShape {
        shape_of(&self.req)
    }
    fn remaining(&self) -> EmuDuration {
        self.req.duration.saturating_sub(self.work_done)
    }
    fn is_local(&self) -> bool {
        self.req.origin == Origin::Local
    }
}

/// A timed plan for running a lease from `start`.
struct Plan {
    end: EmuTime,
    run_from: EmuTime,
    steps: Vec<(VmState, Vec<(EmuTime, VmEvent)>)>,
    bookings: Vec<(EmuTime, EmuDuration)>,
}

/// The LRMS core of one cluster.
pub struct Core {
    cfg: Config,
    avail: Availability,
    storage: Storage,
    leases: BTreeMap<RequestId, Lease>,
    next_order: u64,
    deferred_locals: BTreeSet<RequestId>,
    wakes: BTreeSet<EmuTime>,
    decisions: u64,
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

impl Core {
    /// A core for a cluster with these hosts.
    pub fn new(hosts: &[HostSpec], cfg: Config) -> Core {
        Core {
            cfg,
            avail: Availability::new(hosts),
            storage: Storage::default(),
            leases: BTreeMap::new(),
            next_order: 0,
            deferred_locals: BTreeSet::new(),
            wakes: BTreeSet::new(),
            decisions: 0,
        }
    }

    /// The availability profile (for inspection and tests).
    pub fn availability(&self) -> &Availability {
        &self.avail
    }

    /// The cluster's free cores over `[now, now + horizon)` as an ordered step function, and
    /// the share of its capacity in use over that window (for the price of eq. 1).
    pub fn free_slots(
        &self,
        now: EmuTime,
        horizon: EmuDuration,
    ) -> (std::collections::BTreeMap<EmuTime, u64>, f64) {
        let total = self.avail.total_cores();
        let steps = self.avail.usage_steps();
        let until = now + horizon;
        let mut free = std::collections::BTreeMap::new();
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

    /// Work done by a lease so far (for tests of the invariant done + remaining = duration).
    pub fn work_done(&self, lease: RequestId) -> Option<(EmuDuration, EmuDuration)> {
        self.leases
            .get(&lease)
            .map(|l| (l.work_done, l.remaining()))
    }

    fn insert(&mut self, req: LeaseRequest, now: EmuTime) -> RequestId {
        let id = req.id;
        let order = self.next_order;
        self.next_order += 1;
        self.leases.insert(
            id,
            Lease {
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
            },
        );
        id
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
                let steps = vec![
                    (start, VmEvent::Deploy),
                    (run_from, VmEvent::Booted),
                    (end, VmEvent::Completed),
                ];
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
                    let not_before = cursor.max(ready).max(start);
                    let r = self.storage_earliest_after(&bookings, not_before, tr);
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
                    steps: per_vm,
                    bookings,
                }
            }
        }
    }

    /// Earliest storage start at or after `t` avoiding existing bookings and `tentative` ones.
    fn storage_earliest_after(
        &self,
        tentative: &[(EmuTime, EmuDuration)],
        t: EmuTime,
        len: EmuDuration,
    ) -> EmuTime {
        // Tentative bookings of the plan being built all precede `t` by construction (each
        // VM starts after the previous one ends), so only the committed ones matter.
        debug_assert!(tentative.iter().all(|&(s, d)| s + d <= t));
        self.storage.earliest(t, len)
    }

    /// The earliest reservation for `id` at or after `not_before` (hosts held from the start
    /// of the plan to its end).
    fn find_slot(&self, id: RequestId, not_before: EmuTime) -> Option<(EmuTime, Plan, Vec<u16>)> {
        self.find_slot_for(&self.leases[&id], not_before)
    }

    fn find_slot_for(&self, l: &Lease, not_before: EmuTime) -> Option<(EmuTime, Plan, Vec<u16>)> {
        if !self.avail.could_ever_fit(l.req.vms, l.shape()) {
            return None;
        }
        let steps = self.avail.usage_steps();
        let (cores, total) = (l.req.cores(), self.avail.total_cores());
        for t in self.avail.start_candidates(not_before) {
            // The plan's length only depends on t through storage waits, which only make it
            // longer: the plain length is a valid quick test.
            if !steps.fits(t, t + l.remaining(), cores, total) {
                continue;
            }
            let plan = self.plan(l, t);
            if !steps.fits(t, plan.end, cores, total) {
                continue;
            }
            if let Some(hosts) = self.avail.place(l.req.vms, l.shape(), t, plan.end) {
                return Some((t, plan, hosts));
            }
        }
        None
    }

    /// Whether `id` can start exactly at `t`.
    fn fits_at(&self, id: RequestId, t: EmuTime) -> Option<(Plan, Vec<u16>)> {
        let l = &self.leases[&id];
        let plan = self.plan(l, t);
        self.avail
            .place(l.req.vms, l.shape(), t, plan.end)
            .map(|hosts| (plan, hosts))
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
        l.res = Some(Reservation {
            start,
            end: plan.end,
            run_from: plan.run_from,
            hosts,
            plans,
        });
        self.wake(start, out);
    }

    fn drop_reservation(&mut self, id: RequestId, now: EmuTime) {
        if let Some(l) = self.leases.get_mut(&id) {
            if let Some(res) = l.res.take() {
                self.avail.release_from(id, res.start);
                self.storage.cancel(id, now);
            }
        }
    }

    fn wake(&mut self, t: EmuTime, out: &mut Vec<Action>) {
        if self.wakes.insert(t) {
            out.push(Action::Wake(t));
        }
    }

    // ---- external leases ----

    /// The start FCFS allows: not before any earlier waiting lease's reservation.
    fn fcfs_floor(&self, order: u64) -> EmuTime {
        self.leases
            .values()
            .filter(|l| l.order < order && l.phase == Phase::Waiting && !l.is_local())
            .filter_map(|l| l.res.as_ref().map(|r| r.start))
            .max()
            .unwrap_or(EmuTime::ZERO)
    }

    fn reserved_waiting(&self) -> usize {
        self.leases
            .values()
            .filter(|l| l.phase == Phase::Waiting && !l.is_local() && l.res.is_some())
            .count()
    }

    /// Schedules one waiting external lease by the backfilling policy. Returns false only
    /// for a deadline lease that cannot meet its deadline.
    fn schedule_external(&mut self, id: RequestId, now: EmuTime, out: &mut Vec<Action>) -> bool {
        let l = &self.leases[&id];
        let not_before = now.max(l.not_before);
        let deadline = l
            .req
            .deadline
            .filter(|_| l.req.lease_type.deadline_constrained());
        let must_reserve = deadline.is_some()
            || match self.cfg.backfilling {
                Backfilling::Fcfs | Backfilling::Conservative => true,
                Backfilling::Easy { pivots } => self.reserved_waiting() < pivots as usize,
            };
        let slot = if must_reserve {
            let floor = match self.cfg.backfilling {
                Backfilling::Fcfs => self.fcfs_floor(l.order).max(not_before),
                _ => not_before,
            };
            self.find_slot(id, floor)
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
    fn external_counts(&self) -> (usize, usize) {
        let ext = self
            .leases
            .values()
            .filter(|l| !l.is_local() && l.phase != Phase::Done);
        let (mut waiting, mut held) = (0, 0);
        for l in ext {
            held += 1;
            if l.phase == Phase::Waiting && !l.started_once {
                waiting += 1;
            }
        }
        (waiting, held)
    }

    /// The earliest start this cluster could give `req` now, booking nothing (for the IGG's
    /// earliest-start dispatch); `None` if it would refuse it.
    pub fn probe(&self, req: &LeaseRequest, now: EmuTime) -> Option<EmuTime> {
        let l = Lease {
            req: req.clone(),
            phase: Phase::Waiting,
            order: self.next_order,
            res: None,
            work_done: EmuDuration::ZERO,
            images_ready: None,
            migrated_in: false,
            not_before: now,
            reported: 0,
            started_once: false,
        };
        let (start, plan, _) = self.find_slot_for(&l, now)?;
        let deadline = req
            .deadline
            .filter(|_| req.lease_type.deadline_constrained());
        deadline.is_none_or(|d| plan.end <= d).then_some(start)
    }

    /// Refuses a request no placement could ever hold, even on an empty cluster.
    fn fits_ever(&self, req: &LeaseRequest) -> Result<(), Refusal> {
        if self.avail.could_ever_fit(req.vms, shape_of(req)) {
            Ok(())
        } else {
            Err(Refusal::TooLarge)
        }
    }

    /// An external lease assigned by the IGG: accepted (started or queued) or refused.
    pub fn submit_external(
        &mut self,
        req: LeaseRequest,
        now: EmuTime,
    ) -> Result<Vec<Action>, Refusal> {
        self.fits_ever(&req)?;
        let (waiting, held) = self.external_counts();
        match self.cfg.admission {
            Admission::One if held >= 1 => return Err(Refusal::QueueFull),
            Admission::Queue(k) if waiting >= k => return Err(Refusal::QueueFull),
            _ => {}
        }
        let id = self.insert(req, now);
        let mut out = Vec::new();
        if !self.schedule_external(id, now, &mut out) {
            self.leases.remove(&id);
            return Err(Refusal::Deadline);
        }
        out.extend(self.tick(now));
        Ok(out)
    }

    /// Places every waiting external lease that has no reservation (preempted, displaced,
    /// or not a pivot): deadline leases first (earliest deadline), then submission order.
    /// Existing reservations are kept (no compression), so this costs only the affected leases.
    fn place_waiting(&mut self, now: EmuTime, out: &mut Vec<Action>) {
        let mut waiting: Vec<(u8, EmuTime, u64, RequestId)> = self
            .leases
            .iter()
            .filter(|(_, l)| l.phase == Phase::Waiting && !l.is_local() && l.res.is_none())
            .map(|(id, l)| {
                let deadline = l
                    .req
                    .deadline
                    .filter(|_| l.req.lease_type.deadline_constrained());
                (
                    u8::from(deadline.is_none()),
                    deadline.unwrap_or(EmuTime::NEVER),
                    l.order,
                    *id,
                )
            })
            .collect();
        waiting.sort_unstable();
        for (_, _, _, id) in waiting {
            // A deadline lease that can no longer meet its deadline still gets the earliest
            // slot; its lateness shows in the outputs.
            if !self.schedule_external(id, now, out) {
                let floor = now.max(self.leases[&id].not_before);
                if let Some((start, plan, hosts)) = self.find_slot(id, floor) {
                    self.commit(id, start, plan, hosts, out);
                }
            }
        }
    }

    // ---- local requests ----

    /// A local request: reserved in its interval, or after preempting external leases, or
    /// refused.
    pub fn submit_local(
        &mut self,
        req: LeaseRequest,
        now: EmuTime,
    ) -> Result<Vec<Action>, Refusal> {
        self.fits_ever(&req)?;
        let start = req.start.unwrap_or(req.arrival).max(now);
        let id = self.insert(req, now);
        let mut out = Vec::new();
        if let Some((plan, hosts)) = self.fits_at(id, start) {
            self.commit(id, start, plan, hosts, &mut out);
            out.extend(self.tick(now));
            return Ok(out);
        }
        if start > now {
            // Decide at the start of the interval, when the leases in play are known.
            self.deferred_locals.insert(id);
            self.wake(start, &mut out);
            return Ok(out);
        }
        match self.preempt_for(id, now, &mut out) {
            Ok(()) => {
                out.extend(self.tick(now));
                Ok(out)
            }
            Err(r) => {
                self.leases.remove(&id);
                Err(r)
            }
        }
    }

    /// Work a running lease has done by `now`.
    fn done_by(&self, l: &Lease, now: EmuTime) -> EmuDuration {
        match (&l.phase, &l.res) {
            (Phase::Running, Some(r)) => l.work_done + now.since(r.run_from),
            _ => l.work_done,
        }
    }

    /// Leases in play for a local request needing `[start, end)`, as policy candidates.
    fn leases_in_play(
        &self,
        local: RequestId,
        start: EmuTime,
        end: EmuTime,
        now: EmuTime,
    ) -> Vec<Candidate> {
        let m = &self.cfg.overhead;
        let local_end = end;
        self.avail
            .leases_overlapping(start, end)
            .into_iter()
            .filter(|id| *id != local)
            .filter_map(|id| {
                let l = self.leases.get(&id)?;
                if l.is_local() || !l.req.lease_type.preemptable() {
                    return None;
                }
                let res = l.res.as_ref()?;
                let running = match l.phase {
                    // Started this very instant: its VMs have not begun; recalled at no cost.
                    Phase::Running if res.start == now => false,
                    // At work: paused and suspended (or stopped).
                    Phase::Running if res.run_from <= now => true,
                    // Booting or resuming: left be until it is at work.
                    Phase::Running => return None,
                    // A reservation not started yet.
                    Phase::Waiting => false,
                    _ => return None,
                };
                // A lease that would finish before it could be vacated is simply waited for:
                // it costs nothing and `preempt` leaves it be.
                let finishing = running && now + self.vacate_time(l) >= res.end;
                let cost = if running && !finishing {
                    m.lease_cost(l.req.lease_type, l.req.vms, l.req.mem_mb)?
                } else {
                    EmuDuration::ZERO
                };
                if l.req.lease_type == LeaseType::DeadlineMigratable {
                    // It must still be able to finish by its deadline if it has to resume
                    // here after the local lease: suspend now, resume after `local_end`.
                    let deadline = l.req.deadline.unwrap_or(EmuTime::NEVER);
                    let remaining = l.req.duration.saturating_sub(self.done_by(l, now));
                    let resume_at = local_end.max(now + m.suspend_lease(l.req.vms, l.req.mem_mb));
                    if resume_at + m.resume_lease(l.req.vms, l.req.mem_mb) + remaining > deadline {
                        return None;
                    }
                }
                let waited = now
                    .since(l.req.arrival)
                    .saturating_sub(self.done_by(l, now));
                Some(Candidate {
                    lease: id,
                    vms: l.req.vms,
                    cost,
                    waiting: waited,
                    arrival: l.req.arrival,
                })
            })
            .collect()
    }

    /// How long vacating a running lease takes on idle storage.
    fn vacate_time(&self, l: &Lease) -> EmuDuration {
        let m = &self.cfg.overhead;
        match l.req.lease_type {
            LeaseType::BestEffortCancellable => m.shutdown * u64::from(l.req.vms),
            _ => m.suspend_lease(l.req.vms, l.req.mem_mb),
        }
    }

    /// What releasing `set` frees: each lease's current reservation from its start.
    fn releasing(&self, set: &[RequestId]) -> Vec<(RequestId, EmuTime)> {
        set.iter()
            .map(|r| {
                (
                    *r,
                    self.leases
                        .get(r)
                        .and_then(|l| l.res.as_ref())
                        .map_or(EmuTime::ZERO, |res| res.start),
                )
            })
            .collect()
    }

    /// How many of the local lease's VMs would fit in `[start, end)` once `set` is gone.
    fn room_without(&self, id: RequestId, set: &[RequestId], start: EmuTime, end: EmuTime) -> u64 {
        let l = &self.leases[&id];
        self.avail
            .total_room(l.shape(), start, end, &self.releasing(set))
    }

    fn preempt_for(
        &mut self,
        id: RequestId,
        now: EmuTime,
        out: &mut Vec<Action>,
    ) -> Result<(), Refusal> {
        if self.cfg.preemption == PreemptionPolicy::Nop {
            return Err(Refusal::NoRoom);
        }
        let l = &self.leases[&id];
        let (vms, shape) = (l.req.vms, l.shape());
        let start = now;
        let end = now + self.cfg.boot + l.req.duration;
        let candidates = self.leases_in_play(id, start, end, now);
        let all: Vec<RequestId> = candidates.iter().map(|c| c.lease).collect();
        if self.room_without(id, &all, start, end) < u64::from(vms) {
            return Err(Refusal::NoRoom);
        }
        let room = self.avail.total_room(shape, start, end, &[]);
        let total: u64 = candidates.iter().map(|c| u64::from(c.vms)).sum();
        let seed = stream_seed(self.cfg.seed, &format!("decision-{}", self.decisions));
        self.decisions += 1;
        let mut need = (u64::from(vms).saturating_sub(room)).max(1);
        let mut chosen = None;
        while need <= total {
            let Some(set) = policy::choose(self.cfg.preemption, &candidates, need as u32, seed)
            else {
                break;
            };
            let ids: Vec<RequestId> = set.iter().map(|&i| candidates[i].lease).collect();
            let got = self.room_without(id, &ids, start, end);
            if got >= u64::from(vms) {
                chosen = Some(ids);
                break;
            }
            // Ask for as many more VMs as are still missing (at least one).
            need += (u64::from(vms) - got).max(1);
        }
        let mut set = chosen.unwrap_or(all);
        set.sort_by_key(|r| self.leases[r].req.arrival);
        let preempted = self.preempt(&set, now, out);
        out.push(Action::Decision {
            local: id,
            preempted,
            reschedule: self.cfg.overhead.reschedule,
        });
        let (start, plan, hosts) = self.find_slot(id, now).ok_or(Refusal::NoRoom)?;
        self.commit(id, start, plan, hosts, out);
        self.place_waiting(now, out);
        Ok(())
    }

    /// Preempts `set` now: drops waiting reservations, stops cancellable leases, pauses and
    /// suspends the others (one VM at a time on the shared storage).
    /// Returns the leases actually preempted (a lease whose suspension could not end before
    /// it would finish is left to finish).
    fn preempt(
        &mut self,
        set: &[RequestId],
        now: EmuTime,
        out: &mut Vec<Action>,
    ) -> Vec<RequestId> {
        let mut done_set = Vec::with_capacity(set.len());
        let m = self.cfg.overhead.clone();
        let reschedule_done = now + m.reschedule;
        for &id in set {
            let l = &self.leases[&id];
            let started_now =
                l.phase == Phase::Running && l.res.as_ref().is_some_and(|r| r.start == now);
            if started_now {
                // Recall VMs that were told to start this instant: they stop before doing
                // anything, and the lease waits again.
                let hosts = l.res.as_ref().map(|r| r.hosts.clone()).unwrap_or_default();
                let plans = hosts
                    .iter()
                    .enumerate()
                    .map(|(vm, &host)| VmPlan {
                        vm: vm as u32,
                        host,
                        initial: VmState::Pending,
                        steps: vec![(now, VmEvent::Stop)],
                    })
                    .collect();
                out.push(Action::CommandVms { lease: id, plans });
                self.leases.get_mut(&id).expect("known lease").phase = Phase::Waiting;
            }
            let l = &self.leases[&id];
            if l.phase != Phase::Running {
                self.drop_reservation(id, now);
                out.push(Action::Charge {
                    lease: id,
                    overhead: EmuDuration::ZERO,
                    preempted: true,
                    vms: 0,
                });
                done_set.push(id);
                continue;
            }
            let done = self.done_by(l, now);
            let (vms, mem) = (l.req.vms, l.req.mem_mb);
            let res = l.res.clone().expect("a running lease has a reservation");
            let mut plans = Vec::with_capacity(vms as usize);
            let charged;
            match l.req.lease_type {
                LeaseType::BestEffortCancellable => {
                    for vm in 0..vms {
                        let stop = now + m.shutdown * (u64::from(vm) + 1);
                        self.avail.end_vm(id, vm, res.start, stop);
                        plans.push(VmPlan {
                            vm,
                            host: res.hosts[vm as usize],
                            initial: VmState::Running,
                            steps: vec![(stop, VmEvent::Stop)],
                        });
                    }
                    charged = m.shutdown * u64::from(vms);
                    let l = self.leases.get_mut(&id).expect("known lease");
                    l.phase = Phase::Cancelling;
                    l.work_done = done;
                    l.reported = 0;
                }
                _ => {
                    let ts = m.suspend_vm(mem);
                    let paused = now + m.pause * u64::from(vms);
                    // With the storage busy with earlier suspensions, this one may end only
                    // after the lease would have finished anyway: then let it finish (its
                    // hosts stay taken until its planned end, which nothing else holds).
                    let mut last = paused;
                    for _ in 0..vms {
                        last = self.storage.earliest(last, ts) + ts;
                    }
                    if last >= res.end {
                        continue;
                    }
                    let mut cursor = paused;
                    let mut images = Vec::with_capacity(vms as usize);
                    for vm in 0..vms {
                        let s = self.storage.book(id, cursor, ts);
                        cursor = s + ts;
                        images.push(cursor);
                        self.avail.end_vm(id, vm, res.start, cursor);
                        plans.push(VmPlan {
                            vm,
                            host: res.hosts[vm as usize],
                            initial: VmState::Running,
                            steps: vec![
                                (now + m.pause * u64::from(vm), VmEvent::Pause),
                                (s, VmEvent::Suspend),
                                (cursor, VmEvent::Suspended),
                            ],
                        });
                    }
                    charged = m.suspend_lease(vms, mem);
                    let last = cursor;
                    let migratable = l.req.lease_type == LeaseType::DeadlineMigratable;
                    let l = self.leases.get_mut(&id).expect("known lease");
                    l.work_done = done;
                    l.res = None;
                    l.images_ready = Some(images.clone());
                    l.migrated_in = false;
                    l.not_before = last.max(reschedule_done);
                    l.phase = if migratable {
                        Phase::Relocating
                    } else {
                        Phase::Waiting
                    };
                    if migratable {
                        out.push(Action::Relocate(Relocation {
                            req: l.req.clone(),
                            work_done: done,
                            images_ready: images,
                            preemptions: 0,
                        }));
                    }
                    // The old slots were cut per VM above; release what is left of the plan.
                    self.storage.cancel(id, now.max(last));
                }
            }
            out.push(Action::CommandVms { lease: id, plans });
            out.push(Action::Charge {
                lease: id,
                overhead: charged,
                preempted: true,
                vms,
            });
            done_set.push(id);
        }
        done_set
    }

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
            self.leases.remove(&lease);
        } else {
            l.phase = Phase::Waiting;
            self.place_waiting(now, &mut out);
        }
        out.extend(self.tick(now));
        out
    }

    /// Another cluster's lease, suspended there, offered here. Accepted if its images can be
    /// copied and resumed here and it can still finish by its deadline.
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
        let l = self.leases.get_mut(&id).expect("just inserted");
        l.work_done = r.work_done;
        l.images_ready = Some(arrive);
        l.migrated_in = true;
        l.not_before = first;
        l.started_once = true;
        let deadline = r.req.deadline.unwrap_or(EmuTime::NEVER);
        match self.find_slot(id, first) {
            Some((start, plan, hosts)) if plan.end <= deadline => {
                let mut out = Vec::new();
                let copy = tc * u64::from(r.req.vms);
                self.commit(id, start, plan, hosts, &mut out);
                out.push(Action::Charge {
                    lease: id,
                    overhead: copy,
                    preempted: false,
                    vms: 0,
                });
                out.extend(self.tick(now));
                Ok(out)
            }
            _ => {
                self.leases.remove(&id);
                Err(Refusal::Deadline)
            }
        }
    }

    // ---- time and VM reports ----

    /// Starts what is due at `now` and decides deferred local requests. Call at every
    /// [`Action::Wake`] time.
    pub fn tick(&mut self, now: EmuTime) -> Vec<Action> {
        let mut out = Vec::new();
        self.wakes.retain(|&t| t > now);
        let due_locals: Vec<RequestId> = self
            .deferred_locals
            .iter()
            .copied()
            .filter(|id| self.leases[id].req.start.is_some_and(|s| s <= now))
            .collect();
        for id in due_locals {
            self.deferred_locals.remove(&id);
            if let Some((plan, hosts)) = self.fits_at(id, now) {
                self.commit(id, now, plan, hosts, &mut out);
            } else if let Err(r) = self.preempt_for(id, now, &mut out) {
                tracing::debug!(lease = id.0, ?r, "local request refused at its start");
                self.leases.remove(&id);
                out.push(Action::Ended(id, RequestState::Rejected));
            }
        }
        self.start_due(now, &mut out);
        if matches!(self.cfg.backfilling, Backfilling::Easy { .. }) {
            self.place_waiting(now, &mut out);
            self.start_due(now, &mut out);
        }
        out
    }

    /// Starts every waiting lease whose reservation begins by `now`.
    fn start_due(&mut self, now: EmuTime, out: &mut Vec<Action>) {
        let due: Vec<RequestId> = self
            .leases
            .iter()
            .filter(|(_, l)| {
                l.phase == Phase::Waiting && l.res.as_ref().is_some_and(|r| r.start <= now)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.start(id, out);
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
        if l.images_ready.is_some() {
            let m = &self.cfg.overhead;
            let resume = m.resume_lease(l.req.vms, l.req.mem_mb);
            out.push(Action::Charge {
                lease: id,
                overhead: resume,
                preempted: false,
                vms: 0,
            });
        }
        if !l.started_once {
            l.started_once = true;
            out.push(Action::Started(id));
        }
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
        l.phase = Phase::Done;
        if outcome == RequestState::Completed {
            l.work_done = l.req.duration;
        }
        self.avail.release(lease);
        self.leases.remove(&lease);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lrms::availability::tests::hosts;
    use crate::model::{ClusterId, GridId};

    fn gluster() -> OverheadModel {
        OverheadModel {
            pause: EmuDuration::from_millis(5),
            shutdown: EmuDuration::ZERO,
            suspend_rate: 40.0,
            resume_rate: 40.0,
            copy_rate: 12.5,
            reschedule: EmuDuration::from_millis(2300),
        }
    }

    fn core(n: usize, backfilling: Backfilling, preemption: PreemptionPolicy) -> Core {
        Core::new(
            &hosts(n, 4, 4096),
            Config {
                backfilling,
                preemption,
                overhead: gluster(),
                boot: EmuDuration::ZERO,
                seed: 1,
                admission: Admission::Unlimited,
            },
        )
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
        // The local lease starts when its two VMs' hosts are vacated: the profile never
        // overflows.
        assert!(c.availability().within_capacity());
    }
}
