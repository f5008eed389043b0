//! What the trace readers ([`super::swf`], [`super::gwf`]) share: a parsed file, a malformed
//! line, and the reading of lines — blank lines skipped, comment lines skipped (`; Key: value`
//! or `# Key: value` headers kept), every job line handed to the format's own parser, at most
//! 20 bad lines reported.

use std::fmt;

/// At most this many malformed lines are reported; reading stops there.
pub const MAX_ERRORS: usize = 20;

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

/// What a format's parser makes of one job line: a job, `None` if the line is not a job (such
/// as a line of column titles), or an error (what is wrong, how to fix it).
pub(crate) type Parsed<J> = Result<Option<J>, (String, String)>;

/// Reads `text`: lines starting with `comment` are comments, every other non-blank line goes,
/// split at white space and with its 1-based number, to `job`. Returns every malformed line
/// (at most [`MAX_ERRORS`]) if any.
pub(crate) fn read<J>(
    text: &str,
    comment: char,
    mut job: impl FnMut(&[&str], usize) -> Parsed<J>,
) -> Result<TraceFile<J>, Vec<LineError>> {
    let mut header = Vec::new();
    let mut jobs = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(c) = l.strip_prefix(comment) {
            // `Key: value`, the key one word (prose with a colon is not a header).
            if let Some((k, v)) = c.split_once(':') {
                let k = k.trim();
                if !k.is_empty() && !k.contains(char::is_whitespace) {
                    header.push((k.to_string(), v.trim().to_string()));
                }
            }
            continue;
        }
        let fields: Vec<&str> = l.split_whitespace().collect();
        match job(&fields, line) {
            Ok(Some(j)) => jobs.push(j),
            Ok(None) => {}
            Err((message, fix)) => {
                errors.push(LineError { line, message, fix });
                if errors.len() >= MAX_ERRORS {
                    break;
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(TraceFile { header, jobs })
    } else {
        Err(errors)
    }
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
    lines.peek().is_none()
        || lines.any(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            fields.len() >= 10 && fields[0].parse::<f64>().is_ok()
        })
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
