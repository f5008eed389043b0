//! The availability profile of a cluster (paper 004 §4, after Mu'alem & Feitelson): which
//! cores and memory of each host are taken, when. Reservations are kept per host, so
//! placement is host-level: a lease's VMs may span hosts, and no host ever exceeds its cores
//! or memory at any instant — memory only where it is enforced (`lrms.enforce_memory`; the
//! testbed of paper 001 let KVM overcommit it).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::model::{HostSpec, RequestId};
use crate::time::{EmuDuration, EmuTime};

mod hosts;
mod steps;
#[cfg(test)]
pub(crate) mod tests;

use hosts::*;
pub use steps::*;

/// A slot as [`Availability::holds`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    /// Host index.
    pub host: usize,
    /// The lease.
    pub lease: RequestId,
    /// VM index within the lease.
    pub vm: u32,
    /// From.
    pub start: EmuTime,
    /// Until.
    pub end: EmuTime,
    /// Cores.
    pub cores: u32,
    /// Memory, MB.
    pub mem_mb: u64,
}

/// Per host, a span throughout which it was found too full for one more VM of a shape: see
/// [`Availability::place_skipping`]. Only valid for one shape; a span stays true while
/// slots are added (they only fill the host), and is dropped when the host gives capacity
/// back ([`Availability::unblock`], on every removal but of forgotten slots).
///
/// The span of host `h` is `[from[h], until[h])` (µs), `until[h]` 0 where there is none:
/// two plain arrays, so a placement tests each host it passes over with two comparisons and
/// no branch. Most hosts a placement passes over are skipped (paper 000 at 4× load: 2.1 G
/// skips against 107 M hosts looked at).
#[derive(Clone, Debug, Default)]
struct Blocked {
    from: Vec<u64>,
    until: Vec<u64>,
}

/// What one VM of a request needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmShape {
    /// Cores per VM.
    pub cores: u32,
    /// Memory per VM, MB.
    pub mem_mb: u32,
}

/// The future use of every host of a cluster.
#[derive(Clone, Debug)]
pub struct Availability {
    /// Cores and memory per host; memory is `u64::MAX` where it is not enforced.
    capacity: Vec<(u32, u64)>,
    enforce_memory: bool,
    /// Per host, its slots by (start, lease, VM).
    slots: Vec<HostSlots>,
    /// Where each lease's slots are: (start, host, VM).
    owned: BTreeMap<RequestId, BTreeSet<(EmuTime, u16, u32)>>,
    /// Intervals of slots removed or cut since last taken, when tracked (for compression).
    freed: Option<Vec<(EmuTime, EmuTime)>>,
    /// Cluster-wide change in cores used at each instant (a quick necessary check).
    deltas: BTreeMap<EmuTime, i64>,
    /// How many slots end at each instant (the candidate start times).
    ends: BTreeMap<EmuTime, u32>,
    /// Slots that ended by this instant were forgotten without dropping the spans found too
    /// full: a span ending by it may have rested on one of them.
    forgotten: EmuTime,
    /// Per shape (memory left out where it is not enforced), the spans found too full by
    /// earlier placements: a placement skips the hosts they still block, whichever lease
    /// found them.
    blocks: RefCell<Vec<(VmShape, Blocked)>>,
}

impl Availability {
    /// An empty profile for these hosts; with `enforce_memory` false, VMs may overcommit
    /// memory and only cores limit placement.
    pub fn new(hosts: &[HostSpec], enforce_memory: bool) -> Availability {
        Availability {
            capacity: hosts
                .iter()
                .map(|h| {
                    (
                        h.cores,
                        if enforce_memory {
                            h.memory_mb
                        } else {
                            u64::MAX
                        },
                    )
                })
                .collect(),
            enforce_memory,
            slots: vec![HostSlots::default(); hosts.len()],
            owned: BTreeMap::new(),
            freed: None,
            deltas: BTreeMap::new(),
            ends: BTreeMap::new(),
            forgotten: EmuTime::ZERO,
            blocks: RefCell::new(Vec::new()),
        }
    }

    /// Starts recording the interval of every slot removed or cut (see
    /// [`Availability::take_freed`]).
    pub fn track_freed(&mut self) {
        self.freed.get_or_insert_with(Vec::new);
    }

