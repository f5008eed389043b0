//! The host actor: keeps its own account of the cores and memory its VM instances take and
//! records an invariant violation if the LRMS ever places more than it holds (memory only
//! where the cluster enforces it: `lrms.enforce_memory`).

use std::collections::BTreeMap;
use std::rc::Rc;

use actix::{Actor, Context, Handler};

use super::messages::{Occupy, Vacate, VmRef};
use super::Emu;
use crate::metrics::Violation;
use crate::model::RequestId;
use crate::topology::HostSpec;
use crate::trace::ActorId;

/// One physical host of a cluster.
pub struct Host {
    emu: Rc<Emu>,
    id: ActorId,
    spec: HostSpec,
    enforce_memory: bool,
    used_cores: u64,
    used_mem_mb: u64,
    vms: BTreeMap<(RequestId, u32), (u32, u32)>,
}

impl Host {
    /// A host of `spec`; with `enforce_memory` false its VMs may overcommit memory.
    pub fn new(emu: Rc<Emu>, id: ActorId, spec: HostSpec, enforce_memory: bool) -> Host {
        Host {
            emu,
            id,
            spec,
            enforce_memory,
            used_cores: 0,
            used_mem_mb: 0,
            vms: BTreeMap::new(),
        }
    }

    fn key(vm: VmRef) -> (RequestId, u32) {
        (vm.lease, vm.vm)
    }
}

emu_shell!(Host);

handles_caused!(Host; Occupy, Vacate);

impl Actor for Host {
    type Context = Context<Self>;
}

impl Handler<Occupy> for Host {
    type Result = ();
    fn handle(&mut self, msg: Occupy, _: &mut Context<Self>) {
        self.used_cores += u64::from(msg.cores);
        self.used_mem_mb += u64::from(msg.mem_mb);
        let mem_over = self.enforce_memory && self.used_mem_mb > self.spec.memory_mb;
        if self.used_cores > u64::from(self.spec.cores) || mem_over {
            let what = Violation::HostOverCapacity {
                host: self.emu.tracer.name(self.id).to_string(),
                at: self.emu.now(),
                cores: (self.used_cores, self.spec.cores),
                memory_mb: (self.used_mem_mb, self.spec.memory_mb),
            };
            self.emu.metrics.borrow_mut().violation(what);
        }
        self.vms.insert(Self::key(msg.vm), (msg.cores, msg.mem_mb));
    }
}

impl Handler<Vacate> for Host {
    type Result = ();
    fn handle(&mut self, msg: Vacate, _: &mut Context<Self>) {
        if let Some((cores, mem)) = self.vms.remove(&Self::key(msg.vm)) {
            self.used_cores -= u64::from(cores);
            self.used_mem_mb -= u64::from(mem);
        }
    }
}
