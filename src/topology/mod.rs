//! Topologies: the TOML schema (documented in `docs/topology.md`), `--set` overrides,
//! validation that reports every problem with its place, and the validated [`Topology`] the
//! emulation is built from.

mod bounds;
mod build;
mod checks;
mod derived;
mod emulation_read;
mod generated;
mod grids_read;
mod igg_read;
mod lrms_read;
mod names;
mod peering_read;
mod policies;
pub(crate) mod profile;
mod requests;
mod workloads;

use std::path::Path;

use crate::igg::dispatch::{ClusterModel, CV_EXTERNAL, CV_LOCAL};
use crate::input::node::{self, apply_set, parse_document, Node, Origin as NodeOrigin};
use crate::input::table::Table;
use crate::model::{ClusterId, GridId, LeaseRequest, Origin, RequestId};
use crate::policy::{Chosen, Registry};
use crate::time::{ClockMode, EmuDuration, EmuTime};
use diag::{suggest, Diags, Loc, Report};

use checks::*;
use emulation_read::*;
use grids_read::*;
use igg_read::*;
use lrms_read::*;
use peering_read::*;

pub use crate::input::diag;
pub use build::{Federation, Hosts, Request, Users};
pub use emulation_read::{override_sets, override_sets_seed, seed_override};
pub(crate) use names::{check_name, shown};
pub use policies::ExternalSettings;
pub use profile::{LrmsProfile, Timings};

/// The topology run when `igemu run` gets no file (also shipped as `topologies/quickstart.toml`).
pub const QUICKSTART: &str = include_str!("../../topologies/quickstart.toml");

/// When a run ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EndCondition {
    /// When every request has reached a terminal state, or at `horizon` at the latest.
    AllDone {
        /// Safety limit; requests still open then are `unfinished`.
        horizon: EmuTime,
    },
    /// At a fixed emulated time.
    At(EmuTime),
}

impl EndCondition {
    /// The latest time the run may reach.
    pub fn limit(self) -> EmuTime {
        match self {
            EndCondition::AllDone { horizon } => horizon,
            EndCondition::At(t) => t,
        }
    }
}

/// `[emulation]`: how the run is driven.
#[derive(Clone, Debug, PartialEq)]
pub struct Emulation {
    /// Virtual or realtime×speedup.
    pub mode: ClockMode,
    /// Seed of every random stream.
    pub seed: u64,
    /// When the run ends.
    pub end: EndCondition,
    /// The speed (MIPS per core) request durations are stated at; `None`: the core-weighted
    /// mean speed of every host in the topology, so that equal speeds change nothing.
    pub reference_mips: Option<u32>,
    /// Which perturbed order same-time deliveries run in (interleaving exploration, in
    /// either mode; see [`crate::time::interleave`]); 0: the FIFO order.
    pub interleaving: u64,
    /// The most messages the run may send: past it, it stops with an error
    /// (`max_messages`; runs on one thread); `None`: no cap.
    pub max_messages: Option<u64>,
}

named_enum! {
    /// How emulated time runs (`[emulation] mode`).
    ModeName {
        /// Jump from event to event, deterministic.
        Virtual => "virtual",
        /// Accelerated wall-clock time.
        Realtime => "realtime",
    }
}

named_enum! {
    /// Where a workload's requests come from (`model`).
    WorkloadModel {
        /// Listed in the topology.
        Inline => "inline",
        /// Generated: DAS-2 (paper 000).
        Das2 => "das2",
        /// Generated: Lublin & Feitelson 1999.
        Lublin99 => "lublin99",
        /// Generated: the GWA bag-of-tasks model (paper 002).
        Gwa => "gwa",
        /// Read from an SWF trace (Parallel Workloads Archive).
        Swf => "swf",
        /// Read from a GWF trace (Grid Workloads Archive).
        Gwf => "gwf",
    }
}

impl DelayKind {
    /// Whether a delay of this kind is set by `key`.
    fn takes(self, key: &str) -> bool {
        match self {
            DelayKind::Fixed => key == "value",
            DelayKind::Uniform => key == "min" || key == "max",
            DelayKind::Exponential => key == "mean",
        }
    }
}

