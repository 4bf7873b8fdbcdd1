//! wafsim-core: the simulated devices and the block-device interface they share. Geometry,
//! page-mapped FTL, placement (conventional, streams, NVMe FDP), garbage collection, zoned
//! namespaces (ZNS) and counters; and the pipeline vocabulary every layer above speaks
//! (`pipeline`: sources of block I/O, file operations and key-value requests, and the engines
//! that expand operations into block I/O). No I/O and no printing, so it stays fast
//! and testable; see docs/architecture.md.

#![warn(missing_docs)]

pub mod blockdev;
pub mod config;
pub mod counters;
pub mod device;
pub mod error;
pub mod fastdiv;
pub mod hugepage;
pub mod image;
pub mod io;
pub mod media_op;
pub mod pipeline;
pub mod plain;
pub mod prefetch;
pub mod rng;
pub mod smr;
pub mod theory;
pub mod units;
mod zoned;
pub mod zns;
pub mod zone;

pub use config::{DeviceConfig, GcPolicy, Geometry, NamespaceConfig, Placement, RuhType, SlcCacheConfig, MAX_GC_AGE_CLASSES};
pub use blockdev::{BlockDevice, MediaDevice};
pub use counters::Counters;
pub use device::Device;
pub use error::DeviceError;
pub use io::{Io, Op, Pid};
pub use rng::Rng;
