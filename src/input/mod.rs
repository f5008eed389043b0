//! The input layer shared by topology and sweep files: TOML read into nodes that keep their
//! places (`node`), typed and error-collecting access to tables that knows which keys were
//! read (`table`), and every problem found reported at once as `file:line:col` with a hint
//! (`diag`).

pub mod diag;
pub(crate) mod node;
pub(crate) mod table;

pub use diag::{Diagnostic, Report};
