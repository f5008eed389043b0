//! igemu — an actor-based emulator of InterGrid: federated, virtualised Grids whose gateways
//! (IGGs) place external VM leases on clusters whose LRMSs also serve local users.
//!
//! The library API: describe a federation (a topology file through [`topology::load_file`],
//! or in code with [`topology::Federation`]), run it ([`run`]), and read or write the results
//! ([`RunResult`], [`RunResult::write_outputs`]). The `igemu` binary is a thin CLI over this.
//!
//! The modules: [`topology`] (reading and building federations), [`model`] (requests, lease
//! types, VM states), [`lrms`] and [`igg`] (the pure cores of the LRMS and the gateway, usable
//! on their own), [`metrics`] (records and the papers' figures), [`trace`] (records and their
//! rendering), [`workload`] (workload models and SWF), [`sweep`] and [`stress`] (many runs),
//! [`fault`] (link faults), [`time`] (emulated time and the clock), [`progress`] (progress of
//! long work on stderr).
//!
//! # Running a federation in code
//!
//! One Grid of two 4-core clusters; a cancellable external lease lands on the first cluster,
//! then a local request there needs all four cores and the LRMS cancels the lease for it.
//!
//! ```
//! use igemu::model::RequestState;
//! use igemu::topology::{Federation, Hosts, Request, Users};
//!
//! let topo = Federation::new("demo")
//!     .lrms("preemption", "mov")
//!     .grid("g", &[("c1", Hosts::new(1, 4, 8192)), ("c2", Hosts::new(1, 4, 8192))])
//!     .workload(
//!         Users::external("ext", "g")
//!             .request(Request::new("victim", 0, 2, 1024, 7200).kind("cancellable")),
//!     )
//!     .workload(Users::local("users", "g", "c1").request(Request::new("local", 1800, 4, 1024, 3600)))
//!     .build()
//!     .map_err(igemu::Error::from)?;
//! let result = igemu::run(topo, &igemu::RunOptions::default())?;
//! assert_eq!(result.summary.invariant_violations, 0);
//! let state = |label: &str| {
//!     let i = result.topology.request_labels.iter().position(|l| l == label);
//!     i.and_then(|i| result.records[i].state)
//! };
//! assert_eq!(state("victim"), Some(RequestState::Cancelled));
//! assert_eq!(state("local"), Some(RequestState::Completed));
//! # Ok::<(), igemu::Error>(())
//! ```

//! # Bring your own policy
//!
//! Every decision point — preemption, admission, dispatch, and the two sides of a
//! negotiation — is a trait ([`policy`] lists them). Implement one, register it by name, and
//! name it where a topology names a policy; [`cli::main_with`] gives it the whole command
//! line. The shortest, a preemption policy that takes the newest leases first:
//!
//! ```
//! use igemu::lrms::preemption::{Ask, Preemption};
//! use igemu::lrms::{Choice, Contention};
//! use igemu::topology::{Federation, Hosts, Request, Users};
//!
//! struct NewestFirst;
//!
//! impl Preemption for NewestFirst {
//!     fn name(&self) -> String {
//!         "newest-first".into()
//!     }
//!     fn choose(&mut self, c: &Contention, _: &Ask<'_>) -> Option<Choice> {
//!         let mut set = Vec::new();
//!         for i in (0..c.candidates.len()).rev() {
//!             set.push(i);
//!             if c.makes_room(&set) {
//!                 set.sort_unstable();
//!                 return Some(Choice { set, exact: true });
//!             }
//!         }
//!         None
//!     }
//! }
//!
//! let mut registry = igemu::policy::Registry::builtin();
//! registry.preemption("newest-first", |_| Box::new(NewestFirst));
//! let topo = Federation::new("mine")
//!     .registry(&registry)
//!     .lrms("preemption", "newest-first")
//!     .grid("g", &[("c", Hosts::new(1, 4, 8192))])
//!     .workload(
//!         Users::external("ext", "g")
//!             .request(Request::new("old", 0, 2, 1024, 7200).kind("cancellable"))
//!             .request(Request::new("new", 60, 2, 1024, 7200).kind("cancellable")),
//!     )
//!     .workload(Users::local("users", "g", "c").request(Request::new("local", 1800, 2, 1024, 600)))
//!     .build()
//!     .map_err(igemu::Error::from)?;
//! let result = igemu::run(topo, &igemu::RunOptions::default())?;
//! let preempted = &result.decisions[0].decision.set;
//! assert_eq!(result.topology.label(preempted[0].0), "new");
//! assert_eq!(result.summary.plugins[0].policy, "newest-first");
//! # Ok::<(), igemu::Error>(())
//! ```
//!
//! Or in any language: `external:CMD ARGS` runs a process asked each decision over a line
//! protocol (`docs/policies.md`; a Python module in `examples/policies/`).

