//! One local request's contention with the leases in play (paper 003 §2, eqs. 1–2, Fig. 2),
//! pure: which leases hold the hosts during the requested interval, what preempting each of
//! them would do and cost, and how many of the local request's VMs a set of them would make
//! room for.
//!
//! Room is measured on the real hosts over the real interval, not by counting VMs: a lease
//! that holds a core for only part of the interval frees nothing on its own (in Fig. 2, lease
//! 1 is only a candidate together with reservation 2, which holds the same core for the rest
//! of the interval), and a VM freed on a host too small for the local VM frees nothing at all.
//! Paper 003's eq. 1 (`v(R_j) ≤ Σ v(L_i)`) is the special case where every lease holds its VMs
//! for the whole interval on hosts the local VMs fit; [`Contention::additive`] recognises it
//! (and more) so the policies can use exact polynomial algorithms there.
//!
//! A *candidate set* is a set of candidates whose removal leaves room for every VM of the
//! local request; the policies only ever return *minimal* ones, from which no lease can be
//! dropped (the candidate sets of Fig. 2 are minimal).

use super::availability::VmShape;
use super::overhead::Operation;
use crate::fasthash::FastMap;
use crate::model::{LeaseType, RequestId};
use crate::time::{EmuDuration, EmuTime};

/// A lease that could be preempted for the local request.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The lease.
    pub lease: RequestId,
    /// What preempting it would do.
    pub op: Operation,
    /// Its lease type (paper 000's value classes).
    pub lease_type: LeaseType,
    /// VMs in the lease (paper 003's v(L)).
    pub vms: u32,
    /// Memory of each of its VMs, MB.
    pub mem_mb: u32,
    /// Running VMs the operation would pause or stop (0 for a reservation or a lease waited
    /// for).
    pub preempted_vms: u32,
    /// Cost of the operation, without δ ([`super::overhead::OverheadModel::operation_cost`]).
    pub cost: EmuDuration,
    /// Time it has waited so far: since submission, minus the time it has worked.
    pub waiting: EmuDuration,
    /// When it was submitted (for "younger" tie-breaks and arrival-order tie-breaks).
    pub arrival: EmuTime,
}

/// One host of a contention as a plug-in sees it: its capacity and what holds it during the
/// window — fixed holds, and each candidate's (by its index).
#[derive(Clone, Debug, PartialEq)]
pub struct HostView {
    /// The host's index in the cluster.
    pub host: usize,
    /// Its cores.
    pub cores: u64,
    /// Its memory, MB (`None` where memory is not enforced).
    pub mem_mb: Option<u64>,
    /// What no preemption can remove.
    pub fixed: Vec<Hold>,
    /// What each candidate holds: (candidate index, hold).
    pub held: Vec<(usize, Hold)>,
}

/// Resources one lease holds on one host during part of the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hold {
    /// From (clipped to the window).
    pub start: EmuTime,
    /// Until (clipped to the window).
    pub end: EmuTime,
    /// Cores.
    pub cores: u64,
    /// Memory, MB.
    pub mem_mb: u64,
}

/// What happens on one host during the window.
#[derive(Clone, Debug, Default)]
struct HostWindow {
    /// Cores and memory (memory `None` when it is not enforced).
    cores: u64,
    mem: Option<u64>,
    /// Holds nothing can remove.
    fixed: Vec<Hold>,
    /// Holds of candidates: (position of the candidate in `members`, hold).
    held: Vec<(usize, Hold)>,
    /// The distinct candidates holding something here; bit `i` of a host mask is `members[i]`.
    members: Vec<usize>,
}

/// The contention of one local request.
#[derive(Clone, Debug)]
pub struct Contention {
    /// One local VM.
    pub shape: VmShape,
    /// How many local VMs must fit.
    pub need: u32,
    /// The interval `[start, end)` they need.
    pub window: (EmuTime, EmuTime),
    /// δ, charged once if the chosen set reschedules work.
    pub reschedule: EmuDuration,
    /// The leases in play that may be preempted, in arrival order.
    pub candidates: Vec<Candidate>,
    hosts: Vec<HostWindow>,
    /// Hosts each candidate holds something on: (host, bit in that host's mask).
    spans: Vec<Vec<(usize, u32)>>,
}

