//! The lease log (`leases.csv`): one row per event in each lease's life, with its time, its
//! place (Grid, cluster, hosts) and its cause, in the vocabulary of Haizea's lease states —
//! what a reader would otherwise piece together from `trace.jsonl`, `intervals.csv` and
//! `decisions.csv`.
//!
//! The LRMS and IGG actors report events as they happen ([`super::Metrics`]'s `lease_*`
//! methods, recorded only when asked, [`super::Metrics::record_lease_events`]);
//! [`lease_rows`] turns them, with the requests' arrivals and records, into the file's rows
//! (pure: unit-tested here).

use crate::lrms::{Decision, Operation};
use crate::model::{ClusterId, GridId, Origin, RejectReason, RequestId, RequestState};
use crate::time::EmuTime;
use crate::topology::Topology;

use super::observe::RequestRecord;

/// What happened to a lease: `leases.csv`'s `event`, with the Haizea lease state it enters
/// (docs/outputs.md has the table).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LeaseEventKind {
    /// Submitted (Haizea: New → Pending).
    Requested,
    /// Its Grid's IGG redirected it to a peer Grid, which took it (no Haizea state: InterGrid).
    Redirected,
    /// A cluster's LRMS took it in (Haizea: Pending).
    Accepted,
    /// Given a reservation: hosts and a planned start (Haizea: Scheduled, or
    /// Suspended-Scheduled after a preemption).
    Scheduled,
    /// Waiting without a reservation (Haizea: Queued).
    Queued,
    /// Its VMs deployed for the first time (Haizea: Active).
    Started,
    /// Its reservation taken away for a local request before it started (Haizea: a
    /// Scheduled lease preempted is sent back to Pending).
    Displaced,
    /// Its running VMs stopped, or paused and suspended, for a local request (Haizea:
    /// Suspending, or Cancelled).
    Preempted,
    /// Its VMs deployed again after a suspension or a migration (Haizea: Resuming → Active).
    Resumed,
    /// Moved to another cluster of its Grid (Haizea: Migrating).
    Migrated,
    /// Ran its full duration (Haizea: Done).
    Completed,
    /// Ended by a preemption that stopped it (Haizea: Cancelled).
    Cancelled,
    /// Refused (Haizea: Rejected).
    Rejected,
}

impl LeaseEventKind {
    /// Every event, in the order of a lease's life.
    pub const ALL: [LeaseEventKind; 13] = [
        LeaseEventKind::Requested,
        LeaseEventKind::Redirected,
        LeaseEventKind::Accepted,
        LeaseEventKind::Scheduled,
        LeaseEventKind::Queued,
        LeaseEventKind::Started,
        LeaseEventKind::Displaced,
        LeaseEventKind::Preempted,
        LeaseEventKind::Resumed,
        LeaseEventKind::Migrated,
        LeaseEventKind::Completed,
        LeaseEventKind::Cancelled,
        LeaseEventKind::Rejected,
    ];

    /// The name `leases.csv` writes.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseEventKind::Requested => "requested",
            LeaseEventKind::Redirected => "redirected",
            LeaseEventKind::Accepted => "accepted",
            LeaseEventKind::Scheduled => "scheduled",
            LeaseEventKind::Queued => "queued",
            LeaseEventKind::Started => "started",
            LeaseEventKind::Displaced => "displaced",
            LeaseEventKind::Preempted => "preempted",
            LeaseEventKind::Resumed => "resumed",
            LeaseEventKind::Migrated => "migrated",
            LeaseEventKind::Completed => "completed",
            LeaseEventKind::Cancelled => "cancelled",
            LeaseEventKind::Rejected => "rejected",
        }
    }
}

/// Why an event happened: `leases.csv`'s `cause`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The local request a preemption or displacement made room for.
    Request(RequestId),
    /// The peer Grid a request was redirected to.
    Grid(GridId),
    /// The cluster a migrated lease left.
    Cluster(ClusterId),
    /// Why it was rejected.
    Reason(RejectReason),
}

