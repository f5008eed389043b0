//! The Gantt section of a run's page: a chart per cluster from `intervals.csv`, read in two
//! passes ([`super::spans`]). A cluster is drawn span by span while the spans kept for such
//! charts stay under [`MAX_EXACT_SPANS`] in all and its chart under [`MAX_GANTT_BARS`] bars
//! (and the room left on the page); past that it is drawn merged per pixel
//! ([`svg::merged_gantt`]), built as the rows are read, and the page says so.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::rc::Rc;

use super::html::{left_out_note, push_chart, room};
use super::requests::{self, Requests};
use super::spans::{self, Census, ClusterIndex, Interner, Span, MAX_GANTT_CHARTS};
use super::summary::Summary;
use super::svg::{self, escape, HostRaster, HostSpan, LEASE_COLOURS, LEASE_TYPES};
use super::Window;
use crate::Error;

/// Host rows an exact Gantt chart draws at most: hosts that held a VM (the first by number),
/// then idle ones. A row costs up to a bar per pixel column and lane, so a cluster of 60 000
/// busy hosts, every one drawn, made a page of 1.4 GB.
pub(super) const MAX_HOST_ROWS: usize = 2_000;

/// Spans kept in memory for the charts drawn span by span, in all: about 48 bytes each while
/// read and 150 more while drawn, so this bounds the section's memory near 400 MB. The
/// shipped paper 002 run has 1.64 M.
pub(super) const MAX_EXACT_SPANS: u64 = 2_000_000;

/// Bars (and marks) a Gantt chart draws at most: about 10 MB of page.
pub(super) const MAX_GANTT_BARS: usize = 60_000;

/// Cells of the merged charts in all (48 bytes each).
const MAX_RASTER_CELLS: usize = 1_000_000;

/// Bytes a bar takes on the page, about: its rectangle and tooltip.
const BAR_BYTES: usize = 170;

/// How a cluster is drawn: its spans kept (index into [`Kept::spans`]), merged per pixel
/// as read (index into [`Kept::rasters`]), or not at all.
#[derive(Copy, Clone)]
enum Plan {
    Exact(usize),
    Merged(usize),
    Skip,
}

/// What the second pass keeps.
struct Kept {
    spans: Vec<Vec<Span>>,
    rasters: Vec<HostRaster>,
    names: Interner,
}

/// Appends the Hosts section of the run whose outputs are in `dir`.
pub(super) fn section(
    body: &mut String,
    dir: &Path,
    summary: &Summary,
    requests: Option<&Requests>,
    window: Option<Window>,
) -> Result<(), Error> {
    body.push_str("<h2 id=\"hosts\">Hosts</h2>");
    let path = dir.join("intervals.csv");
    if !path.exists() {
        body.push_str("<p class=\"note\">No intervals.csv in this directory (written by <code>igemu run</code>).</p>");
        return Ok(());
    }
    let index = ClusterIndex::new(summary);
    let census = spans::census(&path, summary, &index)?;
    let scale = Window::scale(window, summary.end.max(census.end));
    let (charts, not_charted) = chart_order(&census, summary);
    let plan = plan(&census, &charts);
    let kept = collect(&path, &index, &plan, summary, scale)?;
    let cancelled = match requests {
        Some(r) if r.cancelled > 0 && !kept.names.is_empty() => {
            requests::cancelled_ends(&dir.join("requests.csv"), &kept.names)?
        }
        _ => HashMap::new(),
    };
    let _ = write!(
        body,
        "<p class=\"note\">One row per host, one lane per VM alive on it at once, from {} to {} of emulated time{}. Spans narrower than a pixel are merged (the tooltip counts them); <code>igemu report --window FROM..TO</code> draws a window in detail.</p>",
        svg::duration(scale.start),
        svg::duration(scale.end),
        if window.is_some() { " (the window asked for)" } else { "" }
    );
    lease_key(body);
    let mut left_out = 0;
    for &c in &charts {
        let cluster = Cluster {
            summary,
            census: &census,
            c,
            scale,
        };
        let block = match plan[c] {
            Plan::Exact(k) => exact_block(&cluster, &kept.spans[k], &cancelled, room(body)),
            Plan::Merged(k) => merged_block(&cluster, &kept.rasters[k], Why::Kept, room(body)),
            Plan::Skip => continue,
        };
        push_chart(body, &block, &mut left_out);
    }
    left_out_note(
        body,
        left_out,
        "clusters' Gantt charts are",
        "intervals.csv",
    );
    if not_charted > 0 {
        let _ = write!(
            body,
            "<p class=\"note\">{not_charted} more clusters are not drawn: a page draws at most {MAX_GANTT_CHARTS} Gantt charts, of the clusters that first appear in intervals.csv.</p>"
        );
    }
    Ok(())
}

