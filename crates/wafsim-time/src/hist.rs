//! Latency histogram with bounded relative error (log-linear buckets, about 0.4% wide), for
//! percentiles without storing every sample.

/// Latencies in nanoseconds.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum: f64,
    max: u64,
}

const SUB: u32 = 8; // 2^8 sub-buckets per power of two

fn index(v: u64) -> usize {
    if v < (1 << SUB) {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // v in [2^e, 2^(e+1))
    let shift = e - SUB;
    (((e - SUB + 1) << SUB) + ((v >> shift) as u32 - (1 << SUB))) as usize
}

fn lower(i: usize) -> u64 {
    let i = i as u64;
    if i < (1 << SUB) {
        return i;
    }
    let block = i >> SUB; // e - SUB + 1
    let e = block + SUB as u64 - 1;
    let m = (i & ((1 << SUB) - 1)) + (1 << SUB);
    m << (e - SUB as u64)
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; index(u64::MAX) + 1], n: 0, sum: 0.0, max: 0 }
    }
}

impl Histogram {
    /// Add one sample, ns.
    pub fn record(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.n += 1;
        self.sum += v as f64;
        self.max = self.max.max(v);
    }
    /// Forget every sample (cheap when there are none).
    pub fn clear(&mut self) {
        if self.n > 0 {
            self.counts.fill(0);
            self.n = 0;
            self.sum = 0.0;
            self.max = 0;
        }
    }
    /// Number of samples recorded.
    pub fn count(&self) -> u64 {
        self.n
    }
    /// Mean of the samples, ns (exact, not bucketed; 0 when empty).
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
    /// Largest sample, ns (exact).
    pub fn max(&self) -> u64 {
        self.max
    }
    /// The p-th percentile (0 < p <= 100): the lower edge of the bucket holding it.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return lower(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut prev = 0;
        for v in (0..2_000_000u64).step_by(997).chain([u64::MAX / 2, u64::MAX]) {
            let i = index(v);
            assert!(i >= prev);
            prev = i;
            let lo = lower(i);
            assert!(lo <= v && (v - lo) as f64 <= v as f64 / 256.0 + 1.0, "v {v} lower {lo}");
        }
    }

    #[test]
    fn percentiles_of_uniform() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 10);
        }
        for (p, want) in [(50.0, 500_000.0), (99.0, 990_000.0), (99.9, 999_000.0)] {
            let got = h.percentile(p) as f64;
            assert!((got - want).abs() / want < 0.005, "p{p}: {got} vs {want}");
        }
        assert!((h.mean() - 500_005.0).abs() < 1.0);
    }
}
