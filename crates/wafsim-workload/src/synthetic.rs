//! Synthetic workloads: sequential or random block writes (uniform, zipf, hot/cold) with an
//! optional trim mix, bounded by an amount of bytes.

use crate::IoSource;
use wafsim_core::pipeline::SourceError;
use wafsim_core::{Io, Op, Pid, Rng};

/// Which blocks a random workload picks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Every block equally likely.
    Uniform,
    /// Zipf with exponent theta (0 < theta, theta != 1); block ranks are scattered over the
    /// namespace so hot blocks are not adjacent.
    Zipf(f64),
    /// Fraction `r` of the I/Os go to the first fraction `f` of the blocks, the rest uniformly to
    /// the others.
    HotCold {
        /// Fraction of the I/Os that go to the hot blocks, in (0, 1).
        r: f64,
        /// Fraction of the blocks that are hot (the first ones), in (0, 1).
        f: f64,
    },
}

impl std::str::FromStr for Distribution {
    type Err = String;
    /// `uniform`, `zipf:0.99`, `hotcold:90/10` (percent of I/Os / percent of blocks).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("distribution {s:?}: {why} (expected \"uniform\", \"zipf:THETA\" or \"hotcold:R/F\", e.g. \"hotcold:90/10\")");
        if s == "uniform" || s == "random" {
            return Ok(Distribution::Uniform);
        }
        if let Some(t) = s.strip_prefix("zipf:") {
            let theta: f64 = t.parse().map_err(|_| bad("theta is not a number"))?;
            if !(theta > 0.0) || (theta - 1.0).abs() < 1e-9 || !theta.is_finite() {
                return Err(bad("theta must be > 0 and != 1"));
            }
            return Ok(Distribution::Zipf(theta));
        }
        if let Some(rf) = s.strip_prefix("hotcold:") {
            let (r, f) = rf.split_once('/').ok_or_else(|| bad("missing '/'"))?;
            let r: f64 = r.parse().map_err(|_| bad("R is not a number"))?;
            let f: f64 = f.parse().map_err(|_| bad("F is not a number"))?;
            if !(0.0 < r && r < 100.0 && 0.0 < f && f < 100.0) {
                return Err(bad("R and F must be percentages strictly between 0 and 100"));
            }
            return Ok(Distribution::HotCold { r: r / 100.0, f: f / 100.0 });
        }
        Err(bad("unknown distribution"))
    }
}

/// Access pattern.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    /// Block after block from offset 0, wrapping at the end of the namespace.
    Sequential,
    /// Blocks drawn by the distribution.
    Random(Distribution),
}

/// A synthetic workload against one namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    /// Namespace index the I/Os go to (NVMe nsid - 1).
    pub ns: u32,
    /// Namespace size in bytes (the LBA space the workload covers).
    pub ns_bytes: u64,
    /// Which blocks the I/Os address.
    pub pattern: Pattern,
    /// Block size in bytes.
    pub block_size: u32,
    /// Bytes of I/O (writes + trims) to issue.
    pub amount: u64,
    /// Fraction of I/Os that are trims of one block instead of writes.
    pub trim_fraction: f64,
    /// Placement id every I/O carries ([`Pid::NONE`]: no directive).
    pub pid: Pid,
    /// Seed of the random stream (combined with `ns`, so namespaces given one seed draw
    /// differently).
    pub seed: u64,
}

/// Zipf sampler after Gray et al., "Quickly generating billion-record synthetic databases"
/// (SIGMOD 1994), the method YCSB uses: O(n) set-up, O(1) per sample.
#[derive(Debug, Clone)]
struct Zipf {
    n: f64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipf {
    fn new(n: u64, theta: f64) -> Zipf {
        let zeta = |k: u64| (1..=k).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2.min(n));
        let nf = n as f64;
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipf { n: nf, theta, alpha, zetan, eta }
    }

    /// Rank in [0, n), 0 most popular.
    fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n as u64 - 1);
        }
        let r = (self.n * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n as u64 - 1)
    }
}

/// Generator for a [`SyntheticSpec`].
pub struct Synthetic {
    spec: SyntheticSpec,
    blocks: u64,
    next_seq: u64,
    left: u64,
    rng: Rng,
    zipf: Option<Zipf>,
    /// Multiplier coprime with `blocks`: rank -> block is a bijection that scatters hot ranks.
    scatter: u64,
}

impl Synthetic {
    /// A generator for `spec`; fails if the block size is 0 or larger than the namespace, or the
    /// trim fraction is outside 0..=1.
    pub fn new(spec: SyntheticSpec) -> Result<Synthetic, String> {
        if spec.block_size == 0 {
            return Err("block size must be > 0".into());
        }
        let blocks = spec.ns_bytes / spec.block_size as u64;
        if blocks == 0 {
            return Err(format!("block size {} B exceeds the namespace ({} B)", spec.block_size, spec.ns_bytes));
        }
        if !(0.0..=1.0).contains(&spec.trim_fraction) {
            return Err(format!("trim fraction {} is not within 0..=1", spec.trim_fraction));
        }
        let zipf = match spec.pattern {
            Pattern::Random(Distribution::Zipf(theta)) => Some(Zipf::new(blocks, theta)),
            _ => None,
        };
        // Golden-ratio multiplier made coprime with the block count.
        let mut scatter = ((blocks as f64 * 0.618_033_988_75) as u64).max(1);
        while gcd(scatter, blocks) != 1 {
            scatter += 1;
        }
        Ok(Synthetic {
            rng: Rng::derive(spec.seed, spec.ns as u64),
            left: spec.amount,
            blocks,
            next_seq: 0,
            zipf,
            scatter,
            spec,
        })
    }

