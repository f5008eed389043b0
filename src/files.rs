//! The files a run writes: their names, staging beside the output folder, atomic writes through
//! temporary files that never follow a link, and the checks that an output folder holds only
//! igemu's own files.

use std::path::{Path, PathBuf};

use crate::Error;

/// The files a run writes into its output directory, in the order they are put in place:
/// `summary.json` last, so a directory with a `summary.json` holds one whole run.
pub const RUN_OUTPUTS: [&str; 7] = [
    "trace.jsonl",
    "requests.csv",
    "decisions.csv",
    "intervals.csv",
    "utilization.csv",
    "leases.csv",
    "summary.json",
];

/// Where output `name` is written before it is put in place: a hidden file beside it, on the
/// same file system, so that putting it in place is a rename.
pub fn staged(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(".{name}.tmp"))
}

/// Refuses a directory where a file igemu reads back or replaces (each name `is_ours` says
/// yes to) is not a regular file: reading a FIFO blocks until something writes to it, and
/// renaming a new file into place would replace a device, FIFO or socket.
pub fn check_regular_files(dir: &Path, is_ours: impl Fn(&str) -> bool) -> Result<(), Error> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_ours(&name) && std::fs::metadata(entry.path()).is_ok_and(|m| !m.is_file()) {
            return Err(Error::Usage(format!(
                "{}: not a regular file (a directory, device, FIFO or socket) where igemu keeps \
                 its {name}; remove it, or choose another directory",
                entry.path().display()
            )));
        }
    }
    Ok(())
}

/// Names [`create_temp_beside`] tries before it gives up.
pub(crate) const TEMP_TRIES: u64 = 64;

/// Creates a temporary file beside `path`, to write `path` whole and then rename it into
/// place: a hidden name of its own (`.NAME.PID-N.tmp`, so two writers never share one),
/// created only where nothing is, so that a file or link already there — a user's file, a
/// link planted to any other file, the command's own input — is never written through.
pub fn create_temp_beside(path: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy());
    // A name taken by something else is skipped; a bound, so a directory full of them ends.
    for _ in 0..TEMP_TRIES {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = staged(dir, &format!("{name}.{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("no free temporary name beside {}", path.display()),
    ))
}

/// Writes `bytes` to `path` whole or not at all: through a temporary file of its own beside
/// it ([`create_temp_beside`]) renamed into place; a failure removes the temporary file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let (tmp, mut file) = create_temp_beside(path)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.flush())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A kind of single-file output: its name ("a Mermaid diagram") and a test of a file's first
/// bytes telling whether it is one.
pub type OutputKind = (&'static str, fn(&[u8]) -> bool);

/// Refuses `path` for a single-file output (`option` names the flag) where writing it through
/// a temporary file renamed into place would destroy something, and says what to give
/// instead: a directory; something that is not a regular file (a device such as
/// `/dev/null`, a FIFO or a socket: the rename would put a plain file in its place); one of
/// the command's own `inputs` (followed through links); or an existing file that is not an
/// earlier output of the same kind (`kind` names it, `is_kind` tells it by its first bytes).
/// An empty file holds nothing to lose. A path that does not exist is fine when its folder
/// does: one that does not is refused too (naming the folder to create), before any work, so
/// that a run does not end failing to write its temporary file there, leaving its other
/// outputs behind.
pub fn check_output_file(
    option: &str,
    path: &Path,
    inputs: &[PathBuf],
    (kind, is_kind): OutputKind,
) -> Result<(), Error> {
    let refuse = |why: String| Err(Error::Usage(format!("{option} {}: {why}", path.display())));
    let Ok(meta) = std::fs::metadata(path) else {
        // `x.json` is in the working directory, whose path is "".
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        return match std::fs::metadata(folder) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => refuse(format!(
                "{} is a file, not a folder; give a path in a folder",
                folder.display()
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => refuse(format!(
                "the folder {0} does not exist; create it first (mkdir -p {0}), or give a path \
                 in an existing folder",
                folder.display()
            )),
            Err(e) => refuse(format!(
                "cannot reach the folder {} ({e}); give a path in a folder you can write to",
                folder.display()
            )),
        };
    };
    if meta.is_dir() {
        return refuse("that is a directory; give the path of a file".into());
    }
    if !meta.is_file() {
        return refuse(format!(
            "that is not a regular file (a device, FIFO or socket): igemu writes a file beside \
             it and renames it into place, which would replace it. Give the path of a file; to \
             discard the output, leave {option} out"
        ));
    }
    let canonical = std::fs::canonicalize(path).ok();
    if let Some(input) = inputs
        .iter()
        .find(|i| canonical.is_some() && std::fs::canonicalize(i).ok() == canonical)
    {
        return refuse(format!(
            "that is this command's own input {}; writing it would destroy it. Give another path",
            input.display()
        ));
    }
    let mut head = Vec::with_capacity(4096);
    let read = std::fs::File::open(path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 4096), &mut head));
    if read.is_ok() && !head.is_empty() && !is_kind(&head) {
        return refuse(format!(
            "that file exists and is not {kind}; it is not replaced. Give another name, or \
             remove it first"
        ));
    }
    Ok(())
}

/// Puts a run's staged outputs in place: the old `summary.json` goes first (a directory
/// without one holds no whole run), then each output is renamed over the old one — or an old
/// one this run did not write (a trace, intervals) is removed, with the report drawn from the
/// old run — and `summary.json` comes last.
pub(crate) fn put_in_place(dir: &Path, keep_trace: bool) -> Result<(), Error> {
    let remove = |path: PathBuf| match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::output(path)(e)),
        _ => Ok(()),
    };
    remove(dir.join("summary.json"))?;
    remove(dir.join("report.html"))?;
    for name in RUN_OUTPUTS {
        let (from, to) = (staged(dir, name), dir.join(name));
        if from.exists() {
            std::fs::rename(&from, &to).map_err(Error::output(to))?;
        } else if !(keep_trace && name == "trace.jsonl") {
            remove(to)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A link at every name the next temporary files could take is skipped, never written
    /// through: the file the links point to stays as it was, and the file is written whole.
    #[cfg(unix)]
    #[test]
    fn temporary_files_never_write_through_a_link_at_their_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "victim").expect("written");
        let out = dir.path().join("x.json");
        // Other tests may take names meanwhile: plant well past the counter.
        let from = super::create_temp_beside(&dir.path().join("probe"))
            .map(|(tmp, _)| tmp)
            .expect("created");
        let next: u64 = (from.to_string_lossy().rsplit('-').next())
            .and_then(|n| n.strip_suffix(".tmp")?.parse().ok())
            .expect("a numbered name");
        for n in next + 1..next + super::TEMP_TRIES / 2 {
            let name = format!(".x.json.{}-{n}.tmp", std::process::id());
            std::os::unix::fs::symlink(&victim, dir.path().join(name)).expect("symlink");
        }
        super::write_atomically(&out, b"whole").expect("written beside the links");
        assert_eq!(std::fs::read(&victim).expect("victim"), b"victim");
        assert_eq!(std::fs::read(&out).expect("out"), b"whole");
        assert!(!std::fs::symlink_metadata(&out).expect("out").is_symlink());
    }
}
