//! The Gantt chart of one cluster, span by span: one row per host, one lane per VM instance
//! alive on it at once, states coloured by lease type, preemptions marked. Spans narrower
//! than a pixel merge into the bar before them, so a chart draws at most about one bar per
//! pixel and lane; a chart that would still draw more than its caller allows is refused
//! (the caller then draws it merged, [`super::merged`]).

use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::fmt::Write;

use super::{duration, escape, open_svg, time_axis, TimeScale, BOTTOM, LEASE_TYPES, LEFT, TOP};

/// A state a VM spends on a host, grouped by how the Gantt chart draws it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Drawn {
    /// Booting: drawn pale.
    Booting,
    /// Running: drawn solid.
    Running,
    /// A preemption operation (paused, suspending, resuming, migrating): drawn striped.
    Operation,
}

impl Drawn {
    /// How a state of `intervals.csv` is drawn on its host, or `None` for states that hold
    /// no place on the host (pending, suspended).
    pub fn of(state: &str) -> Option<Drawn> {
        match state {
            "booting" => Some(Drawn::Booting),
            "running" => Some(Drawn::Running),
            "paused" | "pausing" | "suspending" | "resuming" | "migrating" => {
                Some(Drawn::Operation)
            }
            _ => None,
        }
    }

    pub(super) fn class(self) -> char {
        match self {
            Drawn::Booting => 'b',
            Drawn::Running => 'r',
            Drawn::Operation => 'o',
        }
    }
}

/// One span of one VM instance on a host, for the Gantt chart.
#[derive(Clone, Debug)]
pub struct HostSpan {
    /// The host's index in its cluster.
    pub host: u32,
    /// Which VM instance: spans of one instance share a lane. Index into the caller's names.
    pub instance: usize,
    /// The lease type's index in [`LEASE_TYPES`].
    pub lease: usize,
    /// The state's name as in `intervals.csv`.
    pub state: &'static str,
    /// How it is drawn.
    pub drawn: Drawn,
    /// Start, seconds.
    pub start: f64,
    /// End, seconds (≥ start).
    pub end: f64,
    /// Where its bar links to on the page, if anywhere.
    pub link: Option<Link>,
}

/// Where a Gantt bar links to: its lease's table of events, or the section of them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// The table of events of the lease with anchor `lease-N`.
    Lease(u32),
    /// The lease events section (`leases`): the lease has no table of its own.
    Section,
}

/// A preemption to mark on the Gantt chart.
#[derive(Clone, Debug)]
pub struct Mark {
    /// The host it happened on.
    pub host: u32,
    /// The VM instance it hit (its lane).
    pub instance: usize,
    /// When, seconds.
    pub at: f64,
    /// What the tooltip says.
    pub text: String,
}

/// Assigns each VM instance on a host a lane so that no two instances in one lane overlap,
/// using as few lanes as the most instances alive at once (intervals sorted by start, each
/// into the lowest free lane). Returns the lane of each of `lifetimes` (start, end) and the
/// number of lanes.
pub fn lanes(lifetimes: &[(f64, f64)]) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = (0..lifetimes.len()).collect();
    // Ties by end, so that an instant instance frees its lane for one starting then.
    order.sort_by(|&a, &b| {
        let (x, y) = (lifetimes[a], lifetimes[b]);
        x.0.total_cmp(&y.0)
            .then(x.1.total_cmp(&y.1))
            .then(a.cmp(&b))
    });
    let mut lane_of = vec![0; lifetimes.len()];
    let mut free: BTreeSet<usize> = BTreeSet::new();
    // Busy lanes by end time (min-heap through Reverse on the bit pattern of a finite,
    // non-negative f64, which orders like the number).
    let mut busy: BinaryHeap<std::cmp::Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut used = 0;
    for i in order {
        let (start, end) = lifetimes[i];
        while let Some(std::cmp::Reverse((e, lane))) = busy.peek().copied() {
            if f64::from_bits(e) <= start {
                busy.pop();
                free.insert(lane);
            } else {
                break;
            }
        }
        let lane = match free.pop_first() {
            Some(l) => l,
            None => {
                used += 1;
                used - 1
            }
        };
        lane_of[i] = lane;
        busy.push(std::cmp::Reverse((end.max(start).max(0.0).to_bits(), lane)));
    }
    (lane_of, used)
}

