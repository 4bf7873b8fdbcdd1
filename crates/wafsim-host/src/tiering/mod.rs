//! A two-tier block layer in the manner of HSE's media classes (a small fast "staging" device
//! for hot data, a large "capacity" device for cold data): one conventional namespace of the
//! cold device's capacity, cached write-back by the hot device. Untimed, pure logic.
//!
//! # Model
//!
//! **Extents.** The exposed namespace is cut into extents of `extent_bytes` (a multiple of
//! 4 KiB); its size is the cold device's namespace 0 rounded down to whole extents (the hot tier
//! caches, it adds no capacity). The cold device is direct-mapped: extent `e` lives at byte
//! `e * extent_bytes` of the cold device (its *home*). The hot device is cut into slots of one
//! extent each (slot `s` at byte `s * extent_bytes`).
//!
//! **Writes** go to the hot tier (write-back): an extent without a slot gets a free one, and
//! the written 4 KiB blocks are marked dirty in the slot's bitmap. Slots are ordered by their
//! last write (LRU); each extent also counts the write commands it received
//! ([`Tiering::extent_writes`], the "frequently updated" measure; the victim choice itself is
//! pure LRU).
//!
//! **Migration.** When free slots drop below the low watermark (`low_free_pct` of the slots,
//! at least 1), the least recently written slots are migrated until the high watermark
//! (`high_free_pct`) is reached: each dirty run is read from the hot slot and written to the
//! extent's home on the cold device, then the whole slot is trimmed on the hot device and freed.
//! Only dirty blocks move. A write that needs a slot when none is free migrates the LRU slot
//! first, inline.
//!
//! **Reads** go to the hot slot for dirty blocks and to the cold home for all others (never
//! written blocks included, as a plain device would read them). **Trims** clear both tiers: dirty
//! bits of a hot slot (a slot left with no dirty block is freed at once) and the blocks on cold.
//!
//! # Layer and driver
//!
//! [`Tiering`] never touches a device: `map_write`, `map_read`, `map_trim` and
//! `migrate_to_watermark` append device commands ([`TierIo`]) to a list, in order (a migration
//! write depends on the migration read just before it). [`TieringDevice`] is the untimed
//! driver: it owns both devices, submits the commands at once and migrates after every user
//! command when the watermark says so. It saves and loads the layer's whole state, both
//! devices' images inside, as a drive image (`image.rs`).
//!
//! # Left out
//! Read promotion (reads never move data to the hot tier), frequency-aware victim choice (the
//! write counter is only recorded), persistence of the layer's map (no metadata I/O), timing,
//! and any use of placement identifiers (device commands carry `Pid::NONE`).

mod device;
mod image;

pub use device::TieringDevice;
pub use image::IMAGE_KIND;

use std::collections::BTreeMap;
use wafsim_core::blockdev::BlockDevice;
use wafsim_core::counters::{Counters, NsCounters};
use wafsim_core::{Io, Op, Pid};

/// The layer's block size (bytes): the unit of dirty tracking and of alignment.
pub const BLOCK_SIZE: u64 = 4096;
const NONE: u32 = u32::MAX;

/// One of the two devices behind the layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// The small fast staging device.
    Hot,
    /// The large capacity device (direct-mapped home of every extent).
    Cold,
}

/// One command for one tier's device, in that device's byte addressing (namespace 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierIo {
    /// Target device.
    pub tier: Tier,
    /// The command: Read, Write or Trim.
    pub io: Io,
    /// Issued by migration (hot read, cold write, hot slot trim) rather than a user command.
    pub migration: bool,
}

/// Per-tier traffic the layer sent to one device, split into user and migration commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TierCounters {
    /// Bytes written on behalf of user writes.
    pub user_write_bytes: u64,
    /// Bytes written by migration.
    pub migration_write_bytes: u64,
    /// Bytes read on behalf of user reads.
    pub user_read_bytes: u64,
    /// Bytes read by migration.
    pub migration_read_bytes: u64,
    /// Bytes trimmed (user trims and migration's slot trims).
    pub trim_bytes: u64,
}

