//! A whole gateway played by an external process (`igg.implementation = "external:CMD"`):
//! the largest decision point. Each input `igg::Gateway::on` would take — a request, a
//! publication, a timer, a peer's message, a lease's start or end — is sent as a question of
//! point `gateway`; the answer is the list of effects to carry out — peer messages, timers,
//! placements, notes to the DVE manager, observations — exactly what `Gateway::on` returns in
//! code. The process is then the system under test inside an emulated federation: the other
//! Grids, the clusters, the faults and the invariant checks are igemu's.
//!
//! The JSON of every input and effect is in `docs/policies.md`. Requests travel whole in
//! inputs and by id in effects (igemu knows them); a relocation travels by its lease's id
//! (igemu keeps it until the gateway says where to offer it).

use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use serde_json::{json, Value};

use super::protocol::{excerpt, Names};
use super::Process;
use crate::igg::gateway::{DveNote, Effect, Input, Observation, Timer};
use crate::igg::{Answer, PeerMsg};
use crate::lrms::Relocation;
use crate::model::{ClusterId, GridId, LeaseRequest, RejectReason, RequestId, RequestState};
use crate::policy::run::{Note, PolicyFailure, Site, Witness};
use crate::policy::Point;
use crate::time::EmuTime;
use crate::trace::ActorId;

/// A Grid's gateway played by an external process.
pub struct ExternalGateway {
    grid: GridId,
    process: Rc<Process>,
    site: Site,
    by: ActorId,
    witness: Weak<dyn Witness>,
    names: Names,
    /// The Grid's clusters: id and name.
    clusters: Vec<(ClusterId, String)>,
    /// Every request of the run, by id.
    requests: Rc<[LeaseRequest]>,
    /// Relocations asked for and not yet carried out, by lease.
    relocations: BTreeMap<RequestId, Relocation>,
    /// The requests its inputs gave it (its users', its peers' redirected ones): the only
    /// ones it may place or offer.
    given: std::collections::BTreeSet<RequestId>,
    /// `peering.offer_timeout`, told in every question (what igemu's gateway waits for an
    /// answer, an acknowledgement or a report's acknowledgement).
    offer_timeout: crate::time::EmuDuration,
}

/// What an external gateway is built from.
pub struct GatewaySetup {
    /// Its Grid.
    pub grid: GridId,
    /// The Grid's clusters: id and name.
    pub clusters: Vec<(ClusterId, String)>,
    /// Every request of the run, by id.
    pub requests: Rc<[LeaseRequest]>,
    /// How requests and Grids are named.
    pub names: Names,
    /// `peering.offer_timeout`.
    pub offer_timeout: crate::time::EmuDuration,
}

impl ExternalGateway {
    /// The gateway of `setup.grid`, played by `process`, deciding in actor `by`.
    pub(crate) fn new(
        setup: GatewaySetup,
        process: Rc<Process>,
        (site, by): (Site, ActorId),
        witness: Weak<dyn Witness>,
    ) -> ExternalGateway {
        ExternalGateway {
            grid: setup.grid,
            process,
            site,
            by,
            witness,
            names: setup.names,
            clusters: setup.clusters,
            requests: setup.requests,
            relocations: BTreeMap::new(),
            given: std::collections::BTreeSet::new(),
            offer_timeout: setup.offer_timeout,
        }
    }

    /// Its Grid.
    pub fn grid(&self) -> GridId {
        self.grid
    }

    /// The process's effects for `input` at `now`; none (and the run stops, naming the
    /// process) if it fails or answers what cannot be carried out.
    pub fn on(&mut self, input: Input, now: EmuTime) -> Vec<Effect> {
        let Some(w) = self.witness.upgrade() else {
            return Vec::new();
        };
        if w.plugins().failed() {
            return Vec::new();
        }
        self.note_given(&input);
        let question = json!({
            "grid": self.names.grid_name(self.grid),
            "clusters": self.clusters.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(),
            "offer_timeout": self.offer_timeout.as_micros(),
            "input": self.input(&input),
        });
        let asked = self.process.ask(
            Point::Gateway,
            &self.site.at,
            now.as_micros(),
            question.clone(),
        );
        let effects = asked.and_then(|a| {
            self.effects(&a).map_err(|e| {
                format!(
                    "the external gateway `{}` answered wrongly: {e}",
                    self.process.command()
                )
            })
        });
        w.plugins().count(&self.site, false);
        match effects {
            Ok((effects, shown)) => {
                if w.tracing() {
                    let note = Note {
                        point: Point::Gateway.as_str(),
                        policy: self.site.policy.clone(),
                        request: None,
                        question: question["input"].clone(),
                        answer: shown,
                        fallback: None,
                    };
                    w.note(self.by, &note);
                }
                effects
            }
            Err(what) => {
                w.plugins().fail(PolicyFailure {
                    site: self.site.clone(),
                    at: now,
                    decision: format!("its {} input", input_kind(&input)),
                    what,
                });
                Vec::new()
            }
        }
    }

