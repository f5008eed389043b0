//! A TOML document as a tree whose every key and value remembers where it came from (a byte
//! range of the file or a `--set` override), so that reading can report precise places.

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::diag::{Diags, Loc};

/// A value with its place.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// The value.
    pub kind: NodeKind,
    /// Where it came from.
    pub loc: Loc,
}

/// A key with its place.
#[derive(Clone, Debug)]
pub(crate) struct Key {
    /// The key's text.
    pub name: String,
    /// Where it came from.
    pub loc: Loc,
}

/// TOML value kinds.
#[derive(Clone, Debug)]
pub(crate) enum NodeKind {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A date-time (igemu has no use for calendar times, so only its kind is kept).
    Datetime,
    /// An array.
    Array(Vec<Node>),
    /// A table, keys in file order.
    Table(Vec<(Key, Node)>),
}

impl NodeKind {
    /// The TOML name of this kind, for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            NodeKind::Str(_) => "a string",
            NodeKind::Int(_) => "an integer",
            NodeKind::Float(_) => "a float",
            NodeKind::Bool(_) => "a boolean",
            NodeKind::Datetime => "a date-time",
            NodeKind::Array(_) => "an array",
            NodeKind::Table(_) => "a table",
        }
    }
}

impl Node {
    /// The value as TOML text, as a `--set` override takes it (`"rr"`, `3.8`, `[1, 2]`);
    /// `None` for a date-time, which igemu has no use for.
    pub(crate) fn toml_text(&self) -> Option<String> {
        Some(match &self.kind {
            NodeKind::Str(s) => format!("{s:?}"),
            NodeKind::Int(i) => i.to_string(),
            NodeKind::Float(f) if f.is_nan() => "nan".into(),
            NodeKind::Float(f) if f.is_infinite() => {
                if *f > 0.0 {
                    "inf".into()
                } else {
                    "-inf".into()
                }
            }
            NodeKind::Float(f) => format!("{f:?}"),
            NodeKind::Bool(b) => b.to_string(),
            NodeKind::Datetime => return None,
            NodeKind::Array(items) => {
                let items: Option<Vec<String>> = items.iter().map(Node::toml_text).collect();
                format!("[{}]", items?.join(", "))
            }
            NodeKind::Table(entries) => {
                let entries: Option<Vec<String>> = entries
                    .iter()
                    .map(|(k, v)| Some(format!("{:?} = {}", k.name, v.toml_text()?)))
                    .collect();
                format!("{{ {} }}", entries?.join(", "))
            }
        })
    }
}

/// How a place is recorded for nodes converted from parsed text.
#[derive(Clone, Copy)]
pub(crate) enum Origin<'a> {
    /// The topology file.
    File,
    /// An LRMS profile with this name.
    Profile(&'a str),
    /// The n-th `--set`.
    Set(usize),
}

impl Origin<'_> {
    fn loc(&self, span: std::ops::Range<usize>) -> Loc {
        match self {
            Origin::File => Loc::File {
                start: span.start,
                end: span.end,
            },
            Origin::Profile(name) => Loc::Profile {
                name: (*name).to_string(),
                start: span.start,
            },
            Origin::Set(i) => Loc::Set(*i),
        }
    }
}

fn convert(value: &Spanned<DeValue<'_>>, origin: Origin<'_>, diags: &Diags) -> Node {
    let loc = origin.loc(value.span());
    let kind = match value.get_ref() {
        DeValue::String(s) => {
            check_visible(s, &loc, "string", diags);
            NodeKind::Str(s.to_string())
        }
        DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(v) => NodeKind::Int(v),
            Err(_) => {
                diags.error(
                    &loc,
                    format!("integer {} is out of range", i.as_str()),
                    Some(
                        "TOML integers run from -9223372036854775808 to 9223372036854775807 \
                         (64 bits, signed); a larger seed is written as a string of digits"
                            .into(),
                    ),
                );
                NodeKind::Int(0)
            }
        },
        DeValue::Float(f) => match f.as_str().parse::<f64>() {
            Ok(v) => NodeKind::Float(v),
            Err(_) => {
                diags.error(
                    &loc,
                    format!("`{}` is not a usable float", f.as_str()),
                    None,
                );
                NodeKind::Float(0.0)
            }
        },
        DeValue::Boolean(b) => NodeKind::Bool(*b),
        DeValue::Datetime(_) => NodeKind::Datetime,
        DeValue::Array(a) => NodeKind::Array(a.iter().map(|v| convert(v, origin, diags)).collect()),
        DeValue::Table(t) => NodeKind::Table(convert_table(t, origin, diags)),
    };
    Node { kind, loc }
}

