//! Reading one listed request (`[[workload.request]]`): its id, size, type and times, each
//! checked against the others and against the clusters it may use.

use super::generated::Sink;
use super::{vm_capacity, Cluster};
use crate::input::diag::{Diags, Loc};
use crate::input::node::Node;
use crate::input::table::Table;
use crate::model::{ClusterId, GridId, LeaseRequest, LeaseType, Origin, RequestId};
use crate::time::{EmuDuration, EmuTime};

/// What a workload's requests share.
pub(super) struct RequestScope<'a> {
    /// The workload's name (generated ids are `name-N`).
    pub workload: &'a str,
    /// How to name the workload in messages.
    pub what: &'a str,
    /// Local or external, if known.
    pub origin: Option<Origin>,
    /// The submitting grid, if known.
    pub grid: Option<GridId>,
    /// A local workload's cluster.
    pub cluster: Option<ClusterId>,
    /// Every cluster of the topology.
    pub clusters: &'a [Cluster],
}

/// Arrival, size and duration, as far as they are valid.
struct Size<'a> {
    arrival: Option<EmuTime>,
    vms: Option<(u32, &'a Loc)>,
    mem_mb: Option<(u32, &'a Loc)>,
    cores_per_vm: Option<(u32, &'a Loc)>,
    duration: Option<EmuDuration>,
}

/// Reads request `ri` of a workload into `sink`; its id if it is valid.
pub(super) fn read_request(
    rnode: &Node,
    ri: usize,
    scope: &RequestScope<'_>,
    sink: &mut Sink<'_>,
    diags: &Diags,
) -> Option<RequestId> {
    let what = scope.what;
    let r = Table::of(rnode, format!("request #{} of {what}", ri + 1), diags)?;
    let label = read_label(&r, ri, scope.workload);
    let rwhat = format!(
        "request `{}` of {what}",
        label.as_deref().map_or("?".into(), super::shown)
    );
    let size = read_size(&r, &rwhat);
    let lease_type = read_lease_type(&r, scope.origin, &rwhat);
    let (start, deadline) = read_times(&r, scope.origin, lease_type, &size, &rwhat);
    r.finish();
    check_capacity(scope, &size, &rwhat, diags);
    let (vms, mem_mb, cores_per_vm) = (size.vms?.0, size.mem_mb?.0, size.cores_per_vm?.0);
    let id = RequestId(sink.requests.len() as u32);
    let request = LeaseRequest {
        id,
        origin: scope.origin?,
        grid: scope.grid?,
        cluster: scope.cluster,
        arrival: size.arrival?,
        start,
        vms,
        cores_per_vm,
        mem_mb,
        duration: size.duration?,
        lease_type: lease_type?,
        deadline,
        moldable: false,
        deadline_ratio: None,
    };
    sink.labels.push(label?);
    if let Some(node) = r.get("id") {
        sink.written.push((id, node.loc.clone()));
    }
    sink.requests.push(request);
    Some(id)
}

/// The request's id: given (a string or a number) or `workload-N` (uniqueness in the
/// topology is checked once every workload is read: `workloads::check_unique_ids`).
fn read_label(r: &Table<'_>, ri: usize, workload: &str) -> Option<String> {
    match r.get("id") {
        Some(_) => r.str_or_int("id").map(|(label, loc)| {
            super::check_name(r.diags, loc, &label, "request id");
            label
        }),
        None => Some(format!("{workload}-{}", ri + 1)),
    }
}

fn read_size<'a>(r: &Table<'a>, rwhat: &str) -> Size<'a> {
    let arrival = r.duration("arrival").map(|(d, _)| EmuTime::ZERO + d);
    if r.get("arrival").is_none() {
        r.missing(
            "arrival",
            "when the request is submitted, e.g. arrival = \"00:05:00\" or \"300s\"",
        );
    }
    let vms = r.positive("vms", 1_000_000).map(|(v, loc)| (v as u32, loc));
    if r.get("vms").is_none() {
        r.missing("vms", "how many VMs, e.g. vms = 2");
    }
    let mem_mb = r
        .positive("mem_mb", 1 << 30)
        .map(|(v, loc)| (v as u32, loc));
    if r.get("mem_mb").is_none() {
        r.missing("mem_mb", "memory per VM in MB, e.g. mem_mb = 1024");
    }
    let cores_per_vm = r
        .positive("cores_per_vm", 1 << 16)
        .map_or(Some((1u32, &r.node.loc)), |(v, l)| Some((v as u32, l)));
    let duration = r.duration("duration").and_then(|(d, loc)| {
        if d == EmuDuration::ZERO {
            r.diags.error(
                loc,
                format!("{rwhat} has a zero duration"),
                Some("a lease runs for a positive time, e.g. \"1h\"".into()),
            );
            None
        } else {
            Some(d)
        }
    });
    if r.get("duration").is_none() {
        r.missing(
            "duration",
            "how long the lease runs, e.g. duration = \"1h\"",
        );
    }
    Size {
        arrival,
        vms,
        mem_mb,
        cores_per_vm,
        duration,
    }
}

