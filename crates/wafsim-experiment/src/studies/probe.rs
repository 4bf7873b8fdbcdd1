//! The machine's own limit for the FTL's hot path, measured beside it.
//!
//! The simulator's untimed write path is bound by random memory accesses: each mapping unit
//! written looks up and updates its L2P entry, writes a reverse-map entry and changes a valid
//! count, over tables of a few bytes per mapping unit. What that can reach depends on the
//! machine's memory system, so `wafsim bench` also runs this probe: independent random
//! read-modify-writes of 4-byte entries over a table of the simulator's own footprint, with
//! the next entries prefetched a fixed distance ahead (the best of [`PREFETCH_DISTANCES`]).
//! Its updates per second are the limit a simulator doing one such access per write could
//! reach on this machine; the bench reports its media writes per second as a ratio to it.

use std::time::Instant;
use wafsim_core::prefetch::prefetch;
use wafsim_core::Rng;

/// Prefetch distances tried, in updates ahead (0: no prefetch).
pub const PREFETCH_DISTANCES: [usize; 6] = [0, 16, 32, 64, 128, 256];

/// What [`ProbeTable::best`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeResult {
    /// Bytes of the table the updates went to (the footprint it was asked for, rounded down to
    /// whole 4-byte entries).
    pub bytes: u64,
    /// Random updates per second of wall clock at the best prefetch distance.
    pub updates_per_sec: f64,
    /// The prefetch distance that gave it.
    pub prefetch_distance: usize,
}

/// A table of `bytes` (at least one 4-byte entry), every page touched once so that page faults
/// are not measured.
pub struct ProbeTable(Vec<u32>);

impl ProbeTable {
    /// Allocate and touch a table of `bytes`.
    pub fn new(bytes: u64) -> ProbeTable {
        ProbeTable(wafsim_core::hugepage::table((bytes / 4).max(1) as usize, 1u32))
    }

    /// Bytes of the table.
    pub fn bytes(&self) -> u64 {
        self.0.len() as u64 * 4
    }

    /// `updates` random read-modify-writes with the entries `distance` updates ahead
    /// prefetched; returns updates per second. The indices come from two copies of one random
    /// stream, `distance` apart, so no index buffer adds memory traffic.
    pub fn updates_per_sec(&mut self, updates: u64, distance: usize, seed: u64) -> f64 {
        let t = &mut self.0;
        let n = t.len() as u64;
        let mut now = Rng::new(seed);
        let mut ahead = Rng::new(seed);
        for _ in 0..distance {
            ahead.below(n);
        }
        let t0 = Instant::now();
        if distance == 0 {
            for _ in 0..updates {
                let i = now.below(n) as usize;
                t[i] = t[i].wrapping_add(1);
            }
        } else {
            for _ in 0..updates {
                prefetch(t, ahead.below(n) as usize);
                let i = now.below(n) as usize;
                t[i] = t[i].wrapping_add(1);
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        // Keep the updates observable, so none is optimised away.
        std::hint::black_box(&t[0]);
        updates as f64 / secs.max(1e-9)
    }

    /// The best of [`PREFETCH_DISTANCES`], `updates` each.
    pub fn best(&mut self, updates: u64, seed: u64) -> ProbeResult {
        let mut best = ProbeResult { bytes: self.bytes(), updates_per_sec: 0.0, prefetch_distance: 0 };
        for d in PREFETCH_DISTANCES {
            let r = self.updates_per_sec(updates, d, seed);
            if r > best.updates_per_sec {
                best.updates_per_sec = r;
                best.prefetch_distance = d;
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_updates_every_entry_it_draws_at_every_distance() {
        let mut t = ProbeTable::new(4096);
        assert_eq!(t.bytes(), 4096);
        let before: u64 = t.0.iter().map(|&x| x as u64).sum();
        for d in PREFETCH_DISTANCES {
            assert!(t.updates_per_sec(1000, d, 7) > 0.0);
        }
        let after: u64 = t.0.iter().map(|&x| x as u64).sum();
        assert_eq!(after - before, 1000 * PREFETCH_DISTANCES.len() as u64, "one increment per update");
        assert_eq!(ProbeTable::new(10).bytes(), 8, "whole entries");
    }
}
