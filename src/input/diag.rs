//! Diagnostics for bad input: every problem in a file is collected, each with its place
//! (`file:line:col`, or the `--set` it came from), a message, and a hint for the fix.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

/// Where a value came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Loc {
    /// A byte range in the topology file.
    File {
        /// First byte.
        start: usize,
        /// One past the last byte.
        end: usize,
    },
    /// The n-th `--set` override (0-based).
    Set(usize),
    /// A byte range in an embedded or referenced LRMS profile.
    Profile {
        /// The profile's name.
        name: String,
        /// First byte of the offending text in the profile's source.
        start: usize,
    },
    /// Not in any input (a built-in default).
    Builtin,
    /// The file as a whole (it cannot be read, say): the place is its path alone.
    WholeFile,
}

/// One problem found in the input.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// Where it is.
    pub loc: Loc,
    /// What is wrong.
    pub message: String,
    /// How to fix it, if we can tell.
    pub hint: Option<String>,
}

/// A collector that reading code can push to from anywhere (shared by reference): errors,
/// which refuse the input, and warnings, which let it through but are printed.
#[derive(Default)]
pub struct Diags {
    items: RefCell<Vec<Diagnostic>>,
    warnings: RefCell<Vec<Diagnostic>>,
}

impl Diags {
    /// Records a problem.
    pub fn error(&self, loc: &Loc, message: impl Into<String>, hint: Option<String>) {
        self.items.borrow_mut().push(Diagnostic {
            loc: loc.clone(),
            message: message.into(),
            hint,
        });
    }
    /// Records a warning: the input is valid, but the user should know (a run that will be
    /// slow or whose queues grow without bound).
    pub fn warn(&self, loc: &Loc, message: impl Into<String>, hint: Option<String>) {
        self.warnings.borrow_mut().push(Diagnostic {
            loc: loc.clone(),
            message: message.into(),
            hint,
        });
    }
    /// Whether no error was recorded (warnings do not count).
    pub fn is_empty(&self) -> bool {
        self.items.borrow().is_empty()
    }
    /// The recorded problems.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items.into_inner()
    }
    /// The recorded warnings, taken out.
    pub fn take_warnings(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *self.warnings.borrow_mut())
    }
}

/// Every problem found in one topology, with what is needed to print places.
#[derive(Clone, Debug)]
pub struct Report {
    /// The file's path as given (or `<embedded quickstart>`).
    pub path: String,
    /// The file's text, for line and column numbers.
    pub text: String,
    /// The `--set` overrides, for naming them.
    pub sets: Vec<String>,
    /// Profile sources by name, for places inside profiles.
    pub profiles: Vec<(String, String, String)>,
    /// The problems, in the order of their places.
    pub diagnostics: Vec<Diagnostic>,
}

/// 1-based line and column of byte `offset` in `text` (columns count characters). For many
/// places in one text, [`Lines`] finds each without counting from the start again.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    Lines::new(text).line_col(offset)
}

/// Where each line of a text starts: built once, then each place is a binary search (a file
/// with many problems took time quadratic in its size when each counted its newlines).
pub struct Lines<'a> {
    text: &'a str,
    /// Byte offset of each line's first byte; the first is 0.
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    /// The line starts of `text`.
    pub fn new(text: &'a str) -> Lines<'a> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { text, starts }
    }

    /// 1-based line and column of byte `offset` (columns count characters).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = self.text.floor_char_boundary(offset.min(self.text.len()));
        // The last line starting at or before `offset`; `starts[0]` is 0, so there is one.
        let line = self.starts.partition_point(|s| *s <= offset);
        let start = self.starts[line - 1];
        let col = self.text[start..offset].chars().count() + 1;
        (line, col)
    }
}

/// Problems printed at most by a [`Report`]; the rest are counted. A file with a million
/// unknown keys needs its first few fixed, not a million lines.
pub const MAX_SHOWN: usize = 100;

impl Report {
    /// The problems found in the file at `path` (its text, for places).
    pub fn of_file(path: &str, text: &str, diagnostics: Vec<Diagnostic>) -> Report {
        Report {
            path: path.to_string(),
            text: text.to_string(),
            sets: Vec::new(),
            profiles: Vec::new(),
            diagnostics,
        }
    }