/// The clusters charted, in the order drawn: clusters in the order they first appear in
/// `intervals.csv`, then those that held no VM, at most [`MAX_GANTT_CHARTS`]; and how many
/// more there are.
fn chart_order(census: &Census, summary: &Summary) -> (Vec<usize>, usize) {
    let idle = (0..summary.clusters.len()).filter(|c| census.spans[*c] == 0);
    let all: Vec<usize> = census.order.iter().copied().chain(idle).collect();
    let shown = all.len().min(MAX_GANTT_CHARTS);
    (all[..shown].to_vec(), all.len() - shown)
}

/// How each cluster (by index in the summary) is drawn: span by span while the spans kept
/// stay within [`MAX_EXACT_SPANS`], in chart order, else merged.
fn plan(census: &Census, charts: &[usize]) -> Vec<Plan> {
    let mut plan = vec![Plan::Skip; census.spans.len()];
    let (mut kept, mut exact, mut merged) = (0u64, 0, 0);
    for &c in charts {
        let spans = census.spans[c];
        if kept + spans <= MAX_EXACT_SPANS {
            kept += spans;
            plan[c] = Plan::Exact(exact);
            exact += 1;
        } else {
            plan[c] = Plan::Merged(merged);
            merged += 1;
        }
    }
    plan
}

/// The second pass over `intervals.csv`: the spans of clusters drawn span by span, and the
/// merged charts of the others.
fn collect(
    path: &Path,
    index: &ClusterIndex,
    plan: &[Plan],
    summary: &Summary,
    scale: svg::TimeScale,
) -> Result<Kept, Error> {
    let exact = plan.iter().filter(|p| matches!(p, Plan::Exact(_))).count();
    let merged: Vec<usize> = (0..plan.len())
        .filter(|c| matches!(plan[*c], Plan::Merged(_)))
        .collect();
    let cells = MAX_RASTER_CELLS / merged.len().max(1);
    let mut kept = Kept {
        spans: (0..exact).map(|_| Vec::new()).collect(),
        rasters: (merged.iter())
            .map(|c| HostRaster::new(scale, summary.clusters[*c].1 as u32, cells))
            .collect(),
        names: Interner::default(),
    };
    spans::each_row(path, index, |r| {
        match plan[r.cluster] {
            Plan::Exact(k) => kept.spans[k].push(Span {
                request: kept.names.get(r.request),
                vm: r.vm,
                host: r.host,
                lease: r.lease,
                state: r.state,
                start_s: r.start,
                end_s: r.end,
            }),
            Plan::Merged(k) => {
                if let Some(drawn) = svg::Drawn::of(spans::state_name(r.state)) {
                    let lease = usize::from(r.lease);
                    kept.rasters[k].add(r.host, lease, drawn, r.start, r.end);
                }
            }
            Plan::Skip => {}
        }
        Ok(())
    })?;
    Ok(kept)
}

/// A cluster being drawn.
struct Cluster<'a> {
    summary: &'a Summary,
    census: &'a Census,
    /// Its index in the summary.
    c: usize,
    scale: svg::TimeScale,
}

impl Cluster<'_> {
    fn key(&self) -> &(String, String) {
        &self.summary.clusters[self.c].0
    }

    fn hosts(&self) -> u64 {
        self.summary.clusters[self.c].1
    }

    fn name(&self) -> String {
        let (g, c) = self.key();
        format!("gantt {g}/{c}")
    }
}

