//! A Btrfs-like copy-on-write file system, over a conventional namespace (any device that is
//! updated in place: conventional, streams, FDP) or over a zoned namespace (Btrfs zoned mode),
//! modelled after Linux `fs/btrfs` (research note `issue27-btrfs-cassandra`, sections 1-3):
//!
//! - space comes in block groups (BGs, "chunks") of data or metadata; metadata is DUP (two
//!   device copies of every node); conventional chunks sit first-fit on the device
//!   ([`chunks`]), zoned ones are whole empty zones ([`zoned`]);
//! - data is copy-on-write: every write, an overwrite too, gets new space; the old extent is
//!   freed but *pinned* until the transaction commits (`fs/btrfs/block-group.c
//!   btrfs_update_block_group`, `fs/btrfs/extent-tree.c btrfs_finish_extent_commit`) ([`commit`]);
//! - each commit rewrites the touched tree nodes to new places (COW, twice for DUP) and the
//!   superblocks ([`meta`]);
//! - empty BGs are removed at commit (`fs/btrfs/block-group.c btrfs_delete_unused_bgs`), on a
//!   conventional device discarded per the discard mode, on a zoned one reset; zoned BGs full
//!   of freed space are relocated (reclaim, `btrfs_reclaim_bgs_work`).
//!
//! Assumptions (docs/model.md, "Btrfs-like file system"):
//! - **rate-mapped time**: the file system has no clock. Time is file bytes written divided
//!   by [`BtrfsConfig::write_rate`]: a commit happens every `commit_interval_s * write_rate`
//!   file bytes (the transaction kthread's 30 s, `BTRFS_DEFAULT_COMMIT_INTERVAL`), and
//!   async-discard delays are counted the same way. [`BtrfsFs::commit`] and
//!   [`BtrfsFs::advance_time`] commit or let time pass explicitly;
//! - **metadata estimate**: per commit, 16 KiB nodes: ceil(items / items-per-leaf) leaves for
//!   the extent tree and for the fs tree (one extent item per data extent allocated or freed,
//!   one file-extent item likewise, one inode item per write, three items per create or delete
//!   (inode, dir item, dir index); `meta_item_bytes` = 100 B
//!   per item with its header, so 162 per leaf), ceil(4 B crc32c per new 4 KiB data block /
//!   16 KiB) csum leaves, plus `meta_fixed_nodes` (4: root, extent, fs and csum tree paths);
//!   the previous commit's nodes are freed (pinned) at each commit, so live metadata is the last
//!   commit's set; a scaled run ([`BtrfsConfig::scale`]) writes the scale's share of the nodes
//!   and superblocks of the full-scale transaction, the fraction carried over commits; free-space, chunk and device trees, the log tree (fsync) and the system chunk
//!   are left out;
//! - no page cache and no delalloc: a write is allocated and sent at once (the hint keeps an
//!   appending file contiguous, as delalloc would), extents are split exactly on overwrite (no
//!   bookend extents), no compression, no inline extents, no reflinks or snapshots;
//! - zoned data placement is a choice ([`Placement`]): upstream has none (files interleave in
//!   the open zone), the ZNS prototype's per-directory zones are the alternative;
//! - a write that finds no room first commits (freeing pinned space, resetting and reclaiming
//!   zones, as the kernel's ENOSPC flushing does); if it is refused after all, that commit's
//!   I/O has been sent already.

pub mod chunks;
pub mod commit;
pub mod extents;
pub mod meta;
pub mod zoned;

use std::collections::{BTreeSet, HashMap, VecDeque};

use wafsim_core::pipeline::{FileId, FileOp};
use wafsim_core::{Io, Op, Pid};

use super::conventional::check_blocks;
use super::FsError;
use extents::Extents;

pub(crate) const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// A superblock copy (`BTRFS_SUPER_INFO_SIZE`).
pub(crate) const SB_BYTES: u64 = 4096;
const NONE: u32 = u32::MAX;

/// How freed space is discarded on a conventional device (mount options `nodiscard`,
/// `discard=sync`, `discard=async`; `fs/btrfs/disk-io.c open_ctree` turns async on by default
/// from Linux 6.2 on a device that supports discard). A zoned file system resets zones
/// instead and ignores it (`btrfs_check_mountopts_zoned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discard {
    /// `nodiscard` (and the default before 6.2): nothing is ever trimmed, not even a removed
    /// chunk.
    None,
    /// `discard=sync`: each range unpinned at commit is trimmed there, a removed chunk whole
    /// (`btrfs_finish_extent_commit`).
    Sync,
    /// `discard=async` (`fs/btrfs/discard.c`): a freed data range of at least 32 KiB is trimmed
    /// `discard_delay_s` after it was unpinned unless reallocated first; an empty BG is
    /// trimmed `discard_unused_delay_s` after it emptied and then removed; smaller fragments
    /// and metadata free space wait until their BG empties.
    Async,
}

