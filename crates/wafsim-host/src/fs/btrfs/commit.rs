//! Transaction commit: metadata COW and superblocks ([`super::meta`]), then the end of the
//! commit: pinned ranges become free (`fs/btrfs/extent-tree.c btrfs_finish_extent_commit`,
//! `unpin_extent_range`), with discard=sync trimmed there; empty block groups removed
//! (`fs/btrfs/block-group.c btrfs_delete_unused_bgs`); zoned reclaim. Async discard
//! (`fs/btrfs/discard.c`) runs as rate-mapped time passes.

use super::{BtrfsFs, Discard, Kind};
use crate::fs::FsError;
use wafsim_core::Io;

/// Async discard leaves free runs below this alone until their block group empties
/// (`BTRFS_ASYNC_DISCARD_DEFAULT_MAX_SIZE`'s partner `BTRFS_ASYNC_DISCARD_MIN_FILTER`, 32 KiB).
pub const ASYNC_DISCARD_MIN: u64 = 32 << 10;

impl BtrfsFs {
    /// Commit the running transaction now: write the COW'd tree nodes and the superblocks,
    /// unpin what it freed, remove or reset empty block groups, run zoned reclaim. The
    /// commands go to `out` in that order. A transaction with nothing changed writes nothing
    /// (the transaction kthread has nothing to commit) but still finishes its end.
    pub fn commit(&mut self, out: &mut Vec<Io>) -> Result<(), FsError> {
        if self.tx.dirty {
            self.write_meta(out)?;
            self.write_superblocks(out);
        }
        self.tx = Default::default();
        self.unpin(out);
        self.delete_unused(out);
        if self.z.is_some() {
            self.reclaim(out);
        }
        self.since_commit = 0;
        self.counters.commits += 1;
        Ok(())
    }

    /// Pinned ranges become free: merged per block group, then (conventional) back to the free
    /// space, trimmed at once with discard=sync or queued for async discard; (zoned) counted as
    /// unusable, since nothing behind a write pointer can be written again before a reset
    /// (`fs/btrfs/free-space-cache.c __btrfs_add_free_space_zoned`).
    fn unpin(&mut self, out: &mut Vec<Io>) {
        let mut pins = std::mem::take(&mut self.pins);
        pins.sort_unstable();
        let mut merged: Vec<(u32, u64, u64)> = Vec::with_capacity(pins.len());
        for (b, off, l) in pins.drain(..) {
            match merged.last_mut() {
                Some(m) if m.0 == b && m.1 + m.2 == off => m.2 += l,
                _ => merged.push((b, off, l)),
            }
        }
        self.pins = pins;
        let zoned = self.z.is_some();
        let due = self.now + self.cfg.discard_delay_s as u64 * self.cfg.write_rate;
        for (b, off, l) in merged {
            let g = &mut self.bgs[b as usize];
            g.pinned -= l;
            let k = g.kind as usize;
            self.sp_pinned[k] -= l;
            if zoned {
                g.unusable += l;
                continue;
            }
            self.sp_used[k] -= l;
            g.free.insert(off, l);
            self.has_free[k].insert(b);
            if g.used == 0 && g.pinned == 0 {
                g.class = 0;
            }
            match self.cfg.discard {
                Discard::None => {}
                Discard::Sync => self.trim_bg_range(b, off, l, out),
                Discard::Async => {
                    g.untrimmed.insert(off, l);
                    if g.kind == Kind::Data && l >= ASYNC_DISCARD_MIN {
                        self.discard_q.push_back((due, b, off, l));
                    }
                }
            }
        }
    }

    /// `btrfs_delete_unused_bgs`: block groups whose used bytes fell to 0 and that hold nothing
    /// pinned go, except the last of their type. Conventional: removed (sync discard trims them
    /// whole, async queues them for a trim of what is untrimmed first, nodiscard just forgets
    /// them); zoned: their zones are reset now.
    fn delete_unused(&mut self, out: &mut Vec<Io>) {
        let list = std::mem::take(&mut self.unused);
        for b in list {
            let g = &mut self.bgs[b as usize];
            g.unused = false;
            if g.removed || g.used != 0 || g.pinned != 0 || g.discard_queued {
                continue;
            }
            let kind = g.kind;
            if self.live_bgs(kind) <= 1 {
                continue;
            }
            if self.z.is_some() {
                self.delete_zoned_bg(b, out);
                continue;
            }
            match self.cfg.discard {
                Discard::None => self.remove_chunk(b, false, out),
                Discard::Sync => self.remove_chunk(b, true, out),
                Discard::Async => {
                    let due = self.now + self.cfg.discard_unused_delay_s as u64 * self.cfg.write_rate;
                    self.bgs[b as usize].discard_queued = true;
                    self.unused_q.push_back((due, b));
                }
            }
        }
    }

    pub(super) fn live_bgs(&self, kind: Kind) -> usize {
        self.bgs.iter().filter(|g| !g.removed && g.kind == kind).count()
    }

    /// Async discard work that has fallen due (conventional, `Discard::Async`): a queued freed
    /// range is trimmed where it is still free and untrimmed, in runs of at least 32 KiB; an
    /// empty block group has all its untrimmed space trimmed and is then removed, unless it
    /// was allocated from meanwhile (`btrfs_discard_workfn`, `btrfs_discard_queue_work`).
    pub(super) fn run_discards(&mut self, out: &mut Vec<Io>) {
        if self.cfg.discard != Discard::Async || self.z.is_some() {
            return;
        }
        while let Some(&(due, b)) = self.unused_q.front() {
            if due > self.now {
                break;
            }
            self.unused_q.pop_front();
            let g = &mut self.bgs[b as usize];
            g.discard_queued = false;
            if g.removed || g.used != 0 || g.pinned != 0 || self.live_bgs(self.bgs[b as usize].kind) <= 1 {
                continue;
            }
            let runs: Vec<(u64, u64)> = self.bgs[b as usize].untrimmed.iter().collect();
            for (off, l) in runs {
                self.trim_bg_range(b, off, l, out);
            }
            self.remove_chunk(b, false, out);
        }
        while let Some(&(due, b, off, l)) = self.discard_q.front() {
            if due > self.now {
                break;
            }
            self.discard_q.pop_front();
            if self.bgs[b as usize].removed {
                continue;
            }
            let runs = self.bgs[b as usize].untrimmed.overlaps(off, l);
            for (o, n) in runs {
                if n >= ASYNC_DISCARD_MIN {
                    self.bgs[b as usize].untrimmed.remove_overlap(o, n);
                    self.trim_bg_range(b, o, n, out);
                }
            }
        }
    }
}
