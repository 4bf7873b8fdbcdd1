//! ZNS drives in experiments: the runner drives them through the block-device interface, the
//! device writes exactly what the host writes, errors carry the NVMe ZNS status, and scaling
//! keeps the zone count.

use wafsim_core::zone::ZoneState;
mod common;
use common::{experiment, run_at, run_doc as run, run_named, write_mib_s};

const ZNS: &str = r#"
name = "zns"
[device]
kind = "zns"
[device.zones]
zones = 64
zone_size = "64MiB"
zone_capacity = "48MiB"
erase_units_per_zone = 3
max_open = 8
[[namespace]]
name = "z"
"#;

fn phase(workload: &str) -> String {
    format!("[[phase]]\nname = \"p\"\n[[phase.workload]]\nnamespace = \"z\"\n{workload}\n")
}

#[test]
fn a_zns_drive_writes_what_the_host_writes_and_reports_its_zones() {
    // Capacity = size here, so a plain sequential writer walks from zone to zone.
    let doc = ZNS.replace("zone_capacity = \"48MiB\"\n", "").replace("erase_units_per_zone = 3", "erase_units_per_zone = 4");
    let r = run(&format!("{doc}{}", phase("pattern = \"sequential\"\nbs = \"128KiB\"\namount = \"1GiB\"")), 1.0).unwrap();
    assert_eq!(r.placement, "zns");
    assert_eq!(r.counters.host_write_bytes, 1 << 30);
    assert_eq!(r.waf(), 1.0);
    assert_eq!((r.logical_bytes, r.physical_bytes), (64 * (64 << 20), 64 * (64 << 20)));
    let (ns, rep) = &r.zone_reports[0];
    assert_eq!((ns.as_str(), rep.zones.len(), rep.block_size, rep.zone_size), ("z", 64, 4096, (64 << 20) / 4096));
    let full = rep.zones.iter().filter(|z| z.state == ZoneState::Full).count();
    assert_eq!(full, 16, "1 GiB fills 16 zones of 64 MiB");
    assert!(rep.zones[16..].iter().all(|z| z.state == ZoneState::Empty));
}

#[test]
fn a_write_that_breaks_a_zone_rule_fails_with_the_nvme_status() {
    // A sequential writer of the whole LBA space runs into the first zone's capacity end.
    let e = run(&format!("{ZNS}{}", phase("pattern = \"sequential\"\nbs = \"128KiB\"\namount = \"1GiB\"")), 1.0).unwrap_err();
    let msg = format!("{e:#}");
    // The first zone fills to its 48 MiB capacity; the next write lands in it (QEMU's order of
    // checks: the zone's state before the write pointer).
    assert!(msg.contains("byte offset 50331648: Zone Is Full (1B9h)"), "{msg}");
    // Random writes break the write pointer rule at once.
    let e = run(&format!("{ZNS}{}", phase("pattern = \"random\"\nbs = \"4KiB\"\namount = \"1MiB\"")), 1.0).unwrap_err();
    assert!(format!("{e:#}").contains("Zone Invalid Write (1BCh)"), "{e:#}");
}

#[test]
fn scaling_a_zns_drive_keeps_its_zone_count() {
    let doc = format!("{}{}", ZNS.replace("zone_capacity = \"48MiB\"\n", "").replace("erase_units_per_zone = 3", "erase_units_per_zone = 4"), phase("pattern = \"sequential\"\nbs = \"16KiB\"\namount = \"0.25x\""));
    let r = run(&doc, 0.1).unwrap();
    let (_, rep) = &r.zone_reports[0];
    assert_eq!(rep.zones.len(), 64);
    // 64 MiB x 0.1 in whole erase units (4 blocks of 4 KiB); the capacity stays the size.
    let zone = rep.zone_size * 4096;
    assert!(zone <= (64 << 20) / 10 && zone > (64 << 20) / 10 - 4 * 4096 && zone % (4 * 4096) == 0, "{zone}");
    assert_eq!(rep.zones[0].capacity * 4096, zone);
    assert_eq!(r.waf(), 1.0);
}

