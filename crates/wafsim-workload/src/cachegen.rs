//! A CacheBench-like request generator for look-aside caches, as a [`KvSource`].
//!
//! CacheBench (facebook/CacheLib, `cachelib/cachebench/`) builds a key population of `numKeys`
//! keys, gives every key one value size drawn once from the configured size distribution
//! (`workload/WorkloadGenerator.cpp`, `generateReqs`), picks the key of each request from a
//! popularity distribution and the operation from a weighted draw over the operation ratios
//! (`workload/WorkloadDistribution.h`: one `std::discrete_distribution` over `setRatio`,
//! `getRatio`, `delRatio`, `loneGetRatio`, ...; weights, normalised by their sum). With
//! `enableLookaside` a get that misses sets the key with its size (`runner/CacheStressor.h`);
//! a "lone get" asks for a fresh key that is never asked for again (a one-hit wonder) and so
//! always misses (`Request::getUniqueKey`).
//!
//! What this generator does the same way: a population of `keys` keys, the size fixed per key
//! (here a pure function of key and seed, so nothing is stored per key), one weighted draw per
//! operation over get, lone get, set and delete. A get is [`KvOp::Get`] (the cache inserts the
//! object on a miss), a set [`KvOp::Update`], a delete [`KvOp::Delete`].
//!
//! What differs: popularity is zipfian with a configurable exponent or uniform (CacheBench's own
//! are a normal distribution over the key range, its default, or discrete popularity buckets
//! from a trace, `popDistFile`); ranks are scattered over the key space by a bijective hash so
//! popular keys do not sit together. Sizes come from weighted ranges (uniform within a range),
//! like CacheBench's piecewise `valSizeRange` / `valSizeRangeProbability`. Keys are `u64`
//! numbers; key sizes are the cache model's business. Random numbers come from
//! [`wafsim_core::Rng`].
//!
//! Defaults ([`CacheGenConfig::default`]):
//! - sizes: CacheBench's `test_configs/ssd_perf/flat_kvcache_reg/sizes.json` (a discrete
//!   distribution of 7,520 value sizes from a key-value cache trace), coarsened to eight
//!   ranges whose probabilities are that file's probability mass per range and whose bounds
//!   put each range's mean on the file's mean value size in it: 97.8% of the objects are at
//!   most 573 bytes (small, below the 640-byte small-item threshold of CacheLib's published
//!   FDP setup with a 16-byte key), 54% of the bytes are in larger objects, mean 335 bytes;
//! - operation mix: `getRatio` 0.9845283120275657 and `loneGetRatio` 0.13471687972434254,
//!   no sets or deletes, from `test_configs/ssd_perf/flat_kvcache_reg/config.json` (the same
//!   key-value cache workload, look-aside);
//! - popularity: zipfian with exponent 1.0 (`kAlpha` of CacheLib's
//!   `cachelib/benchmarks/CachelibContentionBenchmark.cpp`, its zipf workload);
//! - keys: 1,000,000 (no CacheLib source: size the population to the cache, see
//!   [`CacheGenConfig::with_footprint`]); operations: unbounded (the experiment stops by bytes).

use crate::kv::{KvOp, KvSource};
use wafsim_core::Rng;

/// How requests pick their key among the population.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Popularity {
    /// Zipf's law: the key of rank `r` (1-based) is asked for with probability proportional
    /// to `1 / r^exponent` (exponent > 0; 1.0 is the classic law, values above 1 are allowed).
    Zipfian {
        /// The exponent of the law (> 0).
        exponent: f64,
    },
    /// Every key equally often.
    Uniform,
}

/// Object sizes `min ..= max` bytes (uniform), chosen for a key with weight `weight`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeRange {
    /// Smallest object size of the range, bytes.
    pub min: u32,
    /// Largest object size of the range, bytes (inclusive).
    pub max: u32,
    /// Relative weight of the range among all ranges (normalised by their sum).
    pub weight: f64,
}

