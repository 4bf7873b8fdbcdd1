//! Running a variant: build the device(s), precondition, run the phases' workloads, collect
//! counters per phase, namespace, job and write frontier, and optionally a time series.

use wafsim_host::fs::FsReport;
use crate::sources::{self, Label, PhaseSources};
use crate::spec::{ExperimentSpec, PhaseSpec, Variant};
use crate::stack::{strip, Drive, DriveConfig, Stack};
use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
use wafsim_core::blockdev::ZoneReport;
use wafsim_core::counters::waf;
use wafsim_core::zone::ReportFilter;
use wafsim_core::device::FrontierKind;
use wafsim_core::{BlockDevice, Counters, DeviceConfig, Io, Op, Pid};
use wafsim_core::pipeline::IoSource;

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
    /// Simulated time until the dies finished the work the measured phases booked (longest
    /// device): the window die-busy fractions are taken over.
    pub busy_window_ns: u64,
    pub busy: wafsim_time::media::Busy,
    /// Dies over all devices (busy time is summed over dies).
    pub dies: u32,
    /// Mechanical disks, and their head-busy time in the measured phases (positioning and
    /// transfer, summed over disks).
    pub disks: u32,
    pub head_busy_ns: u64,
    /// Rated P/E cycles of the NAND (0 for disks: no wear-out by writes).
    pub pe_cycles: u32,
}

/// How one drive is timed: a flash model, or a disk with its zone size on the device and on the
/// full-size disk.
enum DriveTiming {
    Flash(wafsim_time::TimingConfig),
    Disk(wafsim_time::hdd::HddConfig, u64, u64),
    /// dm-zoned: the cache device's rates (if it has one) and every disk's mechanics.
    DmZoned { cache: Option<wafsim_time::PlainTiming>, hdd: wafsim_time::hdd::HddConfig, zone: u64, disk_zone: u64, conventional: u32 },
}

/// One drive's clock across the phases of a timed run (one per drive and run: size is no
/// concern).
#[allow(clippy::large_enum_variant)]
enum Clock {
    Flash(wafsim_time::Timeline),
    Disk(wafsim_time::DiskTimeline),
    DmZoned { layer: wafsim_host::DmZonedClock, cache: Option<wafsim_time::PlainTimeline>, disks: Vec<wafsim_time::DiskTimeline> },
}

impl Clock {
    fn pe_cycles(&self) -> u32 {
        match self {
            Clock::Flash(tl) => tl.cfg.nand.pe_cycles,
            Clock::Disk(_) | Clock::DmZoned { .. } => 0,
        }
    }

    fn head_busy_ns(&self) -> u64 {
        match self {
            Clock::Flash(_) => 0,
            Clock::Disk(tl) => tl.busy_ns,
            Clock::DmZoned { disks, .. } => disks.iter().map(|d| d.busy_ns).sum(),
        }
    }

    /// Mechanical disks on this clock.
    fn disks(&self) -> u32 {
        match self {
            Clock::Flash(_) => 0,
            Clock::Disk(_) => 1,
            Clock::DmZoned { disks, .. } => disks.len() as u32,
        }
    }
}

/// Device-wide counters of one phase (summed over devices).
#[derive(Debug, Clone)]
pub struct PhaseResult {
    pub name: String,
    pub measured: bool,
    /// Counters of the phase (of its measurement window, for a phase with `steady_state`).
    pub counters: Counters,
    pub mapping_unit: u32,
    /// Steady-state verdict of a measured untimed phase that wrote.
    pub steady: Option<crate::steady::SteadyState>,
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
    /// The drive (dedicated layout), or None for all drives together.
    pub device: Option<u32>,
    pub host_bytes: u64,
    pub media_bytes: u64,
    pub gc_bytes: u64,
    pub erases: u64,
    /// Bytes applications wrote through file systems so far (all drives), when the run has
    /// file workloads: the level above `host_bytes`.
    pub app_bytes: Option<u64>,
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
    /// OP as simulated ((physical - logical) / logical over all drives).
    pub op_logical: f64,
    /// OP of the drive as described (before scaling rounded it); equals `op_logical` unscaled.
    pub op_logical_full: f64,
    /// Samples of all drives together (`device` None) and, with several drives, of each drive
    /// at the same moments.
    pub timeseries: Vec<Sample>,
    /// Non-fatal findings (unknown fio options and the like).
    pub warnings: Vec<String>,
    pub timed: Option<TimedSummary>,
    /// Zoned namespaces at the end of the run: (namespace name, its zones).
    pub zone_reports: Vec<(String, wafsim_core::blockdev::ZoneReport)>,
    /// File systems of `[[phase.files]]` workloads, one row per phase and workload.
    pub filesystems: Vec<FsResult>,
    /// A host layer's devices (dm-zoned: the cache device and every disk): what the layer
    /// wrote to and read from each over the whole run.
    pub host_devices: Vec<HostDeviceRow>,
    /// Timed runs with `[timing] log_interval`: completed bytes of each drive per interval.
    pub bandwidth: Vec<BwPoint>,
    /// Timed dm-zoned with `[timing] log_interval`: the target's state at every interval end.
    pub host_timeline: Vec<HostPoint>,
    /// Tiering, at every time-series sample (untimed, `--timeseries`/`--plot`): each tier's
    /// traffic since the layer was built.
    pub tier_timeline: Vec<TierPoint>,
}

/// Bytes one tier of a tiering layer took and gave, by cause (cumulative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TierTraffic {
    pub user_write_bytes: u64,
    pub migration_write_bytes: u64,
    pub user_read_bytes: u64,
    pub migration_read_bytes: u64,
}

/// Per-tier traffic at one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierPoint {
    pub phase: usize,
    /// User bytes written (all drives) since the end of the precondition, as in [`Sample`].
    pub host_bytes: u64,
    pub hot: TierTraffic,
    pub cold: TierTraffic,
}

/// Bytes one drive completed in one log interval (fio's bandwidth log).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BwPoint {
    pub phase: usize,
    pub device: u32,
    /// Interval end, seconds from the drive's first phase start (the last interval of a phase
    /// may be shorter).
    pub t_s: f64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// dm-zoned's state at one moment of a timed run.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPoint {
    /// Seconds of model time (from the start of the run).
    pub t_s: f64,
    /// Cache (or single-device random) zones free, and in all.
    pub cache_free: u32,
    pub cache_total: u32,
    /// User bytes written so far.
    pub user_write_bytes: u64,
    /// Bytes each disk's reclaim worker has written so far (copies and zero-fill).
    pub reclaim_write_bytes: Vec<u64>,
}

