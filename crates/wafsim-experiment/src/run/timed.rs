//! A timed run, drive by drive: each drive on its own timeline through the timing model of its
//! kind (flash, mechanical disk, dm-zoned over disks and a cache device).

use super::collect::*;
use super::{Progress, RunOptions};
use crate::drives::{strip, Drive, Stack};
use crate::plan::DriveConfig;
use crate::parts;
use crate::results::*;
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, bail, Context, Result};
use wafsim_core::counters::waf;
use wafsim_core::BlockDevice;

/// How one drive is timed: a flash model, or a disk with its zone size on the device and on the
/// full-size disk.
pub(super) enum DriveTiming {
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

/// Every phase of a timed run on drive `d` (drives are independent, each on its own timeline).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_timed_drive(
    spec: &ExperimentSpec,
    phases: &[PhaseSpec],
    fio_files: &[Vec<parts::LoadedFio>],
    stack: &mut Stack,
    d: usize,
    timing: DriveTiming,
    st: &mut RunState,
    result: &mut VariantResult,
    opts: RunOptions,
    progress: &dyn Fn(Progress),
) -> Result<()> {
    let mu = stack.cfg.mapping_unit as u64;
    let log_ns = crate::plan::timing::log_interval_ns(spec)?;
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
        let parts = parts::build_parts(spec, pi, p, &fio_files[pi], &stack.device_target(d), true).with_context(pctx)?;
        let mut labels = Vec::new();
        let mut jobs = Vec::new();
        let per_namespace_queues = spec.timing.as_ref().is_some_and(|t| t.queues == crate::schema::Queues::PerNamespace);
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
                let stats = wafsim_core::pipeline::SourceStats {
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

/// The timing configuration of every drive of `stack`, or none when the run is untimed.
pub(super) fn timings(spec: &ExperimentSpec, stack: &Stack) -> Result<Vec<DriveTiming>> {
    Ok(stack
        .devices
        .iter()
        .map(|d| match d {
            Drive::Flash(f) => Ok(crate::plan::timing::timing_config(spec, f.config())?.map(DriveTiming::Flash)),
            Drive::Zns(z) => Ok(crate::plan::timing::timing_config_zns(spec, z.config())?.map(DriveTiming::Flash)),
            Drive::Smr(z) => Ok(crate::plan::timing::disk_config(spec, z.config())?.map(|(h, zone)| DriveTiming::Disk(h, z.config().zone_size, zone))),
            Drive::DmZoned(ld) => {
                let disk = ld.dev.disk(0).config();
                // The mechanics of the whole disk, also when the target uses its first zones only.
                let mut whole = disk.clone();
                if let Some(DriveConfig::Smr(z)) = spec.device.zoned_config(&spec.main_namespaces())? {
                    whole.zones = z.zones;
                }
                let Some((h, full_zone)) = crate::plan::timing::disk_config(spec, &whole)? else { return Ok(None) };
                let cache = if ld.dev.cache_device().is_some() { crate::plan::timing::cache_config(spec)? } else { None };
                Ok(Some(DriveTiming::DmZoned { cache, hdd: h, zone: disk.zone_size, disk_zone: full_zone, conventional: disk.conventional_zones }))
            }
            Drive::Tiering(_) if spec.timing.as_ref().is_some_and(|t| t.enabled) => {
                Err(anyhow!("[timing]: the timing model does not cover tiering yet; run with timing off (WAF, per-device traffic)"))
            }
            Drive::Tiering(_) => Ok(None),
        })
        .collect::<Result<Option<Vec<_>>>>()
        ?
        .unwrap_or_default())
}
