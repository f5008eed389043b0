//! Reading policy choices: a decision point's name (`lrms.preemption`, `igg.dispatch`, ...)
//! looked up in the run's [`Registry`] or written `external:CMD ARGS`, its fallback
//! (`lrms.preemption_fallback`), and the `[external]` settings of external processes.

use crate::input::diag::{shown, suggest};
use crate::input::table::Table;
use crate::policy::{check_external, Point, Registry, EXTERNAL_PREFIX};
use crate::time::EmuDuration;

/// How external policy processes are run (`[external]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExternalSettings {
    /// Wall-clock time a process has to start and answer the handshake, to answer one
    /// question (in virtual time, where the emulation waits for it) and to exit at the end.
    pub timeout: std::time::Duration,
    /// Realtime runs: emulated time a decision may take before its fallback decides.
    pub deadline: EmuDuration,
}

impl Default for ExternalSettings {
    fn default() -> ExternalSettings {
        ExternalSettings {
            timeout: std::time::Duration::from_secs(10),
            deadline: EmuDuration::from_secs(60),
        }
    }
}

/// The longest `[external] timeout`: an hour of wall time per answer.
const MAX_TIMEOUT_S: f64 = 3600.0;

/// Reads `[external]`.
pub(super) fn read_external(t: Option<Table<'_>>) -> ExternalSettings {
    let mut s = ExternalSettings::default();
    let Some(t) = t else {
        return s;
    };
    if let Some((d, loc)) = t.duration("timeout") {
        if d == EmuDuration::ZERO || d.as_secs_f64() > MAX_TIMEOUT_S {
            t.diags.error(
                loc,
                "`timeout` in [external] must be more than 0 and at most 1h",
                Some("e.g. timeout = \"10s\"".into()),
            );
        } else {
            s.timeout = std::time::Duration::from_micros(d.as_micros());
        }
    }
    if let Some((d, loc)) = t.duration("deadline") {
        if d == EmuDuration::ZERO {
            t.diags.error(
                loc,
                "`deadline` in [external] must be more than 0",
                Some("e.g. deadline = \"30s\" (emulated time)".into()),
            );
        } else {
            s.deadline = d;
        }
    }
    t.finish();
    s
}

/// The policy `key` names at `point`: a name `registry` knows, or `external:CMD ARGS` whose
/// program exists.
pub(super) fn read_choice(
    t: &Table<'_>,
    key: &str,
    point: Point,
    registry: &Registry,
) -> Option<String> {
    let (name, loc) = t.str(key)?;
    if name.starts_with(EXTERNAL_PREFIX) {
        return match check_external(name) {
            Ok(_) => Some(name.to_string()),
            Err(e) => {
                t.diags.error(
                    loc,
                    format!("`{key}` in {}: {e}", t.what),
                    Some("write `external:` then the command, split as a shell splits words (no shell is run), e.g. `external:python3 examples/policies/rr.py`".into()),
                );
                None
            }
        };
    }
    if registry.knows(point, name) {
        return Some(name.to_string());
    }
    let mut choices = registry.names(point);
    choices.push("external:CMD ARGS");
    t.diags.error(
        loc,
        format!("`{}` is not a valid `{key}` in {}", shown(name), t.what),
        Some(suggest(name, &choices)),
    );
    None
}

/// The fallback `<key>_fallback` names at `point`: a policy igemu ships (its answers are
/// trusted, so they need no fallback of their own).
pub(super) fn read_fallback(
    t: &Table<'_>,
    key: &str,
    point: Point,
    registry: &Registry,
) -> Option<String> {
    let fkey = format!("{key}_fallback");
    let (name, loc) = t.str(&fkey)?;
    if registry.is_shipped(point, name) == Some(true) {
        return Some(name.to_string());
    }
    // Only shipped policies: a fallback's answers are trusted, not checked.
    let shipped: Vec<&str> = (registry.names(point).into_iter())
        .filter(|n| registry.is_shipped(point, n) == Some(true))
        .collect();
    t.diags.error(
        loc,
        format!("`{}` is not a valid `{fkey}` in {}", shown(name), t.what),
        Some(format!(
            "a fallback is a policy igemu ships (not a program's own, not an external process): {}",
            suggest(name, &shipped)
        )),
    );
    None
}
