//! Settings that are each valid alone but together make a run explode: a peering timeout
//! shorter than the round trip it waits for (refused: no answer could ever come in time), and
//! workloads offering a cluster or a Grid far more work than it can do (a warning: its queue
//! grows without bound over the span, and scheduling costs grow with the queue).

use super::{ClusterId, GridId, Topology};
use crate::fault::Delay;
use crate::input::diag::Loc;
use crate::input::node::{Node, NodeKind};
use crate::input::table::Table;
use crate::time::EmuDuration;

/// The place of the value at `path` below `root` (a `--set` override's, if one set it).
pub(super) fn place_of(root: &Node, path: &[&str]) -> Option<Loc> {
    let mut node = root;
    for key in path {
        let NodeKind::Table(entries) = &node.kind else {
            return None;
        };
        node = &entries.iter().find(|(k, _)| k.name == *key)?.1;
    }
    Some(node.loc.clone())
}

/// The shortest delay `delay` can give a message.
fn shortest(delay: &Delay) -> EmuDuration {
    match delay {
        Delay::Fixed(d) | Delay::Uniform(d, _) => *d,
        Delay::Exponential(_) => EmuDuration::ZERO,
    }
}

/// The shortest delays of a message from `a` to `b` and back (an IGG answers in no emulated
/// time, so their sum is the shortest round trip).
pub(super) fn shortest_delays(topo: &Topology, a: GridId, b: GridId) -> (EmuDuration, EmuDuration) {
    let faults = &topo.faults;
    let one_way = |from: GridId, to: GridId| {
        let link = (faults.links.iter())
            .find(|(f, t, _)| *f == from && *t == to)
            .map_or(&faults.global, |(_, _, l)| l);
        shortest(&link.delay)
    };
    (one_way(a, b), one_way(b, a))
}