    /// Keeps what `input` gives the gateway: a relocation to carry out later, a request it
    /// may place (its users', one redirected to it).
    fn note_given(&mut self, input: &Input) {
        match input {
            Input::Relocate { relocation, .. } => {
                self.relocations
                    .insert(relocation.req.id, relocation.clone());
            }
            Input::Submit(req)
            | Input::Peer {
                msg: PeerMsg::Redirect { req, .. },
                ..
            } => {
                self.given.insert(req.id);
            }
            _ => {}
        }
    }

    fn cluster_name(&self, c: ClusterId) -> &str {
        self.clusters
            .iter()
            .find(|(id, _)| *id == c)
            .map_or("?", |(_, n)| n)
    }

    fn request_label(&self, id: RequestId) -> String {
        self.names
            .requests
            .get(id.0 as usize)
            .cloned()
            .unwrap_or_default()
    }

    /// An input as the protocol writes it.
    fn input(&self, input: &Input) -> Value {
        let grid = |g: GridId| self.names.grid_name(g);
        let label = |id: RequestId| self.request_label(id);
        match input {
            Input::Peers { peers, providers } => json!({
                "kind": "peers",
                "peers": peers.iter().map(|g| grid(*g)).collect::<Vec<_>>(),
                "providers": providers.iter().map(|(g, m)| (grid(*g), json!({"unit_cost": m.unit_cost, "steepness": m.steepness}))).collect::<BTreeMap<_, _>>(),
            }),
            Input::Submit(req) => json!({"kind": "submit", "request": self.names.lease(req)}),
            Input::FreeSlots { cluster, slots } => json!({
                "kind": "free_slots",
                "cluster": self.cluster_name(*cluster),
                "free": slots.free.iter().map(|(t, c)| json!([t.as_micros(), c])).collect::<Vec<_>>(),
                "until": slots.until.as_micros(),
                "cores": slots.cores,
                "price": slots.price,
            }),
            Input::Tick => json!({"kind": "tick"}),
            Input::Refreshed => json!({"kind": "refreshed"}),
            Input::Peer { from, msg } => {
                json!({"kind": "peer", "from": grid(*from), "message": self.peer(msg)})
            }
            Input::OfferTimeout(n) => json!({"kind": "offer_timeout", "negotiation": n}),
            Input::RedirectTimeout(l) => json!({"kind": "redirect_timeout", "lease": label(*l)}),
            Input::ReportTimeout(l) => json!({"kind": "report_timeout", "lease": label(*l)}),
            Input::LeaseStarted {
                lease,
                cluster,
                cores,
            } => json!({
                "kind": "lease_started", "lease": label(*lease), "cluster": self.cluster_name(*cluster), "cores": cores,
            }),
            Input::LeaseEnded { lease, state } => {
                json!({"kind": "lease_ended", "lease": label(*lease), "state": state.as_str()})
            }
            Input::Probed { req, offers } => json!({
                "kind": "probed", "request": self.names.lease(req), "starts": offers,
            }),
            Input::Unplaced { req, refusal } => json!({
                "kind": "unplaced",
                "request": self.names.lease(req),
                "refusal": refusal.map(|r| r.reason().as_str()),
            }),
            Input::Relocate { relocation, from } => json!({
                "kind": "relocate", "lease": label(relocation.req.id), "from": self.cluster_name(*from),
            }),
            Input::Relocated { lease, to } => json!({
                "kind": "relocated", "lease": label(*lease), "to": to.map(|c| self.cluster_name(c).to_string()),
            }),
            Input::Crash(true) => json!({"kind": "crash"}),
            Input::Crash(false) => json!({"kind": "restart"}),
        }
    }

