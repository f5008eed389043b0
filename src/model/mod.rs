//! Plain data shared by the pure core and the actor shell: ids, lease requests, lease types,
//! request outcomes, the VM lifecycle state machine, and a cluster's published free slots.

pub mod published;
mod vm;

pub use published::Published;
pub use vm::{VmEvent, VmState};

use serde::Serialize;
use std::fmt;

use crate::time::{EmuDuration, EmuTime};

/// Index of a request in the run's request table. Outputs print the request's label instead.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u32);

/// Index of a Grid in the topology.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GridId(pub u16);

/// Global index of a cluster in the topology (across all Grids).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterId(pub u16);

/// Who submitted a request: a local user of a cluster or an external user through an IGG.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// A local user, submitting straight to its cluster's LRMS; highest priority.
    Local,
    /// An external user, submitting to its Grid's IGG through a DVE manager.
    External,
}

impl Origin {
    /// The name used in topologies and outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Local => "local",
            Origin::External => "external",
        }
    }
}

impl crate::Named for Origin {
    const NAMES: &'static [&'static str] = &["local", "external"];
    fn parse(name: &str) -> Option<Origin> {
        [Origin::Local, Origin::External]
            .into_iter()
            .find(|o| o.as_str() == name)
    }
}

/// The lease types of paper 003 §4.2 (local requests are always deadline-constrained and
/// non-preemptable).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum LeaseType {
    /// Best-Effort-Cancellable: may be stopped at any time; no deadline, no duration guarantee.
    BestEffortCancellable,
    /// Best-Effort-Suspendable: may be suspended and resumed later; duration guaranteed.
    BestEffortSuspendable,
    /// Deadline-Constraint-Migratable: may be moved or suspended but finishes by its deadline.
    DeadlineMigratable,
    /// Deadline-Constraint-Non-Preemptable: never preempted.
    DeadlineNonPreemptable,
}

impl LeaseType {
    /// Every lease type, in the paper's order.
    pub const ALL: [LeaseType; 4] = [
        LeaseType::BestEffortCancellable,
        LeaseType::BestEffortSuspendable,
        LeaseType::DeadlineMigratable,
        LeaseType::DeadlineNonPreemptable,
    ];

    /// The short name used in topologies and outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseType::BestEffortCancellable => "cancellable",
            LeaseType::BestEffortSuspendable => "suspendable",
            LeaseType::DeadlineMigratable => "migratable",
            LeaseType::DeadlineNonPreemptable => "non-preemptable",
        }
    }

    /// Parses a short name (`cancellable`, `suspendable`, `migratable`, `non-preemptable`).
    pub fn parse(name: &str) -> Option<LeaseType> {
        LeaseType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Whether an LRMS may preempt leases of this type.
    pub fn preemptable(self) -> bool {
        self != LeaseType::DeadlineNonPreemptable
    }

    /// Whether this type carries a deadline.
    pub fn deadline_constrained(self) -> bool {
        matches!(
            self,
            LeaseType::DeadlineMigratable | LeaseType::DeadlineNonPreemptable
        )
    }
}

impl crate::Named for LeaseType {
    const NAMES: &'static [&'static str] = &[
        "cancellable",
        "suspendable",
        "migratable",
        "non-preemptable",
    ];
    fn parse(name: &str) -> Option<LeaseType> {
        LeaseType::parse(name)
    }
}

impl fmt::Display for LeaseType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One lease request as submitted: what the user asks for and when.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaseRequest {
    /// Index in the run's request table.
    pub id: RequestId,
    /// Who submits it.
    pub origin: Origin,
    /// The Grid it is submitted in.
    pub grid: GridId,
    /// For local requests, the cluster whose LRMS receives it.
    pub cluster: Option<ClusterId>,
    /// When it is submitted.
    pub arrival: EmuTime,
    /// For local requests, the start of the requested interval (defaults to arrival).
    pub start: Option<EmuTime>,
    /// Number of VMs.
    pub vms: u32,
    /// Cores per VM.
    pub cores_per_vm: u32,
    /// Memory per VM, in MB.
    pub mem_mb: u32,
    /// Run time needed by the lease (its wall time).
    pub duration: EmuDuration,
    /// The lease type (local requests are deadline-constrained non-preemptable).
    pub lease_type: LeaseType,
    /// Absolute deadline, if any.
    pub deadline: Option<EmuTime>,
    /// A moldable request (paper 002 §IV): its `vms × duration` is work that runs on every VM
    /// of the cluster that runs it, which then takes `vms × duration / its VMs` (or the whole
    /// work, for an external one under `lrms.moldable = "single-server"`).
    pub moldable: bool,
    /// Paper 002's deadline ratio, for a moldable request whose run time is only known where
    /// it runs: the LRMS sets `deadline = arrival + ratio × run time there`.
    pub deadline_ratio: Option<f64>,
}

