//! Least-load: the cluster with the smallest share of its cores taken.

use super::{rotation, Dispatch, DispatchAsk};

/// The least loaded cluster first.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeastLoad;

impl Dispatch for LeastLoad {
    fn name(&self) -> String {
        "least-load".into()
    }

    fn order(&mut self, ask: &DispatchAsk<'_>) -> Vec<usize> {
        let (busy, cores) = (&ask.loads.busy, &ask.loads.cores);
        let n = ask.clusters;
        let share = |j: usize| {
            busy.get(j).copied().unwrap_or(0) as f64
                / cores.get(j).copied().unwrap_or(1).max(1) as f64
        };
        let first = (0..n)
            .min_by(|&a, &b| share(a).total_cmp(&share(b)))
            .unwrap_or(0);
        rotation(first, n)
    }
}
