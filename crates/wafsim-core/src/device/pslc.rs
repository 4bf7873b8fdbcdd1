//! The pSLC write cache of client drives: free erase units programmed one bit per cell take host
//! writes (at SLC speed in the timing model) and are folded into native (TLC) erase units later.
//!
//! - Size: a static part (always available) plus a dynamic part, a fraction of the free logical
//!   space (exported capacity that holds no data), so the cache shrinks as the drive fills.
//!   An erase unit in SLC mode holds 1 / `bits_per_cell` of its native capacity, so the cache
//!   costs three times its size in free erase units (TLC).
//! - Host writes land in the open SLC unit while the cache has room; when it is exhausted they
//!   go directly to the TLC host frontier.
//! - Folding copies the still-valid data of the oldest full SLC unit to the GC frontier (a TLC
//!   program of it) and erases the unit. Data overwritten or trimmed while in SLC is never
//!   folded; a full SLC unit whose data is all dead is erased without a fold. Folds happen under
//!   pressure (the free pool falls below `gc_free_min`: folding frees at least 2/3 of an erase
//!   unit per unit, so it comes before GC) and, in timed runs, when the host is idle
//!   ([`Device::background_fold`]). Untimed runs fold on pressure only.
//! - Counters: `slc_units` (SLC programs), `fold_units` (TLC programs of folds); the
//!   `count_slc_programs` switch says whether SLC programs are in the media-written figure.
//!
//! SLC units are in state `SLC` while open and full: GC never picks them (they are not
//! `SEALED`) and they are in no greedy bucket. Their owner is the host frontier.

use super::{Device, NIL};
use crate::config::SlcCacheConfig;
use crate::error::DeviceError;
use crate::io::Io;
use crate::media_op::MediaOp;
use std::collections::VecDeque;

/// Erase-unit state of an SLC-mode unit (open or full).
pub(super) const SLC: u8 = 3;

/// The cache's state.
#[derive(Debug, Clone)]
pub(super) struct SlcCache {
    pub(super) cfg: SlcCacheConfig,
    /// Mapping units an erase unit holds in SLC mode.
    pub(super) cap: u32,
    /// Erase units the static part always allows.
    static_units: u32,
    /// Mapping units of exported capacity (for the free logical space).
    ns_units: u64,
    /// SLC unit being filled, or NIL.
    pub(super) open: u32,
    /// Full SLC units, oldest first (the fold order).
    pub(super) full: VecDeque<u32>,
    /// Host writes of units that held no data: with the device's trimmed units, the mapped
    /// count (only kept while a cache exists, so the plain FTL's write path is untouched).
    pub(super) fresh: u64,
}

impl SlcCache {
    pub(super) fn new(cfg: SlcCacheConfig, np: u32, mapping_unit: u32, ns_units: u64) -> SlcCache {
        let cap = (np / cfg.bits_per_cell).max(1);
        let static_data = cfg.static_bytes / mapping_unit as u64;
        SlcCache { cfg, cap, static_units: static_data.div_ceil(cap as u64) as u32, ns_units, open: NIL, full: VecDeque::new(), fresh: 0 }
    }

    /// SLC erase units in use (open and full).
    pub(super) fn units(&self) -> u32 {
        self.full.len() as u32 + u32::from(self.open != NIL)
    }

    /// SLC erase units the cache may use with `mapped` logical units holding data.
    fn allowed(&self, mapped: u64) -> u32 {
        let free = self.ns_units.saturating_sub(mapped) as f64;
        self.static_units + (self.cfg.dynamic * free / self.cap as f64) as u32
    }
}

