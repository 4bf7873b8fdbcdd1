//! A host-managed SMR hard disk (SCSI ZBC / ATA ZAC), untimed: zones, write pointers and counters.
//! The mechanics (seek, rotation, media rate) are a separate model, `wafsim_time::hdd`.
//!
//! Layout: `zones` zones of `zone_size` bytes; the first `conventional_zones` are conventional
//! (writable anywhere, in place: an SMR disk keeps them as CMR tracks, no translation is
//! modelled), the rest are sequential write required (SWR). Zone capacity = zone size (ZBC has no
//! zone capacity). Rules come from [`crate::zone`] with [`ZoneConfig::zbc`] set: writes in a SWR
//! zone start at its write pointer; at most `max_open` SWR zones are open, a write to one more
//! implicitly closes the oldest implicitly opened zone; there is no active-zone limit.
//!
//! What differs from the ZNS flash device ([`crate::zns`]):
//! - Reads are unrestricted (URSWRZ = 1, as the 15 TB sibling reports on zonedstorage.io):
//!   any LBA, across zone boundaries and beyond a write pointer; blocks at or beyond the write
//!   pointer of a SWR zone return fill data without a media access and are counted in
//!   `unmapped_read_units`. Conventional zones are not tracked: their reads count as written.
//! - Zone Append is not a ZBC command (Linux emulates it above the disk, in `sd_zbc` and later
//!   the block layer, with regular writes at the cached write pointer). The device refuses it with `DeviceError::Zone` and
//!   `ZoneStatus::InvalidField` ([`sense_of`] reports INVALID COMMAND OPERATION CODE).
//! - A write may span several conventional zones (ZBC forbids only crossing into a SWR zone, as
//!   Linux `scsi_debug` checks); crossing from a conventional into a SWR zone is a WRITE BOUNDARY
//!   VIOLATION.
//! - There is no OFFLINE zone action in ZBC: `ZoneAction::Offline` is refused (Invalid Field).
//! - Media: the disk writes what the host writes, where the host writes it, so media bytes =
//!   host bytes. No device GC, no padding: FINISH ZONE only moves the write pointer to the zone
//!   end (`ZoneMgmtDone::bytes` 0). RESET WRITE POINTER only moves the pointer back: a disk
//!   overwrites in place, so `erases` stays 0 (the bytes it reports are the data dropped).
//!
//! Counters: the mapping unit of [`Counters`] is the device block (`block_size`), so
//! `host_units` = blocks written, `read_units` = blocks read; `pad_units`, `gc_units`,
//! `trimmed_units` and `erases` stay 0. A trim (SCSI UNMAP) is range-checked and counted in
//! `trim_bytes` and changes nothing.
//!
//! Errors are NVMe-style [`ZoneStatus`] values inside [`DeviceError::Zone`], like every zoned
//! device here; [`sense`] translates them to the SCSI sense data a ZBC disk returns.

use crate::blockdev::{BlockDevice, Completion, ZoneAction, ZoneGeometry, ZoneMgmtDone, ZoneTarget};
use crate::counters::{Counters, NsCounters};
use crate::error::DeviceError;
use crate::io::{Io, Op};
use crate::zoned::{self, zone_err};
use crate::zone::{ReportFilter, ZoneConfig, ZoneConfigError, ZoneDescriptor, ZoneStatus, Zones};

/// Configuration of a host-managed SMR disk (one zoned logical unit). Sizes in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmrConfig {
    /// Block size in bytes: the addressing and counting unit, 512 or 4096. Default 4096: the
    /// physical block of the 14 TB drive (Linux reports 512-byte logical / 4096-byte physical
    /// blocks for the SAS 512e model); a 512e ZBC disk requires writes in SWR zones to be aligned
    /// to the physical block (UNALIGNED WRITE COMMAND otherwise, libzbc emulation), so the host
    /// writes whole 4 KiB blocks either way.
    pub block_size: u32,
    /// Zone size in bytes (256 MiB on the HGST/WD HM-SMR drives).
    pub zone_size: u64,
    /// Number of zones.
    pub zones: u32,
    /// Leading conventional zones.
    pub conventional_zones: u32,
    /// Maximum number of open sequential write required zones (ZBC VPD page B6h); 0 = no limit.
    pub max_open: u32,
}

