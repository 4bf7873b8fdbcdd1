//! Property tests on random operation sequences: the FTL's invariants hold whatever the host does.
mod common;
use common::MU;
use proptest::prelude::*;
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, RuhType, SlcCacheConfig};

#[derive(Debug, Clone)]
enum Cmd {
    Io { op: u8, ns: u32, unit: u64, units: u32, misalign: u32, pid: Option<(u16, u16)> },
    RuhUpdate { ruh: u32 },
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        20 => (0u8..10, 0u32..3, 0u64..400, 1u32..20, prop_oneof![Just(0u32), 0u32..4096], proptest::option::of((0u16..2, 0u16..3)))
            .prop_map(|(op, ns, unit, units, misalign, pid)| Cmd::Io { op, ns, unit, units, misalign, pid }),
        1 => (0u32..4).prop_map(|ruh| Cmd::RuhUpdate { ruh }),
    ]
}

fn device(policy: GcPolicy, (placement, slc_cache): (Placement, Option<SlcCacheConfig>)) -> Device {
    // 3 namespaces of 400 units on 120 erase units of 16 units: OP ~60%, thousands of GC runs.
    let namespaces = (0..3)
        .map(|i| NamespaceConfig { name: format!("ns{i}"), size_bytes: 400 * MU as u64, placement_handles: vec![i as u16, 3] })
        .collect();
    Device::new(DeviceConfig {
        logical_bytes: 1200 * MU as u64,
        physical_bytes: 120 * 16 * MU as u64,
        mapping_unit: MU,
        erase_unit_bytes: 16 * MU as u64,
        gc_policy: policy,
        gc_free_min: 2,
        gc_free_target: 3,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement,
        namespaces,
        seed: 11,
        slc_cache,
    })
    .unwrap()
}

fn policies() -> impl Strategy<Value = GcPolicy> {
    prop_oneof![Just(GcPolicy::Greedy), Just(GcPolicy::Fifo), Just(GcPolicy::CostBenefit), Just(GcPolicy::DChoices(3)), Just(GcPolicy::BusiestHandle)]
}

/// A client drive's pSLC cache on the test device: 4 static SLC units (of 5 mapping units) and a
/// third of the free space, so the cache grows, shrinks, folds and is exhausted.
const CACHE: SlcCacheConfig = SlcCacheConfig { static_bytes: 20 * MU as u64, dynamic: 0.3, bits_per_cell: 3, count_slc_programs: true };

