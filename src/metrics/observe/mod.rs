//! The observer: what actors report during a run (starts, ends, charges, decisions,
//! peering money and offers), with the online invariant checks that need it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::invariants::Violation;
use super::leases::{At, Cause, LeaseEventKind, LeaseLog};
use crate::igg::broker::Outcomes;
use crate::model::{ClusterId, GridId, LeaseType, RequestId, RequestState};
use crate::time::{EmuDuration, EmuTime};

/// Everything observed about one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestRecord {
    /// The cluster that ran (or last held) it.
    pub cluster: Option<ClusterId>,
    /// When it first started (deployment began).
    pub start: Option<EmuTime>,
    /// When it reached its terminal state.
    pub end: Option<EmuTime>,
    /// Its terminal state; `None` while open.
    pub state: Option<RequestState>,
    /// How many times it was preempted while running (stopped, suspended or migrated).
    pub preemptions: u32,
    /// How many times its reservation was moved later, while it waited, for a local request
    /// (no VM of it touched).
    pub displacements: u32,
    /// Why it was rejected (`None` unless it was).
    pub reason: Option<crate::model::RejectReason>,
    /// Time lost to its preemption operations (pause, suspend, resume, copy, stop).
    pub overhead: EmuDuration,
    /// How many times it moved to another cluster.
    pub migrations: u32,
    /// Time its VMs spent working, wherever it ran (each cluster's own time).
    pub busy: EmuDuration,
    /// VMs it ran on, when the cluster chose them (a moldable request takes all of its VMs).
    pub vms: Option<u32>,
    /// Its deadline, when the cluster resolved it from a deadline ratio.
    pub deadline: Option<EmuTime>,
    /// Whether a peer Grid took it over when its Grid redirected it (the provider confirmed
    /// its ticket).
    pub redirected: bool,
}

/// How a request turned out, richer than its [`RequestState`]: whether and how preemption
/// touched it (`requests.csv`'s `outcome` column). Each lease type has its own vocabulary
/// (see `docs/outputs.md`): a cancellable lease is cancelled, never suspended; a suspendable
/// one is suspended, never migrated; only leases with a deadline complete late.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// Completed, never preempted nor displaced.
    Completed,
    /// Completed; its reservation was moved later while it waited, it was never preempted
    /// while running.
    CompletedAfterDisplacement,
    /// Completed after being suspended and resumed on its cluster (for a migratable lease:
    /// a migration that found no other cluster).
    CompletedAfterSuspension,
    /// Completed after moving to another cluster.
    CompletedAfterMigration,
    /// A lease with a deadline that completed after it (whatever happened to it).
    CompletedLate,
    /// Stopped by a preemption before completing (cancellable leases).
    CancelledByPreemption,
    /// Refused (`requests.csv`'s `reason` says why).
    Rejected,
    /// Redirected to a peer Grid, which took it (its IGG accepted the offer and confirmed
    /// the ticket), then refused by every cluster of that peer at admission.
    RejectedAfterRedirect,
    /// Still waiting or running when the emulation ended.
    Unfinished,
}

impl Outcome {
    /// Every outcome, in documentation order.
    pub const ALL: [Outcome; 9] = [
        Outcome::Completed,
        Outcome::CompletedAfterDisplacement,
        Outcome::CompletedAfterSuspension,
        Outcome::CompletedAfterMigration,
        Outcome::CompletedLate,
        Outcome::CancelledByPreemption,
        Outcome::Rejected,
        Outcome::RejectedAfterRedirect,
        Outcome::Unfinished,
    ];

    /// How a request with record `rec` turned out. For a completed lease the first that
    /// applies: late, migrated, suspended, displaced, else plain completed.
    pub fn of(req: &crate::model::LeaseRequest, rec: &RequestRecord) -> Outcome {
        match rec.state.unwrap_or(RequestState::Unfinished) {
            RequestState::Rejected if rec.redirected => Outcome::RejectedAfterRedirect,
            RequestState::Rejected => Outcome::Rejected,
            RequestState::Cancelled => Outcome::CancelledByPreemption,
            RequestState::Unfinished => Outcome::Unfinished,
            RequestState::Completed => {
                // Any lease with a deadline (paper 002's suspendable ones too), as the DVR
                // counts them.
                let deadline = rec.deadline.or(req.deadline);
                let late = rec.end.zip(deadline).is_some_and(|(e, d)| e > d);
                if late {
                    Outcome::CompletedLate
                } else if rec.migrations > 0 {
                    Outcome::CompletedAfterMigration
                } else if rec.preemptions > 0 {
                    Outcome::CompletedAfterSuspension
                } else if rec.displacements > 0 {
                    Outcome::CompletedAfterDisplacement
                } else {
                    Outcome::Completed
                }
            }
        }
    }

