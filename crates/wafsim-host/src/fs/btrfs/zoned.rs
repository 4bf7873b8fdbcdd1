//! Zoned mode (`fs/btrfs/zoned.c`): a data block group is one zone, a metadata one two
//! (DUP), taken from the lowest empty zones (`btrfs_find_allocatable_zones`); allocation only
//! appends at the write pointer (`fs/btrfs/extent-tree.c do_allocation_zoned`); freed space
//! behind it is unusable until the zone is reset, which happens at the commit after the group's
//! used bytes reach 0 (`btrfs_delete_unused_bgs`, `btrfs_reset_device_zone`); groups mostly
//! unusable are relocated when the device is mostly allocated (`btrfs_reclaim_bgs_work`,
//! `btrfs_zoned_should_reclaim`); with an active-zone limit the fullest active data group is
//! finished early (`btrfs_zone_finish_one_bg`); superblocks go to a log of two zones per copy
//! (`btrfs_advance_sb_log`, `sb_log_location`).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::{Bg, BtrfsConfig, BtrfsFs, FExt, Kind, Placement, NONE, SB_BYTES};
use crate::fs::FsError;
use wafsim_core::blockdev::ZoneAction;
use wafsim_core::{Io, Op, Pid};

/// Empty zones file data may not take: two for a metadata BG and one for relocation (the
/// kernel keeps such room through its space reservations).
const DATA_RESERVE: usize = 3;
/// Empty zones relocation may not take (a metadata BG).
const RELOC_RESERVE: usize = 2;

/// Where a relocated extent went: (bg, offset, length) pieces.
type Pieces = Vec<(u32, u64, u64)>;

/// One superblock copy's log: two zones written in turn.
#[derive(Debug, Clone)]
struct SbLog {
    zone: [u32; 2],
    cur: usize,
    wp: u64,
    written: [bool; 2],
}

/// Zone bookkeeping of a zoned file system.
#[derive(Debug, Clone)]
pub(super) struct ZoneState {
    zone_bytes: u64,
    cap: u64,
    nzones: u32,
    max_active: u32,
    empty: BTreeSet<u32>,
    sb: Vec<SbLog>,
    /// Open data BG per placement key (group, or 0 under `Upstream`).
    open: HashMap<u32, u32>,
    meta_open: u32,
    reloc: u32,
    data_active: u32,
    /// Zones inside block groups.
    bg_zones: u32,
}

impl ZoneState {
    pub(super) fn new(cfg: &BtrfsConfig) -> Result<ZoneState, FsError> {
        let g = cfg.zoned.expect("zoned");
        if g.zone_bytes == 0 || !g.zone_bytes.is_multiple_of(4096) || !g.zone_capacity.is_multiple_of(4096) || g.zone_capacity == 0 || g.zone_capacity > g.zone_bytes {
            return Err(FsError::Config("btrfs model: zone size and capacity must be whole blocks, 0 < capacity <= size"));
        }
        let nzones = (cfg.device_bytes / g.zone_bytes) as u32;
        let mut sb = Vec::new();
        let mut reserved = HashSet::new();
        // BTRFS_SB_LOG_PRIMARY_OFFSET, _FIRST_OFFSET (512 GiB), _SECOND_OFFSET (4 TiB).
        for off in [0u64, 512 << 30, 4 << 40] {
            let z = (off / g.zone_bytes) as u32;
            if (z as u64 + 1) < nzones as u64 && !reserved.contains(&z) {
                reserved.insert(z);
                reserved.insert(z + 1);
                sb.push(SbLog { zone: [z, z + 1], cur: 0, wp: 0, written: [false; 2] });
            }
        }
        let empty: BTreeSet<u32> = (0..nzones).filter(|z| !reserved.contains(z)).collect();
        if empty.len() < 2 + DATA_RESERVE + 2 {
            return Err(FsError::Config("btrfs model: too few zones (superblock log, metadata, two data, reserves)"));
        }
        // `BTRFS_MIN_ACTIVE_ZONES` (8): the kernel refuses to mount below it.
        if g.max_active_zones != 0 && (g.max_active_zones as usize) < (sb.len() + 2 + 2).max(8) {
            return Err(FsError::Config("btrfs model: max_active_zones below 8 (BTRFS_MIN_ACTIVE_ZONES) or too small for the superblock logs, metadata DUP, data and relocation"));
        }
        Ok(ZoneState { zone_bytes: g.zone_bytes, cap: g.zone_capacity, nzones, max_active: g.max_active_zones, empty, sb, open: HashMap::new(), meta_open: NONE, reloc: NONE, data_active: 0, bg_zones: 0 })
    }
}

impl BtrfsFs {
    fn zs(&self) -> &ZoneState {
        self.z.as_ref().expect("zoned")
    }

