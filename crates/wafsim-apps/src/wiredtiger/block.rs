//! WiredTiger's block manager for one file (one collection or one index): where in the file
//! each page image goes, when freed space may be used again, and when the file shrinks. Pure
//! bookkeeping over byte offsets; the file system below decides where the offsets live.
//!
//! Source: wiredtiger/wiredtiger at tag mongodb-6.0.24, `src/block/block_ext.c`,
//! `block_ckpt.c`, `block_write.c`:
//! - Four extent lists (`__wt_block_ckpt_init`): `alloc` (allocated since the last
//!   checkpoint), `avail` (free now), `discard` (freed since the last checkpoint but still part
//!   of it), `ckpt_avail` (free once the checkpoint being written is durable).
//! - Allocation (`__wt_block_alloc`, `block_allocation=best`): the smallest free extent at least
//!   as large as the request, the lowest offset among extents of that size, carved from its low
//!   end; the file grows at its end when no extent fits or when all free space together is
//!   smaller than the request. A checkpoint's root page and extent lists are placed first-fit
//!   (`__wt_block_configure_first_fit`): the lowest offset that fits.
//! - Freeing (`__wt_block_off_free`): a block allocated since the last checkpoint is free at once;
//!   one of the last checkpoint waits on `discard`.
//! - A checkpoint (`__wt_block_checkpoint`, `__ckpt_process`, `__ckpt_update`): the root page is
//!   written; the previous checkpoint is deleted: its root and the blocks of its extent lists
//!   become free once this checkpoint is durable, and every block of it freed since (on both
//!   `alloc` and `discard`) too (`__wt_block_extlist_overlap` into `ckpt_avail`); the file is cut
//!   back when the last free extent of `avail` ends at its end (`__wt_block_extlist_truncate`;
//!   space freed by this checkpoint is not cut yet); the new checkpoint's `alloc`, `discard` and
//!   `avail` (with `ckpt_avail`) lists are written, each only when it has entries
//!   (`__wt_block_extlist_write`); `alloc` and `discard` start empty again. Resolving it
//!   (`__wt_block_checkpoint_resolve`) makes `ckpt_avail` free.
//!
//! Not modelled: checkpoints pinned by a hot backup or an open checkpoint cursor (a discard list
//! kept across checkpoints), `compact`, `file_extend` preallocation (MongoDB sets none).

use std::collections::{BTreeMap, BTreeSet};

/// Bytes of a block's page and block headers (`WT_BLOCK_HEADER_BYTE_SIZE`: 28 + 12).
pub const BLOCK_HEADER_BYTES: u64 = 40;
/// Bytes one extent takes in a written extent list at most (an offset and a size, each a packed
/// 64-bit integer of at most `WT_INTPACK64_MAXSIZE` = 9 bytes).
const EXTENT_ENTRY_BYTES: u64 = 2 * 9;

/// Non-overlapping byte ranges of a file, neighbours merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extents {
    by_off: BTreeMap<u64, u64>,
    bytes: u64,
}

impl Extents {
    /// Add `[off, off + size)` (which must not overlap what is there), merging neighbours;
    /// returns the extent it became part of and the neighbours that merged into it.
    pub fn insert(&mut self, off: u64, size: u64) -> Merged {
        debug_assert!(size > 0);
        let (mut start, mut end) = (off, off + size);
        let mut absorbed = [None, None];
        if let Some((&o, &s)) = self.by_off.range(..=off).next_back() {
            assert!(o + s <= off, "extent {off}+{size} overlaps {o}+{s}");
            if o + s == off {
                start = o;
                self.by_off.remove(&o);
                absorbed[0] = Some((o, s));
            }
        }
        if let Some((&o, &s)) = self.by_off.range(off..).next() {
            assert!(o >= end, "extent {off}+{size} overlaps {o}+{s}");
            if o == end {
                end = o + s;
                self.by_off.remove(&o);
                absorbed[1] = Some((o, s));
            }
        }
        self.by_off.insert(start, end - start);
        self.bytes += size;
        Merged { extent: (start, end - start), absorbed }
    }

    /// Remove `[off, off + size)` where it is present; returns the parts that were (in order).
    pub fn remove_overlap(&mut self, off: u64, size: u64) -> Vec<(u64, u64)> {
        let end = off + size;
        let mut hit = Vec::new();
        let first = self.by_off.range(..off).next_back().filter(|(&o, &s)| o + s > off).map(|(&o, _)| o);
        let keys: Vec<u64> = first.into_iter().chain(self.by_off.range(off..end).map(|(&o, _)| o)).collect();
        for o in keys {
            let s = self.by_off.remove(&o).expect("listed");
            let (a, b) = (o.max(off), (o + s).min(end));
            if o < a {
                self.by_off.insert(o, a - o);
            }
            if b < o + s {
                self.by_off.insert(b, o + s - b);
            }
            self.bytes -= b - a;
            hit.push((a, b - a));
        }
        hit
    }

    /// Whether no byte is listed.
    pub fn is_empty(&self) -> bool {
        self.by_off.is_empty()
    }

    /// Extents listed (after merging).
    pub fn entries(&self) -> usize {
        self.by_off.len()
    }

