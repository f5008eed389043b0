//! Building the actor graph of a topology: one director; per Grid an IGG (and a DVE manager
//! when it has external users); per cluster an LRMS with its hosts (and local users). Every
//! setting an actor needs is read from the topology here and handed over in its spec, so the
//! run's context ([`Emu`]) holds the clock, the tracer, the observations, the faults and the
//! requests — not the topology.

use std::collections::BTreeMap;
use std::rc::Rc;

use actix::{Actor, AsyncContext};
use tokio::sync::oneshot;

use super::director::Director;
use super::host::Host;
use super::igg::{GatewayCore, Igg, IggSpec};
use super::lrms::{Lrms, LrmsSpec, Publishing};
use super::messages::SetPeers;
use super::users::{Target, Users};
use super::{Emu, Peer};
use crate::igg::dispatch::{DispatchSetup, RoundRobin};
use crate::igg::gateway::{Gateway, GatewayPolicies, GatewaySettings};
use crate::igg::negotiation::{CheapestContract, MarginalCost};
use crate::igg::peering::CostModel;
use crate::lrms::admission::Cacp;
use crate::lrms::preemption::Nop;
use crate::lrms::provider::Partitions;
use crate::lrms::Config;
use crate::lrms::Policies;
use crate::model::{ClusterId, GridId, LeaseType, Origin, RequestId};
use crate::policy::build::Builder;
use crate::policy::external::Names;
use crate::policy::{LrmsSetup, PeeringSetup};
use crate::time::{stream_seed, EmuTime};
use crate::topology::{PublicationMode, Topology, Workload};

/// The actors of a running federation.
pub struct Graph {
    /// Ends the run.
    pub director: Peer<Director>,
    /// Each Grid's IGG.
    pub iggs: Vec<(GridId, Peer<Igg>)>,
    /// Each cluster's LRMS.
    pub lrms: Vec<(ClusterId, Peer<Lrms>)>,
    /// Each cluster's hosts.
    pub hosts: Vec<(ClusterId, Vec<Peer<Host>>)>,
    /// The first policy that could not be built, if any (the run does not start).
    failed: Option<String>,
}

/// Test-only: a deliberately broken variant of the protocols, for checking that the invariant
/// checker (and the ways of exploring runs) catch it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Broken {
    /// The protocols as they are.
    #[default]
    None,
    /// A requester serves a request itself when a redirection's acknowledgement is late,
    /// though the provider may be running it: caught when messages are late (faults), in
    /// whatever order same-time deliveries run.
    LateAck,
    /// A host judges its capacity at each arrival, not when the instant is over: it takes
    /// for granted that a VM leaving at the instant another arrives has left first, which
    /// only the FIFO order of same-time deliveries guarantees. Caught when they run in
    /// another order (real concurrency, explored interleavings), never by faults alone.
    EagerCapacity,
}

impl Broken {
    /// The name `--broken-protocol=NAME` takes.
    pub fn name(self) -> &'static str {
        match self {
            Broken::None => "none",
            Broken::LateAck => "late-ack",
            Broken::EagerCapacity => "eager-capacity",
        }
    }

    /// The variant called `name` (as [`Broken::name`] gives it).
    pub fn from_name(name: &str) -> Option<Broken> {
        [Broken::None, Broken::LateAck, Broken::EagerCapacity]
            .into_iter()
            .find(|b| b.name() == name)
    }
}

impl Graph {
    /// Starts the actors of `topo` on the current actix system; `done` learns when the run
    /// ends. `broken` chooses a deliberately broken variant (tests only). Fails if a policy
    /// cannot be built (an external process that does not start).
    pub fn build(
        emu: &Rc<Emu>,
        topo: &Topology,
        done: oneshot::Sender<EmuTime>,
        broken: Broken,
    ) -> Result<Graph, String> {
        let all: Vec<GridId> = (0..topo.grids.len()).map(|g| GridId(g as u16)).collect();
        let graph = Graph::build_part(emu, topo, &all, done, broken)?;
        graph.introduce(topo, &graph.iggs);
        Ok(graph)
    }

