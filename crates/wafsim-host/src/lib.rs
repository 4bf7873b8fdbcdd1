//! wafsim-host: host block layers that remap block I/O onto simulated devices and are block
//! devices themselves, so layers stack (see the data path in docs/architecture.md).
//!
//! Layers: [`dmzoned`], a model of Linux dm-zoned, which exposes one conventional
//! (randomly writable) device on top of host-managed SMR disks and an optional regular cache
//! device. The layer itself ([`DmZoned`]) is pure logic and emits device commands
//! ([`DevIo`]); [`DmZonedDevice`] is an untimed driver that owns the devices, submits those
//! commands at once and runs reclaim synchronously. File systems ([`fs`]): a conventional one
//! over any device and a zone-aware log-structured one with host GC over a zoned namespace,
//! each turning file operations into block I/O. No I/O, no printing.
//!
//! ```
//! use wafsim_core::blockdev::BlockDevice;
//! use wafsim_core::smr::{SmrConfig, SmrDevice};
//! use wafsim_core::{Io, Op, Pid};
//! use wafsim_host::{DmZonedConfig, DmZonedDevice};
//!
//! // One host-managed disk of 64 zones of 1 MiB, the first 8 conventional (single-device mode:
//! // the conventional zones hold the metadata and take the writes first).
//! let disk = SmrDevice::new(SmrConfig::small(64, 1 << 20, 8, 0)).unwrap();
//! let mut dmz: DmZonedDevice<SmrDevice, SmrDevice> =
//!     DmZonedDevice::new(None, vec![disk], &DmZonedConfig::with_reserved(4)).unwrap();
//! assert_eq!(dmz.namespace_bytes(0), 58 << 20); // 64 - 2 metadata - 4 reserved chunks
//! for chunk in 0..20u64 {
//!     let w = Io { op: Op::Write, ns: 0, offset: chunk << 20, len: 1 << 20, pid: Pid::NONE };
//!     dmz.submit(&w).unwrap();
//! }
//! dmz.idle().unwrap(); // reclaim moves every chunk to a sequential zone
//! assert_eq!(dmz.layer().chunk_stats().in_seq, 20);
//! // Each chunk was written twice (conventional zone, then sequential zone), plus metadata.
//! assert!(dmz.layer().waf() > 2.0 && dmz.layer().waf() < 2.1);
//! ```

#![warn(missing_docs)]

pub mod dmzoned;
pub mod fs;
pub mod tiering;
mod view;

pub use dmzoned::{
    ConfigError, DevId, DevIo, DmZoned, DmZonedClock, DmZonedConfig, DmZonedDevice, DmZonedTimed, DmzSample, HostError,
    IoClass, MapStatus, ReclaimCase, ReclaimProgress, StallReason,
};
pub use tiering::{Tier, TierCounters, TierIo, Tiering, TieringConfig, TieringDevice};