    /// The name used in outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::CompletedAfterDisplacement => "completed-after-displacement",
            Outcome::CompletedAfterSuspension => "completed-after-suspension",
            Outcome::CompletedAfterMigration => "completed-after-migration",
            Outcome::CompletedLate => "completed-late",
            Outcome::CancelledByPreemption => "cancelled-by-preemption",
            Outcome::Rejected => "rejected",
            Outcome::RejectedAfterRedirect => "rejected-after-redirect",
            Outcome::Unfinished => "unfinished",
        }
    }
}

/// Running VMs preempted, by the lease type they belong to (paper 000 §5.3.4: how often
/// valuable leases are hit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ByType {
    /// Best-effort cancellable.
    pub cancellable: u64,
    /// Best-effort suspendable.
    pub suspendable: u64,
    /// Deadline-constrained migratable.
    pub migratable: u64,
}

impl ByType {
    fn add(&mut self, t: LeaseType, n: u64) {
        match t {
            LeaseType::BestEffortCancellable => self.cancellable += n,
            LeaseType::BestEffortSuspendable => self.suspendable += n,
            // Non-preemptable leases are never preempted; count any as valuable.
            LeaseType::DeadlineMigratable | LeaseType::DeadlineNonPreemptable => {
                self.migratable += n
            }
        }
    }

    pub(super) fn sum(xs: &[&ByType]) -> ByType {
        xs.iter().fold(ByType::default(), |a, x| ByType {
            cancellable: a.cancellable + x.cancellable,
            suspendable: a.suspendable + x.suspendable,
            migratable: a.migratable + x.migratable,
        })
    }
}

/// One span of one VM instance in one state on one host (a row of `intervals.csv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VmSpan {
    /// The lease.
    pub lease: RequestId,
    /// The VM within it.
    pub vm: u32,
    /// Its cluster.
    pub cluster: ClusterId,
    /// Its host's index in the cluster.
    pub host: u16,
    /// The state it was in.
    pub state: crate::model::VmState,
    /// When the state began.
    pub start: EmuTime,
    /// When it ended.
    pub end: EmuTime,
}

/// One preemption decision, as logged to `decisions.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionRecord {
    /// When it was made.
    pub at: EmuTime,
    /// The cluster.
    pub cluster: ClusterId,
    /// What the LRMS decided.
    pub decision: crate::lrms::Decision,
}

/// Counters of one cluster's LRMS.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterCounters {
    /// VMs preempted (running VMs paused, suspended or stopped).
    pub vm_preemptions: u64,
    /// The same by lease type.
    pub vm_preemptions_by_type: ByType,
    /// VMs of waiting reservations moved later for local requests.
    pub vm_displacements: u64,
    /// Running leases preempted (stopped, suspended or migrated), once per preemption.
    pub lease_preemptions: u64,
    /// Waiting reservations displaced (moved later; no VM touched), once per displacement.
    pub lease_displacements: u64,
    /// Operation overhead charged here, including δ per decision, µs (signed: a migration
    /// that found no other cluster is corrected to the local suspension it became).
    pub overhead_us: i64,
    /// Preemption decisions made.
    pub decisions: u64,
    /// Decisions whose search ran out of steps (the best set found was used).
    pub inexact_decisions: u64,
    /// Migrations planned that found no other cluster and resumed here.
    pub migration_fallbacks: u64,
    /// External leases offered by the IGG.
    pub offered: u64,
    /// External leases refused at admission.
    pub refused: u64,
}

