//! The host-managed SMR disk through the block-device interface: ZBC zone rules (write pointer,
//! conventional zones, Close of an unwritten open zone -> Empty, the open limit with implicit
//! close, Insufficient Zone Resources), SCSI sense codes, unrestricted reads, and media = host
//! with no erases.

use wafsim_core::blockdev::{BlockDevice, ZoneAction, ZoneTarget};
use wafsim_core::smr::{sense, sense_of, SmrConfig, SmrDevice, ZbcSense};
use wafsim_core::zone::{ReportFilter, ZoneConfig, ZoneState, ZoneStatus, Zones};
use wafsim_core::{DeviceError, Io, Op, Pid};

const MIB: u64 = 1 << 20;
const BS: u64 = 4096;
const ZONE: u64 = 4 * MIB;
/// Zones 0 and 1 conventional.
const CONV: u64 = 2;

fn io(op: Op, offset: u64, len: u64) -> Io {
    Io { op, ns: 0, offset, len: len as u32, pid: Pid::NONE }
}

/// 12 zones of 4 MiB, the first two conventional, at most 3 open.
fn device() -> SmrDevice {
    SmrDevice::new(SmrConfig::small(12, ZONE, CONV as u32, 3)).unwrap()
}

fn start(zone: u64) -> u64 {
    zone * ZONE
}

fn state(dev: &SmrDevice, zone: u64) -> ZoneState {
    dev.zones().state(zone as u32)
}

fn status(r: Result<impl std::fmt::Debug, DeviceError>) -> ZoneStatus {
    match r {
        Err(DeviceError::Zone { status, .. }) => status,
        other => panic!("expected a zone status, got {other:?}"),
    }
}

#[test]
fn sequential_zone_fills_to_full_and_refuses_more() {
    let mut dev = device();
    let z = start(CONV);
    for off in (0..ZONE).step_by(256 << 10) {
        dev.submit(&io(Op::Write, z + off, 256 << 10)).unwrap();
        let expect = if off + (256 << 10) == ZONE { ZoneState::Full } else { ZoneState::ImplicitlyOpened };
        assert_eq!(state(&dev, CONV), expect, "after {off}");
    }
    let d = dev.report_zones(0, z, ReportFilter::All).unwrap()[0];
    assert_eq!((d.state, d.capacity, d.write_pointer), (ZoneState::Full, ZONE / BS, None), "capacity = size");
    let r = dev.submit(&io(Op::Write, z, BS));
    assert_eq!(status(r), ZoneStatus::ZoneIsFull);
    assert_eq!(sense(ZoneStatus::ZoneIsFull), ZbcSense::INVALID_FIELD_IN_CDB, "libzbc: write full zone");
    assert_eq!(dev.zones().open_zones(), 0, "a Full zone holds no open resource");
    dev.check_invariants().unwrap();
}

#[test]
fn write_off_the_write_pointer_is_an_unaligned_write() {
    let mut dev = device();
    let z = start(CONV + 1);
    dev.submit(&io(Op::Write, z, 8 * BS)).unwrap();
    for bad in [z + 4 * BS, z + 9 * BS, z] {
        let err = dev.submit(&io(Op::Write, bad, BS)).unwrap_err();
        assert_eq!(sense_of(&err, Op::Write), Some(ZbcSense::UNALIGNED_WRITE_COMMAND), "at {bad}");
        assert_eq!(ZbcSense::UNALIGNED_WRITE_COMMAND, ZbcSense { key: 0x5, asc: 0x21, ascq: 0x04 });
    }
    // A write at the pointer that crosses the zone end: WRITE BOUNDARY VIOLATION.
    dev.submit(&io(Op::Write, z + 8 * BS, ZONE - 9 * BS)).unwrap();
    let err = dev.submit(&io(Op::Write, z + ZONE - BS, 2 * BS)).unwrap_err();
    assert_eq!(sense_of(&err, Op::Write), Some(ZbcSense { key: 0x5, asc: 0x21, ascq: 0x05 }));
    // Unaligned to the block: Invalid Field.
    assert_eq!(status(dev.submit(&io(Op::Write, z + ZONE - BS, 512))), ZoneStatus::InvalidField);
    assert_eq!(dev.counters().host_write_bytes, ZONE - BS, "refused writes are not counted");
    dev.check_invariants().unwrap();
}

