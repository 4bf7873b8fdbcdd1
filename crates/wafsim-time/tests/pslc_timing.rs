//! The pSLC write cache in the timing model: a sequential fill of an empty drive writes at the
//! SLC program bandwidth until the cache is full, then at the TLC one; idle time folds.
use wafsim_core::pipeline::{IoSource, SourceError};
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, Op, Pid, SlcCacheConfig};
use wafsim_time::{run, JobSpec, TimingConfig, Timeline};

const MU: u32 = 4096;
const BS: u64 = 128 * 1024;

/// Sequential 128 KiB writes of `[from, to)`.
struct Span {
    at: u64,
    to: u64,
}
impl IoSource for Span {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, SourceError> {
        let mut n = 0;
        while n < max && self.at < self.to {
            let len = BS.min(self.to - self.at) as u32;
            out.push(Io { op: Op::Write, ns: 0, offset: self.at, len, pid: Pid::NONE });
            self.at += len as u64;
            n += 1;
        }
        Ok(n)
    }
}

/// 16 dies on 4 channels: TLC 16 x 192 KiB / 937.5 us = 3.36 GB/s, SLC 16 x 64 KiB / 200 us
/// = 5.24 GB/s (below the 6.4 GB/s of the channels and PCIe 4.0 x4).
fn timing() -> TimingConfig {
    TimingConfig { mapping_unit: MU, write_buffer_bytes: 4 << 20, ..TimingConfig::plain_tlc(16, 4) }
}

/// 256 erase units of 8 program units per die, OP 50%, a dynamic cache of 20% of free space.
fn device(t: &TimingConfig) -> Device {
    let np = t.units_per_program() * t.dies * 8;
    let mut cfg = DeviceConfig::single_namespace(256, np, MU, 0.5, GcPolicy::Greedy, 1);
    cfg.slc_cache = Some(SlcCacheConfig { static_bytes: 0, dynamic: 0.2, bits_per_cell: 3, count_slc_programs: true });
    Device::new(cfg).unwrap()
}

fn job(from: u64, to: u64, group: u32) -> JobSpec {
    JobSpec::new("fill", Box::new(Span { at: from, to }), 32, group)
}

#[test]
fn a_sequential_fill_steps_from_slc_to_tlc_speed_where_the_cache_is_full() {
    let t = timing();
    let slc_bw = t.dies as f64 * t.slc_program_bytes() as f64 / (t.nand.t_prog_slc_ns as f64 * 1e-9);
    let tlc_bw = t.program_bandwidth();
    let mut dev = device(&t);
    let ns = dev.namespace_bytes(0);
    let cap_bytes = (dev.geometry().units_per_eu / 3) as u64 * MU as u64;
    // The model's sizing: k SLC units in use allow floor(0.2 x (U - k x cap) / cap); the cache
    // stops at the first k that reaches its allowance.
    let u = ns / MU as u64;
    let cap = cap_bytes / MU as u64;
    let k = (0..).find(|&k| k >= (0.2 * (u - k * cap) as f64 / cap as f64) as u64).unwrap();
    let cache = k * cap_bytes;
    let mut tl = Timeline::new(t.clone(), &mut dev);
    // Intervals of a tenth of the cache, up to twice its size.
    let step = cache / 10 / BS * BS;
    let mut bw = Vec::new();
    let mut at = 0;
    for i in 0..20 {
        let r = run(&mut dev, &mut tl, vec![job(at, at + step, i)]).unwrap();
        bw.push(r.jobs[0].bandwidth(&r.jobs[0].write));
        at += step;
    }
    eprintln!("cache {cache} B; SLC {slc_bw:.3e} B/s, TLC {tlc_bw:.3e} B/s; per interval: {:?}", bw.iter().map(|b| format!("{:.2e}", b)).collect::<Vec<_>>());
    // Intervals 1..9 lie inside the cache, 11.. beyond it (the first fills the write buffer at
    // link speed, the tenth straddles the step).
    for (i, &b) in bw.iter().enumerate() {
        let want = match i {
            1..=8 => slc_bw,
            11.. => tlc_bw,
            _ => continue,
        };
        assert!((b - want).abs() / want < 0.05, "interval {i}: {b:.4e} B/s, want {want:.4e}");
    }
    let c = dev.counters();
    assert_eq!(c.slc_units * MU as u64, cache, "the cache took what the model sizes");
    assert_eq!(c.fold_units, 0);
}

#[test]
fn idle_time_folds_the_cache() {
    let t = timing();
    let mut dev = device(&t);
    let mut tl = Timeline::new(t, &mut dev);
    let burst = 64 << 20;
    run(&mut dev, &mut tl, vec![job(0, burst, 0)]).unwrap();
    assert_eq!(dev.counters().fold_units, 0);
    // 128 KiB writes at 100 IOPS: the host is idle almost all the time.
    let mut j = job(burst, burst + 40 * BS, 1);
    j.rate_iops = Some(100.0);
    run(&mut dev, &mut tl, vec![j]).unwrap();
    let c = dev.counters();
    // Every full SLC unit of the burst is folded (the open one stays).
    let cap = (dev.geometry().units_per_eu / 3) as u64;
    assert_eq!(c.fold_units, (burst / MU as u64) / cap * cap);
    assert!(tl.media.busy.gc_ns() > 0);
}
