//! Chunk mapping, validity bitmaps and the user I/O path.
//!
//! Kernel sources: `dm-zoned-target.c` (`dmz_map` splits BIOs at chunk boundaries,
//! `dmz_handle_write` / `dmz_handle_direct_write` / `dmz_handle_buffered_write`,
//! `dmz_handle_read`, `dmz_handle_discard`) and `dm-zoned-metadata.c` (`dmz_get_chunk_mapping`,
//! `dmz_get_chunk_buffer`, `dmz_put_chunk_mapping`, `dmz_map_zone`, `dmz_unmap_zone`,
//! `dmz_validate_blocks`, `dmz_invalidate_blocks`, `dmz_block_valid`, `dmz_first_valid_block`).
//!
//! Each chunk piece of a command is handled on its own, as the kernel handles the split BIOs:
//! get the mapping (allocating a zone for a write to an unmapped chunk), do the I/O, then put
//! the mapping, which frees a buffer zone left without valid blocks and a data zone left without
//! valid blocks and without a buffer.

use super::config::{BITS_PER_BITMAP_BLOCK, BLOCK_SHIFT, BLOCK_SIZE};
use super::zones::{F_BUF, F_RECLAIM};
use super::{DevIo, DmZoned, HostError, IoClass, MapStatus, StallReason, NONE};
use wafsim_core::{Io, Op};

/// One validity bitmap per zone, `Vec<u64>` words, allocated on first use (a zone never
/// written costs nothing).
#[derive(Debug, Clone)]
pub(crate) struct Bitmaps {
    zone_blocks: u32,
    pub(super) words: usize,
    pub(super) maps: Vec<Vec<u64>>,
}

impl Bitmaps {
    pub fn new(nr_zones: u32, zone_blocks: u32) -> Bitmaps {
        Bitmaps { zone_blocks, words: (zone_blocks as usize).div_ceil(64), maps: vec![Vec::new(); nr_zones as usize] }
    }

    fn words_mut(&mut self, z: u32) -> &mut Vec<u64> {
        let m = &mut self.maps[z as usize];
        if m.is_empty() {
            m.resize(self.words, 0);
        }
        m
    }

    /// Whether block `b` of zone `z` is valid.
    pub fn test(&self, z: u32, b: u32) -> bool {
        self.maps[z as usize].get((b >> 6) as usize).is_some_and(|w| w >> (b & 63) & 1 != 0)
    }

    /// Apply `f(word, mask)` to the words covering `[start, start + n)`; returns the sum of what
    /// `f` returns.
    fn for_range(&mut self, z: u32, start: u32, n: u32, mut f: impl FnMut(&mut u64, u64) -> u32) -> u32 {
        let words = self.words_mut(z);
        let mut b = start;
        let end = start + n;
        let mut total = 0;
        while b < end {
            let w = (b >> 6) as usize;
            let lo = b & 63;
            let hi = ((end - (b - lo)).min(64)) as u64;
            let mask = if hi == 64 { !0u64 << lo } else { ((1u64 << hi) - 1) & (!0u64 << lo) };
            total += f(&mut words[w], mask);
            b = (b - lo) + hi as u32;
        }
        total
    }

    /// Set bits `[start, start + n)`; returns how many changed from 0 to 1.
    pub fn set_range(&mut self, z: u32, start: u32, n: u32) -> u32 {
        if n == 1 {
            // One block (a 4 KiB write): no mask loop, no population count.
            let w = &mut self.words_mut(z)[(start >> 6) as usize];
            let bit = 1u64 << (start & 63);
            let changed = (*w & bit == 0) as u32;
            *w |= bit;
            return changed;
        }
        self.for_range(z, start, n, |w, m| {
            let c = (!*w & m).count_ones();
            *w |= m;
            c
        })
    }