    /// The intervals whose capacity was freed since the last call (a cut slot reports its
    /// whole old interval), ending after `now`; empty when not tracked.
    pub fn take_freed(&mut self, now: EmuTime) -> Vec<(EmuTime, EmuTime)> {
        match &mut self.freed {
            Some(f) => {
                let mut taken = std::mem::take(f);
                taken.retain(|&(_, e)| e > now);
                taken
            }
            None => Vec::new(),
        }
    }

    /// Records `[start, end)` as freed (when tracked).
    pub fn note_freed(&mut self, start: EmuTime, end: EmuTime) {
        if let Some(f) = &mut self.freed {
            f.push((start, end));
        }
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.capacity.len()
    }

    /// Each host's cores and memory (`None` where memory is not enforced).
    pub fn capacities(&self) -> Vec<(u64, Option<u64>)> {
        self.capacity
            .iter()
            .map(|&(c, m)| (u64::from(c), self.enforce_memory.then_some(m)))
            .collect()
    }

    /// Every slot overlapping `[start, end)`: (host, lease, VM, slot start, slot end, cores,
    /// memory).
    pub fn holds(&self, start: EmuTime, end: EmuTime) -> Vec<Held> {
        self.slots
            .iter()
            .enumerate()
            .flat_map(|(h, _)| {
                self.window(h, start, end)
                    .filter(move |s| s.start < end && s.end > start)
                    .map(move |s| Held {
                        host: h,
                        lease: s.lease,
                        vm: s.vm,
                        start: s.start,
                        end: s.end,
                        cores: s.cores,
                        mem_mb: u64::from(s.mem_mb),
                    })
            })
            .collect()
    }

    /// Takes VM `vm` of `lease` on `host` for `[start, end)`.
    pub fn reserve_vm(
        &mut self,
        host: u16,
        lease: RequestId,
        vm: u32,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) {
        if end > start {
            self.insert(usize::from(host), slot_of(lease, vm, shape, start, end));
        }
    }

    /// Host `h`'s slots that may overlap `[start, end)`, by start.
    #[inline]
    fn window(&self, h: usize, start: EmuTime, end: EmuTime) -> impl Iterator<Item = &Slot> {
        self.slots[h].window(start, end)
    }

    /// Adds a slot to host `h`, keeping the indexes right.
    fn insert(&mut self, h: usize, slot: Slot) {
        self.count(slot.start, slot.end, i64::from(slot.cores), 1);
        self.insert_uncounted(h, slot);
    }

    /// [`Availability::insert`] but for counting the new slot in the cluster-wide use
    /// ([`Availability::count`]), which the caller does (a slot it replaces is uncounted
    /// here).
    fn insert_uncounted(&mut self, h: usize, slot: Slot) {
        let key = key_of(&slot);
        // One search finds both an old slot under the same key and where the new one goes
        // (a placement inserts a slot per VM: the search is most of the cost).
        let at = match self.slots[h].find(&key) {
            Ok(i) => {
                // A slot taken again under the same key replaces the old one as a removal
                // would (its use uncounted, its capacity given back), not silently; the new
                // one then goes where the old one was.
                self.remove_key(h, key);
                i
            }
            Err(i) => i,
        };
        self.owned
            .entry(slot.lease)
            .or_default()
            .insert((slot.start, h as u16, slot.vm));
        self.slots[h].insert_at(at, slot);
    }

    /// Removes host `h`'s slot `key`, keeping the indexes right; the host's spans found too
    /// full are stale from now on.
    fn remove_key(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.remove_key_uncounted(h, key)?;
        self.count(slot.start, slot.end, -i64::from(slot.cores), -1);
        Some(slot)
    }

    /// [`Availability::remove_key`] but for the cluster-wide count, which the caller makes.
    fn remove_key_uncounted(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.remove_quietly_uncounted(h, key)?;
        self.unblock(h);
        Some(slot)
    }

    /// Host `h`'s spans found too full are stale: it gave something back.
    fn unblock(&mut self, h: usize) {
        for (_, blocked) in self.blocks.get_mut().iter_mut() {
            if let Some(until) = blocked.until.get_mut(h) {
                *until = 0;
            }
        }
    }

