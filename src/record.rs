//! Record and replay files: the header that says what ran, opening a record for a run to write
//! its delivery order into, and reading one back for a replay.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::files::create_temp_beside;
use crate::provenance::Provenance;
use crate::time::ClockMode;
use crate::topology::Topology;
use crate::{input, time, Error};

/// The first line of a record file: what ran, so that `igemu replay` can run it again.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct RecordHeader {
    /// The record format's version ([`RECORD_FORMAT`]).
    pub igemu_record: u32,
    /// The topology file, its hash and the overrides.
    pub provenance: Provenance,
    /// The run's seed.
    pub seed: u64,
    /// `virtual` or `realtime`.
    pub mode: String,
    /// Emulated seconds per wall second (realtime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// The explored schedule (`emulation.interleaving`); 0: deliveries were made as they
    /// came (FIFO), so a replay checks its own order against the record rather than
    /// choosing by it.
    pub interleaving: u64,
    /// The deliberately broken variant that ran (`none` for the protocols as they are).
    pub broken: String,
}

/// The version of the record format this igemu writes and reads.
pub const RECORD_FORMAT: u32 = 3;

/// How a replay went: the deliveries made in the record's order, or where it first left it.
pub type ReplayOutcome = Result<u64, String>;

/// How a replay followed its record, as `summary.json` says it.
#[derive(Clone, Debug, Serialize)]
pub struct ReplaySummary {
    /// The record file.
    pub record: String,
    /// Deliveries made in the recorded order, when it followed the record to its end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followed: Option<u64>,
    /// Where the run first left the record (the rest ran in its own order), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diverged: Option<String>,
}

/// Opens the record file `path` under a temporary name beside it and writes its header
/// (what ran: the topology, the run's `provenance` and its `broken` protocol's name);
/// returns the log of deliveries that follows and the temporary name.
pub(crate) fn open_record(
    path: &Path,
    topo: &Topology,
    provenance: Option<&Provenance>,
    broken: &str,
) -> Result<(time::record::OrderLog, PathBuf), Error> {
    use std::io::Write;
    record_file_name(path)?;
    // A name of its own, so that two runs recording to one file do not write into one
    // temporary file (the last to finish wins, whole).
    let (staged, file) = create_temp_beside(path).map_err(Error::output(path))?;
    let (mode, speedup) = match topo.emulation.mode {
        ClockMode::Virtual => ("virtual", None),
        ClockMode::Realtime { speedup } => ("realtime", Some(speedup)),
    };
    let header = RecordHeader {
        igemu_record: RECORD_FORMAT,
        provenance: provenance.cloned().unwrap_or_default(),
        seed: topo.emulation.seed,
        mode: mode.to_string(),
        speedup,
        interleaving: topo.emulation.interleaving,
        broken: broken.to_string(),
    };
    let mut out = std::io::BufWriter::new(file);
    // Invariant: the header is plain data; serialising it cannot fail.
    let line = serde_json::to_string(&header).expect("a record header serialises");
    let line = line + "\n";
    out.write_all(line.as_bytes())
        .map_err(Error::output(staged.clone()))?;
    Ok((
        time::record::OrderLog::new(Box::new(out), line.as_bytes()),
        staged,
    ))
}

/// The file name a record at `path` gets; an error, known before the run rather than after
/// it, if `path` is a directory (or names none, as `.` does).
pub fn record_file_name(path: &Path) -> Result<String, Error> {
    match path.file_name() {
        Some(n) if !path.is_dir() => Ok(n.to_string_lossy().into_owned()),
        _ => Err(Error::Usage(format!(
            "--record {}: that is a directory; give a file name, e.g. {}",
            path.display(),
            path.join("run.rec").display()
        ))),
    }
}

/// Reads a record file's header: what ran and how to replay it.
pub fn read_record_header(path: &Path) -> Result<RecordHeader, Error> {
    let file = std::fs::File::open(path).map_err(|e| unreadable(path, e))?;
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(std::io::Read::take(file, MAX_RECORD_HEADER)),
        &mut first,
    )
    .map_err(|e| unreadable(path, e))?;
    let not_one = |why: String| {
        Error::Input(format!(
            "igemu: {}: line 1 is not an igemu record header ({why}); records are written by `igemu run --record FILE`",
            path.display()
        ))
    };
    let value: serde_json::Value =
        serde_json::from_str(first.trim_end()).map_err(|e| not_one(e.to_string()))?;
    // Its strings are shown (the mode, the igemu that wrote it) before the end line's hash
    // is checked.
    if let Some(place) = input::unshowable_json(&value) {
        return Err(not_one(format!(
            "`{place}` holds a control or invisible character"
        )));
    }
    let header: RecordHeader = serde_json::from_value(value).map_err(|e| not_one(e.to_string()))?;
    if header.igemu_record != RECORD_FORMAT {
        return Err(Error::Input(format!(
            "igemu: {}: record format {} (this igemu reads format {RECORD_FORMAT}); replay it with the igemu that wrote it ({})",
            path.display(),
            header.igemu_record,
            header.provenance.igemu
        )));
    }
    Ok(header)
}

/// The error for a record that cannot be read.
pub(crate) fn unreadable(path: &Path, e: std::io::Error) -> Error {
    Error::Input(format!(
        "igemu: cannot read the record {}: {e}",
        path.display()
    ))
}

/// The longest header line a record may have (the overrides are in it).
pub(crate) const MAX_RECORD_HEADER: u64 = 1 << 20;

/// Opens a record for a replay: the script of its deliveries (after the header) and whether
/// the recorded run held them and chose their order.
pub(crate) fn open_replay(
    path: &Path,
    topo: &Topology,
) -> Result<(time::record::OrderScript, bool), Error> {
    let header = read_record_header(path)?;
    // The header is not in the end line's hash: the seed it says was run must be the run it
    // names (its topology and overrides), or the replay shows one seed and runs another.
    // (Its `interleaving` only says whether the order was chosen: the order itself comes
    // from the deliveries, whatever schedule the overrides name.)
    if header.seed != topo.emulation.seed {
        return Err(Error::Input(format!(
            "igemu: {}: line 1 says seed {}, but the run it names (its topology and overrides) has seed {}: the header was edited, and the record is damaged; record the run again with `igemu run --record FILE`",
            path.display(),
            header.seed,
            topo.emulation.seed
        )));
    }
    let file = std::fs::File::open(path).map_err(|e| unreadable(path, e))?;
    let mut reader = std::io::BufReader::new(file);
    let mut skip = String::new();
    std::io::BufRead::read_line(
        &mut std::io::Read::take(&mut reader, MAX_RECORD_HEADER),
        &mut skip,
    )
    .map_err(|e| unreadable(path, e))?;
    Ok((
        // As a delivery line is, the header is hashed without its line end (CRLF reads
        // the same), newline added.
        time::record::OrderScript::new(
            Box::new(reader),
            2,
            format!("{}\n", skip.trim_end_matches(['\r', '\n'])).as_bytes(),
        ),
        header.interleaving > 0,
    ))
}