    fn zs_mut(&mut self) -> &mut ZoneState {
        self.z.as_mut().expect("zoned")
    }

    /// A new zoned block group on the lowest empty zone(s): a data one keeps `reserve` empty
    /// zones back and needs an active-zone slot (finishing another group if none is left); a
    /// metadata one takes the lowest two adjacent empty zones (else the two lowest). `None`
    /// when it cannot.
    pub(super) fn new_zoned_bg(&mut self, kind: Kind, out: &mut Vec<Io>) -> Option<u32> {
        self.new_zoned_bg_reserving(kind, DATA_RESERVE, out)
    }

    fn new_zoned_bg_reserving(&mut self, kind: Kind, reserve: usize, out: &mut Vec<Io>) -> Option<u32> {
        let (zb, cap) = (self.zs().zone_bytes, self.zs().cap);
        let b = self.bgs.len() as u32;
        let g = if kind == Kind::Meta {
            // The kernel asks for one hole of two zones for the two stripes; when the empty
            // zones are too scattered for that, the model takes the two lowest rather than fail.
            let e = &self.zs().empty;
            let pair = e.iter().copied().find(|z| e.contains(&(z + 1))).map(|z| (z, z + 1));
            let (z0, z1) = match pair {
                Some(p) => p,
                None => {
                    let mut it = e.iter().copied();
                    (it.next()?, it.next()?)
                }
            };
            let s = self.zs_mut();
            s.empty.remove(&z0);
            s.empty.remove(&z1);
            s.bg_zones += 2;
            s.meta_open = b;
            Bg::new(Kind::Meta, [z0 as u64 * zb, z1 as u64 * zb], 2, zb, cap)
        } else {
            if self.zs().empty.len() <= reserve {
                return None;
            }
            let s = self.zs();
            let budget = if s.max_active == 0 { u32::MAX } else { s.max_active - s.sb.len() as u32 - 2 };
            if s.data_active + 1 > budget && !self.finish_one_bg(out) {
                return None;
            }
            let s = self.zs_mut();
            let z = s.empty.pop_first()?;
            s.bg_zones += 1;
            s.data_active += 1;
            Bg::new(Kind::Data, [z as u64 * zb, 0], 1, zb, cap)
        };
        self.bgs.push(g);
        self.bgs[b as usize].active = true;
        self.counters.chunks_allocated += 1;
        Some(b)
    }

    /// `btrfs_zone_finish_one_bg`: finish the active data group with the least room left (not
    /// the relocation group, not an empty one); its unwritten tail becomes unusable.
    fn finish_one_bg(&mut self, out: &mut Vec<Io>) -> bool {
        let reloc = self.zs().reloc;
        let mut best: Option<(u64, u32)> = None;
        for (i, g) in self.bgs.iter().enumerate() {
            if g.removed || !g.active || g.kind != Kind::Data || i as u32 == reloc || g.wp == 0 {
                continue;
            }
            let room = g.cap - g.wp;
            if best.is_none_or(|(r, _)| room < r) {
                best = Some((room, i as u32));
            }
        }
        let Some((room, b)) = best else { return false };
        out.push(Io { op: Op::Zone(ZoneAction::Finish), ns: self.cfg.ns, offset: self.bgs[b as usize].dev[0], len: 0, pid: Pid::NONE });
        let g = &mut self.bgs[b as usize];
        g.unusable += room;
        g.wp = g.cap;
        self.deactivate(b);
        self.counters.zone_finishes += 1;
        true
    }

    /// A data group is full or finished: it gives up its active zone and open slot.
    fn deactivate(&mut self, b: u32) {
        let g = &mut self.bgs[b as usize];
        if !g.active {
            return;
        }
        g.active = false;
        let kind = g.kind;
        let s = self.z.as_mut().expect("zoned");
        if kind == Kind::Data {
            s.data_active -= 1;
            s.open.retain(|_, v| *v != b);
            if s.reloc == b {
                s.reloc = NONE;
            }
        } else if s.meta_open == b {
            s.meta_open = NONE;
        }
    }

    /// Room for file data of `group` without resets: its open group's and the empty zones'.
    pub(super) fn zoned_data_room(&self, group: u32) -> u64 {
        let s = self.zs();
        let key = if self.cfg.placement == Placement::PerGroup { group } else { 0 };
        let open = s.open.get(&key).map_or(0, |&b| self.bgs[b as usize].cap - self.bgs[b as usize].wp);
        open + s.empty.len().saturating_sub(DATA_RESERVE) as u64 * s.cap
    }

