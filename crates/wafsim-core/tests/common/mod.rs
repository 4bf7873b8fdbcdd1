//! Helpers shared by the core's integration tests.
#![allow(dead_code)]

use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, Op, Pid, Rng};

pub const MU: u32 = 4096;

/// One-namespace conventional device with OP `op` ((physical - logical) / logical).
pub fn uniform_device(eus: u32, np: u32, op: f64, policy: GcPolicy) -> Device {
    Device::new(DeviceConfig::single_namespace(eus, np, MU, op, policy, 1)).unwrap()
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
