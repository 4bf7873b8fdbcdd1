//! Configuration and format-time geometry of a dm-zoned set: which zones exist, how many hold
//! metadata, how many are reserved for reclaim, how many chunks are exposed.
//!
//! The sizing replicates what `dmzadm --format` (dm-zoned-tools v2.2.2, `src/dmz_lib.c`,
//! `dmz_locate_metadata`) writes into the super block and what the kernel then accepts
//! (`drivers/md/dm-zoned-metadata.c`, `dmz_check_sb`, `dmz_init_zone`, `dmz_emulate_zones`):
//!
//! - usable zones: every zone of every device (no offline or read-only zones are modelled);
//! - bitmap blocks per zone: `max(1, zone_blocks / 32768)` (one 4 KiB block holds 32768 bits).
//!   The kernel uses this formula; dmzadm computes `zone_blocks >> 15` without the `max`, which is
//!   0 for zones under 128 MiB and would leave no room for bitmaps. The kernel rule is used so that
//!   small test zones work;
//! - first estimate: `chunks0 = usable - (bitmap_zones + reserved)`, map blocks
//!   `ceil(chunks0 / 512)`, metadata blocks `1 + map + bitmap`, metadata zones per set
//!   `ceil(meta_blocks / zone_blocks)`;
//! - final: `chunks = usable - (2 * meta_zones_first_estimate + reserved)`, then the map and
//!   metadata-zone counts are recomputed from it (dmzadm does exactly this two-pass sizing);
//! - the reserved count is clamped to `cache_zones - 1` when it exceeds the number of cache zones
//!   (dmzadm); it must be at least 1 (kernel `dmz_check_sb`).
//!
//! With several devices, dmzadm also counts zone 0 of every zoned disk as usable although the
//! kernel marks it as metadata (it holds the "tertiary" super block, `dmz_init_zone`), so the
//! chunk count exceeds the data zones by one zone per disk; the reserved zones absorb that. The
//! model keeps this arithmetic and refuses configurations that leave no spare data zone at all
//! ([`ConfigError::NoSpareZone`]), because those can run out of zones for good.

use super::DevId;
use wafsim_core::blockdev::{BlockDevice, ZoneGeometry};

/// dm-zoned block size (`DMZ_BLOCK_SIZE`): the unit of mapping, bitmaps and metadata.
pub const BLOCK_SIZE: u64 = 4096;
/// log2 of [`BLOCK_SIZE`].
pub const BLOCK_SHIFT: u32 = 12;
/// Chunk map entries per 4 KiB map block (`DMZ_MAP_ENTRIES`: 8-byte entries).
pub const MAP_ENTRIES_PER_BLOCK: u32 = 512;
/// Bits per 4 KiB bitmap block (`DMZ_BLOCK_SIZE_BITS`).
pub const BITS_PER_BITMAP_BLOCK: u32 = 32768;
/// dmzadm's default number of sequential zones reserved for reclaim (`DMZ_NR_RESERVED_SEQ`).
pub const DEFAULT_RESERVED_SEQ: u32 = 16;
/// kcopyd's default sub-job size (`DEFAULT_SUB_JOB_SIZE_KB` in `drivers/md/dm-kcopyd.c`).
pub const DEFAULT_SUBJOB_BYTES: u32 = 512 << 10;
/// kcopyd's largest sub-job size (`MAX_SUB_JOB_SIZE_KB`).
pub const MAX_SUBJOB_BYTES: u32 = 1 << 20;
/// Largest zone size accepted: commands carry a `u32` length and the kernel keeps zone block
/// counts in `unsigned int`.
pub const MAX_ZONE_SIZE: u64 = 1 << 31;

/// Format-time and module options of a dm-zoned set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmZonedConfig {
    /// Sequential zones reserved for reclaim (`dmzadm --format --seq=N`; default 16, minimum 1).
    pub reserved_seq: u32,
    /// kcopyd sub-job size in bytes (module parameter `dm_mod.kcopyd_subjob_size_kb`; default
    /// 512 KiB, at most 1 MiB, a multiple of 4 KiB): reclaim copies in pieces of this size.
    pub kcopyd_subjob_bytes: u32,
}

impl Default for DmZonedConfig {
    fn default() -> Self {
        DmZonedConfig { reserved_seq: DEFAULT_RESERVED_SEQ, kcopyd_subjob_bytes: DEFAULT_SUBJOB_BYTES }
    }
}

impl DmZonedConfig {
    /// The default options with `reserved` reserved sequential zones.
    pub fn with_reserved(reserved: u32) -> Self {
        DmZonedConfig { reserved_seq: reserved, ..Default::default() }
    }
}