    /// A file that could not be read.
    pub fn unreadable(path: &str, error: &std::io::Error, hint: &str) -> Report {
        let message = if error.kind() == std::io::ErrorKind::NotFound {
            "the file does not exist".to_string()
        } else {
            format!("cannot read the file: {error}")
        };
        let d = Diagnostic {
            loc: Loc::WholeFile,
            message,
            hint: Some(hint.to_string()),
        };
        Report::of_file(path, "", vec![d])
    }

    /// The place of `loc`, with the line starts of the file (`lines`) and of the profiles
    /// (`profile_lines`, built the first time a profile is named).
    fn place<'a>(
        &'a self,
        loc: &Loc,
        lines: &Lines,
        profile_lines: &mut Vec<(&'a str, Lines<'a>)>,
    ) -> String {
        match loc {
            Loc::File { start, .. } => {
                let (l, c) = lines.line_col(*start);
                format!("{}:{l}:{c}", self.path)
            }
            Loc::Set(i) => format!(
                "--set {}",
                shown(self.sets.get(*i).map(String::as_str).unwrap_or("?"))
            ),
            Loc::Profile { name, start } => {
                match self.profiles.iter().find(|(n, _, _)| n == name) {
                    Some((n, path, text)) => {
                        let at = match profile_lines.iter().position(|(p, _)| p == n) {
                            Some(at) => at,
                            None => {
                                profile_lines.push((n, Lines::new(text)));
                                profile_lines.len() - 1
                            }
                        };
                        let (l, c) = profile_lines[at].1.line_col(*start);
                        format!("{path}:{l}:{c}")
                    }
                    None => format!("LRMS profile `{name}`"),
                }
            }
            Loc::Builtin => format!("{} (built-in default)", self.path),
            Loc::WholeFile => self.path.clone(),
        }
    }
}

impl Report {
    /// Its diagnostics as warnings, one text each (`place: warning: message`, then the
    /// hint on a line of its own), for a topology that is valid all the same.
    pub fn warnings(&self) -> Vec<String> {
        let lines = Lines::new(&self.text);
        let mut profile_lines = Vec::new();
        (self.diagnostics.iter().take(MAX_SHOWN))
            .map(|d| self.item(d, "warning", &lines, &mut profile_lines))
            .collect()
    }

    /// One diagnostic as text, called `what` (error, warning).
    fn item<'a>(
        &'a self,
        d: &Diagnostic,
        what: &str,
        lines: &Lines,
        profile_lines: &mut Vec<(&'a str, Lines<'a>)>,
    ) -> String {
        let place = self.place(&d.loc, lines, profile_lines);
        match &d.hint {
            Some(h) => format!("{place}: {what}: {}\n    hint: {h}", d.message),
            None => format!("{place}: {what}: {}", d.message),
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines = Lines::new(&self.text);
        let mut profile_lines = Vec::new();
        for d in self.diagnostics.iter().take(MAX_SHOWN) {
            writeln!(f, "{}", self.item(d, "error", &lines, &mut profile_lines))?;
        }
        let n = self.diagnostics.len();
        if n > MAX_SHOWN {
            writeln!(f, "... and {} more", n - MAX_SHOWN)?;
        }
        write!(
            f,
            "{}: {n} problem{} found",
            self.path,
            if n == 1 { "" } else { "s" }
        )
    }
}

/// Code points that are letters to Unicode (`char::is_alphabetic`) yet show as nothing: the
/// Hangul fillers. Every other default-ignorable code point (zero-width space, bidirectional
/// controls, byte order mark, ...) is no letter, digit or ASCII character.
const BLANK_LETTERS: [char; 4] = ['\u{115F}', '\u{1160}', '\u{3164}', '\u{FFA0}'];