    #[inline]
    fn next_block(&mut self) -> u64 {
        match self.spec.pattern {
            Pattern::Sequential => {
                let b = self.next_seq;
                self.next_seq = if b + 1 == self.blocks { 0 } else { b + 1 };
                b
            }
            Pattern::Random(Distribution::Uniform) => self.rng.below(self.blocks),
            Pattern::Random(Distribution::Zipf(_)) => {
                let rank = self.zipf.as_ref().expect("built in new").sample(&mut self.rng);
                ((rank as u128 * self.scatter as u128) % self.blocks as u128) as u64
            }
            Pattern::Random(Distribution::HotCold { r, f }) => {
                let hot = ((self.blocks as f64 * f).round() as u64).clamp(1, self.blocks - 1);
                if self.rng.unit_f64() < r {
                    self.rng.below(hot)
                } else {
                    hot + self.rng.below(self.blocks - hot)
                }
            }
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl IoSource for Synthetic {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        let bs = self.spec.block_size;
        let mut n = 0;
        while n < max && self.left > 0 {
            let block = self.next_block();
            let op = if self.spec.trim_fraction > 0.0 && self.rng.unit_f64() < self.spec.trim_fraction {
                Op::Trim
            } else {
                Op::Write
            };
            // The last I/O takes what is left of the amount, in whole 4 KiB (a device takes whole
            // blocks: a zoned one refuses anything else).
            let len = (bs as u64).min(self.left.div_ceil(4096) * 4096) as u32;
            out.push(Io { op, ns: self.spec.ns, offset: block * bs as u64, len, pid: self.spec.pid });
            self.left = self.left.saturating_sub(len as u64);
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: Pattern, amount: u64) -> SyntheticSpec {
        SyntheticSpec { ns: 0, ns_bytes: 1 << 20, pattern, block_size: 4096, amount, trim_fraction: 0.0, pid: Pid::NONE, seed: 5 }
    }

    fn drain(mut s: Synthetic) -> Vec<Io> {
        let mut v = Vec::new();
        while s.fill(&mut v, 100).unwrap() > 0 {}
        v
    }

    #[test]
    fn sequential_wraps_and_stops_at_amount() {
        let ios = drain(Synthetic::new(spec(Pattern::Sequential, 300 * 4096)).unwrap());
        assert_eq!(ios.len(), 300);
        assert_eq!(ios[0].offset, 0);
        assert_eq!(ios[255].offset, 255 * 4096);
        assert_eq!(ios[256].offset, 0);
    }

    /// An amount that is not whole blocks ends with a write of whole 4 KiB blocks (a zoned or
    /// host-layer device refuses anything else), at least the amount.
    #[test]
    fn the_last_io_of_an_odd_amount_is_whole_4k_blocks() {
        let ios = drain(Synthetic::new(SyntheticSpec { block_size: 1 << 20, ns_bytes: 64 << 20, ..spec(Pattern::Sequential, (3 << 20) + 5000) }).unwrap());
        let lens: Vec<u32> = ios.iter().map(|i| i.len).collect();
        assert_eq!(lens, vec![1 << 20, 1 << 20, 1 << 20, 8192]);
    }

    #[test]
    fn hot_cold_split() {
        let d: Distribution = "hotcold:90/10".parse().unwrap();
        let ios = drain(Synthetic::new(spec(Pattern::Random(d), 100_000 * 4096)).unwrap());
        let hot = ios.iter().filter(|io| io.offset < (26 * 4096)).count() as f64 / ios.len() as f64;
        assert!((hot - 0.9).abs() < 0.01, "{hot}");
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let d: Distribution = "zipf:0.99".parse().unwrap();
        let ios = drain(Synthetic::new(spec(Pattern::Random(d), 100_000 * 4096)).unwrap());
        let mut hits = vec![0u32; 256];
        for io in &ios {
            hits[(io.offset / 4096) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = hits[..26].iter().sum();
        // zipf(0.99) over 256 items: the top 10% draw well over half the accesses.
        assert!(top10 as f64 / ios.len() as f64 > 0.5);
        assert!("zipf:1".parse::<Distribution>().is_err());
        assert!("hotcold:90".parse::<Distribution>().is_err());
    }

    #[test]
    fn trim_mix() {
        let mut s = spec(Pattern::Random(Distribution::Uniform), 10_000 * 4096);
        s.trim_fraction = 0.2;
        let ios = drain(Synthetic::new(s).unwrap());
        let trims = ios.iter().filter(|io| io.op == Op::Trim).count() as f64 / ios.len() as f64;
        assert!((trims - 0.2).abs() < 0.02);
    }
}
