//! Records which commit the binary was built from, and whether the files it is built from
//! differed from that commit (a dirty tree), so that every output names the exact code that
//! made it (`igemu --version`, `summary.json`, `sweep.json`, the report).
//!
//! Without git, or outside a repository (a crate tarball), the commit is unknown; a
//! packager may give it with `IGEMU_BUILD_COMMIT` (and `IGEMU_BUILD_DIRTY=true|false`).

use std::process::Command;

/// What the binary is made from: a change under any of these makes the tree dirty. Tests,
/// docs and scripts are left out: they change no output of the binary.
const BUILD_INPUTS: &[&str] = &[
    "src",
    "build.rs",
    "Cargo.toml",
    "Cargo.lock",
    "emulated-lrms",
    "topologies",
];

fn main() {
    println!("cargo:rerun-if-env-changed=IGEMU_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=IGEMU_BUILD_DIRTY");
    for input in BUILD_INPUTS {
        println!("cargo:rerun-if-changed={input}");
    }
    // A commit moves HEAD (or the branch it names) and rewrites the index.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    for file in ["HEAD", "index", "packed-refs"]
        .into_iter()
        .chain(branch.as_deref())
    {
        // A path that does not exist would make cargo run this script on every build.
        let path = git(&["rev-parse", "--git-path", file]);
        if let Some(path) = path.filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let (commit, dirty) = match std::env::var("IGEMU_BUILD_COMMIT") {
        Ok(commit) => (
            commit,
            std::env::var("IGEMU_BUILD_DIRTY").unwrap_or_default(),
        ),
        Err(_) => match git(&["rev-parse", "HEAD"]) {
            Some(commit) => (commit, tree_dirty()),
            None => (String::new(), String::new()),
        },
    };
    println!("cargo:rustc-env=IGEMU_COMMIT={commit}");
    println!("cargo:rustc-env=IGEMU_DIRTY={dirty}");
}

/// `"true"` when a tracked build input differs from the commit, `"false"` when none does,
/// `""` when git could not tell.
fn tree_dirty() -> String {
    let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    args.extend(BUILD_INPUTS);
    match git(&args) {
        Some(changes) => (!changes.is_empty()).to_string(),
        None => String::new(),
    }
}

/// Runs git in the package's folder; its trimmed output, or `None` if it failed.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}
