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
use super::svg::{self, escape, HostRaster, HostSpan, Link, LEASE_COLOURS, LEASE_TYPES};
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

/// Bars (and marks) a Gantt chart drawn span by span draws at most: about 10 MB of page.
pub(super) const MAX_GANTT_BARS: usize = 60_000;

/// Bars a merged Gantt chart draws at most: about 4 MB of page.
pub(super) const MAX_MERGED_BARS: usize = 20_000;

/// Cells of the merged charts in all (48 bytes each).
const MAX_RASTER_CELLS: usize = 1_000_000;

/// Bytes a bar takes on the page, about: its rectangle, tooltip and link to its lease's
/// events (190 to 240 measured).
const BAR_BYTES: usize = 230;

/// Bytes of a chart's block besides its bars, at most: heading, notes, axes.
const BLOCK_BYTES: usize = 8 << 10;

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
    /// Per merged chart, the spans drawn that overlap the chart's time scale.
    in_window: Vec<u64>,
    names: Interner,
}

/// The anchors of the leases whose events the page lists (`lease-N`), by request id: a bar
/// of a lease among them links there, of another to the events section. `None`: no links.
pub(super) type Anchors = HashMap<Rc<str>, u32>;

/// Appends the Hosts section of the run whose outputs are in `dir`.
pub(super) fn section(
    body: &mut String,
    dir: &Path,
    (summary, requests): (&Summary, Option<&Requests>),
    window: Option<Window>,
    anchors: Option<&Anchors>,
) -> Result<(), Error> {
    // No section without a VM to draw: no intervals.csv, or none in it.
    let path = dir.join("intervals.csv");
    if !path.exists() {
        return Ok(());
    }
    let index = ClusterIndex::new(summary);
    let census = spans::census(&path, summary, &index)?;
    if census.order.is_empty() {
        return Ok(());
    }
    body.push_str("<h2 id=\"hosts\">Hosts</h2>");
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
            windowed: window.is_some(),
            anchors,
        };
        let block = match plan[c] {
            Plan::Exact(k) => exact_block(&cluster, &kept.spans[k], &cancelled, room(body)),
            Plan::Merged(k) => merged_block(
                &cluster,
                (&kept.rasters[k], kept.in_window[k]),
                Why::Kept,
                room(body),
            ),
            Plan::Skip => continue,
        };
        if block.is_empty() {
            left_out += 1;
        } else {
            push_chart(body, &block, &mut left_out);
        }
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
        in_window: vec![0; merged.len()],
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
                    kept.in_window[k] += u64::from(scale.overlaps(r.start, r.end));
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
    /// Whether the report draws a window (its headings then count the window).
    windowed: bool,
    /// Where bars link to.
    anchors: Option<&'a Anchors>,
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
    (room.saturating_sub(BLOCK_BYTES) / BAR_BYTES).min(MAX_GANTT_BARS)
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
    let chart = cluster_spans(spans_of, cancelled, cluster.anchors, |h| held.contains(&h));
    let shown_idle: Vec<u32> = (0..count.min(u64::from(u32::MAX)) as u32)
        .filter(|h| !census.held(c, *h))
        .take(MAX_HOST_ROWS.saturating_sub(held.len()))
        .collect();
    let hidden = count.saturating_sub((all_held.len() + shown_idle.len()) as u64);
    let mut hosts: Vec<u32> = held.iter().copied().chain(shown_idle).collect();
    hosts.sort_unstable();
    let drawn = svg::gantt(
        &cluster.name(),
        &cluster.scale,
        &hosts,
        &chart.spans,
        &chart.marks,
        &chart.names,
        bars_for(room),
    );
    let Some(svg) = drawn.filter(|svg| svg.len() + BLOCK_BYTES <= room) else {
        return merged_for_bars(cluster, spans_of, room);
    };
    let mut block = exact_heading(cluster, spans_of, &chart, all_held.len());
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

/// A cluster's block merged per pixel because, drawn span by span, its chart would take too
/// many bars: its spans (`spans_of`) put in a raster, drawn within `room`.
fn merged_for_bars(cluster: &Cluster, spans_of: &[Span], room: usize) -> String {
    let count = cluster.hosts();
    let mut raster = HostRaster::new(cluster.scale, count as u32, MAX_RASTER_CELLS);
    for s in spans_of {
        if let Some(drawn) = svg::Drawn::of(s.state()) {
            raster.add(s.host, usize::from(s.lease), drawn, s.start_s, s.end_s);
        }
    }
    let in_window = (spans_of.iter())
        .filter(|s| {
            svg::Drawn::of(s.state()).is_some() && cluster.scale.overlaps(s.start_s, s.end_s)
        })
        .count() as u64;
    merged_block(cluster, (&raster, in_window), Why::Bars, room)
}

