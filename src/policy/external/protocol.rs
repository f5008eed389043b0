//! The decision protocol's messages, version [`VERSION`] (documented with its JSON schema in
//! `docs/policies.md`): one JSON object per line. igemu opens with a `hello` naming the
//! decision points it will ask; the process answers with a `hello` naming those it serves.
//! Then each question `{"type":"question","id":N,"now":µs,"point":P,"at":WHERE,"question":Q}`
//! gets one answer `{"type":"answer","id":N,"answer":A}` (or `{"id":N,"error":TEXT}` when the
//! process cannot decide); at the end igemu sends `{"type":"end"}`.
//!
//! Times are emulated microseconds (integers); requests are named by their labels; clusters
//! and Grids by their names. This module turns the decision points' questions into JSON and
//! the answers back, checking their shape (what they mean is checked by `policy::checks`).

use serde_json::{json, Map, Value};

use crate::igg::dispatch::DispatchAsk;
use crate::igg::negotiation::{OfferAsk, OfferPlan, PlanAsk};
use crate::igg::peering::Answer;
use crate::lrms::admission::{AdmissionAsk, Verdict};
use crate::lrms::contention::Contention;
use crate::lrms::policy::Choice;
use crate::lrms::preemption::Ask;
use crate::lrms::Refusal;
use crate::model::{GridId, LeaseRequest};
use crate::time::EmuTime;

/// The protocol's version: a process must answer the handshake with the same.
pub const VERSION: u64 = 1;

/// How requests, Grids and clusters are named in questions and answers.
#[derive(Clone, Debug, Default)]
pub struct Names {
    /// Each request's label, by id.
    pub requests: std::rc::Rc<[String]>,
    /// Each Grid's name, by id.
    pub grids: std::rc::Rc<[String]>,
}

impl Names {
    fn grid(&self, g: GridId) -> &str {
        self.grids.get(usize::from(g.0)).map_or("?", String::as_str)
    }

    fn request(&self, id: crate::model::RequestId) -> &str {
        self.requests.get(id.0 as usize).map_or("?", String::as_str)
    }

    /// A request as questions show it.
    pub fn lease(&self, r: &LeaseRequest) -> Value {
        let us = |t: EmuTime| t.as_micros();
        json!({
            "id": self.request(r.id),
            "origin": r.origin.as_str(),
            "grid": self.grid(r.grid),
            "arrival": us(r.arrival),
            "start": r.start.map(us),
            "vms": r.vms,
            "cores_per_vm": r.cores_per_vm,
            "mem_mb": r.mem_mb,
            "duration": r.duration.as_micros(),
            "type": r.lease_type.as_str(),
            "deadline": r.deadline.map(us),
        })
    }

    /// A Grid by name, if there is one.
    pub fn grid_id(&self, name: &str) -> Option<GridId> {
        self.grids
            .iter()
            .position(|g| g == name)
            .map(|i| GridId(i as u16))
    }

    /// Grid `g`'s name.
    pub fn grid_name(&self, g: GridId) -> String {
        self.grid(g).to_string()
    }
}