/// Placements, and the pSLC cache (conventional placement only).
fn placements() -> impl Strategy<Value = (Placement, Option<SlcCacheConfig>)> {
    prop_oneof![
        Just((Placement::Conventional, None)),
        Just((Placement::Conventional, Some(CACHE))),
        Just((Placement::Streams { streams: 4 }, None)),
        Just((Placement::Fdp {
            reclaim_groups: 2,
            ruh_types: vec![
                RuhType::InitiallyIsolated,
                RuhType::PersistentlyIsolated,
                RuhType::InitiallyIsolated,
                RuhType::PersistentlyIsolated
            ]
        }, None)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold(policy in policies(), placement in placements(), cmds in proptest::collection::vec(cmd(), 1..3000)) {
        let mut dev = device(policy, placement);
        let mut host_bytes = 0u64;
        for c in &cmds {
            match *c {
                Cmd::Io { op, ns, unit, units, misalign, pid } => {
                    let op = match op { 0..=6 => Op::Write, 7..=8 => Op::Trim, _ => Op::Read };
                    let offset = unit * MU as u64 + misalign as u64 % MU as u64;
                    let len = units * MU - (misalign % MU);
                    let pid = pid.map(|(rg, ph)| Pid::new(rg, ph)).unwrap_or(Pid::NONE);
                    let io = Io { op, ns, offset, len, pid };
                    let res = dev.submit(&io);
                    if offset + len as u64 > dev.namespace_bytes(ns) {
                        prop_assert!(res.is_err());
                    } else {
                        prop_assert!(res.is_ok(), "{:?}: {:?}", io, res);
                        if op == Op::Write { host_bytes += len as u64; }
                    }
                }
                Cmd::RuhUpdate { ruh } => {
                    let _ = dev.ruh_update(0, ruh);
                }
            }
        }
        // Valid counts equal live P2L entries, L2P and P2L agree, free units hold no data,
        // media writes = host + GC copies, per-namespace/per-frontier sums match.
        if let Err(e) = dev.check_invariants() { prop_assert!(false, "{}", e); }
        let c = dev.counters();
        prop_assert_eq!(c.host_write_bytes, host_bytes);
        prop_assert_eq!(c.media_units(), c.host_units + c.gc_units + c.fold_units);
        prop_assert_eq!(c.tlc_units() + c.slc_units, c.media_units());
        prop_assert!(c.host_units * MU as u64 >= c.host_write_bytes);
    }
}

/// Apply one command (errors ignored: the same command fails the same way on both devices).
fn apply(dev: &mut Device, c: &Cmd) {
    match *c {
        Cmd::Io { op, ns, unit, units, misalign, pid } => {
            let op = match op {
                0..=6 => Op::Write,
                7..=8 => Op::Trim,
                _ => Op::Read,
            };
            let offset = unit * MU as u64 + misalign as u64 % MU as u64;
            let len = units * MU - (misalign % MU);
            let pid = pid.map(|(rg, ph)| Pid::new(rg, ph)).unwrap_or(Pid::NONE);
            let _ = dev.submit(&Io { op, ns, offset, len, pid });
        }
        Cmd::RuhUpdate { ruh } => {
            let _ = dev.ruh_update(0, ruh);
        }
    }
}

/// Where every logical unit of every namespace lives: the placement a later run sees.
fn placement_map(dev: &Device) -> Vec<Option<u32>> {
    (0..3).flat_map(|ns| (0..400u64).map(move |u| (ns, u))).map(|(ns, u)| dev.lookup(ns, u * MU as u64)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A drive saved to an image and loaded again continues bit-identically to one that never
    /// stopped: the same counters, FDP events and placement of every later write.
    #[test]
    fn a_drive_image_continues_bit_identically(policy in policies(), placement in placements(), before in proptest::collection::vec(cmd(), 0..2500), after in proptest::collection::vec(cmd(), 1..2500)) {
        let mut dev = device(policy, placement);
        for c in &before {
            apply(&mut dev, c);
        }
        let image = dev.save_image(Vec::new()).unwrap();
        let mut back = Device::load_image(dev.config().clone(), &image[..]).unwrap();
        prop_assert_eq!(back.counters(), dev.counters());
        prop_assert_eq!(back.save_image(Vec::new()).unwrap(), image, "saving the loaded drive gives the same image");
        for c in &after {
            apply(&mut dev, c);
            apply(&mut back, c);
        }
        prop_assert_eq!(back.counters(), dev.counters());
        prop_assert_eq!(back.fdp_events().collect::<Vec<_>>(), dev.fdp_events().collect::<Vec<_>>());
        prop_assert_eq!(placement_map(&back), placement_map(&dev));
        prop_assert_eq!(back.erase_counts(), dev.erase_counts());
        if let Err(e) = back.check_invariants() { prop_assert!(false, "{}", e); }
    }
}

/// A damaged image is refused with a reason: truncated, a flipped byte, another configuration.
#[test]
fn a_damaged_or_foreign_image_is_refused_clearly() {
    let mut dev = device(GcPolicy::Greedy, (Placement::Conventional, None));
    for i in 0..5000u64 {
        dev.submit(&Io { op: Op::Write, ns: (i % 3) as u32, offset: (i * 7919 % 400) * MU as u64, len: MU, pid: Pid::NONE }).unwrap();
    }
    let image = dev.save_image(Vec::new()).unwrap();
    let cfg = dev.config().clone();
    let err = |bytes: &[u8], cfg: DeviceConfig| Device::load_image(cfg, bytes).map(|_| ()).unwrap_err().to_string();
    let e = err(&image[..image.len() / 2], cfg.clone());
    assert_eq!(e, "drive image truncated: the file ends before the image does");
    let mut flipped = image.clone();
    flipped[image.len() / 3] ^= 1;
    assert!(err(&flipped, cfg.clone()).contains("checksum"), "{}", err(&flipped, cfg.clone()));
    assert!(err(b"#!/bin/sh\n", cfg.clone()).contains("not a wafsim drive image"));
    let other = DeviceConfig { gc_policy: GcPolicy::Fifo, ..cfg.clone() };
    let e = err(&image, other);
    assert!(e.contains("another configuration") && e.contains("Greedy") && e.contains("Fifo"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A write of many mapping units (which takes its slots a run at a time) leaves the drive
    /// exactly as the same write split into one-unit writes: the same image, counters and media
    /// operations for the timing model, through unit openings, GC and FDP's handles.
    #[test]
    fn a_long_write_equals_its_units_written_one_by_one(
        policy in policies(),
        placement in prop_oneof![Just(Placement::Conventional), Just(Placement::Streams { streams: 4 }), Just(Placement::Fdp { reclaim_groups: 1, ruh_types: vec![RuhType::InitiallyIsolated, RuhType::PersistentlyIsolated, RuhType::InitiallyIsolated, RuhType::PersistentlyIsolated] })],
        // One reclaim group: FDP spreads commands without a group (not units) over the groups,
        // so a split write would go elsewhere by design, and one group's share of the capacity
        // could be overfilled.
        writes in proptest::collection::vec((0u32..3, 0u64..400, 1u32..40, 0u16..2), 1..1500),
    ) {
        let mut long = device(policy, (placement.clone(), None));
        let mut split = device(policy, (placement, None));
        for d in [&mut long, &mut split] {
            d.enable_media_log(2, 1, 2);
        }
        let (mut ops_long, mut ops_split) = (Vec::new(), Vec::new());
        for &(ns, unit, units, pid) in &writes {
            let units = units.min(400 - unit as u32);
            let pid = Pid::new(0, pid);
            long.submit(&Io { op: Op::Write, ns, offset: unit * MU as u64, len: units * MU, pid }).unwrap();
            for k in 0..units as u64 {
                split.submit(&Io { op: Op::Write, ns, offset: (unit + k) * MU as u64, len: MU, pid }).unwrap();
            }
            long.drain_media_ops(&mut ops_long);
            split.drain_media_ops(&mut ops_split);
            prop_assert_eq!(&ops_long, &ops_split);
        }
        prop_assert_eq!(long.counters(), split.counters());
        prop_assert_eq!(long.save_image(Vec::new()).unwrap(), split.save_image(Vec::new()).unwrap());
        if let Err(e) = long.check_invariants() { prop_assert!(false, "{}", e); }
    }
}
