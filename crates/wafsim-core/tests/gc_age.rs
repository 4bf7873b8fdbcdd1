//! GC destinations by age (`gc_age_classes`): every live mapping unit sits in the frontier the
//! copy count says (host frontier if the host wrote it since GC last moved it, else GC class
//! min(moves, k)), within its data set's scope (the device; the initially isolated handles of a
//! reclaim group; one persistently isolated handle). The copy count is observed from outside:
//! a unit whose physical location changed without a host write was moved by GC.
mod common;
use common::*;
use wafsim_core::device::{FrontierKind, NIL};
use wafsim_core::{Device, DeviceConfig, GcPolicy, NamespaceConfig, Placement, Rng, RuhType};

fn device(placement: Placement, handles: &[u16], ns_units: u64, eus: u32, np: u32, k: u32) -> Device {
    let namespaces = handles
        .iter()
        .enumerate()
        .map(|(i, &h)| NamespaceConfig { name: format!("ns{i}"), size_bytes: ns_units * MU as u64, placement_handles: vec![h] })
        .collect();
    Device::new(DeviceConfig {
        logical_bytes: handles.len() as u64 * ns_units * MU as u64,
        physical_bytes: eus as u64 * np as u64 * MU as u64,
        mapping_unit: MU,
        erase_unit_bytes: np as u64 * MU as u64,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: k,
        fdp_idle_handles_hold_units: false,
        placement,
        namespaces,
        seed: 5,
        slc_cache: None,
    })
    .unwrap()
}

/// Where every (namespace, unit) lives now: its physical mapping unit.
fn locations(dev: &Device, ns_units: u64) -> Vec<Vec<u32>> {
    (0..dev.namespace_count())
        .map(|ns| (0..ns_units).map(|u| dev.lookup(ns, u * MU as u64).unwrap_or(NIL)).collect())
        .collect()
}

/// Skewed single-unit writes (80% of them to the first 20% of a namespace, namespaces picked
/// uniformly), checking after each that every live unit is where its copy count says.
/// `scope_ok(ns, frontier)` says whether namespace `ns`'s data may sit in that frontier.
fn run_and_check(dev: &mut Device, ns_units: u64, writes: u64, k: u32, scope_ok: impl Fn(u32, &wafsim_core::device::Frontier) -> bool) {
    let np = dev.geometry().units_per_eu;
    let nns = dev.namespace_count();
    precondition(dev);
    let mut loc = locations(dev, ns_units);
    let mut moves = vec![vec![0u32; ns_units as usize]; nns as usize];
    let mut rng = Rng::new(11);
    let hot = ns_units / 5;
    let mut max_seen = 0;
    let (mut moved, mut double_moves) = (0u64, 0u64);
    for _ in 0..writes {
        let ns = rng.below(nns as u64) as u32;
        let u = if rng.below(10) < 8 { rng.below(hot) } else { hot + rng.below(ns_units - hot) };
        dev.submit(&write(ns, u, 1)).unwrap();
        let now = locations(dev, ns_units);
        for n in 0..nns as usize {
            for x in 0..ns_units as usize {
                let owner = dev.unit_owner(now[n][x] / np);
                let f = &dev.frontiers()[owner as usize];
                let before = moves[n][x];
                if n == ns as usize && x == u as usize {
                    moves[n][x] = 0;
                } else if now[n][x] != loc[n][x] {
                    // One host write's GC may move a unit twice (a victim's copies filled a
                    // destination that GC then took as a victim too): the class then says two
                    // moves, never fewer than one.
                    let one_more = (before + 1).min(k);
                    assert!(f.age_class >= one_more, "ns {n} unit {x}: moved by GC after {before} moves, found in class {}", f.age_class);
                    if f.age_class > one_more {
                        double_moves += 1;
                    }
                    moved += 1;
                    moves[n][x] = if f.age_class < k { f.age_class } else { (before + 1).max(k) };
                }
                let want = moves[n][x].min(k);
                assert_eq!(
                    f.age_class, want,
                    "ns {n} unit {x}: moved {} times by GC since its last host write, found in a frontier of age class {}",
                    moves[n][x], f.age_class
                );
                assert_eq!(f.kind == FrontierKind::Host, want == 0);
                assert!(scope_ok(n as u32, f), "ns {n} unit {x} sits in frontier {f:?}, outside its data set");
                max_seen = max_seen.max(moves[n][x]);
            }
        }
        loc = now;
    }
    assert!(max_seen > k, "the workload must move some data more than k = {k} times (max {max_seen})");
    eprintln!("{moved} moves, {double_moves} seen as two, most moves of one unit {max_seen}");
    assert!(moved > 10 * ns_units, "GC must move data often ({moved} moves seen)");
    assert!(double_moves * 100 <= moved, "{double_moves} of {moved} moves were seen as two: the check is too coarse");
    dev.check_invariants().unwrap();
}

#[test]
fn conventional_copies_go_to_the_class_of_their_copy_count() {
    let ns_units = 1300;
    let mut dev = device(Placement::Conventional, &[0], ns_units, 50, 32, 3);
    assert_eq!(dev.frontiers().len(), 4, "one host frontier and a chain of 3 GC classes");
    assert_eq!(dev.geometry().open_frontiers, 4);
    run_and_check(&mut dev, ns_units, 12_000, 3, |_, _| true);
}

