//! Pure scheduling logic of a cluster's LRMS: host capacity accounting, VM placement and the
//! queue. No actors, no clocks: the LRMS actor feeds it requests and completions and carries
//! out the [`Decision`]s it returns.
//!
//! For now the policy is first-come-first-served with first-fit placement (no backfilling);
//! the availability profile, backfilling and preemption policies grow here.

pub mod availability;
pub mod overhead;
pub mod policy;

use std::collections::{BTreeMap, VecDeque};

use crate::model::{LeaseRequest, RequestId};
use crate::topology::HostSpec;

/// Free and used capacity of one host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCapacity {
    /// Cores on the host.
    pub cores: u32,
    /// Memory on the host, MB.
    pub memory_mb: u64,
    /// Cores in use.
    pub used_cores: u32,
    /// Memory in use, MB.
    pub used_memory_mb: u64,
}

impl HostCapacity {
    fn fits(&self, cores: u32, mem: u64) -> bool {
        self.cores - self.used_cores >= cores && self.memory_mb - self.used_memory_mb >= mem
    }
    /// How many VMs of this size the host could hold if empty.
    fn max_vms(&self, cores: u32, mem: u64) -> u64 {
        if cores > self.cores || mem > self.memory_mb {
            return 0;
        }
        (u64::from(self.cores) / u64::from(cores.max(1))).min(self.memory_mb / mem.max(1))
    }
}

/// What the LRMS must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start the lease now, VM `i` on host `hosts[i]`.
    Start {
        /// The lease.
        lease: RequestId,
        /// Host index for each VM.
        hosts: Vec<u16>,
    },
    /// The lease waits in the queue.
    Queued(RequestId),
    /// The lease can never run here.
    Reject {
        /// The lease.
        lease: RequestId,
        /// Why, for logs.
        reason: &'static str,
    },
}

/// First-come-first-served scheduler with first-fit placement.
#[derive(Clone, Debug)]
pub struct Scheduler {
    hosts: Vec<HostCapacity>,
    queue: VecDeque<LeaseRequest>,
    running: BTreeMap<RequestId, (Vec<u16>, u32, u64)>,
}

impl Scheduler {
    /// A scheduler for a cluster with these hosts.
    pub fn new(hosts: &[HostSpec]) -> Scheduler {
        Scheduler {
            hosts: hosts
                .iter()
                .map(|h| HostCapacity {
                    cores: h.cores,
                    memory_mb: h.memory_mb,
                    used_cores: 0,
                    used_memory_mb: 0,
                })
                .collect(),
            queue: VecDeque::new(),
            running: BTreeMap::new(),
        }
    }

    /// Whether the lease fits on the cluster when it is empty.
    pub fn can_ever_fit(&self, req: &LeaseRequest) -> bool {
        let per_host: u64 = self
            .hosts
            .iter()
            .map(|h| h.max_vms(req.cores_per_vm, u64::from(req.mem_mb)))
            .sum();
        per_host >= u64::from(req.vms)
    }

    /// First-fit placement of every VM of `req` on the current free capacity, or `None`.
    fn place(&self, req: &LeaseRequest) -> Option<Vec<u16>> {
        let mut free: Vec<(u32, u64)> = self
            .hosts
            .iter()
            .map(|h| (h.cores - h.used_cores, h.memory_mb - h.used_memory_mb))
            .collect();
        let mem = u64::from(req.mem_mb);
        let mut placement = Vec::with_capacity(req.vms as usize);
        for _ in 0..req.vms {
            let host = free
                .iter()
                .position(|&(c, m)| c >= req.cores_per_vm && m >= mem)?;
            free[host].0 -= req.cores_per_vm;
            free[host].1 -= mem;
            placement.push(host as u16);
        }
        Some(placement)
    }

    fn start(&mut self, req: &LeaseRequest, hosts: Vec<u16>) -> Decision {
        for &h in &hosts {
            let host = &mut self.hosts[usize::from(h)];
            debug_assert!(host.fits(req.cores_per_vm, u64::from(req.mem_mb)));
            host.used_cores += req.cores_per_vm;
            host.used_memory_mb += u64::from(req.mem_mb);
        }
        self.running.insert(
            req.id,
            (hosts.clone(), req.cores_per_vm, u64::from(req.mem_mb)),
        );
        Decision::Start {
            lease: req.id,
            hosts,
        }
    }