named_enum! {
    /// The distribution of an IGG link's delay (`[fault] delay.kind`).
    DelayKind {
        /// Always `value`.
        Fixed => "fixed",
        /// Uniform in `[min, max]`.
        Uniform => "uniform",
        /// Exponential with mean `mean`.
        Exponential => "exponential",
    }
}

named_enum! {
    /// The LRMS's scheduling policy for external leases.
    SchedulerKind {
        /// First-come-first-served, no backfilling.
        Fcfs => "fcfs",
        /// Conservative backfilling: every waiting lease holds a reservation.
        Conservative => "conservative",
        /// EASY (aggressive) backfilling with `pivots` reservations.
        Easy => "easy",
    }
}

pub use crate::igg::dispatch::DispatchName;

pub use crate::model::HostSpec;

pub use crate::lrms::names::{AdmissionName, AdmissionSettings, PacpSettings, PreemptionName};

/// Settings of one cluster's LRMS (profile defaults, then `[lrms]`, then the cluster's own).
#[derive(Clone, Debug, PartialEq)]
pub struct LrmsSettings {
    /// Timings and defaults.
    pub profile: LrmsProfile,
    /// How external leases are scheduled (with EASY's pivots).
    pub backfilling: crate::lrms::Backfilling,
    /// Which leases a local request preempts (`preemption`, `preemption_fallback`).
    pub preemption: Chosen,
    /// CP's weight α of the overhead score (`cp_alpha`).
    pub cp_alpha: f64,
    /// Admission control of external requests (`admission`, `admission_fallback`).
    pub admission: Chosen,
    /// The shipped admission policies' settings: PACP's deadline model and ω, the fixed
    /// policy's queue limit and RACP's scale.
    pub admission_settings: AdmissionSettings,
    /// Whether VM memory limits placement (false: overcommitted, only cores count).
    pub enforce_memory: bool,
    /// Search steps one preemption decision may take when room is not additive.
    pub search_budget: usize,
    /// Whether waiting reservations move forward when capacity is freed early (schedule
    /// compression, as in conservative backfilling on cancellation).
    pub compress: bool,
    /// How local requests are treated: reserved on arrival (preempting) or queued.
    pub locals: crate::lrms::LocalRequests,
    /// How an external moldable request runs: spread over the cluster or as one server's
    /// single job (`moldable`, paper 002).
    pub moldable: crate::lrms::Moldable,
    /// Local and Grid partitions (from the Grid's provider policy), each with its size and
    /// Lawson and Smirni's borrowing rule ([`crate::lrms::partition`]).
    pub partitions: crate::lrms::provider::Partitions,
    /// How many waiting requests, from the front of the queue, a scheduling pass considers
    /// (`backfill_depth`, Slurm's `bf_max_job_test`); `None`: every one.
    pub backfill_depth: Option<usize>,
}

impl SchedulerKind {
    /// The backfilling this names, with EASY's `pivots`.
    pub fn backfilling(self, pivots: u32) -> crate::lrms::Backfilling {
        use crate::lrms::Backfilling;
        match self {
            SchedulerKind::Fcfs => Backfilling::Fcfs,
            SchedulerKind::Conservative => Backfilling::Conservative,
            SchedulerKind::Easy => Backfilling::Easy { pivots },
        }
    }
}

/// A cluster (resource provider).
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// Name, unique within its Grid.
    pub name: String,
    /// The Grid it belongs to.
    pub grid: GridId,
    /// Its hosts, one entry per host.
    pub hosts: Vec<HostSpec>,
    /// Its LRMS.
    pub lrms: LrmsSettings,
}

impl Cluster {
    /// `grid/cluster`, the name used in outputs.
    pub fn qualified_name(&self, topo: &Topology) -> String {
        format!(
            "{}/{}",
            topo.grids[usize::from(self.grid.0)].name,
            self.name
        )
    }
    /// Total cores.
    pub fn cores(&self) -> u64 {
        self.hosts.iter().map(|h| u64::from(h.cores)).sum()
    }

    /// Σ cores × MIPS of the hosts: with [`Cluster::cores`], the core-weighted mean speed.
    fn core_mips(&self) -> u64 {
        self.hosts
            .iter()
            .map(|h| u64::from(h.cores) * u64::from(h.mips))
            .sum()
    }
}

