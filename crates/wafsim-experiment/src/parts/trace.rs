//! `[[phase.trace]]`: block traces of a phase merged into one part.

use super::part::{Label, Part, PartTiming, Target, DEFAULT_IODEPTH};
use crate::schema::{ExperimentSpec, Offsets, PhaseSpec};
use anyhow::{anyhow, Result};
use wafsim_core::Pid;
use wafsim_workload::trace::{OffsetPolicy, TraceInput, TraceMerge};

/// The phase's traces on `target`, merged into one part (by their timestamps).
pub(super) fn part(spec: &ExperimentSpec, phase: &PhaseSpec, target: &Target, parts: &mut Vec<Part>, next_group: &mut impl FnMut() -> u32) -> Result<()> {
    let cfg = target.cfg;
    let mut inputs = Vec::new();
    let mut trace_names = Vec::new();
    let mut trace_ns = Vec::new();
    for t in &phase.trace {
        let Some((_, ns, ns_bytes)) = target.find(&t.namespace) else { continue };
        let path = spec.base_dir.join(&t.file);
        let mut input = TraceInput::open(&path, t.trace_format(), ns, ns_bytes).map_err(|e| anyhow!("{e}"))?;
        if let Some(k) = &t.filter {
            input = input.with_filter(k);
        }
        input = input.with_policy(if t.offsets == Offsets::Error {
            OffsetPolicy::Error
        } else {
            OffsetPolicy::Wrap { align: cfg.mapping_unit as u64 }
        });
        if let Some(ph) = t.placement_handle {
            input = input.with_write_pid(Pid::new(0, ph));
        }
        if let Some(split) = &t.placement_split {
            input = input.with_write_split(split.iter().map(|f| (f * ns_bytes as f64) as u64).collect());
        }
        inputs.push(input);
        trace_names.push(t.file.clone());
        if !trace_ns.contains(&t.namespace) {
            trace_ns.push(t.namespace.clone());
        }
    }
    if !inputs.is_empty() {
        // A read or parse error comes out of the merge's fill.
        parts.push(Part {
            source: Box::new(TraceMerge::new(inputs)),
            weight: 1,
            label: Label { name: format!("traces ({})", trace_names.join(", ")), namespace: trace_ns.join(", ") },
            timing: PartTiming { iodepth: DEFAULT_IODEPTH, mean_io_bytes: 4096.0, ..Default::default() },
            group: next_group(),
            stage: 0,
            row: None,
        });
    }
    Ok(())
}
