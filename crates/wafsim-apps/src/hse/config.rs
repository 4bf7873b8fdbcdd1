//! [`HseConfig`]: the engine's figures, HSE 1.9 defaults, each with its source (hse r1.9.0
//! unless said) or marked as an assumption.

use super::policy::MclassPolicy;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// Configuration of an [`super::Hse`] engine. Sizes are real HSE sizes by default; a scaled run
/// divides them ([`HseConfig::scaled`]).
#[derive(Debug, Clone, PartialEq)]
pub struct HseConfig {
    /// Requests per second: the engine's clock (request k arrives at k / rate), which paces c1
    /// flushes. An unknown of a published run (as `WtConfig::ops_per_sec`).
    pub ops_per_sec: f64,
    /// c0 bytes (keys + values put) at which c0 is ingested into the cN root as one kvset:
    /// 2 GiB, the auto-sized aggregate (`HSE_C0_INGEST_SZ_MAX`, `c0_coalesce_sz` = 2048 MiB,
    /// `limits.h`, `kvdb_rparams.c`). The low-memory profile (hosts with <= 32 GB,
    /// `ikvdb.c` `ikvdb_low_mem_adjust`) uses min(16 MiB x GB/8, 256 MiB) x 8.
    pub c0_bytes: u64,
    /// mblock size = mpool zone (`kblock_size_mb`, `vblock_size_mb`, `KBLOCK_MAX_SIZE`: 32 MiB,
    /// fixed by HSE).
    pub mblock_bytes: u64,
    /// Largest write into an mblock (`mblk_blow_chunks` / `WBUF_LEN_MAX`: 1 MiB).
    pub write_chunk_bytes: u64,
    /// Page: every write is whole pages (mpool's 4 KiB `PAGE_SIZE` alignment).
    pub page_bytes: u64,
    /// Key bytes of a document (hse-mongo `KVDBRecordStoreKey`: 4-byte prefix + 8-byte RecordId).
    pub key_bytes: u32,
    /// BSON bytes of a document besides its field data (an assumption, as `WtConfig`'s).
    pub doc_overhead_bytes: u32,
    /// kblock bytes per key besides the key: wbtree leaf metadata (value reference, seqno),
    /// bloom bits, wbtree internal nodes amortised. An assumption: 16 B.
    pub kblock_entry_overhead_bytes: u32,
    /// Fixed bytes per kblock: header, HyperLogLog, bloom and wbtree roots. An assumption: 8 KiB.
    pub kblock_fixed_bytes: u64,
    /// vblock header (`VBLOCK_HDR_LEN`, 4 KiB).
    pub vblock_header_bytes: u64,
    /// Values of at most this many bytes live in the kblock (`CN_SMALL_VALUE_THRESHOLD`, 8).
    pub inline_value_max: u32,
    /// Children per node (`kvs_cparams.c` `cp_fanout`, 16; 2..16, a power of two).
    pub fanout: u32,
    /// Deepest level; a node there does not spill (`cn_tree_max_depth`: 7 for fanout 16).
    pub max_depth: u32,
    /// Levels routed by the collection's key prefix rather than the whole key (`pfx_pivot`, 2,
    /// with hse-mongo's `pfx_len` 4; Micron's MongoDB configs use 1): all documents of one
    /// collection share the prefix, so those levels spill to one child.
    pub prefix_levels: u32,
    /// Node size maximum of a level's first node (`cn_node_size_lo`, 20 GiB) ...
    pub node_size_lo: u64,
    /// ... and of its last; linear in between by node offset (`cn_node_size_hi`, 28 GiB,
    /// `cn_tree.c` `cn_node_alloc`).
    pub node_size_hi: u64,
    /// Root spill when it holds this many kvsets (`rspill_kvsets_min`, 4) ...
    pub rspill_kvsets_min: usize,
    /// ... taking at most this many oldest (`rspill_kvsets_max`, 8).
    pub rspill_kvsets_max: usize,
    /// An internal node spills once its compacted size reaches this (`sp3_work_ispill`: nodes
    /// under 128 MiB are not spilled, however many kvsets they hold) ...
    pub ispill_min_bytes: u64,
    /// ... all its kvsets (at most 4 x `ispill_kvsets_max`) while under this
    /// (`CN_CR_SPILL_TINY`: 1 GiB) ...
    pub ispill_tiny_bytes: u64,
    /// ... else at most this many oldest (`ispill_kvsets_max`, 12), or only the oldest when it
    /// has been compacted more than once (`CN_CR_SPILL_ONE`).
    pub ispill_kvsets_max: usize,
    /// Leaf k-compaction: a run of at least this many oldest kvsets of equal compaction count
    /// (`llen_runlen_min`, 4) ...
    pub runlen_min: usize,
    /// ... at most this many (`llen_runlen_max`, 8).
    pub runlen_max: usize,
    /// Leaf kv-compaction of the oldest `runlen_min` kvsets when it has more than that and no
    /// run, while its compacted size is below this (`CN_CR_LSHORT_LW`: 256 MiB).
    pub leaf_short_bytes: u64,
    /// Most kvsets of a leaf kv-compaction (`lcomp_kvsets_max`, 12).
    pub lcomp_kvsets_max: usize,
    /// A leaf spills ("pops") rather than kv-compacts when its compacted size passes this
    /// percent of its maximum (`lcomp_pop_pct`, 80).
    pub lcomp_pop_pct: u32,
    /// The leaf-size rule acts at this percent of the maximum (`RBT_L_PCAP` threshold, 100).
    pub leaf_full_pct: u32,
    /// Space amplification target, percent (`csched_samp_max`, 150).
    pub samp_max_pct: u32,
    /// `csched_lo_th_pct` (25): sets the high water mark.
    pub samp_lo_pct: u32,
    /// `csched_hi_th_pct` (75): sets the low water mark.
    pub samp_hi_pct: u32,
    /// `csched_leaf_pct` (90).
    pub leaf_pct: u32,
    /// The media-class policy (`mclass_policy`, `capacity_only`).
    pub policy: MclassPolicy,
    /// A staging class exists (mpool `mclass=STAGING` device added). Without it every block
    /// and c1 goes to capacity.
    pub staging: bool,
    /// c1, the durability log, on (`dur_enable`, 1).
    pub c1: bool,
    /// c1 capacity of one c1 tree (`dur_capacity`, 6 GiB, `kvdb_cparams.c`; a tree's capacity
    /// is the journal's, `c1_utils.c`).
    pub dur_capacity_bytes: u64,
    /// mlogs per c1 tree (`HSE_C1_DEFAULT_STRIPE_WIDTH`, 4); each `dur_capacity / 4`
    /// (1.5 GiB, inside HSE's 1..4 GiB clamp, `c1_tree_make`).
    pub c1_stripe_width: u32,
    /// Most c1 trees (`HSE_C1_TREE_CNT_UB`, 16).
    pub c1_max_trees: u32,
    /// Percent of an mlog usable before the tree is full (`c1_tree.c`: 75 %).
    pub c1_usable_pct: u32,
    /// c1 strip: a flush is spread over the mlogs in strips of this (32 KiB).
    pub c1_strip_bytes: u64,
    /// c1 flush period, ms (`dur_intvl_ms`: 500 in HSE, 100 = hse-mongo's `DUR_LAG` or the
    /// journal commit interval).
    pub dur_intvl_ms: u32,
    /// Bytes a c1 record adds to a key and value (an assumption: 32 B).
    pub c1_record_overhead_bytes: u32,
}