impl SmrConfig {
    /// The 14 TB HM-SMR drive of the Ultrastar DC HC620 class (HSH721414): 52,156 zones of
    /// 256 MiB = 14,000,519,643,136 bytes (27,344,764,928 sectors: zonedstorage.io, measured);
    /// 524 conventional zones and 128 open zones are the 15 TB sibling's figures (the 14 TB
    /// report was not found: unverified). Sources in devices/smr-hm-14tb.toml and docs/model.md.
    pub fn hc620_14tb() -> SmrConfig {
        SmrConfig { block_size: 4096, zone_size: 256 << 20, zones: 52_156, conventional_zones: 524, max_open: 128 }
    }

    /// A small disk for tests: `zones` zones of `zone_size` bytes, 4 KiB blocks.
    pub fn small(zones: u32, zone_size: u64, conventional_zones: u32, max_open: u32) -> SmrConfig {
        SmrConfig { block_size: 4096, zone_size, zones, conventional_zones, max_open }
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.zone_size * self.zones as u64
    }

    /// The zone rules in blocks: ZBC flavour, capacity = size, no active limit, implicit close
    /// at the open limit, reads across zones (unrestricted reads).
    pub fn zone_config(&self) -> Result<ZoneConfig, ZoneConfigError> {
        if self.block_size != 512 && self.block_size != 4096 {
            return Err(ZoneConfigError("SMR block size must be 512 or 4096 bytes"));
        }
        if self.zone_size == 0 || !self.zone_size.is_multiple_of(self.block_size as u64) {
            return Err(ZoneConfigError("SMR zone size must be a positive multiple of the block size"));
        }
        let blocks = self.zone_size / self.block_size as u64;
        let cfg = ZoneConfig {
            conventional_zones: self.conventional_zones,
            max_open: self.max_open,
            max_active: 0,
            auto_close: true,
            read_across_zones: true,
            zbc: true,
            ..ZoneConfig::new(blocks, blocks, self.zones)
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Check the configuration.
    pub fn validate(&self) -> Result<(), ZoneConfigError> {
        self.zone_config().map(|_| ())
    }
}

/// SCSI sense data of a failed command: sense key, additional sense code and qualifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZbcSense {
    /// Sense key: the class of failure (ILLEGAL REQUEST or DATA PROTECT here).
    pub key: u8,
    /// Additional sense code: which rule the command broke.
    pub asc: u8,
    /// Additional sense code qualifier: refines `asc`.
    pub ascq: u8,
}

impl ZbcSense {
    /// Sense key ILLEGAL REQUEST.
    pub const KEY_ILLEGAL_REQUEST: u8 = 0x5;
    /// Sense key DATA PROTECT.
    pub const KEY_DATA_PROTECT: u8 = 0x7;

    const fn ir(asc: u8, ascq: u8) -> ZbcSense {
        ZbcSense { key: Self::KEY_ILLEGAL_REQUEST, asc, ascq }
    }
    const fn dp(asc: u8, ascq: u8) -> ZbcSense {
        ZbcSense { key: Self::KEY_DATA_PROTECT, asc, ascq }
    }

