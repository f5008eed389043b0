//! The run plan: a topology compiled once into what each actor is built from — per Grid its
//! gateway's settings, policies, cost model and external requests; per cluster its hosts, its
//! LRMS core's configuration, its policies, how it publishes and its local requests — with
//! every derived setting (speeds, unit costs, contract pairs, cost models, cluster models,
//! random streams) resolved. The actor graph ([`crate::actors::graph`]) is built from the plan
//! alone; the plan is plain data, shared by every shard of a run on several threads.

mod compile;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use compile::compile;

use crate::igg::dispatch::DispatchSetup;
use crate::igg::gateway::GatewaySettings;
use crate::igg::peering::CostModel;
use crate::lrms::provider::Partitions;
use crate::lrms::Config;
use crate::model::{ClusterId, GridId, HostSpec, RequestId};
use crate::policy::external::Names;
use crate::policy::{Chosen, Greeting, LrmsSetup, PeeringSetup, Point, Registry};
use crate::time::{ClockMode, EmuDuration};
use crate::topology::EndCondition;

/// A topology compiled for a run.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// How the run is driven.
    pub mode: ClockMode,
    /// When the run ends.
    pub end: EndCondition,
    /// The policies the run may name.
    pub registry: Registry,
    /// Each request's label, by id.
    pub request_labels: Vec<String>,
    /// Each Grid, by id.
    pub grids: Vec<GridPlan>,
    /// How external policy processes are run.
    pub external: ExternalPlan,
}

/// How a run's external policy processes are run.
#[derive(Clone, Debug, PartialEq)]
pub struct ExternalPlan {
    /// Whether any policy is decided by an external process.
    pub asked: bool,
    /// What each process is told when it starts (the run's mode, seed and topology), and
    /// the wall-clock time it has to start, to answer and to exit.
    pub greeting: Greeting,
    /// Realtime runs: emulated time a decision may take before its fallback decides — the
    /// deadline, or the timeout at the run's speed-up, whichever is shorter.
    pub answer_within: EmuDuration,
}

/// What a Grid's actors (its IGG, its DVE manager, its clusters) are built from.
#[derive(Clone, Debug)]
pub struct GridPlan {
    /// Its id.
    pub id: GridId,
    /// Its name.
    pub name: String,
    /// How many requests its workloads make, local and external (its director counts them).
    pub requests: usize,
    /// Its external requests, in arrival order (its DVE manager's).
    pub external_requests: Vec<RequestId>,
    /// Whether its IGG passes each cluster's free slots on to the Grid's other clusters.
    pub share_slots: bool,
    /// Its gateway.
    pub gateway: GatewayPlan,
    /// Its clusters, in the Grid's order.
    pub clusters: Vec<ClusterPlan>,
}

/// What a Grid's gateway is built from.
#[derive(Clone, Debug)]
pub struct GatewayPlan {
    /// Who plays the whole gateway: igemu, or an external process.
    pub implementation: Chosen,
    /// The dispatch policy chosen.
    pub dispatch: Chosen,
    /// The answer policy chosen.
    pub answer: Chosen,
    /// The offer policy chosen.
    pub offer: Chosen,
    /// The Grid's clusters: id and name.
    pub clusters: Vec<(ClusterId, String)>,
    /// The Grid's clusters: id and cores.
    pub sizes: Vec<(ClusterId, u64)>,
    /// What the dispatch policy is built from.
    pub dispatch_setup: DispatchSetup,
    /// What the answer and offer policies are built from.
    pub peering_setup: PeeringSetup,
    /// The Grid's own cost model.
    pub cost_model: CostModel,
    /// The gateway's settings (the deliberately broken protocol off).
    pub settings: GatewaySettings,
}

