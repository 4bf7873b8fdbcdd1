//! A WiredTiger-like engine under MongoDB: documents in a collection B-tree keyed by RecordId
//! (inserts append at its right edge), an `_id` index B-tree keyed by the document's key, both
//! written copy-on-write through their files' block managers ([`super::block`]), at
//! checkpoints every `checkpoint_secs` of the engine's clock and by eviction when dirty pages
//! pass the dirty target; the journal appended and flushed every `journal_flush_ms`, its files
//! removed once a checkpoint covers them. Nothing is trimmed: files grow, are rewritten inside
//! and are cut back (`ftruncate`) at their ends only.
//!
//! Sources (wiredtiger/wiredtiger tag mongodb-6.0.24; mongodb/mongo 6.0; docs/model.md cites each):
//! - every reconciliation writes the page image to a new block and frees the old one
//!   (`rec_write.c` `__rec_write_wrapup`); a checkpoint reconciles every dirty page of a modified
//!   file, the internal pages above them, then the root (`bt_sync.c` `__wt_sync_file`,
//!   `txn_ckpt.c` `__checkpoint_tree`); untouched files write nothing;
//! - MongoDB checkpoints `syncdelay` (60 s) after the previous one ends (`checkpointer.cpp`);
//! - eviction writes dirty pages once they pass `eviction_dirty_target` (5% of the cache);
//! - collections: 32 KB leaf pages built from up to 4 x that before snappy compression, 4 KB
//!   internal pages (WiredTiger's defaults, `__btree_conf`); indexes: 16 KB pages, prefix
//!   compression, no block compression (`wiredtiger_index.cpp` `generateCreateString`);
//! - the journal: 100 MB files, records padded to 128 B, synced every 100 ms, files before the
//!   last checkpoint removed (`conn_log.c` `__log_remove_once`), never reused.
//!
//! Simplifications (each in docs/model.md): a page that outgrows its maximum splits into two
//! halves; internal pages are rewritten per checkpoint for the distinct parents of the leaves
//! written since the last one, at a fixed fanout; eviction picks the dirty leaf least recently
//! dirtied; the metadata file and turtle file are one 4 KB write each per checkpoint; reads
//! issue no I/O (they do not change what the drive holds).

use std::collections::{BTreeSet, VecDeque};

use wafsim_core::pipeline::{FileId, FileOp, KvOp};

use super::block::BlockManager;
use super::layout::{index_position, IndexOrder, Layout};
use crate::keymap::KeyMap;

/// Configuration of a [`WiredTiger`] engine.
#[derive(Debug, Clone, PartialEq)]
pub struct WtConfig {
    /// Requests per second (the engine's clock: request k arrives at k / rate).
    pub ops_per_sec: f64,
    /// Seconds from one checkpoint to the next (MongoDB `syncPeriodSecs`, 60).
    pub checkpoint_secs: f64,
    /// WiredTiger cache bytes (MongoDB: half of RAM less 1 GB; an unknown for a published run).
    pub cache_bytes: u64,
    /// Dirty bytes at which eviction writes pages, percent of the cache (5).
    pub dirty_target_pct: u32,
    /// Bytes of a document's BSON besides its fields (an assumption: `_id`, field names, types).
    pub doc_overhead_bytes: u32,
    /// Most bytes of document data a collection leaf holds before compression (4 x
    /// `leaf_page_max` with a compressor: 128 KiB, `memory_page_image_max`).
    pub collection_leaf_raw_bytes: u64,
    /// A collection leaf's on-disk maximum (`leaf_page_max`, 32 KiB): WiredTiger adjusts how
    /// much raw data it builds a page from so the compressed image lands near it
    /// (`__rec_compression_adjust`), so a leaf holds `leaf_page_max / compression` of data, at
    /// most `collection_leaf_raw_bytes`.
    pub collection_leaf_page_max: u64,
    /// Compressed over raw size of collection pages (snappy on BSON: an unknown).
    pub compression_ratio: f64,
    /// Bytes an `_id` index leaf holds before it splits (`leaf_page_max` 16 KiB).
    pub index_leaf_bytes: u64,
    /// Bytes of one index entry after prefix compression (an assumption).
    pub index_entry_bytes: u32,
    /// Child entries per internal page (collections' 4 KB and indexes' 16 KB pages hold about
    /// this many; an assumption).
    pub internal_fanout: u32,
    /// Bytes of an internal page image (at most the page maximum).
    pub internal_image_bytes: u64,
    /// Allocation unit (`allocation_size`, 4 KiB).
    pub alloc_unit: u64,
    /// Journal every write (a standalone server; a replica set journals only its oplog).
    pub journal: bool,
    /// Journal file size (`log.file_max`, 100 MB).
    pub journal_file_bytes: u64,
    /// Journal sync period (`journalCommitIntervalMs`, 100).
    pub journal_flush_ms: u32,
    /// Bytes a journal record adds to its data (an assumption), before padding to 128 B.
    pub journal_record_overhead: u32,
    /// File system block: journal flushes write whole blocks (the page cache's pages).
    pub fs_block_bytes: u64,
    /// The database's collections and indexes.
    pub layout: Layout,
    /// A replica set's oplog cap in bytes (`None`: a standalone server, no oplog). In a
    /// replica set only the oplog is journaled.
    pub oplog_bytes: Option<u64>,
    /// Bytes an oplog entry adds to the fields it carries (`ts`, `t`, `op`, `ns`, `ui`,
    /// `wall`, the `_id`: an assumption).
    pub oplog_entry_overhead: u32,
}

