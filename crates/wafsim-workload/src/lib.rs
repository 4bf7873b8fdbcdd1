//! wafsim-workload: where host I/O comes from. Synthetic generators (this crate's `synthetic`),
//! fio job files (`fio`) and block traces (`trace`) all produce [`wafsim_core::Io`] through the
//! [`IoSource`] trait, a batch at a time so the device loop stays free of dynamic dispatch;
//! request generators (`ycsb`, `tpcc`, `cachegen`) produce key-value requests through
//! [`KvSource`], and `files` file operations. The traits and the operations they carry are
//! wafsim-core's pipeline vocabulary ([`wafsim_core::pipeline`]), re-exported here.

#![warn(missing_docs)]

pub mod cachegen;
pub mod files;
pub mod fio;
pub mod input;
pub mod kvtrace;
pub mod interleave;
pub mod synthetic;
pub mod tpcc;
pub mod trace;
pub mod ycsb;

pub use interleave::{Interleave, InterleaveMode, RateClock};
pub use wafsim_core::pipeline::{expand, kv, source};
pub use wafsim_core::pipeline::{Chain, IoSource, KvOp, KvScript, KvSource, Script, SourceStats};
pub use ycsb::{InsertOrder, RequestDistribution, ScanLengthDistribution, Ycsb, YcsbConfig, YcsbPhases};