/// What the layer needs to know about one device: namespace 0's size, block size and zone
/// geometry (`None` for a regular, non-zoned device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceShape {
    /// Capacity of namespace 0 in bytes.
    pub capacity: u64,
    /// Logical block size in bytes.
    pub block_size: u32,
    /// Zone geometry of namespace 0, `None` when it is not zoned.
    pub zones: Option<ZoneGeometry>,
}

impl DeviceShape {
    /// The shape of namespace 0 of `dev`.
    pub fn of<D: BlockDevice + ?Sized>(dev: &D) -> DeviceShape {
        DeviceShape { capacity: dev.namespace_bytes(0), block_size: dev.block_size(), zones: dev.zone_geometry(0) }
    }
}

/// Configuration errors, each naming the setting and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No zoned device was given.
    #[error("dm-zoned needs at least one host-managed zoned disk")]
    NoDisks,
    /// Several zoned disks need a regular cache device in front (kernel `dmz_get_zoned_device`).
    #[error("{disks} zoned disks without a cache device: dm-zoned takes several zoned disks only behind a regular (cache) device")]
    MultipleDisksWithoutCache {
        /// Number of disks given.
        disks: usize,
    },
    /// The cache device reports zones (kernel: "First device must be a regular device").
    #[error("the cache device is zoned: dm-zoned's first device must be a regular (non-zoned) block device")]
    CacheDeviceZoned,
    /// A disk reports no zone geometry.
    #[error("disk {disk} is not zoned: dm-zoned needs host-managed zoned disks behind the cache device")]
    DiskNotZoned {
        /// Index of the disk.
        disk: usize,
    },
    /// A disk's zone capacity is below its zone size (ZNS); the kernel rejects such devices.
    #[error("disk {disk}: zone capacity {capacity} B < zone size {size} B; dm-zoned rejects zones whose capacity differs from their size (dmz_init_zone)")]
    ZoneCapacity {
        /// Index of the disk.
        disk: usize,
        /// Zone size in bytes.
        size: u64,
        /// Zone capacity in bytes.
        capacity: u64,
    },
    /// Disks with different zone sizes (kernel: "Zone nr sectors mismatch").
    #[error("disk {disk} has {size}-byte zones but disk 0 has {first}-byte zones: all zoned disks must have the same zone size")]
    ZoneSizeMismatch {
        /// Index of the disk.
        disk: usize,
        /// Its zone size in bytes.
        size: u64,
        /// Disk 0's zone size in bytes.
        first: u64,
    },
    /// The zone size is not a power of two multiple of 4 KiB up to 2 GiB.
    #[error(
        "zone size {size} B: dm-zoned needs a power-of-two zone size of at least 4 KiB (the block) and at most 2 GiB"
    )]
    BadZoneSize {
        /// The zone size in bytes.
        size: u64,
    },
    /// A device's block size does not divide the 4 KiB dm-zoned block.
    #[error("{device}: block size {size} B does not divide dm-zoned's 4096-byte block")]
    BadBlockSize {
        /// "cache device" or "disk N".
        device: String,
        /// The block size in bytes.
        size: u32,
    },
    /// Fewer than three cache (or, single-device, conventional) zones (dmzadm: two for metadata
    /// and one to buffer random writes).
    #[error(
        "{have} cache zones (regular-device zones, or conventional zones of a single disk): dmzadm needs at least 3"
    )]
    TooFewCacheZones {
        /// Cache zones available.
        have: u32,
    },
    /// `reserved_seq` is 0.
    #[error("reserved_seq = 0: dm-zoned needs at least one sequential zone reserved for reclaim")]
    NoReservedZones,
    /// More reserved zones than usable zones.
    #[error("reserved_seq = {reserved} leaves no zone for metadata and chunks ({usable} usable zones)")]
    TooManyReserved {
        /// Reserved zones after dmzadm's clamp.
        reserved: u32,
        /// Usable zones.
        usable: u32,
    },
    /// The two metadata sets do not fit in the cache (or conventional) zones.
    #[error("metadata needs {need} zones (two sets) but only {have} cache zones exist (dmzadm: insufficient number of cache zones)")]
    MetadataTooLarge {
        /// Zones both metadata sets need.
        need: u32,
        /// Cache zones available.
        have: u32,
    },
    /// Every cache zone holds metadata: nothing is left to take writes.
    #[error("all {cache} cache zones hold metadata ({meta} zones): no cache zone is left for data")]
    NoDataCacheZones {
        /// Cache zones.
        cache: u32,
        /// Metadata zones among them.
        meta: u32,
    },
    /// Not a single data zone beyond the chunks: a fully written set could run out of zones.
    #[error("{chunks} chunks but only {data_zones} data zones: no spare zone for reclaim (with several disks dmzadm counts each disk's super block zone as usable; raise reserved_seq above the number of disks)")]
    NoSpareZone {
        /// Exposed chunks.
        chunks: u32,
        /// Zones that can hold chunk data (reserved included).
        data_zones: u32,
    },
    /// No chunk would be exposed.
    #[error("no chunk left to expose after metadata and reserved zones")]
    NoChunks,
    /// Bad kcopyd sub-job size.
    #[error("kcopyd_subjob_bytes = {bytes}: expected a multiple of 4 KiB between 4 KiB and 1 MiB")]
    BadSubjob {
        /// The size in bytes.
        bytes: u32,
    },
    /// A disk refused the format-time reset of its sequential zones.
    #[error("disk {disk}: resetting its sequential zones at format time failed: {error}")]
    Format {
        /// Index of the disk.
        disk: usize,
        /// The device's error.
        error: wafsim_core::DeviceError,
    },
}

