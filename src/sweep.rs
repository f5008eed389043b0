//! Parameter sweeps: a sweep file names a topology, the `--set` keys to vary (lists or
//! ranges) and the seeds; every combination runs (spread over threads), one CSV row per run,
//! and a summary with the mean and 95 % confidence interval of each metric per point.
//! `--shard i/n` runs only runs with index ≡ i (mod n), so a sweep can be split across
//! machines; `merge` joins the shards' run files.
//!
//! Sweep file format (documented in `docs/sweeps.md`):
//!
//! ```toml
//! topology = "../topologies/paper000-three-clusters.toml"   # relative to this file
//! seeds = 10                        # or a list: [1, 2, 3]
//! metrics = ["vm_preemptions", "utilization_pct"]   # default: every numeric summary key
//! [set]                             # fixed overrides
//! "emulation.end" = "3d"
//! [vary]                            # one run per combination
//! "igg.dispatch" = ["rr", "pap-rtdp"]
//! "workload.0.das2.arrival_scale" = { from = 3.8, to = 7.0, step = 0.8 }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::input::diag::{did_you_mean, Diags, Loc};
use crate::input::node::{parse_document, Node, NodeKind, Origin};
use crate::input::table::Table;
use crate::input::Report;
use crate::topology::{self, Overrides};
use crate::{run, RunOptions};

/// A parsed sweep file.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The topology file.
    pub topology: PathBuf,
    /// Seeds to run every point with.
    pub seeds: Vec<u64>,
    /// Summary keys to aggregate (empty: every numeric top-level key).
    pub metrics: Vec<String>,
    /// Fixed overrides.
    pub set: Vec<(String, String)>,
    /// Keys to vary and their values (as TOML text for `--set`).
    pub vary: Vec<(String, Vec<String>)>,
    /// The policies its runs may name.
    pub registry: crate::policy::Registry,
}

/// One run of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    /// Index in the sweep (stable across shards).
    pub index: usize,
    /// The varied values, in `vary` order.
    pub point: Vec<String>,
    /// The seed.
    pub seed: u64,
}

/// Reads a sweep file; every problem is reported at once, at its `file:line:col`.
pub fn parse(path: &Path) -> Result<Sweep, Box<Report>> {
    parse_with(path, &crate::policy::Registry::builtin())
}

/// [`parse`], with the policies its runs may name.
pub fn parse_with(path: &Path, registry: &crate::policy::Registry) -> Result<Sweep, Box<Report>> {
    let shown = path.display().to_string();
    let text = crate::input::read_toml(path, "check the sweep file's path")?;
    let diags = Diags::default();
    match parse_str(&text, path, &diags, registry) {
        Some(s) if diags.is_empty() => {
            check_topology_file(&s.topology, &text, path, &diags);
            if diags.is_empty() {
                return Ok(s);
            }
        }
        _ => {}
    }
    Err(Box::new(Report::of_file(&shown, &text, diags.into_vec())))
}

/// Reports, at the sweep file's `topology` key, a topology file that cannot be read: the
/// sweep's own place and the path as resolved (relative to the sweep file's folder), rather
/// than the topology reader's bare "does not exist".
fn check_topology_file(topology: &Path, text: &str, path: &Path, diags: &Diags) {
    let problem = match std::fs::metadata(topology) {
        Ok(m) if m.is_file() => return,
        Ok(_) => "is not a file".to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_string(),
        Err(e) => format!("cannot be read ({e})"),
    };
    // The key's place: parsed again (cheap, and the sweep parsed once already).
    let scratch = Diags::default();
    let Some(root) = parse_document(text, Origin::File, &scratch) else {
        return;
    };
    let Some(t) = Table::of(&root, "the sweep file", &scratch) else {
        return;
    };
    let Some((written, loc)) = t.str("topology") else {
        return;
    };
    diags.error(
        loc,
        format!(
            "the topology `{}` ({}) {problem}",
            crate::input::diag::shown(written),
            topology.display()
        ),
        Some(format!(
            "a sweep's topology path is relative to the sweep file's folder ({}); give the \
             path of a topology file, e.g. topology = \"../topologies/quickstart.toml\"",
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .display()
        )),
    );
}

/// Reads sweep text as if from the file at `path` (which resolves its topology).
pub fn parse_text(text: &str, path: &Path) -> Result<Sweep, Box<Report>> {
    parse_text_with(text, path, &crate::policy::Registry::builtin())
}

/// [`parse_text`], with the policies its runs may name.
pub fn parse_text_with(
    text: &str,
    path: &Path,
    registry: &crate::policy::Registry,
) -> Result<Sweep, Box<Report>> {
    let diags = Diags::default();
    match parse_str(text, path, &diags, registry) {
        Some(s) if diags.is_empty() => Ok(s),
        _ => Err(Box::new(Report::of_file(
            &path.display().to_string(),
            text,
            diags.into_vec(),
        ))),
    }
}

