//! Block pickers for random I/O: a full-period permutation (fio's "random map") and the
//! skewed distributions (zipf, pareto, normal, zoned).

use wafsim_core::Rng;

/// A keyed bijection on `[0, n)`: a 4-round balanced Feistel network on the smallest
/// even-bit-width power of two >= n, restricted to `[0, n)` by cycle walking (each walk step
/// stays inside the same permutation cycle, so the restriction is still a bijection; since the
/// domain is < 4n, the expected walk is < 4 steps).
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    mask: u64,
    keys: [u64; 4],
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Permutation {
    /// A permutation of `[0, n)` keyed from `rng` (`n >= 1`).
    pub fn new(n: u64, rng: &mut Rng) -> Self {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let keys = [rng.next_u64(), rng.next_u64(), rng.next_u64(), rng.next_u64()];
        Permutation { n, half_bits, mask: (1u64 << half_bits) - 1, keys }
    }

    fn round_trip(&self, x: u64) -> u64 {
        let mut l = x >> self.half_bits;
        let mut r = x & self.mask;
        for &k in &self.keys {
            let f = mix(r ^ k) & self.mask;
            let nl = r;
            r = l ^ f;
            l = nl;
        }
        (l << self.half_bits) | r
    }

    /// Image of `i` (`i < n`).
    pub fn apply(&self, i: u64) -> u64 {
        let mut y = self.round_trip(i);
        while y >= self.n {
            y = self.round_trip(y);
        }
        y
    }
}

/// fio's random map: every block once per pass, a fresh permutation each pass.
#[derive(Debug, Clone)]
pub struct RandomMap {
    perm: Permutation,
    next: u64,
    /// A new pass was started ([`RandomMap::restart`]): draw a fresh permutation on next use.
    stale: bool,
}

impl RandomMap {
    /// A map over blocks `0..n`; its first permutation is drawn from `rng` at once.
    pub fn new(n: u64, rng: &mut Rng) -> Self {
        RandomMap { perm: Permutation::new(n, rng), next: 0, stale: false }
    }
    /// The next unused block; once all are used (or after [`RandomMap::restart`]) a fresh
    /// permutation starts a new pass.
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        if self.stale || self.next == self.perm.n {
            self.perm = Permutation::new(self.perm.n, rng);
            self.next = 0;
            self.stale = false;
        }
        let v = self.perm.apply(self.next);
        self.next += 1;
        v
    }
    /// Every block of this pass was handed out (fio then considers the file done).
    pub fn exhausted(&self) -> bool {
        !self.stale && self.next == self.perm.n
    }
    /// Start a new pass. The permutation is drawn lazily, at the next [`RandomMap::next`], so a
    /// job that never uses its map consumes no random numbers for it.
    pub fn restart(&mut self) {
        self.stale = true;
    }
}

/// Zipf ranks by rejection-inversion (Hörmann & Derflinger, 1996): O(1) per sample for any
/// exponent > 0 and any number of ranks.
#[derive(Debug, Clone)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    squeeze: f64,
}

fn helper1(x: f64) -> f64 {
    // ln(1+x)/x
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x / 2.0 + x * x / 3.0
    }
}

fn helper2(x: f64) -> f64 {
    // (e^x - 1)/x
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x / 2.0 + x * x / 6.0
    }
}

impl Zipf {
    /// Ranks `0..n` (n at least 1) with exponent `s` (> 0).
    pub fn new(n: u64, s: f64) -> Self {
        let mut z = Zipf { n: n.max(1) as f64, s, h_x1: 0.0, h_n: 0.0, squeeze: 0.0 };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(z.n + 0.5);
        z.squeeze = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }
    /// Integral of h: (x^(1-s) - 1) / (1-s).
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }
    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0 + 1e-12);
        (helper1(t) * y).exp()
    }
    /// A rank in `[0, n)`, rank 0 being the most popular.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        for _ in 0..64 {
            let u = self.h_n + rng.unit_f64() * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64 - 1;
            }
        }
        0
    }
}

/// How random block indices are drawn for one data direction.
#[derive(Debug, Clone)]
pub enum Picker {
    /// Uniform with fio's random map (each block once per pass).
    Map,
    /// Uniform, independent draws (`norandommap`).
    Uniform,
    /// Zipf rank, placed by `place`.
    Zipf(Zipf, Placement),
    /// Pareto rank `floor(n * (1 - u^p))`, `p = ln h / ln(1-h)`, placed by `place`.
    Pareto(f64, Placement),
    /// Normal around `center * n` with `sigma` blocks (out-of-range draws are redrawn).
    Normal {
        /// Mean, as a block index (the distribution's center fraction times `n`).
        center: f64,
        /// Standard deviation, blocks.
        sigma: f64,
    },
    /// Zones `(cumulative access fraction, first block, block count)`.
    Zoned(Vec<(f64, u64, u64)>),
}

/// Where a popularity rank lands.
#[derive(Debug, Clone)]
pub enum Placement {
    /// Scrambled through a fixed keyed permutation, so hot blocks are spread over the whole
    /// range without collisions (fio hashes ranks for the same purpose).
    Scrambled(Permutation),
    /// Shifted so rank 0 is at `center * n` (fio's second distribution parameter).
    Centered(u64),
}

impl Placement {
    fn place(&self, rank: u64, n: u64) -> u64 {
        match self {
            Placement::Scrambled(p) => p.apply(rank),
            Placement::Centered(c) => (rank + c) % n,
        }
    }
}

impl Picker {
    /// A block index in `[0, n)`; `map` is the shared random map for [`Picker::Map`].
    pub fn pick(&self, n: u64, rng: &mut Rng, map: &mut RandomMap) -> u64 {
        match self {
            Picker::Map => map.next(rng),
            Picker::Uniform => rng.below(n),
            Picker::Zipf(z, place) => place.place(z.sample(rng), n),
            Picker::Pareto(p, place) => {
                let u = rng.unit_f64();
                let rank = ((n as f64) * (1.0 - u.powf(*p))).floor() as u64;
                place.place(rank.min(n - 1), n)
            }
            Picker::Normal { center, sigma } => {
                let mut x = 0.0;
                for _ in 0..16 {
                    let u1 = 1.0 - rng.unit_f64(); // (0, 1]
                    let u2 = rng.unit_f64();
                    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    x = center + z * sigma;
                    if x >= 0.0 && x < n as f64 {
                        break;
                    }
                }
                (x.max(0.0) as u64).min(n - 1)
            }
            Picker::Zoned(zones) => {
                let u = rng.unit_f64();
                let z = zones.iter().find(|z| u < z.0).or(zones.last());
                match z {
                    Some(&(_, first, count)) if count > 0 => first + rng.below(count),
                    _ => rng.below(n),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_bijective() {
        let mut rng = Rng::new(3);
        for n in [1u64, 2, 3, 5, 17, 1000, 4096, 4097] {
            let p = Permutation::new(n, &mut rng);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let y = p.apply(i);
                assert!(y < n && !seen[y as usize], "n={n}");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn zipf_ratio() {
        // P(rank 0) / P(rank 1) = 2^s
        let z = Zipf::new(1000, 1.2);
        let mut rng = Rng::new(9);
        let mut c = [0u32; 2];
        for _ in 0..200_000 {
            let k = z.sample(&mut rng);
            if k < 2 {
                c[k as usize] += 1;
            }
        }
        let ratio = c[0] as f64 / c[1] as f64;
        assert!((ratio - 2f64.powf(1.2)).abs() < 0.15, "{ratio}");
    }
}
