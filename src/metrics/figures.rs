//! The paper metrics computed from a run's observations: utilisation (paper 003 eq. 11,
//! paper 000 eq. 21), rejection rates, preemptions and overhead, best-effort makespan (paper
//! 003 eq. 13), AWRT (paper 000 eqs. 23–24, paper 004 eq. 5), waiting time, per-Grid figures.

use std::collections::BTreeMap;

use serde::Serialize;

use super::observe::{ByType, ClusterCounters, GridCounters, RequestRecord};
use crate::igg::broker::Outcomes;
use crate::model::{ClusterId, GridId, LeaseType, Origin, RequestState};
use crate::time::EmuDuration;
use crate::topology::Topology;

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
    /// The same per peer (the peers paid).
    pub paid_by_peer: BTreeMap<String, f64>,
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
            let measured = topo.metrics.measured(q.arrival);
            if !pick(q) || !measured || r.state != Some(RequestState::Completed) {
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
                redirected_pct: pct(redirected, external_units),
                redirected_pct_by_peer: c
                    .redirected_units
                    .iter()
                    .map(|(p, u)| {
                        (
                            topo.grids[usize::from(p.0)].name.clone(),
                            pct(*u, external_units),
                        )
                    })
                    .collect(),
                messages_per_redirect: ratio(c.messages as f64, c.outcomes.redirected as f64),
                negotiations: c.outcomes,
                paid: total(c.paid.values()),
                paid_by_peer: c
                    .paid
                    .iter()
                    .map(|(p, x)| (topo.grids[usize::from(p.0)].name.clone(), *x))
                    .collect(),
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
    /// Hosts (of the cluster, or of every cluster): with `cores`, what the figures are over.
    pub hosts: u64,
    /// Their cores.
    pub cores: u64,
    /// VMs preempted.
    pub vm_preemptions: u64,
    /// VMs preempted by lease type.
    pub vm_preemptions_by_type: ByType,
    /// VMs of waiting reservations displaced (moved later) for local requests: with
    /// `vm_preemptions`, what a count of every VM a preemption touched would give.
    pub vm_displacements: u64,
    /// Running leases preempted (stopped, suspended or migrated), once per preemption: the
    /// leases of `vm_preemptions`, the sum of `requests.csv`'s `preemptions`.
    pub lease_preemptions: u64,
    /// Waiting reservations displaced (moved later; no VM touched), once per displacement:
    /// the leases of `vm_displacements`, the sum of `requests.csv`'s `displacements`.
    pub lease_displacements: u64,
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
    /// work) over capacity × makespan, percent.
    pub utilization_pct: f64,
    /// Paper 000 eq. 21: 1 − overhead / computation time (the VM-seconds of eq. 11), percent.
    pub useful_work_pct: f64,
    /// Rejected local requests over local requests, percent.
    pub local_rejection_pct: f64,
    /// Rejected external requests over external requests, percent (per cluster: refusals at
    /// admission over offers).
    pub external_rejection_pct: f64,
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
    /// Share of migratable leases that were migrated (paper 000 §5.1), percent.
    pub migration_pct: f64,
    /// Share of non-preemptable external leases rejected (paper 000 §5.1), percent.
    pub nonpreemptable_rejection_pct: f64,
    /// Deadline violation rate (paper 002 eq. 14), percent, over external requests with a
    /// deadline: (a·v + r) / (a + r) · 100.
    pub dvr_pct: f64,
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

/// `a` over `b` in percent (0 when `b` is 0): every share in the summary is a percent, so a
/// reader never has to guess a figure's scale (the keys say it: `_pct`).
fn pct(a: f64, b: f64) -> f64 {
    100.0 * ratio(a, b)
}

fn is_best_effort(t: LeaseType) -> bool {
    !t.deadline_constrained()
}

/// Sums over the requests in a selection, for the paper metrics.
#[derive(Default)]
struct Tally {
    /// VM-seconds the leases spent computing (eq. 12).
    computation: f64,
    local_all: u64,
    local_rejected: u64,
    ext_all: u64,
    ext_rejected: u64,
    be_sum: f64,
    be_n: u64,
    wait_sum: f64,
    wait_n: u64,
    ext_wait_sum: f64,
    ext_wait_n: u64,
    /// Per cluster: Σ size × response and Σ size of completed best-effort leases (eq. 23).
    awrt_by_cluster: BTreeMap<ClusterId, (f64, f64)>,
    migrations: u64,
    misses: u64,
    migratable: u64,
    migrated: u64,
    np_all: u64,
    np_rejected: u64,
    dl_accepted: u64,
    dl_violated: u64,
    dl_rejected: u64,
    ext_completed: u64,
}

impl Tally {
    /// The sums over the requests of `cluster` (those it ran, and its own local ones; every
    /// request when `None`): each measured request whole, the warm-up's for their work only.
    fn over(topo: &Topology, records: &[RequestRecord], cluster: Option<ClusterId>) -> Tally {
        let in_scope = |rec: &RequestRecord, req: &crate::model::LeaseRequest| match cluster {
            None => true,
            Some(c) => {
                rec.cluster == Some(c) || (req.origin == Origin::Local && req.cluster == Some(c))
            }
        };
        let mut t = Tally::default();
        for (req, rec) in topo.requests.iter().zip(records) {
            if !in_scope(rec, req) {
                continue;
            }
            if topo.metrics.measured(req.arrival) {
                t.add(req, rec);
            } else {
                t.add_work(req, rec);
            }
        }
        t
    }

    /// Eq. 12: the VM-time leases spent computing, as the clusters that ran them spent it (a
    /// lease runs faster on a faster cluster), including the work of leases later cancelled:
    /// it used the resources; only preemption overhead is time lost. Counted for every
    /// request, measured or in the warm-up: utilisation is of the whole run.
    fn add_work(&mut self, req: &crate::model::LeaseRequest, rec: &RequestRecord) {
        let vms = rec.vms.unwrap_or(req.vms);
        self.computation += f64::from(vms) * f64::from(req.cores_per_vm) * rec.busy.as_secs_f64();
    }

    /// A measured request: its work and every per-request figure.
    fn add(&mut self, req: &crate::model::LeaseRequest, rec: &RequestRecord) {
        self.add_work(req, rec);
        let state = rec.state.unwrap_or(RequestState::Unfinished);
        match req.origin {
            Origin::Local => {
                self.local_all += 1;
                self.local_rejected += u64::from(state == RequestState::Rejected);
            }
            Origin::External => {
                self.ext_all += 1;
                self.ext_rejected += u64::from(state == RequestState::Rejected);
            }
        }
        self.migrations += u64::from(rec.migrations);
        if req.origin == Origin::External {
            self.ext_completed += u64::from(state == RequestState::Completed);
            match req.lease_type {
                LeaseType::DeadlineMigratable => {
                    self.migratable += 1;
                    self.migrated += u64::from(rec.migrations > 0);
                }
                LeaseType::DeadlineNonPreemptable => {
                    self.np_all += 1;
                    self.np_rejected += u64::from(state == RequestState::Rejected);
                }
                _ => {}
            }
            let deadline = rec.deadline.or(req.deadline);
            let has_deadline = deadline.is_some() || req.deadline_ratio.is_some();
            if has_deadline {
                if state == RequestState::Rejected {
                    self.dl_rejected += 1;
                } else {
                    self.dl_accepted += 1;
                    let late = state != RequestState::Completed
                        || rec.end.zip(deadline).is_some_and(|(e, d)| e > d);
                    self.dl_violated += u64::from(late);
                }
            }
        }
        if let Some(s) = rec.start {
            self.wait_sum += s.since(req.arrival).as_secs_f64();
            self.wait_n += 1;
        }
        if state != RequestState::Completed {
            return;
        }
        // Eq. 23 weighs response times by the requested size.
        let vd = f64::from(req.vms) * req.duration.as_secs_f64();
        let end = rec.end.unwrap_or(req.arrival);
        if req.origin == Origin::External {
            self.ext_wait_sum += end
                .since(req.arrival)
                .saturating_sub(rec.busy)
                .as_secs_f64();
            self.ext_wait_n += 1;
        }
        let deadline = rec.deadline.or(req.deadline);
        if req.lease_type.deadline_constrained() && deadline.is_some_and(|d| end > d) {
            self.misses += 1;
        }
        if req.origin == Origin::External && is_best_effort(req.lease_type) {
            let response = end.since(req.arrival).as_secs_f64();
            self.be_sum += response;
            self.be_n += 1;
            if let Some(c) = rec.cluster {
                let e = self.awrt_by_cluster.entry(c).or_default();
                e.0 += vd * response;
                e.1 += vd;
            }
        }
    }

    /// Eq. 24: per-cluster AWRTs weighted by the clusters' processing elements.
    fn awrt(&self, topo: &Topology) -> f64 {
        let (mut num, mut den) = (0f64, 0f64);
        for (c, (w, vd)) in &self.awrt_by_cluster {
            let m = topo.cluster(*c).cores() as f64;
            num += m * ratio(*w, *vd);
            den += m;
        }
        ratio(num, den)
    }
}

/// The paper metrics over the requests of `cluster` (every request when `None`).
fn paper_metrics(
    topo: &Topology,
    records: &[RequestRecord],
    per_cluster: &BTreeMap<ClusterId, ClusterCounters>,
    cluster: Option<ClusterId>,
    makespan: EmuDuration,
) -> PaperMetrics {
    let cores: u64 = match cluster {
        None => topo.total_cores(),
        Some(c) => topo.cluster(c).cores(),
    };
    let t = Tally::over(topo, records, cluster);
    let counters: Vec<&ClusterCounters> = match cluster {
        None => per_cluster.values().collect(),
        Some(c) => per_cluster.get(&c).into_iter().collect(),
    };
    let overhead_us: i64 = counters.iter().map(|c| c.overhead_us).sum();
    let overhead = EmuDuration::from_micros(overhead_us.max(0) as u64);
    let (offered, refused): (u64, u64) = counters
        .iter()
        .fold((0, 0), |(o, r), c| (o + c.offered, r + c.refused));
    let hosts = match cluster {
        None => topo.clusters.iter().map(|c| c.hosts.len() as u64).sum(),
        Some(c) => topo.cluster(c).hosts.len() as u64,
    };
    PaperMetrics {
        hosts,
        cores,
        vm_preemptions: counters.iter().map(|c| c.vm_preemptions).sum(),
        vm_preemptions_by_type: ByType::sum(
            &counters
                .iter()
                .map(|c| &c.vm_preemptions_by_type)
                .collect::<Vec<_>>(),
        ),
        vm_displacements: counters.iter().map(|c| c.vm_displacements).sum(),
        lease_preemptions: counters.iter().map(|c| c.lease_preemptions).sum(),
        lease_displacements: counters.iter().map(|c| c.lease_displacements).sum(),
        decisions: counters.iter().map(|c| c.decisions).sum(),
        inexact_decisions: counters.iter().map(|c| c.inexact_decisions).sum(),
        migration_fallbacks: counters.iter().map(|c| c.migration_fallbacks).sum(),
        overhead_s: overhead.as_secs_f64(),
        utilization_pct: pct(t.computation, cores as f64 * makespan.as_secs_f64()),
        useful_work_pct: if t.computation > 0.0 {
            100.0 * (1.0 - overhead.as_secs_f64() / t.computation).max(0.0)
        } else {
            0.0
        },
        local_rejection_pct: pct(t.local_rejected as f64, t.local_all as f64),
        external_rejection_pct: match cluster {
            None => pct(t.ext_rejected as f64, t.ext_all as f64),
            Some(_) => pct(refused as f64, offered as f64),
        },
        awrt_s: t.awrt(topo),
        be_makespan_s: ratio(t.be_sum, t.be_n as f64),
        mean_wait_s: ratio(t.wait_sum, t.wait_n as f64),
        external_waiting_s: ratio(t.ext_wait_sum, t.ext_wait_n as f64),
        migrations: t.migrations,
        deadline_misses: t.misses,
        migration_pct: pct(t.migrated as f64, t.migratable as f64),
        nonpreemptable_rejection_pct: pct(t.np_rejected as f64, t.np_all as f64),
        // (a·v + r)/(a + r) with v = violated/accepted is (violated + rejected)/(a + r).
        dvr_pct: pct(
            (t.dl_violated + t.dl_rejected) as f64,
            (t.dl_accepted + t.dl_rejected) as f64,
        ),
        completed_external_pct: pct(t.ext_completed as f64, t.ext_all as f64),
    }
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
    let clusters = topo
        .clusters
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (
                c.qualified_name(topo),
                paper_metrics(
                    topo,
                    records,
                    per_cluster,
                    Some(ClusterId(i as u16)),
                    makespan,
                ),
            )
        })
        .collect();
    Figures {
        requests: counts,
        makespan_s: makespan.as_secs_f64(),
        all: paper_metrics(topo, records, per_cluster, None, makespan),
        clusters,
    }
}
