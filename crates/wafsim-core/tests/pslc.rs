//! The pSLC write cache against hand-computed expectations: where host writes land, what is
//! folded, and the two media figures (SLC programs counted or not).
mod common;
use common::{write, MU};
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, Op, Pid, SlcCacheConfig};

/// Erase units of 12 mapping units (4 in SLC mode), GC pool 2, a cache of `static_eus` SLC
/// units and `dynamic` of the free space.
fn device(eus: u32, data_eus: u32, static_eus: u64, dynamic: f64, counted: bool) -> Device {
    let mut cfg = DeviceConfig::single_namespace(eus, 12, MU, 0.0, GcPolicy::Greedy, 1);
    let logical = data_eus as u64 * 12 * MU as u64;
    cfg.logical_bytes = logical;
    cfg.namespaces[0].size_bytes = logical;
    cfg.slc_cache = Some(SlcCacheConfig { static_bytes: static_eus * 4 * MU as u64, dynamic, bits_per_cell: 3, count_slc_programs: counted });
    Device::new(cfg).unwrap()
}

fn fill(dev: &mut Device, from: u64, units: u64) {
    for u in from..from + units {
        dev.submit(&write(0, u, 1)).unwrap();
    }
    dev.check_invariants().unwrap();
}

/// Sequential fill of N units with a static cache of C units and no pressure: SLC programs =
/// min(N, C), the rest goes directly to TLC, nothing is folded.
#[test]
fn a_sequential_fill_lands_in_slc_until_the_cache_is_full_then_in_tlc() {
    // 40 erase units, 20 of data: the free pool never runs low.
    for (n, slc) in [(10u64, 10u64), (32, 32), (33, 32), (240, 32)] {
        let mut dev = device(40, 20, 8, 0.0, true);
        fill(&mut dev, 0, n);
        let c = dev.counters();
        assert_eq!((c.host_units, c.slc_units, c.fold_units, c.gc_units), (n, slc, 0, 0), "fill of {n}");
        assert_eq!(c.tlc_units(), n - slc);
        assert_eq!(c.media_units(), n);
        assert_eq!(dev.slc_cache_usage(), (slc, 32));
    }
}

/// The dynamic part follows free space: with 24 data erase units (288 units) and a quarter of
/// the free space, k SLC units in use (4k units of data) allow floor(0.25 (288 - 4k) / 4):
/// 14 at k = 13 (a 14th opens), 14 at k = 14 (no 15th): the step is at 56 units.
#[test]
fn the_dynamic_part_shrinks_as_the_drive_fills() {
    let mut dev = device(60, 24, 0, 0.25, true);
    fill(&mut dev, 0, 288);
    assert_eq!(dev.counters().slc_units, 56);
    assert_eq!(dev.counters().fold_units, 0);
    // Full drive: no free space, no dynamic cache; the SLC data stays until pressure or idle.
    assert_eq!(dev.slc_cache_usage(), (56, 0));
}

/// Pressure: 9 erase units, 4 of data (48 units), a static cache of 5 SLC units (20 units).
/// The fill puts units 0..20 in SLC (free pool 9 - 5 = 4), then opens TLC units at 20, 32
/// and 44 (free 3, 2, 1). The third open drops the pool below 2: the oldest SLC unit (units
/// 0..4) is folded into a fresh GC unit (free 0) and erased (1), then the next (4..8): free 2
/// = target. So 8 units folded, 2 erases, and units 44..48 go to TLC (the pool is at its
/// minimum, so no SLC unit opens).
#[test]
fn pressure_folds_the_oldest_slc_units_before_any_gc() {
    for counted in [true, false] {
        let mut dev = device(9, 4, 5, 0.0, counted);
        fill(&mut dev, 0, 48);
        let c = dev.counters();
        assert_eq!((c.host_units, c.slc_units, c.fold_units, c.gc_units, c.erases), (48, 20, 8, 0, 2));
        assert_eq!(c.tlc_units(), 28 + 8);
        // Counted: host 48 + folds 8; not counted: the TLC programs only.
        assert_eq!(c.media_units(), if counted { 56 } else { 36 });
        assert_eq!(dev.slc_cache_usage().0, 12);
        assert_eq!(dev.free_units(), vec![2]);
    }
}

