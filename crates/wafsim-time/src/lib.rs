//! wafsim-time: the optional timing model. The devices (wafsim-core) decide where data goes and
//! what GC does; this crate decides when: a flash model charges the resulting NAND operations to
//! dies and channels, host transfers to the host link and buffers writes; a disk model seeks,
//! rotates and caches writes; the engine runs fio-like closed-loop jobs against either in
//! simulated time. See docs/model.md, "Timing model".

#![warn(missing_docs)]

pub mod config;
pub mod disk;
pub mod engine;
pub mod flash;
pub mod hdd;
pub mod hist;
pub mod media;
pub mod plain;
pub mod timed;

pub use config::{NandTiming, TimingConfig};
pub use disk::{DiskTimed, DiskTimeline};
pub use engine::{run, run_on, run_on_with, run_on_watched, run_on_watched_if, run_with, EngineOptions, Interval, JobResult, JobSpec, NoWatch, RunError, Sources, Stop, TimedRun, Watch};
pub use flash::{FlashTimed, Timeline};
pub use plain::{PlainTimed, PlainTimeline, PlainTiming};
pub use timed::{Cmd, Completions, TimedDevice};
