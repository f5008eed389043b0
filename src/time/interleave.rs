//! Interleaving exploration: same-time deliveries in a seeded, perturbed order.
//!
//! In virtual mode everything due at one emulated instant runs in one order: FIFO by the time
//! it was scheduled. Real concurrency is not so tidy: two actors sending to a third at the
//! same moment race, a timer and a message due together race, a spawned task may start
//! before or after the messages around it. A run with interleaving on holds every delivery
//! back in an [`Interleaver`] and hands them out one at a time, each after the federation has
//! settled from the last, in an order chosen as PCT does (Burckhardt et al., "A randomized
//! scheduler with probabilistic guarantees of finding bugs", ASPLOS 2010):
//!
//! * each **lane** is a thread of PCT: the messages from one actor to another (a mailbox pair
//!   is FIFO under any real scheduler, so a lane keeps its order) or one spawned task;
//! * each lane gets a random priority when first seen; the highest-priority lane with
//!   something queued goes next;
//! * after serving a lane, with probability 1 / [`CHANGE_ONE_IN`] its priority drops below
//!   every other (a PCT change point), so that the order between two lanes flips over a run
//!   instead of being fixed for its whole length.
//!
//! The order depends on the seed alone, so a schedule is reproduced by its number.

use std::collections::{BTreeSet, HashMap, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What a delivery belongs to: deliveries of one lane keep their order, lanes race.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    /// Messages (and timers) from one actor to another, by trace id.
    Channel {
        /// Sender.
        from: u32,
        /// Receiver.
        to: u32,
    },
    /// One spawned task's start.
    Task(u64),
}

/// After a lane is served, one chance in this many that it drops below every other lane.
pub const CHANGE_ONE_IN: u32 = 8;

/// Lanes whose priorities are remembered before those with nothing queued are forgotten (a
/// forgotten lane draws a new priority when it comes back): a run that starts millions of VM
/// actors sees millions of lanes, most never again.
const MAX_REMEMBERED: usize = 1 << 16;

/// Initial priorities are drawn at or above this; demoted lanes get priorities below it,
/// falling, so a demoted lane is below every lane not yet demoted.
const DEMOTED_BELOW: u64 = 1 << 62;

/// A lane's place in the order: higher goes first (ties between equal random values go to
/// the lane seen first).
type Rank = (u64, std::cmp::Reverse<u64>);

/// Queued deliveries of one emulated instant, handed out in a PCT order.
pub struct Interleaver<T> {
    rng: StdRng,
    /// Each lane's priority: (value, first-seen ordinal) — the ordinal makes it total.
    priority: HashMap<Lane, (u64, u64)>,
    /// Lanes seen so far (the ordinal of the next).
    seen: u64,
    /// The priority the next demoted lane gets.
    next_demoted: u64,
    /// Lanes with something queued, each FIFO.
    queued: HashMap<Lane, VecDeque<T>>,
    /// The lanes with something queued by rank, highest last: the next to serve is found
    /// in log time, however many lanes are queued.
    order: BTreeSet<(Rank, Lane)>,
    len: usize,
    /// Remembered lanes at which the next pruning happens: [`MAX_REMEMBERED`], or twice what
    /// the last pruning kept (lanes with something queued are kept; if there are more of
    /// them than the bound, pruning at each new lane would cost a pass per push).
    prune_at: usize,
}

impl<T> Interleaver<T> {
    /// An empty interleaver whose order is drawn from `seed`.
    pub fn new(seed: u64) -> Interleaver<T> {
        Interleaver {
            rng: StdRng::seed_from_u64(seed),
            priority: HashMap::new(),
            seen: 0,
            next_demoted: DEMOTED_BELOW - 1,
            queued: HashMap::new(),
            order: BTreeSet::new(),
            len: 0,
            prune_at: MAX_REMEMBERED,
        }
    }

    /// Queues `item` at the back of `lane`.
    pub fn push(&mut self, lane: Lane, item: T) {
        if !self.priority.contains_key(&lane) {
            if self.priority.len() >= self.prune_at {
                let queued = &self.queued;
                self.priority.retain(|l, _| queued.contains_key(l));
                self.prune_at = MAX_REMEMBERED.max(2 * self.priority.len());
            }
            let value = self.rng.random_range(DEMOTED_BELOW..=u64::MAX);
            self.priority.insert(lane, (value, self.seen));
            self.seen += 1;
        }
        match self.queued.get_mut(&lane) {
            Some(q) => q.push_back(item),
            None => {
                self.queued.insert(lane, VecDeque::from([item]));
                self.order.insert((self.rank(lane), lane));
            }
        }
        self.len += 1;
    }

