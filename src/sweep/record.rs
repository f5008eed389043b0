//! The sweep record (`sweep.json`): what a sweep ran, so a resumed or merged sweep can check
//! that its runs belong to it.

use super::*;

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
    pub(super) fn build(&self) -> String {
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
