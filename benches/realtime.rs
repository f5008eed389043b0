//! Realtime pacing: paper 000's and paper 004's scenarios at a wall-clock speed-up beside their
//! virtual runs (same topology, same seed): the timer lateness the realtime run measured
//! (emulated time; sustainable means p99 at most 1 s) and its metrics against the virtual
//! run's, with the relative difference of each.
//!
//! `cargo bench --bench realtime` (×3600, both scenarios: about 67 s + 230 s of wall time);
//! `-- speedup=N` another speed-up; `-- threads=N` the realtime run's Grids on N threads
//! (`--threads`: paper 004's three Grids; paper 000 has one); `-- only=NAME` one scenario
//! (a file stem, e.g. paper004-three-grids); `-- quick` the quickstart only (seconds).

use igemu::topology::{self, Overrides, Topology};
use igemu::{run, RunOptions, Summary};

fn load(file: &str, sets: &[String]) -> Topology {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let overrides = Overrides::sets(sets.to_vec());
    topology::load_file(&path, &overrides).unwrap_or_else(|r| panic!("{r}"))
}

fn quickstart(sets: &[String]) -> Topology {
    let overrides = Overrides::sets(sets.to_vec());
    topology::load_str(
        topology::QUICKSTART,
        "quickstart",
        "quickstart",
        None,
        &overrides,
    )
    .unwrap_or_else(|r| panic!("{r}"))
}

fn summary(topo: Topology, threads: usize) -> Summary {
    let options = RunOptions {
        threads,
        ..RunOptions::default()
    };
    run(topo, &options)
        .unwrap_or_else(|e| panic!("{e}"))
        .summary
}

/// The figures compared, by name.
fn figures(s: &Summary) -> Vec<(&'static str, f64)> {
    let r = &s.requests;
    vec![
        ("awrt_s", s.metrics.awrt_s),
        ("utilization_pct", s.metrics.utilization_pct),
        ("vm_preemptions", s.metrics.vm_preemptions as f64),
        (
            "completed",
            (r.local.completed + r.external.completed) as f64,
        ),
        ("rejected", (r.local.rejected + r.external.rejected) as f64),
        ("messages", s.messages as f64),
        ("timed_events", s.timed_events as f64),
        ("makespan_s", s.makespan_s),
    ]
}

fn compare(name: &str, load: &dyn Fn(&[String]) -> Topology, (speedup, threads): (f64, usize)) {
    let virtual_run = summary(load(&[]), 1);
    let realtime = summary(
        load(&[
            "emulation.mode=\"realtime\"".into(),
            format!("emulation.speedup={speedup:?}"),
        ]),
        threads,
    );
    let on = realtime
        .threads
        .map_or(String::new(), |n| format!(" on {n} threads"));
    let late = realtime
        .timer_lateness_ms
        .as_ref()
        .expect("a realtime run reports lateness");
    println!(
        "{name} x{speedup}{on}: lateness p50={:.1} ms p99={:.1} ms max={:.1} ms ({} timers; {}), wall {:.1} s",
        late.p50,
        late.p99,
        late.max,
        late.samples,
        igemu::lateness_verdict(late),
        realtime.wall_s
    );
    let mut worst: f64 = 0.0;
    for ((key, v), (_, r)) in figures(&virtual_run).into_iter().zip(figures(&realtime)) {
        let diff = if v == 0.0 {
            if r == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (r - v) / v * 100.0
        };
        worst = worst.max(diff.abs());
        println!("  {key:<16} virtual={v:<14.3} realtime={r:<14.3} diff={diff:+.3} %");
    }
    println!("{name} x{speedup}{on}: largest metric difference {worst:.3} %");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let speedup = args
        .iter()
        .find_map(|a| a.strip_prefix("speedup=")?.parse::<f64>().ok())
        .unwrap_or(3600.0);
    let threads = args
        .iter()
        .find_map(|a| a.strip_prefix("threads=")?.parse::<usize>().ok())
        .unwrap_or(1);
    let only = args.iter().find_map(|a| a.strip_prefix("only="));
    if args.iter().any(|a| a == "quick") {
        compare("quickstart", &|s| quickstart(s), (speedup, threads));
        return;
    }
    for file in [
        "topologies/paper000-three-clusters.toml",
        "topologies/paper004-three-grids.toml",
    ] {
        let name = file
            .trim_start_matches("topologies/")
            .trim_end_matches(".toml");
        if only.is_some_and(|o| o != name) {
            continue;
        }
        compare(name, &|s| load(file, s), (speedup, threads));
    }
}
