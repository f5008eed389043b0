//! A run's `summary.json` as the report reads it: every key the page uses is checked for its
//! presence and type, so that a file that is no run's summary (`{}`, a string where a count
//! is) is refused with the key, what was expected and the fix, not drawn as zeros.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::read::{read_text, shown, LAST_SECS};
use crate::model::RequestState;
use crate::Error;

/// Request origins in the order of [`RequestTotals::by`].
pub(super) const ORIGINS: [&str; 2] = ["local", "external"];

/// The names of request states, in [`RequestState::ALL`]'s order.
pub(super) fn state_names() -> [&'static str; 4] {
    RequestState::ALL.map(RequestState::as_str)
}

/// The request counts of `summary.json`.
#[derive(Debug, PartialEq)]
pub(super) struct RequestTotals {
    /// All requests.
    pub total: u64,
    /// By origin ([`ORIGINS`]) and state ([`RequestState::ALL`]).
    pub by: [[u64; 4]; 2],
}

/// What the page reads from `summary.json`, checked.
pub(super) struct Summary {
    /// The file, for the tables that show every figure it has.
    pub value: Value,
    /// Its path, for messages.
    pub path: PathBuf,
    /// The topology's name.
    pub topology: String,
    /// Emulated time at the end of the run, seconds.
    pub end: f64,
    /// Request counts.
    pub requests: RequestTotals,
    /// Each cluster's (grid, cluster) and host count, in the file's order.
    pub clusters: ClusterHosts,
    /// `request_metrics`, checked, when the run wrote it (igemu has since issue 39).
    pub request_metrics: Option<Value>,
    /// The warm-up its request figures leave out (`warm_up_s`), seconds; 0 when none.
    pub warm_up_s: f64,
}

/// Clusters as (grid, cluster) with their host counts.
pub(super) type ClusterHosts = Vec<((String, String), u64)>;

/// What a key must hold.
#[derive(Copy, Clone, Debug)]
enum Want {
    Text,
    TextOrNull,
    FlagOrNull,
    Count,
    Number,
    NumberOrNull,
    Seconds,
    Object,
    List,
}

impl Want {
    fn accepts(self, v: &Value) -> bool {
        match self {
            Want::Text => v.is_string(),
            Want::TextOrNull => v.is_string() || v.is_null(),
            Want::FlagOrNull => v.is_boolean() || v.is_null(),
            Want::Count => v.is_u64(),
            Want::Number => v.as_f64().is_some_and(f64::is_finite),
            Want::NumberOrNull => v.is_null() || v.as_f64().is_some_and(f64::is_finite),
            Want::Seconds => v.as_f64().is_some_and(|t| (0.0..=LAST_SECS).contains(&t)),
            Want::Object => v.is_object(),
            Want::List => v.is_array(),
        }
    }

    fn describe(self) -> String {
        match self {
            Want::Text => "a string".into(),
            Want::TextOrNull => "a string or null".into(),
            Want::FlagOrNull => "true, false or null".into(),
            Want::Count => "a whole number ≥ 0".into(),
            Want::Number => "a finite number".into(),
            Want::NumberOrNull => "a finite number or null".into(),
            Want::Seconds => {
                format!("a time: finite seconds from 0 to {LAST_SECS:.4e} (emulated time's end)")
            }
            Want::Object => "an object".into(),
            Want::List => "a list".into(),
        }
    }
}

/// How a summary that is not a run's is mended.
const REWRITE: &str =
    "hint: `igemu run` writes summary.json with every key the report reads; re-run it (same topology and seed) to rewrite the run's directory";

/// A JSON value as a message shows it: kind and a short text.
fn found(v: &Value) -> String {
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    let text = match v.as_f64() {
        Some(x) => shown(x),
        None => v.to_string(),
    };
    let cut: String = text.chars().take(40).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{cut}{more} ({kind})")
}

/// Checks keys of one file.
struct Keys<'p>(&'p Path);

impl Keys<'_> {
    /// `key` holds what it should not: `problem`, where the report expects `expected`.
    fn error(&self, key: &str, problem: &str, expected: &str) -> Error {
        Error::Input(format!(
            "{}: error: `{key}` {problem}; the report expects {expected} there\n    {REWRITE}",
            self.0.display()
        ))
    }

    /// `parent[name]` (named `at.name` in messages), which must be there and be `want`.
    fn need<'v>(
        &self,
        parent: &'v Value,
        at: &str,
        name: &str,
        want: Want,
    ) -> Result<&'v Value, Error> {
        let key = if at.is_empty() {
            name.to_string()
        } else {
            format!("{at}.{name}")
        };
        match parent.get(name) {
            None => Err(self.error(&key, "is missing", &want.describe())),
            Some(v) if want.accepts(v) => Ok(v),
            Some(v) => Err(self.error(&key, &format!("is {}", found(v)), &want.describe())),
        }
    }

    /// `parent[name]` if it is there, which must then be `want`.
    fn may<'v>(
        &self,
        parent: &'v Value,
        at: &str,
        name: &str,
        want: Want,
    ) -> Result<Option<&'v Value>, Error> {
        match parent.get(name) {
            None => Ok(None),
            Some(_) => self.need(parent, at, name, want).map(Some),
        }
    }
}