/// Defines a policy-name enum: its variants, their names in topologies, parsing, and the
/// list of names for "did you mean" hints. Adding a policy touches its module and one line.
macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every variant.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Names accepted in topologies.
            pub const NAMES: &'static [&'static str] = &[$($text),+];
            /// The name used in topologies.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
            /// Parses a name from [`Self::NAMES`].
            pub fn parse(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == name)
            }
        }

        impl $crate::Named for $name {
            const NAMES: &'static [&'static str] = $name::NAMES;
            fn parse(name: &str) -> Option<Self> {
                $name::parse(name)
            }
        }
    };
}

// The actix shell. Public only so the runtime benchmark can build actors of its own on the
// one send path; it is not part of the library's API.
#[doc(hidden)]
pub mod actors;
pub mod build_info;
pub mod cli;
mod csvout;
mod error;
mod fasthash;
pub mod fault;
#[doc(hidden)]
pub mod fuzzing;
pub mod igg;
pub mod input;
pub mod lrms;
pub mod metrics;
pub mod model;
pub mod plan;
pub mod policy;
pub mod progress;
pub mod report;
pub mod serve;
pub mod stress;
pub mod sweep;
pub mod time;
pub mod topology;
pub mod trace;
pub mod workload;

pub use actors::graph::Broken;
pub use error::Error;

/// Cases a property test runs: `PROPTEST_CASES` when set, else `default` (what CI runs).
#[cfg(test)]
pub(crate) fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A fixed choice of names, as topologies write them (`"mov"`, `"pap-rtdp"`, `"external"`):
/// each is one enum, parsed in one place.
pub trait Named: Sized + Copy {
    /// Every accepted name.
    const NAMES: &'static [&'static str];
    /// The value a name stands for.
    fn parse(name: &str) -> Option<Self>;
}
pub use input::{Diagnostic, Report};

// The run of a federation and what it writes, each in a module of its own; re-exported here
// as the library's API has always named them (`igemu::run`, `igemu::RunOptions`, ...).
pub mod federation;
mod files;
#[cfg(test)]
mod layering;
mod pacing;
mod provenance;
mod record;
mod results;
mod speedup;

pub use federation::{run, RunOptions};
pub use files::{
    check_output_file, check_regular_files, create_temp_beside, staged, write_atomically,
    OutputKind, RUN_OUTPUTS,
};
pub use pacing::{
    lateness_verdict, SpeedupChoice, TimerLateness, AUTO_MAX_WALL, AUTO_P99_LATENESS_MS,
    SUSTAINABLE_P99_LATENESS_MS,
};
pub use provenance::{file_hash, Provenance};
pub use record::{
    read_record_header, record_file_name, RecordHeader, ReplayOutcome, ReplaySummary, RECORD_FORMAT,
};
pub use results::{policies, RunResult, Summary};
pub use speedup::{
    choose_speedup, predicted_wall_s, realtime_repeats_virtual, WAKE_PROBE_GAPS, WAKE_PROBE_WAITS,
    WAKE_QUANTILE,
};
