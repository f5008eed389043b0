//! The availability profile of a cluster (paper 004 §4, after Mu'alem & Feitelson): which
//! cores and memory of each host are taken, when. Reservations are kept per host, so
//! placement is host-level: a lease's VMs may span hosts, and no host ever exceeds its cores
//! or memory at any instant.

use crate::model::RequestId;
use crate::time::{EmuDuration, EmuTime};
use crate::topology::HostSpec;

/// One VM-sized slice of a host, taken for `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Slot {
    lease: RequestId,
    vm: u32,
    start: EmuTime,
    end: EmuTime,
    cores: u32,
    mem_mb: u64,
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
    capacity: Vec<(u32, u64)>,
    slots: Vec<Vec<Slot>>,
}

impl Availability {
    /// An empty profile for these hosts.
    pub fn new(hosts: &[HostSpec]) -> Availability {
        Availability {
            capacity: hosts.iter().map(|h| (h.cores, h.memory_mb)).collect(),
            slots: vec![Vec::new(); hosts.len()],
        }
    }

    /// Number of hosts.
    pub fn hosts(&self) -> usize {
        self.capacity.len()
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
            self.slots[usize::from(host)].push(Slot {
                lease,
                vm,
                start,
                end,
                cores: shape.cores,
                mem_mb: u64::from(shape.mem_mb),
            });
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
        for (i, &h) in hosts.iter().enumerate() {
            self.reserve_vm(h, lease, i as u32, shape, start, end);
        }
    }

    /// Frees everything `lease` holds or will hold.
    pub fn release(&mut self, lease: RequestId) {
        for host in &mut self.slots {
            host.retain(|s| s.lease != lease);
        }
    }

    /// Frees `lease`'s slots that start at or after `from` (a reservation not yet begun),
    /// keeping earlier ones (VMs still being vacated).
    pub fn release_from(&mut self, lease: RequestId, from: EmuTime) {
        for host in &mut self.slots {
            host.retain(|s| !(s.lease == lease && s.start >= from));
        }
    }

    /// Makes `lease`'s VM `vm` slot that began at `start` end at `end` instead — earlier
    /// when a VM is stopped, possibly later when vacating it (a suspension) outlasts the plan.
    pub fn end_vm(&mut self, lease: RequestId, vm: u32, start: EmuTime, end: EmuTime) {
        for host in &mut self.slots {
            host.retain_mut(|s| {
                if s.lease == lease && s.vm == vm && s.start == start {
                    s.end = end;
                }
                s.end > s.start
            });
        }
    }

    /// Forgets everything that ended by `now` (keeps the profile small).
    pub fn forget_before(&mut self, now: EmuTime) {
        for host in &mut self.slots {
            host.retain(|s| s.end > now);
        }
    }

    /// How many VMs of `shape` host `h` can hold throughout `[start, end)`.
    pub fn room(&self, h: usize, shape: VmShape, start: EmuTime, end: EmuTime) -> u64 {
        let (cores, mem) = self.capacity[h];
        if shape.cores > cores || u64::from(shape.mem_mb) > mem {
            return 0;
        }
        let overlapping: Vec<&Slot> = self.slots[h]
            .iter()
            .filter(|s| s.start < end && s.end > start)
            .collect();
        // Use is piecewise constant and only rises at a slot's start: the peak within the
        // window is at the window's start or at one of those starts.
        let mut peak = (0u64, 0u64);
        let points = std::iter::once(start)
            .chain(overlapping.iter().map(|s| s.start).filter(|&t| t > start));
        for p in points {
            let (c, m) = overlapping
                .iter()
                .filter(|s| s.start <= p && s.end > p)
                .fold((0u64, 0u64), |(c, m), s| {
                    (c + u64::from(s.cores), m + s.mem_mb)
                });
            peak = (peak.0.max(c), peak.1.max(m));
        }
        let free_c = u64::from(cores).saturating_sub(peak.0);
        let free_m = mem.saturating_sub(peak.1);
        (free_c / u64::from(shape.cores.max(1))).min(free_m / u64::from(shape.mem_mb.max(1)))
    }

    /// First-fit placement of `vms` VMs of `shape` for the whole of `[start, end)`.
    pub fn place(
        &self,
        vms: u32,
        shape: VmShape,
        start: EmuTime,
        end: EmuTime,
    ) -> Option<Vec<u16>> {
        let mut hosts = Vec::with_capacity(vms as usize);
        for h in 0..self.capacity.len() {
            let take = self
                .room(h, shape, start, end)
                .min(u64::from(vms) - hosts.len() as u64);
            hosts.extend(std::iter::repeat_n(h as u16, take as usize));
            if hosts.len() == vms as usize {
                return Some(hosts);
            }
        }
        None
    }

