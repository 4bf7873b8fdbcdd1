//! wafsim-apps: application models that consume key-value requests
//! ([`wafsim_core::pipeline::KvOp`] through a [`wafsim_core::pipeline::KvSource`] the caller
//! builds, e.g. wafsim-workload's YCSB) and produce the block I/O the application would send to
//! its device, so an application over a device is one more [`wafsim_core::pipeline::IoSource`].
//!
//! - [`lskv`]: a log-structured key-value store in the manner of Aerospike's storage engine
//!   (write blocks, in-memory index, defragmentation below a low-water mark).
//! - [`hse`]: an HSE 1.x-like engine (c0, a cN tree of kvsets in mblocks, media classes, c1).
//! - [`wiredtiger`]: the block manager of a WiredTiger-like engine (MongoDB's default).
#![warn(missing_docs)]

pub mod flashcache;
pub mod hse;
mod keymap;
pub mod lskv;
pub mod lsm;
pub mod wiredtiger;

pub use flashcache::{CacheSize, FlashCache, FlashCacheConfig, FlashCacheCounters, FlashCacheError, FlashCacheReport, FlashCacheSource, RegionEviction};

pub use hse::{Hse, HseConfig, HseCounters, HseFiles, MclassPolicy};
pub use lsm::{CompactionConfig, FilePick, LeveledConfig, Lsm, LsmConfig, LsmCounters, LsmError, LsmFiles, LsmReport, SizeTieredConfig, WriteControllerConfig, CAPACITY_GROUP_BIT};
pub use lskv::{LsKv, LsKvConfig, LsKvCounters, LsKvError, LsKvReport, LsKvSource, RecordLoc, HEADER_BYTES};
