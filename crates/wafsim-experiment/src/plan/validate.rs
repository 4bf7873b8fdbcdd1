//! Everything about a resolved variant that can be checked before it runs.

use crate::schema::{mkfs_trims, DriveKind, ExperimentSpec, FsKind, HistoryKind, HistorySpec, HostLayer, KvStore, Layout};
use anyhow::{anyhow, bail, Context, Result};

impl ExperimentSpec {
    /// The drive's history before the first phase: `[history]`, or what `precondition` says
    /// (true or absent: a sequential fill; false: fresh), checked.
    pub fn history(&self) -> Result<HistorySpec> {
        let h = match (&self.history, self.precondition) {
            (Some(_), Some(_)) => bail!("give [history] or precondition, not both (precondition = false is history.kind = \"fresh\", true is \"sequential\")"),
            (Some(h), None) => h.clone(),
            (None, p) => HistorySpec { kind: if p == Some(false) { HistoryKind::Fresh } else { HistoryKind::Sequential }, ..HistorySpec::default() },
        };
        let only = |field: &str, set: bool, kind: &str| -> Result<()> {
            if set {
                bail!("history.{field}: a setting of history.kind = \"{kind}\", not of \"{}\"", h.kind);
            }
            Ok(())
        };
        only("bs", h.bs.is_some() && h.kind != HistoryKind::Random, "random")?;
        only("amount", h.amount.is_some() && h.kind != HistoryKind::Random, "random")?;
        only("image", h.image.is_some() && h.kind != HistoryKind::Image, "image")?;
        match h.kind {
            HistoryKind::Random => {
                let bs = h.bs.as_ref().map_or(4096, crate::schema::Bytes::get);
                if bs == 0 || bs % 4096 != 0 || bs > 1 << 30 {
                    bail!("history.bs {bs} B: expected a multiple of 4 KiB up to 1 GiB");
                }
            }
            HistoryKind::Image if h.image.is_none() => bail!("history.kind = \"image\" needs history.image, the image file (written by wafsim run --save-image DIR)"),
            _ => {}
        }
        Ok(h)
    }

    /// Where a file system's mkfs trims its whole namespace (conventional file systems with
    /// `mkfs_trim` not false, the LSM store's staging file system included): (phase, namespace),
    /// in run order. A drive history does not survive these.
    pub fn mkfs_trims(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for p in self.phases() {
            for f in p.files.iter().filter(|f| mkfs_trims(f.filesystem, f.fs.mkfs_trim)) {
                out.push((p.name.clone(), f.namespace.clone()));
            }
            for k in p.kv.iter().filter(|k| k.store == KvStore::Lsm) {
                if mkfs_trims(k.filesystem, k.fs.mkfs_trim) {
                    out.push((p.name.clone(), k.namespace.clone()));
                }
                // The staging file system is a conventional one.
                if mkfs_trims(FsKind::Conventional, k.fs.mkfs_trim) {
                    out.extend(k.lsm.staging_namespace.iter().map(|s| (p.name.clone(), s.clone())));
                }
            }
        }
        out
    }

