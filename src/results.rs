//! A run's results: the summary and the per-request, decision, lease and interval records it
//! writes, built from what the actors observed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::Serialize;

use crate::actors::Emu;
use crate::csvout::{csv_field, CsvOut};
use crate::files::{put_in_place, staged, RUN_OUTPUTS};
use crate::metrics::{DecisionRecord, PaperMetrics, RequestCounts, RequestRecord};
use crate::pacing::{lateness_verdict, SpeedupChoice, TimerLateness, SUSTAINABLE_P99_LATENESS_MS};
use crate::provenance::Provenance;
use crate::record::{ReplayOutcome, ReplaySummary};
use crate::time::{ClockMode, EmuTime, Lateness};
use crate::topology::Topology;
use crate::{fault, igg, lrms, metrics, model, policy, time, Error};

/// The printed summary's negotiation line: the Grids' `negotiations` counters summed (each
/// request offered is counted by its requester's Grid alone), under their summary keys'
/// names; empty when no Grid negotiated. `rejected after redirect` and `late answers declined`
/// appear when non-zero.
pub(crate) fn negotiations_line<'a>(grids: impl Iterator<Item = &'a igg::Outcomes>) -> String {
    let mut t = igg::Outcomes::default();
    for o in grids {
        t.offers += o.offers;
        t.accepted += o.accepted;
        t.countered_taken += o.countered_taken;
        t.countered_declined += o.countered_declined;
        t.rejected += o.rejected;
        t.timeouts += o.timeouts;
        t.redirected += o.redirected;
        t.rejected_after_redirect += o.rejected_after_redirect;
        t.late_declined += o.late_declined;
    }
    if t == igg::Outcomes::default() {
        return String::new();
    }
    let mut line = format!(
        "  negotiations: offers {} (timeouts {}); requests offered: accepted {}, countered-taken {}, countered-declined {}, rejected {}; redirected {}",
        t.offers,
        t.timeouts,
        t.accepted,
        t.countered_taken,
        t.countered_declined,
        t.rejected,
        t.redirected
    );
    if t.rejected_after_redirect > 0 {
        line += &format!(" (rejected after redirect {})", t.rejected_after_redirect);
    }
    if t.late_declined > 0 {
        line += &format!("; late answers declined {}", t.late_declined);
    }
    line.push('\n');
    line
}

/// The machine-readable summary of a run (`summary.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Topology name.
    pub topology: String,
    /// `virtual` or `realtime`.
    pub mode: &'static str,
    /// Emulated seconds per wall second (realtime only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// The run's seed.
    pub seed: u64,
    /// The explored order of same-time deliveries (`emulation.interleaving`), when not FIFO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interleaving: Option<u64>,
    /// The warm-up left out of the request figures (`metrics.warm_up`), seconds, when set:
    /// the per-request figures of `metrics`, `clusters`, the Grids' AWRTs and
    /// `request_metrics` count only requests submitted from then on; utilisation, the
    /// counters and `requests` cover every one (docs/outputs.md lists each key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warm_up_s: Option<f64>,
    /// The threads the Grids ran on (`--threads`), when more than one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// A replay's (`igemu replay`): the record it followed and how far; its outputs are
    /// the record's run only if `diverged` is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplaySummary>,
    /// What was run (version, topology file and hash, overrides), when the caller said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// The policies in force: per Grid its dispatch and provider policy, per cluster its
    /// scheduler, preemption, admission and local requests' treatment, and the contracts.
    pub policies: BTreeMap<String, String>,
    /// The plug-ins in force (policies igemu does not ship: a program's own, or external
    /// processes), each with where it decides, its fallback, and how many decisions it was
    /// asked and its fallback made; absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<policy::PluginRecord>,
    /// Emulated time at the end of the run, seconds.
    pub emulated_end_s: f64,
    /// Wall-clock duration of the run, seconds (not deterministic).
    pub wall_s: f64,
    /// Messages sent between actors.
    pub messages: u64,
    /// Timed events fired by the clock.
    pub timed_events: u64,
    /// Request counts by origin and state.
    pub requests: RequestCounts,
    /// From the first arrival to the last terminal event, seconds.
    pub makespan_s: f64,
    /// The paper metrics over the whole run (utilisation, preemptions, overhead, rates, ...).
    #[serde(flatten)]
    pub metrics: PaperMetrics,
    /// The same per cluster, by `grid/cluster`.
    pub clusters: BTreeMap<String, PaperMetrics>,
    /// Peering figures per Grid.
    pub grids: BTreeMap<String, metrics::GridFigures>,
    /// The per-request metrics (waiting time, turnaround, slowdown, bounded slowdown,
    /// stretch): mean and percentiles overall and per Grid, origin and lease type.
    pub request_metrics: metrics::RequestMetrics,
    /// What the fault injector did.
    pub faults: fault::FaultCounts,
    /// Number of invariant violations (host over capacity, request ended twice, ...).
    pub invariant_violations: u64,
    /// The first few violations, described.
    pub violation_examples: Vec<String>,
    /// Timer lateness percentiles (realtime only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timer_lateness_ms: Option<TimerLateness>,
    /// Realtime only: whether the speed-up was sustainable (p99 lateness at most
    /// [`SUSTAINABLE_P99_LATENESS_MS`]; see [`lateness_verdict`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_sustainable: Option<bool>,
    /// With `--speedup auto`: what it chose, predicted and measured (set by the command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_auto: Option<SpeedupChoice>,
}