/// The heading of a cluster drawn span by span (`held`: how many of its hosts held a VM):
/// its hosts, and its VM spans and preemptions (in the window, when the report draws one).
fn exact_heading(
    cluster: &Cluster,
    spans_of: &[Span],
    chart: &ClusterChart,
    held: usize,
) -> String {
    let (g, name) = cluster.key();
    let hosts = cluster.hosts().max(held as u64);
    if cluster.windowed {
        let scale = cluster.scale;
        let spans = (spans_of.iter())
            .filter(|s| svg::Drawn::of(s.state()).is_some() && scale.overlaps(s.start_s, s.end_s))
            .count();
        let marks = (chart.mark_times.iter())
            .filter(|t| scale.overlaps(**t, **t))
            .count();
        format!(
            "<h3>{}/{} — {hosts} hosts; in the window: {spans} VM spans, {marks} VMs preempted</h3>",
            escape(g),
            escape(name),
        )
    } else {
        format!(
            "<h3>{}/{} — {hosts} hosts ({} held a VM), {} VM spans, {} VMs preempted</h3>",
            escape(g),
            escape(name),
            held,
            chart.spans_in_all,
            chart.marks_in_all
        )
    }
}

/// Why a cluster is drawn merged per pixel.
#[derive(Copy, Clone)]
enum Why {
    /// The spans of the clusters drawn before it fill what the page keeps.
    Kept,
    /// Drawn span by span, its chart would take too many bars.
    Bars,
}