/// Traffic a host layer sent to one of its devices over the whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostDeviceRow {
    /// "cache" or "disk N" (from 1).
    pub device: String,
    pub user_write_bytes: u64,
    pub user_read_bytes: u64,
    pub reclaim_read_bytes: u64,
    /// dm-zoned: reclaim copies and zero-fill; tiering: migrations (`reclaim_read_bytes` too).
    pub reclaim_write_bytes: u64,
    pub metadata_write_bytes: u64,
}

/// What a file system did in one phase: the application's bytes and the bytes it sent to the
/// device (its own write amplification: a log-structured one's GC copies).
#[derive(Debug, Clone, PartialEq)]
pub struct FsResult {
    pub phase: String,
    pub measured: bool,
    pub name: String,
    pub namespace: String,
    /// "conventional" or "zoned".
    pub filesystem: String,
    pub file_write_bytes: u64,
    pub dev_write_bytes: u64,
    /// Zone-aware file system: live file data per zone of the namespace when its workload ended.
    pub zone_live_bytes: Option<Vec<u64>>,
    /// A store between the application and the file system (an LSM tree): bytes it wrote to
    /// files (`file_write_bytes` is then what the application wrote to the store).
    pub store_write_bytes: Option<u64>,
    /// Figures of the store's own (a cache's hit ratios), by name.
    pub metrics: Vec<(String, f64)>,
}

impl FsResult {
    /// Device bytes written / application bytes written.
    pub fn waf(&self) -> f64 {
        waf(self.dev_write_bytes, self.file_write_bytes)
    }
}

/// Bytes applications wrote through file systems so far: finished phases' rows and the running
/// phase's file systems; `None` without file workloads. The file systems' counts run ahead of
/// the devices by what the sources have made but the runner has not submitted yet (buffered
/// commands): when the phase writes through file systems only, the running part is scaled to
/// what the devices have received (`phase_host` bytes) at the file systems' own ratio of
/// application to device bytes, exact at the phase end.
fn app_bytes(result: &VariantResult, running: &[crate::files::FsProbe], fs_only: bool, phase_host: u64) -> Option<u64> {
    if result.filesystems.is_empty() && running.is_empty() {
        return None;
    }
    let done: u64 = result.filesystems.iter().map(|f| f.file_write_bytes).sum();
    let (mut file, mut dev, mut pending) = (0u64, 0u64, 0u64);
    for f in running {
        let r = f.report.lock().expect("fs report");
        file += r.file_write_bytes;
        dev += r.dev_write_bytes;
        pending += r.pending_write_bytes;
    }
    let now = if fs_only && dev > 0 {
        (file as f64 * (phase_host as f64 / dev as f64).min(1.0)) as u64
    } else {
        file.saturating_sub(pending)
    };
    Some(done + now)
}

/// One row per file system of the phase; with `from` (the reports at the start of a steady
/// phase's window, one per probe), of the window only.
fn push_fs(result: &mut VariantResult, p: &PhaseSpec, probes: &[crate::files::FsProbe], from: Option<&[FsReport]>) {
    for (i, f) in probes.iter().enumerate() {
        let mut r = f.report.lock().expect("fs report").clone();
        if let Some(s) = from.map(|w| &w[i]) {
            r.file_write_bytes -= s.file_write_bytes;
            r.dev_write_bytes -= s.dev_write_bytes;
            r.store_write_bytes = r.store_write_bytes.map(|b| b - s.store_write_bytes.unwrap_or(0));
        }
        result.filesystems.push(FsResult {
            phase: p.name.clone(),
            measured: p.measure,
            name: f.label.name.clone(),
            namespace: f.label.namespace.clone(),
            filesystem: f.filesystem.clone(),
            file_write_bytes: r.file_write_bytes,
            dev_write_bytes: r.dev_write_bytes,
            zone_live_bytes: r.zone_live_bytes,
            store_write_bytes: r.store_write_bytes,
            metrics: r.metrics,
        });
    }
}

impl VariantResult {
    /// Bytes the application wrote in the measured phases: through file systems (or key-value
    /// stores) where a measured phase ran such a workload, else the host bytes (a host layer's
    /// user bytes).
    pub fn application_bytes(&self) -> u64 {
        let fs: Vec<_> = self.filesystems.iter().filter(|f| f.measured).collect();
        if fs.is_empty() {
            self.hbmw()
        } else {
            fs.iter().map(|f| f.file_write_bytes).sum()
        }
    }

