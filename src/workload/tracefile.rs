//! What the trace readers ([`super::swf`], [`super::gwf`]) share: a parsed file, a malformed
//! line, and the reading of lines — blank lines skipped, comment lines skipped (`; Key: value`
//! or `# Key: value` headers kept), every job line handed to the format's own parser, at most
//! 20 bad lines reported.
//!
//! A trace is streamed, one line at a time: memory holds one line (at most [`MAX_LINE`]
//! bytes) and the jobs kept, never the file, so a trace of gigabytes costs the memory of its
//! parsed jobs (64 bytes each in SWF) and a file with no line end (`/dev/zero`) is refused at
//! its first line after reading [`MAX_LINE`] bytes. At most
//! [`MAX_TRACE_BYTES`] are read, at most [`MAX_JOBS`] jobs and [`MAX_HEADER`] header entries
//! kept; the jobs are kept in
//! buffers reserved fallibly, so a trace whose jobs do not fit in memory is an error naming
//! the line reached, not an abort.

use std::fmt;
use std::io::{BufRead, Read};
use std::ops::ControlFlow;
use std::path::Path;

use crate::input::{line_too_long, LineCapped, MAX_TRACE_BYTES};

/// Past the last malformed line reported ([`MAX_ERRORS`]), the reading only looks for a job
/// line, for at most this many lines, to tell a trace with bad lines from other text.
pub const MAX_SCAN: usize = 10_000;

/// At most this many malformed lines are reported; reading stops there (see [`MAX_SCAN`]).
pub const MAX_ERRORS: usize = 20;

/// The longest line of a trace read, in bytes (line end not counted). A job line is under
/// 200 bytes in SWF and a few hundred in GWF (text fields), a header comment a line of prose:
/// a longer line is a file that is no trace (a binary file, `/dev/zero`).
pub const MAX_LINE: usize = 1 << 20;

/// The most jobs a trace may hold. The largest archive traces hold a few million (the Grid
/// Workloads Archive's Grid'5000, about a million; MetaCentrum's, 5.7 million); with at most
/// [`MAX_TRACE_BYTES`] of short lines a trace could hold 100 million, several gigabytes once
/// parsed, so this caps memory at about 1.3 GB of SWF jobs.
pub const MAX_JOBS: usize = 20_000_000;

/// The most `Key: value` header comments kept. Real headers have a few dozen; each is held as
/// two strings, so an endless header would cost many times its bytes.
pub const MAX_HEADER: usize = 10_000;

/// A parsed trace file.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceFile<J> {
    /// Comment lines of the form `Key: value` (the key one word), in file order.
    pub header: Vec<(String, String)>,
    /// Job lines in file order.
    pub jobs: Vec<J>,
}

impl<J> Default for TraceFile<J> {
    /// No header, no jobs (whatever the job type).
    fn default() -> Self {
        TraceFile {
            header: Vec::new(),
            jobs: Vec::new(),
        }
    }
}

/// A malformed line.
#[derive(Clone, Debug, PartialEq)]
pub struct LineError {
    /// Line number (1-based).
    pub line: usize,
    /// What is wrong, naming the field.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Why a trace was not read.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be read, or holds more than
    /// [`MAX_TRACE_BYTES`].
    Io(std::io::Error),
    /// A line that ends the reading, with its fix: longer than [`MAX_LINE`], not UTF-8 text,
    /// or reached when the jobs before it fill memory.
    Stop(LineError),
    /// Malformed job lines, each with its fix (at most [`MAX_ERRORS`]; past the last, lines
    /// were only looked at for a job line).
    Malformed(Vec<LineError>),
}

impl ReadError {
    /// The error as lines, for a trace read from memory (where reading cannot fail).
    pub fn into_lines(self) -> Vec<LineError> {
        match self {
            ReadError::Malformed(errors) => errors,
            ReadError::Stop(e) => vec![e],
            ReadError::Io(e) => vec![LineError {
                line: 0,
                message: format!("cannot read: {e}"),
                fix: "check the path".into(),
            }],
        }
    }
}

/// A trace read by [`swf::read`](super::swf::read) or [`gwf::read`](super::gwf::read): the
/// trace, or why not, and whether what was read looks like a workload trace at all (as
/// [`looks_like_trace`] judges a whole text, over the lines read).
#[derive(Debug)]
pub struct Reading<J> {
    /// The parsed trace, or why it was not read.
    pub trace: Result<TraceFile<J>, ReadError>,
    /// Whether some line read was a job line, or none was anything but blank or a comment.
    pub looks_like_trace: bool,
}

