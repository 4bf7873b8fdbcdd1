//! Helpers shared by the core's integration tests.
#![allow(dead_code)]

use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng};

pub const MU: u32 = 4096;

/// A device with `eus` erase units of `np` mapping units and logical capacity chosen so that
/// OP = (physical - logical) / logical = `op`, one namespace covering it all.
pub fn uniform_device(eus: u32, np: u32, op: f64, policy: GcPolicy) -> Device {
    let phys = eus as u64 * np as u64 * MU as u64;
    let logical_units = (eus as f64 * np as f64 / (1.0 + op)).floor() as u64;
    let logical = logical_units * MU as u64;
    Device::new(DeviceConfig {
        logical_bytes: logical,
        physical_bytes: phys,
        mapping_unit: MU,
        erase_unit_bytes: np as u64 * MU as u64,
        gc_policy: policy,
        gc_free_min: 2,
        gc_free_target: 2,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig { name: "ns".into(), size_bytes: logical, placement_handles: vec![0] }],
        seed: 1,
    })
    .unwrap()
}

pub fn write(ns: u32, unit: u64, units: u32) -> Io {
    Io { op: Op::Write, ns, offset: unit * MU as u64, len: units * MU, pid: Pid::NONE }
}

/// Sequentially fill every mapping unit of every namespace once.
pub fn precondition(dev: &mut Device) {
    for ns in 0..dev.namespace_count() {
        let units = dev.namespace_bytes(ns) / MU as u64;
        for u in 0..units {
            dev.submit(&write(ns, u, 1)).unwrap();
        }
    }
}

/// `n` uniform random single-unit writes to namespace 0, submitted in batches.
pub fn random_writes(dev: &mut Device, rng: &mut Rng, n: u64) {
    let units = dev.namespace_bytes(0) / MU as u64;
    let mut batch = Vec::with_capacity(1024);
    let mut left = n;
    while left > 0 {
        batch.clear();
        let k = left.min(1024);
        for _ in 0..k {
            batch.push(write(0, rng.below(units), 1));
        }
        dev.submit_batch(&batch).unwrap();
        left -= k;
    }
}

/// WAF over a window of `n` host writes after `warm` writes of warm-up (both in units).
pub fn steady_waf(dev: &mut Device, seed: u64, warm: u64, n: u64) -> f64 {
    let mut rng = Rng::new(seed);
    precondition(dev);
    random_writes(dev, &mut rng, warm);
    let before = dev.counters().clone();
    random_writes(dev, &mut rng, n);
    let d = dev.counters().delta(&before);
    d.media_units() as f64 / d.host_units as f64
}