/// Everything a run produced.
pub struct RunResult {
    /// Each instant's handling time, with [`RunOptions::record_load`](crate::RunOptions::record_load) (else empty).
    pub load: Vec<time::InstantLoad>,
    /// The topology that ran.
    pub topology: Rc<Topology>,
    /// One record per request, indexed like the topology's requests.
    pub records: Vec<RequestRecord>,
    /// Every preemption decision, in the order made.
    pub decisions: Vec<DecisionRecord>,
    /// Every VM instance's state spans (empty unless [`RunOptions::intervals`](crate::RunOptions::intervals)).
    pub intervals: Vec<metrics::VmSpan>,
    /// Every lease's events (empty unless [`RunOptions::lease_log`](crate::RunOptions::lease_log)).
    pub lease_log: metrics::LeaseLog,
    /// Whether they were recorded (`leases.csv` is written then, even with no event).
    pub(crate) lease_logged: bool,
    /// The summary.
    pub summary: Summary,
    /// The directory this run wrote `trace.jsonl` into directly (not staged): that trace is
    /// this run's, so putting outputs in place there keeps it.
    pub(crate) trace_in_place: Option<PathBuf>,
    /// With [`RunOptions::record`](crate::RunOptions::record): the deliveries recorded, or why the record could not be
    /// written whole (the run's results stand; the partial record is removed).
    pub recorded: Option<Result<u64, String>>,
    /// With [`RunOptions::replay`](crate::RunOptions::replay): how the replay followed its record.
    pub replayed: Option<ReplayOutcome>,
}

/// `requests.csv`'s columns: one row per request.
pub(crate) const REQUEST_COLUMNS: [&str; 25] = [
    "request_id",
    "grid",
    "cluster",
    "origin",
    "lease_type",
    "vms",
    "mem_mb",
    "submit_s",
    "start_s",
    "end_s",
    "state",
    "preemptions",
    "overhead_s",
    "duration_s",
    "deadline_s",
    "served_by",
    "hosts",
    // Added after the others, so readers that take columns by position keep working.
    "outcome",
    "reason",
    "displacements",
    // The per-request metrics ([`metrics::Measures`]), in [`metrics::METRIC_NAMES`]' order.
    "wait_s",
    "turnaround_s",
    "slowdown",
    "bounded_slowdown",
    "stretch",
];

/// `decisions.csv`'s columns: one row per preemption decision.
pub(crate) const DECISION_COLUMNS: [&str; 11] = [
    "at_s",
    "cluster",
    "local_request",
    "requested_start_s",
    "local_start_s",
    "vacated_by_s",
    "preempted",
    "operations",
    "cost_s",
    "reschedule_s",
    "exact",
];

/// `leases.csv`'s columns: one row per event of each lease.
pub(crate) const LEASE_COLUMNS: [&str; 10] = [
    "time_s",
    "request_id",
    "event",
    "grid",
    "cluster",
    "hosts",
    "vms",
    "cause",
    "operation",
    "planned_s",
];