impl LeaseRequest {
    /// Total cores the lease occupies while running.
    pub fn cores(&self) -> u64 {
        u64::from(self.vms) * u64::from(self.cores_per_vm)
    }

    /// Resource units it asks for: cores × seconds (paper 004's unit is one CPU for a second).
    pub fn units(&self) -> f64 {
        self.cores() as f64 * self.duration.as_secs_f64()
    }
}

/// Terminal (and not yet terminal) states of a request, as written to `requests.csv`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestState {
    /// Ran its full duration.
    Completed,
    /// Refused by the IGG or the LRMS.
    Rejected,
    /// Stopped by preemption (cancellable leases) before completing.
    Cancelled,
    /// Still waiting or running when the emulation ended.
    Unfinished,
}

impl RequestState {
    /// Every state, in output order.
    pub const ALL: [RequestState; 4] = [
        RequestState::Completed,
        RequestState::Rejected,
        RequestState::Cancelled,
        RequestState::Unfinished,
    ];

    /// The name used in outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestState::Completed => "completed",
            RequestState::Rejected => "rejected",
            RequestState::Cancelled => "cancelled",
            RequestState::Unfinished => "unfinished",
        }
    }
}

/// Why a request was rejected, as written to `requests.csv`'s `reason` column: where the
/// refusal was decided (the LRMS at admission, the IGG's dispatch, peering), so a researcher
/// can tell a request that could never run from one turned away by load or by a policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RejectReason {
    /// More than any cluster it was offered to could ever hold, even empty.
    TooLarge,
    /// Admission control: it would end after its deadline.
    Deadline,
    /// Admission control: the cluster's queue limit for external requests (a fixed or
    /// model-based limit, or one external lease at a time) was reached.
    QueueLimit,
    /// A local request: no room in its interval even after preempting every lease the
    /// preemption policy may take (or the policy preempts nothing).
    NoRoom,
    /// The IGG found no cluster to offer it to (none published or probed a start for it).
    NoCluster,
    /// Every cluster of its Grid refused it, then every peer it was offered to declined it
    /// (rejected the offer, made a counter-offer not taken, or refused the redirection).
    PeersDeclined,
    /// Every cluster of its Grid refused it, then the peers it was offered to never answered
    /// in time (offers timed out after their retries) and none declined.
    PeeringTimeout,
}

impl RejectReason {
    /// Every reason, in documentation order.
    pub const ALL: [RejectReason; 7] = [
        RejectReason::TooLarge,
        RejectReason::Deadline,
        RejectReason::QueueLimit,
        RejectReason::NoRoom,
        RejectReason::NoCluster,
        RejectReason::PeersDeclined,
        RejectReason::PeeringTimeout,
    ];

    /// The name used in outputs.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::TooLarge => "too-large",
            RejectReason::Deadline => "deadline",
            RejectReason::QueueLimit => "queue-limit",
            RejectReason::NoRoom => "no-room",
            RejectReason::NoCluster => "no-cluster",
            RejectReason::PeersDeclined => "peers-declined",
            RejectReason::PeeringTimeout => "peering-timeout",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_type_names_round_trip() {
        for t in LeaseType::ALL {
            assert_eq!(LeaseType::parse(t.as_str()), Some(t));
        }
        assert_eq!(LeaseType::parse("spot"), None);
        assert!(!LeaseType::DeadlineNonPreemptable.preemptable());
        assert!(LeaseType::DeadlineMigratable.deadline_constrained());
        assert!(!LeaseType::BestEffortSuspendable.deadline_constrained());
    }
}

/// One host: its cores, memory and core speed.
#[derive(Clone, Debug, PartialEq)]
pub struct HostSpec {
    /// Cores per host.
    pub cores: u32,
    /// Memory per host, MB.
    pub memory_mb: u64,
    /// Speed of one core, MIPS.
    pub mips: u32,
}

/// How many VMs of `vm_cores` cores and `vm_mem_mb` MB one empty host of `cores` cores and
/// `memory_mb` MB holds (`u64::MAX` memory where it is not enforced).
pub fn vms_fitting(cores: u32, memory_mb: u64, vm_cores: u32, vm_mem_mb: u32) -> u64 {
    if vm_cores > cores || u64::from(vm_mem_mb) > memory_mb {
        return 0;
    }
    (u64::from(cores) / u64::from(vm_cores.max(1))).min(memory_mb / u64::from(vm_mem_mb.max(1)))
}
