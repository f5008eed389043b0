//! Tests of the run plan: every derived setting resolved once, per Grid and per cluster.

use std::collections::BTreeSet;

use super::*;
use crate::topology::{load_file, load_str, Overrides, Topology};

fn shipped(name: &str, sets: &[&str]) -> Topology {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("topologies")
        .join(name);
    let overrides = Overrides::sets(sets.iter().map(|s| s.to_string()).collect());
    load_file(&path, &overrides).expect("a shipped topology loads")
}

const SHIPPED: [&str; 5] = [
    "quickstart.toml",
    "peering-small.toml",
    "paper000-three-clusters.toml",
    "paper003-testbed.toml",
    "paper004-two-grids.toml",
];

/// Shards of a run on several threads share one plan.
#[test]
fn a_plan_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<RunPlan>();
}

#[test]
fn every_request_has_one_user_and_each_user_gets_them_in_arrival_order() {
    for name in SHIPPED {
        let topo = shipped(name, &[]);
        let plan = compile(&topo);
        let mut seen = BTreeSet::new();
        for grid in &plan.grids {
            let mut mine = grid.external_requests.len();
            let users = std::iter::once(&grid.external_requests)
                .chain(grid.clusters.iter().map(|c| &c.local_requests));
            for ids in users {
                let keys: Vec<_> = ids
                    .iter()
                    .map(|id| (topo.requests[id.0 as usize].arrival, id.0))
                    .collect();
                assert!(keys.windows(2).all(|w| w[0] < w[1]), "{name}: order");
                for id in ids {
                    assert!(seen.insert(*id), "{name}: {id:?} has two users");
                }
            }
            mine += grid
                .clusters
                .iter()
                .map(|c| c.local_requests.len())
                .sum::<usize>();
            assert_eq!(grid.requests, mine, "{name}: grid {} counts", grid.name);
        }
        assert_eq!(seen.len(), topo.requests.len(), "{name}: every request");
    }
}

/// Every actor's random stream is its own, and each moves with the run's seed.
#[test]
fn every_random_stream_is_distinct_and_derives_from_the_seed() {
    let seeds = |plan: &RunPlan| -> Vec<u64> {
        (plan.grids.iter())
            .flat_map(|g| {
                let gw = &g.gateway;
                let own = [
                    gw.dispatch_setup.seed,
                    gw.peering_setup.seed,
                    gw.settings.seed,
                ];
                let clusters = (g.clusters.iter()).flat_map(|c| [c.config.seed, c.setup.seed]);
                own.into_iter().chain(clusters).collect::<Vec<_>>()
            })
            .collect()
    };
    let a = seeds(&compile(&shipped("paper004-two-grids.toml", &[])));
    let b = seeds(&compile(&shipped(
        "paper004-two-grids.toml",
        &["emulation.seed=7"],
    )));
    assert_eq!(a.iter().collect::<BTreeSet<_>>().len(), a.len());
    assert_eq!(a.len(), b.len());
    assert!(a.iter().zip(&b).all(|(x, y)| x != y));
}

/// Contracts become each requester's list of providers, in both directions where a contract
/// says so, and none when `peering.contracts = "none"`; a Grid that dispatches round-robin
/// has its clusters publish free slots only while it peers.
#[test]
fn contracts_and_publication_follow_the_peering_settings() {
    for (name, publishes_alone) in [
        ("paper004-two-grids.toml", true),
        ("quickstart.toml", false),
    ] {
        let plan = compile(&shipped(name, &[]));
        for g in &plan.grids {
            let providers: Vec<GridId> = g.gateway.settings.contracts.iter().map(|c| c.0).collect();
            let others: Vec<GridId> = plan.grid_ids().into_iter().filter(|&o| o != g.id).collect();
            assert_eq!(providers, others, "{name}");
            assert!(g.gateway.settings.provides, "{name}");
            assert!(g.clusters.iter().all(|c| c.publishing.is_some()), "{name}");
        }
        assert_eq!(plan.providers().len(), plan.grids.len());
        let none = compile(&shipped(name, &["peering.contracts=none"]));
        for g in &none.grids {
            assert!(g.gateway.settings.contracts.is_empty(), "{name}");
            assert!(!g.gateway.settings.provides, "{name}");
            let publishing = g.clusters.iter().filter(|c| c.publishing.is_some()).count();
            let expected = if publishes_alone { g.clusters.len() } else { 0 };
            assert_eq!(
                publishing, expected,
                "{name}: earliest-start dispatch reads slots"
            );
        }
    }
}

/// A cluster can migrate only where its Grid has another cluster, and its speed is the
/// reference's over its own: the faster of two clusters runs the same work in less time.
#[test]
fn migration_and_speed_are_resolved_per_cluster() {
    let plan = compile(&shipped("quickstart.toml", &[]));
    let alpha = &plan.grids[0];
    let beta = &plan.grids[1];
    assert!(alpha.clusters.iter().all(|c| c.config.can_migrate));
    assert!(beta.clusters.iter().all(|c| !c.config.can_migrate));
    // a1's hosts run at 2000 MIPS, a2's at 3000: a2 is faster.
    let work = crate::time::EmuDuration::from_secs(3600);
    let (a1, a2) = (
        alpha.clusters[0].config.speed,
        alpha.clusters[1].config.speed,
    );
    assert!(a2.local(work) < a1.local(work));
    assert_eq!(alpha.clusters[1].qualified_name, "alpha/a2");
}

const EXTERNAL: &str = r#"
[emulation]
seed = 3
[igg]
dispatch = "external:python3 d.py"
[[grid]]
name = "one"
[[grid.cluster]]
name = "c"
hosts = { count = 1, cores = 4, memory_mb = 4096, mips = 1000 }
lrms = { preemption = "external:python3 p.py", admission = "external:python3 d.py" }
[[grid]]
name = "two"
igg = { implementation = "external:python3 g.py" }
[[grid.cluster]]
name = "c"
hosts = { count = 1, cores = 4, memory_mb = 4096, mips = 1000 }
"#;

/// The external commands a shard starts are those its Grids name, each with the decision
/// points it is asked, clusters' first; a Grid whose whole gateway is external names no
/// policy of its gateway's. Each process is greeted with the run's mode, seed and name.
#[test]
fn each_shard_starts_the_processes_its_grids_name() {
    let topo = load_str(EXTERNAL, "t.toml", "t", None, &Overrides::default())
        .expect("the test topology is valid");
    let plan = compile(&topo);
    assert!(plan.external.asked);
    let greeting = &plan.external.greeting;
    assert_eq!((greeting.mode, greeting.seed), ("virtual", 3));
    let listed = |grids: &[u16]| {
        let grids: Vec<GridId> = grids.iter().map(|&g| GridId(g)).collect();
        (plan.external_commands(&grids).into_iter())
            .map(|(command, points)| {
                let points: Vec<&str> = points.iter().map(|p| p.as_str()).collect();
                format!("{command}: {}", points.join(" "))
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        listed(&[0]),
        [
            "external:python3 d.py: admission dispatch",
            "external:python3 p.py: preemption",
        ]
    );
    assert_eq!(listed(&[1]), ["external:python3 g.py: gateway"]);
    assert_eq!(listed(&[0, 1]).len(), 3);
}
