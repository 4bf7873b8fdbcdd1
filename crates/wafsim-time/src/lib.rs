//! wafsim-time: the optional timing model. The FTL (wafsim-core) decides where data goes and
//! what GC does; this crate charges the resulting NAND operations to dies and channels, host
//! transfers to the host link, buffers writes, and runs fio-like closed-loop jobs in simulated
//! time. See docs/model.md, "Timing model".

pub mod config;
pub mod engine;
pub mod hdd;
pub mod hist;
pub mod media;

pub use config::{NandTiming, TimingConfig};
pub use engine::{run, JobResult, JobSpec, TimedRun, Timeline};