/// Per-lease gains when room is additive: `base + Σ gain` for any set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Additive {
    /// Room with no lease removed.
    pub base: u64,
    /// Room each candidate adds, whatever else is removed.
    pub gains: Vec<u64>,
}

impl Contention {
    /// A contention for `need` VMs of `shape` over `window` on hosts of these `(cores,
    /// memory)` capacities (memory `None` when not enforced).
    pub fn new(
        shape: VmShape,
        need: u32,
        window: (EmuTime, EmuTime),
        reschedule: EmuDuration,
        hosts: &[(u64, Option<u64>)],
    ) -> Contention {
        Contention {
            shape,
            need,
            window,
            reschedule,
            candidates: Vec::new(),
            hosts: hosts
                .iter()
                .map(|&(cores, mem)| HostWindow {
                    cores,
                    mem,
                    ..HostWindow::default()
                })
                .collect(),
            spans: Vec::new(),
        }
    }

    /// Adds a candidate (in arrival order); returns its index.
    pub fn add_candidate(&mut self, c: Candidate) -> usize {
        self.candidates.push(c);
        self.spans.push(Vec::new());
        self.candidates.len() - 1
    }

    fn clip(&self, start: EmuTime, end: EmuTime, cores: u64, mem_mb: u64) -> Option<Hold> {
        let (s, e) = (start.max(self.window.0), end.min(self.window.1));
        (s < e).then_some(Hold {
            start: s,
            end: e,
            cores,
            mem_mb,
        })
    }

    /// Something no preemption can remove holds `cores` and `mem_mb` on `host` over
    /// `[start, end)`.
    pub fn add_fixed(
        &mut self,
        host: usize,
        start: EmuTime,
        end: EmuTime,
        cores: u64,
        mem_mb: u64,
    ) {
        if let Some(h) = self.clip(start, end, cores, mem_mb) {
            self.hosts[host].fixed.push(h);
        }
    }

    /// Candidate `cand` holds `cores` and `mem_mb` on `host` over `[start, end)`.
    pub fn add_held(
        &mut self,
        host: usize,
        cand: usize,
        start: EmuTime,
        end: EmuTime,
        cores: u64,
        mem_mb: u64,
    ) {
        let Some(h) = self.clip(start, end, cores, mem_mb) else {
            return;
        };
        let hw = &mut self.hosts[host];
        let bit = match hw.members.iter().position(|&m| m == cand) {
            Some(b) => b,
            None => {
                hw.members.push(cand);
                self.spans[cand].push((host, (hw.members.len() - 1) as u32));
                hw.members.len() - 1
            }
        };
        hw.held.push((bit, h));
    }

    /// How many local VMs host `h` holds over the window when the candidates for which
    /// `removed(bit)` is true (bits of the host's mask) are gone.
    fn host_room(&self, h: usize, removed: impl Fn(usize) -> bool) -> u64 {
        let hw = &self.hosts[h];
        let (c, m) = (
            u64::from(self.shape.cores.max(1)),
            u64::from(self.shape.mem_mb.max(1)),
        );
        if c > hw.cores || hw.mem.is_some_and(|mem| m > mem) {
            return 0;
        }
        // Use only rises at a hold's start: sweep starts and ends in time order (ends first
        // at the same instant) and keep the peak of each resource.
        let mut events: Vec<(EmuTime, bool, u64, u64)> =
            Vec::with_capacity(2 * (hw.fixed.len() + hw.held.len()));
        let kept = hw
            .fixed
            .iter()
            .chain(hw.held.iter().filter(|(b, _)| !removed(*b)).map(|(_, h)| h));
        for x in kept {
            events.push((x.start, true, x.cores, x.mem_mb));
            events.push((x.end, false, x.cores, x.mem_mb));
        }
        events.sort_unstable_by_key(|e| (e.0, e.1));
        let (mut uc, mut um, mut pc, mut pm) = (0u64, 0u64, 0u64, 0u64);
        for (_, rise, dc, dm) in events {
            if rise {
                uc += dc;
                um += dm;
                pc = pc.max(uc);
                pm = pm.max(um);
            } else {
                uc -= dc;
                um -= dm;
            }
        }
        let by_cores = hw.cores.saturating_sub(pc) / c;
        match hw.mem {
            Some(mem) => by_cores.min(mem.saturating_sub(pm) / m),
            None => by_cores,
        }
    }

