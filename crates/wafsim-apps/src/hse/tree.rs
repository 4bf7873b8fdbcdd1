//! The engine: c0 (the in-memory set), c1 (the durability log, as mlogs) and the cN tree of
//! nodes holding kvsets newest first; [`Hse::apply`] takes one request.
//!
//! Sources (hse r1.9.0): c0 is ingested as one kvset into the cN root once it holds about
//! `c0_coalesce_sz` (`src/c0/c0_kvmultiset.c` `c0kvms_should_ingest`,
//! `src/c0/c0sk_internal.c` `c0sk_ingest_worker`); the tree's nodes and roles
//! (`src/cn/cn_tree.c` `cn_node_isleaf`, `cn_node_isroot`, `cn_node_alloc`); c1 trees of 4
//! mlogs written every `dur_intvl_ms` (`src/c0/c0skm.c` `c0skm_timer_worker`,
//! `src/c1/c1_tree.c` `c1_tree_make`), reused once clean after an mlog erase
//! (`src/c1/c1_tree.c` `c1_tree_reset`, `src/c1/c1_log.c` `c1_log_reset`), on staging when
//! there is one (`c1_log_create`).

use std::collections::{HashMap, VecDeque};

use wafsim_core::pipeline::{FileId, FileOp, KvOp};

use super::config::HseConfig;
use super::kvset::{Builder, Entry, Kvset, Mbset, Writer, TOMB};
use super::policy::{mlog_group, BlockKind, MediaClass, Role};
use crate::keymap::KeyMap;
pub use super::counters::HseCounters;

/// A node of the cN tree.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub level: u32,
    pub offset: u64,
    pub parent: Option<usize>,
    /// Child node per slot (empty until the node first spills).
    pub children: Vec<Option<usize>>,
    /// kvsets, newest first.
    pub kvsets: VecDeque<Kvset>,
    /// How many of the node's kvsets hold each key (the unique-key count is its length; HSE
    /// estimates it with HyperLogLog).
    pub keys: KeyMap<u32>,
    /// Entries over all kvsets, and their bytes.
    pub entries: u64,
    pub bytes: u64,
    /// `tn_size_max`.
    pub size_max: u64,
}

impl Node {
    pub fn role(&self) -> Role {
        if self.parent.is_none() {
            Role::Root
        } else if self.children.iter().any(Option::is_some) {
            Role::Internal
        } else {
            Role::Leaf
        }
    }

    /// Compacted length: the bytes after a full compaction, written bytes x unique keys /
    /// entries (`cn_tree.c` `tn_samp_update_finish`).
    pub fn clen(&self) -> u64 {
        if self.entries == 0 {
            0
        } else {
            (self.bytes as u128 * self.keys.len() as u128 / self.entries as u128) as u64
        }
    }

    /// mblocks allocated to its kvsets.
    pub fn blocks(&self) -> u64 {
        self.kvsets.iter().map(|k| k.kblocks.len() as u64 + k.vblocks).sum()
    }

    pub fn add_keys(&mut self, k: &Kvset) {
        for e in &k.entries {
            *self.keys.entry(e.key).or_insert(0) += 1;
        }
        self.entries += k.entries.len() as u64;
        self.bytes += k.bytes;
    }

    pub fn remove_keys(&mut self, k: &Kvset) {
        for e in &k.entries {
            if let Some(c) = self.keys.get_mut(&e.key) {
                *c -= 1;
                if *c == 0 {
                    self.keys.remove(&e.key);
                }
            }
        }
        self.entries -= k.entries.len() as u64;
        self.bytes -= k.bytes;
    }
}

/// What a job did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// c0 became a kvset in the root.
    Ingest,
    /// A node's oldest kvsets went to its children.
    Spill,
    /// kvsets merged, new kblocks, vblocks kept.
    KCompact,
    /// kvsets merged, keys and values rewritten.
    KvCompact,
}

/// One job of the last [`Hse::apply`] or [`Hse::sync`] (see [`Hse::last_jobs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    /// What it was.
    pub kind: JobKind,
    /// The node's level and offset (the root for an ingest).
    pub level: u32,
    /// Position in the level.
    pub offset: u64,
    /// The node's role when the job started.
    pub role: Role,
    /// Input kvsets (0 for an ingest).
    pub inputs: usize,
    /// kblocks of the inputs.
    pub input_kblocks: u64,
    /// vblocks the inputs referenced.
    pub input_vblocks: u64,
    /// Its file operations: these positions of the `out` vector the call was given.
    pub ops: std::ops::Range<usize>,
}

