//! What a person reads on an axis: a name and a unit for every key the report draws, in the
//! direction the papers draw it, with the raw key kept for a tooltip.
//!
//! - A metric (a `summary.json` key, a sweep's `points.csv` metric) is named from a table of
//!   igemu's keys ([`metric`]) and takes its unit from its suffix, as `summary.json` names
//!   them: `_pct` a percent, `_s` emulated seconds (drawn in minutes, hours or days when
//!   larger: [`time_unit`]), `_ms` milliseconds; money (`paid`, `received`) is in the
//!   contracts' currency units (paper 004 prices a resource unit, one core for one second,
//!   and names no currency); anything else is a count.
//! - A swept key ([`KeyAxis`]) is named from a table of the keys the shipped sweeps vary, and
//!   drawn in the direction its paper reads: a Weibull inter-arrival scale α (higher is
//!   lighter) becomes the arrival rate it gives, 1 / (α·Γ(1 + 1/β)) requests per second or
//!   hour (paper 000 Fig. 5 (c) plots the external arrival rate; β is read from the sweep's
//!   topology when `sweep.json` names it and its hash still matches, else the axis is the load
//!   relative to the lightest swept, α_max / α, exact at a fixed shape); a share becomes a
//!   percent. An unknown key is its own label.

use std::path::Path;

use serde_json::Value;

/// How a quantity's values are written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// A share, 0–100.
    Percent,
    /// Emulated seconds.
    Seconds,
    /// Wall-clock seconds (a run's own duration; never scaled).
    WallSeconds,
    /// Milliseconds.
    Millis,
    /// The contracts' currency units.
    Money,
    /// Messages per redirected request.
    PerRequest,
    /// A number of things.
    Count,
}

/// A quantity as a person reads it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Quantity {
    /// Its name ("VMs preempted").
    pub name: String,
    /// Its unit.
    pub unit: Unit,
}

/// The names of `summary.json`'s figures (the last part of a dotted key).
const NAMES: [(&str, &str); 45] = [
    ("utilization_pct", "utilisation"),
    ("useful_work_pct", "useful work"),
    ("awrt_s", "AWRT of best-effort external leases"),
    ("awrt_grid_s", "AWRT of the Grid's external requests"),
    ("awrt_local_s", "AWRT of local requests"),
    ("mean_wait_s", "mean wait"),
    ("external_waiting_s", "waiting time of external leases"),
    ("vm_preemptions", "VMs preempted"),
    ("vm_displacements", "VMs of reservations displaced"),
    ("lease_preemptions", "leases preempted"),
    ("lease_displacements", "reservations displaced"),
    ("decisions", "preemption decisions"),
    ("inexact_decisions", "inexact decisions"),
    ("migration_fallbacks", "migration fallbacks"),
    ("overhead_s", "preemption overhead"),
    ("makespan_s", "makespan"),
    ("be_makespan_s", "makespan of best-effort leases"),
    ("local_rejection_pct", "local requests rejected"),
    ("external_rejection_pct", "external requests rejected"),
    (
        "nonpreemptable_rejection_pct",
        "non-preemptable requests rejected",
    ),
    ("migration_pct", "migratable leases migrated"),
    ("dvr_pct", "deadline violation rate"),
    ("completed_external_pct", "external requests completed"),
    ("migrations", "leases migrated"),
    ("deadline_misses", "deadlines missed"),
    ("emulated_end_s", "emulated end"),
    ("warm_up_s", "warm-up left out of the request figures"),
    ("wall_s", "wall-clock time"),
    ("messages", "messages"),
    ("timed_events", "timed events"),
    ("hosts", "hosts"),
    ("cores", "cores"),
    ("redirected_pct", "external load redirected to peers"),
    ("messages_per_redirect", "messages per redirected request"),
    ("paid", "paid to peers"),
    ("received", "received from peers"),
    ("offers", "requests offered"),
    ("accepted", "offers accepted"),
    ("countered_taken", "counter-offers taken"),
    ("countered_declined", "counter-offers declined"),
    ("rejected", "offers rejected"),
    ("timeouts", "offers timed out"),
    ("redirected", "requests redirected"),
    ("p99", "timer lateness p99"),
    ("max", "timer lateness, most"),
];

/// Keys with a prefix naming what the last part is about: `{}` is the last part.
const PER: [(&str, &str); 4] = [
    ("vm_preemptions_by_type", "VMs preempted, {} leases"),
    ("redirected_pct_by_peer", "external load redirected to {}"),
    ("paid_by_peer", "paid to {}"),
    ("negotiations", ""),
];