#[test]
fn zns_specs_that_cannot_work_are_refused_with_the_reason() {
    let err = |doc: String| format!("{:#}", run(&format!("{doc}{}", phase("pattern = \"sequential\"\nbs = \"128KiB\"\namount = \"1MiB\"")), 1.0).unwrap_err());
    assert!(err(ZNS.replace("kind = \"zns\"", "kind = \"zns\"\ncapacity = \"1TB\"")).contains("remove device.capacity"));
    assert!(err(ZNS.replace("name = \"z\"", "name = \"z\"\nsize = \"1GiB\"")).contains("omit size"));
    assert!(err(ZNS.replace("zone_capacity = \"48MiB\"", "zone_capacity = \"96MiB\"")).contains("zone_capacity"));
    assert!(err(format!("{ZNS}[timing]\nenabled = true\n")).contains("needs [device.geometry]"));
    let smr = "name = \"s\"\n[device]\nkind = \"smr\"\n[device.zones]\nzones = 8\nzone_size = \"16MiB\"\n[[namespace]]\nname = \"z\"\n[timing]\nenabled = true\n";
    assert!(err(smr.to_string()).contains("needs its mechanics in [timing.hdd]"));
    assert!(err(ZNS.replace("kind = \"zns\"", "kind = \"tape\"")).contains("expected \"flash\", \"zns\" or \"smr\""));
}

#[test]
fn an_smr_disk_takes_sequential_writes_through_its_conventional_head() {
    let doc = r#"
name = "smr"
[device]
kind = "smr"
[device.zones]
zones = 32
zone_size = "16MiB"
conventional_zones = 2
max_open = 4
[[namespace]]
name = "z"
"#;
    let r = run(&format!("{doc}{}", phase("pattern = \"sequential\"\nbs = \"64KiB\"\namount = \"0.5x\"")), 1.0).unwrap();
    assert_eq!(r.placement, "smr (host-managed)");
    assert_eq!((r.waf(), r.counters.erases, r.counters.host_write_bytes), (1.0, 0, 256 << 20));
    let (_, rep) = &r.zone_reports[0];
    assert_eq!(rep.zones.len(), 32);
    assert!(rep.zones[..2].iter().all(|z| z.state == ZoneState::NotWritePointer));
    assert_eq!(rep.zones.iter().filter(|z| z.state == ZoneState::Full).count(), 14, "256 MiB = 2 conventional + 14 full zones");
    // A second pass rewrites the conventional zones in place, then hits a full zone.
    let two = phase("pattern = \"sequential\"\nbs = \"64KiB\"\namount = \"0.5x\"").replace("name = \"p\"", "name = \"q\"");
    let e = run(&format!("{doc}{}{two}", phase("pattern = \"sequential\"\nbs = \"64KiB\"\namount = \"0.5x\"")), 1.0).unwrap_err();
    assert!(format!("{e:#}").contains("byte offset 33554432"), "{e:#}");
}

/// experiments/zoned-fio: unchanged fio zonemode=zbd job files on the ZNS and SMR presets.
#[test]
fn fio_zbd_jobs_run_on_the_zoned_presets() {
    for (file, finish_pads) in [("zns.toml", true), ("smr.toml", false)] {
        let v = experiment(&format!("zoned-fio/{file}")).remove(0);
        let s = wafsim_experiment::plan::scale::auto_scale(&v.spec).unwrap();
        let r = run_at(v, s).unwrap();
        let job = r.jobs.iter().find(|j| j.measured).unwrap();
        assert!(job.stats.write_bytes > r.logical_bytes, "{file}: the overwrite writes the drive over");
        assert!(job.stats.zone_resets > 0, "{file}: fio reset zones before rewriting them");
        let c = &r.counters;
        assert_eq!(c.gc_units, 0, "{file}: no device GC");
        if finish_pads {
            // ZNS: one erase unit per zone, so every reset of a written zone is one erase; the
            // only extra media writes are the padding of zones fio finished.
            assert_eq!(c.erases, job.stats.zone_resets, "{file}");
            assert_eq!(c.media_units(), c.host_units + c.pad_units);
            assert!(r.waf() >= 1.0 && r.waf() < 1.05, "{file}: WAF {}", r.waf());
        } else {
            assert_eq!((c.erases, c.pad_units, r.waf()), (0, 0, 1.0), "{file}");
        }
        let (_, rep) = &r.zone_reports[0];
        let open = rep.zones.iter().filter(|z| z.state == ZoneState::ImplicitlyOpened).count();
        assert!(open <= 8, "{file}: max_open_zones=8 holds ({open} open)");
    }
}

