//! Reading `[lrms]` (the defaults and each cluster's own table): scheduler, preemption,
//! admission and their settings, merged over the defaults and checked against the Grid's
//! provider policy.

use super::*;

pub(crate) fn read_scheduler(t: &Table<'_>) -> Option<SchedulerKind> {
    t.named::<SchedulerKind>("scheduler").map(|(v, _)| v)
}

pub(crate) fn read_preemption(t: &Table<'_>) -> Option<PreemptionName> {
    t.named::<PreemptionName>("preemption").map(|(v, _)| v)
}

/// The largest `lrms.backfill_depth`: a depth past any queue a run could hold.
pub(super) const MAX_BACKFILL_DEPTH: u64 = 1_000_000_000;

/// The largest `lrms.racp_scale`: a bound on input, far past any scale that lifts the
/// limit in the shipped scenarios (where N_q at scale 1 is 1–5).
pub(super) const MAX_RACP_SCALE: f64 = 1e9;

/// `[lrms]` keys as read from one table; unset keys inherit.
#[derive(Clone, Default)]
pub(super) struct LrmsOverrides<'a> {
    pub(super) profile: Option<(&'a str, &'a Loc)>,
    pub(super) scheduler: Option<SchedulerKind>,
    pub(super) pivots: Option<u32>,
    pub(super) preemption: Option<String>,
    pub(super) preemption_fallback: Option<String>,
    pub(super) cp_alpha: Option<f64>,
    pub(super) admission: Option<String>,
    pub(super) admission_fallback: Option<String>,
    pub(super) pacp_low_urgency: Option<f64>,
    pub(super) pacp_low_ratio: Option<f64>,
    pub(super) pacp_high_ratio: Option<f64>,
    pub(super) pacp_omega: Option<crate::lrms::PacpOmega>,
    pub(super) queue_limit: Option<usize>,
    pub(super) racp_scale: Option<f64>,
    pub(super) enforce_memory: Option<bool>,
    pub(super) search_budget: Option<usize>,
    pub(super) compress: Option<bool>,
    pub(super) locals: Option<crate::lrms::LocalRequests>,
    pub(super) moldable: Option<crate::lrms::Moldable>,
    pub(super) backfill_depth: Option<usize>,
}

pub(super) fn read_lrms_table<'a>(t: &Table<'a>, registry: &Registry) -> LrmsOverrides<'a> {
    use crate::policy::Point;
    let o = LrmsOverrides {
        profile: t.str("profile"),
        scheduler: read_scheduler(t),
        pivots: t.positive("pivots", 1_000_000).map(|(v, _)| v as u32),
        preemption: policies::read_choice(t, "preemption", Point::Preemption, registry),
        preemption_fallback: policies::read_fallback(t, "preemption", Point::Preemption, registry),
        cp_alpha: t.number_in("cp_alpha", 0.0, 1.0).map(|(v, _)| v),
        admission: policies::read_choice(t, "admission", Point::Admission, registry),
        admission_fallback: policies::read_fallback(t, "admission", Point::Admission, registry),
        pacp_low_urgency: t.number_in("pacp_low_urgency", 0.0, 1.0).map(|(v, _)| v),
        pacp_low_ratio: t
            .positive_number("pacp_low_ratio", MAX_RATIO)
            .map(|(v, _)| v),
        pacp_high_ratio: t
            .positive_number("pacp_high_ratio", MAX_RATIO)
            .map(|(v, _)| v),
        pacp_omega: t
            .named::<crate::lrms::PacpOmega>("pacp_omega")
            .map(|(v, _)| v),
        queue_limit: t
            .uint("queue_limit", 1_000_000_000)
            .map(|(v, _)| v as usize),
        racp_scale: t
            .positive_number("racp_scale", MAX_RACP_SCALE)
            .map(|(v, _)| v),
        enforce_memory: t.bool("enforce_memory").map(|(v, _)| v),
        search_budget: t
            .positive("search_budget", 100_000_000)
            .map(|(v, _)| v as usize),
        compress: t.bool("compress").map(|(v, _)| v),
        locals: t
            .named::<crate::lrms::LocalRequests>("locals")
            .map(|(v, _)| v),
        moldable: t.named::<crate::lrms::Moldable>("moldable").map(|(v, _)| v),
        backfill_depth: t
            .positive("backfill_depth", MAX_BACKFILL_DEPTH)
            .map(|(v, _)| v as usize),
    };
    t.finish();
    o
}