/// The jobs of a trace need more memory than there is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory {
    /// How many jobs were to be held.
    pub(crate) jobs: usize,
}

impl OutOfMemory {
    /// What to do about it.
    pub const FIX: &'static str =
        "replay a shorter trace (cut it with `head -n`), or give igemu more memory";
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} jobs do not fit in memory", self.jobs)
    }
}

/// What a format's parser makes of one job line: a job, `None` if the line is not a job (such
/// as a line of column titles), or an error (what is wrong, how to fix it).
pub(crate) type Parsed<J> = Result<Option<J>, (String, String)>;

/// Opens the trace at `path` for [`swf::read`](super::swf::read) or
/// [`gwf::read`](super::gwf::read): a regular file larger than
/// [`MAX_TRACE_BYTES`] is refused by its size, before any
/// reading.
pub fn open(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() && meta.len() > MAX_TRACE_BYTES {
        return Err(crate::input::too_large(MAX_TRACE_BYTES));
    }
    Ok(file)
}

/// What a trace read may hold before it is refused.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Bytes read.
    pub(crate) bytes: u64,
    /// Jobs kept.
    pub(crate) jobs: usize,
    /// `Key: value` header comments kept.
    pub(crate) header: usize,
}

impl Limits {
    /// A trace file's: [`MAX_TRACE_BYTES`], [`MAX_JOBS`], [`MAX_HEADER`].
    pub(crate) const TRACE: Limits = Limits {
        bytes: MAX_TRACE_BYTES,
        jobs: MAX_JOBS,
        header: MAX_HEADER,
    };
}

/// The fix for a line that is no line of a trace: the file is something else.
const NOT_A_TRACE: &str = "a workload trace (SWF, GWF) is a text file of job lines, each at most \
                           a few hundred bytes; check the path";

/// Reads a trace from `reader` a line at a time, within `limits`: lines starting with
/// `comment` are comments, every other non-blank line goes, split at white space and with its
/// 1-based number, to `job`. Memory holds one line and the jobs kept: a line longer than
/// [`MAX_LINE`], a line that is not UTF-8, a read error, more bytes, jobs or header entries
/// than `limits` allow, or jobs that do not fit in memory end the reading with an error; malformed job lines are collected, at
/// most [`MAX_ERRORS`] (past the last, lines are only looked at, [`MAX_SCAN`] at most, for
/// a job line).
pub(crate) fn read_from<J>(
    reader: impl Read,
    limits: Limits,
    comment: char,
    job: impl FnMut(&[&str], usize) -> Parsed<J>,
) -> Reading<J> {
    let mut lines = TraceLines::new(reader, limits.bytes);
    let mut kept = Kept::new(limits, comment, job);
    let ended = loop {
        // Past the last error reported, a line that ends the reading ends the scan instead:
        // the errors already found are the answer.
        let scanning = kept.errors.len() >= MAX_ERRORS;
        let (line, raw) = match lines.next(scanning) {
            ControlFlow::Continue(read) => read,
            ControlFlow::Break(ended) => break ended,
        };
        if let ControlFlow::Break(ended) = kept.take(raw.trim(), line, scanning) {
            break ended;
        }
    };
    kept.finish(ended)
}

/// How a reading ended: `Ok` at the end of what is read, or the error that stopped it.
type Ended = Result<(), ReadError>;

/// A line that ends the reading, with what is wrong and how to fix it.
fn stop(line: usize, message: String, fix: &str) -> ReadError {
    ReadError::Stop(LineError {
        line,
        message,
        fix: fix.to_string(),
    })
}

/// A trace's lines as read: at most `cap` bytes, each line at most [`MAX_LINE`], counted.
struct TraceLines<R> {
    /// The capped reader.
    lines: std::io::BufReader<LineCapped<std::io::Take<R>>>,
    /// The line read last, as bytes.
    buf: Vec<u8>,
    /// Lines read.
    line: usize,
    /// Bytes read.
    total: u64,
    /// The most bytes that may be read.
    cap: u64,
}

impl<R: Read> TraceLines<R> {
    /// `reader`'s lines, at most `cap` bytes of them.
    fn new(reader: R, cap: u64) -> Self {
        // One byte past the cap tells a trace at the cap from a larger one.
        let capped = LineCapped::new(reader.take(cap.saturating_add(1)), MAX_LINE);
        TraceLines {
            lines: std::io::BufReader::with_capacity(1 << 16, capped),
            buf: Vec::new(),
            line: 0,
            total: 0,
            cap,
        }
    }

