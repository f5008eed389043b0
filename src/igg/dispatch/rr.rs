//! RR (paper 000 eq. 25): round robin over the Grid's clusters.

use super::{rotation, Dispatch, DispatchAsk};

/// Round robin: each request starts one cluster further.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobin {
    next: usize,
}

impl Dispatch for RoundRobin {
    fn name(&self) -> String {
        "rr".into()
    }

    fn order(&mut self, ask: &DispatchAsk<'_>) -> Vec<usize> {
        let n = ask.clusters;
        if n == 0 {
            return Vec::new();
        }
        let first = self.next % n;
        self.next = (first + 1) % n;
        rotation(first, n)
    }
}
