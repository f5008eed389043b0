//! The actix shell: IGG (with its post office), LRMS, host, VM, the workload sources (local
//! users per cluster, a DVE manager per Grid) and the director. Actors hold state, call the
//! pure core (`lrms`, `igg`), send messages and set timers — through [`Emu`], the one path
//! that stamps, counts and traces every message.

pub mod director;
pub mod host;
pub mod igg;
pub mod lrms;
pub mod messages;
pub mod users;
pub mod vm;

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler, Message};

use crate::fault::Faults;
use crate::metrics::Metrics;
use crate::model::GridId;
use crate::time::{Clock, EmuTime, TimerHandle};
use crate::topology::Topology;
use crate::trace::{ActorId, Traced, Tracer};

/// The run's shared context: clock, tracer, observations and the topology.
pub struct Emu {
    /// The one clock.
    pub clock: Clock,
    /// The message path's recorder.
    pub tracer: Tracer,
    /// Observations (a side channel, not messages).
    pub metrics: RefCell<Metrics>,
    /// The topology being emulated.
    pub topo: Rc<Topology>,
    /// Faults on the links between IGGs.
    pub faults: RefCell<Faults>,
    /// Test-only: run a deliberately broken peering protocol (see `RunOptions`).
    pub broken_protocol: bool,
}

/// A cluster's cost of a resource unit, drawn from `peering.unit_cost` (paper 004 Table 1)
/// with the run's seed.
pub fn cluster_unit_cost(emu: &Emu, c: crate::model::ClusterId) -> f64 {
    let (lo, hi) = emu.topo.peering.unit_cost;
    let u = (crate::time::stream_seed(emu.topo.emulation.seed, &format!("unit-cost:{}", c.0)) >> 11)
        as f64
        / (1u64 << 53) as f64;
    lo + (hi - lo) * u
}

/// An actor's address together with its trace name.
pub struct Peer<A: Actor> {
    /// Trace handle.
    pub id: ActorId,
    /// Mailbox.
    pub addr: Addr<A>,
}

impl<A: Actor> Clone for Peer<A> {
    fn clone(&self) -> Self {
        Peer {
            id: self.id,
            addr: self.addr.clone(),
        }
    }
}

impl Emu {
    /// Emulated now.
    pub fn now(&self) -> EmuTime {
        self.clock.now()
    }

    /// Sends `msg` from `from` to `to` now, recording it.
    #[inline]
    pub fn send<A, M>(&self, from: ActorId, to: &Peer<A>, msg: M)
    where
        A: Actor + Handler<M>,
        A::Context: ToEnvelope<A, M>,
        M: Message + Traced + Send + 'static,
        M::Result: Send,
    {
        self.tracer
            .record(self.clock.now(), from, to.id, msg.kind(), msg.correlation());
        to.addr.do_send(msg);
    }

    /// Delivers `msg` from `from` to `to` at emulated time `due` (recorded when delivered).
    pub fn send_at<A, M>(self: &Rc<Self>, due: EmuTime, from: ActorId, to: &Peer<A>, msg: M)
    where
        A: Actor + Handler<M>,
        A::Context: ToEnvelope<A, M>,
        M: Message + Traced + Send + 'static,
        M::Result: Send,
    {
        let emu = Rc::clone(self);
        let to = to.clone();
        self.clock.at(due, move || emu.send(from, &to, msg));
    }

    /// Like [`Emu::send_at`], but the delivery can be called off (and then is not recorded).
    pub fn send_at_cancellable<A, M>(
        self: &Rc<Self>,
        due: EmuTime,
        from: ActorId,
        to: &Peer<A>,
        msg: M,
    ) -> TimerHandle
    where
        A: Actor + Handler<M>,
        A::Context: ToEnvelope<A, M>,
        M: Message + Traced + Send + 'static,
        M::Result: Send,
    {
        let emu = Rc::clone(self);
        let to = to.clone();
        self.clock
            .at_cancellable(due, move || emu.send(from, &to, msg))
    }

    /// Sends `msg` over the link between the IGGs of Grids `from_grid` and `to_grid`: recorded
    /// now, then delivered (maybe late, twice, or never) as the fault injector decides, and
    /// lost if the receiving IGG is down when it arrives.
    pub fn send_link<A, M>(
        self: &Rc<Self>,
        from_grid: GridId,
        to_grid: GridId,
        from: ActorId,
        to: &Peer<A>,
        msg: M,
    ) where
        A: Actor + Handler<M>,
        A::Context: ToEnvelope<A, M>,
        M: Message + Traced + Send + Clone + 'static,
        M::Result: Send,
    {
        let now = self.clock.now();
        self.tracer
            .record(now, from, to.id, msg.kind(), msg.correlation());
        self.metrics.borrow_mut().peering_message(from_grid);
        let deliveries = self.faults.borrow_mut().deliveries(from_grid, to_grid, now);
        for delay in deliveries {
            let (emu, addr, m) = (Rc::clone(self), to.addr.clone(), msg.clone());
            self.clock.at(now + delay, move || {
                let down = emu.faults.borrow().is_down(to_grid, emu.clock.now());
                if down {
                    emu.faults.borrow_mut().counts.to_crashed += 1;
                } else {
                    addr.do_send(m);
                }
            });
        }
    }

    /// Sends a request to `to` and waits for its reply; both directions are recorded. `None`
    /// if the receiver is gone.
    pub fn call<A, M>(
        self: &Rc<Self>,
        from: ActorId,
        to: &Peer<A>,
        msg: M,
    ) -> impl Future<Output = Option<M::Result>> + 'static
    where
        A: Actor + Handler<M>,
        A::Context: ToEnvelope<A, M>,
        M: Message + Traced + Send + 'static,
        M::Result: Traced + Send,
    {
        let emu = Rc::clone(self);
        let to_id = to.id;
        self.tracer
            .record(self.clock.now(), from, to_id, msg.kind(), msg.correlation());
        let reply = to.addr.send(msg);
        async move {
            let answer = reply.await.ok()?;
            emu.tracer.record(
                emu.clock.now(),
                to_id,
                from,
                answer.kind(),
                answer.correlation(),
            );
            Some(answer)
        }
    }
}
