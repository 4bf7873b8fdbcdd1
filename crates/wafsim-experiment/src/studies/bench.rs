//! `wafsim bench`: steady-state uniform random 4 KiB writes on a large conventional device;
//! `--timed`, the timing model's speed; `--host`, the host layers' speed ([`run_host_bench`]).

use std::time::Instant;
use wafsim_core::{BlockDevice, Device, DeviceConfig, GcPolicy, Io, NamespaceConfig, Op, Pid, Placement, Rng};

/// Benchmark parameters (defaults are the target: OP 7%, 2^26 mapping units).
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Logical capacity as a power of two of 4 KiB mapping units (26: 2^26 units, 256 GiB).
    pub mapping_units_log2: u32,
    /// Over-provisioning, (physical - logical) / logical.
    pub over_provisioning: f64,
    /// Erase unit size; None = 2^(log2 - 12) mapping units clamped to 64..=16384 (64 MiB at the
    /// default 2^26 units, about 4,400 erase units at any size).
    pub erase_unit_bytes: Option<u64>,
    /// GC victim policy.
    pub gc_policy: GcPolicy,
    /// Random writes before measuring, in multiples of the logical capacity.
    pub warmup_fills: f64,
    /// Random writes measured, in multiples of the logical capacity.
    pub measure_fills: f64,
    /// Seed of the random writes (and of the device).
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
    /// Mapping units of the logical capacity.
    pub mapping_units: u64,
    /// Erase units of the device.
    pub erase_units: u32,
    /// Media writes (mapping units programmed, host and GC) per second of wall clock.
    pub media_writes_per_sec: f64,
    /// Host writes (mapping units) per second of wall clock.
    pub host_writes_per_sec: f64,
    /// WAF of the measured writes: media units / host units.
    pub waf: f64,
    /// Memory the simulation's maps and per-unit tables need, bytes per mapping unit.
    pub bytes_per_mapping_unit: f64,
    /// Wall-clock seconds of the measured writes.
    pub seconds: f64,
    /// This machine's limit for the access pattern (see [`super::probe`]): the better of the
    /// probe runs just before and just after the measured writes, over the simulator's own
    /// footprint (its `bytes` are the maps' and tables' memory).
    pub limit: super::probe::ProbeResult,
    /// Updates per second of the probe runs before and after the measured writes.
    pub probe_runs: [f64; 2],
}

impl BenchResult {
    /// Media writes per second over the machine's limit.
    pub fn ratio_to_limit(&self) -> f64 {
        self.media_writes_per_sec / self.limit.updates_per_sec
    }
}

const MU: u32 = 4096;

/// The benchmark's device (conventional, one namespace over the whole logical capacity),
/// filled sequentially; and its mapping units.
fn filled_device(cfg: &BenchConfig, progress: &mut impl FnMut(&str)) -> anyhow::Result<(Device, u64)> {
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
        gc_age_classes: 1,
        fdp_idle_handles_hold_units: false,
        placement: Placement::Conventional,
        namespaces: vec![NamespaceConfig { name: "bench".into(), size_bytes: logical, placement_handles: vec![0] }],
        seed: cfg.seed,
        slc_cache: None,
    })?;
    progress("precondition (sequential fill)");
    for off in (0..units).step_by(32) {
        dev.submit(&Io { op: Op::Write, ns: 0, offset: off * MU as u64, len: 32 * MU, pid: Pid::NONE })?;
    }
    Ok((dev, units))
}

/// `n` uniform random single-unit writes over `units`, in batches of 4096.
fn random_writes(dev: &mut Device, rng: &mut Rng, units: u64, n: u64, batch: &mut Vec<Io>) -> anyhow::Result<()> {
    let mut left = n;
    while left > 0 {
        let k = left.min(4096);
        batch.clear();
        for _ in 0..k {
            batch.push(Io { op: Op::Write, ns: 0, offset: rng.below(units) * MU as u64, len: MU, pid: Pid::NONE });
        }
        dev.submit_batch(batch)?;
        left -= k;
    }
    Ok(())
}

/// Run the benchmark on the calling thread; `progress` gets the phase name.
pub fn run_bench(cfg: &BenchConfig, mut progress: impl FnMut(&str)) -> anyhow::Result<BenchResult> {
    let (mut dev, units) = filled_device(cfg, &mut progress)?;
    let mem = dev.geometry().memory_bytes();
    let mut batch = Vec::with_capacity(4096);
    let mut rng = Rng::new(cfg.seed);
    let mut random = |dev: &mut Device, n: u64| random_writes(dev, &mut rng, units, n, &mut batch);
    progress("warm-up (random writes)");
    random(&mut dev, (cfg.warmup_fills * units as f64) as u64)?;
    // The probe runs just before and just after the measured writes, over a table as large
    // as the simulator's maps and tables, so both meet the same machine state.
    progress("memory probe");
    let mut table = super::probe::ProbeTable::new(mem);
    let probe_updates = (units / 2).clamp(1 << 20, 1 << 25);
    let first = table.best(probe_updates, cfg.seed);
    progress("measure (random writes)");
    let before = dev.counters().clone();
    let t0 = Instant::now();
    random(&mut dev, (cfg.measure_fills * units as f64) as u64)?;
    let secs = t0.elapsed().as_secs_f64();
    let d = dev.counters().delta(&before);
    progress("memory probe");
    let second = table.best(probe_updates, cfg.seed);
    let limit = if second.updates_per_sec > first.updates_per_sec { second } else { first };
    Ok(BenchResult {
        mapping_units: units,
        erase_units: dev.geometry().erase_units,
        media_writes_per_sec: d.media_units() as f64 / secs,
        host_writes_per_sec: d.host_units as f64 / secs,
        waf: d.media_units() as f64 / d.host_units as f64,
        bytes_per_mapping_unit: mem as f64 / units as f64,
        seconds: secs,
        limit,
        probe_runs: [first.updates_per_sec, second.updates_per_sec],
    })
}