impl Device {
    /// Host write with the cache on: each unit goes to SLC while the cache has room, else to
    /// the TLC host frontier.
    pub(super) fn write_cached(&mut self, io: &Io, first: u32, count: u32) -> Result<(), DeviceError> {
        let f = self.count_host_write(io, count);
        let counted = self.slc.as_ref().is_some_and(|s| s.cfg.count_slc_programs);
        for lba in first..first + count {
            let ppa = match self.slc_slot()? {
                Some(p) => {
                    self.counters.slc_units += 1;
                    if !counted {
                        self.counters.uncounted_slc_units += 1;
                        self.counters.namespaces[io.ns as usize].uncounted_slc_units += 1;
                    }
                    p
                }
                None => self.next_slot(f)?,
            };
            let old = self.l2p[lba as usize];
            if old != NIL {
                self.invalidate(old);
            } else if let Some(s) = self.slc.as_mut() {
                s.fresh += 1;
            }
            self.l2p[lba as usize] = ppa;
            self.p2l[ppa as usize] = lba;
        }
        Ok(())
    }

    /// The next SLC slot, opening an SLC unit if the cache may grow; None when the cache is
    /// exhausted (the write goes to TLC).
    fn slc_slot(&mut self) -> Result<Option<u32>, DeviceError> {
        let s = self.slc.as_deref_mut().expect("cache on");
        let u = s.open;
        if u != NIL {
            let w = self.wp[u as usize];
            if w < s.cap {
                self.wp[u as usize] = w + 1;
                self.valid[u as usize] += 1;
                self.clock += 1;
                if self.media.is_some() {
                    self.log_slc_program(u, w);
                }
                return Ok(Some(u * self.np + w));
            }
            s.full.push_back(u);
            s.open = NIL;
        }
        // A full SLC unit whose data has all been overwritten or trimmed leaves without a fold.
        if let Some(&old) = s.full.front() {
            if self.valid[old as usize] == 0 {
                s.full.pop_front();
                self.erase(old);
            }
        }
        let s = self.slc.as_deref().expect("cache on");
        let mapped = s.fresh - self.counters.trimmed_units;
        let free = self.rgs[0].free.len() as u32;
        if s.units() >= s.allowed(mapped) || free <= self.cfg.gc_free_min {
            return Ok(None);
        }
        let u = self.rgs[0].free.pop_front().expect("free pool above its minimum");
        self.state[u as usize] = SLC;
        self.owner[u as usize] = 0;
        self.wp[u as usize] = 1;
        self.valid[u as usize] = 1;
        self.clock += 1;
        self.slc.as_deref_mut().expect("cache on").open = u;
        if self.media.is_some() {
            self.log_slc_program(u, 0);
        }
        Ok(Some(u * self.np))
    }

    /// Log the SLC program a unit written at `w` of SLC unit `u` completes (an SLC program
    /// unit is a page on every plane: 1 / bits_per_cell of a native one).
    #[cold]
    fn log_slc_program(&mut self, u: u32, w: u32) {
        let Some(m) = self.media else { return };
        let per = self.slc_units_per_program();
        if (w + 1) % per == 0 {
            let die = self.unit_rg[u as usize] * m.dies_per_rg + (w / per) % m.dies_per_rg;
            self.media_ops.push(MediaOp::ProgramSlc { die });
        }
    }

    /// Mapping units of one SLC program unit (timed mode).
    pub(super) fn slc_units_per_program(&self) -> u32 {
        match (self.media, self.slc.as_deref()) {
            (Some(m), Some(s)) => (m.units_per_program / s.cfg.bits_per_cell).max(1),
            _ => 1,
        }
    }

    /// Under pressure (reclaim group `rg`'s free pool is below its minimum): fold the oldest
    /// full SLC units until the pool is back at `gc_free_target` or none is left; GC does the
    /// rest.
    pub(super) fn fold_for_space(&mut self, rg: u32) -> Result<(), DeviceError> {
        while (self.rgs[rg as usize].free.len() as u32) < self.cfg.gc_free_target {
            let Some(v) = self.slc.as_deref_mut().and_then(|s| s.full.pop_front()) else { break };
            self.fold(v)?;
        }
        Ok(())
    }

