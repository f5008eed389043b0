//! Reading a generated workload (`model = "das2" | "lublin99" | "gwa" | "swf" | "gwf"`) from
//! its `[[workload]]` table and turning its jobs into lease requests.

use std::path::Path;

use super::Cluster;
use super::WorkloadModel;
use crate::input::diag::{did_you_mean, Diags, Loc};
use crate::input::table::Table;
use crate::model::{ClusterId, GridId, LeaseRequest, LeaseType, Origin, RequestId};
use crate::time::{stream_seed, EmuDuration, EmuTime};
use crate::workload::tracefile::{OutOfMemory, ReadError};
use crate::workload::{self, Das2, Deadlines, Gwa, Lublin99, Model, TypeMix};

/// Keys a generated workload may have besides name, origin, grid and cluster.
pub(super) const KEYS: &[&str] = &[
    "model",
    "span",
    "start",
    "rate_factor",
    "moldable",
    "max_requests",
    "mem_mb",
    "cores_per_vm",
    "max_vms",
    "das2",
    "lublin99",
    "gwa",
    "swf",
    "gwf",
    "mix",
    "deadlines",
];

/// Where generated requests go and how they are numbered.
pub(super) struct Sink<'a> {
    /// The topology's requests.
    pub requests: &'a mut Vec<LeaseRequest>,
    /// Their labels.
    pub labels: &'a mut Vec<String>,
    /// The requests whose id is written in the file, with its place.
    pub written: &'a mut Vec<(RequestId, Loc)>,
}

/// What the workload is attached to.
pub(super) struct Target<'a> {
    /// The workload's name (labels are `<name>-<n>`).
    pub name: &'a str,
    /// Local or external.
    pub origin: Origin,
    /// Its Grid.
    pub grid: GridId,
    /// Its cluster (local workloads).
    pub cluster: Option<ClusterId>,
    /// The clusters its requests may run on.
    pub clusters: Vec<&'a Cluster>,
}

/// Sets `field` from `key` if it is in `[lo, hi]`.
fn set(t: &Table<'_>, key: &str, (lo, hi): (f64, f64), field: &mut f64) {
    if let Some((v, _)) = t.number_in(key, lo, hi) {
        *field = v;
    }
}

/// Sets `range` from `key` when it is `[low, high]` with low < high (a value drawn once per
/// run, paper 004 §6.1), else `field` from the one number (a range of one value is that
/// value); both within `bounds`, the low bound excluded when `above_lo`.
fn set_or_draw(
    t: &Table<'_>,
    key: &str,
    (bounds, above_lo): ((f64, f64), bool),
    (field, range): (&mut f64, &mut Option<(f64, f64)>),
) {
    let is_range = t
        .get(key)
        .is_some_and(|n| matches!(n.kind, crate::input::node::NodeKind::Array(_)));
    if !is_range {
        if above_lo {
            set_positive(t, key, bounds.1, field);
        } else {
            set(t, key, bounds, field);
        }
        return;
    }
    match t.number_range(key, bounds, above_lo) {
        Some((low, high)) if low < high => *range = Some((low, high)),
        Some((v, _)) => *field = v,
        None => {}
    }
}

/// Sets `field` from `key` if it is above 0 and at most `hi`.
fn set_positive(t: &Table<'_>, key: &str, hi: f64, field: &mut f64) {
    if let Some((v, _)) = t.positive_number(key, hi) {
        *field = v;
    }
}

/// The range of a log2 of a size in VMs (sizes are at most 2^30 VMs).
const LOG2_SIZE: (f64, f64) = (0.0, 30.0);
/// The largest time or duration a model parameter may give, seconds (10^12).
const SECS: f64 = crate::time::MAX_SECS as f64;
/// The smallest scale of inter-arrival times, seconds: a millisecond (a denormal scale put
/// every arrival at time 0).
const MIN_SCALE_S: f64 = 1e-3;
/// The largest Weibull or gamma shape or scale that is not a time.
const SHAPE: f64 = 1e6;