impl Default for HseConfig {
    fn default() -> Self {
        HseConfig {
            ops_per_sec: 10_000.0,
            c0_bytes: 2 * GIB,
            mblock_bytes: 32 * MIB,
            write_chunk_bytes: MIB,
            page_bytes: 4096,
            key_bytes: 12,
            doc_overhead_bytes: 64,
            kblock_entry_overhead_bytes: 16,
            kblock_fixed_bytes: 8192,
            vblock_header_bytes: 4096,
            inline_value_max: 8,
            fanout: 16,
            max_depth: 7,
            prefix_levels: 2,
            node_size_lo: 20 * GIB,
            node_size_hi: 28 * GIB,
            rspill_kvsets_min: 4,
            rspill_kvsets_max: 8,
            ispill_min_bytes: 128 * MIB,
            ispill_tiny_bytes: GIB,
            ispill_kvsets_max: 12,
            runlen_min: 4,
            runlen_max: 8,
            leaf_short_bytes: 256 * MIB,
            lcomp_kvsets_max: 12,
            lcomp_pop_pct: 80,
            leaf_full_pct: 100,
            samp_max_pct: 150,
            samp_lo_pct: 25,
            samp_hi_pct: 75,
            leaf_pct: 90,
            policy: MclassPolicy::CapacityOnly,
            staging: false,
            c1: true,
            dur_capacity_bytes: 6 * GIB,
            c1_stripe_width: 4,
            c1_max_trees: 16,
            c1_usable_pct: 75,
            c1_strip_bytes: 32 << 10,
            dur_intvl_ms: 100,
            c1_record_overhead_bytes: 32,
        }
    }
}

