//! Running a variant: build the device(s), precondition, run the phases' workloads, collect
//! counters per phase, namespace, job and write frontier, and optionally a time series.

use crate::sources::{self, PhaseSources};
use crate::spec::{ExperimentSpec, Variant};
use anyhow::{anyhow, Context, Result};
use rayon::prelude::*;
use wafsim_core::counters::waf;
use wafsim_core::device::FrontierKind;
use wafsim_core::{Counters, Device, DeviceConfig, Io, Op, Pid};
use wafsim_workload::IoSource;

/// I/Os per batch handed to the device (the device prefetches map entries within a batch).
const BATCH: usize = 4096;
/// Block size of the sequential precondition fill.
const PRECONDITION_BS: u64 = 128 * 1024;

/// Per-namespace figures of the measured phases.
#[derive(Debug, Clone)]
pub struct NsResult {
    pub name: String,
    pub size_bytes: u64,
    pub host_bytes: u64,
    /// Media bytes attributed to the namespace: its host-written units plus GC copies of its data.
    pub media_bytes: u64,
    pub gc_bytes: u64,
    pub read_bytes: u64,
    pub trim_bytes: u64,
}

/// Per write-frontier figures (RUH, stream, or GC frontier) of the measured phases.
#[derive(Debug, Clone)]
pub struct FrontierResult {
    pub device: u32,
    /// "host" or "gc" or "gc-shared".
    pub kind: &'static str,
    pub rg: u32,
    /// RUH or stream id; None for shared GC frontiers.
    pub ruh: Option<u32>,
    pub host_bytes: u64,
    pub gc_bytes: u64,
    pub erases: u64,
}

/// Timed figures of one direction of a job.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirTiming {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub lat_mean_ns: f64,
    pub lat_p50_ns: u64,
    pub lat_p99_ns: u64,
    pub lat_p999_ns: u64,
    pub lat_p9999_ns: u64,
    pub lat_max_ns: u64,
}

/// Timed figures of one job (timing model on), over its window after ramp time.
#[derive(Debug, Clone, Copy, Default)]
pub struct JobTiming {
    pub read: DirTiming,
    pub write: DirTiming,
    pub trim: DirTiming,
    pub window_ns: u64,
    pub mean_inflight: f64,
    pub iodepth: u32,
}

impl JobTiming {
    fn from_engine(j: &wafsim_time::JobResult, iodepth: u32) -> JobTiming {
        let dir = |d: &wafsim_time::engine::DirStats| DirTiming {
            ios: d.ios,
            bytes: d.bytes,
            iops: j.iops(d),
            bytes_per_sec: j.bandwidth(d),
            lat_mean_ns: d.lat.mean(),
            lat_p50_ns: d.lat.percentile(50.0),
            lat_p99_ns: d.lat.percentile(99.0),
            lat_p999_ns: d.lat.percentile(99.9),
            lat_p9999_ns: d.lat.percentile(99.99),
            lat_max_ns: d.lat.max(),
        };
        JobTiming { read: dir(&j.read), write: dir(&j.write), trim: dir(&j.trim), window_ns: j.window_ns, mean_inflight: j.mean_inflight, iodepth }
    }
}

/// What one workload source (synthetic workload, fio job, trace set) issued.
#[derive(Debug, Clone)]
pub struct JobResult {
    pub phase: String,
    pub name: String,
    pub namespace: String,
    pub measured: bool,
    pub stats: wafsim_workload::SourceStats,
    /// Timed figures, when the timing model ran.
    pub timing: Option<JobTiming>,
}

/// Device-level timing of the measured phases (timing model on).
#[derive(Debug, Clone, Copy, Default)]
pub struct TimedSummary {
    /// Simulated time of the measured phases (longest device).
    pub elapsed_ns: u64,
    pub busy: wafsim_time::media::Busy,
    /// Dies over all devices (busy time is summed over dies).
    pub dies: u32,
    pub pe_cycles: u32,
}

/// Device-wide counters of one phase (summed over devices).
#[derive(Debug, Clone)]
pub struct PhaseResult {
    pub name: String,
    pub measured: bool,
    pub counters: Counters,
    pub mapping_unit: u32,
}

