//! Decision points and the policies that decide them.
//!
//! Every decision the papers vary is a *decision point* with a trait in the pure core beside
//! the data it reads: preemption ([`crate::lrms::preemption::Preemption`]), admission
//! ([`crate::lrms::admission::AdmissionControl`]), dispatch
//! ([`crate::igg::dispatch::Dispatch`]), and the two sides of a negotiation
//! ([`crate::igg::negotiation::AnswerPolicy`], [`crate::igg::negotiation::OfferPolicy`]).
//! A topology names the policy of each point; a name is looked up in the [`Registry`] —
//! where igemu's own policies are registered as a user's are — or, written
//! `external:CMD ARGS`, runs CMD as a child process asked over a line protocol (`external`,
//! documented in `docs/policies.md`).
//!
//! A policy igemu does not ship is a *plug-in*: its answers are checked before they are
//! carried out, each decision it makes is a trace record, and an answer that is impossible
//! stops the run with an error naming the policy, the decision and what was wrong — or, where
//! the topology names a fallback (`lrms.preemption_fallback = "mov"`), the fallback decides
//! and `summary.json` counts it.

pub(crate) mod build;
pub mod checks;
pub mod external;
pub(crate) mod guard;
pub mod realtime;
pub mod registry;
pub mod run;
pub mod words;

pub use build::Greeting;
pub use registry::{LrmsSetup, PeeringSetup, Registry};
pub use run::{Note, PluginRecord, Plugins, PolicyFailure, Site, Witness};

/// How a topology names an external process as a policy: `external:CMD ARGS`.
pub const EXTERNAL_PREFIX: &str = "external:";

named_enum! {
    /// A decision point.
    Point {
        /// Which leases a local request preempts (`lrms.preemption`).
        Preemption => "preemption",
        /// Whether a cluster admits an external request (`lrms.admission`).
        Admission => "admission",
        /// In which order an IGG tries its clusters (`igg.dispatch`).
        Dispatch => "dispatch",
        /// How an IGG answers a peer's offer (`igg.answer`).
        Answer => "answer",
        /// Whom an overloaded IGG offers a request to (`igg.offer`).
        Offer => "offer",
        /// The whole gateway: every input of an IGG, its effects (`igg.implementation`).
        Gateway => "gateway",
    }
}

/// The policy a topology chose for one decision point somewhere (a cluster's or a Grid's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    /// A registered name, or `external:CMD ARGS`.
    pub name: String,
    /// A registered policy that decides when the chosen one cannot (a bad answer, a process
    /// that failed, a realtime deadline missed); `None`: such a failure stops the run.
    pub fallback: Option<String>,
}

impl Chosen {
    /// A registered policy without a fallback.
    pub fn named(name: &str) -> Chosen {
        Chosen {
            name: name.into(),
            fallback: None,
        }
    }

    /// The command's words when the policy is an external process.
    pub fn external(&self) -> Option<Vec<String>> {
        let rest = self.name.strip_prefix(EXTERNAL_PREFIX)?;
        words::split(rest).ok()
    }

    /// Whether the policy is an external process.
    pub fn is_external(&self) -> bool {
        self.name.starts_with(EXTERNAL_PREFIX)
    }
}

/// A choice as outputs describe it: `shipped` (a shipped policy's own description) or its
/// name, then ` (fallback F)` where it has one.
pub fn describe(chosen: &Chosen, shipped: Option<String>) -> String {
    let name = shipped.unwrap_or_else(|| chosen.name.clone());
    match &chosen.fallback {
        Some(f) => format!("{name} (fallback {f})"),
        None => name,
    }
}

/// Checks an `external:CMD ARGS` name: its words, and that the program can be found (a
/// path that exists, or a name on `PATH`). Returns what is wrong, if anything.
pub fn check_external(name: &str) -> Result<Vec<String>, String> {
    use crate::input::diag::{shown, shows_as_itself};
    // The command is named in messages, traces and summaries: nothing in it may reach a
    // terminal raw.
    if let Some(c) = name.chars().find(|&c| c != '\t' && !shows_as_itself(c)) {
        return Err(format!(
            "`{}` holds the character {} (a control or invisible character); a command is written in visible characters",
            shown(name),
            shown(&c.to_string())
        ));
    }
    let rest = name.strip_prefix(EXTERNAL_PREFIX).unwrap_or(name);
    let words = words::split(rest).map_err(|e| format!("`{name}`: {e}"))?;
    let Some(program) = words.first() else {
        return Err(format!(
            "`{name}` names no program; write e.g. `external:python3 my_policy.py`"
        ));
    };
    if find_program(program).is_none() {
        return Err(format!(
            "`{name}`: the program `{program}` is not found ({})",
            if program.contains('/') {
                "no such file"
            } else {
                "not on PATH"
            }
        ));
    }
    Ok(words)
}

/// Where `program` is: the path itself if it names one (relative to the working directory),
/// else the first match on `PATH`.
pub fn find_program(program: &str) -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(program);
    if program.contains('/') {
        return path.is_file().then(|| path.to_path_buf());
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}