/// Figures measured by [`run_timed_bench`].
#[derive(Debug, Clone)]
pub struct TimedBenchResult {
    /// Writes completed in the measured run.
    pub ios: u64,
    /// Wall-clock seconds of the measured run.
    pub wall_seconds: f64,
    /// Simulated seconds of the measured run.
    pub simulated_seconds: f64,
    /// Simulated I/Os per second of wall clock (the benchmark's figure).
    pub ios_per_sec: f64,
    /// WAF of the measured writes: media units / host units.
    pub waf: f64,
    /// Write IOPS of the simulated drive (simulated I/Os per simulated second).
    pub write_iops_simulated: f64,
}

/// Timed mode: uniform random 4 KiB writes with GC, one job at queue depth 64, on a TLC device
/// of 2^`mapping_units_log2` mapping units (16 dies, 4 channels, 96 MiB erase units, OP 7%), after a sequential
/// fill and one capacity of warm-up writes; a controller datapath of `datapath_bytes_per_sec`
/// (0: none). Measures simulated I/Os per wall-clock second.
pub fn run_timed_bench(mapping_units_log2: u32, fills: f64, datapath_bytes_per_sec: f64, mut progress: impl FnMut(&str)) -> anyhow::Result<TimedBenchResult> {
    use wafsim_time::{run, JobSpec, Timeline, TimingConfig};
    use wafsim_workload::synthetic::{Distribution, Pattern, Synthetic, SyntheticSpec};
    let tc = TimingConfig { mapping_unit: MU, datapath_bytes_per_sec, ..TimingConfig::plain_tlc(16, 4) };
    tc.check().map_err(anyhow::Error::msg)?;
    // Erase unit: 32 program units on every die (24,576 mapping units, 96 MiB), so erases cost
    // about what they cost on a real superblock per byte written.
    let np = tc.units_per_program() * tc.dies * 32;
    let units = 1u64 << mapping_units_log2;
    let eus = ((units as f64 * 1.07) / np as f64).ceil() as u32;
    let cfg = DeviceConfig::single_namespace(eus, np, MU, 0.07, GcPolicy::Greedy, 1);
    let mut dev = Device::new(cfg)?;
    let ns = dev.namespace_bytes(0);
    progress("precondition (sequential fill, untimed)");
    crate::drives::precondition(&mut dev)?;
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

// ----- host layers -----

/// `wafsim bench --host`: how fast the untimed host layers run, in user 4 KiB writes per second
/// of wall clock on one thread (user bytes written / 4096 / seconds), everything below the
/// layer included (the workload generator, the layer, and the devices it writes to).
///
/// Two cases, built once, preconditioned, then measured in alternating rounds (dm-zoned, file
/// system, dm-zoned, ...) so a slow spell of the machine hits both; the medians are reported.
///
/// **dm-zoned** (`DmZonedDevice<PlainDevice, SmrDevice>`, multi-device mode as
/// `experiments/dm-zoned/smr.toml`): `dmz_disks` host-managed SMR disks with the geometry of the
/// `smr-hm-14tb` preset (256 MiB zones, 1% conventional, 128 open) but `dmz_disk_zones` zones
/// each, behind a regular cache device of `dmz_cache_bytes`, dm-zoned's default options (16
/// reserved zones, 512 KiB kcopyd pieces). The user data set is the chunks the disks'
/// sequential zones hold (the exposed capacity less the cache's share and the reserved zones),
/// filled sequentially in 1 MiB writes (not measured). The measured workload is the one of
/// `smr.toml` at 4 KiB and in steady state: `dmz_writers` sequential writers, taking turns write
/// by write, each rewriting its own share of the data set in 4 KiB writes, round and round,
/// and discarding each chunk as it enters it (as a log-structured file system or a circular log
/// recycling its space), submitted with `BlockDevice::submit_batch` in batches of 4096. Every
/// chunk is written to a cache zone and reclaim moves it to a free sequential zone (`RndData`,
/// 512 KiB pieces, a metadata flush per zone): layer WAF 2.
///
/// Overwrites without discard were tried and left out: a 4 KiB write into a chunk held by a
/// sequential zone takes a buffer zone, and once the cache holds only buffers the victim rule
/// (`dmz_get_rnd_zone_for_reclaim`: the buffered chunk whose sequential zone is heaviest) picks
/// the chunk being written, merges and moves it, and its next write needs a buffer again: untimed,
/// where no zone is ever "active" (the kernel's `dmz_lock_zone_reclaim` skips zones with I/O in
/// flight), nearly every write then costs two zone copies (layer WAF about 2 x blocks per zone:
/// ~500 measured with 1 MiB zones, the run did not finish with 256 MiB ones). Uniform random
/// writes over the capacity hit the same rule.
///
/// **Zone-aware file system** (`ZonedFs` over a `ZnsDevice` with the zone geometry of the
/// `zns-prototype-2tb` preset, 512 MiB zones of 384 MiB capacity, no open limit, but `fs_zones`
/// zones): the file groups of `experiments/zoned-fs/lsm-files.toml` (commit log of 32 MiB
/// segments, 4 kept; flushes of 64-128 MiB, 16 kept, oldest deleted; compaction outputs of 256
/// MiB - 1 GiB, a random one deleted per new one), sizes scaled by zone capacity / 384 MiB, with
/// as many compaction files kept as bring live data to `fs_live_fraction` of the zones'
/// capacity (88%: at the experiment's 70% the directories die whole and host GC never runs),
/// written in 4 KiB writes through `FsSource` (as the runner does) into the device's
/// `submit_batch`; one stream per group, greedy GC at the default watermarks. Measured after
/// `fs_warmup_fills` capacities of writes.
#[derive(Debug, Clone)]
pub struct HostBenchConfig {
    /// SMR disks behind dm-zoned.
    pub dmz_disks: u32,
    /// Zones per disk (256 MiB each unless `dmz_zone_bytes` says otherwise).
    pub dmz_disk_zones: u32,
    /// Disk zone size in bytes.
    pub dmz_zone_bytes: u64,
    /// Regular cache device in bytes.
    pub dmz_cache_bytes: u64,
    /// Sequential writers, each rewriting its own share of the data set.
    pub dmz_writers: u32,
    /// Writes before measuring, in multiples of the cache's capacity.
    pub dmz_warmup_cache_turns: f64,
    /// Zones of the ZNS device under the file system.
    pub fs_zones: u32,
    /// ZNS zone size and capacity in bytes.
    pub fs_zone_bytes: u64,
    /// ZNS zone capacity in bytes (see `fs_zone_bytes`).
    pub fs_zone_capacity: u64,
    /// Live file data the workload keeps, as a share of the zones' capacity (sets how many
    /// compaction files are kept).
    pub fs_live_fraction: f64,
    /// File writes before measuring, in multiples of the zones' capacity.
    pub fs_warmup_fills: f64,
    /// User 4 KiB writes per case per round.
    pub writes_per_round: u64,
    /// Measured rounds per case.
    pub rounds: u32,
    /// Seed of the workloads.
    pub seed: u64,
}

impl Default for HostBenchConfig {
    fn default() -> Self {
        HostBenchConfig {
            dmz_disks: 2,
            dmz_disk_zones: 4096,
            dmz_zone_bytes: 256 << 20,
            dmz_cache_bytes: 64 << 30,
            dmz_writers: 8,
            dmz_warmup_cache_turns: 4.0,
            fs_zones: 256,
            fs_zone_bytes: 512 << 20,
            fs_zone_capacity: 384 << 20,
            fs_live_fraction: 0.88,
            fs_warmup_fills: 5.0,
            writes_per_round: 1 << 25,
            rounds: 5,
            seed: 1,
        }
    }
}

impl HostBenchConfig {
    /// A tiny configuration (a few hundred MiB of 1 MiB zones; for tests).
    pub fn tiny() -> Self {
        HostBenchConfig {
            dmz_disks: 2,
            dmz_disk_zones: 64,
            dmz_zone_bytes: 1 << 20,
            dmz_cache_bytes: 16 << 20,
            dmz_writers: 8,
            dmz_warmup_cache_turns: 2.0,
            fs_zones: 256,
            fs_zone_bytes: 1 << 20,
            fs_zone_capacity: 768 << 10,
            fs_live_fraction: 0.88,
            fs_warmup_fills: 2.0,
            writes_per_round: 1 << 14,
            rounds: 3,
            seed: 1,
        }
    }
}

/// One case of [`run_host_bench`]: speed per round and what the layer did over the measured
/// rounds (machine-independent).
#[derive(Debug, Clone)]
pub struct HostCaseResult {
    /// "dm-zoned" or "zoned fs".
    pub name: &'static str,
    /// User 4 KiB writes per second of wall clock, one entry per round, in round order.
    pub rounds: Vec<f64>,
    /// Median of `rounds`, user 4 KiB writes per second.
    pub median_writes_per_sec: f64,
    /// User bytes written in the measured rounds.
    pub user_bytes: u64,
    /// Bytes the layer wrote to its devices in the measured rounds (dm-zoned: user data,
    /// reclaim copies, zero-fill, metadata; file system: file data and GC copies).
    pub device_bytes: u64,
    /// Wall-clock seconds of the measured rounds.
    pub seconds: f64,
}

impl HostCaseResult {
    /// The layer's write amplification over the measured rounds.
    pub fn waf(&self) -> f64 {
        self.device_bytes as f64 / self.user_bytes as f64
    }
}

/// Figures measured by [`run_host_bench`].
#[derive(Debug, Clone)]
pub struct HostBenchResult {
    /// The dm-zoned case.
    pub dm_zoned: HostCaseResult,
    /// The zone-aware file system case.
    pub fs: HostCaseResult,
    /// dm-zoned: exposed capacity, data-set chunks, zones reclaimed per case (Empty, RndData,
    /// Buf, SeqData) in the measured rounds.
    pub dmz_capacity: u64,
    /// dm-zoned: chunks of the user data set (see `dmz_capacity`).
    pub dmz_data_chunks: u32,
    /// dm-zoned: zones reclaimed per case, Empty, RndData, Buf, SeqData (see `dmz_capacity`).
    pub dmz_reclaim_cases: [u64; 4],
    /// File system: the zones' writable capacity, compaction files kept, and the zones the
    /// device erased in the measured rounds (resets of GC victims and of zones whose files all
    /// died).
    pub fs_capacity: u64,
    /// File system: compaction files kept (see `fs_capacity`).
    pub fs_compaction_files: u32,
    /// File system: zones erased in the measured rounds (see `fs_capacity`).
    pub fs_zone_erases: u64,
}

/// Median of `v` (mean of the middle two for an even count; 0 for none).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The dm-zoned case.
struct DmzCase {
    dev: wafsim_host::DmZonedDevice<wafsim_core::plain::PlainDevice, wafsim_core::smr::SmrDevice>,
    chunks: u64,
    zone_blocks: u64,
    /// Per writer: first block of its region, end of its region, next block.
    writers: Vec<(u64, u64, u64)>,
    turn: usize,
    batch: Vec<Io>,
}

impl DmzCase {
    fn new(cfg: &HostBenchConfig) -> anyhow::Result<DmzCase> {
        use wafsim_core::plain::PlainDevice;
        use wafsim_core::smr::{SmrConfig, SmrDevice};
        use wafsim_host::{DmZonedConfig, DmZonedDevice};
        let disk = SmrConfig::small(cfg.dmz_disk_zones, cfg.dmz_zone_bytes, cfg.dmz_disk_zones.div_ceil(100), 128);
        let cache = PlainDevice::new(cfg.dmz_cache_bytes, disk.block_size).map_err(anyhow::Error::msg)?;
        let disks = (0..cfg.dmz_disks).map(|_| SmrDevice::new(disk.clone()).map_err(|e| anyhow::anyhow!("{e}"))).collect::<anyhow::Result<Vec<_>>>()?;
        let dmz = DmZonedConfig::default();
        let dev = DmZonedDevice::new(Some(cache), disks, &dmz).map_err(|e| anyhow::anyhow!("dm-zoned: {e}"))?;
        let seq = dev.layer().chunk_stats().free_seq_zones;
        let chunks = seq.saturating_sub(dmz.reserved_seq) as u64;
        let n = cfg.dmz_writers.max(1) as u64;
        anyhow::ensure!(chunks >= n, "dm-zoned bench: {chunks} data chunks for {n} writers");
        let zone_blocks = cfg.dmz_zone_bytes / MU as u64;
        let writers = (0..n).map(|w| (w * chunks / n * zone_blocks, (w + 1) * chunks / n * zone_blocks)).map(|(a, b)| (a, b, a)).collect();
        Ok(DmzCase { dev, chunks, zone_blocks, writers, turn: 0, batch: Vec::with_capacity(4096) })
    }

    /// Sequential fill of the data set in 1 MiB writes.
    fn fill(&mut self) -> anyhow::Result<()> {
        let end = self.chunks * self.zone_blocks * MU as u64;
        let step = (1u64 << 20).min(self.zone_blocks * MU as u64);
        let mut off = 0;
        while off < end {
            self.batch.clear();
            while off < end && self.batch.len() < 4096 {
                let len = step.min(end - off);
                self.batch.push(Io { op: Op::Write, ns: 0, offset: off, len: len as u32, pid: Pid::NONE });
                off += len;
            }
            self.dev.submit_batch(&self.batch)?;
        }
        Ok(())
    }

    /// `n` 4 KiB writes, the writers taking turns, each rewriting its region in order and
    /// discarding each chunk as it enters it.
    fn write(&mut self, n: u64) -> anyhow::Result<()> {
        let mut left = n;
        let zb = self.zone_blocks;
        while left > 0 {
            let k = left.min(4096);
            self.batch.clear();
            for _ in 0..k {
                let w = &mut self.writers[self.turn];
                // Chunks are a power of two of blocks (dm-zoned takes no other zone size).
                if w.2 & (zb - 1) == 0 {
                    self.batch.push(Io { op: Op::Trim, ns: 0, offset: w.2 * MU as u64, len: (zb * MU as u64) as u32, pid: Pid::NONE });
                }
                self.batch.push(Io { op: Op::Write, ns: 0, offset: w.2 * MU as u64, len: MU, pid: Pid::NONE });
                w.2 = if w.2 + 1 == w.1 { w.0 } else { w.2 + 1 };
                self.turn = if self.turn + 1 == self.writers.len() { 0 } else { self.turn + 1 };
            }
            self.dev.submit_batch(&self.batch)?;
            left -= k;
        }
        Ok(())
    }

    /// (user bytes, device bytes, reclaimed zones per case).
    fn totals(&self) -> (u64, u64, [u64; 4]) {
        let l = self.dev.layer();
        (l.counters().host_write_bytes, l.device_bytes_written(), l.reclaim_stats().zones)
    }
}

type FsSrc = wafsim_host::fs::FsSource<wafsim_workload::files::SyntheticFiles, wafsim_host::fs::ZonedFs>;

/// The file-system case.
struct FsCase {
    src: FsSrc,
    dev: wafsim_core::zns::ZnsDevice,
    batch: Vec<Io>,
    capacity: u64,
    compaction_files: u32,
}

impl FsCase {
    fn new(cfg: &HostBenchConfig) -> anyhow::Result<FsCase> {
        use wafsim_core::zns::{ZnsConfig, ZnsDevice};
        use wafsim_host::fs::{FsSource, ZonedFs, ZonedFsConfig};
        use wafsim_workload::files::{DeleteOrder, FileGroup, SyntheticFiles};
        let zns = ZnsConfig::small(cfg.fs_zones, cfg.fs_zone_bytes, cfg.fs_zone_capacity);
        let dev = ZnsDevice::new(zns).map_err(|e| anyhow::anyhow!("{e}"))?;
        // One stream per group (directory); greedy GC at the default watermarks.
        let fs_cfg = ZonedFsConfig { streams: 3, ..ZonedFsConfig::new(0, cfg.fs_zones, cfg.fs_zone_bytes, cfg.fs_zone_capacity, 16) };
        let fs = ZonedFs::new(fs_cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
        // lsm-files.toml's groups, sizes scaled by zone capacity / 384 MiB, 4 KiB writes.
        let capacity = cfg.fs_zones as u64 * cfg.fs_zone_capacity;
        let s = cfg.fs_zone_capacity as f64 / (384u64 << 20) as f64;
        let mib = |m: f64| ((m * s * (1u64 << 20) as f64) as u64).max(MU as u64);
        let group = |lo: f64, hi: f64, live: u32, weight: f64, order| FileGroup {
            file_bytes: (mib(lo), mib(hi)),
            live_files: live,
            write_bytes: MU,
            weight,
            order,
            overwrite: 0.0,
        };
        let commitlog = group(32.0, 32.0, 4, 1.0, DeleteOrder::Oldest);
        let flush = group(64.0, 128.0, 16, 1.0, DeleteOrder::Oldest);
        let small = 4.0 * mib(32.0) as f64 + 16.0 * mib(96.0) as f64;
        let live = ((cfg.fs_live_fraction * capacity as f64 - small) / mib(640.0) as f64).max(1.0) as u32;
        let compaction = group(256.0, 1024.0, live, 2.0, DeleteOrder::Random);
        let files = SyntheticFiles::new(vec![commitlog, flush, compaction], u64::MAX, Rng::derive(cfg.seed, 2).next_u64()).map_err(|e| anyhow::anyhow!("{e}"))?;
        let src = FsSource::new(files, fs);
        Ok(FsCase { src, dev, batch: Vec::with_capacity(4096), capacity, compaction_files: live })
    }

    /// (bytes the files took, bytes the file system wrote).
    fn write_bytes(&self) -> (u64, u64) {
        use wafsim_host::fs::FileSystem;
        self.src.file_system().write_bytes()
    }

    /// At least `n` user 4 KiB writes (the last batch of block I/O finishes).
    fn write(&mut self, n: u64) -> anyhow::Result<()> {
        use wafsim_core::pipeline::IoSource;
        let target = self.write_bytes().0 + n * MU as u64;
        loop {
            self.batch.clear();
            let got = self.src.fill(&mut self.batch, 4096).map_err(|e| anyhow::anyhow!("zoned file system: {e}"))?;
            self.dev.submit_batch(&self.batch)?;
            anyhow::ensure!(got > 0, "file workload ended");
            if self.write_bytes().0 >= target {
                return Ok(());
            }
        }
    }

    /// (user bytes, device bytes, zones the device erased).
    fn totals(&self) -> (u64, u64, u64) {
        let (file, dev) = self.write_bytes();
        (file, dev, self.dev.counters().erases)
    }
}

/// Run the host-layer benchmark on the calling thread (see [`HostBenchConfig`]); `progress`
/// gets a line per phase and per measured round.
pub fn run_host_bench(cfg: &HostBenchConfig, mut progress: impl FnMut(&str)) -> anyhow::Result<HostBenchResult> {
    anyhow::ensure!(cfg.rounds > 0 && cfg.writes_per_round > 0, "host bench: need at least one round of at least one write");
    let mut dmz = DmzCase::new(cfg)?;
    progress(&format!("dm-zoned: sequential fill of {} chunks (1 MiB writes)", dmz.chunks));
    dmz.fill()?;
    let nr_cache = dmz.dev.layer().cache_usage().total as f64;
    let warm = (cfg.dmz_warmup_cache_turns * nr_cache * dmz.zone_blocks as f64) as u64;
    progress(&format!("dm-zoned: warm-up ({warm} sequential 4 KiB overwrites, {} writers)", dmz.writers.len()));
    dmz.write(warm)?;
    let mut fs = FsCase::new(cfg)?;
    let warm = (cfg.fs_warmup_fills * fs.capacity as f64) as u64 / MU as u64;
    progress(&format!("zoned fs: warm-up ({warm} file writes of 4 KiB)"));
    fs.write(warm)?;

    let (d_user0, d_dev0, d_cases0) = dmz.totals();
    let (f_user0, f_dev0, f_erase0) = fs.totals();
    let (mut d_rounds, mut f_rounds) = (Vec::new(), Vec::new());
    let (mut d_secs, mut f_secs) = (0.0, 0.0);
    for r in 1..=cfg.rounds {
        let (u0, b0, _) = dmz.totals();
        let t0 = Instant::now();
        dmz.write(cfg.writes_per_round)?;
        let secs = t0.elapsed().as_secs_f64();
        let (u1, b1, _) = dmz.totals();
        d_secs += secs;
        d_rounds.push((u1 - u0) as f64 / MU as f64 / secs);
        let (fu0, fb0, _) = fs.totals();
        let t0 = Instant::now();
        fs.write(cfg.writes_per_round)?;
        let secs = t0.elapsed().as_secs_f64();
        let (fu1, fb1, _) = fs.totals();
        f_secs += secs;
        f_rounds.push((fu1 - fu0) as f64 / MU as f64 / secs);
        progress(&format!(
            "round {r}/{}: dm-zoned {:.2} M (WAF {:.3}), zoned fs {:.2} M (WAF {:.3}) user 4 KiB writes/s",
            cfg.rounds,
            d_rounds[d_rounds.len() - 1] / 1e6,
            (b1 - b0) as f64 / (u1 - u0) as f64,
            f_rounds[f_rounds.len() - 1] / 1e6,
            (fb1 - fb0) as f64 / (fu1 - fu0) as f64,
        ));
    }
    let (d_user, d_dev, d_cases) = dmz.totals();
    let (f_user, f_dev, f_erase) = fs.totals();
    let mut cases = [0; 4];
    for i in 0..4 {
        cases[i] = d_cases[i] - d_cases0[i];
    }
    Ok(HostBenchResult {
        dm_zoned: HostCaseResult {
            name: "dm-zoned",
            median_writes_per_sec: median(&d_rounds),
            rounds: d_rounds,
            user_bytes: d_user - d_user0,
            device_bytes: d_dev - d_dev0,
            seconds: d_secs,
        },
        fs: HostCaseResult {
            name: "zoned fs",
            median_writes_per_sec: median(&f_rounds),
            rounds: f_rounds,
            user_bytes: f_user - f_user0,
            device_bytes: f_dev - f_dev0,
            seconds: f_secs,
        },
        dmz_capacity: dmz.dev.namespace_bytes(0),
        dmz_data_chunks: dmz.chunks as u32,
        dmz_reclaim_cases: cases,
        fs_capacity: fs.capacity,
        fs_compaction_files: fs.compaction_files,
        fs_zone_erases: f_erase - f_erase0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_bench_runs_every_model() {
        let r = run_apps_bench(1, 100_000, None, |_| {}).unwrap();
        assert_eq!(r.cases.len(), 6);
        for c in &r.cases {
            assert_eq!(c.rounds.len(), 1, "{}", c.name);
            assert!(c.median_ops_per_sec > 0.0, "{}", c.name);
            assert!(c.app_waf > 1.0, "{}: WAF {}", c.name, c.app_waf);
        }
        // Half-full store under updates: defragmentation rewrites live records (WAF > 1), and
        // the low-water mark of 50% bounds it near 2.
        assert!(r.cases[0].app_waf < 2.2, "store WAF {}", r.cases[0].app_waf);
    }

    #[test]
    fn host_bench_runs_at_tiny_size_and_both_layers_reclaim() {
        let cfg = HostBenchConfig::tiny();
        let mut lines = 0;
        let r = run_host_bench(&cfg, |_| lines += 1).unwrap();
        assert_eq!(lines, 3 + cfg.rounds as usize);
        for c in [&r.dm_zoned, &r.fs] {
            assert_eq!(c.rounds.len(), cfg.rounds as usize, "{}", c.name);
            assert!(c.rounds.iter().all(|&x| x > 0.0) && c.median_writes_per_sec > 0.0, "{}", c.name);
            assert!(c.user_bytes >= cfg.rounds as u64 * cfg.writes_per_round * MU as u64, "{}", c.name);
            // Reclaim (dm-zoned) and host GC (file system) ran: the layer wrote more than the user.
            assert!(c.waf() > 1.0, "{}: WAF {}", c.name, c.waf());
        }
        // Chunks written to cache zones were moved to sequential zones (RndData).
        assert!(r.dmz_reclaim_cases[1] > 0, "{:?}", r.dmz_reclaim_cases);
        assert!(r.fs_zone_erases > 0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}

/// `wafsim bench --apps`: application operations per second of each application model, its
/// block I/O taken by a device without a media model (one thread, untimed); medians over rounds
/// after a warm-up of one million operations.
///
/// - log-structured KV: YCSB workload A (zipfian, 50/50 reads and updates of 10 x 100 B
///   records filling half of a 4 GiB namespace of 128 KiB write blocks);
/// - LSM size-tiered (Cassandra-like) and leveled (RocksDB-like): YCSB A over 1 M records of
///   1 KB, through the conventional file system on an 8 GiB namespace;
/// - flash cache: kvcache-shaped requests (zipf 1.0, objects 2.9 times the flash cache)
///   through the published CacheLib FDP setup (DRAM cache of 4.5%, FIFO regions, hits
///   reinsertion, retention admission) on a whole 4 GiB namespace.
pub struct AppsBenchCase {
    /// The application model and its workload, e.g. "log-structured KV (YCSB A)".
    pub name: &'static str,
    /// Operations per second of wall clock, one entry per round.
    pub rounds: Vec<f64>,
    /// Median of `rounds`, operations per second.
    pub median_ops_per_sec: f64,
    /// The model's own write amplification at the end (device or file bytes per application byte).
    pub app_waf: f64,
    /// What the case ran (records, hit ratio).
    pub detail: String,
}

/// Every application model's case of `wafsim bench --apps`.
pub struct AppsBenchResult {
    /// One case per application model run.
    pub cases: Vec<AppsBenchCase>,
}

/// Drive `src` into a device without media model, `rounds` rounds of `ops_per_round`
/// operations after `warm` operations (as `ops()` counts them).
#[allow(clippy::too_many_arguments)]
fn drive_apps<S: wafsim_core::pipeline::IoSource>(
    name: &'static str,
    src: &mut S,
    ns_bytes: u64,
    ops: &dyn Fn(&S) -> u64,
    warm: u64,
    rounds: u32,
    ops_per_round: u64,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<f64>> {
    let mut dev = wafsim_core::plain::PlainDevice::new(ns_bytes, 4096).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut buf = Vec::with_capacity(1024);
    let start = ops(src);
    let mut drive = |target: u64| -> anyhow::Result<()> {
        while ops(src) < target {
            buf.clear();
            if src.fill(&mut buf, 1024).map_err(|e| anyhow::anyhow!("apps bench {name}: {e}"))? == 0 {
                anyhow::bail!("apps bench {name}: the workload ended early");
            }
            dev.submit_batch(&buf)?;
        }
        Ok(())
    };
    progress(&format!("{name}: warm up with {warm} operations"));
    drive(start + warm)?;
    let mut per_round = Vec::new();
    for k in 0..rounds as u64 {
        let t0 = Instant::now();
        drive(start + warm + (k + 1) * ops_per_round)?;
        per_round.push(ops_per_round as f64 / t0.elapsed().as_secs_f64());
        progress(&format!("{name} round {}: {:.2} M ops/s", k + 1, per_round[k as usize] / 1e6));
    }
    Ok(per_round)
}

fn case(name: &'static str, rounds: Vec<f64>, app_waf: f64, detail: String) -> AppsBenchCase {
    AppsBenchCase { name, median_ops_per_sec: median(&rounds), rounds, app_waf, detail }
}

/// Run the application-model benchmark: `rounds` rounds of `ops_per_round` operations per model
/// (only the cases whose name contains `only`, when given).
pub fn run_apps_bench(rounds: u32, ops_per_round: u64, only: Option<&str>, mut progress: impl FnMut(&str)) -> anyhow::Result<AppsBenchResult> {
    use wafsim_apps::{FlashCacheConfig, FlashCacheSource, LsKv, LsKvConfig, LsKvSource, LsmConfig};
    use wafsim_workload::ycsb::{RequestDistribution, Ycsb, YcsbConfig, YcsbPhases};
    anyhow::ensure!(rounds > 0 && ops_per_round > 0, "apps bench: need at least one round of at least one operation");
    let warm = 1_000_000u64;
    let total = warm + rounds as u64 * ops_per_round;
    let mut cases = Vec::new();
    let ycsb_a = |records: u64| {
        let mut y = YcsbConfig::workload('a');
        y.requestdistribution = RequestDistribution::Zipfian;
        y.recordcount = records;
        y.operationcount = total;
        y
    };

    let wanted = |name: &str| only.is_none_or(|o| name.contains(o));
    const KV: &str = "log-structured KV (YCSB A)";
    const CACHE: &str = "flash cache (published CacheLib setup, kvcache-shaped)";
    const WT: &str = "WiredTiger (YCSB A, on a file system)";
    const HSE: &str = "HSE (YCSB A, on mpool)";
    let names = [KV, "LSM size-tiered (YCSB A, on a file system)", "LSM leveled (YCSB A, on a file system)", CACHE, WT, HSE];
    if let Some(o) = only.filter(|_| !names.iter().any(|n| wanted(n))) {
        anyhow::bail!("--case {o:?}: no case's name contains it (cases: {})", names.join("; "));
    }

    // Log-structured KV.
    if wanted(KV) {
    let ns_bytes = 4u64 << 30;
    let store = LsKv::new(LsKvConfig { device_bytes: ns_bytes, write_block_bytes: 128 << 10, ..LsKvConfig::default() }).map_err(|e| anyhow::anyhow!("{e}"))?;
    let records = store.records_per_block(YcsbConfig::workload('a').record_bytes()) as u64 * store.data_blocks() as u64 / 2;
    let mut src = LsKvSource::new(Ycsb::try_new(&ycsb_a(records), YcsbPhases::LoadAndRun, 1).map_err(|e| anyhow::anyhow!("{e}"))?, store);
    progress(&format!("log-structured KV: load {records} records"));
    let r = drive_apps("log-structured KV", &mut src, ns_bytes, &|s| s.store().counters().ops, records + warm, rounds, ops_per_round, &mut progress)?;
    cases.push(case(KV, r, src.report().app_waf(), format!("{records} records")));
    }

    // LSM stores through the conventional file system.
    for (name, cfg) in [(names[1], LsmConfig::cassandra()), (names[2], LsmConfig::rocksdb())] {
        if !wanted(name) {
            continue;
        }
        let ns_bytes = 8u64 << 30;
        let records = 1_000_000u64;
        let cfg = LsmConfig { capacity_bytes: ns_bytes, ..cfg };
        let files = wafsim_apps::LsmFiles::new(Ycsb::try_new(&ycsb_a(records), YcsbPhases::LoadAndRun, 1).map_err(|e| anyhow::anyhow!("{e}"))?, wafsim_apps::Lsm::new(cfg).map_err(|e| anyhow::anyhow!("{e}"))?);
        let fs = wafsim_host::fs::ConvFs::new(wafsim_host::fs::ConvFsConfig { discard: true, ..wafsim_host::fs::ConvFsConfig::new(0, ns_bytes) }).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut src = wafsim_host::fs::FsSource::new(files, fs);
        let r = drive_apps(name, &mut src, ns_bytes, &|s| s.files().store().counters().ops, records + warm, rounds, ops_per_round, &mut progress)?;
        let waf = src.files().report().app_waf();
        let dev = src.file_system().counters().dev_write_bytes;
        cases.push(case(name, r, waf, format!("{records} records, file system wrote {:.2} GiB", dev as f64 / (1u64 << 30) as f64)));
    }

    // Flash cache.
    if wanted(CACHE) {
    let ns_bytes = 4u64 << 30;
    let cache = FlashCacheConfig { namespace_bytes: ns_bytes, ..FlashCacheConfig::default() }.published();
    // The source never ends: the DRAM tier takes about a million requests to fill before flash
    // sees any I/O, and a fill runs on until it has I/O to hand out, past any fixed count.
    let gen = wafsim_workload::cachegen::CacheGenConfig::kvcache_202210().with_footprint((2.9 * ns_bytes as f64) as u64);
    let mut src = FlashCacheSource::new(wafsim_workload::cachegen::CacheGen::try_new(&gen, 1).map_err(|e| anyhow::anyhow!("{e}"))?, wafsim_apps::FlashCache::new(cache).map_err(|e| anyhow::anyhow!("{e}"))?);
    let r = drive_apps("flash cache", &mut src, ns_bytes, &|s| s.cache().counters().ops, 4 * warm, rounds, ops_per_round, &mut progress)?;
    let rep = src.report();
    cases.push(case(CACHE, r, rep.app_waf(), format!("{} keys, hit ratio {:.3}", gen.keys, rep.hit_ratio())));
    }

    // WiredTiger through the conventional file system: 1 M documents of 1 KB on 8 GiB, a cache
    // of 5% of it, clients at 50,000 requests/s (a checkpoint every 3 M requests).
    if wanted(WT) {
        let ns_bytes = 8u64 << 30;
        let records = 1_000_000u64;
        let cfg = wafsim_apps::wiredtiger::WtConfig { cache_bytes: ns_bytes / 20, ops_per_sec: 50_000.0, ..Default::default() };
        let wt = wafsim_apps::wiredtiger::WiredTiger::new(cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
        let files = wafsim_apps::wiredtiger::WtFiles::new(Ycsb::try_new(&ycsb_a(records), YcsbPhases::LoadAndRun, 1).map_err(|e| anyhow::anyhow!("{e}"))?, wt);
        let fs = wafsim_host::fs::ConvFs::new(wafsim_host::fs::ConvFsConfig::new(0, ns_bytes)).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut src = wafsim_host::fs::FsSource::new(files, fs);
        let r = drive_apps("WiredTiger", &mut src, ns_bytes, &|s| s.files().counters().ops, records + warm, rounds, ops_per_round, &mut progress)?;
        let c = src.files().counters().clone();
        let dev = src.file_system().counters().dev_write_bytes;
        cases.push(case(WT, r, c.app_waf(), format!("{records} records, {} checkpoints, file system wrote {:.2} GiB", c.checkpoints, dev as f64 / (1u64 << 30) as f64)));
    }

    // HSE through mpool on one capacity drive: 1 M documents of 1 KB on 8 GiB, HSE's sizes / 16
    // (c0 128 MiB, 2 MiB mblocks = mpool zones), clients at 50,000 requests/s.
    if wanted(HSE) {
        let ns_bytes = 8u64 << 30;
        let records = 1_000_000u64;
        let cfg = wafsim_apps::HseConfig { ops_per_sec: 50_000.0, ..Default::default() }.scaled(16);
        let zone_bytes = cfg.mblock_bytes;
        let hse = wafsim_apps::Hse::new(cfg).map_err(|e| anyhow::anyhow!("{e}"))?;
        let files = wafsim_apps::HseFiles::new(Ycsb::try_new(&ycsb_a(records), YcsbPhases::LoadAndRun, 1).map_err(|e| anyhow::anyhow!("{e}"))?, hse);
        let fs = wafsim_host::fs::MpoolFs::new(wafsim_host::fs::MpoolConfig { zone_bytes, ..wafsim_host::fs::MpoolConfig::new(0, ns_bytes) }).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut src = wafsim_host::fs::FsSource::new(files, fs);
        let r = drive_apps("HSE", &mut src, ns_bytes, &|s| s.files().counters().ops, records + warm, rounds, ops_per_round, &mut progress)?;
        let c = src.files().counters().clone();
        cases.push(case(HSE, r, c.app_waf(), format!("{records} records, {} ingests, {} k- and {} kv-compactions, {} spills", c.ingests, c.k_compactions, c.kv_compactions, c.root_spills + c.internal_spills + c.leaf_spills)));
    }
    Ok(AppsBenchResult { cases })
}

/// Figures measured by [`run_image_bench`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImageBenchResult {
    /// Mapping units of the logical capacity.
    pub mapping_units: u64,
    /// Save, load and their check.
    #[serde(flatten)]
    pub times: super::bench_drive::DriveImageTimes,
    /// Image bytes per second of the save.
    pub save_bytes_per_sec: f64,
    /// Image bytes per second of the load.
    pub load_bytes_per_sec: f64,
}

/// Drive images: the benchmark's device filled and aged by `cfg.warmup_fills` of random
/// writes, saved to a file in `dir`, released, and loaded back into a new drive; the file is
/// removed.
pub fn run_image_bench(cfg: &BenchConfig, dir: &std::path::Path, mut progress: impl FnMut(&str)) -> anyhow::Result<ImageBenchResult> {
    let (mut dev, units) = filled_device(cfg, &mut progress)?;
    progress("age (random writes)");
    random_writes(&mut dev, &mut Rng::new(cfg.seed), units, (cfg.warmup_fills * units as f64) as u64, &mut Vec::with_capacity(4096))?;
    let times = super::bench_drive::save_and_load(dev, dir, "bench --image", &mut progress)?;
    Ok(ImageBenchResult {
        mapping_units: units,
        save_bytes_per_sec: times.image_bytes as f64 / times.save_seconds,
        load_bytes_per_sec: times.image_bytes as f64 / times.load_seconds,
        times,
    })
}
