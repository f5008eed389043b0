//! The `igemu` binary: the command line of [`igemu::cli`] with the policies igemu ships. A
//! program that registers policies of its own runs the same command line with
//! `igemu::cli::main_with(registry)`.

use std::process::ExitCode;

/// mimalloc (its v2 line, see Cargo.toml): with the system allocator, malloc and free took
/// a fifth to a third of a scenario's CPU (docs/performance.md, "Scenarios").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    igemu::cli::main_with(igemu::policy::Registry::builtin())
}