/// One event as observed (a row of `leases.csv` before [`lease_rows`] completes it).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct LeaseEvent {
    /// When it happened (for a preemption: when it was decided; `planned` says when its VMs
    /// are vacated).
    pub at: EmuTime,
    /// The lease.
    pub lease: RequestId,
    /// What happened.
    pub kind: LeaseEventKind,
    /// The Grid where it happened, when the observer knows it.
    pub grid: Option<GridId>,
    /// The cluster where it happened.
    pub cluster: Option<ClusterId>,
    /// Its hosts in [`LeaseLog`]'s list: (offset, count).
    hosts: (u32, u32),
    /// VMs involved (started, resumed, reserved, preempted).
    pub vms: Option<u32>,
    /// Why.
    pub cause: Option<Cause>,
    /// For a preemption: what was done to it (`stop`, `suspend`, `migrate`).
    pub operation: Option<Operation>,
    /// A time planned: a reservation's start; when a preempted lease's first VM is paused
    /// or stopped.
    pub planned: Option<EmuTime>,
}

/// Where an event happened and what it involved: [`LeaseLog::push`]'s details.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct At {
    /// The Grid.
    pub grid: Option<GridId>,
    /// The cluster.
    pub cluster: Option<ClusterId>,
    /// The hosts (host indices in the cluster; any order, repeats allowed).
    pub hosts: Vec<u16>,
    /// VMs involved.
    pub vms: Option<u32>,
    /// Why.
    pub cause: Option<Cause>,
    /// A planned time.
    pub planned: Option<EmuTime>,
}

/// The events observed, in the order observed (times never decrease), with their hosts kept
/// in one list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeaseLog {
    events: Vec<LeaseEvent>,
    hosts: Vec<u16>,
}

impl LeaseLog {
    /// Records `kind` of `lease` at `at`, `detail` saying where and why.
    pub fn push(&mut self, at: EmuTime, lease: RequestId, kind: LeaseEventKind, detail: At) {
        let mut hosts = detail.hosts;
        hosts.sort_unstable();
        hosts.dedup();
        let offset = u32::try_from(self.hosts.len()).unwrap_or(u32::MAX);
        self.hosts.extend_from_slice(&hosts);
        self.events.push(LeaseEvent {
            at,
            lease,
            kind,
            grid: detail.grid,
            cluster: detail.cluster,
            hosts: (offset, hosts.len() as u32),
            vms: detail.vms,
            cause: detail.cause,
            operation: None,
            planned: detail.planned,
        });
    }

    /// Makes room for `events` more events (a failure to leaves growing as it would have).
    pub fn reserve(&mut self, events: usize) {
        let _ = self.events.try_reserve_exact(events);
    }

    /// The events, in the order observed.
    pub fn events(&self) -> &[LeaseEvent] {
        &self.events
    }

    /// The hosts of `e` (one of this log's events), in increasing order.
    pub fn hosts(&self, e: &LeaseEvent) -> &[u16] {
        let (at, n) = (e.hosts.0 as usize, e.hosts.1 as usize);
        self.hosts.get(at..at + n).unwrap_or_default()
    }

    /// Names the cause and operation of the preemptions and displacements `cluster` just
    /// recorded at `at` for the decision `d` (they are recorded as its leases are vacated,
    /// the decision after them).
    pub fn decided(&mut self, cluster: ClusterId, at: EmuTime, d: &Decision) {
        for e in self.events.iter_mut().rev() {
            if e.at != at {
                break;
            }
            let vacated = matches!(
                e.kind,
                LeaseEventKind::Preempted | LeaseEventKind::Displaced
            );
            if !vacated || e.cluster != Some(cluster) || e.cause.is_some() {
                continue;
            }
            if let Some((_, op)) = d.set.iter().find(|(id, _)| *id == e.lease) {
                e.cause = Some(Cause::Request(d.local));
                e.operation = (e.kind == LeaseEventKind::Preempted).then_some(*op);
            }
        }
    }

