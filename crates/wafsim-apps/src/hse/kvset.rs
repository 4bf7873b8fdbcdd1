//! kvsets and their mblocks: entries, the kblock/vblock builder that writes them as files, the
//! refcounted vblock sets (mbsets) k-compaction shares, and the merge of kvsets.
//!
//! Sources (hse r1.9.0): a kvset is kblocks (keys, wbtree, bloom, HyperLogLog) plus vblocks
//! (values) (`src/cn/kvset.c`); kblocks are assembled and written in chunks of at most 1 MiB
//! (`src/cn/kblock_builder.c` `kblock_finish`, `mblk_blow_chunks`); values are appended to a
//! vblock behind a 4 KiB header until the next would not fit in 32 MiB
//! (`src/cn/vblock_builder.c` `_vblock_start`, `_vblock_write`, `vbb_add_entry`); values of at
//! most 8 bytes stay in the kblock (`src/cn/kvset_builder.c` `kvset_builder_add_val`); vblocks
//! of k-compacted kvsets are kept and shared (`src/cn/kcompact.c` `cn_kcompact`,
//! `src/cn/keep.c` `kvset_keep_vblocks`) and deleted when the last kvset referencing their
//! mbset goes (`src/cn/mbset.c` `_mbset_mblk_del`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use wafsim_core::pipeline::{FileId, FileOp};

use super::config::HseConfig;
use super::policy::{mblock_group, BlockKind, MediaClass, MclassPolicy, Role};
use super::counters::HseCounters;

/// The value length of a tombstone.
pub(crate) const TOMB: u32 = u32::MAX;

/// One key's newest version in a kvset: its key and value length ([`TOMB`] for a delete).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub key: u64,
    pub vlen: u32,
}

impl Entry {
    /// kblock bytes of the entry (key, metadata, an inline value).
    pub fn kcost(&self, cfg: &HseConfig) -> u64 {
        let inline = if self.vlen != TOMB && self.vlen <= cfg.inline_value_max { self.vlen } else { 0 };
        (cfg.key_bytes + cfg.kblock_entry_overhead_bytes + inline) as u64
    }
    /// vblock bytes of the entry.
    pub fn vcost(&self, cfg: &HseConfig) -> u64 {
        if self.vlen != TOMB && self.vlen > cfg.inline_value_max {
            self.vlen as u64
        } else {
            0
        }
    }
}

/// A kvset: entries in key order, its kblocks, the mbsets holding its values.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kvset {
    pub entries: Vec<Entry>,
    pub kblocks: Vec<FileId>,
    /// Ids of the mbsets (vblock groups) it references.
    pub mbsets: Vec<u32>,
    /// vblocks in those mbsets.
    pub vblocks: u64,
    /// Compaction count: 0 from an ingest or spill, one more than its inputs' most from a
    /// compaction (`kvset_get_compc`).
    pub compc: u32,
    /// kblock plus vblock bytes its live entries take (the compacted-length measure).
    pub bytes: u64,
}

/// A group of vblocks shared by the kvsets of k-compactions, with a reference count.
#[derive(Debug, Clone)]
pub(crate) struct Mbset {
    pub vblocks: Vec<FileId>,
    pub refs: u32,
}

/// Allocates mblock files and writes them, counting.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    pub next_file: FileId,
    pub counters: HseCounters,
}

/// An mblock being written.
#[derive(Debug, Clone)]
struct Open {
    file: FileId,
    filled: u64,
    flushed: u64,
}

impl Writer {
    fn create(&mut self, group: u32, out: &mut Vec<FileOp>) -> FileId {
        let file = self.next_file;
        self.next_file += 1;
        out.push(FileOp::Create { file, group });
        self.counters.mblocks_allocated += 1;
        file
    }

    /// Count `len` written bytes of a block (`role` None: c1).
    pub fn count(&mut self, class: MediaClass, role: Option<Role>, kind: BlockKind, len: u64) {
        let c = &mut self.counters;
        match class {
            MediaClass::Staging => c.staging_write_bytes += len,
            MediaClass::Capacity => c.capacity_write_bytes += len,
        }
        match role {
            None => c.c1_write_bytes += len,
            Some(r) => {
                c.role_write_bytes[r as usize][kind as usize] += len;
                match kind {
                    BlockKind::Key => c.kblock_write_bytes += len,
                    BlockKind::Value => c.vblock_write_bytes += len,
                }
            }
        }
    }
}

/// One stream of mblocks of one kind (the kblocks or the vblocks of one output kvset).
#[derive(Debug, Clone)]
struct Stream {
    kind: BlockKind,
    class: MediaClass,
    group: u32,
    header: u64,
    open: Option<Open>,
    done: Vec<FileId>,
}

impl Stream {
    fn new(kind: BlockKind, class: MediaClass, role: Role, spare: bool, header: u64) -> Stream {
        Stream { kind, class, group: mblock_group(class, role, kind, spare), header, open: None, done: Vec::new() }
    }

    /// Append an item of `size` bytes: into the open mblock if it fits, else into a new one (an
    /// item larger than an empty mblock is split).
    fn add(&mut self, size: u64, role: Role, cfg: &HseConfig, w: &mut Writer, out: &mut Vec<FileOp>) {
        let cap = cfg.mblock_bytes;
        let mut left = size;
        while left > 0 {
            if self.open.is_none() {
                let file = w.create(self.group, out);
                self.open = Some(Open { file, filled: self.header, flushed: 0 });
            }
            let o = self.open.as_mut().expect("opened");
            let room = cap - o.filled;
            if left <= room {
                o.filled += left;
                left = 0;
            } else if o.filled > self.header && left <= cap - self.header {
                self.finish(role, cfg, w, out);
                continue;
            } else {
                o.filled += room;
                left -= room;
            }
            self.flush_chunks(role, cfg, w, out);
            if self.open.as_ref().is_some_and(|o| o.filled == cap) {
                self.finish(role, cfg, w, out);
            }
        }
    }