    /// Clear bits `[start, start + n)`; returns how many changed from 1 to 0.
    pub fn clear_range(&mut self, z: u32, start: u32, n: u32) -> u32 {
        if self.maps[z as usize].is_empty() {
            return 0;
        }
        if n == 1 {
            let w = &mut self.maps[z as usize][(start >> 6) as usize];
            let bit = 1u64 << (start & 63);
            let changed = (*w & bit != 0) as u32;
            *w &= !bit;
            return changed;
        }
        self.for_range(z, start, n, |w, m| {
            let c = (*w & m).count_ones();
            *w &= !m;
            c
        })
    }

    /// Number of consecutive blocks from `start` whose bit equals `value`, up to the zone end.
    pub fn run_len(&self, z: u32, start: u32, value: bool) -> u32 {
        let zb = self.zone_blocks;
        if start >= zb {
            return 0;
        }
        let m = &self.maps[z as usize];
        if m.is_empty() {
            return if value { 0 } else { zb - start };
        }
        let mut w = (start >> 6) as usize;
        let mut x = if value { !m[w] } else { m[w] } >> (start & 63);
        let mut n = 0u32;
        if x != 0 {
            return (x.trailing_zeros()).min(zb - start);
        }
        n += 64 - (start & 63);
        w += 1;
        while w < m.len() {
            x = if value { !m[w] } else { m[w] };
            if x != 0 {
                return (n + x.trailing_zeros()).min(zb - start);
            }
            n += 64;
            w += 1;
        }
        n.min(zb - start)
    }

    /// First valid extent at or after `from`: (first block, length) (`dmz_first_valid_block`).
    pub fn first_valid(&self, z: u32, from: u32) -> Option<(u32, u32)> {
        let skip = self.run_len(z, from, false);
        let s = from + skip;
        if s >= self.zone_blocks {
            return None;
        }
        Some((s, self.run_len(z, s, true)))
    }

    /// Valid blocks of zone `z`.
    pub fn count(&self, z: u32) -> u32 {
        self.maps[z as usize].iter().map(|w| w.count_ones()).sum()
    }

    /// Copy zone `from`'s bitmap over zone `to`'s (`dmz_copy_valid_blocks`).
    pub fn copy(&mut self, from: u32, to: u32) {
        let src = self.maps[from as usize].clone();
        if src.is_empty() {
            self.maps[to as usize].iter_mut().for_each(|w| *w = 0);
        } else {
            self.maps[to as usize] = src;
        }
    }
}

impl DmZoned {
    /// Split `io` into (first block, blocks) after the checks of `dmz_map`.
    fn check_io(&self, io: &Io) -> Result<(u64, u64), HostError> {
        if io.ns != 0 {
            return Err(HostError::NoSuchNamespace(io.ns));
        }
        if io.len == 0 {
            return Err(HostError::ZeroLength);
        }
        if !io.offset.is_multiple_of(BLOCK_SIZE) || !(io.len as u64).is_multiple_of(BLOCK_SIZE) {
            return Err(HostError::Misaligned { offset: io.offset, len: io.len });
        }
        let size = self.capacity();
        if io.offset.checked_add(io.len as u64).is_none_or(|e| e > size) {
            return Err(HostError::OutOfRange { offset: io.offset, len: io.len, size });
        }
        Ok((io.offset >> BLOCK_SHIFT, io.len as u64 >> BLOCK_SHIFT))
    }

    /// Run `f(chunk, chunk_block, blocks)` on every chunk piece of `io`, stopping at the first
    /// stall.
    fn for_pieces(
        &mut self,
        io: &Io,
        out: &mut Vec<DevIo>,
        mut f: impl FnMut(&mut DmZoned, u32, u32, u32, &mut Vec<DevIo>) -> Option<StallReason>,
    ) -> Result<MapStatus, HostError> {
        let (first, blocks) = self.check_io(io)?;
        let zb = self.layout.zone_blocks as u64;
        let end = first + blocks;
        let mut b = first;
        while b < end {
            let chunk = (b / zb) as u32;
            let cb = (b % zb) as u32;
            let n = (end - b).min(zb - cb as u64) as u32;
            if let Some(reason) = f(self, chunk, cb, n, out) {
                return Ok(MapStatus::Stalled { done_bytes: (b - first) << BLOCK_SHIFT, reason });
            }
            b += n as u64;
        }
        Ok(MapStatus::Done)
    }

