//! Topologies: the TOML schema (documented in `docs/topology.md`), `--set` overrides,
//! validation that reports every problem with its place, and the validated [`Topology`] the
//! emulation is built from.

mod bounds;
mod build;
mod generated;
mod names;
mod policies;
pub(crate) mod profile;
mod requests;
mod workloads;

pub use crate::input::diag;

use std::path::Path;

use crate::input::node::{self, apply_set, parse_document, Node, Origin as NodeOrigin};
use crate::input::table::Table;
pub use build::{Federation, Hosts, Request, Users};
use diag::{suggest, Diags, Loc, Report};
pub(crate) use names::{check_name, shown};
pub use policies::ExternalSettings;
pub use profile::{LrmsProfile, Timings};

use crate::igg::dispatch::{ClusterModel, CV_EXTERNAL, CV_LOCAL};
use crate::model::{ClusterId, GridId, LeaseRequest, Origin, RequestId};
use crate::policy::{Chosen, Registry};
use crate::time::{ClockMode, EmuDuration, EmuTime};

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

named_enum! {
    /// The LRMS's preemption policy (paper 003 §6, paper 001 §4.3.1).
    PreemptionName {
        /// Never preempt.
        Nop => "nop",
        /// Minimum leases involved.
        Mlip => "mlip",
        /// Minimum overhead.
        Mov => "mov",
        /// Minimum overhead, minimum leases (median pre-selection).
        Moml => "moml",
        /// Minimum waiting time.
        Mwt => "mwt",
        /// Combinatorial: α·overhead + (1−α)·waiting time (paper 001 eq. 2).
        Cp => "cp",
        /// Paper 001's minimum overhead: leases in the order of eq. 1's score.
        MovScore => "mov-score",
        /// Less valuable leases first: cancellable, suspendable, then migratable (paper 000).
        LeastValuable => "least-valuable",
    }
}

named_enum! {
    /// The LRMS's admission control of external requests (paper 002).
    AdmissionName {
        /// Admit everything.
        Cacp => "cacp",
        /// One external request at a time.
        Aacp => "aacp",
        /// Queue length μ_e / λ.
        Racp => "racp",
        /// Queue length from the M/G/1/K model (Algorithm 1).
        Pacp => "pacp",
        /// A fixed queue length, `queue_limit` (a static baseline).
        Fixed => "fixed",
    }
}

pub use crate::igg::dispatch::DispatchName;

pub use crate::model::HostSpec;

/// PACP's settings: the share of low-urgency requests, their mean deadline ratio, the
/// high-urgency one, and where ω comes from.
pub type PacpSettings = (f64, f64, f64, crate::lrms::PacpOmega);

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
    /// PACP's deadline model: the share of low-urgency requests and the two mean deadline
    /// ratios (`pacp_low_urgency`, `pacp_low_ratio`, `pacp_high_ratio`), and where its ω
    /// comes from (`pacp_omega`).
    pub pacp: PacpSettings,
    /// The fixed admission policy's queue limit (`queue_limit`).
    pub queue_limit: usize,
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

impl PreemptionName {
    /// The policy this names, with CP's `cp_alpha`.
    pub fn policy(self, cp_alpha: f64) -> crate::lrms::policy::PreemptionPolicy {
        use crate::lrms::policy::PreemptionPolicy as P;
        match self {
            PreemptionName::Nop => P::Nop,
            PreemptionName::Mlip => P::Mlip,
            PreemptionName::Mov => P::Mov,
            PreemptionName::Moml => P::Moml,
            PreemptionName::Mwt => P::Mwt,
            PreemptionName::Cp => P::Cp { alpha: cp_alpha },
            PreemptionName::MovScore => P::MovScore,
            PreemptionName::LeastValuable => P::LeastValuable,
        }
    }
}

