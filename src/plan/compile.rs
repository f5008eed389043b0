//! Compiling a topology into its run plan: each derived setting is read from the topology
//! once, here, and resolved into the spec of the actor that needs it.

use super::{ClusterPlan, ExternalPlan, GatewayPlan, GridPlan, Publishing, RunPlan};
use crate::igg::dispatch::DispatchSetup;
use crate::igg::gateway::GatewaySettings;
use crate::lrms::provider::Partitions;
use crate::lrms::Config;
use crate::model::{ClusterId, GridId, LeaseType, Origin, RequestId};
use crate::policy::{Greeting, LrmsSetup, PeeringSetup};
use crate::time::{stream_seed, ClockMode, EmuDuration};
use crate::topology::{PublicationMode, Topology, Workload};

/// `topo` compiled into its run plan.
pub fn compile(topo: &Topology) -> RunPlan {
    let grid_ids = (0..topo.grids.len()).map(|g| GridId(g as u16));
    RunPlan {
        mode: topo.emulation.mode,
        end: topo.emulation.end,
        registry: topo.registry.clone(),
        request_labels: topo.request_labels.clone(),
        grids: grid_ids.map(|g| grid(topo, g)).collect(),
        external: external(topo),
    }
}

/// How `topo`'s external processes are run.
fn external(topo: &Topology) -> ExternalPlan {
    // A decision is due at the deadline, or when the wall-clock timeout has passed at this
    // speed-up, whichever comes first: a process that hangs is found within the timeout.
    let speedup = match topo.emulation.mode {
        ClockMode::Realtime { speedup } => speedup,
        ClockMode::Virtual => 1.0,
    };
    let timeout = EmuDuration::from_secs_f64(topo.external.timeout.as_secs_f64() * speedup);
    ExternalPlan {
        asked: topo.asks_processes(),
        greeting: Greeting {
            mode: match topo.emulation.mode {
                ClockMode::Virtual => "virtual",
                ClockMode::Realtime { .. } => "realtime",
            },
            seed: topo.emulation.seed,
            topology: topo.name.clone(),
            timeout: topo.external.timeout,
        },
        answer_within: topo.external.deadline.min(timeout),
    }
}

/// Grid `gid`'s plan.
fn grid(topo: &Topology, gid: GridId) -> GridPlan {
    let g = &topo.grids[usize::from(gid.0)];
    // The migration route of a preemption needs the other clusters' slots: where the Grid
    // has several clusters, one of which preempts, and the run has migratable leases.
    let preempts = |cid: &ClusterId| topo.cluster(*cid).lrms.preemption.name != "nop";
    let share_slots = g.clusters.len() > 1
        && g.clusters.iter().any(preempts)
        && (topo.requests.iter()).any(|r| r.lease_type == LeaseType::DeadlineMigratable);
    GridPlan {
        id: gid,
        name: g.name.clone(),
        requests: requests_where(topo, |w| w.grid == gid).len(),
        external_requests: requests_where(topo, |w| w.origin == Origin::External && w.grid == gid),
        share_slots,
        gateway: gateway(topo, gid),
        clusters: g.clusters.iter().map(|&c| cluster(topo, c)).collect(),
    }
}

/// Grid `gid`'s gateway plan.
fn gateway(topo: &Topology, gid: GridId) -> GatewayPlan {
    let g = &topo.grids[usize::from(gid.0)];
    let clusters: Vec<(ClusterId, String)> = (g.clusters.iter())
        .map(|&c| (c, topo.cluster(c).name.clone()))
        .collect();
    let (models, rate) = topo.grid_models(usize::from(gid.0));
    GatewayPlan {
        implementation: g.igg.implementation.clone(),
        dispatch: g.igg.dispatch.clone(),
        answer: g.igg.answer.clone(),
        offer: g.igg.offer.clone(),
        sizes: (g.clusters.iter())
            .map(|&c| (c, topo.cluster(c).cores()))
            .collect(),
        dispatch_setup: DispatchSetup {
            grid: g.name.clone(),
            clusters: clusters.iter().map(|(_, n)| n.clone()).collect(),
            models,
            rate,
            seed: stream_seed(topo.emulation.seed, &format!("igg:{}", g.name)),
        },
        peering_setup: PeeringSetup {
            grid: g.name.clone(),
            seed: stream_seed(topo.emulation.seed, &format!("igg:{}:policies", g.name)),
        },
        clusters,
        cost_model: topo.cost_model(gid),
        settings: gateway_settings(topo, gid),
    }
}