impl TierCounters {
    /// All bytes written to the device.
    pub fn write_bytes(&self) -> u64 {
        self.user_write_bytes + self.migration_write_bytes
    }

    /// All bytes read from the device.
    pub fn read_bytes(&self) -> u64 {
        self.user_read_bytes + self.migration_read_bytes
    }
}

/// Configuration of the layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TieringConfig {
    /// Extent (and hot slot) size in bytes; a non-zero multiple of 4 KiB.
    pub extent_bytes: u64,
    /// Migrate when free hot slots are fewer than this percentage of all slots (at least 1 slot).
    pub low_free_pct: u32,
    /// Migrate until free hot slots reach this percentage of all slots (above the low mark).
    pub high_free_pct: u32,
}

impl Default for TieringConfig {
    /// 1 MiB extents, watermarks 10 % and 20 %.
    fn default() -> Self {
        TieringConfig {
            extent_bytes: 1 << 20,
            low_free_pct: 10,
            high_free_pct: 20,
        }
    }
}

/// A configuration the layer refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TieringConfigError {
    /// Extent size zero or not a multiple of 4 KiB.
    #[error("extent size {0} is not a non-zero multiple of 4096 bytes")]
    BadExtent(u64),
    /// Watermarks not `0 <= low < high <= 100`.
    #[error("watermarks low {low} % / high {high} % must satisfy low < high <= 100")]
    BadWatermarks {
        /// Low watermark (percent).
        low: u32,
        /// High watermark (percent).
        high: u32,
    },
    /// The hot device holds fewer than 2 slots, or too few for the watermarks to be reachable.
    #[error("hot tier of {slots} slots is too small (needs at least 2 and more than the {high}-slot high watermark)")]
    HotTooSmall {
        /// Slots that fit.
        slots: u64,
        /// High watermark in slots.
        high: u64,
    },
    /// The cold device holds no whole extent.
    #[error("cold tier of {0} bytes holds no whole extent")]
    ColdTooSmall(u64),
    /// A device's block size does not divide 4 KiB.
    #[error("{tier:?} device block size {block} does not divide 4096")]
    BadBlockSize {
        /// Which device.
        tier: Tier,
        /// Its block size.
        block: u32,
    },
}

/// A user command the layer refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TieringError {
    /// The layer exposes namespace 0 only.
    #[error("namespace {0} does not exist (the tiering layer exposes namespace 0 only)")]
    NoSuchNamespace(u32),
    /// A command of length 0.
    #[error("I/O of length 0")]
    ZeroLength,
    /// Not aligned to 4 KiB.
    #[error("I/O at byte {offset} length {len} is not aligned to 4096 bytes")]
    Misaligned {
        /// Byte offset.
        offset: u64,
        /// Length in bytes.
        len: u32,
    },
    /// Beyond the exposed capacity.
    #[error("I/O at byte {offset} length {len} exceeds the {size}-byte tiered device")]
    OutOfRange {
        /// Byte offset.
        offset: u64,
        /// Length in bytes.
        len: u32,
        /// Capacity in bytes.
        size: u64,
    },
    /// A write needed a hot slot and none could be freed (cannot happen with at least 2 slots;
    /// kept as a guard).
    #[error("no hot slot can be freed")]
    NoSlot,
}

/// The tiering layer: extent map, hot slot bitmaps, LRU, watermarks and counters.
#[derive(Debug, Clone)]
pub struct Tiering {
    cfg: TieringConfig,
    extent_bytes: u64,
    /// Blocks per extent.
    bpe: u32,
    /// u64 words per slot bitmap.
    words: usize,
    extents: u32,
    slots: u32,
    low: u32,
    high: u32,
    /// Extent -> hot slot or NONE.
    ext_slot: Vec<u32>,
    /// Write commands (pieces) per extent.
    ext_writes: Vec<u64>,
    /// Slot -> extent or NONE.
    slot_ext: Vec<u32>,
    /// Slot -> sequence of its last write (key in `lru`).
    slot_seq: Vec<u64>,
    slot_dirty_count: Vec<u32>,
    dirty: Vec<u64>,
    /// Blocks holding data on the cold device (one bit per block of the namespace).
    cold_valid: Vec<u64>,
    free: Vec<u32>,
    lru: BTreeMap<u64, u32>,
    seq: u64,
    counters: Counters,
    hot_c: TierCounters,
    cold_c: TierCounters,
    absorbed_bytes: u64,
    migrated_extents: u64,
}

