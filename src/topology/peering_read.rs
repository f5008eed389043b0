//! Reading `[peering]`, `[faults]` (link faults and partitions) and `[[contract]]`: the
//! settings of negotiation between Grids and of the links they talk over.

use super::*;

pub(super) fn read_peering(t: Option<Table<'_>>) -> Peering {
    let mut p = Peering::default();
    let Some(t) = t else { return p };
    if let Some((m, _)) = t.named::<ContractsMode>("contracts") {
        p.contracts = m;
    }
    if let Some((v, _)) = t.number_in("load_threshold", 0.0, 1.0) {
        p.load_threshold = v;
    }
    if let Some((m, _)) = t.named::<PublicationMode>("publication") {
        p.publication = m;
    }
    for (k, f) in [
        ("interval", &mut p.interval),
        ("price_update", &mut p.price_update),
    ] {
        if let Some(((lo, hi), loc)) = t.duration_range(k) {
            if lo == EmuDuration::ZERO {
                t.diags
                    .error(loc, format!("`{k}` in [peering] must be positive"), None);
            } else {
                *f = (lo, hi);
            }
        }
    }
    for (k, f) in [
        ("publish_interval", &mut p.publish_interval),
        ("horizon", &mut p.horizon),
        ("offer_timeout", &mut p.offer_timeout),
        ("ticket_ttl", &mut p.ticket_ttl),
    ] {
        if let Some((d, loc)) = t.duration(k) {
            if d == EmuDuration::ZERO {
                t.diags
                    .error(loc, format!("`{k}` in [peering] must be positive"), None);
            } else {
                *f = d;
            }
        }
    }
    if let Some((v, _)) = t.uint("retries", 100) {
        p.retries = v as u32;
    }
    if let Some((v, _)) = t.positive_number("steepness", MAX_STEEPNESS) {
        p.steepness = v;
    }
    if let Some(range) = read_unit_cost(&t) {
        p.unit_cost = range;
    }
    if p.ticket_ttl <= p.offer_timeout {
        t.diags.error(
            &t.node.loc,
            "[peering] needs ticket_ttl longer than offer_timeout",
            Some("a ticket must outlive the wait for its answer".into()),
        );
    }
    t.finish();
    p
}

/// `unit_cost` of `[peering]`, if set and valid: [low, high] with 0 < low ≤ high ≤
/// [`MAX_PRICE`].
pub(super) fn read_unit_cost(t: &Table<'_>) -> Option<(f64, f64)> {
    let n = t.get("unit_cost")?;
    match &n.kind {
        node::NodeKind::Array(a) if a.len() == 2 => {
            let num = |x: &Node| match x.kind {
                node::NodeKind::Int(i) => Some(i as f64),
                node::NodeKind::Float(f) => Some(f),
                _ => None,
            };
            // NaN fails every comparison, so it is refused with the rest.
            match (num(&a[0]), num(&a[1])) {
                (Some(lo), Some(hi)) if lo > 0.0 && lo <= hi && hi <= MAX_PRICE => {
                    return Some((lo, hi))
                }
                _ => t.diags.error(
                    &n.loc,
                    format!(
                        "`unit_cost` = {} in [peering] is out of range",
                        n.toml_text().unwrap_or_default()
                    ),
                    Some(format!(
                        "write [low, high] with 0 < low ≤ high ≤ {MAX_PRICE:e}, e.g. [0.9, 1.0]"
                    )),
                ),
            }
        }
        _ => t.diags.error(
            &n.loc,
            "`unit_cost` must be [low, high]",
            Some("e.g. unit_cost = [0.9, 1.0]".into()),
        ),
    }
    None
}

pub(super) fn read_link_faults(t: &Table<'_>, into: &mut crate::fault::LinkFaults) {
    use crate::fault::Delay;
    if let Some(n) = t.get("delay") {
        match &n.kind {
            node::NodeKind::Table(_) => {
                if let Some(d) = Table::of(n, format!("`delay` in {}", t.what), t.diags) {
                    let kind = d
                        .named::<DelayKind>("kind")
                        .map_or(DelayKind::Fixed, |(k, _)| k);
                    let get = |k: &str| d.duration(k).map(|(v, _)| v);
                    into.delay = match kind {
                        DelayKind::Uniform => {
                            let (lo, hi) = (
                                get("min").unwrap_or_default(),
                                get("max").unwrap_or_default(),
                            );
                            if lo > hi {
                                d.diags.error(
                                    &n.loc,
                                    format!(
                                        "a uniform `delay` in {} has min {lo} above max {hi}",
                                        t.what
                                    ),
                                    Some("write min ≤ max".into()),
                                );
                            }
                            Delay::Uniform(lo, hi)
                        }
                        DelayKind::Exponential => {
                            Delay::Exponential(get("mean").unwrap_or_default())
                        }
                        DelayKind::Fixed => Delay::Fixed(get("value").unwrap_or_default()),
                    };
                    for other in ["value", "min", "max", "mean"] {
                        if let Some(n) = d.get(other).filter(|_| !kind.takes(other)) {
                            d.diags.error(
                                &n.loc,
                                format!("`{other}` does not apply to a {} delay", kind.as_str()),
                                Some("fixed takes `value`, uniform `min` and `max`, exponential `mean`".into()),
                            );
                        }
                    }
                    d.finish();
                }
            }
            _ => {
                if let Some((v, _)) = t.duration("delay") {
                    into.delay = Delay::Fixed(v);
                }
            }
        }
    }
    for (k, f) in [
        ("drop", &mut into.drop),
        ("duplicate", &mut into.duplicate),
        ("reorder", &mut into.reorder),
    ] {
        if let Some((v, _)) = t.number_in(k, 0.0, 1.0) {
            *f = v;
        }
    }
    if let Some((v, _)) = t.duration("reorder_window") {
        into.reorder_window = v;
    }
}