impl AdmissionName {
    /// The policy this names, with PACP's deadline model (share of low-urgency requests,
    /// the two deadline ratios) and the fixed policy's queue limit.
    pub fn policy(
        self,
        (low_urgency, low_ratio, high_ratio, omega): PacpSettings,
        queue_limit: usize,
    ) -> crate::lrms::admission::AdmissionPolicy {
        use crate::lrms::admission::AdmissionPolicy as P;
        match self {
            AdmissionName::Cacp => P::Cacp,
            AdmissionName::Aacp => P::Aacp,
            AdmissionName::Racp => P::Racp,
            AdmissionName::Pacp => P::Pacp {
                low_urgency,
                low_ratio,
                high_ratio,
                omega,
            },
            AdmissionName::Fixed => P::Fixed(queue_limit),
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

fn read_peering(t: Option<Table<'_>>) -> Peering {
    let mut p = Peering::default();
    let Some(t) = t else { return p };
    if let Some((m, _)) = t.named::<ContractsMode>("contracts") {
        p.contracts = m;
    }
    if let Some((v, _)) = t.number_in("load_threshold", 0.0, 1.0) {
        p.load_threshold = v;
    }
    if let Some((m, _)) = t.named::<PublicationMode>("publication") {
        p.publication = m;
    }
    for (k, f) in [
        ("interval", &mut p.interval),
        ("price_update", &mut p.price_update),
    ] {
        if let Some(((lo, hi), loc)) = t.duration_range(k) {
            if lo == EmuDuration::ZERO {
                t.diags
                    .error(loc, format!("`{k}` in [peering] must be positive"), None);
            } else {
                *f = (lo, hi);
            }
        }
    }
    for (k, f) in [
        ("publish_interval", &mut p.publish_interval),
        ("horizon", &mut p.horizon),
        ("offer_timeout", &mut p.offer_timeout),
        ("ticket_ttl", &mut p.ticket_ttl),
    ] {
        if let Some((d, loc)) = t.duration(k) {
            if d == EmuDuration::ZERO {
                t.diags
                    .error(loc, format!("`{k}` in [peering] must be positive"), None);
            } else {
                *f = d;
            }
        }
    }
    if let Some((v, _)) = t.uint("retries", 100) {
        p.retries = v as u32;
    }
    if let Some((v, _)) = t.positive_number("steepness", MAX_STEEPNESS) {
        p.steepness = v;
    }
    if let Some(range) = read_unit_cost(&t) {
        p.unit_cost = range;
    }
    if p.ticket_ttl <= p.offer_timeout {
        t.diags.error(
            &t.node.loc,
            "[peering] needs ticket_ttl longer than offer_timeout",
            Some("a ticket must outlive the wait for its answer".into()),
        );
    }
    t.finish();
    p
}

/// `[metrics]`: how the per-request metrics are computed ([`crate::metrics::Measures`]).
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSettings {
    /// τ of the bounded slowdown, seconds (> 0): max(1, turnaround / max(run time, τ)).
    pub bounded_slowdown_tau_s: f64,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings {
            bounded_slowdown_tau_s: crate::metrics::DEFAULT_TAU_S,
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
    t.finish();
    m
}

/// `unit_cost` of `[peering]`, if set and valid: [low, high] with 0 < low ≤ high ≤
/// [`MAX_PRICE`].
fn read_unit_cost(t: &Table<'_>) -> Option<(f64, f64)> {
    let n = t.get("unit_cost")?;
    match &n.kind {
        node::NodeKind::Array(a) if a.len() == 2 => {
            let num = |x: &Node| match x.kind {
                node::NodeKind::Int(i) => Some(i as f64),
                node::NodeKind::Float(f) => Some(f),
                _ => None,
            };
            // NaN fails every comparison, so it is refused with the rest.
            match (num(&a[0]), num(&a[1])) {
                (Some(lo), Some(hi)) if lo > 0.0 && lo <= hi && hi <= MAX_PRICE => {
                    return Some((lo, hi))
                }
                _ => t.diags.error(
                    &n.loc,
                    format!(
                        "`unit_cost` = {} in [peering] is out of range",
                        n.toml_text().unwrap_or_default()
                    ),
                    Some(format!(
                        "write [low, high] with 0 < low ≤ high ≤ {MAX_PRICE:e}, e.g. [0.9, 1.0]"
                    )),
                ),
            }
        }
        _ => t.diags.error(
            &n.loc,
            "`unit_cost` must be [low, high]",
            Some("e.g. unit_cost = [0.9, 1.0]".into()),
        ),
    }
    None
}

fn read_link_faults(t: &Table<'_>, into: &mut crate::fault::LinkFaults) {
    use crate::fault::Delay;
    if let Some(n) = t.get("delay") {
        match &n.kind {
            node::NodeKind::Table(_) => {
                if let Some(d) = Table::of(n, format!("`delay` in {}", t.what), t.diags) {
                    let kind = d
                        .named::<DelayKind>("kind")
                        .map_or(DelayKind::Fixed, |(k, _)| k);
                    let get = |k: &str| d.duration(k).map(|(v, _)| v);
                    into.delay = match kind {
                        DelayKind::Uniform => {
                            let (lo, hi) = (
                                get("min").unwrap_or_default(),
                                get("max").unwrap_or_default(),
                            );
                            if lo > hi {
                                d.diags.error(
                                    &n.loc,
                                    format!(
                                        "a uniform `delay` in {} has min {lo} above max {hi}",
                                        t.what
                                    ),
                                    Some("write min ≤ max".into()),
                                );
                            }
                            Delay::Uniform(lo, hi)
                        }
                        DelayKind::Exponential => {
                            Delay::Exponential(get("mean").unwrap_or_default())
                        }
                        DelayKind::Fixed => Delay::Fixed(get("value").unwrap_or_default()),
                    };
                    for other in ["value", "min", "max", "mean"] {
                        if let Some(n) = d.get(other).filter(|_| !kind.takes(other)) {
                            d.diags.error(
                                &n.loc,
                                format!("`{other}` does not apply to a {} delay", kind.as_str()),
                                Some("fixed takes `value`, uniform `min` and `max`, exponential `mean`".into()),
                            );
                        }
                    }
                    d.finish();
                }
            }
            _ => {
                if let Some((v, _)) = t.duration("delay") {
                    into.delay = Delay::Fixed(v);
                }
            }
        }
    }
    for (k, f) in [
        ("drop", &mut into.drop),
        ("duplicate", &mut into.duplicate),
        ("reorder", &mut into.reorder),
    ] {
        if let Some((v, _)) = t.number_in(k, 0.0, 1.0) {
            *f = v;
        }
    }
    if let Some((v, _)) = t.duration("reorder_window") {
        into.reorder_window = v;
    }
}

fn read_faults(t: Option<Table<'_>>, names: &GridNames<'_>) -> crate::fault::FaultConfig {
    use crate::fault::{Crash, FaultConfig, LinkFaults};
    let diags = names.diags;
    let mut cfg = FaultConfig::default();
    let Some(t) = t else { return cfg };
    let grid = |s: &str, loc: &Loc| names.find(s, loc, "[fault]");
    read_link_faults(&t, &mut cfg.global);
    if cfg.global.reorder > 0.0 && cfg.global.reorder_window == EmuDuration::ZERO {
        cfg.global.reorder_window = EmuDuration::from_secs(1);
    }
    for (i, n) in t.tables("link").into_iter().enumerate() {
        let Some(l) = Table::of(n, format!("fault link #{}", i + 1), diags) else {
            continue;
        };
        let from = l
            .req_str("from", "the sending grid")
            .and_then(|(s, loc)| grid(s, loc));
        let to = l
            .req_str("to", "the receiving grid")
            .and_then(|(s, loc)| grid(s, loc));
        let mut lf = LinkFaults {
            reorder_window: cfg.global.reorder_window,
            ..LinkFaults::default()
        };
        read_link_faults(&l, &mut lf);
        l.finish();
        if let (Some(f), Some(t)) = (from, to) {
            cfg.links.push((f, t, lf));
        }
    }
    for (i, n) in t.tables("partition").into_iter().enumerate() {
        cfg.partitions.extend(read_partition(n, i, names));
    }
    for (i, n) in t.tables("crash").into_iter().enumerate() {
        let Some(c) = Table::of(n, format!("crash #{}", i + 1), diags) else {
            continue;
        };
        let g = c
            .req_str("grid", "the grid whose IGG crashes")
            .and_then(|(s, loc)| grid(s, loc));
        let at = c.duration("at").map(|(d, _)| EmuTime::ZERO + d);
        let down_for = c.duration("down_for").map(|(d, _)| d);
        c.finish();
        if let (Some(grid), Some(at), Some(down_for)) = (g, at, down_for) {
            cfg.crashes.push(Crash { grid, at, down_for });
        }
    }
    t.finish();
    cfg
}

/// A `[[fault.partition]]`: two grids cut apart from `from` until `until`.
fn read_partition(n: &Node, i: usize, names: &GridNames<'_>) -> Option<crate::fault::Partition> {
    let diags = names.diags;
    let p = Table::of(n, format!("partition #{}", i + 1), diags)?;
    let between: Option<Vec<GridId>> = p.get("between").and_then(|b| match &b.kind {
        node::NodeKind::Array(a) if a.len() == 2 => a
            .iter()
            .map(|x| match &x.kind {
                node::NodeKind::Str(s) => names.find(s, &x.loc, "[fault]"),
                _ => None,
            })
            .collect(),
        _ => {
            diags.error(
                &b.loc,
                "`between` must name two grids",
                Some("between = [\"a\", \"b\"]".into()),
            );
            None
        }
    });
    if p.get("between").is_none() {
        p.missing("between", "between = [\"a\", \"b\"]");
    }
    let from = p.duration("from").map(|(d, _)| EmuTime::ZERO + d);
    let until = p.duration("until").map(|(d, _)| EmuTime::ZERO + d);
    if let (Some(f), Some(u), Some(n)) = (from, until, p.get("until")) {
        if u < f {
            diags.error(
                &n.loc,
                format!("partition #{} ends ({u}) before it begins ({f})", i + 1),
                Some("write until ≥ from".into()),
            );
        }
    }
    p.finish();
    let b = between?;
    Some(crate::fault::Partition {
        a: b[0],
        b: b[1],
        from: from?,
        until: until?,
    })
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

pub(crate) fn read_scheduler(t: &Table<'_>) -> Option<SchedulerKind> {
    t.named::<SchedulerKind>("scheduler").map(|(v, _)| v)
}

pub(crate) fn read_preemption(t: &Table<'_>) -> Option<PreemptionName> {
    t.named::<PreemptionName>("preemption").map(|(v, _)| v)
}

/// The largest `lrms.backfill_depth`: a depth past any queue a run could hold.
const MAX_BACKFILL_DEPTH: u64 = 1_000_000_000;

/// `[lrms]` keys as read from one table; unset keys inherit.
#[derive(Clone, Default)]
struct LrmsOverrides<'a> {
    profile: Option<(&'a str, &'a Loc)>,
    scheduler: Option<SchedulerKind>,
    pivots: Option<u32>,
    preemption: Option<String>,
    preemption_fallback: Option<String>,
    cp_alpha: Option<f64>,
    admission: Option<String>,
    admission_fallback: Option<String>,
    pacp_low_urgency: Option<f64>,
    pacp_low_ratio: Option<f64>,
    pacp_high_ratio: Option<f64>,
    pacp_omega: Option<crate::lrms::PacpOmega>,
    queue_limit: Option<usize>,
    enforce_memory: Option<bool>,
    search_budget: Option<usize>,
    compress: Option<bool>,
    locals: Option<crate::lrms::LocalRequests>,
    moldable: Option<crate::lrms::Moldable>,
    backfill_depth: Option<usize>,
}

fn read_lrms_table<'a>(t: &Table<'a>, registry: &Registry) -> LrmsOverrides<'a> {
    use crate::policy::Point;
    let o = LrmsOverrides {
        profile: t.str("profile"),
        scheduler: read_scheduler(t),
        pivots: t.positive("pivots", 1_000_000).map(|(v, _)| v as u32),
        preemption: policies::read_choice(t, "preemption", Point::Preemption, registry),
        preemption_fallback: policies::read_fallback(t, "preemption", Point::Preemption, registry),
        cp_alpha: t.number_in("cp_alpha", 0.0, 1.0).map(|(v, _)| v),
        admission: policies::read_choice(t, "admission", Point::Admission, registry),
        admission_fallback: policies::read_fallback(t, "admission", Point::Admission, registry),
        pacp_low_urgency: t.number_in("pacp_low_urgency", 0.0, 1.0).map(|(v, _)| v),
        pacp_low_ratio: t
            .positive_number("pacp_low_ratio", MAX_RATIO)
            .map(|(v, _)| v),
        pacp_high_ratio: t
            .positive_number("pacp_high_ratio", MAX_RATIO)
            .map(|(v, _)| v),
        pacp_omega: t
            .named::<crate::lrms::PacpOmega>("pacp_omega")
            .map(|(v, _)| v),
        queue_limit: t
            .uint("queue_limit", 1_000_000_000)
            .map(|(v, _)| v as usize),
        enforce_memory: t.bool("enforce_memory").map(|(v, _)| v),
        search_budget: t
            .positive("search_budget", 100_000_000)
            .map(|(v, _)| v as usize),
        compress: t.bool("compress").map(|(v, _)| v),
        locals: t
            .named::<crate::lrms::LocalRequests>("locals")
            .map(|(v, _)| v),
        moldable: t.named::<crate::lrms::Moldable>("moldable").map(|(v, _)| v),
        backfill_depth: t
            .positive("backfill_depth", MAX_BACKFILL_DEPTH)
            .map(|(v, _)| v as usize),
    };
    t.finish();
    o
}

#[derive(Clone, Default)]
struct IggOverrides {
    /// Per decision point (dispatch, answer, offer): the policy and its fallback.
    choices: [(Option<String>, Option<String>); 3],
    /// Who plays the gateway.
    implementation: Option<String>,
    retry: Option<bool>,
    provider: Option<ProviderPolicy>,
}

/// The IGG's decision points, in [`IggOverrides::choices`]' order.
const IGG_POINTS: [crate::policy::Point; 3] = [
    crate::policy::Point::Dispatch,
    crate::policy::Point::Answer,
    crate::policy::Point::Offer,
];

fn read_igg_table(t: &Table<'_>, registry: &Registry) -> IggOverrides {
    let choice = |p: crate::policy::Point| {
        (
            policies::read_choice(t, p.as_str(), p, registry),
            policies::read_fallback(t, p.as_str(), p, registry),
        )
    };
    let o = IggOverrides {
        choices: IGG_POINTS.map(choice),
        implementation: policies::read_choice(
            t,
            "implementation",
            crate::policy::Point::Gateway,
            registry,
        ),
        retry: t.bool("retry").map(|(b, _)| b),
        provider: t.named::<ProviderPolicy>("provider").map(|(v, _)| v),
    };
    t.finish();
    o
}

/// A Grid's IGG settings: its own `[igg]` keys, else the topology's, else the defaults.
fn merge_igg(own: IggOverrides, defaults: &IggOverrides, registry: &Registry) -> IggSettings {
    let defaults_of = [
        DispatchName::RoundRobin.as_str(),
        crate::igg::negotiation::AnswerName::MarginalCost.as_str(),
        crate::igg::negotiation::OfferName::CheapestContract.as_str(),
    ];
    let [dispatch, answer, offer] = [0, 1, 2].map(|i| {
        let (name, fallback) = &own.choices[i];
        let (dname, dfallback) = &defaults.choices[i];
        Chosen {
            name: (name.clone().or_else(|| dname.clone())).unwrap_or_else(|| defaults_of[i].into()),
            fallback: fallback.clone().or_else(|| dfallback.clone()),
        }
    });
    let implementation = (own.implementation.clone())
        .or_else(|| defaults.implementation.clone())
        .unwrap_or_else(|| crate::policy::registry::GATEWAY.into());
    IggSettings {
        // An external dispatch policy sees the clusters' loads and earliest starts: they publish.
        reads_slots: registry.reads_slots(&dispatch.name) || dispatch.is_external(),
        dispatch,
        answer,
        offer,
        implementation: Chosen::named(&implementation),
        retry: own.retry.or(defaults.retry).unwrap_or(true),
        provider: own.provider.or(defaults.provider),
    }
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

/// `emulation.seed`: a whole number from 0 to 2^64 − 1. TOML integers stop at 2^63 − 1, so
/// larger seeds are written as strings of digits (`seed = "18446744073709551615"`); `--seed`
/// takes them as digits too ([`seed_override`]).
fn read_seed(t: &Table<'_>) -> Option<u64> {
    let node = t.get("seed")?;
    let seed = match &node.kind {
        node::NodeKind::Int(v) => u64::try_from(*v).ok(),
        node::NodeKind::Str(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    if seed.is_none() {
        t.diags.error(
            &node.loc,
            format!(
                "`seed` in {} must be a whole number from 0 to 18446744073709551615 (2^64 − 1), \
                 found {}",
                t.what,
                node.toml_text().unwrap_or_default(),
            ),
            Some(
                "write a seed above 9223372036854775807 (TOML's largest integer) as a string, \
                 e.g. seed = \"18446744073709551615\""
                    .into(),
            ),
        );
    }
    seed
}

/// The `--set` override that sets the run's seed (`emulation.seed=N`; a seed above TOML's
/// integers, 2^63 − 1, is read from the override as digits).
pub fn seed_override(seed: u64) -> String {
    format!("emulation.seed={seed}")
}

/// Whether the override `assignment` (`key=value`) sets `emulation.seed`, however the key is
/// spelled (whitespace around its segments, or `emulation={ seed = 3 }`): commands that set
/// each run's seed themselves refuse such an override rather than ignore it.
pub fn override_sets_seed(assignment: &str) -> bool {
    override_sets(assignment, SEED_KEY)
}

/// Whether the override `assignment` (`key=value`) sets `key` (dotted, without spaces) or a
/// key inside it, however it is spelled: for commands that set some keys in every run
/// themselves and refuse an override they would ignore.
pub fn override_sets(assignment: &str, key: &str) -> bool {
    node::override_sets_key(assignment, key)
}

/// The key of the run's seed, as [`node::canonical_key`] spells it.
pub(crate) const SEED_KEY: &str = "emulation.seed";

/// α of CP chosen in paper 001 §5.1.
const DEFAULT_CP_ALPHA: f64 = 0.31;
const DEFAULT_HORIZON: EmuDuration = EmuDuration::from_secs(365 * 86_400);

fn read_emulation(t: Option<Table<'_>>) -> Option<Emulation> {
    let Some(t) = t else {
        return Some(Emulation {
            mode: ClockMode::Virtual,
            seed: 1,
            end: EndCondition::AllDone {
                horizon: EmuTime::ZERO + DEFAULT_HORIZON,
            },
            reference_mips: None,
            interleaving: 0,
            max_messages: None,
        });
    };
    let mode = t.named::<ModeName>("mode").map(|(m, _)| m);
    let speedup = t.number_in("speedup", MIN_SPEEDUP, MAX_SPEEDUP);
    let seed = read_seed(&t).unwrap_or(1);
    let reference_mips = t.positive("reference_mips", 1 << 30).map(|(v, _)| v as u32);
    let interleaving = t.uint("interleaving", i64::MAX as u64);
    let max_messages = t.positive("max_messages", i64::MAX as u64).map(|(v, _)| v);
    let mut ok = true;
    let end = match t.get("end") {
        None => Some(EndCondition::AllDone {
            horizon: EmuTime::ZERO + DEFAULT_HORIZON,
        }),
        Some(node) if matches!(&node.kind, node::NodeKind::Str(s) if s == "all-done") => {
            let horizon = t.duration("horizon").map_or(DEFAULT_HORIZON, |(d, _)| d);
            Some(EndCondition::AllDone {
                horizon: EmuTime::ZERO + horizon,
            })
        }
        Some(_) => t.duration("end").and_then(|(d, loc)| {
            if d == EmuDuration::ZERO {
                t.diags.error(
                    loc,
                    "`end` must be after the start",
                    Some("use \"all-done\" or a positive duration like \"2d\"".into()),
                );
                None
            } else {
                Some(EndCondition::At(EmuTime::ZERO + d))
            }
        }),
    };
    if matches!(end, Some(EndCondition::At(_))) && t.get("horizon").is_some() {
        t.get("horizon").inspect(|n| {
            t.diags.error(
                &n.loc,
                "`horizon` only applies with end = \"all-done\"",
                Some("remove it, or set end = \"all-done\"".into()),
            )
        });
        ok = false;
    }
    t.finish();
    let mode = match (mode, speedup) {
        (Some(ModeName::Realtime), Some((s, _))) => ClockMode::Realtime { speedup: s },
        (Some(ModeName::Realtime), None) => {
            if t.get("speedup").is_none() {
                t.missing(
                    "speedup",
                    "realtime mode needs speedup = N (emulated seconds per wall second)",
                );
            }
            return None;
        }
        _ => ClockMode::Virtual,
    };
    if !ok {
        return None;
    }
    Some(Emulation {
        mode,
        seed,
        end: end?,
        reference_mips,
        interleaving: interleaving.map_or(0, |(k, _)| k),
        max_messages,
    })
}

struct ReadCx<'a> {
    diags: &'a Diags,
    base_dir: Option<&'a Path>,
    profiles: Vec<(String, Option<LrmsProfile>)>,
    profile_sources: &'a mut Vec<(String, String, String)>,
    /// Hosts read so far, in every cluster.
    hosts: u64,
    /// The policies names are looked up in.
    registry: &'a Registry,
}

impl ReadCx<'_> {
    fn profile(&mut self, name: &str, at: &Loc) -> Option<LrmsProfile> {
        if let Some((_, p)) = self.profiles.iter().find(|(n, _)| n == name) {
            return p.clone();
        }
        let (p, source) = profile::load_with_source(name, at, self.base_dir, self.diags);
        self.profile_sources.extend(source);
        self.profiles.push((name.to_string(), p.clone()));
        p
    }
}

/// A cluster's hosts; `total` counts the topology's hosts so far, checked against
/// [`MAX_TOPOLOGY_HOSTS`] before any is allocated.
fn read_hosts(t: &Table<'_>, what: &str, total: &mut u64) -> Vec<HostSpec> {
    let Some(node) = t.get("hosts") else {
        t.missing(
            "hosts",
            "e.g. hosts = { count = 4, cores = 4, memory_mb = 8192, mips = 2000 }",
        );
        return Vec::new();
    };
    let groups: Vec<&Node> = match &node.kind {
        node::NodeKind::Array(items) => items.iter().collect(),
        _ => vec![node],
    };
    if groups.is_empty() {
        t.diags.error(
            &node.loc,
            format!("`hosts` of {what} is empty: the cluster has no host"),
            Some(
                "list at least one group, e.g. hosts = [{ count = 4, cores = 4, memory_mb = 8192 }]"
                    .into(),
            ),
        );
    }
    let mut hosts = Vec::new();
    let mut in_cluster = 0u64;
    for (i, g) in groups.into_iter().enumerate() {
        let Some(h) = Table::of(g, format!("hosts group {} of {what}", i + 1), t.diags) else {
            continue;
        };
        let count = h.uint("count", MAX_CLUSTER_HOSTS);
        if let Some((0, loc)) = count {
            h.diags.error(
                loc,
                format!("{what} has zero hosts"),
                Some("a cluster needs at least one host: count = 1 or more".into()),
            );
        }
        if h.get("count").is_none() {
            h.missing("count", "how many hosts of this kind, e.g. count = 4");
        }
        let cores = h.positive("cores", MAX_HOST_CORES).map(|(v, _)| v as u32);
        let memory_mb = h.positive("memory_mb", 1 << 40).map(|(v, _)| v);
        let mips = h
            .positive("mips", 1 << 30)
            .map_or(Some(1000), |(v, _)| Some(v as u32));
        for (k, v) in [
            ("cores", cores.is_some()),
            ("memory_mb", memory_mb.is_some()),
        ] {
            if !v && h.get(k).is_none() {
                h.missing(k, "hosts need cores and memory_mb");
            }
        }
        h.finish();
        let Some((n, loc)) = count else { continue };
        in_cluster += n;
        *total += n;
        if over_host_limits(&h, what, (n, loc), (in_cluster, *total)) {
            continue;
        }
        if let (Some(cores), Some(memory_mb), Some(mips)) = (cores, memory_mb, mips) {
            hosts.extend((0..n).map(|_| HostSpec {
                cores,
                memory_mb,
                mips,
            }));
        }
    }
    hosts
}

/// Whether a hosts group of `n` hosts (at `loc`) takes its cluster (`in_cluster` hosts so
/// far, this group's included) or the topology (`total`) past their limits; says so the
/// first time each is passed.
fn over_host_limits(
    h: &Table<'_>,
    what: &str,
    (n, loc): (u64, &Loc),
    (in_cluster, total): (u64, u64),
) -> bool {
    if in_cluster > MAX_CLUSTER_HOSTS && in_cluster - n <= MAX_CLUSTER_HOSTS {
        h.diags.error(
            loc,
            format!("{what} has {in_cluster} hosts so far, more than {MAX_CLUSTER_HOSTS}"),
            Some(format!(
                "a cluster has at most {MAX_CLUSTER_HOSTS} hosts (hosts are numbered in 16 bits); split it into several clusters"
            )),
        );
    }
    if total > MAX_TOPOLOGY_HOSTS && total - n <= MAX_TOPOLOGY_HOSTS {
        h.diags.error(
            loc,
            format!("the topology has {total} hosts so far, more than {MAX_TOPOLOGY_HOSTS}"),
            Some(format!(
                "a topology has at most {MAX_TOPOLOGY_HOSTS} hosts: each host and VM takes about 1 KB while a run lasts (docs/performance.md)"
            )),
        );
    }
    in_cluster > MAX_CLUSTER_HOSTS || total > MAX_TOPOLOGY_HOSTS
}

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

/// Periodic timer events (publications and IGG rounds) a run may fire at most: past this,
/// timers alone would take it hours.
pub const MAX_PERIODIC_EVENTS: f64 = 1e9;

/// Refuses periods so short, against the run's end, that timers alone would make it endless:
/// each period is valid alone, so the error names them all.
fn check_periodic_events(topo: &Topology, top: &Table<'_>) {
    let events = topo.periodic_events();
    if events <= MAX_PERIODIC_EVENTS {
        return;
    }
    let p = &topo.peering;
    top.diags.error(
        &top.node.loc,
        format!(
            "periodic timers would fire about {events:.1e} times by the run's end at {} s \
             (peering.publish_interval {} s for each publishing cluster, peering.interval from \
             {} s for each peering IGG)",
            topo.emulation.end.limit().as_secs_f64(),
            p.publish_interval.as_secs_f64(),
            p.interval.0.as_secs_f64()
        ),
        Some(format!(
            "at most {MAX_PERIODIC_EVENTS:.0e}: lengthen the periods, or end the run sooner \
             (emulation.end, or emulation.horizon with end = \"all-done\")"
        )),
    );
}

/// A request's duration is stated at the reference speed and takes `reference / cluster`
/// times as long on a slower cluster: that time, too, must end by 10^12 s. Checked against the
/// slowest cluster (a request may be served anywhere through peering); one error names the
/// longest request.
fn check_scaled_durations(topo: &Topology, top: &Table<'_>) {
    let slowest = (0..topo.clusters.len())
        .map(|c| {
            let s = topo.speed_of(ClusterId(c as u16));
            (s.reference_mips as f64 / s.cluster_mips as f64, c)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((ratio, c)) = slowest else { return };
    // A moldable request may run its VMs' work on fewer VMs: at most vms × duration.
    let end_of = |r: &LeaseRequest| {
        let work = if r.moldable { f64::from(r.vms) } else { 1.0 };
        r.arrival.as_secs_f64() + r.duration.as_secs_f64() * work * ratio
    };
    let Some((latest, r)) = topo
        .requests
        .iter()
        .map(|r| (end_of(r), r))
        .max_by(|a, b| a.0.total_cmp(&b.0))
    else {
        return;
    };
    if latest > crate::time::MAX_SECS as f64 {
        top.diags.error(
            &top.node.loc,
            format!(
                "request `{}` ({} s at the reference speed) would run until {latest:.0} s on \
                 cluster `{}`, {ratio} times slower than the reference",
                topo.label(r.id),
                r.duration.as_secs_f64(),
                topo.clusters[c].qualified_name(topo)
            ),
            Some(
                "times run up to 10^12 s: shorten the request, or bring the clusters' mips \
                 closer to emulation.reference_mips"
                    .into(),
            ),
        );
    }
}

/// Finds grids by name for the sections that name them.
pub(super) struct GridNames<'a> {
    /// The topology's grids.
    pub grids: &'a [Grid],
    /// Where problems go.
    pub diags: &'a Diags,
}

impl GridNames<'_> {
    /// The grid called `name`, or a problem at `loc` (`role` says who names it).
    pub(crate) fn find(&self, name: &str, loc: &Loc, role: &str) -> Option<GridId> {
        match self.grids.iter().position(|g| g.name == name) {
            Some(i) => Some(GridId(i as u16)),
            None => {
                let names: Vec<_> = self.grids.iter().map(|g| shown(&g.name)).collect();
                let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
                self.diags.error(
                    loc,
                    format!("{role} names unknown grid `{}`", shown(name)),
                    Some(suggest(&shown(name), &names)),
                );
                None
            }
        }
    }
}

/// The `[[grid]]`s and their clusters, with the topology's `[lrms]` and `[igg]` defaults.
fn read_grids(
    top: &Table<'_>,
    lrms_defaults: &LrmsOverrides<'_>,
    igg_defaults: &IggOverrides,
    cx: &mut ReadCx<'_>,
) -> (Vec<Grid>, Vec<Cluster>) {
    let diags = cx.diags;
    let mut grids: Vec<Grid> = Vec::new();
    let mut clusters: Vec<Cluster> = Vec::new();
    let grid_nodes = top.tables("grid");
    require_tables(
        top,
        ("grid", grid_nodes.is_empty()),
        "`grid` is empty: the topology has no Grid".into(),
        "add at least one [[grid]] with a [[grid.cluster]]",
    );
    for (gi, gnode) in grid_nodes.into_iter().enumerate() {
        let Some(g) = Table::of(gnode, format!("grid #{}", gi + 1), diags) else {
            continue;
        };
        let gname = g
            .req_str("name", "every grid needs a unique name")
            .map(|(s, loc)| {
                check_name(diags, loc, s, "grid name");
                if grids.iter().any(|x| x.name == s) {
                    diags.error(
                        loc,
                        format!("grid `{}` is defined twice", shown(s)),
                        Some("grid names must be unique".into()),
                    );
                }
                s.to_string()
            });
        let what = format!("grid `{}`", gname.as_deref().map_or("?".into(), shown));
        let igg_own = g
            .table("igg")
            .map(|t| read_igg_table(&t, cx.registry))
            .unwrap_or_default();
        let igg = merge_igg(igg_own, igg_defaults, cx.registry);
        let gid = GridId(grids.len() as u16);
        let mut ids = Vec::new();
        let cluster_nodes = g.tables("cluster");
        require_tables(
            &g,
            ("cluster", cluster_nodes.is_empty()),
            format!("`cluster` of {what} is empty: the Grid has no cluster"),
            "a grid needs at least one [[grid.cluster]]",
        );
        for (ci, cnode) in cluster_nodes.into_iter().enumerate() {
            let siblings: Vec<&Cluster> = ids
                .iter()
                .map(|id: &ClusterId| &clusters[usize::from(id.0)])
                .collect();
            if let Some(cluster) = read_cluster(
                cnode,
                ci,
                (gid, &what, igg.provider),
                &siblings,
                lrms_defaults,
                cx,
            ) {
                ids.push(ClusterId(clusters.len() as u16));
                clusters.push(cluster);
            }
        }
        g.finish();
        if let Some(name) = gname {
            grids.push(Grid {
                name,
                igg,
                clusters: ids,
            });
        }
    }
    (grids, clusters)
}

/// One `[[grid.cluster]]` of grid `gid` (`what` names the grid); `siblings` are the grid's
/// clusters read so far.
fn read_cluster(
    cnode: &Node,
    ci: usize,
    (gid, what, provider): (GridId, &str, Option<ProviderPolicy>),
    siblings: &[&Cluster],
    lrms_defaults: &LrmsOverrides<'_>,
    cx: &mut ReadCx<'_>,
) -> Option<Cluster> {
    let diags = cx.diags;
    let c = Table::of(cnode, format!("cluster #{} of {what}", ci + 1), diags)?;
    let cname = c
        .req_str("name", "every cluster needs a name, unique in its grid")
        .map(|(s, loc)| {
            check_name(diags, loc, s, "cluster name");
            if siblings.iter().any(|x| x.name == s) {
                diags.error(
                    loc,
                    format!("cluster `{}` is defined twice in {what}", shown(s)),
                    Some("cluster names must be unique within a grid".into()),
                );
            }
            s.to_string()
        });
    let cwhat = format!(
        "cluster `{}` of {what}",
        cname.as_deref().map_or("?".into(), shown)
    );
    let hosts = read_hosts(&c, &cwhat, &mut cx.hosts);
    let own_table = c.table("lrms");
    let own = own_table
        .as_ref()
        .map(|t| read_lrms_table(t, cx.registry))
        .unwrap_or_default();
    if let (Some(p), Some(s), Some(t)) = (provider, own.scheduler, own_table.as_ref()) {
        check_provider_scheduler(t, p, s, &cwhat);
    }
    c.finish();
    let profile_name = own.profile.or(lrms_defaults.profile);
    let profile = match profile_name {
        Some((p, loc)) => cx.profile(p, loc),
        None => cx.profile(DEFAULT_PROFILE, &Loc::Builtin),
    };
    let (name, profile) = (cname?, profile?);
    if hosts.is_empty() {
        return None;
    }
    let mut lrms = merge_lrms(&own, lrms_defaults, profile);
    if let Some(p) = provider {
        // §6.3: EASY with one pivot, or conservative; partitions give locals priority.
        lrms.backfilling = if p.easy() {
            crate::lrms::Backfilling::Easy { pivots: 1 }
        } else {
            crate::lrms::Backfilling::Conservative
        };
        lrms.partitions = p.partitions();
    }
    Some(Cluster {
        name,
        grid: gid,
        hosts,
        lrms,
    })
}

/// Reports array-of-tables `key` of `t` missing, or present but empty (`empty` says what
/// that means); `hint` says how to add one.
fn require_tables(t: &Table<'_>, (key, none_read): (&str, bool), empty: String, hint: &str) {
    match t.get(key) {
        None => t.missing(key, hint),
        Some(n) if none_read && matches!(n.kind, node::NodeKind::Array(_)) => {
            t.diags.error(&n.loc, empty, Some(hint.into()));
        }
        Some(_) => {}
    }
}

/// A cluster (`cwhat`) whose own `[lrms]` table `t` sets `scheduler` must backfill as its
/// Grid's provider policy `provider` does (§6.3).
fn check_provider_scheduler(
    t: &Table<'_>,
    provider: ProviderPolicy,
    scheduler: SchedulerKind,
    cwhat: &str,
) {
    let wanted = if provider.easy() {
        SchedulerKind::Easy
    } else {
        SchedulerKind::Conservative
    };
    if scheduler == wanted {
        return;
    }
    if let Some(n) = t.get("scheduler") {
        t.diags.error(
            &n.loc,
            format!(
                "{cwhat} sets scheduler = \"{}\" but its grid's provider policy \"{}\" backfills with \"{}\"",
                scheduler.as_str(),
                provider.as_str(),
                wanted.as_str()
            ),
            Some("remove the cluster's scheduler, or choose the grid's [igg] provider that matches it".into()),
        );
    }
}

/// A cluster's LRMS settings: its own `[lrms]` keys, else the topology's, else the
/// profile's or igemu's defaults.
fn merge_lrms(
    own: &LrmsOverrides<'_>,
    lrms_defaults: &LrmsOverrides<'_>,
    profile: LrmsProfile,
) -> LrmsSettings {
    // A key's value: the cluster's own, else the topology's, else the default.
    macro_rules! pick {
        ($key:ident, $default:expr) => {
            own.$key.or(lrms_defaults.$key).unwrap_or($default)
        };
    }
    // A name's value: the cluster's own, else the topology's, else the default.
    let name = |own: &Option<String>, top: &Option<String>, default: &str| {
        own.clone()
            .or_else(|| top.clone())
            .unwrap_or_else(|| default.to_string())
    };
    let scheduler = pick!(scheduler, profile.scheduler);
    let preemption = Chosen {
        name: name(
            &own.preemption,
            &lrms_defaults.preemption,
            profile.preemption.as_str(),
        ),
        fallback: (own.preemption_fallback.clone()).or(lrms_defaults.preemption_fallback.clone()),
    };
    let admission = Chosen {
        name: name(
            &own.admission,
            &lrms_defaults.admission,
            AdmissionName::Cacp.as_str(),
        ),
        fallback: (own.admission_fallback.clone()).or(lrms_defaults.admission_fallback.clone()),
    };
    LrmsSettings {
        backfilling: scheduler.backfilling(pick!(pivots, profile.pivots)),
        preemption,
        cp_alpha: pick!(cp_alpha, DEFAULT_CP_ALPHA),
        admission,
        pacp: (
            pick!(pacp_low_urgency, 0.5),
            pick!(pacp_low_ratio, 4.0),
            pick!(pacp_high_ratio, 2.0),
            pick!(pacp_omega, crate::lrms::PacpOmega::Measured),
        ),
        queue_limit: pick!(queue_limit, 1),
        enforce_memory: pick!(enforce_memory, true),
        search_budget: pick!(search_budget, crate::lrms::policy::SEARCH_BUDGET),
        compress: pick!(compress, false),
        locals: pick!(locals, crate::lrms::LocalRequests::Reserved),
        moldable: pick!(moldable, crate::lrms::Moldable::Spread),
        partitions: crate::lrms::provider::Partitions::Single,
        backfill_depth: own.backfill_depth.or(lrms_defaults.backfill_depth),
        profile,
    }
}

/// The `[[contract]]`s between grids.
fn read_contracts(top: &Table<'_>, grids: &GridNames<'_>) -> Vec<Contract> {
    let diags = grids.diags;
    let mut contracts = Vec::new();
    for (i, cnode) in top.tables("contract").into_iter().enumerate() {
        let Some(c) = Table::of(cnode, format!("contract #{}", i + 1), diags) else {
            continue;
        };
        let from = c
            .req_str("from", "the grid that redirects requests")
            .and_then(|(s, l)| grids.find(s, l, "contract"));
        let to = c
            .req_str("to", "the grid that serves them")
            .and_then(|(s, l)| grids.find(s, l, "contract"));
        if let (Some(f), Some(t)) = (from, to) {
            if f == t {
                if let Some((_, loc)) = c.str("to") {
                    diags.error(loc, "a contract must join two different grids", None);
                }
            }
        }
        if c.get("kind").is_none() {
            c.missing("kind", "kind = \"fixed-price\" or \"price-range\"");
        }
        let kind = c.named::<ContractKind>("kind").map(|(k, _)| k);
        let both_ways = c.bool("both_ways").is_none_or(|(b, _)| b);
        let price_max = c.positive_number("price_max", MAX_PRICE).map(|(v, _)| v);
        let load_threshold = c
            .number_in("load_threshold", 0.0, 1.0)
            .map_or(0.95, |(v, _)| v);
        let k = c.number_in("k", 0.0, 1.0).map_or(0.05, |(v, _)| v);
        c.finish();
        if let (Some(from), Some(to), Some(kind)) = (from, to, kind) {
            contracts.push(Contract {
                from,
                to,
                both_ways,
                kind,
                price_max,
                load_threshold,
                k,
            });
        }
    }
    contracts
}

impl Topology {
    /// A cluster's cost of a resource unit, drawn from `peering.unit_cost` (paper 004 Table 1)
    /// with the run's seed.
    pub fn unit_cost(&self, c: ClusterId) -> f64 {
        let (lo, hi) = self.peering.unit_cost;
        let draw =
            crate::time::stream_seed(self.emulation.seed, &format!("unit-cost:{}", c.0)) >> 11;
        let u = draw as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }

    /// Grid `grid`'s cost model: eq. 2's average unit cost over its clusters, weighted by
    /// their cores, with the topology's steepness.
    pub fn cost_model(&self, grid: GridId) -> crate::igg::CostModel {
        let clusters = &self.grids[usize::from(grid.0)].clusters;
        let mut m = crate::igg::CostModel::from_providers(
            &clusters
                .iter()
                .map(|&c| (self.unit_cost(c), self.cluster(c).cores() as f64))
                .collect::<Vec<_>>(),
        );
        m.steepness = self.peering.steepness;
        m
    }

    /// The models of a Grid's clusters and its external arrival rate Λ, from the topology's
    /// workloads — what a real IGG would learn by analysing its clusters' workloads.
    pub fn grid_models(&self, grid: usize) -> (Vec<ClusterModel>, f64) {
        let topo = self;
        let g = &topo.grids[grid];
        let span = {
            let arrivals = topo.requests.iter().map(|r| r.arrival.as_secs_f64());
            let (lo, hi) =
                arrivals.fold((f64::INFINITY, 0f64), |(lo, hi), a| (lo.min(a), hi.max(a)));
            (hi - lo).max(1.0)
        };
        let external = topo
            .requests
            .iter()
            .filter(|r| r.origin == Origin::External && usize::from(r.grid.0) == grid);
        let (rate, ext_vms, ext_dur) = stream_stats(external, span);
        let models = g
            .clusters
            .iter()
            .map(|&cid| {
                let c = topo.cluster(cid);
                // Computing power in units of a 1000-MIPS core, so service times stay in seconds.
                let speed: f64 = c
                    .hosts
                    .iter()
                    .map(|h| f64::from(h.cores) * f64::from(h.mips) / 1000.0)
                    .sum();
                let local = topo
                    .requests
                    .iter()
                    .filter(|r| r.origin == Origin::Local && r.cluster == Some(cid));
                let (lrate, lvms, ldur) = stream_stats(local, span);
                let theta = (ext_vms * ext_dur / speed).max(1e-12);
                let tau = lvms * ldur / speed;
                ClusterModel {
                    cores: c.cores() as f64,
                    speed,
                    local_rate: lrate,
                    tau,
                    mu: (CV_LOCAL * tau).powi(2) + tau * tau,
                    theta,
                    omega: (CV_EXTERNAL * theta).powi(2) + theta * theta,
                }
            })
            .collect();
        (models, rate)
    }
}

/// Rates and means of a request stream.
fn stream_stats<'a>(reqs: impl Iterator<Item = &'a LeaseRequest>, span_s: f64) -> (f64, f64, f64) {
    let (mut n, mut vms, mut dur) = (0f64, 0f64, 0f64);
    for r in reqs {
        n += 1.0;
        vms += f64::from(r.vms);
        dur += r.duration.as_secs_f64();
    }
    if n == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    (n / span_s.max(1.0), vms / n, dur / n)
}
