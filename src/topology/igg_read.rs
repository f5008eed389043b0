//! Reading `[igg]` (the defaults and each Grid's own table): dispatch, answer and offer
//! policies and the gateway's implementation, merged over the defaults.

use super::*;

#[derive(Clone, Default)]
pub(super) struct IggOverrides {
    /// Per decision point (dispatch, answer, offer): the policy and its fallback.
    pub(super) choices: [(Option<String>, Option<String>); 3],
    /// Who plays the gateway.
    pub(super) implementation: Option<String>,
    pub(super) retry: Option<bool>,
    pub(super) provider: Option<ProviderPolicy>,
}

/// The IGG's decision points, in [`IggOverrides::choices`]' order.
pub(super) const IGG_POINTS: [crate::policy::Point; 3] = [
    crate::policy::Point::Dispatch,
    crate::policy::Point::Answer,
    crate::policy::Point::Offer,
];

pub(super) fn read_igg_table(t: &Table<'_>, registry: &Registry) -> IggOverrides {
    let choice = |p: crate::policy::Point| {
        (
            policies::read_choice(t, p.as_str(), p, registry),
            policies::read_fallback(t, p.as_str(), p, registry),
        )
    };
    let o = IggOverrides {
        choices: IGG_POINTS.map(choice),
        implementation: policies::read_choice(
            t,
            "implementation",
            crate::policy::Point::Gateway,
            registry,
        ),
        retry: t.bool("retry").map(|(b, _)| b),
        provider: t.named::<ProviderPolicy>("provider").map(|(v, _)| v),
    };
    t.finish();
    o
}

/// A Grid's IGG settings: its own `[igg]` keys, else the topology's, else the defaults.
pub(super) fn merge_igg(
    own: IggOverrides,
    defaults: &IggOverrides,
    registry: &Registry,
) -> IggSettings {
    let defaults_of = [
        DispatchName::RoundRobin.as_str(),
        crate::igg::negotiation::AnswerName::MarginalCost.as_str(),
        crate::igg::negotiation::OfferName::CheapestContract.as_str(),
    ];
    let [dispatch, answer, offer] = [0, 1, 2].map(|i| {
        let (name, fallback) = &own.choices[i];
        let (dname, dfallback) = &defaults.choices[i];
        Chosen {
            name: (name.clone().or_else(|| dname.clone())).unwrap_or_else(|| defaults_of[i].into()),
            fallback: fallback.clone().or_else(|| dfallback.clone()),
        }
    });
    let implementation = (own.implementation.clone())
        .or_else(|| defaults.implementation.clone())
        .unwrap_or_else(|| crate::policy::registry::GATEWAY.into());
    IggSettings {
        // An external dispatch policy sees the clusters' loads and earliest starts: they publish.
        reads_slots: registry.reads_slots(&dispatch.name) || dispatch.is_external(),
        dispatch,
        answer,
        offer,
        implementation: Chosen::named(&implementation),
        retry: own.retry.or(defaults.retry).unwrap_or(true),
        provider: own.provider.or(defaults.provider),
    }
}