/// Settings of one IGG (`[igg]` defaults, then the Grid's own).
#[derive(Clone, Debug, PartialEq)]
pub struct IggSettings {
    /// How external requests are placed on clusters (`dispatch`, `dispatch_fallback`).
    pub dispatch: Chosen,
    /// Whether the dispatch policy reads the clusters' published slots (they then publish).
    pub reads_slots: bool,
    /// How the IGG answers peers' offers (`answer`, `answer_fallback`).
    pub answer: Chosen,
    /// Whom the IGG offers requests to when overloaded (`offer`, `offer_fallback`).
    pub offer: Chosen,
    /// Who plays the gateway (`implementation`): igemu's own (`"igemu"`), or an external
    /// process given every input (`"external:CMD ARGS"`).
    pub implementation: Chosen,
    /// Whether a request refused by the chosen cluster is offered to the others.
    pub retry: bool,
    /// Paper 004's resource provider policy of the Grid's clusters, if one is chosen: it sets
    /// their backfilling and partitions.
    pub provider: Option<ProviderPolicy>,
}

/// A Grid with its gateway.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// Unique name.
    pub name: String,
    /// The IGG's settings.
    pub igg: IggSettings,
    /// Its clusters, in file order.
    pub clusters: Vec<ClusterId>,
}

pub use crate::igg::peering::{Contract, ContractKind};

pub use crate::lrms::provider::ProviderPolicy;

named_enum! {
    /// Which contracts hold (`peering.contracts`).
    ContractsMode {
        /// The `[[contract]]` tables as written.
        AsWritten => "as-written",
        /// No peering at all.
        None => "none",
        /// Every contract, fixed-price.
        FixedPrice => "fixed-price",
        /// Every contract, price-range.
        PriceRange => "price-range",
    }
}

named_enum! {
    /// When LRMSs tell their IGG their free time slots (`peering.publication`, paper 004
    /// §4.1).
    PublicationMode {
        /// Every `publish_interval`.
        Periodic => "periodic",
        /// When the IGG asks: at each of its rounds, and for each request it places.
        OnRequest => "on-request",
    }
}

/// `[peering]`: how IGGs share load under their contracts (paper 004 §5).
#[derive(Clone, Debug, PartialEq)]
pub struct Peering {
    /// Which contracts hold.
    pub contracts: ContractsMode,
    /// An IGG whose load over a request's cost window (up to its deadline or virtual
    /// deadline) reaches this (0–1) offers the request to peers.
    pub load_threshold: f64,
    /// Interval between negotiation rounds (queued requests are offered, offers evaluated),
    /// drawn uniformly from `[low, high]` at each round.
    pub interval: (EmuDuration, EmuDuration),
    /// Interval between updates of contract prices, drawn uniformly from `[low, high]`.
    pub price_update: (EmuDuration, EmuDuration),
    /// When LRMSs publish their free time slots.
    pub publication: PublicationMode,
    /// Interval between free-time-slot publications of each LRMS (periodic publication).
    pub publish_interval: EmuDuration,
    /// How far ahead loads and free slots look.
    pub horizon: EmuDuration,
    /// How long a requester waits for an answer before retrying.
    pub offer_timeout: EmuDuration,
    /// How long a provider holds an unconfirmed ticket.
    pub ticket_ttl: EmuDuration,
    /// Retries of an unanswered offer or redirection before giving up.
    pub retries: u32,
    /// β of the quadratic cost function.
    pub steepness: f64,
    /// Providers' cost of a resource unit is drawn uniformly from this range (Table 1).
    pub unit_cost: (f64, f64),
}

impl Default for Peering {
    fn default() -> Self {
        Peering {
            contracts: ContractsMode::AsWritten,
            load_threshold: 0.95,
            interval: (EmuDuration::from_secs(300), EmuDuration::from_secs(300)),
            price_update: (EmuDuration::from_secs(3600), EmuDuration::from_secs(3600)),
            publication: PublicationMode::Periodic,
            publish_interval: EmuDuration::from_secs(600),
            horizon: EmuDuration::from_secs(86_400),
            offer_timeout: EmuDuration::from_secs(60),
            ticket_ttl: EmuDuration::from_secs(600),
            retries: 3,
            steepness: 1.0,
            unit_cost: (0.90, 1.00),
        }
    }
}