/// A cluster (`cwhat`) whose own `[lrms]` table `t` sets `scheduler` must backfill as its
/// Grid's provider policy `provider` does (§6.3).
pub(super) fn check_provider_scheduler(
    t: &Table<'_>,
    provider: ProviderPolicy,
    scheduler: SchedulerKind,
    cwhat: &str,
) {
    let wanted = if provider.easy() {
        SchedulerKind::Easy
    } else {
        SchedulerKind::Conservative
    };
    if scheduler == wanted {
        return;
    }
    if let Some(n) = t.get("scheduler") {
        t.diags.error(
            &n.loc,
            format!(
                "{cwhat} sets scheduler = \"{}\" but its grid's provider policy \"{}\" backfills with \"{}\"",
                scheduler.as_str(),
                provider.as_str(),
                wanted.as_str()
            ),
            Some("remove the cluster's scheduler, or choose the grid's [igg] provider that matches it".into()),
        );
    }
}

/// A cluster's LRMS settings: its own `[lrms]` keys, else the topology's, else the
/// profile's or igemu's defaults.
pub(super) fn merge_lrms(
    own: &LrmsOverrides<'_>,
    lrms_defaults: &LrmsOverrides<'_>,
    profile: LrmsProfile,
) -> LrmsSettings {
    // A key's value: the cluster's own, else the topology's, else the default.
    macro_rules! pick {
        ($key:ident, $default:expr) => {
            own.$key.or(lrms_defaults.$key).unwrap_or($default)
        };
    }
    // A name's value: the cluster's own, else the topology's, else the default.
    let name = |own: &Option<String>, top: &Option<String>, default: &str| {
        own.clone()
            .or_else(|| top.clone())
            .unwrap_or_else(|| default.to_string())
    };
    let scheduler = pick!(scheduler, profile.scheduler);
    let preemption = Chosen {
        name: name(
            &own.preemption,
            &lrms_defaults.preemption,
            profile.preemption.as_str(),
        ),
        fallback: (own.preemption_fallback.clone()).or(lrms_defaults.preemption_fallback.clone()),
    };
    let admission = Chosen {
        name: name(
            &own.admission,
            &lrms_defaults.admission,
            AdmissionName::Cacp.as_str(),
        ),
        fallback: (own.admission_fallback.clone()).or(lrms_defaults.admission_fallback.clone()),
    };
    LrmsSettings {
        backfilling: scheduler.backfilling(pick!(pivots, profile.pivots)),
        preemption,
        cp_alpha: pick!(cp_alpha, DEFAULT_CP_ALPHA),
        admission,
        admission_settings: AdmissionSettings {
            pacp: (
                pick!(pacp_low_urgency, 0.5),
                pick!(pacp_low_ratio, 4.0),
                pick!(pacp_high_ratio, 2.0),
                pick!(pacp_omega, crate::lrms::PacpOmega::Measured),
            ),
            queue_limit: pick!(queue_limit, 1),
            racp_scale: pick!(racp_scale, 1.0),
        },
        enforce_memory: pick!(enforce_memory, true),
        search_budget: pick!(search_budget, crate::lrms::policy::SEARCH_BUDGET),
        compress: pick!(compress, false),
        locals: pick!(locals, crate::lrms::LocalRequests::Reserved),
        moldable: pick!(moldable, crate::lrms::Moldable::Spread),
        partitions: crate::lrms::provider::Partitions::Single,
        backfill_depth: own.backfill_depth.or(lrms_defaults.backfill_depth),
        profile,
    }
}
