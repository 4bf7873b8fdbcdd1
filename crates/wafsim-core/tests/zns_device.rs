//! The ZNS device through the block-device interface: device WAF is 1 except Finish padding,
//! Reset erases what was programmed, Zone Append assigns disjoint ranges, and zone statuses reach
//! the caller. The zone rules themselves are tested in tests/zones.rs.

use wafsim_core::blockdev::{BlockDevice, ZoneAction, ZoneTarget};
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::zone::{ReportFilter, ZoneState, ZoneStatus};
use wafsim_core::{Device, DeviceConfig, DeviceError, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement};

const MIB: u64 = 1 << 20;
const BS: u64 = 4096;

fn io(op: Op, offset: u64, len: u64) -> Io {
    Io { op, ns: 0, offset, len: len as u32, pid: Pid::NONE }
}

/// 16 zones of 4 MiB with 3 MiB capacity on 3 erase units each.
fn device(finish_pads: bool) -> ZnsDevice {
    let mut cfg = ZnsConfig::small(16, 4 * MIB, 3 * MIB);
    cfg.erase_units_per_zone = 3;
    cfg.finish_pads = finish_pads;
    ZnsDevice::new(cfg).unwrap()
}

fn status(r: Result<impl std::fmt::Debug, DeviceError>) -> ZoneStatus {
    match r {
        Err(DeviceError::Zone { status, .. }) => status,
        other => panic!("expected a zone status, got {other:?}"),
    }
}

#[test]
fn sequential_zones_have_device_waf_one_and_reset_erases_each_erase_unit() {
    let mut dev = device(true);
    for round in 0..3 {
        for z in 0..16u64 {
            for off in (0..3 * MIB).step_by(256 << 10) {
                dev.submit(&io(Op::Write, z * 4 * MIB + off, 256 << 10)).unwrap();
            }
        }
        let full = dev.report_zones(0, 0, ReportFilter::Full).unwrap();
        assert_eq!(full.len(), 16, "round {round}: every zone Full at its capacity");
        let done = dev.zone_mgmt_target(0, ZoneTarget::All, ZoneAction::Reset).unwrap();
        assert_eq!((done.zones, done.bytes), (16, 16 * 3 * MIB));
        dev.check_invariants().unwrap();
    }
    let c = dev.counters();
    assert_eq!(c.host_write_bytes, 3 * 16 * 3 * MIB);
    assert_eq!(c.media_units() * BS, c.host_write_bytes, "no device GC: media = host");
    assert_eq!(c.erases, 3 * 16 * 3, "three erase units per zone per round");
    assert!(dev.erase_counts().iter().all(|&e| e == 3));
}

#[test]
fn finish_pads_the_rest_of_the_capacity_when_configured() {
    for pads in [true, false] {
        let mut dev = device(pads);
        // 1.25 MiB of 3 MiB written: the first erase unit full, the second partly.
        dev.submit(&io(Op::Write, 0, 1280 << 10)).unwrap();
        let done = dev.zone_mgmt(0, 0, ZoneAction::Finish).unwrap();
        assert_eq!(dev.zones().state(0), ZoneState::Full);
        let padded = 3 * MIB - (1280 << 10);
        assert_eq!(done.bytes, if pads { padded } else { 0 });
        let c = dev.counters();
        assert_eq!(c.pad_units * BS, done.bytes);
        assert_eq!(c.media_units() * BS, (1280 << 10) + done.bytes);
        // Writing a finished zone is refused.
        assert_eq!(status(dev.submit(&io(Op::Write, 1280 << 10, BS))), ZoneStatus::ZoneIsFull);
        dev.zone_mgmt(0, 0, ZoneAction::Reset).unwrap();
        // Padded: all three erase units hold data; unpadded: only the two written ones.
        assert_eq!(dev.counters().erases, if pads { 3 } else { 2 });
        dev.check_invariants().unwrap();
    }
}

