//! mpool's object store on one conventional drive, as HSE 1.x used it (mpool-kmod r1.9.0): every
//! file is an mpool object, an *mblock* (one allocation unit, an mpool "zone", 32 MiB for HSE)
//! or an *mlog* (a run of contiguous zones), placed by mpool's space map and discarded whole
//! when deleted. Nothing here is a file system in the usual sense: no preallocation, no goals,
//! no reuse of a partly written object; an object is written from its start by appends only.
//!
//! The mechanisms, each from mpool-kmod r1.9.0:
//! - the space map splits the drive into `regions` (4, `MPOOL_SMAP_RGNCNT_DEFAULT`, params.h) of
//!   `zones / regions` zones each, the last taking the remainder (smap.c `smap_drive_alloc`);
//! - each allocation advances the drive's region cursor by one *before* searching (so the very
//!   first object lands in region 1), then takes the lowest-offset free extent of that region
//!   that fits; when the region has none it tries the following regions in turn (smap.c
//!   `smap_alloc`); freed extents are merged with their free neighbours (`smap_free_byrgn`);
//! - an mblock is allocated as exactly one zone (mblock.c `mblock_alloc_cmn`, pmd_obj.c
//!   `pmd_layout_calculate`: no capacity target, one zone) and written append-only from offset 0
//!   (`mblock_rw_argcheck`): a write past its zone is refused;
//! - deleting an object discards its *whole* allocation, whatever was written of it, and only
//!   then returns the zones to the space map (pmd_obj.c `pmd_obj_delete`, `pmd_obj_erase_cb`,
//!   `pmd_layout_erase`; pd.c `pd_zone_erase`, `pd_bio_discard`). mpool runs the discard on a
//!   workqueue; it is modelled as immediate, at the delete (an assumption: the discard of one
//!   object finishes before the next allocation that could reuse its zones, which is what the
//!   order discard-then-free guarantees anyway);
//! - an mlog takes ceil(capacity / zone) contiguous zones (`pmd_layout_calculate` with a
//!   capacity target); erasing it for reuse (mlog.c `mlog_erase`) discards its whole range and
//!   starts it empty, keeping the allocation;
//! - a spare reserve (`MPOOL_SPARES_DEFAULT`, 5 % of a drive's zones) that ordinary allocations
//!   may not use and "spare" allocations (HSE's compaction outputs, `SMAP_SPC_SPARE_2_USABLE`)
//!   take first (smap.c `smap_alloccheck`).
//!
//! File operation conventions (the HSE engine in wafsim-apps follows them):
//! - `Create { file, group }` allocates the object at once (mpool allocates at
//!   `mpool_mblock_alloc`, before the first write). A group with [`MLOG_GROUP_BIT`] makes an mlog
//!   of [`mlog_zones`]`(group)` zones (at least one); any other group makes a one-zone mblock.
//!   [`SPARE_GROUP_BIT`] marks an allocation that may use the spare reserve.
//! - `Write` must append at the object's size, in whole `block_bytes`, inside the allocation.
//! - `Close` changes nothing (commit is metadata only; the zone stays allocated).
//! - `Truncate { size: 0 }` of an mlog is `mlog_erase`: the whole range is discarded; other
//!   truncates are refused.
//! - `Delete` discards the whole allocation and frees it.
//!
//! Not modelled: mpool's metadata containers (MDC0 and MDCi on the capacity class: a small
//! record per object commit and delete, periodic compaction), the superblock zones at the start
//! of the drive, alignment other than one zone, drive flushes at commit.

use std::collections::{BTreeMap, HashMap};
use wafsim_core::pipeline::{FileId, FileOp};
use wafsim_core::{Io, Op, Pid};

use super::conventional::check_blocks;
use super::{FileSystem, FsError};

/// Group bit marking an mlog (its zone count in [`MLOG_ZONES_SHIFT`]..); without it a file is an
/// mblock of one zone. Bit 30: bit 31 is the media class bit a [`super::MediaClassFs`] above
/// strips.
pub const MLOG_GROUP_BIT: u32 = 1 << 30;
/// Group bit of an allocation allowed to dip into the spare reserve (HSE's compaction and spill
/// outputs, `KVSET_BUILDER_FLAGS_SPARE` → `SMAP_SPC_SPARE_2_USABLE`).
pub const SPARE_GROUP_BIT: u32 = 1 << 29;
/// An mlog's zone count sits in the group from this bit on ...
pub const MLOG_ZONES_SHIFT: u32 = 16;
/// ... masked with this (up to 8191 zones, 256 GiB of 32 MiB zones).
pub const MLOG_ZONES_MASK: u32 = 0x1FFF;

