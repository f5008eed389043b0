//! Building the actor graph of a run plan: one director; per Grid an IGG (and a DVE manager
//! when it has external users); per cluster an LRMS with its hosts (and local users). Every
//! setting an actor needs comes resolved from the plan ([`crate::plan`]), never from the
//! topology, and is handed over in its spec, so the run's context ([`Emu`]) holds the clock,
//! the tracer, the observations, the faults and the requests — not the topology.

use std::rc::Rc;

use actix::{Actor, AsyncContext};
use tokio::sync::oneshot;

use super::director::Director;
use super::host::Host;
use super::igg::{GatewayCore, Igg, IggSpec};
use super::lrms::{Lrms, LrmsSpec};
use super::messages::SetPeers;
use super::users::{Target, Users};
use super::{Emu, Peer};
use crate::igg::dispatch::RoundRobin;
use crate::igg::gateway::{Gateway, GatewayPolicies};
use crate::igg::negotiation::{CheapestContract, MarginalCost};
use crate::lrms::admission::Cacp;
use crate::lrms::preemption::Nop;
use crate::lrms::Policies;
use crate::model::{ClusterId, GridId};
use crate::plan::{ClusterPlan, GridPlan, RunPlan};
use crate::policy::build::Builder;
use crate::time::EmuTime;

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
    /// Starts the actors of `plan` on the current actix system; `done` learns when the run
    /// ends. `broken` chooses a deliberately broken variant (tests only). Fails if a policy
    /// cannot be built (an external process that does not start).
    pub fn build(
        emu: &Rc<Emu>,
        plan: &RunPlan,
        done: oneshot::Sender<EmuTime>,
        broken: Broken,
    ) -> Result<Graph, String> {
        let graph = Graph::build_part(emu, plan, &plan.grid_ids(), done, broken)?;
        graph.introduce(plan, &graph.iggs);
        Ok(graph)
    }

    /// Starts the actors of Grids `grids` of `plan` (a shard of a run on several threads)
    /// with a director counting their requests; `done` learns when the run ends. The IGGs
    /// learn their peers from [`Graph::introduce`].
    pub fn build_part(
        emu: &Rc<Emu>,
        plan: &RunPlan,
        grids: &[GridId],
        done: oneshot::Sender<EmuTime>,
        broken: Broken,
    ) -> Result<Graph, String> {
        let arrived = answers_later(emu, plan);
        let commands = plan.external_commands(grids);
        let greeting = &plan.external.greeting;
        crate::policy::build::start_processes(commands, greeting, &emu.plugins, arrived)?;
        let dir_id = emu.tracer.register("director".into());
        let counted = grids.iter().map(|&g| plan.grid(g).requests).sum();
        let director = Peer {
            id: dir_id,
            addr: Director::new(Rc::clone(emu), dir_id, counted, plan.end, done).start(),
        };
        let mut graph = Graph {
            director,
            iggs: Vec::new(),
            lrms: Vec::new(),
            hosts: Vec::new(),
            failed: None,
        };
        let making = Making {
            emu,
            policies: Builder {
                registry: &plan.registry,
                plugins: &emu.plugins,
                witness: Rc::downgrade(emu) as std::rc::Weak<dyn crate::policy::Witness>,
                names: plan.names(),
            },
            broken,
        };
        for &g in grids {
            graph.start_grid(&making, plan.grid(g));
        }
        match graph.failed.take() {
            Some(e) => Err(e),
            None => Ok(graph),
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
    pub fn introduce(&self, plan: &RunPlan, iggs: &[(GridId, Peer<Igg>)]) {
        let providers = plan.providers();
        for (_, igg) in &self.iggs {
            igg.addr.do_send::<SetPeers>(SetPeers {
                peers: iggs.to_vec(),
                providers: providers.clone(),
            });
        }
    }

    fn start_grid(&mut self, m: &Making, grid: &GridPlan) {
        let emu = m.emu;
        let igg_id = emu.tracer.register(format!("igg:{}", grid.name));
        let addr = Igg::create(|ctx| {
            let igg = Peer {
                id: igg_id,
                addr: ctx.address(),
            };
            let dve = (!grid.external_requests.is_empty()).then(|| {
                let id = emu.tracer.register(format!("dve:{}", grid.name));
                let target = Target::Igg(igg.clone());
                let external = grid.external_requests.clone();
                let users = Users::new(Rc::clone(emu), id, target, self.director.clone(), external);
                Peer {
                    id,
                    addr: users.start(),
                }
            });
            let clusters: Vec<(ClusterId, Peer<Lrms>)> = (grid.clusters.iter())
                .map(|cluster| (cluster.id, self.start_cluster(m, cluster, &igg)))
                .collect();
            let gateway = self.gateway(m, grid, igg_id);
            let g = &grid.gateway;
            let external = [&g.dispatch, &g.answer, &g.offer]
                .iter()
                .any(|c| c.is_external());
            let spec = IggSpec {
                me: igg,
                clusters,
                share_slots: grid.share_slots,
                dve,
                gateway,
                decides_later: external && emu.plugins.realtime().is_some(),
            };
            Igg::new(Rc::clone(emu), spec)
        });
        self.iggs.push((grid.id, Peer { id: igg_id, addr }));
    }

    fn start_cluster(&mut self, m: &Making, cluster: &ClusterPlan, igg: &Peer<Igg>) -> Peer<Lrms> {
        let (emu, qname) = (m.emu, &cluster.qualified_name);
        let lrms_id = emu.tracer.register(format!("lrms:{qname}"));
        let mut hosts = Vec::new();
        let addr = Lrms::create(|ctx| {
            let me = Peer {
                id: lrms_id,
                addr: ctx.address(),
            };
            hosts = (cluster.hosts.iter().enumerate())
                .map(|(i, spec)| {
                    let id = emu.tracer.register(format!("host:{qname}/{i}"));
                    let host = Host::new(
                        Rc::clone(emu),
                        (id, cluster.id),
                        spec.clone(),
                        cluster.enforce_memory,
                    )
                    .judging_eagerly(m.broken == Broken::EagerCapacity);
                    Peer {
                        id,
                        addr: host.start(),
                    }
                })
                .collect();
            let users = (!cluster.local_requests.is_empty()).then(|| {
                let id = emu.tracer.register(format!("users:{qname}"));
                let target = Target::Lrms(me.clone());
                let local = cluster.local_requests.clone();
                let u = Users::new(Rc::clone(emu), id, target, self.director.clone(), local);
                Peer {
                    id,
                    addr: u.start(),
                }
            });
            let spec = LrmsSpec {
                cluster: cluster.id,
                grid: cluster.grid,
                igg: igg.clone(),
                users,
                hosts: (hosts.iter().cloned())
                    .zip(cluster.hosts.iter().cloned())
                    .collect(),
                config: cluster.config.clone(),
                policies: self.lrms_policies(m, cluster, lrms_id),
                decides_later: emu.plugins.realtime().is_some() && cluster.preemption.is_external(),
                publishing: cluster.publishing.clone(),
            };
            Lrms::new(Rc::clone(emu), lrms_id, spec)
        });
        self.hosts.push((cluster.id, hosts));
        let lrms = Peer { id: lrms_id, addr };
        self.lrms.push((cluster.id, lrms.clone()));
        lrms
    }
}

/// What every actor of a graph is built with: the run, the policies' builder and the
/// deliberately broken variant, if any.
struct Making<'a> {
    emu: &'a Rc<Emu>,
    policies: Builder<'a>,
    broken: Broken,
}