    /// How many VMs of `shape` the cluster can hold throughout `[start, end)`.
    pub fn total_room(&self, shape: VmShape, start: EmuTime, end: EmuTime) -> u64 {
        (0..self.capacity.len())
            .map(|h| self.room(h, shape, start, end))
            .sum()
    }

    /// Whether the empty cluster could hold `vms` VMs of `shape`.
    pub fn could_ever_fit(&self, vms: u32, shape: VmShape) -> bool {
        let per_host: u64 = self
            .capacity
            .iter()
            .map(|&(c, m)| {
                if shape.cores > c || u64::from(shape.mem_mb) > m {
                    0
                } else {
                    (u64::from(c) / u64::from(shape.cores.max(1)))
                        .min(m / u64::from(shape.mem_mb.max(1)))
                }
            })
            .sum();
        per_host >= u64::from(vms)
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
            .flatten()
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
    pub fn start_candidates(&self, not_before: EmuTime) -> Vec<EmuTime> {
        let mut candidates: Vec<EmuTime> = self
            .slots
            .iter()
            .flatten()
            .map(|s| s.end)
            .filter(|&e| e > not_before)
            .collect();
        candidates.push(not_before);
        candidates.sort_unstable();
        candidates.dedup();
        candidates
    }

    /// Cores in use at instant `t`.
    pub fn cores_used_at(&self, t: EmuTime) -> u64 {
        self.slots
            .iter()
            .flatten()
            .filter(|s| s.start <= t && s.end > t)
            .map(|s| u64::from(s.cores))
            .sum()
    }

    /// Every lease with a slot overlapping `[start, end)`, in id order.
    pub fn leases_overlapping(&self, start: EmuTime, end: EmuTime) -> Vec<RequestId> {
        let mut ids: Vec<RequestId> = self
            .slots
            .iter()
            .flatten()
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
            slots.iter().all(|p| {
                let (c, m) = slots
                    .iter()
                    .filter(|s| s.start <= p.start && s.end > p.start)
                    .fold((0u64, 0u64), |(c, m), s| {
                        (c + u64::from(s.cores), m + s.mem_mb)
                    });
                c <= u64::from(cores) && m <= mem
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(n: usize, cores: u32, mem: u64) -> Vec<HostSpec> {
        vec![
            HostSpec {
                cores,
                memory_mb: mem,
                mips: 1000
            };
            n
        ]
    }
    const VM: VmShape = VmShape {
        cores: 1,
        mem_mb: 512,
    };
    fn t(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    #[test]
    fn earliest_start_waits_for_the_slot_that_frees_room() {
        let mut a = Availability::new(&hosts(2, 2, 4096));
        a.reserve(RequestId(0), &[0, 0, 1], VM, t(0), t(100));
        // 2 VMs for 50 s: only one core is free until t=100.
        let (start, placed) = a
            .earliest(t(10), EmuDuration::from_secs(50), 2, VM)
            .unwrap();
        assert_eq!(start, t(100));
        assert_eq!(placed, vec![0, 0]);
        // 1 VM fits now on host 1.
        assert_eq!(
            a.earliest(t(10), EmuDuration::from_secs(50), 1, VM),
            Some((t(10), vec![1]))
        );
    }

    #[test]
    fn memory_limits_placement_per_host() {
        let a = Availability::new(&hosts(2, 8, 1024));
        let big = VmShape {
            cores: 1,
            mem_mb: 600,
        };
        assert_eq!(a.place(2, big, t(0), t(1)), Some(vec![0, 1]));
        assert_eq!(a.place(3, big, t(0), t(1)), None);
        assert!(!a.could_ever_fit(3, big));
    }

    #[test]
    fn a_window_sees_the_peak_not_the_start() {
        let mut a = Availability::new(&hosts(1, 4, 8192));
        a.reserve(RequestId(0), &[0, 0, 0], VM, t(50), t(60));
        assert_eq!(a.room(0, VM, t(0), t(40)), 4);
        assert_eq!(a.room(0, VM, t(0), t(55)), 1);
        assert_eq!(a.room(0, VM, t(60), t(70)), 4);
    }

    #[test]
    fn cutting_and_releasing_give_room_back() {
        let mut a = Availability::new(&hosts(1, 2, 8192));
        a.reserve(RequestId(1), &[0, 0], VM, t(0), t(100));
        a.end_vm(RequestId(1), 0, t(0), t(10));
        assert_eq!(a.room(0, VM, t(20), t(30)), 1);
        a.release(RequestId(1));
        assert_eq!(a.room(0, VM, t(0), t(30)), 2);
        assert!(a.within_capacity());
    }
}
