//! The messages between actors, each with its trace kind and correlation ids.
//! `docs/architecture.md` draws who sends which to whom.

use actix::Message;

use super::igg::Igg;
use super::Peer;
use crate::igg::peering::{Answer, NegotiationId};
use crate::igg::protocol::PeerMsg;
use crate::igg::slots::Published;
use crate::lrms::Relocation;
use crate::model::{ClusterId, GridId, LeaseRequest, RequestId, RequestState, VmEvent, VmState};
use crate::time::EmuTime;
use crate::trace::{Correlation, PeerDetail, PeerItem, Terms, Traced};

macro_rules! traced {
    ($t:ty, $kind:literal, |$m:ident| $corr:expr) => {
        impl Traced for $t {
            const KIND: &'static str = $kind;
            fn correlation(&self) -> Correlation {
                let $m = self;
                $corr
            }
        }
    };
}

/// Names one VM: its lease and its index within the lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmRef {
    /// The lease.
    pub lease: RequestId,
    /// VM index within the lease.
    pub vm: u32,
}

/// A workload source's timer: request `0` arrives now.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Arrive(pub RequestId);
traced!(Arrive, "Arrive", |m| Correlation::request(m.0));

/// DVE manager → IGG: an external user's lease request.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SubmitExternal(pub LeaseRequest);
traced!(SubmitExternal, "SubmitExternal", |m| Correlation::request(
    m.0.id
));

/// Local users → LRMS: a local lease request.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SubmitLocal(pub LeaseRequest);
traced!(SubmitLocal, "SubmitLocal", |m| Correlation::request(m.0.id));

/// IGG → LRMS: place this external lease on your cluster (answered with [`AssignAnswer`]).
#[derive(Message)]
#[rtype(result = "AssignAnswer")]
pub struct AssignLease(pub LeaseRequest);
traced!(AssignLease, "AssignLease", |m| Correlation::request(m.0.id));

/// IGG → LRMS: when could you start this lease? (earliest-start dispatch; nothing is booked)
#[derive(Message)]
#[rtype(result = "StartOffer")]
pub struct ProbeStart(pub LeaseRequest);
traced!(ProbeStart, "ProbeStart", |m| Correlation::request(m.0.id));

/// LRMS → IGG: the earliest start it could offer, if it could take the lease at all.
#[derive(Debug, Clone, Copy)]
pub struct StartOffer {
    /// The lease.
    pub lease: RequestId,
    /// Earliest start, if any.
    pub start: Option<EmuTime>,
}
traced!(StartOffer, "StartOffer", |m| Correlation::request(m.lease));

/// LRMS → IGG: whether the LRMS took the lease (it may still wait in the queue).
#[derive(Debug, Clone, Copy)]
pub struct AssignAnswer {
    /// The lease.
    pub lease: RequestId,
    /// `None`: accepted (started or queued); else why it was refused.
    pub refusal: Option<crate::lrms::Refusal>,
}

impl AssignAnswer {
    /// Whether the LRMS took the lease.
    pub fn accepted(&self) -> bool {
        self.refusal.is_none()
    }
}
impl Traced for AssignAnswer {
    const KIND: &'static str = "AssignAnswer";
    fn correlation(&self) -> Correlation {
        Correlation::request(self.lease)
    }
    /// A refusal's reason (`deadline`, `no-room`, …) is written as the record's verdict, so
    /// a trace says why a cluster turned an assignment down (an accepted one has none).
    fn peer(&self) -> Option<PeerDetail> {
        let refusal = self.refusal?;
        Some(PeerDetail {
            verdict: Some(refusal.reason().as_str()),
            ..PeerDetail::default()
        })
    }
}

/// LRMS → IGG → DVE manager, or LRMS → local users: the lease started on a cluster.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct LeaseStarted {
    /// The lease.
    pub lease: RequestId,
    /// Where.
    pub cluster: ClusterId,
}
traced!(LeaseStarted, "LeaseStarted", |m| Correlation::request(
    m.lease
));

/// LRMS or IGG → requester: the lease reached a terminal state.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct LeaseEnded {
    /// The lease.
    pub lease: RequestId,
    /// Its terminal state.
    pub state: RequestState,
}
traced!(LeaseEnded, "LeaseEnded", |m| Correlation::request(m.lease));

/// LRMS → VM: take these timed steps (replacing any earlier plan).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct VmCommand {
    /// The VM.
    pub vm: VmRef,
    /// Pending steps due at or before this time are kept; later ones are called off (`None`:
    /// all are).
    pub keep_until: Option<EmuTime>,
    /// Events and when they happen.
    pub steps: crate::lrms::Steps,
}
traced!(VmCommand, "VmCommand", |m| Correlation::vm(
    m.vm.lease, m.vm.vm
));

/// VM → itself: one step of its plan is due (traced under the event's name).
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct Step {
    /// The VM.
    pub vm: VmRef,
    /// The event.
    pub event: VmEvent,
    /// Whether it is the plan's last step.
    pub last: bool,
}