    /// If every hold on host `h` alone leaves no room for a local VM (a host as small as
    /// the VM, as paper 000's one-core hosts are), the room the host has once nothing holds
    /// it: then its room is that with every hold gone and none otherwise, whatever the mask.
    fn all_or_nothing(&self, h: usize) -> Option<u64> {
        let hw = &self.hosts[h];
        let (c, m) = (
            u64::from(self.shape.cores.max(1)),
            u64::from(self.shape.mem_mb.max(1)),
        );
        let blocks = |x: &Hold| {
            hw.cores.saturating_sub(x.cores) < c
                || hw.mem.is_some_and(|mem| mem.saturating_sub(x.mem_mb) < m)
        };
        let every = hw.fixed.iter().chain(hw.held.iter().map(|(_, x)| x));
        every
            .clone()
            .all(blocks)
            .then(|| match hw.fixed.is_empty() {
                true => self.host_room(h, |_| true),
                false => 0,
            })
    }

    /// Room on host `h` with the candidates of host mask `mask` removed.
    fn host_room_mask(&self, h: usize, mask: u128) -> u64 {
        self.host_room(h, |b| b < 128 && mask & (1u128 << b) != 0)
    }

    /// How many local VMs fit over the window once the candidates in `set` are removed.
    pub fn room(&self, set: &[usize]) -> u64 {
        let mut removed = vec![false; self.candidates.len()];
        for &i in set {
            removed[i] = true;
        }
        self.room_of(&removed)
    }

    /// Like [`Contention::room`] with a membership vector.
    pub fn room_of(&self, removed: &[bool]) -> u64 {
        (0..self.hosts.len())
            .map(|h| self.host_room(h, |b| removed[self.hosts[h].members[b]]))
            .sum()
    }

    /// Whether removing `set` leaves room for the local request.
    pub fn makes_room(&self, set: &[usize]) -> bool {
        self.room(set) >= u64::from(self.need)
    }