    /// Takes in another shard's log: the events of both in time order (each shard's own
    /// order kept among equal times, this one's first).
    pub fn merge(&mut self, other: LeaseLog) {
        let base = u32::try_from(self.hosts.len()).unwrap_or(u32::MAX);
        self.hosts.extend(other.hosts);
        self.events.extend(other.events.into_iter().map(|mut e| {
            e.hosts.0 = e.hosts.0.saturating_add(base);
            e
        }));
        self.events.sort_by_key(|e| e.at);
    }
}

/// One row of `leases.csv`, complete.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseRow<'a> {
    /// When.
    pub at: EmuTime,
    /// The lease.
    pub lease: RequestId,
    /// What happened.
    pub kind: LeaseEventKind,
    /// The Grid where it happened.
    pub grid: GridId,
    /// The cluster where it happened, if one.
    pub cluster: Option<ClusterId>,
    /// Hosts involved, in increasing order.
    pub hosts: &'a [u16],
    /// VMs involved.
    pub vms: Option<u32>,
    /// Why.
    pub cause: Option<Cause>,
    /// For a preemption: what was done.
    pub operation: Option<Operation>,
    /// A planned time.
    pub planned: Option<EmuTime>,
}

/// What [`lease_rows`] remembers of each lease while it goes.
#[derive(Clone, Copy, Default)]
struct Seen<'a> {
    /// Where it was last (a redirection: the peer).
    grid: Option<GridId>,
    cluster: Option<ClusterId>,
    /// The hosts it last started or resumed on.
    hosts: &'a [u16],
    vms: Option<u32>,
    /// The local request its last preemption was for.
    preempted_for: Option<Cause>,
}

/// The rows of `leases.csv`, one at a time: a `requested` row per request at its arrival, then
/// what `log` observed, in time order (arrivals first among equal times). Rows are completed
/// from what came before them: a row's Grid from its cluster (else the Grid the lease was last
/// in, else the one it was submitted in), a local request's rejection at its cluster, an end's
/// hosts and VMs from the lease's last start, a cancellation's cause from the preemption that
/// stopped it, a rejection's cause from `records`' reason.
pub fn lease_rows<'a>(
    topo: &'a Topology,
    records: &'a [RequestRecord],
    log: &'a LeaseLog,
) -> LeaseRows<'a> {
    let mut arrivals: Vec<u32> = (0..topo.requests.len() as u32).collect();
    arrivals.sort_by_key(|&i| (topo.requests[i as usize].arrival, i));
    LeaseRows {
        topo,
        records,
        log,
        arrivals: arrivals.into_iter().peekable(),
        events: log.events.iter().peekable(),
        seen: vec![Seen::default(); topo.requests.len()],
    }
}

/// The rows of `leases.csv` as [`lease_rows`] makes them.
pub struct LeaseRows<'a> {
    topo: &'a Topology,
    records: &'a [RequestRecord],
    log: &'a LeaseLog,
    /// Requests by arrival.
    arrivals: std::iter::Peekable<std::vec::IntoIter<u32>>,
    events: std::iter::Peekable<std::slice::Iter<'a, LeaseEvent>>,
    /// What each lease's rows so far said.
    seen: Vec<Seen<'a>>,
}

impl<'a> Iterator for LeaseRows<'a> {
    type Item = LeaseRow<'a>;

    fn next(&mut self) -> Option<LeaseRow<'a>> {
        let topo = self.topo;
        loop {
            let arrival_first = match (self.arrivals.peek(), self.events.peek()) {
                (Some(&i), Some(e)) => topo.requests[i as usize].arrival <= e.at,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => return None,
            };
            if arrival_first {
                let q = &topo.requests[self.arrivals.next()? as usize];
                return Some(LeaseRow {
                    at: q.arrival,
                    lease: q.id,
                    kind: LeaseEventKind::Requested,
                    grid: q.grid,
                    cluster: q.cluster.filter(|_| q.origin == Origin::Local),
                    hosts: &[],
                    vms: Some(q.vms),
                    cause: None,
                    operation: None,
                    planned: None,
                });
            }
            let e = self.events.next()?;
            if let Some(row) = self.complete(e) {
                return Some(row);
            }
        }
    }
}

