//! Which code this binary is: its version, the commit it was built from and whether the
//! build's files differed from that commit (`build.rs` finds them with git), as every output's
//! provenance records them.

use serde::{Deserialize, Serialize};

/// igemu's version (`Cargo.toml`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the binary was built from, or `None` where git could not tell (a build outside
/// a repository).
pub fn commit() -> Option<&'static str> {
    Some(env!("IGEMU_COMMIT")).filter(|c| !c.is_empty())
}

/// Whether the build's files (sources, manifest, profiles, topologies) differed from
/// [`commit`]: `None` where git could not tell.
pub fn dirty() -> Option<bool> {
    match env!("IGEMU_DIRTY") {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The build as outputs record it: `{"commit": ..., "dirty": ...}`, each `null` when unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Build {
    /// The commit's full hash.
    pub commit: Option<String>,
    /// Whether the build's files differed from the commit.
    pub dirty: Option<bool>,
}

impl Build {
    /// This binary's build.
    pub fn this() -> Build {
        Build {
            commit: commit().map(str::to_string),
            dirty: dirty(),
        }
    }

    /// For a person: `commit 3df64aa5b1c2, dirty`, or `commit unknown`.
    pub fn describe(&self) -> String {
        let short = |c: &str| c.chars().take(12).collect::<String>();
        match (&self.commit, self.dirty) {
            (Some(c), Some(true)) => format!("commit {}, dirty", short(c)),
            (Some(c), Some(false)) => format!("commit {}", short(c)),
            (Some(c), None) => format!("commit {}, dirty or not unknown", short(c)),
            (None, _) => "commit unknown".to_string(),
        }
    }
}

/// `igemu --version`'s text: `0.1.0 (commit 3df64aa5b1c2, dirty)`.
pub fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| format!("{VERSION} ({})", Build::this().describe()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_describes_its_commit_and_whether_it_was_dirty() {
        let c = "3df64aa5b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6".to_string();
        let b = |dirty| Build {
            commit: Some(c.clone()),
            dirty,
        };
        assert_eq!(b(Some(true)).describe(), "commit 3df64aa5b1c2, dirty");
        assert_eq!(b(Some(false)).describe(), "commit 3df64aa5b1c2");
        assert!(b(None).describe().contains("unknown"));
        assert_eq!(Build::default().describe(), "commit unknown");
    }

    #[test]
    fn this_build_knows_its_commit_inside_a_repository() {
        // Built from a checkout (CI clones one) with git at hand, git can tell.
        let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".git");
        let git = std::process::Command::new("git").arg("--version").output();
        if checkout.exists() && git.is_ok_and(|o| o.status.success()) {
            let commit = commit().expect("built inside a git checkout");
            assert_eq!(commit.len(), 40);
            assert!(commit.chars().all(|c| c.is_ascii_hexdigit()));
            assert!(dirty().is_some());
        }
    }
}