    /// Write whole chunks of what is filled.
    fn flush_chunks(&mut self, role: Role, cfg: &HseConfig, w: &mut Writer, out: &mut Vec<FileOp>) {
        let o = self.open.as_mut().expect("open");
        while o.filled - o.flushed >= cfg.write_chunk_bytes {
            let len = cfg.write_chunk_bytes;
            out.push(FileOp::Write { file: o.file, offset: o.flushed, len: len as u32 });
            o.flushed += len;
            w.count(self.class, Some(role), self.kind, len);
        }
    }

    /// Write the rest of the open mblock (whole pages) and close it.
    fn finish(&mut self, role: Role, cfg: &HseConfig, w: &mut Writer, out: &mut Vec<FileOp>) {
        let Some(mut o) = self.open.take() else { return };
        let end = o.filled.div_ceil(cfg.page_bytes) * cfg.page_bytes;
        while o.flushed < end {
            let len = (end - o.flushed).min(cfg.write_chunk_bytes);
            out.push(FileOp::Write { file: o.file, offset: o.flushed, len: len as u32 });
            o.flushed += len;
            w.count(self.class, Some(role), self.kind, len);
        }
        out.push(FileOp::Close { file: o.file });
        self.done.push(o.file);
    }
}

/// Builds one output kvset: its kblocks and (unless a k-compaction) its vblocks, on the classes
/// the policy gives the destination node's role.
#[derive(Debug, Clone)]
pub(crate) struct Builder {
    role: Role,
    keys: Stream,
    values: Option<Stream>,
    pub entries: Vec<Entry>,
    pub bytes: u64,
}

impl Builder {
    /// A builder for a node of role `role`; `values` false for a k-compaction (values stay where
    /// they are); `spare` for compaction and spill outputs.
    pub fn new(role: Role, policy: MclassPolicy, cfg: &HseConfig, values: bool, spare: bool) -> Builder {
        let class = |kind| if cfg.staging { policy.class(role, kind) } else { MediaClass::Capacity };
        Builder {
            role,
            keys: Stream::new(BlockKind::Key, class(BlockKind::Key), role, spare, cfg.kblock_fixed_bytes),
            values: values.then(|| Stream::new(BlockKind::Value, class(BlockKind::Value), role, spare, cfg.vblock_header_bytes)),
            entries: Vec::new(),
            bytes: 0,
        }
    }

    /// Add the next entry (in key order).
    pub fn add(&mut self, e: Entry, cfg: &HseConfig, w: &mut Writer, out: &mut Vec<FileOp>) {
        let (k, v) = (e.kcost(cfg), e.vcost(cfg));
        self.keys.add(k, self.role, cfg, w, out);
        if v > 0 {
            if let Some(s) = self.values.as_mut() {
                s.add(v, self.role, cfg, w, out);
            }
        }
        self.bytes += k + v;
        self.entries.push(e);
    }

    /// Finish the last mblocks: the entries, bytes, kblocks and new vblocks.
    pub fn finish(mut self, cfg: &HseConfig, w: &mut Writer, out: &mut Vec<FileOp>) -> (Vec<Entry>, u64, Vec<FileId>, Vec<FileId>) {
        self.keys.finish(self.role, cfg, w, out);
        let vblocks = match self.values.as_mut() {
            Some(s) => {
                s.finish(self.role, cfg, w, out);
                std::mem::take(&mut s.done)
            }
            None => Vec::new(),
        };
        (self.entries, self.bytes, self.keys.done, vblocks)
    }
}

/// What a merge dropped.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Dropped {
    /// Older versions of keys.
    pub versions: u64,
    /// Tombstones (when asked to drop them).
    pub tombstones: u64,
}

/// Merge kvsets' entries, given newest first, into each key's newest version in key order,
/// handed to `f`; tombstones dropped when `drop_tombs`.
pub(crate) fn merge(inputs: &[&[Entry]], drop_tombs: bool, mut f: impl FnMut(Entry)) -> Dropped {
    let mut d = Dropped::default();
    let mut emit = |e: Entry, d: &mut Dropped| {
        if drop_tombs && e.vlen == TOMB {
            d.tombstones += 1;
        } else {
            f(e)
        }
    };
    if inputs.len() == 1 {
        for &e in inputs[0] {
            emit(e, &mut d);
        }
        return d;
    }
    // (key, age, position): the newest (lowest age) of equal keys comes first.
    let mut heap: BinaryHeap<Reverse<(u64, usize, usize)>> = inputs.iter().enumerate().filter(|(_, v)| !v.is_empty()).map(|(a, v)| Reverse((v[0].key, a, 0))).collect();
    let mut last: Option<u64> = None;
    while let Some(Reverse((key, age, pos))) = heap.pop() {
        if last == Some(key) {
            d.versions += 1;
        } else {
            last = Some(key);
            emit(inputs[age][pos], &mut d);
        }
        if let Some(n) = inputs[age].get(pos + 1) {
            heap.push(Reverse((n.key, age, pos + 1)));
        }
    }
    d
}
