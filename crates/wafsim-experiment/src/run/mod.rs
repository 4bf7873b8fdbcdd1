//! Running a variant: build the device(s), precondition, run the phases' workloads, collect
//! counters per phase, namespace, job and write frontier, and optionally a time series.

use crate::drives::Stack;
use crate::results::*;
use crate::schema::{ExperimentSpec, Variant};
use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
use wafsim_core::{BlockDevice, Counters};

mod collect;
pub mod history;
mod meters;
pub mod steady;
pub mod stream;
mod timed;
mod untimed;

use collect::*;

/// Progress of a run, reported after every batch (a progress bar's figures).
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Host bytes written or trimmed so far.
    pub done_bytes: u64,
    /// The planned total of host bytes written or trimmed (0 when unknown).
    pub total_bytes: u64,
    /// Host bytes written divided by the logical capacity.
    pub drive_writes: f64,
    /// Device WAF since the run's built-in precondition (media bytes / host bytes written).
    pub waf: f64,
}

/// Options of a run that do not change its results.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions<'a> {
    /// Take a time-series sample every this many host bytes written (None: no time series).
    pub sample_every_bytes: Option<u64>,
    /// Save every drive's state at the end of the run as a drive image in this directory:
    /// `VARIANT.img`, or `VARIANT.dN.img` per drive when the variant has several (what
    /// `history.image` reads back).
    pub save_images: Option<&'a std::path::Path>,
}

/// What every phase of a run works on: the experiment, its drives, what the run accumulates,
/// its result so far, and the run's options and progress report.
pub(super) struct RunCtx<'a> {
    spec: &'a ExperimentSpec,
    stack: &'a mut Stack,
    st: &'a mut RunState,
    result: &'a mut VariantResult,
    opts: RunOptions<'a>,
    progress: &'a dyn Fn(Progress),
}