    /// The next line with its 1-based number, or how the reading ends: at the end, or at a
    /// line too long, not UTF-8 or past the cap (while `scanning`, these end it without error).
    fn next(&mut self, scanning: bool) -> ControlFlow<Ended, (usize, &str)> {
        self.buf.clear();
        let n = match self.lines.read_until(b'\n', &mut self.buf) {
            Ok(0) => return ControlFlow::Break(Ok(())),
            Ok(_) if scanning && std::str::from_utf8(&self.buf).is_err() => {
                return ControlFlow::Break(Ok(()))
            }
            Ok(n) => n,
            Err(_) if scanning => return ControlFlow::Break(Ok(())),
            Err(e) => {
                return ControlFlow::Break(Err(match line_too_long(&e) {
                    Some(long) => stop(
                        long.line as usize,
                        format!("longer than {} bytes: not a line of a trace", long.max),
                        NOT_A_TRACE,
                    ),
                    None => ReadError::Io(e),
                }))
            }
        };
        self.line += 1;
        self.total += n as u64;
        if self.total > self.cap {
            if scanning {
                return ControlFlow::Break(Ok(()));
            }
            return ControlFlow::Break(Err(ReadError::Io(crate::input::too_large(self.cap))));
        }
        match std::str::from_utf8(&self.buf) {
            Ok(raw) => ControlFlow::Continue((self.line, raw)),
            Err(_) => ControlFlow::Break(Err(stop(
                self.line,
                "not UTF-8 text: neither an SWF nor a GWF trace".into(),
                NOT_A_TRACE,
            ))),
        }
    }
}

/// What a reading keeps of the lines read: the header, the jobs, the malformed lines, and
/// what the lines say of the file; with the limits and the format's job parser.
struct Kept<J, F> {
    /// What the reading may keep.
    limits: Limits,
    /// The character a comment line starts with.
    comment: char,
    /// The format's parser of a job line.
    job: F,
    /// `Key: value` header comments.
    header: Vec<(String, String)>,
    /// Jobs.
    jobs: Vec<J>,
    /// Malformed job lines.
    errors: Vec<LineError>,
    /// Whether some line was neither blank nor a comment.
    content: bool,
    /// Whether some line was a job line by its shape.
    job_like: bool,
    /// Lines read past the last error reported.
    scanned: usize,
}

impl<J, F: FnMut(&[&str], usize) -> Parsed<J>> Kept<J, F> {
    /// Nothing kept yet.
    fn new(limits: Limits, comment: char, job: F) -> Self {
        Kept {
            limits,
            comment,
            job,
            header: Vec::new(),
            jobs: Vec::new(),
            errors: Vec::new(),
            content: false,
            job_like: false,
            scanned: 0,
        }
    }