fn set_prob(t: &Table<'_>, key: &str, field: &mut f64) {
    if let Some((v, _)) = t.number_in(key, 0.0, 1.0) {
        *field = v;
    }
}

fn read_das2(t: Option<Table<'_>>) -> Das2 {
    let mut m = Das2::default();
    let Some(t) = t else { return m };
    set_prob(&t, "p_one", &mut m.p_one);
    set_prob(&t, "p_pow2", &mut m.p_pow2);
    set(&t, "size_l", LOG2_SIZE, &mut m.size_l);
    set(&t, "size_m", LOG2_SIZE, &mut m.size_m);
    set(&t, "size_h", LOG2_SIZE, &mut m.size_h);
    set_prob(&t, "size_q", &mut m.size_q);
    // ln of seconds: e^±60 is far beyond any duration, and the draws are cut at
    // duration_max_s anyway.
    set(&t, "duration_a", (-60.0, 60.0), &mut m.duration_a);
    set_positive(&t, "duration_b", 60.0, &mut m.duration_b);
    set_positive(&t, "duration_max_s", SECS, &mut m.duration_max_s);
    set(
        &t,
        "arrival_scale",
        (MIN_SCALE_S, SECS),
        &mut m.arrival_scale,
    );
    set(&t, "arrival_shape", (0.01, 100.0), &mut m.arrival_shape);
    if m.p_one + m.p_pow2 > 1.0 {
        t.diags.error(
            &t.node.loc,
            format!(
                "p_one + p_pow2 = {} exceeds 1 in {}",
                m.p_one + m.p_pow2,
                t.what
            ),
            None,
        );
    }
    if !(m.size_l <= m.size_m && m.size_m <= m.size_h) {
        t.diags.error(
            &t.node.loc,
            format!("{} needs size_l ≤ size_m ≤ size_h", t.what),
            None,
        );
    }
    t.finish();
    m
}

fn read_lublin(t: Option<Table<'_>>) -> Lublin99 {
    let mut m = Lublin99::default();
    let Some(t) = t else { return m };
    set_prob(&t, "serial_prob", &mut m.serial_prob);
    set_prob(&t, "pow2_prob", &mut m.pow2_prob);
    set(&t, "u_low", LOG2_SIZE, &mut m.u_low);
    let u_med = (&mut m.u_med, &mut m.per_run.u_med);
    set_or_draw(&t, "u_med", (LOG2_SIZE, false), u_med);
    set(&t, "u_hi", LOG2_SIZE, &mut m.u_hi);
    set_prob(&t, "u_prob", &mut m.u_prob);
    for (k, f) in [
        ("a1", &mut m.a1),
        ("b1", &mut m.b1),
        ("a2", &mut m.a2),
        ("b2", &mut m.b2),
        ("a_arr", &mut m.a_arr),
        ("a_num", &mut m.a_num),
        ("b_num", &mut m.b_num),
        ("arar", &mut m.arar),
    ] {
        set_positive(&t, k, SHAPE, f);
    }
    let b_arr = (&mut m.b_arr, &mut m.per_run.b_arr);
    set_or_draw(&t, "b_arr", ((0.0, SHAPE), true), b_arr);
    set(&t, "pa", (-1e3, 1e3), &mut m.pa);
    set(&t, "pb", (-1e3, 1e3), &mut m.pb);
    if let Some((b, _)) = t.bool("daily_cycle") {
        m.daily_cycle = b;
    }
    t.finish();
    m
}

fn read_gwa(t: Option<Table<'_>>) -> Gwa {
    let mut m = Gwa::default();
    let Some(t) = t else { return m };
    set(
        &t,
        "arrival_scale",
        (MIN_SCALE_S, SECS),
        &mut m.arrival_scale,
    );
    set(&t, "arrival_shape", (0.01, 100.0), &mut m.arrival_shape);
    set_positive(&t, "tasks_scale", SHAPE, &mut m.tasks_scale);
    set(&t, "tasks_shape", (0.01, 100.0), &mut m.tasks_shape);
    set_positive(&t, "duration_mean", SECS, &mut m.duration_mean);
    set(&t, "duration_sd", (0.0, SECS), &mut m.duration_sd);
    t.finish();
    m
}