fn bit(v: &[u64], i: usize) -> bool {
    v[i / 64] >> (i % 64) & 1 != 0
}

fn set_bit(v: &mut [u64], i: usize, on: bool) -> bool {
    let was = bit(v, i);
    if on {
        v[i / 64] |= 1 << (i % 64);
    } else {
        v[i / 64] &= !(1 << (i % 64));
    }
    was
}

impl Tiering {
    /// A layer over a hot device of `hot_bytes` and a cold device of `cold_bytes` (namespace 0
    /// sizes).
    pub fn new(hot_bytes: u64, cold_bytes: u64, cfg: &TieringConfig) -> Result<Self, TieringConfigError> {
        let e = cfg.extent_bytes;
        if e == 0 || !e.is_multiple_of(BLOCK_SIZE) || e / BLOCK_SIZE > u32::MAX as u64 {
            return Err(TieringConfigError::BadExtent(e));
        }
        if cfg.low_free_pct >= cfg.high_free_pct || cfg.high_free_pct > 100 {
            return Err(TieringConfigError::BadWatermarks {
                low: cfg.low_free_pct,
                high: cfg.high_free_pct,
            });
        }
        let slots = hot_bytes / e;
        let low = (slots * cfg.low_free_pct as u64).div_ceil(100).max(1);
        let high = (slots * cfg.high_free_pct as u64).div_ceil(100).max(low + 1);
        if slots < 2 || high >= slots || slots > (NONE - 1) as u64 {
            return Err(TieringConfigError::HotTooSmall { slots, high });
        }
        let extents = cold_bytes / e;
        if extents == 0 || extents > (NONE - 1) as u64 {
            return Err(TieringConfigError::ColdTooSmall(cold_bytes));
        }
        let bpe = (e / BLOCK_SIZE) as u32;
        let words = (bpe as usize).div_ceil(64);
        let (slots, extents) = (slots as u32, extents as u32);
        let counters = Counters {
            namespaces: vec![NsCounters::default()],
            ..Counters::default()
        };
        Ok(Tiering {
            cfg: *cfg,
            extent_bytes: e,
            bpe,
            words,
            extents,
            slots,
            low: low as u32,
            high: high as u32,
            ext_slot: vec![NONE; extents as usize],
            ext_writes: vec![0; extents as usize],
            slot_ext: vec![NONE; slots as usize],
            slot_seq: vec![0; slots as usize],
            slot_dirty_count: vec![0; slots as usize],
            dirty: vec![0; slots as usize * words],
            cold_valid: vec![0; (extents as u64 * bpe as u64).div_ceil(64) as usize],
            free: (0..slots).rev().collect(),
            lru: BTreeMap::new(),
            seq: 0,
            counters,
            hot_c: TierCounters::default(),
            cold_c: TierCounters::default(),
            absorbed_bytes: 0,
            migrated_extents: 0,
        })
    }

    /// A layer sized from the devices (namespace 0 of each), checking their block sizes.
    pub fn from_devices<H: BlockDevice, C: BlockDevice>(
        hot: &H,
        cold: &C,
        cfg: &TieringConfig,
    ) -> Result<Self, TieringConfigError> {
        for (tier, block) in [(Tier::Hot, hot.block_size()), (Tier::Cold, cold.block_size())] {
            if block == 0 || !BLOCK_SIZE.is_multiple_of(block as u64) {
                return Err(TieringConfigError::BadBlockSize { tier, block });
            }
        }
        Tiering::new(hot.namespace_bytes(0), cold.namespace_bytes(0), cfg)
    }

    /// The configuration.
    pub fn config(&self) -> &TieringConfig {
        &self.cfg
    }

    /// Exposed capacity in bytes (whole extents of the cold device).
    pub fn capacity(&self) -> u64 {
        self.extents as u64 * self.extent_bytes
    }

    /// Extents of the exposed namespace.
    pub fn extents(&self) -> u32 {
        self.extents
    }

