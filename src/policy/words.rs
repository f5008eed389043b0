//! Splitting a command line into words as a POSIX shell splits them — blanks (space, tab,
//! newline) between words, single quotes keeping everything, double quotes keeping all but
//! `\"`, `\\`, `\$` and `` \` `` (and a backslash-newline, dropped), a backslash escaping
//! the next character — without running a shell: no variables, globs,
//! pipes or redirections, so a topology naming a command cannot make igemu run anything else.

/// The words of `line`, or what is wrong with it (an unterminated quote, a trailing
/// backslash).
pub fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => w.push(x),
                        None => return Err("a single quote (') is not closed".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => w.push(x),
                            Some('\n') => {}
                            Some(x) => {
                                w.push('\\');
                                w.push(x);
                            }
                            None => return Err("a double quote (\") is not closed".into()),
                        },
                        Some(x) => w.push(x),
                        None => return Err("a double quote (\") is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(x) => word.get_or_insert_with(String::new).push(x),
                None => return Err("the command ends with a lone backslash".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_as_a_shell_does() {
        let w = |s: &str| split(s).expect("splits");
        assert_eq!(w("python3 rr.py"), ["python3", "rr.py"]);
        assert_eq!(w("  a   b\tc  "), ["a", "b", "c"]);
        assert_eq!(w("a 'b c' \"d e\""), ["a", "b c", "d e"]);
        assert_eq!(w(r#"a\ b "x\"y" 'it''s'"#), ["a b", "x\"y", "its"]);
        assert_eq!(w(r#""a\nb" ''"#), [r"a\nb", ""]);
        assert_eq!(w(r#""\$HOME \`x\`""#), ["$HOME `x`"]);
        assert_eq!(w("a\u{a0}b"), ["a\u{a0}b"], "only ASCII blanks split");
        assert_eq!(w("$HOME *.py |x"), ["$HOME", "*.py", "|x"]);
        assert!(w("").is_empty());
    }

    #[test]
    fn refuses_unclosed_quotes() {
        assert!(split("a 'b").is_err());
        assert!(split("a \"b").is_err());
        assert!(split("a \\").is_err());
    }
}