impl Traced for Step {
    const KIND: &'static str = "Step";
    fn kind(&self) -> &'static str {
        self.event.name()
    }
    fn correlation(&self) -> Correlation {
        Correlation::vm(self.vm.lease, self.vm.vm)
    }
}

/// VM → host: the VM now takes these cores and this memory.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct Occupy {
    /// The VM.
    pub vm: VmRef,
    /// Cores taken.
    pub cores: u32,
    /// Memory taken, MB.
    pub mem_mb: u32,
}
traced!(Occupy, "Occupy", |m| Correlation::vm(m.vm.lease, m.vm.vm));

/// VM → host: the VM has left the host.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct Vacate {
    /// The VM.
    pub vm: VmRef,
}
traced!(Vacate, "Vacate", |m| Correlation::vm(m.vm.lease, m.vm.vm));

/// Host → itself, one microsecond after an instant that left it over capacity: is it still,
/// now that every VM leaving at that instant has left?
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct CapacityCheck;
impl Traced for CapacityCheck {
    const KIND: &'static str = "CapacityCheck";
}

/// VM → its LRMS: the VM finished, was cancelled, or is suspended.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct VmReport {
    /// The VM.
    pub vm: VmRef,
    /// Its state.
    pub state: VmState,
}
traced!(VmReport, "VmReport", |m| Correlation::vm(
    m.vm.lease, m.vm.vm
));

/// LRMS → itself: the core asked to be woken now.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct Tick;
impl Traced for Tick {
    const KIND: &'static str = "Tick";
}

/// Run → actor (realtime runs): the answer to the actor's pending external decision came;
/// it handles its held input again.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct PolicyAnswer;
impl Traced for PolicyAnswer {
    const KIND: &'static str = "PolicyAnswer";
}

/// Actor → itself (realtime runs): external question `.0` is due; if still unanswered, the
/// fallback decides.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct PolicyDeadline(pub u64);
impl Traced for PolicyDeadline {
    const KIND: &'static str = "PolicyDeadline";
}

/// LRMS → IGG: find another cluster of the Grid for this suspended migratable lease.
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct RelocateLease {
    /// The cluster it is leaving.
    pub from: ClusterId,
    /// The lease and its state.
    pub relocation: Relocation,
}
traced!(RelocateLease, "RelocateLease", |m| Correlation::request(
    m.relocation.req.id
));

/// IGG → LRMS: take over this lease if you can resume it by its deadline.
#[derive(Message, Clone)]
#[rtype(result = "AdoptAnswer")]
pub struct AdoptLease(pub Relocation);
traced!(AdoptLease, "AdoptLease", |m| Correlation::request(
    m.0.req.id
));

/// LRMS → IGG: whether it took the lease over.
#[derive(Debug, Clone, Copy)]
pub struct AdoptAnswer {
    /// The lease.
    pub lease: RequestId,
    /// Taken over or refused.
    pub accepted: bool,
}
traced!(AdoptAnswer, "AdoptAnswer", |m| Correlation::request(
    m.lease
));

/// IGG → source LRMS: where the relocation went.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct RelocationOutcome {
    /// The lease.
    pub lease: RequestId,
    /// The cluster that took it over, if any.
    pub to: Option<ClusterId>,
}
traced!(RelocationOutcome, "RelocationOutcome", |m| {
    Correlation::request(m.lease)
});

/// Workload source → director: one of my requests is terminal.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct RequestDone {
    /// The request.
    pub lease: RequestId,
    /// Its terminal state.
    pub state: RequestState,
}
traced!(RequestDone, "RequestDone", |m| Correlation::request(
    m.lease
));

/// Director → itself: the end time (or the horizon) has come.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct EndOfRun;
impl Traced for EndOfRun {
    const KIND: &'static str = "EndOfRun";
}

/// Correlation of a peering message: the negotiation, and the request if it is about one.
fn peering(negotiation: NegotiationId, request: Option<RequestId>) -> Correlation {
    Correlation {
        request,
        vm: None,
        negotiation: Some(negotiation),
    }
}

/// LRMS → IGG: its free time slots up to the horizon and its price per unit (eq. 1).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct FreeSlots {
    /// The cluster.
    pub cluster: ClusterId,
    /// The slots.
    pub slots: Published,
}
impl Traced for FreeSlots {
    const KIND: &'static str = "FreeSlots";
}

/// IGG → LRMS: another cluster of the Grid published its free slots (passed on where the Grid
/// has several clusters and migratable leases: the migration route of a preemption,
/// [`crate::lrms::Route`]).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct GridSlots {
    /// The cluster that published.
    pub cluster: ClusterId,
    /// Its slots.
    pub slots: Published,
}
impl Traced for GridSlots {
    const KIND: &'static str = "GridSlots";
}