    /// Hot slots.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Free hot slots.
    pub fn free_slots(&self) -> u32 {
        self.free.len() as u32
    }

    /// Low watermark in slots: migration starts when fewer are free.
    pub fn low_slots(&self) -> u32 {
        self.low
    }

    /// High watermark in slots: migration runs until this many are free.
    pub fn high_slots(&self) -> u32 {
        self.high
    }

    /// Whether free slots are below the low watermark.
    pub fn migration_needed(&self) -> bool {
        self.free_slots() < self.low
    }

    /// The hot slot of extent `e`, if it has one.
    pub fn extent_slot(&self, e: u32) -> Option<u32> {
        let s = self.ext_slot[e as usize];
        (s != NONE).then_some(s)
    }

    /// Write commands (per-extent pieces) extent `e` received since the layer started.
    pub fn extent_writes(&self, e: u32) -> u64 {
        self.ext_writes[e as usize]
    }

    /// Dirty 4 KiB blocks now in the hot tier.
    pub fn dirty_blocks(&self) -> u64 {
        self.slot_dirty_count.iter().map(|&c| c as u64).sum()
    }

    /// User write bytes that overwrote a block already dirty in the hot tier (absorbed: they
    /// will never be migrated).
    pub fn absorbed_bytes(&self) -> u64 {
        self.absorbed_bytes
    }

    /// Slots migrated to the cold tier so far.
    pub fn migrated_extents(&self) -> u64 {
        self.migrated_extents
    }

    /// User-level counters at the layer's interface (host bytes written, read, trimmed).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Traffic the layer sent to one tier.
    pub fn tier_counters(&self, tier: Tier) -> &TierCounters {
        match tier {
            Tier::Hot => &self.hot_c,
            Tier::Cold => &self.cold_c,
        }
    }

    /// Where the data of the 4 KiB block holding byte `offset` lives: the hot slot when dirty
    /// there, else its cold home when written, `None` when never written or trimmed (or beyond
    /// the capacity). The second element is the byte offset on that tier's device.
    pub fn locate(&self, offset: u64) -> Option<(Tier, u64)> {
        if offset >= self.capacity() {
            return None;
        }
        let (e, within) = (offset / self.extent_bytes, offset % self.extent_bytes);
        let block_off = within / BLOCK_SIZE * BLOCK_SIZE;
        let s = self.ext_slot[e as usize];
        if s != NONE && bit(self.slot_bits(s), (within / BLOCK_SIZE) as usize) {
            return Some((Tier::Hot, s as u64 * self.extent_bytes + block_off));
        }
        let b = (offset / BLOCK_SIZE) as usize;
        bit(&self.cold_valid, b).then_some((Tier::Cold, e * self.extent_bytes + block_off))
    }

    fn slot_bits(&self, s: u32) -> &[u64] {
        let w = s as usize * self.words;
        &self.dirty[w..w + self.words]
    }

    fn check(&self, io: &Io) -> Result<(), TieringError> {
        if io.ns != 0 {
            return Err(TieringError::NoSuchNamespace(io.ns));
        }
        if io.len == 0 {
            return Err(TieringError::ZeroLength);
        }
        if !io.offset.is_multiple_of(BLOCK_SIZE) || !(io.len as u64).is_multiple_of(BLOCK_SIZE) {
            return Err(TieringError::Misaligned {
                offset: io.offset,
                len: io.len,
            });
        }
        let size = self.capacity();
        if io.offset.checked_add(io.len as u64).is_none_or(|end| end > size) {
            return Err(TieringError::OutOfRange {
                offset: io.offset,
                len: io.len,
                size,
            });
        }
        Ok(())
    }

    /// Split `io` into per-extent pieces: (extent, first block in extent, blocks).
    fn pieces(&self, io: &Io) -> impl Iterator<Item = (u32, u32, u32)> + use<> {
        let (eb, bpe) = (self.extent_bytes, self.bpe);
        let (mut off, end) = (io.offset, io.offset + io.len as u64);
        std::iter::from_fn(move || {
            if off >= end {
                return None;
            }
            let (e, within) = (off / eb, off % eb);
            let n = (end - off).min(eb - within);
            off += n;
            let b0 = (within / BLOCK_SIZE) as u32;
            Some((e as u32, b0, ((n / BLOCK_SIZE) as u32).min(bpe - b0)))
        })
    }

