//! `igemu replay`: re-runs a recorded run in virtual time, checking the record against the run
//! it names.

use super::*;

/// `igemu replay`'s arguments.
#[derive(Args)]
pub(super) struct ReplayArgs {
    /// A record written by `igemu run --record FILE`.
    pub(super) record: PathBuf,
    /// Directory for the replay's outputs (as `run` writes them).
    #[arg(long, default_value = "out/replay")]
    pub(super) out: PathBuf,
    /// Write every message to trace.jsonl.
    #[arg(long)]
    pub(super) trace: bool,
    /// Replace the outputs of an earlier run in --out.
    #[arg(long)]
    pub(super) overwrite: bool,
    /// Show no progress.
    #[arg(long)]
    pub(super) quiet: bool,
    /// Also write report.html into --out.
    #[arg(long)]
    pub(super) report: bool,
}

/// Replays a record: the run it names (topology file, overrides, broken variant), in
/// virtual time, delivering in the recorded order.
pub(super) fn replay(args: ReplayArgs, registry: &Registry) -> Result<(), Error> {
    // The record is read twice (its header says what to run, then the run reads its
    // deliveries): a pipe's second reading began past the header, and was refused as "line 1
    // is not an igemu record header" after the first had been shown.
    if std::fs::metadata(&args.record).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Err(Error::Usage(format!(
            "{}: igemu replay reads the record twice (its header, to know what to run, then its deliveries), so it needs a regular file, not a pipe or a device; save the record to a file first",
            args.record.display()
        )));
    }
    let header = crate::read_record_header(&args.record)?;
    let p = &header.provenance;
    let topology = recorded_topology(&args.record, p)?;
    let flaw = match crate::Broken::from_name(&header.broken) {
        Some(crate::Broken::None) => None,
        Some(crate::Broken::LateAck) => Some(FlawArg::LateAck),
        Some(crate::Broken::EagerCapacity) => Some(FlawArg::EagerCapacity),
        None => {
            return Err(Error::Input(format!(
                "igemu: {}: unknown broken variant `{}` in the header",
                args.record.display(),
                header.broken
            )))
        }
    };
    let mut sets = p.overrides.clone();
    sets.push("emulation.mode=\"virtual\"".into());
    say!(
        "replay of a {} run{} (igemu {}, seed {}){}",
        header.mode,
        header
            .speedup
            .map_or(String::new(), |s| format!(" at x{s}")),
        p.igemu,
        header.seed,
        if header.interleaving > 0 {
            format!(", schedule {}", header.interleaving)
        } else {
            String::new()
        }
    );
    run_one(
        RunArgs {
            topology,
            out: args.out,
            seed: None,
            mode: None,
            speedup: None,
            trace: args.trace,
            trace_kinds: None,
            trace_actors: None,
            trace_window: None,
            quiet: args.quiet,
            report: args.report,
            overwrite: args.overwrite,
            sets,
            broken_protocol: flaw,
            record: None,
            replay: Some(args.record),
            serve: None,
            serve_public: false,
            threads: 1,
            max_wall: None,
        },
        registry,
    )
}

/// The topology file a record names, refused unless it is readable and unchanged since.
pub(super) fn recorded_topology(
    record: &Path,
    p: &crate::Provenance,
) -> Result<Option<PathBuf>, Error> {
    let topology = p.topology_path.as_ref().map(PathBuf::from);
    if let Some(path) = &topology {
        if !path.is_file() {
            return Err(Error::Input(format!(
                "igemu: {}: the record names the topology {}, which cannot be read from here; run igemu replay from the directory the record was made in",
                record.display(),
                path.display()
            )));
        }
        let now = crate::file_hash(path);
        if now != p.topology_hash {
            return Err(Error::Input(format!(
                "igemu: {}: the topology {} has changed since the record was made (hash {} then, {} now); replay needs the file as it was",
                record.display(),
                path.display(),
                p.topology_hash.as_deref().unwrap_or("none"),
                now.as_deref().unwrap_or("none (unreadable)")
            )));
        }
    }
    Ok(topology)
}

/// Refuses a record path the run would lose or that would destroy something else
/// ([`crate::check_output_file`], which also refuses a missing folder — but not the `--out`
/// folder `out`, which the run makes: `--record D/run.rec --out D`), one of the run's own
/// outputs in `out` (written over the record), or an existing file that is not a record (an
/// old record is replaced, as a run replaces its own outputs).
pub(super) fn check_record_path(
    record: &Path,
    out: &Path,
    inputs: &[PathBuf],
) -> Result<(), Error> {
    crate::record_file_name(record)?;
    // Where a directory really is: through links and `..` where it exists; else its
    // absolute path with `.` and `..` taken out as written.
    let absolute = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| {
            let whole = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            let mut out = PathBuf::new();
            for part in whole.components() {
                match part {
                    std::path::Component::CurDir => {}
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    other => out.push(other),
                }
            }
            out
        })
    };
    let parent = record.parent().unwrap_or(Path::new(""));
    // The run makes a missing --out, so a record in it needs no folder yet; only if the path
    // reaches it without `..` (`out/sub/../x.rec` needs `out/sub`, which nothing makes).
    let through_parent = parent
        .components()
        .any(|c| c == std::path::Component::ParentDir);
    let in_new_out =
        out.symlink_metadata().is_err() && !through_parent && absolute(parent) == absolute(out);
    if !in_new_out {
        crate::check_output_file("--record", record, inputs, ("a record", |_| true))?;
    }
    let name = record.file_name().map(|n| n.to_string_lossy().into_owned());
    let output = name
        .as_deref()
        .is_some_and(|n| crate::RUN_OUTPUTS.contains(&n) || n == "report.html");
    if output && absolute(parent) == absolute(out) {
        return Err(Error::Usage(format!(
            "--record {}: the run writes its own {} there; record to another name, e.g. {}",
            record.display(),
            name.unwrap_or_default(),
            out.join("run.rec").display()
        )));
    }
    if record.is_file() && crate::read_record_header(record).is_err() {
        return Err(Error::Usage(format!(
            "--record {}: that file exists and is not an igemu record; it is not replaced. Give another name",
            record.display()
        )));
    }
    Ok(())
}