#[test]
fn conventional_zones_take_writes_anywhere_in_place() {
    let mut dev = device();
    // Backwards, overlapping, and across the two conventional zones.
    for off in [3 * MIB, 0, 3 * MIB, ZONE - 2 * BS, 5 * MIB, 100 * BS] {
        dev.submit(&io(Op::Write, off, 4 * BS)).unwrap();
    }
    assert_eq!(state(&dev, 0), ZoneState::NotWritePointer);
    assert_eq!(state(&dev, 1), ZoneState::NotWritePointer);
    assert_eq!(dev.zones().open_zones(), 0, "conventional zones use no open resource");
    // ... but not into the first sequential zone.
    let err = dev.submit(&io(Op::Write, start(CONV) - BS, 2 * BS)).unwrap_err();
    assert_eq!(sense_of(&err, Op::Write), Some(ZbcSense::WRITE_BOUNDARY_VIOLATION));
    // Zone actions on a conventional zone: INVALID FIELD IN CDB.
    let err = dev.zone_mgmt(0, 0, ZoneAction::Reset).unwrap_err();
    assert_eq!(sense_of(&err, Op::Write), Some(ZbcSense::INVALID_FIELD_IN_CDB));
    let c = dev.counters();
    assert_eq!((c.host_units, c.media_units()), (24, 24), "6 writes of 4 blocks, written in place");
    dev.check_invariants().unwrap();
}

#[test]
fn close_of_an_open_zone_at_its_start_makes_it_empty() {
    let mut dev = device();
    let (a, b) = (start(CONV), start(CONV + 1));
    dev.zone_mgmt(0, a, ZoneAction::Open).unwrap();
    assert_eq!(state(&dev, CONV), ZoneState::ExplicitlyOpened);
    let done = dev.zone_mgmt(0, a, ZoneAction::Close).unwrap();
    assert_eq!((state(&dev, CONV), done.zones), (ZoneState::Empty, 1), "ZBC: not Closed");
    assert_eq!(dev.zones().open_zones() + dev.zones().active_zones(), 0);
    // A written zone closes to Closed, as in ZNS.
    dev.submit(&io(Op::Write, b, BS)).unwrap();
    dev.zone_mgmt(0, b, ZoneAction::Close).unwrap();
    assert_eq!(state(&dev, CONV + 1), ZoneState::Closed);
    // Close of an Empty or Full zone and Open of a Full zone succeed without change (ZBC).
    dev.zone_mgmt(0, a, ZoneAction::Close).unwrap();
    dev.zone_mgmt(0, b, ZoneAction::Finish).unwrap();
    assert_eq!(dev.zone_mgmt(0, b, ZoneAction::Close).unwrap().zones, 0);
    assert_eq!(dev.zone_mgmt(0, b, ZoneAction::Open).unwrap().zones, 0);
    assert_eq!(state(&dev, CONV + 1), ZoneState::Full);
    // Close with Select All: the unwritten open zone goes Empty, the written one Closed.
    let c = start(CONV + 2);
    dev.zone_mgmt(0, a, ZoneAction::Open).unwrap();
    dev.submit(&io(Op::Write, c, BS)).unwrap();
    let done = dev.zone_mgmt_target(0, ZoneTarget::All, ZoneAction::Close).unwrap();
    assert_eq!(done.zones, 2);
    assert_eq!((state(&dev, CONV), state(&dev, CONV + 2)), (ZoneState::Empty, ZoneState::Closed));
    dev.check_invariants().unwrap();

    // The ZNS flavour of the same rules is unchanged: Close of an unwritten open zone -> Closed.
    let mut zns = Zones::new(ZoneConfig::new(16, 16, 2)).unwrap();
    zns.open(0).unwrap();
    zns.close(0).unwrap();
    assert_eq!(zns.state(0), ZoneState::Closed);
    assert_eq!(zns.close(16), Err(ZoneStatus::InvalidZoneStateTransition), "ZNS: Close of Empty fails");
}