/// `[metrics]`: how the per-request metrics are computed ([`crate::metrics::Measures`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSettings {
    /// τ of the bounded slowdown, seconds (> 0): max(1, turnaround / max(run time, τ)).
    pub bounded_slowdown_tau_s: f64,
    /// The warm-up left out of the request figures (`warm_up`): requests submitted before
    /// it run but are not measured (paper 004 §6.1 disregards its runs' first two weeks).
    pub warm_up: EmuDuration,
}

impl MetricsSettings {
    /// Whether a request submitted at `arrival` counts in the request figures (it was
    /// submitted at or after the warm-up).
    pub fn measured(&self, arrival: EmuTime) -> bool {
        arrival >= EmuTime::ZERO + self.warm_up
    }
}

/// τ of the bounded slowdown when the topology sets none, seconds (Feitelson et al.'s and
/// Haizea's 10 s).
pub const DEFAULT_TAU_S: f64 = 10.0;

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            bounded_slowdown_tau_s: DEFAULT_TAU_S,
            warm_up: EmuDuration::ZERO,
        }
    }
}

fn read_metrics(t: Option<Table<'_>>) -> MetricsSettings {
    let mut m = MetricsSettings::default();
    let Some(t) = t else { return m };
    if let Some((v, _)) = t.positive_number("bounded_slowdown_tau_s", crate::time::MAX_SECS as f64)
    {
        m.bounded_slowdown_tau_s = v;
    }
    if let Some((d, _)) = t.duration("warm_up") {
        m.warm_up = d;
    }
    t.finish();
    m
}

/// A source of requests: the local users of a cluster, or an external user agent (DVE
/// manager) of a Grid.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Name, unique in the topology.
    pub name: String,
    /// Local or external.
    pub origin: Origin,
    /// The Grid whose IGG (external) or cluster (local) receives the requests.
    pub grid: GridId,
    /// For local workloads, the cluster.
    pub cluster: Option<ClusterId>,
    /// The requests, in arrival order.
    pub requests: Vec<RequestId>,
    /// The trace file it replays (SWF or GWF workloads), as the topology names it from its
    /// own directory.
    pub trace_file: Option<std::path::PathBuf>,
}

/// A validated topology, ready to emulate.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Name (from the file, or its file stem).
    pub name: String,
    /// How the run is driven.
    pub emulation: Emulation,
    /// Grids in file order.
    pub grids: Vec<Grid>,
    /// Every cluster of every Grid, indexed by [`ClusterId`].
    pub clusters: Vec<Cluster>,
    /// Peering contracts.
    pub contracts: Vec<Contract>,
    /// How IGGs negotiate under them.
    pub peering: Peering,
    /// Faults injected on the links between IGGs.
    pub faults: crate::fault::FaultConfig,
    /// How the per-request metrics are computed (`[metrics]`).
    pub metrics: MetricsSettings,
    /// Request sources.
    pub workloads: Vec<Workload>,
    /// Every request, indexed by [`RequestId`].
    pub requests: Vec<LeaseRequest>,
    /// The label of each request (its `id` in the file, or `<workload>-<n>`).
    pub request_labels: Vec<String>,
    /// The policies it may name (those igemu ships, and a program's own).
    pub registry: Registry,
    /// How external policy processes are run (`[external]`).
    pub external: ExternalSettings,
    /// What validation warns about (`file:line:col: warning: ...`, with a hint): settings
    /// that are valid but make a slow or unbounded run. `validate` and `run` print them.
    pub warnings: Vec<String>,
}

impl Topology {
    /// The label of request `id`.
    pub fn label(&self, id: RequestId) -> &str {
        &self.request_labels[id.0 as usize]
    }

    /// Whether `grid` takes part in peering (a contract in force names it either way): its
    /// IGG then holds rounds every `peering.interval`.
    pub fn peers(&self, grid: GridId) -> bool {
        (self.contract_pairs().iter()).any(|(a, b, _)| *a == grid || *b == grid)
    }

