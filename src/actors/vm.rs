//! The VM actor: walks the [`VmState`] machine with timed transitions (deploy and boot, run
//! the lease's work) and tells its host when it leaves.

use std::rc::Rc;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler};

use super::host::Host;
use super::messages::{BootDone, Deploy, VmExited, VmRef, WorkDone};
use super::{Emu, Peer};
use crate::model::{RequestId, VmEvent, VmState};
use crate::time::EmuDuration;
use crate::trace::ActorId;

/// One virtual machine of a lease.
pub struct Vm {
    emu: Rc<Emu>,
    id: ActorId,
    host: Peer<Host>,
    lease: RequestId,
    index: u32,
    state: VmState,
    boot: EmuDuration,
    work: EmuDuration,
}

impl Vm {
    /// A VM that will boot for `boot` and then run for `work`.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        host: Peer<Host>,
        lease: RequestId,
        index: u32,
        boot: EmuDuration,
        work: EmuDuration,
    ) -> Vm {
        Vm {
            emu,
            id,
            host,
            lease,
            index,
            state: VmState::Pending,
            boot,
            work,
        }
    }

    fn step(&mut self, event: VmEvent) -> bool {
        match self.state.next(event) {
            Ok(s) => {
                self.state = s;
                true
            }
            Err(e) => {
                self.emu
                    .metrics
                    .borrow_mut()
                    .violation(format!("{}: {e}", self.emu.tracer.name(self.id)));
                false
            }
        }
    }

    fn vm_ref(&self) -> VmRef {
        VmRef {
            lease: self.lease,
            vm: self.index,
        }
    }

    fn me(&self, ctx: &Context<Self>) -> Peer<Vm> {
        Peer {
            id: self.id,
            addr: ctx.address(),
        }
    }
}

impl Actor for Vm {
    type Context = Context<Self>;
}

impl Handler<Deploy> for Vm {
    type Result = ();
    fn handle(&mut self, _: Deploy, ctx: &mut Context<Self>) {
        if self.step(VmEvent::Deploy) {
            let due = self.emu.now() + self.boot;
            self.emu
                .send_at(due, self.id, &self.me(ctx), BootDone(self.vm_ref()));
        }
    }
}

impl Handler<BootDone> for Vm {
    type Result = ();
    fn handle(&mut self, _: BootDone, ctx: &mut Context<Self>) {
        if self.step(VmEvent::Booted) {
            let due = self.emu.now() + self.work;
            self.emu
                .send_at(due, self.id, &self.me(ctx), WorkDone(self.vm_ref()));
        }
    }
}

impl Handler<WorkDone> for Vm {
    type Result = ();
    fn handle(&mut self, _: WorkDone, ctx: &mut Context<Self>) {
        if self.step(VmEvent::Completed) {
            self.emu.send(
                self.id,
                &self.host,
                VmExited {
                    lease: self.lease,
                    vm: self.index,
                },
            );
            ctx.stop();
        }
    }
}