    /// Takes the trimmed line `l` (number `line`): a header comment or a job kept, a
    /// malformed line noted; while `scanning`, only looked at for a job line.
    fn take(&mut self, l: &str, line: usize, scanning: bool) -> ControlFlow<Ended> {
        if l.is_empty() {
            return ControlFlow::Continue(());
        }
        if !l.starts_with(';') && !l.starts_with('#') {
            self.content = true;
            self.job_like = self.job_like || is_job_like(l);
        }
        if scanning {
            // Past the last error reported, lines are read only to tell a trace with bad
            // lines from a file that is no trace at all: as far as the first job line, for at
            // most MAX_SCAN lines (a file that is no trace is not read to its end).
            self.scanned += 1;
            if self.job_like || self.scanned >= MAX_SCAN {
                return ControlFlow::Break(Ok(()));
            }
            return ControlFlow::Continue(());
        }
        if let Some(c) = l.strip_prefix(self.comment) {
            return match self.keep_header(c, line) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(Err(e)),
            };
        }
        let fields: Vec<&str> = l.split_whitespace().collect();
        match (self.job)(&fields, line) {
            Ok(Some(j)) => {
                if let Err(e) = self.keep_job(j, line) {
                    return ControlFlow::Break(Err(e));
                }
            }
            Ok(None) => {}
            Err((message, fix)) => {
                self.errors.push(LineError { line, message, fix });
                if self.errors.len() >= MAX_ERRORS && self.job_like {
                    return ControlFlow::Break(Ok(()));
                }
            }
        }
        ControlFlow::Continue(())
    }

    /// Keeps the comment `c` (after its comment character) if it is `Key: value`, the key one
    /// word (prose with a colon is not a header); an error past the limit or out of memory.
    fn keep_header(&mut self, c: &str, line: usize) -> Ended {
        let Some((k, v)) = c.split_once(':') else {
            return Ok(());
        };
        let k = k.trim();
        if k.is_empty() || k.contains(char::is_whitespace) {
            return Ok(());
        }
        if self.header.len() == self.limits.header {
            return Err(stop(
                line,
                format!(
                    "more than {} `Key: value` header comments",
                    self.limits.header
                ),
                "a trace's header has a few dozen; cut the file to its header and \
                 job lines",
            ));
        }
        // Held buffers grow fallibly (doubling): their size comes from the input.
        if self.header.try_reserve(1).is_err() {
            return Err(stop(
                line,
                "its header comments do not fit in memory".into(),
                OutOfMemory::FIX,
            ));
        }
        self.header.push((k.to_string(), v.trim().to_string()));
        Ok(())
    }

    /// Keeps the job `j` of `line`; an error past the limit or out of memory.
    fn keep_job(&mut self, j: J, line: usize) -> Ended {
        if self.jobs.len() == self.limits.jobs {
            return Err(stop(
                line,
                format!("more than {} jobs", self.limits.jobs),
                "replay a part of the trace (cut it with `head -n` or by time)",
            ));
        }
        if self.jobs.try_reserve(1).is_err() {
            let held = self.jobs.len();
            return Err(stop(
                line,
                OutOfMemory { jobs: held + 1 }.to_string(),
                OutOfMemory::FIX,
            ));
        }
        self.jobs.push(j);
        Ok(())
    }

    /// The reading, once it `ended`: the trace, or the error that stopped it, or the
    /// malformed lines.
    fn finish(self, ended: Ended) -> Reading<J> {
        let trace = match ended {
            Err(e) => Err(e),
            Ok(()) if self.errors.is_empty() => Ok(TraceFile {
                header: self.header,
                jobs: self.jobs,
            }),
            Ok(()) => Err(ReadError::Malformed(self.errors)),
        };
        Reading {
            trace,
            looks_like_trace: !self.content || self.job_like,
        }
    }
}

/// Reads `text` (in memory) as [`read_from`] does, every error a line.
pub(crate) fn read<J>(
    text: &str,
    comment: char,
    job: impl FnMut(&[&str], usize) -> Parsed<J>,
) -> Result<TraceFile<J>, Vec<LineError>> {
    let limits = Limits {
        bytes: u64::MAX,
        ..Limits::TRACE
    };
    read_from(text.as_bytes(), limits, comment, job)
        .trace
        .map_err(ReadError::into_lines)
}

/// Whether `line` (trimmed, not blank, not a comment) is a job line by its shape: at least
/// 10 whitespace-separated fields, the first a number.
fn is_job_like(line: &str) -> bool {
    let mut fields = line.split_whitespace();
    fields.next().is_some_and(|f| f.parse::<f64>().is_ok()) && fields.nth(8).is_some()
}

/// Whether `text` could be a workload trace at all (SWF or GWF): some line, not blank and not
/// a comment (`;` or `#`), is a job line — at least 10 whitespace-separated fields, the first a
/// number — or there is no such line (an empty trace). A file with malformed job lines still
/// counts; a TOML file, prose or CSV does not.
pub fn looks_like_trace(text: &str) -> bool {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(';') && !l.starts_with('#'))
        .peekable();
    lines.peek().is_none() || lines.any(is_job_like)
}

#[cfg(test)]
mod looks_like_tests {
    use super::looks_like_trace;

    #[test]
    fn job_lines_make_a_trace_and_other_text_does_not() {
        let swf = "; Computer: x\n1 0 5 100 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1\n";
        assert!(looks_like_trace(swf));
        assert!(
            looks_like_trace("1 0 5 100 x -1 -1 4 100 -1 1\n"),
            "malformed but a trace"
        );
        assert!(!looks_like_trace("[emulation]\nseed = 7\n"));
        assert!(!looks_like_trace("a,b,c\n1,2,3\n"));
        assert!(looks_like_trace("; only a header\n"), "an empty trace");
    }
}

#[cfg(test)]
mod stream_tests {
    use super::*;
    use crate::workload::{gwf, swf};

