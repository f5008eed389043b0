//! The decision protocol's cost: how many decisions per second an external policy answers
//! over its pipe (the Python `rr` of `examples/policies/`, asked paper 000's dispatch
//! questions directly), and paper 000's two days with that external `rr` beside the built-in
//! `rr` in the same session (alternated, wall and CPU medians, and their ratio).
//!
//! `cargo bench --bench policies` (about a minute); `-- rounds=N` pairs of runs (default 5);
//! `-- questions=N` questions per batch (default 20000). Needs `python3`.

use std::time::{Duration, Instant};

use igemu::policy::external::Process;
use igemu::policy::Point;
use igemu::topology::{self, Overrides};
use igemu::{run, RunOptions};
use serde_json::json;

fn arg(name: &str, default: usize) -> usize {
    std::env::args()
        .find_map(|a| a.strip_prefix(&format!("{name}="))?.parse().ok())
        .unwrap_or(default)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Process CPU time so far (user + system), from /proc/self/stat's clock ticks.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // After the command's `)`: state is field 0, utime 11, stime 12, cutime 13, cstime 14.
    (ticks(11) + ticks(12) + ticks(13) + ticks(14)) / 100.0
}

/// Decisions per second the Python `rr` answers, in batches of `n` dispatch questions.
fn pipe_rate(n: usize, batches: usize) -> Vec<f64> {
    let words: Vec<String> = ["python3", "examples/policies/rr.py"]
        .map(String::from)
        .to_vec();
    let p = Process::start(
        "python3 examples/policies/rr.py",
        &words,
        &[Point::Dispatch],
        json!({"mode": "virtual", "seed": 1, "topology": "bench"}),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let cluster = |name: &str, cores: u64| {
        json!({"name": name, "cores": cores, "busy": 10, "earliest_start": null, "speed": 128.0,
               "local_rate": 0.04, "tau": 12.5, "mu": 160.0, "theta": 10.0, "omega": 125.0})
    };
    let question = json!({
        "grid": "grid",
        "request": {"id": "external-1", "origin": "external", "grid": "grid", "arrival": 29660,
                    "start": null, "vms": 3, "cores_per_vm": 1, "mem_mb": 1024,
                    "duration": 142536258, "type": "non-preemptable", "deadline": 372772795},
        "rate": 0.3,
        "clusters": [cluster("c64", 64), cluster("c128", 128), cluster("c256", 256)],
    });
    let rates = (0..batches)
        .map(|_| {
            let t = Instant::now();
            for i in 0..n {
                p.ask(Point::Dispatch, "grid:grid", i as u64, question.clone())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            n as f64 / t.elapsed().as_secs_f64()
        })
        .collect();
    p.end();
    rates
}

/// Wall and CPU seconds of paper 000's run with dispatch `policy`.
fn paper000(policy: &str) -> (f64, f64) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("topologies/paper000-three-clusters.toml");
    let topo = topology::load_file(
        &path,
        &Overrides::sets(vec![format!("igg.dispatch={policy}")]),
    )
    .unwrap_or_else(|r| panic!("{r}"));
    let (t, cpu) = (Instant::now(), cpu_seconds());
    let r = run(topo, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.summary.invariant_violations, 0);
    (t.elapsed().as_secs_f64(), cpu_seconds() - cpu)
}

fn main() {
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).expect("the crate's folder");
    let (n, rounds) = (arg("questions", 20_000), arg("rounds", 5));
    let rates = pipe_rate(n, rounds);
    println!(
        "pipe: {:.0} decisions/s (median of {rounds} batches of {n}; range {:.0}-{:.0})",
        median(rates.clone()),
        rates.iter().copied().fold(f64::INFINITY, f64::min),
        rates.iter().copied().fold(0.0, f64::max)
    );
    let external = "external:python3 examples/policies/rr.py";
    let (mut walls, mut cpus, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let ours = paper000("rr");
        let theirs = paper000(external);
        ratios.push(theirs.0 / ours.0);
        walls.push((ours.0, theirs.0));
        cpus.push((ours.1, theirs.1));
    }
    let med = |xs: &[(f64, f64)], k: usize| {
        median(xs.iter().map(|x| if k == 0 { x.0 } else { x.1 }).collect())
    };
    println!(
        "paper 000, 2 days: built-in rr {:.2} s wall ({:.2} s CPU), external rr {:.2} s wall ({:.2} s CPU incl. python3); external / built-in wall {:.2} (median of {rounds} alternated pairs; range {:.2}-{:.2})",
        med(&walls, 0),
        med(&cpus, 0),
        med(&walls, 1),
        med(&cpus, 1),
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max)
    );
}
