//! What a run reports: per variant, its phases, namespaces, jobs, write frontiers, file systems
//! and stores, host-layer devices, time series and timed figures.

mod figures;

pub use figures::{share, Figures, FrontierFigures, FsFigures, HostDeviceFigures, NsFigures, PhaseFigures, TimedFigures, NO_HOST_WRITES};
use serde::Serialize;
use wafsim_core::counters::{waf, waf_if_written};
use wafsim_core::Counters;
pub use wafsim_time::engine::LatSummary;

/// Per-namespace figures of the measured phases.
#[derive(Debug, Clone, Serialize)]
pub struct NsResult {
    /// Namespace name (from the experiment).
    pub name: String,
    /// Namespace size, bytes (as simulated, after scaling).
    pub size_bytes: u64,
    /// Host bytes written to the namespace.
    pub host_bytes: u64,
    /// Media bytes attributed to the namespace: its host-written units plus GC copies of its data.
    pub media_bytes: u64,
    /// Bytes of the namespace's data that GC copied (part of `media_bytes`).
    pub gc_bytes: u64,
    /// Host bytes read from the namespace.
    pub read_bytes: u64,
    /// Host bytes trimmed in the namespace.
    pub trim_bytes: u64,
}

/// Per write-frontier figures (RUH, stream, or GC frontier) of the measured phases.
#[derive(Debug, Clone, Serialize)]
pub struct FrontierResult {
    /// Index of the drive the frontier belongs to.
    pub device: u32,
    /// "host" or "gc" or "gc-shared".
    pub kind: &'static str,
    /// Reclaim group of the frontier.
    pub rg: u32,
    /// RUH or stream id; None for shared GC frontiers.
    pub ruh: Option<u32>,
    /// Host data the frontier programmed, bytes (0 for a GC frontier).
    pub host_bytes: u64,
    /// GC copies the frontier received, bytes (0 for a host frontier).
    pub gc_bytes: u64,
    /// Erase units erased that the frontier had written.
    pub erases: u64,
    /// 0 for a host frontier; a GC frontier's age class (1 unless the drive sorts GC copies by
    /// age: `gc_age_classes`).
    pub age_class: u32,
}

/// Timed figures of one direction of a job.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct DirTiming {
    /// Commands completed in the window.
    pub ios: u64,
    /// Bytes they carried.
    pub bytes: u64,
    /// Commands completed per second of the window.
    pub iops: f64,
    /// Bytes per second of the window.
    pub bytes_per_sec: f64,
    /// Mean latency, submission to completion, ns.
    pub lat_mean_ns: f64,
    /// Median latency, ns (histogram bucket lower edge, within about 0.4%).
    pub lat_p50_ns: u64,
    /// 99th percentile latency, ns.
    pub lat_p99_ns: u64,
    /// 99.9th percentile latency, ns.
    pub lat_p999_ns: u64,
    /// 99.99th percentile latency, ns.
    pub lat_p9999_ns: u64,
    /// Largest latency, ns (exact).
    pub lat_max_ns: u64,
}

/// Timed figures of one job (timing model on), over its window after ramp time.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct JobTiming {
    /// Reads.
    pub read: DirTiming,
    /// Writes (Zone Append included).
    pub write: DirTiming,
    /// Trims, flushes and zone management commands.
    pub trim: DirTiming,
    /// Length of the measurement window, ns: from the end of the ramp time to the job's last
    /// completion, or to the end of its last I/O's rate slot for a
    /// rate-limited job (fio counts the time waiting for the rate).
    pub window_ns: u64,
    /// Time-averaged I/Os in flight over the window.
    pub mean_inflight: f64,
    /// Queue depth the job ran with.
    pub iodepth: u32,
}

