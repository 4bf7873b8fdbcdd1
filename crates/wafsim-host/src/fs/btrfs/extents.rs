//! Free space inside block groups and data/metadata extent allocation in conventional mode
//! (`fs/btrfs/extent-tree.c find_free_extent`, `fs/btrfs/free-space-cache.c
//! btrfs_find_space_for_alloc`, size classes from `fs/btrfs/block-group.c
//! btrfs_calc_block_group_size_class`).

use std::collections::BTreeMap;

use super::{BtrfsFs, Kind};
use crate::fs::FsError;
use wafsim_core::Io;

/// Disjoint, merged byte ranges (start -> length) with their total: a block group's free space,
/// its not-yet-trimmed free space, or the device's unallocated holes.
#[derive(Debug, Clone, Default)]
pub(super) struct Extents {
    map: BTreeMap<u64, u64>,
    total: u64,
}

impl Extents {
    pub(super) fn total(&self) -> u64 {
        self.total
    }

    /// Add `[off, off + len)` (must not overlap what is there), merging with neighbours.
    pub(super) fn insert(&mut self, mut off: u64, mut len: u64) {
        if len == 0 {
            return;
        }
        self.total += len;
        if let Some((&s, &l)) = self.map.range(..off).next_back() {
            if s + l == off {
                self.map.remove(&s);
                off = s;
                len += l;
            }
        }
        if let Some(&l) = self.map.get(&(off + len)) {
            self.map.remove(&(off + len));
            len += l;
        }
        self.map.insert(off, len);
    }

    /// Remove whatever of `[off, off + len)` is present.
    pub(super) fn remove_overlap(&mut self, off: u64, len: u64) {
        let end = off + len;
        let mut hits = Vec::new();
        if let Some((&s, &l)) = self.map.range(..off).next_back() {
            if s + l > off {
                hits.push((s, l));
            }
        }
        hits.extend(self.map.range(off..end).map(|(&s, &l)| (s, l)));
        for (s, l) in hits {
            self.map.remove(&s);
            self.total -= l;
            if s < off {
                self.map.insert(s, off - s);
                self.total += off - s;
            }
            if s + l > end {
                self.map.insert(end, s + l - end);
                self.total += s + l - end;
            }
        }
    }

    /// The pieces of `[off, off + len)` present.
    pub(super) fn overlaps(&self, off: u64, len: u64) -> Vec<(u64, u64)> {
        let end = off + len;
        let mut v = Vec::new();
        if let Some((&s, &l)) = self.map.range(..off).next_back() {
            if s + l > off {
                v.push((off, (s + l).min(end) - off));
            }
        }
        for (&s, &l) in self.map.range(off..end) {
            v.push((s, (s + l).min(end) - s));
        }
        v
    }

    /// Length of the free run starting exactly at `off` (0 if `off` is not free).
    pub(super) fn run_at(&self, off: u64) -> u64 {
        match self.map.range(..=off).next_back() {
            Some((&s, &l)) if s + l > off => s + l - off,
            _ => 0,
        }
    }

    /// Lowest range of at least `len` bytes.
    pub(super) fn first_fit(&self, len: u64) -> Option<u64> {
        if self.total < len {
            return None;
        }
        self.map.iter().find(|(_, &l)| l >= len).map(|(&s, _)| s)
    }

    /// Largest range (lowest on ties).
    pub(super) fn largest(&self) -> Option<(u64, u64)> {
        let mut best: Option<(u64, u64)> = None;
        for (&s, &l) in &self.map {
            if best.is_none_or(|(_, bl)| l > bl) {
                best = Some((s, l));
            }
        }
        best
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &l)| (s, l))
    }
}

/// Size class of an allocation (`btrfs_calc_block_group_size_class`): 1 small (<= 128 KiB),
/// 2 medium (<= 8 MiB), 3 large.
pub(super) fn size_class(len: u64) -> u8 {
    if len <= 128 << 10 {
        1
    } else if len <= 8 << 20 {
        2
    } else {
        3
    }
}

