//! A selection as a Mermaid sequence diagram (a lane per actor, or per VM) and in the Chrome
//! trace-event format.

use super::*;

/// The lane of actor `a` in a diagram: with `vm_lanes` false, the VMs of one lease
/// (`vm:<request>/<i>`) share the lane `vm:<request>/*` (labels keep the VM index), so a
/// lease of many VMs does not make the diagram unreadably wide.
pub(super) fn lane(a: &str, vm_lanes: bool) -> String {
    match a.strip_prefix("vm:").and_then(|r| r.rsplit_once('/')) {
        Some((request, _)) if !vm_lanes => format!("vm:{request}/*"),
        _ => a.to_string(),
    }
}

/// The actors a line is drawn between: sender and receiver; a lease from the IGG that placed
/// it to its LRMS (or on the IGG alone, if none took it).
pub(super) fn ends(line: &Line) -> (&str, Option<&str>) {
    match line {
        Line::Message(e) => (&e.from, Some(&e.to)),
        Line::Lease(l) => (&l.by, l.lrms.as_deref()),
    }
}

/// A Mermaid `sequenceDiagram`, made one line at a time: participants in order of
/// appearance; one lane per VM with `vm_lanes`, else one per lease's VMs. Labels name the
/// requests (a batch's verdicts and prices too); a collapsed lease is an arrow from the IGG
/// that placed it to its LRMS, or a note over the IGG if none took it. The diagram is
/// [`Mermaid::head`] followed by every [`Mermaid::body_line`]; only the participants are
/// remembered, so the body can go to a file as it is made.
pub struct Mermaid {
    pub(super) vm_lanes: bool,
    pub(super) ids: BTreeMap<String, usize>,
    pub(super) order: Vec<String>,
}

impl Mermaid {
    /// A diagram with one lane per VM if `vm_lanes`.
    pub fn new(vm_lanes: bool) -> Self {
        Mermaid {
            vm_lanes,
            ids: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    pub(super) fn id(&mut self, a: &str) -> usize {
        let a = lane(a, self.vm_lanes);
        if let Some(i) = self.ids.get(&a) {
            return *i;
        }
        self.ids.insert(a.clone(), self.order.len());
        self.order.push(a);
        self.order.len() - 1
    }

    /// The diagram's text for `line` (with its newline).
    pub fn body_line(&mut self, line: &Line) -> String {
        let (from, to) = ends(line);
        let (f, t) = (self.id(from), to.map(|t| self.id(t)));
        let label = match line {
            Line::Message(e) => {
                let mut label = format!("{}{} t={}s", e.kind, detail(e), secs(e.t_us));
                if let Some(n) = e.negotiation {
                    label += &format!(" neg {n}");
                }
                label
            }
            Line::Lease(l) => l.text(),
        };
        let label = diagram_text(&label);
        match t {
            Some(t) => format!("    P{f}->>P{t}: {label}\n"),
            None => format!("    Note over P{f}: {label}\n"),
        }
    }

    /// What comes before the body: the diagram's type and its participants.
    pub fn head(&self) -> String {
        let mut out = String::from("sequenceDiagram\n");
        for (i, a) in self.order.iter().enumerate() {
            out += &format!("    participant P{i} as {}\n", diagram_text(a));
        }
        out
    }
}

/// Text as a Mermaid statement may hold it: `;` and `#` (which end a statement and begin an
/// entity) and any control or invisible character (a newline would begin a statement of its
/// own) become spaces. The trace reader refuses such characters already; this holds for
/// lines made any other way too.
pub(super) fn diagram_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c == ';' || c == '#' || crate::input::diag::acts_invisibly(c) {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// A Mermaid `sequenceDiagram` of the lines (see [`Mermaid`]).
pub fn mermaid(lines: &[Line], vm_lanes: bool) -> String {
    let mut m = Mermaid::new(vm_lanes);
    let body: String = lines.iter().map(|l| m.body_line(l)).collect();
    m.head() + &body
}

/// The lines in Chrome trace-event JSON, in memory (see [`crate::trace::chrome::Chrome`]).
pub fn chrome(lines: &[Line]) -> serde_json::Value {
    let mut c = crate::trace::chrome::Chrome::new(Vec::new());
    let written = lines
        .iter()
        .try_for_each(|l| c.push(l))
        .and_then(|_| c.finish());
    written
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}