    /// Check everything that can be checked before running.
    pub fn validate(&self) -> Result<()> {
        self.history()?;
        if let Some(h) = self.host.as_ref().filter(|h| h.layer != HostLayer::None) {
            if self.namespace.len() != 1 {
                bail!("host.layer = \"{}\": one namespace (the layer's volume), not {}", h.layer, self.namespace.len());
            }
            match h.layer {
                HostLayer::DmZoned => {
                    if self.device.drive_kind() != DriveKind::Smr {
                        bail!("host.layer = \"dm-zoned\" runs over host-managed SMR disks: set device.kind = \"smr\" (or preset = \"smr-hm-14tb\")");
                    }
                    if h.dm_zoned.disks == 0 {
                        bail!("host.dm-zoned.disks: at least one disk");
                    }
                }
                HostLayer::Tiering => {
                    if self.device.drive_kind() != DriveKind::Flash {
                        bail!("host.layer = \"tiering\": the capacity drive ([device]) must be a conventional flash drive (the layer writes it in place)");
                    }
                    if h.tiering.hot.is_none() {
                        bail!("host.layer = \"tiering\" needs host.tiering.hot, the staging drive's preset (e.g. \"enterprise-tlc-1.92tb\")");
                    }
                }
                HostLayer::None => {} // filtered out above
            }
        }
        for (i, n) in self.namespace.iter().enumerate() {
            if self.namespace[..i].iter().any(|m| m.name == n.name) {
                bail!("two [[namespace]] tables are named {:?}: namespace names must be unique", n.name);
            }
        }
        let own = self.namespace.iter().filter(|n| n.device.is_some()).count();
        if own > 0 {
            if self.layout != Layout::Dedicated {
                bail!("namespace.device puts a namespace on its own drive: set layout = \"dedicated\"");
            }
            if self.host.as_ref().is_some_and(|h| h.layer != HostLayer::None) {
                bail!("namespace.device: a namespace on its own drive cannot sit under a host layer");
            }
            if own == self.namespace.len() {
                bail!("namespace.device: every namespace names its own drive; leave at least one on [device]");
            }
        }
        let cfg = self.device_config()?;
        if !self.workload.is_empty() && !self.phase.is_empty() {
            bail!("give top-level [[workload]]s or [[phase]]s, not both (put the workloads into a phase)");
        }
        let has_ns = |n: &str| cfg.namespaces.iter().any(|x| x.name == n);
        for (i, p) in self.phase.iter().enumerate() {
            if self.phase[..i].iter().any(|q| q.name == p.name) {
                bail!("two [[phase]] tables are named {:?}: phase names must be unique", p.name);
            }
            if let Some(ss) = &p.steady_state {
                ss.check().with_context(|| format!("phase {:?}: steady_state", p.name))?;
            }
            for n in p.files.iter().map(|f| &f.namespace).chain(p.kv.iter().flat_map(|k| std::iter::once(&k.namespace).chain(k.staging_namespace()))) {
                if !has_ns(n) {
                    bail!("phase {:?}: no namespace named {n:?} (file and key-value workloads name one of the [[namespace]]s)", p.name);
                }
            }
            if p.workload.is_empty() && p.fio.is_empty() && p.trace.is_empty() && p.files.is_empty() && p.kv.is_empty() {
                bail!("phase {:?} has no workload, fio job, trace or file workload: it would do no I/O", p.name);
            }
            for f in &p.fio {
                let what = f.origin();
                if f.file.is_some() == f.args.is_some() {
                    bail!("phase {:?}: [[phase.fio]] needs exactly one of file = \"job.fio\" or args = \"--name=... --rw=...\"", p.name);
                }
                let names = f.namespace_list();
                if names.is_empty() {
                    bail!("phase {:?}: fio {what} needs namespace = \"...\" or namespaces = [...]", p.name);
                }
                for n in names {
                    if !has_ns(&n) {
                        bail!("phase {:?}: fio {what}: no namespace named {n:?}", p.name);
                    }
                }
            }
            for t in &p.trace {
                if !has_ns(&t.namespace) {
                    bail!("phase {:?}: trace {:?}: no namespace named {:?}", p.name, t.file, t.namespace);
                }
                if let Some(split) = &t.placement_split {
                    if t.placement_handle.is_some() {
                        bail!("phase {:?}: trace {:?}: give placement_handle or placement_split, not both", p.name, t.file);
                    }
                    if split.is_empty() || split.iter().any(|f| !(*f > 0.0 && *f < 1.0)) || split.windows(2).any(|w| w[0] >= w[1]) {
                        bail!("phase {:?}: trace {:?}: placement_split = {split:?}: expected ascending fractions of the namespace in (0, 1), e.g. [0.25, 0.5]", p.name, t.file);
                    }
                }
            }
        }
        let fdp_on = self.device.fdp.as_ref().is_some_and(|f| f.enabled);
        let streams = self.device.streams.unwrap_or(0);
        let all_workloads = self.workload.iter().chain(self.phase.iter().flat_map(|p| p.workload.iter()));
        for (i, w) in all_workloads.enumerate() {
            let ctx = || format!("workload #{} (namespace {:?})", i + 1, w.namespace);
            if !cfg.namespaces.iter().any(|n| n.name == w.namespace) {
                return Err(anyhow!("no namespace named {:?}", w.namespace)).with_context(ctx);
            }
            w.pattern().with_context(ctx)?;
            w.block_size().with_context(ctx)?;
            if !(0.0..=1.0).contains(&w.trim) {
                bail!("{}: trim = {} must be a fraction in 0..=1", ctx(), w.trim);
            }
            // A rate of 0 (or NaN) would pace the workload to a standstill, or be ignored.
            if let Some(r) = w.rate_iops {
                if !(r.is_finite() && r > 0.0) {
                    bail!("{}: rate_iops = {r}: expected I/Os per second above 0 (leave it out for no limit)", ctx());
                }
            }
            check_iodepth(w.iodepth).with_context(ctx)?;
            // The untimed interleave gives each source turns in proportion to its weight; 0 is
            // not "off" (the source still writes its amount), so it was silently meaningless.
            if w.weight == 0 {
                bail!("{}: weight = 0: expected 1 or more (the source's share of the untimed interleave's turns; equal weights = equal IOPS)", ctx());
            }
            // A stream the drive does not have went to stream 0 without a word; on an FDP drive
            // it was taken as a placement handle. (On a drive without streams or FDP the
            // directive is ignored, as a drive without the directive enabled does, so one
            // experiment can compare a variant with streams against one without.)
            if let Some(s) = w.stream {
                if fdp_on {
                    bail!("{}: stream = {s}: the drive uses FDP, whose writes carry placement handles: give placement_handle instead (streams and FDP are different directives)", ctx());
                }
                if streams > 0 && s as u32 >= streams {
                    bail!("{}: stream = {s}: the drive has {streams} stream(s) (device.streams = {streams}): expected 0 to {}", ctx(), streams - 1);
                }
            }
        }
        for p in &self.phase {
            for (i, f) in p.fio.iter().enumerate() {
                if f.weight == 0 {
                    bail!("phase {:?}: fio #{} ({}): weight = 0: expected 1 or more (each job's share of the untimed interleave's turns)", p.name, i + 1, f.origin());
                }
            }
            for (i, f) in p.files.iter().enumerate() {
                for g in &f.group {
                    let ctx = || format!("phase {:?}: files #{} group {:?}", p.name, i + 1, g.name);
                    if !(g.weight.is_finite() && g.weight > 0.0) {
                        bail!("{}: weight = {}: expected a share above 0 (a group of weight 0 would never be written)", ctx(), g.weight);
                    }
                    if g.live_files == 0 && g.overwrite > 0.0 {
                        bail!("{}: overwrite = {} with live_files = 0: no completed file is kept, so there is nothing to overwrite; keep some (live_files = 1 or more) or drop overwrite", ctx(), g.overwrite);
                    }
                }
            }
        }
        for p in &self.phase {
            for (i, f) in p.files.iter().enumerate() {
                check_iodepth(f.iodepth).with_context(|| format!("phase {:?}: files #{}", p.name, i + 1))?;
            }
            for (i, k) in p.kv.iter().enumerate() {
                check_iodepth(k.iodepth).with_context(|| format!("phase {:?}: kv #{}", p.name, i + 1))?;
            }
        }
        Ok(())
    }
}