    /// A peer message as the protocol writes it.
    fn peer(&self, msg: &PeerMsg) -> Value {
        let label = |id: RequestId| self.request_label(id);
        match msg {
            PeerMsg::Offer {
                negotiation,
                items,
                price,
                max,
            } => json!({
                "kind": "offer", "negotiation": negotiation, "price": price, "max": max,
                "items": items.iter().map(|i| json!({"request": self.names.lease(&i.req), "units": i.units})).collect::<Vec<_>>(),
            }),
            PeerMsg::Answer {
                negotiation,
                answers,
            } => json!({
                "kind": "answer", "negotiation": negotiation,
                "answers": answers.iter().map(|(l, a)| {
                    let mut v = super::protocol::answer_shown(a);
                    v["lease"] = json!(label(*l));
                    v
                }).collect::<Vec<_>>(),
            }),
            PeerMsg::Redirect {
                negotiation,
                req,
                price,
            } => json!({
                "kind": "redirect", "negotiation": negotiation, "request": self.names.lease(req), "price": price,
            }),
            PeerMsg::RedirectAck {
                negotiation,
                lease,
                accepted,
            } => json!({
                "kind": "redirect_ack", "negotiation": negotiation, "lease": label(*lease), "accepted": accepted,
            }),
            PeerMsg::Decline {
                negotiation,
                lease,
                price,
                late,
            } => json!({
                "kind": "decline", "negotiation": negotiation, "lease": label(*lease), "price": price, "late": late,
            }),
            PeerMsg::LeaseReport {
                lease,
                ended,
                attempt,
            } => json!({
                "kind": "lease_report", "lease": label(*lease), "ended": ended.map(RequestState::as_str), "attempt": attempt,
            }),
            PeerMsg::LeaseReportAck { lease } => {
                json!({"kind": "lease_report_ack", "lease": label(*lease)})
            }
            PeerMsg::Price { unit_cost } => json!({"kind": "price", "unit_cost": unit_cost}),
        }
    }

