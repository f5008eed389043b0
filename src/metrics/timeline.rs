//! Utilisation over time (`utilization.csv`), derived from the VM state spans and the request
//! records: per cluster, at every change point, the cores and memory its hosts give VMs, the
//! VMs on them by lease type, and the requests waiting for it.

use super::observe::{RequestRecord, VmSpan};
use crate::fasthash::FastMap;
use crate::model::{ClusterId, LeaseType};
use crate::time::EmuTime;
use crate::topology::Topology;

/// A cluster's use from `at` until its next row.
#[derive(Clone, Debug, PartialEq)]
pub struct UsageRow {
    /// From when.
    pub at: EmuTime,
    /// The cluster.
    pub cluster: ClusterId,
    /// Cores held by VMs.
    pub cores: i64,
    /// Memory held by VMs, MB.
    pub mem_mb: i64,
    /// VMs on its hosts, by lease type (in [`LeaseType::ALL`] order).
    pub vms: [i64; 4],
    /// Requests that arrived and have not yet started, among those it ran (the queue).
    pub queued: i64,
}

/// What changes at one instant, or what is in use from it: cores, memory, VMs by lease type,
/// queued requests.
#[derive(Clone, Copy, Debug, Default)]
struct Use(i64, i64, [i64; 4], i64);

/// Per cluster, one row per change point, in time order (clusters in id order).
pub fn usage(topo: &Topology, spans: &[VmSpan], records: &[RequestRecord]) -> Vec<UsageRow> {
    // Hashed, then sorted once: a run has many more span ends than distinct instants.
    let mut deltas: FastMap<(ClusterId, EmuTime), Use> = FastMap::default();
    let type_index = |t: LeaseType| LeaseType::ALL.iter().position(|x| *x == t).unwrap_or(0);
    for s in spans.iter().filter(|s| s.state.holds_host()) {
        let req = &topo.requests[s.lease.0 as usize];
        let (c, m) = (i64::from(req.cores_per_vm), i64::from(req.mem_mb));
        let k = type_index(req.lease_type);
        for (at, sign) in [(s.start, 1), (s.end, -1)] {
            let d = deltas.entry((s.cluster, at)).or_default();
            d.0 += sign * c;
            d.1 += sign * m;
            d.2[k] += sign;
        }
    }
    for (req, rec) in topo.requests.iter().zip(records) {
        if let (Some(cluster), Some(start)) = (rec.cluster, rec.start) {
            if start > req.arrival {
                deltas.entry((cluster, req.arrival)).or_default().3 += 1;
                deltas.entry((cluster, start)).or_default().3 -= 1;
            }
        }
    }
    let mut deltas: Vec<((ClusterId, EmuTime), Use)> = deltas.into_iter().collect();
    // Keys are distinct, so the unstable sort gives one order.
    deltas.sort_unstable_by_key(|(key, _)| *key);
    let mut rows = Vec::with_capacity(deltas.len());
    let mut current: Option<(ClusterId, Use)> = None;
    for ((cluster, at), d) in deltas {
        let mut acc = match current {
            Some((c, acc)) if c == cluster => acc,
            _ => Use::default(),
        };
        acc.0 += d.0;
        acc.1 += d.1;
        for (a, x) in acc.2.iter_mut().zip(d.2) {
            *a += x;
        }
        acc.3 += d.3;
        current = Some((cluster, acc));
        rows.push(UsageRow {
            at,
            cluster,
            cores: acc.0,
            mem_mb: acc.1,
            vms: acc.2,
            queued: acc.3,
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{RequestId, VmState};
    use crate::topology::{Federation, Hosts, Request, Users};

    fn t(s: u64) -> EmuTime {
        EmuTime::from_secs(s)
    }

    #[test]
    fn use_follows_the_spans_that_hold_hosts_and_the_queue_follows_the_records() {
        // Two 1-VM requests (1 core, 512 MB): "a" runs 0–100; "b" arrives at 0, waits, is
        // suspended on storage 150–200 (no host) and runs 200–300.
        let topo = Federation::new("f")
            .grid("g", &[("c", Hosts::new(1, 4, 4096))])
            .workload(
                Users::external("e", "g")
                    .request(Request::new("a", 0, 1, 512, 100))
                    .request(Request::new("b", 0, 1, 512, 100)),
            )
            .build()
            .expect("valid");
        let c = topo.grids[0].clusters[0];
        let span = |lease: u32, state, start, end| VmSpan {
            lease: RequestId(lease),
            vm: 0,
            cluster: c,
            host: 0,
            state,
            start: t(start),
            end: t(end),
        };
        let spans = [
            span(0, VmState::Running, 0, 100),
            span(1, VmState::Running, 100, 150),
            span(1, VmState::Suspended, 150, 200),
            span(1, VmState::Running, 200, 300),
        ];
        let records = [
            RequestRecord {
                cluster: Some(c),
                start: Some(t(0)),
                ..RequestRecord::default()
            },
            RequestRecord {
                cluster: Some(c),
                start: Some(t(100)),
                ..RequestRecord::default()
            },
        ];
        let rows = usage(&topo, &spans, &records);
        let got: Vec<(u64, i64, i64)> = rows
            .iter()
            .map(|r| (r.at.as_micros() / 1_000_000, r.cores, r.queued))
            .collect();
        // At 0: "a" runs and "b" waits; at 100 "b" takes over (same cores); off the host
        // 150–200; empty from 300.
        assert_eq!(
            got,
            vec![
                (0, 1, 1),
                (100, 1, 0),
                (150, 0, 0),
                (200, 1, 0),
                (300, 0, 0)
            ]
        );
        assert!(rows.iter().all(|r| r.mem_mb == 512 * r.cores));
    }
}
