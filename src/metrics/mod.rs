//! What a run observed: one record per request, counters, and the summary figures computed
//! from them (utilisation, makespan, outcome counts). Actors report observations here as a
//! side channel; it is not part of the emulated system and sends no messages.

use serde::Serialize;

use crate::model::{ClusterId, Origin, RequestId, RequestState};
use crate::time::{EmuDuration, EmuTime};
use crate::topology::Topology;

/// Everything observed about one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestRecord {
    /// The cluster that ran (or last held) it.
    pub cluster: Option<ClusterId>,
    /// When it started running (deployment began).
    pub start: Option<EmuTime>,
    /// When it reached its terminal state.
    pub end: Option<EmuTime>,
    /// Its terminal state; `None` while open.
    pub state: Option<RequestState>,
    /// How many times it was preempted.
    pub preemptions: u32,
    /// Time lost to preemption operations.
    pub overhead: EmuDuration,
}

/// The run's observations.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    records: Vec<RequestRecord>,
    terminal: usize,
    violations: Vec<String>,
}

impl Metrics {
    /// Observations for `n` requests.
    pub fn new(n: usize) -> Metrics {
        Metrics {
            records: vec![RequestRecord::default(); n],
            terminal: 0,
            violations: Vec::new(),
        }
    }

    /// The lease started on `cluster` at `t`.
    pub fn started(&mut self, id: RequestId, cluster: ClusterId, t: EmuTime) {
        let r = &mut self.records[id.0 as usize];
        r.cluster = Some(cluster);
        r.start.get_or_insert(t);
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

    /// Per-request records, with open requests marked unfinished.
    pub fn into_records(mut self) -> (Vec<RequestRecord>, Vec<String>) {
        for r in &mut self.records {
            r.state.get_or_insert(RequestState::Unfinished);
        }
        (self.records, self.violations)
    }
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

/// Figures computed from the records.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    /// Counts by origin and state.
    pub requests: RequestCounts,
    /// Busy core time over capacity × makespan, 0–1.
    pub utilization: f64,
    /// From the first arrival to the last terminal event, seconds.
    pub makespan_s: f64,
}

/// Computes the summary figures (paper 003 eq. 11 for utilisation: computation time over
/// the cluster capacity during the makespan).
pub fn figures(topo: &Topology, records: &[RequestRecord]) -> Figures {
    let mut counts = RequestCounts::default();
    let mut busy_core_us: f64 = 0.0;
    let first_arrival = topo.requests.iter().map(|r| r.arrival).min();
    let last_end = records.iter().filter_map(|r| r.end).max();
    for (req, rec) in topo.requests.iter().zip(records) {
        counts.total += 1;
        let state = rec.state.unwrap_or(RequestState::Unfinished);
        match req.origin {
            Origin::Local => counts.local.add(state),
            Origin::External => counts.external.add(state),
        }
        if state == RequestState::Completed {
            busy_core_us += req.cores() as f64 * req.duration.as_micros() as f64;
        }
    }
    let makespan = match (first_arrival, last_end) {
        (Some(a), Some(e)) => e.since(a),
        _ => EmuDuration::ZERO,
    };
    let capacity = topo.total_cores() as f64 * makespan.as_micros() as f64;
    Figures {
        requests: counts,
        utilization: if capacity > 0.0 {
            busy_core_us / capacity
        } else {
            0.0
        },
        makespan_s: makespan.as_secs_f64(),
    }
}