    /// The oldest item of the highest-priority lane with something queued.
    pub fn pop(&mut self) -> Option<T> {
        self.pop_with_lane().map(|(_, item)| item)
    }

    /// [`Interleaver::pop`], with the lane the item came from.
    pub fn pop_with_lane(&mut self) -> Option<(Lane, T)> {
        let &(_, lane) = self.order.last()?;
        let item = self.take(lane)?;
        if self.priority.contains_key(&lane) && self.rng.random_ratio(1, CHANGE_ONE_IN) {
            let still_queued = self.order.remove(&(self.rank(lane), lane));
            self.priority.insert(lane, (self.next_demoted, 0));
            self.next_demoted = self.next_demoted.saturating_sub(1);
            if still_queued {
                self.order.insert((self.rank(lane), lane));
            }
        }
        Some((lane, item))
    }

    /// The oldest item of `lane`, whatever the priorities say (a replay follows its record);
    /// `None` if nothing is queued there.
    pub fn pop_lane(&mut self, lane: Lane) -> Option<T> {
        self.take(lane)
    }

    /// Takes the oldest item of `lane`.
    fn take(&mut self, lane: Lane) -> Option<T> {
        let queue = self.queued.get_mut(&lane)?;
        let item = queue.pop_front();
        if queue.is_empty() {
            self.queued.remove(&lane);
            self.order.remove(&(self.rank(lane), lane));
            if let Lane::Task(_) = lane {
                // A task starts once: its lane is never seen again.
                self.priority.remove(&lane);
            }
        }
        self.len -= usize::from(item.is_some());
        item
    }

    /// A lane's place in the order (see [`Rank`]).
    fn rank(&self, lane: Lane) -> Rank {
        let (value, ordinal) = self.priority.get(&lane).copied().unwrap_or((0, u64::MAX));
        (value, std::cmp::Reverse(ordinal))
    }