fn parse_str(
    text: &str,
    path: &Path,
    diags: &Diags,
    registry: &crate::policy::Registry,
) -> Option<Sweep> {
    let root = parse_document(text, Origin::File, diags)?;
    let t = Table::of(&root, "the sweep file", diags)?;
    if t.get("topology").is_none() && t.get("grid").is_some() {
        // A topology given where a sweep goes: one message, not one per key.
        diags.error(
            &Loc::WholeFile,
            "this is a topology file, not a sweep file",
            Some(format!(
                "run it with `igemu run {0}`, or sweep it from a sweep file naming it: \
                 topology = \"{0}\", seeds = 5, and a [vary] table (docs/sweeps.md)",
                path.display()
            )),
        );
        return None;
    }
    let topology = t.req_str("topology", "name the topology: topology = \"../file.toml\"");
    let seeds = read_seeds(&t);
    let metrics = read_metrics(&t);
    let (set_t, vary_t) = (t.table("set"), t.table("vary"));
    let set = set_t.as_ref().map(read_set).unwrap_or_default();
    let vary = vary_t.as_ref().map(read_vary).unwrap_or_default();
    check_keys(
        &[("[set]", set_t.as_ref()), ("[vary]", vary_t.as_ref())],
        diags,
    );
    t.finish();
    // Points × seeds, checked before anything lists them.
    if let (Some(seeds), Some(node)) = (&seeds, t.get("seeds").or_else(|| t.get("vary"))) {
        let runs = vary
            .iter()
            .fold(seeds.len() as f64, |n, (_, values)| n * values.len() as f64);
        if runs > MAX_SWEEP_RUNS as f64 {
            diags.error(
                &node.loc,
                format!("{runs} runs (points × seeds); a sweep has at most {MAX_SWEEP_RUNS}"),
                Some("vary fewer values, or split the study into several sweeps".into()),
            );
            return None;
        }
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let sweep = Sweep {
        topology: base.join(topology?.0),
        seeds: seeds?,
        metrics: metrics.iter().map(|(m, _)| m.clone()).collect(),
        set,
        vary,
        registry: registry.clone(),
    };
    check_metrics(&sweep, &metrics, diags);
    Some(sweep)
}

/// Every metric a run of `topo` can report: the numeric keys of `summary.json` as dotted
/// paths, known from the topology alone (its Grids and clusters name the nested keys), so a
/// sweep's metric names are checked before anything runs. Realtime-only keys (`speedup`,
/// `timer_lateness_ms.*`) are not included.
pub fn metric_names(topo: &topology::Topology) -> Vec<String> {
    let none = BTreeMap::new();
    let figures = crate::metrics::figures(topo, &[], &none);
    let mut grids = crate::metrics::grid_figures(topo, &[], &BTreeMap::new());
    for (name, g) in grids.iter_mut() {
        // Redirections and payments per peer appear for the peers a run redirected to: any
        // other Grid.
        g.redirected_pct_by_peer = topo
            .grids
            .iter()
            .filter(|p| &p.name != name)
            .map(|p| (p.name.clone(), 0.0))
            .collect();
        g.paid_by_peer = g.redirected_pct_by_peer.clone();
    }
    let skeleton = crate::Summary {
        topology: topo.name.clone(),
        mode: "virtual",
        speedup: None,
        seed: 0,
        interleaving: None,
        threads: None,
        replay: None,
        emulated_end_s: 0.0,
        wall_s: 0.0,
        messages: 0,
        timed_events: 0,
        requests: figures.requests,
        makespan_s: 0.0,
        metrics: figures.all,
        clusters: figures.clusters,
        grids,
        request_metrics: crate::metrics::RequestMetrics::skeleton(topo),
        faults: Default::default(),
        invariant_violations: 0,
        violation_examples: Vec::new(),
        timer_lateness_ms: None,
        speedup_sustainable: None,
        speedup_auto: None,
        provenance: None,
        policies: Default::default(),
        plugins: Vec::new(),
    };
    // The summary's `seed` is the run's own, which the run file shows in its `seed` column:
    // a metric of that name would make the column twice.
    serde_json::to_value(&skeleton)
        .map(|v| {
            numeric(&v)
                .into_keys()
                .filter(|k| !is_run_column(k))
                .collect()
        })
        .unwrap_or_default()
}

/// The metrics a sweep records when it names none: [`metric_names`] but the per-request
/// metrics' statistics (`request_metrics.…`, several hundred in a topology of a few Grids),
/// which a sweep records when it names them.
pub fn default_metric_names(topo: &topology::Topology) -> Vec<String> {
    (metric_names(topo).into_iter())
        .filter(|n| !n.starts_with("request_metrics."))
        .collect()
}

/// Whether `name` is a column every run file has (run, seed, error) or a varied key's
/// (`set:…`), so no metric may take it.
pub fn is_run_column(name: &str) -> bool {
    matches!(name, "run" | "seed" | "error") || name.starts_with("set:")
}

/// Reports every metric name that no run of the sweep's topology can produce, at its place,
/// with the closest valid name. A topology that does not load is left to the later check,
/// which reports it in full.
fn check_metrics(sweep: &Sweep, metrics: &[(String, Loc)], diags: &Diags) {
    if metrics.is_empty() {
        return;
    }
    check_metric_columns(metrics, diags);
    let Some(first) = sweep.runs().into_iter().next() else {
        return;
    };
    let sets = sweep.overrides(&first);
    let registry = sweep.registry.clone();
    let Ok(topo) = topology::load_file(&sweep.topology, &Overrides { sets, registry }) else {
        return;
    };
    let names = metric_names(&topo);
    for (m, loc) in metrics {
        if is_run_column(m) || names.iter().any(|n| n == m) {
            continue;
        }
        let renamed = renamed_metric(m).filter(|n| names.contains(n));
        let hint = match (renamed, did_you_mean(m, names.iter().map(String::as_str))) {
            (Some(n), _) => format!(
                "did you mean `{n}`? (renamed: every share in summary.json is now a percent, \
                 0–100, its key ending in `_pct`)"
            ),
            (None, Some(c)) => format!("did you mean `{c}`?"),
            (None, None) => {
                let top: std::collections::BTreeSet<&str> = names
                    .iter()
                    .filter(|n| !n.contains('.'))
                    .map(String::as_str)
                    .collect();
                format!(
                    "metrics are numeric summary.json keys as dotted paths \
                     (e.g. `grids.<grid>.awrt_grid_s`); top-level ones: {}",
                    top.into_iter().collect::<Vec<_>>().join(", ")
                )
            }
        };
        diags.error(loc, format!("unknown metric `{m}`"), Some(hint));
    }
}

/// Reports a metric named like a column every run file has: the run file would have that
/// column twice, and the sweep would fail after its last run.
fn check_metric_columns(metrics: &[(String, Loc)], diags: &Diags) {
    for (m, loc) in metrics.iter().filter(|(m, _)| is_run_column(m)) {
        diags.error(
            loc,
            format!("metric `{m}` is a column of the run file already"),
            Some(
                "every run's row shows run, seed, its varied values (set:<key>) and error; \
                 drop it from metrics"
                    .into(),
            ),
        );
    }
}

/// Summary keys renamed when every share became a percent (0–1 fractions and bare percents
/// before), as (old, new) last path segments.
const RENAMED: [(&str, &str); 7] = [
    ("utilization", "utilization_pct"),
    ("useful_work_fraction", "useful_work_pct"),
    ("local_rejection_rate", "local_rejection_pct"),
    ("external_rejection_rate", "external_rejection_pct"),
    ("migration_rate", "migration_pct"),
    (
        "nonpreemptable_rejection_rate",
        "nonpreemptable_rejection_pct",
    ),
    ("dvr", "dvr_pct"),
];

/// The new name of a metric written with an old key as its last segment
/// (`clusters.g/c1.utilization` → `clusters.g/c1.utilization_pct`), so an old sweep file gets
/// a pointer to the new name (the edit distance is too large for a plain "did you mean").
pub fn renamed_metric(metric: &str) -> Option<String> {
    let (prefix, last) = match metric.rsplit_once('.') {
        Some((p, l)) => (format!("{p}."), l),
        None => (String::new(), metric),
    };
    RENAMED
        .iter()
        .find(|(old, _)| *old == last)
        .map(|(_, new)| format!("{prefix}{new}"))
}

/// The most runs a sweep may have (points × seeds): far beyond any study, small enough that
/// listing them cannot exhaust memory.
pub const MAX_SWEEP_RUNS: u64 = 1_000_000;

fn read_seeds(t: &Table<'_>) -> Option<Vec<u64>> {
    let Some(node) = t.get("seeds") else {
        return Some(vec![1]);
    };
    let wrong = || {
        t.diags.error(
            &node.loc,
            "`seeds` must be a positive count or a list of seeds",
            Some(
                "write seeds = 10 (seeds 1 to 10) or seeds = [1, 7, 42]; a seed is a whole \
                 number from 0 to 18446744073709551615, written as a string above \
                 9223372036854775807 (TOML's largest integer)"
                    .into(),
            ),
        );
        None
    };
    match &node.kind {
        NodeKind::Int(n) if *n as u64 > MAX_SWEEP_RUNS => {
            t.diags.error(
                &node.loc,
                format!("{n} seeds; a sweep has at most {MAX_SWEEP_RUNS} runs"),
                Some("use fewer seeds, or split the study into several sweeps".into()),
            );
            None
        }
        NodeKind::Int(n) if *n > 0 => Some((1..=*n as u64).collect()),
        NodeKind::Array(items) if items.is_empty() => {
            t.diags.error(
                &node.loc,
                "`seeds` lists no seed: the sweep would make no run",
                Some("list at least one seed, e.g. seeds = [1], or give a count".into()),
            );
            None
        }
        NodeKind::Array(items) => {
            let seeds = items
                .iter()
                .map(|v| match &v.kind {
                    NodeKind::Int(i) => u64::try_from(*i).ok(),
                    // Seeds above TOML's largest integer (2^63 − 1), as `emulation.seed` takes
                    // them.
                    NodeKind::Str(s) => s.trim().parse::<u64>().ok(),
                    _ => None,
                })
                .collect::<Option<Vec<u64>>>()
                .or_else(wrong)?;
            // A seed run twice is the same run: counted twice it would narrow the intervals.
            let mut seen = std::collections::BTreeSet::new();
            let mut repeated = false;
            for (seed, item) in seeds.iter().zip(items) {
                if !seen.insert(*seed) {
                    repeated = true;
                    t.diags.error(
                        &item.loc,
                        format!("seed {seed} is listed twice"),
                        Some(
 "list each seed once: its runs would be the same runs, counted as independent samples"
                                .into(),
                        ),
                    );
                }
            }
            (!repeated).then_some(seeds)
        }
        _ => wrong(),
    }
}

fn read_metrics(t: &Table<'_>) -> Vec<(String, Loc)> {
    let Some(node) = t.get("metrics") else {
        return Vec::new();
    };
    let names = match &node.kind {
        NodeKind::Array(items) if items.is_empty() => {
            t.diags.error(
                &node.loc,
                "`metrics` lists no metric",
                Some("leave `metrics` out for every numeric summary key, or name some".into()),
            );
            return Vec::new();
        }
        NodeKind::Array(items) => items
            .iter()
            .map(|v| match &v.kind {
                NodeKind::Str(s) => Some((s.clone(), v.loc.clone())),
                _ => None,
            })
            .collect::<Option<Vec<(String, Loc)>>>(),
        _ => None,
    };
    let names = names.unwrap_or_else(|| {
        t.diags.error(
            &node.loc,
            "`metrics` must be a list of summary keys",
            Some("write metrics = [\"utilization_pct\", \"awrt_s\"]".into()),
        );
        Vec::new()
    });
    // Listed twice, a metric would be two columns of runs.csv and two rows of each point.
    let mut seen = std::collections::BTreeSet::new();
    for (m, loc) in &names {
        if !seen.insert(m) {
            t.diags.error(
                loc,
                format!("metric `{m}` is listed twice"),
                Some("list each metric once".into()),
            );
        }
    }
    names
}

/// Refuses, at its place, a key of `[set]` or `[vary]` that sets `emulation.seed` (the
/// sweep sets each run's seed from `seeds`, last, so the value would be ignored while runs.csv
/// showed it), and a key naming the same setting as one before it (`"lrms.cp_alpha"` and
/// `"lrms.cp_alpha "`: only the last would apply, while runs.csv showed both).
fn check_keys(sections: &[(&str, Option<&Table<'_>>)], diags: &Diags) {
    // Canonical key → the key as written and its section.
    let mut seen: BTreeMap<String, (String, &str)> = BTreeMap::new();
    for &(section, table) in sections {
        let Some(table) = table else { continue };
        for (k, v) in table.entries() {
            if crate::input::node::sets_key(&k.name, v, topology::SEED_KEY) {
                diags.error(
                    &k.loc,
                    format!(
                        "`{}` in {section} sets the seed, which a sweep sets for each run from `seeds`",
                        k.name
                    ),
                    Some(
                        "list the seeds at the top of the sweep file instead: seeds = [1, 7, 42] (or seeds = 10 for 1 to 10); every point runs with each"
                            .into(),
                    ),
                );
            }
            let key = crate::input::node::canonical_key(&k.name);
            match seen.get(&key) {
                Some((first, first_section)) => diags.error(
                    &k.loc,
                    format!(
                        "`{first}` in {first_section} and `{}` in {section} name the same key",
                        k.name
                    ),
                    Some(
                        "keep one of them: only the last would apply, while runs.csv would show both"
                            .into(),
                    ),
                ),
                None => {
                    seen.insert(key, (k.name.clone(), section));
                }
            }
        }
    }
}

/// A value as `--set` text, or a problem at its place.
fn set_text(t: &Table<'_>, node: &Node) -> Option<String> {
    let text = node.toml_text();
    if text.is_none() {
        t.diags.error(&node.loc, "a date-time cannot be set", None);
    }
    text
}

fn read_set(t: &Table<'_>) -> Vec<(String, String)> {
    t.entries()
        .filter_map(|(k, v)| Some((k.name.clone(), set_text(t, v)?)))
        .collect()
}

fn read_vary(t: &Table<'_>) -> Vec<(String, Vec<String>)> {
    let mut vary = Vec::new();
    for (k, v) in t.entries() {
        let values = match &v.kind {
            NodeKind::Array(items) if items.is_empty() => {
                t.diags.error(
                    &v.loc,
                    format!(
                        "`{}` in [vary] lists no value: the sweep would make no run",
                        k.name
                    ),
                    Some("list at least one value, or move the key to [set]".into()),
                );
                continue;
            }
            NodeKind::Array(items) => {
                let values: Vec<String> = items.iter().filter_map(|x| set_text(t, x)).collect();
                if values.len() == items.len() {
                    let locs: Vec<&Loc> = items.iter().map(|x| &x.loc).collect();
                    check_values(t, &k.name, &values, |i| locs[i]);
                }
                values
            }
            NodeKind::Table(_) => {
                let what = format!("range `{}`", k.name);
                match Table::of(v, what, t.diags).and_then(|r| read_range(&r)) {
                    Some(values) => {
                        check_values(t, &k.name, &values, |_| &v.loc);
                        values
                    }
                    None => continue,
                }
            }
            _ => set_text(t, v).into_iter().collect(),
        };
        vary.push((k.name.clone(), values));
    }
    vary
}

/// Refuses a value of `key` listed twice, at the second one's place (`loc(i)` of the i-th):
/// its runs would be the same runs, counted as independent samples of one point. Values are
/// compared as a run reads them ([`ValueIdentity`]), so `"0.1"` and `0.1`, `1e3` and
/// `1000`, and `"1h"`, `"60m"` and `3600` (as a duration) are each one value; the message
/// names both spellings.
fn check_values<'l>(t: &Table<'_>, key: &str, values: &[String], loc: impl Fn(usize) -> &'l Loc) {
    let mut seen = SeenValues::default();
    for (i, v) in values.iter().enumerate() {
        let Some((j, same)) = seen.insert(i, v) else {
            continue;
        };
        let shown = |v: &str| v.trim_matches('"').to_string();
        let (first, second) = (shown(&values[j]), shown(v));
        let message = if first == second {
            format!("value {second} is listed twice for `{key}`")
        } else {
            format!("values {first} and {second} of `{key}` are one value ({same})")
        };
        t.diags.error(
            loc(i),
            message,
            Some(
                "list each value once: its runs would be the same runs, counted as independent samples"
                    .into(),
            ),
        );
    }
}

/// What a varied value is to a run: a number (`0.1`, `"0.1"`, `1e3`), a duration written
/// with a unit or as a clock time (`"1h"`, `"01:00:00"`), or other TOML (a name, a list, a
/// table), as [`crate::input::node::override_value`] reads its `--set` text.
#[derive(Debug, PartialEq)]
enum ValueIdentity {
    /// A number: an integer, or a float's bits (integral floats are integers, `-0.0` is 0).
    Number(NumberKey, Option<u64>),
    /// A duration with a unit, µs.
    Duration(u64),
    /// Anything else, as TOML text.
    Text(String),
}

/// A number as one key: `1000`, `1e3` and `1000.0` are one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum NumberKey {
    Int(i64),
    Float(u64),
}

impl ValueIdentity {
    /// The identity of a value written as `--set` text. A number also carries the duration
    /// (µs) a duration key reads it as (seconds), so that `3600` meets `"1h"`.
    fn of(text: &str) -> ValueIdentity {
        use crate::input::node::override_value;
        let node = override_value(text, 0, &Diags::default());
        let number = match &node.kind {
            NodeKind::Int(i) => Some(NumberKey::Int(*i)),
            NodeKind::Float(f) => Some(float_key(*f)),
            // As runs.csv shows it: `"0.1"` is `0.1`.
            NodeKind::Str(s) => s
                .trim()
                .parse::<i64>()
                .map(NumberKey::Int)
                .or_else(|_| s.trim().parse::<f64>().map(float_key))
                .ok(),
            _ => None,
        };
        if let Some(n) = number {
            let secs = match n {
                NumberKey::Int(i) => i as f64,
                NumberKey::Float(bits) => f64::from_bits(bits),
            };
            let micros = (secs >= 0.0)
                .then(|| crate::time::EmuDuration::checked_from_secs_f64(secs))
                .flatten()
                .map(crate::time::EmuDuration::as_micros);
            return ValueIdentity::Number(n, micros);
        }
        match &node.kind {
            NodeKind::Str(s) => match crate::time::parse_duration(s) {
                Ok(d) => ValueIdentity::Duration(d.as_micros()),
                Err(_) => ValueIdentity::Text(node.toml_text().unwrap_or_default()),
            },
            _ => ValueIdentity::Text(node.toml_text().unwrap_or_else(|| text.to_string())),
        }
    }
}

/// An f64 as a [`NumberKey`]: an integral value an i64 holds exactly is that integer.
fn float_key(f: f64) -> NumberKey {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.fract() == 0.0 && (-TWO_63..TWO_63).contains(&f) {
        NumberKey::Int(f as i64)
    } else {
        NumberKey::Float(f.to_bits())
    }
}

/// The values of one key seen so far, by identity. Two numbers are one value when they are
/// equal; a duration with a unit is one value with another of the same length, or with a
/// number of as many seconds (a duration key reads `3600` as `"1h"`) — but two numbers are
/// never one value for being the same microsecond (`0.1` and `0.1000001` differ as numbers).
#[derive(Default)]
struct SeenValues {
    numbers: std::collections::HashMap<NumberKey, usize>,
    /// Numbers by the duration they read as.
    number_durations: std::collections::HashMap<u64, usize>,
    durations: std::collections::HashMap<u64, usize>,
    texts: std::collections::HashMap<String, usize>,
}

impl SeenValues {
    /// Records the `i`-th value, written `text`; if it is one already seen, returns the
    /// index of that one and what they both are (for the message).
    fn insert(&mut self, i: usize, text: &str) -> Option<(usize, String)> {
        let secs = |micros: u64| {
            let d = crate::time::EmuDuration::from_micros(micros);
            format!("{} s", d.as_secs_f64())
        };
        match ValueIdentity::of(text) {
            ValueIdentity::Number(n, micros) => {
                if let Some(&j) = self.numbers.get(&n) {
                    let shown = match n {
                        NumberKey::Int(i) => i.to_string(),
                        NumberKey::Float(bits) => format!("{:?}", f64::from_bits(bits)),
                    };
                    return Some((j, format!("the number {shown}")));
                }
                if let Some(&j) = micros.and_then(|m| self.durations.get(&m)) {
                    let m = micros.unwrap_or_default();
                    return Some((j, format!("the duration {}", secs(m))));
                }
                self.numbers.insert(n, i);
                if let Some(m) = micros {
                    self.number_durations.entry(m).or_insert(i);
                }
                None
            }
            ValueIdentity::Duration(m) => {
                let first = [self.durations.get(&m), self.number_durations.get(&m)];
                if let Some(&j) = first.into_iter().flatten().min() {
                    return Some((j, format!("the duration {}", secs(m))));
                }
                self.durations.insert(m, i);
                None
            }
            ValueIdentity::Text(t) => {
                if let Some(&j) = self.texts.get(&t) {
                    return Some((j, format!("the value {t}")));
                }
                self.texts.insert(t, i);
                None
            }
        }
    }
}

/// `{ from, to, step }`: every value from `from` up to `to` in steps of `step`.
fn read_range(r: &Table<'_>) -> Option<Vec<String>> {
    let from = r.number("from");
    let to = r.number("to");
    let step = r.number("step");
    r.finish();
    let (Some((from, _)), Some((to, _)), Some((step, loc))) = (from, to, step) else {
        r.diags.error(
            &r.node.loc,
            format!("{} needs from, to and step", r.what),
            Some("write { from = 0.5, to = 2.0, step = 0.5 }".into()),
        );
        return None;
    };
    if step <= 0.0 || to < from {
        r.diags.error(
            loc,
            format!("{} needs step > 0 and to ≥ from", r.what),
            None,
        );
        return None;
    }
    let count = ((to - from) / step + 1e-9).floor() + 1.0;
    if !count.is_finite() || count > MAX_SWEEP_RUNS as f64 {
        r.diags.error(
            loc,
            format!(
                "{} has {count} values; a sweep has at most {MAX_SWEEP_RUNS} runs",
                r.what
            ),
            Some("use a larger step or a narrower range".into()),
        );
        return None;
    }
    let n = count as usize - 1;
    let digits = match (decimals(from), decimals(step)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    };
    Some(
        (0..=n)
            .map(|i| format!("{:?}", round_to(from + step * i as f64, digits)))
            .collect(),
    )
}

/// The decimal places `x` is written with at its shortest (`0.05` → 2, `3.0` → 0); `None`
/// when it is written with an exponent or has more places than an f64 holds exactly.
fn decimals(x: f64) -> Option<i32> {
    let text = format!("{x:?}");
    if text.contains(['e', 'E']) {
        return None;
    }
    let places = text
        .split_once('.')
        .map_or(0, |(_, frac)| frac.trim_end_matches('0').len() as i32);
    (places <= 15).then_some(places)
}

/// `x` rounded to `digits` decimal places, so that a range's values read as written
/// (`0.15`, not the sum's `0.15000000000000002`); unchanged when `digits` is `None`.
fn round_to(x: f64, digits: Option<i32>) -> f64 {
    match digits {
        Some(d) => {
            let scale = 10f64.powi(d);
            let rounded = (x * scale).round() / scale;
            if rounded.is_finite() {
                rounded
            } else {
                x
            }
        }
        None => x,
    }
}

impl Sweep {
    /// Every run, in a stable order: points in the order of `vary` (last key fastest), each
    /// with every seed.
    pub fn runs(&self) -> Vec<RunSpec> {
        let mut points: Vec<Vec<String>> = vec![Vec::new()];
        for (_, values) in &self.vary {
            points = points
                .into_iter()
                .flat_map(|p| {
                    values.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push(v.clone());
                        q
                    })
                })
                .collect();
        }
        let mut runs = Vec::new();
        for point in points {
            for &seed in &self.seeds {
                runs.push(RunSpec {
                    index: runs.len(),
                    point: point.clone(),
                    seed,
                });
            }
        }
        runs
    }

    /// The `--set` overrides of one run.
    pub fn overrides(&self, r: &RunSpec) -> Vec<String> {
        let mut sets: Vec<String> = self.set.iter().map(|(k, v)| format!("{k}={v}")).collect();
        sets.extend(
            self.vary
                .iter()
                .zip(&r.point)
                .map(|((k, _), v)| format!("{k}={v}")),
        );
        sets.push(crate::topology::seed_override(r.seed));
        sets
    }
}

