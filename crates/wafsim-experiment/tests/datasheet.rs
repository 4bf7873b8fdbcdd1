//! The datasheet check of the timing model (docs/validation.md, "Datasheet check") at the test
//! settings (scale 1/10,000, runs of a few hundred simulated ms): relationships between the
//! figures that hold whatever the preset's calibration.
use wafsim_experiment::studies::datasheet::{experiment, markdown, run_presets, Figure, Point, Settings};
use wafsim_experiment::plan::timing::timing_config;

#[test]
fn enterprise_tlc_datasheet_figures_are_consistent() {
    let preset = "enterprise-tlc-7.68tb";
    let settings = Settings::TEST;
    let r = run_presets(&[preset], &settings, &|line| eprintln!("{line}")).unwrap().remove(0);
    for (f, v) in &r.values {
        eprintln!("{}: {}", f.label(), f.format(*v));
    }
    assert_eq!(r.values.len(), Figure::ALL.len());

    // The drive's figures as the runs used them.
    let v = experiment(preset, Point::Qd1, &settings).unwrap();
    let cfg = v.spec.device.to_config(&v.spec.namespace, v.spec.seed).unwrap();
    let tc = timing_config(&v.spec, &cfg).unwrap().expect("the datasheet runs enable the timing model");
    let t_read_min = (0..tc.nand.bits_per_cell).map(|t| tc.t_read_of(t)).min().unwrap();

    // Sequential write: something is written, and no faster than the host link carries it.
    let seq_w = r.get(Figure::SeqWrite);
    assert!(seq_w > 0.0, "sequential write {seq_w} B/s");
    assert!(seq_w <= tc.host_link_bytes_per_sec, "sequential write {seq_w} B/s above the host link {} B/s", tc.host_link_bytes_per_sec);
    assert!(tc.host_link_bytes_per_sec <= 7.88e9, "PCIe 4.0 x4: {}", tc.host_link_bytes_per_sec);
    assert!(r.get(Figure::SeqRead) > 0.0 && r.get(Figure::SeqRead) <= tc.host_link_bytes_per_sec);

    // Random reads need no GC; steady random writes do: reads are faster.
    let (rr, rw) = (r.get(Figure::RandRead), r.get(Figure::RandWriteSteady));
    assert!(rw > 0.0 && rr > rw, "random read {rr} IOPS vs steady random write {rw} IOPS");

    // Every read pays at least the controller overhead and the fastest page type's array read,
    // plus transfers: the median is above that.
    let floor = (t_read_min + tc.read_overhead_ns) as f64;
    let (p50, p9999) = (r.get(Figure::Qd1P50), r.get(Figure::Qd1P9999));
    assert!(p50 > floor, "QD 1 p50 {p50} ns vs tR {t_read_min} ns + read overhead {} ns", tc.read_overhead_ns);
    assert!(r.get(Figure::Qd1Mean) > floor);
    assert!(p9999 >= r.get(Figure::Qd1P99) && r.get(Figure::Qd1P99) >= p50, "QD 1 p50 {p50} p99 {} p99.99 {p9999}", r.get(Figure::Qd1P99));

    // The 70/30 mix at steady state: reads complete, and not starved behind GC.
    let mix = r.get(Figure::MixIops);
    assert!(mix > 0.0, "70/30 IOPS {mix}");
    assert!(r.get(Figure::MixReadIops) > 0.0 && r.get(Figure::MixReadP50) > 0.0, "70/30 reads did not complete");
    assert!(r.get(Figure::MixReadP99) < 50e6, "70/30 read p99 {} ns", r.get(Figure::MixReadP99));

    let md = markdown(&[r], &settings, "test");
    assert!(md.starts_with("## Datasheet check (timing model)"), "{md}");
    assert!(md.contains("| random write 4 KiB, QD 32, steady state |"), "{md}");
}
