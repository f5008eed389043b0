//! The actix shell: IGG (with its post office), LRMS, host, VM, the workload sources (local
//! users per cluster, a DVE manager per Grid) and the director. Actors hold state, call the
//! pure core (`lrms`, `igg`), send messages and set timers — through [`Emu`], the one path
//! that stamps, counts and traces every message.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use actix::dev::ToEnvelope;
use actix::{Actor, Addr, Handler, Message};

/// A message (or a request answered through [`Emu::call`]) with the trace record that sent
/// it: its handler runs with that record as the cause of whatever it sends. It counts as work
/// in flight for the virtual clock until its handler takes it apart (or it is dropped).
pub struct Caused<M> {
    cause: u64,
    msg: M,
    _work: Work,
}

impl<M: Message> Message for Caused<M> {
    type Result = M::Result;
}

/// An actor's access to the run's context.
pub trait Shell {
    /// The run's shared context.
    fn emu(&self) -> &Emu;
}

/// Makes an actor whose context is its `emu` field a [`Shell`].
#[macro_export]
macro_rules! emu_shell {
    ($actor:ty) => {
        impl $crate::actors::Shell for $actor {
            fn emu(&self) -> &$crate::actors::Emu {
                &self.emu
            }
        }
    };
}

/// Lets an actor (a [`Shell`]) take these messages wrapped as [`Caused`]
/// (and, after `calls:`, these requests): the wrapped message's
/// handler runs with the sending record as the tracer's current cause. (One impl per message,
/// not a blanket one, so that type inference never recurses through wrappers.)
#[macro_export]
macro_rules! handles_caused {
    ($actor:ty; $($msg:ty),* $(; calls: $($call:ty),*)?) => {
        $(
            impl actix::Handler<$crate::actors::Caused<$msg>> for $actor {
                type Result = ();
                fn handle(
                    &mut self,
                    c: $crate::actors::Caused<$msg>,
                    ctx: &mut <$actor as actix::Actor>::Context,
                ) {
                    let (cause, msg) = c.into_parts();
                    let before = $crate::actors::Shell::emu(self).tracer().enter(Some(cause));
                    <$actor as actix::Handler<$msg>>::handle(self, msg, ctx);
                    $crate::actors::Shell::emu(self).tracer().enter(before);
                }
            }
        )*
        $($(
            impl actix::Handler<$crate::actors::Caused<$call>> for $actor {
                type Result = actix::MessageResult<$crate::actors::Caused<$call>>;
                fn handle(
                    &mut self,
                    c: $crate::actors::Caused<$call>,
                    ctx: &mut <$actor as actix::Actor>::Context,
                ) -> Self::Result {
                    let (cause, msg) = c.into_parts();
                    let before = $crate::actors::Shell::emu(self).tracer().enter(Some(cause));
                    let actix::MessageResult(answer) =
                        <$actor as actix::Handler<$call>>::handle(self, msg, ctx);
                    $crate::actors::Shell::emu(self).tracer().enter(before);
                    actix::MessageResult(answer)
                }
            }
        )*)?
    };
}

impl<M> Caused<M> {
    /// The sending record and the message (ending its count as work in flight: the handler
    /// that takes it apart runs to its end before the clock can look).
    pub fn into_parts(self) -> (u64, M) {
        (self.cause, self.msg)
    }

    fn new(cause: u64, msg: M) -> Caused<M> {
        Caused {
            cause,
            msg,
            _work: Work::begin(),
        }
    }
}

pub(crate) mod cap;
pub mod director;
pub mod graph;
pub mod host;
pub mod igg;
pub mod lrms;
pub mod messages;
pub mod shard;
pub mod users;
pub mod vm;

use crate::fault::Faults;
use crate::metrics::Metrics;
use crate::model::{GridId, LeaseRequest, RequestId};
use crate::time::{Clock, EmuTime, Lane, Near, TimerHandle, Work};
use crate::trace::{ActorId, Traced, Tracer};

