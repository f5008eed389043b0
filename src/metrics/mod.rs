//! What a run observed — one record per request, per-cluster counters — and the paper
//! metrics computed from them: utilisation (paper 003 eq. 11, paper 000 eq. 21), rejection
//! rates, preemptions and overhead, best-effort makespan (paper 003 eq. 13), AWRT (paper 000
//! eqs. 23–24) and waiting time. Actors report observations here as a side channel; it is
//! not part of the emulated system and sends no messages.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::igg::broker::Outcomes;
use crate::model::{ClusterId, GridId, LeaseType, Origin, RequestId, RequestState};
use crate::time::{EmuDuration, EmuTime};
use crate::topology::Topology;

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
    /// How many times it was preempted.
    pub preemptions: u32,
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

    fn sum(xs: &[&ByType]) -> ByType {
        xs.iter().fold(ByType::default(), |a, x| ByType {
            cancellable: a.cancellable + x.cancellable,
            suspendable: a.suspendable + x.suspendable,
            migratable: a.migratable + x.migratable,
        })
    }
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
    /// Leases preempted (running or waiting reservations displaced).
    pub lease_preemptions: u64,
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
    clusters: BTreeMap<ClusterId, ClusterCounters>,
    grids: BTreeMap<GridId, GridCounters>,
    /// The Grid that first started each request.
    served_by: BTreeMap<RequestId, GridId>,
    /// The provider that confirmed a ticket for each redirected request.
    confirmed: BTreeMap<RequestId, (GridId, u64)>,
    /// Offers sent and not yet answered or given up.
    open_offers: BTreeMap<u64, GridId>,
    terminal: usize,
    violations: Vec<String>,
    decisions: Vec<DecisionRecord>,
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
        match self.served_by.get(&id) {
            Some(g) if *g != grid => self.violations.push(format!(
                "request #{} served by grids #{} and #{}",
                id.0, g.0, grid.0
            )),
            Some(_) => {}
            None => {
                self.served_by.insert(id, grid);
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
        if let Some((g, n)) = self.confirmed.insert(lease, (to, negotiation)) {
            self.violations.push(format!("request #{} confirmed twice (grid #{} negotiation {n}, then grid #{} negotiation {negotiation})", lease.0, g.0, to.0));
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
            self.violations.push(format!(
                "request #{} ended twice ({} then {})",
                id.0,
                prev.as_str(),
                state.as_str()
            ));
            return;
        }
        r.state = Some(state);
        r.end = Some(t);
        self.terminal += 1;
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
            r.preemptions += 1;
            c.lease_preemptions += 1;
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

    /// A lease moved to `cluster`.
    pub fn migrated(&mut self, id: RequestId, cluster: ClusterId) {
        let r = &mut self.records[id.0 as usize];
        r.migrations += 1;
        r.cluster = Some(cluster);
    }

    /// An invariant was broken (e.g. a host over its capacity).
    pub fn violation(&mut self, what: String) {
        self.violations.push(what);
    }

    /// Requests in a terminal state.
    pub fn terminal(&self) -> usize {
        self.terminal
    }

    /// Invariant violations seen.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }

    /// Checks the end-of-run invariants (every offer settled when every request ended; money
    /// conserved), then returns the records (open requests marked unfinished), cluster and
    /// Grid counters, and violations.
    pub fn finish(mut self) -> Finished {
        let all_ended = self.terminal == self.records.len();
        if all_ended {
            for (n, g) in &self.open_offers {
                self.violations.push(format!(
                    "offer {n} of grid #{} never answered, expired or retried",
                    g.0
                ));
            }
        }
        let paid: f64 = self.grids.values().flat_map(|g| g.paid.values()).sum();
        let received: f64 = self.grids.values().flat_map(|g| g.received.values()).sum();
        if (paid - received).abs() > 1e-6 * paid.abs().max(1.0) && all_ended {
            self.violations.push(format!(
                "money not conserved: grids paid {paid:.6}, peers received {received:.6}"
            ));
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
    pub violations: Vec<String>,
    /// Every preemption decision, in the order made.
    pub decisions: Vec<DecisionRecord>,
}

/// Per-Grid figures (paper 004 §6.2).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct GridFigures {
    /// AWRT (eq. 5) of the Grid's external jobs, wherever they ran, seconds.
    pub awrt_grid_s: f64,
    /// AWRT of the local jobs of the Grid's providers, seconds.
    pub awrt_local_s: f64,
    /// Share of the Grid's external load (resource units) redirected to peers, percent.
    pub redirected_pct: f64,
    /// The same per peer.
    pub redirected_pct_by_peer: BTreeMap<String, f64>,
    /// Negotiation outcomes.
    pub negotiations: Outcomes,
    /// Peering messages sent per request redirected.
    pub messages_per_redirect: f64,
    /// Money paid to peers.
    pub paid: f64,
    /// Money received from peers.
    pub received: f64,
}

/// Computes the per-Grid figures.
pub fn grid_figures(
    topo: &Topology,
    records: &[RequestRecord],
    grids: &BTreeMap<GridId, GridCounters>,
) -> BTreeMap<String, GridFigures> {
    let awrt = |pick: &dyn Fn(&crate::model::LeaseRequest) -> bool| {
        let (mut w, mut s) = (0.0, 0.0);
        for (q, r) in topo.requests.iter().zip(records) {
            if !pick(q) || r.state != Some(RequestState::Completed) {
                continue;
            }
            let size = q.cores() as f64 * q.duration.as_secs_f64();
            w += size * r.end.unwrap_or(q.arrival).since(q.arrival).as_secs_f64();
            s += size;
        }
        ratio(w, s)
    };
    topo.grids
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let gid = GridId(i as u16);
            let c = grids.get(&gid).cloned().unwrap_or_default();
            let external_units: f64 = topo
                .requests
                .iter()
                .filter(|q| q.origin == Origin::External && q.grid == gid)
                .map(|q| q.cores() as f64 * q.duration.as_secs_f64())
                .fold(0.0, |a, b| a + b);
            let redirected = total(c.redirected_units.values());
            let fig = GridFigures {
                awrt_grid_s: awrt(&|q| q.origin == Origin::External && q.grid == gid),
                awrt_local_s: awrt(&|q| q.origin == Origin::Local && q.grid == gid),
                redirected_pct: 100.0 * ratio(redirected, external_units),
                redirected_pct_by_peer: c
                    .redirected_units
                    .iter()
                    .map(|(p, u)| {
                        (
                            topo.grids[usize::from(p.0)].name.clone(),
                            100.0 * ratio(*u, external_units),
                        )
                    })
                    .collect(),
                messages_per_redirect: ratio(c.messages as f64, c.outcomes.redirected as f64),
                negotiations: c.outcomes,
                paid: total(c.paid.values()),
                received: total(c.received.values()),
            };
            (g.name.clone(), fig)
        })
        .collect()
}