    /// Whether removing `set` makes room and no lease of it can be dropped.
    pub fn is_minimal(&self, set: &[usize]) -> bool {
        self.makes_room(set)
            && (0..set.len()).all(|k| {
                let rest: Vec<usize> = set
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != k)
                    .map(|(_, &i)| i)
                    .collect();
                !self.makes_room(&rest)
            })
    }

    /// Whether every candidate removed still leaves too little room: nothing can help.
    pub fn hopeless(&self) -> bool {
        let all: Vec<usize> = (0..self.candidates.len()).collect();
        !self.makes_room(&all)
    }

    /// How many more local VMs fit once candidate `i` alone is removed (what it frees on its
    /// own; with additive room, its gain in any set).
    pub fn frees_alone(&self, i: usize) -> u64 {
        self.spans[i]
            .iter()
            .map(|&(h, bit)| {
                let bit = bit as usize;
                self.host_room(h, |b| b == bit) - self.host_room(h, |_| false)
            })
            .sum()
    }

    /// The hosts where something holds resources during the window, as a plug-in sees them
    /// (to compute room itself), and the room of the hosts nothing holds.
    pub fn host_views(&self) -> (Vec<HostView>, u64) {
        let mut idle = 0;
        let mut views = Vec::new();
        for (h, hw) in self.hosts.iter().enumerate() {
            if hw.fixed.is_empty() && hw.held.is_empty() {
                idle += self.host_room(h, |_| false);
                continue;
            }
            views.push(HostView {
                host: h,
                cores: hw.cores,
                mem_mb: hw.mem,
                fixed: hw.fixed.clone(),
                held: hw.held.iter().map(|&(b, x)| (hw.members[b], x)).collect(),
            });
        }
        (views, idle)
    }

    /// The hosts candidate `i` holds something on, with its bit in each host's mask.
    pub(crate) fn spans(&self, i: usize) -> &[(usize, u32)] {
        &self.spans[i]
    }

    /// If room is additive — every set frees the sum of what its leases free alone — the base
    /// room and each lease's gain. Checked per host: exactly by enumeration when few leases
    /// share it, otherwise by a sufficient condition (every lease on the host holds it at a
    /// common instant when the fixed use peaks, and one resource always binds with gains that
    /// are whole local VMs).
    pub fn additive(&self) -> Option<Additive> {
        let mut base = 0u64;
        let mut gains = vec![0u64; self.candidates.len()];
        for h in 0..self.hosts.len() {
            let hw = &self.hosts[h];
            let r0 = self.host_room_mask(h, 0);
            base += r0;
            let k = hw.members.len();
            if k == 0 {
                continue;
            }
            if k > 128 {
                // Too many leases on one host for a mask: treated as not additive (the search
                // handles such hosts by membership).
                return None;
            }
            let single: Vec<u64> = (0..k)
                .map(|b| self.host_room_mask(h, 1u128 << b) - r0)
                .collect();
            let ok = self.host_is_linear(h) || {
                k <= 6
                    && (1u128..(1u128 << k)).all(|mask| {
                        let sum: u64 = (0..k)
                            .filter(|&b| mask & (1 << b) != 0)
                            .map(|b| single[b])
                            .sum();
                        self.host_room_mask(h, mask) == r0 + sum
                    })
            };
            if !ok {
                return None;
            }
            for (b, &m) in hw.members.iter().enumerate() {
                gains[m] += single[b];
            }
        }
        Some(Additive { base, gains })
    }

    /// The sufficient condition of [`Contention::additive`] for one host.
    fn host_is_linear(&self, h: usize) -> bool {
        let hw = &self.hosts[h];
        let (c, m) = (
            u64::from(self.shape.cores.max(1)),
            u64::from(self.shape.mem_mb.max(1)),
        );
        if c > hw.cores || hw.mem.is_some_and(|mem| m > mem) {
            // No local VM fits here whatever is removed: every gain is zero.
            return true;
        }
        // A common instant of every candidate hold here...
        let lo = hw.held.iter().map(|(_, x)| x.start).max();
        let hi = hw.held.iter().map(|(_, x)| x.end).min();
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return true;
        };
        if lo >= hi {
            return false;
        }
        // ...at which the fixed use is at its peak over the window (checked at the start of
        // the common interval and at every fixed rise inside it).
        let fixed_at = |t: EmuTime| {
            hw.fixed
                .iter()
                .filter(|x| x.start <= t && x.end > t)
                .fold((0u64, 0u64), |(a, b), x| (a + x.cores, b + x.mem_mb))
        };
        let mut peak = (0u64, 0u64);
        for t in hw.fixed.iter().map(|x| x.start).chain([self.window.0]) {
            let u = fixed_at(t);
            peak = (peak.0.max(u.0), peak.1.max(u.1));
        }
        let at_common = std::iter::once(lo)
            .chain(
                hw.fixed
                    .iter()
                    .map(|x| x.start)
                    .filter(|&t| t > lo && t < hi),
            )
            .map(fixed_at)
            .fold((0u64, 0u64), |a, u| (a.0.max(u.0), a.1.max(u.1)));
        if at_common != peak {
            return false;
        }
        // Per candidate, what it holds at the common instant (all of its holds here).
        let mut per: Vec<(u64, u64)> = vec![(0, 0); hw.members.len()];
        for (b, x) in &hw.held {
            per[*b].0 += x.cores;
            per[*b].1 += x.mem_mb;
        }
        let all: (u64, u64) = per.iter().fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
        // Room is min(⌊(F_c + Σ c_i)/c⌋, ⌊(F_m + Σ m_i)/m⌋) over the removed leases i, with F
        // what is free at the common instant. It is linear when every lease frees whole local
        // VMs of one resource and that resource always binds: either the other resource, even
        // with nothing removed, has room for as many VMs as this one with everything removed,
        // or each lease frees at least as much of the other resource per VM.
        if peak.0 + all.0 > hw.cores || hw.mem.is_some_and(|mem| peak.1 + all.1 > mem) {
            // Over capacity (never so in a real profile): room saturates, not linear.
            return false;
        }
        let free_c = hw.cores.saturating_sub(peak.0 + all.0);
        let whole_c = per.iter().all(|x| x.0 % c == 0);
        let gain_c: u64 = per.iter().map(|x| x.0 / c).sum();
        let Some(mem) = hw.mem else {
            return whole_c;
        };
        let free_m = mem.saturating_sub(peak.1 + all.1);
        let whole_m = per.iter().all(|x| x.1 % m == 0);
        let gain_m: u64 = per.iter().map(|x| x.1 / m).sum();
        let (room_c, room_m) = (free_c / c, free_m / m);
        let cores_bind = whole_c
            && (room_m >= room_c + gain_c
                || (room_m >= room_c && per.iter().all(|x| x.1 / m >= x.0 / c)));
        let mem_binds = whole_m
            && (room_c >= room_m + gain_m
                || (room_c >= room_m && per.iter().all(|x| x.0 / c >= x.1 / m)));
        cores_bind || mem_binds
    }

    /// An upper bound on the room candidate `i` can add to any set: per host, at most what
    /// the host gains with all its candidates removed, and at most the local VMs its freed
    /// cores or its freed memory make room for — whichever resource was binding, so the
    /// larger of the two. `whole_gain` keeps each host's gain with every candidate gone,
    /// once swept.
    fn gain_bound(&self, i: usize, whole_gain: &mut [Option<u64>]) -> u64 {
        let (c, m) = (
            u64::from(self.shape.cores.max(1)),
            u64::from(self.shape.mem_mb.max(1)),
        );
        self.spans(i)
            .iter()
            .map(|&(h, bit)| {
                let hw = &self.hosts[h];
                let (cores, mem) = hw
                    .held
                    .iter()
                    .filter(|(b, _)| *b == bit as usize)
                    .fold((0u64, 0u64), |a, (_, x)| (a.0 + x.cores, a.1 + x.mem_mb));
                let by_res = match hw.mem {
                    Some(_) => cores.div_ceil(c).max(mem.div_ceil(m)),
                    None => cores.div_ceil(c),
                };
                // The same for every lease on the host: swept once.
                let all = *whole_gain[h].get_or_insert_with(|| {
                    self.host_room(h, |_| true) - self.host_room(h, |_| false)
                });
                by_res.min(all)
            })
            .sum()
    }
}