/// One zoned disk in the global zone numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskLayout {
    /// Zones of the disk.
    pub zones: u32,
    /// Leading conventional (randomly writable) zones.
    pub conventional: u32,
    /// Global id of the disk's zone 0.
    pub first_zone: u32,
}

/// The geometry dmzadm formats and the kernel loads (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Zone (and chunk) size in bytes.
    pub zone_size: u64,
    /// Zone size in 4 KiB blocks.
    pub zone_blocks: u32,
    /// Emulated zones on the cache device (0 without one). A runt tail smaller than a zone is
    /// not used (the kernel marks it offline).
    pub cache_zones: u32,
    /// The disks, in order.
    pub disks: Vec<DiskLayout>,
    /// All zones (cache + disks): the global zone ids are `0..nr_zones`, cache zones first.
    pub nr_zones: u32,
    /// Sequential zones reserved for reclaim (after dmzadm's clamp).
    pub reserved_seq: u32,
    /// Bitmap blocks per zone.
    pub zone_bitmap_blocks: u32,
    /// Bitmap blocks of one metadata set.
    pub nr_bitmap_blocks: u32,
    /// Chunk map blocks of one metadata set.
    pub nr_map_blocks: u32,
    /// Blocks of one metadata set (super block + map + bitmaps).
    pub nr_meta_blocks: u32,
    /// Zones of one metadata set; two sets are kept.
    pub nr_meta_zones: u32,
    /// Exposed chunks: the exported capacity is `nr_chunks * zone_size`.
    pub nr_chunks: u32,
    /// Device holding the metadata sets: the cache device, or the single disk.
    pub meta_dev: DevId,
    /// Byte offsets of metadata set 0 (primary) and set 1 (log) on `meta_dev`.
    pub meta_offset: [u64; 2],
    /// kcopyd sub-job size in blocks.
    pub subjob_blocks: u32,
}