#[test]
fn fdp_age_classes_keep_each_data_set_to_its_own_chain() {
    // RUH 0 and 1 initially isolated (one shared chain), RUH 2 persistently isolated (its own).
    let types = vec![RuhType::InitiallyIsolated, RuhType::InitiallyIsolated, RuhType::PersistentlyIsolated];
    let ns_units = 420;
    let mut dev = device(Placement::Fdp { reclaim_groups: 1, ruh_types: types }, &[0, 1, 2], ns_units, 54, 32, 2);
    // 3 host frontiers + 2 shared GC classes + 2 GC classes of RUH 2.
    assert_eq!(dev.frontiers().len(), 7);
    run_and_check(&mut dev, ns_units, 8_000, 2, |ns, f| match (ns, f.kind) {
        (_, FrontierKind::Host) => f.ruh == ns,
        (0 | 1, FrontierKind::Gc { shared }) => shared && f.ruh == NIL,
        (_, FrontierKind::Gc { shared }) => !shared && f.ruh == 2,
    });
}

#[test]
fn one_age_class_is_the_single_gc_destination() {
    let ns_units = 1300;
    let mut dev = device(Placement::Conventional, &[0], ns_units, 50, 32, 1);
    assert_eq!(dev.frontiers().len(), 2);
    assert_eq!(dev.frontiers()[1].gc_dest, 1, "the only GC frontier keeps its own copies");
    run_and_check(&mut dev, ns_units, 8_000, 1, |_, _| true);
}

#[test]
fn age_classes_out_of_range_are_refused_and_cost_open_units() {
    let cfg = |k| DeviceConfig { gc_age_classes: k, ..DeviceConfig::single_namespace(256, 64, MU, 0.07, GcPolicy::Greedy, 1) };
    for k in [0, wafsim_core::MAX_GC_AGE_CLASSES + 1] {
        let e = cfg(k).geometry().unwrap_err().to_string();
        assert!(e.contains("gc_age_classes"), "{e}");
    }
    let one = cfg(1).geometry().unwrap();
    let four = cfg(4).geometry().unwrap();
    assert_eq!(four.open_frontiers, one.open_frontiers + 3);
    assert!(four.effective_alpha() < one.effective_alpha(), "open GC units are spare the data cannot use");
}

#[test]
fn a_drive_with_age_classes_continues_identically_from_its_image() {
    let ns_units = 1300;
    let mut a = device(Placement::Conventional, &[0], ns_units, 50, 32, 3);
    let mut rng = Rng::new(2);
    precondition(&mut a);
    random_writes(&mut a, &mut rng, 5_000);
    let bytes = a.save_image(Vec::new()).unwrap();
    let mut b = Device::load_image(a.config().clone(), &bytes[..]).unwrap();
    let mut rb = rng.clone();
    random_writes(&mut a, &mut rng, 5_000);
    random_writes(&mut b, &mut rb, 5_000);
    assert_eq!(a.counters(), b.counters());
    assert_eq!(locations(&a, ns_units), locations(&b, ns_units));
}

#[test]
fn idle_handles_hold_a_unit_each_when_asked() {
    let types = vec![RuhType::InitiallyIsolated, RuhType::PersistentlyIsolated, RuhType::InitiallyIsolated, RuhType::InitiallyIsolated];
    let placement = Placement::Fdp { reclaim_groups: 2, ruh_types: types };
    let lazy = device(placement.clone(), &[0], 600, 64, 32, 1);
    assert_eq!(lazy.free_units(), vec![32, 32], "a handle takes its first unit when written");
    let mut cfg = lazy.config().clone();
    cfg.fdp_idle_handles_hold_units = true;
    let mut eager = Device::new(cfg.clone()).unwrap();
    // Every handle of every group references a unit from the start; GC units stay lazy.
    assert_eq!(eager.free_units(), vec![28, 28]);
    for f in eager.frontiers() {
        assert_eq!(f.unit != NIL, f.kind == FrontierKind::Host, "{f:?}");
    }
    // Its data and the image behave as any drive's.
    let mut rng = Rng::new(4);
    precondition(&mut eager);
    random_writes(&mut eager, &mut rng, 3_000);
    eager.check_invariants().unwrap();
    let bytes = eager.save_image(Vec::new()).unwrap();
    let mut back = Device::load_image(cfg, &bytes[..]).unwrap();
    let mut rb = rng.clone();
    random_writes(&mut eager, &mut rng, 2_000);
    random_writes(&mut back, &mut rb, 2_000);
    assert_eq!(eager.counters(), back.counters());
}

/// An FDP image saved with idle handles holding nothing (wafsim's default before the
/// specification's rule became it) is refused by a drive whose handles hold units, with the
/// setting that loads it named; with that setting it loads.
#[test]
fn an_image_with_empty_idle_handles_names_the_setting_that_loads_it() {
    let placement = Placement::Fdp { reclaim_groups: 1, ruh_types: vec![RuhType::InitiallyIsolated; 4] };
    let lazy = device(placement, &[0], 600, 64, 32, 1);
    let bytes = lazy.save_image(Vec::new()).unwrap();
    let mut eager = lazy.config().clone();
    eager.fdp_idle_handles_hold_units = true;
    let err = Device::load_image(eager, &bytes[..]).err().expect("another configuration").to_string();
    assert!(err.contains("idle_handles_hold_units = false"), "{err}");
    Device::load_image(lazy.config().clone(), &bytes[..]).unwrap();
}
