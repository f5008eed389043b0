//! The VM actor: one instance of a VM on a host. It walks the pure [`VmState`] machine along
//! the timed steps its LRMS plans (deploy and boot, run, pause, suspend, resume, stop),
//! tells its host when it starts and stops taking cores and memory, and reports to its LRMS
//! when it finishes, is cancelled or is suspended. A new plan calls off the pending steps of
//! the old one that are due after the new plan takes over (earlier ones still happen: a VM
//! planned to be paused in an hour keeps working, and finishes booting, until then).

use std::rc::{Rc, Weak};

use actix::{Actor, ActorContext, AsyncContext, Context, Handler};

use super::host::Host;
use super::lrms::Lrms;
use super::messages::{Occupy, Step, Vacate, VmCommand, VmRef, VmReport};
use super::{Emu, Inbox, Own, Peer};
use crate::lrms::Steps;
use crate::metrics::{Violation, VmSpan};
use crate::model::ClusterId;
use crate::model::VmState;
use crate::time::{EmuTime, Group, Members, Near};
use crate::trace::ActorId;

/// One virtual machine instance.
pub struct Vm {
    emu: Rc<Emu>,
    id: ActorId,
    owner: Rc<Own<Lrms>>,
    host: Rc<Peer<Host>>,
    vm: VmRef,
    cores: u32,
    mem_mb: u32,
    state: VmState,
    /// When it entered `state`.
    since: EmuTime,
    /// Its cluster and host index (for `intervals.csv`).
    place: (ClusterId, u16),
    /// Its own address, as its LRMS holds it (for its plans' steps); when the LRMS has let
    /// go of it, a plan makes one. Weak, unlike an LRMS's own address: a VM must stop when
    /// its LRMS lets go of it, and an actor that held its own address never would.
    me: Weak<Peer<Vm>>,
    /// Each plan whose steps may still be to come (weak: the clock holds a plan while its
    /// steps are pending, and lets go of it after the last).
    pending: OneOrMore<Weak<Group<Plan>>>,
}

/// One plan's steps as the clock holds them: each step's event in the clock's queue holds
/// this (shared) and its index, instead of a boxed closure of its own (see [`Group`]).
struct Plan {
    emu: Rc<Emu>,
    /// The VM's address.
    me: Rc<Peer<Vm>>,
    vm: VmRef,
    steps: Steps,
    /// The record under way when the plan came: every step's record is caused by it.
    cause: Option<u64>,
}

impl Plan {
    /// When its last step is due.
    fn last(&self) -> EmuTime {
        (self.steps.iter().map(|&(at, _)| at).max()).unwrap_or(EmuTime::ZERO)
    }
}

impl Members for Plan {
    fn fire(&self, member: u32) {
        let i = member as usize;
        // Members are the steps' indices (the handler below schedules no others).
        let Some(&(_, event)) = self.steps.get(i) else {
            return;
        };
        let step = Step {
            vm: self.vm,
            event,
            last: i + 1 == self.steps.len(),
        };
        (self.emu).send_caused(self.me.id, &self.me, step, self.cause);
    }
}