    /// [`Availability::remove_key`] keeping the spans found too full: for a slot that ended
    /// by [`Availability::forgotten`] (a span it held up ends by then too).
    fn remove_quietly(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.remove_quietly_uncounted(h, key)?;
        self.count(slot.start, slot.end, -i64::from(slot.cores), -1);
        Some(slot)
    }

    /// [`Availability::remove_quietly`] but for the cluster-wide count.
    fn remove_quietly_uncounted(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.take_slot(h, key)?;
        if let Some(mine) = self.owned.get_mut(&slot.lease) {
            mine.remove(&(slot.start, h as u16, slot.vm));
            if mine.is_empty() {
                self.owned.remove(&slot.lease);
            }
        }
        Some(slot)
    }

    /// Takes host `h`'s slot `key` off the host, noting where capacity was freed; the
    /// lease's own list and the cluster-wide counts are the caller's.
    fn take_slot(&mut self, h: usize, key: SlotKey) -> Option<Slot> {
        let slot = self.slots[h].remove(&key)?;
        if let Some(f) = &mut self.freed {
            f.push((slot.start, slot.end));
        }
        Some(slot)
    }

    /// Removes `lease`'s slots that start at or after `from`.
    fn remove_owned_from(&mut self, lease: RequestId, from: EmuTime) {
        let Some(mine) = self.owned.get_mut(&lease) else {
            return;
        };
        // Taken off the lease's list at once, then off their hosts.
        let doomed = mine.split_off(&(from, 0, 0));
        if mine.is_empty() {
            self.owned.remove(&lease);
        }
        // Counted by window: a lease's VMs mostly share theirs.
        let mut window: Option<((EmuTime, EmuTime), i64, i64)> = None;
        for (start, h, vm) in doomed {
            let Some(slot) = self.take_slot(usize::from(h), (start, lease, vm)) else {
                continue;
            };
            self.unblock(usize::from(h));
            let cores = i64::from(slot.cores);
            match &mut window {
                Some((at, used, vms)) if *at == (slot.start, slot.end) => {
                    *used += cores;
                    *vms += 1;
                }
                _ => {
                    if let Some(((start, end), used, vms)) = window {
                        self.count(start, end, -used, -vms);
                    }
                    window = Some(((slot.start, slot.end), cores, 1));
                }
            }
        }
        if let Some(((start, end), used, vms)) = window {
            self.count(start, end, -used, -vms);
        }
    }

    /// Counts `slots` slots over `[start, end)` using `cores` cores in all in the
    /// cluster-wide indexes: added, or removed when both are negative.
    fn count(&mut self, start: EmuTime, end: EmuTime, cores: i64, slots: i64) {
        let (deltas, ends) = (&mut self.deltas, &mut self.ends);
        for (t, d) in [(start, cores), (end, -cores)] {
            let e = deltas.entry(t).or_insert(0);
            *e += d;
            if *e == 0 {
                deltas.remove(&t);
            }
        }
        let n = ends.entry(end).or_insert(0);
        if slots > 0 {
            *n += slots as u32;
        } else {
            *n = n.saturating_sub(slots.unsigned_abs() as u32);
            if *n == 0 {
                ends.remove(&end);
            }
        }
    }

    /// Takes VM `i` of `lease` on `hosts[i]` for `[start, end)`.
    pub fn reserve(
        &mut self,
        lease: RequestId,
        hosts: &[u16],
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) {
        if end <= start {
            return;
        }
        for (i, &h) in hosts.iter().enumerate() {
            let slot = slot_of(lease, i as u32, shape, start, end);
            self.insert_uncounted(usize::from(h), slot);
        }
        // The lease's VMs share their window: counted together.
        let vms = hosts.len() as i64;
        self.count(start, end, i64::from(shape.cores) * vms, vms);
    }

    /// Frees everything `lease` holds or will hold.
    pub fn release(&mut self, lease: RequestId) {
        self.remove_owned_from(lease, EmuTime::ZERO);
    }

    /// Frees `lease`'s slots that start at or after `from` (a reservation not yet begun),
    /// keeping earlier ones (VMs still being vacated).
    pub fn release_from(&mut self, lease: RequestId, from: EmuTime) {
        self.remove_owned_from(lease, from);
    }