/// CacheBench-like workload settings. Ratios are weights (normalised by their sum), as in
/// CacheBench.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheGenConfig {
    /// Keys in the population (CacheBench `numKeys`).
    pub keys: u64,
    /// Key popularity.
    pub popularity: Popularity,
    /// Object size ranges and their weights (CacheBench `valSizeRange` /
    /// `valSizeRangeProbability`, piecewise uniform).
    pub sizes: Vec<SizeRange>,
    /// Look-aside gets of population keys (CacheBench `getRatio` with `enableLookaside`).
    pub get_ratio: f64,
    /// Gets of fresh keys never asked for again (CacheBench `loneGetRatio`).
    pub lone_get_ratio: f64,
    /// Sets (overwrites) of population keys (CacheBench `setRatio`).
    pub set_ratio: f64,
    /// Deletes of population keys (CacheBench `delRatio`).
    pub del_ratio: f64,
    /// Stop after this many operations; `None`: never (the caller stops).
    pub ops: Option<u64>,
    /// Key sizes, bytes, uniform in `min ..= max` (at most 255) and fixed per key, carried in
    /// the key's top byte (the flash cache reads them with `key_size_in_key`); `None`: keys
    /// carry no size (every bit of the key is its identity).
    pub key_bytes: Option<(u32, u32)>,
    /// Lone gets ask for 0 bytes, as a kvcache trace records a get that missed in production.
    pub zero_size_lone_gets: bool,
}

/// The default size ranges (see the module documentation).
pub const KVCACHE_SIZES: [SizeRange; 8] = [
    SizeRange { min: 100, max: 128, weight: 0.37265 },
    SizeRange { min: 129, max: 200, weight: 0.55836 },
    SizeRange { min: 257, max: 573, weight: 0.0468 },
    SizeRange { min: 641, max: 1197, weight: 0.01798 },
    SizeRange { min: 2049, max: 5515, weight: 0.00289 },
    SizeRange { min: 8193, max: 22629, weight: 0.0007 },
    SizeRange { min: 32769, max: 101805, weight: 0.00016 },
    SizeRange { min: 131073, max: 449247, weight: 0.00045 },
];

impl Default for CacheGenConfig {
    fn default() -> Self {
        CacheGenConfig {
            keys: 1_000_000,
            popularity: Popularity::Zipfian { exponent: 1.0 },
            sizes: KVCACHE_SIZES.to_vec(),
            get_ratio: 0.9845283120275657,
            lone_get_ratio: 0.13471687972434254,
            set_ratio: 0.0,
            del_ratio: 0.0,
            ops: None,
            key_bytes: None,
            zero_size_lone_gets: false,
        }
    }
}

/// Value sizes of the kvcache_202210 traces per distinct object, as quantiles (percent, bytes),
/// from a third-party analysis of the public traces (not verified here; see
/// [`CacheGenConfig::kvcache_202210`]). The last one, 523,288 bytes, is taken as the largest
/// object.
pub const KVCACHE_202210_OBJECT_QUANTILES: [(f64, u32); 8] = [(1.0, 8), (25.0, 8), (50.0, 29), (75.0, 69), (90.0, 328), (95.0, 1_031), (99.0, 12_143), (99.9, 523_288)];

/// Piecewise log-uniform size ranges through `quantiles` (percent, bytes; the mass below the
/// first quantile is put at its size): each step between two quantiles is split into pieces of
/// equal width on a log scale, each piece a uniform range with an equal share of the step's
/// mass.
pub fn sizes_from_quantiles(quantiles: &[(f64, u32)], pieces: u32) -> Vec<SizeRange> {
    let mut out = Vec::new();
    let Some(&(p0, b0)) = quantiles.first() else { return out };
    out.push(SizeRange { min: b0, max: b0, weight: p0 });
    for w in quantiles.windows(2) {
        let ((pa, a), (pb, b)) = (w[0], w[1]);
        let mass = pb - pa;
        if b <= a {
            out.push(SizeRange { min: b, max: b, weight: mass });
            continue;
        }
        let n = pieces.clamp(1, b - a);
        let (la, lb) = ((a as f64).ln(), (b as f64).ln());
        let mut lo = a + 1;
        for i in 1..=n {
            let hi = if i == n { b } else { ((la + (lb - la) * i as f64 / n as f64).exp() as u32).max(lo) };
            if hi >= lo {
                out.push(SizeRange { min: lo, max: hi, weight: mass / n as f64 });
                lo = hi + 1;
            }
        }
    }
    let top = quantiles[quantiles.len() - 1];
    out.push(SizeRange { min: top.1, max: top.1, weight: 100.0 - top.0 });
    out
}