/// The name and unit of metric `key` (a dotted `summary.json` key: `awrt_s`,
/// `grids.das2.awrt_grid_s`, `clusters.g/c1.utilization_pct`, `negotiations.offers`).
pub(crate) fn metric(key: &str) -> Quantity {
    // `grids.<g>.rest` and `clusters.<g/c>.rest`: the rest's name, then where.
    for (prefix, what) in [("grids.", "Grid"), ("clusters.", "cluster")] {
        if let Some((place, rest)) = key.strip_prefix(prefix).and_then(|r| r.split_once('.')) {
            let q = metric(rest);
            return Quantity {
                name: format!("{} ({what} {place})", q.name),
                unit: q.unit,
            };
        }
    }
    let last = key.rsplit('.').next().unwrap_or(key);
    let unit = if key == "wall_s" {
        Unit::WallSeconds
    } else if last.ends_with("_pct") || key.starts_with("redirected_pct_by_peer.") {
        Unit::Percent
    } else if last.ends_with("_s") {
        Unit::Seconds
    } else if last.ends_with("_ms") || key.starts_with("timer_lateness_ms.") {
        Unit::Millis
    } else if matches!(key, "paid" | "received") || key.starts_with("paid_by_peer.") {
        Unit::Money
    } else if key == "messages_per_redirect" {
        Unit::PerRequest
    } else {
        Unit::Count
    };
    let name = match key.split_once('.') {
        Some((head, tail)) => match PER.iter().find(|(p, _)| *p == head) {
            Some((_, "")) => known(tail),
            Some((_, pattern)) => pattern.replace("{}", tail),
            None => key.to_string(),
        },
        None => known(key),
    };
    Quantity { name, unit }
}

/// The name of a figure, or the key itself with spaces for underscores and its unit suffix
/// dropped.
fn known(key: &str) -> String {
    match NAMES.iter().find(|(k, _)| *k == key) {
        Some((_, name)) => name.to_string(),
        None => ["_pct", "_s", "_ms"]
            .iter()
            .find_map(|s| key.strip_suffix(s))
            .unwrap_or(key)
            .replace('_', " "),
    }
}

/// The unit emulated seconds up to `max` are drawn in, and its length in seconds: seconds
/// below 2 minutes, minutes below 2 hours, hours below 2 days, else days.
pub(crate) fn time_unit(max: f64) -> (&'static str, f64) {
    let m = if max.is_finite() { max.abs() } else { 0.0 };
    if m < 120.0 {
        ("s", 1.0)
    } else if m < 7_200.0 {
        ("min", 60.0)
    } else if m < 172_800.0 {
        ("h", 3_600.0)
    } else {
        ("d", 86_400.0)
    }
}

impl Quantity {
    /// Its unit as written after the name, for values up to `max` (seconds are scaled), and
    /// the factor values are divided by.
    pub(crate) fn unit_text(&self, max: f64) -> (String, f64) {
        match self.unit {
            Unit::Percent => ("%".into(), 1.0),
            Unit::Seconds => {
                let (name, size) = time_unit(max);
                (name.into(), size)
            }
            Unit::WallSeconds => ("s".into(), 1.0),
            Unit::Millis => ("ms".into(), 1.0),
            Unit::Money => ("currency units".into(), 1.0),
            Unit::PerRequest => ("messages per request".into(), 1.0),
            Unit::Count => ("count".into(), 1.0),
        }
    }

    /// Its axis label for values up to `max`: `name (unit)`, and the factor values are
    /// divided by.
    pub(crate) fn axis(&self, max: f64) -> (String, f64) {
        let (unit, factor) = self.unit_text(max);
        (format!("{} ({unit})", self.name), factor)
    }
}

/// How a swept key's values map onto its axis.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Transform {
    /// As they are.
    Same,
    /// Times a factor (a share to a percent).
    Times(f64),
    /// A constant over the value (an inter-arrival scale to a rate); values must be > 0.
    Over(f64),
}

impl Transform {
    /// `v` on the axis.
    pub(crate) fn apply(self, v: f64) -> f64 {
        match self {
            Transform::Same => v,
            Transform::Times(k) => k * v,
            Transform::Over(k) => k / v,
        }
    }

    /// The value that `x` on the axis stands for.
    pub(crate) fn invert(self, x: f64) -> f64 {
        match self {
            Transform::Same => x,
            Transform::Times(k) => x / k,
            Transform::Over(k) => k / x,
        }
    }

    /// The axis range of values over `range` (the transforms are monotonic).
    pub(crate) fn range(self, range: Option<(f64, f64)>) -> Option<(f64, f64)> {
        range.map(|(lo, hi)| {
            let (a, b) = (self.apply(lo), self.apply(hi));
            (a.min(b), a.max(b))
        })
    }
}