/// Refuses a `peering.offer_timeout` shorter than the shortest round trip between two Grids
/// under contract: a redirection's or a report's acknowledgement could never come in time,
/// so every one would be resent (with back-off) until the answer to the first arrives.
pub(super) fn check_round_trips(topo: &Topology, top: &Table<'_>) {
    let timeout = topo.peering.offer_timeout;
    let mut pairs: Vec<(GridId, GridId)> = (topo.contract_pairs().into_iter())
        .map(|(a, b, _)| (a.min(b), a.max(b)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    let worst = (pairs.into_iter())
        .map(|(a, b)| {
            let (there, back) = shortest_delays(topo, a, b);
            (there + back, there, back, a, b)
        })
        .max();
    let Some((rtt, there, back, a, b)) = worst.filter(|w| timeout < w.0) else {
        return;
    };
    let at = place_of(top.node, &["peering", "offer_timeout"]).unwrap_or(top.node.loc.clone());
    let name = |g: GridId| super::shown(&topo.grids[usize::from(g.0)].name).into_owned();
    top.diags.error(
        &at,
        format!(
            "peering.offer_timeout = {timeout} is shorter than the round trip between Grids \
             `{}` and `{}`: the link delay ([fault] delay) is at least {there} from `{}` to \
             `{}` and {back} back, {rtt} in all, so no acknowledgement could come in time",
            name(a),
            name(b),
            name(a),
            name(b)
        ),
        Some(format!(
            "make peering.offer_timeout at least {rtt} (answering takes no emulated time), or \
             shorten the delays"
        )),
    );
}

/// Workloads with fewer requests than this are not judged by their load: a rate from so few
/// arrivals says little.
pub(super) const LOAD_MIN_REQUESTS: usize = 100;

/// Offered load (work offered over the capacity to do it) from which validation warns: the
/// queue then grows faster than the capacity works it off, for the whole span.
pub(super) const LOAD_WARNING: f64 = 2.0;

/// Requests left waiting at the end of the span (about n × (1 − 1/load)) from which an
/// overload is worth a warning: a scheduling pass walks the queue, so a run's cost grows with
/// its square; a few thousand waiting requests cost little.
pub(super) const BACKLOG_WARNING: f64 = 10_000.0;

/// A stream of work: reference core-seconds offered per second, how many requests, and
/// where it is written.
#[derive(Clone)]
struct Stream {
    rate: f64,
    requests: usize,
    at: Loc,
}

/// Streams feeding one cluster or Grid, added up.
#[derive(Default)]
struct Feed {
    rate: f64,
    requests: usize,
    /// The busiest stream's place.
    at: Option<(f64, Loc)>,
}

impl Feed {
    fn add(&mut self, s: &Stream) {
        self.rate += s.rate;
        self.requests += s.requests;
        if self.at.as_ref().is_none_or(|(r, _)| s.rate > *r) {
            self.at = Some((s.rate, s.at.clone()));
        }
    }
}

/// The work a workload offers per second of its arrival window, in core-seconds at the
/// reference speed; `None` for one with too few requests to tell.
fn offered(topo: &Topology, requests: &[crate::model::RequestId], at: &Loc) -> Option<Stream> {
    let n = requests.len();
    if n < LOAD_MIN_REQUESTS {
        return None;
    }
    let reqs = || requests.iter().map(|id| &topo.requests[id.0 as usize]);
    let first = reqs().map(|r| r.arrival).min()?;
    let last = reqs().map(|r| r.arrival).max()?;
    // The mean gap, n − 1 of them over the window, stretched over n arrivals; at least a
    // second (requests arriving all at once offer all their work at once).
    let window = (last.since(first).as_secs_f64() * n as f64 / (n - 1) as f64).max(1.0);
    let work: f64 = reqs().map(|r| r.units()).sum();
    Some(Stream {
        rate: work / window,
        requests: n,
        at: at.clone(),
    })
}

/// Reference core-seconds a cluster works off per second: its cores at its speed.
fn capacity(topo: &Topology, c: ClusterId) -> f64 {
    let s = topo.speed_of(c);
    topo.cluster(c).cores() as f64 * s.cluster_mips as f64 / s.reference_mips as f64
}

/// Warns where workloads offer a cluster (its local users) or a Grid (its external users
/// and its clusters' local users) more than [`LOAD_WARNING`] times the work it can do, so
/// that more than [`BACKLOG_WARNING`] requests would wait at the end. `places` gives each
/// workload's place, by index.
pub(super) fn check_offered_load(topo: &Topology, places: &[Loc], top: &Table<'_>) {
    let mut local: Vec<Feed> = (topo.clusters.iter()).map(|_| Feed::default()).collect();
    let mut external: Vec<Feed> = (topo.grids.iter()).map(|_| Feed::default()).collect();
    for (w, at) in topo.workloads.iter().zip(places) {
        let Some(stream) = offered(topo, &w.requests, at) else {
            continue;
        };
        match w.cluster {
            Some(c) => local[usize::from(c.0)].add(&stream),
            None => external[usize::from(w.grid.0)].add(&stream),
        }
    }
    for (c, feed) in local.iter().enumerate() {
        let cid = ClusterId(c as u16);
        let what = format!("cluster `{}`", topo.cluster(cid).qualified_name(topo));
        warn_load(top, feed, capacity(topo, cid), &what);
    }
    for (g, own) in external.iter().enumerate() {
        let grid = &topo.grids[g];
        let Some((_, at)) = &own.at else { continue };
        // The Grid's clusters also serve their local users.
        let mut feed = Feed {
            at: Some((own.rate, at.clone())),
            ..Feed::default()
        };
        feed.rate = own.rate;
        feed.requests = own.requests;
        for c in &grid.clusters {
            feed.rate += local[usize::from(c.0)].rate;
            feed.requests += local[usize::from(c.0)].requests;
        }
        let cap: f64 = grid.clusters.iter().map(|&c| capacity(topo, c)).sum();
        let mut what = format!("Grid `{}`", super::shown(&grid.name));
        if topo.peers(GridId(g as u16)) {
            what.push_str(" (before its peers take any)");
        }
        warn_load(top, &feed, cap, &what);
    }
}

/// The warning for `feed` offered to `what` of capacity `cap`, if it deserves one.
fn warn_load(top: &Table<'_>, feed: &Feed, cap: f64, what: &str) {
    let load = feed.rate / cap;
    let backlog = feed.requests as f64 * (1.0 - 1.0 / load);
    let Some((_, at)) = &feed.at else { return };
    if load <= LOAD_WARNING || backlog <= BACKLOG_WARNING {
        return;
    }
    top.diags.warn(
        at,
        format!(
            "offered load is {load:.1}× the capacity of {what} (work offered per second over \
             what its cores do per second): its queue grows without bound over the workload's \
             span, to about {backlog:.0} waiting requests, and each scheduling pass with it"
        ),
        Some(
            "lower the arrival rate or the run times, or add hosts; to bound the scheduler's \
             work per pass on a long queue, set lrms.backfill_depth (as Slurm's \
             bf_max_job_test)"
                .into(),
        ),
    );
}