impl CacheGenConfig {
    /// Requests shaped like Meta's kvcache_202210 traces (the traces the published CacheLib FDP
    /// runs replayed), central choices where the traces' figures are not known:
    /// - value sizes: [`KVCACHE_202210_OBJECT_QUANTILES`] (per distinct object) through
    ///   [`sizes_from_quantiles`] with 8 pieces per step: 50% of the objects at most 29 bytes,
    ///   90% at most 328. The source is a third-party analysis of the public traces (a file in
    ///   the code index whose repository the index does not name: 16.4 M keys, 1.30 G accesses
    ///   after expanding `op_count`, mean object 1,684 bytes), not verified against the traces;
    ///   this shape's mean is higher (the within-step shape is an assumption);
    /// - operations: gets and sets 0.831 : 0.169 (the same analysis), no deletes (their share is
    ///   not given); 20.6% of the gets ask for 0 bytes (the trace's production misses): here
    ///   lone gets of keys that are never set, which always miss;
    /// - key sizes: uniform 21..=116 bytes (the range of the first 100 rows of CacheLib's sample
    ///   `cachebench/test_configs/trace_replay/kvcache/kv_traces_1.csv`);
    /// - popularity: zipf 1.0 (not published for the traces; see [`CacheGenConfig::default`]);
    /// - keys: as [`CacheGenConfig::default`] (size the population with `with_footprint`).
    pub fn kvcache_202210() -> CacheGenConfig {
        let gets = 0.831;
        let zero = 0.206;
        CacheGenConfig {
            sizes: sizes_from_quantiles(&KVCACHE_202210_OBJECT_QUANTILES, 8),
            get_ratio: gets * (1.0 - zero),
            lone_get_ratio: gets * zero,
            set_ratio: 0.169,
            del_ratio: 0.0,
            key_bytes: Some((21, 116)),
            zero_size_lone_gets: true,
            ..CacheGenConfig::default()
        }
    }
}

impl CacheGenConfig {
    /// Check the settings; the reason when they cannot drive a workload.
    pub fn validate(&self) -> Result<(), String> {
        if self.keys == 0 {
            return Err("cache workload: keys must be at least 1".into());
        }
        if let Popularity::Zipfian { exponent } = self.popularity {
            if !(exponent.is_finite() && exponent > 0.0) {
                return Err(format!("cache workload: zipfian exponent must be > 0, not {exponent}"));
            }
        }
        let r = [self.get_ratio, self.lone_get_ratio, self.set_ratio, self.del_ratio];
        if r.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || r.iter().sum::<f64>() <= 0.0 {
            return Err("cache workload: operation ratios must be >= 0 with a positive sum".into());
        }
        if self.sizes.is_empty() {
            return Err("cache workload: at least one size range".into());
        }
        for s in &self.sizes {
            if s.min == 0 || s.min > s.max || !(s.weight.is_finite() && s.weight >= 0.0) {
                return Err(format!("cache workload: size range {s:?} needs 1 <= min <= max and a weight >= 0"));
            }
        }
        if self.sizes.iter().map(|s| s.weight).sum::<f64>() <= 0.0 {
            return Err("cache workload: size weights must have a positive sum".into());
        }
        if let Some((lo, hi)) = self.key_bytes {
            if lo == 0 || lo > hi || hi > 255 {
                return Err(format!("cache workload: key sizes {lo}..={hi} need 1 <= min <= max <= 255"));
            }
        }
        Ok(())
    }