/// Counts of requests by terminal state.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StateCounts {
    /// Ran to completion.
    pub completed: u64,
    /// Refused.
    pub rejected: u64,
    /// Stopped by preemption.
    pub cancelled: u64,
    /// Still open at the end.
    pub unfinished: u64,
}

impl StateCounts {
    fn add(&mut self, s: RequestState) {
        match s {
            RequestState::Completed => self.completed += 1,
            RequestState::Rejected => self.rejected += 1,
            RequestState::Cancelled => self.cancelled += 1,
            RequestState::Unfinished => self.unfinished += 1,
        }
    }
}

/// Request counts per origin.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RequestCounts {
    /// All requests.
    pub total: u64,
    /// Local requests by state.
    pub local: StateCounts,
    /// External requests by state.
    pub external: StateCounts,
}

/// The paper metrics, for the whole run or one cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PaperMetrics {
    /// VMs preempted.
    pub vm_preemptions: u64,
    /// VMs preempted by lease type.
    pub vm_preemptions_by_type: ByType,
    /// VMs of waiting reservations displaced (moved later) for local requests: with
    /// `vm_preemptions`, what a count of every VM a preemption touched would give.
    pub vm_displacements: u64,
    /// Leases preempted.
    pub lease_preemptions: u64,
    /// Preemption decisions.
    pub decisions: u64,
    /// Decisions whose search ran out of steps (the best set found was used).
    pub inexact_decisions: u64,
    /// Planned migrations that found no other cluster and resumed where they were.
    pub migration_fallbacks: u64,
    /// Total preemption overhead, seconds (δ once per decision that reschedules, plus every
    /// lease's operations).
    pub overhead_s: f64,
    /// Paper 003 eq. 11: VM-time spent computing leases (completed, or cancelled after some
    /// work) over capacity × makespan, 0–1.
    pub utilization: f64,
    /// Paper 000 eq. 21: 1 − overhead / computation time (the VM-seconds of eq. 11), 0–1.
    pub useful_work_fraction: f64,
    /// Rejected local requests over local requests.
    pub local_rejection_rate: f64,
    /// Rejected external requests over external requests (per cluster: refusals at admission
    /// over offers).
    pub external_rejection_rate: f64,
    /// Paper 000 eqs. 23–24: average weighted response time of best-effort leases, seconds.
    pub awrt_s: f64,
    /// Paper 003 eq. 13: mean completion minus ready time of best-effort leases, seconds.
    pub be_makespan_s: f64,
    /// Mean time from submission to first start, over started leases, seconds.
    pub mean_wait_s: f64,
    /// Paper 001's average waiting time of external leases: completion minus submission minus
    /// the time spent working, over completed external leases, seconds.
    pub external_waiting_s: f64,
    /// Lease migrations to another cluster.
    pub migrations: u64,
    /// Deadline-constrained leases that completed after their deadline.
    pub deadline_misses: u64,
    /// Share of migratable leases that were migrated (paper 000 §5.1), 0–1.
    pub migration_rate: f64,
    /// Share of non-preemptable external leases rejected (paper 000 §5.1), 0–1.
    pub nonpreemptable_rejection_rate: f64,
    /// Deadline violation rate (paper 002 eq. 14), percent, over external requests with a
    /// deadline: (a·v + r) / (a + r) · 100.
    pub dvr: f64,
    /// Completed external requests, percent of external requests.
    pub completed_external_pct: f64,
}

