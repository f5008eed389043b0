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

/// The most bytes of a workload trace (SWF, GWF) read; real archive traces are well below
/// it. A trace is streamed ([`crate::workload::tracefile`]), so this caps the reading (an
/// endless pipe of job lines), not the memory, which holds the parsed jobs.
pub const MAX_TRACE_BYTES: u64 = 2 << 30;

/// The largest JSON file igemu reads whole (a run's `summary.json`, a sweep's `sweep.json`):
/// they are a few kilobytes, a few megabytes for thousands of clusters.
pub const MAX_JSON_BYTES: u64 = 16 << 20;

/// The longest line read from a CSV file igemu wrote (`runs.csv`, `points.csv`,
/// `requests.csv`, `intervals.csv`, ...): their rows are short (a run's row has a cell per
/// metric), so a longer line is a wrong file. The files themselves are streamed, uncapped.
pub const MAX_CSV_LINE: usize = 1 << 20;

/// The place (`a.b[2]`) of the first key or string in `v` holding a control or invisible
/// character ([`diag::acts_invisibly`]; a tab aside), if one does. igemu's own JSON files (records,
/// summaries) hold none; read back and shown in a message, such a character would act in the
/// terminal instead of showing.
pub(crate) fn unshowable_json(v: &serde_json::Value) -> Option<String> {
    // A tab shows as space; a line end would fake a line of the message showing it.
    let bad = |s: &str| s.chars().any(|c| c != '\t' && diag::acts_invisibly(c));
    match v {
        serde_json::Value::String(s) if bad(s) => Some(String::new()),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| unshowable_json(x).map(|p| format!("[{i}]{p}"))),
        serde_json::Value::Object(o) => o.iter().find_map(|(k, x)| {
            if bad(k) {
                return Some(format!(".{}", diag::shown(k)));
            }
            unshowable_json(x).map(|p| format!(".{k}{p}"))
        }),
        _ => None,
    }
}

/// Reads a TOML file (a topology or a sweep) of at most [`MAX_TOML_BYTES`]; a file that
/// cannot be read is reported with `hint`, and one that is not UTF-8 at the line and column
/// of its first byte that is not (a file saved in Latin-1 or UTF-16 said only "stream did
/// not contain valid UTF-8" and "check the path").
pub(crate) fn read_toml(path: &Path, hint: &str) -> Result<String, Box<Report>> {
    let shown = path.display().to_string();
    let bytes = read_capped_bytes(path, MAX_TOML_BYTES)
        .map_err(|e| Box::new(Report::unreadable(&shown, &e, hint)))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let byte = e.as_bytes().get(at).copied().unwrap_or_default();
        // The text before `at` is the same in the lossy copy, so the place reads right.
        let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
        let d = Diagnostic {
            loc: diag::Loc::File {
                start: at,
                end: at + 1,
            },
            message: format!("byte 0x{byte:02X} is not UTF-8 text"),
            hint: Some(
                "TOML files are UTF-8: save the file as UTF-8 (one in Latin-1 or UTF-16 reads \
                 as this), or remove the byte"
                    .into(),
            ),
        };
        Box::new(Report::of_file(&shown, &text, vec![d]))
    })
}

