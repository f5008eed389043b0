//! `intervals.csv` read a row at a time, each row checked: times within emulated time, no
//! span ending before it starts, names igemu writes, and a cluster and host of the run's
//! `summary.json`. Nothing is kept per row here: a first pass counts ([`census`]), and the
//! Gantt section keeps or merges what it draws in a second ([`each_row`]).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use serde::Deserialize;

use super::read::{check_time, one_of, Rows};
use super::summary::Summary;
use super::svg::LEASE_TYPES;
use crate::model::VmState;
use crate::Error;

/// The states of `intervals.csv`, as igemu names them; a row's state is an index here.
pub(super) const VM_STATES: [VmState; 10] = VmState::ALL;

/// The name of state `i` of [`VM_STATES`].
pub(super) fn state_name(i: u8) -> &'static str {
    VM_STATES[usize::from(i)].as_str()
}

/// A row of `intervals.csv` as read, borrowing the row's text (nothing allocated per row).
#[derive(Deserialize)]
struct IntervalRow<'a> {
    request_id: &'a str,
    vm: u32,
    grid: &'a str,
    cluster: &'a str,
    host: u32,
    lease_type: &'a str,
    state: &'a str,
    start_s: f64,
    end_s: f64,
}

/// A row of `intervals.csv`, checked.
pub(super) struct Row<'a> {
    /// The lease.
    pub request: &'a str,
    /// The VM within it.
    pub vm: u32,
    /// The cluster's index in [`Summary::clusters`].
    pub cluster: usize,
    /// The host's index in the cluster (below its host count).
    pub host: u32,
    /// The lease type's index in [`LEASE_TYPES`].
    pub lease: u8,
    /// The state's index in [`VM_STATES`].
    pub state: u8,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds (≥ start).
    pub end: f64,
}

/// The clusters of `summary.json` by grid and name: each one's index and host count.
pub(super) struct ClusterIndex(BTreeMap<String, BTreeMap<String, (usize, u64)>>);

impl ClusterIndex {
    /// The index of `summary`'s clusters.
    pub(super) fn new(summary: &Summary) -> ClusterIndex {
        let mut index: BTreeMap<String, BTreeMap<String, (usize, u64)>> = BTreeMap::new();
        for (i, ((grid, cluster), hosts)) in summary.clusters.iter().enumerate() {
            index
                .entry(grid.clone())
                .or_default()
                .insert(cluster.clone(), (i, *hosts));
        }
        ClusterIndex(index)
    }

    /// Cluster `grid/cluster`'s index and host count, or an error at the row last read.
    pub(super) fn find(
        &self,
        rows: &Rows,
        grid: &str,
        cluster: &str,
    ) -> Result<(usize, u64), Error> {
        let found = self.0.get(grid).and_then(|g| g.get(cluster)).copied();
        found.ok_or_else(|| {
            rows.at_line(&format!(
                "error: cluster `{}/{}` is not one of summary.json's `clusters`; the two files are not of one run",
                super::read::text_shown(grid),
                super::read::text_shown(cluster)
            ))
        })
    }
}

/// Reads every row of the `intervals.csv` at `path`, checked, into `visit`.
pub(super) fn each_row(
    path: &Path,
    clusters: &ClusterIndex,
    mut visit: impl FnMut(Row) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut rows = Rows::open(path)?;
    let mut record = csv::StringRecord::new();
    let states = VM_STATES.map(VmState::as_str);
    while rows.next(&mut record)? {
        let r: IntervalRow = rows.parse(&record)?;
        check_time(path, rows.line, "start_s", r.start_s)?;
        check_time(path, rows.line, "end_s", r.end_s)?;
        if r.end_s < r.start_s {
            return Err(rows.at_line(&format!(
                "error: the span ends (end_s {}) before it starts (start_s {}); not a span igemu writes",
                r.end_s, r.start_s
            )));
        }
        let (cluster, hosts) = clusters.find(&rows, r.grid, r.cluster)?;
        if u64::from(r.host) >= hosts {
            return Err(rows.at_line(&format!(
                "error: host {} of {}/{}, which has {hosts} hosts in summary.json (numbered from 0); the two files are not of one run",
                r.host, r.grid, r.cluster
            )));
        }
        visit(Row {
            request: r.request_id,
            vm: r.vm,
            cluster,
            host: r.host,
            lease: one_of(&rows, "lease_type", r.lease_type, &LEASE_TYPES)?,
            state: one_of(&rows, "state", r.state, &states)?,
            start: r.start_s,
            end: r.end_s,
        })?;
    }
    Ok(())
}