pub(super) fn read_faults(
    t: Option<Table<'_>>,
    names: &GridNames<'_>,
) -> crate::fault::FaultConfig {
    use crate::fault::{Crash, FaultConfig, LinkFaults};
    let diags = names.diags;
    let mut cfg = FaultConfig::default();
    let Some(t) = t else { return cfg };
    let grid = |s: &str, loc: &Loc| names.find(s, loc, "[fault]");
    read_link_faults(&t, &mut cfg.global);
    if cfg.global.reorder > 0.0 && cfg.global.reorder_window == EmuDuration::ZERO {
        cfg.global.reorder_window = EmuDuration::from_secs(1);
    }
    for (i, n) in t.tables("link").into_iter().enumerate() {
        let Some(l) = Table::of(n, format!("fault link #{}", i + 1), diags) else {
            continue;
        };
        let from = l
            .req_str("from", "the sending grid")
            .and_then(|(s, loc)| grid(s, loc));
        let to = l
            .req_str("to", "the receiving grid")
            .and_then(|(s, loc)| grid(s, loc));
        let mut lf = LinkFaults {
            reorder_window: cfg.global.reorder_window,
            ..LinkFaults::default()
        };
        read_link_faults(&l, &mut lf);
        l.finish();
        if let (Some(f), Some(t)) = (from, to) {
            cfg.links.push((f, t, lf));
        }
    }
    for (i, n) in t.tables("partition").into_iter().enumerate() {
        cfg.partitions.extend(read_partition(n, i, names));
    }
    for (i, n) in t.tables("crash").into_iter().enumerate() {
        let Some(c) = Table::of(n, format!("crash #{}", i + 1), diags) else {
            continue;
        };
        let g = c
            .req_str("grid", "the grid whose IGG crashes")
            .and_then(|(s, loc)| grid(s, loc));
        let at = c.duration("at").map(|(d, _)| EmuTime::ZERO + d);
        let down_for = c.duration("down_for").map(|(d, _)| d);
        c.finish();
        if let (Some(grid), Some(at), Some(down_for)) = (g, at, down_for) {
            cfg.crashes.push(Crash { grid, at, down_for });
        }
    }
    t.finish();
    cfg
}

/// A `[[fault.partition]]`: two grids cut apart from `from` until `until`.
pub(super) fn read_partition(
    n: &Node,
    i: usize,
    names: &GridNames<'_>,
) -> Option<crate::fault::Partition> {
    let diags = names.diags;
    let p = Table::of(n, format!("partition #{}", i + 1), diags)?;
    let between: Option<Vec<GridId>> = p.get("between").and_then(|b| match &b.kind {
        node::NodeKind::Array(a) if a.len() == 2 => a
            .iter()
            .map(|x| match &x.kind {
                node::NodeKind::Str(s) => names.find(s, &x.loc, "[fault]"),
                _ => None,
            })
            .collect(),
        _ => {
            diags.error(
                &b.loc,
                "`between` must name two grids",
                Some("between = [\"a\", \"b\"]".into()),
            );
            None
        }
    });
    if p.get("between").is_none() {
        p.missing("between", "between = [\"a\", \"b\"]");
    }
    let from = p.duration("from").map(|(d, _)| EmuTime::ZERO + d);
    let until = p.duration("until").map(|(d, _)| EmuTime::ZERO + d);
    if let (Some(f), Some(u), Some(n)) = (from, until, p.get("until")) {
        if u < f {
            diags.error(
                &n.loc,
                format!("partition #{} ends ({u}) before it begins ({f})", i + 1),
                Some("write until ≥ from".into()),
            );
        }
    }
    p.finish();
    let b = between?;
    Some(crate::fault::Partition {
        a: b[0],
        b: b[1],
        from: from?,
        until: until?,
    })
}

/// The `[[contract]]`s between grids.
pub(super) fn read_contracts(top: &Table<'_>, grids: &GridNames<'_>) -> Vec<Contract> {
    let diags = grids.diags;
    let mut contracts = Vec::new();
    for (i, cnode) in top.tables("contract").into_iter().enumerate() {
        let Some(c) = Table::of(cnode, format!("contract #{}", i + 1), diags) else {
            continue;
        };
        let from = c
            .req_str("from", "the grid that redirects requests")
            .and_then(|(s, l)| grids.find(s, l, "contract"));
        let to = c
            .req_str("to", "the grid that serves them")
            .and_then(|(s, l)| grids.find(s, l, "contract"));
        if let (Some(f), Some(t)) = (from, to) {
            if f == t {
                if let Some((_, loc)) = c.str("to") {
                    diags.error(loc, "a contract must join two different grids", None);
                }
            }
        }
        if c.get("kind").is_none() {
            c.missing("kind", "kind = \"fixed-price\" or \"price-range\"");
        }
        let kind = c.named::<ContractKind>("kind").map(|(k, _)| k);
        let both_ways = c.bool("both_ways").is_none_or(|(b, _)| b);
        let price_max = c.positive_number("price_max", MAX_PRICE).map(|(v, _)| v);
        let load_threshold = c
            .number_in("load_threshold", 0.0, 1.0)
            .map_or(0.95, |(v, _)| v);
        let k = c.number_in("k", 0.0, 1.0).map_or(0.05, |(v, _)| v);
        c.finish();
        if let (Some(from), Some(to), Some(kind)) = (from, to, kind) {
            contracts.push(Contract {
                from,
                to,
                both_ways,
                kind,
                price_max,
                load_threshold,
                k,
            });
        }
    }
    contracts
}
