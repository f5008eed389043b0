//! The names topologies give the LRMS's built-in preemption and admission policies
//! (`lrms.preemption`, `lrms.admission`), each parsed in one place and mapped to the policy it
//! names, and the admission policies' settings as a topology states them.

named_enum! {
    /// The LRMS's preemption policy (paper 003 §6, paper 001 §4.3.1).
    PreemptionName {
        /// Never preempt.
        Nop => "nop",
        /// Minimum leases involved.
        Mlip => "mlip",
        /// Minimum overhead.
        Mov => "mov",
        /// Minimum overhead, minimum leases (median pre-selection).
        Moml => "moml",
        /// Minimum waiting time.
        Mwt => "mwt",
        /// Combinatorial: α·overhead + (1−α)·waiting time (paper 001 eq. 2).
        Cp => "cp",
        /// Paper 001's minimum overhead: leases in the order of eq. 1's score.
        MovScore => "mov-score",
        /// Less valuable leases first: cancellable, suspendable, then migratable (paper 000).
        LeastValuable => "least-valuable",
    }
}

named_enum! {
    /// The LRMS's admission control of external requests (paper 002).
    AdmissionName {
        /// Admit everything.
        Cacp => "cacp",
        /// One external request at a time.
        Aacp => "aacp",
        /// Queue length μ_e / λ.
        Racp => "racp",
        /// Queue length from the M/G/1/K model (Algorithm 1).
        Pacp => "pacp",
        /// A fixed queue length, `queue_limit` (a static baseline).
        Fixed => "fixed",
    }
}

/// PACP's settings: the share of low-urgency requests, their mean deadline ratio, the
/// high-urgency one, and where ω comes from.
pub type PacpSettings = (f64, f64, f64, super::PacpOmega);

/// The shipped admission policies' settings as a topology states them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdmissionSettings {
    /// PACP's deadline model and ω (`pacp_low_urgency`, `pacp_low_ratio`,
    /// `pacp_high_ratio`, `pacp_omega`).
    pub pacp: PacpSettings,
    /// The fixed policy's queue limit (`queue_limit`).
    pub queue_limit: usize,
    /// What RACP's N_q = μ_e / λ is multiplied by (`racp_scale`, 1 as the paper writes it).
    pub racp_scale: f64,
}

impl PreemptionName {
    /// The policy this names, with CP's `cp_alpha`.
    pub fn policy(self, cp_alpha: f64) -> super::policy::PreemptionPolicy {
        use super::policy::PreemptionPolicy as P;
        match self {
            PreemptionName::Nop => P::Nop,
            PreemptionName::Mlip => P::Mlip,
            PreemptionName::Mov => P::Mov,
            PreemptionName::Moml => P::Moml,
            PreemptionName::Mwt => P::Mwt,
            PreemptionName::Cp => P::Cp { alpha: cp_alpha },
            PreemptionName::MovScore => P::MovScore,
            PreemptionName::LeastValuable => P::LeastValuable,
        }
    }
}

impl AdmissionName {
    /// The policy this names, with its settings from `settings`.
    pub fn policy(self, settings: &AdmissionSettings) -> super::admission::AdmissionPolicy {
        use super::admission::AdmissionPolicy as P;
        let (low_urgency, low_ratio, high_ratio, omega) = settings.pacp;
        match self {
            AdmissionName::Cacp => P::Cacp,
            AdmissionName::Aacp => P::Aacp,
            AdmissionName::Racp => P::Racp {
                scale: settings.racp_scale,
            },
            AdmissionName::Pacp => P::Pacp {
                low_urgency,
                low_ratio,
                high_ratio,
                omega,
            },
            AdmissionName::Fixed => P::Fixed(settings.queue_limit),
        }
    }
}