fn read_mix(t: Option<Table<'_>>) -> TypeMix {
    let mut mix = TypeMix::default();
    let Some(t) = t else { return mix };
    for (i, k) in [
        "cancellable",
        "suspendable",
        "migratable",
        "non_preemptable",
    ]
    .iter()
    .enumerate()
    {
        if let Some((v, _)) = t.number_in(k, 0.0, 1e9) {
            mix.weights[i] = v;
        }
    }
    if mix.weights.iter().sum::<f64>() <= 0.0 {
        t.diags.error(
            &t.node.loc,
            format!("{} gives every lease type a zero share", t.what),
            Some("give at least one type a positive share".into()),
        );
    }
    if let Some((share, _)) = t.number_in("best_effort", 0.0, 1.0) {
        mix = mix.with_best_effort_share(share);
    }
    t.finish();
    mix
}

fn read_deadlines(t: Option<Table<'_>>) -> (Deadlines, bool) {
    let mut d = Deadlines::default();
    let Some(t) = t else { return (d, false) };
    set_prob(&t, "low_urgency", &mut d.low_urgency);
    set_positive(&t, "low_mean", super::MAX_RATIO, &mut d.low_mean);
    set_positive(&t, "high_mean", super::MAX_RATIO, &mut d.high_mean);
    for (k, f) in [
        ("low_sd", &mut d.low_sd),
        ("high_sd", &mut d.high_sd),
        ("min_ratio", &mut d.min_ratio),
    ] {
        if let Some((v, _)) = t.number_in(k, 0.0, 1e6) {
            *f = v;
        }
    }
    let soft = t.bool("best_effort").is_some_and(|(b, _)| b);
    t.finish();
    (d, soft)
}

/// When and how much a workload's model generates.
struct Window {
    /// The span arrivals fall in.
    span: EmuDuration,
    /// Offset of the first arrival.
    start: EmuTime,
    /// `max_requests`, if set.
    max_given: Option<usize>,
    /// How many times more frequent arrivals are (`rate_factor`).
    rate: f64,
    /// The span the model runs over: span × rate.
    model_span: EmuDuration,
}

/// The window a workload's model generates over; `None` when the model would run past
/// 10^12 s (reported).
fn read_window(w: &Table<'_>, target: &Target<'_>) -> Option<Window> {
    let span = w
        .duration("span")
        .map_or(EmuDuration::from_secs(2 * 86_400), |(d, _)| d);
    let start = w
        .duration("start")
        .map_or(EmuTime::ZERO, |(d, _)| EmuTime::ZERO + d);
    let max_given =
        (w.positive("max_requests", MAX_WORKLOAD_REQUESTS as u64)).map(|(v, _)| v as usize);
    // Arrivals `rate_factor` times as frequent: the model generates over a span that many
    // times longer and its arrival times are divided by it (the usual way to vary a trace's
    // load without changing its jobs).
    let rate = w
        .number_in("rate_factor", 1e-6, 1e6)
        .map_or(1.0, |(v, _)| v);
    let model_secs = span.as_secs_f64() * rate;
    if model_secs > SECS {
        let at = w
            .get("rate_factor")
            .or_else(|| w.get("span"))
            .map_or(&w.node.loc, |n| &n.loc);
        w.diags.error(
            at,
            format!(
                "span × rate_factor = {model_secs} s in workload `{}`: the model would generate past 10^12 s",
                target.name
            ),
            Some("the span the model generates over, span × rate_factor, runs up to 10^12 s; shorten span or lower rate_factor".into()),
        );
        return None;
    }
    Some(Window {
        span,
        start,
        max_given,
        rate,
        model_span: EmuDuration::from_secs_f64(model_secs),
    })
}