/// The lease type: local requests are non-preemptable; external ones default to suspendable.
fn read_lease_type(r: &Table<'_>, origin: Option<Origin>, rwhat: &str) -> Option<LeaseType> {
    match (origin, r.named::<LeaseType>("type")) {
        (Some(Origin::Local), Some((t, loc))) if t != LeaseType::DeadlineNonPreemptable => {
            r.diags.error(
                loc,
                format!("{rwhat} is local, and local requests are non-preemptable"),
                Some(
                    "remove `type`; local requests are deadline-constrained and non-preemptable"
                        .into(),
                ),
            );
            None
        }
        (_, Some((t, _))) => Some(t),
        (Some(Origin::Local), None) => Some(LeaseType::DeadlineNonPreemptable),
        (_, None) if r.get("type").is_some() => None,
        (_, None) => Some(LeaseType::BestEffortSuspendable),
    }
}

/// A local request's requested start and a deadline lease's deadline, checked against the
/// request's arrival, duration and type.
fn read_times(
    r: &Table<'_>,
    origin: Option<Origin>,
    lease_type: Option<LeaseType>,
    size: &Size<'_>,
    rwhat: &str,
) -> (Option<EmuTime>, Option<EmuTime>) {
    let diags = r.diags;
    let start = r.duration("start").map(|(d, l)| (EmuTime::ZERO + d, l));
    if let (Some((_, loc)), Some(Origin::External)) = (start, origin) {
        diags.error(
            loc,
            "`start` is for local requests, which are served in a requested interval",
            Some("external leases start when the LRMS schedules them".into()),
        );
    }
    let deadline = r.duration("deadline").map(|(d, l)| (EmuTime::ZERO + d, l));
    if let (Some(lt), Some((dl, loc)), Some(arr), Some(dur)) =
        (lease_type, deadline, size.arrival, size.duration)
    {
        let earliest = start.map_or(arr, |(s, _)| s.max(arr)) + dur;
        if !lt.deadline_constrained() {
            diags.error(
                loc,
                format!("{rwhat} is best-effort ({lt}), which has no deadline"),
                Some("remove `deadline`, or use type \"migratable\" or \"non-preemptable\"".into()),
            );
        } else if dl < earliest {
            diags.error(
                loc,
                format!("{rwhat} has deadline {dl} before it could finish ({earliest})"),
                Some(
                    "a deadline is an absolute time from the start of the run; give at least \
                     arrival + duration"
                        .into(),
                ),
            );
        }
    }
    if let (Some((s, loc)), Some(a)) = (start, size.arrival) {
        if s < a {
            diags.error(
                loc,
                format!("{rwhat} starts before it arrives"),
                Some("`start` is an absolute time at or after `arrival`".into()),
            );
        }
    }
    if lease_type.is_some_and(|t| t.deadline_constrained())
        && deadline.is_none()
        && origin == Some(Origin::External)
    {
        r.missing(
            "deadline",
            "deadline-constrained leases need an absolute deadline, e.g. deadline = \"6h\"",
        );
    }
    (start.map(|(s, _)| s), deadline.map(|(d, _)| d))
}

/// Would the request fit, empty, on any cluster it may be placed on?
fn check_capacity(scope: &RequestScope<'_>, size: &Size<'_>, rwhat: &str, diags: &Diags) {
    let (Some((v, vloc)), Some((m, _)), Some((cpv, _))) =
        (size.vms, size.mem_mb, size.cores_per_vm)
    else {
        return;
    };
    let clusters = scope.clusters;
    let candidates: Vec<&Cluster> = match (scope.origin, scope.cluster) {
        (Some(Origin::Local), Some(c)) => vec![&clusters[usize::from(c.0)]],
        _ => clusters.iter().collect(),
    };
    let most = candidates
        .iter()
        .map(|c| vm_capacity(c, cpv, m))
        .max()
        .unwrap_or(0);
    if !candidates.is_empty() && most < u64::from(v) {
        diags.error(
            vloc,
            format!(
                "{rwhat} needs {v} VMs of {m} MB and {cpv} core(s), more than any cluster it may \
                 use can hold"
            ),
            Some(format!(
                "the largest such cluster holds at most {most} VMs of that size; reduce `vms` or \
                 `mem_mb`, or add hosts"
            )),
        );
    }
}