/// Whether `c` would act or hide rather than show in free text (a description, a topology's
/// title): a control character (C0, DEL, C1: escape sequences, carriage returns), a line or
/// paragraph separator, or a default-ignorable code point (zero-width characters,
/// bidirectional controls, the byte order mark, variation selectors, tags, the Hangul
/// fillers). Other punctuation and symbols (`§`, `–`, `µ`) show as themselves.
pub(crate) fn acts_invisibly(c: char) -> bool {
    c.is_control()
        || BLANK_LETTERS.contains(&c)
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{17B4}'..='\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFF0}'..='\u{FFFB}'
                | '\u{1BCA0}'..='\u{1BCA3}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// Whether a message may show `c` as it is: a space, visible ASCII, or a letter or digit of
/// any script that shows as something.
pub(crate) fn shows_as_itself(c: char) -> bool {
    c == ' ' || c.is_ascii_graphic() || (c.is_alphanumeric() && !BLANK_LETTERS.contains(&c))
}

/// User text (a name, an override) as a message may show it: every character that does not
/// [show as itself](shows_as_itself) written `\u{…}` (ASCII control characters as Rust writes
/// them, `\t`, `\n`), so that an invisible or look-alike character is seen in the message and
/// none reaches the terminal raw (a right-to-left override would reorder the rest of the line,
/// an escape sequence would restyle it).
pub(crate) fn shown(text: &str) -> Cow<'_, str> {
    if text.chars().all(shows_as_itself) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if shows_as_itself(c) {
            out.push(c);
        } else if c.is_ascii() {
            out.extend(c.escape_debug());
        } else {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        }
    }
    Cow::Owned(out)
}

/// Levenshtein distance between two short strings.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest of `candidates` to `word`, if close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (edit_distance(&word.to_lowercase(), &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A hint naming the closest candidate, or listing them all.
pub fn suggest(word: &str, candidates: &[&str]) -> String {
    match did_you_mean(word, candidates.iter().copied()) {
        Some(c) => format!("did you mean `{c}`?"),
        None => format!("expected one of: {}", candidates.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_catch_typos_only() {
        assert_eq!(
            did_you_mean("preemtion", ["preemption", "profile"]),
            Some("preemption")
        );
        assert_eq!(did_you_mean("hots", ["hosts", "name"]), Some("hosts"));
        assert_eq!(did_you_mean("zzzzzz", ["hosts", "name"]), None);
    }

    #[test]
    fn lines_and_columns_are_one_based() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 11), (2, 6));
        assert_eq!(line_col(text, 12), (2, 7), "a newline ends its line");
        assert_eq!(line_col(text, 13), (3, 1), "after the last newline");
        assert_eq!(line_col(text, 99), (3, 1), "past the end: the end");
        let lines = Lines::new("é\n\nxé y");
        assert_eq!(lines.line_col(1), (1, 1), "inside a character: its start");
        assert_eq!(lines.line_col(3), (2, 1));
        assert_eq!(lines.line_col(4), (3, 1));
        assert_eq!(lines.line_col(8), (3, 4), "columns count characters");
    }

    #[test]
    fn many_problems_are_placed_in_linear_time_and_the_first_hundred_shown() {
        // 200 000 unknown keys: before, each place counted the newlines before it (> 60 s).
        let n = 200_000;
        let text = "k = 1\n".repeat(n);
        let diagnostics = (0..n)
            .map(|i| Diagnostic {
                loc: Loc::File {
                    start: i * 6,
                    end: i * 6 + 1,
                },
                message: format!("unknown key k{i}"),
                hint: None,
            })
            .collect();
        let report = Report::of_file("t.toml", &text, diagnostics);
        let shown = report.to_string();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), MAX_SHOWN + 2, "{shown}");
        assert_eq!(lines[0], "t.toml:1:1: error: unknown key k0");
        assert_eq!(lines[99], "t.toml:100:1: error: unknown key k99");
        assert_eq!(lines[100], "... and 199900 more");
        assert_eq!(lines[101], "t.toml: 200000 problems found");
        let lines = Lines::new(&text);
        let placed: Vec<(usize, usize)> = (0..n).map(|i| lines.line_col(i * 6 + 4)).collect();
        assert_eq!((placed[0], placed[n - 1]), ((1, 5), (n, 5)));
    }
}
