//! Peering between Grids through the whole emulation: negotiations redirect work from the
//! overloaded Grid, money is conserved, faults are reproducible, the online invariant checker
//! catches a deliberately broken protocol, and the trace tools render a negotiation.

#[path = "../common/mod.rs"]
mod common;

use common::{igemu, load, path};
use igemu::progress::Style;
use igemu::stress::{presets, stress, Pace, StressPlan};
use igemu::topology::Topology;
use igemu::{run, Broken, RunOptions};

mod exploring;
mod negotiation;
mod replay;

use exploring::*;
use replay::*;

const SMALL: &str = "topologies/peering-small.toml";

fn small(sets: &[&str]) -> Topology {
    load(SMALL, sets)
}
