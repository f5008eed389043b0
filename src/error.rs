//! The one error type of igemu's commands, each variant with its exit code: 2 for input the
//! user can fix (topology, sweep file, trace, flags), 1 for a failure while running or
//! writing, or a run that finished with violations or failed runs.

use std::path::PathBuf;

use crate::input::Report;

/// Everything a command can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A topology with problems, every one named with its place.
    #[error("{0}")]
    Topology(Box<Report>),
    /// Another input file is malformed (sweep file, trace, SWF); the text names the place.
    #[error("{0}")]
    Input(String),
    /// A flag or argument is wrong; the text says what to write instead.
    #[error("igemu: {0}")]
    Usage(String),
    /// A file or directory could not be written (unreadable input is [`Error::Input`]).
    #[error("igemu: cannot write to {path}: {source}")]
    Output {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The trace could not be written completely.
    #[error("igemu: trace: {0}")]
    Trace(String),
    /// The async runtime could not start.
    #[error("igemu: cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// The work ran but did not succeed (invariant violations, failed runs of a sweep).
    #[error("igemu: {0}")]
    Failed(String),
    /// A plug-in policy could not be started or gave an answer that cannot be carried out
    /// (and the topology names no fallback): the text names the policy, the decision and
    /// what was wrong. The user's policy is the input to fix.
    #[error("igemu: {0}")]
    Policy(String),
}

impl Error {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Topology(_) | Error::Input(_) | Error::Usage(_) | Error::Policy(_) => 2,
            Error::Output { .. } | Error::Trace(_) | Error::Runtime(_) | Error::Failed(_) => 1,
        }
    }

    /// An [`Error::Output`] for `path`, to use with `map_err`.
    pub fn output(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Output { path, source }
    }
}

impl From<Box<Report>> for Error {
    fn from(report: Box<Report>) -> Error {
        Error::Topology(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_problems_exit_2_and_failures_exit_1() {
        assert_eq!(
            Error::Usage("--seeds must be at least 1".into()).exit_code(),
            2
        );
        assert_eq!(Error::Input("t.jsonl:3: bad record".into()).exit_code(), 2);
        let io = std::io::Error::other("disk full");
        assert_eq!(Error::output("out/requests.csv")(io).exit_code(), 1);
        assert_eq!(Error::Failed("2 runs failed".into()).exit_code(), 1);
        assert_eq!(
            Error::Usage("x".into()).to_string(),
            "igemu: x",
            "messages keep the CLI's prefix"
        );
    }
}