    /// Whether cluster `cid` publishes its free slots to its IGG: when its Grid peers or
    /// dispatches by them.
    pub fn publishes_slots(&self, cid: ClusterId) -> bool {
        let grid = self.cluster(cid).grid;
        self.grids[usize::from(grid.0)].igg.reads_slots || self.peers(grid)
    }

    /// At most how many periodic timer events a run fires by its end (or horizon): each
    /// publishing cluster's publications and each peering IGG's rounds (at the shortest
    /// interval drawn).
    pub fn periodic_events(&self) -> f64 {
        let until = self.emulation.end.limit().as_secs_f64();
        let periodic = self.peering.publication == PublicationMode::Periodic;
        let publishing = (0..self.clusters.len())
            .filter(|&c| periodic && self.publishes_slots(ClusterId(c as u16)))
            .count();
        let rounds = (0..self.grids.len())
            .filter(|&g| self.peers(GridId(g as u16)))
            .count();
        publishing as f64 * until / self.peering.publish_interval.as_secs_f64()
            + rounds as f64 * until / self.peering.interval.0.as_secs_f64()
    }
    /// The contracts in force, as (requester, provider, contract) for each direction,
    /// with `peering.contracts` applied.
    pub fn contract_pairs(&self) -> Vec<(GridId, GridId, Contract)> {
        let mut out = Vec::new();
        if self.peering.contracts == ContractsMode::None {
            return out;
        }
        for c in &self.contracts {
            let mut c = c.clone();
            match self.peering.contracts {
                ContractsMode::FixedPrice => c.kind = ContractKind::FixedPrice,
                ContractsMode::PriceRange => c.kind = ContractKind::PriceRange,
                _ => {}
            }
            out.push((c.from, c.to, c.clone()));
            if c.both_ways {
                out.push((c.to, c.from, c));
            }
        }
        out
    }

    /// The cluster with id `id`.
    pub fn cluster(&self, id: ClusterId) -> &Cluster {
        &self.clusters[usize::from(id.0)]
    }
    /// Total cores over all clusters.
    pub fn total_cores(&self) -> u64 {
        self.clusters.iter().map(Cluster::cores).sum()
    }