type Memo = FastMap<(usize, u128), u64>;

/// Hosts with at most this many candidates keep their rooms in a table of `2^n` entries.
const SMALL_HOST_MEMBERS: usize = 6;

/// A room not computed yet (no host holds `u64::MAX` VMs).
const UNKNOWN: u64 = u64::MAX;

/// Marks a host that is not all-or-nothing ([`Contention::all_or_nothing`]).
const NOT_WHOLE: u64 = u64::MAX;

/// One host as a tracker sees it, in one place (a search updates a lease's hosts at every
/// step): its mask, its room at that mask and, for an all-or-nothing host, its room once
/// every candidate is gone and the mask that says so.
#[derive(Clone, Copy, Debug)]
struct HostState {
    mask: u128,
    room: u64,
    /// [`Contention::all_or_nothing`]'s room (for at most 128 candidates), or `NOT_WHOLE`.
    whole: u64,
    /// Every candidate's bit.
    full: u128,
}

/// Keeps the room of a changing set of removed candidates, one host at a time, with a memo of
/// host rooms: what searches over many sets use.
pub(crate) struct RoomTracker<'a> {
    c: &'a Contention,
    hosts: Vec<HostState>,
    /// The sum of the hosts' rooms.
    room: u64,
    /// Per host with few candidates, its room by mask (`UNKNOWN` until computed), made on
    /// first use: an index instead of a hash for most hosts.
    small: Vec<Vec<u64>>,
    memo: Memo,
    /// Hosts with too many candidates for a mask: recomputed from membership.
    removed: Vec<bool>,
}