impl<'a> LeaseRows<'a> {
    /// The row of event `e`, completed from the lease's rows before it (`None` for a lease
    /// the topology does not have).
    fn complete(&mut self, e: &'a LeaseEvent) -> Option<LeaseRow<'a>> {
        let i = e.lease.0 as usize;
        let (q, s) = (self.topo.requests.get(i)?, self.seen.get_mut(i)?);
        let mut row = LeaseRow {
            at: e.at,
            lease: e.lease,
            kind: e.kind,
            grid: q.grid,
            cluster: e.cluster,
            hosts: self.log.hosts(e),
            vms: e.vms,
            cause: e.cause,
            operation: e.operation,
            planned: e.planned,
        };
        let ends = matches!(
            e.kind,
            LeaseEventKind::Completed | LeaseEventKind::Cancelled
        );
        match e.kind {
            LeaseEventKind::Redirected => {
                // Where it goes from here: the peer.
                if let Some(Cause::Grid(g)) = e.cause {
                    s.grid = Some(g);
                }
            }
            LeaseEventKind::Started | LeaseEventKind::Resumed => {
                (s.hosts, s.vms) = (row.hosts, row.vms);
            }
            LeaseEventKind::Preempted => s.preempted_for = e.cause,
            LeaseEventKind::Completed | LeaseEventKind::Cancelled => {
                if row.hosts.is_empty() {
                    row.hosts = s.hosts;
                }
                row.vms = row.vms.or(s.vms);
                if e.kind == LeaseEventKind::Cancelled {
                    row.cause = row.cause.or(s.preempted_for);
                }
            }
            LeaseEventKind::Rejected => {
                if q.origin == Origin::Local {
                    row.cluster = row.cluster.or(q.cluster);
                }
                let reason = self.records.get(i).and_then(|r| r.reason);
                row.cause = row.cause.or(reason.map(Cause::Reason));
            }
            _ => {}
        }
        row.cluster = row.cluster.or(s.cluster.filter(|_| ends));
        row.grid = match (e.grid, row.cluster) {
            (Some(g), _) => g,
            (None, Some(c)) => self.topo.cluster(c).grid,
            (None, None) => s.grid.unwrap_or(q.grid),
        };
        if e.kind != LeaseEventKind::Redirected {
            s.grid = Some(row.grid);
        }
        if let Some(c) = row.cluster {
            s.cluster = Some(c);
        }
        Some(row)
    }
}

/// Whether `state` ends a lease in the log ([`LeaseEventKind::Completed`], cancelled,
/// rejected), and which event it is.
pub(super) fn end_event(state: RequestState) -> Option<LeaseEventKind> {
    match state {
        RequestState::Completed => Some(LeaseEventKind::Completed),
        RequestState::Cancelled => Some(LeaseEventKind::Cancelled),
        RequestState::Rejected => Some(LeaseEventKind::Rejected),
        RequestState::Unfinished => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lrms::Decision;
    use crate::time::EmuDuration;
    use crate::topology::{load_str, Overrides};

    /// Two Grids of one cluster each; request `x` external to `a`, `l` local to `a1`, `y`
    /// external to `a`.
    fn topo() -> Topology {
        let text = r#"
[[grid]]
name = "a"
[[grid.cluster]]
name = "a1"
hosts = { count = 2, cores = 4, memory_mb = 4096 }
[[grid]]
name = "b"
[[grid.cluster]]
name = "b1"
hosts = { count = 2, cores = 4, memory_mb = 4096 }
[[workload]]
name = "ext"
origin = "external"
grid = "a"
[[workload.request]]
id = "x"
arrival = 10
vms = 2
mem_mb = 64
duration = 100
type = "cancellable"
[[workload.request]]
id = "y"
arrival = 30
vms = 1
mem_mb = 64
duration = 100
[[workload]]
name = "loc"
origin = "local"
grid = "a"
cluster = "a1"
[[workload.request]]
id = "l"
arrival = 20
vms = 4
mem_mb = 64
duration = 50
"#;
        load_str(text, "t.toml", "t", None, &Overrides::default()).expect("a topology")
    }

    fn t(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    fn id(topo: &Topology, label: &str) -> RequestId {
        RequestId(
            topo.request_labels
                .iter()
                .position(|l| l == label)
                .expect("a label") as u32,
        )
    }

    fn at(cluster: Option<u16>, hosts: &[u16], vms: Option<u32>) -> At {
        At {
            grid: None,
            cluster: cluster.map(ClusterId),
            hosts: hosts.to_vec(),
            vms,
            cause: None,
            planned: None,
        }
    }

    #[test]
    fn rows_put_arrivals_first_and_complete_each_event_from_the_ones_before() {
        let topo = topo();
        let (x, l, y) = (id(&topo, "x"), id(&topo, "l"), id(&topo, "y"));
        let mut log = LeaseLog::default();
        log.push(
            t(10),
            x,
            LeaseEventKind::Accepted,
            at(Some(0), &[], Some(2)),
        );
        log.push(
            t(10),
            x,
            LeaseEventKind::Started,
            at(Some(0), &[1, 0, 1], Some(2)),
        );
        // The local request preempts x (stop), decided at 20, its VMs stopped at 25.
        log.push(
            t(20),
            l,
            LeaseEventKind::Accepted,
            at(Some(0), &[], Some(4)),
        );
        let mut vacated = at(Some(0), &[0, 1], Some(2));
        vacated.planned = Some(t(25));
        log.push(t(20), x, LeaseEventKind::Preempted, vacated);
        let decision = Decision {
            local: l,
            window: (t(25), t(75)),
            set: vec![(x, Operation::Stop)],
            cost: EmuDuration::ZERO,
            reschedule: EmuDuration::ZERO,
            vacated_by: t(25),
            local_start: t(25),
            exact: true,
        };
        log.decided(ClusterId(0), t(20), &decision);
        log.push(t(26), x, LeaseEventKind::Cancelled, at(Some(0), &[], None));
        // y is redirected to b, whose IGG then rejects it.
        let mut redirect = at(None, &[], None);
        redirect.grid = Some(GridId(0));
        redirect.cause = Some(Cause::Grid(GridId(1)));
        log.push(t(30), y, LeaseEventKind::Redirected, redirect);
        log.push(t(31), y, LeaseEventKind::Rejected, at(None, &[], None));
        let mut records = vec![RequestRecord::default(); 3];
        records[y.0 as usize].reason = Some(RejectReason::PeersDeclined);
        let rows: Vec<LeaseRow> = lease_rows(&topo, &records, &log).collect();
        type Shown<'a> = (u64, &'a str, &'a str, u16, Option<u16>, Vec<u16>);
        let shown: Vec<Shown> = (rows.iter())
            .map(|r| {
                (
                    r.at.as_micros() / 1_000_000,
                    topo.label(r.lease),
                    r.kind.as_str(),
                    r.grid.0,
                    r.cluster.map(|c| c.0),
                    r.hosts.to_vec(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                (10, "x", "requested", 0, None, vec![]),
                (10, "x", "accepted", 0, Some(0), vec![]),
                (10, "x", "started", 0, Some(0), vec![0, 1]),
                (20, "l", "requested", 0, Some(0), vec![]),
                (20, "l", "accepted", 0, Some(0), vec![]),
                (20, "x", "preempted", 0, Some(0), vec![0, 1]),
                (26, "x", "cancelled", 0, Some(0), vec![0, 1]),
                (30, "y", "requested", 0, None, vec![]),
                (30, "y", "redirected", 0, None, vec![]),
                (31, "y", "rejected", 1, None, vec![]),
            ]
        );
        let by = |k: LeaseEventKind| rows.iter().find(|r| r.kind == k).expect("a row");
        let preempted = by(LeaseEventKind::Preempted);
        assert_eq!(preempted.cause, Some(Cause::Request(l)));
        assert_eq!(preempted.operation, Some(Operation::Stop));
        assert_eq!(preempted.planned, Some(t(25)));
        let cancelled = by(LeaseEventKind::Cancelled);
        assert_eq!(
            (cancelled.cause, cancelled.vms),
            (Some(Cause::Request(l)), Some(2))
        );
        assert_eq!(
            by(LeaseEventKind::Redirected).cause,
            Some(Cause::Grid(GridId(1)))
        );
        let rejected = by(LeaseEventKind::Rejected);
        assert_eq!(
            rejected.cause,
            Some(Cause::Reason(RejectReason::PeersDeclined))
        );
    }

    #[test]
    fn a_local_request_rejected_is_rejected_at_its_cluster() {
        let topo = topo();
        let l = id(&topo, "l");
        let mut log = LeaseLog::default();
        log.push(t(20), l, LeaseEventKind::Rejected, at(None, &[], None));
        let mut records = vec![RequestRecord::default(); 3];
        records[l.0 as usize].reason = Some(RejectReason::NoRoom);
        let rows: Vec<LeaseRow> = lease_rows(&topo, &records, &log).collect();
        let rejected = rows
            .iter()
            .find(|r| r.lease == l && r.kind == LeaseEventKind::Rejected);
        let rejected = rejected.expect("a rejection");
        assert_eq!(
            (rejected.grid, rejected.cluster),
            (GridId(0), Some(ClusterId(0)))
        );
        assert_eq!(rejected.cause, Some(Cause::Reason(RejectReason::NoRoom)));
        // Every request has its requested row, in arrival order.
        let requested: Vec<&str> = (rows.iter())
            .filter(|r| r.kind == LeaseEventKind::Requested)
            .map(|r| topo.label(r.lease))
            .collect();
        assert_eq!(requested, vec!["x", "l", "y"]);
    }

    /// A decision names the cause of the preemptions recorded for it at its time on its
    /// cluster only; shards' logs merge in time order with their hosts.
    #[test]
    fn decisions_name_their_own_preemptions_and_logs_merge_in_time_order() {
        let (a, b, c) = (RequestId(0), RequestId(1), RequestId(2));
        let mut one = LeaseLog::default();
        one.push(
            t(5),
            a,
            LeaseEventKind::Preempted,
            at(Some(0), &[3], Some(1)),
        );
        one.push(
            t(5),
            b,
            LeaseEventKind::Preempted,
            at(Some(1), &[4], Some(1)),
        );
        one.push(
            t(5),
            c,
            LeaseEventKind::Displaced,
            at(Some(0), &[], Some(1)),
        );
        let d = Decision {
            local: RequestId(9),
            window: (t(5), t(6)),
            set: vec![(a, Operation::Suspend), (c, Operation::Displace)],
            cost: EmuDuration::ZERO,
            reschedule: EmuDuration::ZERO,
            vacated_by: t(5),
            local_start: t(5),
            exact: true,
        };
        one.decided(ClusterId(0), t(5), &d);
        let e = one.events();
        assert_eq!(
            (e[0].cause, e[0].operation),
            (Some(Cause::Request(RequestId(9))), Some(Operation::Suspend))
        );
        assert_eq!(
            (e[1].cause, e[1].operation),
            (None, None),
            "another cluster's"
        );
        assert_eq!(
            (e[2].cause, e[2].operation),
            (Some(Cause::Request(RequestId(9))), None)
        );
        let mut other = LeaseLog::default();
        other.push(
            t(1),
            c,
            LeaseEventKind::Started,
            at(Some(2), &[7, 6], Some(2)),
        );
        other.push(t(9), c, LeaseEventKind::Resumed, at(Some(2), &[8], Some(2)));
        one.merge(other);
        let times: Vec<u64> = one
            .events()
            .iter()
            .map(|e| e.at.as_micros() / 1_000_000)
            .collect();
        assert_eq!(times, vec![1, 5, 5, 5, 9]);
        let hosts: Vec<&[u16]> = one.events().iter().map(|e| one.hosts(e)).collect();
        assert_eq!(hosts, vec![&[6, 7][..], &[3], &[4], &[], &[8]]);
    }
}