/// What a sweep ran, as `sweep.json` (`sweep-I-of-N.json` for a shard) records it beside its
/// run file: enough to tell what produced the numbers, and for `--resume` to refuse to mix
/// runs made from other inputs (see `docs/sweeps.md`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepRecord {
    /// igemu's version.
    pub igemu: String,
    /// The commit igemu was built from (`None` when the build could not tell); a sweep
    /// resumed or merged across builds lists every build in `builds`.
    #[serde(default)]
    pub commit: Option<String>,
    /// Whether igemu's build files differed from that commit (`None`: unknown).
    #[serde(default)]
    pub dirty: Option<bool>,
    /// Every build that made some of the runs, as `igemu --version` describes it, when
    /// more than one did (a sweep resumed or shards merged after a rebuild); else empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub builds: Vec<String>,
    /// The sweep file, as given.
    pub sweep_path: String,
    /// FNV-1a 64 of the sweep file's bytes (hex), as [`crate::file_hash`].
    pub sweep_hash: Option<String>,
    /// The topology file, as the sweep file names it (relative to the sweep file's folder).
    pub topology_path: String,
    /// FNV-1a 64 of the topology file's bytes (hex).
    pub topology_hash: Option<String>,
    /// The fixed overrides (`[set]`), key to TOML text.
    pub set: BTreeMap<String, String>,
    /// The varied keys, in column order, with their values (TOML text).
    pub vary: Vec<Varied>,
    /// The seeds every point runs with.
    pub seeds: Vec<u64>,
    /// The metrics (the run file's columns).
    pub metrics: Vec<String>,
    /// Runs in the whole sweep (every shard).
    pub runs: usize,
    /// `I/N` for a shard; `None` for a whole sweep or a merge.
    pub shard: Option<String>,
    /// The policies in force at the first point (as `summary.json`'s `policies`); a varied
    /// policy key's values are in `vary` and in the run file's `set:` columns.
    pub policies: BTreeMap<String, String>,
    /// The files written into the output folder, this one aside.
    pub outputs: Vec<String>,
    /// Whether every run was made (`false` while the sweep runs, or after an interruption).
    pub finished: bool,
    /// For `sweep merge`: the run files merged, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
}