impl JobTiming {
    pub(crate) fn from_engine(j: &wafsim_time::JobResult, iodepth: u32) -> JobTiming {
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
#[derive(Debug, Clone, Serialize)]
pub struct JobResult {
    /// Name of the phase the source ran in.
    pub phase: String,
    /// Name of the source (job, workload or trace set).
    pub name: String,
    /// Namespace the source's I/O went to.
    pub namespace: String,
    /// Whether the phase is measured (counts toward the variant's WAF and totals).
    pub measured: bool,
    /// What the source issued: I/Os and bytes by direction.
    pub stats: wafsim_core::pipeline::SourceStats,
    /// Timed figures, when the timing model ran.
    pub timing: Option<JobTiming>,
}

/// Device-level timing of the measured phases (timing model on).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct TimedSummary {
    /// Simulated time of the measured phases (longest device).
    pub elapsed_ns: u64,
    /// Simulated time until the dies finished the work the measured phases booked (longest
    /// device): the window die-busy fractions are taken over.
    pub busy_window_ns: u64,
    /// Die-busy time of the measured phases by cause, summed over dies and devices.
    pub busy: wafsim_time::media::Busy,
    /// Dies over all devices (busy time is summed over dies).
    pub dies: u32,
    /// Mechanical disks, and their head-busy time in the measured phases (positioning and
    /// transfer, summed over disks).
    pub disks: u32,
    /// Head-busy time of the disks in the measured phases, ns (see `disks`).
    pub head_busy_ns: u64,
    /// Rated P/E cycles of the NAND (0 for disks: no wear-out by writes).
    pub pe_cycles: u32,
}

/// Device-wide counters of one phase (summed over devices).
#[derive(Debug, Clone, Serialize)]
pub struct PhaseResult {
    /// Phase name.
    pub name: String,
    /// Whether the phase is measured (counts toward the variant's totals).
    pub measured: bool,
    /// Counters of the phase (of its measurement window, for a phase with `steady_state`).
    pub counters: Counters,
    /// Mapping unit of the drives, bytes: turns the counters' mapping units into bytes.
    pub mapping_unit: u32,
    /// Steady-state verdict of a measured untimed phase that wrote.
    pub steady: Option<SteadyState>,
    /// Which writes the counters cover: "whole phase", "steady state (the last 5 rounds of
    /// 6.7 MB)", "last 300GB (300.5 GB of host writes)".
    pub window: String,
    /// WAF of the whole phase, when the window is not the whole phase.
    pub whole_waf: Option<f64>,
    /// The phase's `checkpoints`, in order.
    pub checkpoints: Vec<Checkpoint>,
    /// Why the phase ended before its amount (`stop_when_full`: a layer out of space, in
    /// words, with the host bytes written by then); None: it ran its course.
    pub stopped: Option<String>,
}

/// A point of a phase (`checkpoints`): the WAF up to it and since the previous one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    /// As the experiment gave it ("5h", "300GB").
    pub label: String,
    /// Where the checkpoints count from: "the phase start", or "the run start" (`measure_from
    /// = "run"`: the end of the stores' load).
    pub origin: &'static str,
    /// Host bytes from `origin` where it falls (scaled with the run).
    pub at_bytes: u64,
    /// Host bytes actually written when it was taken (the first batch end at or past it); None:
    /// the phase ended before it.
    pub reached: Option<u64>,
    /// Device WAF from the phase start.
    pub waf: f64,
    /// Device WAF since the previous checkpoint (the phase start for the first).
    pub interval_waf: f64,
    /// Media per application byte from the phase start, and since the previous checkpoint,
    /// where the phase has file systems or stores.
    pub total_waf: Option<(f64, f64)>,
}

impl PhaseResult {
    /// WAF of the phase: media bytes / host bytes (0 when nothing was written).
    pub fn waf(&self) -> f64 {
        waf(self.counters.media_units() * self.mapping_unit as u64, self.counters.host_write_bytes)
    }

    /// WAF of the phase, `None` when the host wrote nothing in it (reports print "n/a").
    pub fn written_waf(&self) -> Option<f64> {
        waf_if_written(self.counters.media_units() * self.mapping_unit as u64, self.counters.host_write_bytes)
    }
}