impl HseConfig {
    /// The sizes divided by `div`: c0, node sizes, the spill and compaction byte thresholds,
    /// the c1 capacity and the mblock (at least a page, rounded down to pages; the write chunk
    /// at most the mblock). The kblock's fixed bytes and the vblock header shrink with the
    /// mblock (byte counts: writes are still whole pages). Scaling the mblock keeps the space-amplification
    /// estimate (allocated over compacted bytes) as at full size; an experiment that wants
    /// real 32 MiB mblocks under scaled nodes sets `mblock_bytes` back afterwards.
    pub fn scaled(mut self, div: u64) -> HseConfig {
        let d = div.max(1);
        let p = self.page_bytes;
        let down = |x: u64| (x / d).max(1);
        self.c0_bytes = down(self.c0_bytes);
        self.node_size_lo = down(self.node_size_lo);
        self.node_size_hi = down(self.node_size_hi);
        self.ispill_min_bytes = down(self.ispill_min_bytes);
        self.ispill_tiny_bytes = down(self.ispill_tiny_bytes);
        self.leaf_short_bytes = down(self.leaf_short_bytes);
        self.dur_capacity_bytes = down(self.dur_capacity_bytes);
        self.mblock_bytes = (self.mblock_bytes / d / p * p).max(p);
        self.write_chunk_bytes = self.write_chunk_bytes.min(self.mblock_bytes);
        // Headers are byte counts inside an mblock (only writes are whole pages), so they
        // scale too; kept at a page they would be 1/8 of a 32 KiB mblock and hold the
        // space-amplification estimate above its low mark for ever.
        self.kblock_fixed_bytes = (self.kblock_fixed_bytes / d).min(self.mblock_bytes / 2);
        self.vblock_header_bytes = (self.vblock_header_bytes / d).min(self.mblock_bytes / 2);
        self
    }