#[test]
fn open_limit_closes_the_oldest_implicitly_opened_zone() {
    let mut dev = device();
    let seq = |i: u64| start(CONV + i);
    for i in 0..3 {
        dev.submit(&io(Op::Write, seq(i), BS)).unwrap();
    }
    assert_eq!(dev.zones().open_zones(), 3);
    // A fourth zone: zone CONV (the oldest implicitly opened) is closed for it.
    dev.submit(&io(Op::Write, seq(3), BS)).unwrap();
    assert_eq!(state(&dev, CONV), ZoneState::Closed);
    assert_eq!(dev.zones().implicitly_opened().collect::<Vec<_>>(), vec![3, 4, 5]);
    assert_eq!(dev.zones().open_zones(), 3, "max_open holds");
    // Writing the closed zone again reopens it and closes the next oldest.
    dev.submit(&io(Op::Write, seq(0) + BS, BS)).unwrap();
    assert_eq!((state(&dev, CONV), state(&dev, CONV + 1)), (ZoneState::ImplicitlyOpened, ZoneState::Closed));
    // No active limit: many closed zones are fine.
    for i in 4..10 {
        dev.submit(&io(Op::Write, seq(i), BS)).unwrap();
    }
    assert_eq!(dev.report_zones(0, 0, ReportFilter::Closed).unwrap().len(), 7);
    assert_eq!(dev.zone_geometry(0).unwrap().max_active, 0);
    // With every open resource held by explicitly opened zones: INSUFFICIENT ZONE RESOURCES.
    dev.zone_mgmt_target(0, ZoneTarget::All, ZoneAction::Close).unwrap();
    for i in 0..3 {
        dev.zone_mgmt(0, seq(i), ZoneAction::Open).unwrap();
    }
    let err = dev.submit(&io(Op::Write, seq(5) + BS, BS)).unwrap_err();
    assert_eq!(sense_of(&err, Op::Write), Some(ZbcSense { key: 0x7, asc: 0x55, ascq: 0x0E }));
    let err = dev.zone_mgmt(0, seq(6), ZoneAction::Open).unwrap_err();
    assert_eq!(sense_of(&err, Op::Write), Some(ZbcSense::INSUFFICIENT_ZONE_RESOURCES));
    dev.check_invariants().unwrap();
}

#[test]
fn media_bytes_equal_host_bytes_and_finish_writes_nothing() {
    let mut dev = device();
    dev.submit(&io(Op::Write, start(0) + MIB, 64 * BS)).unwrap();
    for z in CONV..12 {
        dev.submit(&io(Op::Write, start(z), (z + 1) * 16 * BS)).unwrap();
    }
    let before = dev.counters().clone();
    let done = dev.zone_mgmt_target(0, ZoneTarget::All, ZoneAction::Finish).unwrap();
    assert_eq!((done.zones, done.bytes), (10, 0), "Finish moves the pointer, pads nothing");
    assert_eq!(dev.counters(), &before);
    let c = dev.counters();
    assert_eq!(c.media_units() * BS, c.host_write_bytes);
    assert_eq!((c.pad_units, c.gc_units, c.erases), (0, 0, 0));
    // Trim is counted and changes nothing.
    dev.submit(&io(Op::Trim, start(CONV), MIB)).unwrap();
    assert_eq!(dev.counters().trim_bytes, MIB);
    assert_eq!(state(&dev, CONV), ZoneState::Full);
    // Zone Append is not a ZBC command.
    let err = dev.submit(&io(Op::Append, start(CONV), BS)).unwrap_err();
    assert!(matches!(err, DeviceError::Zone { status: ZoneStatus::InvalidField, .. }));
    assert_eq!(sense_of(&err, Op::Append), Some(ZbcSense::INVALID_COMMAND_OPERATION_CODE));
    assert_eq!(status(dev.zone_mgmt(0, start(CONV), ZoneAction::Offline)), ZoneStatus::InvalidField);
    dev.check_invariants().unwrap();
}