    /// A new request: start it now if nothing waits before it and it fits, otherwise queue it,
    /// or reject it if it can never fit.
    pub fn submit(&mut self, req: &LeaseRequest) -> Decision {
        if !self.can_ever_fit(req) {
            return Decision::Reject {
                lease: req.id,
                reason: "larger than the cluster",
            };
        }
        if self.queue.is_empty() {
            if let Some(hosts) = self.place(req) {
                return self.start(req, hosts);
            }
        }
        self.queue.push_back(req.clone());
        Decision::Queued(req.id)
    }

    /// A lease released its hosts: free them and start waiting leases in order, stopping at
    /// the first that does not fit (strict FCFS).
    pub fn finish(&mut self, lease: RequestId) -> Vec<Decision> {
        if let Some((hosts, cores, mem)) = self.running.remove(&lease) {
            for h in hosts {
                let host = &mut self.hosts[usize::from(h)];
                host.used_cores -= cores;
                host.used_memory_mb -= mem;
            }
        }
        let mut started = Vec::new();
        while let Some(head) = self.queue.front() {
            let Some(hosts) = self.place(head) else { break };
            let Some(req) = self.queue.pop_front() else {
                break;
            };
            started.push(self.start(&req, hosts));
        }
        started
    }

    /// Requests still waiting, in order.
    pub fn queued(&self) -> impl Iterator<Item = &LeaseRequest> {
        self.queue.iter()
    }

    /// Current host capacities.
    pub fn hosts(&self) -> &[HostCapacity] {
        &self.hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ClusterId, GridId, LeaseType, Origin};
    use crate::time::{EmuDuration, EmuTime};

    fn req(id: u32, vms: u32, mem_mb: u32) -> LeaseRequest {
        LeaseRequest {
            id: RequestId(id),
            origin: Origin::External,
            grid: GridId(0),
            cluster: Some(ClusterId(0)),
            arrival: EmuTime::ZERO,
            start: None,
            vms,
            cores_per_vm: 1,
            mem_mb,
            duration: EmuDuration::from_secs(60),
            lease_type: LeaseType::BestEffortSuspendable,
            deadline: None,
        }
    }

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

    #[test]
    fn first_fit_fills_hosts_in_order_and_respects_memory() {
        let mut s = Scheduler::new(&hosts(2, 4, 2048));
        // 3 VMs of 1 GB: host 0 holds two by memory, the third goes to host 1.
        assert_eq!(
            s.submit(&req(0, 3, 1024)),
            Decision::Start {
                lease: RequestId(0),
                hosts: vec![0, 0, 1]
            }
        );
        assert_eq!(s.hosts()[0].used_memory_mb, 2048);
        assert_eq!(s.hosts()[1].used_cores, 1);
    }

    #[test]
    fn fcfs_queues_behind_the_head_and_starts_in_order_on_release() {
        let mut s = Scheduler::new(&hosts(1, 4, 8192));
        assert!(matches!(s.submit(&req(0, 3, 100)), Decision::Start { .. }));
        assert_eq!(s.submit(&req(1, 2, 100)), Decision::Queued(RequestId(1)));
        // Fits now, but FCFS without backfilling keeps it behind request 1.
        assert_eq!(s.submit(&req(2, 1, 100)), Decision::Queued(RequestId(2)));
        let started = s.finish(RequestId(0));
        assert_eq!(started.len(), 2);
        assert!(matches!(&started[0], Decision::Start { lease, .. } if *lease == RequestId(1)));
        assert!(matches!(&started[1], Decision::Start { lease, .. } if *lease == RequestId(2)));
        assert_eq!(s.queued().count(), 0);
    }

    #[test]
    fn oversized_requests_are_rejected() {
        let mut s = Scheduler::new(&hosts(2, 2, 4096));
        assert!(matches!(s.submit(&req(0, 5, 10)), Decision::Reject { .. }));
        // Fits by cores (4) but not by memory per host (2 GB each holds one 3 GB VM at most 0).
        assert!(matches!(
            s.submit(&req(1, 1, 5000)),
            Decision::Reject { .. }
        ));
    }

    #[test]
    fn release_returns_capacity_exactly() {
        let mut s = Scheduler::new(&hosts(3, 4, 4096));
        s.submit(&req(0, 5, 1000));
        s.finish(RequestId(0));
        assert!(s
            .hosts()
            .iter()
            .all(|h| h.used_cores == 0 && h.used_memory_mb == 0));
    }
}
