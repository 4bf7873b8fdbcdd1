//! `wafsim bench`: steady-state uniform random 4 KiB writes on a large conventional device.

use std::time::Instant;
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng};

/// Benchmark parameters (defaults are the target: OP 7%, 2^26 mapping units).
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub mapping_units_log2: u32,
    pub over_provisioning: f64,
    /// Erase unit size; None = 2^(log2 - 12) mapping units clamped to 64..=16384 (64 MiB at the
    /// default 2^26 units, about 4,400 erase units at any size).
    pub erase_unit_bytes: Option<u64>,
    pub gc_policy: GcPolicy,
    /// Random writes before measuring, in multiples of the logical capacity.
    pub warmup_fills: f64,
    /// Random writes measured, in multiples of the logical capacity.
    pub measure_fills: f64,
    pub seed: u64,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            mapping_units_log2: 26,
            over_provisioning: 0.07,
            erase_unit_bytes: None,
            gc_policy: GcPolicy::Greedy,
            warmup_fills: 1.0,
            measure_fills: 1.0,
            seed: 1,
        }
    }
}

/// Figures measured by [`run_bench`].
#[derive(Debug, Clone)]
pub struct BenchResult {
    pub mapping_units: u64,
    pub erase_units: u32,
    pub media_writes_per_sec: f64,
    pub host_writes_per_sec: f64,
    pub waf: f64,
    pub bytes_per_mapping_unit: f64,
    pub seconds: f64,
}

const MU: u32 = 4096;

/// Run the benchmark on the calling thread; `progress` gets the phase name.
pub fn run_bench(cfg: &BenchConfig, mut progress: impl FnMut(&str)) -> anyhow::Result<BenchResult> {
    let units = 1u64 << cfg.mapping_units_log2;
    let logical = units * MU as u64;
    let eu = cfg
        .erase_unit_bytes
        .unwrap_or_else(|| (1u64 << cfg.mapping_units_log2.saturating_sub(12)).clamp(64, 16384) * MU as u64);
    let physical = ((logical as f64) * (1.0 + cfg.over_provisioning)).round() as u64;
    let physical = physical.next_multiple_of(eu);
    let mut dev = Device::new(DeviceConfig {
        logical_bytes: logical,
        physical_bytes: physical,
        mapping_unit: MU,
        erase_unit_bytes: eu,
        gc_policy: cfg.gc_policy,
        gc_free_min: 2,
        gc_free_target: 2,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig { name: "bench".into(), size_bytes: logical, placement_handles: vec![0] }],
        seed: cfg.seed,
    })?;
    let mem = dev.geometry().memory_bytes();
    progress("precondition (sequential fill)");
    let mut batch = Vec::with_capacity(4096);
    for off in (0..units).step_by(32) {
        dev.submit(&Io { op: Op::Write, ns: 0, offset: off * MU as u64, len: 32 * MU, pid: Pid::NONE })?;
    }
    let mut rng = Rng::new(cfg.seed);
    let mut random = |dev: &mut Device, n: u64| -> anyhow::Result<()> {
        let mut left = n;
        while left > 0 {
            let k = left.min(4096);
            batch.clear();
            for _ in 0..k {
                batch.push(Io { op: Op::Write, ns: 0, offset: rng.below(units) * MU as u64, len: MU, pid: Pid::NONE });
            }
            dev.submit_batch(&batch)?;
            left -= k;
        }
        Ok(())
    };
    progress("warm-up (random writes)");
    random(&mut dev, (cfg.warmup_fills * units as f64) as u64)?;
    progress("measure (random writes)");
    let before = dev.counters().clone();
    let t0 = Instant::now();
    random(&mut dev, (cfg.measure_fills * units as f64) as u64)?;
    let secs = t0.elapsed().as_secs_f64();
    let d = dev.counters().delta(&before);
    Ok(BenchResult {
        mapping_units: units,
        erase_units: dev.geometry().erase_units,
        media_writes_per_sec: d.media_units() as f64 / secs,
        host_writes_per_sec: d.host_units as f64 / secs,
        waf: d.media_units() as f64 / d.host_units as f64,
        bytes_per_mapping_unit: mem as f64 / units as f64,
        seconds: secs,
    })
}

/// Figures measured by [`run_timed_bench`].
#[derive(Debug, Clone)]
pub struct TimedBenchResult {
    pub ios: u64,
    pub wall_seconds: f64,
    pub simulated_seconds: f64,
    pub ios_per_sec: f64,
    pub waf: f64,
    pub write_iops_simulated: f64,
}

/// Timed mode: uniform random 4 KiB writes with GC, one job at queue depth 64, on a TLC device
/// of 2^`mapping_units_log2` mapping units (16 dies, 4 channels, 96 MiB erase units, OP 7%), after a sequential
/// fill and one capacity of warm-up writes. Measures simulated I/Os per wall-clock second.
pub fn run_timed_bench(mapping_units_log2: u32, fills: f64, mut progress: impl FnMut(&str)) -> anyhow::Result<TimedBenchResult> {
    use wafsim_time::{run, JobSpec, Timeline, TimingConfig};
    use wafsim_workload::synthetic::{Distribution, Pattern, Synthetic, SyntheticSpec};
    let tc = TimingConfig { mapping_unit: MU, ..TimingConfig::plain_tlc(16, 4) };
    // Erase unit: 32 program units on every die (24,576 mapping units, 96 MiB), so erases cost
    // about what they cost on a real superblock per byte written.
    let np = tc.units_per_program() * tc.dies * 32;
    let units = 1u64 << mapping_units_log2;
    let eus = ((units as f64 * 1.07) / np as f64).ceil() as u32;
    let cfg = DeviceConfig::single_namespace(eus, np, MU, 0.07, GcPolicy::Greedy, 1);
    let mut dev = Device::new(cfg)?;
    let ns = dev.namespace_bytes(0);
    progress("precondition (sequential fill, untimed)");
    crate::run::precondition(&mut dev)?;
    let mut tl = Timeline::new(tc, &mut dev);
    let job = |amount: u64, seed: u64| -> anyhow::Result<JobSpec> {
        let src = Synthetic::new(SyntheticSpec {
            ns: 0,
            ns_bytes: ns,
            pattern: Pattern::Random(Distribution::Uniform),
            block_size: MU,
            amount,
            trim_fraction: 0.0,
            pid: Pid::NONE,
            seed,
        })
        .map_err(anyhow::Error::msg)?;
        Ok(JobSpec::new("randwrite", Box::new(src), 64, 0))
    };
    progress("warm-up (timed random writes)");
    run(&mut dev, &mut tl, vec![job(ns, 2)?])?;
    progress("measure (timed random writes)");
    let before = dev.counters().clone();
    let t0 = Instant::now();
    let r = run(&mut dev, &mut tl, vec![job((fills * ns as f64) as u64, 3)?])?;
    let wall = t0.elapsed().as_secs_f64();
    let d = dev.counters().delta(&before);
    let j = &r.jobs[0];
    Ok(TimedBenchResult {
        ios: j.write.ios,
        wall_seconds: wall,
        simulated_seconds: (r.end_ns - r.start_ns) as f64 * 1e-9,
        ios_per_sec: j.write.ios as f64 / wall,
        waf: d.media_units() as f64 / d.host_units as f64,
        write_iops_simulated: j.iops(&j.write),
    })
}
