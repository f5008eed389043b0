//! Output directories of the commands: creating one, refusing what would overwrite another
//! command's results, and writing files atomically.

use super::*;

/// Makes the output directory `dir` (of a run, sweep, merge or stress test): refused if it
/// is a file, a link to nothing, a folder igemu cannot write files in (known now, not after
/// a run of hours), or holds something that is not a file where igemu keeps one of its
/// outputs.
pub(super) fn create_dir(dir: &Path) -> Result<(), Error> {
    // The root of the file system (`/`, or a path that resolves to it) is no output folder:
    // a run's files would land among the system's.
    if std::fs::canonicalize(dir).is_ok_and(|c| c.parent().is_none()) {
        return Err(Error::Usage(format!(
            "--out {}: that is the root of the file system; give a folder of its own for the \
             outputs, e.g. --out out/run1 (it is created if needed)",
            dir.display()
        )));
    }
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(Error::Usage(format!(
            "--out {}: that is a file, not a directory; give a directory (it is created if needed)",
            dir.display()
        )));
    }
    if std::fs::metadata(dir).is_err() && std::fs::symlink_metadata(dir).is_ok() {
        let target = std::fs::read_link(dir).unwrap_or_default();
        return Err(Error::Usage(format!(
            "--out {}: that is a link to {}, which does not exist; create the folder it points to, remove the link, or choose another --out",
            dir.display(),
            target.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(Error::output(dir))?;
    // A file of igemu's own, created and removed at once: the outputs are written as files
    // beside each other in `dir`, so a folder that takes none is refused before the work.
    match crate::create_temp_beside(&dir.join("probe")) {
        Ok((probe, file)) => {
            drop(file);
            let _ = std::fs::remove_file(probe);
        }
        Err(e) => {
            return Err(Error::Usage(format!(
                "--out {}: igemu cannot create files there ({e}); give a folder you may write in",
                dir.display()
            )))
        }
    }
    crate::check_regular_files(dir, |name| {
        crate::RUN_OUTPUTS.contains(&name)
            || SWEEP_OUTPUTS.contains(&name)
            || shard_file(name)
            || ["report.html", "stress.csv", "stress.json"].contains(&name)
    })
}

/// The run outputs in `dir`, `summary.json` first: removed in this order, a folder without
/// it holds no whole run.
pub(super) fn run_files(dir: &Path) -> Vec<&'static str> {
    let mut names: Vec<&str> = crate::RUN_OUTPUTS
        .into_iter()
        .filter(|f| dir.join(f).exists())
        .collect();
    names.sort_by_key(|n| *n != "summary.json");
    names
}

/// The refusal of a folder `out` holding a run's outputs (`run`) for a sweep's.
pub(super) fn holds_a_run(out: &Path, run: &[&str]) -> Error {
    Error::Usage(format!(
        "{} holds a run's outputs ({}), and a folder holds one run or one sweep; pass --overwrite to replace them, or choose another --out",
        out.display(),
        run.join(", ")
    ))
}

/// Removes `names` from `dir`, in order, then `report.html` (drawn from what they held).
pub(super) fn remove_outputs(dir: &Path, names: &[impl AsRef<str>]) -> Result<(), Error> {
    for name in names.iter().map(AsRef::as_ref).chain(["report.html"]) {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::output(path)(e))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `a` and `b` name one file (also through links or `..`).
pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    a == b || std::fs::canonicalize(a).is_ok_and(|a| std::fs::canonicalize(b).is_ok_and(|b| a == b))
}

/// Makes `out` ready for a run's outputs: refuses one holding another run's, or a sweep's,
/// unless `overwrite`; the outputs of the same run — the same topology contents and
/// overrides, as [`crate::Provenance::same_run`] compares them — may be replaced. Nothing is
/// removed before the new outputs are whole ([`crate::RunResult::write_outputs`] replaces
/// them, and a sweep's files go after that), only temporary files a run that was stopped
/// left behind.
pub(super) fn prepare_out(
    out: &Path,
    overwrite: bool,
    provenance: &crate::Provenance,
) -> Result<Option<std::fs::File>, Error> {
    create_dir(out)?;
    let held = hold_out(out)?;
    owned::refuse_foreign(out)?;
    stress_results_in(out, overwrite)?;
    for name in crate::RUN_OUTPUTS {
        let _ = std::fs::remove_file(crate::staged(out, name));
    }
    let sweep = sweep_files(out);
    if !sweep.is_empty() && !overwrite {
        return Err(Error::Usage(format!(
            "{} holds a sweep's outputs ({}), and a folder holds one run or one sweep; pass --overwrite to replace them, or choose another --out",
            out.display(),
            sweep.join(", ")
        )));
    }
    let present: Vec<&str> = crate::RUN_OUTPUTS
        .into_iter()
        .chain(["report.html"])
        .filter(|f| out.join(f).exists())
        .collect();
    if present.is_empty() {
        return Ok(held);
    }
    // Capped: a summary.json that is no run's (a link to /dev/zero) is just another's.
    let same_run =
        crate::input::read_capped(&out.join("summary.json"), crate::input::MAX_JSON_BYTES)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|old| {
                serde_json::from_value::<crate::Provenance>(old["provenance"].clone()).ok()
            })
            .is_some_and(|old| old.same_run(provenance));
    if !overwrite && !same_run {
        return Err(Error::Usage(format!(
            "{} holds another run's outputs ({}); pass --overwrite to replace them, or choose another --out",
            out.display(),
            present.join(", ")
        )));
    }
    Ok(held)
}

/// Holds the run directory `out` for this run alone until the returned lock is dropped (at
/// the process's end at the latest, however it ends): a run stages its outputs at fixed
/// names in `out` (`.requests.csv.tmp`, ...) and removes a killed run's first, so two runs
/// into one folder at once removed and renamed each other's files — both said their outputs
/// were written, and the folder held no trace, or files of both. The second is refused.
/// `None` where the file system takes no locks (the run goes on as before).
pub(super) fn hold_out(out: &Path) -> Result<Option<std::fs::File>, Error> {
    #[cfg(unix)]
    {
        // A directory opens read-only on Unix, and flock(2) locks it like a file.
        let Ok(dir) = std::fs::File::open(out) else {
            return Ok(None);
        };
        match dir.try_lock() {
            Ok(()) => Ok(Some(dir)),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Usage(format!(
                "--out {}: another igemu run is writing its outputs there now; wait for it to end, or choose another --out",
                out.display()
            ))),
            Err(std::fs::TryLockError::Error(_)) => Ok(None),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = out;
        Ok(None)
    }
}

/// Writes `bytes` to `path` through a temporary file beside it, so that a failure never
/// leaves half a file behind.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    crate::write_atomically(path, bytes).map_err(Error::output(path))
}