impl Default for WtConfig {
    fn default() -> Self {
        WtConfig {
            ops_per_sec: 10_000.0,
            checkpoint_secs: 60.0,
            cache_bytes: 1 << 30,
            dirty_target_pct: 5,
            doc_overhead_bytes: 64,
            collection_leaf_raw_bytes: 128 << 10,
            collection_leaf_page_max: 32 << 10,
            compression_ratio: 0.5,
            index_leaf_bytes: 16 << 10,
            index_entry_bytes: 32,
            internal_fanout: 128,
            internal_image_bytes: 4096,
            alloc_unit: 4096,
            journal: true,
            journal_file_bytes: 100 * 1000 * 1000,
            journal_flush_ms: 100,
            journal_record_overhead: 32,
            fs_block_bytes: 4096,
            layout: Layout::Single,
            oplog_bytes: None,
            oplog_entry_overhead: 100,
        }
    }
}

/// Counts of a [`WiredTiger`] engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WtCounters {
    /// Requests applied.
    pub ops: u64,
    /// Document bytes clients wrote (inserts and updates, whole documents).
    pub doc_write_bytes: u64,
    /// Bytes written to data files (collection, index, metadata, turtle).
    pub data_write_bytes: u64,
    /// Bytes written to journal files (whole blocks, tail blocks rewritten at each sync).
    pub journal_write_bytes: u64,
    /// Pages written by checkpoints (leaf and internal, roots and extent lists not counted).
    pub checkpoint_pages: u64,
    /// Leaf pages written by eviction.
    pub evicted_pages: u64,
    /// Checkpoints taken.
    pub checkpoints: u64,
    /// Bytes cut off file ends at checkpoints.
    pub truncated_bytes: u64,
    /// Journal files removed.
    pub journal_files_removed: u64,
    /// Bytes of oplog entries appended (a replica set).
    pub oplog_write_bytes: u64,
    /// Bytes of oplog entries truncated.
    pub oplog_truncated_bytes: u64,
}

impl WtCounters {
    /// File bytes written per document byte.
    pub fn app_waf(&self) -> f64 {
        (self.data_write_bytes + self.journal_write_bytes) as f64 / self.doc_write_bytes.max(1) as f64
    }
}

/// A leaf page: where its keys start, its bytes, whether it changed since last written, and
/// its block.
#[derive(Debug, Clone)]
struct Leaf {
    start: u64,
    bytes: u64,
    dirty: bool,
    /// When it was last dirtied (request number), for eviction's order.
    touched: u64,
    block: Option<(u64, u64)>,
}

/// One B-tree in its own file.
#[derive(Debug, Clone)]
struct Tree {
    file: FileId,
    bm: BlockManager,
    leaves: Vec<Leaf>,
    /// Largest leaf before it splits.
    leaf_max: u64,
    /// Compressed over raw (1 for an index).
    ratio: f64,
    /// Internal pages written in the last checkpoint: (level, index) -> block.
    internal: KeyMap<(u64, u64)>,
    /// Leaves written since the last checkpoint (their parents are dirty).
    written: BTreeSet<usize>,
    modified: bool,
    /// Leaves that turned dirty since the engine last looked: (when, start key).
    newly_dirty: Vec<(u64, u64)>,
}

impl Tree {
    fn new(file: FileId, alloc_unit: u64, leaf_max: u64, ratio: f64) -> Tree {
        let first = Leaf { start: 0, bytes: 0, dirty: false, touched: 0, block: None };
        Tree { file, bm: BlockManager::new(alloc_unit), leaves: vec![first], leaf_max, ratio, internal: KeyMap::default(), written: BTreeSet::new(), modified: false, newly_dirty: Vec::new() }
    }

    fn leaf_of(&self, key: u64) -> usize {
        self.leaves.partition_point(|l| l.start <= key) - 1
    }

