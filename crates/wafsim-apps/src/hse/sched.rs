//! The compaction scheduler (sp3, HSE's default `csched_policy` 3), reduced to the rules that
//! decide what is rewritten, and the three jobs: spill, k-compaction, kv-compaction.
//!
//! Rules, checked in this order after every ingest and after every job until none applies
//! (sources: hse r1.9.0 `src/cn/csched_sp3.c` `sp3_schedule`, `sp3_refresh_thresholds`,
//! `sp3_refresh_samp`; `src/cn/csched_sp3_work.c` `sp3_work_ispill`, `sp3_work_leaf_len`,
//! `sp3_work_leaf_garbage`, `sp3_work_leaf_size`):
//! 1. root spill: the root holds `rspill_kvsets_min` (4) kvsets: spill the oldest, at most
//!    `rspill_kvsets_max` (8);
//! 2. internal spill (`sp3_work_ispill`, which both the ispill and the node-length jobs of an
//!    internal node call): nothing under `ispill_min_bytes` (128 MiB) of compacted length; under
//!    `ispill_tiny_bytes` (1 GiB) all its kvsets (at most 4 x 12, `CN_CR_SPILL_TINY`); else only
//!    the oldest if it was compacted more than once (`CN_CR_SPILL_ONE`), or at most
//!    `ispill_kvsets_max` (12) oldest;
//! 3. leaf size: a leaf's compacted length reaches `leaf_full_pct` (100) % of its maximum: it
//!    spills (the leaf pops and turns internal) its oldest kvsets, at most `lcomp_kvsets_max`
//!    (12), only the oldest when that is a compaction's output (`sp3_work_leaf_size`,
//!    `CN_CR_LBIG_ONE`); at the deepest level, where sp3 refuses to spill, it kv-compacts (an
//!    assumption);
//! 4. leaf length: from the oldest kvset, the first run of `runlen_min` (4) kvsets of equal
//!    compaction count, extended by newer ones up to `runlen_max` (8), is k-compacted (only 4
//!    when the run's count is above 0); else a leaf of more than 4 kvsets and under
//!    `leaf_short_bytes` kv-compacts its oldest 4;
//! 5. garbage: while the space-amplification estimate is above the high mark (until below the
//!    low one) and the leaves hold at least 0.9 x `leaf_pct` of the allocated mblocks, the leaf
//!    with the largest garbage share (1 - compacted / allocated) spills (at most 12 oldest)
//!    when over `lcomp_pop_pct` (80) % of its maximum, else kv-compacts (at most 12 oldest) if
//!    it has more than one kvset.
//!
//! Simplifications (named): jobs run one at a time and complete at once (no job queues,
//! threads, tokens, or concurrency between root spills); the internal spill ignores sp3's
//! leaf-percent target (`lpct_targ`, which gates the ispill job; the node-length job's limits,
//! 4..8 kvsets, are subsumed); the leaf-garbage rule takes any garbage share above 0
//! (sp3 uses 10 % while the leaf percent lags its target); the idle and scatter rules are off as
//! in HSE's defaults; tombstones are dropped only by a leaf kv-compaction that includes the
//! node's oldest kvset.
//!
//! Jobs: spill (`src/cn/spill.c` `cn_spill`): merge the oldest kvsets, keys and values rewritten
//! into one new kvset per child that receives keys; children are made when first routed to
//! (`cn_comp_commit_spill`); an output for an existing internal child is written with the
//! internal age group, for a leaf or new child with the leaf one; all input mblocks deleted.
//! kv-compaction (same code, one output in the same node). k-compaction (`src/cn/kcompact.c`
//! `cn_kcompact`): new kblocks only; the inputs' vblocks (their mbsets) are referenced by the
//! output, none written or deleted.

use std::ops::Range;

use wafsim_core::pipeline::FileOp;

use super::kvset::{merge, Builder, Entry, Kvset, Mbset};
use super::policy::Role;
use super::tree::{Hse, JobKind, JobRecord, Node};

/// A job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Job {
    /// Spill the `count` oldest kvsets of the node.
    Spill { node: usize, count: usize, garbage: bool },
    /// k-compact the node's kvsets at these positions (0 = newest).
    KCompact { node: usize, range: Range<usize> },
    /// kv-compact the node's kvsets at these positions.
    KvCompact { node: usize, range: Range<usize>, garbage: bool },
}