/// `iodepth`: 1 to 65536 I/Os in flight (fio's range); 0 was silently taken as 1.
fn check_iodepth(d: Option<u32>) -> Result<()> {
    match d {
        Some(d) if !(1..=65536).contains(&d) => bail!("iodepth = {d}: expected 1 to 65536 I/Os in flight"),
        _ => Ok(()),
    }
}

impl ExperimentSpec {
    /// Settings that are legal but have no effect on this variant, each said in a sentence
    /// naming the key (reported with the run's warnings). Warned, not refused: a variant
    /// inherits the base document's keys and cannot remove one, so an experiment comparing
    /// `host.layer = "tiering"` with a variant on dm-zoned or without the layer carries the
    /// other layer's keys legitimately.
    pub fn ignored_settings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let (Some(eu), Some(g), DriveKind::Flash) = (&self.device.erase_unit, &self.device.geometry, self.device.drive_kind()) {
            if let (e, Ok(sb)) = (eu.get(), g.superblock_bytes()) {
                if e != sb {
                    out.push(format!(
                        "device.erase_unit = {eu:?} overrides the superblock of [device.geometry] ({sb} B = page_size x pages_per_block x planes_per_die x dies): the FTL erases {e}-byte units; the geometry still sets the timing model's dies, planes and pages"
                    ));
                }
            }
        }
        for p in &self.phase {
            for (i, f) in p.files.iter().enumerate() {
                for g in f.group.iter().filter(|g| g.live_files == 0) {
                    out.push(format!(
                        "phase {:?}: files #{} group {:?}: live_files = 0 keeps no completed file: each file is deleted as soon as it is complete, so the group's data never stays on the drive",
                        p.name,
                        i + 1,
                        g.name
                    ));
                }
            }
        }
        out
    }
}
