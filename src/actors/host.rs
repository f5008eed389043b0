//! The host actor: runs VM actors, keeps its own account of cores and memory in use, and
//! records an invariant violation if the LRMS ever places more than it holds.

use std::collections::BTreeMap;
use std::rc::Rc;

use actix::{Actor, AsyncContext, Context, Handler};

use super::lrms::Lrms;
use super::messages::{Deploy, StartVm, VmExited, VmRef, VmReleased};
use super::vm::Vm;
use super::{Emu, Peer};
use crate::model::RequestId;
use crate::topology::HostSpec;
use crate::trace::ActorId;

/// One physical host of a cluster.
pub struct Host {
    emu: Rc<Emu>,
    id: ActorId,
    lrms: Peer<Lrms>,
    spec: HostSpec,
    used_cores: u64,
    used_mem_mb: u64,
    vms: BTreeMap<(RequestId, u32), (u32, u32)>,
}

impl Host {
    /// A host of `spec` reporting to `lrms`.
    pub fn new(emu: Rc<Emu>, id: ActorId, lrms: Peer<Lrms>, spec: HostSpec) -> Host {
        Host {
            emu,
            id,
            lrms,
            spec,
            used_cores: 0,
            used_mem_mb: 0,
            vms: BTreeMap::new(),
        }
    }
}

impl Actor for Host {
    type Context = Context<Self>;
}

impl Handler<StartVm> for Host {
    type Result = ();
    fn handle(&mut self, msg: StartVm, ctx: &mut Context<Self>) {
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
        self.vms
            .insert((msg.lease, msg.vm), (msg.cores, msg.mem_mb));
        let name = format!("vm:{}/{}", self.emu.topo.label(msg.lease), msg.vm);
        let vm_id = self.emu.tracer.register(name);
        let me = Peer {
            id: self.id,
            addr: ctx.address(),
        };
        let vm = Vm::new(
            Rc::clone(&self.emu),
            vm_id,
            me,
            msg.lease,
            msg.vm,
            msg.boot,
            msg.work,
        )
        .start();
        self.emu.send(
            self.id,
            &Peer {
                id: vm_id,
                addr: vm,
            },
            Deploy(VmRef {
                lease: msg.lease,
                vm: msg.vm,
            }),
        );
    }
}

impl Handler<VmExited> for Host {
    type Result = ();
    fn handle(&mut self, msg: VmExited, _: &mut Context<Self>) {
        if let Some((cores, mem)) = self.vms.remove(&(msg.lease, msg.vm)) {
            self.used_cores -= u64::from(cores);
            self.used_mem_mb -= u64::from(mem);
        }
        self.emu.send(
            self.id,
            &self.lrms,
            VmReleased {
                lease: msg.lease,
                vm: msg.vm,
            },
        );
    }
}