    /// Change leaf `i` by `delta` bytes at request `now`; it splits in halves when too big.
    fn change(&mut self, i: usize, delta: i64, now: u64, dirty: &mut u64) {
        let next = self.leaves.get(i + 1).map_or(u64::MAX, |n| n.start);
        let l = &mut self.leaves[i];
        if !l.dirty {
            l.dirty = true;
            *dirty += l.bytes;
            self.newly_dirty.push((now, l.start));
        }
        l.touched = now;
        l.bytes = (l.bytes as i64 + delta).max(0) as u64;
        *dirty = (*dirty as i64 + delta).max(0) as u64;
        self.modified = true;
        // A leaf of one key cannot split.
        if l.bytes > self.leaf_max && next - l.start >= 2 {
            let half = l.bytes / 2;
            let mid = l.start + (next - l.start) / 2;
            l.bytes -= half;
            let new = Leaf { start: mid.max(l.start + 1), bytes: half, dirty: true, touched: now, block: None };
            self.newly_dirty.push((now, new.start));
            self.leaves.insert(i + 1, new);
            // Leaves written since the checkpoint keep their parents dirty; shift their indices.
            self.written = self.written.iter().map(|&w| if w > i { w + 1 } else { w }).collect();
        }
    }

    /// Write leaf `i` (copy-on-write): its image to a new block, the old one freed.
    fn write_leaf(&mut self, i: usize, out: &mut Vec<FileOp>) -> u64 {
        let l = &self.leaves[i];
        let size = self.bm.round_up((l.bytes as f64 * self.ratio).ceil() as u64);
        let block = rewrite(&mut self.bm, self.file, size, l.block, out);
        let l = &mut self.leaves[i];
        l.block = Some(block);
        l.dirty = false;
        self.written.insert(i);
        size
    }
}

impl Tree {
    /// Add `bytes` at the right edge for the entry `pos` (past every entry so far): a leaf
    /// filled to the split share starts a new one, as an append-only B-tree does.
    fn append(&mut self, pos: u64, bytes: u64, now: u64, dirty: &mut u64) {
        let last = self.leaves.len() - 1;
        let l = &self.leaves[last];
        if l.bytes > 0 && l.bytes + bytes > self.leaf_max * SPLIT_PCT / 100 && pos > l.start {
            self.leaves.push(Leaf { start: pos, bytes: 0, dirty: false, touched: now, block: None });
        }
        let last = self.leaves.len() - 1;
        self.change(last, bytes as i64, now, dirty);
    }

    /// Drop the `k` oldest leaves (a capped collection's truncation): their blocks are freed,
    /// as are the internal pages that no longer have children. Returns the bytes they held.
    fn drop_front(&mut self, k: usize, dirty: &mut u64, fanout: u64) -> u64 {
        let k = k.min(self.leaves.len() - 1);
        let mut bytes = 0;
        for l in self.leaves.drain(..k) {
            bytes += l.bytes;
            if l.dirty {
                *dirty = dirty.saturating_sub(l.bytes);
            }
            if let Some((o, s)) = l.block {
                self.bm.free(o, s);
            }
        }
        self.written = self.written.iter().filter(|&&w| w >= k).map(|&w| w - k).collect();
        // Internal pages past the (shorter) levels are gone.
        let mut count = self.leaves.len() as u64;
        let mut level = 1u64;
        let mut gone = Vec::new();
        while count > fanout {
            count = count.div_ceil(fanout);
            for (&key, &block) in self.internal.iter() {
                if key >> 40 == level && key & ((1 << 40) - 1) >= count {
                    gone.push((key, block));
                }
            }
            level += 1;
        }
        for (key, (o, s)) in gone {
            self.internal.remove(&key);
            self.bm.free(o, s);
        }
        self.modified = true;
        bytes
    }
}

/// The metadata file's id; trees take ids from 1 and skip it, and files created later (the
/// turtle, the journal) take ids after the trees'.
const METADATA: FileId = 3;
const FIRST_DYNAMIC: FileId = 16;
/// Directory groups: the data files, and the journal's subdirectory.
const DATA_GROUP: u32 = 0;
const JOURNAL_GROUP: u32 = 1;
/// Reconciliation fills pages to this share of their maximum (`split_pct`).
const SPLIT_PCT: u64 = 90;
/// How often the engine tells the layers below its time (a page cache's flusher wakes every
/// 5 s; a second is fine enough).
const CLOCK_TICK_NS: u64 = 1_000_000_000;
/// Journal records are padded to this (`WT_LOG_ALIGN`).
const LOG_ALIGN: u64 = 128;
/// A capped collection gives back its oldest "stone" at a time (MongoDB's oplog truncation
/// markers: at most 100 of them, each a hundredth of the cap when the cap is 1.6 GB or more,
/// `wiredtiger_record_store.cpp` `OplogStones`).
const OPLOG_STONES: u64 = 100;

/// The journal: the file being appended, the byte end of what was logged, and what was synced.
#[derive(Debug, Clone, Default)]
struct Journal {
    files: VecDeque<FileId>,
    end: u64,
    synced_block: u64,
}