    /// Starts the actors of Grids `grids` of `topo` (a shard of a run on several threads)
    /// with a director counting their requests; `done` learns when the run ends. The IGGs
    /// learn their peers from [`Graph::introduce`].
    pub fn build_part(
        emu: &Rc<Emu>,
        topo: &Topology,
        grids: &[GridId],
        done: oneshot::Sender<EmuTime>,
        broken: Broken,
    ) -> Result<Graph, String> {
        let arrived = answers_later(emu, topo);
        crate::policy::build::start_processes(topo, grids, &emu.plugins, arrived)?;
        let dir_id = emu.tracer.register("director".into());
        let counted = requests_where(topo, |w| grids.contains(&w.grid)).len();
        let director = Peer {
            id: dir_id,
            addr: Director::new(Rc::clone(emu), dir_id, counted, topo.emulation.end, done).start(),
        };
        let mut graph = Graph {
            director,
            iggs: Vec::new(),
            lrms: Vec::new(),
            hosts: Vec::new(),
            failed: None,
        };
        for &g in grids {
            graph.start_grid(emu, topo, g, broken);
        }
        match graph.failed.take() {
            Some(e) => Err(e),
            None => Ok(graph),
        }
    }

    /// Builds policies for `emu`'s run of `topo`.
    fn builder<'a>(emu: &'a Rc<Emu>, topo: &'a Topology) -> Builder<'a> {
        let witness: std::rc::Weak<dyn crate::policy::Witness> = Rc::downgrade(emu) as _;
        Builder {
            registry: &topo.registry,
            plugins: &emu.plugins,
            witness,
            names: Names {
                requests: topo.request_labels.clone().into(),
                grids: topo.grids.iter().map(|g| g.name.clone()).collect(),
            },
        }
    }

    /// `built`, or `placeholder` with the failure kept (the run does not start).
    fn keep<T>(&mut self, built: Result<T, String>, placeholder: impl FnOnce() -> T) -> T {
        built.unwrap_or_else(|e| {
            self.failed.get_or_insert(e);
            placeholder()
        })
    }

    /// Tells this graph's IGGs every IGG of the run, `iggs` (setup, not traced): each learns
    /// the others before any request arrives.
    pub fn introduce(&self, topo: &Topology, iggs: &[(GridId, Peer<Igg>)]) {
        let providers: BTreeMap<GridId, CostModel> = (0..topo.grids.len())
            .map(|g| (GridId(g as u16), topo.cost_model(GridId(g as u16))))
            .collect();
        for (_, igg) in &self.iggs {
            igg.addr.do_send::<SetPeers>(SetPeers {
                peers: iggs.to_vec(),
                providers: providers.clone(),
            });
        }
    }

    fn start_grid(&mut self, emu: &Rc<Emu>, topo: &Topology, gid: GridId, broken: Broken) {
        let grid = &topo.grids[usize::from(gid.0)];
        let igg_id = emu.tracer.register(format!("igg:{}", grid.name));
        let external = requests_where(topo, |w| w.origin == Origin::External && w.grid == gid);
        // The migration route of a preemption needs the other clusters' slots: where the Grid
        // has several clusters, one of which preempts, and the run has migratable leases.
        let preempts = |cid: &ClusterId| topo.cluster(*cid).lrms.preemption.name != "nop";
        let share_slots = grid.clusters.len() > 1
            && grid.clusters.iter().any(preempts)
            && (topo.requests.iter()).any(|r| r.lease_type == LeaseType::DeadlineMigratable);
        let addr = Igg::create(|ctx| {
            let igg = Peer {
                id: igg_id,
                addr: ctx.address(),
            };
            let dve = (!external.is_empty()).then(|| {
                let id = emu.tracer.register(format!("dve:{}", grid.name));
                let target = Target::Igg(igg.clone());
                let users = Users::new(Rc::clone(emu), id, target, self.director.clone(), external);
                Peer {
                    id,
                    addr: users.start(),
                }
            });
            let clusters: Vec<(ClusterId, Peer<Lrms>)> = grid
                .clusters
                .iter()
                .map(|&cid| (cid, self.start_cluster(emu, topo, (cid, &igg), broken)))
                .collect();
            let gateway = self.gateway(emu, topo, (gid, igg_id), broken);
            let external = [&grid.igg.dispatch, &grid.igg.answer, &grid.igg.offer]
                .iter()
                .any(|c| c.is_external());
            let spec = IggSpec {
                me: igg,
                clusters,
                share_slots,
                dve,
                gateway,
                decides_later: external && emu.plugins.realtime().is_some(),
            };
            Igg::new(Rc::clone(emu), spec)
        });
        self.iggs.push((gid, Peer { id: igg_id, addr }));
    }