/// One time-series sample: cumulative counters since the end of the built-in precondition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Sample {
    /// Index of the phase the sample was taken in.
    pub phase: usize,
    /// The drive (dedicated layout), or None for all drives together.
    pub device: Option<u32>,
    /// Host bytes written.
    pub host_bytes: u64,
    /// Media bytes programmed: host data, GC copies and padding.
    pub media_bytes: u64,
    /// Bytes GC copied (part of `media_bytes`).
    pub gc_bytes: u64,
    /// Erase units erased.
    pub erases: u64,
    /// Bytes applications wrote through file systems so far (all drives), when the run has
    /// file workloads: the level above `host_bytes`.
    pub app_bytes: Option<u64>,
}

/// Everything measured for one variant.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VariantResult {
    /// Variant name.
    pub name: String,
    /// Namespace layout: "shared" (one device) or "dedicated" (a device per namespace).
    pub layout: String,
    /// Data placement of the drives, as text (e.g. "conventional", "fdp (1 RG x 8 RUH, initially
    /// isolated)").
    pub placement: String,
    /// GC victim policy, as text (e.g. "greedy", "cost-benefit").
    pub gc_policy: String,
    /// What the drives held before the first phase, in words (`[history]`: "sequential fill",
    /// "fresh (every LBA unmapped)", ...).
    pub history: String,
    /// Number of drives.
    pub devices: u32,
    /// Mapping unit, bytes.
    pub mapping_unit: u32,
    /// Erase unit size, bytes.
    pub erase_unit_bytes: u64,
    /// Capacity scale the variant ran at (1 = full scale).
    pub scale: f64,
    /// Counters of the measured phases, summed over phases and devices.
    pub counters: Counters,
    /// One row per phase of the experiment, in order, measured or not (the built-in precondition is
    /// not a phase).
    pub phases: Vec<PhaseResult>,
    /// Per-namespace figures of the measured phases.
    pub namespaces: Vec<NsResult>,
    /// One row per workload source of every phase.
    pub jobs: Vec<JobResult>,
    /// Per-frontier figures of the measured phases (flash drives only).
    pub frontiers: Vec<FrontierResult>,
    /// Erase count per erase unit over the device life: min, mean, max.
    pub erase_count: (u32, f64, u32),
    /// Logical capacity of all drives, bytes (as simulated, after scaling).
    pub logical_bytes: u64,
    /// Raw (physical) capacity of all drives, bytes (as simulated, after scaling).
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
    /// Timed figures of the measured phases, when the timing model ran.
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
    /// The same variant under the other cases of the experiment's unknowns (`--spread`); empty
    /// when they were not run.
    pub spread: Vec<SpreadRow>,
}

/// One case of an unknown (`[[unknown.case]]`), run: what the variant gives under it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpreadRow {
    /// The unknown's name.
    pub unknown: String,
    /// The case's label.
    pub case: String,
    /// Device WAF of the measured phases (media / host bytes).
    pub waf: f64,
    /// A timed run's write bandwidth (bytes/s) and read IOPS over its measured jobs.
    pub timed: Option<(f64, f64)>,
    /// A timed run's read p99 (ns) of its slowest reading job (None without reads).
    pub read_p99_ns: Option<f64>,
    /// Media bytes per application byte, where the measured phases have file systems or stores.
    pub total_waf: Option<f64>,
    /// The drive history the case ran with, in words.
    pub history: String,
    /// Which writes the case's first measured phase counts (its `window`): a case may end
    /// before the window the experiment asks for begins (a store still loading).
    pub window: String,
}

impl SpreadRow {
    /// The row of `r`, run under `case` of `unknown`.
    pub fn of(unknown: &str, case: &str, r: &VariantResult) -> SpreadRow {
        SpreadRow { unknown: unknown.into(), case: case.into(), waf: r.waf(), timed: r.timed.is_some().then(|| r.timed_totals()), read_p99_ns: r.worst_read_p99_ns(), total_waf: r.total_waf(), history: r.history.clone(), window: r.measured_window() }
    }
}