    /// The effects an answer lists (and the answer, to show in traces).
    fn effects(&mut self, answer: &Value) -> Result<(Vec<Effect>, Value), String> {
        let items = answer
            .get("effects")
            .and_then(Value::as_array)
            .ok_or("the answer has no `effects` (a list, empty for none)")?;
        let effects = items
            .iter()
            .enumerate()
            .map(|(i, e)| {
                self.effect(e)
                    .map_err(|why| format!("effect {}: {why}", i + 1))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((effects, answer.clone()))
    }

    fn effect(&mut self, e: &Value) -> Result<Effect, String> {
        let kind = field_str(e, "kind")?;
        Ok(match kind {
            "send" => Effect::Send {
                to: self.grid_of(field_str(e, "to")?)?,
                msg: self.peer_from(field(e, "message")?)?,
            },
            "timer" => Effect::Timer {
                at: EmuTime::from_micros(field_u64(e, "at")?),
                timer: self.timer(field(e, "timer")?)?,
            },
            "cancel" => Effect::Cancel(self.timer(field(e, "timer")?)?),
            "refresh" => Effect::Refresh,
            "probe" => Effect::Probe(self.request(e)?.clone()),
            "place" => {
                let order = (field(e, "order")?.as_array())
                    .ok_or("`order` must be a list of cluster names")?
                    .iter()
                    .map(|c| self.cluster_index(c))
                    .collect::<Result<Vec<_>, _>>()?;
                let tries = match e.get("tries") {
                    None => order.len(),
                    Some(t) => t.as_u64().ok_or("`tries` must be a whole number")? as usize,
                };
                Effect::Place {
                    req: self.request(e)?.clone(),
                    order,
                    tries,
                }
            }
            "relocate" => {
                let lease = self.lease(field(e, "lease")?)?;
                let relocation = self.relocations.remove(&lease).ok_or_else(|| {
                    format!(
                        "no relocation of lease `{}` was asked for",
                        self.request_label(lease)
                    )
                })?;
                let to_try = (field(e, "to_try")?.as_array())
                    .ok_or("`to_try` must be a list of cluster names")?
                    .iter()
                    .map(|c| self.cluster_index(c).map(|j| self.clusters[j].0))
                    .collect::<Result<Vec<_>, _>>()?;
                let source = self.clusters[self.cluster_index(field(e, "source")?)?].0;
                Effect::Relocate {
                    relocation,
                    to_try,
                    source,
                }
            }
            "dve" => Effect::Dve {
                note: self.note(field(e, "note")?)?,
                posted: e.get("posted").and_then(Value::as_bool).unwrap_or(true),
            },
            "observe" => Effect::Observe(self.observation(field(e, "observation")?)?),
            other => return Err(format!("unknown effect kind `{}`", excerpt(other))),
        })
    }

    fn timer(&self, t: &Value) -> Result<Timer, String> {
        Ok(match field_str(t, "kind")? {
            "tick" => Timer::Tick,
            "offer" => Timer::Offer(field_u64(t, "negotiation")?),
            "redirect" => Timer::Redirect(
                field_u64(t, "negotiation")?,
                self.lease(field(t, "lease")?)?,
            ),
            "report" => Timer::Report(self.lease(field(t, "lease")?)?),
            other => return Err(format!("unknown timer kind `{}`", excerpt(other))),
        })
    }

    fn note(&self, n: &Value) -> Result<DveNote, String> {
        if let Some(s) = n.get("started") {
            let lease = self.lease(field(s, "lease")?)?;
            let j = self.cluster_index(field(s, "cluster")?)?;
            return Ok(DveNote::Started(lease, self.clusters[j].0));
        }
        let e = n
            .get("ended")
            .ok_or("a note is {\"started\": ...} or {\"ended\": ...}")?;
        Ok(DveNote::Ended(
            self.lease(field(e, "lease")?)?,
            state(field_str(e, "state")?)?,
        ))
    }

    fn observation(&self, o: &Value) -> Result<Observation, String> {
        if let Some(r) = o.get("rejected") {
            let reason = field_str(r, "reason")?;
            let reason = RejectReason::ALL
                .into_iter()
                .find(|x| x.as_str() == reason)
                .ok_or_else(|| format!("unknown reject reason `{}`", excerpt(reason)))?;
            return Ok(Observation::Rejected(
                self.lease(field(r, "lease")?)?,
                reason,
            ));
        }
        if let Some(n) = o.get("offer_sent").and_then(Value::as_u64) {
            return Ok(Observation::OfferSent(n));
        }
        if let Some(n) = o.get("offer_settled").and_then(Value::as_u64) {
            return Ok(Observation::OfferSettled(n));
        }
        if let Some(r) = o.get("received") {
            return Ok(Observation::Received {
                from: self.grid_of(field_str(r, "from")?)?,
                lease: self.lease(field(r, "lease")?)?,
                negotiation: field_u64(r, "negotiation")?,
                amount: number(r, "amount")?,
            });
        }
        if let Some(p) = o.get("paid") {
            return Ok(Observation::Paid {
                to: self.grid_of(field_str(p, "to")?)?,
                units: number(p, "units")?,
                amount: number(p, "amount")?,
            });
        }
        Err("an observation is one of rejected, offer_sent, offer_settled, received, paid".into())
    }

    fn peer_from(&self, m: &Value) -> Result<PeerMsg, String> {
        let negotiation = || field_u64(m, "negotiation");
        Ok(match field_str(m, "kind")? {
            "offer" => PeerMsg::Offer {
                negotiation: negotiation()?,
                items: (field(m, "items")?.as_array())
                    .ok_or("`items` must be a list")?
                    .iter()
                    .map(|i| {
                        Ok(crate::igg::Item {
                            req: self.request(i)?.clone(),
                            units: number(i, "units")?,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?,
                price: number(m, "price")?,
                max: number(m, "max")?,
            },
            "answer" => PeerMsg::Answer {
                negotiation: negotiation()?,
                answers: (field(m, "answers")?.as_array())
                    .ok_or("`answers` must be a list")?
                    .iter()
                    .map(|a| Ok((self.lease(field(a, "lease")?)?, verdict(a)?)))
                    .collect::<Result<Vec<_>, String>>()?,
            },
            "redirect" => PeerMsg::Redirect {
                negotiation: negotiation()?,
                req: self.request(m)?.clone(),
                price: number(m, "price")?,
            },
            "redirect_ack" => PeerMsg::RedirectAck {
                negotiation: negotiation()?,
                lease: self.lease(field(m, "lease")?)?,
                accepted: field(m, "accepted")?
                    .as_bool()
                    .ok_or("`accepted` must be true or false")?,
            },
            "decline" => PeerMsg::Decline {
                negotiation: negotiation()?,
                lease: self.lease(field(m, "lease")?)?,
                price: number(m, "price")?,
                late: match m.get("late") {
                    None | Some(Value::Null) => false,
                    Some(v) => v.as_bool().ok_or("`late` must be true or false")?,
                },
            },
            "lease_report" => PeerMsg::LeaseReport {
                lease: self.lease(field(m, "lease")?)?,
                ended: match m.get("ended") {
                    None | Some(Value::Null) => None,
                    Some(s) => Some(state(s.as_str().ok_or("`ended` must be a state or null")?)?),
                },
                attempt: m.get("attempt").and_then(Value::as_u64).unwrap_or(0) as u32,
            },
            "lease_report_ack" => PeerMsg::LeaseReportAck {
                lease: self.lease(field(m, "lease")?)?,
            },
            "price" => PeerMsg::Price {
                unit_cost: number(m, "unit_cost")?,
            },
            other => return Err(format!("unknown message kind `{}`", excerpt(other))),
        })
    }

    /// The request an effect names (`"request"`: its id, or a request object with its id).
    fn request(&self, e: &Value) -> Result<&LeaseRequest, String> {
        let r = field(e, "request")?;
        let id = self.lease(r.get("id").unwrap_or(r))?;
        if !self.given.contains(&id) {
            return Err(format!(
                "names request `{}`, which was never given to this gateway (neither submitted by its users nor redirected to it)",
                self.request_label(id)
            ));
        }
        self.requests
            .get(id.0 as usize)
            .ok_or_else(|| "no such request".into())
    }

    fn lease(&self, v: &Value) -> Result<RequestId, String> {
        let label = v.as_str().ok_or_else(|| {
            format!(
                "a request is named by its id string, not {}",
                excerpt(&v.to_string())
            )
        })?;
        (self.names.requests.iter())
            .position(|l| l == label)
            .map(|i| RequestId(i as u32))
            .ok_or_else(|| format!("no request has the id `{}`", excerpt(label)))
    }

    fn grid_of(&self, name: &str) -> Result<GridId, String> {
        self.names
            .grid_id(name)
            .ok_or_else(|| format!("no grid is called `{}`", excerpt(name)))
    }

    fn cluster_index(&self, v: &Value) -> Result<usize, String> {
        let name = v.as_str().ok_or_else(|| {
            format!(
                "a cluster is named by its name, not {}",
                excerpt(&v.to_string())
            )
        })?;
        (self.clusters.iter())
            .position(|(_, n)| n == name)
            .ok_or_else(|| format!("`{}` is not one of this grid's clusters", excerpt(name)))
    }
}

fn input_kind(input: &Input) -> &'static str {
    match input {
        Input::Peers { .. } => "peers",
        Input::Submit(_) => "submit",
        Input::FreeSlots { .. } => "free_slots",
        Input::Tick => "tick",
        Input::Refreshed => "refreshed",
        Input::Peer { .. } => "peer",
        Input::OfferTimeout(_) => "offer_timeout",
        Input::RedirectTimeout(_) => "redirect_timeout",
        Input::ReportTimeout(_) => "report_timeout",
        Input::LeaseStarted { .. } => "lease_started",
        Input::LeaseEnded { .. } => "lease_ended",
        Input::Probed { .. } => "probed",
        Input::Unplaced { .. } => "unplaced",
        Input::Relocate { .. } => "relocate",
        Input::Relocated { .. } => "relocated",
        Input::Crash(_) => "crash",
    }
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("`{key}` is missing"))
}

fn field_str<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    field(v, key)?
        .as_str()
        .ok_or_else(|| format!("`{key}` must be a string"))
}

fn field_u64(v: &Value, key: &str) -> Result<u64, String> {
    field(v, key)?
        .as_u64()
        .ok_or_else(|| format!("`{key}` must be a whole number of at least 0"))
}

/// A number that is finite and at least 0 (prices, units, money).
fn number(v: &Value, key: &str) -> Result<f64, String> {
    field(v, key)?
        .as_f64()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("`{key}` must be a number of at least 0"))
}

fn state(s: &str) -> Result<RequestState, String> {
    RequestState::ALL
        .into_iter()
        .find(|x| x.as_str() == s)
        .ok_or_else(|| format!("unknown request state `{}`", excerpt(s)))
}

fn verdict(a: &Value) -> Result<Answer, String> {
    Ok(match field_str(a, "verdict")? {
        "accept" => Answer::Accept {
            price: number(a, "price")?,
        },
        "counter" => Answer::Counter {
            price: number(a, "price")?,
        },
        "reject" => Answer::Reject,
        other => return Err(format!("unknown verdict `{}`", excerpt(other))),
    })
}
