//! What the zoned devices (ZNS flash, host-managed SMR) share in front of their zone state
//! machine: one namespace addressed in whole blocks, zone statuses as device errors, Report Zones,
//! and the host-side counters.

use crate::counters::Counters;
use crate::error::DeviceError;
use crate::io::Io;
use crate::zone::{ReportFilter, ZoneDescriptor, ZoneStatus, Zones};

/// A zone status refusing a command at byte `offset` of the (only) namespace.
pub(crate) fn zone_err(offset: u64, status: ZoneStatus) -> DeviceError {
    DeviceError::Zone { ns: 0, offset, status }
}

/// `zone_err` at `offset`, as a function of the status (for `map_err`).
pub(crate) fn err_at(offset: u64) -> impl Fn(ZoneStatus) -> DeviceError {
    move |s| zone_err(offset, s)
}

/// The zone a Zone Management Send addresses by byte `offset` of namespace 0: (the LBA, the
/// zone holding it). A misaligned offset (Invalid Field) and an offset past the zones (LBA Out of
/// Range) are refused; whether the LBA starts the zone is the zone machine's check.
pub(crate) fn zone_at(zones: &Zones, offset: u64, shift: u32) -> Result<(u64, u32), DeviceError> {
    if offset & ((1u64 << shift) - 1) != 0 {
        return Err(zone_err(offset, ZoneStatus::InvalidField));
    }
    let zslba = offset >> shift;
    let zone = zones.zone_index(zslba).ok_or_else(|| zone_err(offset, ZoneStatus::LbaOutOfRange))?;
    Ok((zslba, zone))
}

/// Byte range of `io` -> (first block, blocks) for blocks of `1 << shift` bytes; commands
/// address whole blocks (Invalid Field otherwise, as a misaligned LBA range cannot be sent).
pub(crate) fn blocks(io: &Io, shift: u32) -> Result<(u64, u64), DeviceError> {
    if io.ns != 0 {
        return Err(DeviceError::NoSuchNamespace(io.ns));
    }
    let mask = (1u64 << shift) - 1;
    if io.len == 0 || io.offset & mask != 0 || io.len as u64 & mask != 0 {
        return Err(zone_err(io.offset, ZoneStatus::InvalidField));
    }
    Ok((io.offset >> shift, io.len as u64 >> shift))
}

/// Report Zones of namespace `ns` from the zone holding byte `from` on.
pub(crate) fn report(zones: &Zones, ns: u32, from: u64, shift: u32, filter: ReportFilter) -> Result<Vec<ZoneDescriptor>, DeviceError> {
    if ns != 0 {
        return Err(DeviceError::NoSuchNamespace(ns));
    }
    Ok(zones.report(from >> shift, filter).map_err(|s| zone_err(from, s))?.collect())
}

/// Count a host write of `blocks` blocks (`bytes` bytes) on namespace 0.
pub(crate) fn count_write(c: &mut Counters, blocks: u64, bytes: u64) {
    c.host_write_bytes += bytes;
    c.host_units += blocks;
    c.namespaces[0].host_write_bytes += bytes;
    c.namespaces[0].host_units += blocks;
}

/// Count a host read of `blocks` blocks (`bytes` bytes) of which `unwritten` hold no data.
pub(crate) fn count_read(c: &mut Counters, blocks: u64, bytes: u64, unwritten: u64) {
    c.host_read_bytes += bytes;
    c.read_units += blocks;
    c.unmapped_read_units += unwritten;
    c.namespaces[0].host_read_bytes += bytes;
}