impl BtrfsFs {
    /// Allocate `len` bytes of `kind` in conventional mode, as few pieces as possible, each at
    /// most `max_extent_bytes`: the hint first (`find_free_extent` tries the hinted block group
    /// at the hinted offset), then first fit over the block groups in logical order with the
    /// size-class passes (`find_free_extent_check_size_class`: same class, then unset, then a
    /// new chunk, then any class), then the largest fragments (the kernel halves the request
    /// until it fits). The caller has checked that enough space exists.
    pub(super) fn alloc_conv(&mut self, kind: Kind, mut len: u64, mut hint: Option<(u32, u64)>, out: &mut Vec<Io>) -> Result<Vec<(u32, u64, u64)>, FsError> {
        let mut got = Vec::new();
        while len > 0 {
            let want = len.min(self.cfg.max_extent_bytes);
            let (bg, off, l) = self.alloc_conv_one(kind, want, hint, out)?;
            self.take_conv(bg, off, l);
            got.push((bg, off, l));
            hint = Some((bg, off + l));
            len -= l;
        }
        Ok(got)
    }

    fn alloc_conv_one(&mut self, kind: Kind, want: u64, hint: Option<(u32, u64)>, out: &mut Vec<Io>) -> Result<(u32, u64, u64), FsError> {
        let classes = self.cfg.size_classes && kind == Kind::Data;
        let class = size_class(want);
        let class_ok = |g: &super::Bg, pass: u8| -> bool {
            !classes || pass >= 2 || g.class == class || (pass >= 1 && g.class == 0)
        };
        if let Some((b, off)) = hint {
            let g = &self.bgs[b as usize];
            if !g.removed && g.kind == kind && class_ok(g, 0) && g.free.run_at(off) >= want {
                return Ok((b, off, want));
            }
        }
        let mut chunk_tried = false;
        for pass in 0..3u8 {
            if let Some(hit) = self.first_fit_pass(kind, want, |g| class_ok(g, pass)) {
                return Ok(hit);
            }
            if pass == 1 && !chunk_tried {
                chunk_tried = true;
                if self.alloc_chunk(kind, out).is_some() {
                    if let Some(hit) = self.first_fit_pass(kind, want, |g| class_ok(g, 1)) {
                        return Ok(hit);
                    }
                }
            }
        }
        // Fragmented: the largest free range anywhere.
        let mut best: Option<(u32, u64, u64)> = None;
        for (i, g) in self.bgs.iter().enumerate() {
            if g.removed || g.kind != kind {
                continue;
            }
            if let Some((s, l)) = g.free.largest() {
                if best.is_none_or(|(_, _, bl)| l > bl) {
                    best = Some((i as u32, s, l));
                }
            }
        }
        match best {
            Some((b, s, l)) => Ok((b, s, l.min(want))),
            None => Err(FsError::NoSpace { need: want, free: 0 }),
        }
    }

    fn first_fit_pass(&self, kind: Kind, want: u64, ok: impl Fn(&super::Bg) -> bool) -> Option<(u32, u64, u64)> {
        for &i in &self.has_free[kind as usize] {
            let g = &self.bgs[i as usize];
            if g.free.total() < want || !ok(g) {
                continue;
            }
            if let Some(off) = g.free.first_fit(want) {
                return Some((i, off, want));
            }
        }
        None
    }

    /// Mark `[off, off + len)` of block group `b` allocated.
    fn take_conv(&mut self, b: u32, off: u64, len: u64) {
        let classes = self.cfg.size_classes;
        let g = &mut self.bgs[b as usize];
        g.free.remove_overlap(off, len);
        g.untrimmed.remove_overlap(off, len);
        if g.free.total() == 0 {
            self.has_free[g.kind as usize].remove(&b);
        }
        if classes && g.kind == Kind::Data && g.class == 0 {
            g.class = size_class(len);
        }
        g.used += len;
        self.sp_used[g.kind as usize] += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_merge_and_split() {
        let mut e = Extents::default();
        e.insert(0, 10);
        e.insert(20, 10);
        e.insert(10, 10);
        assert_eq!(e.iter().collect::<Vec<_>>(), vec![(0, 30)]);
        e.remove_overlap(5, 10);
        assert_eq!(e.iter().collect::<Vec<_>>(), vec![(0, 5), (15, 15)]);
        assert_eq!(e.total(), 20);
        assert_eq!(e.run_at(16), 14);
        assert_eq!(e.run_at(7), 0);
        assert_eq!(e.first_fit(6), Some(15));
        assert_eq!(e.overlaps(3, 14), vec![(3, 2), (15, 2)]);
        assert_eq!(size_class(128 << 10), 1);
        assert_eq!(size_class(8 << 20), 2);
        assert_eq!(size_class((8 << 20) + 4096), 3);
    }
}