/// A workload's VMs: memory, cores each, and the most a request takes (`max_vms`, at most
/// what the largest cluster it may use holds); `None` when no such cluster holds one
/// (reported).
fn read_vms(w: &Table<'_>, target: &Target<'_>) -> Option<(u32, u32, u32)> {
    let diags: &Diags = w.diags;
    let mem_mb = w
        .positive("mem_mb", 1 << 30)
        .map_or(1024, |(v, _)| v as u32);
    let cores_per_vm = w
        .positive("cores_per_vm", 1 << 16)
        .map_or(1, |(v, _)| v as u32);
    let capacity = target
        .clusters
        .iter()
        .map(|c| super::vm_capacity(c, cores_per_vm, mem_mb))
        .max()
        .unwrap_or(0);
    let max_vms = match w.positive("max_vms", 1 << 30) {
        Some((v, loc)) if v > capacity => {
            diags.error(loc, format!("`max_vms` = {v} but the largest cluster this workload may use holds {capacity} VMs of {mem_mb} MB"), Some(format!("use at most {capacity}, or leave it out")));
            capacity
        }
        Some((v, _)) => v,
        None => capacity,
    } as u32;
    if capacity == 0 {
        diags.error(&w.node.loc, format!("no cluster workload `{}` may use can hold a VM of {mem_mb} MB and {cores_per_vm} core(s)", target.name), Some("lower mem_mb or cores_per_vm".into()));
        return None;
    }
    Some((mem_mb, cores_per_vm, max_vms))
}

/// Reads the generator settings of `w` (model `model`) and appends its requests.
pub(super) fn read(
    w: &Table<'_>,
    model: WorkloadModel,
    target: &Target<'_>,
    run_seed: u64,
    base_dir: Option<&Path>,
    sink: &mut Sink<'_>,
) -> Vec<RequestId> {
    let diags: &Diags = w.diags;
    let Some((window, (mem_mb, cores_per_vm, max_vms))) =
        read_window(w, target).and_then(|window| Some((window, read_vms(w, target)?)))
    else {
        w.skip(KEYS);
        return Vec::new();
    };
    let Window {
        span,
        start,
        max_given,
        rate,
        model_span,
    } = window;
    let max_jobs = max_given.unwrap_or(DEFAULT_MAX_REQUESTS);
    let seed = stream_seed(run_seed, &format!("workload:{}", target.name));
    // Never more than one past the topology's cap is generated (an error below).
    let room = MAX_TOPOLOGY_REQUESTS.saturating_sub(sink.requests.len()) + 1;
    let limits = (model_span, max_vms, max_jobs.min(room));
    let jobs = read_jobs(w, model, limits, seed, base_dir);
    if max_given.is_none() && jobs.len() >= max_jobs && model.is_modelled() {
        too_many(w, target.name, (&jobs, rate), span);
        return Vec::new();
    }
    let mix = read_mix(w.table("mix"));
    let (deadlines, soft) = read_deadlines(w.table("deadlines"));
    if let (Origin::Local, Some(n)) = (target.origin, w.get("mix")) {
        diags.error(
            &n.loc,
            "local requests are all non-preemptable: a type mix does not apply",
            Some("remove [workload.mix]".into()),
        );
    }
    let jobs = scaled_arrivals(jobs, rate);
    let moldable = w.bool("moldable").is_some_and(|(b, _)| b);
    let kinds = workload::assign(&jobs, &mix, &deadlines, stream_seed(seed, "types"));
    let shape = RequestShape {
        start,
        mem_mb,
        cores_per_vm,
        moldable,
        soft,
    };
    if let Some(problem) = past_the_end(&jobs, &kinds, target, &shape) {
        diags.error(
            &w.node.loc,
            format!("workload `{}`: {problem}", target.name),
            Some("arrivals and deadlines run up to 10^12 s: lower `start`, the span, the durations or the deadline ratios ([workload.deadlines])".into()),
        );
        return Vec::new();
    }
    let total = sink.requests.len() + jobs.len();
    if total > MAX_TOPOLOGY_REQUESTS {
        diags.error(
            &w.node.loc,
            format!(
                "workload `{}` brings the topology to {total} requests, more than {MAX_TOPOLOGY_REQUESTS}",
                target.name
            ),
            Some("lower max_requests, or split the study into several topologies (each request takes memory for the whole run)".into()),
        );
        return Vec::new();
    }
    push_requests(&jobs, kinds, target, &shape, sink)
}

