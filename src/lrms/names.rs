//! The names topologies give the LRMS's built-in preemption and admission policies
//! (`lrms.preemption`, `lrms.admission`), each parsed in one place and mapped to the policy it
//! names, and PACP's settings as a topology states them.

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
    /// The policy this names, with PACP's deadline model (share of low-urgency requests,
    /// the two deadline ratios) and the fixed policy's queue limit.
    pub fn policy(
        self,
        (low_urgency, low_ratio, high_ratio, omega): PacpSettings,
        queue_limit: usize,
    ) -> super::admission::AdmissionPolicy {
        use super::admission::AdmissionPolicy as P;
        match self {
            AdmissionName::Cacp => P::Cacp,
            AdmissionName::Aacp => P::Aacp,
            AdmissionName::Racp => P::Racp,
            AdmissionName::Pacp => P::Pacp {
                low_urgency,
                low_ratio,
                high_ratio,
                omega,
            },
            AdmissionName::Fixed => P::Fixed(queue_limit),
        }
    }
}
