//! What IGGs tell each other: the one peer protocol (paper 004 Fig. 3's offers, answers,
//! redirections and their acknowledgements; reports on redirected leases; price updates).

use super::peering::{Answer, NegotiationId};
use crate::model::{LeaseRequest, RequestId, RequestState};

/// A request offered in a batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// The request.
    pub req: LeaseRequest,
    /// Resource units (cores × seconds).
    pub units: f64,
}

/// One message from an IGG to a peer IGG.
#[derive(Clone, Debug, PartialEq)]
pub enum PeerMsg {
    /// Requester → provider: an offer of a batch of requests (Fig. 3 step 1).
    Offer {
        /// Negotiation id.
        negotiation: NegotiationId,
        /// The requests and their units.
        items: Vec<Item>,
        /// Offered unit price (the contract's minimum).
        price: f64,
        /// The contract's maximum unit price.
        max: f64,
    },
    /// Provider → requester: an answer per offered request (step 2).
    Answer {
        /// Negotiation id.
        negotiation: NegotiationId,
        /// Per request.
        answers: Vec<(RequestId, Answer)>,
    },
    /// Requester → provider: serve this request at this unit price (step 3, accepted).
    Redirect {
        /// Negotiation id.
        negotiation: NegotiationId,
        /// The request.
        req: LeaseRequest,
        /// Unit price agreed.
        price: f64,
    },
    /// Provider → requester: the redirection is taken (or refused: the ticket is gone).
    RedirectAck {
        /// Negotiation id.
        negotiation: NegotiationId,
        /// The request.
        lease: RequestId,
        /// Taken over or refused.
        accepted: bool,
    },
    /// Requester → provider: a counter-offer is declined (step 3.2), or an accept or
    /// counter-offer came after the requester gave the offer up (`late`); either way the
    /// provider releases the ticket it holds for the request at once.
    Decline {
        /// Negotiation id.
        negotiation: NegotiationId,
        /// The request.
        lease: RequestId,
        /// The unit price of the counter-offer (or accept) declined.
        price: f64,
        /// The answer came after the requester gave the offer up (its timeout and retries
        /// ran out, or it settled the request already): declined unread.
        late: bool,
    },
    /// Provider → origin: a redirected request started or ended.
    LeaseReport {
        /// The request.
        lease: RequestId,
        /// `None`: started; `Some`: ended in this state.
        ended: Option<RequestState>,
        /// Which report of the provider this is (for idempotence under duplication).
        attempt: u32,
    },
    /// Origin → provider: the end of a redirected request was received.
    LeaseReportAck {
        /// The request.
        lease: RequestId,
    },
    /// Provider → everyone: my current average unit cost (eq. 2), to price contracts with me.
    Price {
        /// Its p_cost.
        unit_cost: f64,
    },
}

impl PeerMsg {
    /// The name traces record for this message.
    pub fn kind(&self) -> &'static str {
        match self {
            PeerMsg::Offer { .. } => "PeerOffer",
            PeerMsg::Answer { .. } => "PeerAnswer",
            PeerMsg::Redirect { .. } => "PeerRedirect",
            PeerMsg::RedirectAck { .. } => "PeerRedirectAck",
            PeerMsg::Decline { .. } => "PeerDecline",
            PeerMsg::LeaseReport { .. } => "RemoteLease",
            PeerMsg::LeaseReportAck { .. } => "RemoteLeaseAck",
            PeerMsg::Price { .. } => "PriceUpdate",
        }
    }

    /// The negotiation this message belongs to, if any.
    pub fn negotiation(&self) -> Option<NegotiationId> {
        match self {
            PeerMsg::Offer { negotiation, .. }
            | PeerMsg::Answer { negotiation, .. }
            | PeerMsg::Redirect { negotiation, .. }
            | PeerMsg::RedirectAck { negotiation, .. }
            | PeerMsg::Decline { negotiation, .. } => Some(*negotiation),
            _ => None,
        }
    }

    /// The request this message is about, if it is about one.
    pub fn lease(&self) -> Option<RequestId> {
        match self {
            PeerMsg::Redirect { req, .. } => Some(req.id),
            PeerMsg::RedirectAck { lease, .. }
            | PeerMsg::Decline { lease, .. }
            | PeerMsg::LeaseReport { lease, .. }
            | PeerMsg::LeaseReportAck { lease } => Some(*lease),
            _ => None,
        }
    }
}