/// A preemption question: the local request, what must fit, each candidate with what
/// preempting it would do, cost and free alone; with `hosts`, every host something holds
/// during the window (to work out the room of any set).
pub fn preemption_question(c: &Contention, ask: &Ask<'_>, names: &Names, hosts: bool) -> Value {
    let additive = c.additive();
    let candidates: Vec<Value> = c
        .candidates
        .iter()
        .enumerate()
        .map(|(i, x)| {
            json!({
                "lease": names.request(x.lease),
                "type": x.lease_type.as_str(),
                "vms": x.vms,
                "mem_mb": x.mem_mb,
                "operation": x.op.as_str(),
                "preempted_vms": x.preempted_vms,
                "cost": x.cost.as_micros(),
                "reschedules": x.op.reschedules(),
                "waiting": x.waiting.as_micros(),
                "arrival": x.arrival.as_micros(),
                "frees": c.frees_alone(i),
            })
        })
        .collect();
    let mut q = json!({
        "local": names.lease(ask.local),
        "need": c.need,
        "vm": {"cores": c.shape.cores, "mem_mb": c.shape.mem_mb},
        "window": [c.window.0.as_micros(), c.window.1.as_micros()],
        "reschedule": c.reschedule.as_micros(),
        "additive": additive.is_some(),
        "room": additive.map_or(Value::Null, |a| json!(a.base)),
        "candidates": candidates,
    });
    if hosts {
        let (views, idle) = c.host_views();
        let hold = |h: &crate::lrms::contention::Hold| {
            json!([h.start.as_micros(), h.end.as_micros(), h.cores, h.mem_mb])
        };
        let views: Vec<Value> = views
            .iter()
            .map(|v| {
                json!({
                    "host": v.host,
                    "cores": v.cores,
                    "mem_mb": v.mem_mb,
                    "fixed": v.fixed.iter().map(hold).collect::<Vec<_>>(),
                    "held": v.held.iter().map(|(i, h)| {
                        let mut a = hold(h);
                        if let Value::Array(items) = &mut a {
                            items.insert(0, json!(i));
                        }
                        a
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        q["hosts"] = json!(views);
        q["idle_room"] = json!(idle);
    }
    q
}

/// A preemption answer: `{"preempt": [lease, ...]}` (labels of candidates), or
/// `{"preempt": null}` to preempt nothing; `"exact": false` if the set is not provably the
/// policy's optimum.
pub fn preemption_answer(
    answer: &Value,
    c: &Contention,
    names: &Names,
) -> Result<Option<Choice>, String> {
    let obj = object(answer)?;
    let exact = match obj.get("exact") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "`exact` must be true or false, not {}",
                shown(other)
            ))
        }
    };
    let set = match obj.get("preempt") {
        Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(format!(
                "`preempt` must be a list of leases or null, not {}",
                shown(other)
            ))
        }
        None => return Err("the answer has no `preempt` (a list of leases, or null)".into()),
    };
    let mut indices = Vec::with_capacity(set.len());
    for item in set {
        let Some(label) = item.as_str() else {
            return Err(format!(
                "`preempt` lists {}: leases are named by their id strings",
                shown(item)
            ));
        };
        let Some(i) = c
            .candidates
            .iter()
            .position(|x| names.request(x.lease) == label)
        else {
            return Err(format!(
                "`preempt` names lease `{}`, which is not a candidate",
                excerpt(label)
            ));
        };
        indices.push(i);
    }
    Ok(Some(Choice {
        set: indices,
        exact,
    }))
}

/// How a preemption answer is shown (in traces).
pub fn preemption_shown(choice: &Option<Choice>, c: &Contention, names: &Names) -> Value {
    match choice {
        None => json!({"preempt": null}),
        Some(ch) => json!({
            "preempt": ch.set.iter().map(|&i| names.request(c.candidates[i].lease)).collect::<Vec<_>>()
        }),
    }
}

/// A dispatch question: the request and the Grid's clusters, each with its model, load and
/// earliest start where known.
pub fn dispatch_question(
    ask: &DispatchAsk<'_>,
    setup: &crate::igg::DispatchSetup,
    names: &Names,
) -> Value {
    let clusters: Vec<Value> = (0..ask.clusters)
        .map(|j| {
            let m = setup.models.get(j);
            json!({
                "name": setup.clusters.get(j).map_or("?", String::as_str),
                "cores": ask.loads.cores.get(j),
                "busy": ask.loads.busy.get(j),
                "earliest_start": ask.starts.get(j).copied().flatten(),
                "speed": m.map(|m| m.speed),
                "local_rate": m.map(|m| m.local_rate),
                "tau": m.map(|m| m.tau),
                "mu": m.map(|m| m.mu),
                "theta": m.map(|m| m.theta),
                "omega": m.map(|m| m.omega),
            })
        })
        .collect();
    json!({
        "grid": setup.grid,
        "request": names.lease(ask.request),
        "rate": setup.rate,
        "clusters": clusters,
    })
}

/// A dispatch answer: `{"order": [cluster name, ...]}`.
pub fn dispatch_answer(
    answer: &Value,
    setup: &crate::igg::DispatchSetup,
) -> Result<Vec<usize>, String> {
    let obj = object(answer)?;
    let Some(Value::Array(items)) = obj.get("order") else {
        return Err("the answer has no `order` (a list of cluster names)".into());
    };
    items
        .iter()
        .map(|item| {
            let name = item.as_str().ok_or_else(|| {
                format!(
                    "`order` lists {}: clusters are named by their names",
                    shown(item)
                )
            })?;
            setup
                .clusters
                .iter()
                .position(|c| c == name)
                .ok_or_else(|| {
                    format!(
                        "`order` names cluster `{}`, which is not one of grid `{}`'s ({})",
                        excerpt(name),
                        setup.grid,
                        setup.clusters.join(", ")
                    )
                })
        })
        .collect()
}

/// How a dispatch answer is shown.
pub fn dispatch_shown(order: &[usize], setup: &crate::igg::DispatchSetup) -> Value {
    json!({"order": order.iter().map(|&j| setup.clusters.get(j).map_or("?", String::as_str)).collect::<Vec<_>>()})
}

/// An admission question: the request as the cluster would run it, its queue and what its
/// monitor measured.
pub fn admission_question(ask: &AdmissionAsk<'_>, cluster: &str, names: &Names) -> Value {
    let (waiting, held) = ask.queue.external();
    let (offered, locals, admitted) = ask.monitor.counts();
    let measured = ask.monitor.measured(ask.now).map_or(Value::Null, |m| {
        json!({
            "external_rate": m.external_rate,
            "external_service": m.external_service,
            "external_run": m.external_run,
            "external_work": m.external_work,
            "local_rate": m.local_rate,
            "local_service": m.local_service,
            "local_cv": m.local_cv,
        })
    });
    json!({
        "cluster": cluster,
        "request": names.lease(ask.request),
        "service": ask.service.as_micros(),
        "waiting": waiting,
        "held": held,
        "offered": offered,
        "locals": locals,
        "admitted": admitted,
        "measured": measured,
    })
}

/// Refusal reasons an admission policy may give, as outputs name them.
const REFUSALS: [(Refusal, &str); 3] = [
    (Refusal::QueueFull, "queue-limit"),
    (Refusal::Deadline, "deadline"),
    (Refusal::TooLarge, "too-large"),
];

/// An admission answer: `{"admit": true}`, `{"admit": false, "reason": R}` (R one of
/// `queue-limit` — the default —, `deadline`, `too-large`), or `{"limit": K}`.
pub fn admission_answer(answer: &Value) -> Result<Verdict, String> {
    let obj = object(answer)?;
    if let Some(k) = obj.get("limit") {
        return k
            .as_u64()
            .map(|k| Verdict::Limit(usize::try_from(k).unwrap_or(usize::MAX)))
            .ok_or_else(|| {
                format!(
                    "`limit` must be a whole number of at least 0, not {}",
                    shown(k)
                )
            });
    }
    match obj.get("admit") {
        Some(Value::Bool(true)) => Ok(Verdict::Admit),
        Some(Value::Bool(false)) => match obj.get("reason") {
            None => Ok(Verdict::Refuse(Refusal::QueueFull)),
            Some(r) => REFUSALS
                .iter()
                .find(|(_, name)| r.as_str() == Some(name))
                .map(|(why, _)| Verdict::Refuse(*why))
                .ok_or_else(|| {
                    format!(
                        "`reason` {} is not one of: {}",
                        shown(r),
                        REFUSALS.map(|(_, n)| n).join(", ")
                    )
                }),
        },
        Some(other) => Err(format!(
            "`admit` must be true or false, not {}",
            shown(other)
        )),
        None => Err("the answer has neither `admit` (true or false) nor `limit`".into()),
    }
}

/// How an admission answer is shown.
pub fn admission_shown(v: &Verdict) -> Value {
    match v {
        Verdict::Admit => json!({"admit": true}),
        Verdict::Limit(k) => json!({"limit": k}),
        Verdict::Refuse(why) => json!({
            "admit": false,
            "reason": REFUSALS.iter().find(|(r, _)| r == why).map_or("queue-limit", |(_, n)| n),
        }),
    }
}

/// A provider's question: one offered request, the offer's terms and the provider's
/// standing over the request's window.
pub fn answer_question(ask: &OfferAsk<'_>, grid: &str, names: &Names) -> Value {
    json!({
        "grid": grid,
        "from": names.grid(ask.from),
        "negotiation": ask.negotiation,
        "request": names.lease(ask.request),
        "units": ask.units,
        "price": ask.price,
        "max": ask.max,
        "load": ask.load,
        "capacity": ask.capacity,
        "held": ask.held,
        "cost": finite(ask.cost),
        "unit_cost": ask.unit_cost,
    })
}

/// A provider's answer: `{"verdict": "accept"}`, `{"verdict": "counter", "price": P}` or
/// `{"verdict": "reject"}`.
pub fn answer_answer(answer: &Value, ask: &OfferAsk<'_>) -> Result<Answer, String> {
    let obj = object(answer)?;
    match obj.get("verdict").and_then(Value::as_str) {
        Some("accept") => Ok(Answer::Accept { price: ask.price }),
        Some("reject") => Ok(Answer::Reject),
        Some("counter") => obj
            .get("price")
            .and_then(Value::as_f64)
            .map(|price| Answer::Counter { price })
            .ok_or_else(|| "a counter-offer needs a `price` (a number)".into()),
        _ => Err(format!(
            "`verdict` must be \"accept\", \"counter\" or \"reject\", not {}",
            shown(obj.get("verdict").unwrap_or(&Value::Null))
        )),
    }
}

/// How a provider's answer is shown.
pub fn answer_shown(a: &Answer) -> Value {
    match a {
        Answer::Accept { price } => json!({"verdict": "accept", "price": price}),
        Answer::Counter { price } => json!({"verdict": "counter", "price": price}),
        Answer::Reject => json!({"verdict": "reject"}),
    }
}

/// A requester's question: one request it is overloaded for, its home cost and the
/// contracts (`home_cost` null when no cluster of the Grid would take the request).
pub fn offer_question(ask: &PlanAsk<'_>, grid: &str, names: &Names) -> Value {
    let contracts: Vec<Value> = ask
        .contracts
        .iter()
        .map(|c| json!({"peer": names.grid(c.peer), "min": c.min, "max": c.max, "tried": c.tried}))
        .collect();
    json!({
        "grid": grid,
        "request": names.lease(ask.request),
        "units": ask.units,
        "home_cost": finite(ask.home_cost),
        "contracts": contracts,
    })
}

/// A requester's answer: `{"offers": [{"peer": G, "price": P, "limit": L}, ...]}`, the
/// peers in the order to try them; `limit`, the highest unit price of a counter-offer to
/// take, is the contract's maximum when left out.
pub fn offer_answer(
    answer: &Value,
    ask: &PlanAsk<'_>,
    names: &Names,
) -> Result<Vec<OfferPlan>, String> {
    let obj = object(answer)?;
    let Some(Value::Array(items)) = obj.get("offers") else {
        return Err(
            "the answer has no `offers` (a list, empty to serve the request at home)".into(),
        );
    };
    items
        .iter()
        .map(|item| {
            let o = object(item)?;
            let peer = o
                .get("peer")
                .and_then(Value::as_str)
                .ok_or("each offer needs a `peer` (a grid name)")?;
            let peer = names
                .grid_id(peer)
                .ok_or_else(|| format!("`peer` `{}` is not a grid", excerpt(peer)))?;
            let price = o
                .get("price")
                .and_then(Value::as_f64)
                .ok_or("each offer needs a `price` (a number)")?;
            let max = ask
                .contracts
                .iter()
                .find(|c| c.peer == peer)
                .map_or(f64::INFINITY, |c| c.max);
            let limit = match o.get("limit") {
                None => max,
                Some(l) => l
                    .as_f64()
                    .ok_or_else(|| format!("`limit` must be a number, not {}", shown(l)))?,
            };
            Ok(OfferPlan { peer, price, limit })
        })
        .collect()
}

/// How a requester's plan is shown.
pub fn offer_shown(plan: &[OfferPlan], names: &Names) -> Value {
    json!({"offers": plan.iter().map(|p| json!({"peer": names.grid(p.peer), "price": p.price, "limit": finite(p.limit)})).collect::<Vec<_>>()})
}

/// A number JSON can carry: infinities and NaN as null.
fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

fn object(v: &Value) -> Result<&Map<String, Value>, String> {
    v.as_object().ok_or_else(|| {
        format!(
            "the answer must be a JSON object, not {}",
            excerpt(&v.to_string())
        )
    })
}

/// A JSON value as error messages show it: [`excerpt`] of its text.
fn shown(v: &Value) -> String {
    excerpt(&v.to_string())
}

/// At most 80 characters of `text`, control characters escaped: safe to print.
pub fn excerpt(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == 80 {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