/// The zones an mlog created in `group` takes (at least 1); 1 for an mblock.
pub fn mlog_zones(group: u32) -> u64 {
    if group & MLOG_GROUP_BIT == 0 {
        return 1;
    }
    (((group >> MLOG_ZONES_SHIFT) & MLOG_ZONES_MASK) as u64).max(1)
}

/// Figures of an mpool drive.
#[derive(Debug, Clone, PartialEq)]
pub struct MpoolConfig {
    /// Namespace of the drive.
    pub ns: u32,
    /// Its size in bytes (whole zones are used; a tail less than a zone is not).
    pub device_bytes: u64,
    /// The mpool zone (the media class's mblock size, `mp_mblocksz`, 32 MiB; HSE requires it).
    pub zone_bytes: u64,
    /// Space map regions (`MPOOL_SMAP_RGNCNT_DEFAULT`, 4).
    pub regions: u32,
    /// Write unit: writes are whole blocks (mpool's page, 4 KiB).
    pub block_bytes: u32,
    /// Spare reserve, percent of the zones (`MPOOL_SPARES_DEFAULT`, 5); 0 = none.
    pub spare_pct: u32,
}

impl MpoolConfig {
    /// mpool's defaults on a drive of `device_bytes`: 32 MiB zones, 4 regions, 4 KiB pages,
    /// 5 % spare.
    pub fn new(ns: u32, device_bytes: u64) -> MpoolConfig {
        MpoolConfig { ns, device_bytes, zone_bytes: 32 << 20, regions: 4, block_bytes: 4096, spare_pct: 5 }
    }
}

/// Counts of an [`MpoolFs`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MpoolCounters {
    /// Bytes the application wrote.
    pub file_write_bytes: u64,
    /// Bytes the application read.
    pub file_read_bytes: u64,
    /// Bytes written to the drive (the same: mpool adds no data writes; its metadata is not
    /// modelled).
    pub dev_write_bytes: u64,
    /// Bytes read from the drive.
    pub dev_read_bytes: u64,
    /// Bytes discarded: whole allocations at deletes and mlog erases.
    pub dev_trim_bytes: u64,
    /// Objects allocated (mblocks and mlogs).
    pub allocs: u64,
    /// Objects deleted.
    pub deletes: u64,
    /// mlog erases (`Truncate { size: 0 }`).
    pub mlog_erases: u64,
    /// Allocations per region (where the object landed).
    pub region_allocs: Vec<u64>,
    /// Allocations that took a zone of the spare reserve.
    pub spare_allocs: u64,
}

#[derive(Debug, Clone, Copy)]
struct Object {
    /// First zone.
    zone: u64,
    /// Zones allocated.
    zones: u64,
    /// Bytes written (the next append's offset).
    size: u64,
    mlog: bool,
    /// Zones counted against the spare reserve.
    spare_zones: u64,
}

/// mpool's placement of mblocks and mlogs on one conventional drive (see the module doc).
#[derive(Debug, Clone)]
pub struct MpoolFs {
    cfg: MpoolConfig,
    zones: u64,
    region_zones: u64,
    /// Free extents per region: first zone -> zone count, disjoint, merged.
    free: Vec<BTreeMap<u64, u64>>,
    /// The region cursor (`sda_rgnalloc`), advanced before each search.
    cursor: u32,
    objects: HashMap<FileId, Object>,
    /// Zones in use outside / inside the spare reserve, and the two targets.
    used_usable: u64,
    used_spare: u64,
    usable_target: u64,
    spare_target: u64,
    counters: MpoolCounters,
}