/// A swept key as an axis: its label (name and unit), the transform from its values, and
/// what the raw key is, for a tooltip.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct KeyAxis {
    /// The key, as the sweep file writes it.
    pub key: String,
    /// The axis's label: name, and unit in parentheses when it has one.
    pub label: String,
    /// A short name for a table's column or a legend (`dispatch`).
    pub short: String,
    /// From the key's values to the axis.
    pub transform: Transform,
    /// What the raw key and its values are (the tooltip).
    pub about: String,
}

/// What the sweep's topology says of its workloads, for the keys that name one.
#[derive(Clone, Debug, Default)]
pub(crate) struct Context {
    /// Per `[[workload]]`, in order: name, origin and its model's Weibull arrival shape.
    pub workloads: Vec<WorkloadInfo>,
    /// Whether the topology was read (found, its hash the one `sweep.json` records).
    pub read: bool,
}

/// A workload of the sweep's topology.
#[derive(Clone, Debug, Default)]
pub(crate) struct WorkloadInfo {
    pub name: Option<String>,
    pub origin: Option<String>,
    /// β of its model's Weibull inter-arrival time (the model's default when not written).
    pub shape: Option<f64>,
}

impl Context {
    /// The workloads of the topology `sweep.json` in `dir` names, if it is there still and
    /// unchanged (its hash the recorded one), with the `[set]` overrides of their shapes;
    /// an empty context otherwise (keys are then drawn without it).
    pub(crate) fn of_sweep(dir: &Path) -> Context {
        Context::read(dir).unwrap_or_default()
    }

    fn read(dir: &Path) -> Option<Context> {
        let record =
            crate::input::read_capped(&dir.join("sweep.json"), crate::input::MAX_JSON_BYTES)
                .ok()?;
        let record: Value = serde_json::from_str(&record).ok()?;
        let path = Path::new(record["topology_path"].as_str()?);
        let hash = record["topology_hash"].as_str()?;
        if crate::file_hash(path).as_deref() != Some(hash) {
            return None;
        }
        let text = crate::input::read_capped(path, crate::input::MAX_TOML_BYTES).ok()?;
        let topology: toml::Table = toml::from_str(&text).ok()?;
        let set = record["set"].as_object();
        let workloads = topology
            .get("workload")
            .and_then(|w| w.as_array())
            .map(|list| {
                list.iter()
                    .enumerate()
                    .map(|(i, w)| WorkloadInfo::of(i, w, set))
                    .collect()
            })
            .unwrap_or_default();
        Some(Context {
            workloads,
            read: true,
        })
    }

    fn workload(&self, n: usize) -> Option<&WorkloadInfo> {
        self.workloads.get(n)
    }
}

impl WorkloadInfo {
    fn of(n: usize, w: &toml::Value, set: Option<&serde_json::Map<String, Value>>) -> Self {
        let text = |k: &str| w.get(k).and_then(|v| v.as_str()).map(String::from);
        let model = text("model");
        let default_shape = match model.as_deref() {
            Some("das2") => Some(crate::workload::Das2::default().arrival_shape),
            Some("gwa") => Some(crate::workload::Gwa::default().arrival_shape),
            _ => None,
        };
        let number = |v: &toml::Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
        let written = model
            .as_deref()
            .and_then(|m| w.get(m))
            .and_then(|t| t.get("arrival_shape"))
            .and_then(number);
        let overridden = model.as_deref().and_then(|m| {
            let key = format!("workload.{n}.{m}.arrival_shape");
            set?.get(&key)?.as_str()?.trim().parse::<f64>().ok()
        });
        WorkloadInfo {
            name: text("name"),
            origin: text("origin"),
            shape: overridden.or(written).or(default_shape),
        }
    }

    /// Its requests as an axis names them: `external requests of workload ext`.
    fn requests(&self, n: usize) -> String {
        let origin = self.origin.as_deref().map_or("", |o| o);
        match (&self.name, origin) {
            (Some(name), "") => format!("requests of workload {name}"),
            (Some(name), o) => format!("{o} requests of workload {name}"),
            (None, "") => format!("requests of workload {n}"),
            (None, o) => format!("{o} requests of workload {n}"),
        }
    }
}

/// The keys that name a policy or another choice, with their names.
const CHOICES: [(&str, &str); 9] = [
    ("igg.dispatch", "dispatch"),
    ("igg.provider", "provider policy"),
    ("lrms.preemption", "preemption policy"),
    ("lrms.admission", "admission control"),
    ("lrms.scheduler", "scheduler"),
    ("peering.contracts", "contracts"),
    ("peering.publish_interval", "publish interval"),
    ("peering.answer", "answer policy"),
    ("peering.offer", "offer policy"),
];