/// An index of a collection: its tree and how its entries sort.
#[derive(Debug, Clone, Copy)]
struct IndexSlot {
    tree: usize,
    order: IndexOrder,
    on_update: bool,
}

/// A collection: its tree, its indexes (the `_id` index first), its next RecordId.
#[derive(Debug, Clone)]
struct Coll {
    tree: usize,
    indexes: Vec<IndexSlot>,
    next_rid: u64,
}

/// The replica set's oplog (`local.oplog.rs`): a capped collection appended to by every write,
/// with no indexes; its oldest entries are truncated once it holds more than its cap.
#[derive(Debug, Clone)]
struct Oplog {
    tree: usize,
    next_rid: u64,
    bytes: u64,
    cap: u64,
}

/// The engine.
pub struct WiredTiger {
    cfg: WtConfig,
    trees: Vec<Tree>,
    colls: Vec<Coll>,
    oplog: Option<Oplog>,
    meta: BlockManager,
    meta_page: Option<(u64, u64)>,
    turtle: Option<FileId>,
    /// Document key -> (RecordId, document bytes).
    docs: KeyMap<(u64, u32)>,
    dirty_bytes: u64,
    /// Dirty leaves by when they last changed (see [`WiredTiger::queue_dirty`]).
    lru: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u16, u64)>>,
    journal: Journal,
    next_file: FileId,
    started: bool,
    next_checkpoint: u64,
    next_flush: u64,
    /// When the clock is next said to the layers below.
    next_clock: u64,
    ns_per_op: f64,
    counters: WtCounters,
}

impl WiredTiger {
    /// An empty database.
    pub fn new(cfg: WtConfig) -> Result<WiredTiger, String> {
        if !(cfg.ops_per_sec > 0.0 && cfg.ops_per_sec.is_finite()) {
            return Err("ops_per_sec must be positive".into());
        }
        if !(cfg.compression_ratio > 0.0 && cfg.compression_ratio <= 1.0) {
            return Err("compression_ratio must be in (0, 1]".into());
        }
        if cfg.checkpoint_secs.is_nan() || cfg.checkpoint_secs <= 0.0 || cfg.journal_flush_ms == 0 || cfg.internal_fanout < 2 {
            return Err("checkpoint_secs, journal_flush_ms must be positive and internal_fanout at least 2".into());
        }
        if !cfg.alloc_unit.is_power_of_two() || cfg.fs_block_bytes == 0 || !cfg.alloc_unit.is_multiple_of(cfg.fs_block_bytes) && !cfg.fs_block_bytes.is_multiple_of(cfg.alloc_unit) {
            return Err("alloc_unit must be a power of two aligned with the file system block".into());
        }
        if cfg.oplog_bytes == Some(0) {
            return Err("the oplog must hold at least one byte".into());
        }
        let ns_per_op = 1e9 / cfg.ops_per_sec;
        let leaf_raw = cfg.collection_leaf_raw_bytes.min((cfg.collection_leaf_page_max as f64 / cfg.compression_ratio) as u64);
        let mut trees = Vec::new();
        let mut file = 1;
        let mut tree = |leaf_max: u64, ratio: f64| {
            let f = file;
            file += if file + 1 == METADATA { 2 } else { 1 };
            trees.push(Tree::new(f, cfg.alloc_unit, leaf_max, ratio));
            trees.len() - 1
        };
        let mut colls = Vec::new();
        for c in cfg.layout.collections() {
            let t = tree(leaf_raw, cfg.compression_ratio);
            let indexes = std::iter::once(&c.id).chain(&c.indexes).map(|d| IndexSlot { tree: tree(cfg.index_leaf_bytes, 1.0), order: d.order, on_update: d.on_update }).collect();
            colls.push(Coll { tree: t, indexes, next_rid: 0 });
        }
        let oplog = cfg.oplog_bytes.map(|cap| Oplog { tree: tree(leaf_raw, cfg.compression_ratio), next_rid: 0, bytes: 0, cap });
        let next_file = FIRST_DYNAMIC.max(trees.last().map_or(0, |t| t.file) + 1);
        Ok(WiredTiger {
            trees,
            colls,
            oplog,
            meta: BlockManager::new(cfg.alloc_unit),
            meta_page: None,
            turtle: None,
            docs: KeyMap::default(),
            dirty_bytes: 0,
            lru: std::collections::BinaryHeap::new(),
            journal: Journal::default(),
            next_file,
            started: false,
            next_checkpoint: (cfg.checkpoint_secs * 1e9) as u64,
            next_flush: cfg.journal_flush_ms as u64 * 1_000_000,
            next_clock: 0,
            ns_per_op,
            cfg,
            counters: WtCounters::default(),
        })
    }

    /// Counts so far.
    pub fn counters(&self) -> &WtCounters {
        &self.counters
    }

