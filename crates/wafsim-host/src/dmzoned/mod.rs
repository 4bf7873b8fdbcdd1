//! A model of Linux dm-zoned (`drivers/md/dm-zoned-{target,metadata,reclaim}.c`, `dm-zoned.h`,
//! target version 2.0.0, multi-device since v5.8): it exposes one conventional, randomly
//! writable device on top of host-managed zoned (SMR) disks, optionally behind a regular "cache"
//! device, and keeps its own metadata. Untimed, pure logic.
//!
//! # Model
//!
//! **Devices and zones.** With a cache device (multi-device mode) the regular device is cut into
//! emulated cache zones of the disks' zone size (`dmz_emulate_zones`); all chunk data enters
//! through them and the disks' sequential zones receive it from reclaim. Without one, the single
//! disk's conventional zones play that role (single-device mode). Metadata (two sets: super
//! block, chunk map, one validity bitmap per zone) lives in the first cache or conventional
//! zones; with several disks zone 0 of each disk holds a "tertiary" super block and is unused.
//! Sizes follow dmzadm ([`config`]). A chunk is one zone; the exposed device is
//! `nr_chunks * zone_size` bytes of 4 KiB blocks.
//!
//! **Mapping** (`mapping.rs`: `dmz_get_chunk_mapping`, `dmz_handle_write/read/discard`,
//! `dmz_put_chunk_mapping`). A write to an unmapped chunk always allocates a free cache (or
//! random) zone, whatever its offset, so even a sequential fill is written twice. A write to a
//! chunk mapped to a cache/random zone goes in place. A write to a chunk mapped to a sequential
//! zone goes in place only at the zone's write pointer; anything else goes to the same offset of
//! a "buffer" zone (allocated on demand from the cache/random zones). Per-zone bitmaps say which
//! blocks are valid; a block is valid in at most one of the data and buffer zones. Reads follow
//! the bitmaps (one device read per valid run, zeros elsewhere); discards only clear bits. Zones
//! left without valid blocks are freed at once; freeing a non-empty sequential zone resets it.
//!
//! **Reclaim** (`reclaim.rs`: `dmz_reclaim_work`, `dmz_do_reclaim`, `dmz_get_zone_for_reclaim`).
//! One worker per disk. The victim is the least recently used cache/random data zone (or, when
//! only buffer zones are mapped, the sequential zone whose buffer has the heaviest data zone;
//! when no reserved zone is left, first a buffered sequential zone of the worker's disk). Three
//! cases: a cache/random data zone is copied to a free sequential zone (`dmz_reclaim_rnd_data`);
//! a buffer whose valid blocks all lie at or past the sequential zone's write pointer is appended
//! to it, holes zero-filled (`dmz_reclaim_buf`); otherwise the sequential zone's valid blocks are
//! merged into the buffer, which becomes the chunk's data zone (`dmz_reclaim_seq_data`), and a
//! later round moves it to a sequential zone. Copies go valid extent by extent in kcopyd
//! sub-jobs of 512 KiB; metadata is flushed after each reclaimed zone.
//!
//! **Watermarks** (`dmz_reclaim_percentage`, `dmz_should_reclaim`). `p` = unmapped cache zones
//! (single-device: unmapped random zones of the worker's disk) * 100 / all of them, integer,
//! and 0 when at most one is unmapped. An idle target (no I/O for 10 s) reclaims whatever it can.
//! A busy target reclaims while `p <= 30` and never when `p >= 50`. The kernel code has no
//! hysteresis between the two: a busy worker re-evaluates the rule after every zone, so it stops
//! as soon as `p > 30`; the 50 % mark only matters for the idle/busy switch. The model keeps that
//! exact rule. The kcopyd throttle (100 % when idle or `p < 15`, else 75 %) is exposed as
//! [`DmZoned::throttle`] for a timed driver; untimed, it has no effect.
//!
//! **Metadata** (`metadata.rs`: `dmz_flush_metadata`). Map and bitmap blocks dirtied by I/O and
//! reclaim are written on a flush: to the log set, super block, then in place to the primary
//! set, super block, with a cache flush after each of the four steps. Flushes happen on a user
//! Flush, after every reclaimed zone and every 10 s.
//!
//! # Layer and driver
//!
//! [`DmZoned`] never touches a device: `map_write`, `map_read`, `map_trim`, `map_flush` and
//! `reclaim_step` append device commands ([`DevIo`]) to a list, so a timed driver can schedule
//! them on per-device timing models. [`DmZonedDevice`] is the untimed driver: it owns the
//! devices, submits the commands at once, and runs reclaim synchronously (see its documentation
//! for what "busy", "idle", the throttle and the 10 s flush become without time). It saves and
//! loads the layer's whole state, its devices' images inside, as a drive image (`image.rs`).
//!
//! # Left out
//! Timing (per-chunk work queues, the throttle, the 1 s wait of a writer without free zones),
//! offline/read-only zones, write-error recovery, crash recovery and checksums, the metadata
//! block cache (bitmap misses cost reads in the kernel), format-time metadata writes, and the
//! teardown flush. WRITE ZEROES behaves as a discard, as in the kernel.

