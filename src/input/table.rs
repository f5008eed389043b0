//! Typed, error-collecting access to a TOML table node: every getter records a diagnostic
//! for a wrong type or value and returns `None`, so reading goes on and finds every problem.

use std::cell::RefCell;

use super::diag::{did_you_mean, suggest, Diags, Loc};
use super::node::{Key, Node, NodeKind};
use crate::time::{parse_duration, EmuDuration, MAX_SECS};

/// A number as messages show it: plain, or in exponent form when very large or small
/// (`1e300`, not three hundred digits).
pub(crate) fn show(v: f64) -> String {
    if v != 0.0 && !(1e-4..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A table being read; remembers which keys were looked at so [`Table::finish`] can report
/// the others as unknown, with a "did you mean" among the keys the reader asked for.
pub(crate) struct Table<'a> {
    /// The table node itself.
    pub node: &'a Node,
    entries: &'a [(Key, Node)],
    used: RefCell<Vec<bool>>,
    /// Every key a reader asked for, present or not: the keys this table knows.
    asked: RefCell<Vec<String>>,
    /// How to name this table in messages, e.g. `[emulation]` or `grid "alpha"`.
    pub what: String,
    /// Where problems go.
    pub diags: &'a Diags,
}

impl<'a> Table<'a> {
    /// Views `node` as a table, or records an error.
    pub(crate) fn of(
        node: &'a Node,
        what: impl Into<String>,
        diags: &'a Diags,
    ) -> Option<Table<'a>> {
        let what = what.into();
        match &node.kind {
            NodeKind::Table(entries) => Some(Table {
                node,
                entries,
                used: RefCell::new(vec![false; entries.len()]),
                asked: RefCell::new(Vec::new()),
                what,
                diags,
            }),
            other => {
                diags.error(
                    &node.loc,
                    format!("{what} must be a table, found {}", other.type_name()),
                    None,
                );
                None
            }
        }
    }

    /// The value under `key`, if present.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Node> {
        {
            let mut asked = self.asked.borrow_mut();
            if !asked.iter().any(|k| k == key) {
                asked.push(key.to_string());
            }
        }
        let i = self.entries.iter().position(|(k, _)| k.name == key)?;
        self.used.borrow_mut()[i] = true;
        Some(&self.entries[i].1)
    }

    /// Counts `keys` as read where present: settings a reader skips because an error already
    /// reported keeps it from using them (they are not unknown, only unused).
    pub(crate) fn skip(&self, keys: &[&str]) {
        for k in keys {
            self.get(k);
        }
    }

    /// Every entry, in file order, all counted as read (for tables whose keys are free-form,
    /// such as a sweep's `[set]`).
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&'a Key, &'a Node)> {
        self.used.borrow_mut().iter_mut().for_each(|u| *u = true);
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Reports every key not looked at, with a "did you mean" among the keys asked for; call
    /// it after reading every key the table may hold.
    pub(crate) fn finish(&self) {
        let asked = self.asked.borrow();
        let known: Vec<&str> = asked.iter().map(String::as_str).collect();
        for (i, (k, _)) in self.entries.iter().enumerate() {
            if !self.used.borrow()[i] {
                self.diags.error(
                    &k.loc,
                    format!("unknown key `{}` in {}", k.name, self.what),
                    Some(suggest(&k.name, &known)),
                );
            }
        }
    }

    fn wrong_type(&self, key: &str, node: &Node, expected: &str) {
        self.diags.error(
            &node.loc,
            format!(
                "`{key}` in {} must be {expected}, found {}",
                self.what,
                node.kind.type_name()
            ),
            None,
        );
    }

    /// Records that `key` is required but absent — unless an unknown key here looks like a
    /// typo of it, in which case the unknown-key error (with its "did you mean") says it all.
    pub(crate) fn missing(&self, key: &str, hint: &str) {
        let misspelled = self
            .entries
            .iter()
            .any(|(k, _)| k.name != key && did_you_mean(&k.name, [key]).is_some());
        if misspelled {
            return;
        }
        self.diags.error(
            &self.node.loc,
            format!("{} needs `{key}`", self.what),
            Some(hint.to_string()),
        );
    }

    /// A string value.
    pub(crate) fn str(&self, key: &str) -> Option<(&'a str, &'a Loc)> {
        let node = self.get(key)?;
        match &node.kind {
            NodeKind::Str(s) => Some((s.as_str(), &node.loc)),
            _ => {
                self.wrong_type(key, node, "a string");
                None
            }
        }
    }

    /// A string or an integer value, as text (for names that are often numbers, such as ids).
    pub(crate) fn str_or_int(&self, key: &str) -> Option<(String, &'a Loc)> {
        let node = self.get(key)?;
        match &node.kind {
            NodeKind::Str(s) => Some((s.clone(), &node.loc)),
            NodeKind::Int(i) => Some((i.to_string(), &node.loc)),
            _ => {
                self.wrong_type(key, node, "a string or a whole number");
                None
            }
        }
    }

    /// A required string value.
    pub(crate) fn req_str(&self, key: &str, hint: &str) -> Option<(&'a str, &'a Loc)> {
        if self.get(key).is_none() {
            self.missing(key, hint);
            return None;
        }
        self.str(key)
    }

    /// A non-negative integer no larger than `max`.
    pub(crate) fn uint(&self, key: &str, max: u64) -> Option<(u64, &'a Loc)> {
        let node = self.get(key)?;
        match node.kind {
            NodeKind::Int(v) if v >= 0 && (v as u64) <= max => Some((v as u64, &node.loc)),
            NodeKind::Int(v) => {
                self.diags.error(
                    &node.loc,
                    format!("`{key}` = {v} is out of range in {}", self.what),
                    Some(format!("use a whole number from 0 to {max}")),
                );
                None
            }
            // Digits beyond TOML's integers, as a `--set` passes them.
            NodeKind::Str(ref s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                self.diags.error(
                    &node.loc,
                    format!("`{key}` = {s} is out of range in {}", self.what),
                    Some(format!("use a whole number from 0 to {max}")),
                );
                None
            }
            _ => {
                self.wrong_type(key, node, "a whole number");
                None
            }
        }
    }

    /// A positive integer no larger than `max`.
    pub(crate) fn positive(&self, key: &str, max: u64) -> Option<(u64, &'a Loc)> {
        let (v, loc) = self.uint(key, max)?;
        if v == 0 {
            self.diags.error(
                loc,
                format!("`{key}` must be at least 1 in {}", self.what),
                Some(format!("a {key} of zero leaves nothing to emulate")),
            );
            return None;
        }
        Some((v, loc))
    }

    /// A finite number (integers accepted).
    pub(crate) fn number(&self, key: &str) -> Option<(f64, &'a Loc)> {
        let node = self.get(key)?;
        let v = match node.kind {
            NodeKind::Int(v) => v as f64,
            NodeKind::Float(v) => v,
            _ => {
                self.wrong_type(key, node, "a number");
                return None;
            }
        };
        if !v.is_finite() {
            self.diags.error(
                &node.loc,
                format!("`{key}` = {v} in {} must be a finite number", self.what),
                Some("nan and inf are TOML floats but no setting takes them".into()),
            );
            return None;
        }
        Some((v, &node.loc))
    }

    /// A number above zero and at most `hi`.
    pub(crate) fn positive_number(&self, key: &str, hi: f64) -> Option<(f64, &'a Loc)> {
        let (v, loc) = self.number(key)?;
        if v <= 0.0 || v > hi {
            self.diags.error(
                loc,
                format!("`{key}` = {} is out of range in {}", show(v), self.what),
                Some(format!("use a number above 0 and at most {}", show(hi))),
            );
            return None;
        }
        Some((v, loc))
    }

    /// A number in `[lo, hi]`.
    pub(crate) fn number_in(&self, key: &str, lo: f64, hi: f64) -> Option<(f64, &'a Loc)> {
        let (v, loc) = self.number(key)?;
        if !(lo..=hi).contains(&v) {
            self.diags.error(
                loc,
                format!("`{key}` = {} is out of range in {}", show(v), self.what),
                Some(format!("use a number from {} to {}", show(lo), show(hi))),
            );
            return None;
        }
        Some((v, loc))
    }

    /// A range `[low, high]` of two numbers with `lo ≤ low ≤ high ≤ hi` (`lo` exclusive
    /// when `above_lo`), if `key` holds an array; `None`, saying nothing, if it holds
    /// anything else (the caller reads a single value then).
    pub(crate) fn number_range(
        &self,
        key: &str,
        (lo, hi): (f64, f64),
        above_lo: bool,
    ) -> Option<(f64, f64)> {
        let node = self.get(key)?;
        let NodeKind::Array(a) = &node.kind else {
            return None;
        };
        let num = |n: &Node| match n.kind {
            NodeKind::Int(i) => Some(i as f64),
            NodeKind::Float(f) => Some(f),
            _ => None,
        };
        let pair = match a.as_slice() {
            [x, y] => num(x).zip(num(y)),
            _ => None,
        };
        let low_ok = |low: f64| if above_lo { low > lo } else { low >= lo };
        // NaN fails every comparison, so it is refused with the rest.
        match pair {
            Some((low, high)) if low_ok(low) && low <= high && high <= hi => Some((low, high)),
            Some(_) => {
                let from = if above_lo { "<" } else { "≤" };
                self.diags.error(
                    &node.loc,
                    format!(
                        "`{key}` = {} is out of range in {}",
                        node.toml_text().unwrap_or_default(),
                        self.what
                    ),
                    Some(format!(
                        "write {key} = [low, high] with {} {from} low ≤ high ≤ {}",
                        show(lo),
                        show(hi)
                    )),
                );
                None
            }
            None => {
                self.wrong_type(key, node, "a number or a range [low, high] of two numbers");
                None
            }
        }
    }

    /// A boolean.
    pub(crate) fn bool(&self, key: &str) -> Option<(bool, &'a Loc)> {
        let node = self.get(key)?;
        match node.kind {
            NodeKind::Bool(b) => Some((b, &node.loc)),
            _ => {
                self.wrong_type(key, node, "true or false");
                None
            }
        }
    }

    /// A duration: a human string (`"90s"`, `"2h"`, `"01:15:00"`) or a number of seconds.
    pub(crate) fn duration(&self, key: &str) -> Option<(EmuDuration, &'a Loc)> {
        let node = self.get(key)?;
        self.duration_in(key, node).map(|d| (d, &node.loc))
    }

    /// A duration, or a range `[low, high]` of two (low ≤ high) to draw from; a single
    /// duration is the range of one value.
    pub(crate) fn duration_range(
        &self,
        key: &str,
    ) -> Option<((EmuDuration, EmuDuration), &'a Loc)> {
        let node = self.get(key)?;
        match &node.kind {
            NodeKind::Array(a) if a.len() == 2 => {
                let (lo, hi) = (self.duration_in(key, &a[0])?, self.duration_in(key, &a[1])?);
                if lo > hi {
                    self.diags.error(
                        &node.loc,
                        format!(
                            "`{key}` in {}: the range's low end is above its high end",
                            self.what
                        ),
                        Some(format!("write {key} = [low, high], e.g. [\"1m\", \"5m\"]")),
                    );
                    return None;
                }
                Some(((lo, hi), &node.loc))
            }
            NodeKind::Array(_) => {
                self.wrong_type(
                    key,
                    node,
                    "a duration or a range [low, high] of two durations",
                );
                None
            }
            _ => self.duration_in(key, node).map(|d| ((d, d), &node.loc)),
        }
    }

    /// `node`, the value of `key` or an element of it, as a duration: from 0 to
    /// [`MAX_SECS`] seconds, else a problem naming the value and that range.
    fn duration_in(&self, key: &str, node: &'a Node) -> Option<EmuDuration> {
        let secs = match &node.kind {
            NodeKind::Str(s) => {
                return match parse_duration(s) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        self.diags.error(
                            &node.loc,
                            format!("`{key}` in {}: {e}", self.what),
                            Some("write a duration like \"90s\", \"2h\", \"1d\", \"1h30m\" or \"01:15:00\"".into()),
                        );
                        None
                    }
                };
            }
            NodeKind::Int(v) => *v as f64,
            NodeKind::Float(v) => *v,
            _ => {
                self.wrong_type(
                    key,
                    node,
                    "a duration such as \"90s\" or a non-negative number of seconds",
                );
                return None;
            }
        };
        // Whole seconds are exact below 2^53, far above the limit.
        let d = match node.kind {
            NodeKind::Int(v) if (0..=MAX_SECS as i64).contains(&v) => {
                Some(EmuDuration::from_secs(v as u64))
            }
            NodeKind::Int(_) => None,
            _ => EmuDuration::checked_from_secs_f64(secs),
        };
        if d.is_none() {
            self.diags.error(
                &node.loc,
                format!(
                    "`{key}` = {} s is out of range in {}",
                    node.toml_text().unwrap_or_default(),
                    self.what
                ),
                Some(format!(
                    "durations and times run from 0 to 10^12 s ({MAX_SECS}, about 31 700 years)"
                )),
            );
        }
        d
    }

    /// One of a fixed set of names.
    pub(crate) fn choice(
        &self,
        key: &str,
        choices: &[&'static str],
    ) -> Option<(&'static str, &'a Loc)> {
        let (s, loc) = self.str(key)?;
        match choices.iter().find(|c| **c == s) {
            Some(c) => Some((c, loc)),
            None => {
                self.diags.error(
                    loc,
                    format!(
                        "`{}` is not a valid `{key}` in {}",
                        super::diag::shown(s),
                        self.what
                    ),
                    Some(suggest(s, choices)),
                );
                None
            }
        }
    }

    /// One of an enum's names ([`crate::Named`]).
    pub(crate) fn named<E: crate::Named>(&self, key: &str) -> Option<(E, &'a Loc)> {
        let (name, loc) = self.choice(key, E::NAMES)?;
        E::parse(name).map(|v| (v, loc))
    }

    /// An array of tables (`[[key]]`), or an empty list when absent.
    pub(crate) fn tables(&self, key: &str) -> Vec<&'a Node> {
        let Some(node) = self.get(key) else {
            return Vec::new();
        };
        match &node.kind {
            NodeKind::Array(items) => items.iter().collect(),
            NodeKind::Table(_) => vec![node],
            other => {
                self.diags.error(
                    &node.loc,
                    format!(
                        "`{key}` in {} must be an array of tables, found {}",
                        self.what,
                        other.type_name()
                    ),
                    Some(format!("write [[{key}]] sections")),
                );
                Vec::new()
            }
        }
    }

    /// A sub-table, if present.
    pub(crate) fn table(&self, key: &str) -> Option<Table<'a>> {
        let node = self.get(key)?;
        let what = if self.what == "the topology" {
            format!("[{key}]")
        } else {
            format!("`{key}` in {}", self.what)
        };
        Table::of(node, what, self.diags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::node::{parse_document, Origin};

    #[test]
    fn an_unknown_key_is_reported_with_the_key_the_reader_asked_for() {
        let diags = Diags::default();
        let root = parse_document("schedular = \"easy\"\npivots = 2\n", Origin::File, &diags)
            .expect("parses");
        let t = Table::of(&root, "[lrms]", &diags).expect("a table");
        assert_eq!(t.uint("pivots", 10).map(|(v, _)| v), Some(2));
        assert!(t.str("scheduler").is_none());
        t.finish();
        let problems = diags.into_vec();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].message, "unknown key `schedular` in [lrms]");
        let hint = problems[0].hint.as_deref().unwrap_or("");
        assert!(hint.contains("scheduler"), "{hint}");
    }
}