/// What a node looks like (for reports and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// Depth (root 0).
    pub level: u32,
    /// Position in its level (`parent offset x fanout + slot`).
    pub offset: u64,
    /// Its role now.
    pub role: Role,
    /// Compaction counts of its kvsets, newest first.
    pub compcs: Vec<u32>,
    /// kblocks and vblocks of its kvsets.
    pub kblocks: u64,
    /// vblocks referenced by its kvsets.
    pub vblocks: u64,
    /// Entries of its kvsets (all versions).
    pub entries: u64,
    /// Distinct keys.
    pub unique_keys: u64,
    /// Compacted length (bytes).
    pub clen: u64,
    /// Its maximum (`tn_size_max`).
    pub size_max: u64,
}

/// One c1 tree: its mlogs, their write offsets, the next mlog of the stripe, and the ingest
/// generation of the newest data written to it (`None`: never written).
#[derive(Debug, Clone)]
struct C1Tree {
    logs: Vec<FileId>,
    offs: Vec<u64>,
    next: usize,
    gen: Option<u64>,
}

/// The c1 log: its trees, the current one, bytes waiting for the next flush, and when that is.
#[derive(Debug, Clone, Default)]
struct C1 {
    trees: Vec<C1Tree>,
    cur: Option<usize>,
    pending: u64,
    next_flush_ns: u64,
}

/// An HSE 1.x-like key-value engine over mpool mblocks (see the module doc of [`super`]).
pub struct Hse {
    pub(crate) cfg: HseConfig,
    pub(crate) nodes: Vec<Node>,
    pub(crate) mbsets: HashMap<u32, Mbset>,
    pub(crate) next_mbset: u32,
    /// c0: key -> newest value length ([`TOMB`] for a delete).
    c0: KeyMap<u32>,
    c0_fill: u64,
    /// Live documents: key -> document bytes.
    docs: KeyMap<u32>,
    pub(crate) w: Writer,
    c1: C1,
    ns_per_op: f64,
    /// The space-amplification rule is reducing (between the high and the low mark).
    pub(crate) samp_reduce: bool,
    /// Jobs of the current call.
    pub(crate) jobs: Vec<JobRecord>,
}

impl Hse {
    /// An empty KVS (one cN tree: its root).
    pub fn new(cfg: HseConfig) -> Result<Hse, String> {
        cfg.validate()?;
        let root = Node { level: 0, offset: 0, parent: None, children: Vec::new(), kvsets: VecDeque::new(), keys: KeyMap::default(), entries: 0, bytes: 0, size_max: cfg.node_size_lo };
        let ns_per_op = 1e9 / cfg.ops_per_sec;
        let next_flush_ns = cfg.dur_intvl_ms as u64 * 1_000_000;
        Ok(Hse {
            nodes: vec![root],
            mbsets: HashMap::new(),
            next_mbset: 0,
            c0: KeyMap::default(),
            c0_fill: 0,
            docs: KeyMap::default(),
            w: Writer { next_file: 1, counters: HseCounters::default() },
            c1: C1 { next_flush_ns, ..C1::default() },
            ns_per_op,
            samp_reduce: false,
            jobs: Vec::new(),
            cfg,
        })
    }

    /// The jobs (ingest, spills, compactions) the last `apply` or `sync` ran, in order.
    pub fn last_jobs(&self) -> &[JobRecord] {
        &self.jobs
    }

    /// Its configuration.
    pub fn config(&self) -> &HseConfig {
        &self.cfg
    }

    /// Counts so far.
    pub fn counters(&self) -> &HseCounters {
        &self.w.counters
    }

    /// Bytes put into c0 since its last ingest.
    pub fn c0_bytes(&self) -> u64 {
        self.c0_fill
    }

    /// Live documents.
    pub fn documents(&self) -> usize {
        self.docs.len()
    }