    /// Map a user write (`io.op` is not looked at): emits the data writes (and the resets of
    /// zones it frees) to `out`. Stalls when a zone is needed and none is free, or when the chunk
    /// is being reclaimed.
    pub fn map_write(&mut self, io: &Io, out: &mut Vec<DevIo>) -> Result<MapStatus, HostError> {
        self.for_pieces(io, out, |s, c, cb, n, out| s.write_piece(c, cb, n, out))
    }

    /// Map a user read (`io.op` is not looked at): one device read per valid run; blocks without valid data read as zeros
    /// without a device access.
    pub fn map_read(&mut self, io: &Io, out: &mut Vec<DevIo>) -> Result<MapStatus, HostError> {
        self.for_pieces(io, out, |s, c, cb, n, out| s.read_piece(c, cb, n, out))
    }

    /// Map a user discard or WRITE ZEROES (`io.op` is not looked at): invalidates blocks; nothing is sent to the devices
    /// except the resets of sequential zones it empties.
    pub fn map_trim(&mut self, io: &Io, out: &mut Vec<DevIo>) -> Result<MapStatus, HostError> {
        self.for_pieces(io, out, |s, c, cb, n, out| s.trim_piece(c, cb, n, out))
    }

    /// A user Flush (an empty REQ_PREFLUSH write): a metadata flush (`dmz_flush_work`).
    pub fn map_flush(&mut self, out: &mut Vec<DevIo>) {
        self.flush_metadata(out);
    }

    /// The mapped chunk's data zone is locked by reclaim: ask the job to stop at its next extent
    /// (`DMZ_RECLAIM_TERMINATE`) and stall.
    fn reclaim_conflict(&mut self, dz: u32) -> Option<StallReason> {
        if self.zones.has(dz, F_RECLAIM) {
            let worker = self.reclaim.request_terminate(dz);
            return Some(StallReason::ChunkInReclaim { worker });
        }
        None
    }

    fn write_piece(&mut self, chunk: u32, cb: u32, n: u32, out: &mut Vec<DevIo>) -> Option<StallReason> {
        let mut dz = self.map[chunk as usize];
        if dz == NONE {
            // A write to an unmapped chunk always takes a cache (or random) zone.
            dz = match self.zones.alloc_user() {
                Some(z) => z,
                None => return Some(StallReason::NoFreeZone),
            };
            self.map_zone(dz, chunk);
        } else {
            if let Some(r) = self.reclaim_conflict(dz) {
                return Some(r);
            }
            let needs_buffer =
                self.zones.is_seq(dz) && cb != self.zones.wp[dz as usize] && self.zones.bzone[dz as usize] == NONE;
            if needs_buffer && self.free_user_zones() == 0 {
                return Some(StallReason::NoFreeZone);
            }
        }
        self.lru(dz);
        let d = dz as usize;
        if !self.zones.is_seq(dz) || cb == self.zones.wp[d] {
            // Direct write: in place, or at the write pointer.
            self.emit_zone(out, dz, Op::Write, cb, n, IoClass::User);
            if self.zones.is_seq(dz) {
                self.zones.wp[d] += n;
            }
            self.validate(dz, cb, n);
            let bz = self.zones.bzone[d];
            if bz != NONE {
                self.invalidate(bz, cb, n);
            }
        } else {
            // Buffered write: same in-chunk offset of the buffer zone.
            let mut bz = self.zones.bzone[d];
            if bz == NONE {
                bz = self.zones.alloc_user().expect("checked above");
                self.zones.set_flag(bz, F_BUF);
                self.zones.chunk[bz as usize] = chunk;
                self.zones.bzone[bz as usize] = dz;
                self.zones.bzone[d] = bz;
                self.meta.dirty_map(chunk);
                let l = self.zones.map_list(bz);
                self.zones.push_back(l, bz);
            }
            self.emit_zone(out, bz, Op::Write, cb, n, IoClass::User);
            self.validate(bz, cb, n);
            if cb < self.zones.wp[d] {
                self.invalidate(dz, cb, n);
            }
        }
        let bytes = (n as u64) << BLOCK_SHIFT;
        let c = &mut self.counters;
        c.host_write_bytes += bytes;
        c.host_units += n as u64;
        c.namespaces[0].host_write_bytes += bytes;
        c.namespaces[0].host_units += n as u64;
        self.put_chunk_mapping(dz, IoClass::User, out);
        None
    }