/// The jobs with their arrivals divided by `rate` (the workload's `arrival_rate`).
fn scaled_arrivals(jobs: Vec<workload::Job>, rate: f64) -> Vec<workload::Job> {
    if rate == 1.0 {
        return jobs;
    }
    jobs.into_iter()
        .map(|j| workload::Job {
            arrival: EmuDuration::from_secs_f64(j.arrival.as_secs_f64() / rate),
            ..j
        })
        .collect()
}

impl WorkloadModel {
    /// Whether requests come from a model (DAS-2, Lublin99, GWA) rather than a list or a trace.
    fn is_modelled(self) -> bool {
        matches!(
            self,
            WorkloadModel::Das2 | WorkloadModel::Lublin99 | WorkloadModel::Gwa
        )
    }
}

/// Requests in a topology: far beyond any study (requests are numbered in 32 bits, and each
/// holds memory for the whole run).
pub(super) const MAX_TOPOLOGY_REQUESTS: usize = 100_000_000;

/// The largest `max_requests` of a workload.
const MAX_WORKLOAD_REQUESTS: usize = 10_000_000;

/// A workload's `max_requests` when it sets none.
const DEFAULT_MAX_REQUESTS: usize = 1_000_000;

/// Refuses a model that generates past the default request cap within its span: parameters
/// that make an absurd number of requests, which the cap would silently cut to its first
/// [`DEFAULT_MAX_REQUESTS`] (arriving in a fraction of the span).
fn too_many(w: &Table<'_>, name: &str, (jobs, rate): (&[workload::Job], f64), span: EmuDuration) {
    let reached = jobs.last().map_or(0.0, |j| j.arrival.as_secs_f64() / rate);
    w.diags.error(
        &w.node.loc,
        format!(
            "workload `{}` makes more than {DEFAULT_MAX_REQUESTS} requests (the default \
             max_requests): request {} arrives {reached:.0} s into a span of {} s",
            super::shown(name),
            jobs.len(),
            span.as_secs_f64()
        ),
        Some(format!(
            "lower the model's arrival rate or shorten the span; or set max_requests (at \
             most {MAX_WORKLOAD_REQUESTS}) to keep only the first requests"
        )),
    );
}

/// The jobs of `model` over `span` (at most `max_jobs`, none over `max_vms`); settings for
/// another model are a problem.
fn read_jobs(
    w: &Table<'_>,
    model: WorkloadModel,
    (model_span, max_vms, max_jobs): (EmuDuration, u32, usize),
    seed: u64,
    base_dir: Option<&Path>,
) -> Vec<workload::Job> {
    let generated = |jobs: Result<Vec<workload::Job>, String>| {
        jobs.unwrap_or_else(|e| {
            w.diags.error(
                &w.node.loc,
                format!("workload cannot be generated: {e}"),
                Some("see the model's parameters in docs/topology.md".into()),
            );
            Vec::new()
        })
    };
    let jobs = match model {
        WorkloadModel::Das2 => generated(workload::generate(
            &Model::Das2(read_das2(w.table("das2"))),
            model_span,
            max_vms,
            max_jobs,
            seed,
        )),
        WorkloadModel::Lublin99 => generated(workload::generate(
            &Model::Lublin99(read_lublin(w.table("lublin99"))),
            model_span,
            max_vms,
            max_jobs,
            seed,
        )),
        WorkloadModel::Gwa => generated(workload::generate(
            &Model::Gwa(read_gwa(w.table("gwa"))),
            model_span,
            max_vms,
            max_jobs,
            seed,
        )),
        WorkloadModel::Swf | WorkloadModel::Inline => {
            read_trace(w, TraceFormat::Swf, base_dir, max_vms, max_jobs)
        }
        WorkloadModel::Gwf => read_trace(w, TraceFormat::Gwf, base_dir, max_vms, max_jobs),
    };
    let model = model.as_str();
    for other in generated_models() {
        if other != model {
            if let Some(n) = w.get(other) {
                w.diags.error(
                    &n.loc,
                    format!("`{other}` settings, but the workload's model is `{model}`"),
                    Some(format!("set model = \"{other}\", or remove the table")),
                );
            }
        }
    }
    jobs
}