/// Reads a text file of at most `cap` bytes; a larger one (or an endless one such as
/// `/dev/zero`) is an error saying so, without reading more than `cap` bytes of it. A regular
/// file's size is checked before reading, and the buffer never grows past `cap + 1` bytes (a
/// `Vec` doubling as it fills would reach twice the cap).
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    String::from_utf8(read_capped_bytes(path, cap)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// [`read_capped`] for a file that may not be text.
pub fn read_capped_bytes(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    // A regular file of size 0 may still hold bytes (/proc): its size is then unknown.
    let size = meta.is_file().then_some(meta.len()).filter(|n| *n > 0);
    read_capped_from(file, size, cap)
}

/// The error for an input larger than `cap` bytes (the cap of its kind of file).
pub(crate) fn too_large(cap: u64) -> std::io::Error {
    std::io::Error::other(format!(
        "larger than {} MiB, more than such a file can be; check the path",
        cap >> 20
    ))
}

/// [`read_capped_bytes`] of `reader`, whose size is `size` if known.
fn read_capped_from(reader: impl Read, size: Option<u64>, cap: u64) -> std::io::Result<Vec<u8>> {
    let too_large = || too_large(cap);
    if size.is_some_and(|n| n > cap) {
        return Err(too_large());
    }
    let mut reader = reader.take(cap + 1);
    let out_of_memory = |n: usize| {
        std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("{} MiB do not fit in memory", n >> 20),
        )
    };
    let mut bytes: Vec<u8> = Vec::new();
    if let Some(n) = size {
        // Its size, and a byte to see the end: one allocation.
        let n = usize::try_from(n + 1).unwrap_or(usize::MAX);
        bytes.try_reserve_exact(n).map_err(|_| out_of_memory(n))?;
        reader.read_to_end(&mut bytes)?;
    } else {
        // An unknown size (a device, a pipe): in chunks, joined once it is known to fit, so
        // that an endless input is refused holding no more than the cap (a doubling buffer
        // asked for 4 GiB at the 2 GiB trace cap, and aborted).
        // Each piece is reserved fallibly too: input sizes the whole, and an allocation that
        // fails must be this error, not an abort.
        const CHUNK: usize = 1 << 20;
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        let mut total = 0;
        loop {
            let mut chunk = Vec::new();
            chunk
                .try_reserve_exact(CHUNK)
                .map_err(|_| out_of_memory(total + CHUNK))?;
            let n = (&mut reader).take(CHUNK as u64).read_to_end(&mut chunk)?;
            if n == 0 {
                break;
            }
            total += n;
            chunks.try_reserve(1).map_err(|_| out_of_memory(total))?;
            chunks.push(chunk);
            if total as u64 > cap {
                return Err(too_large());
            }
        }
        bytes
            .try_reserve_exact(total)
            .map_err(|_| out_of_memory(total))?;
        chunks.iter().for_each(|c| bytes.extend_from_slice(c));
    }
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// A line longer than its cap, met by [`LineCapped`]. It travels inside a
/// [`std::io::Error`]; [`line_too_long`] finds it there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineTooLong {
    /// The line (1-based).
    pub line: u64,
    /// The cap, bytes.
    pub max: usize,
}

impl std::fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {} is longer than {} bytes", self.line, self.max)
    }
}

impl std::error::Error for LineTooLong {}

/// The [`LineTooLong`] inside `e`, if that is what it is.
pub fn line_too_long(e: &std::io::Error) -> Option<&LineTooLong> {
    e.get_ref().and_then(|inner| inner.downcast_ref())
}

/// A reader that fails with [`LineTooLong`] as soon as a line passes `max` bytes (newline not
/// counted), so that a parser reading whole lines or fields over it (CSV, JSON lines, SWF)
/// never holds more than that of a file with no newline (`/dev/zero`). The lines before the
/// long one are given out whole first: the error comes from the read after them, so a reader
/// over it meets every earlier line before the error.
pub struct LineCapped<R> {
    inner: R,
    max: usize,
    /// Newlines passed so far.
    newlines: u64,
    /// Bytes since the last newline.
    run: usize,
    /// The line found too long while the lines before it, read in the same piece, were
    /// given out: the next read fails with it.
    pending: Option<LineTooLong>,
}

impl<R> LineCapped<R> {
    /// `inner` with lines of at most `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        LineCapped {
            inner,
            max,
            newlines: 0,
            run: 0,
            pending: None,
        }
    }
}

impl<R: Read> Read for LineCapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(long) = self.pending.clone() {
            return Err(std::io::Error::other(long));
        }
        let n = self.inner.read(buf)?;
        let mut start = 0;
        for segment in buf[..n].split_inclusive(|b| *b == b'\n') {
            let ended = segment.last() == Some(&b'\n');
            self.run += segment.len() - usize::from(ended);
            if self.run > self.max {
                let long = LineTooLong {
                    line: self.newlines + 1,
                    max: self.max,
                };
                if start == 0 {
                    return Err(std::io::Error::other(long));
                }
                // The whole lines before it first (the error is sticky from here).
                self.pending = Some(long);
                return Ok(start);
            }
            if ended {
                self.newlines += 1;
                self.run = 0;
                start += segment.len();
            }
        }
        Ok(n)
    }
}

/// Opens the CSV file at `path` for a [`csv::Reader`], lines capped at [`MAX_CSV_LINE`].
pub fn open_csv(path: &Path) -> std::io::Result<LineCapped<std::fs::File>> {
    std::fs::File::open(path).map(|f| LineCapped::new(f, MAX_CSV_LINE))
}

