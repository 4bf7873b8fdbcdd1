//! A drive's history before the first phase (`[history]`): fresh, a sequential fill, random
//! aging, or a saved drive image. Shared by `wafsim run` and `wafsim serve`, so both start a
//! drive the same way.

use crate::drives::Stack;
use crate::schema::{ExperimentSpec, HistoryKind};
use anyhow::{Context, Result};
use wafsim_core::BlockDevice;

/// Bring every drive of `stack` to the history `spec` states, unmeasured, and say in words what
/// it was (with the mkfs trims of later phases that undo part of it).
pub fn prepare(spec: &ExperimentSpec, stack: &mut Stack) -> Result<String> {
    let history = spec.history()?;
    let mut said = history.describe();
    let all_zoned = stack.devices.iter().all(|d| (0..d.namespace_count()).all(|ns| d.zone_geometry(ns).is_some()));
    if all_zoned && matches!(history.kind, HistoryKind::Sequential | HistoryKind::Random) {
        // Fills and aging write conventional namespaces only; zoned ones start empty.
        said = "fresh (zoned namespaces start empty; their host fills them)".into();
    } else if history.kind != HistoryKind::Fresh {
        // mkfs trims are the phases' own I/O; said here because they undo the history.
        for (phase, ns) in spec.mkfs_trims() {
            said += &format!("; mkfs trims namespace {ns} in phase {phase:?}, unmapping what it held there (mkfs_trim = false keeps it)");
        }
    }
    let n = stack.devices.len();
    for (d, dev) in stack.devices.iter_mut().enumerate() {
        let hctx = || format!("history ({said})");
        match history.kind {
            HistoryKind::Fresh => {}
            HistoryKind::Sequential => crate::drives::precondition(dev).with_context(hctx)?,
            HistoryKind::Random => {
                crate::drives::precondition(dev).with_context(hctx)?;
                let bs = history.bs.as_ref().map_or(4096, crate::schema::Bytes::get);
                let bytes = history.amount.as_ref().map_or(dev.logical_bytes(), |a| a.of(dev.logical_bytes()));
                crate::drives::age_random(dev, bs, bytes, spec.seed).with_context(hctx)?;
            }
            HistoryKind::Image => {
                let path = crate::drives::image_path(&spec.base_dir.join(history.image.as_deref().unwrap_or_default()), d, n);
                let file = std::fs::File::open(&path).with_context(|| format!("{}: cannot open the drive image {}", hctx(), path.display()))?;
                dev.model_mut().device_mut().load_image_from(&mut wafsim_core::image::FileReader::new(file)).with_context(|| format!("{}: {}", hctx(), path.display()))?;
            }
        }
    }
    Ok(said)
}