/// What every generated request of a workload shares.
struct RequestShape {
    start: EmuTime,
    mem_mb: u32,
    cores_per_vm: u32,
    moldable: bool,
    /// Whether best-effort requests get (soft) deadlines too.
    soft: bool,
}

/// The first job whose arrival or deadline would be past [`crate::time::MAX_SECS`], said in a
/// few words; computed in floating point, so nothing saturates on the way.
fn past_the_end(
    jobs: &[workload::Job],
    kinds: &[(LeaseType, f64)],
    target: &Target<'_>,
    shape: &RequestShape,
) -> Option<String> {
    let start = shape.start.as_secs_f64();
    for (n, (job, (kind, ratio))) in jobs.iter().zip(kinds).enumerate() {
        let arrival = start + job.arrival.as_secs_f64();
        if arrival > SECS {
            return Some(format!("request {} would arrive at {arrival} s", n + 1));
        }
        let lease_type = match target.origin {
            Origin::Local => LeaseType::DeadlineNonPreemptable,
            Origin::External => *kind,
        };
        let has_deadline =
            target.origin == Origin::External && (lease_type.deadline_constrained() || shape.soft);
        // A moldable request's deadline is resolved on its cluster, from a run time of at
        // most its VMs' work.
        let work = if shape.moldable {
            f64::from(job.vms)
        } else {
            1.0
        };
        let deadline = arrival + job.duration.as_secs_f64() * work * ratio;
        if has_deadline && deadline > SECS {
            return Some(format!(
                "request {} would have its deadline at {deadline} s",
                n + 1
            ));
        }
    }
    None
}

/// One request per job, with its type and deadline (ratio), into `sink`.
fn push_requests(
    jobs: &[workload::Job],
    kinds: Vec<(LeaseType, f64)>,
    target: &Target<'_>,
    shape: &RequestShape,
    sink: &mut Sink<'_>,
) -> Vec<RequestId> {
    let mut ids = Vec::with_capacity(jobs.len());
    for (n, (job, (kind, ratio))) in jobs.iter().zip(kinds).enumerate() {
        let id = RequestId(sink.requests.len() as u32);
        let arrival = shape.start + job.arrival;
        let lease_type = match target.origin {
            Origin::Local => LeaseType::DeadlineNonPreemptable,
            Origin::External => kind,
        };
        let has_deadline =
            target.origin == Origin::External && (lease_type.deadline_constrained() || shape.soft);
        // A moldable request's run time depends on the cluster that runs it: its deadline is
        // resolved there from the ratio.
        let deadline = (has_deadline && !shape.moldable)
            .then(|| arrival + EmuDuration::from_secs_f64(job.duration.as_secs_f64() * ratio));
        let deadline_ratio = (has_deadline && shape.moldable).then_some(ratio);
        sink.requests.push(LeaseRequest {
            id,
            origin: target.origin,
            grid: target.grid,
            cluster: target.cluster,
            arrival,
            start: None,
            vms: job.vms,
            cores_per_vm: shape.cores_per_vm,
            mem_mb: shape.mem_mb,
            duration: job.duration,
            lease_type,
            deadline,
            moldable: shape.moldable,
            deadline_ratio,
        });
        sink.labels.push(format!("{}-{}", target.name, n + 1));
        ids.push(id);
    }
    ids
}

