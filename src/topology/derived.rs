//! Settings derived from a topology for its run plan ([`crate::plan`]): each cluster's unit
//! cost, each Grid's cost model (paper 004 eqs. 1–3), the cluster models PAP dispatch reads
//! (arrival rates and coefficients of variation of each cluster's load), and whether external
//! processes decide; and the names of the actors a run has.

use super::*;

impl Topology {
    /// The actors a run of this topology has, by trace name, for checking `--trace-actors` patterns
    /// before the run: the director, each Grid's IGG and DVE, each cluster's LRMS, users and
    /// hosts, and one `vm:REQUEST/` prefix per request (its VMs are `vm:REQUEST/0`, `/1`, …).
    /// DVEs and users are listed for every Grid and cluster, though a run starts them only
    /// where a workload needs them.
    pub fn actor_catalogue(&self) -> Vec<String> {
        let mut names = vec!["director".to_string()];
        for g in &self.grids {
            names.push(format!("igg:{}", g.name));
            names.push(format!("dve:{}", g.name));
        }
        for c in &self.clusters {
            let q = c.qualified_name(self);
            names.push(format!("lrms:{q}"));
            names.push(format!("users:{q}"));
            names.extend((0..c.hosts.len()).map(|i| format!("host:{q}/{i}")));
        }
        names.extend(self.request_labels.iter().map(|r| format!("vm:{r}/")));
        names
    }

    /// Whether any policy is decided by an external process (dispatch, answer, offer,
    /// preemption or admission): in realtime its answers come at the emulated time the wall
    /// time they took makes, so such a run does not repeat its virtual run.
    pub fn asks_processes(&self) -> bool {
        self.clusters
            .iter()
            .any(|c| c.lrms.preemption.is_external() || c.lrms.admission.is_external())
            || self.grids.iter().any(|g| {
                [&g.igg.dispatch, &g.igg.answer, &g.igg.offer]
                    .iter()
                    .any(|c| c.is_external())
            })
    }

    /// A cluster's cost of a resource unit, drawn from `peering.unit_cost` (paper 004 Table 1)
    /// with the run's seed.
    pub fn unit_cost(&self, c: ClusterId) -> f64 {
        let (lo, hi) = self.peering.unit_cost;
        let draw =
            crate::time::stream_seed(self.emulation.seed, &format!("unit-cost:{}", c.0)) >> 11;
        let u = draw as f64 / (1u64 << 53) as f64;
        lo + (hi - lo) * u
    }

    /// Grid `grid`'s cost model: eq. 2's average unit cost over its clusters, weighted by
    /// their cores, with the topology's steepness.
    pub fn cost_model(&self, grid: GridId) -> crate::igg::CostModel {
        let clusters = &self.grids[usize::from(grid.0)].clusters;
        let mut m = crate::igg::CostModel::from_providers(
            &clusters
                .iter()
                .map(|&c| (self.unit_cost(c), self.cluster(c).cores() as f64))
                .collect::<Vec<_>>(),
        );
        m.steepness = self.peering.steepness;
        m
    }

    /// The models of a Grid's clusters and its external arrival rate Λ, from the topology's
    /// workloads — what a real IGG would learn by analysing its clusters' workloads.
    pub fn grid_models(&self, grid: usize) -> (Vec<ClusterModel>, f64) {
        let topo = self;
        let g = &topo.grids[grid];
        let span = {
            let arrivals = topo.requests.iter().map(|r| r.arrival.as_secs_f64());
            let (lo, hi) =
                arrivals.fold((f64::INFINITY, 0f64), |(lo, hi), a| (lo.min(a), hi.max(a)));
            (hi - lo).max(1.0)
        };
        let external = topo
            .requests
            .iter()
            .filter(|r| r.origin == Origin::External && usize::from(r.grid.0) == grid);
        let (rate, ext_vms, ext_dur) = stream_stats(external, span);
        let models = g
            .clusters
            .iter()
            .map(|&cid| {
                let c = topo.cluster(cid);
                // Computing power in units of a 1000-MIPS core, so service times stay in seconds.
                let speed: f64 = c
                    .hosts
                    .iter()
                    .map(|h| f64::from(h.cores) * f64::from(h.mips) / 1000.0)
                    .sum();
                let local = topo
                    .requests
                    .iter()
                    .filter(|r| r.origin == Origin::Local && r.cluster == Some(cid));
                let (lrate, lvms, ldur) = stream_stats(local, span);
                let theta = (ext_vms * ext_dur / speed).max(1e-12);
                let tau = lvms * ldur / speed;
                ClusterModel {
                    cores: c.cores() as f64,
                    speed,
                    local_rate: lrate,
                    tau,
                    mu: (CV_LOCAL * tau).powi(2) + tau * tau,
                    theta,
                    omega: (CV_EXTERNAL * theta).powi(2) + theta * theta,
                }
            })
            .collect();
        (models, rate)
    }
}

/// Rates and means of a request stream.
pub(super) fn stream_stats<'a>(
    reqs: impl Iterator<Item = &'a LeaseRequest>,
    span_s: f64,
) -> (f64, f64, f64) {
    let (mut n, mut vms, mut dur) = (0f64, 0f64, 0f64);
    for r in reqs {
        n += 1.0;
        vms += f64::from(r.vms);
        dur += r.duration.as_secs_f64();
    }
    if n == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    (n / span_s.max(1.0), vms / n, dur / n)
}
