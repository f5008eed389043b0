//! Pure gateway logic: how an IGG orders its clusters when placing an external request.
//! Dispatch policies, the free-slot store and peering grow here.

use crate::topology::DispatchName;

/// The IGG's placement policy with its state.
#[derive(Clone, Debug)]
pub struct Dispatcher {
    policy: DispatchName,
    next: usize,
}

impl Dispatcher {
    /// A dispatcher running `policy`.
    pub fn new(policy: DispatchName) -> Dispatcher {
        Dispatcher { policy, next: 0 }
    }

    /// The order in which to try the Grid's `clusters` clusters for the next request: the
    /// first entry is the policy's choice, the rest are fallbacks if it refuses.
    pub fn order(&mut self, clusters: usize) -> Vec<usize> {
        if clusters == 0 {
            return Vec::new();
        }
        match self.policy {
            DispatchName::RoundRobin => {
                let first = self.next % clusters;
                self.next = (first + 1) % clusters;
                (0..clusters).map(|i| (first + i) % clusters).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_rotates_the_first_choice() {
        let mut d = Dispatcher::new(DispatchName::RoundRobin);
        assert_eq!(d.order(3), vec![0, 1, 2]);
        assert_eq!(d.order(3), vec![1, 2, 0]);
        assert_eq!(d.order(3), vec![2, 0, 1]);
        assert_eq!(d.order(3), vec![0, 1, 2]);
        assert!(d.order(0).is_empty());
    }
}