impl PhaseResult {
    pub fn waf(&self) -> f64 {
        waf(self.counters.media_units() * self.mapping_unit as u64, self.counters.host_write_bytes)
    }
}

/// One time-series sample: cumulative counters since the end of the built-in precondition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub phase: usize,
    pub host_bytes: u64,
    pub media_bytes: u64,
    pub gc_bytes: u64,
    pub erases: u64,
}

/// Everything measured for one variant.
#[derive(Debug, Clone)]
pub struct VariantResult {
    pub name: String,
    pub layout: String,
    pub placement: String,
    pub gc_policy: String,
    pub devices: u32,
    pub mapping_unit: u32,
    pub erase_unit_bytes: u64,
    /// Capacity scale the variant ran at (1 = full scale).
    pub scale: f64,
    /// Counters of the measured phases, summed over phases and devices.
    pub counters: Counters,
    pub phases: Vec<PhaseResult>,
    pub namespaces: Vec<NsResult>,
    pub jobs: Vec<JobResult>,
    pub frontiers: Vec<FrontierResult>,
    /// Erase count per erase unit over the device life: min, mean, max.
    pub erase_count: (u32, f64, u32),
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    pub op_logical: f64,
    /// Samples of device 0 (the shared device, or the first dedicated one).
    pub timeseries: Vec<Sample>,
    /// Non-fatal findings (unknown fio options and the like).
    pub warnings: Vec<String>,
    pub timed: Option<TimedSummary>,
}

impl VariantResult {
    pub fn hbmw(&self) -> u64 {
        self.counters.host_write_bytes
    }
    /// Media bytes written (host + GC programs).
    pub fn mbmw(&self) -> u64 {
        self.counters.media_units() * self.mapping_unit as u64
    }
    /// Media bytes erased.
    pub fn mbe(&self) -> u64 {
        self.counters.erases * self.erase_unit_bytes
    }
    pub fn waf(&self) -> f64 {
        waf(self.mbmw(), self.hbmw())
    }

    /// Projected drive life in years at full scale: rated P/E cycles x raw capacity over the
    /// measured media write rate (timed runs only).
    pub fn lifetime_years(&self) -> Option<f64> {
        let t = self.timed?;
        if t.elapsed_ns == 0 || self.mbmw() == 0 {
            return None;
        }
        let rate = self.mbmw() as f64 / (t.elapsed_ns as f64 * 1e-9); // bytes/s, scale-free
        let raw_full = self.physical_bytes as f64 / self.scale;
        Some(t.pe_cycles as f64 * raw_full / rate / (365.25 * 86_400.0))
    }

    /// Drive writes per day the rated P/E cycles sustain for 5 years at the measured WAF.
    pub fn sustainable_dwpd(&self) -> Option<f64> {
        let t = self.timed?;
        let w = self.waf();
        (w > 0.0).then(|| t.pe_cycles as f64 * self.physical_bytes as f64 / (w * self.logical_bytes as f64 * 5.0 * 365.0))
    }

    /// Drive writes per day the measured host write rate amounts to (full scale).
    pub fn measured_dwpd(&self) -> Option<f64> {
        let t = self.timed?;
        if t.elapsed_ns == 0 {
            return None;
        }
        let per_day = self.hbmw() as f64 / (t.elapsed_ns as f64 * 1e-9) * 86_400.0;
        Some(per_day / (self.logical_bytes as f64 / self.scale))
    }
}

/// Progress report.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Host bytes written or trimmed so far, and the planned total (0 when unknown).
    pub done_bytes: u64,
    pub total_bytes: u64,
    /// Host bytes written divided by the logical capacity.
    pub drive_writes: f64,
    pub waf: f64,
}

/// Options of a run that do not change its results.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Take a time-series sample every this many host bytes written (None: no time series).
    pub sample_every_bytes: Option<u64>,
}

/// Run several variants in parallel (one per thread); results keep the variants' order.
pub fn run_variants(variants: &[Variant], opts: RunOptions, progress: &(dyn Fn(&str, Progress) + Sync)) -> Vec<Result<VariantResult>> {
    variants.par_iter().map(|v| run_variant(v, opts, &|p| progress(&v.name, p))).collect()
}