    /// 05h 20h/00h INVALID COMMAND OPERATION CODE.
    pub const INVALID_COMMAND_OPERATION_CODE: ZbcSense = Self::ir(0x20, 0x00);
    /// 05h 21h/00h LOGICAL BLOCK ADDRESS OUT OF RANGE.
    pub const LBA_OUT_OF_RANGE: ZbcSense = Self::ir(0x21, 0x00);
    /// 05h 21h/04h UNALIGNED WRITE COMMAND: a write not at the write pointer of its SWR zone.
    pub const UNALIGNED_WRITE_COMMAND: ZbcSense = Self::ir(0x21, 0x04);
    /// 05h 21h/05h WRITE BOUNDARY VIOLATION: a write crossing the end of its SWR zone.
    pub const WRITE_BOUNDARY_VIOLATION: ZbcSense = Self::ir(0x21, 0x05);
    /// 05h 21h/06h ATTEMPT TO READ INVALID DATA (restricted reads only: never returned here).
    pub const ATTEMPT_TO_READ_INVALID_DATA: ZbcSense = Self::ir(0x21, 0x06);
    /// 05h 21h/07h READ BOUNDARY VIOLATION (restricted reads only: never returned here).
    pub const READ_BOUNDARY_VIOLATION: ZbcSense = Self::ir(0x21, 0x07);
    /// 05h 24h/00h INVALID FIELD IN CDB.
    pub const INVALID_FIELD_IN_CDB: ZbcSense = Self::ir(0x24, 0x00);
    /// 05h 25h/00h LOGICAL UNIT NOT SUPPORTED.
    pub const LOGICAL_UNIT_NOT_SUPPORTED: ZbcSense = Self::ir(0x25, 0x00);
    /// 07h 27h/08h ZONE IS READ ONLY.
    pub const ZONE_IS_READ_ONLY: ZbcSense = Self::dp(0x27, 0x08);
    /// 07h 2Ch/0Eh ZONE IS OFFLINE.
    pub const ZONE_IS_OFFLINE: ZbcSense = Self::dp(0x2C, 0x0E);
    /// 07h 55h/0Eh INSUFFICIENT ZONE RESOURCES: an open needs an open resource and every open
    /// zone is explicitly opened.
    pub const INSUFFICIENT_ZONE_RESOURCES: ZbcSense = Self::dp(0x55, 0x0E);
}

/// The SCSI sense a ZBC disk returns for the condition `status` names.
///
/// Codes as libzbc `include/libzbc/zbc.h` (`enum zbc_sk`, `enum zbc_asc_ascq`) and Linux
/// `drivers/scsi/scsi_debug.c` spell them; sense keys as libzbc's test suite expects them
/// (`test/scripts/01_sk_ascq_check`: Insufficient-zone-resources, Zone-is-read-only and
/// Zone-is-offline under Data-protect; the others under Illegal-request). Mapping:
/// - Zone Invalid Write (not at the write pointer) -> UNALIGNED WRITE COMMAND;
/// - Zone Boundary Error (a write past the zone end; reads are unrestricted) -> WRITE BOUNDARY
///   VIOLATION;
/// - Zone Is Full -> INVALID FIELD IN CDB (what libzbc's "WRITE full zone" case 073 expects);
/// - Too Many Open Zones (and Too Many Active Zones, unused without an active limit) ->
///   INSUFFICIENT ZONE RESOURCES;
/// - Zone Is Read Only / Zone Is Offline -> ZONE IS READ ONLY / ZONE IS OFFLINE;
/// - LBA Out of Range -> LOGICAL BLOCK ADDRESS OUT OF RANGE;
/// - Invalid Field, Invalid Zone State Transition, and the ZRWA statuses (unused) -> INVALID
///   FIELD IN CDB (libzbc's emulation answers a zone action in a disallowed condition so).
pub fn sense(status: ZoneStatus) -> ZbcSense {
    match status {
        ZoneStatus::ZoneInvalidWrite => ZbcSense::UNALIGNED_WRITE_COMMAND,
        ZoneStatus::ZoneBoundaryError => ZbcSense::WRITE_BOUNDARY_VIOLATION,
        ZoneStatus::TooManyOpenZones | ZoneStatus::TooManyActiveZones => ZbcSense::INSUFFICIENT_ZONE_RESOURCES,
        ZoneStatus::ZoneIsReadOnly => ZbcSense::ZONE_IS_READ_ONLY,
        ZoneStatus::ZoneIsOffline => ZbcSense::ZONE_IS_OFFLINE,
        ZoneStatus::LbaOutOfRange => ZbcSense::LBA_OUT_OF_RANGE,
        ZoneStatus::ZoneIsFull
        | ZoneStatus::InvalidField
        | ZoneStatus::InvalidZoneStateTransition
        | ZoneStatus::InvalidZoneOperation
        | ZoneStatus::ZrwaResourcesUnavailable => ZbcSense::INVALID_FIELD_IN_CDB,
    }
}

/// The sense for an error [`SmrDevice`] returned for a command of kind `op`: [`sense`] of its
/// zone status, except that a refused Zone Append reports INVALID COMMAND OPERATION CODE (ZBC has
/// no such command) and a missing namespace LOGICAL UNIT NOT SUPPORTED. `None` for errors an SMR
/// device does not return.
pub fn sense_of(err: &DeviceError, op: Op) -> Option<ZbcSense> {
    match err {
        DeviceError::Zone { .. } if op == Op::Append => Some(ZbcSense::INVALID_COMMAND_OPERATION_CODE),
        DeviceError::Zone { status, .. } => Some(sense(*status)),
        DeviceError::NoSuchNamespace(_) => Some(ZbcSense::LOGICAL_UNIT_NOT_SUPPORTED),
        _ => None,
    }
}

/// A host-managed SMR disk.
pub struct SmrDevice {
    cfg: SmrConfig,
    zones: Zones,
    shift: u32,
    /// First block of the first SWR zone (= blocks of the conventional zones).
    conventional_end: u64,
    counters: Counters,
}

impl SmrDevice {
    /// The kind an SMR disk's image names.
    pub const IMAGE_KIND: &'static str = "smr";

