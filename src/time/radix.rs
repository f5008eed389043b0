//! The clock's event queue: a priority queue on `(due, seq)` that pops exactly what a binary
//! heap on `(due, seq)` would, fast when keys are monotone.
//!
//! Emulated time never goes back, so nearly every key pushed is at or after the key last
//! popped (`last`). A *radix heap* exploits that: keys equal to `last` wait in a FIFO, and
//! the others wait in buckets by how they differ from `last`. Pushing is a `Vec::push`;
//! popping takes from the FIFO and, when it is empty, redistributes the first non-empty bucket
//! (its least key becomes `last`) into the FIFO and lower buckets.
//!
//! The buckets go by base-256 digits rather than bits: bucket `(d, v)` holds the keys whose
//! highest digit differing from `last` is digit `d`, with value `v` there. Buckets in `(d, v)`
//! order hold ever larger keys, and a redistribution moves every key at least one digit
//! down, so an entry moves at most 8 times in its life — two or three times for the clock's
//! usual spread of delays, where one bucket per bit moved it about ten times (half the
//! queue's instructions). A summary word marks which words of the 2 048-bit bucket map are
//! not zero, so the first non-empty bucket takes two bit scans. When bucket `(d, v)` is
//! redistributed, `last` becomes one of its keys; the later buckets `(d, w)`, `w > v`, stay
//! right, since their keys still differ from the new `last` first in digit `d`, with value
//! `w`, and so do the buckets of higher digits.
//!
//! Ties: equal keys pop in `seq` order (FIFO), as the clock promises. Sequence numbers only
//! grow, so entries pushed straight into the FIFO come after those already there, and entries
//! moved into it by a redistribution are sorted first.
//!
//! A key *below* `last` cannot enter the buckets: an event scheduled in the past, or earlier
//! than everything pending after a look at the head moved `last` up to it. It waits in a small
//! binary heap that pops before the buckets, which keeps the order exact without assuming
//! monotonicity.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// One queued item with its key.
struct Entry<T> {
    due: u64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.due, self.seq).cmp(&(other.due, other.seq))
    }
}

/// A min-priority queue on `(due, seq)`; see the module documentation.
pub(crate) struct RadixHeap<T> {
    /// The key last popped or looked at (the least key redistributed): every entry in the
    /// buckets has a key at or after it.
    last: u64,
    /// Keys equal to `last`, in `seq` order.
    equal: VecDeque<Entry<T>>,
    /// `buckets[256 d + v]` holds keys whose highest base-256 digit differing from `last`
    /// is digit `d`, with value `v` there (see [`bucket`]).
    buckets: Vec<Vec<Entry<T>>>,
    /// Bit `i % 64` of word `i / 64` is set when `buckets[i]` is not empty.
    filled: [u64; BUCKETS / 64],
    /// Bit `w` is set when word `w` of `filled` is not zero.
    words: u64,
    /// Keys pushed below `last`: they pop before every bucket.
    late: BinaryHeap<Reverse<Entry<T>>>,
    /// Entries in `equal` and `buckets`.
    len: usize,
}

impl<T> Default for RadixHeap<T> {
    fn default() -> Self {
        RadixHeap {
            last: 0,
            equal: VecDeque::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            filled: [0; BUCKETS / 64],
            words: 0,
            late: BinaryHeap::new(),
            len: 0,
        }
    }
}