/// Clusters whose hosts the census tracks (the Gantt charts a page draws at most).
pub(super) const MAX_GANTT_CHARTS: usize = 200;

/// What a first pass over `intervals.csv` finds.
pub(super) struct Census {
    /// Clusters in the order they first appear.
    pub order: Vec<usize>,
    /// Spans per cluster (indexed like [`Summary::clusters`]).
    pub spans: Vec<u64>,
    /// For the first [`MAX_GANTT_CHARTS`] clusters to appear, which hosts held a VM (a bit
    /// per host); empty for the others.
    pub busy: Vec<Vec<u64>>,
    /// The latest end.
    pub end: f64,
}

impl Census {
    /// Whether host `host` of cluster `c` held a VM (tracked clusters only).
    pub(super) fn held(&self, c: usize, host: u32) -> bool {
        let i = host as usize;
        self.busy[c]
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// The hosts of cluster `c` that held a VM, in order (tracked clusters only).
    pub(super) fn busy_hosts(&self, c: usize) -> impl Iterator<Item = u32> + '_ {
        (self.busy[c].iter().enumerate()).flat_map(|(w, bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| (w * 64 + b) as u32)
        })
    }
}

/// Counts the spans of the `intervals.csv` at `path` per cluster, and the hosts that held a
/// VM of the first clusters to appear; memory grows with the run's clusters and hosts, not
/// with its spans.
pub(super) fn census(
    path: &Path,
    summary: &Summary,
    index: &ClusterIndex,
) -> Result<Census, Error> {
    let n = summary.clusters.len();
    let mut census = Census {
        order: Vec::new(),
        spans: vec![0; n],
        busy: vec![Vec::new(); n],
        end: 0.0,
    };
    each_row(path, index, |r| {
        if census.spans[r.cluster] == 0 {
            census.order.push(r.cluster);
            if census.order.len() <= MAX_GANTT_CHARTS {
                let hosts = summary.clusters[r.cluster].1 as usize;
                census.busy[r.cluster] = vec![0; hosts.div_ceil(64)];
            }
        }
        census.spans[r.cluster] += 1;
        let host = r.host as usize;
        if let Some(word) = census.busy[r.cluster].get_mut(host / 64) {
            *word |= 1 << (host % 64);
        }
        census.end = census.end.max(r.end);
        Ok(())
    })?;
    Ok(census)
}

/// A row of `intervals.csv` as an exact Gantt chart keeps it, its cluster aside: the lease's
/// name shared (a lease's VMs share its id), so a row takes 48 bytes.
pub(super) struct Span {
    /// The lease.
    pub request: Rc<str>,
    /// The VM within it.
    pub vm: u32,
    /// Its host.
    pub host: u32,
    /// Its lease type's index in [`LEASE_TYPES`].
    pub lease: u8,
    /// Its state's index in [`VM_STATES`].
    pub state: u8,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
}

impl Span {
    /// The state's name.
    pub(super) fn state(&self) -> &'static str {
        state_name(self.state)
    }
}

/// One copy of each text seen: a row's names as shared strings.
#[derive(Default)]
pub(super) struct Interner(HashSet<Rc<str>>);

impl Interner {
    /// `text`'s shared copy, made at its first use.
    pub(super) fn get(&mut self, text: &str) -> Rc<str> {
        if let Some(known) = self.0.get(text) {
            return Rc::clone(known);
        }
        let new: Rc<str> = Rc::from(text);
        self.0.insert(Rc::clone(&new));
        new
    }

    /// `text`'s shared copy if it was seen.
    pub(super) fn find(&self, text: &str) -> Option<Rc<str>> {
        self.0.get(text).cloned()
    }

    /// Whether nothing was seen.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
