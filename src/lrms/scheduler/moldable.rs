//! How a cluster reads an external moldable request (`lrms.moldable`, paper 002): how many
//! VMs it takes and for how long, under each of the paper's readings.

use crate::time::EmuDuration;

named_enum! {
    /// How a cluster runs an external moldable request (`lrms.moldable`, paper 002).
    Moldable {
        /// Its work (tasks × task duration) spreads over every VM the cluster can hold, which
        /// then run for work / VMs (§IV: "moldable applications which can spread over all
        /// available resources in a cluster"; §V-B: "the duration … of the request changes
        /// accordingly").
        Spread => "spread",
        /// As the single-server model assumes: the request holds every VM the cluster can
        /// hold — the cluster serves one at a time — for its whole work, tasks × task duration
        /// (§V-B: "ω = meanNumberofTasks ∗ meanTaskDuration", the mean service time
        /// Algorithm 1 is given).
        SingleServer => "single-server",
        /// A bag of tasks as GWA's model generates it: each task on a VM of its own for the
        /// task's duration, the VMs of a request started together (InterGrid's contiguous
        /// request, §II), and a deadline ratio of that run time. Local moldable requests
        /// are read the same way: the cluster serves many requests at once, and its load
        /// goes from light to overloaded over Table II's arrival scales.
        PerTask => "per-task",
    }
}

/// The VMs and run time of a moldable request of `tasks` tasks of `task` each on a cluster
/// that can hold `vms` VMs, under `reading`: every VM for its work `tasks × task` spread
/// over them (rounded up to the microsecond), every VM for the whole work as one server's
/// job, or a VM per task for one task's duration. Local requests are spread unless the
/// reading is per task: paper 002's model needs their queue stable (eq. 4, ρ_l =
/// λ_j/μ_l < 1), which at Table II's local load (αl = 4 s) spread or per-task requests are
/// and single-server ones are not.
pub(crate) fn moldable_run(
    reading: Moldable,
    tasks: u32,
    task: EmuDuration,
    vms: u64,
) -> (u32, EmuDuration) {
    let work = u128::from(tasks) * u128::from(task.as_micros());
    let all = u32::try_from(vms.max(1)).unwrap_or(u32::MAX);
    let (vms, run) = match reading {
        Moldable::Spread => (all, work.div_ceil(u128::from(vms.max(1)))),
        Moldable::SingleServer => (all, work),
        Moldable::PerTask => (tasks, u128::from(task.as_micros())),
    };
    (
        vms,
        EmuDuration::from_micros(u64::try_from(run).unwrap_or(u64::MAX)),
    )
}