/// Where a zoned file system puts file data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Upstream Linux: no per-file placement (`do_allocation_zoned` appends to the open data
    /// BG), so files written at the same time interleave in one zone.
    Upstream,
    /// The ZNS prototype's policy: the files of one group (`FileOp::Create::group`, a
    /// directory) share their own open BG.
    PerGroup,
}

/// Zone geometry of the zoned namespace the file system is made on (the device's
/// `wafsim_core::blockdev::ZoneGeometry` carries the same figures; the model needs only these,
/// and every zone is sequential-write-required to it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BtrfsZones {
    /// Zone size (stride between zone starts), bytes; a data BG is one zone.
    pub zone_bytes: u64,
    /// Writable bytes of a zone.
    pub zone_capacity: u64,
    /// Active-zone limit of the device (0 = none); past it the file system finishes a data BG
    /// early (`fs/btrfs/zoned.c btrfs_zone_finish_one_bg`).
    pub max_active_zones: u32,
}

/// Figures of the file system. Build one with [`BtrfsConfig::conventional`] or
/// [`BtrfsConfig::zoned`] and change fields as needed.
#[derive(Debug, Clone, PartialEq)]
pub struct BtrfsConfig {
    /// Namespace it lives on.
    pub ns: u32,
    /// Size of the namespace, bytes.
    pub device_bytes: u64,
    /// File system block (sector): 4096; writes must be whole blocks.
    pub block_bytes: u32,
    /// Zoned mode when set.
    pub zoned: Option<BtrfsZones>,
    /// Conventional data chunk: 1 GiB, at most 10 % of the device, in whole MiB
    /// (`calc_chunk_size`, `init_alloc_chunk_ctl_policy_regular`).
    pub data_chunk_bytes: u64,
    /// Conventional metadata chunk (per DUP copy): 1 GiB above a 50 GiB device, else 256 MiB,
    /// at most 10 % of the device.
    pub meta_chunk_bytes: u64,
    /// Largest data extent: 128 MiB (`BTRFS_MAX_EXTENT_SIZE`).
    pub max_extent_bytes: u64,
    /// Bytes per second of file writes arriving: maps time to bytes (module doc). 100 MiB/s.
    pub write_rate: u64,
    /// Seconds between commits: 30 (`BTRFS_DEFAULT_COMMIT_INTERVAL`).
    pub commit_interval_s: u32,
    /// Discard mode (conventional only): `Async`, the 6.2+ default.
    pub discard: Discard,
    /// Async discard delay for a freed range: 120 s (`BTRFS_DISCARD_DELAY`).
    pub discard_delay_s: u32,
    /// Async discard delay for an empty BG: 10 s (`BTRFS_DISCARD_UNUSED_DELAY`).
    pub discard_unused_delay_s: u32,
    /// Data size classes (6.3+, conventional only; `btrfs_block_group_should_use_size_class`):
    /// on.
    pub size_classes: bool,
    /// Zoned data placement: `Upstream`.
    pub placement: Placement,
    /// Zoned: a data BG whose freed (unusable) bytes reach this percentage of the zone capacity
    /// is a reclaim candidate: 75 (`BTRFS_DEFAULT_ZONED_RECLAIM_THRESH`).
    pub bg_reclaim_threshold: u32,
    /// Zoned: reclaim runs only while at least this percentage of the device's zones are in
    /// BGs: 75 (`fs/btrfs/zoned.c btrfs_zoned_should_reclaim`).
    pub reclaim_gate_percent: u32,
    /// Tree node size: 16 KiB (mkfs default).
    pub node_bytes: u32,
    /// Bytes of a tree item with its header (metadata estimate): 100.
    pub meta_item_bytes: u32,
    /// Nodes every commit rewrites whatever changed (roots and paths): 4.
    pub meta_fixed_nodes: u32,
    /// Capacity scale of a scaled run, 0 < scale <= 1 (1: full scale). A scaled run's clock
    /// (`write_rate`) shrinks with the drive, so a commit holds `scale` times the file bytes of
    /// a full-scale commit; its tree nodes and superblocks, whose sizes do not scale, are then
    /// `scale` times those of the full-scale transaction (items / `scale`), with the fraction
    /// carried to the next commit, so metadata bytes per file byte are the full-scale figure
    /// rather than the fixed nodes and per-tree rounding of a tiny commit (module doc).
    pub scale: f64,
}

