//! A WiredTiger-like storage engine (MongoDB's default engine), built from WiredTiger's source:
//! its block manager ([`block`]), which decides where in a collection's or index's file each
//! page image is written and when freed space is used again, and the engine ([`engine`]): a
//! collection and its `_id` index as B-trees written copy-on-write at checkpoints and by
//! eviction, and the journal.

pub mod block;
pub mod engine;
pub mod layout;
pub mod source;

pub use block::{BlockManager, CheckpointWrites, Extents, Merged};
pub use engine::{WiredTiger, WtConfig, WtCounters};
pub use layout::{CollectionDef, IndexDef, IndexOrder, Layout};
pub use source::WtFiles;