fn convert_table(table: &DeTable<'_>, origin: Origin<'_>, diags: &Diags) -> Vec<(Key, Node)> {
    table
        .iter()
        .map(|(k, v)| {
            let key = Key {
                name: k.get_ref().to_string(),
                loc: origin.loc(k.span()),
            };
            check_visible(&key.name, &key.loc, "key", diags);
            (key, convert(v, origin, diags))
        })
        .collect()
}

/// Parses a whole document. Syntax errors are recorded (every one the parser recovers from)
/// and `None` is returned.
pub(crate) fn parse_document(text: &str, origin: Origin<'_>, diags: &Diags) -> Option<Node> {
    let (table, errors) = DeTable::parse_recoverable(text);
    if !errors.is_empty() {
        for e in errors {
            let span = e.span().unwrap_or(0..0);
            diags.error(
                &origin.loc(span),
                format!("TOML syntax: {}", e.message().trim()),
                Some("see https://toml.io for the syntax".into()),
            );
        }
        return None;
    }
    let span = table.span();
    Some(Node {
        kind: NodeKind::Table(convert_table(table.get_ref(), origin, diags)),
        loc: origin.loc(span),
    })
}

/// Applies one `--set dotted.key=value` override to `root`. The value is read as a TOML value
/// when it parses as one (`3`, `true`, `"x"`, `[1, 2]`), otherwise as a bare string, so
/// `--set lrms.preemption=mov` works without quotes. Numeric path segments index arrays
/// (`grid.0.cluster.1.lrms.preemption=mov`).
pub(crate) fn apply_set(root: &mut Node, index: usize, assignment: &str, diags: &Diags) {
    let loc = Loc::Set(index);
    let Some((path, raw)) = assignment.split_once('=') else {
        diags.error(
            &loc,
            "an override needs the form key=value",
            Some("e.g. --set lrms.preemption=mov".into()),
        );
        return;
    };
    let segments = key_segments(path);
    if segments.iter().any(|s| s.is_empty()) {
        diags.error(
            &loc,
            format!("`{path}` is not a dotted key"),
            Some("e.g. emulation.seed".into()),
        );
        return;
    }
    let value = override_value(raw, index, diags);
    let mut cur = root;
    for (depth, seg) in segments.iter().enumerate() {
        match step(cur, seg, &loc) {
            Ok(next) => cur = next,
            Err(Step::NotContainer(kind)) => {
                let message = format!("`{}` is {kind}, not a table", segments[..depth].join("."));
                diags.error(&loc, message, None);
                return;
            }
            Err(Step::Bad(message, hint)) => {
                diags.error(&loc, message, hint);
                return;
            }
        }
    }
    *cur = value;
}

/// The value of the `index`-th override, written `raw`, as [`apply_set`] places it: a TOML
/// value when it parses as one (`3`, `true`, `"x"`, `[1, 2]`), otherwise the bare text
/// (trimmed) as a string.
pub(crate) fn override_value(raw: &str, index: usize, diags: &Diags) -> Node {
    let raw = raw.trim();
    // An integer beyond TOML's 64 signed bits is no TOML value: a bare string too (so
    // `--set emulation.seed=18446744073709551615` gives the seed as digits, as a seed above
    // 2^63 − 1 is written in a file).
    let huge = |v: &DeValue<'_>| matches!(v, DeValue::Integer(i) if i64::from_str_radix(i.as_str(), i.radix()).is_err());
    match DeValue::parse(raw) {
        Ok(v) if !huge(v.get_ref()) => convert(&v, Origin::Set(index), diags),
        _ => {
            check_visible(raw, &Loc::Set(index), "value", diags);
            Node {
                kind: NodeKind::Str(raw.to_string()),
                loc: Loc::Set(index),
            }
        }
    }
}

/// Refuses, at `loc`, text (a `what`: string, key) holding a control or invisible character
/// (tabs and line ends aside): igemu shows the strings of its inputs in terminals, Mermaid
/// diagrams, CSVs and pages, where an escape sequence would act (clear the screen, set the
/// window title) and a newline add lines, instead of showing.
fn check_visible(text: &str, loc: &Loc, what: &str, diags: &Diags) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let line_end = c == '\n' || (c == '\r' && chars.peek() == Some(&'\n'));
        if c == '\t' || line_end || !super::diag::acts_invisibly(c) {
            continue;
        }
        diags.error(
            loc,
            format!(
                "the {what} `{}` holds the character U+{:04X}, a control or invisible character",
                super::diag::shown(text),
                u32::from(c)
            ),
            Some(
                "write visible characters: igemu shows this text in terminals, diagrams and \
                 CSVs, where such a character would act instead of showing"
                    .into(),
            ),
        );
        return;
    }
}