impl BtrfsConfig {
    /// A file system on a conventional namespace of `device_bytes`, with the 6.2+ defaults.
    pub fn conventional(ns: u32, device_bytes: u64) -> BtrfsConfig {
        let tenth = device_bytes / 10 / MIB * MIB;
        let meta = if device_bytes > 50 * GIB { GIB } else { 256 * MIB };
        BtrfsConfig {
            ns,
            device_bytes,
            block_bytes: 4096,
            zoned: None,
            data_chunk_bytes: GIB.min(tenth).max(MIB),
            meta_chunk_bytes: meta.min(tenth).max(MIB),
            max_extent_bytes: 128 * MIB,
            write_rate: 100 * MIB,
            commit_interval_s: 30,
            discard: Discard::Async,
            discard_delay_s: 120,
            discard_unused_delay_s: 10,
            size_classes: true,
            placement: Placement::Upstream,
            bg_reclaim_threshold: 75,
            reclaim_gate_percent: 75,
            node_bytes: 16384,
            meta_item_bytes: 100,
            meta_fixed_nodes: 4,
            scale: 1.0,
        }
    }

    /// A file system on a zoned namespace of `device_bytes`.
    pub fn zoned(ns: u32, device_bytes: u64, zone_bytes: u64, zone_capacity: u64, max_active_zones: u32) -> BtrfsConfig {
        BtrfsConfig { zoned: Some(BtrfsZones { zone_bytes, zone_capacity, max_active_zones }), discard: Discard::None, ..BtrfsConfig::conventional(ns, device_bytes) }
    }
}

/// Counts at the file system's interfaces. Device writes add up:
/// `dev_write_bytes = data_write_bytes + meta_write_bytes + reloc_write_bytes + sb_write_bytes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BtrfsCounters {
    /// Bytes the application wrote.
    pub file_write_bytes: u64,
    /// Bytes the application read.
    pub file_read_bytes: u64,
    /// All bytes written to the device.
    pub dev_write_bytes: u64,
    /// File data written (equals `file_write_bytes`: no page cache).
    pub data_write_bytes: u64,
    /// Tree nodes written, both DUP copies.
    pub meta_write_bytes: u64,
    /// Relocation (zoned reclaim) copies.
    pub reloc_write_bytes: u64,
    /// Superblock writes.
    pub sb_write_bytes: u64,
    /// Bytes read from the device (file reads, relocation reads).
    pub dev_read_bytes: u64,
    /// Bytes trimmed.
    pub trim_bytes: u64,
    /// Trim commands.
    pub trim_commands: u64,
    /// Zone resets (BGs, superblock log zones).
    pub zone_resets: u64,
    /// Zones finished early (active-zone limit).
    pub zone_finishes: u64,
    /// Transaction commits.
    pub commits: u64,
    /// Block groups created.
    pub chunks_allocated: u64,
    /// Block groups removed.
    pub chunks_removed: u64,
    /// Zoned BGs relocated by reclaim.
    pub reclaimed_bgs: u64,
    /// Files created.
    pub creates: u64,
    /// Files deleted.
    pub deletes: u64,
}

/// Data or metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Data = 0,
    Meta = 1,
}

/// A block group.
#[derive(Debug, Clone)]
pub(crate) struct Bg {
    kind: Kind,
    /// Device offset of each copy (the second only for DUP).
    dev: [u64; 2],
    copies: u8,
    /// Bytes of one copy (zoned: the zone size).
    len: u64,
    /// Writable bytes (zoned: the zone capacity; conventional: `len`).
    cap: u64,
    /// Allocated, not freed.
    used: u64,
    /// Freed in the running transaction.
    pinned: u64,
    /// Superblock copies inside (conventional).
    super_bytes: u64,
    /// Free space (conventional).
    free: Extents,
    /// Free space not trimmed yet (conventional, async discard).
    untrimmed: Extents,
    /// Write pointer (zoned `alloc_offset`).
    wp: u64,
    /// Freed bytes behind the write pointer and finished tails (zoned `zone_unusable` less
    /// `length - zone_capacity`).
    unusable: u64,
    /// Holds an active zone (zoned).
    active: bool,
    /// Size class, 0 = none yet.
    class: u8,
    removed: bool,
    /// On the unused list.
    unused: bool,
    /// On async discard's unused queue.
    discard_queued: bool,
}

impl Bg {
    fn new(kind: Kind, dev: [u64; 2], copies: u8, len: u64, cap: u64) -> Bg {
        Bg { kind, dev, copies, len, cap, used: 0, pinned: 0, super_bytes: 0, free: Extents::default(), untrimmed: Extents::default(), wp: 0, unusable: 0, active: false, class: 0, removed: false, unused: false, discard_queued: false }
    }
}

/// One extent of a file: file bytes `[at, at + len)` at offset `off` of block group `bg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FExt {
    at: u64,
    bg: u32,
    off: u64,
    len: u64,
}

#[derive(Debug, Clone)]
struct File {
    group: u32,
    size: u64,
    ext: Vec<FExt>,
}

impl File {
    fn alloc_end(&self) -> u64 {
        self.ext.last().map_or(0, |e| e.at + e.len)
    }
}