    /// Bytes listed.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The extents in offset order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.by_off.iter().map(|(&o, &s)| (o, s))
    }

    /// The extent with the highest offset.
    pub fn last(&self) -> Option<(u64, u64)> {
        self.by_off.iter().next_back().map(|(&o, &s)| (o, s))
    }
}

/// What [`Extents::insert`] did: the extent the range became part of, and the neighbours
/// (before, after) merged into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Merged {
    /// (offset, size) of the merged extent.
    pub extent: (u64, u64),
    /// The neighbours it absorbed.
    pub absorbed: [Option<(u64, u64)>; 2],
}

/// Free space: extents by offset and by size (WiredTiger keeps `avail` in both skiplists).
#[derive(Debug, Clone, Default)]
struct Avail {
    ext: Extents,
    by_size: BTreeSet<(u64, u64)>,
}

impl Avail {
    fn insert(&mut self, off: u64, size: u64) {
        let m = self.ext.insert(off, size);
        for (o, s) in m.absorbed.into_iter().flatten() {
            self.by_size.remove(&(s, o));
        }
        self.by_size.insert((m.extent.1, m.extent.0));
    }

    /// Take the first `size` bytes of the free extent `(ext_off, ext_size)`.
    fn take(&mut self, ext_off: u64, ext_size: u64, size: u64) {
        self.by_size.remove(&(ext_size, ext_off));
        self.ext.remove_overlap(ext_off, size);
        if ext_size > size {
            self.by_size.insert((ext_size - size, ext_off + size));
        }
    }

    /// Best fit: the smallest extent of at least `size` bytes, the lowest offset among those.
    fn best_fit(&self, size: u64) -> Option<(u64, u64)> {
        self.by_size.range((size, 0)..).next().map(|&(s, o)| (o, s))
    }

    /// First fit: the lowest offset with at least `size` bytes.
    fn first_fit(&self, size: u64) -> Option<(u64, u64)> {
        self.ext.iter().find(|&(_, s)| s >= size)
    }
}

/// What a checkpoint wrote, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointWrites {
    /// The root page: (offset, bytes).
    pub root: (u64, u64),
    /// The extent lists written, in order (`alloc`, `discard`, `avail`), each (offset, bytes);
    /// an empty list is not written.
    pub lists: Vec<(u64, u64)>,
    /// The file was cut back to this size.
    pub truncated_to: Option<u64>,
    /// Bytes the cut took off.
    pub cut_bytes: u64,
}

/// The last durable checkpoint's own blocks and lists (what deleting it frees).
#[derive(Debug, Clone, Default)]
struct Checkpoint {
    root: (u64, u64),
    lists: Vec<(u64, u64)>,
    alloc: Extents,
    discard: Extents,
}

/// The block manager of one file.
#[derive(Debug, Clone)]
pub struct BlockManager {
    alloc_unit: u64,
    file_size: u64,
    alloc: Extents,
    avail: Avail,
    discard: Extents,
    ckpt_avail: Extents,
    last: Option<Checkpoint>,
    first_fit: bool,
}

impl BlockManager {
    /// A new file: its first allocation unit holds the file's descriptor block
    /// (`WT_BLOCK_DESC`), so data starts after it.
    pub fn new(alloc_unit: u64) -> BlockManager {
        assert!(alloc_unit.is_power_of_two() && alloc_unit >= 512, "allocation_size must be a power of two, at least 512");
        BlockManager { alloc_unit, file_size: alloc_unit, alloc: Extents::default(), avail: Avail::default(), discard: Extents::default(), ckpt_avail: Extents::default(), last: None, first_fit: false }
    }

    /// Bytes a block takes for `image` bytes of page image (`__wt_block_write_size`: the block
    /// header added, rounded up to the allocation unit).
    pub fn block_bytes(&self, image: u64) -> u64 {
        (image + BLOCK_HEADER_BYTES).div_ceil(self.alloc_unit) * self.alloc_unit
    }

    /// Bytes a block takes for a page image of `image` bytes, headers included (a page's
    /// maximum bounds its image with its headers): rounded up to the allocation unit.
    pub fn round_up(&self, image: u64) -> u64 {
        image.max(1).div_ceil(self.alloc_unit) * self.alloc_unit
    }

    /// The file's size now.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Free bytes usable now.
    pub fn avail_bytes(&self) -> u64 {
        self.avail.ext.bytes()
    }

    /// Free extents usable now, in offset order.
    pub fn avail(&self) -> Vec<(u64, u64)> {
        self.avail.ext.iter().collect()
    }

    /// Bytes freed that become usable once the next checkpoint is durable.
    pub fn waiting_bytes(&self) -> u64 {
        self.discard.bytes() + self.ckpt_avail.bytes()
    }

    /// Place a block of `size` bytes (a multiple of the allocation unit); its offset.
    pub fn alloc(&mut self, size: u64) -> u64 {
        assert!(size > 0 && size.is_multiple_of(self.alloc_unit), "block of {size} B: not a multiple of the allocation unit");
        let fit = if self.avail.ext.bytes() < size {
            None
        } else if self.first_fit {
            self.avail.first_fit(size)
        } else {
            self.avail.best_fit(size)
        };
        let off = match fit {
            Some((o, s)) => {
                self.avail.take(o, s, size);
                o
            }
            None => {
                let o = self.file_size;
                self.file_size += size;
                o
            }
        };
        self.alloc.insert(off, size);
        off
    }

