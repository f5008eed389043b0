//! Reading a sweep file: its topology, seeds, metrics, fixed settings and the values to vary
//! (lists or ranges), every problem collected with its place.

use super::*;

/// Reports, at the sweep file's `topology` key, a topology file that cannot be read: the
/// sweep's own place and the path as resolved (relative to the sweep file's folder), rather
/// than the topology reader's bare "does not exist".
pub(super) fn check_topology_file(topology: &Path, text: &str, path: &Path, diags: &Diags) {
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

pub(super) fn parse_str(
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

/// Reports every metric name that no run of the sweep's topology can produce, at its place,
/// with the closest valid name. A topology that does not load is left to the later check,
/// which reports it in full.
pub(super) fn check_metrics(sweep: &Sweep, metrics: &[(String, Loc)], diags: &Diags) {
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
pub(super) fn check_metric_columns(metrics: &[(String, Loc)], diags: &Diags) {
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
pub(super) const RENAMED: [(&str, &str); 7] = [
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

pub(super) fn read_seeds(t: &Table<'_>) -> Option<Vec<u64>> {
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

pub(super) fn read_metrics(t: &Table<'_>) -> Vec<(String, Loc)> {
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
pub(super) fn check_keys(sections: &[(&str, Option<&Table<'_>>)], diags: &Diags) {
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
pub(super) fn set_text(t: &Table<'_>, node: &Node) -> Option<String> {
    let text = node.toml_text();
    if text.is_none() {
        t.diags.error(&node.loc, "a date-time cannot be set", None);
    }
    text
}

pub(super) fn read_set(t: &Table<'_>) -> Vec<(String, String)> {
    t.entries()
        .filter_map(|(k, v)| Some((k.name.clone(), set_text(t, v)?)))
        .collect()
}

pub(super) fn read_vary(t: &Table<'_>) -> Vec<(String, Vec<String>)> {
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
pub(super) fn check_values<'l>(
    t: &Table<'_>,
    key: &str,
    values: &[String],
    loc: impl Fn(usize) -> &'l Loc,
) {
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
pub(super) enum ValueIdentity {
    /// A number: an integer, or a float's bits (integral floats are integers, `-0.0` is 0).
    Number(NumberKey, Option<u64>),
    /// A duration with a unit, µs.
    Duration(u64),
    /// Anything else, as TOML text.
    Text(String),
}

/// A number as one key: `1000`, `1e3` and `1000.0` are one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum NumberKey {
    Int(i64),
    Float(u64),
}

impl ValueIdentity {
    /// The identity of a value written as `--set` text. A number also carries the duration
    /// (µs) a duration key reads it as (seconds), so that `3600` meets `"1h"`.
    pub(super) fn of(text: &str) -> ValueIdentity {
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
pub(super) fn float_key(f: f64) -> NumberKey {
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
pub(super) struct SeenValues {
    pub(super) numbers: std::collections::HashMap<NumberKey, usize>,
    /// Numbers by the duration they read as.
    pub(super) number_durations: std::collections::HashMap<u64, usize>,
    pub(super) durations: std::collections::HashMap<u64, usize>,
    pub(super) texts: std::collections::HashMap<String, usize>,
}

impl SeenValues {
    /// Records the `i`-th value, written `text`; if it is one already seen, returns the
    /// index of that one and what they both are (for the message).
    pub(super) fn insert(&mut self, i: usize, text: &str) -> Option<(usize, String)> {
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
pub(super) fn read_range(r: &Table<'_>) -> Option<Vec<String>> {
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
pub(super) fn decimals(x: f64) -> Option<i32> {
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
pub(super) fn round_to(x: f64, digits: Option<i32>) -> f64 {
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