    /// Mean object size over the key population (the weighted means of the ranges).
    pub fn mean_object_bytes(&self) -> f64 {
        let w: f64 = self.sizes.iter().map(|s| s.weight).sum();
        self.sizes.iter().map(|s| s.weight * (s.min as f64 + s.max as f64) / 2.0).sum::<f64>() / w
    }

    /// These settings with a key population whose objects add up to about `bytes` (at least
    /// one key): e.g. twice the cache's size for a working set the cache cannot hold.
    pub fn with_footprint(mut self, bytes: u64) -> CacheGenConfig {
        self.keys = ((bytes as f64 / self.mean_object_bytes()) as u64).max(1);
        self
    }
}

/// splitmix64's output function: a bijection of u64 that mixes every bit.
#[inline(always)]
fn mix64(x: u64) -> u64 {
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Zipf's law over ranks `0 .. n` (rank 0 the most popular), any exponent `s > 0`, by
/// rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-inversion to generate
/// variates from monotone discrete distributions", ACM TOMACS 6(3), 1996): invert the integral
/// of the continuous density `x^-s` and accept the rounded value unless it falls in the thin
/// sliver where the discrete mass is below the integral. O(1) per draw, no tables.
#[derive(Debug, Clone)]
pub struct ZipfSampler {
    n: u64,
    s: f64,
    /// H(1.5) - 1 and H(n + 0.5): the integral's range to draw from.
    h_x1: f64,
    h_n: f64,
    /// Accept at once when k - x <= this (the squeeze).
    squeeze: f64,
}

/// (e^x - 1) / x, exact near 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0)
    }
}

/// ln(1 + x) / x, exact near 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

impl ZipfSampler {
    /// Ranks `0 .. n` (n >= 1), exponent `s` > 0.
    pub fn new(n: u64, s: f64) -> ZipfSampler {
        assert!(n >= 1 && s > 0.0 && s.is_finite(), "zipf needs n >= 1 and an exponent > 0");
        let mut z = ZipfSampler { n, s, h_x1: 0.0, h_n: 0.0, squeeze: 0.0 };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(n as f64 + 0.5);
        z.squeeze = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    /// Ranks in the population.
    pub fn items(&self) -> u64 {
        self.n
    }

    /// The density x^-s.
    #[inline(always)]
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// Its integral from 1: (x^(1-s) - 1) / (1 - s), or ln x for s = 1.
    #[inline(always)]
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over_x((1.0 - self.s) * lx) * lx
    }

    /// The integral's inverse.
    #[inline(always)]
    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        (ln1p_over_x(t) * y).exp()
    }

    /// One draw: a rank in `0 .. n`.
    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit_f64() * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n as f64);
            if k - x <= self.squeeze || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64 - 1;
            }
        }
    }
}

#[derive(Debug, Clone)]
enum KeyPick {
    Zipf(ZipfSampler),
    Uniform(u64),
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Get,
    LoneGet,
    Set,
    Del,
}

/// The generator: a [`KvSource`] of CacheBench-like requests.
#[derive(Debug, Clone)]
pub struct CacheGen {
    keys: u64,
    pick: KeyPick,
    /// Cumulative operation weights, in the order of `kinds`.
    op_cum: Vec<(f64, Kind)>,
    op_total: f64,
    /// Cumulative size weights scaled to 2^53 and the ranges.
    size_cum: Vec<u64>,
    sizes: Vec<SizeRange>,
    key_salt: u64,
    size_salt: u64,
    /// Key sizes (min, span) when keys carry their size.
    key_bytes: Option<(u32, u32)>,
    zero_lone: bool,
    rng: Rng,
    lone: u64,
    issued: u64,
    limit: Option<u64>,
}