    /// Append `len` bytes at the write pointer of the open data group (per placement key),
    /// taking new groups as they fill (an extent is cut where a zone ends).
    pub(super) fn alloc_zoned_data(&mut self, group: u32, len: u64, out: &mut Vec<Io>) -> Result<Vec<(u32, u64, u64)>, FsError> {
        let key = if self.cfg.placement == Placement::PerGroup { group } else { 0 };
        let mut left = len;
        let mut got = Vec::new();
        while left > 0 {
            let b = match self.zs().open.get(&key) {
                Some(&b) => b,
                None => {
                    let b = self.new_zoned_bg(Kind::Data, out).ok_or(FsError::NoSpace { need: left, free: 0 })?;
                    self.zs_mut().open.insert(key, b);
                    b
                }
            };
            let l = self.append(b, left);
            got.push((b, self.bgs[b as usize].wp - l, l));
            left -= l;
        }
        Ok(got)
    }

    /// Take up to `len` bytes (at most one extent) at group `b`'s write pointer.
    fn append(&mut self, b: u32, len: u64) -> u64 {
        let max = self.cfg.max_extent_bytes;
        let g = &mut self.bgs[b as usize];
        let l = len.min(g.cap - g.wp).min(max);
        g.wp += l;
        g.used += l;
        if g.wp == g.cap {
            self.deactivate(b);
        }
        l
    }

    /// Metadata nodes appended to the open metadata group (both zones of its DUP pair).
    pub(super) fn alloc_zoned_meta(&mut self, len: u64, out: &mut Vec<Io>) -> Result<Vec<(u32, u64, u64)>, FsError> {
        let mut left = len;
        let mut got: Vec<(u32, u64, u64)> = Vec::new();
        while left > 0 {
            let mut b = self.zs().meta_open;
            if b == NONE {
                b = self.new_zoned_bg(Kind::Meta, out).ok_or(FsError::NoSpace { need: left, free: 0 })?;
            }
            let off = self.bgs[b as usize].wp;
            let l = self.append(b, left);
            got.push((b, off, l));
            left -= l;
        }
        Ok(got)
    }

    /// Delete an unused zoned group: reset its zone(s) (the discard of `deleted_bgs` at the end
    /// of the commit is a zone reset on a sequential zone).
    pub(super) fn delete_zoned_bg(&mut self, b: u32, out: &mut Vec<Io>) {
        self.deactivate(b);
        let zb = self.zs().zone_bytes;
        let g = &mut self.bgs[b as usize];
        g.removed = true;
        let (dev, copies) = (g.dev, g.copies as usize);
        for &d in dev.iter().take(copies) {
            out.push(Io { op: Op::Zone(ZoneAction::Reset), ns: self.cfg.ns, offset: d, len: 0, pid: Pid::NONE });
            self.counters.zone_resets += 1;
            let s = self.zs_mut();
            s.empty.insert((d / zb) as u32);
            s.bg_zones -= 1;
        }
        self.counters.chunks_removed += 1;
    }

    /// Zones in block groups, percent of the device's zones (`btrfs_zoned_should_reclaim`'s
    /// allocated share).
    pub fn zones_allocated_percent(&self) -> Option<u64> {
        let s = self.z.as_ref()?;
        Some(s.bg_zones as u64 * 100 / s.nzones as u64)
    }