/// Where a VM instance runs and what it holds there.
pub struct VmSpec {
    /// The LRMS it reports to (one address shared by its VMs).
    pub owner: Rc<Own<Lrms>>,
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
    /// Its own address as the LRMS holds it (`Weak::new()`: none; a plan then makes one).
    pub me: Weak<Peer<Vm>>,
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
            me,
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
            me,
            pending: OneOrMore::new(),
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
        // (A plan the clock has let go of has no steps left to call off.)
        self.pending.retain(|old| {
            let Some(old) = old.upgrade() else {
                return false;
            };
            match msg.keep_until {
                Some(k) => {
                    old.cancel_after(k);
                    old.events().last() >= now
                }
                None => {
                    old.cancel();
                    false
                }
            }
        });
        // The address the LRMS holds (an actix address clone allocates twice), or else one.
        let me = self.me.upgrade().unwrap_or_else(|| {
            let me = Rc::new(Peer {
                id: self.id,
                addr: ctx.address(),
            });
            self.me = Rc::downgrade(&me);
            me
        });
        // The steps read the VM's mailbox and state first (see `Own`).
        let near = Near {
            home: self as *const Vm as usize,
            ..Inbox::<Step>::near(&*me)
        };
        // One allocation for all the steps of the plan.
        let plan = Rc::new(Group::new(Plan {
            emu: Rc::clone(&self.emu),
            me,
            vm: self.vm,
            steps: std::sync::Arc::clone(&msg.steps),
            cause: self.emu.tracer.current(),
        }));
        let group: Rc<Group<dyn Members>> = plan.clone();
        for (i, &(at, _)) in (0u32..).zip(msg.steps.iter()) {
            (self.emu.clock).at_member(at, near, Rc::clone(&group), i);
        }
        if !msg.steps.is_empty() {
            self.pending.push(Rc::downgrade(&plan));
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

/// A list that keeps its first item inline: a VM has one plan pending nearly always, and a
/// vector allocates on its first push (and takes three words in every VM, where the rare
/// others' box takes one).
struct OneOrMore<T> {
    /// The first item; `None` only when there are no others either.
    first: Option<T>,
    /// The others, in order. Boxed on purpose: one word in every VM instead of three, and
    /// only the rare VM with several plans pending pays the box.
    #[allow(clippy::box_collection)]
    rest: Option<Box<Vec<T>>>,
}

impl<T> OneOrMore<T> {
    /// An empty list.
    const fn new() -> OneOrMore<T> {
        OneOrMore {
            first: None,
            rest: None,
        }
    }

    /// Adds `item` at the end.
    fn push(&mut self, item: T) {
        match (&self.first, &mut self.rest) {
            (None, _) => self.first = Some(item),
            (Some(_), Some(rest)) => rest.push(item),
            (Some(_), None) => self.rest = Some(Box::new(vec![item])),
        }
    }

    /// Keeps the items for which `keep` says so (asking once for each, in order).
    fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let first = self.first.take().filter(|item| keep(item));
        if let Some(rest) = self.rest.as_mut() {
            rest.retain(|item| keep(item));
        }
        // The others' box goes with the last of them.
        let rest = self.rest.take().filter(|rest| !rest.is_empty());
        (self.first, self.rest) = match (first, rest) {
            (None, Some(mut rest)) => {
                let first = rest.remove(0);
                (Some(first), (!rest.is_empty()).then_some(rest))
            }
            (first, rest) => (first, rest),
        };
    }

    /// The items, in order.
    #[cfg(test)]
    fn iter(&self) -> impl Iterator<Item = &T> {
        self.first
            .iter()
            .chain(self.rest.iter().flat_map(|r| r.iter()))
    }
}

#[cfg(test)]
mod tests {
    use super::OneOrMore;

    fn items(list: &OneOrMore<u32>) -> Vec<u32> {
        list.iter().copied().collect()
    }

    #[test]
    fn one_or_more_keeps_order_and_asks_once_for_each_item() {
        let mut list = OneOrMore::new();
        assert_eq!(items(&list), Vec::<u32>::new());
        list.push(1);
        assert!(list.rest.is_none(), "one item allocates nothing");
        for i in 2..=5 {
            list.push(i);
        }
        assert_eq!(items(&list), [1, 2, 3, 4, 5]);
        // The first dropped: the next takes its place, and each item is asked about once.
        let mut asked = Vec::new();
        list.retain(|&i| {
            asked.push(i);
            i % 2 == 0
        });
        assert_eq!(asked, [1, 2, 3, 4, 5]);
        assert_eq!(items(&list), [2, 4]);
        assert_eq!(list.first, Some(2));
        list.push(6);
        assert_eq!(items(&list), [2, 4, 6]);
        list.retain(|&i| i == 6);
        assert_eq!(items(&list), [6]);
        assert!(
            list.rest.is_none(),
            "the others' box goes with the last of them"
        );
        list.retain(|_| false);
        assert_eq!(items(&list), Vec::<u32>::new());
        assert!(list.first.is_none() && list.rest.is_none());
        // Emptied, it fills from the front again.
        list.push(7);
        list.push(8);
        assert_eq!(items(&list), [7, 8]);
    }
}