/// Where each instance and host goes: instances' lanes, and the hosts' rows (host, lanes) in
/// host order.
struct Layout {
    lane: Vec<usize>,
    rows: Vec<(u32, usize)>,
    /// Each row's top, by host.
    row_top: BTreeMap<u32, f64>,
    lane_h: f64,
    /// The bottom of the plot area.
    bottom: f64,
}

impl Layout {
    /// Lays out `hosts` (with rows even when idle) and the instances of `spans`.
    fn new(hosts: &[u32], spans: &[HostSpan], instances: usize) -> Layout {
        // Each instance's lifetime on its host, then lanes per host.
        let mut lifetime: Vec<(f64, f64)> = vec![(f64::INFINITY, f64::NEG_INFINITY); instances];
        let mut host_of: Vec<u32> = vec![0; instances];
        for s in spans {
            let l = &mut lifetime[s.instance];
            *l = (l.0.min(s.start), l.1.max(s.end));
            host_of[s.instance] = s.host;
        }
        let mut instances_of: BTreeMap<u32, Vec<usize>> =
            hosts.iter().map(|h| (*h, Vec::new())).collect();
        for (i, l) in lifetime.iter().enumerate() {
            if l.0.is_finite() {
                instances_of.entry(host_of[i]).or_default().push(i);
            }
        }
        let mut lane = vec![0usize; instances];
        let mut rows: Vec<(u32, usize)> = Vec::with_capacity(instances_of.len());
        for (host, instances) in &instances_of {
            let spans_of: Vec<(f64, f64)> = instances.iter().map(|i| lifetime[*i]).collect();
            let (lanes_of, count) = lanes(&spans_of);
            for (i, l) in instances.iter().zip(lanes_of) {
                lane[*i] = l;
            }
            rows.push((*host, count.max(1)));
        }
        let total_lanes: usize = rows.iter().map(|r| r.1).sum();
        // Lanes as tall as fit about 600 px, between 1 and 10 px; a gap between hosts when room.
        let lane_h = (600.0 / total_lanes.max(1) as f64).clamp(1.0, 10.0);
        let gap = if lane_h >= 3.0 { 2.0 } else { 0.0 };
        let mut row_top = BTreeMap::new();
        let mut y = TOP;
        for (host, count) in &rows {
            row_top.insert(*host, y);
            y += *count as f64 * lane_h + gap;
        }
        Layout {
            lane,
            rows,
            row_top,
            lane_h,
            bottom: y,
        }
    }

    /// Host labels and row backgrounds; labels thinned so they never overlap.
    fn draw_rows(&self, svg: &mut String, scale: &TimeScale) {
        let rows = &self.rows;
        let label_every = (12.0 / (self.bottom - TOP).max(1.0) * rows.len() as f64).ceil() as usize;
        for (k, (host, count)) in rows.iter().enumerate() {
            let top = self.row_top[host];
            let h = *count as f64 * self.lane_h;
            if k % 2 == 1 {
                let _ = write!(
                    svg,
                    r#"<rect class="row" x="{LEFT}" y="{top:.1}" width="{:.1}" height="{h:.1}"/>"#,
                    scale.width()
                );
            }
            if k % label_every.max(1) == 0 {
                let _ = write!(
                    svg,
                    r#"<text class="tick" x="{}" y="{:.1}" text-anchor="end" dominant-baseline="middle">host {host}</text>"#,
                    LEFT - 6.0,
                    top + h / 2.0
                );
            }
        }
    }
}