impl MpoolFs {
    /// An empty mpool on the whole namespace.
    pub fn new(cfg: MpoolConfig) -> Result<MpoolFs, FsError> {
        let b = cfg.block_bytes as u64;
        if b == 0 || !b.is_power_of_two() {
            return Err(FsError::Config("block_bytes must be a power of two"));
        }
        if cfg.zone_bytes == 0 || !cfg.zone_bytes.is_multiple_of(b) {
            return Err(FsError::Config("zone_bytes must be a positive multiple of block_bytes"));
        }
        if cfg.regions == 0 || cfg.spare_pct > 100 {
            return Err(FsError::Config("regions must be positive and spare_pct at most 100"));
        }
        let zones = cfg.device_bytes / cfg.zone_bytes;
        let region_zones = zones / cfg.regions as u64;
        if region_zones == 0 {
            return Err(FsError::Config("the drive holds fewer zones than regions"));
        }
        let mut free = Vec::new();
        for r in 0..cfg.regions as u64 {
            let start = r * region_zones;
            let len = if r + 1 == cfg.regions as u64 { zones - start } else { region_zones };
            free.push(BTreeMap::from([(start, len)]));
        }
        // smap_drive_spares: the spare share of the zones, the rest usable.
        let spare_target = zones * cfg.spare_pct as u64 / 100;
        Ok(MpoolFs {
            zones,
            region_zones,
            free,
            cursor: 0,
            objects: HashMap::new(),
            used_usable: 0,
            used_spare: 0,
            usable_target: zones - spare_target,
            spare_target,
            counters: MpoolCounters { region_allocs: vec![0; cfg.regions as usize], ..MpoolCounters::default() },
            cfg,
        })
    }

    /// Its figures.
    pub fn config(&self) -> &MpoolConfig {
        &self.cfg
    }

    /// Counts so far.
    pub fn counters(&self) -> &MpoolCounters {
        &self.counters
    }

    /// Zones on the drive.
    pub fn zones(&self) -> u64 {
        self.zones
    }

    /// Free zones (spare reserve included).
    pub fn free_zones(&self) -> u64 {
        self.free.iter().flat_map(|m| m.values()).sum()
    }

    /// Live objects.
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// Where `file`'s allocation lies: (device byte offset, allocated bytes, bytes written).
    pub fn allocation(&self, file: FileId) -> Option<(u64, u64, u64)> {
        let o = self.objects.get(&file)?;
        Some((o.zone * self.cfg.zone_bytes, o.zones * self.cfg.zone_bytes, o.size))
    }

    /// The region holding zone `zone` (the last region takes the remainder).
    pub fn region_of(&self, zone: u64) -> u32 {
        ((zone / self.region_zones) as u32).min(self.cfg.regions - 1)
    }

