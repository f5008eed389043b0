//! The VM actor: one instance of a VM on a host. It walks the pure [`VmState`] machine along
//! the timed steps its LRMS plans (deploy and boot, run, pause, suspend, resume, stop),
//! tells its host when it starts and stops taking cores and memory, and reports to its LRMS
//! when it finishes, is cancelled or is suspended. A new plan calls off the pending steps of
//! the old one that are due after the new plan takes over (earlier ones still happen: a VM
//! planned to be paused in an hour keeps working, and finishes booting, until then).

use std::rc::Rc;

use actix::{Actor, ActorContext, AsyncContext, Context, Handler};

use super::host::Host;
use super::lrms::Lrms;
use super::messages::{Occupy, Step, Vacate, VmCommand, VmRef, VmReport};
use super::{Emu, Own, Peer};
use crate::metrics::{Violation, VmSpan};
use crate::model::ClusterId;
use crate::model::VmState;
use crate::time::{EmuTime, TimerHandle};
use crate::trace::ActorId;

/// One virtual machine instance.
pub struct Vm {
    emu: Rc<Emu>,
    id: ActorId,
    owner: Rc<Peer<Lrms>>,
    host: Rc<Peer<Host>>,
    vm: VmRef,
    cores: u32,
    mem_mb: u32,
    state: VmState,
    /// When it entered `state`.
    since: EmuTime,
    /// Its cluster and host index (for `intervals.csv`).
    place: (ClusterId, u16),
    /// Each plan's steps still to come: the last one's time, and their handle.
    pending: Vec<(EmuTime, TimerHandle)>,
}

/// Where a VM instance runs and what it holds there.
pub struct VmSpec {
    /// The LRMS it reports to (one address shared by its VMs).
    pub owner: Rc<Peer<Lrms>>,
    /// The host it occupies (one address shared by the VMs placed on it).
    pub host: Rc<Peer<Host>>,
    /// Which VM of which lease it is.
    pub vm: VmRef,
    /// Cores it takes.
    pub cores: u32,
    /// Memory it takes, MB.
    pub mem_mb: u32,
    /// Its cluster and the host's index there.
    pub place: (ClusterId, u16),
}

impl Vm {
    /// An instance as `spec` says, starting in `state`.
    pub fn new(emu: Rc<Emu>, id: ActorId, spec: VmSpec, state: VmState) -> Vm {
        let VmSpec {
            owner,
            host,
            vm,
            cores,
            mem_mb,
            place,
        } = spec;
        Vm {
            since: emu.now(),
            place,
            emu,
            id,
            owner,
            host,
            vm,
            cores,
            mem_mb,
            state,
            pending: Vec::new(),
        }
    }
}

emu_shell!(Vm);

handles_caused!(Vm; Step, VmCommand);

impl Actor for Vm {
    type Context = Context<Self>;
}

impl Handler<VmCommand> for Vm {
    type Result = ();
    fn handle(&mut self, msg: VmCommand, ctx: &mut Context<Self>) {
        let now = self.emu.now();
        // Earlier plans' steps still to come are kept up to `keep_until`, and called off
        // after it (all of them without it).
        self.pending.retain(|(last, old)| match msg.keep_until {
            Some(k) => {
                old.cancel_after(k);
                *last >= now
            }
            None => {
                old.cancel();
                false
            }
        });
        // One address and one handle for all the steps of the plan.
        let me = Rc::new(Own::new(self, self.id, ctx.address()));
        let handle = TimerHandle::new();
        let n = msg.steps.len();
        for (i, &(at, event)) in msg.steps.iter().enumerate() {
            let step = Step {
                vm: self.vm,
                event,
                last: i + 1 == n,
            };
            (self.emu).send_at_with(at, self.id, Rc::clone(&me), step, &handle);
        }
        if let Some(&(last, _)) = msg.steps.iter().max_by_key(|(at, _)| *at) {
            self.pending.push((last, handle));
        }
    }
}

impl Handler<Step> for Vm {
    type Result = ();
    fn handle(&mut self, step: Step, ctx: &mut Context<Self>) {
        let before = self.state;
        match before.next(step.event) {
            Ok(after) => {
                self.state = after;
                let now = self.emu.now();
                // A state left the instant it was entered (a boot of 0 s) is no span.
                if after != before && now > self.since {
                    let span = VmSpan {
                        lease: self.vm.lease,
                        vm: self.vm.vm,
                        cluster: self.place.0,
                        host: self.place.1,
                        state: before,
                        start: self.since,
                        end: now,
                    };
                    self.emu.metrics.borrow_mut().vm_span(span);
                }
                if after != before {
                    self.since = now;
                }
            }
            Err(e) => {
                let what = Violation::VmStep {
                    vm: self.emu.tracer.name(self.id).to_string(),
                    error: e.to_string(),
                };
                self.emu.metrics.borrow_mut().violation(what);
                return;
            }
        }
        match (before.holds_host(), self.state.holds_host()) {
            (false, true) => {
                let msg = Occupy {
                    vm: self.vm,
                    cores: self.cores,
                    mem_mb: self.mem_mb,
                };
                self.emu.send(self.id, &self.host, msg);
            }
            (true, false) => self.emu.send(self.id, &self.host, Vacate { vm: self.vm }),
            _ => {}
        }
        if matches!(
            self.state,
            VmState::Finished | VmState::Cancelled | VmState::Suspended
        ) && step.last
        {
            self.emu.send(
                self.id,
                &self.owner,
                VmReport {
                    vm: self.vm,
                    state: self.state,
                },
            );
            // The instance's life is over: finished, cancelled, or its image is on storage.
            ctx.stop();
        }
    }
}
