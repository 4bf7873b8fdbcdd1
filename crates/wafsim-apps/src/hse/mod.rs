//! An HSE 1.x-like key-value engine (Micron's Heterogeneous-memory Storage Engine, r1.9.0, as
//! MongoDB's storage engine through hse-mongo) writing mpool objects as files: c0 in memory,
//! ingested as one kvset into the root of a cN tree (fanout 16) whose nodes hold kvsets newest
//! first; kvsets are 32 MiB kblocks (keys) and vblocks (values), each an mblock file; the sp3
//! scheduler spills, k-compacts (keys only, vblocks kept and shared) and kv-compacts; a
//! media-class policy places each mblock on staging or capacity by its destination node's role
//! and kind at allocation; c1 (the 1.x durability log) is a set of mlogs on staging when there is
//! one, erased and reused once ingests made them redundant.
//!
//! - [`config`]: [`HseConfig`] with HSE 1.9's defaults and their sources;
//! - [`policy`]: the media-class table and the `Create.group` encoding;
//! - [`kvset`]: kvsets, the mblock builder, mbsets, merging;
//! - [`tree`]: the engine ([`Hse`]): c0, c1, the cN tree, counters;
//! - [`sched`]: the sp3 rules and the three jobs;
//! - [`source`]: [`HseFiles`], requests through the engine as a file source.
//!
//! File operations (each mblock and mlog one file; see [`policy`] for the group bits):
//! - an mblock is `Create { group }` (group = kind code `2 x role + kind`, the capacity bit
//!   [`HSE_CAPACITY_BIT`] (bit 31, the LSM store's), [`HSE_SPARE_BIT`] on compaction and spill
//!   outputs), appends of at most `write_chunk_bytes` (1 MiB) in whole pages up to
//!   `mblock_bytes` (the last mblock of a kvset partial), `Close`, and later `Delete`;
//! - a c1 mlog is a `Create` with [`HSE_MLOG_BIT`] and its zone count in the group, appends in
//!   32 KiB strips, and `Truncate { size: 0 }` when its tree is reused (mlog erase); never
//!   deleted;
//! - deletes are immediate at the kvset's destruction (mpool discards asynchronously; an
//!   assumption), kblocks when their kvset goes, vblocks when the last kvset referencing their
//!   mbset goes.
//!
//! Assumptions and simplifications (each also where it applies): keys are hse-mongo's 12-byte
//! record keys (the request's u64 key stands for the RecordId) and values the whole BSON
//! document (no compression), as in hse-mongo's MainKvs; indexes, the oplog and the other five
//! KVSs are not modelled; kblock bytes are `key + kblock_entry_overhead_bytes` (16 B: wbtree
//! metadata, bloom, index, assumed) per key plus `kblock_fixed_bytes` (8 KiB, assumed) per
//! kblock; the unique-key count per node is exact (a per-node key -> kvset count map) where HSE
//! uses HyperLogLog; jobs run one at a time and finish at once; c0 is ingested when its put
//! bytes reach `c0_bytes` (HSE samples and also ingests on a timer); the CNDB and mpool
//! metadata logs are not written.

pub mod config;
pub mod counters;
pub mod kvset;
pub mod policy;
pub mod sched;
pub mod source;
pub mod tree;

pub use config::HseConfig;
pub use policy::{group_class, group_kind, mblock_group, mlog_group, BlockKind, MclassPolicy, MediaClass, Role, HSE_CAPACITY_BIT, HSE_KIND_C1, HSE_KIND_MASK, HSE_MLOG_BIT, HSE_MLOG_ZONES_MASK, HSE_MLOG_ZONES_SHIFT, HSE_SPARE_BIT};
pub use source::{HseEngine, HseFiles};
pub use tree::{Hse, HseCounters, JobKind, JobRecord, NodeInfo};