    /// NAND wear per application byte: bytes programmed per byte of NAND per application byte
    /// (each program costs an erase in the long run); `None` without NAND (disks erase nothing)
    /// or without writes. Life at equal application writes is its inverse.
    pub fn wear_per_app_byte(&self) -> Option<f64> {
        let app = self.application_bytes() as f64;
        (self.physical_bytes > 0 && app > 0.0 && self.mbe() > 0).then(|| self.mbmw() as f64 / self.physical_bytes as f64 / app)
    }

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
        if t.elapsed_ns == 0 || self.mbmw() == 0 || t.pe_cycles == 0 {
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

/// The drives of a variant, built but not run (no precondition, no phases): what `wafsim
/// serve` puts behind its exports.
pub fn build_stack(spec: &ExperimentSpec) -> Result<Stack> {
    let cfg = spec.device_config()?;
    let drives = plan(spec, &cfg)?;
    Stack::new(cfg, drives)
}

/// The drive configs of a variant: the experiment's drive, or one drive per namespace of the
/// namespace's size with the same OP and erase unit (dedicated layout). A ZNS drive has one
/// namespace, so both layouts are the drive itself.
fn plan(spec: &ExperimentSpec, cfg: &DeviceConfig) -> Result<Vec<DriveConfig>> {
    // The host layer's spec is checked when the experiment is parsed (`ExperimentSpec::validate`).
    match spec.host.as_ref().map(|h| (h, h.layer.as_str())) {
        Some((h, "tiering")) => {
            let hot = crate::stack::hot_device(spec, h.hot.as_deref().expect("validated: tiering names its hot drive"))?;
            let extent_bytes = h.extent.as_deref().map_or(Ok(1 << 20), |e| crate::spec::size("host.extent", e))?;
            return Ok(vec![DriveConfig::Tiering { hot, cold: cfg.clone(), extent_bytes }]);
        }
        Some((h, "dm-zoned")) => {
            let Some(DriveConfig::Smr(mut disk)) = spec.device.zoned_config(&spec.main_namespaces())? else {
                unreachable!("validated: dm-zoned runs over an SMR drive")
            };
            if let Some(n) = h.disk_zones {
                if n > disk.zones || n <= disk.conventional_zones {
                    bail!("host.disk_zones = {n}: expected more than the disk's {} conventional zones and at most its {} zones", disk.conventional_zones, disk.zones);
                }
                disk.zones = n;
            }
            // "none" (or no key): single-device mode, the disks' conventional zones are the cache.
            let cache_bytes = h.cache_size.as_deref().filter(|c| *c != "none").map(|c| crate::spec::size("host.cache_size", c)).transpose()?;
            return Ok(vec![DriveConfig::DmZoned { disk, disks: h.disks, cache_bytes, reserved_zones: h.reserved_zones }]);
        }
        _ => {}
    }
    let main_zoned = spec.device.zoned_config(&spec.main_namespaces())?;
    let own_drives = spec.namespace.iter().any(|n| n.device.is_some());
    if let Some(z) = main_zoned.as_ref().filter(|_| !own_drives) {
        return Ok(vec![z.clone()]);
    }
    if spec.layout != "dedicated" {
        return Ok(vec![DriveConfig::Flash(cfg.clone())]);
    }
    let ratio = cfg.physical_bytes as f64 / cfg.logical_bytes as f64;
    cfg.namespaces
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            if let Some(n) = spec.namespace.get(i).filter(|n| n.device.is_some()) {
                return Ok(crate::stack::own_drive(spec, n)?.0);
            }
            if let Some(z) = &main_zoned {
                return Ok(z.clone());
            }
            let mut c = cfg.clone();
            c.logical_bytes = ns.size_bytes;
            c.physical_bytes = (ns.size_bytes as f64 * ratio).round() as u64;
            c.namespaces = vec![ns.clone()];
            c.seed = cfg.seed.wrapping_add(i as u64);
            c.geometry().map_err(|e| anyhow!("dedicated drive for namespace {:?}: {e}", ns.name))?;
            Ok(DriveConfig::Flash(c))
        })
        .collect()
}