    fn start_cluster(
        &mut self,
        emu: &Rc<Emu>,
        topo: &Topology,
        (cid, igg): (ClusterId, &Peer<Igg>),
        broken: Broken,
    ) -> Peer<Lrms> {
        let cluster = topo.cluster(cid);
        let qname = cluster.qualified_name(topo);
        let lrms_id = emu.tracer.register(format!("lrms:{qname}"));
        let local = requests_where(topo, |w| {
            w.origin == Origin::Local && w.cluster == Some(cid)
        });
        let mut hosts = Vec::new();
        let addr = Lrms::create(|ctx| {
            let me = Peer {
                id: lrms_id,
                addr: ctx.address(),
            };
            hosts = cluster
                .hosts
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    let id = emu.tracer.register(format!("host:{qname}/{i}"));
                    let host = Host::new(
                        Rc::clone(emu),
                        (id, cid),
                        spec.clone(),
                        cluster.lrms.enforce_memory,
                    )
                    .judging_eagerly(broken == Broken::EagerCapacity);
                    Peer {
                        id,
                        addr: host.start(),
                    }
                })
                .collect();
            let users = (!local.is_empty()).then(|| {
                let id = emu.tracer.register(format!("users:{qname}"));
                let target = Target::Lrms(me.clone());
                let u = Users::new(Rc::clone(emu), id, target, self.director.clone(), local);
                Peer {
                    id,
                    addr: u.start(),
                }
            });
            let spec = LrmsSpec {
                cluster: cid,
                grid: cluster.grid,
                igg: igg.clone(),
                users,
                hosts: hosts
                    .iter()
                    .cloned()
                    .zip(cluster.hosts.iter().cloned())
                    .collect(),
                config: core_config(topo, cid, &emu.tracer.name(lrms_id)),
                policies: self.lrms_policies(emu, topo, cid, lrms_id),
                decides_later: emu.plugins.realtime().is_some()
                    && cluster.lrms.preemption.is_external(),
                publishing: publishing(topo, cid),
            };
            Lrms::new(Rc::clone(emu), lrms_id, spec)
        });
        self.hosts.push((cid, hosts));
        let lrms = Peer { id: lrms_id, addr };
        self.lrms.push((cid, lrms.clone()));
        lrms
    }
}

impl Graph {
    /// Grid `gid`'s gateway, deciding in `by`: igemu's with its policies, or the external
    /// process `igg.implementation` names.
    fn gateway(
        &mut self,
        emu: &Rc<Emu>,
        topo: &Topology,
        (gid, by): (GridId, crate::trace::ActorId),
        broken: Broken,
    ) -> GatewayCore {
        let grid = &topo.grids[usize::from(gid.0)];
        let names: Vec<(ClusterId, String)> = (grid.clusters.iter())
            .map(|&c| (c, topo.cluster(c).name.clone()))
            .collect();
        let b = Graph::builder(emu, topo);
        let setup = crate::policy::external::GatewaySetup {
            grid: gid,
            clusters: names.clone(),
            requests: Rc::clone(&emu.requests),
            names: b.names.clone(),
            offer_timeout: topo.peering.offer_timeout,
        };
        let external = b.gateway(&grid.igg.implementation, setup, by);
        if let Some(Some(g)) = self.keep(external.map(Some), || None) {
            return GatewayCore::External(Box::new(g));
        }
        let (models, rate) = topo.grid_models(usize::from(gid.0));
        let seed = stream_seed(topo.emulation.seed, &format!("igg:{}", grid.name));
        let sizes: Vec<(ClusterId, u64)> = (grid.clusters.iter())
            .map(|&c| (c, topo.cluster(c).cores()))
            .collect();
        let setup = DispatchSetup {
            grid: grid.name.clone(),
            clusters: names.into_iter().map(|(_, n)| n).collect(),
            models,
            rate,
            seed,
        };
        let policies = self.gateway_policies(emu, topo, (gid, by), setup);
        GatewayCore::Igemu(Box::new(Gateway::new(
            gid,
            &sizes,
            topo.cost_model(gid),
            policies,
            gateway_settings(topo, gid, broken == Broken::LateAck),
        )))
    }

    /// Grid `gid`'s gateway policies (dispatch over `setup`, answer, offer), deciding in
    /// `by`.
    fn gateway_policies(
        &mut self,
        emu: &Rc<Emu>,
        topo: &Topology,
        (gid, by): (GridId, crate::trace::ActorId),
        setup: DispatchSetup,
    ) -> GatewayPolicies {
        let b = Graph::builder(emu, topo);
        let igg = &topo.grids[usize::from(gid.0)].igg;
        let peering = PeeringSetup {
            grid: setup.grid.clone(),
            seed: stream_seed(topo.emulation.seed, &format!("igg:{}:policies", setup.grid)),
        };
        let dispatch = b.dispatch(&igg.dispatch, &setup, by);
        let answer = b.answer(&igg.answer, &peering, by);
        let offer = b.offer(&igg.offer, &peering, by);
        GatewayPolicies {
            dispatch: self.keep(dispatch, || Box::new(RoundRobin::default())),
            answer: self.keep(answer, || Box::new(MarginalCost)),
            offer: self.keep(offer, || Box::new(CheapestContract)),
        }
    }