    /// Why the configuration cannot work, if it cannot.
    pub fn validate(&self) -> Result<(), String> {
        let p = self.page_bytes;
        if !(self.ops_per_sec > 0.0 && self.ops_per_sec.is_finite()) {
            return Err("ops_per_sec must be positive".into());
        }
        if p == 0 || !p.is_power_of_two() {
            return Err("page_bytes must be a power of two".into());
        }
        if self.mblock_bytes == 0 || !self.mblock_bytes.is_multiple_of(p) || self.write_chunk_bytes == 0 || !self.write_chunk_bytes.is_multiple_of(p) {
            return Err("mblock_bytes and write_chunk_bytes must be positive multiples of page_bytes".into());
        }
        if self.kblock_fixed_bytes >= self.mblock_bytes || self.vblock_header_bytes >= self.mblock_bytes {
            return Err("kblock_fixed_bytes and vblock_header_bytes must be less than mblock_bytes".into());
        }
        if !(2..=16).contains(&self.fanout) || !self.fanout.is_power_of_two() {
            return Err("fanout must be a power of two in 2..=16 (CN_FANOUT_BITS_MIN/MAX)".into());
        }
        let bits = self.fanout.trailing_zeros();
        if self.max_depth == 0 || bits * self.max_depth > 60 {
            return Err("max_depth must be positive and max_depth x fanout bits at most 60".into());
        }
        if self.rspill_kvsets_min == 0 || self.rspill_kvsets_max < self.rspill_kvsets_min || self.ispill_kvsets_max == 0 {
            return Err("rspill_kvsets_min must be positive and at most rspill_kvsets_max; ispill_kvsets_max positive".into());
        }
        if self.runlen_min < 2 || self.runlen_max < self.runlen_min || self.lcomp_kvsets_max < 2 {
            return Err("runlen_min must be at least 2 and at most runlen_max; lcomp_kvsets_max at least 2".into());
        }
        if self.node_size_lo == 0 || self.node_size_hi < self.node_size_lo || self.c0_bytes == 0 {
            return Err("c0_bytes and node_size_lo must be positive, node_size_hi at least node_size_lo".into());
        }
        if self.samp_max_pct <= 100 || self.samp_lo_pct > 100 || self.samp_hi_pct > 100 || self.samp_lo_pct > self.samp_hi_pct || self.leaf_pct == 0 || self.leaf_pct > 100 {
            return Err("samp_max_pct must pass 100; samp_lo_pct <= samp_hi_pct <= 100; leaf_pct in 1..=100".into());
        }
        if self.c1 && (self.c1_stripe_width == 0 || self.c1_max_trees == 0 || self.c1_usable_pct == 0 || self.c1_usable_pct > 100 || self.c1_strip_bytes == 0 || self.dur_intvl_ms == 0) {
            return Err("c1: stripe width, tree count, usable percent (1..=100), strip and interval must be positive".into());
        }
        if self.c1 && self.c1_log_usable_bytes() < p {
            return Err("c1: an mlog's usable part must hold at least a page (dur_capacity_bytes too small)".into());
        }
        Ok(())
    }

    /// Bytes of one c1 mlog (`dur_capacity / stripe width`).
    pub fn c1_log_bytes(&self) -> u64 {
        self.dur_capacity_bytes / self.c1_stripe_width.max(1) as u64
    }

    /// Bytes of an mlog written before its tree counts as full (whole pages).
    pub fn c1_log_usable_bytes(&self) -> u64 {
        self.c1_log_bytes() * self.c1_usable_pct as u64 / 100 / self.page_bytes * self.page_bytes
    }

    /// mpool zones (mblock-size) of one c1 mlog.
    pub fn c1_log_zones(&self) -> u64 {
        self.c1_log_bytes().div_ceil(self.mblock_bytes).max(1)
    }

    /// Space amplification above which leaves are kv-compacted for garbage, and below which
    /// that stops (`csched_sp3.c` `sp3_refresh_samp`): with r = 1 - leaf%, S = samp_max,
    /// good_min = (1 + r) / S, good = good_min + pct x (1 - good_min), samp = (1 + r) / good,
    /// the high mark from `samp_lo_pct`, the low from `samp_hi_pct` (defaults: 1.375, 1.179).
    pub fn samp_marks(&self) -> (f64, f64) {
        let r = 1.0 - self.leaf_pct as f64 / 100.0;
        let s = self.samp_max_pct as f64 / 100.0;
        let good_min = ((1.0 + r) / s).min(1.0);
        let good = |pct: u32| good_min + pct as f64 / 100.0 * (1.0 - good_min);
        ((1.0 + r) / good(self.samp_lo_pct), (1.0 + r) / good(self.samp_hi_pct))
    }
}