#[test]
fn appenders_get_disjoint_contiguous_ranges_until_the_zone_is_full() {
    let mut dev = device(true);
    let zone = 5 * 4 * MIB;
    // Three appenders with different sizes, interleaved, as concurrent jobs would submit.
    let sizes = [BS, 4 * BS, 16 * BS];
    let mut got: Vec<(u64, u64)> = Vec::new();
    'fill: loop {
        for &len in &sizes {
            match dev.submit(&io(Op::Append, zone, len)) {
                Ok(c) => got.push((c.offset, len)),
                Err(DeviceError::Zone { status: ZoneStatus::ZoneBoundaryError, .. }) => continue,
                Err(DeviceError::Zone { status: ZoneStatus::ZoneIsFull, .. }) => break 'fill,
                Err(e) => panic!("{e}"),
            }
        }
    }
    got.sort();
    assert_eq!(got[0].0, zone);
    for w in got.windows(2) {
        assert_eq!(w[0].0 + w[0].1, w[1].0, "ranges are contiguous and disjoint");
    }
    let (last, len) = *got.last().unwrap();
    assert_eq!(last + len, zone + 3 * MIB, "the zone filled exactly to its capacity");
    assert_eq!(dev.zones().state(5), ZoneState::Full);
    // An append must name the zone start.
    assert_eq!(status(dev.submit(&io(Op::Append, 6 * 4 * MIB + BS, BS))), ZoneStatus::InvalidField);
    dev.check_invariants().unwrap();
}

#[test]
fn write_pointer_and_open_limit_statuses_reach_the_caller() {
    let mut cfg = ZnsConfig::small(8, 4 * MIB, 3 * MIB);
    cfg.zones.max_open = 2;
    cfg.zones.max_active = 3;
    let mut dev = ZnsDevice::new(cfg).unwrap();
    assert_eq!(status(dev.submit(&io(Op::Write, BS, BS))), ZoneStatus::ZoneInvalidWrite);
    for z in 0..2 {
        dev.submit(&io(Op::Write, z * 4 * MIB, BS)).unwrap();
    }
    // A third zone opens by closing the oldest implicitly opened one.
    dev.submit(&io(Op::Write, 2 * 4 * MIB, BS)).unwrap();
    assert_eq!(dev.zones().state(0), ZoneState::Closed);
    // Three zones are active (two open, one closed): a fourth cannot become active.
    assert_eq!(status(dev.submit(&io(Op::Write, 3 * 4 * MIB, BS))), ZoneStatus::TooManyActiveZones);
    // At the write pointer but past the zone capacity: a boundary error.
    assert_eq!(status(dev.submit(&io(Op::Write, 4 * MIB + BS, 3 * MIB))), ZoneStatus::ZoneBoundaryError);
    // Misaligned byte ranges are refused, not rounded.
    assert_eq!(status(dev.submit(&io(Op::Write, 4 * MIB + BS, 512))), ZoneStatus::InvalidField);
    let g = dev.zone_geometry(0).unwrap();
    assert_eq!((g.zone_size, g.zone_capacity, g.zones, g.max_open, g.max_active), (4 * MIB, 3 * MIB, 8, 2, 3));
    dev.check_invariants().unwrap();
}

#[test]
fn reads_count_unwritten_blocks_and_flush_is_accepted() {
    let mut dev = device(true);
    dev.submit(&io(Op::Write, 0, 8 * BS)).unwrap();
    dev.submit(&io(Op::Read, 4 * BS, 8 * BS)).unwrap();
    dev.submit(&io(Op::Flush, 0, 0)).unwrap();
    let c = dev.counters();
    assert_eq!((c.read_units, c.unmapped_read_units), (8, 4));
}

#[test]
fn a_conventional_flash_namespace_refuses_zone_commands() {
    let cfg = DeviceConfig {
        logical_bytes: 64 * MIB,
        physical_bytes: 80 * MIB,
        mapping_unit: BS as u32,
        erase_unit_bytes: MIB,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig { name: "a".into(), size_bytes: 64 * MIB, placement_handles: vec![0] }],
        seed: 1,
        slc_cache: None,
    };
    let mut dev = Device::new(cfg).unwrap();
    let r = BlockDevice::submit(&mut dev, &io(Op::Append, 0, BS));
    assert!(matches!(r, Err(DeviceError::NotZoned { ns: 0 })), "{r:?}");
    assert!(matches!(dev.zone_mgmt(0, 0, ZoneAction::Reset), Err(DeviceError::NotZoned { ns: 0 })));
    assert!(dev.report_zones(0, 0, ReportFilter::All).is_err() && dev.zone_geometry(0).is_none());
    assert_eq!(BlockDevice::submit(&mut dev, &io(Op::Write, BS, BS)).unwrap().offset, BS);
}