    /// Append a command of `blocks` blocks to `out` and count it against its tier.
    fn emit(&mut self, out: &mut Vec<TierIo>, tier: Tier, op: Op, offset: u64, blocks: u32, migration: bool) {
        let bytes = blocks as u64 * BLOCK_SIZE;
        let io = Io { op, ns: 0, offset, len: bytes as u32, pid: Pid::NONE };
        out.push(TierIo { tier, io, migration });
        let c = match tier {
            Tier::Hot => &mut self.hot_c,
            Tier::Cold => &mut self.cold_c,
        };
        match (op, migration) {
            (Op::Write, false) => c.user_write_bytes += bytes,
            (Op::Write, true) => c.migration_write_bytes += bytes,
            (Op::Read, false) => c.user_read_bytes += bytes,
            (Op::Read, true) => c.migration_read_bytes += bytes,
            _ => c.trim_bytes += bytes,
        }
    }

    fn touch(&mut self, s: u32) {
        self.seq += 1;
        if self.slot_seq[s as usize] != 0 {
            self.lru.remove(&self.slot_seq[s as usize]);
        }
        self.slot_seq[s as usize] = self.seq;
        self.lru.insert(self.seq, s);
    }

    fn release(&mut self, s: u32) {
        let e = self.slot_ext[s as usize];
        self.ext_slot[e as usize] = NONE;
        self.slot_ext[s as usize] = NONE;
        self.lru.remove(&self.slot_seq[s as usize]);
        self.slot_seq[s as usize] = 0;
        self.free.push(s);
    }

    /// Migrate the least recently written slot to the cold tier; the extent migrated, `None`
    /// when no slot is in use.
    pub fn migrate_one(&mut self, out: &mut Vec<TierIo>) -> Option<u32> {
        let (_, &s) = self.lru.iter().next()?;
        let e = self.slot_ext[s as usize];
        let (eb, bpe) = (self.extent_bytes, self.bpe as usize);
        let (hot_base, cold_base) = (s as u64 * eb, e as u64 * eb);
        let w = s as usize * self.words;
        let mut b = 0;
        while b < bpe {
            if !bit(&self.dirty[w..w + self.words], b) {
                b += 1;
                continue;
            }
            let start = b;
            while b < bpe && bit(&self.dirty[w..w + self.words], b) {
                set_bit(&mut self.cold_valid, e as usize * bpe + b, true);
                b += 1;
            }
            let n = (b - start) as u32;
            let off = start as u64 * BLOCK_SIZE;
            self.emit(out, Tier::Hot, Op::Read, hot_base + off, n, true);
            self.emit(out, Tier::Cold, Op::Write, cold_base + off, n, true);
        }
        self.emit(out, Tier::Hot, Op::Trim, hot_base, self.bpe, true);
        self.dirty[w..w + self.words].fill(0);
        self.slot_dirty_count[s as usize] = 0;
        self.release(s);
        self.migrated_extents += 1;
        Some(e)
    }

    /// When free slots are below the low watermark, migrate LRU slots until the high watermark
    /// is reached. Returns the slots migrated.
    pub fn migrate_to_watermark(&mut self, out: &mut Vec<TierIo>) -> u32 {
        if !self.migration_needed() {
            return 0;
        }
        let mut n = 0;
        while self.free_slots() < self.high && self.migrate_one(out).is_some() {
            n += 1;
        }
        n
    }

    /// Migrate every slot (drain the hot tier, e.g. before a shutdown). Returns the slots
    /// migrated.
    pub fn migrate_all(&mut self, out: &mut Vec<TierIo>) -> u32 {
        let mut n = 0;
        while self.migrate_one(out).is_some() {
            n += 1;
        }
        n
    }