impl Graph {
    /// Grid `grid`'s gateway, deciding in `by`: igemu's with its policies, or the external
    /// process `implementation` names.
    fn gateway(&mut self, m: &Making, grid: &GridPlan, by: crate::trace::ActorId) -> GatewayCore {
        let (b, g) = (&m.policies, &grid.gateway);
        let setup = crate::policy::external::GatewaySetup {
            grid: grid.id,
            clusters: g.clusters.clone(),
            requests: Rc::clone(&m.emu.requests),
            names: b.names.clone(),
            offer_timeout: g.settings.offer_timeout,
        };
        let external = b.gateway(&g.implementation, setup, by);
        if let Some(Some(external)) = self.keep(external.map(Some), || None) {
            return GatewayCore::External(Box::new(external));
        }
        let policies = GatewayPolicies {
            dispatch: self.keep(b.dispatch(&g.dispatch, &g.dispatch_setup, by), || {
                Box::new(RoundRobin::default())
            }),
            answer: self.keep(b.answer(&g.answer, &g.peering_setup, by), || {
                Box::new(MarginalCost)
            }),
            offer: self.keep(b.offer(&g.offer, &g.peering_setup, by), || {
                Box::new(CheapestContract)
            }),
        };
        let mut settings = g.settings.clone();
        settings.broken_protocol = m.broken == Broken::LateAck;
        GatewayCore::Igemu(Box::new(Gateway::new(
            grid.id,
            &g.sizes,
            g.cost_model.clone(),
            policies,
            settings,
        )))
    }

    /// Cluster `cluster`'s LRMS policies (preemption, admission), deciding in `by`.
    fn lrms_policies(
        &mut self,
        m: &Making,
        cluster: &ClusterPlan,
        by: crate::trace::ActorId,
    ) -> Policies {
        let b = &m.policies;
        let preemption = b.preemption(&cluster.preemption, &cluster.setup, by);
        let admission = b.admission(&cluster.admission, &cluster.setup, by);
        Policies {
            preemption: self.keep(preemption, || Box::new(Nop)),
            admission: self.keep(admission, || Box::new(Cacp)),
        }
    }
}

/// In a realtime run with external policies, makes their decisions pending rather than
/// waited for: each process's answers are read in the background and posted to the clock,
/// which hands them to their actors (see [`crate::policy::realtime`]). Returns what a process
/// calls when an answer comes.
fn answers_later(emu: &Rc<Emu>, plan: &RunPlan) -> Option<std::sync::Arc<dyn Fn() + Send + Sync>> {
    let realtime = matches!(plan.mode, crate::time::ClockMode::Realtime { .. });
    if !realtime || !plan.external.asked {
        return None;
    }
    let traced = Rc::downgrade(emu);
    emu.plugins.answer_later(
        plan.external.answer_within,
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