#[test]
fn reads_beyond_the_write_pointer_are_allowed_and_counted_unwritten() {
    let mut dev = device();
    let z = start(CONV + 3);
    dev.submit(&io(Op::Write, z, 10 * BS)).unwrap();
    // 16 blocks from block 4: 6 written, 10 beyond the write pointer.
    dev.submit(&io(Op::Read, z + 4 * BS, 16 * BS)).unwrap();
    assert_eq!((dev.counters().read_units, dev.counters().unmapped_read_units), (16, 10));
    // Across a zone boundary (unrestricted reads): the end of an Empty zone (8 blocks of fill)
    // and the first 8 written blocks of this one.
    dev.submit(&io(Op::Read, z - 8 * BS, 16 * BS)).unwrap();
    assert_eq!(dev.counters().unmapped_read_units, 10 + 8);
    // After Finish the pointer sits at the zone end, but the skipped part still reads as fill.
    dev.zone_mgmt(0, z, ZoneAction::Finish).unwrap();
    dev.submit(&io(Op::Read, z, ZONE)).unwrap();
    assert_eq!(dev.counters().unmapped_read_units, 18 + ZONE / BS - 10);
    // Conventional zones are not tracked: their reads count as written.
    dev.submit(&io(Op::Read, 0, 2 * ZONE)).unwrap();
    assert_eq!(dev.counters().unmapped_read_units, 18 + ZONE / BS - 10);
    assert_eq!(dev.counters().host_read_bytes, 32 * BS + 3 * ZONE);
    // Past the end: LOGICAL BLOCK ADDRESS OUT OF RANGE.
    let err = dev.submit(&io(Op::Read, 12 * ZONE - BS, 2 * BS)).unwrap_err();
    assert_eq!(sense_of(&err, Op::Read), Some(ZbcSense::LBA_OUT_OF_RANGE));
}

#[test]
fn reset_moves_the_pointer_back_without_erases() {
    let mut dev = device();
    let z = start(CONV + 4);
    for round in 0..3u64 {
        dev.submit(&io(Op::Write, z, ZONE / 2)).unwrap();
        assert_eq!(dev.report_zones(0, z, ReportFilter::All).unwrap()[0].write_pointer, Some((z + ZONE / 2) / BS));
        let done = dev.zone_mgmt(0, z, ZoneAction::Reset).unwrap();
        assert_eq!((done.zones, done.bytes), (1, ZONE / 2), "round {round}: data dropped");
        let d = dev.report_zones(0, z, ReportFilter::All).unwrap()[0];
        assert_eq!((d.state, d.write_pointer), (ZoneState::Empty, Some(z / BS)));
    }
    // Reset with Select All: every written zone back to Empty.
    for zone in CONV..12 {
        dev.submit(&io(Op::Write, start(zone), BS)).unwrap();
    }
    let done = dev.zone_mgmt_target(0, ZoneTarget::All, ZoneAction::Reset).unwrap();
    assert_eq!((done.zones, done.bytes), (10, 10 * BS));
    assert_eq!(dev.report_zones(0, 0, ReportFilter::Empty).unwrap().len(), 10);
    let c = dev.counters();
    assert_eq!(c.erases, 0, "a disk overwrites in place: a reset erases nothing");
    assert_eq!(c.host_write_bytes, 3 * ZONE / 2 + 10 * BS);
    assert_eq!(c.media_units() * BS, c.host_write_bytes);
    dev.check_invariants().unwrap();
}

#[test]
fn the_14tb_preset_geometry() {
    let cfg = SmrConfig::hc620_14tb();
    assert_eq!(cfg.capacity(), 27_344_764_928 * 512, "zonedstorage.io: 27,344,764,928 sectors");
    let dev = SmrDevice::new(cfg).unwrap();
    let g = dev.zone_geometry(0).unwrap();
    assert_eq!(
        (g.zone_size, g.zone_capacity, g.zones, g.max_open, g.max_active),
        (256 * MIB, 256 * MIB, 52_156, 128, 0)
    );
    assert_eq!(dev.block_size(), 4096);
    assert_eq!(dev.report_zones(0, 0, ReportFilter::NotWritePointer).unwrap().len(), 524);
    // ZBC configuration rules: no zone capacity below the zone size.
    let zc = ZoneConfig { zbc: true, ..ZoneConfig::new(16, 12, 4) };
    assert!(zc.validate().is_err());
    assert!(SmrDevice::new(SmrConfig { block_size: 2048, ..SmrConfig::small(4, ZONE, 0, 0) }).is_err());
}