/// The run's observations.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    records: Vec<RequestRecord>,
    /// VM state spans, when asked for (`intervals.csv`); `None`: not recorded.
    spans: Option<Vec<VmSpan>>,
    clusters: BTreeMap<ClusterId, ClusterCounters>,
    grids: BTreeMap<GridId, GridCounters>,
    /// The Grids that started each request, in the order they first did.
    served_by: BTreeMap<RequestId, Vec<GridId>>,
    /// The provider that confirmed a ticket for each redirected request.
    confirmed: BTreeMap<RequestId, (GridId, u64)>,
    /// Offers sent and not yet answered or given up.
    open_offers: BTreeMap<u64, GridId>,
    terminal: usize,
    violations: Vec<Violation>,
    /// Hosts over capacity in the instant under way, by trace handle: a violation if the
    /// instant ends so (the host reports it), or if the run ends in it ([`Metrics::finish`]).
    over_now: BTreeMap<u32, Violation>,
    /// Cores the hosts of each cluster hold now (for a live view; no output reads it).
    cores_in_use: BTreeMap<ClusterId, u64>,
    decisions: Vec<DecisionRecord>,
    /// Every lease's events, when asked for (`leases.csv`); `None`: not recorded.
    leases: Option<LeaseLog>,
}

/// Where an LRMS is: its Grid and cluster.
pub type Place = (GridId, ClusterId);

impl ClusterCounters {
    /// Adds `o`'s counts to these.
    fn add(&mut self, o: &ClusterCounters) {
        self.vm_preemptions += o.vm_preemptions;
        self.vm_preemptions_by_type =
            ByType::sum(&[&self.vm_preemptions_by_type, &o.vm_preemptions_by_type]);
        self.vm_displacements += o.vm_displacements;
        self.lease_preemptions += o.lease_preemptions;
        self.lease_displacements += o.lease_displacements;
        self.overhead_us += o.overhead_us;
        self.decisions += o.decisions;
        self.inexact_decisions += o.inexact_decisions;
        self.migration_fallbacks += o.migration_fallbacks;
        self.offered += o.offered;
        self.refused += o.refused;
    }
}

/// Peering observations of one Grid.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GridCounters {
    /// Money paid to each peer.
    pub paid: BTreeMap<GridId, f64>,
    /// Money received from each peer.
    pub received: BTreeMap<GridId, f64>,
    /// Resource units redirected to each peer.
    pub redirected_units: BTreeMap<GridId, f64>,
    /// Negotiation outcomes.
    pub outcomes: Outcomes,
    /// Peering messages sent.
    pub messages: u64,
}

impl GridCounters {
    /// Adds `o`'s observations to these (the negotiation outcomes are kept by the Grid's
    /// own shard only: the other side's are empty).
    fn add(&mut self, o: GridCounters) {
        for (g, x) in o.paid {
            *self.paid.entry(g).or_default() += x;
        }
        for (g, x) in o.received {
            *self.received.entry(g).or_default() += x;
        }
        for (g, x) in o.redirected_units {
            *self.redirected_units.entry(g).or_default() += x;
        }
        if o.outcomes != Outcomes::default() {
            self.outcomes = o.outcomes;
        }
        self.messages += o.messages;
    }
}

impl Metrics {
    /// Observations for `n` requests.
    pub fn new(n: usize) -> Metrics {
        Metrics {
            records: vec![RequestRecord::default(); n],
            ..Metrics::default()
        }
    }

    /// The lease started on `cluster` at `t`.
    pub fn started(&mut self, id: RequestId, cluster: ClusterId, grid: GridId, t: EmuTime) {
        let r = &mut self.records[id.0 as usize];
        r.cluster = Some(cluster);
        r.start.get_or_insert(t);
        let grids = self.served_by.entry(id).or_default();
        // Once per Grid beyond the first (a lease restarting where it runs is not served
        // again).
        if !grids.contains(&grid) {
            grids.push(grid);
            if grids.len() > 1 {
                self.violations.push(Violation::ServedTwice {
                    request: id,
                    first: grids[0],
                    then: grid,
                });
            }
        }
    }

    /// A peering message was sent by Grid `grid`.
    pub fn peering_message(&mut self, grid: GridId) {
        self.grids.entry(grid).or_default().messages += 1;
    }

