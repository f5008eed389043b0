//! Checks over a whole topology once read: periodic events a run would fire, and durations
//! scaled by cluster speeds that would pass the end of emulated time.

use super::*;

/// Periodic timer events (publications and IGG rounds) a run may fire at most: past this,
/// timers alone would take it hours.
pub const MAX_PERIODIC_EVENTS: f64 = 1e9;

/// Refuses periods so short, against the run's end, that timers alone would make it endless:
/// each period is valid alone, so the error names them all.
pub(super) fn check_periodic_events(topo: &Topology, top: &Table<'_>) {
    let events = topo.periodic_events();
    if events <= MAX_PERIODIC_EVENTS {
        return;
    }
    let p = &topo.peering;
    top.diags.error(
        &top.node.loc,
        format!(
            "periodic timers would fire about {events:.1e} times by the run's end at {} s \
             (peering.publish_interval {} s for each publishing cluster, peering.interval from \
             {} s for each peering IGG)",
            topo.emulation.end.limit().as_secs_f64(),
            p.publish_interval.as_secs_f64(),
            p.interval.0.as_secs_f64()
        ),
        Some(format!(
            "at most {MAX_PERIODIC_EVENTS:.0e}: lengthen the periods, or end the run sooner \
             (emulation.end, or emulation.horizon with end = \"all-done\")"
        )),
    );
}

/// A request's duration is stated at the reference speed and takes `reference / cluster`
/// times as long on a slower cluster: that time, too, must end by 10^12 s. Checked against the
/// slowest cluster (a request may be served anywhere through peering); one error names the
/// longest request.
pub(super) fn check_scaled_durations(topo: &Topology, top: &Table<'_>) {
    let slowest = (0..topo.clusters.len())
        .map(|c| {
            let s = topo.speed_of(ClusterId(c as u16));
            (s.reference_mips as f64 / s.cluster_mips as f64, c)
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((ratio, c)) = slowest else { return };
    // A moldable request may run its VMs' work on fewer VMs: at most vms × duration.
    let end_of = |r: &LeaseRequest| {
        let work = if r.moldable { f64::from(r.vms) } else { 1.0 };
        r.arrival.as_secs_f64() + r.duration.as_secs_f64() * work * ratio
    };
    let Some((latest, r)) = topo
        .requests
        .iter()
        .map(|r| (end_of(r), r))
        .max_by(|a, b| a.0.total_cmp(&b.0))
    else {
        return;
    };
    if latest > crate::time::MAX_SECS as f64 {
        top.diags.error(
            &top.node.loc,
            format!(
                "request `{}` ({} s at the reference speed) would run until {latest:.0} s on \
                 cluster `{}`, {ratio} times slower than the reference",
                topo.label(r.id),
                r.duration.as_secs_f64(),
                topo.clusters[c].qualified_name(topo)
            ),
            Some(
                "times run up to 10^12 s: shorten the request, or bring the clusters' mips \
                 closer to emulation.reference_mips"
                    .into(),
            ),
        );
    }
}