/// Sequential fill of every LBA of every namespace, 128 KiB at a time, round-robin across
/// namespaces (as when every tenant preconditions its disk at once). Zoned namespaces are left
/// as they are (empty zones are a zoned drive's fresh state; its host fills them).
pub fn precondition(dev: &mut impl BlockDevice) -> Result<()> {
    let n = dev.namespace_count();
    let mut pos = vec![0u64; n as usize];
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        for ns in 0..n {
            if dev.zone_geometry(ns).is_some() {
                continue;
            }
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

/// What a run accumulates across phases (per drive where it matters).
struct RunState {
    /// Counters of every drive when the built-in precondition ended.
    start: Vec<Counters>,
    /// Per drive: counters of the measured phases (with per-namespace and per-frontier lists).
    measured: Vec<Option<Counters>>,
    /// Host bytes written or trimmed on drives already finished (timed runs go drive by drive).
    done_before: u64,
    total_planned: u64,
    logical_total: u64,
    next_sample: u64,
    /// I/Os issued per phase, over all drives.
    phase_ios: Vec<u64>,
}

/// Sum of one counter over the drives.
fn sum(devs: &[Drive], f: impl Fn(&Counters) -> u64) -> u64 {
    devs.iter().map(|d| f(d.counters())).sum()
}

/// Run one variant on the calling thread: plan the drives, build them, drive every phase
/// through them, collect the results.
pub fn run_variant(v: &Variant, opts: RunOptions, progress: &dyn Fn(Progress)) -> Result<VariantResult> {
    let spec = &v.spec;
    let ctx = || format!("variant {:?}", v.name);
    let cfg = spec.device_config().with_context(ctx)?;
    let drives = plan(spec, &cfg).with_context(ctx)?;
    let phases = spec.phases();
    let mu = cfg.mapping_unit as u64;

    let mut result = VariantResult {
        name: v.name.clone(),
        layout: spec.layout.clone(),
        placement: cfg.placement.to_string(),
        gc_policy: cfg.gc_policy.to_string(),
        devices: drives.len() as u32,
        mapping_unit: cfg.mapping_unit,
        erase_unit_bytes: cfg.erase_unit_bytes,
        scale: spec.scale,
        counters: Counters::default(),
        phases: phases
            .iter()
            .map(|p| PhaseResult { name: p.name.clone(), measured: p.measure, counters: Counters::default(), mapping_unit: cfg.mapping_unit, steady: None })
            .collect(),
        namespaces: Vec::new(),
        jobs: Vec::new(),
        frontiers: Vec::new(),
        erase_count: (0, 0.0, 0),
        logical_bytes: 0,
        physical_bytes: 0,
        op_logical: 0.0,
        op_logical_full: 0.0,
        timeseries: Vec::new(),
        warnings: Vec::new(),
        timed: None,
        zone_reports: Vec::new(),
        filesystems: Vec::new(),
        host_devices: Vec::new(),
        bandwidth: Vec::new(),
        host_timeline: Vec::new(),
        tier_timeline: Vec::new(),
    };
    let fio_files = sources::load_fio_files(spec, &phases, &mut result.warnings).with_context(ctx)?;

    // Planned host bytes over all drives and phases, for progress.
    let mut total_planned = 0u64;
    for d in &drives {
        let d = match d {
            DriveConfig::Flash(c) => c,
            DriveConfig::Zns(_) | DriveConfig::Smr(_) | DriveConfig::DmZoned { .. } => &cfg,
            DriveConfig::Tiering { cold, .. } => cold,
        };
        for (pi, p) in phases.iter().enumerate() {
            total_planned += sources::planned_bytes(p, &fio_files[pi], d)?;
        }
    }
    match drives[0] {
        DriveConfig::Zns(_) => (result.placement, result.gc_policy) = ("zns".into(), "none (host)".into()),
        DriveConfig::Smr(_) => (result.placement, result.gc_policy) = ("smr (host-managed)".into(), "none (host)".into()),
        DriveConfig::Tiering { .. } => {
            result.placement = format!("tiering (hot {})", spec.host.as_ref().and_then(|h| h.hot.as_deref()).unwrap_or("?"));
            result.gc_policy = format!("{} (both drives) + migration (host)", cfg.gc_policy);
        }
        DriveConfig::DmZoned { disks, cache_bytes, .. } => {
            result.placement = format!("dm-zoned over {disks} SMR disk(s){}", if cache_bytes.is_some() { " and a cache device" } else { "" });
            result.gc_policy = "dm-zoned reclaim (host)".into();
        }
        DriveConfig::Flash(_) => {}
    }
    let mut stack = Stack::new(cfg, drives).with_context(ctx)?;
    // Timing configs per drive, checked before the (possibly long) precondition; empty untimed.
    let timings: Vec<DriveTiming> = stack
        .devices
        .iter()
        .map(|d| match d {
            Drive::Flash(f) => Ok(crate::timing::timing_config(spec, f.config())?.map(DriveTiming::Flash)),
            Drive::Zns(z) => Ok(crate::timing::timing_config_zns(spec, z.config())?.map(DriveTiming::Flash)),
            Drive::Smr(z) => Ok(crate::timing::disk_config(spec, z.config())?.map(|(h, zone)| DriveTiming::Disk(h, z.config().zone_size, zone))),
            Drive::DmZoned(ld) => {
                let disk = ld.dev.disk(0).config();
                // The mechanics of the whole disk, also when the target uses its first zones only.
                let mut whole = disk.clone();
                if let Some(DriveConfig::Smr(z)) = spec.device.zoned_config(&spec.main_namespaces())? {
                    whole.zones = z.zones;
                }
                let Some((h, full_zone)) = crate::timing::disk_config(spec, &whole)? else { return Ok(None) };
                let cache = if ld.dev.cache_device().is_some() { crate::timing::cache_config(spec)? } else { None };
                Ok(Some(DriveTiming::DmZoned { cache, hdd: h, zone: disk.zone_size, disk_zone: full_zone, conventional: disk.conventional_zones }))
            }
            Drive::Tiering(_) if spec.timing.as_ref().is_some_and(|t| t.enabled) => {
                Err(anyhow!("[timing]: the timing model does not cover tiering yet; run with timing off (WAF, per-device traffic)"))
            }
            Drive::Tiering(_) => Ok(None),
        })
        .collect::<Result<Option<Vec<_>>>>()
        .with_context(ctx)?
        .unwrap_or_default();
    for dev in &stack.devices {
        result.logical_bytes += dev.logical_bytes();
        result.physical_bytes += dev.physical_bytes();
    }
    if spec.precondition {
        for dev in &mut stack.devices {
            precondition(dev).with_context(|| format!("{}: precondition", ctx()))?;
        }
    }
    let mut st = RunState {
        start: stack.devices.iter().map(|d| d.counters().clone()).collect(),
        measured: vec![None; stack.devices.len()],
        done_before: 0,
        total_planned,
        logical_total: stack.logical_bytes(),
        next_sample: 0,
        phase_ios: vec![0; phases.len()],
    };
    if !timings.is_empty() {
        for (d, tcfg) in timings.into_iter().enumerate() {
            run_timed_drive(spec, &phases, &fio_files, &mut stack, d, tcfg, &mut st, &mut result, opts, progress).with_context(ctx)?;
        }
        if opts.sample_every_bytes.is_some() {
            aggregate_timed_samples(&mut result);
        }
    } else {
        for (pi, p) in phases.iter().enumerate() {
            run_untimed_phase(spec, pi, p, &fio_files[pi], &mut stack, &mut st, &mut result, opts, progress)
                .with_context(|| format!("{}: phase {:?}", ctx(), p.name))?;
        }
        if opts.sample_every_bytes.is_some() {
            let host = sum(&stack.devices, |c| c.host_write_bytes) - st.start.iter().map(|c| c.host_write_bytes).sum::<u64>();
            if result.timeseries.last().map(|s| s.host_bytes) != Some(host) {
                let app = app_bytes(&result, &[], false, 0);
                push_samples(&mut result, &stack, &st, phases.len().saturating_sub(1), app);
            }
        }
    }
    for (pi, p) in phases.iter().enumerate() {
        if st.phase_ios[pi] == 0 {
            return Err(anyhow!(
                "{}: phase {:?} issued no I/O: every source of the phase was empty (check the job sizes, trace filters and namespaces)",
                ctx(),
                p.name
            ));
        }
    }
    collect(&stack, &st, &mut result, mu);
    result.op_logical_full = if result.op_logical.is_nan() { f64::NAN } else { spec.full_scale_op.unwrap_or(result.op_logical) };
    Ok(result)
}

/// Per-namespace and per-frontier results, erase counts and OP.
fn collect(stack: &Stack, st: &RunState, result: &mut VariantResult, mu: u64) {
    let mut erase_counts: Vec<u32> = Vec::new();
    for dev in &stack.devices {
        if let Drive::Tiering(d) = dev {
            for (name, tier) in [("hot", wafsim_host::Tier::Hot), ("cold", wafsim_host::Tier::Cold)] {
                let t = d.dev.layer().tier_counters(tier);
                result.host_devices.push(HostDeviceRow {
                    device: name.into(),
                    user_write_bytes: t.user_write_bytes,
                    user_read_bytes: t.user_read_bytes,
                    reclaim_read_bytes: t.migration_read_bytes,
                    reclaim_write_bytes: t.migration_write_bytes,
                    metadata_write_bytes: 0,
                });
            }
        }
        if let Drive::DmZoned(d) = dev {
            let layer = d.dev.layer();
            let ids = d.dev.cache_device().map(|_| wafsim_host::DevId::Cache).into_iter().chain((0..d.dev.disks().len() as u32).map(wafsim_host::DevId::Disk));
            for id in ids {
                let t = layer.traffic(id);
                result.host_devices.push(HostDeviceRow {
                    device: match id {
                        wafsim_host::DevId::Cache => "cache".into(),
                        wafsim_host::DevId::Disk(i) => format!("disk {}", i + 1),
                    },
                    user_write_bytes: t.user_write_bytes,
                    user_read_bytes: t.user_read_bytes,
                    reclaim_read_bytes: t.reclaim_read_bytes,
                    reclaim_write_bytes: t.reclaim_write_bytes + t.zero_fill_bytes,
                    metadata_write_bytes: t.metadata_write_bytes,
                });
            }
        }
    }
    for (di, dev) in stack.devices.iter().enumerate() {
        let m = st.measured[di].clone().unwrap_or_else(|| dev.counters().delta(dev.counters()));
        for (i, n) in m.namespaces.iter().enumerate() {
            result.namespaces.push(NsResult {
                name: stack.namespace_name(di, i as u32).to_string(),
                size_bytes: dev.namespace_bytes(i as u32),
                host_bytes: n.host_write_bytes,
                media_bytes: n.media_units() * mu,
                gc_bytes: n.gc_units * mu,
                read_bytes: n.host_read_bytes,
                trim_bytes: n.trim_bytes,
            });
        }
        for (f, c) in dev.flash().map_or(&[][..], |f| f.frontiers()).iter().zip(&m.frontiers) {
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
        for ns in 0..dev.namespace_count() {
            if let (Some(g), Ok(zones)) = (dev.zone_geometry(ns), dev.report_zones(ns, 0, ReportFilter::All)) {
                let bs = dev.block_size();
                result.zone_reports.push((stack.namespace_name(di, ns).to_string(), ZoneReport { block_size: bs, zone_size: g.zone_size / bs as u64, zones }));
            }
        }
    }
    let min = erase_counts.iter().copied().min().unwrap_or(0);
    let max = erase_counts.iter().copied().max().unwrap_or(0);
    // (An empty f64 sum is -0.0; a disk has no erase units at all.)
    let mean = if erase_counts.is_empty() { 0.0 } else { erase_counts.iter().map(|&c| c as f64).sum::<f64>() / erase_counts.len() as f64 };
    result.erase_count = (min, mean, max);
    // A ZNS drive exposes no spare: its zone capacity is what it has. A host layer over several
    // devices has no single OP: not a number ("-" in the table, null in JSON).
    result.op_logical = if stack.devices.iter().any(|d| matches!(d, Drive::DmZoned(_) | Drive::Tiering(_))) {
        f64::NAN
    } else if stack.devices.iter().all(|d| d.flash().is_none()) {
        0.0
    } else {
        (result.physical_bytes as f64 - result.logical_bytes as f64) / result.logical_bytes as f64
    };
}

/// Add a phase's per-drive deltas (`end - from`) to the phase and measured counters.
fn account_phase(result: &mut VariantResult, st: &mut RunState, pi: usize, measure: bool, di: usize, delta: &Counters) {
    result.phases[pi].counters.add(&strip(delta));
    if measure {
        result.counters.add(&strip(delta));
        match &mut st.measured[di] {
            None => st.measured[di] = Some(delta.clone()),
            Some(m) => add_lists(m, delta),
        }
    }
}

/// Job rows of a phase, with a loud warning for every source that issued nothing.
fn push_jobs(result: &mut VariantResult, st: &mut RunState, pi: usize, p: &PhaseSpec, rows: Vec<(Label, wafsim_workload::SourceStats, Option<JobTiming>)>) {
    for (label, stats, timing) in rows {
        st.phase_ios[pi] += stats.ios;
        if stats.ios == 0 {
            result.warnings.push(format!(
                "phase {:?}: {} on {} issued no I/O (its region, size or runtime leaves nothing to do)",
                p.name, label.name, label.namespace
            ));
        }
        result.jobs.push(JobResult { phase: p.name.clone(), name: label.name, namespace: label.namespace, measured: p.measure, stats, timing });
    }
}

/// Samples at this moment: all drives together, and each drive when there are several.
fn push_samples(result: &mut VariantResult, stack: &Stack, st: &RunState, phase: usize, app: Option<u64>) {
    let mu = stack.cfg.mapping_unit as u64;
    let mut all = Counters::default();
    let mut per = Vec::new();
    for (d, dev) in stack.devices.iter().enumerate() {
        let since = strip(dev.counters()).delta(&strip(&st.start[d]));
        all.add(&since);
        per.push(sample(phase, Some(d as u32), &since, mu));
    }
    result.timeseries.push(Sample { app_bytes: app, ..sample(phase, None, &all, mu) });
    if per.len() > 1 {
        result.timeseries.extend(per);
    }
    for dev in &stack.devices {
        if let Drive::Tiering(t) = dev {
            let l = t.dev.layer();
            let tier = |x: wafsim_host::Tier| {
                let c = l.tier_counters(x);
                TierTraffic { user_write_bytes: c.user_write_bytes, migration_write_bytes: c.migration_write_bytes, user_read_bytes: c.user_read_bytes, migration_read_bytes: c.migration_read_bytes }
            };
            result.tier_timeline.push(TierPoint { phase, host_bytes: all.host_write_bytes, hot: tier(wafsim_host::Tier::Hot), cold: tier(wafsim_host::Tier::Cold) });
        }
    }
}

/// One phase of an untimed run, over every drive at once.
#[allow(clippy::too_many_arguments)]
fn run_untimed_phase(
    spec: &ExperimentSpec,
    pi: usize,
    p: &PhaseSpec,
    fio: &[sources::LoadedFio],
    stack: &mut Stack,
    st: &mut RunState,
    result: &mut VariantResult,
    opts: RunOptions,
    progress: &dyn Fn(Progress),
) -> Result<()> {
    let mu = stack.cfg.mapping_unit as u64;
    let PhaseSources { mut source, labels, errors, notes, fs } = sources::build(spec, pi, p, fio, &stack.target())?;
    for n in notes {
        result.warnings.push(format!("phase {:?}: {n}", p.name));
    }
    let phase_start: Vec<Counters> = stack.devices.iter().map(|d| d.counters().clone()).collect();
    let host0 = sum(&stack.devices, |c| c.host_write_bytes);
    let media0 = sum(&stack.devices, |c| c.media_units());
    let start_host: u64 = st.start.iter().map(|c| c.host_write_bytes).sum();
    let start_trim: u64 = st.start.iter().map(|c| c.trim_bytes).sum();
    let start_media: u64 = st.start.iter().map(|c| c.media_units()).sum();

    let ss = p.steady_state.clone().unwrap_or_default();
    let stop_when_steady = p.steady_state.is_some();
    let round_bytes = ss.round_bytes(st.logical_total)?;
    // Counters at round ends, kept only where a steady phase reports its window.
    let mut snaps: Vec<Vec<Counters>> = if stop_when_steady { vec![phase_start.clone()] } else { Vec::new() };
    // The file systems' and stores' counts at the same round ends (their rows report the window too).
    let fs_now = |fs: &[crate::files::FsProbe]| -> Vec<FsReport> { fs.iter().map(|f| f.report.lock().expect("fs report").clone()).collect() };
    let mut fs_snaps: Vec<Vec<FsReport>> = if stop_when_steady { vec![fs_now(&fs)] } else { Vec::new() };
    let erases0 = sum(&stack.devices, |c| c.erases);
    let mut round_end = (host0, media0, erases0);
    let mut round_waf: Vec<(f64, u64)> = Vec::new();
    let mut steady_at: Option<usize> = None;

    // Keep a batch below a hundredth of a round or 256 I/Os, whichever is larger (and below a
    // tenth of the sampling interval) so rounds and samples end close to where they are due.
    let mut batch = 64;
    let mut buf = Vec::with_capacity(BATCH);
    loop {
        buf.clear();
        if source.fill(&mut buf, batch) == 0 {
            break;
        }
        let bytes: u64 = buf.iter().map(|io| io.len as u64).sum();
        let per_io = (bytes / buf.len() as u64).max(1);
        // Rounds need no batches finer than 256 I/Os (the device prefetches within a batch).
        let mut limit = ((round_bytes / 100) / per_io).max(256);
        if let Some(every) = opts.sample_every_bytes {
            limit = limit.min((every / 10) / per_io);
        }
        batch = limit.clamp(16, BATCH as u64) as usize;
        stack.submit_batch(&buf)?;

        let host = sum(&stack.devices, |c| c.host_write_bytes);
        if host - round_end.0 >= round_bytes {
            let media = sum(&stack.devices, |c| c.media_units());
            let erases = sum(&stack.devices, |c| c.erases);
            round_waf.push((waf((media - round_end.1) * mu, host - round_end.0), erases - round_end.2));
            round_end = (host, media, erases);
            if stop_when_steady && fs.iter().any(|f| f.report.lock().expect("fs report").warming) {
                // A store still filling: its rounds are not judged; the window starts after it.
                round_waf.clear();
                snaps = vec![stack.devices.iter().map(|d| d.counters().clone()).collect()];
                fs_snaps = vec![fs_now(&fs)];
            } else if stop_when_steady {
                snaps.push(stack.devices.iter().map(|d| d.counters().clone()).collect());
                fs_snaps.push(fs_now(&fs));
                if crate::steady::judge(&round_waf, round_bytes, &ss).steady {
                    steady_at = Some(round_waf.len());
                    break;
                }
                if ss.max_rounds.is_some_and(|m| round_waf.len() >= m as usize) {
                    break;
                }
            }
        }
        if let Some(every) = opts.sample_every_bytes {
            if host - start_host >= st.next_sample {
                let app = app_bytes(result, &fs, fs.len() == labels.len(), host - start_host);
                push_samples(result, stack, st, pi, app);
                // Samples on a fixed grid of `every` bytes; a batch may skip grid points.
                while st.next_sample <= host - start_host {
                    st.next_sample += every.max(1);
                }
            }
        }
        let trim = sum(&stack.devices, |c| c.trim_bytes);
        let media = sum(&stack.devices, |c| c.media_units());
        progress(Progress {
            done_bytes: (host - start_host) + (trim - start_trim),
            total_bytes: st.total_planned,
            drive_writes: (host - start_host) as f64 / st.logical_total as f64,
            waf: waf((media - start_media) * mu, host - start_host),
        });
    }
    if let Some(e) = errors.first_error() {
        return Err(anyhow!("{e}"));
    }
    // A phase that stopped at steady state reports its measurement window only.
    push_fs(result, p, &fs, steady_at.map(|r| &fs_snaps[r - ss.window as usize][..]));
    let rows = labels.into_iter().zip(source.stats().iter().copied()).map(|(l, s)| (l, s, None)).collect();
    push_jobs(result, st, pi, p, rows);
    let from = match steady_at {
        Some(r) => &snaps[r - ss.window as usize],
        None => &phase_start,
    };
    for (di, dev) in stack.devices.iter().enumerate() {
        let delta = dev.counters().delta(&from[di]);
        account_phase(result, st, pi, p.measure, di, &delta);
    }
    let host_written = sum(&stack.devices, |c| c.host_write_bytes) - host0;
    // Steadiness is about device GC; a drive without it (ZNS) has nothing to settle.
    let device_gc = stack.devices.iter().any(|d| d.flash().is_some());
    if p.measure && host_written > 0 && device_gc {
        let verdict = crate::steady::judge(&round_waf, round_bytes, &ss);
        if !verdict.steady {
            result.warnings.push(format!(
                "phase {:?} ended before WAF was steady ({}); the result may still be moving: write more (a larger amount or runtime) or use steady_state = {{ ... }} on the phase",
                p.name,
                verdict.describe()
            ));
        }
        result.phases[pi].steady = Some(verdict);
    }
    Ok(())
}

/// Every phase of a timed run on drive `d` (drives are independent, each on its own timeline).
#[allow(clippy::too_many_arguments)]
fn run_timed_drive(
    spec: &ExperimentSpec,
    phases: &[PhaseSpec],
    fio_files: &[Vec<sources::LoadedFio>],
    stack: &mut Stack,
    d: usize,
    timing: DriveTiming,
    st: &mut RunState,
    result: &mut VariantResult,
    opts: RunOptions,
    progress: &dyn Fn(Progress),
) -> Result<()> {
    let mu = stack.cfg.mapping_unit as u64;
    let log_ns = crate::timing::log_interval_ns(spec)?;
    let engine_opts = wafsim_time::EngineOptions { sample_ns: log_ns };
    let mut clock = match (timing, &mut stack.devices[d]) {
        (DriveTiming::Flash(tcfg), Drive::Flash(dev)) => Clock::Flash(wafsim_time::Timeline::new(tcfg, dev)),
        (DriveTiming::Flash(tcfg), Drive::Zns(dev)) => Clock::Flash(wafsim_time::Timeline::new(tcfg, dev)),
        (DriveTiming::Disk(h, zone, disk_zone), Drive::Smr(dev)) => Clock::Disk(
            wafsim_time::DiskTimeline::new(h, zone, disk_zone)
                .map_err(|e| anyhow!("timing.hdd: {e}"))?
                .with_zone_write_plugging(dev.config().conventional_zones),
        ),
        (DriveTiming::DmZoned { cache, hdd, zone, disk_zone, conventional }, Drive::DmZoned(ld)) => {
            let disks = (0..ld.dev.disks().len())
                .map(|_| {
                    wafsim_time::DiskTimeline::new(hdd.clone(), zone, disk_zone)
                        .map(|t| t.with_zone_write_plugging(conventional))
                        .map_err(|e| anyhow!("timing.hdd: {e}"))
                })
                .collect::<Result<Vec<_>>>()?;
            let cache = cache.map(|c| wafsim_time::PlainTimeline::new(c).map_err(|e| anyhow!("timing.cache: {e}"))).transpose()?;
            Clock::DmZoned { layer: wafsim_host::DmZonedClock::new(ld.dev.layer(), log_ns), cache, disks }
        }
        _ => unreachable!("timing configurations are made per kind of drive"),
    };
    let mut measured_ns = 0u64;
    let mut busy_window_ns = 0u64;
    // Time of the drive's first phase start: bandwidth points count from it.
    let mut run_origin: Option<u64> = None;

    for (pi, p) in phases.iter().enumerate() {
        let pctx = || format!("phase {:?}", p.name);
        if p.steady_state.is_some() {
            bail!("phase {:?}: steady_state is not supported with the timing model yet; run the phase untimed (timing off) to find the steady state", p.name);
        }
        let phase_start = stack.devices[d].counters().clone();
        let parts = sources::build_parts(spec, pi, p, &fio_files[pi], &stack.device_target(d), true).with_context(pctx)?;
        let mut labels = Vec::new();
        let mut jobs = Vec::new();
        let per_namespace_queues = spec.timing.as_ref().is_some_and(|t| t.queues == crate::spec::Queues::PerNamespace);
        for x in parts.parts {
            labels.push((x.label.clone(), x.timing.iodepth));
            jobs.push(wafsim_time::JobSpec {
                name: x.label.name.clone(),
                source: x.source,
                iodepth: x.timing.iodepth,
                rate_iops: x.timing.rate_iops,
                rate_bytes: x.timing.rate_bytes,
                runtime_ns: x.timing.runtime_ns,
                ramp_ns: x.timing.ramp_ns,
                group: x.group,
                stage: x.stage,
                queue: per_namespace_queues.then(|| spec.namespace.iter().position(|n| n.name == x.label.namespace).unwrap_or(usize::MAX) as u32),
            });
        }
        let head_busy0 = clock.head_busy_ns();
        // One match per phase; the engine runs monomorphized for the drive's type.
        let tr = match (&mut stack.devices[d], &mut clock) {
            (Drive::Flash(dev), Clock::Flash(tl)) => wafsim_time::run_with(dev, tl, jobs, &engine_opts).map_err(anyhow::Error::from),
            (Drive::Zns(dev), Clock::Flash(tl)) => wafsim_time::run_with(dev, tl, jobs, &engine_opts).map_err(anyhow::Error::from),
            (Drive::Smr(dev), Clock::Disk(tl)) => {
                wafsim_time::run_on_with(&mut wafsim_time::DiskTimed::new(dev, tl), jobs, &engine_opts).map_err(anyhow::Error::from)
            }
            (Drive::DmZoned(ld), Clock::DmZoned { layer, cache, disks }) => {
                let (dmz, cache_dev, disk_devs) = ld.dev.parts_mut();
                let cache_m = cache_dev.zip(cache.as_mut()).map(|(dev, tl)| wafsim_time::PlainTimed::new(dev, tl));
                let disk_ms = disk_devs.iter_mut().zip(disks.iter_mut()).map(|(dev, tl)| wafsim_time::DiskTimed::new(dev, tl)).collect();
                let r = wafsim_time::run_on_with(&mut wafsim_host::DmZonedTimed::new(dmz, cache_m, disk_ms, layer), jobs, &engine_opts)
                    .map_err(|e| dmz_error(e, p));
                ld.refresh();
                for s in layer.take_samples() {
                    result.host_timeline.push(HostPoint {
                        t_s: s.t_ns as f64 * 1e-9,
                        cache_free: s.cache_free,
                        cache_total: s.cache_total,
                        user_write_bytes: s.user_write_bytes,
                        reclaim_write_bytes: s.reclaim_write_bytes,
                    });
                }
                r
            }
            _ => unreachable!("clocks are made per kind of drive"),
        }
        .with_context(pctx)?;
        let origin = *run_origin.get_or_insert(tr.start_ns);
        for iv in &tr.series {
            result.bandwidth.push(BwPoint { phase: pi, device: d as u32, t_s: (iv.end_ns - origin) as f64 * 1e-9, read_bytes: iv.read_bytes, write_bytes: iv.write_bytes });
        }
        if let Some(e) = parts.errors.first_error() {
            return Err(anyhow!("{}: {e}", pctx()));
        }
        push_fs(result, p, &parts.fs, None);
        if p.measure {
            measured_ns += tr.end_ns - tr.start_ns;
            busy_window_ns += tr.drained_ns - tr.start_ns;
            let s = result.timed.get_or_insert(TimedSummary { pe_cycles: clock.pe_cycles(), ..Default::default() });
            s.busy.host_program_ns += tr.busy.host_program_ns;
            s.busy.host_read_ns += tr.busy.host_read_ns;
            s.busy.gc_program_ns += tr.busy.gc_program_ns;
            s.busy.gc_read_ns += tr.busy.gc_read_ns;
            s.busy.erase_ns += tr.busy.erase_ns;
            s.head_busy_ns += clock.head_busy_ns() - head_busy0;
        }
        let rows = labels
            .into_iter()
            .zip(&tr.jobs)
            .map(|((label, iodepth), j)| {
                let stats = wafsim_workload::SourceStats {
                    ios: j.read.ios + j.write.ios + j.trim.ios,
                    write_ios: j.write.ios,
                    read_ios: j.read.ios,
                    trim_ios: j.trim.ios,
                    write_bytes: j.write.bytes,
                    read_bytes: j.read.bytes,
                    trim_bytes: j.trim.bytes,
                    zone_resets: j.zone_resets,
                    zone_finishes: j.zone_finishes,
                };
                (label, stats, Some(JobTiming::from_engine(j, iodepth)))
            })
            .collect();
        push_jobs(result, st, pi, p, rows);
        let dev = &stack.devices[d];
        let since = dev.counters().delta(&st.start[d]);
        progress(Progress {
            done_bytes: st.done_before + since.host_write_bytes + since.trim_bytes,
            total_bytes: st.total_planned,
            drive_writes: (st.done_before + since.host_write_bytes) as f64 / st.logical_total as f64,
            waf: waf(since.media_units() * mu, since.host_write_bytes),
        });
        if opts.sample_every_bytes.is_some() {
            result.timeseries.push(sample(pi, Some(d as u32), &strip(&since), mu));
        }
        let delta = dev.counters().delta(&phase_start);
        account_phase(result, st, pi, p.measure, d, &delta);
    }
    if let Some(t) = &mut result.timed {
        t.elapsed_ns = t.elapsed_ns.max(measured_ns);
        t.busy_window_ns = t.busy_window_ns.max(busy_window_ns);
        match &clock {
            Clock::Flash(tl) => t.dies += tl.cfg.dies,
            c => t.disks += c.disks(),
        }
    }
    let since = stack.devices[d].counters().delta(&st.start[d]);
    st.done_before += since.host_write_bytes + since.trim_bytes;
    Ok(())
}

/// A timed dm-zoned run that cannot free a zone for waiting writes, explained.
fn dmz_error(e: wafsim_core::DeviceError, p: &PhaseSpec) -> anyhow::Error {
    match e {
        wafsim_core::DeviceError::NoReclaimableSpace { .. } => anyhow!(
            "phase {:?}: dm-zoned: user writes waited more than 600 s (simulated) for a free zone that reclaim could not make; the target is too full for this workload (write less of it, or give it more reserved zones)",
            p.name
        ),
        e => anyhow!(e),
    }
}

/// Timed runs sample each drive at its phase ends; the drives run side by side, so the sample
/// of all drives at the end of phase k is the sum of the drives' samples at that phase end.
fn aggregate_timed_samples(result: &mut VariantResult) {
    let per: Vec<Sample> = std::mem::take(&mut result.timeseries);
    let drives = result.devices;
    let phases = per.iter().map(|s| s.phase + 1).max().unwrap_or(0);
    for ph in 0..phases {
        let at: Vec<&Sample> = per.iter().filter(|s| s.phase == ph).collect();
        if at.is_empty() {
            continue;
        }
        let mut all = Sample { phase: ph, device: None, host_bytes: 0, media_bytes: 0, gc_bytes: 0, erases: 0, app_bytes: None };
        for s in &at {
            all.host_bytes += s.host_bytes;
            all.media_bytes += s.media_bytes;
            all.gc_bytes += s.gc_bytes;
            all.erases += s.erases;
        }
        result.timeseries.push(all);
        if drives > 1 {
            result.timeseries.extend(at.into_iter().copied());
        }
    }
}

fn sample(phase: usize, device: Option<u32>, c: &Counters, mu: u64) -> Sample {
    Sample {
        app_bytes: None,
        phase,
        device,
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
    fn a_namespace_on_its_own_drive_of_another_kind() {
        // A ZNS drive with a flash staging drive beside it: two drives of different kinds, each
        // namespace's I/O on its own; the staging drive is the preset at the run's scale.
        let doc = r#"
seed = 3
layout = "dedicated"
precondition = false
[device]
preset = "zns-prototype-2tb"
[[namespace]]
name = "capacity"
[[namespace]]
name = "staging"
device = "enterprise-tlc-1.92tb"
[[phase]]
name = "p"
[[phase.workload]]
namespace = "staging"
pattern = "sequential"
bs = "128KiB"
amount = "1x"
[[phase.fio]]
namespace = "capacity"
args = "--name=z --rw=write --bs=64k --zonemode=zbd --direct=1 --size=10%"
"#;
        let mut v = parse_experiment(doc, "t").unwrap().remove(0);
        crate::scale::scale_spec(&mut v.spec, 0.001).unwrap();
        let r = run_variant(&v, RunOptions::default(), &|_| {}).unwrap();
        assert_eq!(r.devices, 2);
        let staging = crate::stack::hot_device(&v.spec, "enterprise-tlc-1.92tb").unwrap().logical_bytes;
        assert_eq!(r.namespaces[1].size_bytes, staging);
        assert_eq!(r.namespaces[1].host_bytes, staging);
        // fio sizes scale with the run (64 MiB at 1/1000 is 64 KiB, one write).
        assert!(r.namespaces[0].host_bytes > 0);
        // One sequential pass over the fresh staging drive: no GC.
        assert_eq!(r.namespaces[1].media_bytes, staging);
        // The checks: dedicated layout only, and something must stay on [device].
        let shared = doc.replace("layout = \"dedicated\"\n", "");
        let e = parse_experiment(&shared, "t").unwrap_err();
        assert!(format!("{e:#}").contains("layout = \"dedicated\""), "{e:#}");
        let all_own = doc.replace("name = \"capacity\"\n", "name = \"capacity\"\ndevice = \"client-tlc-2tb\"\n");
        let e = parse_experiment(&all_own, "t").unwrap_err();
        assert!(format!("{e:#}").contains("leave at least one"), "{e:#}");
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

/// Peak memory of one run of `spec` (already scaled), in bytes, for a scheduler that places
/// runs by memory (a Ray task's `memory` requirement). Calibrated on measured peak RSS, not
/// derived (docs/model.md, "Memory estimate"): 64 MiB for the program; 12 bytes per mapping
/// unit of every flash drive's raw capacity (its mapping tables: 7.8 bytes measured); for a
/// key-value store, 256 bytes per record of its fill (an LSM store's tables and merges: 210
/// measured under YCSB A). Zoned drives and disks keep state per zone, not per block: no
/// per-block part. A rough upper figure: schedulers need a bound, not a forecast.
pub fn memory_estimate(spec: &ExperimentSpec) -> Result<u64> {
    const FIXED: u64 = 64 << 20;
    const PER_UNIT: u64 = 12;
    const PER_RECORD: u64 = 256;
    const RECORD: u64 = 1024;
    let cfg = spec.device_config()?;
    let flash = |c: &wafsim_core::config::DeviceConfig| c.physical_bytes / c.mapping_unit.max(1) as u64 * PER_UNIT;
    let mut bytes = FIXED;
    for d in plan(spec, &cfg)? {
        bytes += match &d {
            DriveConfig::Flash(c) => flash(c),
            DriveConfig::Tiering { hot, cold, .. } => flash(hot) + flash(cold),
            DriveConfig::Zns(_) | DriveConfig::Smr(_) | DriveConfig::DmZoned { .. } => 0,
        };
    }
    for kv in spec.phase.iter().flat_map(|p| &p.kv) {
        let ns = cfg.namespaces.iter().find(|n| n.name == kv.namespace).map_or(cfg.logical_bytes, |n| n.size_bytes);
        bytes += (ns as f64 * kv.fill.unwrap_or(0.5)) as u64 / RECORD * PER_RECORD;
    }
    Ok(bytes)
}
