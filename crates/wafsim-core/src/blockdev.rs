//! The block-device interface: what every device implements and every host layer consumes (and,
//! being a device to the layer above, implements too), so layers stack.
//!
//! One call is one command: dispatch is per command (or per batch), never per mapping unit. A
//! command addresses a namespace by index and bytes by offset and length ([`Io`]); zoned
//! namespaces add Zone Append (an [`Op::Append`](crate::Op::Append) whose completion carries
//! the assigned offset), zone management ([`ZoneAction`]) and Report Zones.
//!
//! ```
//! use wafsim_core::blockdev::{BlockDevice, ZoneAction};
//! use wafsim_core::zns::{ZnsConfig, ZnsDevice};
//! use wafsim_core::{Io, Op, Pid};
//!
//! // A small ZNS drive: 8 zones of 1 MiB (capacity 768 KiB) in 4 KiB blocks.
//! let mut dev = ZnsDevice::new(ZnsConfig::small(8, 1 << 20, 768 << 10)).unwrap();
//! let append = Io { op: Op::Append, ns: 0, offset: 1 << 20, len: 8192, pid: Pid::NONE };
//! assert_eq!(dev.submit(&append).unwrap().offset, 1 << 20);
//! assert_eq!(dev.submit(&append).unwrap().offset, (1 << 20) + 8192);
//! dev.zone_mgmt(0, 1 << 20, ZoneAction::Reset).unwrap();
//! assert_eq!(dev.counters().erases, 1);
//! ```

use crate::counters::Counters;
use crate::error::DeviceError;
use crate::io::Io;
use crate::media_op::MediaOp;
use crate::zone::{ReportFilter, ZoneDescriptor};

// A zone action travels inside a command (`Op::Zone`), so it is defined with the command; it is
// part of this interface too (`zone_mgmt`), and named here.
pub use crate::io::ZoneAction;

/// What a completed command reports back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Byte offset the data went to: the command's own offset, or for a Zone Append the
    /// assigned one (the ALBA in bytes).
    pub offset: u64,
}

/// Which zones a zone action applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneTarget {
    /// The zone starting at this byte offset.
    Zone(u64),
    /// Select All: every zone the action applies to in its state (ZNS 1.1 3.4.3).
    All,
}

/// What a zone action did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZoneMgmtDone {
    /// Zones that changed state.
    pub zones: u32,
    /// Finish: bytes the device padded to fill the zone's capacity; Reset: bytes of data
    /// dropped; otherwise 0.
    pub bytes: u64,
}

/// Zone geometry of a zoned namespace, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneGeometry {
    /// Bytes from one zone's start to the next one's (the address stride).
    pub zone_size: u64,
    /// Writable bytes of each zone (at most `zone_size`; the rest is never addressable).
    pub zone_capacity: u64,
    /// Zones in the namespace, conventional ones included.
    pub zones: u32,
    /// Leading conventional zones.
    pub conventional_zones: u32,
    /// 0 = no limit.
    pub max_open: u32,
    /// 0 = no limit.
    pub max_active: u32,
}

/// A zoned namespace's zones at one moment, as a zone report prints them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ZoneReport {
    /// Logical block size in bytes (the unit of every LBA in `zones`).
    pub block_size: u32,
    /// Zone size in blocks (ZSZE; a zone's `len`).
    pub zone_size: u64,
    /// One descriptor per zone reported, in LBA order.
    pub zones: Vec<ZoneDescriptor>,
}

/// A block device: flash with a device FTL (conventional, streams, FDP), ZNS flash, an SMR disk,
/// or a host layer over other block devices.
pub trait BlockDevice {
    /// Execute one command.
    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError>;

    /// Execute commands in order, stopping at the first error.
    fn submit_batch(&mut self, ios: &[Io]) -> Result<(), DeviceError> {
        for io in ios {
            self.submit(io)?;
        }
        Ok(())
    }

    /// Zone Management Send on namespace `ns`.
    fn zone_mgmt_target(&mut self, ns: u32, target: ZoneTarget, action: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        let _ = (target, action);
        Err(DeviceError::NotZoned { ns })
    }