/// A varied key and its values.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Varied {
    /// The `--set` key.
    pub key: String,
    /// Its values, as TOML text.
    pub values: Vec<String>,
}

/// The name of the record a sweep writes: `sweep.json`, or `sweep-I-of-N.json` for shard I of
/// N (N > 1), beside `runs-I-of-N.csv`.
pub fn record_name(shard: (usize, usize)) -> String {
    if shard.1 > 1 {
        format!("sweep-{}-of-{}.json", shard.0, shard.1)
    } else {
        "sweep.json".to_string()
    }
}

/// The record beside a run file: `runs.csv` → `sweep.json`, `runs-I-of-N.csv` →
/// `sweep-I-of-N.json` (in the same folder).
pub fn record_beside(run_file: &Path) -> PathBuf {
    let name = run_file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let record = match name
        .strip_prefix("runs")
        .and_then(|n| n.strip_suffix(".csv"))
    {
        Some(shard) => format!("sweep{shard}.json"),
        None => "sweep.json".to_string(),
    };
    run_file.with_file_name(record)
}

impl SweepRecord {
    /// The record of sweep `sweep` read from `path`, aggregating `metrics`, whose first point
    /// loads as `first`, run as shard `shard`; not yet finished, no outputs yet.
    pub fn new(
        path: &Path,
        sweep: &Sweep,
        metrics: &[String],
        first: Option<&topology::Topology>,
        shard: (usize, usize),
    ) -> SweepRecord {
        let build = crate::build_info::Build::this();
        SweepRecord {
            igemu: crate::build_info::VERSION.to_string(),
            commit: build.commit,
            dirty: build.dirty,
            builds: Vec::new(),
            sweep_path: path.display().to_string(),
            sweep_hash: crate::file_hash(path),
            topology_path: sweep.topology.display().to_string(),
            topology_hash: crate::file_hash(&sweep.topology),
            set: sweep.set.iter().cloned().collect(),
            vary: sweep
                .vary
                .iter()
                .map(|(key, values)| Varied {
                    key: key.clone(),
                    values: values.clone(),
                })
                .collect(),
            seeds: sweep.seeds.clone(),
            metrics: metrics.to_vec(),
            runs: sweep.runs().len(),
            shard: (shard.1 > 1).then(|| format!("{}/{}", shard.0, shard.1)),
            policies: first.map(crate::policies).unwrap_or_default(),
            outputs: Vec::new(),
            finished: false,
            merged_from: Vec::new(),
        }
    }

    /// What differs between the inputs this record's runs were made from and `now`'s that
    /// the run file cannot show: the topology file's contents and the fixed `[set]` values
    /// (the varied values, seeds and metrics are checked row by row against the run file).
    /// Empty when they agree.
    pub fn changes(&self, now: &SweepRecord) -> Vec<String> {
        let mut out = Vec::new();
        if self.topology_hash != now.topology_hash {
            let shown = |h: &Option<String>| h.clone().unwrap_or_else(|| "unreadable".into());
            out.push(format!(
                "the topology file {} changed (hash {} then, {} now)",
                now.topology_path,
                shown(&self.topology_hash),
                shown(&now.topology_hash)
            ));
        }
        let keys: std::collections::BTreeSet<&String> =
            self.set.keys().chain(now.set.keys()).collect();
        for k in keys {
            match (self.set.get(k), now.set.get(k)) {
                (Some(a), Some(b)) if a != b => out.push(format!("[set] \"{k}\" was {a}, now {b}")),
                (Some(a), None) => out.push(format!("[set] \"{k}\" was {a}, now not set")),
                (None, Some(b)) => out.push(format!("[set] \"{k}\" was not set, now {b}")),
                _ => {}
            }
        }
        out
    }

    /// This record's build, as `igemu --version` describes it.
    fn build(&self) -> String {
        let build = crate::build_info::Build {
            commit: self.commit.clone(),
            dirty: self.dirty,
        };
        format!("{} ({})", self.igemu, build.describe())
    }

