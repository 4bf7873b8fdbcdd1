//! Running a variant: build the device(s), precondition, run the workloads, collect counters.

use crate::spec::{ExperimentSpec, Variant};
use anyhow::{anyhow, bail, Context, Result};
use rayon::prelude::*;
use wafsim_core::device::FrontierKind;
use wafsim_core::{Counters, Device, DeviceConfig, Io, Op, Pid};
use wafsim_workload::synthetic::{Synthetic, SyntheticSpec};
use wafsim_workload::{Interleave, IoSource};

/// I/Os per batch handed to the device (the device prefetches map entries within a batch).
const BATCH: usize = 4096;
/// Block size of the sequential precondition fill.
const PRECONDITION_BS: u64 = 128 * 1024;

/// Per-namespace figures of the measured phase.
#[derive(Debug, Clone)]
pub struct NsResult {
    pub name: String,
    pub size_bytes: u64,
    pub host_bytes: u64,
    /// Media bytes attributed to the namespace: its host-written units plus GC copies of its data.
    pub media_bytes: u64,
    pub gc_bytes: u64,
}

/// Per write-frontier figures (RUH, stream, or GC frontier).
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
    /// Counters of the measured phase (after precondition), summed over devices.
    pub counters: Counters,
    /// Counters at the end of the run, whole device life (precondition included).
    pub lifetime: Counters,
    pub namespaces: Vec<NsResult>,
    pub frontiers: Vec<FrontierResult>,
    /// Erase count per erase unit over the device life: min, mean, max.
    pub erase_count: (u32, f64, u32),
    pub logical_bytes: u64,
    pub physical_bytes: u64,
    pub op_logical: f64,
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
        wafsim_core::counters::waf(self.mbmw(), self.hbmw())
    }
}

/// Progress report: host bytes done / planned, and the WAF so far.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub done_bytes: u64,
    pub total_bytes: u64,
    pub waf: f64,
}

/// Run several variants in parallel (one per thread); results keep the variants' order.
pub fn run_variants(variants: &[Variant], progress: &(dyn Fn(&str, Progress) + Sync)) -> Vec<Result<VariantResult>> {
    variants.par_iter().map(|v| run_variant(v, &|p| progress(&v.name, p))).collect()
}

/// One device of a variant with the workloads bound to it.
struct Unit {
    cfg: DeviceConfig,
    /// (index in spec.namespace, namespace index on this device)
    workloads: Vec<(usize, u32)>,
}

