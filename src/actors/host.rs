//! The host actor: keeps its own account of the cores and memory its VM instances take and
//! records an invariant violation if the LRMS ever places more than it holds.

use std::collections::BTreeMap;
use std::rc::Rc;

use actix::{Actor, Context, Handler};

use super::messages::{Occupy, Vacate, VmRef};
use super::Emu;
use crate::model::RequestId;
use crate::topology::HostSpec;
use crate::trace::ActorId;

/// One physical host of a cluster.
pub struct Host {
    emu: Rc<Emu>,
    id: ActorId,
    spec: HostSpec,
    used_cores: u64,
    used_mem_mb: u64,
    vms: BTreeMap<(RequestId, u32), (u32, u32)>,
}

impl Host {
    /// A host of `spec`.
    pub fn new(emu: Rc<Emu>, id: ActorId, spec: HostSpec) -> Host {
        Host {
            emu,
            id,
            spec,
            used_cores: 0,
            used_mem_mb: 0,
            vms: BTreeMap::new(),
        }
    }

    fn key(vm: VmRef) -> (RequestId, u32) {
        (vm.lease, vm.vm)
    }
}

impl Actor for Host {
    type Context = Context<Self>;
}

impl Handler<Occupy> for Host {
    type Result = ();
    fn handle(&mut self, msg: Occupy, _: &mut Context<Self>) {
        self.used_cores += u64::from(msg.cores);
        self.used_mem_mb += u64::from(msg.mem_mb);
        if self.used_cores > u64::from(self.spec.cores) || self.used_mem_mb > self.spec.memory_mb {
            let what = format!(
                "{} over capacity at {}: {} / {} cores, {} / {} MB",
                self.emu.tracer.name(self.id),
                self.emu.now(),
                self.used_cores,
                self.spec.cores,
                self.used_mem_mb,
                self.spec.memory_mb
            );
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
