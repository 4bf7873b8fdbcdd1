//! Metadata accounting and flush writes (`dm-zoned-metadata.c`: the layout comment above
//! `struct dmz_super`, `dmz_set_chunk_mapping`, `dmz_get_bitmap`, `dmz_dirty_mblock`,
//! `dmz_flush_metadata`, `dmz_log_dirty_mblocks`, `dmz_write_dirty_mblocks`, `dmz_write_sb`).
//!
//! A metadata set is: block 0 the super block, blocks `1..=nr_map_blocks` the chunk map (512
//! chunks per block), then `zone_bitmap_blocks` bitmap blocks per zone of the whole set of devices
//! (bitmap block of block `b` of zone `z`: `1 + nr_map_blocks + z * zone_bitmap_blocks + b /
//! 32768`). Set 0 (primary) starts at the first cache/conventional zone, set 1 (the log) one set
//! later. The two zones ranges are contiguous.
//!
//! Changing a map entry dirties its map block; changing at least one bit of a bitmap block dirties
//! it; copying a zone's bitmap (`dmz_copy_valid_blocks`) dirties every bitmap block of the
//! destination. A flush with nothing dirty only flushes the metadata device's cache. Otherwise it
//! writes every dirty block to the log set, flushes, writes the log super block, flushes, writes
//! the dirty blocks in place to the primary set, flushes, writes the primary super block,
//! flushes: each dirty block is written twice, plus two super blocks and four cache flushes. The
//! primary set stays the same (the one with the higher generation at load time).
//!
//! The kernel submits the dirty blocks of a step in dirty-list order under one plug; the model
//! sorts them and issues one write per run of consecutive blocks (the block layer merges
//! adjacent requests of a plug). Bytes are the same either way; only the command count differs.

use super::config::{Layout, BITS_PER_BITMAP_BLOCK, BLOCK_SHIFT, BLOCK_SIZE, MAP_ENTRIES_PER_BLOCK};
use super::{DevId, DevIo, DmZoned, IoClass};
use wafsim_core::Op;

/// What metadata flushes cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetadataStats {
    /// Flushes that wrote something.
    pub flushes: u64,
    /// Flushes with nothing dirty (one cache flush only).
    pub empty_flushes: u64,
    /// Dirty metadata blocks flushed (each written twice).
    pub dirty_blocks: u64,
    /// Super block writes.
    pub super_blocks: u64,
    /// Cache flushes sent to the metadata device.
    pub cache_flushes: u64,
    /// Bytes written to the metadata zones.
    pub bytes: u64,
}

/// Dirty metadata blocks and where the sets lie.
#[derive(Debug, Clone)]
pub(crate) struct Metadata {
    nr_map_blocks: u32,
    zone_bitmap_blocks: u32,
    bits_per_block_shift: u32,
    pub(super) dirty_bits: Vec<u64>,
    pub(super) dirty: Vec<u32>,
    dev: DevId,
    set_offset: [u64; 2],
    pub(super) primary: usize,
    /// Super block generation (`sb_gen`).
    pub gen: u64,
    pub stats: MetadataStats,
}

impl Metadata {
    pub fn new(l: &Layout) -> Metadata {
        Metadata {
            nr_map_blocks: l.nr_map_blocks,
            zone_bitmap_blocks: l.zone_bitmap_blocks,
            bits_per_block_shift: BITS_PER_BITMAP_BLOCK.trailing_zeros(),
            dirty_bits: vec![0; (l.nr_meta_blocks as usize).div_ceil(64)],
            dirty: Vec::new(),
            dev: l.meta_dev,
            set_offset: l.meta_offset,
            primary: 0,
            gen: 1,
            stats: MetadataStats::default(),
        }
    }

    fn mark(&mut self, mblk: u32) {
        let (w, b) = ((mblk >> 6) as usize, mblk & 63);
        if self.dirty_bits[w] >> b & 1 == 0 {
            self.dirty_bits[w] |= 1 << b;
            self.dirty.push(mblk);
        }
    }

    /// The map block holding `chunk`'s entry was changed.
    pub fn dirty_map(&mut self, chunk: u32) {
        self.mark(1 + chunk / MAP_ENTRIES_PER_BLOCK);
    }

    /// The bitmap block holding block `cb` of zone `z` was changed.
    pub fn dirty_bitmap(&mut self, z: u32, cb: u32) {
        self.mark(1 + self.nr_map_blocks + z * self.zone_bitmap_blocks + (cb >> self.bits_per_block_shift));
    }

    /// Every bitmap block of zone `z` was rewritten (`dmz_copy_valid_blocks`).
    pub fn dirty_zone_bitmap(&mut self, z: u32) {
        for i in 0..self.zone_bitmap_blocks {
            self.mark(1 + self.nr_map_blocks + z * self.zone_bitmap_blocks + i);
        }
    }

    /// Dirty blocks waiting for the next flush.
    pub fn dirty_count(&self) -> usize {
        self.dirty.len()
    }
}

impl DmZoned {
    /// Flush the metadata (`dmz_flush_metadata`): emits the metadata writes and cache flushes to
    /// the metadata device. Called for a user Flush, after every reclaimed zone, and by a driver
    /// for the 10 s periodic flush.
    pub fn flush_metadata(&mut self, out: &mut Vec<DevIo>) {
        let dev = self.meta.dev;
        if self.meta.dirty.is_empty() {
            self.meta.stats.empty_flushes += 1;
            self.meta.stats.cache_flushes += 1;
            self.emit(out, dev, Op::Flush, 0, 0, IoClass::Metadata);
            return;
        }
        let mut blocks = std::mem::take(&mut self.meta.dirty);
        blocks.sort_unstable();
        let primary = self.meta.primary;
        let mut bytes = 0;
        for set in [primary ^ 1, primary] {
            let base = self.meta.set_offset[set];
            let mut i = 0;
            while i < blocks.len() {
                let mut j = i + 1;
                while j < blocks.len() && blocks[j] == blocks[j - 1] + 1 {
                    j += 1;
                }
                let off = base + ((blocks[i] as u64) << BLOCK_SHIFT);
                let len = ((j - i) as u64) << BLOCK_SHIFT;
                self.emit(out, dev, Op::Write, off, len, IoClass::Metadata);
                bytes += len;
                i = j;
            }
            self.emit(out, dev, Op::Flush, 0, 0, IoClass::Metadata);
            self.emit(out, dev, Op::Write, base, BLOCK_SIZE, IoClass::Metadata);
            self.emit(out, dev, Op::Flush, 0, 0, IoClass::Metadata);
            bytes += BLOCK_SIZE;
        }
        for &b in &blocks {
            self.meta.dirty_bits[(b >> 6) as usize] &= !(1 << (b & 63));
        }
        let s = &mut self.meta.stats;
        s.flushes += 1;
        s.dirty_blocks += blocks.len() as u64;
        s.super_blocks += 2;
        s.cache_flushes += 4;
        s.bytes += bytes;
        self.meta.gen += 1;
        blocks.clear();
        self.meta.dirty = blocks;
    }

    /// Metadata blocks dirty now (written twice at the next flush).
    pub fn dirty_metadata_blocks(&self) -> usize {
        self.meta.dirty_count()
    }
}