/// Bytes one tier of a tiering layer took and gave, by cause (cumulative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TierTraffic {
    /// User bytes written to the tier.
    pub user_write_bytes: u64,
    /// Bytes migrations wrote to the tier.
    pub migration_write_bytes: u64,
    /// User bytes read from the tier.
    pub user_read_bytes: u64,
    /// Bytes migrations read from the tier.
    pub migration_read_bytes: u64,
}

/// Per-tier traffic at one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TierPoint {
    /// Index of the phase the sample was taken in.
    pub phase: usize,
    /// User bytes written (all drives) since the end of the precondition, as in [`Sample`].
    pub host_bytes: u64,
    /// The hot tier's traffic.
    pub hot: TierTraffic,
    /// The cold tier's traffic.
    pub cold: TierTraffic,
}

/// Bytes one drive completed in one log interval (fio's bandwidth log).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BwPoint {
    /// Index of the phase.
    pub phase: usize,
    /// Index of the drive.
    pub device: u32,
    /// Interval end, seconds from the drive's first phase start (the last interval of a phase
    /// may be shorter).
    pub t_s: f64,
    /// Bytes of the reads completed in the interval.
    pub read_bytes: u64,
    /// Bytes of the writes completed in the interval.
    pub write_bytes: u64,
    /// Latency of the reads completed in the interval (all zero when none).
    pub read_lat: LatSummary,
    /// Latency of the writes completed in the interval.
    pub write_lat: LatSummary,
}

/// dm-zoned's state at one moment of a timed run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostPoint {
    /// Seconds of model time (from the start of the run).
    pub t_s: f64,
    /// Cache (or single-device random) zones free, and in all.
    pub cache_free: u32,
    /// Cache zones in all (see `cache_free`).
    pub cache_total: u32,
    /// User bytes written so far.
    pub user_write_bytes: u64,
    /// Bytes each disk's reclaim worker has written so far (copies and zero-fill).
    pub reclaim_write_bytes: Vec<u64>,
}

/// Traffic a host layer sent to one of its devices over the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostDeviceRow {
    /// dm-zoned: "cache" or "disk N" (from 1); tiering: "hot" or "cold".
    pub device: String,
    /// User bytes written to the device.
    pub user_write_bytes: u64,
    /// User bytes read from the device.
    pub user_read_bytes: u64,
    /// Bytes read from the device to reclaim (dm-zoned) or migrate (tiering).
    pub reclaim_read_bytes: u64,
    /// dm-zoned: reclaim copies and zero-fill; tiering: migrations (`reclaim_read_bytes` too).
    pub reclaim_write_bytes: u64,
    /// Metadata bytes written to the device (dm-zoned; 0 for tiering).
    pub metadata_write_bytes: u64,
    /// Bytes the device's own media took, what its own log pages would show: a flash drive's
    /// NAND programs (host and GC), a disk's or a plain device's written bytes.
    pub media_write_bytes: u64,
}

impl HostDeviceRow {
    /// Bytes the layer sent the device: user data, copies and metadata.
    pub fn sent_bytes(&self) -> u64 {
        self.user_write_bytes + self.reclaim_write_bytes + self.metadata_write_bytes
    }

    /// The device's own WAF: its media bytes over what the layer sent it (0 when nothing was
    /// sent).
    pub fn device_waf(&self) -> f64 {
        waf(self.media_write_bytes, self.sent_bytes())
    }
}

/// What a file system did in one phase: the application's bytes and the bytes it sent to the
/// device (its own write amplification: a log-structured one's GC copies).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FsResult {
    /// Name of the phase.
    pub phase: String,
    /// Whether the phase is measured.
    pub measured: bool,
    /// Name of the file workload.
    pub name: String,
    /// Namespace the file system is on.
    pub namespace: String,
    /// "conventional" or "zoned".
    pub filesystem: String,
    /// Bytes the application wrote to files (or to the store, see `store_write_bytes`).
    pub file_write_bytes: u64,
    /// Bytes the file system wrote to the device (its WAF is this over `file_write_bytes`).
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

    /// Device bytes / application bytes, `None` when the application wrote nothing.
    pub fn written_waf(&self) -> Option<f64> {
        waf_if_written(self.dev_write_bytes, self.file_write_bytes)
    }
}