impl<T> RadixHeap<T> {
    /// How many entries are queued.
    pub(crate) fn len(&self) -> usize {
        self.len + self.late.len()
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues `item` under `(due, seq)`. `seq` must be greater than every `seq` pushed before
    /// (the clock's sequence counter), which is what makes ties FIFO.
    pub(crate) fn push(&mut self, due: u64, seq: u64, item: T) {
        let entry = Entry { due, seq, item };
        if due < self.last {
            self.late.push(Reverse(entry));
        } else if due == self.last {
            self.equal.push_back(entry);
            self.len += 1;
        } else {
            let b = bucket(self.last, due);
            self.buckets[b].push(entry);
            self.fill(b);
            self.len += 1;
        }
    }

    /// The item with the least key queued.
    pub(crate) fn peek(&mut self) -> Option<&T> {
        if !self.late.is_empty() {
            return self.late.peek().map(|Reverse(e)| &e.item);
        }
        self.refill();
        self.equal.front().map(|e| &e.item)
    }

    /// The least key queued.
    pub(crate) fn peek_due(&mut self) -> Option<u64> {
        if let Some(Reverse(e)) = self.late.peek() {
            return Some(e.due);
        }
        self.refill();
        self.equal.front().map(|e| e.due)
    }

    /// Removes and returns the entry with the least `(due, seq)` if its `due` is at most
    /// `limit`.
    pub(crate) fn pop_due_by(&mut self, limit: u64) -> Option<(u64, T)> {
        if let Some(Reverse(e)) = self.late.peek() {
            if e.due > limit {
                return None;
            }
            let Reverse(e) = self.late.pop()?;
            return Some((e.due, e.item));
        }
        self.refill();
        if self.equal.front()?.due > limit {
            return None;
        }
        let e = self.equal.pop_front()?;
        self.len -= 1;
        Some((e.due, e.item))
    }

    /// Marks bucket `b` non-empty.
    #[inline]
    fn fill(&mut self, b: usize) {
        self.filled[b / 64] |= 1 << (b % 64);
        self.words |= 1 << (b / 64);
    }

    /// The first non-empty bucket, if any.
    #[inline]
    fn first_filled(&self) -> Option<usize> {
        if self.words == 0 {
            return None;
        }
        let w = self.words.trailing_zeros() as usize;
        Some(w * 64 + self.filled[w].trailing_zeros() as usize)
    }

    /// Makes `equal` hold the least keys of the buckets, if it is empty and they are not.
    fn refill(&mut self) {
        if !self.equal.is_empty() {
            return;
        }
        let Some(i) = self.first_filled() else { return };
        self.filled[i / 64] &= !(1 << (i % 64));
        if self.filled[i / 64] == 0 {
            self.words &= !(1 << (i / 64));
        }
        let mut moving = std::mem::take(&mut self.buckets[i]);
        // Invariant: bucket i is non-empty, so it has a least key.
        let least = moving.iter().map(|e| e.due).min().unwrap_or(self.last);
        self.last = least;
        for e in moving.drain(..) {
            if e.due == least {
                self.equal.push_back(e);
            } else {
                // Keys in bucket i share every digit from its digit up with `least`, so
                // they land in a bucket of a lower digit.
                let b = bucket(least, e.due);
                self.buckets[b].push(e);
                self.fill(b);
            }
        }
        // Keep the capacity for the next time this bucket fills, up to a bound: with 2 048
        // buckets, keeping every peak would hold memory long after the events are gone.
        if moving.capacity() <= KEPT_CAPACITY {
            self.buckets[i] = moving;
        }
        // `equal` was empty: it now holds exactly the entries at `least`, in bucket order.
        self.equal.make_contiguous().sort_unstable_by_key(|e| e.seq);
    }
}

/// The most entries of room an emptied bucket keeps for its next use.
const KEPT_CAPACITY: usize = 1024;

/// Bits per digit of a bucket's position.
const DIGIT_BITS: u32 = 8;
/// Buckets: one per (digit, digit value); 8 digits of 256 values.
const BUCKETS: usize = (64 / DIGIT_BITS as usize) << DIGIT_BITS;
const _: () = assert!(BUCKETS / 64 <= 64 && 64 % DIGIT_BITS == 0);

/// The bucket of `key` (greater than `last`): `256 d + v`, where digit `d` is the highest
/// base-256 digit in which `key` differs from `last` and `v` is `key`'s value there. Buckets
/// in index order hold increasing keys: a key of a higher digit is larger, and within a digit
/// the higher value is.
#[inline]
fn bucket(last: u64, key: u64) -> usize {
    // key > last, so key ^ last != 0 and the highest differing bit is 0..=63.
    let digit = (63 - (key ^ last).leading_zeros()) / DIGIT_BITS;
    let value = (key >> (digit * DIGIT_BITS)) & ((1 << DIGIT_BITS) - 1);
    ((digit as usize) << DIGIT_BITS) | value as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// Push at `last popped + offset` (or below it when `back` is set).
        Push {
            offset: u64,
            back: bool,
        },
        /// Pop everything due by `last popped + offset`.
        PopBy(u64),
        Peek,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            4 => (prop_oneof![0..4u64, 0..1_000u64, 0..u64::MAX / 4], prop::bool::weighted(0.05))
                .prop_map(|(offset, back)| Op::Push { offset, back }),
            2 => prop_oneof![0..4u64, 0..1_000u64, 0..u64::MAX / 4].prop_map(Op::PopBy),
            1 => Just(Op::Peek),
        ];
        prop::collection::vec(op, 0..400)
    }

    proptest! {
        #[test]
        fn pops_what_a_binary_heap_pops(ops in ops()) {
            let mut radix = RadixHeap::default();
            let mut reference = BinaryHeap::new();
            let (mut seq, mut now) = (0u64, 0u64);
            for op in ops {
                match op {
                    Op::Push { offset, back } => {
                        let due = if back { now.saturating_sub(offset % 8) } else {
                            now.saturating_add(offset)
                        };
                        radix.push(due, seq, seq);
                        reference.push(Reverse((due, seq)));
                        seq += 1;
                    }
                    Op::PopBy(offset) => {
                        let limit = now.saturating_add(offset);
                        loop {
                            let want = match reference.peek() {
                                Some(Reverse((d, _))) if *d <= limit => reference.pop(),
                                _ => None,
                            };
                            let got = radix.pop_due_by(limit);
                            prop_assert_eq!(got, want.map(|Reverse((d, s))| (d, s)));
                            match got {
                                Some((d, _)) => now = now.max(d),
                                None => break,
                            }
                        }
                    }
                    Op::Peek => {
                        // The item first: its look at the head refills on its own.
                        let item = reference.peek().map(|Reverse((_, s))| s);
                        prop_assert_eq!(radix.peek(), item);
                        let want = reference.peek().map(|Reverse((d, _))| *d);
                        prop_assert_eq!(radix.peek_due(), want);
                    }
                }
                prop_assert_eq!(radix.len(), reference.len());
            }
            // Drain: the whole order, FIFO ties included.
            while let Some(Reverse((d, s))) = reference.pop() {
                prop_assert_eq!(radix.pop_due_by(u64::MAX), Some((d, s)));
            }
            prop_assert!(radix.is_empty());
        }
    }

    #[test]
    fn equal_keys_pop_in_push_order_across_redistributions() {
        let mut h = RadixHeap::default();
        // Interleave two keys so that both a bucket and the FIFO see ties.
        for seq in 0..100u64 {
            h.push(if seq % 2 == 0 { 7 } else { 1 << 40 }, seq, seq);
        }
        let popped: Vec<u64> =
            std::iter::from_fn(|| h.pop_due_by(u64::MAX).map(|(_, s)| s)).collect();
        let want: Vec<u64> = (0..100).step_by(2).chain((1..100).step_by(2)).collect();
        assert_eq!(popped, want);
    }

    #[test]
    fn a_bucket_emptied_past_the_kept_room_serves_again() {
        // Each round pops `base` (so `last` = base), then queues three thousand keys in
        // bucket (digit 1, value 1) of it and pops them all: the second round reuses the
        // bucket whose room the first gave back.
        let mut h = RadixHeap::default();
        let mut seq = 0u64;
        for base in [0u64, 1 << 16] {
            h.push(base, seq, seq);
            seq += 1;
            assert_eq!(h.pop_due_by(u64::MAX).map(|(d, _)| d), Some(base));
            let mut want = Vec::new();
            for i in 0..3_000u64 {
                let key = base + 256 + (i * 37) % 256;
                h.push(key, seq, seq);
                want.push((key, seq));
                seq += 1;
            }
            want.sort_unstable();
            let got: Vec<(u64, u64)> = std::iter::from_fn(|| h.pop_due_by(u64::MAX)).collect();
            assert_eq!(got, want);
            assert!(h.is_empty());
        }
    }

    #[test]
    fn a_key_below_the_last_popped_pops_first() {
        let mut h = RadixHeap::default();
        h.push(10, 0, 'a');
        h.push(20, 1, 'b');
        assert_eq!(h.pop_due_by(u64::MAX), Some((10, 'a')));
        h.push(5, 2, 'c');
        h.push(10, 3, 'd');
        assert_eq!(h.peek_due(), Some(5));
        assert_eq!(h.pop_due_by(4), None);
        assert_eq!(h.pop_due_by(u64::MAX), Some((5, 'c')));
        assert_eq!(h.pop_due_by(u64::MAX), Some((10, 'd')));
        assert_eq!(h.pop_due_by(u64::MAX), Some((20, 'b')));
        assert_eq!(h.pop_due_by(u64::MAX), None);
    }
}