/// Items changed in the running transaction (metadata estimate).
#[derive(Debug, Clone, Copy, Default)]
struct Tx {
    extent_items: u64,
    fs_items: u64,
    /// Of which items of data writes (one write per `write_bytes` of the application, so as
    /// many per byte at any scale; the others come per file or extent, whose counts a scaled
    /// run keeps).
    extent_items_w: u64,
    fs_items_w: u64,
    new_data_bytes: u64,
    dirty: bool,
}

/// The file system.
#[derive(Debug, Clone)]
pub struct BtrfsFs {
    cfg: BtrfsConfig,
    bgs: Vec<Bg>,
    /// Unallocated device space (conventional), whole MiB.
    dev_free: Extents,
    /// Conventional superblock copies on the device.
    sb_offsets: Vec<u64>,
    files: HashMap<FileId, File>,
    /// Ranges freed in the running transaction: (bg, offset, length).
    pins: Vec<(u32, u64, u64)>,
    /// BGs whose used bytes fell to 0 (`btrfs_mark_bg_unused`).
    unused: Vec<u32>,
    /// Per kind: bytes of BGs, and used + pinned + superblock bytes in them (conventional).
    sp_total: [u64; 2],
    sp_used: [u64; 2],
    sp_pinned: [u64; 2],
    /// Per kind: the block groups with free space, in logical order (conventional first fit
    /// walks these, not the full ones).
    has_free: [BTreeSet<u32>; 2],
    /// Metadata node runs written by the last commit.
    meta_live: Vec<(u32, u64, u64)>,
    tx: Tx,
    /// Rate-mapped clock: file bytes written so far.
    now: u64,
    since_commit: u64,
    interval_bytes: u64,
    /// Scaled run: fractions of a tree node and of a superblock write carried to the next
    /// commit ([`BtrfsConfig::scale`]).
    meta_carry: f64,
    sb_carry: f64,
    /// Async discard: freed ranges (due, bg, off, len) and empty BGs (due, bg), due order.
    discard_q: VecDeque<(u64, u32, u64, u64)>,
    unused_q: VecDeque<(u64, u32)>,
    z: Option<zoned::ZoneState>,
    counters: BtrfsCounters,
}

impl BtrfsFs {
    /// An empty file system as mkfs leaves it: one metadata BG (DUP); data BGs come on first
    /// use. The device is assumed trimmed or reset beforehand ([`BtrfsFs::mkfs_ios`]).
    pub fn new(cfg: BtrfsConfig) -> Result<BtrfsFs, FsError> {
        let b = cfg.block_bytes as u64;
        if b != 4096 {
            return Err(FsError::Config("btrfs model: block_bytes must be 4096"));
        }
        if cfg.node_bytes < 4096 || !cfg.node_bytes.is_multiple_of(4096) || cfg.meta_item_bytes == 0 || cfg.write_rate == 0 || cfg.commit_interval_s == 0 {
            return Err(FsError::Config("btrfs model: node_bytes a multiple of 4096, meta_item_bytes, write_rate and commit_interval_s positive"));
        }
        if cfg.max_extent_bytes < b || !cfg.max_extent_bytes.is_multiple_of(b) || cfg.max_extent_bytes > 1 << 31 {
            return Err(FsError::Config("btrfs model: max_extent_bytes a multiple of the block, at most 2 GiB"));
        }
        if !(cfg.scale > 0.0 && cfg.scale <= 1.0) {
            return Err(FsError::Config("btrfs model: scale must be in (0, 1]"));
        }
        let interval_bytes = cfg.write_rate * cfg.commit_interval_s as u64;
        let mut fs = BtrfsFs {
            meta_carry: 0.0,
            sb_carry: 0.0,
            bgs: Vec::new(),
            dev_free: Extents::default(),
            sb_offsets: Vec::new(),
            files: HashMap::new(),
            pins: Vec::new(),
            unused: Vec::new(),
            sp_total: [0; 2],
            sp_used: [0; 2],
            sp_pinned: [0; 2],
            has_free: Default::default(),
            meta_live: Vec::new(),
            tx: Tx::default(),
            now: 0,
            since_commit: 0,
            interval_bytes,
            discard_q: VecDeque::new(),
            unused_q: VecDeque::new(),
            z: None,
            counters: BtrfsCounters::default(),
            cfg,
        };
        let mut out = Vec::new();
        if fs.cfg.zoned.is_some() {
            fs.z = Some(zoned::ZoneState::new(&fs.cfg)?);
            fs.new_zoned_bg(Kind::Meta, &mut out).ok_or(FsError::Config("btrfs model: no zones for the first metadata block group"))?;
        } else {
            let c = &fs.cfg;
            if !c.data_chunk_bytes.is_multiple_of(MIB) || !c.meta_chunk_bytes.is_multiple_of(MIB) || c.data_chunk_bytes == 0 || c.meta_chunk_bytes == 0 {
                return Err(FsError::Config("btrfs model: chunk sizes must be whole MiB"));
            }
            let end = c.device_bytes / MIB * MIB;
            if end < MIB + 2 * c.meta_chunk_bytes + c.data_chunk_bytes {
                return Err(FsError::Config("btrfs model: device too small for a metadata and a data chunk"));
            }
            fs.dev_free.insert(MIB, end - MIB);
            fs.sb_offsets = [64 << 10, 64 * MIB, 256 * GIB].into_iter().filter(|&o| o + SB_BYTES <= fs.cfg.device_bytes).collect();
            fs.alloc_chunk(Kind::Meta, &mut out);
        }
        Ok(fs)
    }

