//! Turning a phase's sources (synthetic workloads, fio job files, traces, file workloads, key-value
//! stores) into I/O sources bound to the namespaces of a target.
//!
//! One module per kind of source: synthetic workloads, fio jobs, traces, file workloads through a
//! file system, key-value stores. Each turns its part of a phase's description into [`Part`]s;
//! this module builds them in the phase's order.

use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::Result;
use part::seed_for;
use wafsim_core::DeviceConfig;

mod cache;
pub mod fio;
pub mod files;
mod kv;
mod lsm;
pub mod part;
mod synthetic;
mod trace;
mod hse;
mod wiredtiger;

pub use fio::{load_fio_files, LoadedFio};
pub use part::{Label, Part, PartTiming, Parts, PhaseSources, RowOf, Target};

fn ns_index(cfg: &DeviceConfig, name: &str) -> Option<u32> {
    cfg.namespaces.iter().position(|n| n.name == name).map(|i| i as u32)
}

/// Host bytes the phase will write on this device, where known in advance (for progress).
pub fn planned_bytes(phase: &PhaseSpec, fio: &[LoadedFio], cfg: &DeviceConfig) -> Result<u64> {
    let mut total = 0;
    for w in &phase.workload {
        if let Some(ns) = ns_index(cfg, &w.namespace) {
            total += w.amount_bytes(cfg.namespaces[ns as usize].size_bytes);
        }
    }
    for f in fio {
        for name in f.spec.namespace_list() {
            if let Some(ns) = ns_index(cfg, &name) {
                let bytes = cfg.namespaces[ns as usize].size_bytes;
                total += f.file.jobs().filter_map(|j| j.write_bytes_hint(bytes)).sum::<u64>();
            }
        }
    }
    Ok(total)
}

/// Build the sources of phase `pi` on `target`, interleaved as the experiment says.
pub fn build(spec: &ExperimentSpec, pi: usize, phase: &PhaseSpec, fio: &[LoadedFio], target: &Target) -> Result<PhaseSources> {
    let kind = spec.interleave_of(phase);
    Ok(build_parts(spec, pi, phase, fio, target, false)?.interleave(kind, seed_for(spec, pi, 7, 0, 0)))
}

/// Build the sources of phase `pi` for the namespaces present on `target`: one part per
/// workload, fio job (each `numjobs` clone and each job of a stonewalled file its own part),
/// trace set, file workload and key-value store, in that order. `timed`: fio time_based jobs run
/// until their runtime.
pub fn build_parts(spec: &ExperimentSpec, pi: usize, phase: &PhaseSpec, fio: &[LoadedFio], target: &Target, timed: bool) -> Result<Parts> {
    let mut parts = Vec::new();
    let mut group = 0u32;
    let mut next_group = || {
        group += 1;
        group - 1
    };
    synthetic::parts(spec, pi, phase, target, &mut parts, &mut next_group)?;
    fio::parts(spec, pi, fio, target, timed, &mut parts, &mut next_group)?;
    trace::part(spec, phase, target, &mut parts, &mut next_group)?;
    files::file_parts(&phase.files, target, |i, g| seed_for(spec, pi, 3, i, g), &mut parts, &mut next_group)?;
    let mut notes = Vec::new();
    kv::kv_parts(&phase.kv, target, &spec.base_dir, |i, g| seed_for(spec, pi, 4, i, g), &mut parts, &mut notes, next_group)?;
    Ok(Parts { parts, notes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::InterleaveKind;
    use wafsim_core::Pid;
    use wafsim_workload::synthetic::{Pattern, Synthetic, SyntheticSpec};
    use wafsim_core::pipeline::IoSource;

    fn part(ns: u32, rate_iops: Option<f64>, rate_bytes: Option<f64>) -> Part {
        let s = Synthetic::new(SyntheticSpec {
            ns,
            ns_bytes: 1 << 30,
            pattern: Pattern::Sequential,
            block_size: 4096,
            amount: 1 << 30,
            trim_fraction: 0.0,
            pid: Pid::NONE,
            seed: 1,
        })
        .unwrap();
        Part {
            source: Box::new(s),
            weight: 1,
            label: Label { name: format!("w{ns}"), namespace: format!("ns{ns}") },
            timing: PartTiming { rate_iops, rate_bytes, mean_io_bytes: 4096.0, ..Default::default() },
            group: ns,
            stage: 0,
            row: None,
        }
    }

    fn first_ns(ps: PhaseSources, n: usize) -> Vec<usize> {
        let mut src = ps.source;
        let mut out = Vec::new();
        while out.len() < n {
            let want = n - out.len();
            if src.fill(&mut out, want).unwrap() == 0 {
                break;
            }
        }
        let mut counts = vec![0; 3];
        for io in &out {
            counts[io.ns as usize] += 1;
        }
        counts
    }

    /// Untimed arrivals follow the sources' rates (an I/O rate, or a byte rate over the mean
    /// block size), in strict turns or as merged Poisson processes.
    #[test]
    fn rates_weight_the_untimed_interleave() {
        let parts = || Parts { parts: vec![part(0, Some(1000.0), None), part(1, None, Some(3000.0 * 4096.0))], notes: vec![] };
        assert_eq!(first_ns(parts().interleave(InterleaveKind::RoundRobin, 1), 400), [100, 300, 0]);
        let random = first_ns(parts().interleave(InterleaveKind::Random, 1), 40_000);
        assert!((9_400..10_600).contains(&random[0]), "{random:?}");
        // Rates on only some sources: weights (equal here) and a note saying why.
        let mixed = Parts { parts: vec![part(0, Some(1000.0), None), part(1, None, None)], notes: vec![] };
        let ps = mixed.interleave(InterleaveKind::RoundRobin, 1);
        assert!(ps.notes[0].contains("w0 have a rate but w1 do not"), "{:?}", ps.notes);
        assert_eq!(first_ns(ps, 400), [200, 200, 0]);
    }
}
