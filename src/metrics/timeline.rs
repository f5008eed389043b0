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

impl Use {
    /// Adds `d` to this.
    fn add(&mut self, d: &Use) {
        self.0 += d.0;
        self.1 += d.1;
        for (a, x) in self.2.iter_mut().zip(d.2) {
            *a += x;
        }
        self.3 += d.3;
    }

    /// The opposite change.
    fn negated(&self) -> Use {
        Use(-self.0, -self.1, self.2.map(|n| -n), -self.3)
    }
}

/// A cluster and an instant: where a change happens.
type Key = (ClusterId, EmuTime);

/// The changes at each distinct key, summed: a map to the place of each key's sum.
#[derive(Default)]
struct Changes {
    at: FastMap<Key, u32>,
    sums: Vec<Use>,
}

impl Changes {
    /// The sum of the changes at `key` so far.
    fn at(&mut self, key: Key) -> &mut Use {
        let next = self.sums.len() as u32;
        let i = *self.at.entry(key).or_insert(next);
        if i == next {
            self.sums.push(Use::default());
        }
        &mut self.sums[i as usize]
    }

    /// Adds `d` at `key`, or to `pending`'s change when that is at `key` too (then written
    /// here when a change at another key comes): changes one after another often share their
    /// instant (leases that start together), and summing them first saves their lookups.
    fn add(&mut self, pending: &mut Option<(Key, Use)>, key: Key, d: Use) {
        match pending {
            Some((k, sum)) if *k == key => sum.add(&d),
            _ => {
                if let Some((k, sum)) = pending.replace((key, d)) {
                    self.at(k).add(&sum);
                }
            }
        }
    }
}