    /// Its figures.
    pub fn config(&self) -> &BtrfsConfig {
        &self.cfg
    }

    /// Counts at its interfaces.
    pub fn counters(&self) -> BtrfsCounters {
        self.counters
    }

    /// The commands mkfs sends first, which this model assumes done: the whole device trimmed
    /// in 1 GiB pieces (btrfs-progs `prepare_discard_device`), or on a zoned device every zone
    /// reset (`btrfs_reset_zones`). Not counted in the counters.
    pub fn mkfs_ios(&self) -> Vec<Io> {
        let ns = self.cfg.ns;
        match self.cfg.zoned {
            Some(g) => (0..self.cfg.device_bytes / g.zone_bytes).map(|z| Io { op: Op::Zone(wafsim_core::blockdev::ZoneAction::Reset), ns, offset: z * g.zone_bytes, len: 0, pid: Pid::NONE }).collect(),
            None => {
                let end = self.cfg.device_bytes / 4096 * 4096;
                (0..end.div_ceil(GIB)).map(|i| Io { op: Op::Trim, ns, offset: i * GIB, len: (end - i * GIB).min(GIB) as u32, pid: Pid::NONE }).collect()
            }
        }
    }

    /// Device extents of `file` holding data, in file order: (file offset, device offset,
    /// length) (the first copy; data is never DUP).
    pub fn extents(&self, file: FileId) -> Option<Vec<(u64, u64, u64)>> {
        let f = self.files.get(&file)?;
        Some(f.ext.iter().map(|e| (e.at, self.bgs[e.bg as usize].dev[0] + e.off, e.len)).collect())
    }

    /// Block groups in existence: (data?, device offset of the first copy, length, used bytes).
    pub fn block_groups(&self) -> Vec<(bool, u64, u64, u64)> {
        self.bgs.iter().filter(|g| !g.removed).map(|g| (g.kind == Kind::Data, g.dev[0], g.len, g.used)).collect()
    }

    /// Live bytes (data and metadata) in each zone, in zone order (zoned mode).
    pub fn zone_live_bytes(&self) -> Option<Vec<u64>> {
        let g = self.cfg.zoned?;
        let mut v = vec![0u64; (self.cfg.device_bytes / g.zone_bytes) as usize];
        for b in self.bgs.iter().filter(|b| !b.removed) {
            for &d in b.dev.iter().take(b.copies as usize) {
                v[(d / g.zone_bytes) as usize] += b.used;
            }
        }
        Some(v)
    }