    fn read_piece(&mut self, chunk: u32, cb: u32, n: u32, out: &mut Vec<DevIo>) -> Option<StallReason> {
        let dz = self.map[chunk as usize];
        let bytes = (n as u64) << BLOCK_SHIFT;
        if dz == NONE {
            self.count_read(bytes, n, n);
            return None;
        }
        if let Some(r) = self.reclaim_conflict(dz) {
            return Some(r);
        }
        self.lru(dz);
        let d = dz as usize;
        let bz = self.zones.bzone[d];
        let end = cb + n;
        let mut b = cb;
        let mut zeros = 0;
        while b < end {
            let mut run = 0;
            let mut rz = dz;
            if !self.zones.is_seq(dz) || b < self.zones.wp[d] {
                run = self.bitmaps.run_len(dz, b, true);
            }
            if run == 0 && bz != NONE {
                run = self.bitmaps.run_len(bz, b, true);
                rz = bz;
            }
            if run > 0 {
                let run = run.min(end - b);
                self.emit_zone(out, rz, Op::Read, b, run, IoClass::User);
                b += run;
            } else {
                // No valid block: the kernel zero-fills one block and moves on.
                zeros += 1;
                b += 1;
            }
        }
        self.count_read(bytes, n, zeros);
        self.put_chunk_mapping(dz, IoClass::User, out);
        None
    }

    fn count_read(&mut self, bytes: u64, blocks: u32, zeros: u32) {
        let c = &mut self.counters;
        c.host_read_bytes += bytes;
        c.read_units += blocks as u64;
        c.unmapped_read_units += zeros as u64;
        c.namespaces[0].host_read_bytes += bytes;
    }

    fn trim_piece(&mut self, chunk: u32, cb: u32, n: u32, out: &mut Vec<DevIo>) -> Option<StallReason> {
        let dz = self.map[chunk as usize];
        let bytes = (n as u64) << BLOCK_SHIFT;
        self.counters.trim_bytes += bytes;
        self.counters.namespaces[0].trim_bytes += bytes;
        if dz == NONE {
            return None;
        }
        if let Some(r) = self.reclaim_conflict(dz) {
            self.counters.trim_bytes -= bytes;
            self.counters.namespaces[0].trim_bytes -= bytes;
            return Some(r);
        }
        self.lru(dz);
        let d = dz as usize;
        let mut changed = 0;
        if !self.zones.is_seq(dz) || cb < self.zones.wp[d] {
            changed += self.invalidate(dz, cb, n);
        }
        let bz = self.zones.bzone[d];
        if bz != NONE {
            changed += self.invalidate(bz, cb, n);
        }
        self.counters.trimmed_units += changed as u64;
        self.put_chunk_mapping(dz, IoClass::User, out);
        None
    }

    /// Rotate a data zone and its buffer zone to the tails of their lists (`dmz_lru_zone`).
    #[inline]
    pub(crate) fn lru(&mut self, dz: u32) {
        self.zones.rotate(dz);
        let bz = self.zones.bzone[dz as usize];
        if bz != NONE {
            self.zones.rotate(bz);
        }
    }

