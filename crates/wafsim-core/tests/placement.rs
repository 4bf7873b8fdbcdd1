//! Placement behaviour: sequential writers, the I/O blender, FDP isolation, events.
mod common;
use common::*;
use std::collections::HashSet;
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng, RuhType};

fn multi_ns_device(placement: Placement, n_ns: u32, ns_units: u64, eus: u32, np: u32, policy: GcPolicy) -> Device {
    let namespaces = (0..n_ns)
        .map(|i| NamespaceConfig {
            name: format!("ns{i}"),
            size_bytes: ns_units * MU as u64,
            placement_handles: vec![i as u16],
        })
        .collect();
    Device::new(DeviceConfig {
        logical_bytes: n_ns as u64 * ns_units * MU as u64,
        physical_bytes: eus as u64 * np as u64 * MU as u64,
        mapping_unit: MU,
        erase_unit_bytes: np as u64 * MU as u64,
        gc_policy: policy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement,
        namespaces,
        seed: 3,
        slc_cache: None,
    })
    .unwrap()
}

fn fdp(types: Vec<RuhType>) -> Placement {
    Placement::Fdp { reclaim_groups: 1, ruh_types: types }
}

#[test]
fn single_sequential_writer_has_waf_exactly_one() {
    let mut dev = uniform_device(1024, 256, 0.07, GcPolicy::Greedy);
    let u = dev.geometry().namespace_units;
    let before = dev.counters().clone();
    for pass in 0..5 {
        for off in (0..u).step_by(32) {
            let n = (u - off).min(32) as u32;
            dev.submit(&write(0, off, n)).unwrap();
        }
        let _ = pass;
    }
    let d = dev.counters().delta(&before);
    assert_eq!(d.host_units, 5 * u);
    assert_eq!(d.gc_units, 0, "a sequential overwrite must never need GC copies");
    assert!(d.erases > 0, "the test must actually recycle erase units");
    dev.check_invariants().unwrap();
}

/// Every sealed or open unit's live data belongs to namespaces in `allowed(unit)`.
fn namespaces_per_unit(dev: &Device) -> Vec<HashSet<u32>> {
    (0..dev.geometry().erase_units)
        .map(|u| dev.live_lbas(u).into_iter().map(|l| dev.namespace_of(l)).collect())
        .collect()
}

fn heavy_random(dev: &mut Device, n_ns: u32, n: u64, seed: u64) {
    let mut rng = Rng::new(seed);
    let units = dev.namespace_bytes(0) / MU as u64;
    for _ in 0..n {
        let ns = rng.below(n_ns as u64) as u32;
        // Skewed: namespace 0 is hot so GC has mixed victims to choose from.
        let ns = if rng.unit_f64() < 0.5 { 0 } else { ns };
        dev.submit(&Io { op: Op::Write, ns, offset: rng.below(units) * MU as u64, len: MU, pid: Pid::new(0, 0) }).unwrap();
    }
}

#[test]
fn persistently_isolated_handles_never_share_units() {
    let mut dev = multi_ns_device(fdp(vec![RuhType::PersistentlyIsolated; 4]), 4, 32 * 64, 4 * 32 * 2, 64, GcPolicy::Greedy);
    precondition(&mut dev);
    heavy_random(&mut dev, 4, 4 * 32 * 64 * 8, 5);
    let d = dev.counters();
    assert!(d.gc_units > 10_000, "test needs heavy GC, got {}", d.gc_units);
    for (u, set) in namespaces_per_unit(&dev).iter().enumerate() {
        assert!(set.len() <= 1, "erase unit {u} mixes namespaces {set:?} under persistently isolated handles");
    }
    assert_eq!(d.fdp_events.media_reallocated, 0);
    dev.check_invariants().unwrap();
}

#[test]
fn initially_isolated_handles_may_share_units_after_gc() {
    let mut dev = multi_ns_device(fdp(vec![RuhType::InitiallyIsolated; 4]), 4, 32 * 64, 4 * 32 * 2, 64, GcPolicy::Greedy);
    precondition(&mut dev);
    heavy_random(&mut dev, 4, 4 * 32 * 64 * 8, 5);
    let mixed = namespaces_per_unit(&dev).iter().filter(|s| s.len() > 1).count();
    assert!(mixed > 0, "GC of initially isolated handles shares a GC frontier, so some unit should mix namespaces");
    assert!(dev.counters().fdp_events.media_reallocated > 0);
    dev.check_invariants().unwrap();
}

#[test]
fn invalid_pid_uses_handle_zero_and_is_logged() {
    let mut dev = multi_ns_device(fdp(vec![RuhType::InitiallyIsolated; 4]), 2, 1024, 64, 64, GcPolicy::Greedy);
    // Namespace 1 has one placement handle (-> RUH 1); placement handle 3 is invalid for it.
    dev.submit(&Io { op: Op::Write, ns: 1, offset: 0, len: MU, pid: Pid::new(0, 3) }).unwrap();
    dev.submit(&Io { op: Op::Write, ns: 1, offset: MU as u64, len: MU, pid: Pid::new(7, 0) }).unwrap();
    let c = dev.counters();
    assert_eq!(c.fdp_events.invalid_pid, 2);
    // Both writes landed through the namespace's placement handle 0, i.e. RUH 1's frontier.
    let ruh1 = dev.frontiers().iter().position(|f| f.ruh == 1 && f.kind == wafsim_core::device::FrontierKind::Host).unwrap();
    assert_eq!(c.frontiers[ruh1].host_units, 2);
}