impl KeyAxis {
    /// Key `key` as an axis over its numeric values in `range` (`None` for a key of names),
    /// with what `context` knows of the sweep's workloads.
    pub(crate) fn of(key: &str, range: Option<(f64, f64)>, context: &Context) -> KeyAxis {
        let plain = |label: &str, short: &str, about: String| KeyAxis {
            key: key.to_string(),
            label: label.to_string(),
            short: short.to_string(),
            transform: Transform::Same,
            about,
        };
        if let Some((_, name)) = CHOICES.iter().find(|(k, _)| *k == key) {
            return plain(
                name,
                name,
                format!("{key}: the value set with --set {key}=…"),
            );
        }
        let parts: Vec<&str> = key.split('.').collect();
        let workload = match parts.as_slice() {
            ["workload", n, ..] => n.parse::<usize>().ok(),
            _ => None,
        };
        if let Some(n) = workload {
            let info = context.workload(n).cloned().unwrap_or_default();
            let requests = info.requests(n);
            match parts.as_slice() {
                [_, _, "das2" | "gwa", "arrival_scale"] => {
                    return arrival_axis(key, n, &info, range, context);
                }
                [_, _, "rate_factor"] => {
                    return KeyAxis {
                        transform: Transform::Same,
                        ..plain(
                            &format!("arrival rate of {requests} (× its model's)"),
                            "rate factor",
                            format!("{key}: arrivals this many times as frequent as the model's"),
                        )
                    }
                }
                [_, _, "mix", "best_effort"] => {
                    return KeyAxis {
                        transform: Transform::Times(100.0),
                        ..plain(
                            &format!("best-effort share of {requests} (%)"),
                            "best-effort %",
                            format!("{key}: the share of best-effort leases, 0–1"),
                        )
                    }
                }
                _ => {}
            }
        }
        match key {
            "lrms.cp_alpha" => plain(
                "CP weight α (0–1)",
                "α",
                format!("{key}: CP's α (paper 001 eq. 2), the weight of the preemption cost"),
            ),
            "lrms.queue_limit" => plain(
                "queue limit K (requests)",
                "K",
                format!("{key}: the most requests the cluster's queue holds"),
            ),
            "lrms.racp_scale" => plain(
                "RACP's N_q scale k",
                "k",
                format!("{key}: what RACP's N_q = μ_e/λ is multiplied by"),
            ),
            "peering.load_threshold" => KeyAxis {
                transform: Transform::Times(100.0),
                ..plain(
                    "load threshold for offering to peers (%)",
                    "threshold %",
                    format!("{key}: the load, 0–1, from which an IGG offers requests to peers"),
                )
            },
            _ => {
                let short = key.rsplit('.').next().unwrap_or(key);
                plain(key, short, format!("{key} (no name known for this key)"))
            }
        }
    }

    /// The tooltip of a value `raw` of the key: `key = raw`, and what the key is.
    pub(crate) fn value_title(&self, raw: &str) -> String {
        format!("{} = {raw}", self.key)
    }
}