    /// The tree's nodes, root first, in creation order.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.nodes
            .iter()
            .map(|n| NodeInfo {
                level: n.level,
                offset: n.offset,
                role: n.role(),
                compcs: n.kvsets.iter().map(|k| k.compc).collect(),
                kblocks: n.kvsets.iter().map(|k| k.kblocks.len() as u64).sum(),
                vblocks: n.kvsets.iter().map(|k| k.vblocks).sum(),
                entries: n.entries,
                unique_keys: n.keys.len() as u64,
                clen: n.clen(),
                size_max: n.size_max,
            })
            .collect()
    }

    /// Live mblocks (kblocks and vblocks; c1 mlogs not counted).
    pub fn live_mblocks(&self) -> u64 {
        self.nodes.iter().map(|n| n.kvsets.iter().map(|k| k.kblocks.len() as u64).sum::<u64>()).sum::<u64>() + self.mbsets.values().map(|m| m.vblocks.len() as u64).sum::<u64>()
    }

    /// The space amplification estimate (`sp3_refresh_samp`): allocated bytes of all nodes over
    /// the leaves' compacted bytes; `None` while no leaf holds data.
    pub fn samp(&self) -> Option<f64> {
        let mut alloc = 0u64;
        let mut good = 0u64;
        for n in &self.nodes {
            alloc += n.blocks() * self.cfg.mblock_bytes;
            if n.role() == Role::Leaf {
                good += n.clen();
            }
        }
        (good > 0).then(|| alloc as f64 / good as f64)
    }

    /// Apply one request: c1 flushes due before it, then the put or delete into c0 (an ingest
    /// and the compactions it leads to when c0 is full). Reads write nothing.
    pub fn apply(&mut self, op: &KvOp, out: &mut Vec<FileOp>) -> Result<(), String> {
        self.jobs.clear();
        let now = (self.w.counters.ops as f64 * self.ns_per_op) as u64;
        if self.cfg.c1 {
            let step = self.cfg.dur_intvl_ms as u64 * 1_000_000;
            if self.c1.next_flush_ns <= now {
                self.c1_flush(out);
                // Flushes with nothing to write are skipped.
                self.c1.next_flush_ns += (now - self.c1.next_flush_ns) / step * step + step;
            }
        }
        self.w.counters.ops += 1;
        match *op {
            KvOp::Insert { key, bytes } | KvOp::Update { key, bytes } | KvOp::ReadModifyWrite { key, bytes } => {
                // hse-mongo rewrites the whole document (`updateRecord` puts the new BSON); an
                // update sending fewer bytes than the document keeps its size.
                let sent = bytes.saturating_add(self.cfg.doc_overhead_bytes);
                let doc = match self.docs.get(&key) {
                    Some(&old) if !matches!(op, KvOp::Insert { .. }) => old.max(sent),
                    _ => sent,
                };
                self.docs.insert(key, doc);
                self.w.counters.puts += 1;
                self.w.counters.app_value_bytes += doc as u64;
                self.put(key, doc, out);
            }
            KvOp::Delete { key } => {
                if self.docs.remove(&key).is_some() {
                    self.w.counters.deletes += 1;
                    self.put(key, TOMB, out);
                }
            }
            KvOp::Read { .. } | KvOp::Get { .. } | KvOp::Scan { .. } => {}
        }
        Ok(())
    }

    fn put(&mut self, key: u64, vlen: u32, out: &mut Vec<FileOp>) {
        let k = self.cfg.key_bytes as u64;
        let v = if vlen == TOMB { 0 } else { vlen as u64 };
        self.w.counters.app_key_bytes += k;
        self.c0.insert(key, vlen);
        self.c0_fill += k + v;
        if self.cfg.c1 {
            self.c1.pending += k + v + self.cfg.c1_record_overhead_bytes as u64;
        }
        if self.c0_fill >= self.cfg.c0_bytes {
            self.ingest(out);
        }
    }

    /// Ingest c0 now and run the compactions that follow (as `hse_kvdb_sync` / `c0sk_sync` does,
    /// after flushing c1).
    pub fn sync(&mut self, out: &mut Vec<FileOp>) {
        self.jobs.clear();
        if self.cfg.c1 {
            self.c1_flush(out);
        }
        self.ingest(out);
    }

    /// c0 becomes one kvset at the root (`c0sk_ingest_worker`, age group root, ordinary space),
    /// then the scheduler runs.
    pub(crate) fn ingest(&mut self, out: &mut Vec<FileOp>) {
        if self.c0.is_empty() {
            return;
        }
        let mut entries: Vec<Entry> = self.c0.drain().map(|(key, vlen)| Entry { key, vlen }).collect();
        entries.sort_unstable_by_key(|e| e.key);
        self.c0_fill = 0;
        let from = out.len();
        let mut b = Builder::new(Role::Root, self.cfg.policy, &self.cfg, true, false);
        for e in entries {
            b.add(e, &self.cfg, &mut self.w, out);
        }
        let ks = self.new_kvset(b, 0, out);
        self.nodes[0].add_keys(&ks);
        self.nodes[0].kvsets.push_front(ks);
        self.w.counters.ingests += 1;
        self.jobs.push(JobRecord { kind: JobKind::Ingest, level: 0, offset: 0, role: Role::Root, inputs: 0, input_kblocks: 0, input_vblocks: 0, ops: from..out.len() });
        self.schedule(out);
    }

    /// Finish a builder into a kvset of compaction count `compc` with a new mbset for its
    /// vblocks.
    pub(crate) fn new_kvset(&mut self, b: Builder, compc: u32, out: &mut Vec<FileOp>) -> Kvset {
        let (entries, bytes, kblocks, vblocks) = b.finish(&self.cfg, &mut self.w, out);
        let mut ks = Kvset { entries, kblocks, mbsets: Vec::new(), vblocks: vblocks.len() as u64, compc, bytes };
        if !vblocks.is_empty() {
            let id = self.next_mbset;
            self.next_mbset = self.next_mbset.wrapping_add(1);
            self.mbsets.insert(id, Mbset { vblocks, refs: 1 });
            ks.mbsets.push(id);
        }
        ks
    }

    /// A kvset is destroyed: its kblocks deleted, its mbsets released (vblocks deleted with the
    /// last reference) (`kvset.c` `kvset_mark_mblocks_for_delete`, `mbset.c`). mpool discards
    /// asynchronously; here the delete is immediate.
    pub(crate) fn destroy(&mut self, ks: Kvset, out: &mut Vec<FileOp>) {
        for f in ks.kblocks {
            out.push(FileOp::Delete { file: f });
            self.w.counters.kblocks_deleted += 1;
        }
        for id in ks.mbsets {
            let m = self.mbsets.get_mut(&id).expect("a live kvset's mbset");
            m.refs -= 1;
            if m.refs == 0 {
                let m = self.mbsets.remove(&id).expect("present");
                for f in m.vblocks {
                    out.push(FileOp::Delete { file: f });
                    self.w.counters.vblocks_deleted += 1;
                }
            }
        }
    }

    /// c1's media class: staging when there is one (`c1_log_create`).
    fn c1_class(&self) -> MediaClass {
        if self.cfg.staging {
            MediaClass::Staging
        } else {
            MediaClass::Capacity
        }
    }

    /// Write what c1 holds since its last flush, in strips over the current tree's mlogs; a
    /// full tree is left for a clean one (erased), a new one, or, with neither, an ingest makes
    /// one clean.
    fn c1_flush(&mut self, out: &mut Vec<FileOp>) {
        let mut left = std::mem::take(&mut self.c1.pending);
        let p = self.cfg.page_bytes;
        let usable = self.cfg.c1_log_usable_bytes();
        let strip = (self.cfg.c1_strip_bytes.min(usable) / p * p).max(p);
        let class = self.c1_class();
        while left > 0 {
            let take = left.min(strip);
            let len = take.div_ceil(p) * p;
            let t = match self.c1.cur {
                Some(t) if self.c1.trees[t].offs[self.c1.trees[t].next] + len <= usable => t,
                _ => self.c1_next_tree(out),
            };
            let gen = self.w.counters.ingests;
            let tree = &mut self.c1.trees[t];
            let i = tree.next;
            out.push(FileOp::Write { file: tree.logs[i], offset: tree.offs[i], len: len as u32 });
            tree.offs[i] += len;
            tree.next = (i + 1) % tree.logs.len();
            tree.gen = Some(gen);
            self.w.count(class, None, BlockKind::Value, len);
            left -= take;
        }
    }

    /// The tree to write next: a clean one (all its data ingested), erased; else a new one; else
    /// force an ingest and take a clean one.
    fn c1_next_tree(&mut self, out: &mut Vec<FileOp>) -> usize {
        let cur = self.c1.cur;
        let clean = |c1: &C1, ingests: u64| c1.trees.iter().enumerate().filter(|&(i, t)| Some(i) != cur && t.gen.is_none_or(|g| g < ingests)).map(|(i, _)| i).next();
        let t = match clean(&self.c1, self.w.counters.ingests) {
            Some(t) => t,
            None if (self.c1.trees.len() as u32) < self.cfg.c1_max_trees => {
                let zones = self.cfg.c1_log_zones();
                let group = mlog_group(self.c1_class(), zones);
                let logs: Vec<FileId> = (0..self.cfg.c1_stripe_width).map(|_| self.w_create(group, out)).collect();
                let n = logs.len();
                self.c1.trees.push(C1Tree { logs, offs: vec![0; n], next: 0, gen: None });
                self.w.counters.c1_trees += 1;
                self.c1.trees.len() - 1
            }
            None => {
                self.w.counters.c1_forced_ingests += 1;
                self.ingest(out);
                // After the ingest every tree is clean; with one tree it is the current one.
                clean(&self.c1, self.w.counters.ingests).or(cur).expect("a c1 tree")
            }
        };
        let tree = &mut self.c1.trees[t];
        if tree.offs.iter().any(|&o| o > 0) {
            for &f in &tree.logs {
                out.push(FileOp::Truncate { file: f, size: 0 });
            }
            tree.offs.iter_mut().for_each(|o| *o = 0);
            tree.next = 0;
            self.w.counters.c1_erases += 1;
        }
        tree.gen = None;
        self.c1.cur = Some(t);
        t
    }

    fn w_create(&mut self, group: u32, out: &mut Vec<FileOp>) -> FileId {
        let file = self.w.next_file;
        self.w.next_file += 1;
        out.push(FileOp::Create { file, group });
        self.w.counters.mblocks_allocated += 1;
        file
    }
}
