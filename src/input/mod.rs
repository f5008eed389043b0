//! The input layer shared by topology and sweep files: TOML read into nodes that keep their
//! places (`node`), typed and error-collecting access to tables that knows which keys were
//! read (`table`), and every problem found reported at once as `file:line:col` with a hint
//! (`diag`).

pub mod diag;
pub(crate) mod node;
pub(crate) mod table;

pub use diag::{Diagnostic, Report};

use std::io::Read;
use std::path::Path;

/// The largest topology, sweep or LRMS profile file read: these are hand-written TOML, so
/// anything bigger is a wrong path (`/dev/zero`, a trace given as a topology).
pub const MAX_TOML_BYTES: u64 = 16 << 20;

/// The largest workload trace (SWF, GWF) read; real archive traces are well below it.
pub const MAX_TRACE_BYTES: u64 = 2 << 30;

/// Reads a text file of at most `cap` bytes; a larger one (or an endless one such as
/// `/dev/zero`) is an error saying so, without reading more than `cap` bytes of it.
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    let read = file.take(cap + 1).read_to_string(&mut text)?;
    if read as u64 > cap {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB, more than such a file can be; check the path",
            cap >> 20
        )));
    }
    Ok(text)
}