    /// After a user BIO: free an empty buffer zone, and an empty data zone without buffer
    /// (`dmz_put_chunk_mapping`).
    pub(crate) fn put_chunk_mapping(&mut self, dz: u32, class: IoClass, out: &mut Vec<DevIo>) {
        let bz = self.zones.bzone[dz as usize];
        if bz != NONE && self.zones.weight[bz as usize] == 0 {
            self.unmap_zone(bz);
            self.free_zone(bz, class, out);
        }
        if self.zones.bzone[dz as usize] != NONE || self.zones.weight[dz as usize] > 0 {
            self.lru(dz);
        } else {
            self.unmap_zone(dz);
            self.free_zone(dz, class, out);
        }
    }

    /// Map `chunk` to data zone `z` (`dmz_map_zone`).
    pub(crate) fn map_zone(&mut self, z: u32, chunk: u32) {
        self.map[chunk as usize] = z;
        self.meta.dirty_map(chunk);
        self.zones.chunk[z as usize] = chunk;
        let l = self.zones.map_list(z);
        self.zones.push_back(l, z);
    }

    /// Unmap zone `z`: a buffer zone leaves its chunk's map entry to the data zone alone; a data
    /// zone clears the entry (`dmz_unmap_zone`).
    pub(crate) fn unmap_zone(&mut self, z: u32) {
        let zi = z as usize;
        let chunk = self.zones.chunk[zi];
        if chunk == NONE {
            return;
        }
        if self.zones.has(z, F_BUF) {
            self.zones.clear_flag(z, F_BUF);
            let dz = self.zones.bzone[zi];
            self.zones.bzone[dz as usize] = NONE;
            self.zones.bzone[zi] = NONE;
        } else {
            let bz = self.zones.bzone[zi];
            debug_assert_eq!(bz, NONE, "unmapping a data zone that still has a buffer");
            if bz != NONE {
                self.zones.bzone[bz as usize] = NONE;
                self.zones.bzone[zi] = NONE;
            }
            self.map[chunk as usize] = NONE;
        }
        self.meta.dirty_map(chunk);
        self.zones.chunk[zi] = NONE;
        self.zones.remove(z);
    }

    /// Apply a bitmap change per 4 KiB bitmap block, dirtying each block whose bits changed and
    /// returning the bits changed.
    fn bitmap_op(&mut self, z: u32, cb: u32, n: u32, set: bool) -> u32 {
        // Both are powers of two (zone sizes are): a shift, not a division.
        let shift = self.layout.zone_blocks.min(BITS_PER_BITMAP_BLOCK).trailing_zeros();
        let end = cb + n;
        let mut b = cb;
        let mut total = 0;
        while b < end {
            let seg_end = end.min(((b >> shift) + 1) << shift);
            let c = if set {
                self.bitmaps.set_range(z, b, seg_end - b)
            } else {
                self.bitmaps.clear_range(z, b, seg_end - b)
            };
            if c > 0 {
                self.meta.dirty_bitmap(z, b);
            }
            total += c;
            b = seg_end;
        }
        total
    }

    /// Mark `[cb, cb + n)` valid in zone `z` (`dmz_validate_blocks`); returns the blocks that
    /// became valid.
    pub(crate) fn validate(&mut self, z: u32, cb: u32, n: u32) -> u32 {
        let c = self.bitmap_op(z, cb, n, true);
        let w = &mut self.zones.weight[z as usize];
        *w = (*w + c).min(self.layout.zone_blocks);
        c
    }

    /// Mark `[cb, cb + n)` invalid in zone `z` (`dmz_invalidate_blocks`); returns the blocks that
    /// were valid.
    pub(crate) fn invalidate(&mut self, z: u32, cb: u32, n: u32) -> u32 {
        let c = self.bitmap_op(z, cb, n, false);
        let w = &mut self.zones.weight[z as usize];
        *w = w.saturating_sub(c);
        c
    }
}
