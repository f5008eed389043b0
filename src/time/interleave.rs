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

use std::collections::{HashMap, VecDeque};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What a delivery belongs to: deliveries of one lane keep their order, lanes race.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
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

/// Queued deliveries of one emulated instant, handed out in a PCT order.
pub struct Interleaver<T> {
    rng: StdRng,
    /// Each lane's priority: (value, first-seen ordinal) — the ordinal makes it total.
    priority: HashMap<Lane, (u64, u64)>,
    /// Lanes seen so far (the ordinal of the next).
    seen: u64,
    /// The priority the next demoted lane gets.
    next_demoted: u64,
    /// Lanes with something queued, each FIFO (order of this list is irrelevant).
    queued: Vec<(Lane, VecDeque<T>)>,
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
            queued: Vec::new(),
            len: 0,
            prune_at: MAX_REMEMBERED,
        }
    }

    /// Queues `item` at the back of `lane`.
    pub fn push(&mut self, lane: Lane, item: T) {
        if !self.priority.contains_key(&lane) {
            if self.priority.len() >= self.prune_at {
                let queued: std::collections::HashSet<Lane> =
                    self.queued.iter().map(|(l, _)| *l).collect();
                self.priority.retain(|l, _| queued.contains(l));
                self.prune_at = MAX_REMEMBERED.max(2 * self.priority.len());
            }
            let value = self.rng.random_range(DEMOTED_BELOW..=u64::MAX);
            self.priority.insert(lane, (value, self.seen));
            self.seen += 1;
        }
        match self.queued.iter_mut().find(|(l, _)| *l == lane) {
            Some((_, q)) => q.push_back(item),
            None => self.queued.push((lane, VecDeque::from([item]))),
        }
        self.len += 1;
    }

    /// The oldest item of the highest-priority lane with something queued.
    pub fn pop(&mut self) -> Option<T> {
        self.pop_with_lane().map(|(_, item)| item)
    }

    /// [`Interleaver::pop`], with the lane the item came from.
    pub fn pop_with_lane(&mut self) -> Option<(Lane, T)> {
        let i = (0..self.queued.len()).max_by_key(|&i| self.rank(self.queued[i].0))?;
        let lane = self.queued[i].0;
        let item = self.take(i)?;
        if self.priority.contains_key(&lane) && self.rng.random_ratio(1, CHANGE_ONE_IN) {
            self.priority.insert(lane, (self.next_demoted, 0));
            self.next_demoted = self.next_demoted.saturating_sub(1);
        }
        Some((lane, item))
    }

    /// The oldest item of `lane`, whatever the priorities say (a replay follows its record);
    /// `None` if nothing is queued there.
    pub fn pop_lane(&mut self, lane: Lane) -> Option<T> {
        let i = self.queued.iter().position(|(l, _)| *l == lane)?;
        self.take(i)
    }

    /// Takes the oldest item of the `i`-th queued lane.
    fn take(&mut self, i: usize) -> Option<T> {
        let lane = self.queued[i].0;
        let item = self.queued[i].1.pop_front();
        if self.queued[i].1.is_empty() {
            self.queued.swap_remove(i);
            if let Lane::Task(_) = lane {
                // A task starts once: its lane is never seen again.
                self.priority.remove(&lane);
            }
        }
        self.len -= usize::from(item.is_some());
        item
    }

    /// A lane's place in the order: higher goes first (ties between equal random values go
    /// to the lane seen first).
    fn rank(&self, lane: Lane) -> (u64, std::cmp::Reverse<u64>) {
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
                        il.queued.iter().map(|(l, _)| *l).max_by_key(|l| {
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