    /// Zone Management Send on the zone of namespace `ns` that starts at byte `offset`.
    fn zone_mgmt(&mut self, ns: u32, offset: u64, action: ZoneAction) -> Result<ZoneMgmtDone, DeviceError> {
        self.zone_mgmt_target(ns, ZoneTarget::Zone(offset), action)
    }

    /// Report Zones of namespace `ns` from the zone holding byte `from` on, filtered; empty for
    /// a namespace that is not zoned.
    fn report_zones(&self, ns: u32, from: u64, filter: ReportFilter) -> Result<Vec<ZoneDescriptor>, DeviceError> {
        let _ = (from, filter);
        Err(DeviceError::NotZoned { ns })
    }

    /// Zone geometry of namespace `ns`, `None` when it is not zoned.
    fn zone_geometry(&self, ns: u32) -> Option<ZoneGeometry> {
        let _ = ns;
        None
    }

    /// Namespaces the device exposes; a command's `ns` is an index below this.
    fn namespace_count(&self) -> u32;

    /// Namespace size in bytes.
    fn namespace_bytes(&self, ns: u32) -> u64;

    /// Logical block size in bytes (the smallest unit a command addresses without a
    /// read-modify-write): the mapping unit for flash.
    fn block_size(&self) -> u32;

    /// The device's counters (host and media traffic, erases).
    fn counters(&self) -> &Counters;
}

/// What the timing model (wafsim-time) needs from a flash device besides commands: the NAND
/// operations the device causes and where its data lies on the dies. Implemented by the flash
/// FTL ([`crate::Device`]) and by [`crate::zns::ZnsDevice`]; the timing engine is generic over it
/// (monomorphized, so the flash path costs what it did before).
pub trait MediaDevice: BlockDevice {
    /// Dies are split into `groups` groups of `dies_per_rg` (the reclaim groups of the timing
    /// configuration). The flash FTL has its own reclaim groups and ignores this; a ZNS device
    /// spreads its zones over the groups (zone z on group z % groups). Called before
    /// [`MediaDevice::enable_media_log`].
    fn set_die_groups(&mut self, groups: u32) {
        let _ = groups;
    }

    /// Log media operations from now on. `units_per_program`: blocks (mapping units) per program
    /// unit of one die; `units_per_page`: blocks per page (the read unit); `dies_per_rg`: dies
    /// each erase unit spans.
    fn enable_media_log(&mut self, units_per_program: u32, units_per_page: u32, dies_per_rg: u32);

    /// Take the media operations logged since the last call.
    fn drain_media_ops(&mut self, out: &mut Vec<MediaOp>);

    /// Physical unit holding byte `offset` of namespace `ns`, `None` if unwritten (a read of it
    /// costs no NAND time).
    fn lookup(&self, ns: u32, offset: u64) -> Option<u32>;

    /// Die holding physical unit `ppa` and its position (units) inside its program unit.
    fn media_pos(&self, ppa: u32) -> (u32, u32);

    /// Background GC when the host is idle (see [`crate::Device::background_gc`]); returns the
    /// victims collected. A device without GC collects none.
    fn background_gc(&mut self, target_free: u32, max_victims: u32) -> Result<u32, DeviceError> {
        let _ = (target_free, max_victims);
        Ok(0)
    }

    /// Whether a pSLC write cache holds full SLC erase units to fold (cheap: the timing model
    /// asks at every idle gap).
    fn slc_fold_pending(&self) -> bool {
        false
    }

    /// Idle-time folding of a pSLC write cache (see [`crate::Device::background_fold`]);
    /// returns the SLC erase units folded. A device without a cache folds none.
    fn background_fold(&mut self, max_units: u32) -> Result<u32, DeviceError> {
        let _ = max_units;
        Ok(0)
    }

    /// Hint that `io` will be submitted soon.
    fn prefetch_io(&self, io: &Io) {
        let _ = io;
    }
}