    /// Write the disk's state as a drive image ([`crate::image`]): zones and counters.
    pub fn save_image<W: std::io::Write>(&self, out: W) -> std::io::Result<W> {
        let mut w = crate::image::ImageWriter::with_config(out, Self::IMAGE_KIND, &format!("{:?}", self.cfg))?;
        self.zones.save_image(&mut w)?;
        crate::image::write_counters(&mut w, &self.counters)?;
        w.finish()
    }

    /// A disk built from `cfg` and continued from an image saved by [`SmrDevice::save_image`]
    /// from a disk of the same configuration.
    pub fn load_image<R: std::io::Read>(cfg: SmrConfig, input: R) -> Result<SmrDevice, crate::image::ImageError> {
        use crate::image::ImageError;
        let mut d = SmrDevice::new(cfg).map_err(|e| ImageError::Config(e.to_string()))?;
        let mut r = crate::image::ImageReader::with_config(input, Self::IMAGE_KIND, &format!("{:?}", d.cfg))?;
        d.zones.load_image(&mut r)?;
        d.counters = crate::image::read_counters(&mut r)?;
        r.finish()?;
        Ok(d)
    }

    /// An SMR disk with every zone empty, or why `cfg` describes no valid zone layout.
    pub fn new(cfg: SmrConfig) -> Result<SmrDevice, ZoneConfigError> {
        let zc = cfg.zone_config()?;
        let conventional_end = zc.zone_size * zc.conventional_zones as u64;
        Ok(SmrDevice {
            shift: cfg.block_size.trailing_zeros(),
            zones: Zones::new(zc)?,
            conventional_end,
            counters: Counters { namespaces: vec![NsCounters::default()], ..Default::default() },
            cfg,
        })
    }

    /// The configuration the disk was built from.
    pub fn config(&self) -> &SmrConfig {
        &self.cfg
    }

    /// The zone state machine (read-only view: conditions, write pointers, open zones).
    pub fn zones(&self) -> &Zones {
        &self.zones
    }

    /// Zone and accounting invariants (tests): the zone state machine's own, and media = host
    /// with nothing erased, copied or padded.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.zones.check_invariants()?;
        let c = &self.counters;
        if c.erases != 0 || c.gc_units != 0 || c.pad_units != 0 || c.trimmed_units != 0 {
            return Err(format!(
                "an SMR disk never erases, copies, pads or deallocates: erases {} gc {} pad {} trimmed {}",
                c.erases, c.gc_units, c.pad_units, c.trimmed_units
            ));
        }
        if c.media_units() != c.host_units || c.host_units << self.shift != c.host_write_bytes {
            return Err(format!(
                "media units {} / host units {} / host bytes {} disagree",
                c.media_units(),
                c.host_units,
                c.host_write_bytes
            ));
        }
        Ok(())
    }

    /// Byte range -> (first block, blocks), within the namespace (conventional zones bypass the
    /// zone machine, which checks the range for the others).
    fn blocks(&self, io: &Io) -> Result<(u64, u64), DeviceError> {
        let (lba, n) = zoned::blocks(io, self.shift)?;
        if lba.checked_add(n).is_none_or(|end| end > self.zones.total_blocks()) {
            return Err(zone_err(io.offset, ZoneStatus::LbaOutOfRange));
        }
        Ok((lba, n))
    }

    fn write(&mut self, io: &Io) -> Result<(), DeviceError> {
        let (lba, n) = self.blocks(io)?;
        let end = lba + n;
        if lba < self.conventional_end {
            // Conventional zones: in place, anywhere, across conventional zones; not into a SWR
            // zone.
            if end > self.conventional_end {
                return Err(zone_err(io.offset, ZoneStatus::ZoneBoundaryError));
            }
        } else {
            self.zones.write(lba, n).map_err(|s| zone_err(io.offset, s))?;
        }
        zoned::count_write(&mut self.counters, n, io.len as u64);
        Ok(())
    }

    fn read(&mut self, io: &Io) -> Result<(), DeviceError> {
        let (lba, n) = self.blocks(io)?;
        self.zones.read_check(lba, n).map_err(|s| zone_err(io.offset, s))?;
        let unwritten = self.zones.unwritten_blocks(lba, lba + n);
        zoned::count_read(&mut self.counters, n, io.len as u64, unwritten);
        Ok(())
    }

