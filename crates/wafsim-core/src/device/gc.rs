//! Garbage collection: victim selection per policy (greedy by an O(1) bucket queue of valid
//! counts, FIFO, cost-benefit, d-choices), relocation of a victim's live data to the GC frontier
//! its writer designates, erase, and background GC.

use super::{prefetch, Device, FdpEvent, FdpEventKind, FrontierKind, FREE, NIL, PREFETCH_DISTANCE, SEALED};
use crate::error::DeviceError;
use crate::media_op::MediaOp;
use crate::config::GcPolicy;

impl Device {
    #[inline(always)]
    pub(super) fn bq_index(&self, u: u32, v: u32) -> usize {
        self.unit_rg[u as usize] as usize * (self.np as usize + 1) + v as usize
    }

    #[inline(always)]
    pub(super) fn bq_link(&mut self, u: u32, v: u32) {
        let i = self.bq_index(u, v);
        let h = self.bq_heads[i];
        self.bq_next[u as usize] = h;
        self.bq_prev[u as usize] = NIL;
        if h != NIL {
            self.bq_prev[h as usize] = u;
        }
        self.bq_heads[i] = u;
        let rg = &mut self.rgs[self.unit_rg[u as usize] as usize];
        if v < rg.bq_min {
            rg.bq_min = v;
        }
    }

    #[inline(always)]
    pub(super) fn bq_unlink(&mut self, u: u32, v: u32) {
        let p = self.bq_prev[u as usize];
        let n = self.bq_next[u as usize];
        if p != NIL {
            self.bq_next[p as usize] = n;
        } else {
            let i = self.bq_index(u, v);
            self.bq_heads[i] = n;
        }
        if n != NIL {
            self.bq_prev[n as usize] = p;
        }
    }

    /// Garbage-collect reclaim group `rg` until its free pool holds `gc_free_target` units.
    pub(super) fn collect(&mut self, rg: u32) -> Result<(), DeviceError> {
        if self.slc.is_some() {
            // Folding an SLC unit frees at least 2/3 of an erase unit: cheaper than any GC.
            self.fold_for_space(rg)?;
        }
        let target = self.cfg.gc_free_target as usize;
        let mut victims_without_gain = 0u32;
        while self.rgs[rg as usize].free.len() < target {
            let before = self.rgs[rg as usize].free.len();
            let v = self.pick_victim(rg)?;
            self.relocate(v)?;
            self.erase(v);
            if self.rgs[rg as usize].free.len() <= before {
                // A fully valid victim frees nothing net; FIFO may need to pass several, but a
                // whole reclaim group's worth means there is nothing to reclaim.
                victims_without_gain += 1;
                if victims_without_gain > self.geo.eus_per_rg {
                    return Err(DeviceError::NoReclaimableSpace { rg });
                }
            } else {
                victims_without_gain = 0;
            }
        }
        Ok(())
    }

