//! A dispatch policy of one's own: try the clusters with the most free cores first (as the
//! IGG sees them: from the clusters' published slots where they publish, else the cores its
//! own leases take).
//!
//! ```sh
//! cargo run --release --example dispatch -- run topologies/paper000-three-clusters.toml \
//!     --set igg.dispatch=most-free
//! ```

use igemu::igg::dispatch::{Dispatch, DispatchAsk};
use igemu::policy::Registry;

/// The cluster with the most free cores first.
pub struct MostFree;

impl Dispatch for MostFree {
    fn name(&self) -> String {
        "most-free".into()
    }

    fn order(&mut self, ask: &DispatchAsk<'_>) -> Vec<usize> {
        let free = |j: usize| {
            let cores = ask.loads.cores.get(j).copied().unwrap_or(0);
            cores.saturating_sub(ask.loads.busy.get(j).copied().unwrap_or(0))
        };
        let mut order: Vec<usize> = (0..ask.clusters).collect();
        // Most free first; ties to the cluster listed first.
        order.sort_by_key(|&j| std::cmp::Reverse(free(j)));
        order
    }
}

/// The registry with this example's policy.
pub fn registry() -> Registry {
    let mut r = Registry::builtin();
    // `true`: it reads the clusters' published slots, so they publish them.
    r.dispatch("most-free", true, |_| Box::new(MostFree));
    r
}

#[allow(dead_code)] // the tests use `registry` alone
fn main() -> std::process::ExitCode {
    igemu::cli::main_with(registry())
}
