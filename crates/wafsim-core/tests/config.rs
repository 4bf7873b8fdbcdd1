//! Configuration checks at the edges: zero over-provisioning and the "client drive" reading of
//! GB vs GiB.
mod common;
use common::*;
use wafsim_core::theory::waf_greedy;
use wafsim_core::{Device, DeviceConfig, GcPolicy, NamespaceConfig, Placement, RuhType};

const GB: u64 = 1_000_000_000;
const GIB: u64 = 1 << 30;

/// One namespace of the whole logical capacity, 4 KiB mapping unit, 1 MiB erase unit.
fn cfg(logical: u64, physical: u64, placement: Placement) -> DeviceConfig {
    DeviceConfig {
        logical_bytes: logical,
        physical_bytes: physical,
        mapping_unit: MU,
        erase_unit_bytes: 1 << 20,
        gc_policy: GcPolicy::Greedy,
        gc_free_min: 2,
        gc_free_target: 2,
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement,
        namespaces: vec![NamespaceConfig { name: "ns1".into(), size_bytes: logical, placement_handles: vec![0] }],
        seed: 1,
        slc_cache: None,
    }
}

#[test]
fn zero_op_explains_why_and_what_to_write() {
    let e = cfg(2 * GB, 2 * GB, Placement::Conventional).geometry().unwrap_err().to_string();
    assert!(e.starts_with("no spare erase units: physical capacity") && e.contains("equals logical"), "{e}");
    assert!(e.contains("(over_provisioning = 0)") && e.contains("garbage collection"), "{e}");
    assert!(e.contains("(gc_free_target 2 + 2 open frontier(s) + 1) x 1 reclaim group(s) = 5, here 0"), "{e}");
    assert!(e.contains("raw_capacity = \"2GiB\" with capacity = \"2GB\"") && e.contains("over_provisioning > 0"), "{e}");
    // Device::new reports the same.
    assert_eq!(Device::new(cfg(2 * GB, 2 * GB, Placement::Conventional)).err().map(|e| e.to_string()), Some(e));

    // Streams and FDP are flash FTLs too; a capacity that is not whole GB gets the generic example.
    let fdp = Placement::Fdp { reclaim_groups: 2, ruh_types: vec![RuhType::InitiallyIsolated; 4] };
    let e = cfg(GIB, GIB, fdp).geometry().unwrap_err().to_string();
    assert!(e.contains("(gc_free_target 2 + 5 open frontier(s) + 1) x 2 reclaim group(s) = 16, here 0"), "{e}");
    assert!(e.contains("raw_capacity = \"2048GiB\" with capacity = \"2TB\""), "{e}");
    let e = cfg(GIB, GIB, Placement::Streams { streams: 4 }).geometry().unwrap_err().to_string();
    assert!(e.starts_with("no spare erase units"), "{e}");
    // Whole TB: the raw capacity in TiB, written in GiB.
    let mut c = cfg(2000 * GB, 2000 * GB, Placement::Conventional);
    c.erase_unit_bytes = 64 << 20;
    let e = c.geometry().unwrap_err().to_string();
    assert!(e.contains("raw_capacity = \"2048GiB\" with capacity = \"2TB\""), "{e}");

    // Less flash than logical capacity cannot be described at all.
    let e = cfg(2 * GIB, GIB, Placement::Conventional).geometry().unwrap_err().to_string();
    assert!(e.contains("below the logical capacity"), "{e}");
}

#[test]
fn client_drive_2gb_on_2gib_runs_gc_with_a_sane_waf() {
    // The full-size client drive describes fine: 2 TB logical on 2048 GiB (2 TiB) of flash,
    // 9.95% OP from the TB/TiB difference.
    let full = cfg(2000 * GB, 2048 * GIB, Placement::Conventional).geometry().unwrap();
    assert!((full.op_logical() - 0.099511627776).abs() < 1e-4, "{}", full.op_logical());
    // Scaled down to 2 GB on 2 GiB it runs GC, with the smaller GB/GiB difference (7.37% OP),
    // the harder case of the two.
    let c = cfg(2 * GB, 2 * GIB, Placement::Conventional);
    let g = c.geometry().unwrap();
    assert!((g.op_logical() - 0.073741824).abs() < 1e-3, "{}", g.op_logical());
    assert_eq!(g.spare_eus(), 2048 - 1908);
    let mut dev = Device::new(c).unwrap();
    let units = g.namespace_units;
    let waf = steady_waf(&mut dev, 5, 2 * units, units);
    let want = waf_greedy(g.effective_alpha(), g.units_per_eu as f64);
    assert!(dev.counters().gc_units > 0 && dev.counters().erases > 0);
    assert!((waf / want - 1.0).abs() < 0.1, "WAF {waf:.3}, greedy theory {want:.3}");
}
