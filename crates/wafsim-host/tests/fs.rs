//! File systems over real simulated devices: a synthetic file workload through the conventional
//! file system onto the flash FTL, and through the zone-aware one onto a ZNS drive. The devices
//! check every command (a zone rule broken fails the run) and count what reaches the media.

use wafsim_core::blockdev::BlockDevice;
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::{Device, DeviceConfig, GcPolicy, NamespaceConfig, Placement};
use wafsim_core::pipeline::IoSource;
use wafsim_host::fs::{ConvFs, ConvFsConfig, FsSource, GcVictim, ZonedFs, ZonedFsConfig};
use wafsim_workload::files::{DeleteOrder, FileGroup, SyntheticFiles};

mod common;
use common::{drive, groups, MIB};

fn flash(bytes: u64, op: f64) -> Device {
    let mu = 4096u32;
    let eu = 2 * MIB;
    let logical = bytes;
    let physical = ((logical as f64 * (1.0 + op)) as u64).div_ceil(eu) * eu;
    Device::new(DeviceConfig {
        logical_bytes: logical,
        physical_bytes: physical,
        mapping_unit: mu,
        erase_unit_bytes: eu,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig { name: "fs".into(), size_bytes: logical, placement_handles: vec![0] }],
        seed: 1,
        slc_cache: None,
    })
    .unwrap()
}

/// Discard lets the SSD drop deleted files; without it the FTL copies dead data until the file
/// system reuses the space, so device WAF is higher. The file system itself writes what the
/// application writes (update in place): its WAF is 1.
#[test]
fn conventional_fs_on_flash_discard_lowers_device_waf() {
    let waf = |discard: bool| {
        let mut dev = flash(512 * MIB, 0.07);
        let files = SyntheticFiles::new(groups(DeleteOrder::Random), 4096 * MIB, 3).unwrap();
        let fs = ConvFs::new(ConvFsConfig { discard, chunk_bytes: MIB, group_spread_bytes: 64 * MIB, ..ConvFsConfig::new(0, 512 * MIB) }).unwrap();
        let mut src = FsSource::new(files, fs);
        drive(&mut src, &mut dev);
        let r = src.figures().expect("a file system reports its figures");
        assert_eq!(r.app_write_bytes, r.dev_write_bytes, "update in place: file system WAF 1");
        let c = dev.counters();
        assert_eq!(c.host_write_bytes, r.dev_write_bytes);
        let w = c.media_units() as f64 * 4096.0 / c.host_write_bytes as f64;
        eprintln!("conventional fs, discard {discard}: device WAF {w:.3}, trimmed {} MiB", c.trim_bytes / MIB);
        w
    };
    let (on, off) = (waf(true), waf(false));
    assert!(on < off * 0.95, "discard on {on:.3} vs off {off:.3}");
    assert!(on >= 1.0);
}

fn zns(zones: u32, zone: u64, cap: u64, max_open: u32) -> ZnsDevice {
    let mut c = ZnsConfig::small(zones, zone, cap);
    c.zones.max_open = max_open;
    c.zones.max_active = max_open;
    ZnsDevice::new(c).unwrap()
}

/// On ZNS the device copies nothing (device WAF 1); the file system's GC copies are all the
/// write amplification, and the device counts exactly the bytes the file system sent. Files of
/// the long-lived group are also updated in place (a database file), so its zones die partly
/// and GC must copy.
#[test]
fn zoned_fs_on_zns_moves_gc_to_the_host() {
    let run = |victim: GcVictim| {
        let (zones, zone, cap) = (96u32, 8 * MIB, 6 * MIB);
        let mut dev = zns(zones, zone, cap, 8);
        let mut g = groups(DeleteOrder::Random);
        g[2].overwrite = 0.5;
        g[2].live_files = 14;
        let files = SyntheticFiles::new(g, 4096 * MIB, 3).unwrap();
        let fs = ZonedFs::new(ZonedFsConfig { victim, ..ZonedFsConfig::new(0, zones, zone, cap, 8) }).unwrap();
        let mut src = FsSource::new(files, fs);
        drive(&mut src, &mut dev);
        let r = src.figures().expect("a file system reports its figures");
        let c = dev.counters();
        assert_eq!(c.host_write_bytes, r.dev_write_bytes, "the device writes what the file system sends");
        assert_eq!((c.gc_units, c.pad_units), (0, 0), "no device GC, no finish padding");
        let fs_waf = r.dev_write_bytes as f64 / r.app_write_bytes as f64;
        eprintln!("zoned fs {victim:?}: file system WAF {fs_waf:.3}, zone resets {}", c.erases);
        assert!(c.erases > 0, "zones were reset");
        // The file system's live data per zone against the device's zone report: nothing live
        // in an empty zone, never more live than written up to the write pointer.
        let live = r.zone_live_bytes.expect("a zone-aware file system reports live data per zone");
        let zones_now = dev.report_zones(0, 0, wafsim_core::zone::ReportFilter::All).unwrap();
        assert_eq!(live.len(), zones_now.len());
        for z in &zones_now {
            let written = match z.write_pointer {
                Some(wp) => (wp - z.start) * 4096,
                None => z.capacity * 4096,
            };
            assert!(live[z.zone as usize] <= written, "zone {}: {} live, {written} written", z.zone, live[z.zone as usize]);
        }
        assert!(live.iter().sum::<u64>() > 0);
        fs_waf
    };
    let greedy = run(GcVictim::Greedy);
    let cb = run(GcVictim::CostBenefit);
    assert!(greedy > 1.01 && cb > 1.01, "GC copied: greedy {greedy:.3}, cost-benefit {cb:.3}");
    assert!(greedy < 3.0 && cb < 3.0, "greedy {greedy:.3}, cost-benefit {cb:.3}");
}