    /// Seconds on the engine's clock so far (requests applied over the request rate).
    pub fn elapsed_secs(&self) -> f64 {
        self.counters.ops as f64 / self.cfg.ops_per_sec
    }

    /// Documents stored.
    pub fn documents(&self) -> usize {
        self.docs.len()
    }

    /// Leaf pages of the first collection and of its `_id` index.
    pub fn leaves(&self) -> (usize, usize) {
        let c = &self.colls[0];
        (self.trees[c.tree].leaves.len(), self.trees[c.indexes[0].tree].leaves.len())
    }

    /// Bytes of the first collection's and its `_id` index's files.
    pub fn file_sizes(&self) -> (u64, u64) {
        let c = &self.colls[0];
        (self.trees[c.tree].bm.file_size(), self.trees[c.indexes[0].tree].bm.file_size())
    }

    /// Each B-tree file: its name (a collection, `collection.index fields`, the oplog), its
    /// file id and its bytes.
    pub fn files(&self) -> Vec<(String, FileId, u64)> {
        let mut out = Vec::new();
        let mut add = |name: String, t: &Tree| out.push((name, t.file, t.bm.file_size()));
        for (c, def) in self.colls.iter().zip(self.cfg.layout.collections()) {
            add(def.name.to_string(), &self.trees[c.tree]);
            for (slot, d) in c.indexes.iter().zip(std::iter::once(&def.id).chain(&def.indexes)) {
                add(format!("{}.{}", def.name, d.name), &self.trees[slot.tree]);
            }
        }
        if let Some(o) = &self.oplog {
            add("local.oplog.rs".to_string(), &self.trees[o.tree]);
        }
        out
    }

    /// Bytes the oplog holds now (0 without one).
    pub fn oplog_bytes(&self) -> u64 {
        self.oplog.as_ref().map_or(0, |o| o.bytes)
    }

    /// The collection leaf holding `key`'s document and its block, if written.
    pub fn leaf_block(&self, key: u64) -> Option<(usize, Option<(u64, u64)>)> {
        let (c, doc, _) = self.cfg.layout.route(key)?;
        let &(rid, _) = self.docs.get(&doc)?;
        let t = &self.trees[self.colls[c].tree];
        let i = t.leaf_of(rid);
        Some((i, t.leaves[i].block))
    }

    /// The bytes of the document that a request for `key` writes (an order line's: its
    /// order's), if it exists.
    pub fn document_bytes(&self, key: u64) -> Option<u32> {
        let (_, doc, _) = self.cfg.layout.route(key)?;
        self.docs.get(&doc).map(|d| d.1)
    }

    /// Dirty bytes in the cache.
    pub fn dirty_bytes(&self) -> u64 {
        self.dirty_bytes
    }

    fn start(&mut self, out: &mut Vec<FileOp>) {
        self.started = true;
        let mut files: Vec<FileId> = self.trees.iter().map(|t| t.file).collect();
        files.push(METADATA);
        for &f in &files {
            out.push(FileOp::Create { file: f, group: DATA_GROUP });
        }
        // Each file's first allocation unit is its descriptor block.
        for &f in &files {
            out.push(FileOp::Write { file: f, offset: 0, len: self.cfg.alloc_unit as u32 });
            self.counters.data_write_bytes += self.cfg.alloc_unit;
        }
        if self.cfg.journal {
            self.new_journal_file(out);
        }
    }

    fn new_file(&mut self) -> FileId {
        self.next_file += 1;
        self.next_file - 1
    }

    fn new_journal_file(&mut self, out: &mut Vec<FileOp>) {
        let f = self.new_file();
        out.push(FileOp::Create { file: f, group: JOURNAL_GROUP });
        self.journal.files.push_back(f);
        self.journal.end = 0;
        self.journal.synced_block = 0;
    }

    /// The request's time on the engine's clock.
    fn time_of(&self, k: u64) -> u64 {
        (k as f64 * self.ns_per_op) as u64
    }

    /// Apply one request (after the checkpoints and journal syncs due before it).
    pub fn apply(&mut self, op: &KvOp, out: &mut Vec<FileOp>) -> Result<(), String> {
        if !self.started {
            self.start(out);
        }
        let t = self.time_of(self.counters.ops);
        self.advance_to(t, out);
        self.counters.ops += 1;
        let now = self.counters.ops;
        match *op {
            KvOp::Insert { key, bytes } | KvOp::Update { key, bytes } | KvOp::ReadModifyWrite { key, bytes } => {
                let (c, doc, embedded) = self.route(key)?;
                self.write_doc(c, doc, bytes, embedded && matches!(op, KvOp::Insert { .. }), now, out)
            }
            KvOp::Delete { key } => {
                let (c, doc, embedded) = self.route(key)?;
                if embedded {
                    // An array element removed: the document shrinks (TPC-C never does this).
                    self.write_doc(c, doc, 0, false, now, out);
                } else if let Some((rid, old)) = self.docs.remove(&doc) {
                    let coll = &self.colls[c];
                    let t = &mut self.trees[coll.tree];
                    let i = t.leaf_of(rid);
                    t.change(i, -(old as i64), now, &mut self.dirty_bytes);
                    for s in coll.indexes.iter() {
                        let t = &mut self.trees[s.tree];
                        let j = t.leaf_of(index_position(s.order, doc, rid));
                        t.change(j, -(self.cfg.index_entry_bytes as i64), now, &mut self.dirty_bytes);
                    }
                    let entries = coll.indexes.len() as u64 * self.cfg.index_entry_bytes as u64;
                    self.logged_write(0, entries, now, out);
                }
            }
            // Reads change nothing the drive holds.
            KvOp::Read { .. } | KvOp::Get { .. } | KvOp::Scan { .. } => {}
        }
        self.evict(out);
        Ok(())
    }

