//! Division of u32 by a run-time constant with one multiply (Lemire, Kaser, Kurz: "Faster
//! remainder by direct computation", 2019). Needed because an erase unit need not hold a power
//! of two mapping units (e.g. 1536 pages per block) and a hardware divide costs ~25 cycles on the
//! hot path.

/// A divisor fixed at construction, with its precomputed reciprocal: [`FastDiv::div`] costs a
/// multiply instead of a divide.
#[derive(Debug, Clone, Copy)]
pub struct FastDiv {
    m: u64,
    d: u32,
}

impl FastDiv {
    /// Precompute division by `d` (> 0).
    pub fn new(d: u32) -> Self {
        assert!(d > 0);
        FastDiv { m: (u64::MAX / d as u64).wrapping_add(1), d }
    }

    /// `n / d`, exact for every u32 `n`.
    #[inline(always)]
    pub fn div(&self, n: u32) -> u32 {
        if self.d == 1 {
            return n;
        }
        ((self.m as u128 * n as u128) >> 64) as u32
    }

    /// The `d` this divides by (for the remainder, `n - div(n) * d`).
    pub fn divisor(&self) -> u32 {
        self.d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact() {
        for d in [1u32, 2, 3, 7, 64, 1536, 65536, 98304, 1 << 20, u32::MAX] {
            let f = FastDiv::new(d);
            for n in [0u32, 1, d - 1, d, d.wrapping_add(1), 12345678, u32::MAX - 1, u32::MAX] {
                assert_eq!(f.div(n), n / d, "n={n} d={d}");
            }
        }
    }
}