/// The keys the headline cards read, each a number when present (igemu has named some of
/// them differently over time, so none is required).
pub(super) const HEADLINE_KEYS: [&str; 11] = [
    "utilization_pct",
    "utilization",
    "awrt_s",
    "mean_wait_s",
    "vm_preemptions",
    "overhead_s",
    "external_rejection_pct",
    "external_rejection_rate",
    "local_rejection_pct",
    "local_rejection_rate",
    "makespan_s",
];

/// Reads and checks the `summary.json` at `path`.
pub(super) fn read(path: &Path) -> Result<Summary, Error> {
    let value: Value = serde_json::from_str(&read_text(path)?).map_err(|e| {
        Error::Input(format!(
            "{}:{}: error: not JSON: {e}\n    {REWRITE}",
            path.display(),
            e.line()
        ))
    })?;
    if !value.is_object() {
        return Err(Error::Input(format!(
            "{}: error: not a run summary (a JSON object)\n    {REWRITE}",
            path.display()
        )));
    }
    let keys = Keys(path);
    let topology = keys.need(&value, "", "topology", Want::Text)?;
    keys.need(&value, "", "mode", Want::Text)?;
    keys.need(&value, "", "seed", Want::Count)?;
    let end = keys.need(&value, "", "emulated_end_s", Want::Seconds)?;
    keys.need(&value, "", "wall_s", Want::Number)?;
    for name in HEADLINE_KEYS {
        keys.may(&value, "", name, Want::Number)?;
    }
    check_provenance(&keys, &value)?;
    check_texts(
        &keys,
        keys.need(&value, "", "policies", Want::Object)?,
        "policies",
    )?;
    let requests = request_totals(&keys, &value)?;
    let clusters = cluster_hosts(&keys, &value)?;
    let grids = keys.need(&value, "", "grids", Want::Object)?;
    for (name, grid) in grids.as_object().into_iter().flatten() {
        let at = format!("grids.{name}");
        keys.need(grids, "grids", name, Want::Object)?;
        keys.may(grid, &at, "negotiations", Want::Object)?;
    }
    let request_metrics = check_request_metrics(&keys, &value)?;
    let warm_up_s = keys.may(&value, "", "warm_up_s", Want::Seconds)?;
    let warm_up_s = warm_up_s.and_then(Value::as_f64).unwrap_or(0.0);
    Ok(Summary {
        warm_up_s,
        topology: topology.as_str().unwrap_or_default().to_string(),
        end: end.as_f64().unwrap_or_default(),
        requests,
        clusters,
        request_metrics,
        path: path.to_path_buf(),
        value,
    })
}

/// The groups of `request_metrics` besides `all`, with how the report names each group.
pub(super) const METRIC_GROUPS: [(&str, &str); 4] = [
    ("by_grid", "Grid"),
    ("by_origin", "origin"),
    ("by_lease_type", "lease type"),
    ("by_grid_origin", "Grid/origin"),
];

/// The figures of each metric's statistics in `request_metrics`.
pub(super) const METRIC_FIGURES: [&str; 5] = ["mean", "p50", "p90", "p99", "max"];

/// `request_metrics`, when there: `bounded_slowdown_tau_s` above 0, and for `all` and every
/// group, each metric's `n` a count and its figures numbers (or null when `n` is 0), the
/// percentiles in order within the largest.
fn check_request_metrics(keys: &Keys, summary: &Value) -> Result<Option<Value>, Error> {
    let Some(m) = keys.may(summary, "", "request_metrics", Want::Object)? else {
        return Ok(None);
    };
    let at = "request_metrics";
    let tau = keys.need(m, at, "bounded_slowdown_tau_s", Want::Number)?;
    if tau.as_f64().is_some_and(|t| t <= 0.0) {
        let key = format!("{at}.bounded_slowdown_tau_s");
        return Err(keys.error(&key, &format!("is {}", found(tau)), "a number above 0"));
    }
    let mut sets = vec![(format!("{at}.all"), keys.need(m, at, "all", Want::Object)?)];
    for (group, _) in METRIC_GROUPS {
        let Some(g) = keys.may(m, at, group, Want::Object)? else {
            continue;
        };
        for (name, set) in g.as_object().into_iter().flatten() {
            keys.need(g, &format!("{at}.{group}"), name, Want::Object)?;
            sets.push((format!("{at}.{group}.{name}"), set));
        }
    }
    for (place, set) in sets {
        for metric in crate::metrics::METRIC_NAMES {
            let stats = keys.need(set, &place, metric, Want::Object)?;
            let at = format!("{place}.{metric}");
            let n = keys
                .need(stats, &at, "n", Want::Count)?
                .as_u64()
                .unwrap_or(0);
            let mut last = f64::NEG_INFINITY;
            for figure in METRIC_FIGURES {
                let v = keys.need(stats, &at, figure, Want::NumberOrNull)?;
                let key = format!("{at}.{figure}");
                match (v.as_f64(), n) {
                    (None, 0) => {}
                    (None, _) => {
                        return Err(keys.error(&key, "is null", &format!("a number (`n` is {n})")))
                    }
                    (Some(_), 0) => {
                        return Err(keys.error(
                            &key,
                            &format!("is {}", found(v)),
                            "null (`n` is 0)",
                        ))
                    }
                    (Some(x), _) if x < 0.0 => {
                        return Err(keys.error(&key, &format!("is {}", found(v)), "a number ≥ 0"))
                    }
                    (Some(x), _) if figure != "mean" && x < last => {
                        let expected = "percentiles in order: p50 ≤ p90 ≤ p99 ≤ max";
                        return Err(keys.error(
                            &key,
                            &format!("is {}, below the one before", found(v)),
                            expected,
                        ));
                    }
                    (Some(x), _) => {
                        if figure != "mean" {
                            last = x;
                        }
                    }
                }
            }
        }
    }
    Ok(Some(m.clone()))
}