/// Data overwritten or trimmed while in SLC is never folded; a full SLC unit whose data is
/// all dead is erased without a fold when the cache needs room.
#[test]
fn overwritten_and_trimmed_slc_data_is_not_folded() {
    let mut dev = device(40, 20, 2, 0.0, true);
    fill(&mut dev, 0, 8); // two SLC units: 0..4, 4..8
    fill(&mut dev, 0, 2); // cache exhausted: to TLC, units 0, 1 die in SLC
    let trim = Io { op: Op::Trim, ns: 0, offset: 2 * MU as u64, len: MU, pid: Pid::NONE };
    dev.submit(&trim).unwrap(); // unit 2 dies in SLC
    assert_eq!(dev.background_fold(1).unwrap(), 1); // folds 0..4: only unit 3 is live
    assert_eq!(dev.counters().fold_units, 1);
    fill(&mut dev, 4, 4); // 4..8 overwritten: one new SLC unit (room for one), all of it
    assert_eq!(dev.counters().slc_units, 12);
    // The old SLC unit of 4..8 is now all dead: the next write that needs an SLC unit erases
    // it instead of folding it.
    let erases = dev.counters().erases;
    fill(&mut dev, 8, 1);
    assert_eq!(dev.counters().erases, erases + 1);
    assert_eq!(dev.counters().fold_units, 1);
    assert_eq!(dev.counters().slc_units, 13);
    dev.check_invariants().unwrap();
}

/// The same host traffic on two drives that differ only in the switch: their media figures
/// differ by exactly the SLC programs; once every SLC unit is folded (nothing overwritten)
/// that is also exactly the fold traffic.
#[test]
fn slc_counted_or_not_differ_by_the_slc_programs_and_after_folding_by_the_folds() {
    let mut rng = wafsim_core::Rng::new(5);
    let ops: Vec<u64> = (0..3000).map(|_| rng.below(240)).collect();
    let run = |counted: bool| {
        let mut dev = device(40, 20, 3, 0.25, counted);
        fill(&mut dev, 0, 240);
        for &u in &ops {
            dev.submit(&write(0, u, 1)).unwrap();
        }
        dev.check_invariants().unwrap();
        dev
    };
    let (on, off) = (run(true), run(false));
    let (a, b) = (on.counters(), off.counters());
    assert!(a.slc_units > 0 && a.fold_units > 0 && a.gc_units > 0);
    assert_eq!(a.slc_units, b.slc_units);
    assert_eq!(a.media_units() - b.media_units(), a.slc_units);
    assert_eq!(a.tlc_units(), b.tlc_units());

    // A sequential fill, then everything folded: SLC programs = folds.
    let mut seq = [true, false].map(|counted| {
        let mut dev = device(40, 20, 4, 0.0, counted);
        fill(&mut dev, 0, 100);
        while dev.background_fold(1).unwrap() > 0 {}
        dev
    });
    let [x, y] = &mut seq;
    assert_eq!(x.counters().slc_units, 16);
    assert_eq!(x.counters().fold_units, 16);
    assert_eq!(x.counters().media_units() - y.counters().media_units(), x.counters().fold_units);
    assert_eq!(x.slc_cache_usage().0, 0);
}

/// A drive with its cache on is saved and loaded mid-way and continues identically.
#[test]
fn an_image_keeps_the_cache() {
    let mut dev = device(40, 20, 3, 0.25, false);
    fill(&mut dev, 0, 150);
    let image = dev.save_image(Vec::new()).unwrap();
    let mut back = Device::load_image(dev.config().clone(), &image[..]).unwrap();
    assert_eq!(back.counters(), dev.counters());
    assert_eq!(back.slc_cache_usage(), dev.slc_cache_usage());
    fill(&mut dev, 100, 140);
    fill(&mut back, 100, 140);
    assert_eq!(back.counters(), dev.counters());
    assert_eq!(back.save_image(Vec::new()).unwrap(), dev.save_image(Vec::new()).unwrap());
}
