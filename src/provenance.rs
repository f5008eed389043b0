//! What produced a run's outputs (igemu's version and commit, the topology's path and hash, the
//! overrides, the plug-ins) and whether two runs are the same run however their inputs were
//! spelled.

use std::path::Path;

use serde::Serialize;

use crate::{build_info, input};

/// What was run: enough to run it again.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Provenance {
    /// igemu's version.
    pub igemu: String,
    /// The commit igemu was built from (`None` when the build could not tell).
    #[serde(default)]
    pub commit: Option<String>,
    /// Whether igemu's build files differed from that commit (`None`: unknown).
    #[serde(default)]
    pub dirty: Option<bool>,
    /// The topology file, or `None` for the embedded quickstart.
    pub topology_path: Option<String>,
    /// FNV-1a 64 of the topology file's bytes (hex), to tell two versions of a file apart.
    pub topology_hash: Option<String>,
    /// Every `--set`, in order.
    pub overrides: Vec<String>,
    /// The last `emulation.speedup` override is the one `--speedup auto` chose (measured
    /// anew by each run, so not compared: the same command run again is the same run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub speedup_auto: bool,
    /// The plug-ins the run named (policies igemu does not ship), `<where> <point>:
    /// <policy>` each (filled in by the run; `summary.json`'s `plugins` has their counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugins: Vec<String>,
}

impl Provenance {
    /// The provenance of a run of the file at `path` (or the embedded topology) with `sets`.
    pub fn of(path: Option<&Path>, sets: &[String]) -> Provenance {
        let hash = path.and_then(file_hash);
        let build = build_info::Build::this();
        Provenance {
            igemu: build_info::VERSION.to_string(),
            commit: build.commit,
            dirty: build.dirty,
            topology_path: path.map(|p| p.display().to_string()),
            topology_hash: hash,
            overrides: sets.to_vec(),
            speedup_auto: false,
            plugins: Vec::new(),
        }
    }

    /// Whether `self` and `other` are runs of the same inputs, so that one's outputs may
    /// replace the other's without `--overwrite`: the same topology — the embedded one, or a
    /// file with the same contents (its hash) at the same path as written, `.` aside
    /// (`./topologies/x.toml` is `topologies/x.toml`; the path counts because the paths a
    /// topology names, its traces and profiles, are read from its folder, and a path written
    /// otherwise may be another folder's copy) — and the same overrides in the same
    /// order, each compared as the setting it makes (its key and its value as a run reads them:
    /// `lrms.cp_alpha = 0.1` is `lrms.cp_alpha=0.1`). igemu's version and build (commit) are not compared: the
    /// same command run again after an upgrade is the same run, as a sweep's record has it.
    pub fn same_run(&self, other: &Provenance) -> bool {
        let topology = match (&self.topology_path, &other.topology_path) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                self.topology_hash.is_some()
                    && self.topology_hash == other.topology_hash
                    && same_spelling(Path::new(a), Path::new(b))
            }
            _ => false,
        };
        let canonical = |p: &Provenance| -> Vec<String> {
            let mut sets: Vec<String> = (p.overrides.iter())
                .map(|s| input::node::canonical_override(s))
                .collect();
            let chosen = |s: &String| s.starts_with("emulation.speedup=");
            if let Some(i) = sets.iter().rposition(chosen).filter(|_| p.speedup_auto) {
                sets[i] = "emulation.speedup=auto".into();
            }
            sets
        };
        topology && canonical(self) == canonical(other)
    }
}

/// Whether paths `a` and `b`, as a run recorded them, are spelled alike once `.` components
/// are dropped (`./t/x.toml` is `t/x.toml`). Nothing is resolved: a recorded relative path
/// was relative to the folder that run was started in, which is not known here.
pub(crate) fn same_spelling(a: &Path, b: &Path) -> bool {
    let parts = |p: &Path| -> Vec<std::ffi::OsString> {
        p.components()
            .filter(|c| *c != std::path::Component::CurDir)
            .map(|c| c.as_os_str().to_os_string())
            .collect()
    };
    parts(a) == parts(b)
}

