//! Diagnostics for bad input: every problem in a file is collected, each with its place
//! (`file:line:col`, or the `--set` it came from), a message, and a hint for the fix.

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

/// A collector that reading code can push to from anywhere (shared by reference).
#[derive(Default)]
pub struct Diags {
    items: RefCell<Vec<Diagnostic>>,
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
    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.items.borrow().is_empty()
    }
    /// The recorded problems.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items.into_inner()
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

/// 1-based line and column of byte `offset` in `text` (columns count characters).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..text.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before, |i| &before[i + 1..])
        .chars()
        .count()
        + 1;
    (line, col)
}

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

    fn place(&self, loc: &Loc) -> String {
        match loc {
            Loc::File { start, .. } => {
                let (l, c) = line_col(&self.text, *start);
                format!("{}:{l}:{c}", self.path)
            }
            Loc::Set(i) => format!(
                "--set {}",
                self.sets.get(*i).map(String::as_str).unwrap_or("?")
            ),
            Loc::Profile { name, start } => {
                match self.profiles.iter().find(|(n, _, _)| n == name) {
                    Some((_, path, text)) => {
                        let (l, c) = line_col(text, *start);
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

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.diagnostics {
            writeln!(f, "{}: error: {}", self.place(&d.loc), d.message)?;
            if let Some(h) = &d.hint {
                writeln!(f, "    hint: {h}")?;
            }
        }
        let n = self.diagnostics.len();
        write!(
            f,
            "{}: {n} problem{} found",
            self.path,
            if n == 1 { "" } else { "s" }
        )
    }
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
    }
}
