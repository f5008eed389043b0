//! The names a topology gives: of Grids, clusters and workloads, and written request ids.
//!
//! A name is checked against an allowlist rather than a list of known-bad characters: actor
//! names join names with `/` and `:` (`lrms:GRID/CLUSTER`, `vm:REQUEST/N`), `--trace-actors`
//! separates patterns with `,` and ends prefixes with `*`, reports split keys at `/`, Mermaid
//! ends a statement at `;`, and an invisible or look-alike character (a zero-width space, a
//! right-to-left override, `∕` for `/`) would make two names look like one in every output.
//! No list of bad characters can be complete; the few that are safe everywhere can.

pub(crate) use crate::input::diag::shown;
use crate::input::diag::{shows_as_itself, Diags, Loc};

/// The punctuation a name may hold besides letters and digits: each means nothing in actor
/// names, `--trace-actors` patterns, CSV, JSON, HTML, Mermaid or a shell word, and is safe in
/// a file name. (`#` begins a Mermaid entity and a shell comment, `=` is `--set`'s separator,
/// `~`, `(`, `)`, `[` and `]` mean something to a shell: none of them is needed.)
pub(crate) const NAME_PUNCTUATION: [char; 5] = ['-', '_', '.', '+', '@'];

/// Whether a name may hold `c`: a letter or digit (Unicode's alphabetic and numeric
/// characters) that shows as something, or one of [`NAME_PUNCTUATION`]. Most combining marks
/// are not letters: `e` + U+0301 looks like `é` but is another name, so it is refused (which
/// also refuses scripts that need such marks, such as a Devanagari virama); the few Unicode
/// counts as alphabetic (vowel signs, U+0345) pass.
pub(crate) fn name_char(c: char) -> bool {
    (c.is_alphanumeric() && shows_as_itself(c)) || NAME_PUNCTUATION.contains(&c)
}

/// A character as a message names it: `` `/` `` for visible ASCII, `U+200B` otherwise (a
/// space, a control character, or any character outside ASCII: shown raw, an invisible one
/// would show nothing, and a look-alike would look allowed).
fn shown_char(c: char) -> String {
    if c.is_ascii_graphic() {
        format!("`{c}`")
    } else {
        format!("U+{:04X}", u32::from(c))
    }
}

/// Refuses, at `loc`, a name (`what` says whose: "grid name") that is empty, is `.` or `..`,
/// or holds a character outside [`name_char`]'s allowlist; the message names the first such
/// character and shows the name escaped ([`shown`]). Says whether the name is good.
pub(crate) fn check_name(diags: &Diags, loc: &Loc, name: &str, what: &str) -> bool {
    let problem = match name.chars().find(|&c| !name_char(c)) {
        _ if name.is_empty() => "is empty".to_string(),
        // Alone, they read as a folder and its parent in the names built from them
        // (`lrms:GRID/..`), and as such wherever a name becomes part of a path.
        None if name == "." || name == ".." => {
            format!("is `{name}` alone, which reads as a folder of a path")
        }
        // A leading `-` reads as a flag (`trace --request -x`), and a leading `+`, `-` or `@`
        // as a formula when a spreadsheet opens the CSV outputs the name is a cell of.
        None if name.starts_with(['-', '+', '@']) => {
            format!("begins with `{}`", &name[..1])
        }
        None => return true,
        Some(c) => format!("holds {}", shown_char(c)),
    };
    let allowed: Vec<String> = NAME_PUNCTUATION.iter().map(|c| format!("`{c}`")).collect();
    diags.error(
        loc,
        format!("{what} `{}` {problem}", shown(name)),
        Some(format!(
            "names are joined with `/` and `:` in actor names and outputs, and listed with `,`: \
             use letters, digits and {} (not first `-`, `+` or `@`, which read as a flag or a \
             spreadsheet formula; not `.` or `..` alone; an accented letter precomposed, not a \
             letter and a combining mark)",
            allowed.join(" ")
        )),
    );
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(name: &str) -> Option<String> {
        let diags = Diags::default();
        let ok = check_name(&diags, &Loc::Builtin, name, "grid name");
        let all = diags.into_vec();
        assert_eq!(ok, all.is_empty(), "{name:?}");
        all.into_iter().next().map(|d| d.message)
    }

    #[test]
    fn names_of_letters_digits_and_safe_punctuation_pass() {
        for name in [
            "g1",
            "site-03_a.b",
            "das2-grid-jobs-865",
            "v1+exp",
            "user@site",
            "ρ-grid",
            "東京",
            "...",
            ".hidden",
            "7",
        ] {
            assert_eq!(refusal(name), None, "{name}");
        }
    }

    #[test]
    fn invisible_look_alike_and_unsafe_characters_are_refused_by_code_point() {
        for (name, shown_as, char_as) in [
            ("a\u{200b}b", "a\\u{200b}b", "U+200B"),
            ("a\u{202e}b", "a\\u{202e}b", "U+202E"),
            ("\u{feff}a", "\\u{feff}a", "U+FEFF"),
            ("a\u{2215}b", "a\\u{2215}b", "U+2215"),
            ("a\u{3164}", "a\\u{3164}", "U+3164"),
            ("a\tb", "a\\tb", "U+0009"),
            ("a\u{1b}[31mb", "a\\u{1b}[31mb", "U+001B"),
            ("a b", "a b", "U+0020"),
            ("a\u{a0}b", "a\\u{a0}b", "U+00A0"),
        ] {
            let m = refusal(name).expect("refused");
            assert_eq!(
                m,
                format!("grid name `{shown_as}` holds {char_as}"),
                "{name:?}"
            );
            assert!(m.chars().all(|c| !c.is_control() && c.is_ascii()), "{m:?}");
        }
        for (name, c) in [("a/b", '/'), ("a:b", ':'), ("a;b", ';'), ("a#b", '#')] {
            assert_eq!(
                refusal(name).expect("refused"),
                format!("grid name `{name}` holds `{c}`")
            );
        }
    }

    #[test]
    fn empty_dot_and_flag_like_names_are_refused() {
        assert_eq!(refusal("").as_deref(), Some("grid name `` is empty"));
        for (name, c) in [("-x", '-'), ("+1", '+'), ("@home", '@')] {
            assert_eq!(
                refusal(name),
                Some(format!("grid name `{name}` begins with `{c}`"))
            );
        }
        for name in [".", ".."] {
            assert_eq!(
                refusal(name),
                Some(format!(
                    "grid name `{name}` is `{name}` alone, which reads as a folder of a path"
                ))
            );
        }
    }
}