/// One device of a variant.
struct DevicePlan {
    cfg: DeviceConfig,
}

fn plan(spec: &ExperimentSpec) -> Result<Vec<DevicePlan>> {
    let cfg = spec.device.to_config(&spec.namespace, spec.seed)?;
    if spec.layout != "dedicated" {
        return Ok(vec![DevicePlan { cfg }]);
    }
    let ratio = cfg.physical_bytes as f64 / cfg.logical_bytes as f64;
    cfg.namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            let mut c = cfg.clone();
            c.logical_bytes = ns.size_bytes;
            c.physical_bytes = (ns.size_bytes as f64 * ratio).round() as u64;
            c.namespaces = vec![ns.clone()];
            c.seed = cfg.seed.wrapping_add(i as u64);
            c.geometry().map_err(|e| anyhow!("dedicated drive for namespace {:?}: {e}", ns.name))?;
            Ok(DevicePlan { cfg: c })
        })
        .collect()
}

/// Sequential fill of every LBA of every namespace, 128 KiB at a time, round-robin across
/// namespaces (as when every tenant preconditions its disk at once).
pub fn precondition(dev: &mut Device) -> Result<()> {
    let n = dev.namespace_count();
    let mut pos = vec![0u64; n as usize];
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        for ns in 0..n {
            let size = dev.namespace_bytes(ns);
            let p = pos[ns as usize];
            if p < size {
                let len = PRECONDITION_BS.min(size - p) as u32;
                batch.push(Io { op: Op::Write, ns, offset: p, len, pid: Pid::NONE });
                pos[ns as usize] = p + len as u64;
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        dev.submit_batch(&batch)?;
    }
}

/// Counters without the per-namespace and per-frontier lists (for summing across devices).
fn totals(c: &Counters) -> Counters {
    let mut t = c.clone();
    t.namespaces.clear();
    t.frontiers.clear();
    t
}

/// Run one variant on the calling thread.
pub fn run_variant(v: &Variant, opts: RunOptions, progress: &dyn Fn(Progress)) -> Result<VariantResult> {
    let spec = &v.spec;
    let ctx = || format!("variant {:?}", v.name);
    let devices = plan(spec).with_context(ctx)?;
    let phases = spec.phases();
    let first_cfg = devices[0].cfg.clone();
    let mu = first_cfg.mapping_unit as u64;

    let mut result = VariantResult {
        name: v.name.clone(),
        layout: spec.layout.clone(),
        placement: first_cfg.placement.to_string(),
        gc_policy: first_cfg.gc_policy.to_string(),
        devices: devices.len() as u32,
        mapping_unit: first_cfg.mapping_unit,
        erase_unit_bytes: first_cfg.erase_unit_bytes,
        scale: spec.scale,
        counters: Counters::default(),
        phases: phases
            .iter()
            .map(|p| PhaseResult { name: p.name.clone(), measured: p.measure, counters: Counters::default(), mapping_unit: first_cfg.mapping_unit })
            .collect(),
        namespaces: Vec::new(),
        jobs: Vec::new(),
        frontiers: Vec::new(),
        erase_count: (0, 0.0, 0),
        logical_bytes: 0,
        physical_bytes: 0,
        op_logical: 0.0,
        timeseries: Vec::new(),
        warnings: Vec::new(),
        timed: None,
    };
    let fio_files = sources::load_fio_files(spec, &phases, &mut result.warnings).with_context(ctx)?;

    // Planned host bytes over all devices and phases, for progress.
    let mut total = 0u64;
    for d in &devices {
        for (pi, p) in phases.iter().enumerate() {
            total += sources::planned_bytes(p, &fio_files[pi], &d.cfg)?;
        }
    }
    let logical_total: u64 = devices.iter().map(|d| d.cfg.logical_bytes).sum();

    let mut done_before = 0u64;
    let mut erase_counts: Vec<u32> = Vec::new();
    for (di, d) in devices.iter().enumerate() {
        let mut dev = Device::new(d.cfg.clone()).map_err(|e| anyhow!("{}: {e}", ctx()))?;
        result.logical_bytes += d.cfg.logical_bytes;
        result.physical_bytes += dev.geometry().physical_units() * mu;
        if spec.precondition {
            precondition(&mut dev).with_context(|| format!("{}: precondition", ctx()))?;
        }
        let tcfg = crate::timing::timing_config(spec, &d.cfg).with_context(ctx)?;
        let mut timeline = tcfg.map(|t| wafsim_time::Timeline::new(t, &mut dev));
        let mut device_measured_ns = 0u64;
        let start = dev.counters().clone();
        let mut measured_ns: Option<Counters> = None;
        let mut next_sample = 0u64;
        let mut batch = if opts.sample_every_bytes.is_some() { 64 } else { BATCH };
        for (pi, p) in phases.iter().enumerate() {
            let phase_start = dev.counters().clone();
            if let Some(tl) = &mut timeline {
                let parts = sources::build_parts(spec, pi, p, &fio_files[pi], &dev, true).with_context(|| format!("{}: phase {:?}", ctx(), p.name))?;
                let labels: Vec<_> = parts.parts.iter().map(|x| (x.label.clone(), x.timing.iodepth)).collect();
                let jobs = parts
                    .parts
                    .into_iter()
                    .map(|x| wafsim_time::JobSpec {
                        name: x.label.name.clone(),
                        source: x.source,
                        iodepth: x.timing.iodepth,
                        rate_iops: x.timing.rate_iops,
                        rate_bytes: x.timing.rate_bytes,
                        runtime_ns: x.timing.runtime_ns,
                        ramp_ns: x.timing.ramp_ns,
                    })
                    .collect();
                let tr = wafsim_time::run(&mut dev, tl, jobs).with_context(|| format!("{}: phase {:?}", ctx(), p.name))?;
                if let Some(e) = parts.errors.first_error() {
                    return Err(anyhow!("{}: phase {:?}: {e}", ctx(), p.name));
                }
                if p.measure {
                    device_measured_ns += tr.end_ns - tr.start_ns;
                    let s = result.timed.get_or_insert(TimedSummary { pe_cycles: tl.cfg.nand.pe_cycles, ..Default::default() });
                    s.busy.host_program_ns += tr.busy.host_program_ns;
                    s.busy.host_read_ns += tr.busy.host_read_ns;
                    s.busy.gc_program_ns += tr.busy.gc_program_ns;
                    s.busy.gc_read_ns += tr.busy.gc_read_ns;
                    s.busy.erase_ns += tr.busy.erase_ns;
                }
                for ((label, iodepth), j) in labels.into_iter().zip(&tr.jobs) {
                    result.jobs.push(JobResult {
                        phase: p.name.clone(),
                        name: label.name,
                        namespace: label.namespace,
                        measured: p.measure,
                        stats: wafsim_workload::SourceStats {
                            ios: j.read.ios + j.write.ios + j.trim.ios,
                            write_ios: j.write.ios,
                            read_ios: j.read.ios,
                            trim_ios: j.trim.ios,
                            write_bytes: j.write.bytes,
                            read_bytes: j.read.bytes,
                            trim_bytes: j.trim.bytes,
                        },
                        timing: Some(JobTiming::from_engine(j, iodepth)),
                    });
                }
                let since = dev.counters().delta(&start);
                progress(Progress {
                    done_bytes: done_before + since.host_write_bytes + since.trim_bytes,
                    total_bytes: total,
                    drive_writes: (done_before + since.host_write_bytes) as f64 / logical_total as f64,
                    waf: waf(since.media_units() * mu, since.host_write_bytes),
                });
                if di == 0 && opts.sample_every_bytes.is_some() {
                    result.timeseries.push(sample(pi, &since, mu));
                }
            } else {
                let PhaseSources { mut source, labels, errors } =
                    sources::build(spec, pi, p, &fio_files[pi], &dev).with_context(|| format!("{}: phase {:?}", ctx(), p.name))?;
                let mut buf = Vec::with_capacity(BATCH);
                loop {
                    buf.clear();
                    if source.fill(&mut buf, batch) == 0 {
                        break;
                    }
                    if let Some(every) = opts.sample_every_bytes {
                        // Keep a batch below a tenth of the sampling interval so samples land close
                        // to where they are due.
                        let bytes: u64 = buf.iter().map(|io| io.len as u64).sum();
                        let per_io = (bytes / buf.len() as u64).max(1);
                        batch = ((every / 10) / per_io).clamp(16, BATCH as u64) as usize;
                    }
                    dev.submit_batch(&buf).with_context(|| format!("{}: phase {:?}", ctx(), p.name))?;
                    let since = dev.counters().delta(&start);
                    if di == 0 {
                        if let Some(every) = opts.sample_every_bytes {
                            if since.host_write_bytes >= next_sample {
                                result.timeseries.push(sample(pi, &since, mu));
                                // Samples on a fixed grid of `every` bytes; a batch may skip grid points.
                                while next_sample <= since.host_write_bytes {
                                    next_sample += every.max(1);
                                }
                            }
                        }
                    }
                    progress(Progress {
                        done_bytes: done_before + since.host_write_bytes + since.trim_bytes,
                        total_bytes: total,
                        drive_writes: (done_before + since.host_write_bytes) as f64 / logical_total as f64,
                        waf: waf(since.media_units() * mu, since.host_write_bytes),
                    });
                }
                if let Some(e) = errors.first_error() {
                    return Err(anyhow!("{}: phase {:?}: {e}", ctx(), p.name));
                }
                for (label, stats) in labels.iter().zip(source.stats()) {
                    result.jobs.push(JobResult {
                        phase: p.name.clone(),
                        name: label.name.clone(),
                        namespace: label.namespace.clone(),
                        measured: p.measure,
                        stats: *stats,
                        timing: None,
                    });
                }
            }
            let d_phase = dev.counters().delta(&phase_start);
            result.phases[pi].counters.add(&totals(&d_phase));
            if p.measure {
                result.counters.add(&totals(&d_phase));
                match &mut measured_ns {
                    None => measured_ns = Some(d_phase.clone()),
                    Some(m) => add_lists(m, &d_phase),
                }
            }
        }
        if let Some(t) = &mut result.timed {
            t.elapsed_ns = t.elapsed_ns.max(device_measured_ns);
            t.dies += timeline.as_ref().map_or(0, |tl| tl.cfg.dies);
        }
        let since = dev.counters().delta(&start);
        done_before += since.host_write_bytes + since.trim_bytes;
        if di == 0 && opts.sample_every_bytes.is_some() && result.timeseries.last().map(|s| s.host_bytes) != Some(since.host_write_bytes) {
            result.timeseries.push(sample(phases.len().saturating_sub(1), &since, mu));
        }
        let m = measured_ns.unwrap_or_else(|| dev.counters().delta(dev.counters()));
        for (i, n) in m.namespaces.iter().enumerate() {
            result.namespaces.push(NsResult {
                name: d.cfg.namespaces[i].name.clone(),
                size_bytes: dev.namespace_bytes(i as u32),
                host_bytes: n.host_write_bytes,
                media_bytes: (n.host_units + n.gc_units) * mu,
                gc_bytes: n.gc_units * mu,
                read_bytes: n.host_read_bytes,
                trim_bytes: n.trim_bytes,
            });
        }
        for (f, c) in dev.frontiers().iter().zip(&m.frontiers) {
            result.frontiers.push(FrontierResult {
                device: di as u32,
                kind: match f.kind {
                    FrontierKind::Host => "host",
                    FrontierKind::Gc { shared: false } => "gc",
                    FrontierKind::Gc { shared: true } => "gc-shared",
                },
                rg: f.rg,
                ruh: (f.ruh != wafsim_core::device::NIL).then_some(f.ruh),
                host_bytes: c.host_units * mu,
                gc_bytes: c.gc_units * mu,
                erases: c.erases,
            });
        }
        erase_counts.extend_from_slice(dev.erase_counts());
    }
    let min = erase_counts.iter().copied().min().unwrap_or(0);
    let max = erase_counts.iter().copied().max().unwrap_or(0);
    let mean = erase_counts.iter().map(|&c| c as f64).sum::<f64>() / erase_counts.len().max(1) as f64;
    result.erase_count = (min, mean, max);
    result.op_logical = (result.physical_bytes as f64 - result.logical_bytes as f64) / result.logical_bytes as f64;
    Ok(result)
}

fn sample(phase: usize, c: &Counters, mu: u64) -> Sample {
    Sample {
        phase,
        host_bytes: c.host_write_bytes,
        media_bytes: c.media_units() * mu,
        gc_bytes: c.gc_units * mu,
        erases: c.erases,
    }
}

/// Add the per-namespace and per-frontier lists of `b` into `a` (same device).
fn add_lists(a: &mut Counters, b: &Counters) {
    for (x, y) in a.namespaces.iter_mut().zip(&b.namespaces) {
        x.host_write_bytes += y.host_write_bytes;
        x.host_units += y.host_units;
        x.gc_units += y.gc_units;
        x.host_read_bytes += y.host_read_bytes;
        x.trim_bytes += y.trim_bytes;
    }
    for (x, y) in a.frontiers.iter_mut().zip(&b.frontiers) {
        x.host_units += y.host_units;
        x.gc_units += y.gc_units;
        x.erases += y.erases;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse_experiment;

    #[test]
    fn dedicated_layout_runs_one_device_per_namespace() {
        let doc = r#"
seed = 3
[device]
capacity = "256MiB"
over_provisioning = 0.25
erase_unit = "1MiB"
[[namespace]]
name = "a"
size = "128MiB"
[[namespace]]
name = "b"
size = "128MiB"
[[workload]]
namespace = "a"
pattern = "sequential"
bs = "16KiB"
amount = "2x"
[[workload]]
namespace = "b"
pattern = "sequential"
bs = "64KiB"
amount = "2x"
[[variant]]
name = "shared"
[[variant]]
name = "dedicated"
layout = "dedicated"
"#;
        let vs = parse_experiment(doc, "t").unwrap();
        let r: Vec<_> = vs.iter().map(|v| run_variant(v, RunOptions::default(), &|_| {}).unwrap()).collect();
        assert_eq!(r[0].devices, 1);
        assert_eq!(r[1].devices, 2);
        // Each sequential writer alone on its drive never needs GC copies.
        assert_eq!(r[1].counters.gc_units, 0);
        assert_eq!(r[1].waf(), 1.0);
        // Sharing one drive interleaves two streams of different speed: GC copies appear.
        assert!(r[0].waf() > 1.0, "{}", r[0].waf());
        assert_eq!(r[0].hbmw(), r[1].hbmw());
        assert_eq!(r[0].hbmw(), 2 * 2 * (128 << 20));
        assert_eq!(r[0].jobs.len(), 2);
        assert_eq!(r[0].jobs[1].stats.write_bytes, 2 * (128 << 20));
    }

    #[test]
    fn phases_measure_flag_and_timeseries() {
        let doc = r#"
precondition = false
[device]
capacity = "64MiB"
over_provisioning = 0.25
erase_unit = "256KiB"
[[phase]]
name = "fill"
measure = false
[[phase.workload]]
namespace = "ns1"
pattern = "sequential"
bs = "128KiB"
amount = "1x"
[[phase]]
name = "random"
[[phase.workload]]
namespace = "ns1"
pattern = "random"
bs = "4KiB"
amount = "2x"
"#;
        let v = parse_experiment(doc, "t").unwrap().remove(0);
        let r = run_variant(&v, RunOptions { sample_every_bytes: Some(8 << 20) }, &|_| {}).unwrap();
        assert_eq!(r.phases.len(), 2);
        assert_eq!(r.phases[0].counters.host_write_bytes, 64 << 20);
        assert_eq!(r.phases[0].waf(), 1.0);
        // Only the measured phase is in the headline counters.
        assert_eq!(r.hbmw(), 2 * (64 << 20));
        assert!(r.waf() > 1.0);
        assert_eq!(r.namespaces[0].host_bytes, 2 * (64 << 20));
        // Samples every 8 MiB over 192 MiB of host writes, cumulative and monotone.
        assert!(r.timeseries.len() >= 24, "{}", r.timeseries.len());
        assert!(r.timeseries.windows(2).all(|w| w[0].host_bytes < w[1].host_bytes && w[0].media_bytes <= w[1].media_bytes));
        assert_eq!(r.timeseries.last().unwrap().host_bytes, 3 * (64 << 20));
    }
}