    /// Items queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops everything queued (their closures may hold the run's context).
    pub fn clear(&mut self) {
        self.queued.clear();
        self.order.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chan(from: u32, to: u32) -> Lane {
        Lane::Channel { from, to }
    }

    /// Pushes (lane, item) pairs, then pops everything.
    fn drain(seed: u64, pushes: &[(Lane, u32)]) -> Vec<u32> {
        let mut il = Interleaver::new(seed);
        for &(lane, item) in pushes {
            il.push(lane, item);
        }
        let mut out = Vec::new();
        while let Some(x) = il.pop() {
            out.push(x);
        }
        assert!(il.is_empty());
        out
    }

    #[test]
    fn a_hundred_thousand_lanes_queued_at_once_come_out_in_rank_order() {
        // The next lane is found in log time: with a scan per delivery, this took minutes.
        let mut il = Interleaver::new(5);
        let n = 100_000u32;
        for i in 0..n {
            il.push(chan(i, n), i);
        }
        assert_eq!(il.pop_lane(chan(7, n)), Some(7));
        let mut last = None;
        let mut seen = vec![false; n as usize];
        loop {
            // Each lane is served once (one item each), so the rank served only falls.
            let next = il.order.last().map(|(rank, _)| *rank);
            let Some((lane, item)) = il.pop_with_lane() else {
                break;
            };
            assert_eq!(lane, chan(item, n));
            assert!(!seen[item as usize]);
            seen[item as usize] = true;
            assert!(last.is_none_or(|prev| next < Some(prev)));
            last = next;
        }
        assert_eq!(seen.iter().filter(|s| !**s).count(), 1);
        assert!(il.is_empty());
    }

    #[test]
    fn every_item_comes_out_once_and_each_lane_keeps_its_order() {
        let lanes = [chan(1, 2), chan(3, 2), chan(2, 2), Lane::Task(7)];
        for seed in 0..200 {
            let pushes: Vec<(Lane, u32)> = (0..40)
                .map(|i| (lanes[(i * 7 + seed as usize) % 4], i as u32))
                .collect();
            let out = drain(seed, &pushes);
            let mut sorted = out.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..40).collect::<Vec<_>>());
            for lane in lanes {
                let want: Vec<u32> = pushes.iter().filter(|p| p.0 == lane).map(|p| p.1).collect();
                let got: Vec<u32> = out.iter().copied().filter(|x| want.contains(x)).collect();
                assert_eq!(got, want, "seed {seed}: lane {lane:?} out of order");
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_order_and_seeds_explore_both_orders_of_a_race() {
        let pushes = [(chan(1, 3), 1), (chan(2, 3), 2)];
        assert_eq!(drain(42, &pushes), drain(42, &pushes));
        let first_wins = (0..1000).filter(|&s| drain(s, &pushes) == [1, 2]).count();
        // Two lanes with independent random priorities: each order about half the time.
        assert!((400..=600).contains(&first_wins), "{first_wins} of 1000");
    }

    #[test]
    fn each_pop_serves_the_highest_priority_lane_with_something_queued() {
        // The rule checked at every step against the priorities as they stand, over random
        // pushes and pops: the lane served is the one a scan over the queued lanes picks.
        for seed in 0..100u64 {
            let mut il = Interleaver::new(seed);
            let mut draw = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            for step in 0..400u32 {
                draw ^= draw << 13;
                draw ^= draw >> 7;
                draw ^= draw << 17;
                if draw % 3 != 0 || il.is_empty() {
                    let lane = if draw % 11 == 0 {
                        Lane::Task(u64::from(step))
                    } else {
                        chan((draw >> 8) as u32 % 5, (draw >> 16) as u32 % 3)
                    };
                    il.push(lane, (lane, step));
                } else {
                    let best =
                        il.queued.keys().copied().max_by_key(|l| {
                            (il.priority[l].0, std::cmp::Reverse(il.priority[l].1))
                        });
                    let (lane, _) = il.pop().expect("not empty");
                    assert_eq!(Some(lane), best, "seed {seed} step {step}");
                }
            }
        }
    }

    #[test]
    fn change_points_come_about_once_in_change_one_in_pops() {
        // Two lanes always queued: the served lane changes only when it is demoted, so the
        // mean run of one lane is about CHANGE_ONE_IN.
        let mut runs = Vec::new();
        for seed in 0..300 {
            let pushes: Vec<(Lane, u32)> = (0..200).map(|i| (chan(i % 2, 9), i)).collect();
            let out = drain(seed, &pushes);
            let mut run = 1;
            for w in out[..100].windows(2) {
                if w[0] % 2 == w[1] % 2 {
                    run += 1;
                } else {
                    runs.push(run);
                    run = 1;
                }
            }
        }
        let mean = runs.iter().sum::<u32>() as f64 / runs.len() as f64;
        let want = f64::from(CHANGE_ONE_IN);
        assert!(
            (want * 0.75..=want * 1.25).contains(&mean),
            "mean run {mean}"
        );
    }

    #[test]
    fn demoted_lanes_fall_below_new_ones() {
        let mut il = Interleaver::new(5);
        il.push(chan(1, 1), 0u32);
        // Serve lane (1,1) until a change point demotes it.
        let mut demoted = false;
        for i in 1..1000 {
            il.push(chan(1, 1), i);
            il.pop();
            if il.priority[&chan(1, 1)].0 < DEMOTED_BELOW {
                demoted = true;
                break;
            }
        }
        assert!(demoted);
        il.push(chan(2, 1), 5000);
        assert_eq!(
            il.pop(),
            Some(5000),
            "a lane never demoted outranks a demoted one"
        );
    }

    #[test]
    fn lanes_with_nothing_queued_are_forgotten_past_a_bound() {
        let mut il = Interleaver::new(3);
        il.push(chan(0, 0), 0u32);
        for i in 1..(3 * MAX_REMEMBERED as u32) {
            il.push(chan(i, i), i);
            il.pop();
        }
        assert!(il.priority.len() <= MAX_REMEMBERED);
        // Every lane with something queued keeps its priority.
        assert!(il.queued.iter().all(|(l, _)| il.priority.contains_key(l)));
    }

    #[test]
    fn many_lanes_queued_at_once_are_pruned_rarely_and_keep_their_priorities() {
        let mut il = Interleaver::new(4);
        let n = MAX_REMEMBERED as u32 + 1000;
        for i in 0..n {
            il.push(chan(i, 0), i);
        }
        // Every lane has something queued: none could be forgotten, and the bound moved on
        // (to twice what was kept) rather than pruning again at each push.
        assert_eq!(il.priority.len(), n as usize);
        assert_eq!(il.prune_at, 2 * MAX_REMEMBERED);
        assert_eq!(il.len(), n as usize);
    }

    #[test]
    fn task_lanes_are_forgotten_once_started() {
        let mut il = Interleaver::new(1);
        for t in 0..1000 {
            il.push(Lane::Task(t), t);
            il.pop();
        }
        assert!(il.priority.len() <= 1, "{} lanes kept", il.priority.len());
    }
}