    /// Grid `grid`'s negotiation outcomes so far.
    pub fn outcomes(&mut self, grid: GridId, outcomes: &Outcomes) {
        self.grids.entry(grid).or_default().outcomes = outcomes.clone();
    }

    /// Grid `from` redirected `units` to `to` and paid `amount`.
    pub fn paid(&mut self, from: GridId, to: GridId, units: f64, amount: f64) {
        let g = self.grids.entry(from).or_default();
        *g.paid.entry(to).or_default() += amount;
        *g.redirected_units.entry(to).or_default() += units;
    }

    /// Grid `to` received `amount` from `from` for serving `lease` under negotiation
    /// `negotiation`. A second confirmation for one request is a ticket sold twice.
    pub fn received(
        &mut self,
        to: GridId,
        from: GridId,
        lease: RequestId,
        negotiation: u64,
        amount: f64,
    ) {
        self.records[lease.0 as usize].redirected = true;
        if let Some((g, n)) = self.confirmed.insert(lease, (to, negotiation)) {
            self.violations.push(Violation::ConfirmedTwice {
                request: lease,
                first: (g, n),
                then: (to, negotiation),
            });
        }
        *self
            .grids
            .entry(to)
            .or_default()
            .received
            .entry(from)
            .or_default() += amount;
    }

    /// An offer was sent.
    pub fn offer_sent(&mut self, negotiation: u64, grid: GridId) {
        self.open_offers.insert(negotiation, grid);
    }

    /// An offer was answered or given up.
    pub fn offer_settled(&mut self, negotiation: u64) {
        self.open_offers.remove(&negotiation);
    }

    /// The request reached terminal state `state` at `t`. A second terminal state for the same
    /// request is an invariant violation and is recorded as one.
    pub fn ended(&mut self, id: RequestId, state: RequestState, t: EmuTime) {
        let r = &mut self.records[id.0 as usize];
        if let Some(prev) = r.state {
            self.violations.push(Violation::EndedTwice {
                request: id,
                first: prev,
                then: state,
            });
            return;
        }
        r.state = Some(state);
        r.end = Some(t);
        let cluster = r.cluster;
        self.terminal += 1;
        if let (Some(log), Some(kind)) = (&mut self.leases, super::leases::end_event(state)) {
            let detail = At {
                cluster,
                ..At::default()
            };
            log.push(t, id, kind, detail);
        }
    }

    /// Why a request is rejected (set just before it ends rejected; the first reason given
    /// stands).
    pub fn reject_reason(&mut self, id: RequestId, reason: crate::model::RejectReason) {
        self.records[id.0 as usize].reason.get_or_insert(reason);
    }

    /// Overhead charged to a lease on `cluster`, and, if it was preempted, its running VMs
    /// preempted, its reserved VMs displaced, and its type.
    pub fn charge(
        &mut self,
        cluster: ClusterId,
        id: RequestId,
        overhead: EmuDuration,
        preempted: Option<(u32, u32, LeaseType)>,
    ) {
        let r = &mut self.records[id.0 as usize];
        r.overhead += overhead;
        let c = self.clusters.entry(cluster).or_default();
        c.overhead_us += overhead.as_micros() as i64;
        if let Some((vms, displaced, t)) = preempted {
            // A displacement moves a reservation (its VMs were never started); anything
            // else stopped, suspended or migrated running VMs.
            if displaced > 0 {
                r.displacements += 1;
                c.lease_displacements += 1;
            } else {
                r.preemptions += 1;
                c.lease_preemptions += 1;
            }
            c.vm_preemptions += u64::from(vms);
            c.vm_preemptions_by_type.add(t, u64::from(vms));
            c.vm_displacements += u64::from(displaced);
        }
    }

    /// Corrects a lease's overhead by `delta_us` (a planned migration that became a local
    /// suspension).
    pub fn adjust(&mut self, cluster: ClusterId, id: RequestId, delta_us: i64) {
        let r = &mut self.records[id.0 as usize];
        let corrected = r.overhead.as_micros() as i64 + delta_us;
        r.overhead = EmuDuration::from_micros(corrected.max(0) as u64);
        let c = self.clusters.entry(cluster).or_default();
        c.overhead_us += delta_us;
        c.migration_fallbacks += 1;
    }