pub mod config;
mod device;
mod image;
mod mapping;
mod metadata;
mod reclaim;
pub mod timed;
pub mod zones;

pub use config::{ConfigError, DeviceShape, DmZonedConfig, Layout};
pub use device::DmZonedDevice;
pub use image::IMAGE_KIND;
pub use metadata::MetadataStats;
pub use reclaim::{ReclaimCase, ReclaimProgress, ReclaimStats};
pub use timed::{DmZonedClock, DmZonedTimed, DmzSample};
pub use zones::ZoneKind;

use config::{BLOCK_SHIFT, BLOCK_SIZE};
use mapping::Bitmaps;
use metadata::Metadata;
use reclaim::ReclaimState;
use wafsim_core::blockdev::BlockDevice;
use wafsim_core::counters::{Counters, NsCounters};
use wafsim_core::{Io, Op, Pid};
use zones::{ZonePool, F_BUF, F_META, F_RECLAIM, L_MAP_CACHE};

/// "No zone", "no chunk".
pub(crate) const NONE: u32 = u32::MAX;

/// A device behind the layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DevId {
    /// The regular cache device (multi-device mode).
    Cache,
    /// Zoned disk `i` (0-based, in the order given).
    Disk(u32),
}

/// Why the layer emitted a device command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoClass {
    /// User data read or write, or the reset of a zone freed by a user command.
    User,
    /// Read of one kcopyd piece; the next command is the matching [`IoClass::ReclaimWrite`].
    ReclaimRead,
    /// Write of the piece read by the preceding [`IoClass::ReclaimRead`] (same length, same
    /// in-zone offset): it depends on that read.
    ReclaimWrite,
    /// Zero-fill of the hole between a sequential destination's write pointer and the next
    /// copied extent (`dmz_reclaim_align_wp`).
    ReclaimZero,
    /// Reset of a sequential zone freed by reclaim.
    ReclaimReset,
    /// Metadata block and super block writes and the cache flushes of a metadata flush.
    Metadata,
}

impl IoClass {
    /// Reclaim traffic (kcopyd copies, zero-fill, resets by reclaim).
    pub fn is_reclaim(self) -> bool {
        matches!(self, IoClass::ReclaimRead | IoClass::ReclaimWrite | IoClass::ReclaimZero | IoClass::ReclaimReset)
    }
}

/// One command for one device, in the device's own byte addressing (namespace 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevIo {
    /// Target device.
    pub dev: DevId,
    /// The command: Read, Write, Flush, or `Op::Zone(ZoneAction::Reset)` of a zone.
    pub io: Io,
    /// Why it was issued.
    pub class: IoClass,
}

impl DevIo {
    /// Whether this is reclaim traffic.
    pub fn reclaim(&self) -> bool {
        self.class.is_reclaim()
    }
}

/// Why a user command could not finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallReason {
    /// A write needs a free cache (or random) zone and none is left: the kernel's writer waits in
    /// `dmz_wait_for_free_zones` until reclaim frees one.
    NoFreeZone,
    /// The chunk's data zone is being reclaimed by `worker`: the kernel's I/O waits for it
    /// (`dmz_wait_for_reclaim`) after asking reclaim to stop at the next extent.
    ChunkInReclaim {
        /// The reclaim worker (disk index) holding the chunk.
        worker: u32,
    },
}

/// Outcome of a user command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapStatus {
    /// The whole command was mapped.
    Done,
    /// The first `done_bytes` bytes were mapped (whole chunk pieces); the rest must be submitted
    /// again once the reason is gone.
    Stalled {
        /// Bytes mapped before the stall.
        done_bytes: u64,
        /// Why the rest waits.
        reason: StallReason,
    },
}