    /// Choose and detach a victim among the sealed units of `rg`.
    pub(super) fn pick_victim(&mut self, rg: u32) -> Result<u32, DeviceError> {
        if self.rgs[rg as usize].sealed == 0 {
            return Err(DeviceError::NoReclaimableSpace { rg });
        }
        let victim = match self.cfg.gc_policy {
            GcPolicy::Greedy => {
                let base = rg as usize * (self.np as usize + 1);
                let mut b = self.rgs[rg as usize].bq_min;
                while self.bq_heads[base + b as usize] == NIL {
                    b += 1;
                }
                self.rgs[rg as usize].bq_min = b;
                let u = self.bq_heads[base + b as usize];
                self.bq_unlink(u, b);
                u
            }
            GcPolicy::Fifo => self.rgs[rg as usize].fifo.pop_front().expect("sealed count says non-empty"),
            GcPolicy::CostBenefit => {
                let first = self.rgs[rg as usize].first_eu;
                let mut best = NIL;
                let mut best_score = f64::NEG_INFINITY;
                for u in first..first + self.geo.eus_per_rg {
                    if self.state[u as usize] != SEALED {
                        continue;
                    }
                    let util = self.valid[u as usize] as f64 / self.np as f64;
                    let age = (self.clock - self.sealed_at[u as usize]) as f64 + 1.0;
                    let score = (1.0 - util) * age / (1.0 + util);
                    if score > best_score {
                        best_score = score;
                        best = u;
                    }
                }
                best
            }
            GcPolicy::BusiestHandle => {
                // Data set of a unit: its writer's handle (a GC chain of one handle counts with
                // it), or `nruh` for GC units several handles share.
                let first = self.rgs[rg as usize].first_eu;
                let sets = self.nruh as usize + 1;
                let set = |d: &Device, u: u32| {
                    let r = d.frontiers[d.owner[u as usize] as usize].ruh;
                    if r == NIL { sets - 1 } else { r as usize }
                };
                let mut held = vec![0u32; sets];
                let mut emptiest = vec![NIL; sets];
                for u in first..first + self.geo.eus_per_rg {
                    if self.state[u as usize] == SEALED {
                        let k = set(self, u);
                        held[k] += 1;
                        if emptiest[k] == NIL || self.valid[u as usize] < self.valid[emptiest[k] as usize] {
                            emptiest[k] = u;
                        }
                    }
                }
                // The busiest set that has something to reclaim (ties to the lower index); a
                // set whose units are all full would free nothing, so it is passed over (FEMU
                // falls back to global greedy likewise), and if every set is full, the emptiest.
                let gain = |u: u32| u != NIL && self.valid[u as usize] < self.np;
                match (0..sets).filter(|&k| gain(emptiest[k])).fold(None, |b: Option<usize>, k| match b {
                    Some(b) if held[b] >= held[k] => Some(b),
                    _ => Some(k),
                }) {
                    Some(k) => emptiest[k],
                    None => emptiest.iter().copied().filter(|&u| u != NIL).min_by_key(|&u| self.valid[u as usize]).expect("sealed count says non-empty"),
                }
            }
            GcPolicy::DChoices(d) => {
                let first = self.rgs[rg as usize].first_eu;
                let n = self.geo.eus_per_rg as u64;
                let mut best = NIL;
                let mut taken = 0;
                // Rejection-sample sealed units; sealed units are the vast majority, so this ends fast.
                while taken < d {
                    let u = first + self.rng.below(n) as u32;
                    if self.state[u as usize] != SEALED {
                        continue;
                    }
                    taken += 1;
                    if best == NIL || self.valid[u as usize] < self.valid[best as usize] {
                        best = u;
                    }
                }
                best
            }
        };
        self.state[victim as usize] = FREE;
        self.rgs[rg as usize].sealed -= 1;
        Ok(victim)
    }

