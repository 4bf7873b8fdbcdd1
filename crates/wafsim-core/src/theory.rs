//! Closed-form write amplification for uniform random single-unit writes, used to validate the
//! simulator (../shared/reference/experiments.md section 1; Desnoyers, "Analytic models of SSD
//! write performance", SYSTOR 2012 / ACM TOS 2014).

/// FIFO (least-recently-written) cleaning with alpha = T/U > 1, Np -> infinity:
/// A = 1/(1-v) where v in (0,1) solves v = exp(-alpha*(1-v)).
pub fn waf_fifo(alpha: f64) -> f64 {
    assert!(alpha > 1.0, "alpha = T/U must exceed 1 (got {alpha})");
    // Bisection on h(v) = ln v + alpha(1 - v): -inf at 0, rising to its peak at v = 1/alpha,
    // then falling to the trivial root at 1. The root we want is the one below the peak.
    let h = |v: f64| v.ln() + alpha * (1.0 - v);
    let (mut lo, mut hi) = (f64::MIN_POSITIVE, 1.0 / alpha);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if h(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    1.0 / (1.0 - 0.5 * (lo + hi))
}

/// Greedy cleaning with Np mapping units per erase unit: A_fifo(k*alpha)/k, k = 1 + 1/(2 Np).
pub fn waf_greedy(alpha: f64, np: f64) -> f64 {
    let k = 1.0 + 1.0 / (2.0 * np);
    waf_fifo(k * alpha) / k
}

/// Random victim selection (d = 1), large Np: A = 1/Sf with Sf = (T-U)/T.
pub fn waf_random(alpha: f64) -> f64 {
    alpha / (alpha - 1.0)
}

/// Hot/cold classes mixed in one frontier under FIFO: A solves
/// A = 1 + sum_i r_i / (exp(alpha * r_i / (f_i * A)) - 1), class i receiving fraction r_i of the
/// writes over fraction f_i of the LBAs.
pub fn waf_hot_cold_fifo(alpha: f64, classes: &[(f64, f64)]) -> f64 {
    let rhs = |a: f64| 1.0 + classes.iter().map(|&(r, f)| r / ((alpha * r / (f * a)).exp() - 1.0)).sum::<f64>();
    // F(A) = rhs(A) - A is positive at A = 1 and decreasing; bisection on [1, 1e6].
    let (mut lo, mut hi) = (1.0f64, 1.0e6f64);
    for _ in 0..300 {
        let mid = 0.5 * (lo + hi);
        if rhs(mid) - mid > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// alpha from OP in the (physical - logical) / logical convention.
pub fn alpha_from_op(op: f64) -> f64 {
    1.0 + op
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values tabulated in experiments.md section 1 (independent of this code).
    #[test]
    fn matches_published_table() {
        let ops = [0.07, 0.10, 0.20, 0.28, 0.50];
        let fifo = [7.817, 5.678, 3.188, 2.481, 1.716];
        let g64 = [7.001, 5.242, 3.053, 2.402, 1.681];
        let g256 = [7.596, 5.562, 3.153, 2.461, 1.707];
        for i in 0..ops.len() {
            let a = alpha_from_op(ops[i]);
            assert!((waf_fifo(a) - fifo[i]).abs() < 0.001, "fifo op {}: {}", ops[i], waf_fifo(a));
            assert!((waf_greedy(a, 64.0) - g64[i]).abs() < 0.001, "greedy64 op {}: {}", ops[i], waf_greedy(a, 64.0));
            assert!((waf_greedy(a, 256.0) - g256[i]).abs() < 0.001, "greedy256 op {}: {}", ops[i], waf_greedy(a, 256.0));
        }
    }

    #[test]
    fn hot_cold_reduces_to_uniform() {
        // One class over all LBAs is the uniform FIFO case.
        let a = 1.2;
        assert!((waf_hot_cold_fifo(a, &[(1.0, 1.0)]) - waf_fifo(a)).abs() < 1e-6);
        // Splitting uniform traffic into proportional classes changes nothing.
        assert!((waf_hot_cold_fifo(a, &[(0.1, 0.1), (0.9, 0.9)]) - waf_fifo(a)).abs() < 1e-6);
    }
}