fn plan(spec: &ExperimentSpec) -> Result<Vec<Unit>> {
    let cfg = spec.device.to_config(&spec.namespace, spec.seed)?;
    let ns_index = |name: &str| cfg.namespaces.iter().position(|n| n.name == name).ok_or_else(|| anyhow!("no namespace {name:?}"));
    if spec.layout == "dedicated" {
        let ratio = cfg.physical_bytes as f64 / cfg.logical_bytes as f64;
        let mut units = Vec::new();
        for (i, ns) in cfg.namespaces.iter().enumerate() {
            let mut c = cfg.clone();
            c.logical_bytes = ns.size_bytes;
            c.physical_bytes = (ns.size_bytes as f64 * ratio).round() as u64;
            c.namespaces = vec![ns.clone()];
            c.seed = cfg.seed.wrapping_add(i as u64);
            c.geometry().map_err(|e| anyhow!("dedicated drive for namespace {:?}: {e}", ns.name))?;
            let workloads = spec
                .workload
                .iter()
                .enumerate()
                .filter(|(_, w)| w.namespace == ns.name)
                .map(|(wi, _)| (wi, 0))
                .collect();
            units.push(Unit { cfg: c, workloads });
        }
        Ok(units)
    } else {
        let workloads = spec.workload.iter().enumerate().map(|(wi, w)| Ok((wi, ns_index(&w.namespace)? as u32))).collect::<Result<_>>()?;
        Ok(vec![Unit { cfg, workloads }])
    }
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

/// Run one variant on the calling thread.
pub fn run_variant(v: &Variant, progress: &dyn Fn(Progress)) -> Result<VariantResult> {
    let spec = &v.spec;
    let units = plan(spec).with_context(|| format!("variant {:?}", v.name))?;
    // Planned host bytes over all devices, for progress.
    let mut total = 0u64;
    for u in &units {
        for &(wi, ns) in &u.workloads {
            total += spec.workload[wi].amount_bytes(u.cfg.namespaces[ns as usize].size_bytes)?;
        }
    }
    let mut done_before = 0u64;
    let mut measured = Counters::default();
    let mut lifetime = Counters::default();
    let mut frontiers = Vec::new();
    let mut namespaces = Vec::new();
    let mut erase_counts: Vec<u32> = Vec::new();
    let mut logical = 0;
    let mut physical = 0;
    let first_cfg = units[0].cfg.clone();
    for (di, unit) in units.iter().enumerate() {
        let mut dev = Device::new(unit.cfg.clone()).map_err(|e| anyhow!("variant {:?}: {e}", v.name))?;
        logical += unit.cfg.logical_bytes;
        physical += dev.geometry().physical_units() * unit.cfg.mapping_unit as u64;
        if spec.precondition {
            precondition(&mut dev).with_context(|| format!("variant {:?}: precondition", v.name))?;
        }
        let before = dev.counters().clone();
        let mut sources: Vec<Box<dyn IoSource>> = Vec::new();
        let mut weights = Vec::new();
        for &(wi, ns) in &unit.workloads {
            let w = &spec.workload[wi];
            let ns_bytes = dev.namespace_bytes(ns);
            let pid = match (w.placement_handle, w.stream) {
                (Some(_), Some(_)) => bail!("workload #{}: give placement_handle or stream, not both", wi + 1),
                (Some(ph), None) => Pid::new(w.reclaim_group, ph),
                (None, Some(s)) => Pid::new(0, s),
                (None, None) => Pid::NONE,
            };
            let s = Synthetic::new(SyntheticSpec {
                ns,
                ns_bytes,
                pattern: w.pattern()?,
                block_size: w.block_size()?,
                amount: w.amount_bytes(ns_bytes)?,
                trim_fraction: w.trim,
                pid,
                seed: spec.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(wi as u64),
            })
            .map_err(|e| anyhow!("workload #{}: {e}", wi + 1))?;
            sources.push(Box::new(s));
            weights.push(w.weight);
        }
        let mut src = Interleave::new(sources, weights);
        let mut buf = Vec::with_capacity(BATCH);
        loop {
            buf.clear();
            if src.fill(&mut buf, BATCH) == 0 {
                break;
            }
            dev.submit_batch(&buf).with_context(|| format!("variant {:?}", v.name))?;
            let d = dev.counters().delta(&before);
            let mbmw = d.media_units() * unit.cfg.mapping_unit as u64;
            progress(Progress {
                done_bytes: done_before + d.host_write_bytes + d.trim_bytes,
                total_bytes: total,
                waf: wafsim_core::counters::waf(mbmw, d.host_write_bytes),
            });
        }
        let d = dev.counters().delta(&before);
        done_before += d.host_write_bytes + d.trim_bytes;
        let mu = unit.cfg.mapping_unit as u64;
        for (i, n) in d.namespaces.iter().enumerate() {
            namespaces.push(NsResult {
                name: unit.cfg.namespaces[i].name.clone(),
                size_bytes: dev.namespace_bytes(i as u32),
                host_bytes: n.host_write_bytes,
                media_bytes: (n.host_units + n.gc_units) * mu,
                gc_bytes: n.gc_units * mu,
            });
        }
        for (f, c) in dev.frontiers().iter().zip(&d.frontiers) {
            frontiers.push(FrontierResult {
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
        let mut d_no_lists = d.clone();
        d_no_lists.namespaces.clear();
        d_no_lists.frontiers.clear();
        measured.add(&d_no_lists);
        let mut life = dev.counters().clone();
        life.namespaces.clear();
        life.frontiers.clear();
        lifetime.add(&life);
        erase_counts.extend_from_slice(dev.erase_counts());
    }
    let min = erase_counts.iter().copied().min().unwrap_or(0);
    let max = erase_counts.iter().copied().max().unwrap_or(0);
    let mean = erase_counts.iter().map(|&c| c as f64).sum::<f64>() / erase_counts.len().max(1) as f64;
    Ok(VariantResult {
        name: v.name.clone(),
        layout: spec.layout.clone(),
        placement: first_cfg.placement.to_string(),
        gc_policy: first_cfg.gc_policy.to_string(),
        devices: units.len() as u32,
        mapping_unit: first_cfg.mapping_unit,
        erase_unit_bytes: first_cfg.erase_unit_bytes,
        counters: measured,
        lifetime,
        namespaces,
        frontiers,
        erase_count: (min, mean, max),
        logical_bytes: logical,
        physical_bytes: physical,
        op_logical: (physical as f64 - logical as f64) / logical as f64,
    })
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
        let r: Vec<_> = vs.iter().map(|v| run_variant(v, &|_| {}).unwrap()).collect();
        assert_eq!(r[0].devices, 1);
        assert_eq!(r[1].devices, 2);
        // Each sequential writer alone on its drive never needs GC copies.
        assert_eq!(r[1].counters.gc_units, 0);
        assert_eq!(r[1].waf(), 1.0);
        // Sharing one drive interleaves two streams of different speed: GC copies appear.
        assert!(r[0].waf() > 1.0, "{}", r[0].waf());
        assert_eq!(r[0].hbmw(), r[1].hbmw());
        assert_eq!(r[0].hbmw(), 2 * 2 * (128 << 20));
    }
}
