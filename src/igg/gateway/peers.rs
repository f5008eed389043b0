//! The gateway's side of peering: messages from peer IGGs (offers, answers, redirections and
//! their acknowledgements, lease reports), the redirections it times out, and the broker's
//! outputs carried out as effects.

use super::*;

impl Gateway {
    pub(super) fn on_peer(
        &mut self,
        from: GridId,
        msg: PeerMsg,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        match msg {
            PeerMsg::Offer {
                negotiation,
                items,
                price,
                max,
            } => {
                let offered = Offered {
                    from,
                    negotiation,
                    items: &items,
                    price,
                    max,
                };
                self.receive_offer(&offered, now, out);
            }
            PeerMsg::Answer {
                negotiation,
                answers,
            } => {
                out.push(Effect::Cancel(Timer::Offer(negotiation)));
                out.push(Effect::Observe(Observation::OfferSettled(negotiation)));
                let outs = self.broker.on_answers(from, negotiation, &answers);
                self.carry(outs, now, out);
            }
            PeerMsg::Redirect {
                negotiation,
                req,
                price,
            } => self.redirected_here(from, (negotiation, price), req, now, out),
            PeerMsg::RedirectAck {
                negotiation,
                lease,
                accepted,
            } => {
                out.push(Effect::Cancel(Timer::Redirect(negotiation, lease)));
                self.redirect_acknowledged(from, (negotiation, lease), accepted, now, out);
            }
            PeerMsg::Decline {
                negotiation, lease, ..
            } => self.broker.on_decline(negotiation, lease),
            PeerMsg::LeaseReport { lease, ended, .. } => {
                self.lease_reported(from, lease, ended, now, out)
            }
            PeerMsg::LeaseReportAck { lease } => {
                out.push(Effect::Cancel(Timer::Report(lease)));
                self.reports_pending.remove(&lease);
            }
            PeerMsg::Price { unit_cost } => {
                if let Some(m) = self.providers.get_mut(&from) {
                    m.unit_cost = unit_cost;
                }
                self.reprice();
            }
        }
    }

    /// A provider reports on a request this Grid redirected to it: started, or ended in
    /// `ended` (acknowledged, and passed on once).
    pub(super) fn lease_reported(
        &mut self,
        from: GridId,
        lease: RequestId,
        ended: Option<RequestState>,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        if let Some(negotiation) = self.broker.redirecting_to(lease, from) {
            // The provider took the redirection over and its acknowledgement was lost (else
            // this Grid would never pay for it): the report stands for it.
            out.push(Effect::Cancel(Timer::Redirect(negotiation, lease)));
            self.redirect_acknowledged(from, (negotiation, lease), true, now, out);
        }
        let Some(state) = ended else {
            return;
        };
        out.push(Effect::Send {
            to: from,
            msg: PeerMsg::LeaseReportAck { lease },
        });
        if self.reports_done.insert(lease) {
            if state == RequestState::Rejected {
                // Redirected, taken, then refused by the provider's clusters.
                self.broker.redirect_rejected();
                out.push(Effect::Observe(Observation::Outcomes(
                    self.broker.outcomes().clone(),
                )));
            }
            out.push(Effect::Dve {
                note: DveNote::Ended(lease, state),
                posted: false,
            });
        }
    }

    /// An offer is held until this IGG's next round; a duplicate of one answered is answered
    /// again at once.
    pub(super) fn receive_offer(
        &mut self,
        offered: &Offered<'_>,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        if let Some(again) = self.broker.receive_offer(offered) {
            self.carry(vec![again], now, out);
        }
    }

    /// A requester redirects `req` here at unit `price`: observe what it will pay the first
    /// time the request becomes ours.
    pub(super) fn redirected_here(
        &mut self,
        from: GridId,
        (negotiation, price): (NegotiationId, f64),
        req: LeaseRequest,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        let (outs, received) = self.broker.on_redirect(from, negotiation, &req, price, now);
        if let Some(amount) = received {
            out.push(Effect::Observe(Observation::Received {
                from,
                lease: req.id,
                negotiation,
                amount,
            }));
        }
        self.carry(outs, now, out);
    }

    /// A provider acknowledges a redirection: observe what this Grid paid for it.
    pub(super) fn redirect_acknowledged(
        &mut self,
        from: GridId,
        (negotiation, lease): (NegotiationId, RequestId),
        accepted: bool,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        let (outs, payment) = self.broker.on_redirect_ack(negotiation, lease, accepted);
        if let Some(p) = payment {
            out.push(Effect::Observe(Observation::Paid {
                to: from,
                units: p.units,
                amount: p.amount,
            }));
        }
        self.carry(outs, now, out);
    }

    pub(super) fn redirect_timed_out(
        &mut self,
        lease: RequestId,
        now: EmuTime,
        out: &mut Vec<Effect>,
    ) {
        if !self.broker.awaiting_ack(lease) {
            return;
        }
        if self.settings.broken_protocol {
            // The deliberate bug: give up on the provider and serve the request here, though
            // the provider may already be running it.
            if let Some(Out::Send {
                msg: PeerMsg::Redirect {
                    req, negotiation, ..
                },
                ..
            }) = self.broker.redirect_timed_out(lease).pop()
            {
                self.broker.on_redirect_ack(negotiation, lease, false);
                out.push(self.place(req, now));
            }
            return;
        }
        let outs = self.broker.redirect_timed_out(lease);
        self.carry(outs, now, out);
    }

    /// Turns the broker's outputs into effects (with their timeouts), then observes the
    /// negotiation outcomes.
    pub(super) fn carry(&mut self, outs: Vec<Out>, now: EmuTime, out: &mut Vec<Effect>) {
        let timeout = self.settings.offer_timeout;
        for o in outs {
            match o {
                Out::Send { peer, msg } => {
                    if !self.peers.contains(&peer) {
                        continue;
                    }
                    let timer = match &msg {
                        PeerMsg::Offer { negotiation, .. } => {
                            out.push(Effect::Observe(Observation::OfferSent(*negotiation)));
                            Some(Timer::Offer(*negotiation))
                        }
                        PeerMsg::Redirect {
                            negotiation, req, ..
                        } => Some(Timer::Redirect(*negotiation, req.id)),
                        _ => None,
                    };
                    out.push(Effect::Send { to: peer, msg });
                    if let Some(t) = timer {
                        // Each resend waits twice as long for the network; an offer waits
                        // for the provider's next round as well.
                        let at = match t {
                            Timer::Offer(n) => {
                                let resends = self.broker.offer_resends(n);
                                now + crate::igg::backoff::wait(timeout, resends)
                                    + self.settings.interval.1
                            }
                            Timer::Redirect(_, lease) => {
                                let resends = self.broker.redirect_resends(lease);
                                now + crate::igg::backoff::wait(timeout, resends)
                            }
                            Timer::Tick | Timer::Report(_) => now + timeout,
                        };
                        out.push(Effect::Timer { at, timer: t });
                    }
                }
                Out::ServeLocally(req) | Out::ServeForPeer(req) => {
                    let place = self.place(req, now);
                    out.push(place);
                }
            }
        }
        out.push(Effect::Observe(Observation::Outcomes(
            self.broker.outcomes().clone(),
        )));
    }
}
