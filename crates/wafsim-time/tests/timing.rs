//! Timing model against first principles: program bandwidth, QD1 read latency, Little's law.
use wafsim_core::{Device, DeviceConfig, GcPolicy, Io, Op, Pid};
use wafsim_core::pipeline::IoSource;
use wafsim_time::{run, JobSpec, NandTiming, TimingConfig, Timeline};
use wafsim_workload::synthetic::{Distribution, Pattern, Synthetic, SyntheticSpec};

const MU: u32 = 4096;

fn cfg(dies: u32, channels: u32, ch_bw: f64) -> TimingConfig {
    TimingConfig { channel_bytes_per_sec: ch_bw, mapping_unit: MU, ..TimingConfig::plain_tlc(dies, channels) }
}

/// A device whose erase unit spans `dies` dies with 4 blocks of 48 program units... i.e. the
/// erase unit is a whole number of program units on every die.
fn device(t: &TimingConfig, eus: u32, op: f64) -> Device {
    let np = t.units_per_program() * t.dies * 8;
    Device::new(DeviceConfig::single_namespace(eus, np, MU, op, GcPolicy::Greedy, 1)).unwrap()
}

fn synthetic(ns_bytes: u64, pattern: Pattern, bs: u32, amount: u64, seed: u64) -> Box<dyn IoSource> {
    Box::new(Synthetic::new(SyntheticSpec { ns: 0, ns_bytes, pattern, block_size: bs, amount, trim_fraction: 0.0, pid: Pid::NONE, seed }).unwrap())
}

fn next_group() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn job(name: &str, source: Box<dyn IoSource>, iodepth: u32, ramp_ns: u64) -> JobSpec {
    JobSpec { ramp_ns, ..JobSpec::new(name, source, iodepth, next_group()) }
}

fn seq_write_bandwidth(t: TimingConfig) -> (f64, f64) {
    let mut dev = device(&t, 256, 0.5);
    let ns = dev.namespace_bytes(0);
    let mut tl = Timeline::new(t.clone(), &mut dev);
    // 80% of one pass: no GC. The first 20 ms fill the write buffer at link speed: ramp past it.
    let src = synthetic(ns, Pattern::Sequential, 128 * 1024, ns / 10 * 8, 1);
    let r = run(&mut dev, &mut tl, vec![job("w", src, 64, 100_000_000)]).unwrap();
    assert_eq!(dev.counters().gc_units, 0);
    (r.jobs[0].bandwidth(&r.jobs[0].write), t.program_bandwidth())
}

#[test]
fn sequential_write_bandwidth_is_the_program_bandwidth() {
    // Die-bound: 16 dies x 192 KiB / 937.5 us = 3.36 GB/s < 4 x 1.6 GB/s channels < PCIe.
    for (t, what) in [
        (cfg(16, 4, 1.6e9), "die-bound"),
        (cfg(16, 1, 1.0e9), "channel-bound"),
        (cfg(64, 16, 1.6e9), "host-link-bound"),
    ] {
        let (got, want) = seq_write_bandwidth(t);
        eprintln!("{what}: {got:.4e} B/s vs {want:.4e}");
        assert!((got - want).abs() / want < 0.02, "{what}: {got} vs {want}");
    }
}

#[test]
fn qd1_read_iops_of_one_die() {
    let t = cfg(1, 1, 1.6e9);
    let mut dev = device(&t, 64, 0.5);
    let ns = dev.namespace_bytes(0);
    for off in (0..ns).step_by(128 * 1024) {
        dev.submit(&Io { op: Op::Write, ns: 0, offset: off, len: (128 * 1024).min((ns - off) as u32), pid: Pid::NONE }).unwrap();
    }
    let mut tl = Timeline::new(t.clone(), &mut dev);
    tl.now = 10_000_000_000; // well after every program of the fill
    let reads = Box::new(ReadsOf(synthetic(ns, Pattern::Random(Distribution::Uniform), 4096, 20_000 * 4096, 2)));
    let r = run(&mut dev, &mut tl, vec![job("r", reads, 1, 0)]).unwrap();
    let j = &r.jobs[0];
    let per_io = t.nand.t_read_ns as f64 + 4096.0 / t.channel_bytes_per_sec * 1e9 + 4096.0 / t.host_link_bytes_per_sec * 1e9;
    let want = 1e9 / per_io;
    let got = j.iops(&j.read);
    eprintln!("QD1 read IOPS {got:.1} vs 1/(tR + transfer) = {want:.1}");
    assert!((got - want).abs() / want < 0.01);
}

/// Turns a write source into reads of the same blocks.
struct ReadsOf(Box<dyn IoSource>);
impl IoSource for ReadsOf {
    fn fill(&mut self, out: &mut Vec<Io>, max: usize) -> Result<usize, wafsim_core::pipeline::SourceError> {
        let start = out.len();
        let n = self.0.fill(out, max)?;
        for io in &mut out[start..] {
            io.op = Op::Read;
        }
        Ok(n)
    }
}