    /// Apply one file operation; the block I/O it causes is appended to `out`, in order. A
    /// write may end with a transaction commit (its metadata, superblock, trim and reset
    /// commands follow the data).
    pub fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        match *op {
            FileOp::Create { file, group } => {
                if self.files.contains_key(&file) {
                    return Err(FsError::Exists(file));
                }
                self.files.insert(file, File { group, size: 0, ext: Vec::new() });
                self.tx.fs_items += 3;
                self.tx.dirty = true;
                self.counters.creates += 1;
            }
            FileOp::Write { file, offset, len } => self.write(file, offset, len, out)?,
            FileOp::Read { file, offset, len } => {
                let f = self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
                let end = offset + len as u64;
                if end > f.size {
                    return Err(FsError::ReadPastEnd { file, offset, end, size: f.size });
                }
                for e in &f.ext {
                    let (a, z) = (e.at.max(offset), (e.at + e.len).min(end));
                    if a < z {
                        let phys = self.bgs[e.bg as usize].dev[0] + e.off + (a - e.at);
                        out.push(Io { op: Op::Read, ns: self.cfg.ns, offset: phys, len: (z - a) as u32, pid: Pid::NONE });
                        self.counters.dev_read_bytes += z - a;
                    }
                }
                self.counters.file_read_bytes += len as u64;
            }
            FileOp::Close { file } => {
                self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
            }
            // The model writes at once: nothing is left to make durable (a page cache above it
            // holds writes until these).
            FileOp::Sync { .. } | FileOp::Clock { .. } => {}
            FileOp::Truncate { file, size } => {
                let f = self.files.get_mut(&file).ok_or(FsError::NoSuchFile(file))?;
                if size > f.size {
                    return Err(FsError::Hole { file, offset: size, size: f.size });
                }
                let keep = size.div_ceil(4096) * 4096;
                let end = f.alloc_end();
                f.size = size;
                let freed = if keep < end { cut(&mut f.ext, keep, end) } else { Vec::new() };
                for (b, off, l) in freed {
                    self.free_extent(b, off, l);
                }
                self.tx.fs_items += 1;
                self.tx.dirty = true;
            }
            FileOp::Delete { file } => {
                let f = self.files.remove(&file).ok_or(FsError::NoSuchFile(file))?;
                for e in &f.ext {
                    self.free_extent(e.bg, e.off, e.len);
                }
                self.tx.fs_items += 3;
                self.tx.dirty = true;
                self.counters.deletes += 1;
            }
        }
        Ok(())
    }

    fn write(&mut self, file: FileId, offset: u64, len: u32, out: &mut Vec<Io>) -> Result<(), FsError> {
        check_blocks(file, offset, len, self.cfg.block_bytes)?;
        let f = self.files.get(&file).ok_or(FsError::NoSuchFile(file))?;
        if offset > f.size {
            return Err(FsError::Hole { file, offset, size: f.size });
        }
        let group = f.group;
        // The allocation hint: the end of the extent before `offset`
        // (`get_extent_allocation_hint`).
        let hint = match f.ext.last() {
            Some(e) if e.at + e.len == offset => Some((e.bg, e.off + e.len)),
            _ => f.ext.iter().find(|e| e.at + e.len == offset).map(|e| (e.bg, e.off + e.len)),
        };
        let len = len as u64;
        self.ensure_space(group, len, out)?;
        let pieces = if self.z.is_some() { self.alloc_zoned_data(group, len, out)? } else { self.alloc_conv(Kind::Data, len, hint, out)? };
        let end = offset + len;
        // Copy on write: the old copy of an overwritten range is freed (pinned).
        let f = self.files.get_mut(&file).expect("checked");
        let alloc_end = f.alloc_end();
        let freed = if offset < alloc_end { cut(&mut f.ext, offset, end.min(alloc_end)) } else { Vec::new() };
        let mut idx = f.ext.partition_point(|e| e.at < offset);
        let mut at = offset;
        for &(b, off, l) in &pieces {
            let merge = idx > 0 && {
                let p = &f.ext[idx - 1];
                p.at + p.len == at && p.bg == b && p.off + p.len == off
            };
            if merge {
                f.ext[idx - 1].len += l;
            } else {
                f.ext.insert(idx, FExt { at, bg: b, off, len: l });
                idx += 1;
            }
            at += l;
        }
        f.size = f.size.max(end);
        for &(b, off, l) in &pieces {
            out.push(Io { op: Op::Write, ns: self.cfg.ns, offset: self.bgs[b as usize].dev[0] + off, len: l as u32, pid: Pid::NONE });
        }
        for (b, off, l) in freed {
            self.free_extent(b, off, l);
        }
        self.tx.extent_items += pieces.len() as u64;
        self.tx.fs_items += pieces.len() as u64 + 1;
        // One piece per write scales with the bytes; a further piece where the write crosses a
        // block group's end comes once per block group, as many at any scale.
        let w = pieces.len().min(1) as u64;
        self.tx.extent_items_w += w;
        self.tx.fs_items_w += w + 1;
        self.tx.new_data_bytes += len;
        self.tx.dirty = true;
        self.counters.file_write_bytes += len;
        self.counters.data_write_bytes += len;
        self.counters.dev_write_bytes += len;
        if self.z.is_none() {
            self.maybe_alloc_chunk(Kind::Data, out);
        }
        self.tick(len, out)
    }

    /// Free `[off, off + len)` of BG `b`: used falls now, the space stays pinned until the
    /// commit (`btrfs_update_block_group` with `alloc = false`).
    fn free_extent(&mut self, b: u32, off: u64, len: u64) {
        let g = &mut self.bgs[b as usize];
        g.used -= len;
        g.pinned += len;
        let k = g.kind as usize;
        if g.used == 0 && !g.unused {
            g.unused = true;
            self.unused.push(b);
        }
        self.sp_pinned[k] += len;
        self.pins.push((b, off, len));
        self.tx.extent_items += 1;
        self.tx.fs_items += 1;
        self.tx.dirty = true;
    }

    /// Room check before a write of `need` bytes; when only pinned space would make room, the
    /// transaction is committed first (as the kernel's ENOSPC flushing commits).
    fn ensure_space(&mut self, group: u32, need: u64, out: &mut Vec<Io>) -> Result<(), FsError> {
        let avail = self.data_room(group);
        if need <= avail {
            return Ok(());
        }
        let pinned = self.sp_pinned[Kind::Data as usize];
        if self.z.is_some() || need <= avail + pinned {
            self.commit(out)?;
            let avail = self.data_room(group);
            if need <= avail {
                return Ok(());
            }
            return Err(FsError::NoSpace { need, free: avail });
        }
        Err(FsError::NoSpace { need, free: avail })
    }

    fn data_room(&self, group: u32) -> u64 {
        match &self.z {
            None => self.sp_total[0] - self.sp_used[0] + self.dev_free.total(),
            Some(_) => self.zoned_data_room(group),
        }
    }

    /// Let `bytes` of rate-mapped time pass: async discards fall due, and a commit happens once
    /// `commit_interval_s * write_rate` bytes have passed since the last commit (a commit
    /// restarts the count, as the transaction kthread measures from the last commit).
    fn tick(&mut self, bytes: u64, out: &mut Vec<Io>) -> Result<(), FsError> {
        self.now += bytes;
        self.since_commit += bytes;
        self.run_discards(out);
        if self.since_commit >= self.interval_bytes {
            self.commit(out)?;
        }
        Ok(())
    }

    /// Let `secs` seconds pass with no file writes (`secs * write_rate` bytes of the rate-mapped
    /// clock; module doc): async discards fall due and a commit happens at each elapsed
    /// interval, as if the application were idle.
    pub fn advance_time(&mut self, secs: f64, out: &mut Vec<Io>) -> Result<(), FsError> {
        let mut left = (secs * self.cfg.write_rate as f64) as u64;
        while left > 0 {
            let step = left.min(self.interval_bytes - self.since_commit);
            self.tick(step, out)?;
            left -= step;
        }
        Ok(())
    }

    /// The rate-mapped clock: file bytes written so far plus time advanced.
    pub fn now_bytes(&self) -> u64 {
        self.now
    }
}

