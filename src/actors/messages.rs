//! The messages between actors, each with its trace kind and correlation ids.
//! `docs/architecture.md` draws who sends which to whom.

use actix::Message;

use crate::model::{ClusterId, LeaseRequest, RequestId, RequestState};
use crate::time::EmuDuration;
use crate::trace::{Correlation, Traced};

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

/// LRMS → IGG: whether the LRMS took the lease (it may still wait in the queue).
#[derive(Debug, Clone, Copy)]
pub struct AssignAnswer {
    /// The lease.
    pub lease: RequestId,
    /// Accepted (started or queued) or refused.
    pub accepted: bool,
}
traced!(AssignAnswer, "AssignAnswer", |m| Correlation::request(
    m.lease
));

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

/// LRMS → host: deploy VM `vm` of a lease.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct StartVm {
    /// The lease.
    pub lease: RequestId,
    /// VM index within the lease.
    pub vm: u32,
    /// Cores the VM takes.
    pub cores: u32,
    /// Memory the VM takes, MB.
    pub mem_mb: u32,
    /// Deployment and boot time.
    pub boot: EmuDuration,
    /// Work to do once running.
    pub work: EmuDuration,
}
traced!(StartVm, "StartVm", |m| Correlation::vm(m.lease, m.vm));

/// Host → VM: start deploying.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct Deploy(pub VmRef);
traced!(Deploy, "Deploy", |m| Correlation::vm(m.0.lease, m.0.vm));

/// VM → itself: boot finished.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct BootDone(pub VmRef);
traced!(BootDone, "BootDone", |m| Correlation::vm(m.0.lease, m.0.vm));

/// VM → itself: the work is done.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct WorkDone(pub VmRef);
traced!(WorkDone, "WorkDone", |m| Correlation::vm(m.0.lease, m.0.vm));

/// VM → host: the VM has left the host (finished or stopped).
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct VmExited {
    /// The lease.
    pub lease: RequestId,
    /// VM index within the lease.
    pub vm: u32,
}
traced!(VmExited, "VmExited", |m| Correlation::vm(m.lease, m.vm));

/// Host → LRMS: a VM released its cores and memory.
#[derive(Message, Clone, Copy)]
#[rtype(result = "()")]
pub struct VmReleased {
    /// The lease.
    pub lease: RequestId,
    /// VM index within the lease.
    pub vm: u32,
}
traced!(VmReleased, "VmReleased", |m| Correlation::vm(m.lease, m.vm));

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