/// What a cluster's actors (its LRMS, its hosts, its local users) are built from.
#[derive(Clone, Debug)]
pub struct ClusterPlan {
    /// Its id.
    pub id: ClusterId,
    /// Its Grid.
    pub grid: GridId,
    /// `grid/cluster`, as actors and outputs name it.
    pub qualified_name: String,
    /// Its hosts.
    pub hosts: Vec<HostSpec>,
    /// Whether a host refuses VMs beyond its memory.
    pub enforce_memory: bool,
    /// Its local requests, in arrival order (its users').
    pub local_requests: Vec<RequestId>,
    /// The LRMS core's configuration.
    pub config: Config,
    /// What its policies are built from.
    pub setup: LrmsSetup,
    /// The preemption policy chosen.
    pub preemption: Chosen,
    /// The admission policy chosen.
    pub admission: Chosen,
    /// Whether and how it publishes free slots.
    pub publishing: Option<Publishing>,
}

/// How an LRMS publishes its free time slots to its IGG (paper 004 §4.1).
#[derive(Clone, Debug)]
pub struct Publishing {
    /// Time between publications; `None`: only when the IGG asks ([`crate::actors::messages::SlotsRequest`]).
    pub interval: Option<EmuDuration>,
    /// How far ahead the slots reach.
    pub horizon: EmuDuration,
    /// The cluster's cores.
    pub cores: u64,
    /// The cluster's cost of a resource unit (its price grows with load, eq. 1).
    pub unit_cost: f64,
    /// How the local partition kept from the published slots is sized (paper 004's `M`:
    /// mean local load; `Mf`: a forecast).
    pub partitions: Partitions,
}

impl RunPlan {
    /// How requests and Grids are named to external processes.
    pub fn names(&self) -> Names {
        Names {
            requests: self.request_labels.clone().into(),
            grids: self.grids.iter().map(|g| g.name.clone()).collect(),
        }
    }

    /// Grid `id`'s plan.
    pub fn grid(&self, id: GridId) -> &GridPlan {
        &self.grids[usize::from(id.0)]
    }

    /// Each Grid's cost model as its peers know it (paper 004 eqs. 2–3).
    pub fn providers(&self) -> BTreeMap<GridId, CostModel> {
        (self.grids.iter())
            .map(|g| (g.id, g.gateway.cost_model.clone()))
            .collect()
    }

    /// Every Grid's id.
    pub fn grid_ids(&self) -> Vec<GridId> {
        self.grids.iter().map(|g| g.id).collect()
    }

    /// Every external command the Grids `grids` name (their clusters', then their IGGs'),
    /// with the decision points each is asked: the processes a shard of those Grids starts.
    pub fn external_commands(&self, grids: &[GridId]) -> BTreeMap<String, Vec<Point>> {
        let mut clusters: Vec<&ClusterPlan> = (grids.iter())
            .flat_map(|&g| self.grid(g).clusters.iter())
            .collect();
        clusters.sort_by_key(|c| c.id);
        let lrms = clusters.into_iter().flat_map(ClusterPlan::external);
        let igg = (grids.iter()).flat_map(|&g| self.grid(g).gateway.external());
        let mut commands: BTreeMap<String, Vec<Point>> = BTreeMap::new();
        for (point, chosen) in lrms.chain(igg) {
            let points = commands.entry(chosen.name.clone()).or_default();
            if !points.contains(&point) {
                points.push(point);
            }
        }
        commands
    }
}

impl GatewayPlan {
    /// The decision points of this gateway that external processes decide, with the command
    /// of each: the whole gateway (which then names no policy of its own), or each of its
    /// policies.
    pub fn external(&self) -> Vec<(Point, &Chosen)> {
        let points = match self.implementation.is_external() {
            true => vec![(Point::Gateway, &self.implementation)],
            false => vec![
                (Point::Dispatch, &self.dispatch),
                (Point::Answer, &self.answer),
                (Point::Offer, &self.offer),
            ],
        };
        points
            .into_iter()
            .filter(|(_, c)| c.is_external())
            .collect()
    }
}

impl ClusterPlan {
    /// The decision points of this cluster that external processes decide.
    pub fn external(&self) -> Vec<(Point, &Chosen)> {
        [
            (Point::Preemption, &self.preemption),
            (Point::Admission, &self.admission),
        ]
        .into_iter()
        .filter(|(_, c)| c.is_external())
        .collect()
    }
}