/// FNV-1a 64 of a file's bytes, as 16 hex digits (`None` if it cannot be read): enough to
/// tell two versions of a topology or sweep file apart, as [`Provenance`] and `sweep.json`
/// record them.
pub fn file_hash(path: &Path) -> Option<String> {
    // Capped as the file's reader caps it: an endless file has no hash, not an endless read.
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(
            std::fs::File::open(path).ok()?,
            crate::input::MAX_TOML_BYTES + 1,
        ),
        &mut bytes,
    )
    .ok()?;
    if bytes.len() as u64 > crate::input::MAX_TOML_BYTES {
        return None;
    }
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    Some(format!("{h:016x}"))
}

#[cfg(test)]
mod tests {
    use super::Provenance;

    #[test]
    fn the_same_run_is_the_same_contents_and_settings_however_spelled() {
        let p = |path: Option<&str>, hash: Option<&str>, sets: &[&str]| Provenance {
            igemu: "0".into(),
            commit: None,
            dirty: None,
            topology_path: path.map(String::from),
            topology_hash: hash.map(String::from),
            overrides: sets.iter().map(|s| s.to_string()).collect(),
            speedup_auto: false,
            plugins: Vec::new(),
        };
        let base = p(
            Some("t/a.toml"),
            Some("01"),
            &["lrms.cp_alpha=0.1", "igg.dispatch=rr"],
        );
        let mut newer = p(
            Some("./t/a.toml"),
            Some("01"),
            &["lrms . cp_alpha = 1e-1", "igg.dispatch=\"rr\""],
        );
        newer.igemu = "1".into();
        assert!(base.same_run(&newer));
        for other in [
            p(
                Some("t/a.toml"),
                Some("02"),
                &["lrms.cp_alpha=0.1", "igg.dispatch=rr"],
            ),
            p(
                Some("t/a.toml"),
                None,
                &["lrms.cp_alpha=0.1", "igg.dispatch=rr"],
            ),
            p(None, None, &["lrms.cp_alpha=0.1", "igg.dispatch=rr"]),
            p(
                Some("t/a.toml"),
                Some("01"),
                &["lrms.cp_alpha=0.2", "igg.dispatch=rr"],
            ),
            p(
                Some("t/a.toml"),
                Some("01"),
                &["igg.dispatch=rr", "lrms.cp_alpha=0.1"],
            ),
            p(Some("t/a.toml"), Some("01"), &["lrms.cp_alpha=0.1"]),
            // Another path: perhaps another folder's copy, whose traces differ.
            p(
                Some("u/a.toml"),
                Some("01"),
                &["lrms.cp_alpha=0.1", "igg.dispatch=rr"],
            ),
        ] {
            assert!(!base.same_run(&other), "{other:?}");
        }
        assert!(p(None, None, &[]).same_run(&p(None, None, &[])));
        // `--speedup auto` measures its speed-up anew each time: two runs of the command are
        // one run, but not a run with that speed-up given, nor one that also sets another.
        let auto = |sets: &[&str]| Provenance {
            speedup_auto: true,
            ..p(None, None, sets)
        };
        let chose = |x: &str| {
            [
                "emulation.mode=\"realtime\"".to_string(),
                format!("emulation.speedup={x}"),
            ]
        };
        let [mode, a] = chose("2044.0");
        let [_, b] = chose("1871.0");
        assert!(auto(&[&mode, &a]).same_run(&auto(&[&mode, &b])));
        assert!(!auto(&[&mode, &a]).same_run(&p(None, None, &[&mode, &a])));
        assert!(!auto(&[&mode, &a]).same_run(&auto(&[&mode, "lrms.cp_alpha=0.1", &b])));
    }
}