    /// Cluster `cid`'s LRMS policies (preemption, admission), deciding in `by`.
    fn lrms_policies(
        &mut self,
        emu: &Rc<Emu>,
        topo: &Topology,
        cid: ClusterId,
        by: crate::trace::ActorId,
    ) -> Policies {
        let b = Graph::builder(emu, topo);
        let cluster = topo.cluster(cid);
        let l = &cluster.lrms;
        let name = cluster.qualified_name(topo);
        let setup = LrmsSetup {
            seed: stream_seed(topo.emulation.seed, &format!("lrms:{name}:policies")),
            cluster: name,
            cp_alpha: l.cp_alpha,
            pacp: l.pacp,
            queue_limit: l.queue_limit,
        };
        let preemption = b.preemption(&l.preemption, &setup, by);
        let admission = b.admission(&l.admission, &setup, by);
        Policies {
            preemption: self.keep(preemption, || Box::new(Nop)),
            admission: self.keep(admission, || Box::new(Cacp)),
        }
    }
}

/// Whether any policy of `topo` is decided by an external process (dispatch, answer, offer,
/// preemption or admission): in realtime its answers come at the emulated time the wall time
/// they took makes, so such a run does not repeat its virtual run.
pub fn asks_processes(topo: &Topology) -> bool {
    topo.clusters
        .iter()
        .any(|c| c.lrms.preemption.is_external() || c.lrms.admission.is_external())
        || topo.grids.iter().any(|g| {
            [&g.igg.dispatch, &g.igg.answer, &g.igg.offer]
                .iter()
                .any(|c| c.is_external())
        })
}

/// In a realtime run with external policies, makes their decisions pending rather than
/// waited for: each process's answers are read in the background and posted to the clock,
/// which hands them to their actors (see [`crate::policy::realtime`]). Returns what a process
/// calls when an answer comes.
fn answers_later(emu: &Rc<Emu>, topo: &Topology) -> Option<std::sync::Arc<dyn Fn() + Send + Sync>> {
    let realtime = matches!(topo.emulation.mode, crate::time::ClockMode::Realtime { .. });
    if !realtime || !asks_processes(topo) {
        return None;
    }
    let traced = Rc::downgrade(emu);
    // A decision is due at the deadline, or when the wall-clock timeout has passed at this
    // speed-up, whichever comes first: a process that hangs is found within the timeout.
    let speedup = match topo.emulation.mode {
        crate::time::ClockMode::Realtime { speedup } => speedup,
        crate::time::ClockMode::Virtual => 1.0,
    };
    let timeout =
        crate::time::EmuDuration::from_secs_f64(topo.external.timeout.as_secs_f64() * speedup);
    emu.plugins.answer_later(
        topo.external.deadline.min(timeout),
        Box::new(move || traced.upgrade().and_then(|e| e.tracer.current())),
    );
    let weak = Rc::downgrade(emu);
    crate::policy::realtime::on_arrival(Some(Rc::new(move || {
        if let Some(emu) = weak.upgrade() {
            if let Some(rt) = emu.plugins.realtime() {
                rt.deliver(emu.clock.wall_now_emulated());
            }
        }
    })));
    let mailbox = emu.clock.mailbox();
    Some(std::sync::Arc::new(move || {
        mailbox.post_now(Box::new(crate::policy::realtime::arrived));
    }))
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

fn gateway_settings(topo: &Topology, grid: GridId, broken_protocol: bool) -> GatewaySettings {
    let p = &topo.peering;
    GatewaySettings {
        retry: topo.grids[usize::from(grid.0)].igg.retry,
        horizon: p.horizon,
        load_threshold: p.load_threshold,
        interval: p.interval,
        price_update: p.price_update,
        offer_timeout: p.offer_timeout,
        on_request: p.publication == PublicationMode::OnRequest,
        provides: topo.contract_pairs().iter().any(|(_, to, _)| *to == grid),
        seed: stream_seed(
            topo.emulation.seed,
            &format!("igg:{}:rounds", topo.grids[usize::from(grid.0)].name),
        ),
        steepness: p.steepness,
        retries: p.retries,
        ticket_ttl: p.ticket_ttl,
        contracts: topo
            .contract_pairs()
            .into_iter()
            .filter(|(from, _, _)| *from == grid)
            .map(|(_, to, c)| (to, c))
            .collect(),
        broken_protocol,
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