#[test]
fn littles_law_per_job_with_gc() {
    let t = cfg(8, 4, 1.6e9);
    let mut dev = device(&t, 128, 0.2);
    let ns = dev.namespace_bytes(0);
    for off in (0..ns).step_by(128 * 1024) {
        dev.submit(&Io { op: Op::Write, ns: 0, offset: off, len: (128 * 1024).min((ns - off) as u32), pid: Pid::NONE }).unwrap();
    }
    let mut tl = Timeline::new(t, &mut dev);
    tl.now = 10_000_000_000;
    let w = synthetic(ns, Pattern::Random(Distribution::Uniform), 4096, ns * 2, 3);
    let r = Box::new(ReadsOf(synthetic(ns, Pattern::Random(Distribution::Uniform), 4096, ns / 4, 4)));
    let run = run(&mut dev, &mut tl, vec![job("w", w, 32, 50_000_000), job("r", r, 8, 50_000_000)]).unwrap();
    assert!(dev.counters().gc_units > 0, "the run must exercise GC");
    for j in &run.jobs {
        let little = j.total_iops() * j.mean_latency_ns() * 1e-9;
        eprintln!("{}: mean in flight {:.3}, IOPS x latency {:.3}", j.name, j.mean_inflight, little);
        assert!((little - j.mean_inflight).abs() / j.mean_inflight < 0.02);
    }
    assert!(run.busy.gc_ns() > 0 && run.busy.host_ns() > 0);
}

#[test]
fn background_gc_runs_when_the_host_is_idle() {
    let run_with = |bg: u32| {
        let mut t = cfg(8, 4, 1.6e9);
        t.background_gc_free = bg;
        let mut dev = device(&t, 64, 0.2);
        let ns = dev.namespace_bytes(0);
        for off in (0..ns).step_by(128 * 1024) {
            dev.submit(&Io { op: Op::Write, ns: 0, offset: off, len: (128 * 1024).min((ns - off) as u32), pid: Pid::NONE }).unwrap();
        }
        let mut tl = Timeline::new(t, &mut dev);
        tl.now = 10_000_000_000;
        // 1,000 IOPS at QD 1: the host is idle most of the time.
        let w = synthetic(ns, Pattern::Random(Distribution::Uniform), 4096, ns / 2, 5);
        let mut j = job("w", w, 1, 0);
        j.rate_iops = Some(1000.0);
        let r = run(&mut dev, &mut tl, vec![j]).unwrap();
        (dev.counters().background_victims, dev.free_units()[0], r.jobs[0].write.lat.percentile(99.0))
    };
    let (victims_off, free_off, _) = run_with(0);
    let (victims_on, free_on, _) = run_with(6);
    assert_eq!(victims_off, 0);
    assert!(victims_on > 0, "background GC must run in idle time");
    assert!(free_on >= 6 && free_on > free_off, "free pool kept at the background target: {free_on} vs {free_off}");
}

#[test]
fn ramp_time_adds_to_runtime() {
    let t = cfg(4, 2, 1.6e9);
    let mut dev = device(&t, 64, 0.5);
    let ns = dev.namespace_bytes(0);
    let mut tl = Timeline::new(t, &mut dev);
    let w = synthetic(ns, Pattern::Sequential, 4096, u64::MAX / 2, 1);
    let mut j = job("w", w, 4, 5_000_000);
    j.runtime_ns = Some(10_000_000);
    j.rate_iops = Some(100_000.0);
    let r = run(&mut dev, &mut tl, vec![j]).unwrap();
    let window = r.jobs[0].window_ns as f64;
    assert!((window - 10e6).abs() < 0.2e6, "measured window {window} ns should be the 10 ms runtime after a 5 ms ramp");
}

#[test]
fn a_large_read_of_scattered_units_pays_an_array_read_per_page() {
    let t = cfg(1, 1, 1.6e9);
    let mut dev = device(&t, 64, 0.5);
    let ns = dev.namespace_bytes(0);
    // Random 4 KiB overwrites scatter logically adjacent units over many pages.
    let mut src = synthetic(ns, Pattern::Random(Distribution::Uniform), 4096, ns * 2, 9);
    let mut ios = Vec::new();
    while src.fill(&mut ios, 4096).unwrap() > 0 {
        dev.submit_batch(&ios).unwrap();
        ios.clear();
    }
    let mut tl = Timeline::new(t.clone(), &mut dev);
    tl.now = 100_000_000_000;
    let reads = Box::new(ReadsOf(synthetic(ns, Pattern::Sequential, 128 * 1024, 100 * 128 * 1024, 2)));
    let r = run(&mut dev, &mut tl, vec![job("r", reads, 1, 0)]).unwrap();
    let mean = r.jobs[0].read.lat.mean();
    assert!(mean > 10.0 * t.nand.t_read_ns as f64, "32 scattered units need many array reads: mean {mean} ns");
}

