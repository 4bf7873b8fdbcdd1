//! `[[workload]]`: synthetic workloads (sequential or random writes of one block size, with
//! optional trims) as parts, one per workload.

use super::part::{seed_for, Label, Part, PartTiming, Target, DEFAULT_IODEPTH};
use crate::schema::{ExperimentSpec, PhaseSpec};
use anyhow::{anyhow, bail, Result};
use wafsim_core::Pid;
use wafsim_workload::synthetic::{Synthetic, SyntheticSpec};

/// The parts of the phase's synthetic workloads on `target`.
pub(super) fn parts(spec: &ExperimentSpec, pi: usize, phase: &PhaseSpec, target: &Target, parts: &mut Vec<Part>, next_group: &mut impl FnMut() -> u32) -> Result<()> {
    for (wi, w) in phase.workload.iter().enumerate() {
        let Some((g, ns, ns_bytes)) = target.find(&w.namespace) else { continue };
        let pid = match (w.placement_handle, w.stream) {
            (Some(_), Some(_)) => bail!("workload #{}: give placement_handle or stream, not both", wi + 1),
            (Some(ph), None) => Pid::new(w.reclaim_group, ph),
            (None, Some(s)) => Pid::new(0, s),
            (None, None) => Pid::NONE,
        };
        let block_size = w.block_size()?;
        let s = Synthetic::new(SyntheticSpec {
            ns,
            ns_bytes,
            pattern: w.pattern()?,
            block_size,
            amount: w.amount_bytes(ns_bytes),
            trim_fraction: w.trim,
            pid,
            seed: seed_for(spec, pi, 0, wi, g),
        })
        .map_err(|e| anyhow!("workload #{}: {e}", wi + 1))?;
        parts.push(Part {
            source: Box::new(s),
            weight: w.weight,
            label: Label { name: format!("workload{} ({} {})", wi + 1, w.pattern, w.bs), namespace: w.namespace.clone() },
            timing: PartTiming {
                iodepth: w.iodepth.unwrap_or(DEFAULT_IODEPTH).max(1),
                rate_iops: w.rate_iops,
                mean_io_bytes: block_size as f64,
                ..Default::default()
            },
            group: next_group(),
            stage: 0,
            row: None,
        });
    }

    Ok(())
}