    /// Free the block at `off` of `size` bytes: usable at once if it was allocated since the
    /// last checkpoint, else once the next checkpoint is durable.
    pub fn free(&mut self, off: u64, size: u64) {
        let mut rest = vec![(off, size)];
        for (o, s) in self.alloc.remove_overlap(off, size) {
            self.avail.insert(o, s);
            rest = rest.into_iter().flat_map(|(ro, rs)| subtract((ro, rs), (o, s))).collect();
        }
        for (o, s) in rest {
            self.discard.insert(o, s);
        }
    }

    /// Bytes of a written extent list of `entries` extents.
    fn list_bytes(&self, entries: usize) -> u64 {
        self.block_bytes((entries as u64 + 2) * EXTENT_ENTRY_BYTES)
    }

    /// Write a checkpoint whose root page image is `root_image` bytes (headers included): the root, then the
    /// previous checkpoint's deletion, the tail cut, and the new checkpoint's extent lists.
    /// The space it frees is usable after [`BlockManager::resolve`].
    pub fn checkpoint(&mut self, root_image: u64) -> CheckpointWrites {
        self.first_fit = true;
        let root_size = self.round_up(root_image);
        let root = (self.alloc(root_size), root_size);
        if let Some(prev) = self.last.take() {
            // The previous checkpoint is deleted: its lists' blocks, its root, and every block of
            // it freed since it was written are free once this one is durable.
            for &(o, s) in &prev.lists {
                self.ckpt_avail.insert(o, s);
            }
            let mut alloc = prev.alloc;
            for (o, s) in self.alloc.iter().collect::<Vec<_>>() {
                alloc.insert(o, s);
            }
            self.alloc = alloc;
            let mut discard = prev.discard;
            for (o, s) in self.discard.iter().collect::<Vec<_>>() {
                discard.insert(o, s);
            }
            discard.insert(prev.root.0, prev.root.1);
            self.discard = discard;
            for (o, s) in self.discard.iter().collect::<Vec<_>>() {
                for (a, b) in self.alloc.remove_overlap(o, s) {
                    self.discard.remove_overlap(a, b);
                    self.ckpt_avail.insert(a, b);
                }
            }
        }
        let (mut truncated_to, mut cut_bytes) = (None, 0);
        if let Some((o, s)) = self.avail.ext.last() {
            if o + s == self.file_size {
                self.avail.take(o, s, s);
                self.file_size = o;
                truncated_to = Some(o);
                cut_bytes = s;
            }
        }
        // The new checkpoint's lists: each block is placed before its list is final, and is on
        // no allocation list of its own.
        let mut lists = Vec::new();
        for which in 0..3 {
            let entries = match which {
                0 => self.alloc.entries(),
                1 => self.discard.entries(),
                _ => self.avail.ext.entries() + self.ckpt_avail.entries(),
            };
            if entries == 0 {
                continue;
            }
            let size = self.list_bytes(entries);
            let off = self.alloc(size);
            self.alloc.remove_overlap(off, size);
            lists.push((off, size));
        }
        self.first_fit = false;
        self.last = Some(Checkpoint { root, lists: lists.clone(), alloc: std::mem::take(&mut self.alloc), discard: std::mem::take(&mut self.discard) });
        CheckpointWrites { root, lists, truncated_to, cut_bytes }
    }

    /// The checkpoint is durable: what it freed is usable.
    pub fn resolve(&mut self) {
        for (o, s) in std::mem::take(&mut self.ckpt_avail).iter() {
            self.avail.insert(o, s);
        }
    }

    /// Check the bookkeeping (tests): free, waiting and in-use space never overlap, and free
    /// space lies inside the file.
    pub fn check_invariants(&self) {
        let mut all = Extents::default();
        for (o, s) in self.avail.ext.iter().chain(self.discard.iter()).chain(self.ckpt_avail.iter()).chain(self.alloc.iter()) {
            all.insert(o, s);
            assert!(o + s <= self.file_size, "{o}+{s} beyond the file's {} B", self.file_size);
        }
        assert_eq!(self.avail.by_size.len(), self.avail.ext.entries());
        for &(s, o) in &self.avail.by_size {
            assert_eq!(self.avail.ext.by_off.get(&o), Some(&s));
        }
    }
}

/// `a` without `b`: zero, one or two ranges.
fn subtract(a: (u64, u64), b: (u64, u64)) -> Vec<(u64, u64)> {
    let (a0, a1, b0, b1) = (a.0, a.0 + a.1, b.0, b.0 + b.1);
    let mut v = Vec::new();
    if b1 <= a0 || b0 >= a1 {
        return vec![a];
    }
    if a0 < b0 {
        v.push((a0, b0 - a0));
    }
    if b1 < a1 {
        v.push((b1, a1 - b1));
    }
    v
}