/// The bars a chart may draw in `room` bytes of page.
fn bars_for(room: usize) -> usize {
    (room / BAR_BYTES).min(MAX_GANTT_BARS)
}

/// A cluster's block drawn span by span (up to a bound on rows, so that a huge cluster's
/// page stays small: the hosts that held a VM first, then idle ones; only the drawn hosts'
/// spans are put together), or merged when its chart would draw too many bars.
fn exact_block(
    cluster: &Cluster,
    spans_of: &[Span],
    cancelled: &HashMap<Rc<str>, f64>,
    room: usize,
) -> String {
    let (census, c, count) = (cluster.census, cluster.c, cluster.hosts());
    let all_held: Vec<u32> = census.busy_hosts(c).collect();
    let held: BTreeSet<u32> = all_held.iter().copied().take(MAX_HOST_ROWS).collect();
    let chart = cluster_spans(spans_of, cancelled, |h| held.contains(&h));
    let shown_idle: Vec<u32> = (0..count.min(u64::from(u32::MAX)) as u32)
        .filter(|h| !census.held(c, *h))
        .take(MAX_HOST_ROWS.saturating_sub(held.len()))
        .collect();
    let hidden = count.saturating_sub((all_held.len() + shown_idle.len()) as u64);
    let mut hosts: Vec<u32> = held.iter().copied().chain(shown_idle).collect();
    hosts.sort_unstable();
    let Some(svg) = svg::gantt(
        &cluster.name(),
        &cluster.scale,
        &hosts,
        &chart.spans,
        &chart.marks,
        &chart.names,
        bars_for(room),
    ) else {
        let mut raster = HostRaster::new(cluster.scale, count as u32, MAX_RASTER_CELLS);
        for s in spans_of {
            if let Some(drawn) = svg::Drawn::of(s.state()) {
                raster.add(s.host, usize::from(s.lease), drawn, s.start_s, s.end_s);
            }
        }
        return merged_block(cluster, &raster, Why::Bars, room);
    };
    let (g, name) = cluster.key();
    let mut block = format!(
        "<h3>{}/{} — {} hosts ({} held a VM), {} VM spans, {} preemptions</h3>",
        escape(g),
        escape(name),
        count.max(all_held.len() as u64),
        all_held.len(),
        chart.spans_in_all,
        chart.marks_in_all
    );
    let held_hidden = all_held.len() - held.len();
    if held_hidden > 0 {
        let _ = write!(
            block,
            "<p class=\"note\">Only the first {MAX_HOST_ROWS} hosts that held a VM are drawn (to host {}); {held_hidden} more held one and are not drawn.</p>",
            held.last().copied().unwrap_or(0)
        );
    }
    if hidden > 0 {
        let _ = write!(
            block,
            "<p class=\"note\">{hidden} more hosts held no VM and are not drawn.</p>"
        );
    }
    block.push_str(&svg);
    block
}

/// Why a cluster is drawn merged per pixel.
#[derive(Copy, Clone)]
enum Why {
    /// The spans of the clusters drawn before it fill what the page keeps.
    Kept,
    /// Drawn span by span, its chart would take too many bars.
    Bars,
}

