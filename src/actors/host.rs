//! The host actor: keeps its own account of the cores and memory its VM instances take and
//! records an invariant violation if the LRMS ever places more than it holds (memory only
//! where the cluster enforces it: `lrms.enforce_memory`).
//!
//! A VM holds its host over a half-open interval [start, end): one leaving at the instant
//! another arrives does not overlap it, whichever message the host handles first (FIFO
//! happens to put the leaving first; real concurrency and explored interleavings need not).
//! So capacity is judged when an instant is over — at the host's first message of a later
//! instant, or by a [`CapacityCheck`] it sends itself one microsecond on when an arrival put
//! it over. A run that ends in that instant reports it when the results are collected (the
//! host keeps the run's metrics told of what it holds while it is over).

use std::collections::BTreeMap;
use std::rc::Rc;

use actix::{Actor, AsyncContext, Context, Handler};

use super::messages::{CapacityCheck, Occupy, Vacate, VmRef};
use super::Emu;
use super::Peer;
use crate::metrics::Violation;
use crate::model::HostSpec;
use crate::model::{ClusterId, RequestId};
use crate::time::{EmuDuration, EmuTime};
use crate::trace::ActorId;

/// One physical host of a cluster.
pub struct Host {
    emu: Rc<Emu>,
    id: ActorId,
    spec: HostSpec,
    enforce_memory: bool,
    used_cores: u64,
    used_mem_mb: u64,
    /// What each VM takes here, and how many instances of it are here: a resumed or migrated
    /// VM's new instance may arrive at the instant its old one leaves, in either order.
    vms: BTreeMap<(RequestId, u32), (u32, u32, u32)>,
    /// The instant of the last message handled.
    instant: EmuTime,
    /// Whether an arrival at `instant` put the host over capacity (judged when it is over).
    over_at_instant: bool,
    /// The cluster it belongs to (the live view's count of cores in use).
    cluster: ClusterId,
    /// Whether capacity is judged at each arrival (only in the deliberately broken variant
    /// [`super::graph::Broken::EagerCapacity`]).
    eager: bool,
}

impl Host {
    /// A host of `spec`; with `enforce_memory` false its VMs may overcommit memory.
    pub fn new(
        emu: Rc<Emu>,
        (id, cluster): (ActorId, ClusterId),
        spec: HostSpec,
        enforce_memory: bool,
    ) -> Host {
        Host {
            cluster,
            emu,
            id,
            spec,
            enforce_memory,
            used_cores: 0,
            used_mem_mb: 0,
            vms: BTreeMap::new(),
            instant: EmuTime::ZERO,
            over_at_instant: false,
            eager: false,
        }
    }

    /// This host judging capacity at each arrival (`true`: the broken variant) or when the
    /// instant is over (`false`, the sound protocol).
    pub fn judging_eagerly(mut self, eager: bool) -> Host {
        self.eager = eager;
        self
    }

    fn over(&self) -> bool {
        let mem_over = self.enforce_memory && self.used_mem_mb > self.spec.memory_mb;
        self.used_cores > u64::from(self.spec.cores) || mem_over
    }

    /// Ends the last instant if `now` is later: a host still over capacity then is a
    /// violation (at that instant, with what it held when it ended).
    fn close_instant(&mut self, now: EmuTime) {
        if now <= self.instant {
            return;
        }
        if std::mem::take(&mut self.over_at_instant) {
            let mut metrics = self.emu.metrics.borrow_mut();
            metrics.over_capacity_now(self.id.0, None);
            if self.over() {
                metrics.violation(self.over_capacity());
            }
        }
        self.instant = now;
    }

    /// The violation this host's holdings make now.
    fn over_capacity(&self) -> Violation {
        Violation::HostOverCapacity {
            host: self.emu.tracer.name(self.id).to_string(),
            at: self.instant,
            cores: (self.used_cores, self.spec.cores),
            memory_mb: (self.used_mem_mb, self.spec.memory_mb),
        }
    }

    /// Tells the metrics what this host holds while an arrival has put it over in the
    /// instant under way (in case the run ends in it).
    fn note_holdings(&self) {
        if self.over_at_instant {
            let what = self.over().then(|| self.over_capacity());
            self.emu
                .metrics
                .borrow_mut()
                .over_capacity_now(self.id.0, what);
        }
    }

    fn key(vm: VmRef) -> (RequestId, u32) {
        (vm.lease, vm.vm)
    }
}

emu_shell!(Host);

handles_caused!(Host; Occupy, Vacate, CapacityCheck);

impl Actor for Host {
    type Context = Context<Self>;
}

impl Handler<Occupy> for Host {
    type Result = ();
    fn handle(&mut self, msg: Occupy, ctx: &mut Context<Self>) {
        let now = self.emu.now();
        self.close_instant(now);
        self.used_cores += u64::from(msg.cores);
        self.used_mem_mb += u64::from(msg.mem_mb);
        let cores = u64::from(msg.cores);
        self.emu
            .metrics
            .borrow_mut()
            .host_cores(self.cluster, cores, true);
        if self.eager && self.over() {
            let what = self.over_capacity();
            self.emu.metrics.borrow_mut().violation(what);
        } else if self.over() && !self.over_at_instant {
            self.over_at_instant = true;
            let me = Peer {
                id: self.id,
                addr: ctx.address(),
            };
            let next = now + EmuDuration::from_micros(1);
            self.emu.send_at(next, self.id, me, CapacityCheck);
        }
        let held = self.vms.entry(Self::key(msg.vm)).or_insert((0, 0, 0));
        *held = (msg.cores, msg.mem_mb, held.2 + 1);
        self.note_holdings();
    }
}

impl Handler<Vacate> for Host {
    type Result = ();
    fn handle(&mut self, msg: Vacate, _: &mut Context<Self>) {
        self.close_instant(self.emu.now());
        let key = Self::key(msg.vm);
        let Some(&(cores, mem, instances)) = self.vms.get(&key) else {
            return;
        };
        self.used_cores -= u64::from(cores);
        self.used_mem_mb -= u64::from(mem);
        self.emu
            .metrics
            .borrow_mut()
            .host_cores(self.cluster, u64::from(cores), false);
        if instances > 1 {
            self.vms.insert(key, (cores, mem, instances - 1));
        } else {
            self.vms.remove(&key);
        }
        self.note_holdings();
    }
}

impl Handler<CapacityCheck> for Host {
    type Result = ();
    fn handle(&mut self, _: CapacityCheck, _: &mut Context<Self>) {
        self.close_instant(self.emu.now());
    }
}