/// A user command the layer refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// dm-zoned exposes one namespace.
    #[error("namespace {0} does not exist (dm-zoned exposes namespace 0 only)")]
    NoSuchNamespace(u32),
    /// A read, write or discard of length 0.
    #[error("I/O of length 0")]
    ZeroLength,
    /// Not aligned to 4 KiB (the kernel kills such BIOs in `dmz_map`).
    #[error("I/O at byte {offset} length {len} is not aligned to dm-zoned's 4096-byte block")]
    Misaligned {
        /// Byte offset.
        offset: u64,
        /// Length in bytes.
        len: u32,
    },
    /// Beyond the exposed capacity.
    #[error("I/O at byte {offset} length {len} exceeds the {size}-byte dm-zoned device")]
    OutOfRange {
        /// Byte offset.
        offset: u64,
        /// Length in bytes.
        len: u32,
        /// Capacity in bytes.
        size: u64,
    },
}

/// Bytes a device received from the layer, by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DevTraffic {
    /// User data written.
    pub user_write_bytes: u64,
    /// User data read.
    pub user_read_bytes: u64,
    /// Read by reclaim copies.
    pub reclaim_read_bytes: u64,
    /// Written by reclaim copies.
    pub reclaim_write_bytes: u64,
    /// Zero-filled by reclaim before a sequential destination's write pointer.
    pub zero_fill_bytes: u64,
    /// Metadata blocks and super blocks written.
    pub metadata_write_bytes: u64,
    /// Zone resets issued (user-freed and reclaim-freed zones).
    pub resets: u64,
    /// Cache flushes issued (metadata flushes).
    pub flushes: u64,
}

impl DevTraffic {
    /// Every byte written to the device.
    pub fn write_bytes(&self) -> u64 {
        self.user_write_bytes + self.reclaim_write_bytes + self.zero_fill_bytes + self.metadata_write_bytes
    }
}

/// Use of the zones user writes allocate from: the cache zones (multi-device) or the single
/// disk's random zones, metadata zones excluded (the `<unmapped>/<total> cache` of
/// `dmsetup status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Zones that can hold data.
    pub total: u32,
    /// Mapped as a chunk's data zone.
    pub data: u32,
    /// Mapped as a buffer zone of a sequential data zone.
    pub buffer: u32,
    /// Unmapped (free).
    pub free: u32,
}

/// Where the chunks are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkStats {
    /// Exposed chunks.
    pub chunks: u32,
    /// Never written, or emptied by discards.
    pub unmapped: u32,
    /// Mapped to a cache zone.
    pub in_cache: u32,
    /// Mapped to a random (conventional) zone of a disk.
    pub in_rnd: u32,
    /// Mapped to a sequential zone without a buffer.
    pub in_seq: u32,
    /// Mapped to a sequential zone with a buffer zone.
    pub buffered: u32,
    /// Sequential zones still free, reserved ones included.
    pub free_seq_zones: u32,
}

/// The dm-zoned layer: zones, chunk mapping, bitmaps, metadata and reclaim state. Pure logic:
/// it emits device commands and never calls a device.
///
/// The type is not generic over the devices (the brief's `DmZoned<C, Z>`): it only needs their
/// geometry ([`DeviceShape`]), which keeps one compiled copy for every device combination; the
/// driver [`DmZonedDevice`] is generic.
#[derive(Debug, Clone)]
pub struct DmZoned {
    pub(crate) layout: Layout,
    pub(crate) zones: ZonePool,
    /// Chunk -> data zone.
    pub(crate) map: Vec<u32>,
    pub(crate) bitmaps: Bitmaps,
    pub(crate) meta: Metadata,
    pub(crate) reclaim: ReclaimState,
    pub(crate) counters: Counters,
    /// Index 0: cache device; 1 + i: disk i.
    pub(crate) traffic: Vec<DevTraffic>,
}

impl DmZoned {
    /// A freshly formatted set on devices of the given shapes.
    pub fn from_shapes(
        cache: Option<DeviceShape>,
        disks: &[DeviceShape],
        cfg: &DmZonedConfig,
    ) -> Result<DmZoned, ConfigError> {
        Ok(DmZoned::new(Layout::new(cache, disks, cfg)?))
    }