/// A cluster's block merged per pixel; empty when even the merged chart has no room.
fn merged_block(cluster: &Cluster, raster: &HostRaster, why: Why, room: usize) -> String {
    let Some((svg, bucket)) = svg::merged_gantt(&cluster.name(), raster, bars_for(room)) else {
        return String::new();
    };
    let (census, c) = (cluster.census, cluster.c);
    let (g, name) = cluster.key();
    let mut block = format!(
        "<h3>{}/{} — {} hosts ({} held a VM), {} VM spans, merged per pixel</h3>",
        escape(g),
        escape(name),
        cluster.hosts(),
        census.busy_hosts(c).count(),
        census.spans[c]
    );
    let reason = match why {
        Why::Kept => format!(
            "the run has more spans than a page draws one by one ({MAX_EXACT_SPANS} in all)"
        ),
        Why::Bars => format!(
            "drawn span by span, this chart would take more than {} bars",
            bars_for(room)
        ),
    };
    let per_row = raster.hosts_per_row();
    let _ = write!(
        block,
        "<p class=\"note\">Merged per pixel: {reason}. Each row stands for {per_row} host{} and each cell for {} of emulated time; a cell takes the colour of the lease type that held the most VM time in it, striped where preemption operations took most of that time and pale where booting did, in four shades by how many VMs a host held there on average (the darkest: the most in this chart). Preemptions are not marked (summary.json counts them); <code>igemu report --window FROM..TO</code> draws a window in finer cells.</p>",
        if per_row == 1 { "" } else { "s" },
        svg::duration(cluster.scale.per_pixel() * bucket as f64)
    );
    block.push_str(&svg);
    block
}

fn lease_key(out: &mut String) {
    out.push_str("<div class=\"key\">");
    for (k, name) in LEASE_TYPES.iter().enumerate() {
        let _ = write!(
            out,
            "<span><i class=\"sw\" style=\"background:{}\"></i>{name}</span>",
            LEASE_COLOURS[k]
        );
    }
    let _ = write!(
        out,
        "<span><i class=\"sw\" style=\"background:{0};opacity:.4\"></i>booting (pale)</span>\
         <span><i class=\"sw\" style=\"background:repeating-linear-gradient(45deg,{0} 0 3px,#fff 3px 6px)\"></i>paused, suspending, resuming, migrating (striped)</span>\
         <span><svg width=\"12\" height=\"10\"><path d=\"M6 10l5 -9h-10z\" fill=\"#d00\"/></svg>preemption (the VM stopped, paused, suspended or sent away)</span></div>",
        LEASE_COLOURS[1]
    );
}

/// A cluster's Gantt input ([`cluster_spans`]): the drawn hosts' spans, marks and instance
/// names, and how many spans and marks the whole cluster has.
#[derive(Default)]
struct ClusterChart {
    spans: Vec<HostSpan>,
    marks: Vec<svg::Mark>,
    names: Vec<String>,
    spans_in_all: usize,
    marks_in_all: usize,
}

/// A cluster's spans as Gantt input: VM instances (a lease's VM on one host, spans touching
/// end to start), preemption marks (a running span followed at once by a preemption
/// operation, or a cancelled lease's VM stopped when it ended) and instance names, for the
/// hosts `drawn` takes; the spans and marks of all counted.
fn cluster_spans(
    rows: &[Span],
    cancelled: &HashMap<Rc<str>, f64>,
    drawn: impl Fn(u32) -> bool,
) -> ClusterChart {
    // Each VM's spans on each host, VMs in (request, VM, host) order, each one's by start (a
    // stable sort keeps the file's order among equal starts): one sorted list, not a list
    // per VM (a run has about one span per VM).
    let mut sorted: Vec<&Span> = rows.iter().collect();
    sorted.sort_by(|a, b| {
        (&*a.request, a.vm, a.host)
            .cmp(&(&*b.request, b.vm, b.host))
            .then(a.start_s.total_cmp(&b.start_s))
    });
    let mut chart = ClusterChart::default();
    for list in sorted.chunk_by(|a, b| (&a.request, a.vm, a.host) == (&b.request, b.vm, b.host)) {
        // An instance of a host not drawn is only counted.
        chart.add_vm(
            list,
            cancelled.get(&*list[0].request).copied(),
            drawn(list[0].host),
        );
    }
    chart
}

