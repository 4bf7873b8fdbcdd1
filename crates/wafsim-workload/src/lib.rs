//! wafsim-workload: where host I/O comes from. Synthetic generators (this crate's `synthetic`),
//! fio job files (`fio`) and block traces (`trace`) all produce [`wafsim_core::Io`] through the
//! [`IoSource`] trait, a batch at a time so the device loop stays free of dynamic dispatch.

pub mod cachegen;
pub mod expand;
pub mod files;
pub mod fio;
pub mod kv;
pub mod source;
pub mod synthetic;
pub mod tpcc;
pub mod trace;
pub mod ycsb;

pub use kv::{KvOp, KvScript, KvSource};
pub use source::{Chain, Interleave, InterleaveMode, IoSource, Script, SourceStats};
pub use ycsb::{InsertOrder, RequestDistribution, ScanLengthDistribution, Ycsb, YcsbConfig, YcsbPhases};
