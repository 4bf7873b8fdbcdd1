//! wafsim-core: the simulated device. Geometry, page-mapped FTL, placement (conventional,
//! streams, NVMe FDP), garbage collection and counters. No I/O and no printing, so it stays fast
//! and testable; see docs/architecture.md.

pub mod config;
pub mod counters;
pub mod device;
pub mod fastdiv;
pub mod io;
pub mod rng;
pub mod theory;
pub mod units;

pub use config::{DeviceConfig, GcPolicy, Geometry, NamespaceConfig, Placement, RuhType};
pub use counters::Counters;
pub use device::{Device, DeviceError};
pub use io::{Io, Op, Pid};
pub use rng::Rng;
