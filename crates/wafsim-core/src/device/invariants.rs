//! Whole-state consistency checks (O(capacity), for tests and debugging) and erase-count
//! statistics.

use super::{Device, FREE, NIL, SEALED};

impl Device {
    /// Check every internal invariant; returns a description of the first violation.
    /// O(capacity): for tests and debugging, not for the hot path.
    pub fn check_invariants(&self) -> Result<(), String> {
        let np = self.np;
        let mut live = vec![0u32; self.valid.len()];
        for (lba, &p) in self.l2p.iter().enumerate() {
            if p == NIL {
                continue;
            }
            if self.p2l[p as usize] != lba as u32 {
                return Err(format!("L2P[{lba}] = {p} but P2L[{p}] = {}", self.p2l[p as usize]));
            }
            let u = p / np;
            if p % np >= self.wp[u as usize] {
                return Err(format!("LBA {lba} maps beyond the write pointer of erase unit {u}"));
            }
            live[u as usize] += 1;
        }
        for u in 0..self.valid.len() {
            if live[u] != self.valid[u] {
                return Err(format!("erase unit {u}: valid count {} but {} live P2L entries", self.valid[u], live[u]));
            }
            if self.state[u] == FREE && live[u] != 0 {
                return Err(format!("free erase unit {u} holds {} live units", live[u]));
            }
        }
        let c = &self.counters;
        let fr_host: u64 = c.frontiers.iter().map(|f| f.host_units).sum();
        let fr_gc: u64 = c.frontiers.iter().map(|f| f.gc_units).sum();
        let ns_host: u64 = c.namespaces.iter().map(|n| n.host_units).sum();
        let ns_gc: u64 = c.namespaces.iter().map(|n| n.gc_units).sum();
        if fr_host != c.host_units || ns_host != c.host_units || fr_gc != c.gc_units || ns_gc != c.gc_units {
            return Err("per-frontier or per-namespace counters do not add up to the device totals".into());
        }
        if self.clock != c.host_units + c.gc_units + c.fold_units {
            return Err(format!(
                "media writes {} != host {} + GC {} + folds {}",
                self.clock, c.host_units, c.gc_units, c.fold_units
            ));
        }
        self.check_slc()?;
        let erases: u64 = self.erase_count.iter().map(|&e| e as u64).sum();
        if erases != c.erases {
            return Err("erase counts do not add up".into());
        }
        if self.greedy {
            let mut in_buckets = 0u32;
            for (i, &h) in self.bq_heads.iter().enumerate() {
                let mut u = h;
                while u != NIL {
                    let v = (i % (np as usize + 1)) as u32;
                    if self.valid[u as usize] != v || self.state[u as usize] != SEALED {
                        return Err(format!("erase unit {u} in greedy bucket {v} has valid {}", self.valid[u as usize]));
                    }
                    in_buckets += 1;
                    u = self.bq_next[u as usize];
                }
            }
            let sealed: u32 = self.rgs.iter().map(|r| r.sealed).sum();
            if in_buckets != sealed {
                return Err(format!("{in_buckets} units in greedy buckets but {sealed} sealed"));
            }
        }
        Ok(())
    }

    /// Minimum, mean and maximum erase count over all erase units.
    pub fn erase_count_stats(&self) -> (u32, f64, u32) {
        let min = self.erase_count.iter().copied().min().unwrap_or(0);
        let max = self.erase_count.iter().copied().max().unwrap_or(0);
        let mean = self.erase_count.iter().map(|&c| c as f64).sum::<f64>() / self.erase_count.len().max(1) as f64;
        (min, mean, max)
    }
}