    /// Reclaim: while the device is at least `reclaim_gate_percent` allocated, data groups
    /// whose unusable bytes reach `bg_reclaim_threshold` % of the zone capacity and whose used
    /// bytes are below that share of the zone size are relocated, least used first: their live
    /// extents are read and rewritten to the relocation group; the emptied group is reset at
    /// the next commit.
    pub(super) fn reclaim(&mut self, out: &mut Vec<Io>) {
        let th = self.cfg.bg_reclaim_threshold as u64;
        if th == 0 || self.zones_allocated_percent().unwrap_or(0) < self.cfg.reclaim_gate_percent as u64 {
            return;
        }
        let reloc = self.zs().reloc;
        let mut cands: Vec<(u64, u32)> = Vec::new();
        for (i, g) in self.bgs.iter().enumerate() {
            if g.removed || g.kind != Kind::Data || i as u32 == reloc || g.used == 0 || g.unused {
                continue;
            }
            if g.unusable * 100 >= g.cap * th && g.used * 100 < g.len * th {
                cands.push((g.used, i as u32));
            }
        }
        if cands.is_empty() {
            return;
        }
        cands.sort_unstable();
        let mut victim = vec![false; self.bgs.len()];
        for &(_, b) in &cands {
            victim[b as usize] = true;
        }
        // Live extents of the candidates: (bg, offset, length), and the files holding them.
        let mut live: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
        let mut owners: Vec<u64> = Vec::new();
        for (&fid, f) in &self.files {
            let mut hit = false;
            for e in &f.ext {
                if victim[e.bg as usize] {
                    live.entry(e.bg).or_default().push((e.off, e.len));
                    hit = true;
                }
            }
            if hit {
                owners.push(fid);
            }
        }
        let mut moved: HashMap<(u32, u64), Pieces> = HashMap::new();
        let cap = self.zs().cap;
        'victims: for (used, b) in cands {
            let s = self.zs();
            let room = if s.reloc == NONE { 0 } else { cap - self.bgs[s.reloc as usize].wp };
            if room + s.empty.len().saturating_sub(RELOC_RESERVE) as u64 * cap < used {
                break;
            }
            let mut exts = live.remove(&b).unwrap_or_default();
            exts.sort_unstable();
            let src = self.bgs[b as usize].dev[0];
            let mut copied = 0;
            for (off, len) in exts {
                self.emit_rw(Op::Read, src + off, len, out);
                self.counters.dev_read_bytes += len;
                let mut left = len;
                let mut pieces = Vec::new();
                let mut stuck = false;
                while left > 0 {
                    let mut r = self.zs().reloc;
                    if r == NONE {
                        // No active zone to be had: the rest stays where it is.
                        let Some(n) = self.new_zoned_bg_reserving(Kind::Data, RELOC_RESERVE, out) else {
                            stuck = true;
                            break;
                        };
                        r = n;
                        self.zs_mut().reloc = r;
                    }
                    let at = self.bgs[r as usize].wp;
                    let l = self.append(r, left);
                    let dst = self.bgs[r as usize].dev[0] + at;
                    self.emit_rw(Op::Write, dst, l, out);
                    self.counters.reloc_write_bytes += l;
                    self.counters.dev_write_bytes += l;
                    pieces.push((r, at, l));
                    left -= l;
                    copied += l;
                }
                self.tx.extent_items += 2 * pieces.len() as u64;
                self.tx.fs_items += pieces.len() as u64;
                self.tx.dirty = true;
                if stuck {
                    pieces.push((b, off + (len - left), left));
                    moved.insert((b, off), pieces);
                    let g = &mut self.bgs[b as usize];
                    g.used -= copied;
                    g.unusable += copied;
                    break 'victims;
                }
                moved.insert((b, off), pieces);
            }
            // A victim still being written gives up its active zone now (the kernel finishes
            // it on the way to deletion, `btrfs_zone_finish`): the device must not count it
            // active while a new zone opens before the reset.
            if self.bgs[b as usize].active {
                out.push(Io { op: Op::Zone(ZoneAction::Finish), ns: self.cfg.ns, offset: src, len: 0, pid: Pid::NONE });
                let g = &mut self.bgs[b as usize];
                g.unusable += g.cap - g.wp;
                g.wp = g.cap;
                self.counters.zone_finishes += 1;
            }
            self.deactivate(b);
            let g = &mut self.bgs[b as usize];
            // The old copies are dead space behind the write pointer now.
            g.used -= copied;
            g.unusable += copied;
            debug_assert_eq!(g.used, 0);
            g.unused = true;
            self.unused.push(b);
            self.counters.reclaimed_bgs += 1;
        }
        for fid in owners {
            let f = self.files.get_mut(&fid).expect("owner");
            let mut ext = Vec::with_capacity(f.ext.len() + 1);
            for e in f.ext.iter() {
                match moved.get(&(e.bg, e.off)) {
                    Some(p) => {
                        let mut at = e.at;
                        for &(bg, off, len) in p {
                            ext.push(FExt { at, bg, off, len });
                            at += len;
                        }
                    }
                    None => ext.push(*e),
                }
            }
            f.ext = ext;
        }
    }

    /// Append this commit's superblock to each log; a full zone hands over to the other one,
    /// which is reset first if it holds an older log.
    pub(super) fn write_sb_log(&mut self, out: &mut Vec<Io>) {
        let (zb, cap, ns) = (self.zs().zone_bytes, self.zs().cap, self.cfg.ns);
        let mut resets = 0;
        let mut sbs = std::mem::take(&mut self.zs_mut().sb);
        for l in &mut sbs {
            if l.wp + SB_BYTES > cap {
                l.cur ^= 1;
                l.wp = 0;
                if l.written[l.cur] {
                    out.push(Io { op: Op::Zone(ZoneAction::Reset), ns, offset: l.zone[l.cur] as u64 * zb, len: 0, pid: Pid::NONE });
                    resets += 1;
                }
            }
            out.push(Io { op: Op::Write, ns, offset: l.zone[l.cur] as u64 * zb + l.wp, len: SB_BYTES as u32, pid: Pid::NONE });
            l.wp += SB_BYTES;
            l.written[l.cur] = true;
            self.counters.sb_write_bytes += SB_BYTES;
            self.counters.dev_write_bytes += SB_BYTES;
        }
        self.zs_mut().sb = sbs;
        self.counters.zone_resets += resets;
    }
}
