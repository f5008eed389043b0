//! Helpers shared by the integration-test binaries: running the `igemu` binary, loading and
//! running topologies, reading traces, and replaying a trace against the hosts' capacities.
//! Each binary uses a subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use igemu::topology::{self, Overrides, Topology};
use igemu::{run, RunOptions, RunResult};

/// `path` relative to the crate root.
pub fn path(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// Runs the `igemu` binary from the crate root.
pub fn igemu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_igemu"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the igemu binary runs")
}

/// A sweep file `s.toml` in `dir` over `topology` (relative to the crate root), the rest of
/// the file `body`.
pub fn sweep_file(dir: &Path, topology: &str, body: &str) -> PathBuf {
    let file = dir.join("s.toml");
    let text = format!(
        "topology = {:?}\n{body}",
        path(topology).display().to_string()
    );
    std::fs::write(&file, text).expect("written");
    file
}

/// `igemu sweep FILE --out OUT` and `extra` arguments.
pub fn sweep(file: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sweep",
        file.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ];
    args.extend(extra);
    igemu(&args)
}

fn overrides(sets: &[&str]) -> Overrides {
    Overrides::sets(sets.iter().map(|s| s.to_string()).collect())
}

/// The topology file at `file` (relative to the crate root) with `--set` overrides.
pub fn load(file: &str, sets: &[&str]) -> Topology {
    topology::load_file(&path(file), &overrides(sets)).unwrap_or_else(|r| panic!("{r}"))
}

/// The embedded quickstart topology with `--set` overrides.
pub fn quickstart(sets: &[&str]) -> Topology {
    topology::load_str(
        topology::QUICKSTART,
        "quickstart",
        "quickstart",
        None,
        &overrides(sets),
    )
    .unwrap_or_else(|r| panic!("{r}"))
}

/// Runs `topo` with a trace and writes every output into `dir`.
pub fn run_traced(topo: Topology, dir: &Path) -> RunResult {
    let result = run(
        topo,
        &RunOptions {
            trace_dir: Some(dir.to_path_buf()),
            ..RunOptions::default()
        },
    )
    .expect("runs");
    result.write_outputs(dir).expect("outputs written");
    result
}

/// The trace written into `dir`, one JSON value per message.
pub fn trace(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("trace.jsonl"))
        .expect("trace written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each trace line is JSON"))
        .collect()
}

/// Replays the trace's `Occupy`/`Vacate` messages against the topology's host sizes — an
/// account independent of the LRMS and of the host actors — and returns every moment a host
/// held more cores or memory than it has.
pub fn capacity_breaches(result: &RunResult, events: &[serde_json::Value]) -> Vec<String> {
    let topo = &result.topology;
    let size: HashMap<&str, (i64, i64)> = topo
        .requests
        .iter()
        .map(|r| {
            (
                topo.label(r.id),
                (i64::from(r.cores_per_vm), i64::from(r.mem_mb)),
            )
        })
        .collect();
    let mut spec: HashMap<String, (i64, i64)> = HashMap::new();
    for c in &topo.clusters {
        for (i, h) in c.hosts.iter().enumerate() {
            // Where memory is overcommitted, only cores are a limit.
            let mem = if c.lrms.enforce_memory {
                h.memory_mb as i64
            } else {
                i64::MAX
            };
            spec.insert(
                format!("host:{}/{i}", c.qualified_name(topo)),
                (i64::from(h.cores), mem),
            );
        }
    }
    let mut used: HashMap<&str, (i64, i64)> = HashMap::new();
    let mut breaches = Vec::new();
    for e in events {
        let sign = match e["kind"].as_str() {
            Some("Occupy") => 1,
            Some("Vacate") => -1,
            _ => continue,
        };
        let host = e["to"].as_str().unwrap_or_default();
        let (c, m) = size[e["request"].as_str().unwrap_or_default()];
        let u = used.entry(host).or_default();
        u.0 += sign * c;
        u.1 += sign * m;
        let (sc, sm) = spec[host];
        if u.0 > sc || u.1 > sm {
            breaches.push(format!("{host} at {}: {:?} of {:?}", e["t"], u, (sc, sm)));
        }
    }
    breaches
}

/// Cases a property test runs: `PROPTEST_CASES` when set (to run many more once), else
/// `default` (what CI runs).
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