/// Grid `grid`'s gateway settings, the deliberately broken protocol off.
fn gateway_settings(topo: &Topology, grid: GridId) -> GatewaySettings {
    let p = &topo.peering;
    let g = &topo.grids[usize::from(grid.0)];
    let pairs = topo.contract_pairs();
    GatewaySettings {
        retry: g.igg.retry,
        horizon: p.horizon,
        load_threshold: p.load_threshold,
        interval: p.interval,
        price_update: p.price_update,
        offer_timeout: p.offer_timeout,
        on_request: p.publication == PublicationMode::OnRequest,
        provides: pairs.iter().any(|(_, to, _)| *to == grid),
        seed: stream_seed(topo.emulation.seed, &format!("igg:{}:rounds", g.name)),
        steepness: p.steepness,
        retries: p.retries,
        ticket_ttl: p.ticket_ttl,
        contracts: (pairs.into_iter())
            .filter(|(from, _, _)| *from == grid)
            .map(|(_, to, c)| (to, c))
            .collect(),
        broken_protocol: false,
    }
}

/// Cluster `cid`'s plan.
fn cluster(topo: &Topology, cid: ClusterId) -> ClusterPlan {
    let c = topo.cluster(cid);
    let l = &c.lrms;
    let qualified_name = c.qualified_name(topo);
    ClusterPlan {
        id: cid,
        grid: c.grid,
        hosts: c.hosts.clone(),
        enforce_memory: l.enforce_memory,
        local_requests: requests_where(topo, |w| {
            w.origin == Origin::Local && w.cluster == Some(cid)
        }),
        config: core_config(topo, cid, &format!("lrms:{qualified_name}")),
        setup: LrmsSetup {
            seed: stream_seed(
                topo.emulation.seed,
                &format!("lrms:{qualified_name}:policies"),
            ),
            cluster: qualified_name.clone(),
            cp_alpha: l.cp_alpha,
            admission: l.admission_settings,
        },
        preemption: l.preemption.clone(),
        admission: l.admission.clone(),
        publishing: publishing(topo, cid),
        qualified_name,
    }
}

/// The LRMS core's configuration for cluster `cid` (`name` seeds its random choices).
fn core_config(topo: &Topology, cid: ClusterId, name: &str) -> Config {
    let cluster = topo.cluster(cid);
    let lrms = &cluster.lrms;
    let grid = &topo.grids[usize::from(cluster.grid.0)];
    Config {
        backfilling: lrms.backfilling,
        overhead: crate::lrms::overhead::OverheadModel::new(&lrms.profile.timings),
        boot: lrms.profile.timings.boot,
        seed: stream_seed(topo.emulation.seed, name),
        can_migrate: grid.clusters.len() > 1,
        enforce_memory: lrms.enforce_memory,
        search_budget: lrms.search_budget,
        speed: topo.speed_of(cid),
        compress: lrms.compress,
        locals: lrms.locals,
        moldable: lrms.moldable,
        partitions: lrms.partitions != Partitions::Single,
        backfill_depth: lrms.backfill_depth,
    }
}

/// How cluster `cid` publishes its free slots, if it does: when its Grid peers or dispatches
/// by them.
fn publishing(topo: &Topology, cid: ClusterId) -> Option<Publishing> {
    topo.publishes_slots(cid).then(|| Publishing {
        interval: (topo.peering.publication == PublicationMode::Periodic)
            .then_some(topo.peering.publish_interval),
        horizon: topo.peering.horizon,
        cores: topo.cluster(cid).cores(),
        unit_cost: topo.unit_cost(cid),
        partitions: topo.cluster(cid).lrms.partitions,
    })
}

/// The requests of the workloads `pick` selects, in arrival order.
fn requests_where(topo: &Topology, pick: impl Fn(&Workload) -> bool) -> Vec<RequestId> {
    let mut ids: Vec<RequestId> = topo
        .workloads
        .iter()
        .filter(|w| pick(w))
        .flat_map(|w| w.requests.iter().copied())
        .collect();
    ids.sort_by_key(|id| (topo.requests[id.0 as usize].arrival, id.0));
    ids
}