/// IGG → LRMS: your free time slots now, please (publication on request, paper 004 §4.1);
/// answered with [`FreeSlots`].
#[derive(Message, Clone, Copy)]
#[rtype(result = "FreeSlots")]
pub struct SlotsRequest;
impl Traced for SlotsRequest {
    const KIND: &'static str = "SlotsRequest";
}

/// LRMS → itself: a load-forecast provider checks its forecast half an interval after a
/// publication (paper 004 Algorithm 1, reallocation event).
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct Reallocate;
impl Traced for Reallocate {
    const KIND: &'static str = "Reallocate";
}

/// LRMS → itself: time to publish free slots.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct PublishTick;
impl Traced for PublishTick {
    const KIND: &'static str = "PublishTick";
}

/// IGG → itself: a negotiation round (and contract price refresh).
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct NegotiationTick;
impl Traced for NegotiationTick {
    const KIND: &'static str = "NegotiationTick";
}

/// IGG → IGG: one message of the peer protocol, over the (fault-injected) link.
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct FromPeer {
    /// The sending IGG's Grid.
    pub from: GridId,
    /// What it says.
    pub msg: PeerMsg,
}
impl Traced for FromPeer {
    const KIND: &'static str = "Peer";
    fn kind(&self) -> &'static str {
        self.msg.kind()
    }
    fn correlation(&self) -> Correlation {
        Correlation {
            request: self.msg.lease(),
            vm: None,
            negotiation: self.msg.negotiation(),
        }
    }
    fn peer(&self) -> Option<PeerDetail> {
        Some(peer_detail(&self.msg))
    }
}

/// What a peer message says about its negotiation, for its trace record: an offer's
/// contract, price and requests; an answer's verdict and price per request; the price of a
/// redirection, a declined counter-offer or a price update; an acknowledgement's verdict; a
/// lease report's state.
fn peer_detail(msg: &PeerMsg) -> PeerDetail {
    let item = |request| PeerItem {
        request,
        units: None,
        verdict: None,
        price: None,
    };
    let mut d = PeerDetail::default();
    match msg {
        PeerMsg::Offer {
            items, price, max, ..
        } => {
            d.price = Some(*price);
            d.contract = Some(Terms {
                min: *price,
                max: *max,
            });
            d.items = items
                .iter()
                .map(|i| PeerItem {
                    units: Some(i.units),
                    ..item(i.req.id)
                })
                .collect();
        }
        PeerMsg::Answer { answers, .. } => {
            d.items = answers
                .iter()
                .map(|(lease, a)| {
                    let (verdict, price) = match *a {
                        Answer::Accept { price } => ("accept", Some(price)),
                        Answer::Counter { price } => ("counter", Some(price)),
                        Answer::Reject => ("reject", None),
                    };
                    PeerItem {
                        verdict: Some(verdict),
                        price,
                        ..item(*lease)
                    }
                })
                .collect();
        }
        PeerMsg::Redirect { price, .. } => d.price = Some(*price),
        PeerMsg::RedirectAck { accepted, .. } => {
            d.verdict = Some(if *accepted { "redirected" } else { "refused" });
        }
        PeerMsg::Decline { price, late, .. } => {
            d.verdict = Some(if *late { "late" } else { "decline" });
            d.price = Some(*price);
        }
        PeerMsg::LeaseReport { ended, .. } => {
            d.verdict = Some(ended.map_or("started", RequestState::as_str));
        }
        PeerMsg::LeaseReportAck { .. } => {}
        PeerMsg::Price { unit_cost } => d.price = Some(*unit_cost),
    }
    d
}

/// IGG → itself: an offer's answer is overdue.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct OfferTimeout(pub NegotiationId);
traced!(OfferTimeout, "OfferTimeout", |m| peering(m.0, None));

/// IGG → itself: a redirection's acknowledgement is overdue.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct RedirectTimeout {
    /// Negotiation id.
    pub negotiation: NegotiationId,
    /// The request.
    pub lease: RequestId,
}
traced!(RedirectTimeout, "RedirectTimeout", |m| peering(
    m.negotiation,
    Some(m.lease)
));

/// IGG → itself: resend the end of a redirected request if not acknowledged.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct RemoteLeaseTimeout(pub RequestId);
traced!(RemoteLeaseTimeout, "RemoteLeaseTimeout", |m| {
    Correlation::request(m.0)
});

/// Emulation → IGG: crash now (volatile state lost) or restart.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct CrashOrRestart {
    /// `true`: crash; `false`: restart.
    pub crash: bool,
}
impl Traced for CrashOrRestart {
    const KIND: &'static str = "CrashOrRestart";
    fn kind(&self) -> &'static str {
        if self.crash {
            "Crash"
        } else {
            "Restart"
        }
    }
}

/// Setup: every IGG, and every Grid's cost model (sent once before the run starts).
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct SetPeers {
    /// Every IGG (its own included).
    pub peers: Vec<(GridId, Peer<Igg>)>,
    /// Every Grid's cost model, which contracts with it are priced from.
    pub providers: std::collections::BTreeMap<GridId, crate::igg::peering::CostModel>,
}
