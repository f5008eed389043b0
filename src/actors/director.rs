//! The director: ends the run when every request is terminal (or at the end time / horizon)
//! and hands control back to the library, which collects the results.

use std::rc::Rc;

use actix::{Actor, AsyncContext, Context, Handler};
use tokio::sync::oneshot;

use super::messages::{EndOfRun, RequestDone};
use super::{Emu, Peer};
use crate::time::EmuTime;
use crate::topology::EndCondition;
use crate::trace::ActorId;

/// Starts and ends the run.
pub struct Director {
    emu: Rc<Emu>,
    id: ActorId,
    outstanding: usize,
    /// Requests reported done: one reported twice (an invariant violation the metrics
    /// report) must not count twice, or the run would end with others still open.
    reported: std::collections::HashSet<crate::model::RequestId>,
    end: EndCondition,
    done: Option<oneshot::Sender<EmuTime>>,
}

impl Director {
    /// A director for a run with `requests` requests; `done` receives the end time.
    pub fn new(
        emu: Rc<Emu>,
        id: ActorId,
        requests: usize,
        end: EndCondition,
        done: oneshot::Sender<EmuTime>,
    ) -> Director {
        Director {
            emu,
            id,
            outstanding: requests,
            reported: std::collections::HashSet::new(),
            end,
            done: Some(done),
        }
    }

    /// Every request this director counts is done: the run ends, or, when it is one shard
    /// of several, this shard says so and the run ends when the last does (a shard with
    /// nothing of its own left still serves the others' redirected requests meanwhile).
    fn all_done(&mut self) {
        match self.emu.federation() {
            Some(federation) => federation.shard_done(),
            None => self.finish(),
        }
    }

    fn finish(&mut self) {
        if let Some(tx) = self.done.take() {
            // Nothing may move between the end and the collection of the results.
            self.emu.clock().halt();
            // The receiver only goes away if the run was abandoned; nothing to report then.
            let _ = tx.send(self.emu.now());
        }
    }
}

emu_shell!(Director);

handles_caused!(Director; EndOfRun, RequestDone);

impl Actor for Director {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let me = Peer {
            id: self.id,
            addr: ctx.address(),
        };
        self.emu.send_at(self.end.limit(), self.id, me, EndOfRun);
        if self.outstanding == 0 && matches!(self.end, EndCondition::AllDone { .. }) {
            self.all_done();
        }
    }
}

impl Handler<RequestDone> for Director {
    type Result = ();
    fn handle(&mut self, done: RequestDone, _: &mut Context<Self>) {
        if !self.reported.insert(done.lease) {
            return;
        }
        let was = self.outstanding;
        self.outstanding = was.saturating_sub(1);
        // Once, when the last one is done (a request reported twice must not end it twice).
        if was == 1 && matches!(self.end, EndCondition::AllDone { .. }) {
            self.all_done();
        }
    }
}

impl Handler<EndOfRun> for Director {
    type Result = ();
    fn handle(&mut self, _: EndOfRun, _: &mut Context<Self>) {
        self.finish();
    }
}