/// `provenance`, when there: its texts and overrides.
fn check_provenance(keys: &Keys, summary: &Value) -> Result<(), Error> {
    let Some(p) = keys.may(summary, "", "provenance", Want::Object)? else {
        return Ok(());
    };
    keys.may(p, "provenance", "igemu", Want::Text)?;
    keys.may(p, "provenance", "commit", Want::TextOrNull)?;
    keys.may(p, "provenance", "dirty", Want::FlagOrNull)?;
    keys.may(p, "provenance", "topology_path", Want::TextOrNull)?;
    keys.may(p, "provenance", "topology_hash", Want::TextOrNull)?;
    let overrides = keys.may(p, "provenance", "overrides", Want::List)?;
    for (i, v) in overrides
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if !v.is_string() {
            let key = format!("provenance.overrides[{i}]");
            return Err(keys.error(&key, &format!("is {}", found(v)), "a string"));
        }
    }
    Ok(())
}

/// Every value of the object `at` is a string.
fn check_texts(keys: &Keys, object: &Value, at: &str) -> Result<(), Error> {
    for name in object.as_object().into_iter().flatten().map(|(k, _)| k) {
        keys.need(object, at, name, Want::Text)?;
    }
    Ok(())
}

/// `requests`: the total and the counts by origin and state, which must add up to it.
fn request_totals(keys: &Keys, summary: &Value) -> Result<RequestTotals, Error> {
    let requests = keys.need(summary, "", "requests", Want::Object)?;
    let total = keys.need(requests, "requests", "total", Want::Count)?;
    let mut by = [[0u64; 4]; 2];
    for (o, origin) in ORIGINS.iter().enumerate() {
        let of = keys.need(requests, "requests", origin, Want::Object)?;
        for (s, state) in state_names().iter().enumerate() {
            let at = format!("requests.{origin}");
            by[o][s] = keys
                .need(of, &at, state, Want::Count)?
                .as_u64()
                .unwrap_or_default();
        }
    }
    let total = total.as_u64().unwrap_or_default();
    let sum: u128 = by.iter().flatten().map(|n| u128::from(*n)).sum();
    if sum != u128::from(total) {
        return Err(Error::Input(format!(
            "{}: error: `requests.total` is {total}, but `requests.local` and `requests.external` count {sum} requests; a run's summary counts each request once\n    {REWRITE}",
            keys.0.display()
        )));
    }
    Ok(RequestTotals { total, by })
}

/// `clusters`: each `grid/cluster` with its host count.
fn cluster_hosts(keys: &Keys, summary: &Value) -> Result<ClusterHosts, Error> {
    let clusters = keys.need(summary, "", "clusters", Want::Object)?;
    let mut out = Vec::new();
    for (name, _) in clusters.as_object().into_iter().flatten() {
        let figures = keys.need(clusters, "clusters", name, Want::Object)?;
        let at = format!("clusters.{name}");
        let hosts = keys
            .need(figures, &at, "hosts", Want::Count)?
            .as_u64()
            .unwrap_or_default();
        let max = crate::topology::MAX_CLUSTER_HOSTS;
        if hosts > max {
            let expected = format!("a whole number from 0 to {max} (a cluster's hosts)");
            return Err(keys.error(&format!("{at}.hosts"), &format!("is {hosts}"), &expected));
        }
        let Some((grid, cluster)) = name.split_once('/') else {
            return Err(Error::Input(format!(
                "{}: error: `clusters` has `{}`, not a `grid/cluster` name\n    {REWRITE}",
                keys.0.display(),
                super::read::text_shown(name)
            )));
        };
        out.push(((grid.to_string(), cluster.to_string()), hosts));
    }
    Ok(out)
}
