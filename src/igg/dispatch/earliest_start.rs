//! Earliest-start: the cluster whose LRMS offers the earliest start for the request (from
//! its published slots, or asked).

use super::{rotation, Dispatch, DispatchAsk};

/// The cluster offering the earliest start first.
#[derive(Clone, Copy, Debug, Default)]
pub struct EarliestStart;

impl Dispatch for EarliestStart {
    fn name(&self) -> String {
        "earliest-start".into()
    }

    fn order(&mut self, ask: &DispatchAsk<'_>) -> Vec<usize> {
        let n = ask.clusters;
        let first = (0..n)
            .min_by_key(|&j| ask.starts.get(j).copied().flatten().unwrap_or(u64::MAX))
            .unwrap_or(0);
        rotation(first, n)
    }

    fn wants_starts(&self) -> bool {
        true
    }
}