    /// Copy the live data of erase unit `v` to the GC frontier its writer designates.
    pub(super) fn relocate(&mut self, v: u32) -> Result<(), DeviceError> {
        let live = self.valid[v as usize];
        let owner = self.owner[v as usize];
        let dest = self.frontiers[owner as usize].gc_dest;
        let base = (v * self.np) as usize;
        let end = base + self.wp[v as usize] as usize;
        let mut moved = 0u32;
        let single_ns = self.ns_starts.is_empty();
        // Copy into the destination unit with a local cursor; only a full unit goes back
        // through next_slot (which opens the next one).
        let mut cur = self.frontiers[dest as usize].unit;
        let mut room = if cur == NIL { 0 } else { self.np - self.wp[cur as usize] };
        let mut at = if cur == NIL { 0 } else { cur * self.np + self.wp[cur as usize] };
        let mut p = base;
        let mut last_page = u32::MAX;
        let mut last_read = usize::MAX;
        while p < end && moved < live {
            if p + PREFETCH_DISTANCE < end {
                let ahead = self.p2l[p + PREFETCH_DISTANCE];
                if ahead != NIL {
                    prefetch(&self.l2p, ahead as usize);
                }
            }
            let lba = self.p2l[p];
            if lba != NIL && self.l2p[lba as usize] == p as u32 {
                if let Some(m) = self.media {
                    let page = (p - base) as u32 / m.units_per_page;
                    if page != last_page {
                        last_page = page;
                        let die = self.die_of(p as u32);
                        last_read = self.media_ops.len();
                        self.media_ops.push(MediaOp::ReadGc { die, units: 1 });
                    } else if let Some(MediaOp::ReadGc { units, .. }) = self.media_ops.get_mut(last_read) {
                        *units += 1;
                    }
                }
                let new_p = if room > 0 {
                    room -= 1;
                    at += 1;
                    at - 1
                } else {
                    if cur != NIL {
                        self.flush_cursor(dest, cur, at);
                    }
                    let q = self.next_slot(dest)?;
                    cur = self.frontiers[dest as usize].unit;
                    room = self.np - self.wp[cur as usize];
                    at = q + 1;
                    q
                };
                self.l2p[lba as usize] = new_p;
                self.p2l[new_p as usize] = lba;
                moved += 1;
                if !single_ns {
                    let ns = self.ns_starts.partition_point(|&s| s <= lba);
                    self.counters.namespaces[ns].gc_units += 1;
                }
            }
            p += 1;
        }
        if cur != NIL {
            self.flush_cursor(dest, cur, at);
        }
        debug_assert_eq!(moved, live, "valid count of erase unit {v} disagrees with its live P2L entries");
        if single_ns {
            self.counters.namespaces[0].gc_units += moved as u64;
        }
        self.counters.gc_units += moved as u64;
        self.counters.frontiers[dest as usize].gc_units += moved as u64;
        if moved > 0
            && self.is_fdp()
            && self.frontiers[dest as usize].kind == (FrontierKind::Gc { shared: true })
            && self.frontiers[owner as usize].kind == FrontierKind::Host
        {
            let fr = &self.frontiers[owner as usize];
            let (rg, ruh) = (fr.rg, fr.ruh);
            self.counters.fdp_events.media_reallocated += 1;
            self.counters.fdp_events.media_reallocated_units += moved as u64;
            self.log_event(FdpEvent { kind: FdpEventKind::MediaReallocated, rg, ruh, ns: NIL, units: moved as u64 });
        }
        self.valid[v as usize] = 0;
        Ok(())
    }

    /// Write back a local copy cursor: unit `u` is written up to physical unit `at`.
    #[inline(always)]
    pub(super) fn flush_cursor(&mut self, f: u32, u: u32, at: u32) {
        let w = at - u * self.np;
        let old = self.wp[u as usize];
        let added = w - old;
        if self.media.is_some() && added > 0 {
            self.log_programs(f, u, old, w);
        }
        self.wp[u as usize] = w;
        self.valid[u as usize] += added;
        self.clock += added as u64;
    }

    pub(super) fn erase(&mut self, v: u32) {
        let owner = self.owner[v as usize];
        self.counters.frontiers[owner as usize].erases += 1;
        self.counters.erases += 1;
        self.erase_count[v as usize] += 1;
        self.wp[v as usize] = 0;
        self.valid[v as usize] = 0;
        self.owner[v as usize] = NIL;
        self.state[v as usize] = FREE;
        let rg = self.unit_rg[v as usize];
        self.rgs[rg as usize].free.push_back(v);
        if self.media.is_some() {
            self.media_ops.push(MediaOp::Erase { rg });
        }
    }

    /// Background GC (the timing model calls it when the host is idle): in every reclaim group
    /// whose free pool is below `target_free`, collect victims that hold invalid data, at most
    /// `max_victims` in all. Returns the number collected.
    pub fn background_gc(&mut self, target_free: u32, max_victims: u32) -> Result<u32, DeviceError> {
        let mut done = 0;
        for rg in 0..self.rgs.len() as u32 {
            while done < max_victims && (self.rgs[rg as usize].free.len() as u32) < target_free && self.rgs[rg as usize].sealed > 0 {
                // Only worth it if the best victim frees something: peek by policy is costly for
                // non-greedy policies, so take the victim and accept a full one as the end.
                let v = self.pick_victim(rg)?;
                let full = self.valid[v as usize] >= self.np;
                self.relocate(v)?;
                self.erase(v);
                self.counters.background_victims += 1;
                done += 1;
                if full {
                    break;
                }
            }
        }
        Ok(done)
    }
}