/// Timed ZNS: a zone writes at the program bandwidth of the dies it spans, and zones on
/// different die groups write in parallel (docs/model.md, "ZNS drives").
#[test]
fn timed_zns_zones_write_at_their_dies_bandwidth() {
    let doc = |width: u32, jobs: u32| {
        format!(
            r#"
name = "timed zns"
[device]
kind = "zns"
[device.geometry]
page_size = "16KiB"
pages_per_block = 384
planes_per_die = 1
dies_per_channel = 4
channels = 2
[device.zones]
zones = 16
zone_size = "24MiB"
dies_per_zone = {width}
[[namespace]]
name = "z"
[timing]
enabled = true
nand = "tlc"
write_buffer = "1MiB"
[[phase]]
name = "p"
[[phase.fio]]
namespace = "z"
args = "--name=w --rw=write --bs=192k --iodepth=16 --zonemode=zbd --direct=1 --size=1z --numjobs={jobs} --offset_increment=1z"
"#
        )
    };
    let bw = |width: u32, jobs: u32| {
        let r = run(&doc(width, jobs), 1.0).unwrap();
        assert_eq!(r.waf(), 1.0);
        r.jobs.iter().filter(|j| j.measured).map(|j| j.timing.unwrap().write.bytes_per_sec).sum::<f64>()
    };
    let tprog = wafsim_time::NandTiming::preset("tlc").unwrap().t_prog_ns as f64 * 1e-9;
    // 4 dies x one-shot program unit (16 KiB page x 3 bits x 1 plane) per tPROG; the job's last
    // 1 MiB (the write buffer) completes into the buffer, so 24 MiB take the dies' time for 23.
    let dies_bw = 4.0 * 3.0 * 16384.0 / tprog;
    let expect = dies_bw * 24.0 / 23.0;
    let one = bw(4, 1);
    eprintln!("one zone {one:.4e} B/s, expected {expect:.4e}");
    assert!((one - expect).abs() / expect < 0.02, "one zone of 4 dies: {one:.4e} vs {expect:.4e} B/s");
    // Zones 0 and 1 lie on die groups 0 and 1 when a zone spans 4 of the 8 dies ...
    let apart = bw(4, 2);
    assert!((apart / one - 2.0).abs() < 0.1, "two zones on two die groups: {apart:.4e} vs 2 x {one:.4e}");
    // ... and share all 8 dies when a zone spans them all (each zone then writes 8 dies wide).
    let shared = bw(8, 2);
    assert!((shared / apart - 1.0).abs() < 0.1, "two 8-die zones: {shared:.4e} vs {apart:.4e}");
}

/// The zns-zn540 preset, timed, with one namespace "z" and `phases`.
fn zn540_timed(phases: &str) -> String {
    format!("name = \"zn540 timed\"\n[device]\npreset = \"zns-zn540\"\n[[namespace]]\nname = \"z\"\n[timing]\nenabled = true\n{phases}")
}

/// The zns-zn540 preset's fitted timing against the drive class's measured write ceiling
/// (~1,150 MiB/s, flat from 1 to 14 zones written in parallel; docs/presets-research.md).
#[test]
fn zn540_preset_writes_at_the_measured_ceiling_whatever_the_zone_count() {
    let doc = zn540_timed(
        r#"
[[phase]]
name = "one"
[[phase.fio]]
namespace = "z"
args = "--name=w1 --rw=write --bs=128k --iodepth=16 --zonemode=zbd --direct=1 --size=3z"
[[phase]]
name = "four"
[[phase.fio]]
namespace = "z"
args = "--name=w4 --rw=write --bs=128k --iodepth=16 --zonemode=zbd --direct=1 --size=3z --numjobs=4 --offset_increment=3z --offset=4z"
"#,
    );
    let r = run(&doc, 1.0).unwrap();
    let (one, four) = (write_mib_s(&r, "one"), write_mib_s(&r, "four"));
    eprintln!("ZN540 preset: 1 zone {one:.0} MiB/s, 4 zones {four:.0} MiB/s (measured ~1,150)");
    for v in [one, four] {
        assert!((v - 1150.0).abs() / 1150.0 < 0.08, "{v:.0} MiB/s vs ~1,150 measured");
    }
    assert!((one / four - 1.0).abs() < 0.05, "flat in the zone count: {one:.0} vs {four:.0}");
}

/// The smr-hm-14tb preset timed through the engine, with fio as zonedstorage.io ran it on the
/// drive class (experiments/zoned-fio/smr-timed.toml; docs/model.md, "Host-managed SMR disks").
const SMR_TIMED: &str = include_str!("../../../experiments/zoned-fio/smr-timed.toml");

