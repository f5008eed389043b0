//! A preemption policy of one's own: preempt the most recently submitted leases first, until
//! the local request fits (then drop any that turned out not to be needed, so the set is
//! minimal as the papers' policies' sets are).
//!
//! ```sh
//! cargo run --release --example preemption -- run topologies/paper003-testbed.toml \
//!     --set lrms.preemption=newest-first
//! ```
//!
//! The whole igemu command line (run, sweep, stress, report, trace) runs with it, and beside
//! the shipped policies: `--set lrms.preemption=mov` still works.

use igemu::lrms::preemption::{Ask, Preemption};
use igemu::lrms::{Choice, Contention};
use igemu::policy::Registry;

/// Newest leases first.
pub struct NewestFirst;

impl Preemption for NewestFirst {
    fn name(&self) -> String {
        "newest-first".into()
    }

    fn choose(&mut self, c: &Contention, _: &Ask<'_>) -> Option<Choice> {
        // Candidates come in arrival order: take them from the back until there is room.
        let mut set: Vec<usize> = Vec::new();
        for i in (0..c.candidates.len()).rev() {
            set.push(i);
            if c.makes_room(&set) {
                // Keep the set minimal: drop a lease whenever the rest still make room.
                for k in (0..set.len()).rev() {
                    let without: Vec<usize> = (set.iter().enumerate())
                        .filter(|&(j, _)| j != k)
                        .map(|(_, &x)| x)
                        .collect();
                    if c.makes_room(&without) {
                        set = without;
                    }
                }
                set.sort_unstable();
                return Some(Choice { set, exact: true });
            }
        }
        None // even every lease would not make room: the local request is rejected
    }
}

/// The registry with this example's policy.
pub fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.preemption("newest-first", |_| Box::new(NewestFirst));
    r
}

#[allow(dead_code)] // the tests use `registry` alone
fn main() -> std::process::ExitCode {
    igemu::cli::main_with(registry())
}