    fn reset_bytes(&self, blocks: u64) -> u64 {
        blocks << self.shift
    }
}

impl BlockDevice for SmrDevice {
    fn submit(&mut self, io: &Io) -> Result<Completion, DeviceError> {
        match io.op {
            Op::Flush => {
                if io.ns != 0 {
                    return Err(DeviceError::NoSuchNamespace(io.ns));
                }
            }
            Op::Write => self.write(io)?,
            Op::Read => self.read(io)?,
            // Zone management carried in the I/O stream (lead engineer: Op::Zone was added to io.rs).
            Op::Zone(action) => {
                self.zone_mgmt(io.ns, io.offset, action)?;
            }
            Op::Append => {
                if io.ns != 0 {
                    return Err(DeviceError::NoSuchNamespace(io.ns));
                }
                return Err(zone_err(io.offset, ZoneStatus::InvalidField));
            }
            Op::Trim => {
                self.blocks(io)?;
                self.counters.trim_bytes += io.len as u64;
                self.counters.namespaces[0].trim_bytes += io.len as u64;
            }
        }
        Ok(Completion { offset: io.offset })
    }

    fn zone_mgmt_target(
        &mut self,
        ns: u32,
        target: ZoneTarget,
        action: ZoneAction,
    ) -> Result<ZoneMgmtDone, DeviceError> {
        if ns != 0 {
            return Err(DeviceError::NoSuchNamespace(ns));
        }
        let shift = self.shift;
        match target {
            ZoneTarget::Zone(offset) => {
                let (zslba, zone) = zoned::zone_at(&self.zones, offset, shift)?;
                let before = self.zones.state(zone);
                let bytes = match action {
                    ZoneAction::Open => self.zones.open(zslba).map(|_| 0).map_err(zoned::err_at(offset))?,
                    ZoneAction::Close => self.zones.close(zslba).map(|_| 0).map_err(zoned::err_at(offset))?,
                    // FINISH ZONE: the write pointer moves to the zone end; nothing is written.
                    ZoneAction::Finish => self.zones.finish(zslba).map(|_| 0).map_err(zoned::err_at(offset))?,
                    ZoneAction::Reset => {
                        let r = self.zones.reset(zslba).map_err(zoned::err_at(offset))?;
                        self.reset_bytes(r.written)
                    }
                    ZoneAction::Offline => return Err(zone_err(offset, ZoneStatus::InvalidField)),
                };
                Ok(ZoneMgmtDone { zones: (self.zones.state(zone) != before) as u32, bytes })
            }
            ZoneTarget::All => match action {
                ZoneAction::Open => {
                    let n = self.zones.open_all().map_err(zoned::err_at(0))?;
                    Ok(ZoneMgmtDone { zones: n, bytes: 0 })
                }
                ZoneAction::Close => Ok(ZoneMgmtDone { zones: self.zones.close_all(), bytes: 0 }),
                ZoneAction::Finish => Ok(ZoneMgmtDone { zones: self.zones.finish_all().zones, bytes: 0 }),
                ZoneAction::Reset => {
                    let r = self.zones.reset_all();
                    Ok(ZoneMgmtDone { zones: r.zones, bytes: self.reset_bytes(r.blocks) })
                }
                ZoneAction::Offline => Err(zone_err(0, ZoneStatus::InvalidField)),
            },
        }
    }

    fn report_zones(&self, ns: u32, from: u64, filter: ReportFilter) -> Result<Vec<ZoneDescriptor>, DeviceError> {
        zoned::report(&self.zones, ns, from, self.shift, filter)
    }

    fn zone_geometry(&self, ns: u32) -> Option<ZoneGeometry> {
        (ns == 0).then_some(ZoneGeometry {
            zone_size: self.cfg.zone_size,
            zone_capacity: self.cfg.zone_size,
            zones: self.cfg.zones,
            conventional_zones: self.cfg.conventional_zones,
            max_open: self.cfg.max_open,
            max_active: 0,
        })
    }

    fn namespace_count(&self) -> u32 {
        1
    }

    fn namespace_bytes(&self, ns: u32) -> u64 {
        if ns == 0 {
            self.cfg.capacity()
        } else {
            0
        }
    }

    fn block_size(&self) -> u32 {
        self.cfg.block_size
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}

crate::image::saves_image_by_config!(SmrDevice);