    /// How fast `cluster` runs work stated at the reference speed (`emulation.reference_mips`,
    /// or the core-weighted mean speed of every host): the ratio of the reference to the
    /// cluster's core-weighted mean speed, kept as an exact fraction.
    pub fn speed_of(&self, cluster: ClusterId) -> crate::lrms::Speed {
        let c = self.cluster(cluster);
        // reference / cluster speed = (R_num / R_den) / (C_num / C_den).
        let (r_num, r_den): (u128, u128) = match self.emulation.reference_mips {
            Some(r) => (u128::from(r), 1),
            None => (
                self.clusters
                    .iter()
                    .map(|c| u128::from(c.core_mips()))
                    .sum(),
                self.clusters.iter().map(|c| u128::from(c.cores())).sum(),
            ),
        };
        let (c_num, c_den) = (u128::from(c.core_mips()), u128::from(c.cores()));
        let (mut num, mut den) = (r_num * c_den, r_den * c_num);
        let g = gcd(num, den);
        if g > 1 {
            num /= g;
            den /= g;
        }
        while num > u128::from(u64::MAX) || den > u128::from(u64::MAX) {
            num = num.div_ceil(2);
            den = den.div_ceil(2);
        }
        crate::lrms::Speed {
            reference_mips: (num as u64).max(1),
            cluster_mips: (den as u64).max(1),
        }
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Options applied on top of the file: command-line overrides, and the policies the
/// program running igemu offers.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// `--set dotted.key=value`, in order.
    pub sets: Vec<String>,
    /// The policies names are looked up in (default: those igemu ships).
    pub registry: Registry,
}

impl Overrides {
    /// These `--set` overrides, with the shipped policies.
    pub fn sets(sets: Vec<String>) -> Overrides {
        Overrides {
            sets,
            ..Overrides::default()
        }
    }
}

/// Reads and validates a topology file.
pub fn load_file(path: &Path, overrides: &Overrides) -> Result<Topology, Box<Report>> {
    let shown = path.display().to_string();
    let hint = "check the path; `igemu run` with no file runs the embedded quickstart";
    let text = crate::input::read_toml(path, hint).map_err(|mut report| {
        report.sets = overrides.sets.clone();
        report
    })?;
    let stem = path
        .file_stem()
        .map_or("topology".into(), |s| s.to_string_lossy().to_string());
    load_str(&text, &shown, &stem, path.parent(), overrides)
}

/// Whether a document is a sweep file: it names a `topology` and has no `grid`.
fn is_a_sweep(root: &node::Node) -> bool {
    let node::NodeKind::Table(entries) = &root.kind else {
        return false;
    };
    let has = |name: &str| entries.iter().any(|(k, _)| k.name == name);
    has("topology") && !has("grid")
}

/// Overrides one run takes at most (`--set`, and a sweep's `[set]` and `[vary]`): each is
/// placed by a walk of its table, so hundreds of thousands would take minutes before the
/// first error (a sweep file of 16 MiB holds about 800 000).
pub const MAX_OVERRIDES: usize = 10_000;

/// Reads and validates topology text. `path` names it in messages, `default_name` is used
/// when the file has no `name`, and `base_dir` resolves profile paths.
pub fn load_str(
    text: &str,
    path: &str,
    default_name: &str,
    base_dir: Option<&Path>,
    overrides: &Overrides,
) -> Result<Topology, Box<Report>> {
    let diags = Diags::default();
    let mut profiles_seen = Vec::new();
    let topo = parse_document(text, NodeOrigin::File, &diags).and_then(|mut root| {
        if is_a_sweep(&root) {
            diags.error(
                &Loc::WholeFile,
                "this is a sweep file, not a topology",
                Some(format!("run it with `igemu sweep {path}`")),
            );
            return None;
        }
        if overrides.sets.len() > MAX_OVERRIDES {
            diags.error(
                &Loc::Set(MAX_OVERRIDES),
                format!(
                    "{} overrides; a run takes at most {MAX_OVERRIDES}",
                    overrides.sets.len()
                ),
                Some("write the settings into the topology file instead".into()),
            );
            return None;
        }
        for (i, s) in overrides.sets.iter().enumerate() {
            apply_set(&mut root, i, s, &diags);
        }
        for problem in overrides.registry.problems() {
            diags.error(
                &Loc::Builtin,
                format!("the program's policy registry: {problem}"),
                Some("register the policy under another name".into()),
            );
        }
        let registry = &overrides.registry;
        read_topology(
            &root,
            (default_name, base_dir, registry),
            &diags,
            &mut profiles_seen,
        )
    });
    match topo {
        Some(mut t) if diags.is_empty() => {
            let mut warnings = Report::of_file(path, text, diags.take_warnings());
            warnings.sets = overrides.sets.clone();
            warnings.profiles = profiles_seen;
            t.warnings = warnings.warnings();
            Ok(t)
        }
        _ => {
            let mut diagnostics = diags.into_vec();
            diagnostics.sort_by_key(|d| match d.loc {
                Loc::Set(i) => (0, i),
                Loc::File { start, .. } => (1, start),
                Loc::Profile { start, .. } => (2, start),
                Loc::Builtin => (3, 0),
                Loc::WholeFile => (4, 0),
            });
            Err(Box::new(Report {
                path: path.to_string(),
                text: text.to_string(),
                sets: overrides.sets.clone(),
                profiles: profiles_seen,
                diagnostics,
            }))
        }
    }
}

/// How many VMs of `cores_per_vm` cores and `mem_mb` MB the empty cluster can hold (memory
/// counts only where its LRMS enforces it, as the LRMS will place them).
pub fn vm_capacity(cluster: &Cluster, cores_per_vm: u32, mem_mb: u32) -> u64 {
    let enforce = cluster.lrms.enforce_memory;
    cluster
        .hosts
        .iter()
        .map(|h| {
            let memory = if enforce { h.memory_mb } else { u64::MAX };
            crate::model::vms_fitting(h.cores, memory, cores_per_vm, mem_mb)
        })
        .sum()
}

const DEFAULT_PROFILE: &str = "nfs-100mbps";

/// The slowest and fastest realtime speedups (emulated seconds per wall second): slower than
/// a thousandth, a timer's wall time would pass 10^15 s; faster than 10^9, every timer fires
/// at once.
pub const MIN_SPEEDUP: f64 = 1e-3;

/// See [`MIN_SPEEDUP`].
pub const MAX_SPEEDUP: f64 = 1e9;

/// The largest deadline ratio (PACP's mean ratios, a workload's deadline ratios).
pub(crate) const MAX_RATIO: f64 = 1e6;

/// The largest price per resource unit (`unit_cost`, `price_max`): prices stay far from
/// overflowing when multiplied by a Grid's resource units.
const MAX_PRICE: f64 = 1e9;

/// The largest β of the cost function: (βL)² stays finite.
const MAX_STEEPNESS: f64 = 1e6;

/// Hosts in one cluster: a host's index is 16 bits wide wherever hosts are kept (slots,
/// intervals, traces), so a larger cluster would put VMs on the wrong hosts.
pub const MAX_CLUSTER_HOSTS: u64 = u16::MAX as u64;

/// Hosts in a topology: each host and VM costs about 1 KB of memory while the run lasts
/// (docs/performance.md), so a million hosts — and their VMs — already take gigabytes;
/// checked before any host is allocated.
pub const MAX_TOPOLOGY_HOSTS: u64 = 1_000_000;

/// Cores of one host: with `mips` at most 2^30, a cluster's Σ cores × MIPS fits 64 bits.
const MAX_HOST_CORES: u64 = 1 << 16;

/// The key of the run's seed, as [`node::canonical_key`] spells it.
pub(crate) const SEED_KEY: &str = "emulation.seed";

/// α of CP chosen in paper 001 §5.1.
const DEFAULT_CP_ALPHA: f64 = 0.31;

const DEFAULT_HORIZON: EmuDuration = EmuDuration::from_secs(365 * 86_400);

fn read_topology(
    root: &Node,
    (default_name, base_dir, registry): (&str, Option<&Path>, &Registry),
    diags: &Diags,
    profile_sources: &mut Vec<(String, String, String)>,
) -> Option<Topology> {
    let top = Table::of(root, "the topology", diags)?;
    let mut cx = ReadCx {
        diags,
        base_dir,
        profiles: Vec::new(),
        profile_sources,
        hosts: 0,
        registry,
    };
    let name = top
        .str("name")
        .map_or(default_name.to_string(), |(s, _)| s.to_string());
    let _ = top.str("description");
    let emulation = read_emulation(top.table("emulation"));
    let lrms_defaults = top
        .table("lrms")
        .map(|t| read_lrms_table(&t, registry))
        .unwrap_or_default();
    let peering = read_peering(top.table("peering"));
    let metrics = read_metrics(top.table("metrics"));
    let igg_defaults = top
        .table("igg")
        .map(|t| read_igg_table(&t, registry))
        .unwrap_or_default();
    let external = policies::read_external(top.table("external"));
    let (grids, clusters) = read_grids(&top, &lrms_defaults, &igg_defaults, &mut cx);
    if clusters.len() > usize::from(u16::MAX) || grids.len() > usize::from(u16::MAX) {
        top.diags.error(
            &root.loc,
            "too many grids or clusters (at most 65535)",
            None,
        );
        return None;
    }
    let names = GridNames {
        grids: &grids,
        diags,
    };
    let faults = read_faults(top.table("fault"), &names);
    let contracts = read_contracts(&top, &names);
    let run_seed = emulation.as_ref().map_or(1, |e| e.seed);
    let w = workloads::read_workloads(&top, &names, &clusters, run_seed, base_dir);
    let places = w.places;
    top.finish();
    let topo = Topology {
        name,
        emulation: emulation?,
        grids,
        clusters,
        contracts,
        peering,
        faults,
        metrics,
        workloads: w.workloads,
        requests: w.requests,
        request_labels: w.labels,
        registry: registry.clone(),
        external,
        warnings: Vec::new(),
    };
    check_scaled_durations(&topo, &top);
    // Only a topology read without problems is whole enough to count its timers (a cluster
    // may name a Grid that failed to read).
    if top.diags.is_empty() {
        check_periodic_events(&topo, &top);
        bounds::check_round_trips(&topo, &top);
        bounds::check_offered_load(&topo, &places, &top);
    }
    Some(topo)
}