#[test]
fn timed_smr_preset_writes_at_the_measured_sequential_and_random_zone_rates() {
    let r = run_named(SMR_TIMED, "any-zone", 1.0);
    let (seq, rnd) = (write_mib_s(&r, "sequential"), write_mib_s(&r, "random-zones"));
    eprintln!("SMR preset through the engine: sequential {seq:.1} MiB/s (measured 236), random zones {rnd:.1} MiB/s (measured 40.2)");
    assert!((seq / 236.0 - 1.0).abs() < 0.10, "sequential {seq:.1} MiB/s vs 236");
    assert!((rnd / 40.2 - 1.0).abs() < 0.10, "random zones {rnd:.1} MiB/s vs 40.2");
    assert_eq!(r.waf(), 1.0);
    let t = r.timed.unwrap();
    assert_eq!((t.disks, t.dies, t.pe_cycles), (1, 0, 0));
    // The head is the bottleneck of both phases.
    let busy = t.head_busy_ns as f64 / t.busy_window_ns as f64;
    assert!(busy > 0.9 && busy <= 1.0, "head busy {busy:.3}");
}

/// Linux plugs a sequential zone while a write to it is in flight, so a second write to the
/// zone waits at the host; with the drive's open-zone limit (today's fio default: 128 zones
/// shared by the jobs) writes revisit open zones and often stream on from the previous one.
#[test]
fn timed_smr_random_writes_over_fewer_open_zones_stream_more() {
    let all = write_mib_s(&run_named(SMR_TIMED, "any-zone", 1.0), "random-zones");
    let open = write_mib_s(&run_named(SMR_TIMED, "open-zones", 1.0), "random-zones");
    eprintln!("random-zone writes: any zone {all:.1} MiB/s, within 128 open zones {open:.1} MiB/s");
    assert!(open > 1.3 * all, "{open:.1} vs {all:.1} MiB/s");
}

/// A scaled SMR disk keeps its zones where the full-size disk has them: the random-zone rate at
/// scale 1/10 (zones of 25.6 MiB placed at the starts of the real 256 MiB zones) stays within
/// 10% of full size, though fio's runtime scales too.
#[test]
fn timed_smr_rates_do_not_depend_much_on_the_scale() {
    let doc = SMR_TIMED.replace("--runtime=20s", "--runtime=200s");
    let full = write_mib_s(&run_named(&doc, "any-zone", 1.0), "random-zones");
    let tenth = write_mib_s(&run_named(&doc, "any-zone", 0.1), "random-zones");
    eprintln!("random zones: scale 1 {full:.1} MiB/s, scale 0.1 {tenth:.1} MiB/s");
    assert!((tenth / full - 1.0).abs() < 0.10, "{tenth:.1} vs {full:.1}");
}

/// The zns-zn540 preset's small-write figures (CLUSTER'23 artifact; docs/presets-research.md):
/// a QD1 4 KiB write completes in 10.8 us, and 4 KiB writes saturate at ~186K IOPS whatever the
/// number of zones written at QD1 (712 MiB/s measured with 14 zones).
#[test]
fn zn540_preset_small_writes_meet_the_measured_latency_and_command_limit() {
    let doc = zn540_timed(
        r#"
[[phase]]
name = "qd1"
[[phase.fio]]
namespace = "z"
args = "--name=w1 --rw=write --bs=4k --iodepth=1 --zonemode=zbd --direct=1 --size=1z --io_size=64m"
[[phase]]
name = "z13"
[[phase.fio]]
namespace = "z"
args = "--name=w13 --rw=write --bs=4k --iodepth=1 --zonemode=zbd --direct=1 --size=1z --io_size=64m --numjobs=13 --offset=1z --offset_increment=1z"
"#,
    );
    let r = run(&doc, 1.0).unwrap();
    let lat_us = r.jobs.iter().find(|j| j.phase == "qd1").unwrap().timing.unwrap().write.lat_mean_ns / 1e3;
    let iops: f64 = r.jobs.iter().filter(|j| j.phase == "z13").map(|j| j.timing.unwrap().write.iops).sum();
    eprintln!("ZN540 preset: QD1 4 KiB write {lat_us:.2} us (measured 10.8), 13 zones x QD1: {iops:.0} IOPS (measured ~186K)");
    assert!((lat_us / 10.8 - 1.0).abs() < 0.05, "{lat_us:.2} us");
    assert!((iops / 186e3 - 1.0).abs() < 0.05, "{iops:.0} IOPS");
}
