//! Emulated LRMS profiles (`emulated-lrms/*.toml`): the timings of VM operations on a
//! cluster's stack and its default policies. The shipped profiles are embedded in the binary;
//! a topology may also name a profile file by path (ending in `.toml`, relative to the
//! topology file).

use std::path::Path;

use super::{PreemptionName, SchedulerKind};
use crate::input::diag::{suggest, Diags, Loc};
use crate::input::node::{parse_document, Origin};
use crate::input::table::Table;

/// The profiles shipped in `emulated-lrms/`, by name.
pub(crate) const BUILTIN: &[(&str, &str)] = &[
    (
        "opennebula-gluster",
        include_str!("../../emulated-lrms/opennebula-gluster.toml"),
    ),
    (
        "nfs-100mbps",
        include_str!("../../emulated-lrms/nfs-100mbps.toml"),
    ),
    (
        "paper000-sim",
        include_str!("../../emulated-lrms/paper000-sim.toml"),
    ),
    (
        "paper002-sim",
        include_str!("../../emulated-lrms/paper002-sim.toml"),
    ),
];

pub use crate::lrms::overhead::Timings;

/// The slowest suspend, resume and copy rate, MB/s: the largest VM (2^30 MB) then takes at most
/// about 10^11 s, inside emulated time. A smaller rate — a denormal such as 1e-310 — would make
/// an operation's time infinite.
pub(crate) const MIN_RATE_MB_S: f64 = 0.01;
/// The fastest such rate, MB/s (a terabyte per millisecond).
pub(crate) const MAX_RATE_MB_S: f64 = 1e9;

/// A named LRMS profile.
#[derive(Clone, Debug, PartialEq)]
pub struct LrmsProfile {
    /// The name topologies use.
    pub name: String,
    /// One line saying what it emulates.
    pub description: String,
    /// Timings of VM operations.
    pub timings: Timings,
    /// The scheduler clusters get unless they choose one.
    pub scheduler: SchedulerKind,
    /// EASY pivots clusters get unless they choose a number.
    pub pivots: u32,
    /// The preemption policy clusters get unless they choose one.
    pub preemption: PreemptionName,
}

/// Loads profile `name` (a built-in name, or a `.toml` path relative to `base_dir`).
/// Problems are recorded at `at` (where the topology names the profile) or inside the
/// profile. The second value is the profile's path and source, for printing places.
#[cfg(test)]
pub(crate) fn load(
    name: &str,
    at: &Loc,
    base_dir: Option<&Path>,
    diags: &Diags,
) -> Option<(LrmsProfile, (String, String, String))> {
    let (profile, source) = load_with_source(name, at, base_dir, diags);
    Some((profile?, source?))
}

/// As `load`, but the profile's path and source come back whenever it was read — also when
/// it has problems, so that their places print as `file:line:col`.
pub(crate) fn load_with_source(
    name: &str,
    at: &Loc,
    base_dir: Option<&Path>,
    diags: &Diags,
) -> (Option<LrmsProfile>, Option<(String, String, String)>) {
    let (path, text) = if name.ends_with(".toml") {
        let path = base_dir.map_or_else(|| Path::new(name).to_path_buf(), |d| d.join(name));
        match crate::input::read_capped(&path, crate::input::MAX_TOML_BYTES) {
            Ok(t) => (path.display().to_string(), t),
            Err(e) => {
                diags.error(
                    at,
                    format!("cannot read LRMS profile {}: {e}", path.display()),
                    Some("profile paths are relative to the topology file".into()),
                );
                return (None, None);
            }
        }
    } else {
        match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((n, t)) => (format!("emulated-lrms/{n}.toml"), (*t).to_string()),
            None => {
                let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
                diags.error(
                    at,
                    format!("unknown LRMS profile `{name}`"),
                    Some(suggest(name, &names)),
                );
                return (None, None);
            }
        }
    };
    let profile = parse(name, &text, diags);
    (profile, Some((name.to_string(), path, text)))
}