/// A Weibull inter-arrival scale α as the arrival rate it gives (requests per second, or per
/// hour when under 0.1 a second), or, without the shape, the load relative to the lightest
/// swept.
fn arrival_axis(
    key: &str,
    n: usize,
    info: &WorkloadInfo,
    range: Option<(f64, f64)>,
    context: &Context,
) -> KeyAxis {
    let requests = info.requests(n);
    let positive = range.filter(|(lo, hi)| *lo > 0.0 && hi.is_finite());
    let Some((lo, hi)) = positive else {
        return KeyAxis {
            key: key.to_string(),
            label: format!("Weibull inter-arrival scale α of {requests} (s; higher is lighter)"),
            short: "α".into(),
            transform: Transform::Same,
            about: format!("{key}: the Weibull scale α of the inter-arrival time, seconds"),
        };
    };
    match info.shape.filter(|b| *b > 0.0 && b.is_finite()) {
        Some(beta) => {
            let per_second = 1.0 / crate::workload::math::gamma(1.0 + 1.0 / beta);
            let (unit, k) = if per_second / lo >= 0.1 {
                ("requests/s", per_second)
            } else {
                ("requests/h", per_second * 3_600.0)
            };
            KeyAxis {
                key: key.to_string(),
                label: format!("arrival rate of {requests} ({unit})"),
                short: "arrival rate".into(),
                transform: Transform::Over(k),
                about: format!(
                    "{key}: the Weibull scale α of the inter-arrival time (s), shape β = {beta}; drawn as the mean arrival rate 1 / (α·Γ(1 + 1/β))"
                ),
            }
        }
        None => {
            let why = if context.read {
                "the topology gives no Weibull shape for it"
            } else {
                "the sweep's topology file is not where sweep.json says, or has changed"
            };
            KeyAxis {
                key: key.to_string(),
                label: format!(
                    "load of {requests}, relative to the lightest swept (α = {} s)",
                    super::svg::number(hi)
                ),
                short: "relative load".into(),
                transform: Transform::Over(hi),
                about: format!(
                    "{key}: the Weibull scale α of the inter-arrival time (s); drawn as α_max / α, the arrival rate relative to the lightest swept ({why}, so the rate itself is not known)"
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_take_a_name_and_the_unit_of_their_suffix() {
        let q = metric("awrt_s");
        assert_eq!(
            (q.name.as_str(), q.unit),
            ("AWRT of best-effort external leases", Unit::Seconds)
        );
        assert_eq!(
            q.axis(30_000.0).0,
            "AWRT of best-effort external leases (h)"
        );
        assert_eq!(metric("utilization_pct").axis(50.0).0, "utilisation (%)");
        assert_eq!(
            metric("vm_preemptions").axis(5.0).0,
            "VMs preempted (count)"
        );
        assert_eq!(
            metric("vm_preemptions_by_type.migratable").name,
            "VMs preempted, migratable leases"
        );
        assert_eq!(
            metric("grids.das2.paid").axis(1.0).0,
            "paid to peers (Grid das2) (currency units)"
        );
        assert_eq!(
            metric("grids.g.negotiations.offers").name,
            "requests offered (Grid g)"
        );
        assert_eq!(
            metric("clusters.g/c1.utilization_pct").axis(1.0).0,
            "utilisation (cluster g/c1) (%)"
        );
        assert_eq!(metric("wall_s").axis(1_000.0).0, "wall-clock time (s)");
        assert_eq!(
            metric("some_new_count").axis(1.0).0,
            "some new count (count)"
        );
        assert_eq!(metric("new_thing_s").unit, Unit::Seconds);
        assert_eq!(time_unit(90.0), ("s", 1.0));
        assert_eq!(time_unit(3_000.0), ("min", 60.0));
        assert_eq!(time_unit(100_000.0), ("h", 3_600.0));
        assert_eq!(time_unit(1e6), ("d", 86_400.0));
    }

    /// Paper 000's DAS-2 external scale (β = 0.5): α = 3.8 s is a mean inter-arrival time of
    /// 7.6 s, 0.13 requests a second; without the shape, α_max / α.
    #[test]
    fn an_arrival_scale_is_drawn_as_the_rate_it_gives() {
        let context = Context {
            workloads: vec![WorkloadInfo {
                name: Some("external".into()),
                origin: Some("external".into()),
                shape: Some(0.5),
            }],
            read: true,
        };
        let key = "workload.0.das2.arrival_scale";
        let axis = KeyAxis::of(key, Some((3.8, 7.0)), &context);
        assert_eq!(
            axis.label,
            "arrival rate of external requests of workload external (requests/s)"
        );
        let rate = axis.transform.apply(3.8);
        assert!((rate - 1.0 / 7.6).abs() < 1e-9, "{rate}");
        assert!(axis.transform.apply(7.0) < rate, "higher α is lighter");
        assert_eq!(
            axis.transform.range(Some((3.8, 7.0))).map(|r| r.1),
            Some(rate)
        );
        // Slower arrivals: per hour.
        let slow = KeyAxis::of(key, Some((60.0, 90.0)), &context);
        assert!(slow.label.ends_with("(requests/h)"), "{}", slow.label);
        // No topology: relative to the lightest.
        let bare = KeyAxis::of(key, Some((3.8, 7.0)), &Context::default());
        assert_eq!(
            bare.label,
            "load of requests of workload 0, relative to the lightest swept (α = 7 s)"
        );
        assert_eq!(bare.transform.apply(7.0), 1.0);
        assert!(bare.about.contains(key));
        // Names and unknown keys.
        assert_eq!(
            KeyAxis::of("igg.dispatch", None, &context).label,
            "dispatch"
        );
        let unknown = KeyAxis::of("lrms.some_knob", Some((1.0, 2.0)), &context);
        assert_eq!(
            (unknown.label.as_str(), unknown.transform),
            ("lrms.some_knob", Transform::Same)
        );
        let share = KeyAxis::of("workload.0.mix.best_effort", Some((0.1, 0.9)), &context);
        assert_eq!(share.transform.apply(0.5), 50.0);
    }
}