    fn route(&self, key: u64) -> Result<(usize, u64, bool), String> {
        self.cfg.layout.route(key).ok_or_else(|| format!("key {key:#x}: no collection of the {:?} layout holds it", self.cfg.layout))
    }

    /// A document written: a new one appended to its collection (and its entries into the
    /// indexes), an existing one changed in its leaf (it keeps its size unless the fields sent
    /// are more; an array element inserted makes it grow). The write is logged: to the journal
    /// on a standalone server, to the oplog (and the oplog to the journal) in a replica set.
    /// MongoDB updates through `cursor->modify`, logged as a delta: the fields sent.
    fn write_doc(&mut self, c: usize, key: u64, bytes: u32, grow: bool, now: u64, out: &mut Vec<FileOp>) {
        let sent = bytes + self.cfg.doc_overhead_bytes;
        let single = self.cfg.layout == Layout::Single;
        match self.docs.get(&key).copied() {
            Some((rid, old)) => {
                let doc = if grow { old + sent } else { old.max(sent) };
                let coll = &self.colls[c];
                let t = &mut self.trees[coll.tree];
                let i = t.leaf_of(rid);
                t.change(i, doc as i64 - old as i64, now, &mut self.dirty_bytes);
                let mut entries = 0;
                for s in coll.indexes.iter().filter(|s| s.on_update) {
                    let t = &mut self.trees[s.tree];
                    let j = t.leaf_of(index_position(s.order, key, rid));
                    t.change(j, 0, now, &mut self.dirty_bytes);
                    entries += self.cfg.index_entry_bytes as u64;
                }
                self.docs.insert(key, (rid, doc));
                // A whole-document store's client rewrites the document (YCSB); TPC-C's
                // clients send the fields they change.
                self.counters.doc_write_bytes += if single { doc as u64 } else { sent as u64 };
                self.logged_write(sent as u64, entries, now, out);
            }
            None => {
                let coll = &mut self.colls[c];
                let rid = coll.next_rid;
                coll.next_rid += 1;
                // Appends at the right edge: a leaf filled to the split share starts a new one.
                self.trees[coll.tree].append(rid, sent as u64, now, &mut self.dirty_bytes);
                for s in coll.indexes.iter() {
                    let t = &mut self.trees[s.tree];
                    let pos = index_position(s.order, key, rid);
                    if s.order == IndexOrder::Insertion {
                        t.append(pos, self.cfg.index_entry_bytes as u64, now, &mut self.dirty_bytes);
                    } else {
                        let j = t.leaf_of(pos);
                        t.change(j, self.cfg.index_entry_bytes as i64, now, &mut self.dirty_bytes);
                    }
                }
                self.docs.insert(key, (rid, sent));
                self.counters.doc_write_bytes += sent as u64;
                let entries = self.colls[c].indexes.len() as u64 * self.cfg.index_entry_bytes as u64;
                self.logged_write(sent as u64, entries, now, out);
            }
        }
    }

    /// A write of `data` document bytes and `index_entries` bytes of index entries made
    /// durable: the oplog entry in a replica set (the oplog is the only journaled collection:
    /// `WiredTigerUtil::useTableLogging`; the entry carries the document, not the index
    /// entries), else the journal record of the write itself. That record is the
    /// transaction's: every operation of it, the document's and each index entry's, goes into
    /// one log record written at commit (`txn_log.c` `__wt_txn_log_op` appends to
    /// `txn->logrec`).
    fn logged_write(&mut self, data: u64, index_entries: u64, now: u64, out: &mut Vec<FileOp>) {
        let Some(o) = self.oplog.as_mut() else {
            self.log(data + index_entries, out);
            return;
        };
        let entry = data + self.cfg.oplog_entry_overhead as u64;
        let rid = o.next_rid;
        o.next_rid += 1;
        o.bytes += entry;
        let (tree, over) = (o.tree, o.bytes > o.cap);
        self.trees[tree].append(rid, entry, now, &mut self.dirty_bytes);
        self.counters.oplog_write_bytes += entry;
        if over {
            // The oldest stone's leaves go.
            let o = self.oplog.as_ref().expect("an oplog");
            let stone = (o.cap / OPLOG_STONES).max(1);
            let t = &self.trees[tree];
            let (mut k, mut sum) = (0, 0);
            while k + 1 < t.leaves.len() && sum < stone {
                sum += t.leaves[k].bytes;
                k += 1;
            }
            let fanout = self.cfg.internal_fanout as u64;
            let freed = self.trees[tree].drop_front(k, &mut self.dirty_bytes, fanout);
            let o = self.oplog.as_mut().expect("an oplog");
            o.bytes -= freed.min(o.bytes);
            self.counters.oplog_truncated_bytes += freed;
        }
        self.log(entry, out);
    }