    /// A preemption decision on `cluster` at `at`: δ once if it rescheduled work.
    pub fn decision(&mut self, cluster: ClusterId, d: &crate::lrms::Decision, at: EmuTime) {
        let c = self.clusters.entry(cluster).or_default();
        c.decisions += 1;
        c.overhead_us += d.reschedule.as_micros() as i64;
        c.inexact_decisions += u64::from(!d.exact);
        if let Some(log) = &mut self.leases {
            log.decided(cluster, at, d);
        }
        self.decisions.push(DecisionRecord {
            at,
            cluster,
            decision: d.clone(),
        });
    }

    /// A cluster accepted a request on terms it resolved: its VMs and deadline.
    pub fn terms(&mut self, id: RequestId, vms: u32, deadline: Option<EmuTime>) {
        let r = &mut self.records[id.0 as usize];
        r.vms = Some(vms);
        if deadline.is_some() {
            r.deadline = deadline;
        }
    }

    /// A lease's VMs worked `work` on `cluster`.
    pub fn worked(&mut self, _cluster: ClusterId, id: RequestId, work: EmuDuration) {
        self.records[id.0 as usize].busy += work;
    }

    /// The IGG offered an external lease to `cluster`.
    pub fn offered(&mut self, cluster: ClusterId) {
        self.clusters.entry(cluster).or_default().offered += 1;
    }

    /// `cluster` refused an external lease at admission.
    pub fn refused(&mut self, cluster: ClusterId) {
        self.clusters.entry(cluster).or_default().refused += 1;
    }

    /// A lease moved to `cluster` (of Grid `grid`) at `at`.
    pub fn migrated(&mut self, id: RequestId, (grid, cluster): Place, at: EmuTime) {
        let r = &mut self.records[id.0 as usize];
        let from = r.cluster;
        r.migrations += 1;
        r.cluster = Some(cluster);
        if let Some(log) = &mut self.leases {
            let detail = At {
                grid: Some(grid),
                cluster: Some(cluster),
                cause: from.map(Cause::Cluster),
                ..At::default()
            };
            log.push(at, id, LeaseEventKind::Migrated, detail);
        }
    }

    /// Records every lease's events from now on (for `leases.csv`), with room for `expected`
    /// of them made at once (up to a million, as [`Metrics::record_spans`] does).
    pub fn record_lease_events(&mut self, expected: usize) {
        const RESERVED_AT_MOST: usize = 1 << 20;
        let log = self.leases.get_or_insert_with(LeaseLog::default);
        log.reserve(expected.min(RESERVED_AT_MOST));
    }

    /// Whether lease events are recorded: an observer that reports them needs to gather
    /// their details only then.
    pub fn records_lease_events(&self) -> bool {
        self.leases.is_some()
    }

    /// The lease events recorded so far (`None` unless recorded).
    pub fn lease_log(&self) -> Option<&LeaseLog> {
        self.leases.as_ref()
    }

    /// The LRMS at `place` took lease `id` in at `at`, to run on `vms` VMs, reserving them
    /// `reserved` (a start and hosts) or queueing it.
    pub fn lease_accepted(
        &mut self,
        at: EmuTime,
        id: RequestId,
        place: Place,
        (vms, reserved): crate::lrms::Booking<'_>,
    ) {
        let Some(log) = &mut self.leases else {
            return;
        };
        let detail = At {
            grid: Some(place.0),
            cluster: Some(place.1),
            vms: Some(vms),
            ..At::default()
        };
        log.push(at, id, LeaseEventKind::Accepted, detail);
        self.lease_booked(at, id, place, (vms, reserved), None);
    }