impl CacheGen {
    /// A generator for `cfg` whose whole stream (keys, sizes, requests) is fixed by `seed`.
    pub fn try_new(cfg: &CacheGenConfig, seed: u64) -> Result<CacheGen, String> {
        cfg.validate()?;
        let pick = match cfg.popularity {
            Popularity::Zipfian { exponent } => KeyPick::Zipf(ZipfSampler::new(cfg.keys, exponent)),
            Popularity::Uniform => KeyPick::Uniform(cfg.keys),
        };
        let mut op_cum = Vec::new();
        let mut acc = 0.0;
        for (w, k) in [(cfg.get_ratio, Kind::Get), (cfg.lone_get_ratio, Kind::LoneGet), (cfg.set_ratio, Kind::Set), (cfg.del_ratio, Kind::Del)] {
            if w > 0.0 {
                acc += w;
                op_cum.push((acc, k));
            }
        }
        let wsum: f64 = cfg.sizes.iter().map(|s| s.weight).sum();
        let mut c = 0.0;
        let size_cum = cfg
            .sizes
            .iter()
            .map(|s| {
                c += s.weight;
                ((c / wsum) * (1u64 << 53) as f64) as u64
            })
            .collect();
        let mut salts = Rng::derive(seed, 0xCAC4E);
        Ok(CacheGen {
            keys: cfg.keys,
            pick,
            op_cum,
            op_total: acc,
            size_cum,
            sizes: cfg.sizes.clone(),
            key_salt: salts.next_u64(),
            size_salt: salts.next_u64(),
            key_bytes: cfg.key_bytes.map(|(lo, hi)| (lo, hi - lo + 1)),
            zero_lone: cfg.zero_size_lone_gets,
            rng: Rng::derive(seed, 0xCAC4E + 1),
            lone: 0,
            issued: 0,
            limit: cfg.ops,
        })
    }

