//! Device extents and block groups in conventional mode: chunk size
//! (`fs/btrfs/space-info.c calc_chunk_size`, `fs/btrfs/volumes.c
//! init_alloc_chunk_ctl_policy_regular`), placement (`fs/btrfs/volumes.c
//! find_free_dev_extent_start`: first hole large enough, from 1 MiB), the 80 % rule
//! (`fs/btrfs/block-group.c should_alloc_chunk`), removal (`fs/btrfs/volumes.c
//! btrfs_remove_chunk`), and superblock copies kept out of block groups
//! (`fs/btrfs/block-group.c exclude_super_stripes`).

use super::{Bg, BtrfsFs, Kind, MIB, SB_BYTES};
use wafsim_core::{Io, Op, Pid};

/// Largest trim command the model sends (async discard's default `max_discard_size`, 64 MiB,
/// `fs/btrfs/discard.h BTRFS_ASYNC_DISCARD_DEFAULT_MAX_SIZE`); sync discards are cut the same way.
pub(super) const MAX_TRIM: u64 = 64 * MIB;

impl BtrfsFs {
    /// Allocate a chunk of `kind` (conventional mode): both DUP copies of a metadata chunk sit
    /// next to each other in one hole, as the kernel asks `find_free_dev_extent` for the
    /// stripes together. With no hole of the full size the largest one is taken, cut to whole
    /// MiB (`find_free_dev_extent` falls back to the largest hole). `None` when the device is
    /// fully allocated.
    pub(super) fn alloc_chunk(&mut self, kind: Kind, _out: &mut Vec<Io>) -> Option<u32> {
        let copies: u64 = if kind == Kind::Meta { 2 } else { 1 };
        let want = if kind == Kind::Meta { self.cfg.meta_chunk_bytes } else { self.cfg.data_chunk_bytes };
        let (start, per) = match self.dev_free.first_fit(want * copies) {
            Some(s) => (s, want),
            None => {
                let (s, l) = self.dev_free.largest()?;
                let per = l / copies / MIB * MIB;
                if per == 0 {
                    return None;
                }
                (s, per)
            }
        };
        self.dev_free.remove_overlap(start, per * copies);
        let mut g = Bg::new(kind, [start, start + per], copies as u8, per, per);
        g.free.insert(0, per);
        for &sb in &self.sb_offsets {
            for c in 0..copies as usize {
                if sb >= g.dev[c] && sb < g.dev[c] + per {
                    let off = sb - g.dev[c];
                    if g.free.run_at(off) > 0 {
                        g.free.remove_overlap(off, SB_BYTES);
                        g.super_bytes += SB_BYTES;
                    }
                }
            }
        }
        let k = kind as usize;
        self.sp_total[k] += per;
        self.sp_used[k] += g.super_bytes;
        self.bgs.push(g);
        self.has_free[k].insert(self.bgs.len() as u32 - 1);
        self.counters.chunks_allocated += 1;
        Some(self.bgs.len() as u32 - 1)
    }

    /// `should_alloc_chunk`: a type's used (with pinned) bytes plus 2 MiB reach 80 % of its
    /// block groups' size, or it has none.
    pub(super) fn maybe_alloc_chunk(&mut self, kind: Kind, out: &mut Vec<Io>) {
        let k = kind as usize;
        if self.sp_total[k] == 0 || (self.sp_used[k] + 2 * MIB) * 100 >= self.sp_total[k] * 80 {
            self.alloc_chunk(kind, out);
        }
    }

    /// `btrfs_remove_chunk`: the device extents return to the holes; with `trim` each is
    /// discarded whole (discard=sync's `deleted_bgs` at commit).
    pub(super) fn remove_chunk(&mut self, b: u32, trim: bool, out: &mut Vec<Io>) {
        let g = &self.bgs[b as usize];
        let (dev, copies, len, kind, sup) = (g.dev, g.copies, g.len, g.kind, g.super_bytes);
        for &d in dev.iter().take(copies as usize) {
            self.dev_free.insert(d, len);
            if trim {
                self.emit_trim(d, len, out);
            }
        }
        let k = kind as usize;
        self.sp_total[k] -= len;
        self.sp_used[k] -= sup;
        let g = &mut self.bgs[b as usize];
        g.removed = true;
        self.has_free[k].remove(&b);
        let g = &mut self.bgs[b as usize];
        g.free = Default::default();
        g.untrimmed = Default::default();
        self.counters.chunks_removed += 1;
    }

    /// Trim device bytes `[phys, phys + len)` in commands of at most [`MAX_TRIM`].
    pub(super) fn emit_trim(&mut self, mut phys: u64, mut len: u64, out: &mut Vec<Io>) {
        while len > 0 {
            let l = len.min(MAX_TRIM);
            out.push(Io { op: Op::Trim, ns: self.cfg.ns, offset: phys, len: l as u32, pid: Pid::NONE });
            self.counters.trim_bytes += l;
            self.counters.trim_commands += 1;
            phys += l;
            len -= l;
        }
    }

    /// `op` (read or write) of device bytes `[phys, phys + len)`, in commands of at most 1 GiB
    /// (a command's length is 32 bits; a metadata run or a relocated extent on a large zone
    /// could pass 4 GiB).
    pub(super) fn emit_rw(&mut self, op: Op, mut phys: u64, mut len: u64, out: &mut Vec<Io>) {
        const MAX: u64 = 1 << 30;
        while len > 0 {
            let l = len.min(MAX);
            out.push(Io { op, ns: self.cfg.ns, offset: phys, len: l as u32, pid: Pid::NONE });
            phys += l;
            len -= l;
        }
    }

    /// Trim logical range `[off, off + len)` of block group `b` on every copy.
    pub(super) fn trim_bg_range(&mut self, b: u32, off: u64, len: u64, out: &mut Vec<Io>) {
        let g = &self.bgs[b as usize];
        let (dev, copies) = (g.dev, g.copies);
        for &d in dev.iter().take(copies as usize) {
            self.emit_trim(d + off, len, out);
        }
    }
}