impl Layout {
    /// Derive the geometry from the devices' shapes, as `dmzadm --format` would.
    pub fn new(cache: Option<DeviceShape>, disks: &[DeviceShape], cfg: &DmZonedConfig) -> Result<Layout, ConfigError> {
        if disks.is_empty() {
            return Err(ConfigError::NoDisks);
        }
        if cache.is_none() && disks.len() > 1 {
            return Err(ConfigError::MultipleDisksWithoutCache { disks: disks.len() });
        }
        let sb = cfg.kcopyd_subjob_bytes;
        if sb == 0 || sb > MAX_SUBJOB_BYTES || !(sb as u64).is_multiple_of(BLOCK_SIZE) {
            return Err(ConfigError::BadSubjob { bytes: sb });
        }
        let mut geos = Vec::with_capacity(disks.len());
        for (i, d) in disks.iter().enumerate() {
            let g = d.zones.ok_or(ConfigError::DiskNotZoned { disk: i })?;
            if g.zone_capacity != g.zone_size {
                return Err(ConfigError::ZoneCapacity { disk: i, size: g.zone_size, capacity: g.zone_capacity });
            }
            if d.block_size == 0 || !BLOCK_SIZE.is_multiple_of(d.block_size as u64) {
                return Err(ConfigError::BadBlockSize { device: format!("disk {i}"), size: d.block_size });
            }
            geos.push(g);
        }
        let zone_size = geos[0].zone_size;
        for (i, g) in geos.iter().enumerate() {
            if g.zone_size != zone_size {
                return Err(ConfigError::ZoneSizeMismatch { disk: i, size: g.zone_size, first: zone_size });
            }
        }
        if zone_size < BLOCK_SIZE || !zone_size.is_power_of_two() || zone_size > MAX_ZONE_SIZE {
            return Err(ConfigError::BadZoneSize { size: zone_size });
        }
        let zone_blocks = (zone_size / BLOCK_SIZE) as u32;
        let mut cache_zones = 0u32;
        if let Some(c) = cache {
            if c.zones.is_some() {
                return Err(ConfigError::CacheDeviceZoned);
            }
            if c.block_size == 0 || !BLOCK_SIZE.is_multiple_of(c.block_size as u64) {
                return Err(ConfigError::BadBlockSize { device: "cache device".into(), size: c.block_size });
            }
            cache_zones = (c.capacity / zone_size) as u32;
        }
        let mut layouts = Vec::with_capacity(disks.len());
        let mut next = cache_zones;
        for g in &geos {
            layouts.push(DiskLayout { zones: g.zones, conventional: g.conventional_zones, first_zone: next });
            next += g.zones;
        }
        let nr_zones = next;
        let usable = nr_zones;
        // dmzadm's "cache zones": all regular-device zones with a cache device, else the
        // single disk's conventional zones.
        let cache_count = if cache.is_some() { cache_zones } else { geos[0].conventional_zones };
        if cache_count < 3 {
            return Err(ConfigError::TooFewCacheZones { have: cache_count });
        }
        if cfg.reserved_seq == 0 {
            return Err(ConfigError::NoReservedZones);
        }
        let mut reserved = cfg.reserved_seq;
        if reserved > cache_count {
            reserved = cache_count - 1;
        }
        if reserved >= usable {
            return Err(ConfigError::TooManyReserved { reserved, usable });
        }
        let zbb = (zone_blocks / BITS_PER_BITMAP_BLOCK).max(1);
        let nr_bitmap_blocks = nr_zones * zbb;
        let bitmap_zones = nr_bitmap_blocks.div_ceil(zone_blocks);
        if bitmap_zones + reserved > usable {
            return Err(ConfigError::TooManyReserved { reserved, usable });
        }
        let chunks0 = usable - (bitmap_zones + reserved);
        let map0 = chunks0.div_ceil(MAP_ENTRIES_PER_BLOCK);
        let meta_zones0 = (1 + map0 + nr_bitmap_blocks).div_ceil(zone_blocks);
        if 2 * meta_zones0 > cache_count {
            return Err(ConfigError::MetadataTooLarge { need: 2 * meta_zones0, have: cache_count });
        }
        let Some(nr_chunks) = usable.checked_sub(2 * meta_zones0 + reserved).filter(|&c| c > 0) else {
            return Err(ConfigError::NoChunks);
        };
        let nr_map_blocks = nr_chunks.div_ceil(MAP_ENTRIES_PER_BLOCK);
        let nr_meta_blocks = 1 + nr_map_blocks + nr_bitmap_blocks;
        let nr_meta_zones = nr_meta_blocks.div_ceil(zone_blocks);
        let meta_total = 2 * nr_meta_zones;
        if meta_total >= cache_count {
            return Err(ConfigError::NoDataCacheZones { cache: cache_count, meta: meta_total });
        }
        // Zones that can hold chunk data: all but metadata (and, with several devices, each
        // disk's tertiary super block zone).
        let tertiary = if cache.is_some() { disks.len() as u32 } else { 0 };
        let data_zones = usable - meta_total - tertiary;
        if nr_chunks >= data_zones {
            return Err(ConfigError::NoSpareZone { chunks: nr_chunks, data_zones });
        }
        let (meta_dev, base) = if cache.is_some() { (DevId::Cache, 0) } else { (DevId::Disk(0), 0) };
        let meta_offset = [base, base + nr_meta_zones as u64 * zone_size];
        Ok(Layout {
            zone_size,
            zone_blocks,
            cache_zones,
            disks: layouts,
            nr_zones,
            reserved_seq: reserved,
            zone_bitmap_blocks: zbb,
            nr_bitmap_blocks,
            nr_map_blocks,
            nr_meta_blocks,
            nr_meta_zones,
            nr_chunks,
            meta_dev,
            meta_offset,
            subjob_blocks: sb >> BLOCK_SHIFT,
        })
    }

    /// Exported capacity in bytes (`nr_chunks` chunks of one zone each).
    pub fn capacity(&self) -> u64 {
        self.nr_chunks as u64 * self.zone_size
    }

    /// Whether a regular cache device is in front of the disks (multi-device mode).
    pub fn has_cache(&self) -> bool {
        self.cache_zones > 0
    }

    /// Global zone ids holding the metadata sets (both sets, contiguous from the super block
    /// zone), plus each disk's tertiary super block zone with a cache device.
    pub fn meta_zone_ids(&self) -> Vec<u32> {
        let first = if self.has_cache() { 0 } else { self.disks[0].first_zone };
        let mut v: Vec<u32> = (first..first + 2 * self.nr_meta_zones).collect();
        if self.has_cache() {
            v.extend(self.disks.iter().map(|d| d.first_zone));
        }
        v
    }
}