/// The run's shared context: clock, tracer, observations, faults and the requests. Its parts
/// are the crate's: outside, a context is made with [`Emu::new`] and read through its
/// accessors.
pub struct Emu {
    /// The one clock.
    pub(crate) clock: Clock,
    /// The message path's recorder.
    pub(crate) tracer: Tracer,
    /// Observations (a side channel, not messages).
    pub(crate) metrics: RefCell<Metrics>,
    /// Every request of the run, indexed by id.
    pub(crate) requests: Rc<[LeaseRequest]>,
    /// Faults on the links between IGGs.
    pub(crate) faults: RefCell<Faults>,
    /// Tasks spawned so far (each its own lane when interleavings are explored).
    tasks: Cell<u64>,
    /// The shard this context runs, in a run on several threads: its index and what the
    /// shards share.
    shard: std::cell::OnceCell<(usize, std::sync::Arc<shard::Federation>)>,
    /// The run's plug-ins: external processes, decision counts, a failure that ends it.
    pub(crate) plugins: crate::policy::Plugins,
    /// The cap on the messages it sends (`emulation.max_messages`).
    pub(crate) cap: cap::MessageCap,
}

/// Plug-ins report their decisions to the run through its context.
impl crate::policy::Witness for Emu {
    fn now(&self) -> EmuTime {
        self.clock.now()
    }

    fn plugins(&self) -> &crate::policy::Plugins {
        &self.plugins
    }

    fn tracing(&self) -> bool {
        self.tracer.enabled()
    }

    fn note(&self, by: ActorId, note: &crate::policy::Note) {
        self.tracer.decision(self.clock.now(), by, note);
    }

    fn label(&self, id: RequestId) -> String {
        self.tracer.label(id).to_string()
    }
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

/// Where messages of type `M` can be delivered, each with the record that caused it: the
/// [`Peer`] of an actor that handles them.
pub trait Inbox<M>: Clone + 'static {
    /// The receiver's trace handle.
    fn id(&self) -> ActorId;
    /// Puts `msg` in the receiver's mailbox.
    fn deliver(&self, msg: Caused<M>);
    /// Where a delivery will read first, for the clock to fetch into the cache ahead of a
    /// timed delivery.
    fn near(&self) -> Near {
        Near::NONE
    }
}

impl<A, M> Inbox<M> for Peer<A>
where
    A: Actor + Handler<Caused<M>>,
    A::Context: ToEnvelope<A, Caused<M>>,
    M: Message<Result = ()> + Send + 'static,
{
    #[inline]
    fn id(&self) -> ActorId {
        self.id
    }

    #[inline]
    fn deliver(&self, msg: Caused<M>) {
        self.addr.do_send(msg);
    }

    #[inline]
    fn near(&self) -> Near {
        Near {
            mailbox: mailbox_of(&self.addr),
            home: 0,
        }
    }
}

/// The address of an actor's mailbox: an actix address hashes as that pointer, and a hasher
/// that keeps what it is given hands it back (actix has no other way to show it).
fn mailbox_of<A: Actor>(addr: &Addr<A>) -> usize {
    use std::hash::{Hash, Hasher};
    struct Keep(usize);
    impl Hasher for Keep {
        fn finish(&self) -> u64 {
            self.0 as u64
        }
        fn write(&mut self, _: &[u8]) {}
        fn write_usize(&mut self, n: usize) {
            self.0 = n;
        }
    }
    let mut keep = Keep(0);
    addr.hash(&mut keep);
    keep.0
}

/// One address shared by several deliveries (a VM's planned steps): cloning an actix address
/// allocates and takes atomic counts, cloning this only counts.
impl<M, P: Inbox<M>> Inbox<M> for Rc<P> {
    #[inline]
    fn id(&self) -> ActorId {
        Inbox::<M>::id(&**self)
    }

    #[inline]
    fn deliver(&self, msg: Caused<M>) {
        Inbox::<M>::deliver(&**self, msg);
    }

    #[inline]
    fn near(&self) -> Near {
        Inbox::<M>::near(&**self)
    }
}

/// An actor's address to itself, for its timed sends: besides its mailbox, where its state
/// lives, which the clock fetches into the cache with the mailbox while the event before the
/// delivery runs (with thousands of actors, a delivery otherwise waits on memory for each).
pub struct Own<A: Actor> {
    peer: Peer<A>,
    home: usize,
}

impl<A: Actor> Own<A> {
    /// `actor`'s own address (`addr`, from its context), traced as `id`. An actor's state
    /// stays where its task put it for its whole life, so its address is taken once here.
    pub fn new(actor: &A, id: ActorId, addr: Addr<A>) -> Own<A> {
        Own {
            peer: Peer { id, addr },
            home: actor as *const A as usize,
        }
    }

    /// `peer` as an actor's own address, where its state is not at hand (the clock then
    /// fetches only its mailbox ahead).
    pub fn of_peer(peer: Peer<A>) -> Own<A> {
        Own { peer, home: 0 }
    }
}