    /// Makes `lease`'s VM `vm` slot that began at `start` end at `end` instead — earlier
    /// when a VM is stopped, possibly later when vacating it (a suspension) outlasts the plan.
    pub fn end_vm(&mut self, lease: RequestId, vm: u32, start: EmuTime, end: EmuTime) {
        let host = self.owned.get(&lease).and_then(|mine| {
            mine.range((start, 0, 0)..=(start, u16::MAX, u32::MAX))
                .find(|&&(_, _, v)| v == vm)
                .map(|&(_, h, _)| usize::from(h))
        });
        let Some(h) = host else { return };
        let Some(old) = self.remove_key(h, (start, lease, vm)) else {
            return;
        };
        if end > old.start {
            self.insert(h, Slot { end, ..old });
        }
    }

    /// Forgets everything that ended by `now` (keeps the profile small).
    pub fn forget_before(&mut self, now: EmuTime) {
        self.forgotten = self.forgotten.max(now);
        if self.ends.keys().next().is_none_or(|&first| first > now) {
            // No slot has ended yet: nothing to look for on every host.
            return;
        }
        for h in 0..self.slots.len() {
            // Only slots that began before `now` can have ended by it.
            let ended: Vec<SlotKey> = self.slots[h]
                .starting_before(now)
                .iter()
                .filter(|s| s.end <= now)
                .map(key_of)
                .collect();
            for k in ended {
                self.remove_quietly(h, k);
            }
        }
    }

    /// How many VMs of `shape` host `h` can hold throughout `[start, end)`.
    pub fn room(&self, h: usize, shape: VmShape, start: EmuTime, end: EmuTime) -> u64 {
        self.room_and_block(h, shape, start, end).0
    }

    /// [`Availability::room`], and a span `[from, until)` meeting the window throughout
    /// which host `h` is too full for one more VM of `shape` — the one lasting longest
    /// (`None` if there is none). Any window meeting that span has no room on `h`: what lets
    /// a search over start times skip the host.
    fn room_and_block(
        &self,
        h: usize,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) -> (u64, Option<(EmuTime, EmuTime)>) {
        let (cores, mem) = self.capacity[h];
        if shape.cores > cores || u64::from(shape.mem_mb) > mem {
            return (0, None);
        }
        // Use above these leaves no room for one more VM.
        let full = (
            u64::from(cores - shape.cores),
            mem - u64::from(shape.mem_mb),
        );
        // Use only rises at a slot's start, and the window yields slots by start: sweep them
        // in order, dropping the slots that ended by each rise (ends before starts at the same
        // instant), and keep the peak. The slots alive at once are few (each takes a core), so
        // they stay in a small array; a host with more falls back to sorting all events.
        const INLINE: usize = 32;
        let mut alive = [(EmuTime::ZERO, 0u64, 0u64); INLINE];
        let mut n_alive = 0;
        let (mut c, mut m, mut peak) = (0u64, 0u64, (0u64, 0u64));
        let mut block: Option<(EmuTime, EmuTime)> = None;
        for s in self
            .window(h, start, end)
            .filter(|s| s.start < end && s.end > start)
        {
            let rise = s.start.max(start);
            let mut i = 0;
            while i < n_alive {
                if alive[i].0 <= rise {
                    c -= alive[i].1;
                    m -= alive[i].2;
                    n_alive -= 1;
                    alive[i] = alive[n_alive];
                } else {
                    i += 1;
                }
            }
            if n_alive == INLINE {
                return self.room_by_sorting(h, shape, start, end);
            }
            alive[n_alive] = (s.end, u64::from(s.cores), u64::from(s.mem_mb));
            n_alive += 1;
            c += u64::from(s.cores);
            m += u64::from(s.mem_mb);
            peak = (peak.0.max(c), peak.1.max(m));
            if c > full.0 || m > full.1 {
                // Too full from this rise until the first alive slot ends (slots starting
                // later only add).
                let until = alive[..n_alive].iter().map(|a| a.0).min().unwrap_or(rise);
                if block.is_none_or(|(_, u)| until > u) {
                    block = Some((rise, until));
                }
            }
        }
        (Self::vms_in(cores, mem, peak, shape), block)
    }