    /// [`CacheGen::try_new`], panicking on bad settings.
    pub fn new(cfg: &CacheGenConfig, seed: u64) -> CacheGen {
        CacheGen::try_new(cfg, seed).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The key of popularity rank `rank` (0 the most popular). Ranks of the population are
    /// `0 .. keys`; lone gets use ranks from `keys` on, so their keys differ from every
    /// population key (the mapping is a bijection; with key sizes, the key's low 56 bits are,
    /// so keys collide only beyond 2^56 ranks).
    #[inline(always)]
    pub fn key_of_rank(&self, rank: u64) -> u64 {
        let k = mix64(rank.wrapping_add(self.key_salt));
        match self.key_bytes {
            None => k,
            Some((lo, span)) => {
                let id = mix64(rank ^ self.key_salt.rotate_left(17)) & ((1 << 56) - 1);
                let size = lo as u64 + ((k as u128 * span as u128) >> 64) as u64;
                (size << 56) | id
            }
        }
    }

    /// The object size of `key`: fixed for a key and seed.
    #[inline]
    pub fn object_bytes(&self, key: u64) -> u32 {
        let h = mix64(key ^ self.size_salt);
        let u = h >> 11;
        let i = self.size_cum.partition_point(|&c| c <= u).min(self.sizes.len() - 1);
        let r = self.sizes[i];
        let span = (r.max - r.min) as u64 + 1;
        r.min + ((mix64(h) as u128 * span as u128) >> 64) as u32
    }

    /// Requests made so far.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    #[inline(always)]
    fn next_op(&mut self) -> KvOp {
        let kind = if self.op_cum.len() == 1 {
            self.op_cum[0].1
        } else {
            let u = self.rng.unit_f64() * self.op_total;
            self.op_cum.iter().find(|(c, _)| u < *c).map_or(self.op_cum[self.op_cum.len() - 1].1, |x| x.1)
        };
        let rank = match kind {
            Kind::LoneGet => {
                self.lone += 1;
                self.keys.wrapping_add(self.lone - 1)
            }
            _ => match &self.pick {
                KeyPick::Zipf(z) => z.sample(&mut self.rng),
                KeyPick::Uniform(n) => self.rng.below(*n),
            },
        };
        let key = self.key_of_rank(rank);
        match kind {
            Kind::LoneGet if self.zero_lone => KvOp::Get { key, bytes: 0 },
            Kind::Get | Kind::LoneGet => KvOp::Get { key, bytes: self.object_bytes(key) },
            Kind::Set => KvOp::Update { key, bytes: self.object_bytes(key) },
            Kind::Del => KvOp::Delete { key },
        }
    }
}

impl KvSource for CacheGen {
    fn fill(&mut self, out: &mut Vec<KvOp>, max: usize) -> usize {
        let n = match self.limit {
            Some(l) => (l - self.issued).min(max as u64) as usize,
            None => max,
        };
        out.reserve(n.min(1 << 16));
        for _ in 0..n {
            let op = self.next_op();
            out.push(op);
        }
        self.issued += n as u64;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn draw(g: &mut CacheGen, n: usize) -> Vec<KvOp> {
        let mut v = Vec::new();
        while v.len() < n {
            let want = (n - v.len()).min(1000);
            let k = g.fill(&mut v, want);
            assert!(k > 0);
        }
        v
    }

    #[test]
    fn operation_mix_follows_the_ratios() {
        let cfg = CacheGenConfig { keys: 1000, get_ratio: 5.0, lone_get_ratio: 1.0, set_ratio: 3.0, del_ratio: 1.0, popularity: Popularity::Uniform, ..CacheGenConfig::default() };
        let mut g = CacheGen::new(&cfg, 1);
        let pop: std::collections::HashSet<u64> = (0..1000).map(|r| g.key_of_rank(r)).collect();
        let ops = draw(&mut g, 200_000);
        let (mut get, mut lone, mut set, mut del) = (0, 0, 0, 0);
        let mut lone_keys = std::collections::HashSet::new();
        for op in &ops {
            match *op {
                KvOp::Get { key, bytes } => {
                    assert_eq!(bytes, g.object_bytes(key));
                    if pop.contains(&key) {
                        get += 1;
                    } else {
                        lone += 1;
                        assert!(lone_keys.insert(key), "a lone get repeats key {key}");
                    }
                }
                KvOp::Update { key, bytes } => {
                    assert!(pop.contains(&key));
                    assert_eq!(bytes, g.object_bytes(key));
                    set += 1;
                }
                KvOp::Delete { key } => {
                    assert!(pop.contains(&key));
                    del += 1;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        // Expected 100k / 20k / 60k / 20k; 4 sigma is below 0.7% of 200k.
        for (got, want) in [(get, 100_000), (lone, 20_000), (set, 60_000), (del, 20_000)] {
            assert!((got as i64 - want as i64).abs() < 1_400, "{get} {lone} {set} {del}");
        }
    }

    #[test]
    fn defaults_are_lookaside_gets_and_lone_gets() {
        let mut g = CacheGen::new(&CacheGenConfig::default(), 3);
        let ops = draw(&mut g, 100_000);
        assert!(ops.iter().all(|o| matches!(o, KvOp::Get { .. })));
        let pop: std::collections::HashSet<u64> = (0..1_000_000).map(|r| g.key_of_rank(r)).collect();
        let lone = ops.iter().filter(|o| matches!(o, KvOp::Get { key, .. } if !pop.contains(key))).count();
        // 0.1347 / (0.9845 + 0.1347) = 12.04%.
        assert!((11_700..12_400).contains(&lone), "{lone}");
    }

    /// Frequencies of the top ranks against Zipf's law p(r) = r^-s / H(n, s).
    fn check_zipf(n: u64, s: f64) {
        let cfg = CacheGenConfig { keys: n, popularity: Popularity::Zipfian { exponent: s }, get_ratio: 1.0, lone_get_ratio: 0.0, ..CacheGenConfig::default() };
        let mut g = CacheGen::new(&cfg, 7);
        let rank: HashMap<u64, u64> = (0..n).map(|r| (g.key_of_rank(r), r)).collect();
        let draws = 1_000_000;
        let mut hist = vec![0u64; n as usize];
        for op in draw(&mut g, draws) {
            let KvOp::Get { key, .. } = op else { panic!() };
            hist[rank[&key] as usize] += 1;
        }
        let hn: f64 = (1..=n).map(|r| (r as f64).powf(-s)).sum();
        for r in [1u64, 2, 3, 5, 10, 50].into_iter().filter(|&r| r <= n) {
            let p = (r as f64).powf(-s) / hn;
            let want = p * draws as f64;
            let sigma = (want * (1.0 - p)).sqrt();
            let got = hist[r as usize - 1] as f64;
            assert!((got - want).abs() < 5.0 * sigma + 1.0, "s {s} rank {r}: {got} vs {want:.0}");
        }
        // The tail as a whole.
        let tail_want: f64 = (101..=n).map(|r| (r as f64).powf(-s) / hn).sum::<f64>() * draws as f64;
        let tail: u64 = hist.iter().skip(100).sum();
        assert!((tail as f64 - tail_want).abs() < 5.0 * tail_want.sqrt() + 1.0, "s {s}: tail {tail} vs {tail_want:.0}");
    }

    #[test]
    fn zipfian_popularity_matches_the_law() {
        check_zipf(1000, 1.0);
        check_zipf(1000, 0.6);
        check_zipf(10_000, 1.3);
        check_zipf(1, 0.9);
    }

    #[test]
    fn uniform_popularity_is_flat() {
        let cfg = CacheGenConfig { keys: 100, popularity: Popularity::Uniform, get_ratio: 1.0, lone_get_ratio: 0.0, ..CacheGenConfig::default() };
        let mut g = CacheGen::new(&cfg, 9);
        let rank: HashMap<u64, u64> = (0..100).map(|r| (g.key_of_rank(r), r)).collect();
        let mut hist = [0u32; 100];
        for op in draw(&mut g, 500_000) {
            let KvOp::Get { key, .. } = op else { panic!() };
            hist[rank[&key] as usize] += 1;
        }
        // 5000 each, sigma 70.
        assert!(hist.iter().all(|&h| (4_650..5_350).contains(&h)), "{hist:?}");
    }

    #[test]
    fn sizes_are_fixed_per_key_and_follow_the_weights() {
        let sizes = vec![SizeRange { min: 100, max: 199, weight: 3.0 }, SizeRange { min: 5000, max: 5000, weight: 1.0 }];
        let cfg = CacheGenConfig { keys: 100_000, sizes, ..CacheGenConfig::default() };
        assert_eq!(cfg.mean_object_bytes(), (149.5 * 3.0 + 5000.0) / 4.0);
        let g = CacheGen::new(&cfg, 11);
        let mut small = 0;
        let mut low_half = 0;
        for r in 0..100_000 {
            let b = g.object_bytes(g.key_of_rank(r));
            match b {
                100..=199 => {
                    small += 1;
                    if b < 150 {
                        low_half += 1;
                    }
                }
                5000 => {}
                _ => panic!("size {b} outside the ranges"),
            }
        }
        assert!((74_400..75_600).contains(&small), "{small}");
        assert!((low_half as f64 / small as f64 - 0.5).abs() < 0.01);
        // Same key, same size, whatever the seed's request stream did.
        let g2 = CacheGen::new(&cfg, 11);
        assert_eq!(g.object_bytes(12345), g2.object_bytes(12345));
    }

    #[test]
    fn default_sizes_match_the_trace_summary() {
        let cfg = CacheGenConfig::default();
        assert!((cfg.mean_object_bytes() - 335.0).abs() < 5.0, "{}", cfg.mean_object_bytes());
        let g = CacheGen::new(&cfg, 5);
        let n = 1_000_000;
        let small = (0..n).filter(|&r| g.object_bytes(g.key_of_rank(r)) <= 624).count();
        assert!((small as f64 / n as f64 - 0.9778).abs() < 0.002, "{small}");
    }

    #[test]
    fn deterministic_and_stops_after_ops() {
        let cfg = CacheGenConfig { ops: Some(2500), ..CacheGenConfig::default() };
        let mut a = CacheGen::new(&cfg, 42);
        let mut b = CacheGen::new(&cfg, 42);
        let mut c = CacheGen::new(&cfg, 43);
        let mut va = Vec::new();
        while a.fill(&mut va, 999) > 0 {}
        let mut vb = Vec::new();
        while b.fill(&mut vb, 7) > 0 {}
        let mut vc = Vec::new();
        while c.fill(&mut vc, 1000) > 0 {}
        assert_eq!(va.len(), 2500);
        assert_eq!(va, vb, "the stream does not depend on batch sizes");
        assert_ne!(va, vc);
        assert_eq!(a.issued(), 2500);
    }

    /// The kvcache_202210 shape reproduces its source quantiles per object, puts the sizes in
    /// the keys' top byte and mixes gets, zero-size lone gets and sets as stated.
    #[test]
    fn kvcache_202210_shape() {
        let cfg = CacheGenConfig { keys: 200_000, ..CacheGenConfig::kvcache_202210() };
        let g = CacheGen::new(&cfg, 4);
        let mut sizes: Vec<u32> = (0..200_000).map(|r| g.object_bytes(g.key_of_rank(r))).collect();
        sizes.sort_unstable();
        let q = |p: f64| sizes[((p / 100.0) * sizes.len() as f64) as usize - 1];
        for (p, want) in KVCACHE_202210_OBJECT_QUANTILES.iter().take(7) {
            let got = q(*p);
            assert!((got as f64 - *want as f64).abs() <= 0.06 * *want as f64 + 1.0, "p{p}: {got} vs {want}");
        }
        assert!(*sizes.last().unwrap() <= 523_288 && sizes[0] >= 8);
        let mean = cfg.mean_object_bytes();
        eprintln!("kvcache_202210 shape: mean object {mean:.0} bytes (the source's 1,684)");
        assert!(mean > 1_000.0 && mean < 3_000.0, "{mean}");
        let mut g = CacheGen::new(&cfg, 4);
        let ops = draw(&mut g, 200_000);
        let (mut get, mut zero, mut set) = (0, 0, 0);
        for op in &ops {
            let key = match *op {
                KvOp::Get { key, bytes: 0 } => {
                    zero += 1;
                    key
                }
                KvOp::Get { key, .. } => {
                    get += 1;
                    key
                }
                KvOp::Update { key, .. } => {
                    set += 1;
                    key
                }
                ref other => panic!("unexpected {other:?}"),
            };
            assert!((21..=116).contains(&(key >> 56)), "key size {}", key >> 56);
        }
        // 0.6598 / 0.1712 / 0.169 of 200k; 5 sigma < 1,100.
        for (got, want) in [(get, 131_960), (zero, 34_237), (set, 33_800)] {
            assert!((got as i64 - want as i64).abs() < 1_100, "{get} {zero} {set}");
        }
    }

    #[test]
    fn footprint_sets_the_population() {
        let cfg = CacheGenConfig::default().with_footprint(1 << 30);
        let want = (1u64 << 30) as f64 / cfg.mean_object_bytes();
        assert!((cfg.keys as f64 - want).abs() <= 1.0);
        assert!(CacheGenConfig { keys: 0, ..CacheGenConfig::default() }.validate().is_err());
        assert!(CacheGenConfig { popularity: Popularity::Zipfian { exponent: 0.0 }, ..CacheGenConfig::default() }.validate().is_err());
        assert!(CacheGenConfig { sizes: vec![SizeRange { min: 5, max: 4, weight: 1.0 }], ..CacheGenConfig::default() }.validate().is_err());
    }
}
