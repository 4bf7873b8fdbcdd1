//! Drive images of zoned drives (ZNS flash, host-managed SMR): a drive saved and loaded again
//! continues bit-identically to one that never stopped; a damaged image is refused.

use wafsim_core::blockdev::{BlockDevice, ZoneAction};
use wafsim_core::smr::{SmrConfig, SmrDevice};
use wafsim_core::zns::{ZnsConfig, ZnsDevice};
use wafsim_core::zone::ReportFilter;
use wafsim_core::{Io, Op, Pid, Rng};

const MIB: u64 = 1 << 20;
const BS: u64 = 4096;

/// One random zone command on `dev` (writes at the write pointer, appends, resets, finishes,
/// opens, closes, reads), chosen by `rng`; errors are part of the behaviour compared.
fn step(dev: &mut dyn BlockDevice, rng: &mut Rng, zone_bytes: u64, zones: u64) -> String {
    let z = rng.below(zones);
    let start = z * zone_bytes;
    // Report Zones counts in logical blocks.
    let wp = dev.report_zones(0, start, ReportFilter::All).unwrap()[0].write_pointer.map_or(start, |lba| lba * BS);
    let len = (1 + rng.below(8)) * BS;
    let r = match rng.below(100) {
        0..=59 => dev.submit(&Io { op: Op::Write, ns: 0, offset: wp, len: len as u32, pid: Pid::NONE }).map(|_| ()),
        60..=69 => dev.submit(&Io { op: Op::Append, ns: 0, offset: start, len: len as u32, pid: Pid::NONE }).map(|_| ()),
        70..=79 => dev.zone_mgmt(0, start, ZoneAction::Reset).map(|_| ()),
        80..=83 => dev.zone_mgmt(0, start, ZoneAction::Finish).map(|_| ()),
        84..=86 => dev.zone_mgmt(0, start, ZoneAction::Open).map(|_| ()),
        87..=94 => dev.zone_mgmt(0, start, ZoneAction::Close).map(|_| ()),
        _ => dev.submit(&Io { op: Op::Read, ns: 0, offset: start, len: len as u32, pid: Pid::NONE }).map(|_| ()),
    };
    format!("{r:?}")
}

/// Run `before` steps, save and load, then `after` steps on both; everything must match.
fn continues<D: BlockDevice>(mut dev: D, save: impl Fn(&D) -> Vec<u8>, load: impl Fn(&[u8]) -> D, zone_bytes: u64, zones: u64, seed: u64) {
    let mut rng = Rng::new(seed);
    let mut ok = 0;
    for _ in 0..3000 {
        let r = step(&mut dev, &mut rng, zone_bytes, zones);
        ok += (r == "Ok(())") as u32;
    }
    assert!(ok > 1200 && dev.counters().host_write_bytes > 2 * zone_bytes, "the script writes: {ok} commands succeeded, {} bytes written", dev.counters().host_write_bytes);
    let image = save(&dev);
    let mut back = load(&image);
    assert_eq!(save(&back), image, "saving the loaded drive gives the same image");
    let mut rng_b = rng.clone();
    for i in 0..3000 {
        let a = step(&mut dev, &mut rng, zone_bytes, zones);
        let b = step(&mut back, &mut rng_b, zone_bytes, zones);
        assert_eq!(a, b, "command {i} after the load");
    }
    assert_eq!(back.counters(), dev.counters());
    assert_eq!(back.report_zones(0, 0, ReportFilter::All).unwrap(), dev.report_zones(0, 0, ReportFilter::All).unwrap());
}

fn zns_config() -> ZnsConfig {
    let mut cfg = ZnsConfig::small(24, 4 * MIB, 3 * MIB);
    cfg.erase_units_per_zone = 3;
    cfg.finish_pads = true;
    cfg.zones.max_open = 8;
    cfg.zones.max_active = 16;
    cfg
}

#[test]
fn a_zns_image_continues_bit_identically() {
    for seed in 1..=4 {
        let dev = ZnsDevice::new(zns_config()).unwrap();
        continues(dev, |d| d.save_image(Vec::new()).unwrap(), |b| ZnsDevice::load_image(zns_config(), b).unwrap(), 4 * MIB, 24, seed);
    }
    let mut dev = ZnsDevice::new(zns_config()).unwrap();
    dev.submit(&Io { op: Op::Write, ns: 0, offset: 0, len: 8192, pid: Pid::NONE }).unwrap();
    let image = dev.save_image(Vec::new()).unwrap();
    assert_eq!(ZnsDevice::load_image(zns_config(), &image[..]).unwrap().erase_counts(), dev.erase_counts());
    let e = SmrDevice::load_image(SmrConfig::small(12, 4 * MIB, 2, 3), &image[..]).map(|_| ()).unwrap_err();
    assert_eq!(e.to_string(), "drive image of a \"zns\" drive; expected a \"smr\" drive");
    let mut bad = image.clone();
    let n = bad.len();
    bad[n - 20] ^= 0x40;
    assert!(ZnsDevice::load_image(zns_config(), &bad[..]).map(|_| ()).unwrap_err().to_string().contains("checksum"));
}

#[test]
fn an_smr_image_continues_bit_identically() {
    let cfg = || SmrConfig::small(12, 4 * MIB, 2, 3);
    for seed in 1..=4 {
        continues(SmrDevice::new(cfg()).unwrap(), |d| d.save_image(Vec::new()).unwrap(), |b| SmrDevice::load_image(cfg(), b).unwrap(), 4 * MIB, 12, seed);
    }
    let image = SmrDevice::new(cfg()).unwrap().save_image(Vec::new()).unwrap();
    let e = SmrDevice::load_image(SmrConfig::small(12, 4 * MIB, 2, 4), &image[..]).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("another configuration") && e.contains("max_open: 3") && e.contains("max_open: 4"), "{e}");
}