/// A trace format a workload replays; its settings table has the format's name.
#[derive(Clone, Copy, PartialEq)]
enum TraceFormat {
    /// Standard Workload Format (Parallel Workloads Archive).
    Swf,
    /// Grid Workload Format (Grid Workloads Archive).
    Gwf,
}

impl TraceFormat {
    /// The settings table's key, also the files' usual extension.
    fn key(self) -> &'static str {
        match self {
            TraceFormat::Swf => "swf",
            TraceFormat::Gwf => "gwf",
        }
    }

    /// The format's name in messages.
    fn name(self) -> &'static str {
        match self {
            TraceFormat::Swf => "SWF",
            TraceFormat::Gwf => "GWF",
        }
    }
}

/// What `[workload.<format>]` says: the trace's path (with its place), processors per VM
/// and, for GWF, the site kept.
struct TraceTable<'a> {
    path: (&'a str, &'a Loc),
    procs_per_vm: u32,
    site: Option<(String, &'a Loc)>,
}

/// Reads `[workload.<format>]`; `None`, with the problem recorded, without it or its path.
fn trace_table<'a>(w: &Table<'a>, format: TraceFormat) -> Option<TraceTable<'a>> {
    let (key, name) = (format.key(), format.name());
    let Some(t) = w.table(key) else {
        let article = if format == TraceFormat::Swf {
            "an"
        } else {
            "a"
        };
        let hint =
            format!("{article} {name} workload needs [workload.{key}] with path = \"trace.{key}\"");
        w.missing(key, &hint);
        return None;
    };
    let path = t.req_str(
        "path",
        &format!("path = \"file.{key}\", relative to the topology file"),
    );
    let procs_per_vm = t
        .positive("procs_per_vm", 1 << 20)
        .map_or(1, |(v, _)| v as u32);
    let site = (format == TraceFormat::Gwf)
        .then(|| t.str_or_int("site"))
        .flatten();
    t.finish();
    Some(TraceTable {
        path: path?,
        procs_per_vm,
        site,
    })
}

/// The jobs of the trace `[workload.<format>]` names, or none (with the problems recorded).
fn read_trace(
    w: &Table<'_>,
    format: TraceFormat,
    base_dir: Option<&Path>,
    max_vms: u32,
    max_jobs: usize,
) -> Vec<workload::Job> {
    let name = format.name();
    let Some(TraceTable {
        path: (path, loc),
        procs_per_vm,
        site,
    }) = trace_table(w, format)
    else {
        return Vec::new();
    };
    let full = base_dir.map_or_else(|| Path::new(path).to_path_buf(), |d| d.join(path));
    // Streamed: memory holds the jobs, not the file (a trace may be gigabytes, or endless).
    let cannot_read = |e: &dyn std::fmt::Display| {
        w.diags.error(
            loc,
            format!("cannot read {name} trace {}: {e}", full.display()),
            Some("paths are relative to the topology file".into()),
        );
    };
    let file = match workload::tracefile::open(&full) {
        Ok(f) => f,
        Err(e) => {
            cannot_read(&e);
            return Vec::new();
        }
    };
    let mut site_known = true;
    let jobs = match format {
        TraceFormat::Swf => workload::swf::read(file)
            .trace
            .map(|trace| workload::swf::to_jobs(&trace, max_vms, max_jobs, procs_per_vm)),
        TraceFormat::Gwf => workload::gwf::read(file).trace.map(|trace| {
            let site = site.map(|(s, site_loc)| {
                site_known = check_site(w, &trace, &s, site_loc, &full);
                s
            });
            workload::gwf::to_jobs(&trace, site.as_deref(), max_vms, max_jobs, procs_per_vm)
        }),
    };
    let bad_lines = |errors: Vec<workload::tracefile::LineError>| {
        for e in errors {
            w.diags
                .error(loc, format!("{}: {e}", full.display()), Some(e.fix));
        }
        Vec::new()
    };
    match jobs {
        // A workload that replays nothing is a wrong path or trace, not an idle Grid.
        Ok(Ok((jobs, _))) if jobs.is_empty() && site_known => {
            no_job_to_replay(w.diags, loc, &full);
            jobs
        }
        Ok(Ok((jobs, _))) => jobs,
        Ok(Err(oom)) => {
            w.diags.error(
                loc,
                format!("{}: {oom}", full.display()),
                Some(format!("lower max_requests, or {}", OutOfMemory::FIX)),
            );
            Vec::new()
        }
        Err(ReadError::Io(e)) => {
            cannot_read(&e);
            Vec::new()
        }
        Err(ReadError::Stop(e)) => bad_lines(vec![e]),
        Err(ReadError::Malformed(errors)) => bad_lines(errors),
    }
}