    /// [`Availability::room_and_block`] by sorting every start and end in the window (for a
    /// host with many slots alive at once).
    fn room_by_sorting(
        &self,
        h: usize,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) -> (u64, Option<(EmuTime, EmuTime)>) {
        let (cores, mem) = self.capacity[h];
        let full = (
            u64::from(cores - shape.cores),
            mem - u64::from(shape.mem_mb),
        );
        let mut events: Vec<(EmuTime, bool, u64, u64)> = Vec::new();
        for s in self
            .window(h, start, end)
            .filter(|s| s.start < end && s.end > start)
        {
            events.push((
                s.start.max(start),
                true,
                u64::from(s.cores),
                u64::from(s.mem_mb),
            ));
            if s.end < end {
                events.push((s.end, false, u64::from(s.cores), u64::from(s.mem_mb)));
            }
        }
        events.sort_unstable_by_key(|e| (e.0, e.1));
        let (mut c, mut m, mut peak) = (0u64, 0u64, (0u64, 0u64));
        let mut block = None;
        for (t, rise, dc, dm) in events {
            if rise {
                c += dc;
                m += dm;
                peak = (peak.0.max(c), peak.1.max(m));
                if c > full.0 || m > full.1 {
                    // The instant itself, at least.
                    block = Some((t, t + EmuDuration::from_micros(1)));
                }
            } else {
                c -= dc;
                m -= dm;
            }
        }
        (Self::vms_in(cores, mem, peak, shape), block)
    }

    /// How many VMs of `shape` fit beside a peak use of `peak` (cores, MB) on a host of
    /// `cores` and `mem`.
    fn vms_in(cores: u32, mem: u64, peak: (u64, u64), shape: VmShape) -> u64 {
        let free_c = u64::from(cores).saturating_sub(peak.0);
        let free_m = mem.saturating_sub(peak.1);
        (free_c / u64::from(shape.cores.max(1))).min(free_m / u64::from(shape.mem_mb.max(1)))
    }

    /// First-fit placement of `vms` VMs of `shape` for the whole of `[start, end)`. Hosts
    /// that earlier placements of the shape found too full somewhere in the window, and that
    /// gave nothing back since, are skipped (they have no room).
    pub fn place(
        &self,
        vms: u32,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) -> Option<Vec<u16>> {
        let key = VmShape {
            cores: shape.cores,
            mem_mb: if self.enforce_memory { shape.mem_mb } else { 0 },
        };
        let mut blocks = self.blocks.borrow_mut();
        let i = match blocks.iter().position(|(s, _)| *s == key) {
            Some(i) => i,
            None => {
                blocks.push((key, Blocked::default()));
                blocks.len() - 1
            }
        };
        self.place_skipping(vms, shape, start, end, &mut blocks[i].1)
    }

    /// [`Availability::place`] with the spans found too full in `blocked` (for `shape`):
    /// hosts it knows to be too full somewhere in this window are skipped, and what the
    /// hosts looked at show is added to it.
    fn place_skipping(
        &self,
        vms: u32,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
        blocked: &mut Blocked,
    ) -> Option<Vec<u16>> {
        let n = self.capacity.len();
        if blocked.until.len() != n {
            *blocked = Blocked {
                from: vec![0; n],
                until: vec![0; n],
            };
        }
        // A span blocks a window it overlaps, unless it may rest on a forgotten slot (it
        // ends by `forgotten`). Ending after both `start` and `forgotten` is ending after
        // the later of them.
        let (lo, hi) = (start.max(self.forgotten).as_micros(), end.as_micros());
        let mut hosts = Vec::with_capacity(vms as usize);
        for h0 in (0..n).step_by(64) {
            let h1 = (h0 + 64).min(n);
            let spans = blocked.from[h0..h1].iter().zip(&blocked.until[h0..h1]);
            // Bit k: host h0 + k is not known to be too full.
            let mut open = 0u64;
            for (k, (&from, &until)) in spans.enumerate() {
                let skip = (lo < until) & (from < hi);
                open |= u64::from(!skip) << k;
            }
            while open != 0 {
                let h = h0 + open.trailing_zeros() as usize;
                open &= open - 1;
                let (room, block) = self.room_and_block(h, shape, start, end);
                if let Some((from, until)) = block {
                    blocked.from[h] = from.as_micros();
                    blocked.until[h] = until.as_micros();
                }
                let take = room.min(u64::from(vms) - hosts.len() as u64);
                hosts.extend(std::iter::repeat_n(h as u16, take as usize));
                if hosts.len() == vms as usize {
                    return Some(hosts);
                }
            }
        }
        None
    }