fn parse(name: &str, text: &str, diags: &Diags) -> Option<LrmsProfile> {
    let root = parse_document(text, Origin::Profile(name), diags)?;
    let t = Table::of(&root, format!("LRMS profile `{name}`"), diags)?;
    let pname = t
        .req_str("name", "give the profile a name")
        .map(|(s, _)| s.to_string());
    let description = t
        .str("description")
        .map_or_else(String::new, |(s, _)| s.to_string());
    let timings = t.table("timings").and_then(|tt| {
        let d = |k: &str| tt.duration(k).map(|(v, _)| v);
        let rate = |k: &str| {
            tt.number_in(k, MIN_RATE_MB_S, MAX_RATE_MB_S)
                .map(|(v, _)| v)
        };
        let read = (
            d("boot").unwrap_or_default(),
            d("shutdown").unwrap_or_default(),
            d("pause_per_vm").unwrap_or_default(),
            rate("suspend_rate_mb_s"),
            rate("resume_rate_mb_s"),
            rate("copy_rate_mb_s"),
            d("reschedule").unwrap_or_default(),
        );
        tt.finish();
        for (k, v) in [
            ("suspend_rate_mb_s", read.3),
            ("resume_rate_mb_s", read.4),
            ("copy_rate_mb_s", read.5),
        ] {
            if v.is_none() && tt.get(k).is_none() {
                tt.missing(k, "rates are in MB/s, e.g. 40.0");
            }
        }
        Some(Timings {
            boot: read.0,
            shutdown: read.1,
            pause_per_vm: read.2,
            suspend_rate_mb_s: read.3?,
            resume_rate_mb_s: read.4?,
            copy_rate_mb_s: read.5?,
            reschedule: read.6,
        })
    });
    if t.get("timings").is_none() {
        t.missing(
            "timings",
            "add a [timings] table with the VM operation rates",
        );
    }
    let (mut scheduler, mut preemption, mut pivots) =
        (SchedulerKind::Conservative, PreemptionName::Nop, 1);
    if let Some(dt) = t.table("defaults") {
        if let Some(s) = super::read_scheduler(&dt) {
            scheduler = s;
        }
        if let Some(p) = super::read_preemption(&dt) {
            preemption = p;
        }
        if let Some((p, _)) = dt.positive("pivots", 1_000_000) {
            pivots = p as u32;
        }
        dt.finish();
    }
    t.finish();
    Some(LrmsProfile {
        name: pname?,
        description,
        timings: timings?,
        scheduler,
        pivots,
        preemption,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::EmuDuration;

    #[test]
    fn every_builtin_profile_loads_cleanly() {
        for (name, _) in BUILTIN {
            let diags = Diags::default();
            let p = load(name, &Loc::Builtin, None, &diags);
            assert!(diags.is_empty(), "{name}: {:?}", diags.into_vec());
            assert_eq!(p.expect("loads").0.name, *name);
        }
    }

    #[test]
    fn paper_setups_have_the_papers_rates() {
        let diags = Diags::default();
        let nfs = load("nfs-100mbps", &Loc::Builtin, None, &diags).unwrap().0;
        // Paper 003 §7.2: 1 GB suspends in 161.0 s and resumes in 126.1 s; copy 160.2 s.
        assert!((1024.0 / nfs.timings.suspend_rate_mb_s - 161.0).abs() < 0.05);
        assert!((1024.0 / nfs.timings.resume_rate_mb_s - 126.1).abs() < 0.05);
        assert!((1024.0 / nfs.timings.copy_rate_mb_s - 160.2).abs() < 1e-9);
        assert_eq!(nfs.timings.reschedule, EmuDuration::from_millis(2300));
        let p0 = load("paper000-sim", &Loc::Builtin, None, &diags).unwrap().0;
        let t = &p0.timings;
        let migrate =
            1024.0 / t.suspend_rate_mb_s + 1024.0 / t.resume_rate_mb_s + 1024.0 / t.copy_rate_mb_s;
        assert!((migrate - 372.5).abs() < 1e-9);
        let gl = load("opennebula-gluster", &Loc::Builtin, None, &diags)
            .unwrap()
            .0;
        assert_eq!(gl.timings.suspend_rate_mb_s, 40.0);
    }

    #[test]
    fn unknown_profile_suggests_a_name() {
        let diags = Diags::default();
        assert!(load("nfs-100mbs", &Loc::Builtin, None, &diags).is_none());
        let d = diags.into_vec();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].hint.as_deref(), Some("did you mean `nfs-100mbps`?"));
    }
}
