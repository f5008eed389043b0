//! The command line as a user meets it, one module per theme: bad input and values past
//! their limits, `run` and its outputs, output folders, realtime runs and the live view,
//! traces, reports, sweeps and stress tests. One test binary (their helpers shared here).

#[path = "../common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::igemu;

mod input;
mod limits;
mod outputs;
mod realtime;
mod report;
mod run;
mod stress;
mod sweep;
mod trace;

use input::*;
use outputs::*;
use report::*;
use stress::*;
use sweep::*;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