    /// A freshly formatted set on these devices (only their geometry is read).
    pub fn from_devices<C: BlockDevice, Z: BlockDevice>(
        cache: Option<&C>,
        disks: &[Z],
        cfg: &DmZonedConfig,
    ) -> Result<DmZoned, ConfigError> {
        let shapes: Vec<DeviceShape> = disks.iter().map(|d| DeviceShape::of(d)).collect();
        DmZoned::from_shapes(cache.map(|c| DeviceShape::of(c)), &shapes, cfg)
    }

    /// A freshly formatted set with this layout.
    pub fn new(layout: Layout) -> DmZoned {
        let zones = ZonePool::new(&layout);
        let ndisks = layout.disks.len();
        DmZoned {
            map: vec![NONE; layout.nr_chunks as usize],
            bitmaps: Bitmaps::new(layout.nr_zones, layout.zone_blocks),
            meta: Metadata::new(&layout),
            reclaim: ReclaimState::new(ndisks),
            counters: Counters { namespaces: vec![NsCounters::default()], ..Default::default() },
            traffic: vec![DevTraffic::default(); 1 + ndisks],
            zones,
            layout,
        }
    }

    /// The format-time geometry.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Exposed capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.layout.capacity()
    }

    /// Number of reclaim workers (one per disk).
    pub fn workers(&self) -> u32 {
        self.layout.disks.len() as u32
    }

    /// User-level counters: host bytes written/read/trimmed and 4 KiB blocks; `gc_units` counts
    /// the blocks reclaim wrote (copies and zero-fill), so `media_units / host_units` is the
    /// layer's data WAF. Metadata writes are not in here (see [`DmZoned::metadata_stats`] and
    /// [`DmZoned::waf`]).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Traffic sent to one device.
    pub fn traffic(&self, dev: DevId) -> DevTraffic {
        self.traffic[Self::dev_index(dev)]
    }

    /// Bytes reclaim read from and wrote to (copies and zero-fill) `dev`.
    pub fn reclaim_bytes(&self, dev: DevId) -> (u64, u64) {
        let t = self.traffic(dev);
        (t.reclaim_read_bytes, t.reclaim_write_bytes + t.zero_fill_bytes)
    }

    /// Every byte written to every device (user data, reclaim, zero-fill, metadata).
    pub fn device_bytes_written(&self) -> u64 {
        self.traffic.iter().map(DevTraffic::write_bytes).sum()
    }

    /// Host-layer WAF: bytes written to all devices / user bytes written (0 before any write).
    pub fn waf(&self) -> f64 {
        wafsim_core::counters::waf(self.device_bytes_written(), self.counters.host_write_bytes)
    }

    /// Metadata flush statistics.
    pub fn metadata_stats(&self) -> &MetadataStats {
        &self.meta.stats
    }

    /// Metadata bytes written (both sets and super blocks).
    pub fn metadata_bytes(&self) -> u64 {
        self.meta.stats.bytes
    }

    /// Reclaim statistics (zones per case, aborts, failures).
    pub fn reclaim_stats(&self) -> &ReclaimStats {
        &self.reclaim.stats
    }

    /// Use of the cache (or single-device random) zones.
    pub fn cache_usage(&self) -> CacheUsage {
        let z = &self.zones;
        let (total, free_list, map_list) = if z.nr_cache > 0 {
            (z.nr_cache, zones::L_UNMAP_CACHE, L_MAP_CACHE)
        } else {
            (z.nr_rnd[0], zones::l_unmap_rnd(0), zones::l_map_rnd(0))
        };
        let mut u = CacheUsage { total, free: z.list_len(free_list), ..Default::default() };
        for zz in z.iter_list(map_list) {
            if z.has(zz, F_BUF) {
                u.buffer += 1;
            } else {
                u.data += 1;
            }
        }
        u
    }

    /// Free zones user writes can allocate from.
    pub fn free_user_zones(&self) -> u32 {
        self.zones.list_len(self.zones.user_list())
    }

    /// Where the chunks are mapped.
    pub fn chunk_stats(&self) -> ChunkStats {
        let mut s = ChunkStats { chunks: self.layout.nr_chunks, ..Default::default() };
        for &dz in &self.map {
            if dz == NONE {
                s.unmapped += 1;
                continue;
            }
            match self.zones.kind[dz as usize] {
                ZoneKind::Cache => s.in_cache += 1,
                ZoneKind::Rnd => s.in_rnd += 1,
                ZoneKind::Seq if self.zones.bzone[dz as usize] != NONE => s.buffered += 1,
                ZoneKind::Seq => s.in_seq += 1,
            }
        }
        s.free_seq_zones = self.zones.list_len(zones::L_RESERVED)
            + (0..self.workers()).map(|d| self.zones.list_len(zones::l_unmap_seq(d))).sum::<u32>();
        s
    }

    /// Where the latest data of the 4 KiB block at byte `offset` of the exposed device lies:
    /// (device, byte offset on it), or `None` when the block was never written or was
    /// discarded (a read returns zeros). Follows the read path of `dmz_handle_read`.
    pub fn locate(&self, offset: u64) -> Option<(DevId, u64)> {
        if offset >= self.capacity() {
            return None;
        }
        let b = offset >> BLOCK_SHIFT;
        let chunk = (b / self.layout.zone_blocks as u64) as usize;
        let cb = (b % self.layout.zone_blocks as u64) as u32;
        let dz = self.map[chunk];
        if dz == NONE {
            return None;
        }
        let at = |z: u32| (self.zones.dev[z as usize], self.zones.start[z as usize] + ((cb as u64) << BLOCK_SHIFT));
        if (!self.zones.is_seq(dz) || cb < self.zones.wp[dz as usize]) && self.bitmaps.test(dz, cb) {
            return Some(at(dz));
        }
        let bz = self.zones.bzone[dz as usize];
        if bz != NONE && self.bitmaps.test(bz, cb) {
            return Some(at(bz));
        }
        None
    }

    /// Device of the data zone chunk-mapping byte `offset` (`None` when the chunk is unmapped).
    /// The kernel refreshes a reclaim worker's access time (its idea of "busy") only when a user
    /// BIO's data zone lies on that worker's device (`dmz_handle_bio`, `dmz_deactivate_zone`), so
    /// a timed driver keeps one access time per disk: a command whose chunk maps to a cache zone
    /// (or no zone) leaves every disk worker's clock alone.
    pub fn chunk_device(&self, offset: u64) -> Option<DevId> {
        self.chunk_zone(offset).map(|dz| self.zones.dev[dz as usize])
    }

    /// The data zone of the chunk holding byte `offset`, if the chunk is mapped.
    fn chunk_zone(&self, offset: u64) -> Option<u32> {
        if offset >= self.capacity() {
            return None;
        }
        let chunk = (offset / self.layout.zone_size) as usize;
        let dz = self.map[chunk];
        (dz != NONE).then_some(dz)
    }

    /// A user command on the chunk holding byte `offset` is in flight: its data zone (returned)
    /// cannot be locked for reclaim until [`DmZoned::deactivate_zone`] (`dmz_activate_zone` in
    /// `dmz_handle_bio`, released when the BIO ends). `None` when the chunk is unmapped.
    pub fn activate_chunk(&mut self, offset: u64) -> Option<u32> {
        let dz = self.chunk_zone(offset)?;
        self.zones.active[dz as usize] += 1;
        Some(dz)
    }

    /// A user command on zone `z` (from [`DmZoned::activate_chunk`]) ended.
    pub fn deactivate_zone(&mut self, z: u32) {
        let a = &mut self.zones.active[z as usize];
        assert!(*a > 0, "zone {z} deactivated more often than activated");
        *a -= 1;
    }

    /// Whole-state consistency (tests): lists, mapping links, weights = bitmap populations, a
    /// block valid in at most one of a chunk's zones, no valid bit at or past a sequential zone's
    /// write pointer, free zones empty, zone counts.
    pub fn check_invariants(&self) -> Result<(), String> {
        let z = &self.zones;
        z.check_lists()?;
        let zb = self.layout.zone_blocks;
        for id in 0..z.len() as u32 {
            let i = id as usize;
            let pop = self.bitmaps.count(id);
            if pop != z.weight[i] {
                return Err(format!("zone {id}: weight {} but {pop} valid bits", z.weight[i]));
            }
            if z.is_seq(id) {
                if z.wp[i] > zb {
                    return Err(format!("zone {id}: wp {} past the zone end", z.wp[i]));
                }
                if z.wp[i] < zb && self.bitmaps.run_len(id, z.wp[i], false) != zb - z.wp[i] {
                    return Err(format!("zone {id}: valid bit at or past wp {}", z.wp[i]));
                }
            } else if z.wp[i] != 0 {
                return Err(format!("random zone {id} has wp {}", z.wp[i]));
            }
            if z.has(id, F_META) {
                if z.chunk[i] != NONE || z.list_of(id) != zones::L_NONE || pop != 0 {
                    return Err(format!("metadata zone {id} is in use"));
                }
                continue;
            }
            let c = z.chunk[i];
            if c == NONE {
                let in_job = self.reclaim.zone_in_job(id);
                if z.list_of(id) != z.unmap_list(id) && !in_job {
                    return Err(format!("unmapped zone {id} is on list {} not its free list", z.list_of(id)));
                }
                if !in_job && (pop != 0 || z.bzone[i] != NONE || z.has(id, F_BUF) || (z.is_seq(id) && z.wp[i] != 0)) {
                    return Err(format!("free zone {id} holds data or links"));
                }
                continue;
            }
            if z.list_of(id) != z.map_list(id) {
                return Err(format!("mapped zone {id} is on list {} not its mapped list", z.list_of(id)));
            }
            if z.has(id, F_BUF) {
                let dz = z.bzone[i];
                if dz == NONE
                    || z.bzone[dz as usize] != id
                    || self.map[c as usize] != dz
                    || !z.is_seq(dz)
                    || z.is_seq(id)
                {
                    return Err(format!("buffer zone {id} of chunk {c} has broken links"));
                }
            } else {
                if self.map[c as usize] != id {
                    return Err(format!("zone {id} claims chunk {c} mapped to {}", self.map[c as usize]));
                }
                let bz = z.bzone[i];
                if bz != NONE {
                    if !z.is_seq(id) {
                        return Err(format!("non-sequential data zone {id} has a buffer"));
                    }
                    for w in 0..zb {
                        if self.bitmaps.test(id, w) && self.bitmaps.test(bz, w) {
                            return Err(format!("chunk {c} block {w} valid in both data zone {id} and buffer {bz}"));
                        }
                    }
                }
            }
            if z.has(id, F_RECLAIM) && !self.reclaim.zone_in_job(id) {
                return Err(format!("zone {id} locked for reclaim without a job"));
            }
        }
        for (c, &dz) in self.map.iter().enumerate() {
            if dz != NONE && z.chunk[dz as usize] != c as u32 {
                return Err(format!("chunk {c} -> zone {dz} -> chunk {}", z.chunk[dz as usize]));
            }
        }
        Ok(())
    }

    fn dev_index(dev: DevId) -> usize {
        match dev {
            DevId::Cache => 0,
            DevId::Disk(d) => 1 + d as usize,
        }
    }

    /// Append a command to `out` and count it.
    pub(crate) fn emit(&mut self, out: &mut Vec<DevIo>, dev: DevId, op: Op, offset: u64, len: u64, class: IoClass) {
        debug_assert!(len <= u32::MAX as u64);
        let t = &mut self.traffic[Self::dev_index(dev)];
        match (op, class) {
            (Op::Write, IoClass::User) => t.user_write_bytes += len,
            (Op::Read, IoClass::User) => t.user_read_bytes += len,
            (Op::Read, _) => t.reclaim_read_bytes += len,
            (Op::Write, IoClass::ReclaimWrite) => t.reclaim_write_bytes += len,
            (Op::Write, IoClass::ReclaimZero) => t.zero_fill_bytes += len,
            (Op::Write, _) => t.metadata_write_bytes += len,
            (Op::Zone(_), _) => t.resets += 1,
            (Op::Flush, _) => t.flushes += 1,
            (Op::Trim | Op::Append, _) => {}
        }
        out.push(DevIo { dev, io: Io { op, ns: 0, offset, len: len as u32, pid: Pid::NONE }, class });
    }

    /// Emit a read or write of `n` blocks at block `cb` of zone `z`.
    pub(crate) fn emit_zone(&mut self, out: &mut Vec<DevIo>, z: u32, op: Op, cb: u32, n: u32, class: IoClass) {
        let dev = self.zones.dev[z as usize];
        let off = self.zones.start[z as usize] + ((cb as u64) << BLOCK_SHIFT);
        self.emit(out, dev, op, off, (n as u64) << BLOCK_SHIFT, class);
    }

    /// Free zone `z`, emitting its reset when it is a non-empty sequential zone.
    pub(crate) fn free_zone(&mut self, z: u32, class: IoClass, out: &mut Vec<DevIo>) {
        if let Some((dev, off)) = self.zones.free(z) {
            self.emit(out, dev, Op::Zone(wafsim_core::blockdev::ZoneAction::Reset), off, 0, class);
        }
    }

    /// Bytes per block, as a u64 (helper for callers outside the crate).
    pub fn block_size(&self) -> u64 {
        BLOCK_SIZE
    }
}