/// A Gantt chart of one cluster: one row per host (hosts with no VM included when listed in
/// `hosts`), one lane per VM alive at once, VM states coloured by lease type; `marks` as
/// red triangles. `names` labels instances in tooltips. `None` when it would draw more than
/// `max_bars` bars.
pub fn gantt(
    name: &str,
    scale: &TimeScale,
    hosts: &[u32],
    spans: &[HostSpan],
    marks: &[Mark],
    names: &[String],
    max_bars: usize,
) -> Option<String> {
    let layout = Layout::new(hosts, spans, names.len());
    let mut svg = String::new();
    open_svg(
        &mut svg,
        layout.bottom + BOTTOM,
        name,
        &format!(
            "Gantt chart of {name}: {} hosts, VM states coloured by lease type",
            layout.rows.len()
        ),
    );
    layout.draw_rows(&mut svg, scale);
    draw_spans(&mut svg, &layout, scale, spans, names, max_bars)?;
    for m in marks {
        let Some(top) = layout
            .row_top
            .get(&m.host)
            .filter(|_| scale.overlaps(m.at, m.at))
        else {
            continue;
        };
        let y = top + layout.lane[m.instance] as f64 * layout.lane_h;
        let _ = write!(
            svg,
            r#"<path class="mark" d="M{:.1} {:.1}l4 -7h-8z"><title>{}</title></path>"#,
            scale.x(m.at),
            y + layout.lane_h.min(4.0),
            escape(&m.text)
        );
    }
    time_axis(&mut svg, scale, layout.bottom);
    svg.push_str("</svg>");
    Some(svg)
}

/// Draws `spans` by lane, merged within a pixel; `None` past `max_bars` bars.
fn draw_spans(
    svg: &mut String,
    layout: &Layout,
    scale: &TimeScale,
    spans: &[HostSpan],
    names: &[String],
    max_bars: usize,
) -> Option<()> {
    let lane = &layout.lane;
    let mut order: Vec<usize> = (0..spans.len()).collect();
    order.sort_by(|&a, &b| {
        let (sa, sb) = (&spans[a], &spans[b]);
        (sa.host, lane[sa.instance])
            .cmp(&(sb.host, lane[sb.instance]))
            .then(sa.start.total_cmp(&sb.start))
    });
    let (mut run, mut bars): (Option<Run>, usize) = (None, 0);
    for i in order {
        let s = &spans[i];
        let Some(top) = (layout.row_top.get(&s.host)).filter(|_| scale.overlaps(s.start, s.end))
        else {
            continue;
        };
        let y = top + lane[s.instance] as f64 * layout.lane_h;
        let (x0, x1) = (scale.x(s.start), scale.x(s.end));
        if run
            .as_mut()
            .is_some_and(|r| r.takes(y, (s.lease, s.drawn.class()), x0, x1, s.end))
        {
            continue;
        }
        if let Some(r) = &run {
            bars += 1;
            if bars > max_bars {
                return None;
            }
            r.draw(svg, layout.lane_h);
        }
        run = Some(Run {
            x0,
            x1,
            y,
            class: (s.lease, s.drawn.class()),
            count: 1,
            first: format!(
                "{} · {} · {}",
                names[s.instance],
                LEASE_TYPES[s.lease.min(3)],
                s.state
            ),
            start: s.start,
            end: s.end,
            link: s.link,
        });
    }
    if let Some(r) = &run {
        if bars + 1 > max_bars {
            return None;
        }
        r.draw(svg, layout.lane_h);
    }
    Some(())
}

/// A run of merged spans in one lane, drawn as one rectangle.
struct Run {
    x0: f64,
    x1: f64,
    y: f64,
    class: (usize, char),
    count: usize,
    first: String,
    start: f64,
    end: f64,
    /// The first span's link.
    link: Option<Link>,
}

impl Run {
    /// Takes in a span at `y`, drawn as `class` from `x0` to `x1` and ending at `end`, if
    /// it continues this run or is narrower than a pixel inside its last one.
    fn takes(&mut self, y: f64, class: (usize, char), x0: f64, x1: f64, end: f64) -> bool {
        let same_lane = self.y == y;
        let joins = same_lane && self.class == class && x0 - self.x1 < 0.5;
        // Narrower than a pixel and inside the last drawn one: counted, not drawn.
        let hidden = same_lane && x1 - x0 < 1.0 && x0 < self.x1 + 1.0;
        if joins {
            self.x1 = self.x1.max(x1);
        }
        if joins || hidden {
            self.count += 1;
            self.end = self.end.max(end);
        }
        joins || hidden
    }

