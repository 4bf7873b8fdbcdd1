//! Logical-to-physical mapping: bounds of a command, host writes, reads and trims, and
//! invalidation of overwritten data (which moves an erase unit between greedy buckets).

use super::{Device, NIL, SEALED};
use crate::error::DeviceError;
use crate::io::Io;

impl Device {
    /// Check bounds; return the first global mapping unit and how many units the I/O touches.
    #[inline]
    pub(super) fn unit_range(&self, io: &Io) -> Result<(u32, u32), DeviceError> {
        let ns = io.ns as usize;
        let Some(&size) = self.ns_bytes.get(ns) else {
            return Err(DeviceError::NoSuchNamespace(io.ns));
        };
        if io.len == 0 {
            return Err(DeviceError::ZeroLength);
        }
        let end = io.offset + io.len as u64;
        if end > size {
            return Err(DeviceError::OutOfRange { ns: io.ns, offset: io.offset, len: io.len, size });
        }
        let first = (io.offset >> self.mu_shift) as u32;
        let last = ((end - 1) >> self.mu_shift) as u32;
        Ok((self.ns_base[ns] + first, last - first + 1))
    }

    pub(super) fn write(&mut self, io: &Io, first: u32, count: u32) -> Result<(), DeviceError> {
        if self.slc.is_some() {
            return self.write_cached(io, first, count);
        }
        let f = self.count_host_write(io, count);
        let end = first + count;
        let mut lba = first;
        while lba < end {
            // A run of the write that fits in the frontier's open unit takes its slots at once:
            // what next_slot does unit by unit, for a whole fill or sequential stream at memory
            // speed. Exact: opening a unit (and GC) happens only between runs, and inside one the
            // invalidations come in the same order (the open unit is never in a GC bucket).
            let u = self.frontiers[f as usize].unit;
            let room = if u == NIL { 0 } else { self.np - self.wp[u as usize] };
            if room == 0 {
                let ppa = self.next_slot(f)?;
                self.map_host_unit(lba, ppa);
                lba += 1;
                continue;
            }
            let n = room.min(end - lba);
            let w = self.wp[u as usize];
            self.wp[u as usize] = w + n;
            self.valid[u as usize] += n;
            self.clock += n as u64;
            if self.media.is_some() {
                self.log_programs(f, u, w, w + n);
            }
            let base = u * self.np + w;
            for i in 0..n {
                self.map_host_unit(lba + i, base + i);
            }
            lba += n;
        }
        Ok(())
    }

    /// Map `lba` to the fresh physical unit `ppa`, invalidating its old copy.
    #[inline(always)]
    fn map_host_unit(&mut self, lba: u32, ppa: u32) {
        let old = self.l2p[lba as usize];
        if old != NIL {
            self.invalidate(old);
        }
        self.l2p[lba as usize] = ppa;
        self.p2l[ppa as usize] = lba;
    }

    /// Count a host write of `count` mapping units (drive, namespace, frontier); its frontier.
    #[inline(always)]
    pub(super) fn count_host_write(&mut self, io: &Io, count: u32) -> u32 {
        let f = self.resolve_frontier(io.ns, io.pid);
        let c = &mut self.counters;
        c.host_write_bytes += io.len as u64;
        c.host_units += count as u64;
        let n = &mut c.namespaces[io.ns as usize];
        n.host_write_bytes += io.len as u64;
        n.host_units += count as u64;
        c.frontiers[f as usize].host_units += count as u64;
        f
    }

    pub(super) fn read(&mut self, io: &Io, first: u32, count: u32) {
        let c = &mut self.counters;
        c.host_read_bytes += io.len as u64;
        c.read_units += count as u64;
        c.namespaces[io.ns as usize].host_read_bytes += io.len as u64;
        let unmapped = self.l2p[first as usize..(first + count) as usize].iter().filter(|&&p| p == NIL).count();
        self.counters.unmapped_read_units += unmapped as u64;
    }

    pub(super) fn trim(&mut self, io: &Io, first: u32, count: u32) {
        self.counters.trim_bytes += io.len as u64;
        self.counters.namespaces[io.ns as usize].trim_bytes += io.len as u64;
        // Only mapping units the range covers completely are deallocated; a partial unit keeps
        // its data (deallocation is advisory in NVMe, and a partial unit cannot be dropped).
        let mu = 1u64 << self.mu_shift;
        let mut lo = first;
        let mut hi = first + count;
        if io.offset % mu != 0 {
            lo += 1;
        }
        if (io.offset + io.len as u64) % mu != 0 {
            hi -= 1;
        }
        for lba in lo..hi.max(lo) {
            let old = self.l2p[lba as usize];
            if old != NIL {
                self.invalidate(old);
                self.l2p[lba as usize] = NIL;
                self.counters.trimmed_units += 1;
            }
        }
    }

    /// Physical unit `p` no longer holds live data.
    #[inline(always)]
    pub(super) fn invalidate(&mut self, p: u32) {
        let u = self.div.div(p);
        let v = self.valid[u as usize];
        self.valid[u as usize] = v - 1;
        if self.greedy && self.state[u as usize] == SEALED {
            self.bq_unlink(u, v);
            self.bq_link(u, v - 1);
        }
    }

    /// Physical mapping unit holding byte `offset` of namespace `ns`, or None if unmapped or out
    /// of range.
    pub fn lookup(&self, ns: u32, offset: u64) -> Option<u32> {
        let base = *self.ns_base.get(ns as usize)?;
        if offset >= *self.ns_bytes.get(ns as usize)? {
            return None;
        }
        let p = self.l2p[(base as u64 + (offset >> self.mu_shift)) as usize];
        (p != NIL).then_some(p)
    }

    /// Namespace owning global LBA `lba`.
    pub fn namespace_of(&self, lba: u32) -> u32 {
        self.ns_starts.partition_point(|&s| s <= lba) as u32
    }

    /// Global LBA of mapping unit `unit` of namespace `ns`.
    pub fn global_lba(&self, ns: u32, unit: u32) -> u32 {
        self.ns_base[ns as usize] + unit
    }

    /// Global LBAs whose live data sits in erase unit `u` (for inspection and tests).
    pub fn live_lbas(&self, u: u32) -> Vec<u32> {
        let base = u * self.np;
        (base..base + self.wp[u as usize])
            .filter(|&p| {
                let l = self.p2l[p as usize];
                l != NIL && self.l2p[l as usize] == p
            })
            .map(|p| self.p2l[p as usize])
            .collect()
    }
}
