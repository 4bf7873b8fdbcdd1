//! What an [`Hse`](super::Hse) engine counted: requests, bytes per block kind, media class and
//! node role, and its tree's jobs. Its own file because the kvset writer (kvset.rs) adds to it
//! and the tree (tree.rs) owns it.

/// Counts of an [`Hse`](super::Hse) engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HseCounters {
    /// Requests applied.
    pub ops: u64,
    /// Puts (inserts and updates).
    pub puts: u64,
    /// Deletes of existing documents (tombstones put).
    pub deletes: u64,
    /// Key bytes of puts and deletes.
    pub app_key_bytes: u64,
    /// Document (value) bytes of puts.
    pub app_value_bytes: u64,
    /// Bytes written to kblocks.
    pub kblock_write_bytes: u64,
    /// Bytes written to vblocks.
    pub vblock_write_bytes: u64,
    /// Bytes written to c1 mlogs.
    pub c1_write_bytes: u64,
    /// Bytes written to the staging class (all kinds).
    pub staging_write_bytes: u64,
    /// Bytes written to the capacity class (all kinds).
    pub capacity_write_bytes: u64,
    /// mblock bytes written by destination role (root, internal, leaf) and kind (keys, values).
    pub role_write_bytes: [[u64; 2]; 3],
    /// c0 ingests (kvsets added to the root).
    pub ingests: u64,
    /// Spills of the root.
    pub root_spills: u64,
    /// Spills of internal nodes.
    pub internal_spills: u64,
    /// Spills of leaves (a leaf "pops" and becomes internal).
    pub leaf_spills: u64,
    /// k-compactions (keys rewritten, vblocks kept).
    pub k_compactions: u64,
    /// kv-compactions (keys and values rewritten).
    pub kv_compactions: u64,
    /// kv-compactions or spills the space-amplification (garbage) rule chose.
    pub garbage_jobs: u64,
    /// mblocks allocated (kblocks, vblocks and c1 mlogs).
    pub mblocks_allocated: u64,
    /// kblocks deleted.
    pub kblocks_deleted: u64,
    /// vblocks deleted.
    pub vblocks_deleted: u64,
    /// c1 trees created.
    pub c1_trees: u64,
    /// c1 mlog erases (a clean tree reused).
    pub c1_erases: u64,
    /// Ingests c1 forced (all c1 trees full and none clean).
    pub c1_forced_ingests: u64,
    /// Older versions dropped by merges.
    pub versions_dropped: u64,
    /// Tombstones dropped by leaf kv-compactions.
    pub tombstones_dropped: u64,
}

impl HseCounters {
    /// Bytes the engine wrote (kblocks, vblocks, c1): the sum of its `FileOp::Write` lengths.
    pub fn engine_write_bytes(&self) -> u64 {
        self.kblock_write_bytes + self.vblock_write_bytes + self.c1_write_bytes
    }
    /// Key plus value bytes the clients put.
    pub fn app_write_bytes(&self) -> u64 {
        self.app_key_bytes + self.app_value_bytes
    }
    /// mblocks deleted.
    pub fn mblocks_deleted(&self) -> u64 {
        self.kblocks_deleted + self.vblocks_deleted
    }
    /// Engine bytes written per key+value byte put.
    pub fn app_waf(&self) -> f64 {
        self.engine_write_bytes() as f64 / self.app_write_bytes().max(1) as f64
    }
}