impl ClusterChart {
    /// Adds one VM's spans on one host (in time order), drawn if `draw`; `cancelled`: when
    /// its lease was cancelled, if it was.
    fn add_vm(&mut self, list: &[&Span], cancelled: Option<f64>, draw: bool) {
        let (request, vm, host) = (&*list[0].request, list[0].vm, list[0].host);
        let mut previous: Option<&Span> = None;
        for &r in list {
            let Some(drawn) = svg::Drawn::of(r.state()) else {
                previous = Some(r);
                continue;
            };
            // A new instance when the VM left the host in between (suspended, say).
            let joined = previous.is_some_and(|p| {
                svg::Drawn::of(p.state()).is_some() && p.end_s >= r.start_s - 1e-6
            });
            if draw && !joined {
                self.names.push(format!("{request} vm {vm}"));
            }
            let instance = self.names.len().wrapping_sub(1);
            let preempted = previous
                .filter(|_| joined)
                .is_some_and(|p| p.state() == "running" && drawn == svg::Drawn::Operation);
            if preempted {
                let text = format!(
                    "{request} vm {vm} preempted at {} ({})",
                    svg::duration(r.start_s),
                    r.state()
                );
                self.mark(draw, (host, instance, r.start_s), text);
            }
            self.spans_in_all += 1;
            if draw {
                self.spans.push(HostSpan {
                    host,
                    instance,
                    lease: usize::from(r.lease),
                    state: r.state(),
                    drawn,
                    start: r.start_s,
                    end: r.end_s,
                });
            }
            previous = Some(r);
        }
        if let (Some(last), Some(at)) = (previous, cancelled) {
            // `last` is drawn (running), so its instance is the last one named.
            if last.state() == "running" && (last.end_s - at).abs() < 1e-6 {
                let text = format!(
                    "{request} vm {vm} stopped (cancelled) at {}",
                    svg::duration(at)
                );
                self.mark(draw, (host, self.names.len().wrapping_sub(1), at), text);
            }
        }
    }

    /// Counts a preemption mark, and keeps it if `draw`.
    fn mark(&mut self, draw: bool, (host, instance, at): (u32, usize, f64), text: String) {
        self.marks_in_all += 1;
        if draw {
            self.marks.push(svg::Mark {
                host,
                instance,
                at,
                text,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(request: &str, host: u32, state: &str, start: f64, end: f64) -> Span {
        Span {
            request: request.into(),
            vm: 0,
            host,
            lease: 1,
            state: spans::VM_STATES
                .iter()
                .position(|s| s.as_str() == state)
                .expect("a state") as u8,
            start_s: start,
            end_s: end,
        }
    }

    #[test]
    fn preemptions_are_marked_where_a_running_vm_was_operated_on_or_stopped() {
        let rows = [
            // Suspended and resumed on another host: one mark, two instances.
            row("a", 0, "running", 0.0, 10.0),
            row("a", 0, "suspending", 10.0, 12.0),
            row("a", 0, "suspended", 12.0, 20.0),
            row("a", 1, "resuming", 20.0, 22.0),
            row("a", 1, "running", 22.0, 30.0),
            // Cancelled at 15: a mark; completed at 40: none.
            row("b", 2, "booting", 0.0, 1.0),
            row("b", 2, "running", 1.0, 15.0),
            row("c", 3, "running", 0.0, 40.0),
        ];
        let cancelled = HashMap::from([(Rc::from("b"), 15.0)]);
        let chart = cluster_spans(&rows, &cancelled, |_| true);
        // `suspended` holds no place on a host, so it is not drawn.
        assert_eq!(chart.spans.len(), 7);
        assert_eq!((chart.spans_in_all, chart.marks_in_all), (7, 2));
        assert_eq!(chart.names.len(), 4, "{:?}", chart.names);
        let at: Vec<(u32, f64)> = chart.marks.iter().map(|m| (m.host, m.at)).collect();
        assert_eq!(at, vec![(0, 10.0), (2, 15.0)]);
        // Hosts not drawn are counted, not put together: host 0 left out keeps host 2's
        // mark and every count.
        let chart = cluster_spans(&rows, &cancelled, |h| h != 0);
        assert_eq!((chart.spans.len(), chart.spans_in_all), (5, 7));
        assert_eq!((chart.marks.len(), chart.marks_in_all), (1, 2));
        assert_eq!(chart.names.len(), 3, "{:?}", chart.names);
        assert!(chart.spans.iter().all(|s| s.host != 0 && s.instance < 3));
    }
}