    /// A reader giving at most `n` bytes per read, so that lines straddle reads.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// The reading as it was before traces were streamed: the whole text in memory, split
    /// with `str::lines`, each line as [`read_from`] takes it.
    fn whole<J>(
        text: &str,
        comment: char,
        mut job: impl FnMut(&[&str], usize) -> Parsed<J>,
    ) -> Result<TraceFile<J>, Vec<LineError>> {
        let mut trace = TraceFile::default();
        let mut errors = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let l = raw.trim();
            if l.is_empty() {
                continue;
            }
            if let Some(c) = l.strip_prefix(comment) {
                if let Some((k, v)) = c.split_once(':') {
                    let k = k.trim();
                    if !k.is_empty() && !k.contains(char::is_whitespace) {
                        trace.header.push((k.to_string(), v.trim().to_string()));
                    }
                }
                continue;
            }
            let fields: Vec<&str> = l.split_whitespace().collect();
            match job(&fields, i + 1) {
                Ok(Some(j)) => trace.jobs.push(j),
                Ok(None) => {}
                Err((message, fix)) => {
                    errors.push(LineError {
                        line: i + 1,
                        message,
                        fix,
                    });
                    if errors.len() >= MAX_ERRORS {
                        break;
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(trace)
        } else {
            Err(errors)
        }
    }

    fn shipped(name: &str) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("topologies/traces")
            .join(name);
        std::fs::read_to_string(path).expect("a shipped trace")
    }

    #[test]
    fn a_streamed_trace_gives_the_jobs_the_whole_text_gave() {
        for name in ["sdsc-blue-standin.swf", "synthetic-64.swf"] {
            let text = shipped(name);
            // CRLF line ends and lines cut across reads change nothing.
            let crlf = text.replace('\n', "\r\n");
            for (bytes, n) in [(text.as_bytes(), 1 << 16), (crlf.as_bytes(), 7)] {
                let read = swf::read(Trickle(bytes, n));
                assert!(read.looks_like_trace, "{name}");
                let trace = read.trace.expect("a valid trace");
                assert_eq!(Ok(&trace), whole(&text, ';', swf::job).as_ref(), "{name}");
                assert!(trace.jobs.len() >= 60, "{name}: {}", trace.jobs.len());
                let jobs = swf::to_jobs(&trace, 64, usize::MAX, 1).expect("fits");
                let before = swf::to_jobs(&swf::parse(&text).expect("valid"), 64, usize::MAX, 1);
                assert_eq!(Ok(jobs), before, "{name}");
            }
        }
        let text = shipped("synthetic-grid.gwf");
        let trace = gwf::read(Trickle(text.as_bytes(), 5)).trace.expect("valid");
        let mut sites = gwf::Sites::default();
        let job = |f: &[&str], l| gwf::job(&mut sites, f, l);
        assert_eq!(Ok(trace), whole(&text, '#', job));
        // Malformed lines: the same errors, at the same lines, up to the same cap.
        let mut bad = shipped("synthetic-64.swf");
        bad += "1 2 3\n\n1 x 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n";
        bad += &"oops\n".repeat(30);
        let Err(ReadError::Malformed(errors)) = swf::read(Trickle(bad.as_bytes(), 3)).trace else {
            panic!("malformed lines");
        };
        assert_eq!(errors.len(), MAX_ERRORS);
        assert_eq!(Err(errors), whole(&bad, ';', swf::job));
    }

    #[test]
    fn a_line_past_the_cap_is_refused_at_its_number_having_read_no_more() {
        let job = "1 0 5 100 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1\n";
        let mut text = format!("; Version: 2.2\n{job}").into_bytes();
        text.extend(std::iter::repeat_n(b'7', MAX_LINE + 1));
        text.extend_from_slice(format!("\n{job}").as_bytes());
        let Err(ReadError::Stop(e)) = swf::read(&text[..]).trace else {
            panic!("refused");
        };
        assert_eq!(e.line, 3);
        assert_eq!(
            e.to_string(),
            format!("line 3: longer than {MAX_LINE} bytes: not a line of a trace")
        );
        assert!(e.fix.contains("check the path"), "{}", e.fix);
        // A line of exactly the cap is read.
        let at_cap = [&b"; "[..], &vec![b'x'; MAX_LINE - 2], b"\n", job.as_bytes()].concat();
        assert_eq!(swf::read(&at_cap[..]).trace.expect("fits").jobs.len(), 1);
        // An endless input with no line end (`/dev/zero`): refused at line 1 after the cap
        // and a read ahead, not read to the end of memory.
        let mut zeros = std::io::repeat(0).take(1 << 40);
        let Err(ReadError::Stop(e)) = gwf::read(&mut zeros).trace else {
            panic!("refused");
        };
        assert_eq!(e.line, 1);
        assert!((1 << 40) - zeros.limit() <= (MAX_LINE + (1 << 17)) as u64);
        // Bytes that are no text: refused at their line, naming what a trace is.
        let binary = [job.as_bytes(), &[0xff, 0xfe, b'\n']].concat();
        let read = swf::read(&binary[..]);
        let Err(ReadError::Stop(e)) = read.trace else {
            panic!("refused");
        };
        assert_eq!(
            e.to_string(),
            "line 2: not UTF-8 text: neither an SWF nor a GWF trace"
        );
    }

    #[test]
    fn more_bytes_than_the_cap_are_refused_however_they_come() {
        let job = "1 0 5 100 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1\n";
        let text = job.repeat(10);
        let read = |bytes| {
            let limits = Limits {
                bytes,
                ..Limits::TRACE
            };
            read_from(text.as_bytes(), limits, ';', swf::job).trace
        };
        assert_eq!(read(text.len() as u64).expect("at the cap").jobs.len(), 10);
        let Err(ReadError::Io(e)) = read(text.len() as u64 - 1) else {
            panic!("past the cap");
        };
        assert!(e.to_string().starts_with("larger than"), "{e}");
    }

    #[test]
    fn more_jobs_or_header_comments_than_the_limits_are_refused_at_their_line() {
        let job = "1 0 5 100 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1\n";
        let text = format!("; A: 1\n; B: 2\n{}", job.repeat(3));
        let read = |jobs, header| {
            let limits = Limits {
                jobs,
                header,
                ..Limits::TRACE
            };
            read_from(text.as_bytes(), limits, ';', swf::job).trace
        };
        let at_the_limits = read(3, 2).expect("three jobs and two header entries are allowed");
        assert_eq!(
            (at_the_limits.jobs.len(), at_the_limits.header.len()),
            (3, 2)
        );
        let Err(ReadError::Stop(e)) = read(2, 2) else {
            panic!("a third job is past the limit");
        };
        assert_eq!((e.line, e.message.as_str()), (5, "more than 2 jobs"));
        let Err(ReadError::Stop(e)) = read(3, 1) else {
            panic!("a second header entry is past the limit");
        };
        assert_eq!(
            (e.line, e.message.as_str()),
            (2, "more than 1 `Key: value` header comments")
        );
    }

    #[test]
    fn a_trace_whose_first_lines_are_bad_still_looks_like_one() {
        let job = "1 0 5 100 4 -1 -1 4 120 -1 1 1 1 1 1 1 -1 -1\n";
        let text = format!("{}{}", "1 2 3\n".repeat(MAX_ERRORS + 5), job.repeat(3));
        let reading = read_from(text.as_bytes(), Limits::TRACE, ';', swf::job);
        assert!(reading.looks_like_trace, "a job line follows the bad lines");
        let Err(ReadError::Malformed(errors)) = reading.trace else {
            panic!("the bad lines are reported");
        };
        assert_eq!(errors.len(), MAX_ERRORS);
        let not_a_trace = "1 2 3\n".repeat(MAX_ERRORS + 5);
        let reading = read_from(not_a_trace.as_bytes(), Limits::TRACE, ';', swf::job);
        assert!(!reading.looks_like_trace, "no line is a job line");
        // Text that is no trace is looked at for MAX_SCAN lines past the errors, not to its
        // end: a job line after them is not seen.
        let long = format!("{}{job}", "1 2 3\n".repeat(MAX_ERRORS + MAX_SCAN + 1));
        let reading = read_from(long.as_bytes(), Limits::TRACE, ';', swf::job);
        assert!(
            !reading.looks_like_trace,
            "the scan stops after MAX_SCAN lines"
        );
        // A line that would end the reading ends the scan, and the errors are the answer.
        let tail = format!(
            "{}\u{0}\u{0}\n{}\n",
            "1 2 3\n".repeat(MAX_ERRORS + 1),
            "x".repeat(MAX_LINE + 1)
        );
        let mut bytes = tail.into_bytes();
        bytes.extend_from_slice(b"\xff\xfe\n");
        let reading = read_from(bytes.as_slice(), Limits::TRACE, ';', swf::job);
        let Err(ReadError::Malformed(errors)) = reading.trace else {
            panic!("the errors found are the answer");
        };
        assert_eq!(errors.len(), MAX_ERRORS);
    }
}