    /// Apply one file operation; the drive I/O it causes is appended to `out`.
    pub fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        match *op {
            FileOp::Create { file, group } => {
                if self.objects.contains_key(&file) {
                    return Err(FsError::Exists(file));
                }
                let zones = mlog_zones(group);
                let spare_ok = group & SPARE_GROUP_BIT != 0;
                let spare_zones = self.check_space(zones, spare_ok)?;
                let zone = self.alloc(zones).ok_or(FsError::NoSpace { need: zones * self.cfg.zone_bytes, free: self.free_zones() * self.cfg.zone_bytes })?;
                self.used_spare += spare_zones;
                self.used_usable += zones - spare_zones;
                if spare_zones > 0 {
                    self.counters.spare_allocs += 1;
                }
                self.objects.insert(file, Object { zone, zones, size: 0, mlog: group & MLOG_GROUP_BIT != 0, spare_zones });
                self.counters.allocs += 1;
            }
            FileOp::Write { file, offset, len } => {
                check_blocks(file, offset, len, self.cfg.block_bytes)?;
                let zb = self.cfg.zone_bytes;
                let o = self.objects.get_mut(&file).ok_or(FsError::NoSuchFile(file))?;
                if offset > o.size {
                    return Err(FsError::Hole { file, offset, size: o.size });
                }
                if offset < o.size {
                    return Err(FsError::Config("mpool objects are written by appends only (mblock_rw_argcheck)"));
                }
                let end = offset + len as u64;
                let cap = o.zones * zb;
                if end > cap {
                    // An mblock cannot grow past its zone: the write is refused.
                    return Err(FsError::NoSpace { need: end, free: cap });
                }
                o.size = end;
                let at = o.zone * zb + offset;
                self.emit(Op::Write, at, len as u64, out);
                self.counters.file_write_bytes += len as u64;
            }
            FileOp::Read { file, offset, len } => {
                let o = self.objects.get(&file).ok_or(FsError::NoSuchFile(file))?;
                let end = offset + len as u64;
                if end > o.size {
                    return Err(FsError::ReadPastEnd { file, offset, end, size: o.size });
                }
                let at = o.zone * self.cfg.zone_bytes + offset;
                self.emit(Op::Read, at, len as u64, out);
                self.counters.file_read_bytes += len as u64;
            }
            FileOp::Close { file } => {
                self.objects.get(&file).ok_or(FsError::NoSuchFile(file))?;
            }
            // The model writes at once: nothing is left to make durable (a page cache above it
            // holds writes until these).
            FileOp::Sync { .. } | FileOp::Clock { .. } => {}
            FileOp::Truncate { file, size } => {
                let zb = self.cfg.zone_bytes;
                let o = self.objects.get_mut(&file).ok_or(FsError::NoSuchFile(file))?;
                if !o.mlog || size != 0 {
                    return Err(FsError::Config("mpool truncates only mlogs, and only to 0 (mlog_erase)"));
                }
                o.size = 0;
                let (at, len) = (o.zone * zb, o.zones * zb);
                self.emit(Op::Trim, at, len, out);
                self.counters.mlog_erases += 1;
            }
            FileOp::Delete { file } => {
                let o = self.objects.remove(&file).ok_or(FsError::NoSuchFile(file))?;
                let zb = self.cfg.zone_bytes;
                // pmd_obj_erase_cb: discard the whole allocation, then smap_free.
                self.emit(Op::Trim, o.zone * zb, o.zones * zb, out);
                self.release(o.zone, o.zones);
                self.used_spare -= o.spare_zones;
                self.used_usable -= o.zones - o.spare_zones;
                self.counters.deletes += 1;
            }
        }
        Ok(())
    }

    /// smap_alloccheck: how many of `zones` come from the spare reserve, or no space. An
    /// ordinary allocation stays within the usable target; a spare one takes spare zones first,
    /// then usable ones.
    fn check_space(&self, zones: u64, spare_ok: bool) -> Result<u64, FsError> {
        let zb = self.cfg.zone_bytes;
        let usable_left = self.usable_target - self.used_usable;
        let spare_left = if spare_ok { self.spare_target - self.used_spare } else { 0 };
        if zones > usable_left + spare_left {
            return Err(FsError::NoSpace { need: zones * zb, free: (usable_left + spare_left) * zb });
        }
        Ok(zones.min(spare_left))
    }

    /// smap_alloc: advance the region cursor, first fit in that region, else the next ones.
    fn alloc(&mut self, zones: u64) -> Option<u64> {
        let rgnc = self.cfg.regions;
        self.cursor = (self.cursor + 1) % rgnc;
        let mut rgn = self.cursor;
        for _ in 0..rgnc {
            let map = &mut self.free[rgn as usize];
            if let Some((&s, &l)) = map.iter().find(|(_, &l)| l >= zones) {
                map.remove(&s);
                if l > zones {
                    map.insert(s + zones, l - zones);
                }
                self.counters.region_allocs[rgn as usize] += 1;
                return Some(s);
            }
            rgn = (rgn + 1) % rgnc;
        }
        None
    }

    /// smap_free: give zones back to their region, merged with free neighbours.
    fn release(&mut self, zone: u64, zones: u64) {
        let r = self.region_of(zone) as usize;
        let map = &mut self.free[r];
        let (mut s, mut l) = (zone, zones);
        if let Some((&ps, &pl)) = map.range(..s).next_back() {
            debug_assert!(ps + pl <= s, "freeing free zones");
            if ps + pl == s {
                map.remove(&ps);
                s = ps;
                l += pl;
            }
        }
        if let Some(nl) = map.remove(&(s + l)) {
            l += nl;
        }
        map.insert(s, l);
    }

    fn emit(&mut self, op: Op, at: u64, len: u64, out: &mut Vec<Io>) {
        // Commands of at most 1 GiB (a command's 32-bit length).
        const MAX: u64 = 1 << 30;
        let mut off = 0;
        while off < len {
            let l = (len - off).min(MAX);
            out.push(Io { op, ns: self.cfg.ns, offset: at + off, len: l as u32, pid: Pid::NONE });
            match op {
                Op::Write => self.counters.dev_write_bytes += l,
                Op::Read => self.counters.dev_read_bytes += l,
                _ => self.counters.dev_trim_bytes += l,
            }
            off += l;
        }
    }
}

impl FileSystem for MpoolFs {
    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        MpoolFs::apply(self, op, out)
    }
    fn write_bytes(&self) -> (u64, u64) {
        (self.counters.file_write_bytes, self.counters.dev_write_bytes)
    }
    /// Zones of live objects (the spare reserve counts once an object takes it).
    fn space(&self) -> Vec<super::Space> {
        let z = self.cfg.zone_bytes;
        super::Space::one((self.used_usable + self.used_spare) * z, self.zones * z)
    }
}
