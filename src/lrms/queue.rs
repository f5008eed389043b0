//! The LRMS's waiting queue as an index, kept beside its leases: every lease waiting in the
//! backfilling queue, in the order a scheduling pass takes them, with the counts a pass asks
//! for. A pass reads the front of the queue and the counts instead of walking and sorting
//! every lease the cluster holds — a walk that made each event cost as much as the queue is
//! long, and a flooded cluster's run grow with the square of its queue.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::RequestId;
use crate::time::EmuTime;

/// Where a waiting lease stands: (with partitions, Grid leases after local ones; deadline
/// leases first), its deadline (earliest first), its submission order, its id.
pub(super) type Rank = ((u8, u8), EmuTime, u64, RequestId);

/// How a lease is listed in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Listed {
    /// Its place in the queue.
    pub rank: Rank,
    /// Its partition (0 Grid or only, 1 local).
    pub partition: usize,
    /// Its reservation's start, if it holds one.
    pub reserved: Option<EmuTime>,
}

/// The waiting leases in queue order, with how many hold reservations and when those start.
#[derive(Clone, Debug, Default)]
pub(super) struct Queue {
    /// Each waiting lease's reservation start, if it holds one, by rank.
    ranks: BTreeMap<Rank, Option<EmuTime>>,
    /// Waiting leases holding reservations, per partition.
    reserved: [usize; 2],
    /// Their reservations' starts (how many start at each).
    starts: BTreeMap<EmuTime, usize>,
    /// Their submission orders.
    orders: BTreeSet<u64>,
}

impl Queue {
    /// Replaces how a lease is listed: `was` out (if listed), `now` in (if waiting).
    pub(super) fn relist(&mut self, was: Option<Listed>, now: Option<Listed>) {
        if was == now {
            return;
        }
        if let Some(w) = was {
            self.ranks.remove(&w.rank);
            if let Some(start) = w.reserved {
                self.reserved[w.partition] -= 1;
                self.orders.remove(&w.rank.2);
                if let Some(n) = self.starts.get_mut(&start) {
                    *n -= 1;
                    if *n == 0 {
                        self.starts.remove(&start);
                    }
                }
            }
        }
        if let Some(l) = now {
            self.ranks.insert(l.rank, l.reserved);
            if let Some(start) = l.reserved {
                self.reserved[l.partition] += 1;
                self.orders.insert(l.rank.2);
                *self.starts.entry(start).or_default() += 1;
            }
        }
    }

    /// The waiting leases in queue order, each with its reservation's start if it holds one.
    pub(super) fn in_order(&self) -> impl Iterator<Item = (RequestId, Option<EmuTime>)> + '_ {
        self.ranks.iter().map(|(r, start)| (r.3, *start))
    }

    /// Whether at least `n` waiting leases stand before `rank`.
    pub(super) fn at_least_before(&self, rank: &Rank, n: usize) -> bool {
        n == 0 || self.ranks.range(..rank).nth(n - 1).is_some()
    }

    /// Waiting leases holding reservations, per partition.
    pub(super) fn reserved(&self) -> [usize; 2] {
        self.reserved
    }

    /// The latest reservation start of the waiting leases submitted before `order`, when
    /// every waiting lease holding one was (`None`: some later lease holds one; walk them).
    pub(super) fn latest_start_before(&self, order: u64) -> Option<EmuTime> {
        if self.orders.range(order..).next().is_some() {
            return None;
        }
        Some(
            self.starts
                .keys()
                .next_back()
                .copied()
                .unwrap_or(EmuTime::ZERO),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(order: u64, reserved: Option<u64>) -> Listed {
        Listed {
            rank: ((0, 1), EmuTime::NEVER, order, RequestId(order as u32)),
            partition: 0,
            reserved: reserved.map(EmuTime::from_secs),
        }
    }

    #[test]
    fn counts_and_latest_starts_follow_relisting() {
        let mut q = Queue::default();
        q.relist(None, Some(listed(1, Some(50))));
        q.relist(None, Some(listed(2, Some(80))));
        q.relist(None, Some(listed(3, None)));
        let ids = |q: &Queue| q.in_order().map(|(id, _)| id.0).collect::<Vec<_>>();
        assert_eq!(ids(&q), vec![1, 2, 3]);
        assert_eq!(q.reserved(), [2, 0]);
        assert_eq!(q.latest_start_before(3), Some(EmuTime::from_secs(80)));
        // A later lease holds a reservation: the caller must look at each.
        assert_eq!(q.latest_start_before(2), None);
        assert!(q.at_least_before(&listed(3, None).rank, 2));
        assert!(!q.at_least_before(&listed(3, None).rank, 3));
        // Lease 2 starts (leaves the queue), lease 3 is reserved.
        q.relist(Some(listed(2, Some(80))), None);
        q.relist(Some(listed(3, None)), Some(listed(3, Some(60))));
        assert_eq!(q.reserved(), [2, 0]);
        assert_eq!(q.latest_start_before(4), Some(EmuTime::from_secs(60)));
        assert_eq!(ids(&q), vec![1, 3]);
        assert_eq!(
            q.in_order().nth(1),
            Some((RequestId(3), Some(EmuTime::from_secs(60))))
        );
    }
}
