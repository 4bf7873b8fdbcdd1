//! Steady-state detection in the manner of the SNIA Solid State Storage Performance Test
//! Specification (PTS): a measured quantity is steady over a window of rounds when its range
//! (max - min) and the range of its least-squares line across the window are both small
//! against the window's mean. Here the quantity is the write amplification of each round.

use crate::results::SteadyState;
use crate::schema::SteadyStateSpec;


impl SteadyState {
    /// One-line explanation, e.g. for a warning.
    pub fn describe(&self) -> String {
        if self.window_waf.len() < self.window as usize {
            return format!(
                "only {} complete round(s) of {} B host writes; judging needs {}",
                self.rounds, self.round_bytes, self.window
            );
        }
        if self.window_erases == 0 {
            return format!(
                "no erase unit was reclaimed in the last {} rounds of {} B: garbage collection has not started, so WAF {:.3} is not yet the steady value",
                self.window, self.round_bytes, self.window_waf.last().copied().unwrap_or(0.0)
            );
        }
        let lo = self.window_waf.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self.window_waf.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!(
            "WAF of the last {} rounds {:.3}..{:.3}: range {:.1}% of the mean (limit {:.0}%), fitted line moves {:.1}% (limit {:.0}%); {} rounds of {} B",
            self.window_waf.len(),
            lo,
            hi,
            self.excursion * 100.0,
            self.max_excursion * 100.0,
            self.slope * 100.0,
            self.max_slope * 100.0,
            self.rounds,
            self.round_bytes
        )
    }
}

/// Judge the last `spec.window` rounds: `rounds` holds (WAF, erases) of each completed round.
pub fn judge(rounds: &[(f64, u64)], round_bytes: u64, spec: &SteadyStateSpec) -> SteadyState {
    let w = spec.window as usize;
    let last = &rounds[rounds.len().saturating_sub(w)..];
    let window: Vec<f64> = last.iter().map(|r| r.0).collect();
    let window_erases = last.iter().map(|r| r.1).sum();
    let (excursion, slope) = if window.len() >= 2 { spread(&window) } else { (f64::INFINITY, f64::INFINITY) };
    SteadyState {
        rounds: rounds.len() as u32,
        round_bytes,
        steady: window.len() == w && window_erases > 0 && excursion <= spec.excursion && slope <= spec.slope,
        window_waf: window,
        excursion,
        slope,
        max_excursion: spec.excursion,
        max_slope: spec.slope,
        window: spec.window,
        window_erases,
    }
}

/// (range / mean, |least-squares slope| x (n - 1) / mean) of `y` over x = 0, 1, ..
fn spread(y: &[f64]) -> (f64, f64) {
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    if !(mean > 0.0) {
        return (f64::INFINITY, f64::INFINITY);
    }
    let lo = y.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let xm = (n - 1.0) / 2.0;
    let sxy: f64 = y.iter().enumerate().map(|(i, v)| (i as f64 - xm) * (v - mean)).sum();
    let sxx: f64 = (0..y.len()).map(|i| (i as f64 - xm).powi(2)).sum();
    let slope = sxy / sxx;
    ((hi - lo) / mean, (slope * (n - 1.0)).abs() / mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_series_is_steady_and_a_ramp_is_not() {
        let spec = SteadyStateSpec::default();
        let r = |v: &[f64]| v.iter().map(|&w| (w, 1)).collect::<Vec<_>>();
        let flat = [2.0, 2.02, 1.99, 2.01, 2.0];
        let v = judge(&r(&[1.0, 1.5, 1.8, 1.95].iter().chain(&flat).copied().collect::<Vec<_>>()), 100, &spec);
        assert!(v.steady, "{v:?}");
        assert_eq!(v.rounds, 9);
        assert_eq!(v.window_waf, flat);
        // Range 1.99 .. 2.02 = 1.5% of the mean 2.004, no trend: inside 20% / 10%.
        assert!((v.excursion - 0.03 / 2.004).abs() < 1e-9, "{}", v.excursion);
        // A ramp of +3% per round: the fitted line moves 11.3% > 10% (range the same, < 20%).
        let ramp: Vec<f64> = (0..5).map(|i| 2.0 * (1.0 + 0.03 * i as f64)).collect();
        let v = judge(&r(&ramp), 100, &spec);
        assert!(!v.steady);
        assert!((v.slope - 0.12 / 1.06).abs() < 1e-9, "{}", v.slope);
        assert!(v.excursion < 0.2);
        // Noise without a trend: range 0.5 / mean 2.12 = 24% > 20%.
        assert!(!judge(&r(&[2.0, 2.4, 1.9, 2.3, 2.0]), 100, &spec).steady);
        // Too few rounds: never steady.
        assert!(!judge(&r(&flat[..3]), 100, &spec).steady);
        // WAF 1.0 before garbage collection starts (no erases) is not steady.
        let v = judge(&[(1.0, 0); 5], 100, &spec);
        assert!(!v.steady && v.describe().contains("garbage collection has not started"), "{}", v.describe());
    }
}