    /// Map a user write: every piece goes to its extent's hot slot (allocated, migrating the LRU
    /// slot first when none is free). Does not run watermark migration (call
    /// [`Tiering::migrate_to_watermark`] after the command).
    pub fn map_write(&mut self, io: &Io, out: &mut Vec<TierIo>) -> Result<(), TieringError> {
        self.check(io)?;
        for (e, b0, n) in self.pieces(io) {
            let mut s = self.ext_slot[e as usize];
            if s == NONE {
                if self.free.is_empty() {
                    self.migrate_one(out).ok_or(TieringError::NoSlot)?;
                }
                s = self.free.pop().ok_or(TieringError::NoSlot)?;
                self.ext_slot[e as usize] = s;
                self.slot_ext[s as usize] = e;
            }
            self.touch(s);
            self.ext_writes[e as usize] += 1;
            let w = s as usize * self.words;
            let mut newly = 0;
            for b in b0..b0 + n {
                if !set_bit(&mut self.dirty[w..w + self.words], b as usize, true) {
                    newly += 1;
                }
            }
            self.slot_dirty_count[s as usize] += newly;
            self.absorbed_bytes += (n - newly) as u64 * BLOCK_SIZE;
            self.emit(out, Tier::Hot, Op::Write, s as u64 * self.extent_bytes + b0 as u64 * BLOCK_SIZE, n, false);
        }
        let (bytes, units) = (io.len as u64, io.len as u64 / BLOCK_SIZE);
        let c = &mut self.counters;
        c.host_write_bytes += bytes;
        c.host_units += units;
        c.namespaces[0].host_write_bytes += bytes;
        c.namespaces[0].host_units += units;
        Ok(())
    }

    /// Map a user read: dirty runs from the hot slot, everything else from the cold home.
    pub fn map_read(&mut self, io: &Io, out: &mut Vec<TierIo>) -> Result<(), TieringError> {
        self.check(io)?;
        for (e, b0, n) in self.pieces(io) {
            let s = self.ext_slot[e as usize];
            let mut b = b0;
            while b < b0 + n {
                let hot = s != NONE && bit(self.slot_bits(s), b as usize);
                let start = b;
                while b < b0 + n && (s != NONE && bit(self.slot_bits(s), b as usize)) == hot {
                    b += 1;
                }
                let (tier, base) = if hot {
                    (Tier::Hot, s as u64)
                } else {
                    (Tier::Cold, e as u64)
                };
                let off = base * self.extent_bytes + start as u64 * BLOCK_SIZE;
                self.emit(out, tier, Op::Read, off, b - start, false);
            }
        }
        let c = &mut self.counters;
        c.host_read_bytes += io.len as u64;
        c.read_units += io.len as u64 / BLOCK_SIZE;
        c.namespaces[0].host_read_bytes += io.len as u64;
        Ok(())
    }

    /// Map a user trim: clear the blocks' dirty bits in the hot slot (trimming them there; a
    /// slot left clean is freed) and trim them at the cold home.
    pub fn map_trim(&mut self, io: &Io, out: &mut Vec<TierIo>) -> Result<(), TieringError> {
        self.check(io)?;
        let bpe = self.bpe as usize;
        for (e, b0, n) in self.pieces(io) {
            let s = self.ext_slot[e as usize];
            let mut trimmed = 0;
            for b in b0..b0 + n {
                let cold = set_bit(&mut self.cold_valid, e as usize * bpe + b as usize, false);
                let hot = s != NONE && {
                    let w = s as usize * self.words;
                    set_bit(&mut self.dirty[w..w + self.words], b as usize, false)
                };
                if hot {
                    self.slot_dirty_count[s as usize] -= 1;
                }
                trimmed += (hot || cold) as u64;
            }
            self.counters.trimmed_units += trimmed;
            if s != NONE {
                self.emit(out, Tier::Hot, Op::Trim, s as u64 * self.extent_bytes + b0 as u64 * BLOCK_SIZE, n, false);
                if self.slot_dirty_count[s as usize] == 0 {
                    self.release(s);
                }
            }
            self.emit(out, Tier::Cold, Op::Trim, e as u64 * self.extent_bytes + b0 as u64 * BLOCK_SIZE, n, false);
        }
        self.counters.trim_bytes += io.len as u64;
        self.counters.namespaces[0].trim_bytes += io.len as u64;
        Ok(())
    }
}
