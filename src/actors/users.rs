//! Workload sources: the local users of a cluster (submitting to its LRMS) and the external
//! user agent of a Grid — the papers' DVE manager — submitting to its IGG. Each submits its
//! requests at their arrival times and reports their outcomes to the director.

use std::rc::Rc;

use actix::{Actor, AsyncContext, Context, Handler};

use super::director::Director;
use super::igg::Igg;
use super::lrms::Lrms;
use super::messages::{Arrive, LeaseEnded, LeaseStarted, RequestDone, SubmitExternal, SubmitLocal};
use super::{Emu, Peer};
use crate::model::RequestId;
use crate::trace::ActorId;

/// Where a workload source submits.
pub enum Target {
    /// External users submit to their Grid's IGG.
    Igg(Peer<Igg>),
    /// Local users submit to their cluster's LRMS.
    Lrms(Peer<Lrms>),
}

/// A workload source.
pub struct Users {
    emu: Rc<Emu>,
    id: ActorId,
    target: Target,
    director: Peer<Director>,
    requests: Vec<RequestId>,
}

impl Users {
    /// A source submitting `requests` to `target`.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        target: Target,
        director: Peer<Director>,
        requests: Vec<RequestId>,
    ) -> Users {
        Users {
            emu,
            id,
            target,
            director,
            requests,
        }
    }
}

emu_shell!(Users);

handles_caused!(Users; Arrive, LeaseEnded, LeaseStarted);

impl Actor for Users {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // One address shared by the arrivals (an actix address clone allocates twice).
        let me = Rc::new(Peer {
            id: self.id,
            addr: ctx.address(),
        });
        for &r in &self.requests {
            let due = self.emu.request(r).arrival;
            self.emu.send_at(due, self.id, Rc::clone(&me), Arrive(r));
        }
    }
}

impl Handler<Arrive> for Users {
    type Result = ();
    fn handle(&mut self, msg: Arrive, _: &mut Context<Self>) {
        let req = self.emu.request(msg.0).clone();
        match &self.target {
            Target::Igg(igg) => self.emu.send(self.id, igg, SubmitExternal(req)),
            Target::Lrms(lrms) => self.emu.send(self.id, lrms, SubmitLocal(req)),
        }
    }
}

impl Handler<LeaseStarted> for Users {
    type Result = ();
    fn handle(&mut self, _: LeaseStarted, _: &mut Context<Self>) {}
}

impl Handler<LeaseEnded> for Users {
    type Result = ();
    fn handle(&mut self, msg: LeaseEnded, _: &mut Context<Self>) {
        self.emu.send(
            self.id,
            &self.director,
            RequestDone {
                lease: msg.lease,
                state: msg.state,
            },
        );
    }
}