/// Write each drive of `stack` as a drive image in `dir` (see [`RunOptions::save_images`]).
fn save_images(stack: &Stack, dir: &std::path::Path, variant: &str) -> Result<()> {
    let safe: String = variant.chars().map(|c| if c.is_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    crate::drives::save_images(stack, &dir.join(format!("{safe}.img")))
}

/// Run several variants in parallel (one per thread); results keep the variants' order.
pub fn run_variants(variants: &[Variant], opts: RunOptions, progress: &(dyn Fn(&str, Progress) + Sync)) -> Vec<Result<VariantResult>> {
    // The variants that run at once (one per worker thread) must fit together.
    let mut est: Vec<(u64, &str)> = variants.iter().filter_map(|v| memory_floor(&v.spec).ok().map(|e| (e, v.name.as_str()))).collect();
    est.sort_by(|a, b| b.0.cmp(&a.0));
    est.truncate(rayon::current_num_threads().max(1));
    if est.len() > 1 {
        let need = est.iter().map(|e| e.0).sum::<u64>();
        if let Err(e) = check_memory(need, &format!("the {} variants that run in parallel ({}) together need", est.len(), est.iter().map(|e| e.1).collect::<Vec<_>>().join(", "))) {
            return variants.iter().map(|_| Err(anyhow::anyhow!("{e:#}; --serial runs them one after another"))).collect();
        }
    }
    variants.par_iter().map(|v| run_variant(v, opts, &|p| progress(&v.name, p))).collect()
}

/// The drives of a variant, built but not run (no precondition, no phases): what `wafsim
/// serve` puts behind its exports.
pub fn build_stack(spec: &ExperimentSpec) -> Result<Stack> {
    let cfg = spec.device_config()?;
    let drives = crate::plan::drive_configs(spec, &cfg)?;
    Stack::new(cfg, drives)
}

/// Run one variant on the calling thread: plan the drives, build them, drive every phase
/// through them, collect the results.
pub fn run_variant(v: &Variant, opts: RunOptions, progress: &dyn Fn(Progress)) -> Result<VariantResult> {
    let spec = &v.spec;
    let ctx = || format!("variant {:?}", v.name);
    // Said here, not as the implicit "measure" phase issuing no I/O: there is no such phase in
    // the file (an empty or truncated experiment). `serve` builds drives from such files.
    if spec.phase.is_empty() && spec.workload.is_empty() {
        bail!("{}: the experiment has no [[workload]]s and no [[phase]]s: nothing to run (add a [[workload]] table, or [[phase]]s with workloads, fio jobs, traces, files or key-value stores)", ctx());
    }
    check_variant_memory(v)?;
    let cfg = spec.device_config().with_context(ctx)?;
    let drives = crate::plan::drive_configs(spec, &cfg).with_context(ctx)?;
    let phases = spec.phases();
    let mu = cfg.mapping_unit as u64;

    let mut result = VariantResult {
        name: v.name.clone(),
        layout: spec.layout.to_string(),
        placement: cfg.placement.to_string(),
        gc_policy: cfg.gc_policy.to_string(),
        history: String::new(),
        spread: Vec::new(),
        devices: drives.len() as u32,
        mapping_unit: cfg.mapping_unit,
        erase_unit_bytes: cfg.erase_unit_bytes,
        scale: spec.scale,
        counters: Counters::default(),
        phases: phases
            .iter()
            .map(|p| PhaseResult { name: p.name.clone(), measured: p.measure, counters: Counters::default(), mapping_unit: cfg.mapping_unit, steady: None, window: "whole phase".into(), whole_waf: None, checkpoints: Vec::new(), stopped: None })
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
    result.warnings.extend(spec.notes.iter().cloned());
    let fio_files = crate::parts::load_fio_files(spec, &phases, &mut result.warnings).with_context(ctx)?;

    // Planned host bytes over all drives and phases, for progress.
    let mut total_planned = 0u64;
    for d in &drives {
        let d = d.sizing(&cfg);
        for (pi, p) in phases.iter().enumerate() {
            total_planned += crate::parts::planned_bytes(p, &fio_files[pi], d)?;
        }
    }
    let mut stack = Stack::new(cfg, drives).with_context(ctx)?;
    if let Some((placement, gc)) = stack.devices[0].model().describe(spec, &stack.cfg) {
        (result.placement, result.gc_policy) = (placement, gc);
    }
    // Timing configs per drive, checked before the (possibly long) precondition.
    let timed = timed::configure(spec, &mut stack).with_context(ctx)?;
    for dev in &stack.devices {
        result.logical_bytes += dev.logical_bytes();
        result.physical_bytes += dev.physical_bytes();
    }
    // The drive's history, unmeasured: the counters of the run start after it.
    result.history = history::prepare(spec, &mut stack).with_context(ctx)?;
    let mut st = RunState {
        start: stack.devices.iter().map(|d| d.counters().clone()).collect(),
        measured: vec![None; stack.devices.len()],
        done_before: 0,
        total_planned,
        logical_total: stack.logical_bytes(),
        next_sample: 0,
        phase_ios: vec![0; phases.len()],
    };
    let drives = stack.devices.len();
    let mut run = RunCtx { spec, stack: &mut stack, st: &mut st, result: &mut result, opts, progress };
    if timed {
        for d in 0..drives {
            timed::run_timed_drive(&mut run, &phases, &fio_files, d).with_context(ctx)?;
        }
        if opts.sample_every_bytes.is_some() {
            aggregate_timed_samples(&mut result);
        }
    } else {
        for (pi, p) in phases.iter().enumerate() {
            untimed::run_untimed_phase(&mut run, pi, p, &fio_files[pi]).with_context(|| format!("{}: phase {:?}", ctx(), p.name))?;
        }
        if opts.sample_every_bytes.is_some() {
            let host = sum(&stack.devices, |c| c.host_write_bytes) - st.start.iter().map(|c| c.host_write_bytes).sum::<u64>();
            if result.timeseries.last().map(|s| s.host_bytes) != Some(host) {
                let app = app_bytes(&result, &[], false, 0);
                push_samples(&mut result, &stack, &st, phases.len().saturating_sub(1), app);
            }
        }
    }
    if !phases.iter().any(|p| p.measure) {
        result.warnings.push("no phase is measured (every [[phase]] has measure = false): the report's counters are empty and the WAF is n/a; set measure = true on the phase to report".into());
    }
    for (pi, p) in phases.iter().enumerate() {
        if st.phase_ios[pi] == 0 {
            // Top-level [[workload]]s make an implicit phase the file does not name.
            if spec.phase.is_empty() {
                bail!("{}: the experiment's [[workload]]s issued no I/O: each was empty (check their amount, bs and namespace)", ctx());
            }
            return Err(anyhow!(
                "{}: phase {:?} issued no I/O: every source of the phase was empty (check the job sizes, trace filters and namespaces)",
                ctx(),
                p.name
            ));
        }
    }
    if let Some(dir) = opts.save_images {
        save_images(&stack, dir, &v.name).with_context(ctx)?;
    }
    collect(&stack, &st, &mut result, mu);
    result.op_logical_full = if result.op_logical.is_nan() { f64::NAN } else { spec.full_scale_op.unwrap_or(result.op_logical) };
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::parse_experiment;

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
        crate::plan::scale::scale_spec(&mut v.spec, 0.001).unwrap();
        let r = run_variant(&v, RunOptions::default(), &|_| {}).unwrap();
        assert_eq!(r.devices, 2);
        let staging = crate::plan::device::hot_device(&v.spec, "enterprise-tlc-1.92tb").unwrap().logical_bytes;
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
        let r = run_variant(&v, RunOptions { sample_every_bytes: Some(8 << 20), ..RunOptions::default() }, &|_| {}).unwrap();
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

/// Refuse a run (`what`: its subject and verb, "variant \"x\" needs") whose memory floor
/// ([`memory_floor`]) exceeds the memory this process can have (the machine's available memory,
/// the cgroup's limit, the address-space limit), with both figures, before anything large is
/// allocated: an allocation failure aborts the process. A floor, not the scheduler's upper
/// bound ([`memory_estimate`]): a run that may fit is not refused.
pub fn check_memory(need: u64, what: &str) -> Result<()> {
    let Some((have, of)) = memory_available() else { return Ok(()) };
    if need > have {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        bail!(
            "{what} at least {:.1} GiB of memory for its drives' mapping tables (docs/model.md, \"Memory estimate\"), this machine has {:.1} GiB ({of}); run at a smaller --scale",
            gib(need),
            gib(have)
        );
    }
    Ok(())
}

/// The memory this process can use, in bytes, and where the figure comes from: the least of
/// /proc/meminfo's MemAvailable, the cgroup v2 memory.max and the address-space limit
/// (`ulimit -v`). None where none is known.
pub fn memory_available() -> Option<(u64, &'static str)> {
    let mut best: Option<(u64, &'static str)> = None;
    let mut take = |b: u64, of: &'static str| {
        if best.is_none_or(|(x, _)| b < x) {
            best = Some((b, of));
        }
    };
    if let Ok(t) = std::fs::read_to_string("/proc/meminfo") {
        let kib = |key: &str| t.lines().find_map(|l| l.strip_prefix(key)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok());
        if let Some(k) = kib("MemAvailable:").or_else(|| kib("MemTotal:")) {
            take(k * 1024, "available, /proc/meminfo");
        }
    }
    if let Some(b) = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|t| t.trim().parse::<u64>().ok()) {
        take(b, "its cgroup's memory.max");
    }
    if let Ok(t) = std::fs::read_to_string("/proc/self/limits") {
        let lim = t.lines().find(|l| l.starts_with("Max address space")).and_then(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok());
        if let Some(b) = lim {
            take(b, "the address-space limit, ulimit -v");
        }
    }
    best
}

/// [`check_memory`] of one variant's [`memory_floor`] (a run, or the drives `wafsim serve` builds).
pub fn check_variant_memory(v: &Variant) -> Result<()> {
    let need = memory_floor(&v.spec).with_context(|| format!("variant {:?}", v.name))?;
    check_memory(need, &format!("variant {:?} needs", v.name))
}

/// The least memory a run of `spec` (already scaled) needs, in bytes: 64 MiB for the program
/// and every flash drive's mapping tables as `wafsim device show` computes them
/// ([`wafsim_core::Geometry::memory_bytes`]; a full-size 7.68 TB drive: 15.0 GiB, 15.0 GiB peak
/// measured). Stores and file systems come on top.
pub fn memory_floor(spec: &ExperimentSpec) -> Result<u64> {
    let cfg = spec.device_config()?;
    let mut bytes = 64u64 << 20;
    for d in crate::plan::drive_configs(spec, &cfg)? {
        for c in d.ftls() {
            bytes += c.geometry()?.memory_bytes();
        }
    }
    Ok(bytes)
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
    for d in crate::plan::drive_configs(spec, &cfg)? {
        bytes += d.ftls().into_iter().map(flash).sum::<u64>();
    }
    for kv in spec.phase.iter().flat_map(|p| &p.kv) {
        let ns = cfg.namespaces.iter().find(|n| n.name == kv.namespace).map_or(cfg.logical_bytes, |n| n.size_bytes);
        bytes += (ns as f64 * kv.fill.unwrap_or(0.5)) as u64 / RECORD * PER_RECORD;
    }
    Ok(bytes)
}