    /// How many VMs of `shape` the empty cluster holds.
    pub fn capacity_for(&self, shape: VmShape) -> u64 {
        self.capacity
            .iter()
            .map(|&(c, m)| crate::model::vms_fitting(c, m, shape.cores, shape.mem_mb))
            .sum()
    }

    /// Whether the empty cluster could hold `vms` VMs of `shape`.
    pub fn could_ever_fit(&self, vms: u32, shape: VmShape) -> bool {
        self.capacity_for(shape) >= u64::from(vms)
    }

    /// The earliest start at or after `not_before` at which `vms` VMs of `shape` fit for
    /// `length`, with a first-fit placement. Availability only grows when a slot ends, so the
    /// candidates are `not_before` and the slot ends after it.
    pub fn earliest(
        &self,
        not_before: EmuTime,
        length: EmuDuration,
        vms: u32,
        shape: VmShape,
    ) -> Option<(EmuTime, Vec<u16>)> {
        if !self.could_ever_fit(vms, shape) {
            return None;
        }
        let mut candidates: Vec<EmuTime> = self
            .slots
            .iter()
            .flat_map(|host| host.values())
            .map(|s| s.end)
            .filter(|&e| e > not_before)
            .collect();
        candidates.push(not_before);
        candidates.sort_unstable();
        candidates.dedup();
        candidates.into_iter().find_map(|t| {
            self.place(vms, shape, t, t + length)
                .map(|hosts| (t, hosts))
        })
    }

    /// The instants at which a reservation could start, at or after `not_before`: it, and
    /// every slot end after it (availability only grows when a slot ends), ascending.
    pub fn start_candidates(&self, not_before: EmuTime) -> impl Iterator<Item = EmuTime> + '_ {
        use std::ops::Bound::{Excluded, Unbounded};
        std::iter::once(not_before).chain(
            self.ends
                .range((Excluded(not_before), Unbounded))
                .map(|(t, _)| *t),
        )
    }

    /// The slot ends in `[from, to)`, ascending.
    pub fn ends_in(&self, from: EmuTime, to: EmuTime) -> impl Iterator<Item = EmuTime> + '_ {
        self.ends.range(from..to.max(from)).map(|(t, _)| *t)
    }

    /// Total cores of the cluster.
    pub fn total_cores(&self) -> u64 {
        self.capacity.iter().map(|&(c, _)| u64::from(c)).sum()
    }

    /// The cluster-wide cores used over time, for quick rejection of start candidates.
    pub fn usage_steps(&self) -> UsageSteps {
        let mut used = 0i64;
        UsageSteps(
            self.deltas
                .iter()
                .map(|(t, d)| {
                    used += d;
                    (*t, used)
                })
                .collect(),
        )
    }

    /// Cores in use at instant `t`.
    pub fn cores_used_at(&self, t: EmuTime) -> u64 {
        let just_after = t + EmuDuration::from_micros(1);
        (0..self.slots.len())
            .flat_map(|h| self.window(h, t, just_after))
            .filter(|s| s.start <= t && s.end > t)
            .map(|s| u64::from(s.cores))
            .sum()
    }

    /// Every lease with a slot overlapping `[start, end)`, in id order.
    pub fn leases_overlapping(&self, start: EmuTime, end: EmuTime) -> Vec<RequestId> {
        let mut ids: Vec<RequestId> = (0..self.slots.len())
            .flat_map(|h| self.window(h, start, end))
            .filter(|s| s.start < end && s.end > start)
            .map(|s| s.lease)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Checks that no host is over its cores or memory at any instant (for tests).
    pub fn within_capacity(&self) -> bool {
        self.slots.iter().enumerate().all(|(h, slots)| {
            let (cores, mem) = self.capacity[h];
            slots.values().all(|p| {
                let (c, m) = slots
                    .values()
                    .filter(|s| s.start <= p.start && s.end > p.start)
                    .fold((0u64, 0u64), |(c, m), s| {
                        (c + u64::from(s.cores), m + u64::from(s.mem_mb))
                    });
                c <= u64::from(cores) && (!self.enforce_memory || m <= mem)
            })
        })
    }
}
