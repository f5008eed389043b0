//! A decision a plug-in made, as the trace records it (`decision` records): the decision
//! point, the policy, the question and the answer carried out.

use serde::Serialize;

/// A decision a plug-in made, as a trace record shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Note {
    /// The decision point.
    pub point: &'static str,
    /// The policy.
    pub policy: String,
    /// The request it was about, if one.
    #[serde(skip)]
    pub request: Option<crate::model::RequestId>,
    /// The question, summarised.
    pub question: serde_json::Value,
    /// The answer carried out.
    pub answer: serde_json::Value,
    /// Why the fallback decided instead, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}