/// `intervals.csv`'s columns: one row per span a VM spent in one state.
pub(crate) const INTERVAL_COLUMNS: [&str; 9] = [
    "request_id",
    "vm",
    "grid",
    "cluster",
    "host",
    "lease_type",
    "state",
    "start_s",
    "end_s",
];

/// Creates the csv file `path`; its errors name it.
pub(crate) fn csv_file(path: &Path) -> Result<CsvOut<std::fs::File>, Error> {
    let file = std::fs::File::create(path).map_err(Error::output(path))?;
    Ok(CsvOut::new(file))
}

impl RunResult {
    /// Writes `requests.csv`: one row per request, in id order.
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_requests(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        // The hosts each request's VMs held last (from the spans, when recorded), by request.
        let mut hosts: Vec<Option<(model::ClusterId, Vec<u16>)>> = vec![None; topo.requests.len()];
        for s in self.intervals.iter().filter(|s| s.state.holds_host()) {
            let e = hosts[s.lease.0 as usize].get_or_insert_with(|| (s.cluster, Vec::new()));
            if e.0 != s.cluster {
                *e = (s.cluster, Vec::new());
            }
            e.1.push(s.host);
        }
        for (_, list) in hosts.iter_mut().flatten() {
            list.sort_unstable();
            list.dedup();
        }
        // A csv writer serialising rows writes the header with the first row: none without.
        if !topo.requests.is_empty() {
            w.header(&REQUEST_COLUMNS).map_err(io)?;
        }
        let grid_name = |c: model::ClusterId| &topo.grids[usize::from(topo.cluster(c).grid.0)].name;
        let mut list = Vec::new();
        let measures = metrics::measures(topo, &self.records);
        for ((req, rec), m) in topo.requests.iter().zip(&self.records).zip(&measures) {
            w.text(topo.label(req.id));
            w.text(&topo.grids[usize::from(req.grid.0)].name);
            w.text(rec.cluster.map_or("", |c| &topo.cluster(c).name));
            w.text(req.origin.as_str());
            w.text(req.lease_type.as_str());
            w.uint(u64::from(req.vms));
            w.uint(u64::from(req.mem_mb));
            w.secs(req.arrival.as_micros());
            w.opt_secs(rec.start);
            w.opt_secs(rec.end);
            w.text(
                rec.state
                    .unwrap_or(model::RequestState::Unfinished)
                    .as_str(),
            );
            w.uint(u64::from(rec.preemptions));
            w.secs(rec.overhead.as_micros());
            w.secs(req.duration.as_micros());
            w.opt_secs(rec.deadline.or(req.deadline));
            w.text(rec.cluster.map_or("", |c| grid_name(c)));
            // Host numbers apart by spaces: digits and spaces need no quotes.
            list.clear();
            if let Some((_, held)) = &hosts[req.id.0 as usize] {
                for (n, host) in held.iter().enumerate() {
                    if n > 0 {
                        list.push(b' ');
                    }
                    let mut buf = [0u8; 20];
                    let at = time::write_digits(u64::from(*host), &mut buf, 20);
                    list.extend_from_slice(&buf[at..]);
                }
            }
            w.raw(&list);
            w.text(metrics::Outcome::of(req, rec).as_str());
            w.text(rec.reason.map_or("", model::RejectReason::as_str));
            w.uint(u64::from(rec.displacements));
            w.opt_secs_f64(m.wait_s);
            w.opt_secs_f64(m.turnaround_s);
            for ratio in [m.slowdown, m.bounded_slowdown, m.stretch] {
                w.ratio(ratio);
            }
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `decisions.csv`: one row per preemption decision, in the order made (the
    /// header even when none was made, so the file always loads).
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_decisions(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        w.header(&DECISION_COLUMNS).map_err(io)?;
        for r in &self.decisions {
            let d = &r.decision;
            let preempted: Vec<&str> = d.set.iter().map(|(id, _)| topo.label(*id)).collect();
            let operations: Vec<&str> = d.set.iter().map(|(_, op)| op.as_str()).collect();
            w.secs(r.at.as_micros());
            w.text(&topo.cluster(r.cluster).qualified_name(topo));
            w.text(topo.label(d.local));
            w.secs(d.window.0.as_micros());
            w.secs(d.local_start.as_micros());
            w.secs(d.vacated_by.as_micros());
            w.text(&preempted.join(" "));
            w.text(&operations.join(" "));
            w.secs(d.cost.as_micros());
            w.secs(d.reschedule.as_micros());
            w.bool(d.exact);
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `utilization.csv`: per cluster, at every change point, what its hosts give VMs
    /// and the requests waiting for it.
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_utilization(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        let mut header = vec![
            "time_s".to_string(),
            "grid".into(),
            "cluster".into(),
            "cores_used".into(),
            "cores_total".into(),
            "mem_mb_used".into(),
            "mem_mb_total".into(),
        ];
        header.extend(
            (model::LeaseType::ALL.iter()).map(|t| format!("vms_{}", t.as_str().replace('-', "_"))),
        );
        header.push("queued".into());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        w.header(&header).map_err(io)?;
        // Per cluster, the bytes that stay the same on each of its rows.
        let fixed: Vec<[Vec<u8>; 4]> = (topo.clusters.iter())
            .map(|c| {
                let mem: u64 = c.hosts.iter().map(|h| h.memory_mb).sum();
                [
                    csv_field(&topo.grids[usize::from(c.grid.0)].name),
                    csv_field(&c.name),
                    c.cores().to_string().into_bytes(),
                    mem.to_string().into_bytes(),
                ]
            })
            .collect();
        for r in metrics::usage(topo, &self.intervals, &self.records) {
            let [grid, cluster, cores_total, mem_total] = &fixed[usize::from(r.cluster.0)];
            w.secs(r.at.as_micros());
            w.raw(grid);
            w.raw(cluster);
            w.int(r.cores);
            w.raw(cores_total);
            w.int(r.mem_mb);
            w.raw(mem_total);
            for n in r.vms {
                w.int(n);
            }
            w.int(r.queued);
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `leases.csv`: one row per event of each lease, in time order
    /// ([`metrics::lease_rows`]).
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_leases(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        w.header(&LEASE_COLUMNS).map_err(io)?;
        let grids: Vec<Vec<u8>> = (topo.grids.iter()).map(|g| csv_field(&g.name)).collect();
        let clusters: Vec<Vec<u8>> = (topo.clusters.iter()).map(|c| csv_field(&c.name)).collect();
        let mut list = Vec::new();
        // Each request's label in csv form, made at its first row (a lease has about five).
        let mut labels: Vec<Option<Vec<u8>>> = vec![None; topo.requests.len()];
        fn label<'l>(
            labels: &'l mut [Option<Vec<u8>>],
            topo: &Topology,
            id: model::RequestId,
        ) -> &'l [u8] {
            labels[id.0 as usize].get_or_insert_with(|| csv_field(topo.label(id)))
        }
        for row in metrics::lease_rows(topo, &self.records, &self.lease_log) {
            w.secs(row.at.as_micros());
            w.raw(label(&mut labels, topo, row.lease));
            w.raw(row.kind.as_str().as_bytes());
            w.raw(&grids[usize::from(row.grid.0)]);
            w.raw(
                row.cluster
                    .map_or(&b""[..], |c| &clusters[usize::from(c.0)]),
            );
            // Host numbers apart by spaces, as requests.csv writes them.
            list.clear();
            for (n, host) in row.hosts.iter().enumerate() {
                if n > 0 {
                    list.push(b' ');
                }
                let mut buf = [0u8; 20];
                let at = time::write_digits(u64::from(*host), &mut buf, 20);
                list.extend_from_slice(&buf[at..]);
            }
            w.raw(&list);
            match row.vms {
                Some(n) => w.uint(u64::from(n)),
                None => w.raw(b""),
            }
            match row.cause {
                Some(metrics::Cause::Request(id)) => w.raw(label(&mut labels, topo, id)),
                Some(metrics::Cause::Grid(g)) => w.raw(&grids[usize::from(g.0)]),
                Some(metrics::Cause::Cluster(c)) => w.text(&topo.cluster(c).qualified_name(topo)),
                Some(metrics::Cause::Reason(r)) => w.raw(r.as_str().as_bytes()),
                None => w.raw(b""),
            }
            w.raw(row.operation.map_or("", |o| o.as_str()).as_bytes());
            w.opt_secs(row.planned);
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `intervals.csv`: one row per VM instance and state span, in the order the
    /// spans ended (sorted by start for a Gantt chart).
    // Called once a run: out of line so that a profile shows each file's cost.
    #[inline(never)]
    fn write_intervals(&self, path: &Path) -> Result<(), Error> {
        let io = |e: std::io::Error| Error::output(path.to_path_buf())(e);
        let mut w = csv_file(path)?;
        let topo = &self.topology;
        // A run can have millions of spans: each row is put together from bytes prepared
        // once (names quoted by the csv writer itself, where they need it) and numbers
        // written without allocating; a csv writer's per-field pass was most of the cost.
        // Per cluster `grid,cluster` (two fields, the comma between them included).
        let names: Vec<Vec<u8>> = (topo.clusters.iter())
            .map(|c| {
                let mut both = csv_field(&topo.grids[usize::from(c.grid.0)].name);
                both.push(b',');
                both.extend_from_slice(&csv_field(&c.name));
                both
            })
            .collect();
        let mut labels: Vec<Option<Vec<u8>>> = vec![None; topo.requests.len()];
        w.header(&INTERVAL_COLUMNS).map_err(io)?;
        for s in &self.intervals {
            let i = s.lease.0 as usize;
            let req = &topo.requests[i];
            let label = labels[i].get_or_insert_with(|| csv_field(topo.label(s.lease)));
            w.raw(label);
            w.uint(u64::from(s.vm));
            w.raw(&names[usize::from(s.cluster.0)]);
            w.uint(u64::from(s.host));
            w.raw(req.lease_type.as_str().as_bytes());
            w.raw(s.state.as_str().as_bytes());
            w.secs(s.start.as_micros());
            w.secs(s.end.as_micros());
            w.end_row().map_err(io)?;
        }
        w.finish().map_err(io)?;
        Ok(())
    }

    /// Writes `requests.csv`, `decisions.csv`, `intervals.csv` and `utilization.csv` (when
    /// spans were recorded), `leases.csv` (when lease events were) and `summary.json` into
    /// `dir` (created if needed).
    pub fn write_outputs(&self, dir: &Path) -> Result<(), Error> {
        std::fs::create_dir_all(dir).map_err(Error::output(dir))?;
        let written = self.write_staged(dir);
        if written.is_err() {
            // The previous outputs stay whole; this run's partial files go.
            for name in RUN_OUTPUTS {
                let _ = std::fs::remove_file(staged(dir, name));
            }
            return written;
        }
        // A trace this run wrote straight into `dir` (not staged) is its own: kept.
        let same = |a: &Path| a.canonicalize().ok() == dir.canonicalize().ok();
        put_in_place(dir, self.trace_in_place.as_deref().is_some_and(same))
    }

    /// Writes every output under its temporary name ([`staged`]).
    fn write_staged(&self, dir: &Path) -> Result<(), Error> {
        let io = |path: &Path| Error::output(path.to_path_buf());
        self.write_requests(&staged(dir, "requests.csv"))?;
        self.write_decisions(&staged(dir, "decisions.csv"))?;
        if !self.intervals.is_empty() {
            self.write_intervals(&staged(dir, "intervals.csv"))?;
            self.write_utilization(&staged(dir, "utilization.csv"))?;
        }
        if self.lease_logged {
            self.write_leases(&staged(dir, "leases.csv"))?;
        }
        let summary_path = staged(dir, "summary.json");
        let mut text =
            serde_json::to_string_pretty(&self.summary).map_err(|e| io(&summary_path)(e.into()))?;
        text.push('\n');
        std::fs::write(&summary_path, text).map_err(io(&summary_path))?;
        Ok(())
    }

    /// A few lines for a person.
    pub fn human_summary(&self) -> String {
        let s = &self.summary;
        let r = &s.requests;
        let mut out = format!(
            "igemu: {} ({} mode, seed {})\n  emulated {:.1} s in {:.3} s wall, {} messages, {} timed events\n",
            s.topology, s.mode, s.seed, s.emulated_end_s, s.wall_s, s.messages, s.timed_events
        );
        // The policies in force, each distinct setting once (most runs have one per kind).
        let mut distinct: Vec<&str> = s.policies.values().map(String::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        out += &format!("  policies: {}\n", distinct.join("; "));
        for (name, c) in [("local", &r.local), ("external", &r.external)] {
            out += &format!(
                "  {name:<8} completed {:>4}  rejected {:>4}  cancelled {:>4}  unfinished {:>4}\n",
                c.completed, c.rejected, c.cancelled, c.unfinished
            );
        }
        // Each figure under its summary key's name: preemptions are of running leases
        // (`lease_preemptions`, `vm_preemptions`), displacements of waiting reservations
        // (`lease_displacements`, `vm_displacements`).
        let m = &s.metrics;
        out += &format!(
            "  decisions {}, preemptions {} leases / {} VMs, displacements {} leases / {} VMs, overhead {:.1} s, AWRT {:.1} s\n",
            m.decisions,
            m.lease_preemptions,
            m.vm_preemptions,
            m.lease_displacements,
            m.vm_displacements,
            m.overhead_s,
            m.awrt_s
        );
        if let Some(w) = s.warm_up_s {
            out += &format!("  request figures from {w:.0} s on (metrics.warm_up)\n");
        }
        out += &negotiations_line(s.grids.values().map(|g| &g.negotiations));
        out += &format!(
            "  utilization {:.1} %, makespan {:.1} s, invariant violations {}",
            s.metrics.utilization_pct, s.makespan_s, s.invariant_violations
        );
        if let Some(l) = &s.timer_lateness_ms {
            out += &format!(
                "\n  timer lateness (emulated ms): p50 {:.3}  p99 {:.3}  max {:.3}\n  speed-up: {}",
                l.p50,
                l.p99,
                l.max,
                lateness_verdict(l)
            );
        }
        out
    }
}

/// What a run observed, gathered from its context (or its shards' contexts, merged).
pub(crate) struct Observed {
    /// The observations.
    pub(crate) metrics: metrics::Metrics,
    /// Messages sent.
    pub(crate) messages: u64,
    /// Timed events fired.
    pub(crate) timed_events: u64,
    /// Timer lateness (realtime).
    pub(crate) lateness: Option<Lateness>,
    /// What the fault injector did.
    pub(crate) faults: fault::FaultCounts,
    /// The plug-ins in force, with their counts.
    pub(crate) plugins: Vec<policy::PluginRecord>,
}

impl Observed {
    /// What `emu` observed (its metrics are taken).
    pub(crate) fn of(emu: &Emu) -> Observed {
        Observed {
            metrics: std::mem::take(&mut *emu.metrics.borrow_mut()),
            messages: emu.tracer.messages(),
            timed_events: emu.clock.fired(),
            lateness: emu.clock.lateness(),
            faults: emu.faults.borrow().counts.clone(),
            plugins: emu.plugins.records(),
        }
    }

    /// Adds what another shard of the run observed (but its metrics and lateness).
    pub(crate) fn add_counts(&mut self, other: &Observed) {
        self.messages += other.messages;
        self.timed_events += other.timed_events;
        self.faults.add(&other.faults);
        self.plugins.extend(other.plugins.iter().cloned());
        self.plugins
            .sort_by(|a, b| (&a.at, &a.point).cmp(&(&b.at, &b.point)));
    }
}

/// The run's summary, per-request records and decisions, from what it observed.
pub(crate) fn summarize(
    topo: &Topology,
    observed: Observed,
    end: EmuTime,
    wall_s: f64,
) -> (
    Summary,
    Vec<RequestRecord>,
    Vec<DecisionRecord>,
    Vec<metrics::VmSpan>,
    metrics::LeaseLog,
) {
    let mode = topo.emulation.mode;
    let Observed {
        metrics,
        messages,
        timed_events,
        lateness,
        faults: fault_counts,
        plugins,
    } = observed;
    let metrics::Finished {
        spans,
        records,
        clusters: counters,
        grids,
        violations,
        decisions,
        leases,
    } = metrics.finish();
    let figures = metrics::figures(topo, &records, &counters);
    let grid_figures = metrics::grid_figures(topo, &records, &grids);
    let request_metrics = metrics::request_metrics(topo, &metrics::measures(topo, &records));
    let summary = Summary {
        topology: topo.name.clone(),
        mode: match mode {
            ClockMode::Virtual => "virtual",
            ClockMode::Realtime { .. } => "realtime",
        },
        speedup: match mode {
            ClockMode::Virtual => None,
            ClockMode::Realtime { speedup } => Some(speedup),
        },
        seed: topo.emulation.seed,
        interleaving: Some(topo.emulation.interleaving).filter(|&k| k > 0),
        warm_up_s: Some(topo.metrics.warm_up.as_secs_f64()).filter(|&w| w > 0.0),
        threads: None,
        replay: None,
        provenance: None,
        policies: policies(topo),
        plugins,
        emulated_end_s: end.as_secs_f64(),
        wall_s,
        messages,
        timed_events,
        requests: figures.requests,
        makespan_s: figures.makespan_s,
        metrics: figures.all,
        clusters: figures.clusters,
        grids: grid_figures,
        request_metrics,
        faults: fault_counts,
        invariant_violations: violations.len() as u64,
        violation_examples: violations.iter().take(10).map(|v| v.to_string()).collect(),
        speedup_sustainable: lateness
            .as_ref()
            .map(|l| l.p99 <= SUSTAINABLE_P99_LATENESS_MS),
        timer_lateness_ms: lateness,
        speedup_auto: None,
    };
    (summary, records, decisions, spans, leases)
}

/// The policies in force, by where they apply (`grid:<g>`, `cluster:<g>/<c>`, `peering`), as
/// `summary.json`'s `policies` and `sweep.json` record them.
pub fn policies(topo: &Topology) -> BTreeMap<String, String> {
    let mut p = BTreeMap::new();
    p.insert(
        "peering".to_string(),
        format!("contracts {}", topo.peering.contracts.as_str()),
    );
    for g in &topo.grids {
        let provider = g.igg.provider.map_or("none", |x| x.as_str());
        if g.igg.implementation.name != policy::registry::GATEWAY {
            let text = format!("gateway {}, provider {provider}", g.igg.implementation.name);
            p.insert(format!("grid:{}", g.name), text);
            continue;
        }
        let mut text = format!(
            "dispatch {}, provider {provider}",
            policy::describe(&g.igg.dispatch, None)
        );
        // The negotiation policies are named where a Grid does not use igemu's own.
        for (point, chosen, shipped) in [
            (
                "answer",
                &g.igg.answer,
                igg::negotiation::AnswerName::MarginalCost.as_str(),
            ),
            (
                "offer",
                &g.igg.offer,
                igg::negotiation::OfferName::CheapestContract.as_str(),
            ),
        ] {
            if chosen.name != shipped || chosen.fallback.is_some() {
                text += &format!(", {point} {}", policy::describe(chosen, None));
            }
        }
        p.insert(format!("grid:{}", g.name), text);
    }
    for c in &topo.clusters {
        let l = &c.lrms;
        let mut scheduler = match l.backfilling {
            lrms::Backfilling::Fcfs => "fcfs".to_string(),
            lrms::Backfilling::Conservative => "conservative".to_string(),
            lrms::Backfilling::Easy { pivots } => format!("easy ({pivots} pivots)"),
        };
        if let Some(depth) = l.backfill_depth {
            scheduler += &format!(", backfill depth {depth}");
        }
        if l.moldable != lrms::Moldable::Spread {
            // Named only when not the default, so that other runs' summaries stay as they were.
            scheduler += &format!(", moldable {}", l.moldable.as_str());
        }
        let shipped = |point| {
            policy::registry::described(
                point,
                &l.preemption.name,
                l.cp_alpha,
                &l.admission_settings,
            )
        };
        p.insert(
            format!("cluster:{}", c.qualified_name(topo)),
            format!(
                "scheduler {scheduler}, preemption {}, admission {}, locals {}",
                policy::describe(&l.preemption, shipped(policy::Point::Preemption)),
                policy::describe(
                    &l.admission,
                    policy::registry::described(
                        policy::Point::Admission,
                        &l.admission.name,
                        l.cp_alpha,
                        &l.admission_settings
                    )
                ),
                l.locals.as_str()
            ),
        );
    }
    p
}
