//! An external gateway playing a whole Grid: paper 004 with the invariants checked, its bugs
//! found by stress tests as the built-in ones are, under every fault preset, and placing only
//! its own requests, each once.

use super::*;

pub(super) const GATEWAY_PY: &str = "external:python3 examples/policies/gateway.py";

#[test]
fn an_external_gateway_plays_one_grid_of_paper_004_with_the_invariants_checked() {
    if !python() {
        return;
    }
    // Grid5000's gateway is the Python one: it serves its own requests and takes the
    // requests its peers redirect to it; the other two Grids' gateways are igemu's.
    let set = format!("grid.2.igg.implementation={GATEWAY_PY}");
    let r = run(
        load("topologies/paper004-three-grids.toml", &[&set]),
        &RunOptions::default(),
    )
    .expect("runs");
    let s = &r.summary;
    assert_eq!(s.invariant_violations, 0, "{:?}", s.violation_examples);
    assert_eq!(
        s.requests.external.unfinished + s.requests.local.unfinished,
        0
    );
    assert_eq!(s.plugins.len(), 1);
    assert_eq!(s.plugins[0].point, "gateway");
    assert_eq!(
        s.plugins[0].process.as_deref(),
        Some("simple gateway (python)")
    );
    assert!(s.plugins[0].decisions > 1000, "{:?}", s.plugins[0]);
    // Its peers redirected work to it, and it was paid for all of it (money is conserved:
    // an invariant), while it redirected nothing itself.
    let g5k = &s.grids["grid5000"];
    assert!(g5k.received > 0.0);
    assert_eq!(g5k.negotiations.offers, 0);
    let to_it: f64 = (s.grids.values())
        .filter_map(|g| g.redirected_pct_by_peer.get("grid5000"))
        .sum();
    assert!(to_it > 0.0);
}

#[test]
fn stress_finds_a_broken_external_gateways_bug_as_it_finds_the_built_in_ones() {
    if !python() {
        return;
    }
    let topo = load("topologies/peering-small.toml", &[]);
    let settings: Vec<_> = igemu::stress::presets(&topo)
        .into_iter()
        .filter(|p| p.name == "none" || p.name == "lossy")
        .collect();
    let registry = Registry::builtin();
    let plan = igemu::stress::StressPlan {
        registry: &registry,
        pace: igemu::stress::Pace::Virtual,
        settings: &settings,
        seeds: &[1, 2, 3],
        schedules: &[0],
    };
    let caught = |gateway: &str| {
        let sets = [format!("grid.2.igg.implementation={gateway}")];
        let runs = igemu::stress::stress(
            &path("topologies/peering-small.toml"),
            &sets,
            &plan,
            2,
            igemu::Broken::None,
            igemu::progress::Style::Quiet,
        );
        let mut by_fault = std::collections::BTreeMap::new();
        for r in &runs {
            let (n, _) = r.outcome.clone().unwrap_or_else(|e| panic!("{e}"));
            *by_fault.entry(r.fault.clone()).or_insert(0u64) += u64::from(n > 0);
        }
        (by_fault, runs)
    };
    let (sound, _) = caught(GATEWAY_PY);
    assert_eq!(
        sound.values().sum::<u64>(),
        0,
        "the sound gateway breaks nothing: {sound:?}"
    );
    let (broken, runs) = caught(&format!("{GATEWAY_PY} --broken"));
    // A timing flaw: no fault, no violation; lost messages make the peers retry a
    // redirection, which it then refuses while it serves the request.
    assert_eq!(broken["none"], 0);
    assert!(
        broken["lossy"] >= 2,
        "caught in {} of 3 lossy runs",
        broken["lossy"]
    );
    let example = (runs.iter())
        .find_map(|r| r.outcome.as_ref().ok().and_then(|o| o.1.first().cloned()))
        .expect("an example");
    assert!(
        example.contains("served by grids")
            || example.contains("ended twice")
            || example.contains("confirmed twice"),
        "{example}"
    );
}

#[test]
fn stress_runs_an_external_policy_under_every_fault_preset() {
    if !python() {
        return;
    }
    let topo = load("topologies/peering-small.toml", &[]);
    let settings = igemu::stress::presets(&topo);
    assert!(settings.len() >= 7, "every preset");
    let registry = Registry::builtin();
    let plan = igemu::stress::StressPlan {
        registry: &registry,
        pace: igemu::stress::Pace::Virtual,
        settings: &settings,
        seeds: &[1],
        schedules: &[0],
    };
    let sets = [format!("igg.dispatch={RR_PY}")];
    let runs = igemu::stress::stress(
        &path("topologies/peering-small.toml"),
        &sets,
        &plan,
        2,
        igemu::Broken::None,
        igemu::progress::Style::Quiet,
    );
    assert_eq!(runs.len(), settings.len());
    for r in &runs {
        assert_eq!(r.outcome, Ok((0, Vec::new())), "{}", r.fault);
        assert_eq!(r.ended.0, r.ended.1, "{}: every request ended", r.fault);
        assert!(
            r.sets.iter().any(|s| s.contains("rr.py")),
            "the external rr ran"
        );
    }
}

#[test]
fn an_external_gateway_may_place_only_its_own_requests_and_each_once() {
    if !python() {
        return;
    }
    // A request a peer only offered is not this gateway's to place: a clear error.
    let offered = format!("grid.2.igg.implementation={}", misbehave("place-offered"));
    let stderr = stops_saying(
        "topologies/peering-small.toml",
        &[&offered],
        "which was never given to this gateway",
    );
    assert!(
        stderr.contains("igg.implementation") || stderr.contains("fix the gateway"),
        "{stderr}"
    );
    // Placing its own request twice reaches a cluster that holds it: the checker says so,
    // and the lease held is left as it is.
    let twice = format!("grid.0.igg.implementation={}", misbehave("place-twice"));
    let r = run(
        load("topologies/peering-small.toml", &[&twice]),
        &RunOptions::default(),
    )
    .expect("runs");
    assert!(r.summary.invariant_violations > 0);
    assert!(
        r.summary
            .violation_examples
            .iter()
            .any(|v| v.contains("assigned again while this cluster holds it")),
        "{:?}",
        r.summary.violation_examples
    );
}