impl<'a> RoomTracker<'a> {
    /// Tracks the room of the empty set (nothing removed).
    pub(crate) fn new(c: &'a Contention) -> RoomTracker<'a> {
        let hosts = (0..c.hosts.len())
            .map(|h| {
                let members = c.hosts[h].members.len();
                let whole = match members <= 128 {
                    true => c.all_or_nothing(h).unwrap_or(NOT_WHOLE),
                    false => NOT_WHOLE,
                };
                HostState {
                    mask: 0,
                    room: 0,
                    whole,
                    full: match members {
                        128.. => u128::MAX,
                        _ => (1u128 << members) - 1,
                    },
                }
            })
            .collect();
        let mut t = RoomTracker {
            c,
            hosts,
            room: 0,
            small: vec![Vec::new(); c.hosts.len()],
            memo: Memo::default(),
            removed: vec![false; c.candidates.len()],
        };
        for h in 0..c.hosts.len() {
            let r = t.room_at(h, 0);
            t.hosts[h].room = r;
            t.room += r;
        }
        t
    }

    /// Host `h`'s room with the candidates of `mask` removed (for a host with more
    /// candidates than a mask holds, those of `removed`).
    #[inline]
    fn room_at(&mut self, h: usize, mask: u128) -> u64 {
        let st = &self.hosts[h];
        if st.whole != NOT_WHOLE {
            return if mask == st.full { st.whole } else { 0 };
        }
        self.room_looked_up(h, mask)
    }

    /// [`RoomTracker::room_at`] for a host that is not all-or-nothing: from its table, the
    /// memo, or a sweep.
    fn room_looked_up(&mut self, h: usize, mask: u128) -> u64 {
        let c = self.c;
        let members = c.hosts[h].members.len();
        if members > 128 {
            let removed = &self.removed;
            return c.host_room(h, |b| removed[c.hosts[h].members[b]]);
        }
        if members <= SMALL_HOST_MEMBERS {
            let table = &mut self.small[h];
            if table.is_empty() {
                *table = vec![UNKNOWN; 1 << members];
            }
            // Bits at or above `members` are never set on this host's mask.
            let room = &mut table[mask as usize];
            if *room == UNKNOWN {
                *room = c.host_room_mask(h, mask);
            }
            return *room;
        }
        *self
            .memo
            .entry((h, mask))
            .or_insert_with(|| c.host_room_mask(h, mask))
    }

    /// The room now.
    pub(crate) fn room(&self) -> u64 {
        self.room
    }

    /// Host `h`'s room now.
    pub(crate) fn room_on(&self, h: usize) -> u64 {
        self.hosts[h].room
    }

    /// How many hosts there are.
    pub(crate) fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// Whether host `h` has room only once every candidate on it is removed (see
    /// [`Contention::all_or_nothing`]).
    pub(crate) fn all_or_nothing_on(&self, h: usize) -> bool {
        self.hosts[h].whole != NOT_WHOLE
    }

    /// The candidates holding something on host `h`.
    pub(crate) fn members_on(&self, h: usize) -> &'a [usize] {
        &self.c.hosts[h].members
    }

    /// How many hosts candidate `i` holds something on.
    pub(crate) fn host_span(&self, i: usize) -> usize {
        self.c.spans(i).len()
    }

