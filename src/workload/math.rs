//! Special functions the workload models and admission control need and `rand_distr` does not
//! provide: the gamma function (Lanczos), the regularised lower incomplete gamma function
//! (series and continued fraction, Numerical Recipes §6.2).

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; relative error below 1e-13).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Γ(x) for x > 0.
pub(crate) fn gamma(x: f64) -> f64 {
    ln_gamma(x).exp()
}

/// The regularised lower incomplete gamma function P(a, x) = γ(a, x) / Γ(a), a > 0, x ≥ 0.
pub(crate) fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let gln = ln_gamma(a);
    if x < a + 1.0 {
        // Series.
        let (mut ap, mut sum, mut del) = (a, 1.0 / a, 1.0 / a);
        for _ in 0..1000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        (sum.ln() - x + a * x.ln() - gln).exp()
    } else {
        // Continued fraction (modified Lentz) for Q, then P = 1 − Q.
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..1000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-15 {
                break;
            }
        }
        1.0 - (a * x.ln() - x - gln).exp() * h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_matches_factorials_and_half_integers() {
        assert!((gamma(5.0) - 24.0).abs() < 1e-9);
        assert!((gamma(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-12);
        assert!((gamma(3.0) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn incomplete_gamma_matches_known_values() {
        // P(1, x) = 1 − e^{−x}; P(a, ∞) → 1.
        for x in [0.1f64, 1.0, 3.0, 10.0] {
            assert!((gamma_p(1.0, x) - (1.0 - (-x).exp())).abs() < 1e-12);
        }
        assert!((gamma_p(5.0, 100.0) - 1.0).abs() < 1e-12);
        // P(2, 2) = 1 − 3e^{−2}.
        assert!((gamma_p(2.0, 2.0) - (1.0 - 3.0 * (-2.0f64).exp())).abs() < 1e-12);
    }
}