/// Figures computed from the records.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    /// Counts by origin and state.
    pub requests: RequestCounts,
    /// From the first arrival to the last terminal event, seconds.
    pub makespan_s: f64,
    /// The paper metrics over the whole run.
    pub all: PaperMetrics,
    /// The paper metrics per cluster, by `grid/cluster` name.
    pub clusters: BTreeMap<String, PaperMetrics>,
}

/// Sums money or core-seconds; unlike `Iterator::sum`, an empty sum is +0.0, not -0.0, so
/// reports never print "-0".
fn total<'a>(xs: impl Iterator<Item = &'a f64>) -> f64 {
    xs.fold(0.0, |a, b| a + b)
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

fn is_best_effort(t: LeaseType) -> bool {
    !t.deadline_constrained()
}

/// Computes the figures. `per_cluster` holds the LRMS counters.
pub fn figures(
    topo: &Topology,
    records: &[RequestRecord],
    per_cluster: &BTreeMap<ClusterId, ClusterCounters>,
) -> Figures {
    let first_arrival = topo.requests.iter().map(|r| r.arrival).min();
    let last_end = records.iter().filter_map(|r| r.end).max();
    let makespan = match (first_arrival, last_end) {
        (Some(a), Some(e)) => e.since(a),
        _ => EmuDuration::ZERO,
    };
    let mut counts = RequestCounts::default();
    for (req, rec) in topo.requests.iter().zip(records) {
        counts.total += 1;
        let state = rec.state.unwrap_or(RequestState::Unfinished);
        match req.origin {
            Origin::Local => counts.local.add(state),
            Origin::External => counts.external.add(state),
        }
    }
    let selection = |cluster: Option<ClusterId>| -> PaperMetrics {
        let in_scope = |rec: &RequestRecord, req: &crate::model::LeaseRequest| match cluster {
            None => true,
            Some(c) => {
                rec.cluster == Some(c) || (req.origin == Origin::Local && req.cluster == Some(c))
            }
        };
        let cores: u64 = match cluster {
            None => topo.total_cores(),
            Some(c) => topo.cluster(c).cores(),
        };
        let mut computation = 0f64; // VM-seconds of completed leases
        let (mut local_all, mut local_rejected) = (0u64, 0u64);
        let (mut ext_all, mut ext_rejected) = (0u64, 0u64);
        let (mut be_sum, mut be_n) = (0f64, 0u64);
        let (mut wait_sum, mut wait_n) = (0f64, 0u64);
        let (mut ext_wait_sum, mut ext_wait_n) = (0f64, 0u64);
        let mut awrt_by_cluster: BTreeMap<ClusterId, (f64, f64)> = BTreeMap::new();
        let (mut migrations, mut misses) = (0u64, 0u64);
        let (mut migratable, mut migrated) = (0u64, 0u64);
        let (mut np_all, mut np_rejected) = (0u64, 0u64);
        let (mut dl_accepted, mut dl_violated, mut dl_rejected) = (0u64, 0u64, 0u64);
        let mut ext_completed = 0u64;
        for (req, rec) in topo.requests.iter().zip(records) {
            if !in_scope(rec, req) {
                continue;
            }
            let state = rec.state.unwrap_or(RequestState::Unfinished);
            match req.origin {
                Origin::Local => {
                    local_all += 1;
                    local_rejected += u64::from(state == RequestState::Rejected);
                }
                Origin::External => {
                    ext_all += 1;
                    ext_rejected += u64::from(state == RequestState::Rejected);
                }
            }
            migrations += u64::from(rec.migrations);
            if req.origin == Origin::External {
                ext_completed += u64::from(state == RequestState::Completed);
                match req.lease_type {
                    LeaseType::DeadlineMigratable => {
                        migratable += 1;
                        migrated += u64::from(rec.migrations > 0);
                    }
                    LeaseType::DeadlineNonPreemptable => {
                        np_all += 1;
                        np_rejected += u64::from(state == RequestState::Rejected);
                    }
                    _ => {}
                }
                let deadline = rec.deadline.or(req.deadline);
                let has_deadline = deadline.is_some() || req.deadline_ratio.is_some();
                if has_deadline {
                    if state == RequestState::Rejected {
                        dl_rejected += 1;
                    } else {
                        dl_accepted += 1;
                        let late = state != RequestState::Completed
                            || rec.end.zip(deadline).is_some_and(|(e, d)| e > d);
                        dl_violated += u64::from(late);
                    }
                }
            }
            if let Some(s) = rec.start {
                wait_sum += s.since(req.arrival).as_secs_f64();
                wait_n += 1;
            }
            // Eq. 12: the VM-time leases spent computing, as the clusters that ran them spent
            // it (a lease runs faster on a faster cluster), including the work of leases later
            // cancelled: it used the resources; only preemption overhead is time lost.
            let vms = rec.vms.unwrap_or(req.vms);
            computation += f64::from(vms) * f64::from(req.cores_per_vm) * rec.busy.as_secs_f64();
            if state != RequestState::Completed {
                continue;
            }
            // Eq. 23 weighs response times by the requested size.
            let vd = f64::from(req.vms) * req.duration.as_secs_f64();
            let end = rec.end.unwrap_or(req.arrival);
            if req.origin == Origin::External {
                ext_wait_sum += end
                    .since(req.arrival)
                    .saturating_sub(rec.busy)
                    .as_secs_f64();
                ext_wait_n += 1;
            }
            let deadline = rec.deadline.or(req.deadline);
            if req.lease_type.deadline_constrained() && deadline.is_some_and(|d| end > d) {
                misses += 1;
            }
            if req.origin == Origin::External && is_best_effort(req.lease_type) {
                let response = end.since(req.arrival).as_secs_f64();
                be_sum += response;
                be_n += 1;
                if let Some(c) = rec.cluster {
                    let e = awrt_by_cluster.entry(c).or_default();
                    e.0 += vd * response;
                    e.1 += vd;
                }
            }
        }
        // Eq. 24: per-cluster AWRTs weighted by the clusters' processing elements.
        let (mut num, mut den) = (0f64, 0f64);
        for (c, (w, vd)) in &awrt_by_cluster {
            let m = topo.cluster(*c).cores() as f64;
            num += m * ratio(*w, *vd);
            den += m;
        }
        let counters: Vec<&ClusterCounters> = match cluster {
            None => per_cluster.values().collect(),
            Some(c) => per_cluster.get(&c).into_iter().collect(),
        };
        let overhead_us: i64 = counters.iter().map(|c| c.overhead_us).sum();
        let overhead = EmuDuration::from_micros(overhead_us.max(0) as u64);
        let (offered, refused): (u64, u64) = counters
            .iter()
            .fold((0, 0), |(o, r), c| (o + c.offered, r + c.refused));
        PaperMetrics {
            vm_preemptions: counters.iter().map(|c| c.vm_preemptions).sum(),
            vm_preemptions_by_type: ByType::sum(
                &counters
                    .iter()
                    .map(|c| &c.vm_preemptions_by_type)
                    .collect::<Vec<_>>(),
            ),
            vm_displacements: counters.iter().map(|c| c.vm_displacements).sum(),
            lease_preemptions: counters.iter().map(|c| c.lease_preemptions).sum(),
            decisions: counters.iter().map(|c| c.decisions).sum(),
            inexact_decisions: counters.iter().map(|c| c.inexact_decisions).sum(),
            migration_fallbacks: counters.iter().map(|c| c.migration_fallbacks).sum(),
            overhead_s: overhead.as_secs_f64(),
            utilization: ratio(computation, cores as f64 * makespan.as_secs_f64()),
            useful_work_fraction: if computation > 0.0 {
                (1.0 - overhead.as_secs_f64() / computation).max(0.0)
            } else {
                0.0
            },
            local_rejection_rate: ratio(local_rejected as f64, local_all as f64),
            external_rejection_rate: match cluster {
                None => ratio(ext_rejected as f64, ext_all as f64),
                Some(_) => ratio(refused as f64, offered as f64),
            },
            awrt_s: ratio(num, den),
            be_makespan_s: ratio(be_sum, be_n as f64),
            mean_wait_s: ratio(wait_sum, wait_n as f64),
            external_waiting_s: ratio(ext_wait_sum, ext_wait_n as f64),
            migrations,
            deadline_misses: misses,
            migration_rate: ratio(migrated as f64, migratable as f64),
            nonpreemptable_rejection_rate: ratio(np_rejected as f64, np_all as f64),
            // (a·v + r)/(a + r) with v = violated/accepted is (violated + rejected)/(a + r).
            dvr: 100.0
                * ratio(
                    (dl_violated + dl_rejected) as f64,
                    (dl_accepted + dl_rejected) as f64,
                ),
            completed_external_pct: 100.0 * ratio(ext_completed as f64, ext_all as f64),
        }
    };
    let clusters = topo
        .clusters
        .iter()
        .enumerate()
        .map(|(i, c)| (c.qualified_name(topo), selection(Some(ClusterId(i as u16)))))
        .collect();
    Figures {
        requests: counts,
        makespan_s: makespan.as_secs_f64(),
        all: selection(None),
        clusters,
    }
}