    /// Lease `id` holds the reservation `reserved` at `place` (or waits without one) from
    /// `at`, for a reason (`cause`: the local request that displaced it) or none.
    pub fn lease_booked(
        &mut self,
        at: EmuTime,
        id: RequestId,
        place: Place,
        (vms, reserved): crate::lrms::Booking<'_>,
        cause: Option<RequestId>,
    ) {
        if let Some(log) = &mut self.leases {
            let kind = match reserved {
                Some(_) => LeaseEventKind::Scheduled,
                None => LeaseEventKind::Queued,
            };
            let detail = At {
                grid: Some(place.0),
                cluster: Some(place.1),
                hosts: reserved.map(|r| r.1.to_vec()).unwrap_or_default(),
                vms: Some(vms),
                cause: cause.map(Cause::Request),
                planned: reserved.map(|r| r.0),
            };
            log.push(at, id, kind, detail);
        }
    }

    /// Lease `id`'s VMs were deployed at `place` on `hosts` at `at`: its start, or a
    /// resumption when it started before.
    pub fn lease_runs(
        &mut self,
        at: EmuTime,
        id: RequestId,
        place: Place,
        hosts: Vec<u16>,
        vms: u32,
    ) {
        let first = self.records[id.0 as usize].start.is_none();
        if let Some(log) = &mut self.leases {
            let kind = match first {
                true => LeaseEventKind::Started,
                false => LeaseEventKind::Resumed,
            };
            let detail = At {
                grid: Some(place.0),
                cluster: Some(place.1),
                hosts,
                vms: Some(vms),
                ..At::default()
            };
            log.push(at, id, kind, detail);
        }
    }

    /// Lease `id` at `place` was preempted at `at` (its `vms` VMs on `hosts`, the first
    /// vacated at `from`), or its reservation displaced (`displaced`); the decision reported
    /// next names the cause.
    pub fn lease_vacated(
        &mut self,
        at: EmuTime,
        id: RequestId,
        place: Place,
        (hosts, vms, from): (Vec<u16>, u32, Option<EmuTime>),
        displaced: bool,
    ) {
        if let Some(log) = &mut self.leases {
            let kind = match displaced {
                true => LeaseEventKind::Displaced,
                false => LeaseEventKind::Preempted,
            };
            let detail = At {
                grid: Some(place.0),
                cluster: Some(place.1),
                hosts,
                vms: Some(vms),
                planned: from,
                ..At::default()
            };
            log.push(at, id, kind, detail);
        }
    }

    /// Grid `from` redirected lease `id` to its peer `to`, which took it at `at`.
    pub fn lease_redirected(&mut self, at: EmuTime, id: RequestId, from: GridId, to: GridId) {
        if let Some(log) = &mut self.leases {
            let detail = At {
                grid: Some(from),
                cause: Some(Cause::Grid(to)),
                ..At::default()
            };
            log.push(at, id, LeaseEventKind::Redirected, detail);
        }
    }

    /// An invariant was broken (e.g. a host over its capacity).
    pub fn violation(&mut self, what: Violation) {
        self.violations.push(what);
    }

    /// Host `host` is over capacity as the instant stands (`Some`), or no longer (`None`):
    /// what [`Metrics::finish`] reports if the run ends before the instant does.
    pub fn over_capacity_now(&mut self, host: u32, what: Option<Violation>) {
        match what {
            Some(v) => self.over_now.insert(host, v),
            None => self.over_now.remove(&host),
        };
    }

    /// A host of `cluster` took (`true`) or gave back `cores` cores.
    pub fn host_cores(&mut self, cluster: ClusterId, cores: u64, taken: bool) {
        let n = self.cores_in_use.entry(cluster).or_default();
        *n = if taken {
            n.saturating_add(cores)
        } else {
            n.saturating_sub(cores)
        };
    }

    /// Cores the hosts of `cluster` hold now.
    pub fn cores_in_use(&self, cluster: ClusterId) -> u64 {
        self.cores_in_use.get(&cluster).copied().unwrap_or(0)
    }

    /// Offers sent and not yet answered or given up, by requesting Grid.
    pub fn open_offers_by_grid(&self) -> BTreeMap<GridId, usize> {
        let mut by = BTreeMap::new();
        for g in self.open_offers.values() {
            *by.entry(*g).or_default() += 1;
        }
        by
    }

    /// The records so far, indexed by request id (open requests have no state yet).
    pub fn records(&self) -> &[RequestRecord] {
        &self.records
    }

    /// The cluster counters so far.
    pub fn cluster_counters(&self) -> &BTreeMap<ClusterId, ClusterCounters> {
        &self.clusters
    }