    /// Idle-time folding (the timing model calls it when the host is idle): fold up to
    /// `max_units` full SLC erase units, oldest first. Returns the number folded.
    pub fn background_fold(&mut self, max_units: u32) -> Result<u32, DeviceError> {
        let mut done = 0;
        while done < max_units {
            let Some(v) = self.slc.as_deref_mut().and_then(|s| s.full.pop_front()) else { break };
            self.fold(v)?;
            done += 1;
        }
        Ok(done)
    }

    /// Copy SLC unit `v`'s live data to the GC frontier (TLC) and erase it.
    fn fold(&mut self, v: u32) -> Result<(), DeviceError> {
        let dest = self.frontiers[0].gc_dest;
        let base = v * self.np;
        let mut moved = 0u64;
        let mut last_page = u32::MAX;
        let mut last_read = usize::MAX;
        for p in base..base + self.wp[v as usize] {
            let lba = self.p2l[p as usize];
            if lba == NIL || self.l2p[lba as usize] != p {
                continue;
            }
            if let Some(m) = self.media {
                let page = (p - base) / m.units_per_page;
                if page != last_page {
                    last_page = page;
                    let (die, _) = self.media_pos(p);
                    last_read = self.media_ops.len();
                    self.media_ops.push(MediaOp::ReadGc { die, units: 1 });
                } else if let Some(MediaOp::ReadGc { units, .. }) = self.media_ops.get_mut(last_read) {
                    *units += 1;
                }
            }
            let q = self.next_slot(dest)?;
            self.l2p[lba as usize] = q;
            self.p2l[q as usize] = lba;
            moved += 1;
            // Folds are charged to the namespace whose data they move, as GC copies are.
            let ns = if self.ns_starts.is_empty() { 0 } else { self.ns_starts.partition_point(|&s| s <= lba) };
            self.counters.namespaces[ns].fold_units += 1;
        }
        self.counters.fold_units += moved;
        self.erase(v);
        Ok(())
    }

    /// Whether erase unit `u` is in SLC mode.
    #[inline]
    pub(super) fn is_slc(&self, u: u32) -> bool {
        self.state[u as usize] == SLC
    }

    /// Mapping units of host data the cache holds now (live data in SLC units), and the most
    /// it may hold at the current fill (0, 0 without a cache).
    pub fn slc_cache_usage(&self) -> (u64, u64) {
        let Some(s) = self.slc.as_deref() else { return (0, 0) };
        let live: u64 = s.full.iter().chain((s.open != NIL).then_some(&s.open)).map(|&u| self.valid[u as usize] as u64).sum();
        let mapped = s.fresh - self.counters.trimmed_units;
        (live, s.allowed(mapped) as u64 * s.cap as u64)
    }

    /// Consistency of the cache's state (for `check_invariants`).
    pub(super) fn check_slc(&self) -> Result<(), String> {
        let Some(s) = self.slc.as_deref() else {
            return if self.state.contains(&SLC) { Err("an SLC erase unit without a cache".into()) } else { Ok(()) };
        };
        let listed: Vec<u32> = s.full.iter().copied().chain((s.open != NIL).then_some(s.open)).collect();
        let in_state = self.state.iter().filter(|&&st| st == SLC).count();
        if in_state != listed.len() {
            return Err(format!("{in_state} erase units in SLC state but the cache lists {}", listed.len()));
        }
        for &u in &listed {
            if self.state[u as usize] != SLC || self.wp[u as usize] > s.cap {
                return Err(format!("SLC unit {u}: state {} write pointer {} (SLC capacity {})", self.state[u as usize], self.wp[u as usize], s.cap));
            }
        }
        for &u in &s.full {
            if self.wp[u as usize] != s.cap {
                return Err(format!("full SLC unit {u} written to {} of {}", self.wp[u as usize], s.cap));
            }
        }
        let mapped = self.l2p.iter().filter(|&&p| p != NIL).count() as u64;
        if s.fresh - self.counters.trimmed_units != mapped {
            return Err(format!("cache counts {} mapped units, the map {mapped}", s.fresh - self.counters.trimmed_units));
        }
        if self.state.iter().any(|&st| st > SLC) {
            return Err("unknown erase-unit state".into());
        }
        Ok(())
    }
}