/// A CSV error in the file at `path` as `path:line: problem`: a line too long (from
/// [`LineCapped`]) or a malformed row at its place; just `path: problem` when it has none.
pub fn csv_problem(path: &Path, e: &csv::Error) -> String {
    let path = path.display();
    if let csv::ErrorKind::Io(io) = e.kind() {
        if let Some(long) = line_too_long(io) {
            return format!(
                "{path}:{}: longer than {} bytes; not a CSV row igemu writes (check the path)",
                long.line, long.max
            );
        }
    }
    match e.position() {
        Some(p) => format!("{path}:{}: {e}", p.line()),
        None => format!("{path}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_reads_stop_at_the_cap_and_never_hold_more() {
        let cap = 1 << 20;
        // An endless file (`/dev/zero`): the cap's message, not the end of memory.
        let e = read_capped_from(std::io::repeat(0), None, cap).expect_err("endless");
        assert_eq!(
            e.to_string(),
            "larger than 1 MiB, more than such a file can be; check the path"
        );
        // A regular file's size says it before any reading.
        let e = read_capped_from(std::io::empty(), Some(cap + 1), cap).expect_err("too large");
        assert!(e.to_string().starts_with("larger than 1 MiB"), "{e}");
        // Up to the cap reads whole, with or without a size.
        let text = "x".repeat(cap as usize);
        for size in [None, Some(cap)] {
            let read = read_capped_from(text.as_bytes(), size, cap).expect("at the cap");
            assert_eq!(read.len(), text.len());
            assert!(read.capacity() <= cap as usize + 1, "{}", read.capacity());
        }
        let read = read_capped_from(&b"a\nb"[..], None, cap).expect("small");
        assert_eq!(read, b"a\nb");
    }

    #[test]
    fn lines_past_the_cap_fail_with_their_number() {
        let read = |text: &[u8], max| {
            let mut out = Vec::new();
            LineCapped::new(text, max)
                .read_to_end(&mut out)
                .map_err(|e| line_too_long(&e).cloned())
        };
        assert!(
            read(b"1234\n1234\n\n1234", 4).is_ok(),
            "newlines not counted"
        );
        assert_eq!(
            read(b"1234\n12345\n", 4),
            Err(Some(LineTooLong { line: 2, max: 4 }))
        );
        assert_eq!(
            read(b"\n\n\n12345", 4),
            Err(Some(LineTooLong { line: 4, max: 4 }))
        );
        // The whole lines read with a long one come first, then the error: a reader over it
        // meets every line before the long one (a trace reader reports their errors).
        let mut capped = LineCapped::new(&b"ab\ncd\n123456\n"[..], 4);
        let mut buf = [0; 64];
        assert_eq!(capped.read(&mut buf).ok(), Some(6), "ab\ncd\n");
        assert_eq!(&buf[..6], b"ab\ncd\n");
        for _ in 0..2 {
            let e = capped.read(&mut buf).expect_err("then the long line");
            assert_eq!(line_too_long(&e), Some(&LineTooLong { line: 3, max: 4 }));
        }
        // Across reads: a reader giving one byte at a time.
        let mut one = LineCapped::new(std::io::repeat(b'x').take(10), 4);
        let mut byte = [0];
        let got: Vec<bool> = (0..5).map(|_| one.read(&mut byte).is_ok()).collect();
        assert_eq!(got, [true, true, true, true, false]);
        // An endless line under a CSV reader: an error naming the line, not all the memory.
        let mut csv = csv::Reader::from_reader(LineCapped::new(std::io::repeat(0), MAX_CSV_LINE));
        let e = csv.headers().expect_err("endless");
        let message = csv_problem(Path::new("runs.csv"), &e);
        assert_eq!(
            message,
            format!("runs.csv:1: longer than {MAX_CSV_LINE} bytes; not a CSV row igemu writes (check the path)")
        );
    }

    #[test]
    fn unshowable_json_names_the_place_of_a_control_character() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"a": {"b": ["ok", "x\u001b[2J"]}, "c": "fine"}"#)
                .expect("json");
        assert_eq!(unshowable_json(&v).as_deref(), Some(".a.b[1]"));
        let key: serde_json::Value = serde_json::from_str(r#"{"k\u202e": 1}"#).expect("json");
        assert_eq!(unshowable_json(&key).as_deref(), Some(".k\\u{202e}"));
        let fine: serde_json::Value =
            serde_json::from_str(r#"{"t": "§ 4.2 – µs, tab\there"}"#).expect("json");
        assert_eq!(unshowable_json(&fine), None);
    }
}