/// Drop file range `[a, b)` from `ext` (sorted, disjoint); the (bg, offset, length) ranges it
/// held.
fn cut(ext: &mut Vec<FExt>, a: u64, b: u64) -> Vec<(u32, u64, u64)> {
    let mut freed = Vec::new();
    let mut keep = Vec::with_capacity(ext.len() + 1);
    for &e in ext.iter() {
        let (s, t) = (e.at, e.at + e.len);
        if t <= a || s >= b {
            keep.push(e);
            continue;
        }
        let (fa, fb) = (s.max(a), t.min(b));
        freed.push((e.bg, e.off + (fa - s), fb - fa));
        if s < fa {
            keep.push(FExt { at: s, bg: e.bg, off: e.off, len: fa - s });
        }
        if fb < t {
            keep.push(FExt { at: fb, bg: e.bg, off: e.off + (fb - s), len: t - fb });
        }
    }
    *ext = keep;
    freed
}

impl super::FileSystem for BtrfsFs {
    fn apply(&mut self, op: &FileOp, out: &mut Vec<Io>) -> Result<(), FsError> {
        BtrfsFs::apply(self, op, out)
    }
    /// File bytes, and device bytes: data, metadata (both copies), relocation copies and
    /// superblocks.
    fn write_bytes(&self) -> (u64, u64) {
        (self.counters.file_write_bytes, self.counters.dev_write_bytes)
    }
    fn zone_live_bytes(&self) -> Option<Vec<u64>> {
        BtrfsFs::zone_live_bytes(self)
    }
    /// Used bytes of the block groups, data and metadata (each copy of DUP metadata).
    fn space(&self) -> Vec<super::Space> {
        let used = self.bgs.iter().filter(|g| !g.removed).map(|g| g.used * g.copies as u64).sum();
        super::Space::one(used, self.cfg.device_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte of every block group is accounted for exactly once.
    fn check(fs: &BtrfsFs) {
        let mut owned: Vec<Vec<(u64, u64)>> = vec![Vec::new(); fs.bgs.len()];
        for f in fs.files.values() {
            let mut at = 0;
            for e in &f.ext {
                assert!(e.at >= at, "file extents overlap or are unordered");
                at = e.at + e.len;
                owned[e.bg as usize].push((e.off, e.len));
            }
        }
        for &(b, off, l) in &fs.meta_live {
            owned[b as usize].push((off, l));
        }
        let mut pinned: Vec<Vec<(u64, u64)>> = vec![Vec::new(); fs.bgs.len()];
        for &(b, off, l) in &fs.pins {
            pinned[b as usize].push((off, l));
        }
        let (mut tot, mut used) = ([0u64; 2], [0u64; 2]);
        for (i, g) in fs.bgs.iter().enumerate() {
            let live: u64 = owned[i].iter().map(|x| x.1).sum();
            let pin: u64 = pinned[i].iter().map(|x| x.1).sum();
            if g.removed {
                assert_eq!(live + pin, 0, "bg {i}: removed but referenced");
                continue;
            }
            assert_eq!(live, g.used, "bg {i}: used");
            assert_eq!(pin, g.pinned, "bg {i}: pinned");
            let mut all: Vec<(u64, u64)> = owned[i].iter().chain(pinned[i].iter()).copied().collect();
            if fs.z.is_none() {
                all.extend(g.free.iter());
                assert_eq!(g.free.total() + g.used + g.pinned + g.super_bytes, g.len, "bg {i}: conventional bytes");
                assert_eq!(fs.has_free[g.kind as usize].contains(&(i as u32)), g.free.total() > 0, "bg {i}: has_free");
                tot[g.kind as usize] += g.len;
                used[g.kind as usize] += g.used + g.pinned + g.super_bytes;
            } else {
                assert_eq!(g.used + g.pinned + g.unusable, g.wp, "bg {i}: zoned bytes");
                assert!(g.wp <= g.cap);
                assert!(all.iter().all(|&(o, l)| o + l <= g.wp), "bg {i}: data past the write pointer");
            }
            all.sort_unstable();
            for w in all.windows(2) {
                assert!(w[0].0 + w[0].1 <= w[1].0, "bg {i}: overlap {w:?}");
            }
        }
        if fs.z.is_none() {
            assert_eq!((tot, used), (fs.sp_total, fs.sp_used));
        }
    }

    fn random_ops(mut fs: BtrfsFs, rounds: u32, seed: u64) {
        let mut x = seed;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut out = Vec::new();
        let mut refused = 0;
        for r in 0..rounds {
            let f = rnd(16);
            let size = fs.files.get(&f).map(|x| x.size);
            let op = match (size, rnd(12)) {
                (None, _) => FileOp::Create { file: f, group: (f % 5) as u32 },
                (Some(s), 0) => FileOp::Truncate { file: f, size: rnd(s + 1) },
                (Some(_), 1) => FileOp::Delete { file: f },
                (Some(s), 2 | 3) if s >= 4096 => FileOp::Write { file: f, offset: rnd(s / 4096) * 4096, len: 4096 * (1 + rnd(40)) as u32 },
                (Some(s), _) => FileOp::Write { file: f, offset: s.div_ceil(4096) * 4096 - if s % 4096 != 0 { 4096 } else { 0 }, len: 4096 * (1 + rnd(200)) as u32 },
            };
            out.clear();
            match fs.apply(&op, &mut out) {
                Ok(()) | Err(FsError::Hole { .. }) => {}
                Err(FsError::NoSpace { .. }) => refused += 1,
                Err(e) => panic!("round {r} {op:?}: {e}"),
            }
            if rnd(50) == 0 {
                fs.commit(&mut out).unwrap();
            }
            check(&fs);
        }
        let c = fs.counters();
        assert!(c.commits > 0);
        assert!(refused < rounds / 4, "mostly refused: {refused}");
    }

    #[test]
    fn random_operations_keep_every_byte_accounted_for() {
        for (i, discard) in [Discard::None, Discard::Sync, Discard::Async].into_iter().enumerate() {
            for classes in [false, true] {
                let mut c = BtrfsConfig::conventional(0, 96 * MIB);
                c.data_chunk_bytes = 8 * MIB;
                c.meta_chunk_bytes = 4 * MIB;
                c.write_rate = 16 << 10;
                c.discard = discard;
                c.size_classes = classes;
                random_ops(BtrfsFs::new(c).unwrap(), 4000, 7 + i as u64);
            }
        }
        for placement in [Placement::Upstream, Placement::PerGroup] {
            for active in [0, 8] {
                let mut c = BtrfsConfig::zoned(0, 160 * MIB, MIB, 768 << 10, active);
                c.write_rate = 16 << 10;
                c.placement = placement;
                c.max_extent_bytes = 256 << 10;
                random_ops(BtrfsFs::new(c).unwrap(), 4000, 11);
            }
        }
    }

    #[test]
    fn cut_splits_and_frees_exactly() {
        let mut ext = vec![FExt { at: 0, bg: 0, off: 100, len: 10 }, FExt { at: 10, bg: 1, off: 0, len: 10 }];
        let freed = cut(&mut ext, 5, 12);
        assert_eq!(freed, vec![(0, 105, 5), (1, 0, 2)]);
        assert_eq!(ext, vec![FExt { at: 0, bg: 0, off: 100, len: 5 }, FExt { at: 12, bg: 1, off: 2, len: 8 }]);
        let mut one = vec![FExt { at: 0, bg: 3, off: 0, len: 30 }];
        assert_eq!(cut(&mut one, 10, 20), vec![(3, 10, 10)]);
        assert_eq!(one.len(), 2);
    }
}