    /// Whether candidate `i` is removed.
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.removed[i]
    }

    /// Removes (`on`) or restores candidate `i`.
    pub(crate) fn set(&mut self, i: usize, on: bool) {
        if self.removed[i] == on {
            return;
        }
        let c = self.c;
        self.removed[i] = on;
        // Only its hosts' rooms change: each is looked up once at its new mask.
        for &(h, bit) in c.spans(i) {
            if bit < 128 {
                self.hosts[h].mask ^= 1u128 << bit;
            }
            let now = self.room_at(h, self.hosts[h].mask);
            self.room = self.room + now - self.hosts[h].room;
            self.hosts[h].room = now;
        }
    }

    /// The room with candidate `i` toggled, leaving the set as it was.
    pub(crate) fn room_if_toggled(&mut self, i: usize) -> u64 {
        let c = self.c;
        self.removed[i] = !self.removed[i];
        let mut room = self.room;
        for &(h, bit) in c.spans(i) {
            let mask = if bit < 128 {
                self.hosts[h].mask ^ (1u128 << bit)
            } else {
                self.hosts[h].mask
            };
            room = room + self.room_at(h, mask) - self.hosts[h].room;
        }
        self.removed[i] = !self.removed[i];
        room
    }

    /// Sets the tracked set to exactly `set`.
    pub(crate) fn reset_to(&mut self, set: &[usize]) {
        for i in 0..self.removed.len() {
            if self.removed[i] {
                self.set(i, false);
            }
        }
        for &i in set {
            self.set(i, true);
        }
    }

    /// For every host with candidates, the candidates holding something on it: the
    /// host-bundle moves of the greedy search.
    pub(crate) fn bundles(&self) -> Vec<Vec<usize>> {
        self.c
            .hosts
            .iter()
            .filter(|h| !h.members.is_empty())
            .map(|h| h.members.clone())
            .collect()
    }

    /// Upper bounds on each candidate's gain.
    pub(crate) fn gain_bounds(&self) -> Vec<u64> {
        let mut whole_gain = vec![None; self.c.hosts.len()];
        (0..self.c.candidates.len())
            .map(|i| self.c.gain_bound(i, &mut whole_gain))
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn t(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    pub(crate) fn cand(id: u32, vms: u32) -> Candidate {
        Candidate {
            lease: RequestId(id),
            op: Operation::Suspend,
            lease_type: LeaseType::BestEffortSuspendable,
            vms,
            mem_mb: 512,
            preempted_vms: vms,
            cost: EmuDuration::from_secs(u64::from(vms)),
            waiting: EmuDuration::ZERO,
            arrival: t(u64::from(id)),
        }
    }

    const VM: VmShape = VmShape {
        cores: 1,
        mem_mb: 512,
    };

    /// Paper 003 Fig. 2, one core per host: lease 1 runs into the interval, reservation 2
    /// follows it on the same core; reservations 3 and 5 share another core with lease 1's
    /// second VM... and lease 4 holds a third core for the whole interval.
    fn figure_2() -> Contention {
        let mut c = Contention::new(
            VM,
            1,
            (t(100), t(200)),
            EmuDuration::ZERO,
            &[(1, Some(1024)), (1, Some(1024)), (1, Some(1024))],
        );
        let l1 = c.add_candidate(cand(1, 2));
        let l2 = c.add_candidate(cand(2, 1));
        let l3 = c.add_candidate(cand(3, 1));
        let l4 = c.add_candidate(cand(4, 1));
        let l5 = c.add_candidate(cand(5, 1));
        // Host 0: lease 1 until 150, then reservation 2.
        c.add_held(0, l1, t(0), t(150), 1, 512);
        c.add_held(0, l2, t(150), t(300), 1, 512);
        // Host 1: lease 1 until 120, reservation 3 from 120 to 170, reservation 5 after.
        c.add_held(1, l1, t(0), t(120), 1, 512);
        c.add_held(1, l3, t(120), t(170), 1, 512);
        c.add_held(1, l5, t(170), t(260), 1, 512);
        // Host 2: lease 4 throughout.
        c.add_held(2, l4, t(0), t(400), 1, 512);
        c
    }

    #[test]
    fn figure_2_candidate_sets_are_the_minimal_ones() {
        let c = figure_2();
        let ids = |set: &[usize]| {
            set.iter()
                .map(|&i| c.candidates[i].lease.0)
                .collect::<Vec<_>>()
        };
        let mut minimal = Vec::new();
        for mask in 1u32..32 {
            let set: Vec<usize> = (0..5).filter(|&i| mask & (1 << i) != 0).collect();
            if c.is_minimal(&set) {
                minimal.push(ids(&set));
            }
        }
        minimal.sort();
        assert_eq!(minimal, vec![vec![1, 2], vec![1, 3, 5], vec![4]]);
        // Lease 1 alone frees nothing: it holds its cores for only part of the interval.
        assert_eq!(c.room(&[0]), 0);
        assert!(c.additive().is_none());
    }

    #[test]
    fn whole_interval_leases_are_additive_and_memory_can_make_a_vm_worthless() {
        // One host of 4 cores and 2 GB: two 1-VM leases of 512 MB hold it throughout, so each
        // frees one 512 MB local VM; a 1-core 1 GB lease frees two local VMs' memory but one
        // core... with the cores binding, one VM.
        let mut c = Contention::new(
            VM,
            2,
            (t(0), t(10)),
            EmuDuration::ZERO,
            &[(4, Some(2048)), (1, Some(256))],
        );
        let a = c.add_candidate(cand(1, 1));
        let b = c.add_candidate(cand(2, 1));
        let z = c.add_candidate(cand(3, 1));
        c.add_held(0, a, t(0), t(50), 1, 512);
        c.add_held(0, b, t(0), t(50), 1, 512);
        c.add_fixed(0, t(0), t(50), 2, 1024);
        // Host 1 is too small for a local VM: its lease frees nothing.
        c.add_held(1, z, t(0), t(50), 1, 256);
        let add = c.additive().expect("additive");
        assert_eq!(add.base, 0);
        assert_eq!(add.gains, vec![1, 1, 0]);
        assert!(c.makes_room(&[0, 1]));
        assert!(!c.makes_room(&[0, 2]));
        let mut tr = RoomTracker::new(&c);
        tr.set(0, true);
        tr.set(1, true);
        assert_eq!(tr.room(), 2);
        assert_eq!(tr.room_if_toggled(1), 1);
        // Host 1 cannot hold a local VM at all: lease 3 gains nothing.
        assert_eq!(tr.gain_bounds(), vec![1, 1, 0]);
    }

    #[test]
    fn a_host_with_more_leases_than_a_mask_holds_is_handled() {
        // 200 one-core leases in a row on one 1-core host: only all of them free it.
        let mut c = Contention::new(VM, 1, (t(0), t(200)), EmuDuration::ZERO, &[(1, None)]);
        for i in 0..200u32 {
            let k = c.add_candidate(cand(i, 1));
            c.add_held(0, k, t(u64::from(i)), t(u64::from(i) + 1), 1, 512);
        }
        assert!(c.additive().is_none());
        let all: Vec<usize> = (0..200).collect();
        assert!(c.makes_room(&all));
        assert!(!c.makes_room(&all[1..]));
        let mut tr = RoomTracker::new(&c);
        tr.reset_to(&all);
        assert_eq!(tr.room(), 1);
        tr.set(7, false);
        assert_eq!(tr.room(), 0);
    }

    /// A contention on 1–5 hosts of 1–3 cores (memory enforced or not) with holds of
    /// random sizes and times, some fixed: hosts as small as the VM (all-or-nothing) and
    /// hosts several leases share, with and without fixed holds.
    pub(crate) fn arb_contention() -> impl proptest::strategy::Strategy<Value = Contention> {
        use proptest::prelude::*;
        let hosts = prop::collection::vec((1u64..4, any::<bool>()), 1..6);
        let holds = prop::collection::vec(
            (
                0usize..5,
                0usize..7,
                0u64..100,
                1u64..100,
                1u64..4,
                100u64..1500,
            ),
            0..24,
        );
        (hosts, holds, 1u32..3, 1u32..6).prop_map(|(hosts, holds, cores, need)| {
            let caps: Vec<(u64, Option<u64>)> = hosts
                .iter()
                .map(|&(c, mem)| (c, mem.then_some(2048)))
                .collect();
            let shape = VmShape { cores, mem_mb: 512 };
            let mut c = Contention::new(
                shape,
                need,
                (t(0), t(100)),
                EmuDuration::from_secs(2),
                &caps,
            );
            let n = 6;
            for i in 0..n {
                c.add_candidate(cand(i, 1 + i % 3));
            }
            for (host, who, start, len, cores, mem) in holds {
                let host = host % caps.len();
                let (s, e) = (t(start), t(start + len));
                // Index 6 is something no preemption removes.
                match who {
                    6 => c.add_fixed(host, s, e, cores, mem),
                    i => c.add_held(host, i, s, e, cores, mem),
                }
            }
            c
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::proptest_cases(300), failure_persistence: None, ..Default::default() })]

        /// A tracker's room, after any sequence of removals and restorals, and its room with
        /// one more toggled, are the contention's room of that set, host by host swept.
        #[test]
        fn a_tracker_keeps_the_room_a_sweep_gives(
            c in arb_contention(),
            toggles in proptest::collection::vec(0usize..6, 0..40),
        ) {
            let mut tr = RoomTracker::new(&c);
            let mut removed = vec![false; c.candidates.len()];
            proptest::prop_assert_eq!(tr.room(), c.room_of(&removed));
            for i in toggles {
                let mut other = removed.clone();
                other[i] = !other[i];
                proptest::prop_assert_eq!(tr.room_if_toggled(i), c.room_of(&other));
                removed[i] = !removed[i];
                tr.set(i, removed[i]);
                proptest::prop_assert_eq!(tr.room(), c.room_of(&removed), "after toggling {}", i);
            }
        }
    }
}