    /// Records VM state spans from now on (for `intervals.csv`), with room for `expected`
    /// of them made at once (up to a million; more, and growing is rare next to the run):
    /// a vector grown by doubling copies what it holds and touches fresh memory each time.
    pub fn record_spans(&mut self, expected: usize) {
        const RESERVED_AT_MOST: usize = 1 << 20;
        let spans = self.spans.get_or_insert_with(Vec::new);
        // Only room: a failure to make it leaves growing as it would have.
        let _ = spans.try_reserve_exact(expected.min(RESERVED_AT_MOST));
    }

    /// Whether VM state spans are recorded.
    pub fn records_spans(&self) -> bool {
        self.spans.is_some()
    }

    /// A VM instance left a state (kept only when spans are recorded).
    pub fn vm_span(&mut self, span: VmSpan) {
        if let Some(spans) = &mut self.spans {
            spans.push(span);
        }
    }

    /// Requests in a terminal state.
    pub fn terminal(&self) -> usize {
        self.terminal
    }

    /// Invariant violations seen.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Takes in `other`: what another shard of the same run observed (`--threads`, where
    /// each shard watches its own Grids). The result is what one observer of both would
    /// hold, with the cross-Grid invariants checked across the two: a request started by
    /// Grids of both, a ticket confirmed in both, ended in both. Counts add up; a request's
    /// first start is the earlier; its terminal state is the one it reached (both: ended
    /// twice, the earlier first). Decisions and spans end in time order.
    pub fn merge(&mut self, other: Metrics) {
        let both = self.merge_records(other.records);
        self.violations.extend(
            other
                .violations
                .into_iter()
                .filter(|v| !matches!(v, Violation::ServedTwice { .. })),
        );
        // A request ended on both sides is one terminal request.
        self.terminal = (self.terminal + other.terminal).saturating_sub(both);
        if let (Some(mine), Some(theirs)) = (&mut self.spans, other.spans) {
            mine.extend(theirs);
            mine.sort_by_key(|s| (s.start, s.end, s.lease.0, s.vm));
        }
        for (c, theirs) in other.clusters {
            self.clusters.entry(c).or_default().add(&theirs);
        }
        for (g, theirs) in other.grids {
            self.grids.entry(g).or_default().add(theirs);
        }
        self.merge_served_by(other.served_by);
        for (lease, then) in other.confirmed {
            if let Some(first) = self.confirmed.insert(lease, then) {
                self.violations.push(Violation::ConfirmedTwice {
                    request: lease,
                    first,
                    then,
                });
            }
        }
        self.open_offers.extend(other.open_offers);
        // Hosts are named by each shard's own trace handles: report them now, not by handle.
        self.violations.extend(other.over_now.into_values());
        for (c, n) in other.cores_in_use {
            *self.cores_in_use.entry(c).or_default() += n;
        }
        self.decisions.extend(other.decisions);
        self.decisions.sort_by_key(|d| d.at);
        match (&mut self.leases, other.leases) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, theirs) => self.leases = theirs,
            _ => {}
        }
    }

    /// Takes in another shard's records of the same requests (see [`Metrics::merge_record`]),
    /// noting each request both ended as a violation: returns how many there were.
    fn merge_records(&mut self, others: Vec<RequestRecord>) -> usize {
        let mut both = 0;
        for (id, (mine, theirs)) in self.records.iter_mut().zip(others).enumerate() {
            if let Some(twice) = Self::merge_record(RequestId(id as u32), mine, theirs) {
                both += 1;
                self.violations.push(twice);
            }
        }
        both
    }

    /// Takes `theirs`, another shard's record of `request`, into `mine`: the terminal state
    /// reached (both: the earlier, and [`Violation::EndedTwice`] returned), the earlier first
    /// start, the cluster of the later start, counts and times added up.
    fn merge_record(
        request: RequestId,
        mine: &mut RequestRecord,
        theirs: RequestRecord,
    ) -> Option<Violation> {
        let mut twice = None;
        if let (Some(a), Some(b)) = (mine.state, theirs.state) {
            // Both ended it: the later end is the second.
            let ((first, _), (then, _)) = if theirs.end < mine.end {
                ((b, theirs.end), (a, mine.end))
            } else {
                ((a, mine.end), (b, theirs.end))
            };
            twice = Some(Violation::EndedTwice {
                request,
                first,
                then,
            });
            if theirs.end < mine.end {
                mine.state = theirs.state;
                mine.end = theirs.end;
            }
        } else if theirs.state.is_some() {
            mine.state = theirs.state;
            mine.end = theirs.end;
        }
        let theirs_later = match (mine.start, theirs.start) {
            (Some(a), Some(b)) => b >= a,
            (None, Some(_)) => true,
            _ => false,
        };
        if theirs_later || mine.cluster.is_none() {
            mine.cluster = theirs.cluster.or(mine.cluster);
        }
        mine.start = match (mine.start, theirs.start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        mine.preemptions += theirs.preemptions;
        mine.displacements += theirs.displacements;
        mine.reason = mine.reason.or(theirs.reason);
        mine.overhead += theirs.overhead;
        mine.migrations += theirs.migrations;
        mine.busy += theirs.busy;
        mine.vms = mine.vms.or(theirs.vms);
        mine.deadline = mine.deadline.or(theirs.deadline);
        mine.redirected |= theirs.redirected;
        twice
    }

    /// Takes in another shard's Grids that started each request. Served twice: once per Grid
    /// beyond the first of both sides together (each side saw only its own), so judged again
    /// on the union.
    fn merge_served_by(&mut self, others: BTreeMap<RequestId, Vec<GridId>>) {
        let served_twice = |v: &Violation| matches!(v, Violation::ServedTwice { .. });
        self.violations.retain(|v| !served_twice(v));
        for (id, theirs) in others {
            let mine = self.served_by.entry(id).or_default();
            for g in theirs {
                if !mine.contains(&g) {
                    mine.push(g);
                }
            }
        }
        for (id, grids) in &self.served_by {
            for then in grids.iter().skip(1) {
                self.violations.push(Violation::ServedTwice {
                    request: *id,
                    first: grids[0],
                    then: *then,
                });
            }
        }
    }

    /// Checks the end-of-run invariants (every offer settled when every request ended; money
    /// conserved), then returns the records (open requests marked unfinished), cluster and
    /// Grid counters, and violations.
    pub fn finish(mut self) -> Finished {
        // The run ended in the instant these hosts were over capacity in: it is over.
        self.violations
            .extend(std::mem::take(&mut self.over_now).into_values());
        let all_ended = self.terminal == self.records.len();
        if all_ended {
            for (n, g) in &self.open_offers {
                self.violations.push(Violation::OfferOpen {
                    negotiation: *n,
                    grid: *g,
                });
            }
        }
        let paid: f64 = self.grids.values().flat_map(|g| g.paid.values()).sum();
        let received: f64 = self.grids.values().flat_map(|g| g.received.values()).sum();
        if (paid - received).abs() > 1e-6 * paid.abs().max(1.0) && all_ended {
            self.violations
                .push(Violation::MoneyNotConserved { paid, received });
        }
        for r in &mut self.records {
            r.state.get_or_insert(RequestState::Unfinished);
        }
        Finished {
            records: self.records,
            clusters: self.clusters,
            grids: self.grids,
            violations: self.violations,
            decisions: self.decisions,
            spans: self.spans.unwrap_or_default(),
            leases: self.leases.unwrap_or_default(),
        }
    }
}

/// What [`Metrics::finish`] returns.
pub struct Finished {
    /// Per-request records.
    pub records: Vec<RequestRecord>,
    /// LRMS counters.
    pub clusters: BTreeMap<ClusterId, ClusterCounters>,
    /// Peering counters.
    pub grids: BTreeMap<GridId, GridCounters>,
    /// Invariant violations.
    pub violations: Vec<Violation>,
    /// Every preemption decision, in the order made.
    pub decisions: Vec<DecisionRecord>,
    /// Every VM instance's state spans, in the order they ended (empty unless recorded).
    pub spans: Vec<VmSpan>,
    /// Every lease's events, in time order (empty unless recorded).
    pub leases: LeaseLog,
}

#[cfg(test)]
mod tests;