impl<A: Actor> Clone for Own<A> {
    fn clone(&self) -> Self {
        Own {
            peer: self.peer.clone(),
            home: self.home,
        }
    }
}

/// Where an actor keeps one [`Own`] address to share among its timed sends, made the first
/// time it is asked for (its state is in place by then): a clone only counts, where an actix
/// address clone allocates twice. For a long-lived actor: it holds the mailbox open until the
/// run is taken down. (With thousands of actors each with many timers pending, a fresh
/// address per send is faster: the shared one is one more cold read per delivery.)
pub struct OwnCell<A: Actor>(std::cell::OnceCell<Rc<Own<A>>>);

impl<A: Actor> Default for OwnCell<A> {
    fn default() -> Self {
        OwnCell(std::cell::OnceCell::new())
    }
}

impl<A: Actor> OwnCell<A>
where
    A::Context: actix::AsyncContext<A>,
{
    /// `actor`'s own address, traced as `id` (made from `ctx` the first time).
    pub fn get(&self, actor: &A, id: ActorId, ctx: &A::Context) -> Rc<Own<A>> {
        use actix::AsyncContext;
        let own = self
            .0
            .get_or_init(|| Rc::new(Own::new(actor, id, ctx.address())));
        Rc::clone(own)
    }
}

impl<A: Actor, M> Inbox<M> for Own<A>
where
    Peer<A>: Inbox<M>,
{
    #[inline]
    fn id(&self) -> ActorId {
        self.peer.id
    }

    #[inline]
    fn deliver(&self, msg: Caused<M>) {
        Inbox::<M>::deliver(&self.peer, msg);
    }

    #[inline]
    fn near(&self) -> Near {
        Near {
            home: self.home,
            ..Inbox::<M>::near(&self.peer)
        }
    }
}

/// Has the run wake actor `id` (through `me`) with a [`messages::PolicyAnswer`] when its
/// pending external decision is answered (realtime runs), caused by the record that asked.
pub(crate) fn wake_on_answers<P: Inbox<messages::PolicyAnswer>>(emu: &Rc<Emu>, id: ActorId, me: P) {
    let Some(rt) = emu.plugins.realtime() else {
        return;
    };
    let weak = Rc::downgrade(emu);
    rt.on_wake(
        id,
        Rc::new(move |at, cause| {
            if let Some(emu) = weak.upgrade() {
                let before = emu.tracer.enter(cause);
                emu.send_at(at.max(emu.now()), id, me.clone(), messages::PolicyAnswer);
                emu.tracer.enter(before);
            }
        }),
    );
}