/// A cluster's block merged per pixel, in wider cells until it fits `room`; empty when even
/// a cell per row does not.
fn merged_block(
    cluster: &Cluster,
    (raster, in_window): (&HostRaster, u64),
    why: Why,
    room: usize,
) -> String {
    let mut budget = bars_for(room).min(MAX_MERGED_BARS);
    let (svg, bucket) = loop {
        match svg::merged_gantt(&cluster.name(), raster, budget) {
            Some((svg, bucket)) if svg.len() + BLOCK_BYTES <= room => break (svg, bucket),
            _ if budget > 1 => budget /= 2,
            _ => return String::new(),
        }
    };
    let (census, c) = (cluster.census, cluster.c);
    let (g, name) = cluster.key();
    let mut block = if cluster.windowed {
        format!(
            "<h3>{}/{} — {} hosts; in the window: {in_window} VM spans, merged per pixel</h3>",
            escape(g),
            escape(name),
            cluster.hosts(),
        )
    } else {
        format!(
            "<h3>{}/{} — {} hosts ({} held a VM), {} VM spans, merged per pixel</h3>",
            escape(g),
            escape(name),
            cluster.hosts(),
            census.busy_hosts(c).count(),
            census.spans[c]
        )
    };
    let reason = match why {
        Why::Kept => format!(
            "the run has more spans than a page draws one by one ({MAX_EXACT_SPANS} in all)"
        ),
        Why::Bars => format!(
            "drawn span by span, this chart would take more than a chart may ({MAX_GANTT_BARS} bars) or than the page has room for"
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
    /// When each mark (drawn or not) was.
    mark_times: Vec<f64>,
}

/// A cluster's spans as Gantt input: VM instances (a lease's VM on one host, spans touching
/// end to start), preemption marks (a running span followed at once by a preemption
/// operation, or a cancelled lease's VM stopped when it ended) and instance names, for the
/// hosts `drawn` takes; the spans and marks of all counted.
fn cluster_spans(
    rows: &[Span],
    cancelled: &HashMap<Rc<str>, f64>,
    anchors: Option<&Anchors>,
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
        let request = &*list[0].request;
        let link = anchors.map(|a| a.get(request).map_or(Link::Section, |k| Link::Lease(*k)));
        chart.add_vm(
            list,
            (cancelled.get(request).copied(), link),
            drawn(list[0].host),
        );
    }
    chart
}

impl ClusterChart {
    /// Adds one VM's spans on one host (in time order), drawn if `draw`; `cancelled`: when
    /// its lease was cancelled, if it was; `link`: where its bars link to.
    fn add_vm(
        &mut self,
        list: &[&Span],
        (cancelled, link): (Option<f64>, Option<Link>),
        draw: bool,
    ) {
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
                    link,
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
        self.mark_times.push(at);
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
    use crate::report::{render, Options};

    /// A `summary.json` with every key the page reads, no requests, and `clusters` as
    /// (`grid/cluster`, hosts).
    fn summary(end: f64, clusters: &[(&str, u64)]) -> String {
        let counts = r#"{"completed": 0, "rejected": 0, "cancelled": 0, "unfinished": 0}"#;
        let clusters: Vec<String> = (clusters.iter())
            .map(|(name, hosts)| format!("\"{name}\": {{\"hosts\": {hosts}}}"))
            .collect();
        format!(
            r#"{{"topology": "t", "mode": "virtual", "seed": 1, "policies": {{}}, "emulated_end_s": {end}, "wall_s": 0, "requests": {{"total": 0, "local": {counts}, "external": {counts}}}, "clusters": {{{}}}, "grids": {{}}}}"#,
            clusters.join(", ")
        )
    }

    /// Writes a run directory of `summary` and `intervals` rows (after the header).
    fn run_dir(summary: &str, intervals: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("summary.json"), summary).expect("written");
        let header = "request_id,vm,grid,cluster,host,lease_type,state,start_s,end_s\n";
        std::fs::write(
            dir.path().join("intervals.csv"),
            format!("{header}{intervals}"),
        )
        .expect("written");
        dir
    }

    /// A cluster with more busy hosts than a chart draws: the first MAX_HOST_ROWS are drawn
    /// and the rest counted, so the page stays small (60 000 busy hosts made 1.4 GB).
    #[test]
    fn a_chart_draws_at_most_max_host_rows_busy_hosts_and_counts_the_rest() {
        let n = MAX_HOST_ROWS + 500;
        let rows: String = (0..n)
            .map(|h| format!("r{h},0,g,c,{h},cancellable,running,1,99\n"))
            .collect();
        let dir = run_dir(&summary(100.0, &[("g/c", n as u64)]), &rows);
        let page = render(dir.path(), &Options::default()).expect("renders");
        assert!(
            page.contains(&format!(
                "Only the first {MAX_HOST_ROWS} hosts that held a VM are drawn (to host {}); 500 more held one",
                MAX_HOST_ROWS - 1
            )),
            "no note"
        );
        assert!(page.contains(&format!("{n} hosts ({n} held a VM), {n} VM spans")));
        assert!(page.contains(&format!("Gantt chart of gantt g/c: {MAX_HOST_ROWS} hosts")));
    }

    /// A chart that would draw more bars than a chart may, span by span, is drawn merged per
    /// pixel and says why; a small cluster beside it is still drawn span by span.
    #[test]
    fn a_chart_too_large_to_draw_span_by_span_is_drawn_merged() {
        // 100 hosts × 650 spans a pixel and a half apart: a bar each, 65 000 in all.
        let mut rows = String::new();
        for h in 0..100 {
            for k in 0..650 {
                let start = f64::from(k) * 1.5;
                rows += &format!(
                    "r{h}-{k},0,g,big,{h},migratable,running,{start},{}\n",
                    start + 0.2
                );
            }
        }
        rows += "s,0,g,small,0,suspendable,running,0,900\n";
        let dir = run_dir(&summary(988.0, &[("g/big", 100), ("g/small", 1)]), &rows);
        let page = render(dir.path(), &Options::default()).expect("renders");
        assert!(
            page.contains("g/big — 100 hosts (100 held a VM), 65000 VM spans, merged per pixel")
        );
        assert!(page.contains(&format!(
            "Merged per pixel: drawn span by span, this chart would take more than a chart may ({MAX_GANTT_BARS} bars)"
        )));
        assert!(page.contains("Each row stands for 1 host and each cell for"));
        assert!(page.contains("g/small — 1 hosts (1 held a VM), 1 VM spans, 0 VMs preempted"));
        assert!(page.matches("<rect class=\"r2\"").count() <= MAX_MERGED_BARS);
    }

    /// The first pass counts spans per cluster, in the order clusters appear, and which
    /// hosts held a VM, without keeping a row.
    #[test]
    fn the_census_counts_spans_and_busy_hosts_per_cluster() {
        let rows = "a,0,g,b,3,cancellable,running,0,5\na,1,g,a,0,cancellable,running,0,7\nb,0,g,b,70,cancellable,booting,2,4\n";
        let dir = run_dir(&summary(10.0, &[("g/a", 2), ("g/b", 100)]), rows);
        let summary = super::super::summary::read(&dir.path().join("summary.json")).expect("read");
        let index = ClusterIndex::new(&summary);
        let census =
            spans::census(&dir.path().join("intervals.csv"), &summary, &index).expect("counted");
        // Clusters by summary index: g/a is 0, g/b is 1; g/b appears first.
        assert_eq!(census.order, vec![1, 0]);
        assert_eq!(census.spans, vec![1, 2]);
        assert_eq!(census.busy_hosts(1).collect::<Vec<_>>(), vec![3, 70]);
        assert!(census.held(0, 0) && !census.held(0, 1));
        assert_eq!(census.end, 7.0);
    }

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
        let chart = cluster_spans(&rows, &cancelled, None, |_| true);
        // `suspended` holds no place on a host, so it is not drawn.
        assert_eq!(chart.spans.len(), 7);
        assert_eq!((chart.spans_in_all, chart.marks_in_all), (7, 2));
        assert_eq!(chart.names.len(), 4, "{:?}", chart.names);
        let at: Vec<(u32, f64)> = chart.marks.iter().map(|m| (m.host, m.at)).collect();
        assert_eq!(at, vec![(0, 10.0), (2, 15.0)]);
        // Hosts not drawn are counted, not put together: host 0 left out keeps host 2's
        // mark and every count.
        let chart = cluster_spans(&rows, &cancelled, None, |h| h != 0);
        assert_eq!((chart.spans.len(), chart.spans_in_all), (5, 7));
        assert_eq!((chart.marks.len(), chart.marks_in_all), (1, 2));
        assert_eq!(chart.names.len(), 3, "{:?}", chart.names);
        assert!(chart.spans.iter().all(|s| s.host != 0 && s.instance < 3));
    }
}