    /// Log a record of `data` bytes (compressed as pages are) to the journal.
    fn log(&mut self, data: u64, out: &mut Vec<FileOp>) {
        if !self.cfg.journal {
            return;
        }
        let rec = ((data as f64 * self.cfg.compression_ratio) as u64 + self.cfg.journal_record_overhead as u64).div_ceil(LOG_ALIGN) * LOG_ALIGN;
        if self.journal.end + rec > self.cfg.journal_file_bytes {
            self.sync_journal(out);
            let f = *self.journal.files.back().expect("a journal file");
            out.push(FileOp::Close { file: f });
            self.new_journal_file(out);
        }
        self.journal.end += rec;
    }

    /// Write the journal from the last synced block to its end, whole blocks (the tail block
    /// again at every sync while it fills).
    fn sync_journal(&mut self, out: &mut Vec<FileOp>) {
        let b = self.cfg.fs_block_bytes;
        let end_block = self.journal.end.div_ceil(b);
        if end_block == 0 || self.journal.end == self.journal.synced_block * b {
            return;
        }
        let from = self.journal.synced_block;
        let f = *self.journal.files.back().expect("a journal file");
        let len = (end_block - from) * b;
        out.push(FileOp::Write { file: f, offset: from * b, len: len as u32 });
        out.push(FileOp::Sync { file: f });
        self.counters.journal_write_bytes += len;
        // A partly filled last block is written again at the next sync.
        self.journal.synced_block = self.journal.end / b;
    }

    /// Run the journal syncs and checkpoints due up to time `t`, and say the time once a second
    /// of the clock (a page cache below writes back what expired).
    pub fn advance_to(&mut self, t: u64, out: &mut Vec<FileOp>) {
        if t >= self.next_clock {
            out.push(FileOp::Clock { ns: t });
            self.next_clock = (t / CLOCK_TICK_NS + 1) * CLOCK_TICK_NS;
        }
        loop {
            let next = self.next_flush.min(self.next_checkpoint);
            if next > t {
                break;
            }
            if next == self.next_flush {
                if self.cfg.journal {
                    self.sync_journal(out);
                }
                self.next_flush += self.cfg.journal_flush_ms as u64 * 1_000_000;
            } else {
                self.checkpoint(out);
                self.next_checkpoint += (self.cfg.checkpoint_secs * 1e9) as u64;
            }
        }
    }

    /// The dirty leaves in eviction's order: least recently changed first (a tie: the
    /// earlier file, then the lower key). Entries are checked when they come up: a leaf
    /// changed since goes back in at its new time, a clean or dropped one is skipped.
    fn queue_dirty(&mut self) {
        for (k, t) in self.trees.iter_mut().enumerate() {
            for (when, start) in t.newly_dirty.drain(..) {
                self.lru.push(std::cmp::Reverse((when, k as u16, start)));
            }
        }
    }

    /// Eviction: while dirty bytes pass the target, write the dirty leaf least recently
    /// dirtied.
    fn evict(&mut self, out: &mut Vec<FileOp>) {
        let target = self.cfg.cache_bytes * self.cfg.dirty_target_pct as u64 / 100;
        self.queue_dirty();
        while self.dirty_bytes > target {
            let Some(std::cmp::Reverse((when, tree, start))) = self.lru.pop() else { break };
            let t = &self.trees[tree as usize];
            if start < t.leaves[0].start {
                continue;
            }
            let i = t.leaf_of(start);
            let l = &t.leaves[i];
            if l.start != start || !l.dirty {
                continue;
            }
            if l.touched > when {
                self.lru.push(std::cmp::Reverse((l.touched, tree, start)));
                continue;
            }
            let t = &mut self.trees[tree as usize];
            let bytes = t.leaves[i].bytes;
            let size = t.write_leaf(i, out);
            self.dirty_bytes = self.dirty_bytes.saturating_sub(bytes);
            self.counters.data_write_bytes += size;
            self.counters.evicted_pages += 1;
        }
    }