thread_local! {
    /// Run contexts alive on this thread (each run lives on one thread).
    static LIVE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many run contexts are alive on this thread: a finished run must leave none behind
/// (pending timers once held theirs, and a sweep of thousands of runs grew without bound).
pub fn live_contexts() -> usize {
    LIVE.with(|n| n.get())
}

impl Drop for Emu {
    fn drop(&mut self) {
        LIVE.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

impl Emu {
    /// A context for a run of `requests` with these clock, tracer and faults.
    pub fn new(clock: Clock, tracer: Tracer, requests: Rc<[LeaseRequest]>, faults: Faults) -> Emu {
        LIVE.with(|n| n.set(n.get() + 1));
        // The send path below counts every message, reply and spawned task it sets going.
        clock.count_work();
        Emu {
            clock,
            tracer,
            metrics: RefCell::new(Metrics::new(requests.len())),
            requests,
            faults: RefCell::new(faults),
            tasks: Cell::new(0),
            shard: std::cell::OnceCell::new(),
            plugins: crate::policy::Plugins::default(),
            cap: cap::MessageCap::default(),
        }
    }

    /// Counts a message recorded: past the run's cap, the run stops (its clock fires no
    /// more events; the run ends with an error).
    #[inline]
    fn counted(&self) {
        if self.cap.passes(self.tracer.messages(), self.clock.now()) {
            self.clock.halt();
        }
    }

    /// Makes this context shard `index` of a run on several threads (on the thread that
    /// runs it, before any actor runs): messages to Grids of other shards are posted to
    /// their clocks, and posts to this thread run with this context.
    pub fn join(self: &Rc<Self>, index: usize, federation: std::sync::Arc<shard::Federation>) {
        let _ = self.shard.set((index, federation));
        shard::enter(self);
    }

    /// What the shards share, when this context is one of several.
    pub fn federation(&self) -> Option<&std::sync::Arc<shard::Federation>> {
        self.shard.get().map(|(_, f)| f)
    }

    /// The mailbox of the shard Grid `g` runs on, if that is not this one.
    fn remote(&self, g: GridId) -> Option<std::sync::Arc<crate::time::remote::Mailbox>> {
        let (me, fed) = self.shard.get()?;
        let theirs = fed.shard_of(g);
        (theirs != *me).then(|| fed.mailbox(theirs).cloned())?
    }

    /// The run's clock.
    #[inline]
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The run's tracer.
    #[inline]
    pub fn tracer(&self) -> &Tracer {
        &self.tracer
    }

    /// Request `id`.
    pub fn request(&self, id: RequestId) -> &LeaseRequest {
        &self.requests[id.0 as usize]
    }

    /// Emulated now.
    #[inline]
    pub fn now(&self) -> EmuTime {
        self.clock.now()
    }

    /// Sends `msg` from `from` to `to` now, recording it as caused by the record under way.
    #[inline]
    pub fn send<M, P>(&self, from: ActorId, to: &P, msg: M)
    where
        M: Message<Result = ()> + Traced + Send + 'static,
        P: Inbox<M>,
    {
        self.send_caused(from, to, msg, self.tracer.current());
    }

    fn send_caused<M, P>(&self, from: ActorId, to: &P, msg: M, cause: Option<u64>)
    where
        M: Message<Result = ()> + Traced + Send + 'static,
        P: Inbox<M>,
    {
        let seq = self
            .tracer
            .record_with(self.clock.now(), (from, to.id()), cause, || {
                (msg.kind(), msg.correlation(), msg.peer())
            });
        self.counted();
        self.hand_over(from, to, seq, msg);
    }

    /// Puts `msg` (recorded as `seq`) in `to`'s mailbox now, or, when interleavings are
    /// explored, when the clock's interleaver chooses (at the same emulated time); through
    /// the clock whenever it tracks deliveries (held, recorded or replayed).
    #[inline]
    fn hand_over<M, P>(&self, from: ActorId, to: &P, seq: u64, msg: M)
    where
        M: Message<Result = ()> + Send + 'static,
        P: Inbox<M>,
    {
        if self.clock.tracks_deliveries() {
            let lane = Lane::Channel {
                from: from.0,
                to: to.id().0,
            };
            let to = to.clone();
            // The message becomes work in flight when it is put in the mailbox.
            self.clock
                .deliver(lane, move || to.deliver(Caused::new(seq, msg)));
        } else {
            to.deliver(Caused::new(seq, msg));
        }
    }

    /// Delivers `msg` from `from` to `to` at emulated time `due` (recorded when delivered, as
    /// caused by the record under way now). Takes the address by value: the pending event owns
    /// it, and an actix address clone allocates, so a caller that made one for this call
    /// (`ctx.address()`) hands it over instead of paying for a second.
    pub fn send_at<M, P>(self: &Rc<Self>, due: EmuTime, from: ActorId, to: P, msg: M)
    where
        M: Message<Result = ()> + Traced + Send + 'static,
        P: Inbox<M>,
    {
        let (emu, cause, near) = (Rc::clone(self), self.tracer.current(), to.near());
        self.clock
            .at_near(due, near, move || emu.send_caused(from, &to, msg, cause));
    }

    /// Like [`Emu::send_at`], but the delivery can be called off (and then is not recorded).
    pub fn send_at_cancellable<M, P>(
        self: &Rc<Self>,
        due: EmuTime,
        from: ActorId,
        to: P,
        msg: M,
    ) -> TimerHandle
    where
        M: Message<Result = ()> + Traced + Send + 'static,
        P: Inbox<M>,
    {
        let handle = TimerHandle::new();
        self.send_at_with(due, from, to, msg, &handle);
        handle
    }

    /// Like [`Emu::send_at_cancellable`], under a handle shared with other deliveries.
    pub fn send_at_with<M, P>(
        self: &Rc<Self>,
        due: EmuTime,
        from: ActorId,
        to: P,
        msg: M,
        handle: &TimerHandle,
    ) where
        M: Message<Result = ()> + Traced + Send + 'static,
        P: Inbox<M>,
    {
        let (emu, cause, near) = (Rc::clone(self), self.tracer.current(), to.near());
        let fire = move || emu.send_caused(from, &to, msg, cause);
        self.clock.at_with(due, near, fire, handle);
    }

    /// Sends `msg` over the link between the IGGs of Grids `from_grid` and `to_grid`: recorded
    /// now, then delivered (maybe late, twice, or never) as the fault injector decides, and
    /// lost if the receiving IGG is down when it arrives.
    pub fn send_link<M, P>(
        self: &Rc<Self>,
        (from_grid, to_grid): (GridId, GridId),
        from: ActorId,
        to: &P,
        msg: M,
    ) where
        M: Message<Result = ()> + Traced + Send + Clone + 'static,
        P: Inbox<M> + Send,
    {
        let now = self.clock.now();
        let seq = self
            .tracer
            .record_with(now, (from, to.id()), self.tracer.current(), || {
                (msg.kind(), msg.correlation(), msg.peer())
            });
        self.counted();
        self.metrics.borrow_mut().peering_message(from_grid);
        let deliveries = self.faults.borrow_mut().deliveries(from_grid, to_grid, now);
        let remote = self.remote(to_grid);
        for delay in deliveries {
            let (inbox, m) = (to.clone(), msg.clone());
            match &remote {
                // Another thread's Grid: its clock delivers it at its time.
                Some(mailbox) => {
                    mailbox.post(
                        now + delay,
                        Box::new(move || {
                            shard::with_shard(|emu| emu.arrive(to_grid, from, &inbox, seq, m))
                        }),
                    );
                }
                None => {
                    let emu = Rc::clone(self);
                    self.clock.at(now + delay, move || {
                        emu.arrive(to_grid, from, &inbox, seq, m)
                    });
                }
            }
        }
    }

    /// A message on a link arrives at Grid `to_grid`'s IGG: handed over, unless that IGG is
    /// down now (then it is lost).
    fn arrive<M, P>(&self, to_grid: GridId, from: ActorId, inbox: &P, seq: u64, msg: M)
    where
        M: Message<Result = ()> + Send + 'static,
        P: Inbox<M>,
    {
        let down = self.faults.borrow().is_down(to_grid, self.clock.now());
        if down {
            self.faults.borrow_mut().counts.to_crashed += 1;
        } else {
            self.hand_over(from, inbox, seq, msg);
        }
    }

    /// Sends a request to `to` and waits for its reply; both directions are recorded (the
    /// reply as caused by the request). `None` if the receiver is gone.
    pub fn call<A, M>(
        self: &Rc<Self>,
        from: ActorId,
        to: &Peer<A>,
        msg: M,
    ) -> impl Future<Output = Option<M::Result>> + 'static
    where
        A: Actor + Handler<Caused<M>>,
        A::Context: ToEnvelope<A, Caused<M>>,
        M: Message + Traced + Send + 'static,
        M::Result: Traced + Send,
    {
        let emu = Rc::clone(self);
        let to_id = to.id;
        let (kind, corr) = (msg.kind(), msg.correlation());
        let seq = self.tracer.record(
            self.clock.now(),
            (from, to_id),
            kind,
            corr,
            self.tracer.current(),
        );
        self.counted();
        let reply = to.addr.send(Caused::new(seq, msg));
        // The reply is work in flight until the caller resumes with it.
        let awaited = Work::begin();
        async move {
            let answer = reply.await.ok();
            drop(awaited);
            let answer = answer?;
            emu.tracer
                .record_with(emu.clock.now(), (to_id, from), Some(seq), || {
                    (answer.kind(), answer.correlation(), answer.peer())
                });
            emu.counted();
            Some(answer)
        }
    }

    /// Runs `task` on its own (the IGG's post office), as caused by the record under way now.
    /// With interleavings explored, the task starts when the clock's interleaver chooses.
    pub fn spawn(self: &Rc<Self>, task: impl Future<Output = ()> + 'static) {
        let (emu, cause) = (Rc::clone(self), self.tracer.current());
        let start = move || {
            actix::spawn(WithCause {
                emu,
                cause,
                task: Box::pin(task),
                unstarted: Some(Work::begin()),
            });
        };
        if self.clock.tracks_deliveries() {
            let n = self.tasks.get();
            self.tasks.set(n + 1);
            self.clock.deliver(Lane::Task(n), start);
        } else {
            start();
        }
    }
}

/// A task that runs with its cause as the tracer's current record.
struct WithCause {
    emu: Rc<Emu>,
    cause: Option<u64>,
    task: Pin<Box<dyn Future<Output = ()>>>,
    /// Work in flight until the task has been polled once (it is ready from its spawn).
    unstarted: Option<Work>,
}

impl Future for WithCause {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let before = self.emu.tracer.enter(self.cause);
        let done = self.task.as_mut().poll(cx);
        self.emu.tracer.enter(before);
        self.unstarted = None;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Traced;

    struct Idle;
    impl Actor for Idle {
        type Context = actix::Context<Self>;
    }

    /// An actor that takes timed messages, for the hints its timed sends give the clock.
    struct Sink {
        emu: Rc<Emu>,
    }
    impl Actor for Sink {
        type Context = actix::Context<Self>;
    }
    crate::emu_shell!(Sink);
    crate::handles_caused!(Sink; Ping);

    #[derive(actix::Message)]
    #[rtype(result = "()")]
    struct Ping;
    impl Traced for Ping {
        const KIND: &'static str = "Ping";
    }
    impl actix::Handler<Ping> for Sink {
        type Result = ();
        fn handle(&mut self, _: Ping, _: &mut actix::Context<Self>) {}
    }

    /// An empty run in virtual time, and a sink's state (not started) traced as "sink".
    fn sink() -> (Rc<Emu>, ActorId, Sink) {
        let emu = Rc::new(Emu::new(
            Clock::new(crate::time::ClockMode::Virtual),
            crate::trace::Tracer::counting(Vec::new()),
            Rc::from(Vec::new()),
            crate::fault::Faults::new(Default::default(), 1),
        ));
        let id = emu.tracer().register("sink".to_string());
        let sink = Sink {
            emu: Rc::clone(&emu),
        };
        (emu, id, sink)
    }

    #[test]
    fn an_actors_timed_sends_to_itself_tell_the_clock_its_mailbox_and_state() {
        actix::System::new().block_on(async {
            let (emu, id, sink) = sink();
            let addr = Sink {
                emu: Rc::clone(&emu),
            }
            .start();
            let want = Near {
                mailbox: mailbox_of(&addr),
                home: &sink as *const Sink as usize,
            };
            let own = Own::new(&sink, id, addr.clone());
            let at = |s| EmuTime::from_secs(s);
            // Each pending event is the next to fire when it is checked.
            emu.send_at(at(3), id, own.clone(), Ping);
            assert_eq!(emu.clock().next_near(), Some(want));
            let handle = TimerHandle::new();
            emu.send_at_with(at(2), id, Rc::new(own), Ping, &handle);
            assert_eq!(
                emu.clock().next_near(),
                Some(want),
                "through a shared address"
            );
            emu.send_at(at(1), id, Peer { id, addr }, Ping);
            let peer = Near { home: 0, ..want };
            assert_eq!(emu.clock().next_near(), Some(peer), "a plain address");
            emu.clock().discard_pending();
        });
    }

    #[test]
    fn an_actor_makes_its_own_address_once_and_its_timed_sends_share_it() {
        actix::System::new().block_on(async {
            let (emu, id, sink) = sink();
            let ctx = actix::Context::<Sink>::new();
            let cell = OwnCell::default();
            let first = cell.get(&sink, id, &ctx);
            let again = cell.get(&sink, id, &ctx);
            assert!(Rc::ptr_eq(&first, &again), "made once, then shared");
            emu.send_at(EmuTime::from_secs(1), id, again, Ping);
            assert_eq!(
                Rc::strong_count(&first),
                3,
                "the cell, this handle and the pending event hold one address"
            );
            let want = Near {
                mailbox: mailbox_of(&actix::AsyncContext::address(&ctx)),
                home: &sink as *const Sink as usize,
            };
            assert_eq!(emu.clock().next_near(), Some(want));
            emu.clock().discard_pending();
            assert_eq!(Rc::strong_count(&first), 2, "the event let go of it");
        });
    }

    #[test]
    fn a_mailbox_is_known_by_its_address_and_differs_between_actors() {
        actix::System::new().block_on(async {
            let (a, b) = (Idle.start(), Idle.start());
            let (of_a, of_b) = (mailbox_of(&a), mailbox_of(&b));
            assert_ne!(of_a, 0);
            assert_eq!(mailbox_of(&a.clone()), of_a, "a clone shares the mailbox");
            assert_ne!(of_a, of_b, "two actors, two mailboxes");
        });
    }
}