/// The error for a trace that replays nothing: a wrong path or trace, not an idle Grid.
fn no_job_to_replay(diags: &Diags, loc: &Loc, full: &Path) {
    diags.error(
        loc,
        format!(
            "{}: no job to replay (no job line, or none with a size and a run time)",
            full.display()
        ),
        Some("give a trace with jobs, or remove this workload".into()),
    );
}

/// An error if no job of `trace` was submitted at `site`: most likely a typo. Whether it is
/// known.
fn check_site(
    w: &Table<'_>,
    trace: &workload::gwf::GwfTrace,
    site: &str,
    loc: &Loc,
    file: &Path,
) -> bool {
    let sites = trace.sites();
    if sites.iter().any(|(s, _)| *s == site) {
        return true;
    }
    let hint = if sites.is_empty() {
        "the trace gives no OrigSiteID (field 17): remove `site`".to_string()
    } else {
        let names = sites.iter().map(|(s, _)| *s);
        let mut shown: Vec<&str> = names.clone().take(20).collect();
        if sites.len() > shown.len() {
            shown.push("...");
        }
        let shown = shown.join(", ");
        match did_you_mean(site, names) {
            Some(c) => format!("did you mean `{c}`? (the trace's sites, OrigSiteID: {shown})"),
            None => format!("the trace's sites (OrigSiteID, field 17) are {shown}"),
        }
    };
    w.diags.error(
        loc,
        format!(
            "no job of {} was submitted at site `{site}`",
            file.display()
        ),
        Some(hint),
    );
    false
}

/// The models that generate or read requests (every model but `inline`): the names of their
/// settings tables.
fn generated_models() -> impl Iterator<Item = &'static str> {
    WorkloadModel::ALL
        .iter()
        .filter(|m| **m != WorkloadModel::Inline)
        .map(|m| m.as_str())
}

/// Errors for generator keys on an inline workload.
pub(super) fn reject_on_inline(w: &Table<'_>) {
    for k in KEYS.iter().filter(|k| **k != "model") {
        if let Some(n) = w.get(k) {
            w.diags.error(
                &n.loc,
                format!("`{k}` only applies to generated workloads"),
                Some(format!("set model = {}, or remove it", quoted_models())),
            );
        }
    }
}

/// The generated models, quoted, as a hint lists them: `"das2", ... or "gwf"`.
fn quoted_models() -> String {
    let quoted: Vec<String> = generated_models().map(|m| format!("\"{m}\"")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_model_has_its_settings_key_and_is_named_in_hints() {
        for m in generated_models() {
            assert!(KEYS.contains(&m), "`{m}` is missing from KEYS");
        }
        assert_eq!(
            quoted_models(),
            "\"das2\", \"lublin99\", \"gwa\", \"swf\" or \"gwf\""
        );
    }
}