impl VariantResult {
    /// Write bandwidth (bytes/s) and read IOPS summed over the measured jobs with timing (0
    /// and 0 in an untimed run).
    pub fn timed_totals(&self) -> (f64, f64) {
        let (mut w, mut ri) = (0.0, 0.0);
        for j in self.jobs.iter().filter(|j| j.measured) {
            if let Some(t) = &j.timing {
                w += t.write.bytes_per_sec;
                ri += t.read.iops;
            }
        }
        (w, ri)
    }

    /// The read p99 (ns) of the measured job whose reads were slowest at the 99th percentile
    /// (a timed run's latency-sensitive tenant when one job reads); None without timed reads.
    pub fn worst_read_p99_ns(&self) -> Option<f64> {
        self.jobs.iter().filter(|j| j.measured).filter_map(|j| j.timing.as_ref()).filter(|t| t.read.ios > 0).map(|t| t.read.lat_p99_ns as f64).reduce(f64::max)
    }

    /// The name of phase `i` ("" past the phases: a row that names no phase of this result).
    pub fn phase_name(&self, i: usize) -> &str {
        self.phases.get(i).map_or("", |p| p.name.as_str())
    }

    /// The window of the first measured phase ("whole phase" without one).
    pub fn measured_window(&self) -> String {
        self.phases.iter().find(|p| p.measured).map_or_else(|| "whole phase".to_string(), |p| p.window.clone())
    }

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

    /// Media bytes per application byte over the measured phases, where they ran file systems
    /// or stores (else `None`: the device WAF is the total).
    pub fn total_waf(&self) -> Option<f64> {
        self.filesystems.iter().any(|f| f.measured).then(|| waf(self.mbmw(), self.application_bytes()))
    }

    /// NAND wear per application byte: bytes programmed per byte of NAND per application byte
    /// (each program costs an erase in the long run); `None` without NAND (disks erase nothing)
    /// or without writes. Life at equal application writes is its inverse.
    pub fn wear_per_app_byte(&self) -> Option<f64> {
        let app = self.application_bytes() as f64;
        (self.physical_bytes > 0 && app > 0.0 && self.mbe() > 0).then(|| self.mbmw() as f64 / self.physical_bytes as f64 / app)
    }

    /// Host bytes written in the measured phases (HBMW, as in the FDP statistics log).
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
    /// WAF of the measured phases: media bytes / host bytes (0 when nothing was written).
    pub fn waf(&self) -> f64 {
        waf(self.mbmw(), self.hbmw())
    }

    /// WAF of the measured phases, `None` when the host wrote nothing in them (read-only or
    /// trim-only runs, or no phase measured): reports print "n/a" and say why.
    pub fn written_waf(&self) -> Option<f64> {
        waf_if_written(self.mbmw(), self.hbmw())
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

/// The verdict on the last `window` rounds of a phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SteadyState {
    /// Rounds the phase ran (complete rounds of `round_bytes` host bytes).
    pub rounds: u32,
    /// Host bytes per round.
    pub round_bytes: u64,
    /// Whether the last window met both criteria.
    pub steady: bool,
    /// Per-round WAF of the last window (fewer if the phase ran fewer rounds).
    pub window_waf: Vec<f64>,
    /// (max - min) / mean over the window.
    pub excursion: f64,
    /// |fitted slope| x (window - 1) / mean: how far the fitted line moves across the window.
    pub slope: f64,
    /// The criteria it was judged by.
    pub max_excursion: f64,
    /// Largest `slope` the criteria allow (`max_excursion` likewise for `excursion`).
    pub max_slope: f64,
    /// Rounds the window needs.
    pub window: u32,
    /// Erase units erased during the window: none means the drive has not started reclaiming
    /// space, and a WAF of 1.0 before garbage collection starts is not the steady value.
    pub window_erases: u64,
}
