//! What a run accumulates across phases and how it becomes the variant's result rows.

use crate::drives::{strip, Drive, Stack};
use crate::parts::Label;
use crate::results::*;
use crate::schema::PhaseSpec;
use anyhow::Result;
use wafsim_core::blockdev::ZoneReport;
use wafsim_core::device::FrontierKind;
use wafsim_core::zone::ReportFilter;
use wafsim_core::{BlockDevice, Counters};
use wafsim_core::pipeline::LayerFigures;
use crate::parts::RowOf;

/// Bytes applications wrote through file systems so far: finished phases' rows and the running
/// phase's file systems; `None` without file workloads. The file systems' counts run ahead of
/// the devices by what the sources have made but the runner has not submitted yet (buffered
/// commands): when the phase writes through file systems only, the running part is scaled to
/// what the devices have received (`phase_host` bytes) at the file systems' own ratio of
/// application to device bytes, exact at the phase end.
pub(super) fn app_bytes(result: &VariantResult, running: &[LayerFigures], fs_only: bool, phase_host: u64) -> Option<u64> {
    if result.filesystems.is_empty() && running.is_empty() {
        return None;
    }
    let done: u64 = result.filesystems.iter().map(|f| f.file_write_bytes).sum();
    let (mut file, mut dev, mut pending) = (0u64, 0u64, 0u64);
    for r in running {
        file += r.app_write_bytes;
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

/// One row per part with layers of its own (file systems, stores), from their figures at the
/// phase end (`now`, one per row); with `from` (the figures at the start of a steady phase's
/// window), of the window only.
pub(super) fn push_fs(result: &mut VariantResult, p: &PhaseSpec, rows: &[RowOf], now: Vec<LayerFigures>, from: Option<&[LayerFigures]>) {
    for (i, (f, mut r)) in rows.iter().zip(now).enumerate() {
        if let Some(s) = from.map(|w| &w[i]) {
            r.app_write_bytes -= s.app_write_bytes;
            r.dev_write_bytes -= s.dev_write_bytes;
            r.store_write_bytes = r.store_write_bytes.map(|b| b - s.store_write_bytes.unwrap_or(0));
        }
        result.filesystems.push(FsResult {
            phase: p.name.clone(),
            measured: p.measure,
            name: f.label.name.clone(),
            namespace: f.label.namespace.clone(),
            filesystem: f.filesystem.clone(),
            file_write_bytes: r.app_write_bytes,
            dev_write_bytes: r.dev_write_bytes,
            zone_live_bytes: r.zone_live_bytes,
            store_write_bytes: r.store_write_bytes,
            metrics: r.metrics,
        });
    }
}

/// What a run accumulates across phases (per drive where it matters).
pub(super) struct RunState {
    /// Counters of every drive when the built-in precondition ended.
    pub(super) start: Vec<Counters>,
    /// Per drive: counters of the measured phases (with per-namespace and per-frontier lists).
    pub(super) measured: Vec<Option<Counters>>,
    /// Host bytes written or trimmed on drives already finished (timed runs go drive by drive).
    pub(super) done_before: u64,
    pub(super) total_planned: u64,
    pub(super) logical_total: u64,
    pub(super) next_sample: u64,
    /// I/Os issued per phase, over all drives.
    pub(super) phase_ios: Vec<u64>,
}

/// Whether phase `p` measures from the end of its stores' load (`measure_from = "run"`),
/// refused where it has no stores.
pub(super) fn measures_from_run(p: &PhaseSpec) -> Result<bool> {
    let from_run = p.measure_from == crate::schema::MeasureFrom::Run;
    if from_run && p.kv.is_empty() {
        anyhow::bail!("phase {:?}: measure_from = \"run\" measures from the end of the key-value stores' load, and the phase has no [[phase.kv]]", p.name);
    }
    Ok(from_run)
}

/// A phase chooses its measured window with `steady_state` or `measure_last`, not both.
pub(super) fn one_window_choice(p: &PhaseSpec) -> Result<()> {
    if p.steady_state.is_some() && p.measure_last.is_some() {
        anyhow::bail!("phase {:?}: measure_last and steady_state both choose the measured window; give one", p.name);
    }
    Ok(())
}

/// The warning of a phase measured from the run whose stores never finished loading.
pub(super) fn still_loading(p: &PhaseSpec) -> String {
    format!("phase {:?}: measure_from = \"run\", but the stores were still loading their initial records when the phase ended: the whole phase is reported (write more: a larger amount)", p.name)
}

/// The window of a phase measured from the run: host bytes after the load, and the load's.
pub(super) fn after_load(written: u64, load: u64) -> String {
    format!("the run after the stores' load ({} of host writes; the load wrote {})", wafsim_core::units::human(written - load), wafsim_core::units::human(load))
}

/// Sum of one counter over the drives.
pub(super) fn sum(devs: &[Drive], f: impl Fn(&Counters) -> u64) -> u64 {
    devs.iter().map(|d| f(d.counters())).sum()
}

/// Per-namespace and per-frontier results, erase counts and OP.
pub(super) fn collect(stack: &Stack, st: &RunState, result: &mut VariantResult, mu: u64) {
    let mut erase_counts: Vec<u32> = Vec::new();
    for dev in &stack.devices {
        result.host_devices.extend(dev.model().layer().map(|l| l.devices).unwrap_or_default());
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
                age_class: f.age_class,
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
    result.op_logical = if stack.devices.iter().any(|d| d.model().layer().is_some()) {
        f64::NAN
    } else if stack.devices.iter().all(|d| d.flash().is_none()) {
        0.0
    } else {
        (result.physical_bytes as f64 - result.logical_bytes as f64) / result.logical_bytes as f64
    };
}

/// Add a phase's per-drive deltas (`end - from`) to the phase and measured counters.
pub(super) fn account_phase(result: &mut VariantResult, st: &mut RunState, pi: usize, measure: bool, di: usize, delta: &Counters) {
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
pub(super) fn push_jobs(result: &mut VariantResult, st: &mut RunState, pi: usize, p: &PhaseSpec, rows: Vec<(Label, wafsim_core::pipeline::SourceStats, Option<JobTiming>)>) {
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
pub(super) fn push_samples(result: &mut VariantResult, stack: &Stack, st: &RunState, phase: usize, app: Option<u64>) {
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
        if let Some((hot, cold)) = dev.model().layer().and_then(|l| l.tiers) {
            result.tier_timeline.push(TierPoint { phase, host_bytes: all.host_write_bytes, hot, cold });
        }
    }
}

/// Timed runs sample each drive at its phase ends; the drives run side by side, so the sample
/// of all drives at the end of phase k is the sum of the drives' samples at that phase end.
pub(super) fn aggregate_timed_samples(result: &mut VariantResult) {
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

pub(super) fn sample(phase: usize, device: Option<u32>, c: &Counters, mu: u64) -> Sample {
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
pub(super) fn add_lists(a: &mut Counters, b: &Counters) {
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