    /// A checkpoint: every dirty leaf, the internal pages above the leaves written since the
    /// last one, the root and the extent lists of each modified file; the files' free tails
    /// cut; the metadata page and the turtle file; the journal files it covers removed.
    pub fn checkpoint(&mut self, out: &mut Vec<FileOp>) {
        if self.cfg.journal {
            self.sync_journal(out);
        }
        let (fanout, internal) = (self.cfg.internal_fanout as u64, self.cfg.internal_image_bytes);
        let mut any = false;
        for tree in self.trees.iter_mut() {
            if !tree.modified {
                continue;
            }
            any = true;
            for i in 0..tree.leaves.len() {
                if tree.leaves[i].dirty {
                    let size = tree.write_leaf(i, out);
                    self.counters.data_write_bytes += size;
                    self.counters.checkpoint_pages += 1;
                }
            }
            // Internal levels up to (not including) the root: the parents of what was written.
            let mut level_items: BTreeSet<u64> = tree.written.iter().map(|&i| i as u64).collect();
            let mut count = tree.leaves.len() as u64;
            let mut level = 1u64;
            while count > fanout {
                let parents: BTreeSet<u64> = level_items.iter().map(|&i| i / fanout).collect();
                count = count.div_ceil(fanout);
                for &p in &parents {
                    let size = tree.bm.round_up(internal);
                    let key = level << 40 | p;
                    let block = rewrite(&mut tree.bm, tree.file, size, tree.internal.get(&key).copied(), out);
                    tree.internal.insert(key, block);
                    self.counters.data_write_bytes += size;
                    self.counters.checkpoint_pages += 1;
                }
                level_items = parents;
                level += 1;
            }
            let w = checkpoint_file(&mut tree.bm, tree.file, internal, out);
            // The file made durable before the metadata points at its checkpoint
            // (`__wt_checkpoint_sync`).
            out.push(FileOp::Sync { file: tree.file });
            self.counters.truncated_bytes += w.cut_bytes;
            self.counters.data_write_bytes += w.root.1 + w.lists.iter().map(|l| l.1).sum::<u64>();
            tree.written.clear();
            tree.modified = false;
        }
        self.counters.checkpoints += 1;
        // Every leaf is clean now.
        for t in self.trees.iter_mut() {
            t.newly_dirty.clear();
        }
        self.lru.clear();
        self.dirty_bytes = 0;
        if !any {
            return;
        }
        // The metadata file: its one page rewritten (copy-on-write), then its own checkpoint.
        let size = self.meta.round_up(internal);
        self.meta_page = Some(rewrite(&mut self.meta, METADATA, size, self.meta_page, out));
        let w = checkpoint_file(&mut self.meta, METADATA, internal, out);
        out.push(FileOp::Sync { file: METADATA });
        self.counters.data_write_bytes += size + w.root.1 + w.lists.iter().map(|l| l.1).sum::<u64>();
        // The turtle file: written anew and renamed over the old one.
        let t = self.new_file();
        out.push(FileOp::Create { file: t, group: DATA_GROUP });
        out.push(FileOp::Write { file: t, offset: 0, len: self.cfg.fs_block_bytes as u32 });
        out.push(FileOp::Sync { file: t });
        self.counters.data_write_bytes += self.cfg.fs_block_bytes;
        if let Some(old) = self.turtle.replace(t) {
            out.push(FileOp::Delete { file: old });
        }
        // Journal files wholly before this checkpoint are removed.
        while self.journal.files.len() > 1 {
            let f = self.journal.files.pop_front().expect("two or more");
            out.push(FileOp::Delete { file: f });
            self.counters.journal_files_removed += 1;
        }
    }
}

/// Copy-on-write: a block of `size` bytes written to a new place in `file`, then `old` freed.
fn rewrite(bm: &mut BlockManager, file: FileId, size: u64, old: Option<(u64, u64)>, out: &mut Vec<FileOp>) -> (u64, u64) {
    let off = bm.alloc(size);
    out.push(FileOp::Write { file, offset: off, len: size as u32 });
    if let Some((o, s)) = old {
        bm.free(o, s);
    }
    (off, size)
}

/// A file's checkpoint with a root image of `root_image` bytes, as the file sees it: the root
/// written first, then the cut, then the extent lists (at the new end when nothing is free);
/// resolved at once (the metadata that makes it durable is written right after).
fn checkpoint_file(bm: &mut BlockManager, file: FileId, root_image: u64, out: &mut Vec<FileOp>) -> super::block::CheckpointWrites {
    let w = bm.checkpoint(root_image);
    out.push(FileOp::Write { file, offset: w.root.0, len: w.root.1 as u32 });
    if let Some(to) = w.truncated_to {
        out.push(FileOp::Truncate { file, size: to });
    }
    for &(o, s) in &w.lists {
        out.push(FileOp::Write { file, offset: o, len: s as u32 });
    }
    bm.resolve();
    w
}