#[test]
fn ruh_update_moves_to_fresh_unit_and_logs_event() {
    let mut dev = multi_ns_device(fdp(vec![RuhType::InitiallyIsolated; 2]), 2, 1024, 64, 64, GcPolicy::Greedy);
    dev.submit(&write(0, 0, 10)).unwrap();
    let f = dev.frontiers().iter().position(|f| f.ruh == 0 && f.kind == wafsim_core::device::FrontierKind::Host).unwrap();
    let before = dev.frontiers()[f].unit;
    dev.ruh_update(0, 0).unwrap();
    assert_ne!(dev.frontiers()[f].unit, before);
    assert_eq!(dev.counters().fdp_events.ru_not_fully_written, 1);
    dev.submit(&write(0, 10, 1)).unwrap();
    assert!(dev.ruh_update(0, 5).is_err());
    dev.check_invariants().unwrap();
}

#[test]
fn trims_and_unmapped_reads() {
    let mut dev = uniform_device(64, 64, 0.5, GcPolicy::Greedy);
    dev.submit(&write(0, 0, 8)).unwrap();
    dev.submit(&Io { op: Op::Trim, ns: 0, offset: 2 * MU as u64, len: 3 * MU, pid: Pid::NONE }).unwrap();
    // A partial unit at either end is not deallocated.
    dev.submit(&Io { op: Op::Trim, ns: 0, offset: 6 * MU as u64 + 512, len: MU, pid: Pid::NONE }).unwrap();
    dev.submit(&Io { op: Op::Read, ns: 0, offset: 0, len: 10 * MU, pid: Pid::NONE }).unwrap();
    let c = dev.counters();
    assert_eq!(c.trimmed_units, 3);
    assert_eq!(c.unmapped_read_units, 3 + 2);
    assert!(dev.submit(&write(0, dev.namespace_bytes(0) / MU as u64, 1)).is_err());
    dev.check_invariants().unwrap();
}

#[test]
fn same_seed_gives_identical_counters() {
    let run = || {
        let mut dev = uniform_device(512, 64, 0.1, GcPolicy::DChoices(4));
        let u = dev.geometry().namespace_units;
        steady_waf(&mut dev, 77, u, u);
        (dev.counters().clone(), dev.erase_counts().to_vec())
    };
    assert_eq!(run(), run());
}

#[test]
fn media_log_programs_reads_and_erases() {
    use wafsim_core::media_op::MediaOp;
    // 64 erase units of 64 mapping units; program unit 8 units, page 2 units, 4 dies.
    let mut dev = uniform_device(64, 64, 0.5, GcPolicy::Greedy);
    dev.enable_media_log(8, 2, 4);
    let u = dev.namespace_bytes(0) / MU as u64;
    precondition(&mut dev);
    let mut ops = Vec::new();
    dev.drain_media_ops(&mut ops);
    let programs: Vec<u32> = ops.iter().filter_map(|o| if let MediaOp::ProgramHost { die } = o { Some(*die) } else { None }).collect();
    assert_eq!(programs.len() as u64, u / 8, "one program per 8 units written");
    assert_eq!(&programs[..6], &[0, 1, 2, 3, 0, 1], "program units stripe over the dies");
    // Random overwrites force GC: GC reads, GC programs and erases appear, and they agree with
    // the counters.
    let mut rng = Rng::new(3);
    random_writes(&mut dev, &mut rng, 4 * u);
    ops.clear();
    dev.drain_media_ops(&mut ops);
    let c = dev.counters();
    let gc_programs = ops.iter().filter(|o| matches!(o, MediaOp::ProgramGc { .. })).count() as u64;
    let erases = ops.iter().filter(|o| matches!(o, MediaOp::Erase { .. })).count() as u64;
    let reads = ops.iter().filter(|o| matches!(o, MediaOp::ReadGc { .. })).count() as u64;
    assert!(erases > 0 && erases <= c.erases);
    assert!(gc_programs * 8 <= c.gc_units && c.gc_units <= (gc_programs + 2) * 8, "{gc_programs} programs for {} GC units", c.gc_units);
    assert!(reads * 2 >= c.gc_units / 2 && reads <= c.gc_units, "{reads} page reads for {} GC units", c.gc_units);
    let p = dev.lookup(0, 0).unwrap();
    assert!(dev.die_of(p) < 4);
}

/// `busiest-handle` takes its victim from the data set holding the most sealed units, even when
/// another handle has an emptier one; greedy takes the emptiest unit of the group.
#[test]
fn busiest_handle_gc_takes_its_victim_from_the_fullest_handle() {
    let pi = vec![RuhType::PersistentlyIsolated; 2];
    for (policy, copies) in [(GcPolicy::Greedy, 0), (GcPolicy::BusiestHandle, 7)] {
        let mut dev = multi_ns_device(fdp(pi.clone()), 2, 64, 32, 8, policy);
        let w = |ns: u32, lba: u64| Io { op: Op::Write, ns, offset: lba * MU as u64, len: MU, pid: Pid::new(0, 0) };
        // Handle 0: six sealed units of 8, one unit each overwritten once (7 valid each).
        for l in 0..49 {
            dev.submit(&w(0, l)).unwrap();
        }
        for l in (0..48).step_by(8) {
            dev.submit(&w(0, l)).unwrap();
        }
        // Handle 1: two sealed units, the first wholly overwritten (0 valid).
        for l in 0..9 {
            dev.submit(&w(1, l)).unwrap();
        }
        for l in 0..8 {
            dev.submit(&w(1, l)).unwrap();
        }
        assert_eq!(dev.counters().gc_units, 0);
        let free = dev.free_units()[0];
        assert_eq!(dev.background_gc(free + 1, 1).unwrap(), 1);
        assert_eq!(dev.counters().gc_units, copies, "{policy}: GC copied {} units", dev.counters().gc_units);
        dev.check_invariants().unwrap();
    }
}