    fn draw(&self, svg: &mut String, lane_h: f64) {
        let width = (self.x1 - self.x0).max(0.6);
        let title = if self.count == 1 {
            format!(
                "{} {}–{}",
                self.first,
                duration(self.start),
                duration(self.end)
            )
        } else {
            format!(
                "{} spans, the first {}, {}–{}",
                self.count,
                self.first,
                duration(self.start),
                duration(self.end)
            )
        };
        match self.link {
            Some(Link::Lease(k)) => {
                let _ = write!(svg, "<a href=\"#lease-{k}\">");
            }
            Some(Link::Section) => svg.push_str("<a href=\"#leases\">"),
            None => {}
        }
        let _ = write!(
            svg,
            r#"<rect class="{}{}" x="{:.1}" y="{:.1}" width="{width:.1}" height="{:.1}"><title>{}</title></rect>"#,
            self.class.1,
            self.class.0,
            self.x0,
            self.y,
            (lane_h - if lane_h >= 3.0 { 0.5 } else { 0.0 }).max(0.5),
            escape(&title)
        );
        if self.link.is_some() {
            svg.push_str("</a>");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_use_as_many_as_are_alive_at_once_and_never_overlap() {
        // Brute force: the number of lanes equals the largest number of intervals covering
        // a point, and intervals in one lane are disjoint.
        let mut seed = 7u64;
        for _ in 0..200 {
            let n = (seed % 30) as usize + 1;
            let mut spans = Vec::new();
            for _ in 0..n {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let start = (seed >> 40) as f64 % 100.0;
                let len = ((seed >> 20) % 30) as f64;
                spans.push((start, start + len));
            }
            let (lane, count) = lanes(&spans);
            // Alive just after each start; an instant instance at s meets those alive
            // strictly around s.
            let most = spans
                .iter()
                .map(|&(s, e)| {
                    if s < e {
                        spans.iter().filter(|(a, b)| *a <= s && s < *b).count()
                    } else {
                        1 + spans.iter().filter(|(a, b)| *a < s && s < *b).count()
                    }
                })
                .max()
                .unwrap_or(0);
            assert_eq!(count, most, "{count} lanes for {most} at once");
            for i in 0..n {
                for j in 0..i {
                    if lane[i] == lane[j] {
                        let (a, b) = (spans[i], spans[j]);
                        assert!(a.1 <= b.0 || b.1 <= a.0, "{a:?} and {b:?} share a lane");
                    }
                }
            }
        }
    }

    #[test]
    fn gantt_merges_spans_narrower_than_a_pixel() {
        // 10 000 back-to-back 1 s spans of one VM over 10 000 s: far fewer rectangles than
        // spans (the plot is under 1 000 px wide), and every one present in the count.
        let spans: Vec<HostSpan> = (0..10_000)
            .map(|i| HostSpan {
                host: 0,
                instance: 0,
                lease: (i / 2_500) as usize,
                state: "running",
                drawn: Drawn::Running,
                start: i as f64,
                end: i as f64 + 1.0,
                link: None,
            })
            .collect();
        let svg = gantt(
            "c",
            &TimeScale::to(10_000.0),
            &[0],
            &spans,
            &[],
            &["r".to_string()],
            usize::MAX,
        )
        .expect("drawn");
        let rects = svg.matches("<rect class=\"r").count();
        assert!((4..=8).contains(&rects), "{rects} rectangles");
        assert!(svg.contains("2500 spans"), "merged count missing");
    }

    #[test]
    fn gantt_refuses_to_draw_more_bars_than_allowed() {
        // 100 VMs one after another in one lane, each with a gap: 100 bars, or none.
        let spans: Vec<HostSpan> = (0..100)
            .map(|i| HostSpan {
                host: 0,
                instance: i,
                lease: 0,
                state: "running",
                drawn: Drawn::Running,
                start: i as f64 * 100.0,
                end: i as f64 * 100.0 + 50.0,
                link: Some(Link::Lease(i as u32)),
            })
            .collect();
        let names: Vec<String> = (0..100).map(|i| format!("r{i}")).collect();
        let scale = TimeScale::to(10_000.0);
        let svg = gantt("c", &scale, &[0], &spans, &[], &names, 100).expect("100 bars fit");
        assert_eq!(svg.matches("<rect class=\"r0").count(), 100);
        // Each bar links to its lease's events.
        assert!(svg.contains("<a href=\"#lease-99\"><rect class=\"r0\""));
        assert_eq!(svg.matches("</rect></a>").count(), 100);
        assert!(gantt("c", &scale, &[0], &spans, &[], &names, 99).is_none());
    }
}