/// An override (`key=value`, as `--set` takes it) spelled one way: the key as
/// [`canonical_key`] spells it and the value as [`override_value`] reads it, written back as
/// TOML ([`Node::toml_text`]). Two overrides that set the same key to the same value —
/// `lrms.cp_alpha = 0.1` and `lrms.cp_alpha=0.1`, `igg.dispatch=rr` and `igg.dispatch="rr"`,
/// `x=1_000` and `x=1000` — give the same text; text that is no override is kept as it is.
pub(crate) fn canonical_override(assignment: &str) -> String {
    let Some((path, raw)) = assignment.split_once('=') else {
        return assignment.to_string();
    };
    let value = override_value(raw, 0, &Diags::default());
    // A date-time has no text of its own here (igemu has no use for one): kept as written.
    let text = value.toml_text().unwrap_or_else(|| raw.trim().to_string());
    format!("{}={text}", canonical_key(path))
}

/// The dotted segments of an override's key as [`apply_set`] follows them: each trimmed.
fn key_segments(path: &str) -> Vec<&str> {
    path.trim().split('.').map(str::trim).collect()
}

/// The setting an override's key names, spelled one way: segments trimmed as [`apply_set`]
/// trims them, and a number as the array index it is there (`workload. 01 .x` is
/// `workload.1.x`), so that two spellings of one key compare equal.
pub(crate) fn canonical_key(path: &str) -> String {
    key_segments(path)
        .iter()
        .map(|s| {
            s.parse::<usize>()
                .map_or_else(|_| s.to_string(), |i| i.to_string())
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Whether setting `path` to `value` sets the key `target` (canonical, as
/// [`canonical_key`]): `path` is `target`, or a table above it whose value (an inline table,
/// or a list of them, as a sweep's `[vary]` gives) holds it.
pub(crate) fn sets_key(path: &str, value: &Node, target: &str) -> bool {
    let key = canonical_key(path);
    if key == target {
        return true;
    }
    let Some(rest) = target.strip_prefix(&format!("{key}.")) else {
        return false;
    };
    match &value.kind {
        NodeKind::Table(entries) => entries.iter().any(|(k, v)| {
            let sub = canonical_key(&k.name);
            sets_key(&sub, v, rest)
        }),
        NodeKind::Array(items) => items.iter().any(|v| sets_key(&key, v, target)),
        _ => false,
    }
}

/// Whether the override `assignment` (`key=value`, as `--set` takes it) sets the key `target`
/// (canonical, as [`canonical_key`]), however it is spelled: `emulation.seed=3`,
/// ` emulation . seed =3` or `emulation={ seed = 3 }`.
pub(crate) fn override_sets_key(assignment: &str, target: &str) -> bool {
    let Some((path, raw)) = assignment.split_once('=') else {
        return false;
    };
    sets_key(path, &override_value(raw, 0, &Diags::default()), target)
}

/// Why an override's path cannot go on.
enum Step {
    /// The value there is neither a table nor an array (its kind).
    NotContainer(&'static str),
    /// A bad array index: the message and a hint.
    Bad(String, Option<String>),
}

/// The child of `node` that `seg` names: a table's key (created, empty, if absent) or an
/// array's index.
fn step<'n>(node: &'n mut Node, seg: &str, loc: &Loc) -> Result<&'n mut Node, Step> {
    match &mut node.kind {
        NodeKind::Table(entries) => {
            let pos = match entries.iter().position(|(k, _)| k.name == seg) {
                Some(p) => p,
                None => {
                    let key = Key {
                        name: seg.to_string(),
                        loc: loc.clone(),
                    };
                    let fresh = Node {
                        kind: NodeKind::Table(Vec::new()),
                        loc: loc.clone(),
                    };
                    entries.push((key, fresh));
                    entries.len() - 1
                }
            };
            Ok(&mut entries[pos].1)
        }
        NodeKind::Array(items) => {
            let n = items.len();
            let Ok(i) = seg.parse::<usize>() else {
                return Err(Step::Bad(
                    format!("`{seg}` indexes an array; use a number"),
                    Some(format!("the array has {n} entries, numbered from 0")),
                ));
            };
            items.get_mut(i).ok_or_else(|| {
                Step::Bad(
                    format!("index {i} is past the end of an array of {n}"),
                    None,
                )
            })
        }
        other => Err(Step::NotContainer(other.type_name())),
    }
}