/// Reads beside a sustained sequential write: (read IOPS, mean read latency ns, write B/s).
fn reads_beside_writes(buffer: u64, suspend: Option<u32>) -> (f64, f64, f64) {
    let mut t = cfg(8, 4, 1.6e9);
    t.write_buffer_bytes = buffer;
    if let Some(n) = suspend {
        t.program_suspend = true;
        t.max_suspends = n;
        t.suspend_ns = 20_000;
    }
    let mut dev = device(&t, 64, 0.5);
    let ns = dev.namespace_bytes(0);
    for off in (0..ns / 2).step_by(128 * 1024) {
        dev.submit(&Io { op: Op::Write, ns: 0, offset: off, len: 128 * 1024, pid: Pid::NONE }).unwrap();
    }
    let mut tl = Timeline::new(t, &mut dev);
    tl.now = 10_000_000_000;
    let w = synthetic(ns, Pattern::Sequential, 128 * 1024, ns, 5);
    let r = Box::new(ReadsOf(synthetic(ns / 2, Pattern::Random(Distribution::Uniform), 4096, ns, 6)));
    let mut jw = job("w", w, 64, 20_000_000);
    let mut jr = job("r", r, 8, 20_000_000);
    jw.runtime_ns = Some(600_000_000);
    jr.runtime_ns = Some(600_000_000);
    let run = run(&mut dev, &mut tl, vec![jw, jr]).unwrap();
    let (w, r) = (&run.jobs[0], &run.jobs[1]);
    (r.iops(&r.read), r.read.lat.mean(), w.bandwidth(&w.write))
}

#[test]
fn reads_go_ahead_of_buffered_programs() {
    // A read waits for the operation on its die, not for the buffer to drain: its latency and
    // IOPS do not depend on the write buffer's size (issue: 197K / 66K / 19K IOPS for 16 / 64 /
    // 256 MiB when reads queued behind every buffered program).
    let tprog = NandTiming::preset("tlc").unwrap().t_prog_ns as f64;
    let (iops16, lat16, _) = reads_beside_writes(16 << 20, None);
    let (iops256, lat256, _) = reads_beside_writes(256 << 20, None);
    eprintln!("16 MiB: {iops16:.0} IOPS, {lat16:.0} ns; 256 MiB: {iops256:.0} IOPS, {lat256:.0} ns");
    assert!(lat16 < 2.0 * tprog && lat256 < 2.0 * tprog, "a read waits at most about one program");
    assert!((iops16 - iops256).abs() / iops16 < 0.05);
    // Suspends cut read latency further; a cap of one per program keeps writes going.
    let (_, lat_s, w_s) = reads_beside_writes(16 << 20, Some(1));
    let (_, lat_u, w_u) = reads_beside_writes(16 << 20, Some(1_000));
    eprintln!("suspend x1: {lat_s:.0} ns, {w_s:.3e} B/s; x1000: {lat_u:.0} ns, {w_u:.3e} B/s");
    assert!(lat_s < lat16 && lat_u <= lat_s);
    assert!(w_s >= w_u, "fewer suspends never slow writes more");
}

/// A saturating random writer after a sequential fill, on dies with no power budget (nothing
/// but the dies binds): WAF climbs from 1 to its steady value, and GC must keep up with it.
/// The work still owed to the dies when the last write completes stays a small fraction of
/// the run. (Weighing host and GC by the die time logged since the start, GC's share lagged
/// its demand and the owed work grew for as long as the run went on: 5.6% of the run here.)
#[test]
fn gc_keeps_up_with_a_saturating_writer_after_a_fill() {
    let t = cfg(16, 4, 1.6e9);
    assert_eq!(t.max_active_programs, 0, "no power budget");
    let mut dev = device(&t, 96, 0.07);
    let ns = dev.namespace_bytes(0);
    for off in (0..ns).step_by(128 * 1024) {
        dev.submit(&Io { op: Op::Write, ns: 0, offset: off, len: (128 * 1024).min((ns - off) as u32), pid: Pid::NONE }).unwrap();
    }
    let mut tl = Timeline::new(t, &mut dev);
    let w = synthetic(ns, Pattern::Random(Distribution::Uniform), 4096, ns * 3, 7);
    let r = run(&mut dev, &mut tl, vec![job("w", w, 64, 0)]).unwrap();
    let c = dev.counters();
    let waf = c.media_units() as f64 / c.host_units as f64;
    let owed = (r.drained_ns - r.end_ns) as f64 / (r.end_ns - r.start_ns) as f64;
    eprintln!("WAF {waf:.2}, {:.3} s simulated, GC owed at the end {:.2}% of it", (r.end_ns - r.start_ns) as f64 * 1e-9, owed * 100.0);
    assert!(waf > 3.0, "the run reaches a GC-heavy steady state (WAF {waf})");
    assert!(owed < 0.01, "GC owed at the end: {:.2}% of the run", owed * 100.0);
}