/// Per cluster, one row per change point, in time order (clusters in id order).
pub fn usage(topo: &Topology, spans: &[VmSpan], records: &[RequestRecord]) -> Vec<UsageRow> {
    // Hashed, then sorted once: a run has many more span ends than distinct instants.
    let mut changes = Changes::default();
    let type_index = |t: LeaseType| LeaseType::ALL.iter().position(|x| *x == t).unwrap_or(0);
    // A lease's VMs' spans come one after another, most with the same cluster, start and
    // end: each run of those is one change at its start and one at its end, for all its VMs.
    let same = |a: &VmSpan, b: &VmSpan| {
        (a.lease, a.cluster, a.start, a.end) == (b.lease, b.cluster, b.start, b.end)
            && a.state.holds_host() == b.state.holds_host()
    };
    let (mut starts, mut ends) = (None, None);
    for run in spans.chunk_by(same).filter(|run| run[0].state.holds_host()) {
        let (s, n) = (&run[0], run.len() as i64);
        let req = &topo.requests[s.lease.0 as usize];
        let mut d = Use(
            n * i64::from(req.cores_per_vm),
            n * i64::from(req.mem_mb),
            [0; 4],
            0,
        );
        d.2[type_index(req.lease_type)] = n;
        changes.add(&mut starts, (s.cluster, s.start), d);
        changes.add(&mut ends, (s.cluster, s.end), d.negated());
    }
    for (k, sum) in [starts, ends].into_iter().flatten() {
        changes.at(k).add(&sum);
    }
    for (req, rec) in topo.requests.iter().zip(records) {
        if let (Some(cluster), Some(start)) = (rec.cluster, rec.start) {
            if start > req.arrival {
                changes.at((cluster, req.arrival)).3 += 1;
                changes.at((cluster, start)).3 -= 1;
            }
        }
    }
    // Per cluster its instants, sorted: they are distinct, so the unstable sort gives one
    // order, and comparing instants alone is cheaper than comparing (cluster, instant) keys.
    let mut instants: Vec<Vec<(EmuTime, u32)>> = vec![Vec::new(); topo.clusters.len()];
    for ((cluster, at), i) in changes.at {
        instants[usize::from(cluster.0)].push((at, i));
    }
    let mut rows = Vec::with_capacity(changes.sums.len());
    for (c, list) in instants.iter_mut().enumerate() {
        list.sort_unstable_by_key(|&(at, _)| at);
        let cluster = ClusterId(c as u16);
        let mut acc = Use::default();
        for &(at, i) in list.iter() {
            acc.add(&changes.sums[i as usize]);
            rows.push(UsageRow {
                at,
                cluster,
                cores: acc.0,
                mem_mb: acc.1,
                vms: acc.2,
                queued: acc.3,
            });
        }
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

    #[test]
    fn rows_are_those_of_a_change_per_span_edge_summed_in_key_order() {
        // Spans of 1- to 3-VM leases on two clusters, at instants that often coincide, some
        // not on a host; compared with summing each span's own changes in an ordered map.
        let topo = Federation::new("f")
            .grid(
                "g",
                &[("c", Hosts::new(4, 4, 4096)), ("d", Hosts::new(4, 4, 4096))],
            )
            .workload((0..40).fold(Users::external("e", "g"), |users, n| {
                users.request(Request::new(
                    &format!("r{n}"),
                    n % 5,
                    1 + n as u32 % 3,
                    256,
                    100,
                ))
            }))
            .build()
            .expect("valid");
        let mut seed = 7u64;
        let mut next = |below: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % below
        };
        let mut spans = Vec::new();
        for lease in 0..40u32 {
            let cluster = topo.grids[0].clusters[next(2) as usize];
            let start = next(8);
            let end = start + 1 + next(4);
            let state = [VmState::Running, VmState::Running, VmState::Suspended][next(3) as usize];
            for vm in 0..=next(3) as u32 {
                // Now and then a VM's span of its own, out of step with the others.
                let (start, end) = if next(4) == 0 {
                    (end, end + 2)
                } else {
                    (start, end)
                };
                spans.push(VmSpan {
                    lease: RequestId(lease),
                    vm,
                    cluster,
                    host: 0,
                    state,
                    start: t(start),
                    end: t(end),
                });
            }
        }
        let records: Vec<RequestRecord> = (0..40)
            .map(|n| RequestRecord {
                cluster: Some(topo.grids[0].clusters[n % 2]),
                start: Some(t(n as u64 % 7)),
                ..RequestRecord::default()
            })
            .collect();
        let mut changes = std::collections::BTreeMap::<Key, Use>::new();
        for s in spans.iter().filter(|s| s.state.holds_host()) {
            let req = &topo.requests[s.lease.0 as usize];
            let k = LeaseType::ALL.iter().position(|x| *x == req.lease_type);
            let mut d = Use(
                i64::from(req.cores_per_vm),
                i64::from(req.mem_mb),
                [0; 4],
                0,
            );
            d.2[k.unwrap_or(0)] = 1;
            changes.entry((s.cluster, s.start)).or_default().add(&d);
            changes
                .entry((s.cluster, s.end))
                .or_default()
                .add(&d.negated());
        }
        for (req, rec) in topo.requests.iter().zip(&records) {
            let (cluster, start) = (rec.cluster.expect("set"), rec.start.expect("set"));
            if start > req.arrival {
                changes.entry((cluster, req.arrival)).or_default().3 += 1;
                changes.entry((cluster, start)).or_default().3 -= 1;
            }
        }
        let mut expected = Vec::new();
        let mut acc: Option<(ClusterId, Use)> = None;
        for ((cluster, at), d) in changes {
            let mut sum = acc
                .filter(|(c, _)| *c == cluster)
                .map_or_else(Use::default, |a| a.1);
            sum.add(&d);
            acc = Some((cluster, sum));
            expected.push(UsageRow {
                at,
                cluster,
                cores: sum.0,
                mem_mb: sum.1,
                vms: sum.2,
                queued: sum.3,
            });
        }
        assert!(expected.len() > 20, "{} rows", expected.len());
        assert_eq!(usage(&topo, &spans, &records), expected);
    }
}
