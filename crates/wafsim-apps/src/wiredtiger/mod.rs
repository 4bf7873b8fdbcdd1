//! A WiredTiger-like storage engine (MongoDB's default engine), built from WiredTiger's source:
//! so far its block manager ([`block`]), which decides where in a collection's or index's file
//! each page image is written and when freed space is used again.

pub mod block;

pub use block::{BlockManager, CheckpointWrites, Extents};