/// A 64-bit mixer (splitmix64's finaliser): the spill hash of a key.
fn mix(k: u64) -> u64 {
    let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Hse {
    /// Run jobs until no rule applies.
    pub(crate) fn schedule(&mut self, out: &mut Vec<FileOp>) {
        while let Some(job) = self.pick() {
            self.run(job, out);
        }
    }

    fn oldest(len: usize, count: usize) -> Range<usize> {
        len - count.min(len)..len
    }

    fn pick(&mut self) -> Option<Job> {
        let c = &self.cfg;
        let root = self.nodes[0].kvsets.len();
        if root >= c.rspill_kvsets_min {
            return Some(Job::Spill { node: 0, count: root.min(c.rspill_kvsets_max), garbage: false });
        }
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.role() != Role::Internal || n.kvsets.is_empty() {
                continue;
            }
            let len = n.kvsets.len();
            let clen = n.clen();
            if clen < c.ispill_min_bytes {
                continue;
            }
            let count = if clen < c.ispill_tiny_bytes {
                len.min(4 * c.ispill_kvsets_max)
            } else if n.kvsets[len - 1].compc > 1 {
                1
            } else {
                len.min(c.ispill_kvsets_max)
            };
            return Some(Job::Spill { node: i, count, garbage: false });
        }
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.role() != Role::Leaf || n.kvsets.is_empty() {
                continue;
            }
            let len = n.kvsets.len();
            let clen = n.clen();
            if clen as u128 * 100 >= n.size_max as u128 * c.leaf_full_pct as u128 {
                if n.level < c.max_depth {
                    // At most 12; only the oldest when it is a compaction's output
                    // (`CN_CR_LBIG_ONE`).
                    let count = if n.kvsets[len - 1].compc > 0 { 1 } else { len.min(c.lcomp_kvsets_max) };
                    return Some(Job::Spill { node: i, count, garbage: false });
                }
                if len > 1 {
                    return Some(Job::KvCompact { node: i, range: Self::oldest(len, c.lcomp_kvsets_max), garbage: false });
                }
            }
            if let Some(range) = Self::oldest_run(n, c.runlen_min, c.runlen_max) {
                return Some(Job::KCompact { node: i, range });
            }
            if len > c.runlen_min && clen < c.leaf_short_bytes {
                return Some(Job::KvCompact { node: i, range: Self::oldest(len, c.runlen_min), garbage: false });
            }
        }
        self.pick_garbage()
    }

    /// `sp3_work_leaf_len`: from the oldest kvset, the first run of `min` kvsets of equal
    /// compaction count, extended by newer kvsets (whatever their count) up to `max`; a run of
    /// compacted kvsets (count > 0) is cut back to `min`. Positions (0 = newest).
    fn oldest_run(n: &Node, min: usize, max: usize) -> Option<Range<usize>> {
        let len = n.kvsets.len();
        let (mut compc, mut runlen, mut mark) = (None, 0usize, len);
        for i in (0..len).rev() {
            let c = n.kvsets[i].compc;
            if compc != Some(c) && runlen < min {
                compc = Some(c);
                mark = i;
                runlen = 1;
            } else {
                runlen += 1;
                if runlen >= max {
                    break;
                }
            }
        }
        if runlen < min {
            return None;
        }
        let count = if compc.is_some_and(|c| c > 0) { min } else { runlen };
        Some(mark + 1 - count..mark + 1)
    }

    fn pick_garbage(&mut self) -> Option<Job> {
        let (hwm, lwm) = self.cfg.samp_marks();
        let samp = self.samp()?;
        if samp > hwm {
            self.samp_reduce = true;
        } else if samp < lwm {
            self.samp_reduce = false;
        }
        if !self.samp_reduce {
            return None;
        }
        // Only once the leaves hold at least 90 % of the leaf-percent target of the allocated
        // space (`sp3_work_leaf_garbage` runs while `lpct >= 0.9 x lpct_targ`).
        let (mut leaf_blocks, mut all_blocks) = (0u64, 0u64);
        for n in &self.nodes {
            let b = n.blocks();
            all_blocks += b;
            if n.role() == Role::Leaf {
                leaf_blocks += b;
            }
        }
        if (leaf_blocks as f64) < 0.9 * self.cfg.leaf_pct as f64 / 100.0 * all_blocks as f64 {
            return None;
        }
        let c = &self.cfg;
        let mut best: Option<(f64, Job)> = None;
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.role() != Role::Leaf || n.kvsets.is_empty() {
                continue;
            }
            let alloc = n.blocks() * c.mblock_bytes;
            let clen = n.clen();
            let share = 1.0 - clen as f64 / alloc.max(1) as f64;
            if share <= 0.0 || best.as_ref().is_some_and(|(s, _)| *s >= share) {
                continue;
            }
            let len = n.kvsets.len();
            let job = if clen as u128 * 100 > n.size_max as u128 * c.lcomp_pop_pct as u128 && n.level < c.max_depth {
                Job::Spill { node: i, count: len.min(c.lcomp_kvsets_max), garbage: true }
            } else if len > 1 {
                Job::KvCompact { node: i, range: Self::oldest(len, c.lcomp_kvsets_max), garbage: true }
            } else {
                continue;
            };
            best = Some((share, job));
        }
        best.map(|(_, j)| j)
    }

    pub(crate) fn run(&mut self, job: Job, out: &mut Vec<FileOp>) {
        let from = out.len();
        let (n, kind, inputs) = match &job {
            Job::Spill { node, count, .. } => (*node, JobKind::Spill, Self::oldest(self.nodes[*node].kvsets.len(), *count)),
            Job::KCompact { node, range } => (*node, JobKind::KCompact, range.clone()),
            Job::KvCompact { node, range, .. } => (*node, JobKind::KvCompact, range.clone()),
        };
        let node = &self.nodes[n];
        let mut rec = JobRecord {
            kind,
            level: node.level,
            offset: node.offset,
            role: node.role(),
            inputs: inputs.len(),
            input_kblocks: inputs.clone().map(|i| node.kvsets[i].kblocks.len() as u64).sum(),
            input_vblocks: inputs.map(|i| node.kvsets[i].vblocks).sum(),
            ops: 0..0,
        };
        self.run_job(job, out);
        rec.ops = from..out.len();
        self.jobs.push(rec);
    }

    fn run_job(&mut self, job: Job, out: &mut Vec<FileOp>) {
        match job {
            Job::Spill { node, count, garbage } => {
                self.w.counters.garbage_jobs += garbage as u64;
                self.spill(node, count, out)
            }
            Job::KCompact { node, range } => self.k_compact(node, range, out),
            Job::KvCompact { node, range, garbage } => {
                self.w.counters.garbage_jobs += garbage as u64;
                self.kv_compact(node, range, out)
            }
        }
    }

    /// Take the kvsets at `range` out of node `n` (its key counts updated), newest first.
    fn take(&mut self, n: usize, range: Range<usize>) -> Vec<Kvset> {
        let node = &mut self.nodes[n];
        let taken: Vec<Kvset> = node.kvsets.drain(range).collect();
        for k in &taken {
            node.remove_keys(k);
        }
        taken
    }

    /// The child slot of `key` below a node at `level`.
    fn route(&self, level: u32, key: u64) -> usize {
        if level < self.cfg.prefix_levels {
            // One collection: every key has the same prefix, so the same child.
            return 0;
        }
        let bits = self.cfg.fanout.trailing_zeros();
        ((mix(key) >> (bits * (level - self.cfg.prefix_levels))) & (self.cfg.fanout as u64 - 1)) as usize
    }

    /// Spill the `count` oldest kvsets of node `n` into its children.
    fn spill(&mut self, n: usize, count: usize, out: &mut Vec<FileOp>) {
        let fanout = self.cfg.fanout as usize;
        match self.nodes[n].role() {
            Role::Root => self.w.counters.root_spills += 1,
            Role::Internal => self.w.counters.internal_spills += 1,
            Role::Leaf => self.w.counters.leaf_spills += 1,
        }
        let len = self.nodes[n].kvsets.len();
        let inputs = self.take(n, Self::oldest(len, count));
        if self.nodes[n].children.is_empty() {
            self.nodes[n].children = vec![None; fanout];
        }
        let level = self.nodes[n].level;
        // The destination's age group when its builder starts (`is_spill_to_intnode`).
        let roles: Vec<Role> = self.nodes[n].children.iter().map(|c| c.filter(|&c| self.nodes[c].role() == Role::Internal).map_or(Role::Leaf, |_| Role::Internal)).collect();
        let mut builders: Vec<Option<Builder>> = vec![None; fanout];
        let slices: Vec<&[Entry]> = inputs.iter().map(|k| k.entries.as_slice()).collect();
        let mut routed: Vec<(usize, Entry)> = Vec::new();
        let dropped = merge(&slices, false, |e| routed.push((0, e)));
        for r in routed.iter_mut() {
            r.0 = self.route(level, r.1.key);
        }
        for (slot, e) in routed {
            let b = builders[slot].get_or_insert_with(|| Builder::new(roles[slot], self.cfg.policy, &self.cfg, true, true));
            b.add(e, &self.cfg, &mut self.w, out);
        }
        self.w.counters.versions_dropped += dropped.versions;
        for (slot, b) in builders.into_iter().enumerate() {
            let Some(b) = b else { continue };
            let ks = self.new_kvset(b, 0, out);
            let child = match self.nodes[n].children[slot] {
                Some(c) => c,
                None => self.new_child(n, slot),
            };
            let node = &mut self.nodes[child];
            node.add_keys(&ks);
            node.kvsets.push_front(ks);
        }
        for k in inputs {
            self.destroy(k, out);
        }
    }

    fn new_child(&mut self, parent: usize, slot: usize) -> usize {
        let c = &self.cfg;
        let level = self.nodes[parent].level + 1;
        let offset = self.nodes[parent].offset * c.fanout as u64 + slot as u64;
        let width = (c.fanout as u64).saturating_pow(level);
        let span = c.node_size_hi - c.node_size_lo;
        let size_max = c.node_size_lo + (span as u128 * offset as u128 / (width - 1).max(1) as u128) as u64;
        let node = Node { level, offset, parent: Some(parent), children: Vec::new(), kvsets: Default::default(), keys: Default::default(), entries: 0, bytes: 0, size_max };
        self.nodes.push(node);
        let id = self.nodes.len() - 1;
        self.nodes[parent].children[slot] = Some(id);
        id
    }

    /// kv-compact the kvsets at `range` of node `n` into one, in their place.
    fn kv_compact(&mut self, n: usize, range: Range<usize>, out: &mut Vec<FileOp>) {
        self.w.counters.kv_compactions += 1;
        let role = self.nodes[n].role();
        let oldest = range.end == self.nodes[n].kvsets.len();
        let at = range.start;
        let inputs = self.take(n, range);
        let compc = inputs.iter().map(|k| k.compc).max().unwrap_or(0) + 1;
        let mut b = Builder::new(role, self.cfg.policy, &self.cfg, true, true);
        let slices: Vec<&[Entry]> = inputs.iter().map(|k| k.entries.as_slice()).collect();
        let mut merged = Vec::new();
        let dropped = merge(&slices, role == Role::Leaf && oldest, |e| merged.push(e));
        for e in merged {
            b.add(e, &self.cfg, &mut self.w, out);
        }
        self.w.counters.versions_dropped += dropped.versions;
        self.w.counters.tombstones_dropped += dropped.tombstones;
        let ks = self.new_kvset(b, compc, out);
        self.place(n, at, ks);
        for k in inputs {
            self.destroy(k, out);
        }
    }

    /// k-compact the kvsets at `range` of node `n`: new kblocks, the vblocks kept.
    fn k_compact(&mut self, n: usize, range: Range<usize>, out: &mut Vec<FileOp>) {
        self.w.counters.k_compactions += 1;
        let role = self.nodes[n].role();
        let at = range.start;
        let inputs = self.take(n, range);
        let compc = inputs.iter().map(|k| k.compc).max().unwrap_or(0) + 1;
        let mut b = Builder::new(role, self.cfg.policy, &self.cfg, false, true);
        let slices: Vec<&[Entry]> = inputs.iter().map(|k| k.entries.as_slice()).collect();
        let mut merged = Vec::new();
        let dropped = merge(&slices, false, |e| merged.push(e));
        for e in merged {
            b.add(e, &self.cfg, &mut self.w, out);
        }
        self.w.counters.versions_dropped += dropped.versions;
        let mut ks = self.new_kvset(b, compc, out);
        // The output references every input mbset (`kvset_keep_vblocks`).
        for k in &inputs {
            for &id in &k.mbsets {
                let m: &mut Mbset = self.mbsets.get_mut(&id).expect("a live kvset's mbset");
                m.refs += 1;
                ks.mbsets.push(id);
                ks.vblocks += m.vblocks.len() as u64;
            }
        }
        self.place(n, at, ks);
        for k in inputs {
            self.destroy(k, out);
        }
    }

    /// Put `ks` at position `at` of node `n` (nothing for an empty kvset).
    fn place(&mut self, n: usize, at: usize, ks: Kvset) {
        if ks.entries.is_empty() && ks.mbsets.is_empty() {
            return;
        }
        let node = &mut self.nodes[n];
        node.add_keys(&ks);
        node.kvsets.insert(at, ks);
    }
}