/// With one stream (no grouping) the same files mix in every zone and GC copies more: the
/// grouping is what makes zones die whole.
#[test]
fn zoned_fs_grouping_separates_lifetimes() {
    let run = |streams: u32| {
        let (zones, zone, cap) = (96u32, 8 * MIB, 6 * MIB);
        let mut dev = zns(zones, zone, cap, 8);
        let files = SyntheticFiles::new(groups(DeleteOrder::Oldest), 4096 * MIB, 5).unwrap();
        let fs = ZonedFs::new(ZonedFsConfig { streams, ..ZonedFsConfig::new(0, zones, zone, cap, 8) }).unwrap();
        let mut src = FsSource::new(files, fs);
        drive(&mut src, &mut dev);
        let r = src.figures().expect("a file system reports its figures");
        r.dev_write_bytes as f64 / r.app_write_bytes as f64
    };
    let (mixed, grouped) = (run(1), run(3));
    eprintln!("zoned fs: one stream WAF {mixed:.3}, a stream per group {grouped:.3}");
    assert!(grouped < mixed, "grouped {grouped:.3} vs mixed {mixed:.3}");
}


/// Zones whose capacity is their size (SMR, or ZNS without a smaller capacity) put the last
/// block of a zone right before the first of the next: a write of the file system that fills a
/// zone and goes on in the next one must be two commands (one command is a Zone Boundary Error).
#[test]
fn zoned_fs_writes_never_cross_a_zone_boundary() {
    use wafsim_core::smr::{SmrConfig, SmrDevice};
    let (zones, zone) = (64u32, 16 * MIB);
    let mut dev = SmrDevice::new(SmrConfig::small(zones, zone, 0, 8)).unwrap();
    let g = FileGroup { file_bytes: (48 * MIB, 96 * MIB), live_files: 4, write_bytes: 3 << 20, ..FileGroup::default() };
    let files = SyntheticFiles::new(vec![g], 1024 * MIB, 1).unwrap();
    let fs = ZonedFs::new(ZonedFsConfig::new(0, zones, zone, zone, 8)).unwrap();
    let mut src = FsSource::new(files, fs);
    drive(&mut src, &mut dev);
    let r = src.figures().expect("a file system reports its figures");
    assert_eq!(dev.counters().host_write_bytes, r.dev_write_bytes);
}

/// An update larger than the free space GC can make is refused (no space), never a panic.
#[test]
fn zoned_fs_refuses_an_update_it_has_no_room_for() {
    use wafsim_core::pipeline::FileOp;
    let b = 4096u64;
    let mut c = ZonedFsConfig::new(0, 16, 16 * b, 12 * b, 2);
    c.gc_low_zones = 2;
    c.gc_high_zones = 3;
    let mut fs = ZonedFs::new(c).unwrap();
    let mut out = Vec::new();
    for f in [1, 2] {
        fs.apply(&FileOp::Create { file: f, group: 0 }, &mut out).unwrap();
    }
    for k in 0..72u64 {
        for f in [1, 2] {
            fs.apply(&FileOp::Write { file: f, offset: k * b, len: b as u32 }, &mut out).unwrap();
        }
    }
    let r = fs.apply(&FileOp::Write { file: 1, offset: 0, len: 72 * b as u32 }, &mut out);
    assert!(matches!(r, Err(wafsim_host::fs::FsError::NoSpace { .. })), "{r:?}");
}