    /// Notes that some of the runs were made by `earlier`'s build(s): when they were not all
    /// made by this one, `builds` lists every build, so a figure made of them says so.
    pub fn carry_builds(&mut self, earlier: &SweepRecord) {
        let mut builds: Vec<String> = if earlier.builds.is_empty() {
            vec![earlier.build()]
        } else {
            earlier.builds.clone()
        };
        builds.extend(self.builds.iter().cloned());
        builds.push(self.build());
        let mut seen = BTreeSet::new();
        builds.retain(|b| seen.insert(b.clone()));
        self.builds = if builds.len() > 1 { builds } else { Vec::new() };
    }

    /// What differs between two shards' records that would make merging them mix sweeps:
    /// [`Self::changes`], and the varied values, seeds and metrics.
    pub fn shard_mismatch(&self, other: &SweepRecord) -> Vec<String> {
        let mut out = self.changes(other);
        if self.vary != other.vary {
            out.push("the varied keys or values differ".into());
        }
        if self.seeds != other.seeds {
            out.push("the seeds differ".into());
        }
        if self.metrics != other.metrics {
            out.push("the metrics differ".into());
        }
        out
    }

    /// Reads the record at `path` (up to [`crate::input::MAX_JSON_BYTES`]); `Ok(None)` when
    /// there is none.
    pub fn read(path: &Path) -> Result<Option<SweepRecord>, String> {
        match crate::input::read_capped(path, crate::input::MAX_JSON_BYTES) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
            Ok(text) => {
                let not_one = |why: String| {
                    format!(
                        "{}: not a sweep record ({why}); delete it, or give another --out",
                        path.display()
                    )
                };
                let v: serde_json::Value =
                    serde_json::from_str(&text).map_err(|e| not_one(e.to_string()))?;
                if let Some(place) = crate::input::unshowable_json(&v) {
                    return Err(not_one(format!(
                        "`{place}` holds a control or invisible character"
                    )));
                }
                serde_json::from_value(v)
                    .map(Some)
                    .map_err(|e| not_one(e.to_string()))
            }
        }
    }

    /// Writes the record to `path` whole or not at all (a temporary file beside it, renamed).
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        text.push('\n');
        crate::write_atomically(path, text.as_bytes())
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// The numeric entries of a summary, nested ones under dotted keys
/// (`grids.das2.awrt_grid_s`, `clusters.g/c1.utilization_pct`).
pub fn numeric(summary: &serde_json::Value) -> BTreeMap<String, f64> {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, f64>) {
        match v {
            serde_json::Value::Object(o) => {
                for (k, v) in o {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            other => {
                if let Some(x) = other.as_f64() {
                    out.insert(prefix.to_string(), x);
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", summary, &mut out);
    out
}

/// One finished run: its spec and the metrics it produced (or the error).
pub type Outcome = (RunSpec, Result<BTreeMap<String, f64>, String>);

/// Runs `todo` on `jobs` threads, showing progress on stderr in `style` and handing every
/// outcome to `sink` on the calling thread as soon as its run finishes (so a caller can write
/// it to disk at once). Outcomes are not kept (a run's numeric summary is kilobytes, and a
/// sweep may hold a million runs): returns how many runs ran and how many failed.
pub fn execute(
    sweep: &Sweep,
    todo: Vec<RunSpec>,
    jobs: usize,
    style: crate::progress::Style,
    mut sink: impl FnMut(&Outcome),
) -> (usize, usize) {
    let total = todo.len();
    let queue = Arc::new(Mutex::new(todo.into_iter()));
    let (tx, rx) = std::sync::mpsc::channel::<Outcome>();
    let mut done = 0;
    let mut progress = crate::progress::Progress::new(style);
    let mut failed = 0;
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            let (queue, tx) = (Arc::clone(&queue), tx.clone());
            scope.spawn(move || loop {
                let next = queue.lock().map(|mut q| q.next()).unwrap_or(None);
                let Some(spec) = next else { break };
                let sets = sweep.overrides(&spec);
                let registry = sweep.registry.clone();
                let outcome = topology::load_file(&sweep.topology, &Overrides { sets, registry })
                    .map_err(|r| r.to_string())
                    .and_then(|t| run(t, &RunOptions::default()).map_err(|e| e.to_string()))
                    .and_then(|r| serde_json::to_value(&r.summary).map_err(|e| e.to_string()))
                    .map(|v| numeric(&v));
                if tx.send((spec, outcome)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for outcome in rx {
            sink(&outcome);
            failed += usize::from(outcome.1.is_err());
            done += 1;
            let what = if failed > 0 {
                format!("sweep: {done}/{total} runs ({failed} failed)")
            } else {
                format!("sweep: {done}/{total} runs")
            };
            progress.update(&what, Some(done as f64 / total.max(1) as f64));
        }
    });
    progress.finish();
    (done, failed)
}

/// The columns of a run file: run, seed, each varied key (`set:<key>`), the metrics, error.
pub fn runs_header(sweep: &Sweep, metrics: &[String]) -> Vec<String> {
    let mut header = vec!["run".to_string(), "seed".to_string()];
    header.extend(sweep.vary.iter().map(|(k, _)| format!("set:{k}")));
    header.extend(metrics.iter().cloned());
    header.push("error".into());
    header
}

/// The values a run's row shows for its varied keys.
fn shown_point(spec: &RunSpec) -> impl Iterator<Item = String> + '_ {
    spec.point.iter().map(|v| v.trim_matches('"').to_string())
}

/// One run's row, matching [`runs_header`].
pub fn run_row(outcome: &Outcome, metrics: &[String]) -> Vec<String> {
    let (spec, result) = outcome;
    let mut row = vec![spec.index.to_string(), spec.seed.to_string()];
    row.extend(shown_point(spec));
    match result {
        Ok(m) => {
            row.extend(
                metrics
                    .iter()
                    .map(|k| m.get(k).map_or_else(String::new, |v| v.to_string())),
            );
            row.push(String::new());
        }
        Err(e) => {
            row.extend(metrics.iter().map(|_| String::new()));
            row.push(e.lines().next().unwrap_or_default().to_string());
        }
    }
    row
}

/// The finished runs already in the run file at `path`, by run index, for `--resume`: rows
/// whose run failed, and a last row cut short by an interruption, are left out (so they run
/// again). A file written for another sweep (other columns, or a row whose seed and varied
/// values are not those of its run here) is refused with an error saying so.
pub fn read_done(
    sweep: &Sweep,
    header: &[String],
    path: &Path,
) -> Result<BTreeMap<usize, Vec<String>>, String> {
    let other = |why: String| {
        format!(
            "{}: written for a different sweep ({why}); resume only the sweep that wrote it, \
             or give another --out (or delete the file) to start over",
            path.display()
        )
    };
    let file = crate::input::open_csv(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(file);
    let found: Vec<String> = r
        .headers()
        .map_err(|e| crate::input::csv_problem(path, &e))?
        .iter()
        .map(str::to_string)
        .collect();
    if found != header {
        return Err(other(format!(
            "its columns are {}; this sweep's are {}",
            found.join(","),
            header.join(",")
        )));
    }
    let runs = sweep.runs();
    let (_, _, metric_cols) = columns(header);
    let mut done = BTreeMap::new();
    // The line each run was met at: a second row of one run is refused, not let replace it.
    let mut met: BTreeMap<usize, u64> = BTreeMap::new();
    for rec in r.records() {
        let rec = match rec {
            Ok(rec) => rec,
            // A line past the cap, or a read that failed: the file cannot be trusted further.
            Err(e) if matches!(e.kind(), csv::ErrorKind::Io(_)) => {
                return Err(crate::input::csv_problem(path, &e))
            }
            Err(_) => continue, // a row cut short by an interruption, mid-character
        };
        if rec.len() != header.len() {
            continue; // cut short by an interruption
        }
        let row: Vec<String> = rec.iter().map(str::to_string).collect();
        let spec = row[0].parse::<usize>().ok().and_then(|i| runs.get(i));
        let matches = spec.is_some_and(|s| {
            row[1] == s.seed.to_string()
                && shown_point(s).eq(row[2..2 + s.point.len()].iter().cloned())
        });
        let Some(spec) = spec.filter(|_| matches) else {
            return Err(other(format!(
                "run {} there has seed {} and values {:?}, not this sweep's",
                row[0],
                row[1],
                &row[2..2 + sweep.vary.len()]
            )));
        };
        let line = rec.position().map_or(0, |p| p.line());
        let at = format!("{}:{line}", path.display());
        if let Some(before) = met.insert(spec.index, line) {
            return Err(format!(
                "{at}: run {} again (also at line {before}); a run file holds each run once — \
                 remove one of the rows, or give another --out to start over",
                spec.index
            ));
        }
        check_metric_cells(&at, &rec, header, &metric_cols)?;
        if row[header.len() - 1].is_empty() {
            done.insert(spec.index, row);
        }
    }
    Ok(done)
}

/// Writes a run file with `rows` in run order (through a temporary file, so an interruption
/// leaves the old file whole).
pub fn write_rows(
    header: &[String],
    rows: &BTreeMap<usize, Vec<String>>,
    path: &Path,
) -> Result<(), String> {
    let (tmp, file) =
        crate::create_temp_beside(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", tmp.display());
    let mut w = csv::Writer::from_writer(file);
    w.write_record(header).map_err(|e| fail(&e))?;
    for row in rows.values() {
        w.write_record(row).map_err(|e| fail(&e))?;
    }
    w.flush().map_err(|e| fail(&e))?;
    drop(w);
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Runs what a sweep does after its last run — points.csv and paired.csv from the run file
/// — on stand-in rows for every run (each metric a number), in a temporary folder, so a
/// sweep that would fail there fails before its first run, not after hours of work.
pub fn preflight(sweep: &Sweep, header: &[String], metrics: &[String]) -> Result<(), String> {
    let dir = TempDir::new()?;
    let rows: BTreeMap<usize, Vec<String>> = sweep
        .runs()
        .into_iter()
        .map(|spec| {
            // Values that differ between seeds, so spreads and intervals are computed too.
            let value = 1.0 + (spec.seed % 7) as f64;
            let m = metrics.iter().map(|k| (k.clone(), value)).collect();
            let index = spec.index;
            (index, run_row(&(spec, Ok(m)), metrics))
        })
        .collect();
    let runs = dir.0.join("runs.csv");
    write_rows(header, &rows, &runs)?;
    let runs = [runs];
    summarize(&runs, &dir.0.join("points.csv"))?;
    paired(&runs, &dir.0.join("paired.csv"))?;
    Ok(())
}

/// A folder of its own under the system's temporary folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("igemu-preflight-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Appends rows to a run file, flushing each to the operating system as it is written, so
/// an interrupted sweep keeps every finished run's row.
pub struct RowSink {
    w: csv::Writer<std::fs::File>,
    path: PathBuf,
}

impl RowSink {
    /// Opens the run file at `path` (which must exist, with its header) for appending.
    pub fn append(path: &Path) -> Result<RowSink, String> {
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(RowSink {
            w: csv::WriterBuilder::new().has_headers(false).from_writer(f),
            path: path.to_path_buf(),
        })
    }

    /// Writes one row and flushes it.
    pub fn write(&mut self, row: &[String]) -> Result<(), String> {
        self.w
            .write_record(row)
            .and_then(|_| self.w.flush().map_err(csv::Error::from))
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// Student's t quantile t_{0.975, df} (NaN for df = 0).
pub fn t975(df: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    StudentsT::new(0.0, 1.0, df as f64).map_or(f64::NAN, |t| t.inverse_cdf(0.975))
}

/// Mean and 95 % confidence half-width of `xs`.
pub fn mean_ci(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, f64::NAN);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t975(n - 1) * (var / n as f64).sqrt())
}

/// The cells `metric, n, mean, ci95_low, ci95_high` of `xs`.
fn stats_cells(metric: &str, xs: &[f64]) -> [String; 5] {
    let (mean, half) = mean_ci(xs);
    // Adding +0.0 turns a negative zero (an f64 sum's starting value) into "0".
    let (mean, half) = (mean + 0.0, half + 0.0);
    [
        metric.to_string(),
        xs.len().to_string(),
        mean.to_string(),
        (mean - half).to_string(),
        (mean + half).to_string(),
    ]
}

/// The largest metric value a run file may hold, in magnitude: far above anything a run
/// measures (seconds up to 10^12, costs well under 10^40), and low enough that means and
/// variances over a million runs stay finite.
pub const MAX_METRIC: f64 = 1e100;

/// Reads run files (from one or more shards): the common header and every row in run order,
/// whatever order the rows were written in (so sums are reproducible). Hand-made or damaged
/// files are refused at the place, `file:line`: a column named twice, a run number that is
/// not an integer ≥ 0 or that comes twice, a seed run twice at one point, a metric value that
/// is not finite or beyond ±[`MAX_METRIC`], a line longer than
/// [`crate::input::MAX_CSV_LINE`] bytes.
pub fn read_runs(run_files: &[PathBuf]) -> Result<(Vec<String>, Vec<Vec<String>>), String> {
    let mut header: Option<Vec<String>> = None;
    let mut rows: Vec<(usize, Vec<String>)> = Vec::new();
    // Where each run number was first met, to name both places of a duplicate.
    let mut first_at: std::collections::HashMap<usize, (usize, u64)> = Default::default();
    // Each (seed, point) with the run, file and line it was first met at.
    let mut first_sample: std::collections::HashMap<Vec<String>, (usize, usize, u64)> =
        Default::default();
    for (file_no, f) in run_files.iter().enumerate() {
        let file = crate::input::open_csv(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let mut r = csv::Reader::from_reader(file);
        let h: Vec<String> = r
            .headers()
            .map_err(|e| crate::input::csv_problem(f, &e))?
            .iter()
            .map(str::to_string)
            .collect();
        check_header(f, &mut header, h)?;
        let (_, param_cols, metric_cols) = header.as_deref().map_or_else(Default::default, columns);
        for rec in r.records() {
            let rec = rec.map_err(|e| crate::input::csv_problem(f, &e))?;
            let line = rec.position().map_or(0, |p| p.line());
            let at = format!("{}:{line}", f.display());
            let run = rec.get(0).unwrap_or_default();
            let Ok(index) = run.parse::<usize>() else {
                return Err(format!(
                    "{at}: run `{run}` is not a run number (an integer ≥ 0)"
                ));
            };
            if let Some((other, other_line)) = first_at.insert(index, (file_no, line)) {
                return Err(format!(
                    "{at}: run {index} again (also at {}:{other_line}); a run file holds each run once, merge each shard once",
                    run_files[other].display()
                ));
            }
            check_metric_cells(
                &at,
                &rec,
                header.as_deref().unwrap_or_default(),
                &metric_cols,
            )?;
            // A seed runs once per point: two rows of one would count one run as two samples.
            let sample: Vec<String> = std::iter::once(1)
                .chain(param_cols.iter().copied())
                .map(|c| rec.get(c).unwrap_or_default().to_string())
                .collect();
            if let Some((other, other_file, other_line)) =
                first_sample.insert(sample, (index, file_no, line))
            {
                let names = header.as_deref().unwrap_or_default();
                let point: Vec<String> = (param_cols.iter())
                    .map(|&c| format!("{}={}", &names[c][4..], rec.get(c).unwrap_or_default()))
                    .collect();
                return Err(format!(
                    "{at}: run {index} has the point ({}) and seed {} of run {other} (at {}:{other_line}): a seed runs once per point, so one of them is not this sweep's; remove it",
                    point.join(", "),
                    rec.get(1).unwrap_or_default(),
                    run_files[other_file].display()
                ));
            }
            rows.push((index, rec.iter().map(str::to_string).collect()));
        }
    }
    let header = header.ok_or("no run files")?;
    rows.sort_by_key(|(index, _)| *index);
    Ok((header, rows.into_iter().map(|(_, row)| row).collect()))
}

/// Checks run file `f`'s columns `h`: the first file's must be a sweep's (run, seed, …,
/// error; no column twice) and become `header`; every later file's must equal them.
pub(crate) fn check_header(
    f: &std::path::Path,
    header: &mut Option<Vec<String>>,
    h: Vec<String>,
) -> Result<(), String> {
    match header {
        None if h.len() < 3
            || h[0] != "run"
            || h[1] != "seed"
            || h.last().is_some_and(|e| e != "error") =>
        {
            Err(format!(
                "{}: not a sweep's run file (its columns must start with run,seed and end \
                 with error)",
                f.display()
            ))
        }
        None => {
            let mut names = std::collections::HashSet::new();
            if let Some(twice) = h.iter().find(|c| !names.insert(c.as_str())) {
                return Err(format!(
                    "{}:1: column `{twice}` comes twice; each column is one metric or varied key",
                    f.display()
                ));
            }
            *header = Some(h);
            Ok(())
        }
        Some(prev) if *prev != h => Err(format!(
            "{}: columns differ from the first file's",
            f.display()
        )),
        Some(_) => Ok(()),
    }
}

/// Checks the metric cells of row `rec` (at `at`): each is empty (not reported, or a failed
/// run's) or a finite number within ±[`MAX_METRIC`].
pub(crate) fn check_metric_cells(
    at: &str,
    rec: &csv::StringRecord,
    names: &[String],
    metric_cols: &[usize],
) -> Result<(), String> {
    for &c in metric_cols {
        let cell = rec.get(c).unwrap_or_default();
        let column = names.get(c).map_or("", String::as_str);
        // Empty is a metric the run did not report, or a failed run's; anything else must be
        // a number (text was once dropped silently, the point's mean made of fewer runs).
        if cell.is_empty() {
            continue;
        }
        let Ok(x) = cell.parse::<f64>() else {
            return Err(format!(
                "{at}: `{}` in column {column} is not a number (a metric cell is a number, or \
                 empty for a run that did not report it)",
                crate::input::diag::shown(cell)
            ));
        };
        if !x.is_finite() {
            return Err(format!(
                "{at}: `{cell}` in column {column} is not a finite number"
            ));
        }
        if x.abs() > MAX_METRIC {
            return Err(format!(
                "{at}: `{cell}` in column {column} is beyond ±{MAX_METRIC:e}, more than any run measures"
            ));
        }
    }
    Ok(())
}

/// A run file's columns — run, seed, the varied keys (prefixed `set:`), the metrics, error —
/// as the error column and the varied keys' and metrics' columns.
pub(crate) fn columns(header: &[String]) -> (usize, Vec<usize>, Vec<usize>) {
    let err_col = header.len() - 1;
    let param_cols: Vec<usize> = (2..err_col)
        .filter(|&c| header[c].starts_with("set:"))
        .collect();
    let metric_cols = (2..err_col).filter(|c| !param_cols.contains(c)).collect();
    (err_col, param_cols, metric_cols)
}

/// Reads run CSVs (from one or more shards) and writes the per-point summary: for every point
/// (combination of varied values) and metric, n, mean, and 95 % CI bounds.
pub fn summarize(run_files: &[PathBuf], out: &Path) -> Result<usize, String> {
    let (header, rows) = read_runs(run_files)?;
    let (err_col, param_cols, metric_cols) = columns(&header);
    let mut points: BTreeMap<Vec<String>, Vec<&Vec<String>>> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for row in &rows {
        if !row[err_col].is_empty() || !seen.insert(row[0].clone()) {
            continue;
        }
        points
            .entry(param_cols.iter().map(|&c| row[c].clone()).collect())
            .or_default()
            .push(row);
    }
    // Written whole or not at all: a temporary file beside it, renamed at the end.
    let (tmp, file) =
        crate::create_temp_beside(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = csv::Writer::from_writer(file);
    let mut h: Vec<String> = param_cols.iter().map(|&c| header[c].clone()).collect();
    h.extend(["metric", "n", "mean", "ci95_low", "ci95_high"].map(str::to_string));
    w.write_record(&h).map_err(|e| e.to_string())?;
    for (point, runs) in &points {
        for &c in &metric_cols {
            let xs: Vec<f64> = runs
                .iter()
                .filter_map(|r| r[c].parse::<f64>().ok())
                .collect();
            let mut rec = point.clone();
            rec.extend(stats_cells(&header[c], &xs));
            w.write_record(&rec).map_err(|e| e.to_string())?;
        }
    }
    w.flush().map_err(|e| e.to_string())?;
    drop(w);
    std::fs::rename(&tmp, out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(points.len())
}

/// A point's runs by (value of the compared key, seed).
type BySeed<'a> = BTreeMap<(&'a str, &'a str), &'a Vec<String>>;

/// Reads run CSVs and writes paired comparisons: for every policy-like varied key (one whose
/// values are not all numbers), every pair of its values `a`, `b` (in order of appearance)
/// with the other varied keys fixed, and every metric, the mean per-seed difference `b − a`
/// over the seeds both ran successfully, with its 95 % CI (Student's t). The varied key's own
/// `set:` column is left empty. Returns the number of rows, or `None` (nothing written) when
/// no key is policy-like.
pub fn paired(run_files: &[PathBuf], out: &Path) -> Result<Option<usize>, String> {
    let (header, rows) = read_runs(run_files)?;
    let (err_col, param_cols, metric_cols) = columns(&header);
    let ok: Vec<&Vec<String>> = {
        let mut seen = std::collections::BTreeSet::new();
        rows.iter()
            .filter(|r| r[err_col].is_empty() && seen.insert(r[0].clone()))
            .collect()
    };
    let policy_like: Vec<usize> = param_cols
        .iter()
        .copied()
        .filter(|&c| ok.iter().any(|r| r[c].parse::<f64>().is_err()))
        .collect();
    if policy_like.is_empty() {
        return Ok(None);
    }
    // Written whole or not at all: a temporary file beside it, renamed at the end.
    let (tmp, file) =
        crate::create_temp_beside(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut w = csv::Writer::from_writer(file);
    let mut h: Vec<String> = ["key", "a", "b"].map(str::to_string).to_vec();
    h.extend(param_cols.iter().map(|&c| header[c].clone()));
    h.extend(["metric", "n", "mean_diff", "ci95_low", "ci95_high"].map(str::to_string));
    w.write_record(&h).map_err(|e| e.to_string())?;
    let mut written = 0;
    for &k in &policy_like {
        let mut values: Vec<&str> = Vec::new();
        for r in &ok {
            if !values.contains(&r[k].as_str()) {
                values.push(&r[k]);
            }
        }
        // Runs by the other keys' values, then by this key's value and seed.
        let mut groups: BTreeMap<Vec<&str>, BySeed<'_>> = BTreeMap::new();
        for r in &ok {
            let others = param_cols
                .iter()
                .map(|&c| if c == k { "" } else { r[c].as_str() })
                .collect();
            groups
                .entry(others)
                .or_default()
                .insert((r[k].as_str(), r[1].as_str()), r);
        }
        for (others, runs) in &groups {
            for (i, a) in values.iter().enumerate() {
                for b in &values[i + 1..] {
                    for &c in &metric_cols {
                        let diffs: Vec<f64> = runs
                            .iter()
                            .filter(|((v, _), _)| v == a)
                            .filter_map(|((_, seed), ra)| {
                                let rb = runs.get(&(*b, *seed))?;
                                Some(rb[c].parse::<f64>().ok()? - ra[c].parse::<f64>().ok()?)
                            })
                            .collect();
                        if diffs.is_empty() {
                            continue;
                        }
                        let mut rec = vec![header[k].clone(), a.to_string(), b.to_string()];
                        rec.extend(others.iter().map(|v| v.to_string()));
                        rec.extend(stats_cells(&header[c], &diffs));
                        w.write_record(&rec).map_err(|e| e.to_string())?;
                        written += 1;
                    }
                }
            }
        }
    }
    w.flush().map_err(|e| e.to_string())?;
    drop(w);
    std::fs::rename(&tmp, out).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(Some(written))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range's values read as written: each is `from + i·step` to the places `from` and
    /// `step` are written with, not the float sum's tail (`0.15000000000000002`).
    #[test]
    fn a_ranges_values_read_as_their_decimal_steps() {
        let values = |range: &str| {
            let text = format!("topology = \"t.toml\"\n[vary]\n\"lrms.cp_alpha\" = {range}\n");
            let sweep = parse_text(&text, Path::new("s.toml")).expect("a sound sweep");
            sweep.vary[0].1.clone()
        };
        let got = values("{ from = 0.0, to = 1.0, step = 0.05 }");
        assert_eq!(got.len(), 21);
        for (i, v) in got.iter().enumerate() {
            // The decimal written by hand: i·5 hundredths.
            let want = format!("{}.{:02}", i * 5 / 100, i * 5 % 100);
            let want: f64 = want.parse().expect("a decimal");
            assert_eq!(v, &format!("{want:?}"), "value {i}");
        }
        assert_eq!(
            values("{ from = 3.8, to = 7.0, step = 0.8 }"),
            ["3.8", "4.6", "5.4", "6.2", "7.0"]
        );
        // Places beyond what a decimal rounding can keep are left as summed.
        assert_eq!(
            values("{ from = 1e-20, to = 3e-20, step = 1e-20 }").len(),
            3
        );
        assert_eq!(decimals(1e-20), None);
        assert_eq!(round_to(0.1 + 0.2, decimals(0.1)), 0.3);
        assert_eq!(round_to(1e300, Some(15)), 1e300);
    }

    #[test]
    fn confidence_intervals_use_students_t() {
        let (m, h) = mean_ci(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m, 2.5);
        // sd = 1.291, n = 4, t(3) = 3.1824: 3.1824 · 1.291 / 2.
        assert!((h - 3.182446 * (5.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-5);
        // Exact quantiles, also past the 30 degrees of freedom a printed table stops at.
        assert!((t975(1) - 12.7062).abs() < 1e-4);
        assert!((t975(40) - 2.0211).abs() < 1e-4);
        assert!(t975(0).is_nan());
        assert!(mean_ci(&[5.0]).1.is_nan());
    }

    /// The pre-flight runs the end of a sweep on stand-in rows: a run file whose columns
    /// collide fails there, before any run, and a sound one passes.
    #[test]
    fn preflight_finds_what_the_end_of_a_sweep_would_fail_on() {
        let text =
            "topology = \"t.toml\"\nseeds = 3\n[vary]\n\"igg.dispatch\" = [\"rr\", \"lrf\"]\n";
        let sweep = parse_text(text, Path::new("s.toml")).expect("a sound sweep");
        let metrics = vec!["awrt_s".to_string(), "utilization_pct".to_string()];
        let header = runs_header(&sweep, &metrics);
        preflight(&sweep, &header, &metrics).expect("a sound sweep passes");
        let twice = vec!["awrt_s".to_string(), "seed".to_string()];
        let e = preflight(&sweep, &runs_header(&sweep, &twice), &twice).unwrap_err();
        assert!(e.contains("column `seed` comes twice"), "{e}");
        assert!(is_run_column("seed") && is_run_column("set:x") && !is_run_column("seeds"));
    }

    /// The problems `parse_text` reports for a sweep file varying `key` over `values` (TOML).
    fn vary_problems(key: &str, values: &str) -> Option<String> {
        let text = format!("topology = \"t.toml\"\nseeds = 1\n[vary]\n\"{key}\" = {values}\n");
        parse_text(&text, Path::new("s.toml"))
            .err()
            .map(|r| r.to_string())
    }

    #[test]
    fn two_spellings_of_one_value_are_one_value_listed_twice() {
        for (values, first, second, what) in [
            (r#"["1h", "60m"]"#, "1h", "60m", "the duration 3600 s"),
            (r#"["1h", 3600]"#, "1h", "3600", "the duration 3600 s"),
            (
                r#"[3600, "01:00:00"]"#,
                "3600",
                "01:00:00",
                "the duration 3600 s",
            ),
            (
                r#"["90s", "1m30s", 5]"#,
                "90s",
                "1m30s",
                "the duration 90 s",
            ),
            ("[1000, 1e3]", "1000", "1000.0", "the number 1000"),
            ("[0.5, 5e-1]", "0.5", "0.5", ""),
            // A duration key reads a plain number in a string as seconds.
            (r#"["3600", "1h"]"#, "3600", "1h", "the duration 3600 s"),
        ] {
            let m = vary_problems("emulation.end", values).expect(values);
            let expect = if first == second {
                format!("value {first} is listed twice for `emulation.end`")
            } else {
                format!("values {first} and {second} of `emulation.end` are one value ({what})")
            };
            assert!(m.contains(&expect), "{values}: {m}");
            assert_eq!(m.matches("error:").count(), 1, "{values}: {m}");
        }
        // Distinct values stay distinct: numbers a microsecond apart, names that are no
        // durations, and lists of other values.
        for values in [
            "[0.1, 0.1000001]",
            r#"["rr", "bcf", "pap-rtdp"]"#,
            r#"["1h", "61m", 3601, 3602.5]"#,
            r#"[["1m", "5m"], ["1m", "6m"]]"#,
            "[1, 2, 3]",
        ] {
            assert_eq!(vary_problems("emulation.end", values), None, "{values}");
        }
    }

    #[test]
    fn old_share_names_point_to_their_percent_keys() {
        assert_eq!(
            renamed_metric("utilization").as_deref(),
            Some("utilization_pct")
        );
        assert_eq!(
            renamed_metric("clusters.g/c1.local_rejection_rate").as_deref(),
            Some("clusters.g/c1.local_rejection_pct")
        );
        assert_eq!(renamed_metric("dvr").as_deref(), Some("dvr_pct"));
        assert_eq!(renamed_metric("awrt_s"), None);
        assert_eq!(renamed_metric("utilization_pct"), None);
    }

    /// The report of sweep text that must not parse.
    fn refused(text: &str) -> String {
        match parse_text(text, Path::new("s.toml")) {
            Ok(s) => panic!("accepted: {s:?}"),
            Err(r) => r.to_string(),
        }
    }

    #[test]
    fn a_seed_in_set_or_vary_is_refused_at_its_place_pointing_to_seeds() {
        for (body, line) in [
            ("[vary]\n\"emulation.seed\" = [1, 2, 3]\n", 3),
            ("[set]\n\" emulation . seed\" = 4\n", 3),
            // Unquoted, TOML reads it as the table `emulation` holding `seed`.
            ("[set]\nemulation.seed = 4\n", 3),
            ("[set]\n\"emulation\" = { seed = 4 }\n", 3),
            (
                "[vary]\n\"emulation.seed\" = { from = 1, to = 3, step = 1 }\n",
                3,
            ),
        ] {
            let err = refused(&format!("topology = \"t.toml\"\n{body}"));
            assert!(
                err.contains(&format!("s.toml:{line}:"))
                    && err.contains("sets the seed, which a sweep sets for each run")
                    && err.contains("seeds = [1, 7, 42]"),
                "{body}: {err}"
            );
        }
    }

    #[test]
    fn repeated_seeds_values_metrics_and_keys_are_refused_at_their_place() {
        let cases = [
            (
                "seeds = [1, 2, 1]\n",
                "s.toml:2:16",
                "seed 1 is listed twice",
            ),
            (
                "seeds = [\"3\", 3]\n",
                "s.toml:2:15",
                "seed 3 is listed twice",
            ),
            (
                "[vary]\n\"lrms.cp_alpha\" = [0.1, 0.2, 0.1]\n",
                "s.toml:3:30",
                "value 0.1 is listed twice for `lrms.cp_alpha`",
            ),
            (
                "[vary]\n\"lrms.preemption\" = [\"nop\", \"cp\", \"nop\"]\n",
                "s.toml:3:",
                "value nop is listed twice for `lrms.preemption`",
            ),
            (
                "metrics = [\"awrt_s\", \"makespan_s\", \"awrt_s\"]\n",
                "s.toml:2:",
                "metric `awrt_s` is listed twice",
            ),
            (
                "[vary]\n\"lrms.cp_alpha\" = [0.1]\n\"lrms.cp_alpha \" = [0.2]\n",
                "s.toml:4:1",
                "`lrms.cp_alpha` in [vary] and `lrms.cp_alpha ` in [vary] name the same key",
            ),
            (
                "[set]\n\"lrms.cp_alpha\" = 0.1\n[vary]\n\"lrms. cp_alpha\" = [0.2]\n",
                "s.toml:5:1",
                "`lrms.cp_alpha` in [set] and `lrms. cp_alpha` in [vary] name the same key",
            ),
            (
                "[vary]\n\"workload.0.x\" = [1]\n\"workload.00.x\" = [2]\n",
                "s.toml:4:1",
                "name the same key",
            ),
        ];
        for (body, place, message) in cases {
            let err = refused(&format!("topology = \"t.toml\"\n{body}"));
            assert!(
                err.contains(place) && err.contains(message),
                "{body}: {err}"
            );
        }
        // Distinct values, seeds and keys are fine.
        let ok = parse_text(
            "topology = \"t.toml\"\nseeds = [1, 2]\n[set]\n\"lrms.cp_alpha\" = 0.1\n\
             [vary]\n\"lrms.preemption\" = [\"nop\", \"cp\"]\n",
            Path::new("s.toml"),
        );
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn runs_enumerate_every_point_and_seed_in_a_stable_order() {
        let s = Sweep {
            topology: PathBuf::from("t.toml"),
            seeds: vec![1, 2],
            metrics: Vec::new(),
            set: vec![("emulation.end".into(), "\"1d\"".into())],
            vary: vec![
                (
                    "igg.dispatch".into(),
                    vec!["\"rr\"".into(), "\"bcf\"".into()],
                ),
                ("x.y".into(), vec!["1.0".into(), "2.0".into(), "3.0".into()]),
            ],
            registry: crate::policy::Registry::builtin(),
        };
        let runs = s.runs();
        assert_eq!(runs.len(), 12);
        assert_eq!(runs[0].point, vec!["\"rr\"", "1.0"]);
        assert_eq!(runs[1].seed, 2);
        assert_eq!(runs[2].point, vec!["\"rr\"", "2.0"]);
        assert_eq!(runs[11].point, vec!["\"bcf\"", "3.0"]);
        assert_eq!(
            s.overrides(&runs[3]),
            vec![
                "emulation.end=\"1d\"",
                "igg.dispatch=\"rr\"",
                "x.y=2.0",
                "emulation.seed=2"
            ]
        );
    }
}

#[cfg(test)]
mod build_tests {
    use super::SweepRecord;

    fn record(commit: &str, dirty: bool) -> SweepRecord {
        serde_json::from_value(serde_json::json!({
            "igemu": "0.1.0", "commit": commit, "dirty": dirty, "sweep_path": "s.toml",
            "sweep_hash": null, "topology_path": "t.toml", "topology_hash": null, "set": {},
            "vary": [], "seeds": [1], "metrics": [], "runs": 1, "shard": null,
            "policies": {}, "outputs": [], "finished": false
        }))
        .expect("a record")
    }

    #[test]
    fn a_sweep_made_by_more_than_one_build_lists_each_once() {
        let mut now = record("bbbbbbbbbbbbbbbb", false);
        now.carry_builds(&record("bbbbbbbbbbbbbbbb", false));
        assert!(now.builds.is_empty(), "one build: nothing to list");
        now.carry_builds(&record("aaaaaaaaaaaaaaaa", true));
        assert_eq!(
            now.builds,
            [
                "0.1.0 (commit aaaaaaaaaaaa, dirty)",
                "0.1.0 (commit bbbbbbbbbbbb)"
            ]
        );
        // Resumed once more by the same build: each build still once, the earliest first.
        let mut later = record("bbbbbbbbbbbbbbbb", false);
        later.carry_builds(&now);
        assert_eq!(later.builds, now.builds);
        // An older record (no commit) still counts as a build of its own.
        let older: SweepRecord = serde_json::from_value({
            let mut v = serde_json::to_value(record("x", false)).expect("json");
            let o = v.as_object_mut().expect("object");
            o.remove("commit");
            o.remove("dirty");
            v
        })
        .expect("an older record reads");
        later.carry_builds(&older);
        assert_eq!(later.builds[0], "0.1.0 (commit unknown)");
    }
}
